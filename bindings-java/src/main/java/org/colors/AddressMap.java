package org.colors;

import java.util.Arrays;
import java.util.function.Consumer;

/**
 * A map from object addresses (non-zero raw words) to proxies, for one thread: open addressing
 * with linear probing, no boxing of the keys, no removal. A read scope's borrowed proxies
 * ({@link ReadScope}) live here; a scope reading a large graph puts one entry per object it
 * reaches, and the thread's next scope reuses the arrays ({@link #clear}).
 *
 * <p>Invariants: the table's length is a power of two, at least twice the size; {@link #used}
 * holds the slots of the first {@link #LOG} insertions since the last clear, so a small map is
 * emptied slot by slot, a large one by filling the arrays.
 */
final class AddressMap {
  private static final int MIN = 64;
  private static final int LOG = 64;

  private long[] keys = new long[MIN];  // 0: empty
  private Object[] values = new Object[MIN];
  private int shift = 64 - Integer.numberOfTrailingZeros(MIN);
  private int size;
  private final int[] used = new int[LOG];

  /** Fibonacci hashing: the top bits of the product (addresses are 16-aligned, their low bits 0). */
  private static int index(long raw, int shift) {
    return (int) ((raw * 0x9E3779B97F4A7C15L) >>> shift);
  }

  /** The proxy of {@code raw}, or null. */
  Object get(long raw) {
    long[] k = keys;
    int mask = k.length - 1;
    for (int i = index(raw, shift);; i = (i + 1) & mask) {
      long x = k[i];
      if (x == raw) return values[i];
      if (x == 0) return null;
    }
  }

  /** Adds {@code raw -> proxy}. REQUIRES: {@code raw != 0} and not in the map. */
  void put(long raw, Object proxy) {
    if (2 * (size + 1) > keys.length) grow();
    int i = insert(keys, values, shift, raw, proxy);
    if (size < LOG) used[size] = i;
    size++;
  }

  int size() {
    return size;
  }

  /** Empties the map, keeping its arrays unless they are larger than {@code maxSlots}. */
  void clear(int maxSlots) {
    if (keys.length > maxSlots) {
      keys = new long[MIN];
      values = new Object[MIN];
      shift = 64 - Integer.numberOfTrailingZeros(MIN);
    } else if (size <= LOG) {
      for (int j = 0; j < size; j++) {
        keys[used[j]] = 0;
        values[used[j]] = null;
      }
    } else {
      Arrays.fill(keys, 0L);
      Arrays.fill(values, null);
    }
    size = 0;
  }

  void forEachValue(Consumer<Object> f) {
    if (size <= LOG) {
      for (int j = 0; j < size; j++) f.accept(values[used[j]]);
      return;
    }
    for (Object v : values) {
      if (v != null) f.accept(v);
    }
  }

  private static int insert(long[] k, Object[] v, int shift, long raw, Object proxy) {
    int mask = k.length - 1;
    int i = index(raw, shift);
    while (k[i] != 0) i = (i + 1) & mask;
    k[i] = raw;
    v[i] = proxy;
    return i;
  }

  private void grow() {
    long[] k = new long[keys.length * 2];
    Object[] v = new Object[k.length];
    int s = shift - 1;
    for (int i = 0; i < keys.length; i++) {
      if (keys[i] != 0) insert(k, v, s, keys[i], values[i]);
    }
    // The positions logged for a small map moved: log them again (the map holds at most LOG
    // entries whenever the log is in use, and then it is rebuilt here in full).
    if (size <= LOG) {
      int j = 0;
      for (int i = 0; i < k.length && j < size; i++) {
        if (k[i] != 0) used[j++] = i;
      }
    }
    keys = k;
    values = v;
    shift = s;
  }
}
