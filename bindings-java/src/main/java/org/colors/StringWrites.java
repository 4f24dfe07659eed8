package org.colors;

import java.lang.ref.Reference;
import java.lang.ref.WeakReference;
import java.util.ArrayList;

/**
 * The shared strings made for the strings this thread wrote last into fields of bound instances
 * ({@code e.s = str}): a string written again (a constant, a name, one of a few type codes) is
 * stored as the shared string already made for an equal one, one barriered store instead of an
 * allocation and a JNI call, and the heap holds one string for all those fields. A string is kept
 * from its second write on (the first only notes its hash), so that writing strings that never
 * come back costs a hash and a comparison more than without the cache, not a root per write. Shared strings
 * are immutable and no language sees their identity, so which of two equal ones a field holds is
 * not observable. Python's binding keeps the same cache (bindings-python's {@code g_str_writes},
 * by str object).
 *
 * <p>Invariants:
 * <ul>
 *   <li>Each thread has its own cache, and only that thread reads or writes it while it lives: no
 *       entry is dropped under a thread that is storing its word.
 *   <li>An entry with a non-null key holds, in {@code roots[i]} (a Java-held root slot of the
 *       attachment of generation {@link #gen}, filled by the native that made the string with a
 *       seq_cst store before the string was stored anywhere), the shared string {@code words[i]}
 *       of the key's characters. So the word stays alive while the entry exists, and storing it
 *       needs only the write barrier ({@code Direct.View.storeWord}).
 *   <li>Entries of an older attachment are forgotten, never written (their roots went with it, as
 *       {@link Roots} requires). {@link SharedMemory#collect()} empties the calling thread's cache
 *       and makes every other live thread empty its own at its next string write
 *       ({@link #dropEpoch}); the caches of threads that ended are emptied there too, by the
 *       collecting thread, and by every thread that makes its first cache (their last writes
 *       happen-before {@code isAlive()} returned false), so they do not pile up.
 *   <li>Not used inside a transaction (its writes are logged by the native) and only for strings of
 *       at most {@link #MAX_CHARS} chars: a cache holds at most {@link #SIZE} small strings.
 * </ul>
 */
final class StringWrites {
  static final int SIZE = 64;
  static final int MAX_CHARS = 256;

  /** Bumped by collect(): a cache of an older epoch is emptied before its next use. */
  private static volatile long dropEpoch = 1;

  private static final ArrayList<StringWrites> REGISTRY = new ArrayList<>();  // GUARDED_BY(REGISTRY)
  private static final ThreadLocal<StringWrites> MINE = new ThreadLocal<>();

  /** Per slot, the hash of the string written last and not kept (bit 32 set: a hash is there). */
  private final long[] seen = new long[SIZE];
  private final String[] keys = new String[SIZE];
  private final long[] words = new long[SIZE];
  private final long[] roots = new long[SIZE];
  /** The attachment of the entries' roots: written by the owner thread, read by {@link #held(long)}. */
  private volatile long gen;
  private long epoch = dropEpoch;
  /** Entries in use: written by the owner thread, read by {@link #held(long)} (tests). */
  private volatile int held;
  private final WeakReference<Thread> owner = new WeakReference<>(Thread.currentThread());
  /** This thread's UTF-8 buffer, reached through this cache (one thread-local lookup per write); made at first use. */
  private Direct.Utf8Buffer buffer;

  Direct.Utf8Buffer buffer() {
    Direct.Utf8Buffer b = buffer;
    return b != null ? b : (buffer = new Direct.Utf8Buffer());
  }

  private StringWrites() {
    synchronized (REGISTRY) {
      REGISTRY.add(this);
    }
  }

  /**
   * The calling thread's cache. A thread's first one also lets go of the caches of threads that
   * ended, so that threads coming and going without a collect() do not pile up kept strings.
   */
  static StringWrites mine(Direct.View v) {
    StringWrites c = MINE.get();
    if (c == null) {
      c = new StringWrites();
      MINE.set(c);
      releaseEnded(v);
    }
    return c;
  }

