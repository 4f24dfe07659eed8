/* A model of the collector's flag and barrier protocol (gc/README.md), for spin.
 *
 * Four objects with one reference slot each, a mutator with three roots (its root table: every
 * root overwrite goes through the deletion barrier), and one collector cycle: epoch flip,
 * root pass, pending passes stopping at recent objects until a pass marks nothing new, sweep.
 * Every step of the mutator and every slot read of the collector interleave freely.
 *
 * Checked: the mutator never reaches a freed object, and after the cycle nothing reachable from
 * its roots has been freed. Run through run.sh, which also checks that the model finds the bugs
 * of protocols without the barrier or without the membarrier (mutants), so that a passing run
 * means something.
 *
 * Two root protocols, chosen at compile time:
 * - default (sequentially consistent roots): every root store is seq_cst and root_load (load,
 *   root, fence, re-read) is one atomic step.
 * - LIGHT_ROOTS (asymmetric fences): the root stores are plain stores. Under x86-TSO they sit in
 *   the mutator's FIFO store buffer, and the mutator's later loads (slots, the epoch) may overtake
 *   them. R[] is the mutator's own view of its roots (store forwarding), Rc[] the memory the
 *   collector's root pass reads; the flusher moves the oldest buffered store to memory at any
 *   moment. In exchange the collector, after the epoch flip and before the root pass, runs
 *   membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED): every store the mutator issued before it is
 *   visible to the root pass (the buffer is drained), and every load the mutator issues after it
 *   sees the flip (the flip is already in memory: the collector's store of `started` is seq_cst).
 *   The publication of a new object goes through the same buffer; the other stores and loads
 *   stay sequentially consistent (see the mutator).
 * - IDLE_RELEASE (with LIGHT_ROOTS): emptying or overwriting a root skips the deletion barrier
 *   while the collector is not marking. The collector sets `marking` (gc_phase = kMarking, seq_cst)
 *   right before the flip and clears it once the pending passes are over, before the sweep. Every
 *   mutator step that empties or overwrites a root reads `marking` in a step of its own (a plain
 *   load, which may overtake the thread's buffered root stores), flags the old value only if it
 *   read 1, then does the buffered root store. Stores into object slots keep the barrier always.
 *   The C++ code never overwrites a root slot in place: a new root takes a fresh slot and the old
 *   slot is emptied separately, before (Value::reset, copy assignment) or after (move assignment
 *   of a returned Value) the new root's store, so the mutator does each order as one step (and
 *   the in-place overwrite as well).
 * - READ_SCOPE (with LIGHT_ROOTS and IDLE_RELEASE): read scopes (gc/README.md, "Read scopes"). The
 *   mutator may enter a scope: a buffered store of its scope word (odd), after which its loads
 *   may overtake that store. Inside, it makes borrowed loads (bw[j] = slot[x], x a root or a
 *   borrowed reference: no root, no re-read), dereferences borrowed references (asserting they
 *   are not freed), and promotes one into a fresh root slot (the buffered root store, then a read
 *   of `marking` and the epoch, then the flag if marking and not recent). It leaves with a
 *   buffered store of the next, even word, forgetting its borrowed references. Borrowed
 *   references are never stored into a slot. The collector reads the scope word after the
 *   membarrier and, if it read it odd, waits after the root pass until the word in memory has
 *   changed, before the pending passes. Entries, exits, borrowed loads and dereferences are not
 *   mutator steps (at most SCOPES scopes and BORROWS borrowed loads per run); a promotion is one.
 *   The word is a counter that never repeats a value, so "changed since the collector read it" is
 *   "a store of the word reached memory since then": the model keeps that bit (sc_moved) and the
 *   word's parity, not the counter.
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

#if defined(IDLE_RELEASE) && !defined(LIGHT_ROOTS)
#error IDLE_RELEASE models the release of plain root stores: use it with LIGHT_ROOTS
#endif

#ifdef IDLE_RELEASE
bool marking = 0;   /* gc_phase == kMarking: from before the flip to the end of the pending passes */
#endif

#if defined(READ_SCOPE) && !defined(IDLE_RELEASE)
#error READ_SCOPE models read scopes in the production configuration: use it with LIGHT_ROOTS and IDLE_RELEASE
#endif

