package org.colors;

import java.lang.ref.WeakReference;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * {@code Class.forName(name, false, loader)} with a memo, for the readers that look up the Java
 * class named like a shared class ({@link BulkReader}, {@link Materializer}). A shared class name
 * usually names no Java class through the reader's loader (rpc-bench's {@code bench.Node} is read
 * as {@code bench.ColorsServer$Node}), and a failed {@code forName} searches the whole class path
 * and builds a {@code ClassNotFoundException}: about 10 µs, once per call before this memo.
 *
 * <p>Invariants: a found class is kept by a weak reference (a loader always answers the same class
 * for a name once it has answered one, so a positive entry never goes stale); a name not found is
 * looked up again once {@link #RETRY_NANOS} have passed since the failed lookup, so a class that
 * becomes visible later (a loader that grows its path) is seen within that time. Loaders are weak
 * keys, and no value refers to its loader strongly, so the memo keeps no loader alive. At most
 * {@link #MAX_NAMES} names are kept per loader; past that, lookups are not memoized.
 */
final class ClassesByName {
  private ClassesByName() {}

  static final long RETRY_NANOS = 1_000_000_000L;
  static final int MAX_NAMES = 4096;

  /** A failed lookup: when it was made. */
  private static final class Missing {
    final long at;

    Missing(long at) {
      this.at = at;
    }
  }

  private static final Map<ClassLoader, ConcurrentHashMap<String, Object>> BY_LOADER = new WeakHashMap<>();
  private static final ConcurrentHashMap<String, Object> BOOT = new ConcurrentHashMap<>();

  private static ConcurrentHashMap<String, Object> namesOf(ClassLoader loader) {
    if (loader == null) return BOOT;
    synchronized (BY_LOADER) {
      return BY_LOADER.computeIfAbsent(loader, l -> new ConcurrentHashMap<>());
    }
  }

  /** The class {@code name} through {@code loader} (not initialized), or null if there is none. */
  static Class<?> find(String name, ClassLoader loader) {
    ConcurrentHashMap<String, Object> names = namesOf(loader);
    Object e = names.get(name);
    if (e instanceof WeakReference) {
      Class<?> c = (Class<?>) ((WeakReference<?>) e).get();
      if (c != null) return c;
    } else if (e instanceof Missing && System.nanoTime() - ((Missing) e).at < RETRY_NANOS) {
      return null;
    }
    Class<?> c;
    try {
      c = Class.forName(name, false, loader);
    } catch (ClassNotFoundException | LinkageError | SecurityException ex) {
      c = null;
    }
    if (names.size() < MAX_NAMES || names.containsKey(name)) {
      names.put(name, c != null ? new WeakReference<Class<?>>(c) : new Missing(System.nanoTime()));
    }
    return c;
  }
}
