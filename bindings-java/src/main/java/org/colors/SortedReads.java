package org.colors;

import java.lang.ref.Reference;

/**
 * Reads of a shared sorted map from Java without JNI and without the map's lock word, on a map
 * whose keys are integers: {@code get} and {@code containsKey} of an integer key, and ascending
 * batches of entries between integer bounds (the iterators' batches).
 *
 * <p>Why a lock-free descent is right (gc/README.md, "Sorted maps read without their lock", has
 * the whole argument). libshared's B+tree (sorted_map.hpp) changes a published node only in a leaf's value
 * slot or an internal node's child slot; every other change builds fresh nodes and publishes them
 * with one barriered store, which unlinks the nodes they replace. Writers reach nodes only from
 * the map's root, so an unlinked node never changes again (a rollback may link it back, unchanged).
 * Hence, by induction down the descent, every node read was in the tree at some instant since the
 * descent began, with the contents it had then; and a node's separators fix the keys it covers
 * for as long as it is in the tree. The leaf reached therefore held, at such an instant, the
 * value of the key (or proved it absent), which makes the read linearizable there. A batch walks
 * several leaves, each read at its own instant: it is weakly consistent, as
 * {@code ConcurrentSkipListMap}'s iterators (see {@link #range}).
 *
 * <p>Memory: the whole read, up to the root published for a reference, runs inside one window of
 * the collector's seqlock, its idle kind (libshared's {@code no_sweep_window_begin}; unlike a
 * string's or a float's read, not the marking kind: the root published below must be seen by the
 * next cycle's root pass, which the seq_cst check of {@code gc_started_seq} gives): no cycle
 * running when it starts ({@code gc_done_seq == gc_started_seq}) and none started when it ends. Memory is freed
 * only by a cycle's sweep, so nothing read in the window (each object was reachable at an instant
 * in it) was freed or reused meanwhile. A reference is rooted (seq_cst store into a Java-held
 * slot) before the final seq_cst check of {@code gc_started_seq}: a cycle that starts later sees
 * the root; one that started earlier fails the check and the read is retried. A live proxy found
 * for the value's address is that object's, since the address was not reused in the window.
 * Inside a read scope the value is borrowed: the scope keeps what it read alive.
 *
 * <p>Every check a locked reader makes is made here too (a node is a slot array inside the
 * segment, of a capacity and level that fit, levels fall by one per step, at most
 * {@link #MAX_DEPTH} of them); anything else (a check failing, a key that is not a small integer,
 * a value only the JNI path converts, a cycle during every attempt) answers {@link Proxies#MISS}
 * and the caller takes the JNI path, which takes the lock and reports corruption. Not used inside
 * a transaction (libshared's reads then check the map's ownership record). REQUIRES for every
 * method: UNSAFE; {@code v} the current view; {@code h} a sorted map's handle of its attachment,
 * usable by this thread.
 */
final class SortedReads {
  private SortedReads() {}

  /** Attempts before the JNI path takes over (each fails only when a collector cycle started). */
  private static final int ATTEMPTS = 4;
  /** sorted_map.cpp's kMaxDepth: a deeper path is a corrupt tree. */
  private static final int MAX_DEPTH = 24;
  /** sorted_map.hpp's kLeafMax and kFanMax. */
  private static final long LEAF_MAX = 32, FAN_MAX = 64;
  /** word.hpp's small-integer range (kSmallMin..kSmallMax). */

  /** What {@link #find} returns for the absent key; otherwise a value slot's address (8-aligned). */
  private static final long ABSENT = 0;
  /** What {@link #find} returns when this path does not read the map (see the class). */
  private static final long BAD = 1;

  /** The view for a lock-free read of map {@code h}, or null: then take the JNI path. */
  static Direct.View view(Handle h) {
    if (Direct.UNSAFE == null || Transaction.inThisThread() || !h.usableHere()) return null;
    return Direct.viewFor(h);
  }

  /** Whether the integer {@code key} can take this path (a small integer word). */
  static boolean fits(long key) {
    return Words.fitsSmall(key);
  }

  /**
   * The value of integer key {@code key} (null when absent), or {@link Proxies#MISS}.
   * REQUIRES: as the class; {@code fits(key)}.
   */
  static Object get(Direct.View v, Handle h, long key) {
    try {
      return get(v, h.raw, Words.smallWord(key));
    } finally {
      Reference.reachabilityFence(h);
    }
  }