#ifdef READ_SCOPE
#ifndef SCOPES
#define SCOPES 1    /* scopes per run (entries and exits are not mutator steps) */
#endif
#ifndef BORROWS
#define BORROWS 2   /* borrowed loads per run (not mutator steps) */
#endif
#ifndef NB
#define NB 2        /* borrowed references the thread holds at once (1 or 2) */
#endif
bool Sc = 0;        /* the scope word in memory, as the collector's read would find it: active (odd) */
bool sc_read = 0;   /* the collector has read the scope word */
bool sc_watch = 0;  /* it read it active and has not finished waiting for it to change */
bool sc_moved = 0;  /* a store of the scope word has reached memory since that read */
#define SCOPE_WORD 7   /* a buffered store of the scope word: (SCOPE_WORD, value) */
#endif

#ifdef LIGHT_ROOTS
/* The mutator's store buffer, oldest first: (k, v) with k < 3 is the store R[k] = v; k = 3 + n
   is the publication of block n with recent = v. A mutator step buffers at most one store (L2
   always matches, see below), the one allocation two: the buffer is never full. */
#ifndef SB
#if defined(READ_SCOPE)
#define SB (3 * STEPS + 2 * SCOPES)   /* and the scope word's stores, two per scope */
#elif defined(IDLE_RELEASE)
#define SB (3 * STEPS)   /* an IDLE_RELEASE step buffers up to three stores (see the mutator) */
#else
#define SB (STEPS + 1)
#endif
#endif
chan sb = [SB] of { byte, byte };
byte Rc[3];                         /* the root table in memory: what the collector's root pass reads */
bool flushed = 0;                   /* the mutator is done and its buffer is empty */
hidden byte sbk, sbv;               /* a store being moved to memory (inside one atomic step) */
#define GC_ROOT(k) Rc[k]
#else
#define GC_ROOT(k) R[k]
#endif

/* A root store by the mutator: seq_cst, or buffered (a full buffer would stall the mutator until
   the flusher made room, as a real store buffer does). */
inline root_store(k, v) {
#ifdef LIGHT_ROOTS
  sb!k,v; R[k] = v
#else
  R[k] = v
#endif
}

/* One buffered store reaching memory. */
inline flush_one() {
  sb?sbk,sbv;
  if
  :: sbk < 3 -> Rc[sbk] = sbv
#ifdef READ_SCOPE
  :: sbk == SCOPE_WORD ->   /* the scope word: its parity until the collector reads it, then whether it moved */
     if :: !sc_read -> Sc = sbv :: sc_watch -> sc_moved = 1 :: else -> skip fi
#endif
  :: else -> recent[sbk - 3] = sbv; published[sbk - 3] = 1
  fi
}

inline barrier(v) { if :: v != NIL -> pending[v] = 1 :: else -> skip fi }

#ifdef IDLE_RELEASE
/* The barrier of a root's release: only if the step's read of `marking` (m) returned 1. */
inline release_barrier(v) { if :: m -> barrier(v) :: else -> skip fi }

/* root_release(k): L, the read of the phase (its own step), then the barrier if marking and the
   buffered store of NIL. */
inline release(k) {
  atomic { old = R[k]; m = marking };
  atomic { release_barrier(old); root_store(k, NIL); m = 0 }
}

/* root_load into root k from the slot of R[a]: L1 read the slot; if k holds a root, L reads the
   phase (its own step); the barrier if marking and the buffered root store (overwriting in place
   what k held); L2 re-reads the slot (may overtake the store). On a mismatch the next iteration
   releases the value k holds as root_release does. */
inline load_into(k) {
  do
  :: atomic { assert(!freed[R[a]]); w = slot[R[a]] };
     if :: R[k] != NIL -> atomic { old = R[k]; m = marking } :: else -> skip fi;
     atomic { release_barrier(old); root_store(k, w); m = 0; old = NIL };
     if :: slot[R[a]] == w -> break :: else -> skip fi
  od;
  w = 0
}

/* An allocation rooted in k (overwriting in place what k held, after L reads the phase in its own
   step), initialised and published; see the allocation step below. */
