package org.colors;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.PhantomReference;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.util.HashSet;
import java.util.Set;

/**
 * Proxies of shared objects and their identity cache.
 *
 * <p>Invariants: every proxy owns exactly one {@link Handle} (one GC root, held by its {@link Root});
 * while a proxy of a shared object is reachable, reading that object again (from a container, a
 * repository, a channel, a field) gives the same proxy: the cache maps the object's raw word to an
 * {@link Entry}, a weak reference to the proxy ({@code get()} is non-null only while the proxy is
 * strongly reachable, hence while its root is held: a hit is a live object, never a dead one whose
 * address was reused). Once the Handle is phantom reachable its Root is enqueued; {@link #drain}
 * unlinks the entry (only that entry) and releases the root. Threads that make proxies drain
 * {@link #DRAIN_PER_PROXY} Roots per new proxy, so releases keep pace with creation (one daemon
 * thread alone falls behind a busy thread and the roots, hence the shared heap, grow); a daemon
 * thread ({@code colors-release}) drains the rest.
 *
 * <p>The cache: {@link #STRIPES} stripes, each a chained hash table whose writes (insert, remove,
 * resize) hold the stripe's lock and whose reads ({@link #lookup}) take no lock: a reader follows
 * volatile links and may miss an entry while a resize relinks the chains (bounded walk), never find
 * a wrong one (it compares the raw word, and a non-null {@code get()} is a live proxy). Every path
 * that creates a proxy after a miss checks again under the lock ({@link #publish}), so a miss never
 * makes a second proxy of an object that has a live one.
 */
final class Proxies {
  private Proxies() {}

  /**
   * Shared TypeKinds of containers and objects: colors::TypeKind's values, which jni_common.hpp
   * static_asserts against these (javac -h writes them into org_colors_Proxies.h).
   */
  @java.lang.annotation.Native
  static final int INTEGER = 1, FLOAT = 2, BOOLEAN = 3, STRING = 4, BINARY = 5, LIST = 6, SET = 7, MAP = 8,
      OBJECT = 9, SORTED_MAP = 15;

  // ---- releases -----------------------------------------------------------------------------

  /** Roots of Handles that became phantom reachable. */
  static final ReferenceQueue<Handle> QUEUE = new ReferenceQueue<>();
  static final int DRAIN_PER_PROXY = 4;
  /** Roots whose entries {@link #clear} dropped (detach): kept reachable until processed. */
  private static final Set<Root> ORPHANS = new HashSet<>();  // GUARDED_BY(ORPHANS)

  static {
    Thread t = new Thread(Proxies::releaseLoop, "colors-release");
    t.setDaemon(true);
    t.start();
  }

  private static void releaseLoop() {
    for (;;) {
      try {
        process((Root) QUEUE.remove(), false);
      } catch (InterruptedException e) {
        // daemon: keep going
      } catch (Throwable t) {
        // a failed release must not end the thread (e.g. NotAttachedException): the root is gone
      }
    }
  }

  /** Processes up to {@code max} enqueued Roots (threads that use shared objects). */
  static void drain(int max) {
    for (int i = 0; i < max; i++) {
      Root r = (Root) QUEUE.poll();  // no lock when the queue is empty
      if (r == null) return;
      process(r, true);
    }
  }

  private static void process(Root r, boolean mutator) {
    if (!r.claim()) return;  // released by a heap-pressure call already
    Entry e = r.entry;
    if (e == null || !remove(e)) {
      synchronized (ORPHANS) {
        ORPHANS.remove(r);
      }
    }
    r.release(mutator);
  }

  // ---- heap pressure -------------------------------------------------------------------------

