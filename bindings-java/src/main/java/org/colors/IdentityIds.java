package org.colors;


/**
 * Object numbers by identity for the bulk copy's memo ({@link BulkWriter}). The first
 * {@link #SMALL} entries of a call are found by a scan: a small graph (an rpc call's arguments,
 * most replies) takes no identity hash, whose first computation for an object is a call into the
 * VM (a fresh varargs array per call). Past them, an open-addressing table over
 * {@link System#identityHashCode}, one probe sequence for lookup and insertion, ints without
 * boxing. Not thread-safe; reused between calls ({@link #clear}).
 */
final class IdentityIds {
  static final int SMALL = 8;
  private final Object[] smallKeys = new Object[SMALL];
  private final int[] smallIds = new int[SMALL];
  // Whether this call's entries live in the table (it met more than SMALL objects).
  private boolean hashed;
  private Object[] keys = new Object[64];
  private int[] ids = new int[64];
  private int count;
  // The indices of keys' entries in insertion order: clear() empties just those, so a call that
  // copies one small graph after one that copied a big one costs what it copies, not the table.
  private int[] used = new int[32];

  /** The number of {@code o}, or -1 after recording {@code id} as its number. */
  int findOrAdd(Object o, int id) {
    if (!hashed) {
      for (int i = 0; i < count; i++) if (smallKeys[i] == o) return smallIds[i];
      if (count < SMALL) {
        smallKeys[count] = o;
        smallIds[count++] = id;
        return -1;
      }
      // The table takes over: the scanned entries move into it.
      hashed = true;
      count = 0;
      for (int i = 0; i < SMALL; i++) {
        hashedFindOrAdd(smallKeys[i], smallIds[i]);
        smallKeys[i] = null;
      }
    }
    return hashedFindOrAdd(o, id);
  }

  private int hashedFindOrAdd(Object o, int id) {
    if (2 * (count + 1) > keys.length) grow();
    int mask = keys.length - 1;
    for (int i = mix(System.identityHashCode(o)) & mask;; i = (i + 1) & mask) {
      Object k = keys[i];
      if (k == o) return ids[i];
      if (k == null) {
        keys[i] = o;
        ids[i] = id;
        used[count++] = i;
        return -1;
      }
    }
  }

  private static int mix(int h) {
    return h * 0x9E3779B9 >>> 7 ^ h;
  }

  private void grow() {
    Object[] ok = keys;
    int[] oi = ids;
    keys = new Object[ok.length * 2];
    ids = new int[ok.length * 2];
    used = new int[ok.length];  // count + 1 <= keys.length / 2 after growing
    int mask = keys.length - 1;
    int n = 0;
    for (int j = 0; j < ok.length; j++) {
      if (ok[j] == null) continue;
      int i = mix(System.identityHashCode(ok[j])) & mask;
      while (keys[i] != null) i = (i + 1) & mask;
      keys[i] = ok[j];
      ids[i] = oi[j];
      used[n++] = i;
    }
  }

  /** Forgets every entry (keeps the table unless it grew very large). */
  void clear() {
    if (!hashed) {
      for (int c = 0; c < count; c++) smallKeys[c] = null;
    } else if (keys.length > (1 << 20)) {
      keys = new Object[64];
      ids = new int[64];
      used = new int[32];
    } else {
      for (int c = 0; c < count; c++) keys[used[c]] = null;
    }
    count = 0;
    hashed = false;
  }
}