inline allocate_into(k) {
  if :: R[k] != NIL -> atomic { old = R[k]; m = marking } :: else -> skip fi;
  atomic {
    if
    :: !allocated[3] && !freed[3] -> n = 3; allocated[n] = 1; release_barrier(old); root_store(k, n)
    :: else -> n = NIL
    fi;
    m = 0; old = NIL
  };
  if
  :: n != NIL ->
     slot[n] = R[b];
     r = started;
     sb!3 + n,r
  :: else -> skip
  fi
}
#endif

#ifdef READ_SCOPE
/* A borrowed load: bw[j] = slot[x], x held by the thread (a root or a borrowed reference of the
   current scope). A plain load from memory, which may overtake the thread's buffered stores (the
   scope entry's among them); no root, no re-read. */
inline borrow(j, x) {
  assert(!freed[x]); bw[j] = slot[x]; nb++
}

/* Promotion of bw[j] into the fresh root slot k (root_acquire, then root_release_flags's test):
   the buffered root store; then, in a step of its own, plain loads of `marking` and of the epoch
   (which may overtake the root store); then, if it read 1 and the object is not recent, its pending
   flag (sequentially consistent, as the barrier's). `recent` here is the model's one-cycle stamp; the
   library compares the object's stamp with the epoch it read, so an epoch read before the flip may
   find the stamp of an object published since the last sweep equal to it and skip the flag: with
   e = 0 both outcomes are allowed. */
inline promote(k, j) {
  atomic { (seq & 1) && bw[j] != NIL && R[k] == NIL -> root_store(k, bw[j]) }; atomic { m = marking; e = started };
  atomic {
    assert(!freed[bw[j]]);
    if
    :: m && e && !recent[bw[j]] -> pending[bw[j]] = 1
    :: m && !e -> pending[bw[j]] = 1
    :: m && !e -> skip
    :: else -> skip
    fi;
    m = 0; e = 0
  }
}
#endif

