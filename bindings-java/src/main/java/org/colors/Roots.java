package org.colors;

import java.util.concurrent.atomic.LongAdder;

/**
 * Slots of this process's GC root table (libshared roots.hpp) that Java fills and empties itself,
 * so that the field fast path roots an object it reads ({@code p.left}) or allocates without a JNI
 * call per root.
 *
 * <p>The slots come from libshared in batches ({@link Direct#takeRoots}, null) and stay part of the
 * process's table, which the collector scans and the server clears when the process dies: a crashed
 * JVM leaks nothing the server does not reclaim. Java keeps free slots in a per-thread cache (up to
 * {@link #THREAD_MAX}) and a process pool; a pool beyond {@link #POOL_MAX} gives a batch back.
 *
 * <p>Invariants:
 * <ul>
 *   <li>Every cached or pooled slot is null and belongs to the attachment of its epoch; caches and
 *       the pool of an older epoch are dropped, never written (the server already dropped them).
 *   <li>A slot is filled with a seq_cst store ({@link #load}: the root_load protocol) and emptied
 *       with the deletion barrier ({@code storeWord(slot, 0)}, store_ref), as roots.hpp requires.
 *   <li>{@link #LOCK} guards the pool and excludes attach/detach ({@link SharedMemory} takes it): the
 *       Cleaner thread's {@link #release} never writes a slot of an unmapped segment.
 *   <li>Mutator threads write only slots they took (their own cache), while attached; detach while
 *       other threads use shared objects is unsupported, as for every fast path.
 * </ul>
 * A thread that ends leaves up to {@link #THREAD_MAX} null slots in its cache: table space only (the
 * slots hold nothing), reclaimed with the process.
 */
final class Roots {
  private Roots() {}

  static final Object LOCK = new Object();
  static final int THREAD_MAX = 64, BATCH = 32, REFILL = 256, POOL_MAX = 4096;

  private static long[] pool = new long[REFILL * 2];  // GUARDED_BY(LOCK)
  private static int pooled;                          // GUARDED_BY(LOCK)
  private static long poolEpoch;                      // GUARDED_BY(LOCK)
  /** Java-held roots in use (tests: SharedMemory.liveHandles). */
  private static final LongAdder LIVE = new LongAdder();

  private static final class Cache {
    long epoch;
    int n;
    final long[] slots = new long[THREAD_MAX];
  }

  private static final ThreadLocal<Cache> CACHES = ThreadLocal.withInitial(Cache::new);

  /** An empty (null) root slot of {@code v}'s attachment, owned by the caller from now on. */
  static long take(Direct.View v) {
    Cache c = CACHES.get();
    if (c.epoch != v.epoch) {
      c.n = 0;
      c.epoch = v.epoch;
    }
    if (c.n == 0) refill(v, c);
    LIVE.increment();
    return c.slots[--c.n];
  }

  private static void refill(Direct.View v, Cache c) {
    synchronized (LOCK) {
      if (v.epoch != Direct.epoch) throw new NotAttachedException("colors: detached while rooting an object");
      if (poolEpoch != v.epoch) {
        pooled = 0;
        poolEpoch = v.epoch;
      }
      if (pooled < BATCH) {
        long[] fresh = new long[REFILL];
        int n = Direct.takeRoots(fresh);
        ensure(pooled + n);
        System.arraycopy(fresh, 0, pool, pooled, n);
        pooled += n;
      }
      int k = Math.min(BATCH, pooled);
      System.arraycopy(pool, pooled - k, c.slots, c.n, k);
      pooled -= k;
      c.n += k;
    }
  }

  private static void ensure(int cap) {
    if (pool.length < cap) pool = java.util.Arrays.copyOf(pool, Math.max(cap, pool.length * 2));
  }

