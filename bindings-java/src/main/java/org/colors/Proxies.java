package org.colors;

import java.lang.ref.Cleaner;
import java.lang.ref.WeakReference;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Proxies of shared objects and their identity cache.
 *
 * <p>Invariants: every proxy owns exactly one {@link Handle} (one GC root); while a proxy of a
 * shared object is reachable, reading that object again (from a container, a repository, a
 * channel) gives the same proxy: the cache maps the object's raw word to a weak reference to its
 * proxy. When the proxy becomes unreachable, the Cleaner drops the cache entry (only if it still
 * refers to that proxy) and releases the root.
 */
final class Proxies {
  private Proxies() {}

  /** Shared TypeKinds of containers and objects (colors::TypeKind). */
  static final int INTEGER = 1, FLOAT = 2, BOOLEAN = 3, STRING = 4, BINARY = 5, LIST = 6, SET = 7, MAP = 8,
      OBJECT = 9;

  /** Releases the native handles of unreachable proxies (one daemon thread). */
  static final Cleaner CLEANER = Cleaner.create();

  private static final ConcurrentHashMap<Long, WeakReference<Object>> CACHE = new ConcurrentHashMap<>();

  /** Drops the cache entry (if it is still this proxy's) and the native root. */
  private static final class Release implements Runnable {
    private final long ptr;
    private final long raw;
    private final WeakReference<Object> ref;

    Release(long ptr, long raw, WeakReference<Object> ref) {
      this.ptr = ptr;
      this.raw = raw;
      this.ref = ref;
    }

    @Override
    public void run() {
      CACHE.remove(raw, ref);
      Native.release(ptr);
    }
  }

  /**
   * Called by the natives before they create a handle for a shared reference they return: the
   * live proxy of the object with raw word {@code raw}, or null.
   */
  static Object lookup(long raw) {
    WeakReference<Object> cur = CACHE.get(raw);
    return cur == null ? null : cur.get();
  }

  /**
   * Called by the natives for a shared reference without a live proxy: adopts the native handle
   * {@code ptr} into a new proxy, or releases it and returns the live proxy of the same object.
   */
  static Object wrap(long ptr, long raw, int kind) {
    Long key = raw;
    for (;;) {
      WeakReference<Object> cur = CACHE.get(key);
      if (cur != null) {
        Object p = cur.get();
        if (p != null) {
          Native.release(ptr);
          return p;
        }
      }
      Handle h = new Handle(ptr, raw, kind);
      Object proxy = create(h);
      WeakReference<Object> ref = new WeakReference<>(proxy);
      boolean won = cur == null ? CACHE.putIfAbsent(key, ref) == null : CACHE.replace(key, cur, ref);
      if (won) {
        CLEANER.register(h, new Release(ptr, raw, ref));
        return proxy;
      }
      // Another thread cached a proxy of the same object meanwhile: use it (next iteration).
    }
  }

  private static Object create(Handle h) {
    switch (h.kind) {
      case LIST: return new SharedList(h);
      case MAP: return new SharedMap(h);
      case SET: return new SharedSet(h);
      case OBJECT: return Mapped.proxyFor(new SharedObject(h));  // an instance of a mapped class, or the view
      default: throw new IllegalStateException("no proxy for shared kind " + h.kind);
    }
  }

  /** The handle of a proxy, or null for anything else (private objects, null). */
  static Handle handleOf(Object o) {
    if (o instanceof SharedList) return ((SharedList) o).handle;
    if (o instanceof SharedMap) return ((SharedMap) o).handle;
    if (o instanceof SharedSet) return ((SharedSet) o).handle;
    if (o instanceof SharedObject) return ((SharedObject) o).handle;
    if (o instanceof SharedInstance) {
      SharedObject v = ((SharedInstance) o).$colors$view();
      return v == null ? null : v.handle;
    }
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
    for (WeakReference<Object> r : CACHE.values()) Mapped.unbind(r.get());
    CACHE.clear();
  }

  static int cacheSize() {
    return CACHE.size();
  }
}
