package org.colors;

import java.lang.ref.PhantomReference;
import java.lang.ref.ReferenceQueue;

/**
 * The GC root behind one {@link Handle}, and its release: a phantom reference to the Handle, enqueued
 * once no Java code can reach the Handle any more (not even a finalizer), then processed by
 * {@link Proxies#drain} (run by threads that make proxies, and by a daemon thread).
 *
 * <p>The root is either a native {@code JValue} ({@link #ptr} != 0: made by the natives, released by
 * {@link Native#release}) or a slot of this process's root table that Java filled itself
 * ({@link #slot}, {@code ptr == 0}: the field fast path, {@link Roots}). A native that needs a JValue
 * for a handle of the second kind makes one that adopts the slot (jvalue_of in jni_module.cpp) and
 * stores it into {@link #ptr}; from then on the native release applies.
 *
 * <p>Invariants:
 * <ul>
 *   <li>The root holds the object's word from before the proxy is published until {@link #release},
 *       which runs only after this reference was enqueued, i.e. once the Handle is phantom reachable:
 *       no Java code can reach the proxy any more, so nothing reads the object after its root goes.
 *   <li>A Root stays strongly reachable until it is processed (else it would never be enqueued and
 *       the root would leak): through its cache entry ({@link Proxies.Entry#root}), which only the
 *       processing unlinks; entries forgotten at detach are kept in {@link Proxies}' orphan set.
 *   <li>{@link #ptr} changes 0 → JValue at most once, under the natives' adoption lock, while the
 *       Handle is reachable (inside a native call), so never concurrently with {@link #release}.
 *   <li>A root is released at most once: only by the one caller whose {@link #claim} succeeded.
 *       Several may try (the queue's consumers, a heap-pressure call, a proxy that lost its
 *       publication while the JVM enqueued its Root), and a second release would free a native
 *       JValue twice or hand one root slot to two owners. {@link #release} and
 *       {@link #releaseUnderPressure} check it: an unclaimed release is refused (the root leaks)
 *       and counted ({@link #unclaimedReleases}, which the tests require to stay 0).
 * </ul>
 */
final class Root extends PhantomReference<Handle> {
  /** The native JValue, 0 while the root is the Java-held {@link #slot}. Written by natives. */
  volatile long ptr;
  /** The Java-held root slot (an address in the segment), 0 for native roots. */
  final long slot;
  /** The native attachment generation the slot belongs to (jvalue_of refuses older ones). */
  final long gen;
  /** The view of the slot's attachment, null for native roots. */
  final Direct.View view;
  /** The identity cache entry of the proxy (set once, before publication). */
  Proxies.Entry entry;
  /**
   * Whether this is the root of a transient proxy ({@link Proxies#wrapTransient}), which its maker
   * may release early ({@link Proxies#releaseTransient}); set once, before the proxy is handed out.
   */
  boolean transientProxy;
  /** Set by the one thread that releases this root ({@link #claim}). */
  private volatile boolean claimed;
  private static final java.lang.invoke.VarHandle CLAIMED;

  static {
    try {
      CLAIMED = java.lang.invoke.MethodHandles.lookup().findVarHandle(Root.class, "claimed", boolean.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  /**
   * True for exactly one caller: the one that releases this root (the queue's consumers and a
   * heap-pressure call, which finds cleared Roots in the cache before they are enqueued, race).
   */
  boolean claim() {
    return CLAIMED.compareAndSet(this, false, true);
  }

  private static final java.util.concurrent.atomic.LongAdder UNCLAIMED = new java.util.concurrent.atomic.LongAdder();

  /** Set once {@link #release} or {@link #releaseUnderPressure} has run (tests: wait for a release). */
  private volatile boolean released;

  /** Whether this root was released (tests). */
  boolean isReleased() {
    return released;
  }

  /** Releases refused because the caller had not claimed the root (a binding bug; tests: 0). */
  static long unclaimedReleases() {
    return UNCLAIMED.sum();
  }

  private boolean checkClaimed() {
    if (claimed) return true;
    UNCLAIMED.increment();
    return false;
  }

  Root(Handle h, ReferenceQueue<Handle> q, long ptr, long slot, Direct.View view) {
    super(h, q);
    this.ptr = ptr;
    this.slot = slot;
    this.view = view;
    this.gen = view != null ? view.gen : 0;
  }

  /**
   * Releases the root on the heap-pressure path ({@link Proxies#onHeapPressure}, inside an
   * allocation): takes no lock of libshared and not {@link Roots#LOCK}; the emptied slot becomes a
   * spare of the JNI library (jni_module.cpp; a Java-held one through {@code spares}, flushed by
   * the caller), which Roots takes first when it needs slots.
   * REQUIRES: claimed by the caller; dequeued; the calling thread uses shared objects (no detach
   * concurrently).
   */
  void releaseUnderPressure(Roots.Spares spares) {
    if (!checkClaimed()) return;
    long p = ptr;
    if (p != 0) {
      Native.releaseUnderPressure(p);
      if (slot != 0) Roots.releasedNatively(gen, true);
    } else if (slot != 0) {
      Roots.releaseUnderPressure(view, slot, spares);
    }
    released = true;
  }

  /**
   * Releases the root. REQUIRES: claimed by the caller ({@link #claim}), and the Handle unreachable
   * (dequeued) or never handed out. {@code mutator}: called by a thread using shared objects (the
   * Java slot goes to its own cache), else by the daemon thread.
   */
  void release(boolean mutator) {
    if (!checkClaimed()) return;
    long p = ptr;
    if (p != 0) {
      Native.release(p);  // under the library's attach lock
      if (slot != 0) Roots.releasedNatively(gen, mutator);
    } else if (slot != 0) {
      Roots.release(view, slot, mutator);
    }
    released = true;
  }
}