  /** Whether the map holds integer key {@code key}: 1, 0, or -1 (take the JNI path). REQUIRES: as {@link #get}. */
  static int contains(Direct.View v, Handle h, long key) {
    try {
      for (int a = 0; a < ATTEMPTS; a++) {
        int started = v.loadInt(v.gcStartedAt);
        if (v.loadInt(v.gcDoneAt) != started) return -1;  // a cycle is running
        long at = find(v, h.raw, Words.smallWord(key));
        if (at == BAD) return -1;
        if (v.loadInt(v.gcStartedAt) == started) return at == ABSENT ? 0 : 1;
      }
      return -1;
    } finally {
      Reference.reachabilityFence(h);
    }
  }

  private static Object get(Direct.View v, long map, long key) {
    for (int a = 0; a < ATTEMPTS; a++) {
      int started = v.loadInt(v.gcStartedAt);
      if (v.loadInt(v.gcDoneAt) != started) return Proxies.MISS;  // a cycle is running: the lock's path
      long at = find(v, map, key);
      if (at == BAD) return Proxies.MISS;
      long w = at == ABSENT ? 0 : v.load(at);
      if (at == ABSENT || !Words.isRef(w)) {
        if (v.loadInt(v.gcStartedAt) != started) continue;
        return at == ABSENT ? null : ListReads.scalar(w);
      }
      // A reference: inside the segment, or the JNI path (which reads it under the lock) decides.
      if (Long.compareUnsigned(w - v.base - 1, v.size - 33) > 0) return Proxies.MISS;
      ReadScope.State sc = ReadScope.here();
      if (sc != null) {
        if (v.loadInt(v.gcStartedAt) != started) continue;
        return Proxies.borrowed(v, sc, w);  // read inside the scope, which keeps it alive
      }
      Object live = Proxies.lookup(w);
      long slot = 0;
      if (live == null) {
        slot = Roots.take(v);
        v.storeSeqCst(slot, w);
      }
      if (v.loadInt(v.gcStartedAt) != started) {  // a volatile load: ordered after the root's store
        if (slot != 0) Roots.drop(v, slot);
        continue;
      }
      return live != null ? live : ListReads.adopt(v, slot, w);
    }
    return Proxies.MISS;
  }

  /**
   * Up to {@code limit} entries of the map with keys between the bounds (integer keys; a bound not
   * given is open), ascending, as {@link SortedNative#rangeFlat} returns them: {byte[] tags,
   * long[] bits, Object[] objects}, each key followed by its value when {@code values}; or null:
   * take the JNI path. Weakly consistent: every entry returned was in the map with that value at
   * an instant of the read, the keys ascend without repeats, and a key that is in the map and the
   * bounds throughout the read is returned unless the limit ends the batch before it. Values that
   * are strings, boxed numbers or binaries (which the JNI path converts) send the batch there.
   * REQUIRES: as the class; {@code fits} of each bound given; {@code limit >= 1}.
   */
  static Object[] range(Direct.View v, Handle h, boolean loGiven, long lo, boolean loIncl, boolean hiGiven, long hi,
      boolean hiIncl, int limit, boolean values) {
    try {
      long loW = Words.smallWord(lo), hiW = Words.smallWord(hi);
      for (int a = 0; a < ATTEMPTS; a++) {
        int started = v.loadInt(v.gcStartedAt);
        if (v.loadInt(v.gcDoneAt) != started) return null;  // a cycle is running
        Walk w = new Walk(Math.min(limit, 16), values);
        if (!walk(v, h.raw, loGiven, loW, loIncl, hiGiven, hiW, hiIncl, limit, w)) return null;
        Object[] flat = decode(v, w, started);
        if (flat != RETRY) return flat;
      }
      return null;
    } finally {
      Reference.reachabilityFence(h);
    }
  }

  /** The words a walk collected: keys, each followed by its value when values. */
  private static final class Walk {
    final boolean values;
    long[] words;
    int n;  // words used

    Walk(int entries, boolean values) {
      this.values = values;
      words = new long[entries * (values ? 2 : 1)];
    }

    void add(long w) {
      if (n == words.length) words = java.util.Arrays.copyOf(words, 2 * n);
      words[n++] = w;
    }
  }

  private static final Object[] RETRY = new Object[0];