proctype mutator() {
  byte a, b, old, n, w, steps = 0;
  bool r;
#ifdef IDLE_RELEASE
  byte c;   /* the third root: a fresh slot for a new root taken before the old one is released */
  bool m;   /* what the current release read of `marking` */
  old = NIL;
#endif
#ifdef READ_SCOPE
  byte seq = 0;   /* the scope word as the thread sees it: odd inside a scope */
  byte nb = 0;    /* borrowed loads so far */
  bool e;         /* what a promotion read of the epoch: 1 after the flip */
  byte bw[NB];    /* the borrowed references of the current scope (locals, not roots) */
  bw[0] = NIL;
#if NB > 1
  bw[1] = NIL;
#endif
#endif
  do
#ifdef READ_SCOPE
  /* not steps (tried first, which only orders the search): entering a scope (the buffered store
     of an odd word; then program order goes on, and loads may overtake the store; a scope that
     could borrow nothing more would only delay the collector, so none is entered then), borrowed
     loads, dereferences of borrowed references (the assertion is the dereference) */
  :: atomic { (seq & 1) == 0 && seq < 2 * SCOPES && nb < BORROWS -> seq++; sb!SCOPE_WORD,1 }
  :: atomic { (seq & 1) && nb < BORROWS && R[0] != NIL -> borrow(0, R[0]) }
  :: atomic { (seq & 1) && nb < BORROWS && R[1] != NIL -> borrow(0, R[1]) }
  :: atomic { (seq & 1) && nb < BORROWS && R[2] != NIL -> borrow(0, R[2]) }
  :: atomic { (seq & 1) && nb < BORROWS && bw[0] != NIL -> borrow(0, bw[0]) }
#if NB > 1
  :: atomic { (seq & 1) && nb < BORROWS && R[0] != NIL -> borrow(1, R[0]) }
  :: atomic { (seq & 1) && nb < BORROWS && R[1] != NIL -> borrow(1, R[1]) }
  :: atomic { (seq & 1) && nb < BORROWS && R[2] != NIL -> borrow(1, R[2]) }
  :: atomic { (seq & 1) && nb < BORROWS && bw[0] != NIL -> borrow(1, bw[0]) }
  :: atomic { (seq & 1) && nb < BORROWS && bw[1] != NIL -> borrow(0, bw[1]) }
  :: atomic { (seq & 1) && nb < BORROWS && bw[1] != NIL -> borrow(1, bw[1]) }
#endif
  :: d_step { (seq & 1) && bw[0] != NIL -> assert(!freed[bw[0]]) }
#if NB > 1
  :: d_step { (seq & 1) && bw[1] != NIL -> assert(!freed[bw[1]]) }
#endif
#endif
  :: steps < STEPS ->
     steps++;
     if :: a = 0; b = 1 :: a = 1; b = 0 :: a = 0; b = 2 :: a = 2; b = 0 :: a = 1; b = 2 :: a = 2; b = 1 fi;
#ifdef IDLE_RELEASE
     c = 3 - a - b;
     if
     /* follow a reference into R[b], overwriting its old value in place */
     :: R[a] != NIL -> load_into(b)
     /* the same, releasing R[b] first (Value::reset, then a new root) */
     :: R[a] != NIL && R[b] != NIL -> release(b); load_into(b)
     /* the same, new root first (v = list.get(i): the result's fresh slot, then the move
        assignment releases v's old slot) */
     :: R[a] != NIL && R[b] != NIL && R[c] == NIL -> load_into(c); release(b)
     /* copy a root (copy assignment v = u: release v's old root, then a fresh slot holding u's
        object, which u keeps rooted: no re-read) */
     :: R[a] != NIL && R[b] != NIL -> release(b); atomic { root_store(b, R[a]) }
     /* store into an object's slot: the barrier always */
     :: R[a] != NIL ->
        do
        :: atomic { assert(!freed[R[a]]); old = slot[R[a]]; barrier(old) };
           atomic { if :: slot[R[a]] == old -> slot[R[a]] = R[b]; break :: else -> skip fi }
        od;
        old = NIL
     /* drop a root */
     :: R[a] != NIL -> release(a)
     /* allocate into R[a], overwriting its old value in place */
     :: allocate_into(a)
     /* allocate into a fresh slot, then release the old root (v = allocation, move assignment) */
     :: R[b] != NIL && R[a] == NIL -> allocate_into(a); release(b)
#ifdef READ_SCOPE
     /* promotion of a borrowed reference into a fresh root slot (one step) */
     :: promote(a, 0)
#if NB > 1
     :: promote(a, 1)
#endif
#endif
     fi
#ifdef READ_SCOPE
     ;
     a = 0; b = 0; c = 0; n = 0; r = 0   /* dead after the step: states that differ only in them merge */
#endif
#else
     if
     /* follow a reference: R[b] := slot[R[a]] (root_load: rooted, then re-validated) */
     :: R[a] != NIL ->
#ifdef LIGHT_ROOTS
        /* L1: read the slot; S: the deletion barrier on the root's old value, then the plain
           (buffered) root store; L2: re-read the slot, which may overtake S (no fence). On a
           mismatch the next iteration's barrier flags the value the root held, as root_release
           does. With one mutator L2 always matches (the collector writes no slot); what this
           models is the root store still sitting in the buffer while later loads go on. */
        do
        :: atomic { assert(!freed[R[a]]); w = slot[R[a]] };
           atomic { old = R[b]; barrier(old); root_store(b, w) };
           if :: slot[R[a]] == w -> break :: else -> skip fi
        od;
        w = 0
#else
        atomic { assert(!freed[R[a]]); old = R[b]; barrier(old); R[b] = slot[R[a]] }
#endif
     /* store: slot[R[a]] := R[b]; the barrier flags the old value, then a CAS replaces it.
        With LIGHT_ROOTS the CAS (a locked instruction, which on x86 drains the store buffer) and
        the barrier's flag are still modeled as sequentially consistent steps that leave the
        buffered root stores where they are: this allows more behaviours than TSO does, which is
        sound for a safety check. */
     :: R[a] != NIL ->
        do
        :: atomic { assert(!freed[R[a]]); old = slot[R[a]]; barrier(old) };
           atomic { if :: slot[R[a]] == old -> slot[R[a]] = R[b]; break :: else -> skip fi }
        od
     /* drop a root: the barrier, then a (buffered) store of NIL */
     :: atomic { old = R[a]; barrier(old); root_store(a, NIL) }
     /* allocate, as objects.cpp does: reserve the block, root it, initialise it, then publish
        it with recent = the epoch read at publication (a flip may come between the read and
        the store). With LIGHT_ROOTS the root store is buffered, so the epoch read may overtake
        it, and so is the publication (heap.hpp: a relaxed store of `recent`, then the header's
        release store; consecutive in the FIFO, and the collector reads `recent` only with
        `published`, so one buffered entry). The initialising store is modeled as visible at
        once: the collector reads a block's slot only once the block is published, and on TSO
        the publication follows the initialisation through the FIFO, so when it becomes visible
        does not matter. */
     :: atomic {
          if
          :: !allocated[3] && !freed[3] -> n = 3; allocated[n] = 1; old = R[a]; barrier(old); root_store(a, n)
          :: else -> n = NIL
          fi
        };
        if
        :: n != NIL ->
           slot[n] = R[b];      /* initialisation: the value stored is rooted (R[b]) */
           r = started;
#ifdef LIGHT_ROOTS
           sb!3 + n,r
#else
           recent[n] = r;
           published[n] = 1
#endif
        :: else -> skip
        fi
     fi
#endif
#ifdef READ_SCOPE
  /* not a step: leaving the scope (a release store: the buffered store of the next, even word,
     after every earlier store); the borrowed references are forgotten */
  :: atomic { (seq & 1) -> seq++; sb!SCOPE_WORD,0; bw[0] = NIL; bw[NB - 1] = NIL }
  :: steps >= STEPS && (seq & 1) == 0 -> break
#else
  :: else -> break
#endif
  od;
  mut_done = 1
}

