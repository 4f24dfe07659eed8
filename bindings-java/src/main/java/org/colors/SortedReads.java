package org.colors;

import java.lang.ref.Reference;

/**
 * Point reads of a shared sorted map from Java without JNI and without the map's lock word:
 * {@code get} and {@code containsKey} of an integer key, on a map whose keys are integers.
 *
 * <p>Why a lock-free descent is right (gc/README.md, "Lock-free sorted-map reads", has the whole
 * argument). libshared's B+tree (sorted_map.hpp) changes a published node only in a leaf's value
 * slot or an internal node's child slot; every other change builds fresh nodes and publishes them
 * with one barriered store, which unlinks the nodes they replace. Writers reach nodes only from
 * the map's root, so an unlinked node never changes again (a rollback may link it back, unchanged).
 * Hence, by induction down the descent, every node read was in the tree at some instant since the
 * descent began, with the contents it had then; and a node's separators fix the keys it covers
 * for as long as it is in the tree. The leaf reached therefore held, at such an instant, the
 * value of the key (or proved it absent), which makes the read linearizable there.
 *
 * <p>Memory: the whole read, up to the root published for a reference, runs inside one window of
 * the collector's seqlock (libshared's {@code read_without_cycle}): no cycle running when it
 * starts ({@code gc_done_seq == gc_started_seq}) and none started when it ends. Memory is freed
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
  private static final long SMALL_MIN = -(1L << 59), SMALL_MAX = (1L << 59) - 1;

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
    return key >= SMALL_MIN && key <= SMALL_MAX;
  }

  /**
   * The value of integer key {@code key} (null when absent), or {@link Proxies#MISS}.
   * REQUIRES: as the class; {@code fits(key)}.
   */
  static Object get(Direct.View v, Handle h, long key) {
    try {
      return get(v, h.raw, (key << 4) | Direct.TAG_INT);
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
        long at = find(v, h.raw, (key << 4) | Direct.TAG_INT);
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
      if (at == ABSENT || w == 0 || (w & Direct.TAG_MASK) != 0) {
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
      if ((node & 15) != 0 || Long.compareUnsigned(node - v.base - 1, v.size - 64) > 0) return BAD;
      if (v.loadRelaxed(node + v.offCls) != v.arrayClass) return BAD;
      long cap = v.loadRelaxed(node + v.offArrayCapacity);
      long s = node + v.offArraySlots;
      if (cap < 3 || cap > 2 * FAN_MAX + 1 || !v.contains(s, (int) (8 * cap))) return BAD;
      long tag = v.load(s);
      if ((tag & Direct.TAG_MASK) != Direct.TAG_INT) return BAD;
      long level = tag >> 4;
      if (level < 0 || level > 64 || (expect >= 0 && level != expect)) return BAD;
      if (level == 0) {
        if ((cap & 1) != 1 || cap > 1 + 2 * LEAF_MAX) return BAD;
        int lo = 0, hi = (int) ((cap - 1) / 2);
        while (lo < hi) {  // the first key >= key
          int mid = (lo + hi) >>> 1;
          long k = v.load(s + 8L * (1 + 2 * mid));
          if ((k & Direct.TAG_MASK) != Direct.TAG_INT) return BAD;
          if (k == key) return s + 8L * (2 + 2 * mid);
          if (k < key) lo = mid + 1;  // small integers compare as their words do
          else hi = mid;
        }
        return ABSENT;
      }
      if ((cap & 1) != 0 || cap < 4) return BAD;
      int lo = 0, hi = (int) (cap / 2) - 1;
      while (lo < hi) {  // the child holding key: the number of separators <= key
        int mid = (lo + hi) >>> 1;
        long sep = v.load(s + 8L * (2 + 2 * mid));
        if ((sep & Direct.TAG_MASK) != Direct.TAG_INT) return BAD;
        if (sep <= key) lo = mid + 1;
        else hi = mid;
      }
      node = v.load(s + 8L * (1 + 2 * lo));
      expect = level - 1;
    }
    return BAD;
  }
}
