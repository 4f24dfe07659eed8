package org.colors;

/**
 * One native handle: a {@code colors::Value} held by this process (a GC root of the shared heap),
 * owned by exactly one proxy. Natives receive the Handle object itself, so it stays reachable (and
 * its root alive) for the whole native call; the {@link Proxies#CLEANER} releases it once the
 * Handle becomes unreachable.
 */
final class Handle {
  /** The native JValue (read by the natives). */
  final long ptr;
  /** The raw tagged word of the object: its address; the key of the identity cache and monitors. */
  final long raw;
  /** The shared TypeKind of the object ({@link Proxies#LIST}, ...). */
  final int kind;
  /** The attachment this handle belongs to ({@link Direct#epoch}): the fast path checks it. */
  final long epoch;

  Handle(long ptr, long raw, int kind) {
    this.ptr = ptr;
    this.raw = raw;
    this.kind = kind;
    this.epoch = Direct.epoch;
  }
}