  /**
   * Collects the entries into {@code out}, from the leaf covering the lower bound (or the first
   * leaf) leaf by leaf; false when this path does not read the map (a check failed). The path to
   * the current leaf is kept as each level's slots address, child index and child count.
   */
  private static boolean walk(Direct.View v, long map, boolean loGiven, long loW, boolean loIncl, boolean hiGiven,
      long hiW, boolean hiIncl, int limit, Walk out) {
    long node = v.load(map + v.offSortedRoot);
    if (node == 0) return true;
    long[] slots = new long[MAX_DEPTH];
    int[] child = new int[MAX_DEPTH], count = new int[MAX_DEPTH];
    int depth = 0;
    long expect = -1;
    boolean byKey = loGiven;  // descend toward the lower bound, else along first children
    long last = 0;
    boolean any = false;
    for (int steps = 0; steps < 1 << 20; steps++) {
      // Down to a leaf.
      for (;;) {
        long s = checked(v, node, expect);
        if (s == 0) return false;
        long level = Words.smallValue(v.load(s));
        if (level == 0) {
          node = s;  // the leaf's slots
          break;
        }
        if (depth == MAX_DEPTH) return false;
        int n = (int) (v.loadRelaxed(node + v.offArrayCapacity) / 2);
        int c = byKey ? childIndex(v, s, n, loW) : 0;
        if (c < 0) return false;
        slots[depth] = s;
        child[depth] = c;
        count[depth] = n;
        depth++;
        node = v.load(s + 8L * (1 + 2 * c));
        expect = level - 1;
      }
      byKey = false;
      long s = node;
      int entries = (int) ((v.loadRelaxed(s - v.offArraySlots + v.offArrayCapacity) - 1) / 2);
      for (int i = 0; i < entries; i++) {
        long k = v.load(s + 8L * (1 + 2 * i));
        if (!Words.isSmallInt(k)) return false;
        if (any && k <= last) return false;  // keys ascend (a corrupt tree otherwise)
        if (loGiven && (k < loW || (k == loW && !loIncl))) continue;
        if (hiGiven && (k > hiW || (k == hiW && !hiIncl))) return true;
        any = true;
        last = k;
        out.add(k);
        if (out.values) out.add(v.load(s + 8L * (2 + 2 * i)));
        if (out.n == limit * (out.values ? 2 : 1)) return true;
      }
      // The next leaf: up to the nearest level with a next child, then down its first children.
      while (depth > 0 && child[depth - 1] + 1 == count[depth - 1]) depth--;
      if (depth == 0) return true;
      int c = ++child[depth - 1];
      long ps = slots[depth - 1];
      node = v.load(ps + 8L * (1 + 2 * c));
      expect = Words.smallValue(v.load(ps)) - 1;
    }
    return false;
  }

  /**
   * The slots address of node {@code node} after the checks every node gets (a slot array inside
   * the segment, a capacity its level allows, a small-integer level, the expected one when
   * {@code expect >= 0}), or 0.
   */
  private static long checked(Direct.View v, long node, long expect) {
    if ((node & 15) != 0 || Long.compareUnsigned(node - v.base - 1, v.size - 64) > 0) return 0;
    if (v.loadRelaxed(node + v.offCls) != v.arrayClass) return 0;
    long cap = v.loadRelaxed(node + v.offArrayCapacity);
    long s = node + v.offArraySlots;
    if (cap < 3 || cap > 2 * FAN_MAX + 1 || !v.contains(s, (int) (8 * cap))) return 0;
    long tag = v.load(s);
    if (!Words.isSmallInt(tag)) return 0;
    long level = Words.smallValue(tag);
    if (level < 0 || level > 64 || (expect >= 0 && level != expect)) return 0;
    // A leaf holds 1 + 2n slots (n <= LEAF_MAX entries), an internal node 2n (n >= 2 children).
    if (level == 0 ? (cap & 1) != 1 || cap > 1 + 2 * LEAF_MAX : (cap & 1) != 0 || cap < 4) return 0;
    return s;
  }

