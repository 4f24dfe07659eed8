package org.colors;

import java.util.function.Consumer;

/**
 * A map from object addresses (non-zero raw words) to proxies, for one thread: open addressing
 * with linear probing, no boxing of the keys, no removal. A read scope's borrowed proxies
 * ({@link ReadScope}) live here; a scope reading a large graph puts one entry per object it reaches.
 */
final class AddressMap {
  private long[] keys = new long[64];  // 0: empty
  private Object[] values = new Object[64];
  private int size;

  private static int index(long raw, int mask) {
    long h = raw * 0x9E3779B97F4A7C15L;  // addresses are 16-aligned: mix the high bits down
    return (int) (h >>> 40) & mask;
  }

  /** The proxy of {@code raw}, or null. */
  Object get(long raw) {
    long[] k = keys;
    int mask = k.length - 1;
    for (int i = index(raw, mask);; i = (i + 1) & mask) {
      long x = k[i];
      if (x == raw) return values[i];
      if (x == 0) return null;
    }
  }

  /** Adds {@code raw -> proxy}. REQUIRES: {@code raw != 0} and not in the map. */
  void put(long raw, Object proxy) {
    if (2 * (size + 1) > keys.length) grow();
    insert(keys, values, raw, proxy);
    size++;
  }

  int size() {
    return size;
  }

  void forEachValue(Consumer<Object> f) {
    for (Object v : values) {
      if (v != null) f.accept(v);
    }
  }

  private static void insert(long[] k, Object[] v, long raw, Object proxy) {
    int mask = k.length - 1;
    int i = index(raw, mask);
    while (k[i] != 0) i = (i + 1) & mask;
    k[i] = raw;
    v[i] = proxy;
  }

  private void grow() {
    long[] k = new long[keys.length * 2];
    Object[] v = new Object[k.length];
    for (int i = 0; i < keys.length; i++) {
      if (keys[i] != 0) insert(k, v, keys[i], values[i]);
    }
    keys = k;
    values = v;
  }
}