  /**
   * root_load (roots.hpp) into a Java-held slot: roots the reference {@code w} just read from the
   * slot at {@code src}. The root is published with a seq_cst store and {@code src} read again; if it
   * still holds {@code w}, then {@code w} was in {@code src} at an instant when this process already
   * held it as a root, so no collector cycle can miss it (the argument of roots.cpp). Returns the
   * root slot, or 0 if {@code src} changed meanwhile (the caller reads it again).
   * REQUIRES: {@code w} is a reference; the object owning {@code src} is kept alive by the caller.
   */
  static long load(Direct.View v, long src, long w) {
    long slot = take(v);
    v.storeSeqCst(slot, w);
    if (v.loadSeqCst(src) == w) return slot;
    drop(v, slot);
    return 0;
  }

  /**
   * Empties a slot this thread holds (deletion barrier) and keeps it for reuse (mutator side: a root
   * taken but not handed to a proxy).
   */
  static void drop(Direct.View v, long slot) {
    v.storeWord(slot, 0);
    LIVE.decrement();
    Cache c = CACHES.get();
    if (c.epoch == v.epoch && c.n < THREAD_MAX) {
      c.slots[c.n++] = slot;
      return;
    }
    synchronized (LOCK) {
      putLocked(v, slot);
    }
  }

  /**
   * Releases a proxy's Java-held root: empties it (deletion barrier) and keeps it for reuse; nothing
   * if {@code v}'s attachment is gone (its roots went with it). {@code mutator}: the calling thread
   * uses shared objects (so no detach runs concurrently, as for every fast path): the slot goes to
   * its own cache without the lock; otherwise (the release thread) under {@link #LOCK}.
   */
  static void release(Direct.View v, long slot, boolean mutator) {
    if (mutator && v.epoch == Direct.epoch) {
      drop(v, slot);
      return;
    }
    synchronized (LOCK) {
      if (v.epoch != Direct.epoch) return;  // detached: the server dropped every root of it
      LIVE.decrement();
      v.storeWord(slot, 0);
      putLocked(v, slot);
    }
  }

  /**
   * Releases a proxy's Java-held root on the heap-pressure path: empties it (deletion barrier) and
   * adds it to {@code spares}, which goes to the JNI library ({@link Native#spareRoots}) instead of
   * this class's pool, so that neither {@link #LOCK} nor the thread cache is touched (the allocating
   * thread may hold LOCK, e.g. in {@link #refill}, or another thread may hold it while it waits for
   * libshared). Nothing if {@code v}'s attachment is gone. REQUIRES: the calling thread uses shared
   * objects (no detach concurrently).
   */
  static void releaseUnderPressure(Direct.View v, long slot, Spares spares) {
    if (v.epoch != Direct.epoch) return;  // detached: the server dropped every root of it
    v.storeWord(slot, 0);
    LIVE.decrement();
    spares.add(slot, v.gen);
  }

  /** Emptied slots on their way to the JNI library's spares, passed in batches. */
  static final class Spares {
    private final long[] slots = new long[1024];
    private int n;
    private long gen;

    void add(long slot, long g) {
      if (n == slots.length || (n > 0 && g != gen)) flush();
      gen = g;
      slots[n++] = slot;
    }

    void flush() {
      if (n > 0) Native.spareRoots(slots, n, gen);
      n = 0;
    }
  }

  // REQUIRES: LOCK held, v current, slot null.
  private static void putLocked(Direct.View v, long slot) {
    if (poolEpoch != v.epoch) {
      pooled = 0;
      poolEpoch = v.epoch;
    }
    ensure(pooled + 1);
    pool[pooled++] = slot;
    if (pooled > POOL_MAX) {
      int k = POOL_MAX / 4;
      long[] give = java.util.Arrays.copyOfRange(pool, pooled - k, pooled);
      pooled -= k;
      Direct.giveRoots(give, k);
    }
  }

  /** At attach/detach (REQUIRES: LOCK held): forget the pool; thread caches are dropped by epoch. */
  static void forgetLocked() {
    pooled = 0;
    poolEpoch = 0;
    LIVE.reset();
  }

  /** Counts a slot Java took over from a native allocation (Direct.newObject). */
  static void adopted() {
    LIVE.increment();
  }

  /** A Java-held slot was adopted by a JValue and released natively (Root.run). */
  static void releasedNatively() {
    LIVE.decrement();
  }

  static long live() {
    return LIVE.sum();
  }
}