  /**
   * Owner thread: stores {@code str} into the field slot at {@code s} of the bound object at {@code obj}
   * (rooted by {@code keep}): the kept shared string of an equal string, else a new one, made by
   * one JNI call and kept if an equal string was written before. False when the cache does not
   * take it (the caller's path stores it).
   * REQUIRES: outside a transaction; {@code v} the current view; the field takes strings;
   * {@code str} of at most {@link #MAX_CHARS} chars.
   */
  boolean store(Direct.View v, Object keep, long obj, long s, String str) {
    if (gen != v.gen || epoch != dropEpoch) empty(v);
    int h = str.hashCode();
    int i = h & (SIZE - 1);
    String k = keys[i];
    if (k != null && (k == str || k.equals(str))) {
      v.storeWord(s, words[i]);  // rooted by the entry
      Reference.reachabilityFence(keep);  // its proxy roots the object owning s
      return true;
    }
    // Kept from the second write of a hash in this slot on (another string of the same hash only
    // makes its own string kept early).
    long mark = 1L << 32 | (h & 0xffffffffL);
    if (seen[i] != mark) {
      seen[i] = mark;
      return false;  // the first write: the caller's path makes the string
    }
    seen[i] = 0;
    Direct.Utf8Buffer u = buffer();
    int n = BulkWriter.utf8(str, u.bytes, 0);
    if (n < 0) return false;  // a lone surrogate: the slow path refuses it
    u.copyToMemory(n);
    long root = Roots.take(v);
    try {
      Direct.storeUtf8Rooted(keep, obj, s, u.address, n, root);
    } catch (RuntimeException | Error e) {
      Roots.drop(v, root);  // still empty: the native fills it only once the string exists
      throw e;
    }
    if (k != null) drop(v, i);
    keys[i] = str;
    words[i] = v.load(root);
    roots[i] = root;
    held = held + 1;
    return true;
  }

  /** Empties the calling thread's cache and the caches of threads that ended; the others at their next write. */
  static void dropAll(Direct.View v) {
    dropEpoch++;  // collect() callers; a lost increment between two of them still moves the epoch
    StringWrites mine = MINE.get();
    if (mine != null) mine.empty(v);
    releaseEnded(v);
  }

  /** Lets go of the caches of threads that ended (their last writes happen-before isAlive() is false). */
  private static void releaseEnded(Direct.View v) {
    synchronized (REGISTRY) {
      for (int j = REGISTRY.size() - 1; j >= 0; j--) {
        StringWrites c = REGISTRY.get(j);
        Thread t = c.owner.get();
        if (t != null && t.isAlive()) continue;
        c.release(v);
        REGISTRY.set(j, REGISTRY.get(REGISTRY.size() - 1));
        REGISTRY.remove(REGISTRY.size() - 1);
      }
    }
  }

  /** The entries of attachment {@code gen} held by every thread's cache (tests: their roots are not a proxy's). */
  static long held(long gen) {
    long n = 0;
    synchronized (REGISTRY) {
      for (StringWrites c : REGISTRY) if (c.gen == gen) n += c.held;
    }
    return n;
  }

  /** Owner thread: drops every entry (forgets those of an older attachment) and starts over on v's. */
  private void empty(Direct.View v) {
    for (int i = 0; i < SIZE; i++) {
      if (keys[i] != null) drop(v, i);
      seen[i] = 0;
    }
    gen = v.gen;
    epoch = dropEpoch;
  }

  /** Owner thread: drops entry i; its root is released only if it belongs to v's attachment. */
  private void drop(Direct.View v, int i) {
    if (gen == v.gen) Roots.drop(v, roots[i]);
    keys[i] = null;
    words[i] = 0;
    roots[i] = 0;
    held = held - 1;
  }

  /** A thread that ended: its entries' roots go back through the release path. REQUIRES: REGISTRY held. */
  private void release(Direct.View v) {
    for (int i = 0; i < SIZE; i++) {
      if (keys[i] == null) continue;
      if (gen == v.gen) Roots.release(v, roots[i], false);
      keys[i] = null;
    }
    held = 0;
  }
}
