/* A model of the collector's flag and barrier protocol (gc/README.md), for spin.
 *
 * Four objects with one reference slot each, a mutator with three roots (its root table: every
 * root overwrite goes through the deletion barrier), and one collector cycle: epoch flip,
 * root pass, pending passes stopping at recent objects until a pass marks nothing new, sweep.
 * Every step of the mutator and every slot read of the collector interleave freely.
 *
 * Checked: the mutator never reaches a freed object, and after the cycle nothing reachable from
 * its roots has been freed. Run through run.sh, which also checks that the model finds the bugs
 * of protocols without the barrier (mutants), so that a passing run means something.
 */
#define N 4
#define NIL 255
#ifndef STEPS
#define STEPS 4
#endif

byte slot[N];
bool pending[N], marked[N], recent[N], freed[N], allocated[N], published[N];
byte R[3];
bool started = 0;   /* the epoch flip: objects published from now on are recent */
bool gc_done = 0, mut_done = 0;

inline barrier(v) { if :: v != NIL -> pending[v] = 1 :: else -> skip fi }

proctype mutator() {
  byte a, b, old, n, steps = 0;
  bool r;
  do
  :: steps < STEPS ->
     steps++;
     if :: a = 0; b = 1 :: a = 1; b = 0 :: a = 0; b = 2 :: a = 2; b = 0 :: a = 1; b = 2 :: a = 2; b = 1 fi;
     if
     /* follow a reference: R[b] := slot[R[a]] (root_load: rooted, then re-validated) */
     :: R[a] != NIL ->
        atomic { assert(!freed[R[a]]); old = R[b]; barrier(old); R[b] = slot[R[a]] }
     /* store: slot[R[a]] := R[b]; the barrier flags the old value, then a CAS replaces it */
     :: R[a] != NIL ->
        do
        :: atomic { assert(!freed[R[a]]); old = slot[R[a]]; barrier(old) };
           atomic { if :: slot[R[a]] == old -> slot[R[a]] = R[b]; break :: else -> skip fi }
        od
     /* drop a root */
     :: atomic { old = R[a]; barrier(old); R[a] = NIL }
     /* allocate, as objects.cpp does: reserve the block, root it, initialise it, then publish
        it with recent = the epoch read at publication (a flip may come between the read and
        the store) */
     :: atomic {
          if
          :: !allocated[3] && !freed[3] -> n = 3; allocated[n] = 1; old = R[a]; barrier(old); R[a] = n
          :: else -> n = NIL
          fi
        };
        if
        :: n != NIL ->
           slot[n] = R[b];      /* initialisation: the value stored is rooted (R[b]) */
           r = started;
           recent[n] = r;
           published[n] = 1
        :: else -> skip
        fi
     fi
  :: else -> break
  od;
  mut_done = 1
}

byte stack[N];
byte sp = 0;

/* mark x; with stop_recent, recent objects are neither marked nor traced */
inline visit(x, stop_recent) {
  if
  :: x == NIL -> skip
  :: else ->
     atomic {   /* the exchange on `marked` */
       if
       :: allocated[x] && !published[x] -> marked[x] = 1   /* reserved: marked, not traced */
       :: allocated[x] && published[x] && !(stop_recent && recent[x]) && !marked[x] ->
          marked[x] = 1; newmarks++; stack[sp] = x; sp++
       :: else -> skip
       fi
     }
  fi
}

inline drain(stop_recent) {
  do
  :: sp > 0 -> sp--; y = stack[sp]; z = slot[y]; visit(z, stop_recent)   /* one read of the slot */
  :: else -> break
  od
}

proctype collector() {
  byte i, x, y, z, newmarks = 0;
  started = 1;
  /* root pass: each root read is its own step */
  x = R[0]; visit(x, 0);
  x = R[1]; visit(x, 0);
  x = R[2]; visit(x, 0);
  drain(0);
  /* pending passes */
  do
  :: newmarks = 0;
     i = 0;
     do
     :: i < N ->
        if
        :: allocated[i] && published[i] && pending[i] -> pending[i] = 0; x = i; visit(x, 1); drain(1)
        :: else -> skip
        fi;
        i++
     :: else -> break
     od;
     if :: newmarks == 0 -> break :: else -> skip fi
  od;
  /* sweep */
  i = 0;
  do
  :: i < N ->
     atomic { if :: allocated[i] && published[i] && !marked[i] && !recent[i] -> freed[i] = 1; allocated[i] = 0 :: else -> skip fi };
     i++
  :: else -> break
  od;
  gc_done = 1
}

/* After both finish: everything reachable from the roots is still allocated. */
proctype check() {
  byte x, k;
  (gc_done && mut_done);
  k = 0;
  do
  :: k < 3 ->
     x = R[k];
     do
     :: x != NIL -> assert(!freed[x]); x = slot[x]   /* N steps at most: cycles are cut below */
     :: x == NIL -> break
     :: x != NIL -> break
     od;
     k++
  :: else -> break
  od
}

init {
  /* 0 -> 1 -> 2 reachable from R[0]; 3 unallocated. */
  atomic {
    allocated[0] = 1; allocated[1] = 1; allocated[2] = 1;
    published[0] = 1; published[1] = 1; published[2] = 1;
    slot[0] = 1; slot[1] = 2; slot[2] = NIL; slot[3] = NIL;
    R[0] = 0; R[1] = NIL; R[2] = NIL;
    run mutator(); run collector(); run check()
  }
}
