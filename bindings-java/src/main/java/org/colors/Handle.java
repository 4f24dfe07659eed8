package org.colors;

/**
 * One GC root of the shared heap held by this process, owned by exactly one proxy (through its
 * {@link Root}: a native {@code JValue} or a Java-held root slot). Natives receive the Handle object
 * itself, so it stays reachable (and its root alive) for the whole native call; the
 * {@link Root} (a phantom reference to it) releases the root once the Handle becomes phantom
 * reachable ({@link Proxies#drain}).
 */
final class Handle {
  /**
   * The root and cache entry (read by the natives: Root.ptr, Root.slot). Set once, right after the
   * proxy is made (the Root refers to the proxy), before the proxy is published.
   */
  Root root;
  /** The raw tagged word of the object: its address; the key of the identity cache and monitors. */
  final long raw;
  /** The shared TypeKind of the object ({@link Proxies#LIST}, ...). */
  final int kind;
  /** The attachment this handle belongs to ({@link Direct#epoch}): the fast path checks it. */
  final long epoch;
  /**
   * The read scope that lent this handle out without a root of its own ({@link ReadScope}), or
   * null. Set once, before the proxy is handed out. While {@link #root} is null such a handle is
   * usable only by the scope's thread while the scope is open; {@link Proxies#promote} gives it a
   * root (then it is an ordinary handle).
   */
  ReadScope.State scope;

  Handle(long raw, int kind, long epoch) {
    this.raw = raw;
    this.kind = kind;
    this.epoch = epoch;
  }

  /** True for a borrowed handle (no root) that the calling thread may not use: its scope closed, or is another thread's. */
  boolean borrowedElsewhere() {
    ReadScope.State s = scope;
    return s != null && root == null && s.owner != Thread.currentThread();
  }

  /** Whether the fast paths may read through this handle on this thread: it has a root, or its scope lends it here. */
  boolean usableHere() {
    if (root != null) return true;
    ReadScope.State s = scope;
    return s != null && s.owner == Thread.currentThread();
  }
}