#ifdef LIGHT_ROOTS
/* The store buffer drains on its own, oldest store first, at any moment. */
proctype flusher() {
  do
  :: atomic { nempty(sb) -> flush_one() }
  :: atomic { mut_done && empty(sb) -> break }
  od;
  flushed = 1
}
#endif

/* membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED): every running mutator thread executes a full
   barrier, so its buffered stores reach memory; one atomic step. */
inline membarrier() {
#ifdef LIGHT_ROOTS
  atomic { do :: nempty(sb) -> flush_one() :: empty(sb) -> break od }
#endif
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
#ifdef IDLE_RELEASE
  /* gc_phase = kMarking, seq_cst, before the flip: a release that reads 0 read it before the flip,
     so its store can be taken as made before the snapshot. Set after the flip (even before the
     membarrier) it lets an object be lost (run.sh, idle-release-marking-after-flip). */
  marking = 1;
#endif
  started = 1;
#ifdef LIGHT_ROOTS
  membarrier();
#endif
#ifdef READ_SCOPE
  atomic { sc_read = 1; sc_watch = Sc };   /* read the scope word, after the membarrier */
#endif
  /* root pass: each root read is its own step */
  x = GC_ROOT(0); visit(x, 0);
  x = GC_ROOT(1); visit(x, 0);
  x = GC_ROOT(2); visit(x, 0);
  drain(0);
#ifdef READ_SCOPE
  /* a scope read as active: wait until its word changes (the scope exited) */
  atomic { !sc_watch || sc_moved -> sc_watch = 0; sc_moved = 0 };
#endif
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
#ifdef IDLE_RELEASE
  marking = 0;   /* gc_phase = kSweeping: releases stop flagging */
#endif
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

/* After both finish (and the store buffer is empty): everything reachable from the roots' final
   values is still allocated. */
proctype check() {
  byte x, k;
#ifdef LIGHT_ROOTS
  (gc_done && flushed);
#else
  (gc_done && mut_done);
#endif
  k = 0;
  do
  :: k < 3 ->
     x = GC_ROOT(k);
#ifdef LIGHT_ROOTS
     assert(x == R[k]);   /* the buffer is empty: memory holds the mutator's view */
#endif
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
#ifdef LIGHT_ROOTS
    Rc[0] = 0; Rc[1] = NIL; Rc[2] = NIL;
    run flusher();
#endif
    run mutator(); run collector(); run check()
  }
}
