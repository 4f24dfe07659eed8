package org.colors;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
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
   * The native attachment generation ({@link Native#generation}) whose slots {@link #live} counts,
   * 0 while detached. Written only by {@link #forgetLocked} (LOCK held, at a new attachment and at
   * detach); read under LOCK by the release thread, and without it by mutator threads (no attach or
   * detach runs while they use shared objects).
   */
  private static volatile long currentGen;
  /*
   * The count of Java-held roots of the current attachment in use (tests: SharedMemory.liveHandles,
   * live()). Invariant: the sum of the counts of the current generation — each thread's own
   * (Cache.count, written only by its thread: a plain add and an opaque store, no locked
   * instruction on the path of every proxy), the threads that ended (RETIRED) and the other
   * threads' releases (OTHERS) — is exactly the slots taken ({@link #take}, {@link #adopted})
   * since the last {@link #forgetLocked} and not released since; a slot of an older generation
   * is never counted down (its attachment's count was dropped with it), so the sum is never
   * negative. One thread's count may be (it released roots another thread took).
   */
  private static final LongAdder OTHERS = new LongAdder();
  private static final ArrayList<Cache> REGISTRY = new ArrayList<>();  // GUARDED_BY(REGISTRY)
  private static long retired;                                          // GUARDED_BY(REGISTRY)

  private static final class Cache {
    long gen;
    int n;
    final long[] slots = new long[THREAD_MAX];
    /** The generation {@link #count} belongs to (release store after the count's reset). */
    long countGen;
    /** Roots this thread took minus those it released, in generation countGen. */
    long count;
    final WeakReference<Thread> owner = new WeakReference<>(Thread.currentThread());

    Cache() {
      synchronized (REGISTRY) {
        retireEnded();
        REGISTRY.add(this);
      }
    }
  }

  private static final VarHandle COUNT, COUNT_GEN;

  static {
    try {
      MethodHandles.Lookup l = MethodHandles.lookup();
      COUNT = l.findVarHandle(Cache.class, "count", long.class);
      COUNT_GEN = l.findVarHandle(Cache.class, "countGen", long.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private static final ThreadLocal<Cache> CACHES = ThreadLocal.withInitial(Cache::new);

  /** Adds {@code d} to this thread's count of generation {@code gen} (nothing for an older one). */
  private static void count(Cache c, long gen, long d) {
    if (gen != currentGen) return;
    if (c.countGen != gen) {
      COUNT.setOpaque(c, 0L);
      COUNT_GEN.setRelease(c, gen);
    }
    COUNT.setOpaque(c, c.count + d);
  }

  /** Folds the counts of threads that ended into RETIRED and forgets their caches. REQUIRES: REGISTRY held. */
  private static void retireEnded() {
    for (int i = REGISTRY.size() - 1; i >= 0; i--) {
      Cache c = REGISTRY.get(i);
      Thread t = c.owner.get();
      if (t != null && t.isAlive()) continue;
      // The thread ended: its last writes happen-before isAlive() returned false (or it was collected).
      if ((long) COUNT_GEN.getAcquire(c) == currentGen) retired += (long) COUNT.getOpaque(c);
      REGISTRY.set(i, REGISTRY.get(REGISTRY.size() - 1));
      REGISTRY.remove(REGISTRY.size() - 1);
    }
  }

  /** An empty (null) root slot of {@code v}'s attachment, owned by the caller from now on. */
  static long take(Direct.View v) {
    Cache c = CACHES.get();
    if (c.gen != v.gen) {
      c.n = 0;
      c.gen = v.gen;
    }
    if (c.n == 0) refill(v, c);
    count(c, v.gen, 1);
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
    Cache c = CACHES.get();
    count(c, v.gen, -1);
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
      OTHERS.decrement();
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
    OTHERS.decrement();
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
    synchronized (REGISTRY) {
      retired = 0;
      OTHERS.reset();
      currentGen = gen;  // every thread's count of an older generation stops counting
    }
  }

  /** Counts a slot Java took over from a native allocation (Direct.newObject). REQUIRES: a mutator thread. */
  static void adopted() {
    count(CACHES.get(), currentGen, 1);
  }

  /**
   * A Java-held slot of generation {@code gen} was adopted by a JValue and released natively
   * ({@link Root#release}): counted down only if it belongs to the current attachment (an older
   * one's count was dropped with it; the native release of its JValue touched no slot). {@code
   * mutator}: as for {@link #release} (no attach or detach concurrently), else under LOCK.
   */
  static void releasedNatively(long gen, boolean mutator) {
    if (mutator) {
      count(CACHES.get(), gen, -1);
      return;
    }
    synchronized (LOCK) {
      if (gen == currentGen) OTHERS.decrement();
    }
  }

  /**
   * The count above, less the roots of the strings kept by {@link StringWrites} (a bounded cache,
   * not a proxy's). Exact when no thread takes or releases roots meanwhile (tests).
   */
  static long live() {
    long kept = StringWrites.held(currentGen);
    synchronized (REGISTRY) {
      retireEnded();
      long n = retired + OTHERS.sum() - kept;
      for (Cache c : REGISTRY) {
        if ((long) COUNT_GEN.getAcquire(c) == currentGen) n += (long) COUNT.getOpaque(c);
      }
      return n;
    }
  }
}