  /** {@code -Dcolors.heapPressureGc=false}: the hook does nothing (tests: the behaviour without it). */
  static final boolean PRESSURE_GC = !"false".equals(System.getProperty("colors.heapPressureGc"));
  /** How long one call waits for the JVM's reference processing at most ({@code colors.heapPressureWaitMs}). */
  static final long PRESSURE_WAIT_NS = Long.getLong("colors.heapPressureWaitMs", 1000L) * 1_000_000L;
  /** {@code -Dcolors.heapPressureVerbose=true}: one line per call on stderr (what it released, how long it waited). */
  private static final boolean PRESSURE_VERBOSE = Boolean.getBoolean("colors.heapPressureVerbose");
  private static final java.util.concurrent.atomic.LongAdder PRESSURE_CALLS = new java.util.concurrent.atomic.LongAdder();
  private static final java.util.concurrent.atomic.LongAdder PRESSURE_RELEASED = new java.util.concurrent.atomic.LongAdder();
  private static final java.util.concurrent.atomic.LongAdder PRESSURE_WATCH_CALLS = new java.util.concurrent.atomic.LongAdder();

  /**
   * Starts the heap-pressure watcher of the current attachment (SharedMemory.attach): a daemon
   * thread that waits on the segment's heap-pressure counter and, whenever a process (another one,
   * e.g. a Python server building replies this JVM receives, or this one) could not allocate after
   * collector cycles, runs {@link #relieve(long)} here: the objects of proxies this JVM dropped but
   * has not collected yet are otherwise pinned until its own GC runs, which a JVM that allocates
   * little Java memory may not do for a long time, while the other process fails with
   * {@code OutOfMemoryError} (libshared heap.hpp, signal_heap_pressure). The thread holds no lock
   * while it waits for the JVM's GC, and {@link Roots#LOCK} while it releases (it is no mutator: an
   * attach or detach may run meanwhile); it ends at detach and at the next attach (the native
   * returns -1 while either waits for the attach lock, the attachment generation changed, or a
   * newer watcher replaced it). Not started with {@code -Dcolors.heapPressureGc=false}.
   *
   * <p>Invariant: at most one watcher runs once an attach returned. Each attach starts one (an
   * attach that takes this process back after its server died keeps the generation, so the
   * generation alone would not end the previous watcher), and a watcher that is no longer {@link
   * #pressureWatcher} ends at its next wake-up. Watchers hold the JNI attach lock shared while
   * they wait, so several of them back to back would starve the next attach.
   */
  static void startPressureWatcher() {
    if (!PRESSURE_GC) return;
    final long generation = Native.generation();
    Thread t = new Thread(() -> watchHeapPressure(generation), "colors-heap-pressure");
    t.setDaemon(true);
    pressureWatcher = t;
    t.start();
  }

  /** The current heap-pressure watcher; written only by attach (under SharedMemory's lock). */
  private static volatile Thread pressureWatcher;

  private static boolean stillWatching(long generation) {
    return Native.generation() == generation && pressureWatcher == Thread.currentThread();
  }

