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
 *   <li>Every cached or pooled slot is null and belongs to the attachment of its generation; caches
 *       and the pool of an older generation are dropped, never written (the server already dropped
 *       them).
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
  private static long poolGen;                        // GUARDED_BY(LOCK)
  /**
   * The native attachment generation ({@link Native#generation}) whose slots {@link #LIVE} counts,
   * 0 while detached. Written only by {@link #forgetLocked} (LOCK held, at a new attachment and at
   * detach); read under LOCK by the release thread, and without it by mutator threads (no attach or
   * detach runs while they use shared objects).
   */
  private static volatile long currentGen;
  /**
   * Java-held roots of the current attachment in use (tests: SharedMemory.liveHandles). Invariant:
   * it counts exactly the slots taken ({@link #take}, {@link #adopted}) since the last
   * {@link #forgetLocked} and not released since; a slot of an older generation is never counted
   * down (its attachment's count was dropped with it), so it is never negative.
   */
  private static final LongAdder LIVE = new LongAdder();

  private static final class Cache {
    long gen;
    int n;
    final long[] slots = new long[THREAD_MAX];
  }

  private static final ThreadLocal<Cache> CACHES = ThreadLocal.withInitial(Cache::new);

  /** An empty (null) root slot of {@code v}'s attachment, owned by the caller from now on. */
  static long take(Direct.View v) {
    Cache c = CACHES.get();
    if (c.gen != v.gen) {
      c.n = 0;
      c.gen = v.gen;
    }
    if (c.n == 0) refill(v, c);
    LIVE.increment();
    return c.slots[--c.n];
  }

  private static void refill(Direct.View v, Cache c) {
    synchronized (LOCK) {
      if (v.epoch != Direct.epoch) throw new NotAttachedException("colors: detached while rooting an object");
      if (poolGen != v.gen) {
        pooled = 0;
        poolGen = v.gen;
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
    if (c.gen == v.gen && c.n < THREAD_MAX) {
      c.slots[c.n++] = slot;
      return;
    }
    synchronized (LOCK) {
      putLocked(v, slot);
    }
  }

  /**
   * Releases a proxy's Java-held root: empties it (deletion barrier) and keeps it for reuse; nothing
   * if {@code v}'s attachment is gone (its roots went with it). The attachment is the native
   * generation, not the view's epoch: a successor that took this attachment back keeps the segment
   * mapped and every root in it, so a root from before that attach() is still released (else its
   * object would stay rooted until detach). {@code mutator}: the calling thread uses shared objects
   * (so no attach or detach runs concurrently, as for every fast path): the slot goes to its own
   * cache without the lock; otherwise (the release thread) under {@link #LOCK}.
   */
  static void release(Direct.View v, long slot, boolean mutator) {
    if (mutator && v.gen == currentGen) {
      drop(v, slot);
      return;
    }
    synchronized (LOCK) {
      if (v.gen != currentGen) return;  // an ended attachment: the server dropped every root of it
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
   * libshared). Nothing if {@code v}'s attachment is gone. REQUIRES: no attach or detach
   * concurrently: the calling thread uses shared objects, or holds LOCK (the pressure watcher).
   */
  static void releaseUnderPressure(Direct.View v, long slot, Spares spares) {
    if (v.gen != currentGen) return;  // an ended attachment: the server dropped every root of it
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

  // REQUIRES: LOCK held, v of the current generation, slot null.
  private static void putLocked(Direct.View v, long slot) {
    if (poolGen != v.gen) {
      pooled = 0;
      poolGen = v.gen;
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

  /**
   * At a new attachment (generation {@code gen}) or a detach ({@code gen} 0); REQUIRES: LOCK held,
   * no other thread using shared objects. Forgets the pool and the count; thread caches are dropped
   * by generation. Roots of older generations released from now on count nothing down.
   */
  static void forgetLocked(long gen) {
    pooled = 0;
    poolGen = 0;
    LIVE.reset();
    currentGen = gen;
  }

  /** Counts a slot Java took over from a native allocation (Direct.newObject). */
  static void adopted() {
    LIVE.increment();
  }

  /**
   * A Java-held slot of generation {@code gen} was adopted by a JValue and released natively
   * ({@link Root#release}): counted down only if it belongs to the current attachment (an older
   * one's count was dropped with it; the native release of its JValue touched no slot). {@code
   * mutator}: as for {@link #release} (no attach or detach concurrently), else under LOCK.
   */
  static void releasedNatively(long gen, boolean mutator) {
    if (mutator) {
      if (gen == currentGen) LIVE.decrement();
      return;
    }
    synchronized (LOCK) {
      if (gen == currentGen) LIVE.decrement();
    }
  }

  static long live() {
    return LIVE.sum();
  }
}