  /**
   * The collected words as a flat batch (references rooted, then the window checked, then their
   * proxies found or made), {@link #RETRY} when a cycle started, or null (take the JNI path).
   */
  private static Object[] decode(Direct.View v, Walk w, int started) {
    int len = w.n;
    byte[] tags = new byte[len];
    long[] bits = new long[len];
    Object[] objs = new Object[len];
    long[] slots = null;  // roots taken, by position
    int[] kinds = null;
    ReadScope.State sc = ReadScope.here();
    for (int i = 0; i < len; i++) {
      long x = w.words[i];
      if (x == 0) {
        tags[i] = (byte) Codec.NULL;
      } else if (Words.isSmallInt(x)) {
        tags[i] = (byte) Codec.INT;
        bits[i] = Words.smallValue(x);
      } else if (Words.isBool(x)) {
        tags[i] = (byte) Codec.BOOL;
        bits[i] = Words.boolValue(x) ? 1 : 0;
      } else if (Words.isSmallFloat(x)) {
        tags[i] = (byte) Codec.FLOAT;
        bits[i] = Words.smallFloatBits(x);
      } else if ((x & Words.TAG_MASK) != 0 || Long.compareUnsigned(x - v.base - 1, v.size - 33) > 0) {
        return ListReads.dropAll(v, slots, null);  // an internal marker, or not inside the segment
      } else {
        // A reference, not freed while the window holds: its class can be read, and only kinds
        // that have proxies are rooted (a string, boxed number or binary goes to JNI).
        long cls = v.loadRelaxed(x + v.offCls);
        if (Long.compareUnsigned(cls - v.base, v.size - 64) > 0) return ListReads.dropAll(v, slots, null);
        int kind = v.loadByte(cls + v.offClassKind);
        if (!Proxies.proxied(kind)) return ListReads.dropAll(v, slots, null);
        tags[i] = (byte) Codec.REF;
        if (kinds == null) kinds = new int[len];
        kinds[i] = kind;
        if (sc != null) continue;  // borrowed below, once the window is checked
        Object live = Proxies.lookup(x);
        if (live != null) {
          objs[i] = live;
          continue;
        }
        if (slots == null) slots = new long[len];
        long slot = Roots.take(v);
        v.storeSeqCst(slot, x);
        slots[i] = slot;
      }
    }
    if (v.loadInt(v.gcStartedAt) != started) {  // a volatile load: after the roots' stores
      ListReads.dropAll(v, slots, null);
      return RETRY;
    }
    for (int i = 0; i < len; i++) {
      if (tags[i] != Codec.REF || objs[i] != null) continue;
      Object p;
      if (sc != null) {
        p = Proxies.borrowed(v, sc, w.words[i]);  // read inside the scope, which keeps it alive
        if (p == Proxies.MISS) return null;
      } else {
        long slot = slots[i];
        slots[i] = 0;  // adopt owns it from here, whatever happens
        try {
          p = Proxies.adopt(v, slot, w.words[i], kinds[i], null);
        } catch (RuntimeException | Error e) {
          ListReads.dropAll(v, slots, null);
          throw e;
        }
      }
      objs[i] = p;
    }
    return new Object[] {tags, bits, objs};
  }

  /**
   * The address of the value slot of {@code key} in the tree of {@code map} (read without the
   * lock), {@link #ABSENT}, or {@link #BAD}. Every word comes from memory that may have been
   * reused if a cycle ran meanwhile: the caller checks the window before trusting the answer, and
   * every address is checked against the segment before it is read.
   */
  private static long find(Direct.View v, long map, long key) {
    long node = v.load(map + v.offSortedRoot);
    if (node == 0) return ABSENT;
    long expect = -1;  // the level the next node must have (-1: any, the root)
    for (int depth = 0; depth < MAX_DEPTH; depth++) {
      long s = checked(v, node, expect);
      if (s == 0) return BAD;
      long cap = v.loadRelaxed(node + v.offArrayCapacity);
      long level = Words.smallValue(v.load(s));
      if (level == 0) {
        int lo = 0, hi = (int) ((cap - 1) / 2);
        while (lo < hi) {  // the first key >= key
          int mid = (lo + hi) >>> 1;
          long k = v.load(s + 8L * (1 + 2 * mid));
          if (!Words.isSmallInt(k)) return BAD;
          if (k == key) return s + 8L * (2 + 2 * mid);
          if (k < key) lo = mid + 1;  // small integers compare as their words do
          else hi = mid;
        }
        return ABSENT;
      }
      int c = childIndex(v, s, (int) (cap / 2), key);
      if (c < 0) return BAD;
      node = v.load(s + 8L * (1 + 2 * c));
      expect = level - 1;
    }
    return BAD;
  }

  /**
   * The child of the internal node whose slots are at {@code s} ({@code n} children) that holds
   * the key word {@code key}: the number of separators &lt;= key; -1 when a separator read is not
   * a small integer.
   */
  private static int childIndex(Direct.View v, long s, int n, long key) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      long sep = v.load(s + 8L * (2 + 2 * mid));
      if (!Words.isSmallInt(sep)) return -1;
      if (sep <= key) lo = mid + 1;  // small integers compare as their words do
      else hi = mid;
    }
    return lo;
  }
}