  /** The heap-pressure watcher threads alive (tests). */
  static long pressureWatchers() {
    return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals("colors-heap-pressure")).count();
  }

  private static void watchHeapPressure(long generation) {
    try {
      if (!stillWatching(generation)) return;
      Native.registerPressureWatcher();
      int seen = Native.awaitHeapPressure(0, 0);
      while (seen != -1 && stillWatching(generation)) {
        int now = Native.awaitHeapPressure(seen, 1000);
        if (now == -1 || !stillWatching(generation)) return;
        if (now != seen) {
          seen = now;
          PRESSURE_WATCH_CALLS.increment();
          try {
            relieve(generation);
          } catch (Throwable e) {
            pressureError = e;
          }
          Native.heapRelieved();
        }
      }
    } catch (RuntimeException e) {
      // detached (NotAttachedException) or the server is gone: nothing left to watch
    }
  }

  /** Reliefs run by the watcher thread (tests). */
  static long pressureWatchCalls() {
    return PRESSURE_WATCH_CALLS.sum();
  }
  /** The last exception a pressure call caught (it never propagates into the allocation). */
  static volatile Throwable pressureError;

  /**
   * Called by libshared's heap-pressure hook (jni_module.cpp) on a Java thread whose shared
   * allocation still fails after two collector cycles, from inside that allocation (so inside a
   * native call of this thread), before libshared asks for two more cycles and retries: runs
   * {@code System.gc()}, waits until that GC has cleared the references it found (a sentinel phantom
   * reference's {@code refersTo(null)}; {@link #PRESSURE_WAIT_NS} at most), and releases the Root of
   * every cached proxy whose Handle it found unreachable (cleared Roots, found in the cache without
   * waiting for the Reference Handler thread to enqueue them) and every Root in {@link #QUEUE}, so
   * the next cycles free the objects of proxies that were only waiting for the JVM's GC. A Root is
   * released once: whoever claims it ({@link Root#claim}) releases it.
   *
   * <p>Invariants (why this cannot deadlock, whatever the allocating thread holds — Java monitors
   * such as {@link Roots#LOCK}, a stripe lock of the cache, SharedMemory's lock; the natives'
   * adoption mutex; libshared's root-table mutex, classes_lock, rpc's mutexes, shared monitors):
   * <ul>
   *   <li>No libshared lock is taken: Roots are released by {@link Root#releaseUnderPressure}, which
   *       empties slots with the deletion barrier (in Java, or store_ref in the native) and keeps
   *       them as the JNI library's spares instead of calling root_release (which may need the
   *       root-table mutex this thread may hold); the attach lock is only tried there.
   *   <li>{@link Roots#LOCK} is not taken (the spare replaces the pool), nor the natives' adoption
   *       mutex, nor SharedMemory's lock.
   *   <li>The locks that are taken — a cache stripe's and {@link #ORPHANS}' monitors, the reference
   *       queue's — are held by their holders only for short pure-Java work that calls no native and
   *       waits for nothing: so they are always released, and this thread cannot be inside one while
   *       it allocates shared memory (no native call happens under them).
   *   <li>The one wait is bounded ({@link #PRESSURE_WAIT_NS}); an interrupt ends it and is kept
   *       (the interrupt status is set again, so the allocation's next wait reports it).
   *   <li>Everything thrown is caught and recorded ({@link #pressureError}): the allocation then
   *       fails or succeeds on its own. libshared never calls this again from within it.
   * </ul>
   * The colors-release thread may take some of the Roots meanwhile and release them the ordinary
   * way; if it blocks on libshared's root mutex held by this thread, it does so holding no lock
   * this method needs.
   */
  static void onHeapPressure() {
    if (!PRESSURE_GC) return;
    try {
      relieve(0);
    } catch (Throwable t) {
      pressureError = t;
    }
  }

  /**
   * The relief. {@code watcherGeneration} 0: called by the hook on an allocating thread (a mutator:
   * no attach or detach runs meanwhile, and it must not take {@link Roots#LOCK}). Otherwise called
   * by the watcher of that attachment generation, which uses no shared object, so an attach or
   * detach by another thread may run meanwhile: it releases under {@link Roots#LOCK} (which attach
   * and detach hold around the native attach/detach), and only while its generation is current, so
   * it never empties a slot of an unmapped segment or, at the same address, of the next attachment's.
   */
  private static void relieve(long watcherGeneration) {
    PRESSURE_CALLS.increment();
    final long start = System.nanoTime();
    ReadCache.dropAll();  // proxies only the read cache keeps become unreachable for the GC below
    ReferenceQueue<Object> sentinelQueue = new ReferenceQueue<>();
    PhantomReference<Object> sentinel = new PhantomReference<>(new Object(), sentinelQueue);
    System.gc();
    final long gcDone = System.nanoTime();
    // The GC clears a phantom reference when it finds its referent unreachable; all references it
    // finds in one GC are cleared by its end. A stop-the-world System.gc() has done so when it
    // returns; a concurrent one (-XX:+ExplicitGCInvokesConcurrent) a little later.
    final long deadline = gcDone + PRESSURE_WAIT_NS;
    boolean cleared, interrupted = false;
    while (!(cleared = sentinel.refersTo(null)) && System.nanoTime() - deadline < 0) {
      try {
        Thread.sleep(1);
      } catch (InterruptedException e) {
        interrupted = true;  // kept for the allocation's next wait (set again below)
        break;
      }
    }
    Reference.reachabilityFence(sentinel);
    final long waited = System.nanoTime();
    // Every Root whose Handle that GC found unreachable is cleared now, whether or not the
    // Reference Handler thread has enqueued it yet: take them from the cache, then whatever the
    // queue holds (Roots of detached proxies; Roots enqueued meanwhile).
    Roots.Spares spares = new Roots.Spares();
    long released;
    if (watcherGeneration == 0) {
      released = releaseCleared(spares) + relieveEnqueued(spares);
      spares.flush();
    } else {
      synchronized (Roots.LOCK) {
        if (Native.generation() != watcherGeneration) return;  // attached again or detached meanwhile
        released = releaseCleared(spares) + relieveEnqueued(spares);
        spares.flush();
      }
    }
    PRESSURE_RELEASED.add(released);
    if (interrupted) Thread.currentThread().interrupt();
    if (PRESSURE_VERBOSE) {
      System.err.println("colors: heap pressure: released " + released + " roots in "
          + (System.nanoTime() - start) / 1_000_000 + " ms (System.gc() " + (gcDone - start) / 1_000_000 + " ms, waited "
          + (waited - gcDone) / 1_000_000 + " ms" + (cleared ? "" : ", references not cleared in time") + "), "
          + cacheSize() + " cached proxies, " + Roots.live() + " Java-held roots, " + Native.liveHandles() + " JValues");
    }
  }

  /** Unlinks every cache entry whose Root is cleared (its Handle unreachable) and releases those Roots. */
  private static long releaseCleared(Roots.Spares spares) {
    java.util.ArrayList<Root> dead = new java.util.ArrayList<>();
    long n = 0;
    for (Stripe st : CACHE) {
      synchronized (st) {
        Entry[] t = st.table;
        for (int i = 0; i < t.length; i++) {
          Entry prev = null;
          for (Entry e = t[i]; e != null; e = e.next) {
            if (e.root.refersTo(null)) {
              // As remove(): lock-free readers on e still reach the rest of the chain.
              if (prev == null) SLOTS.setRelease(t, i, e.next);
              else prev.next = e.next;
              st.size--;
              dead.add(e.root);
            } else {
              prev = e;
            }
          }
        }
      }
      for (Root r : dead) {
        if (r.claim()) {
          r.releaseUnderPressure(spares);
          n++;
        }
      }
      dead.clear();
    }
    return n;
  }

  private static int relieveEnqueued(Roots.Spares spares) {
    int n = 0;
    for (Root r; (r = (Root) QUEUE.poll()) != null;) {
      if (!r.claim()) continue;  // released from the cache already
      Entry e = r.entry;
      if (e == null || !remove(e)) {
        synchronized (ORPHANS) {
          ORPHANS.remove(r);
        }
      }
      r.releaseUnderPressure(spares);
      n++;
    }
    return n;
  }

  /** Calls of {@link #onHeapPressure} that ran (tests, verbose benchmarks). */
  static long pressureCalls() {
    return PRESSURE_CALLS.sum();
  }

  /** Roots released by those calls. */
  static long pressureReleased() {
    return PRESSURE_RELEASED.sum();
  }

  // ---- the identity cache --------------------------------------------------------------------

  /** A cache entry: a weak reference to a proxy, keyed by its object's raw word. */
  static final class Entry extends WeakReference<Object> {
    final long raw;
    /** Keeps the Root reachable (so it is enqueued) while the entry is linked. */
    final Root root;
    /** Next entry of the bucket (written under the stripe's lock, read without). */
    volatile Entry next;

    Entry(Object proxy, long raw, Root root) {
      super(proxy);
      this.raw = raw;
      this.root = root;
    }
  }

  private static final int STRIPES = 16;
  private static final VarHandle SLOTS = MethodHandles.arrayElementVarHandle(Entry[].class);

  private static final class Stripe {
    volatile Entry[] table = new Entry[64];
    int size;  // GUARDED_BY(this)
  }

  private static final Stripe[] CACHE = new Stripe[STRIPES];

  static {
    for (int i = 0; i < STRIPES; i++) CACHE[i] = new Stripe();
  }

  private static long mix(long raw) {
    return raw * 0x9E3779B97F4A7C15L;
  }

  private static Stripe stripe(long h) {
    return CACHE[(int) (h >>> 60)];
  }

  private static int index(long h, int length) {
    return (int) (h >>> 28) & (length - 1);
  }

  /** The live proxy of the object with raw word {@code raw}, or null (possibly a false miss). */
  static Object lookup(long raw) {
    long h = mix(raw);
    Entry[] t = stripe(h).table;
    Entry e = (Entry) SLOTS.getAcquire(t, index(h, t.length));
    for (int steps = 0; e != null && steps < 64; steps++, e = e.next) {
      if (e.raw == raw) {
        Object p = e.get();
        if (p != null) return p;
      }
    }
    return null;
  }

  /** The live proxy of {@code raw} in the stripe (REQUIRES: its lock held), or null. */
  private static Object findLocked(Stripe st, long h, long raw) {
    Entry[] t = st.table;
    for (Entry e = t[index(h, t.length)]; e != null; e = e.next) {
      if (e.raw == raw) {
        Object p = e.get();
        if (p != null) return p;
      }
    }
    return null;
  }

  /**
   * Publishes {@code entry} (whose proxy is new) unless a live proxy of its object is cached: then
   * returns that one and publishes nothing. Dead entries of the same object stay until their Roots
   * are processed (they keep those Roots reachable); lookups skip them.
   */
  private static Object publish(Entry entry) {
    long raw = entry.raw;
    long h = mix(raw);
    Stripe st = stripe(h);
    synchronized (st) {
      Object live = findLocked(st, h, raw);
      if (live != null) return live;
      Entry[] t = st.table;
      int i = index(h, t.length);
      entry.next = t[i];
      SLOTS.setRelease(t, i, entry);
      if (++st.size > t.length - (t.length >> 2)) resize(st);
    }
    return null;
  }

  /**
   * A stripe's table shrinks to a quarter when an eighth of it is used, down to this length (below
   * it, growing and shrinking again as proxies come and go would cost more than a miss saves).
   */
  private static final int SHRINK_ABOVE = 4096;

  // REQUIRES: st's lock held.
  private static void resize(Stripe st) {
    resize(st, st.table.length * 2);
  }

  /**
   * Relinks the stripe's entries into a table of {@code length} buckets. A lookup racing it may
   * miss (it may follow a relinked chain), never find a wrong entry. REQUIRES: st's lock held.
   */
  private static void resize(Stripe st, int length) {
    Entry[] old = st.table;
    Entry[] t = new Entry[length];
    for (Entry head : old) {
      for (Entry e = head; e != null;) {
        Entry next = e.next;
        int j = index(mix(e.raw), t.length);
        e.next = t[j];
        t[j] = e;
        e = next;
      }
    }
    st.table = t;  // volatile: the chains are complete before readers see the table
  }

  /** Unlinks {@code entry}; false if it is not linked (dropped by {@link #clear}). */
  private static boolean remove(Entry entry) {
    long h = mix(entry.raw);
    Stripe st = stripe(h);
    synchronized (st) {
      Entry[] t = st.table;
      int i = index(h, t.length);
      Entry prev = null;
      for (Entry e = t[i]; e != null; prev = e, e = e.next) {
        if (e == entry) {
          if (prev == null) SLOTS.setRelease(t, i, e.next);
          else prev.next = e.next;
          st.size--;
          // A table left mostly empty by proxies that died (a traversal makes hundreds of
          // thousands) would make every later miss a cache miss into a large array.
          if (t.length > SHRINK_ABOVE && st.size < t.length >> 3) resize(st, t.length >> 2);
          return true;
        }
      }
    }
    return false;
  }

  // ---- proxies from natives ------------------------------------------------------------------

  /**
   * Called by the natives for a shared reference without a live proxy: adopts the native handle
   * {@code ptr} into a new proxy, or releases it and returns the live proxy of the same object.
   */
  static Object wrap(long ptr, long raw, int kind) {
    // Owns ptr from the call on, whatever happens: released here until a Root holds it (the
    // natives never release it after calling this, even when it throws).
    Root root = null;
    try {
      Object live = lookup(raw);
      if (live != null) return live;
      ReadScope.State sc = ReadScope.here();
      if (sc != null && (live = sc.get(raw)) != null) return live;  // the scope's proxy of it
      Handle h = new Handle(raw, kind, Direct.epoch);
      Object proxy = create(h, null);
      root = new Root(h, QUEUE, ptr, 0, null);
      return publishNew(h, proxy, root);
    } finally {
      if (root == null) Native.release(ptr);
    }
  }

  /**
   * Called by the natives for a transient proxy ({@code to_java_transient}): a proxy of its own,
   * never in the identity cache, adopting the native handle {@code ptr}. Its one user releases its
   * root with {@link #releaseTransient} as soon as it is done with it (a server's argument
   * converted to a private value); should it not, the root goes when the JVM collects the proxy,
   * as any proxy's.
   */
  static Object wrapTransient(long ptr, long raw, int kind) {
    // Owns ptr from the call on, as wrap does.
    Root root = null;
    try {
      Handle h = new Handle(raw, kind, Direct.epoch);
      Object proxy = create(h, null);
      root = new Root(h, QUEUE, ptr, 0, null);
      root.transientProxy = true;
      h.root = root;
      return proxy;
    } finally {
      if (root == null) Native.release(ptr);
    }
  }

  /**
   * Releases the root of a proxy made by {@link #wrapTransient} now. The proxy is unusable after
   * this (natives refuse a Handle without a root). REQUIRES: no one else has the proxy or reads
   * through it any more (it was never in the identity cache, so only its maker can have it).
   * Any other proxy is left alone: a cached one, and one kept out of a read scope after another
   * thread published one of its object ({@link #promote}), which has an unpublished root of its
   * own too but is its holder's.
   */
  static void releaseTransient(Object proxy) {
    Handle h = handleOf(proxy);
    if (h == null) return;
    Root r = h.root;
    if (r == null || !r.transientProxy) return;
    h.root = null;
    if (r.claim()) {
      r.clear();  // never enqueued: released here
      r.release(true);
    }
  }

  // ---- proxies from the Java fast path -------------------------------------------------------

  /**
   * A proxy of the object {@code raw}, rooted by the Java-held slot {@code slot} (which this call
   * takes over: it becomes the new proxy's root, or is dropped when a live proxy exists).
   * {@code mapped}: the mapped Java class of a user object when known (allocation), else null.
   * REQUIRES: {@code slot} holds {@code raw}; {@code v} is the current view.
   */
  static Object adopt(Direct.View v, long slot, long raw, int kind, Class<?> mapped) {
    drain(DRAIN_PER_PROXY);
    Handle h = new Handle(raw, kind, v.epoch);
    Object proxy;
    try {
      proxy = create(h, mapped);
    } catch (RuntimeException | Error e) {
      Roots.drop(v, slot);
      throw e;
    }
    return publishNew(h, proxy, new Root(h, QUEUE, 0, slot, v));
  }

  /**
   * Links a new proxy's Handle, Root and cache entry and publishes it; if a live proxy of the object
   * was published meanwhile, returns that one instead and releases the new root at once (the new
   * proxy was never handed out, so nothing can read through it).
   */
  private static Object publishNew(Handle h, Object proxy, Root root) {
    Entry entry = new Entry(proxy, h.raw, root);
    root.entry = entry;
    h.root = root;
    Object live = publish(entry);
    if (live != null) {
      PUBLISH_CONFLICTS.increment();
      // The JVM may already have found the Root's Handle unreachable (h and proxy are dead
      // locals by now) and enqueued it before clear() runs: the queue's consumer and this thread
      // then race to release the same root, so whoever claims it releases it (Root#claim).
      if (root.claim()) {
        root.clear();
        root.release(true);
      }
      return live;
    }
    return proxy;
  }

  private static final java.util.concurrent.atomic.LongAdder PUBLISH_CONFLICTS = new java.util.concurrent.atomic.LongAdder();

  /** New proxies that lost their publication to a live proxy of the same object (tests). */
  static long publishConflicts() {
    return PUBLISH_CONFLICTS.sum();
  }

  /** What {@link #readRef} returns for a value the fast path does not read (take the JNI path). */
  static final Object MISS = new Object();

  /**
   * The value of the reference slot {@code s} without JNI: null, a string (read in place), or the
   * proxy of a container or user object — its live proxy, else a new one rooted by a Java-held
   * slot (the root_load protocol, {@link Roots#load}); {@link #MISS} for anything else (scalars,
   * boxed numbers, binaries, long strings, a collector cycle during a string read).
   * {@code strings}: the slot may hold a string (a field typed string or any); otherwise the
   * object's class is not read before the identity cache is asked (a live proxy then costs no
   * access to the object), and a string found there anyway takes the JNI path.
   * REQUIRES: UNSAFE; the object owning {@code s} kept alive by the caller.
   */
  static Object readRef(Direct.View v, long s, boolean strings) {
    for (;;) {
      long w = v.load(s);
      if (w == 0) return null;
      if ((w & Words.TAG_MASK) != 0) return MISS;
      if (strings) {
        String str = v.readString(s);  // checks the class first: cheap for anything else
        if (str != null) return str;
      }
      // A live proxy of the object at address w: its root has kept that object at w since the
      // proxy was made. The proxy may be younger than the load above (another thread made it), and
      // in between the object the slot held could have died and w been reused; so the slot is read
      // again: if it still holds w, it refers to the proxy's object now.
      // Inside a read scope, w is alive until the scope ends: the scope's own proxy of it first
      // (a thread-local map), then a live rooted one, else a new borrowed one.
      ReadScope.State sc = ReadScope.here();
      if (sc != null) return borrowed(v, sc, w);
      Object live = lookup(w);
      if (live != null) {
        if (v.load(s) == w) return live;
        continue;
      }
      long slot = Roots.load(v, s, w);
      if (slot == 0) continue;  // the slot changed: read it again
      int kind = v.kindOf(w);   // rooted now: safe to read
      if (!proxied(kind)) {
        Roots.drop(v, slot);
        return MISS;
      }
      return adopt(v, slot, w, kind, null);  // publish() checks the cache again under its lock
    }
  }

  /**
   * Inside a transaction: the value of slot {@code s} of the object at {@code a}, read through the
   * transaction ({@link Direct#txLoadRooted}: the object's ownership record, the value rooted by
   * libshared and the root handed over), with a reference's proxy made in Java: the live proxy of
   * its address (the root handed over is dropped: the object is alive at that address while
   * rooted, so that proxy is its), else a new one owning the root. {@link #MISS} for what the JNI
   * path converts (scalars in a reference field, strings, boxed numbers, binaries).
   * REQUIRES: UNSAFE; in a transaction; {@code keep} roots the object at {@code a}.
   */
  static Object readRefInTx(Direct.View v, Object keep, long a, long s) {
    long r = Direct.txLoadRooted(keep, a, s);
    if (r == 0) return null;
    if ((r & 7) != 0) return MISS;  // a scalar word
    long slot = r;
    Roots.adopted();
    long w = v.load(slot);
    int kind = v.kindOf(w);
    if (!proxied(kind)) {
      Roots.drop(v, slot);
      return MISS;
    }
    return ofRooted(v, slot, w, kind);
  }

  /**
   * The proxy of the object {@code w} that the Java-held slot {@code slot} roots (taken over): its
   * live proxy, the slot then dropped (a rooted object is alive at its address, so a live proxy of
   * that address is its), else a new proxy owning the slot. REQUIRES: {@code proxied(kind)}.
   */
  static Object ofRooted(Direct.View v, long slot, long w, int kind) {
    Object live = lookup(w);
    ReadScope.State sc;
    if (live == null && (sc = ReadScope.here()) != null) live = sc.get(w);
    if (live != null) {
      Roots.drop(v, slot);
      return live;
    }
    return adopt(v, slot, w, kind, null);
  }

  /** The kinds whose shared objects appear in Java as proxies. */
  static boolean proxied(int kind) {
    return kind == LIST || kind == MAP || kind == SET || kind == OBJECT || kind == SORTED_MAP;
  }

  /**
   * Inside the read scope {@code sc} of the calling thread: the scope's proxy of the object at
   * {@code w}, else its live cached proxy, else a new borrowed one (no root, no cache entry);
   * {@link #MISS} for an object this path does not proxy. REQUIRES: {@code w} a reference read
   * inside the scope (the scope keeps it alive, so its class can be read).
   */
  static Object borrowed(Direct.View v, ReadScope.State sc, long w) {
    Object p = sc.get(w);
    if (p != null) return p;
    if ((p = lookup(w)) != null) return p;  // alive at w since before this read: that object's proxy
    int kind = v.kindOf(w);
    return proxied(kind) ? sc.borrow(v, w, kind) : MISS;
  }

  /**
   * Gives the borrowed handle {@code h} a root of its own (libshared's promote_borrowed: the root,
   * then the collector's flag while it marks) and publishes its proxy in the identity cache, unless
   * another thread published one of the object meanwhile: then the proxy keeps its own root,
   * unpublished, as a transient proxy (its Root is kept reachable with the orphans until released).
   * Called by {@link ReadScope#keep} and, through jvalue_of, by every native given such a handle.
   * @throws IllegalStateException if the scope that lent {@code h} closed or is another thread's
   */
  static void promote(Handle h) {
    if (h.root != null) return;
    ReadScope.State sc = h.scope;
    if (sc == null) throw new NotAttachedException("colors: this shared object's handle was released");
    if (sc.owner != Thread.currentThread()) {
      throw new IllegalStateException(sc.owner == null
          ? "colors: this shared object was read inside a ReadScope that has closed; keep it with ReadScope.keep "
              + "inside the scope, or read it again"
          : "colors: this shared object was read inside another thread's ReadScope; keep it with ReadScope.keep "
              + "before handing it over");
    }
    Object proxy = sc.get(h.raw);
    if (proxy == null || handleOf(proxy) != h) throw new IllegalStateException("colors: a borrowed proxy is not its scope's");
    Direct.View v = Direct.viewFor(h);
    if (v == null) throw new NotAttachedException("colors: detached while keeping a shared object read in a ReadScope");
    long slot = Direct.promote(h.raw);
    Roots.adopted();
    Root root = new Root(h, QUEUE, 0, slot, v);
    Entry entry = new Entry(proxy, h.raw, root);
    root.entry = entry;
    h.root = root;
    if (publish(entry) != null) {
      root.entry = null;
      synchronized (ORPHANS) {
        ORPHANS.add(root);
      }
    }
  }

  static Object create(Handle h, Class<?> mapped) {
    switch (h.kind) {
      case LIST: return new SharedList(h);
      case MAP: return new SharedMap(h);
      case SET: return new SharedSet(h);
      case SORTED_MAP: return new SharedSortedMap(h);
      case OBJECT: return mapped != null ? Mapped.bind(new SharedObject(h), mapped)
          : Mapped.proxyFor(new SharedObject(h));  // an instance of a mapped class, or the view
      default: throw new IllegalStateException("no proxy for shared kind " + h.kind);
    }
  }

  /** The handle of a proxy, or null for anything else (private objects, null). */
  static Handle handleOf(Object o) {
    if (o instanceof SharedInstance) {
      SharedObject v = ((SharedInstance) o).$colors$view();
      return v == null ? null : v.handle;
    }
    if (o instanceof SharedObject) return ((SharedObject) o).handle;
    if (o instanceof SharedList) return ((SharedList) o).handle;
    if (o instanceof SharedMap) return ((SharedMap) o).handle;
    if (o instanceof SharedSet) return ((SharedSet) o).handle;
    if (o instanceof SharedSortedMap) return ((SharedSortedMap) o).isProxy() ? ((SharedSortedMap) o).handle : null;
    return null;
  }

  /** The SharedObject view of a shared user object (a view, or an instance bound by the agent), or null. */
  static SharedObject viewOf(Object o) {
    if (o instanceof SharedObject) return (SharedObject) o;
    if (o instanceof SharedInstance) return ((SharedInstance) o).$colors$view();
    return null;
  }

  /** Forgets every cached proxy (detach: the proxies of the old attachment are stale). */
  static void clear() {
    ReadCache.dropAll();
    ReadScope.unbindAll();
    for (Stripe st : CACHE) {
      synchronized (st) {
        for (Entry head : st.table) {
          for (Entry e = head; e != null; e = e.next) {
            Mapped.unbind(e.get());
            synchronized (ORPHANS) {
              ORPHANS.add(e.root);  // still to be processed (native roots free their JValue)
            }
          }
        }
        st.table = new Entry[64];
        st.size = 0;
      }
    }
  }

  static int cacheSize() {
    int n = 0;
    for (Stripe st : CACHE) {
      synchronized (st) {
        n += st.size;
      }
    }
    return n;
  }
}
