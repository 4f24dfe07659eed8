package org.colors;

import java.lang.ref.Reference;

/**
 * Reads of a shared list from Java without JNI: its size, one element, or all of its elements at
 * one instant, through the list's seqlock ({@code ListObject::version}, libshared's
 * list_seqlock.hpp), as libshared's own lock-free readers do ({@code try_state}/{@code try_load} in
 * containers.cpp). A writer makes the version odd under the list's lock word before it changes the
 * list and the next even value after; a reader that sees the same even version before and after
 * its reads read the list between two changes.
 *
 * <p>Rooting, as libshared's: a reference is rooted only after a version check has shown it was
 * in the list (so no word read from a replaced, possibly freed array is ever published as a root),
 * and the version is checked again after the root is published (a seq_cst store, {@link
 * Direct.View#storeSeqCst}): the object was then in the list at an instant when this process held
 * it as a root, so no collector cycle can miss it. A live proxy found for a word needs no root of
 * its own: the final check shows that the word was still in the list (whose object the caller
 * keeps alive) after the proxy was found, so the proxy is of the object at that address now
 * ({@link Proxies#readRef}'s re-read, for a list).
 *
 * <p>Every method returns "not read" (a negative size, null or {@link #NOT_DECODED},
 * {@link Proxies#MISS}) when a change was under way or an element is a value this path does not
 * decode (boxed numbers, strings, binaries); the caller then takes the JNI path, which takes the
 * list's lock. The seqlock reads are not used inside a transaction (libshared's reads then check
 * the list's ownership record): there {@link #itemsRooted} lets libshared read the list and makes
 * the proxies in Java. Nothing here runs without Unsafe.
 * Each method keeps the list's {@link Handle} reachable until it returns (its root then keeps the
 * list alive: the Handle's phantom reference would release it). REQUIRES for every method:
 * {@code v} is the current view, {@code h} a list's handle of its attachment with its root.
 */
final class ListReads {
  private ListReads() {}

  /** Attempts before giving up on a list that keeps changing (the JNI path then waits for its lock). */
  private static final int ATTEMPTS = 4;

  /** The list's size, or -1. */
  static int size(Direct.View v, Handle h) {
    try {
      return size(v, h.raw);
    } finally {
      Reference.reachabilityFence(h);
    }
  }

  private static int size(Direct.View v, long list) {
    for (int a = 0; a < ATTEMPTS; a++) {
      long ver = v.load(list + v.offListVersion);
      if ((ver & 1) != 0) return -1;
      long n = elementsRead(v, list);
      if (v.load(list + v.offListVersion) == ver) return n > Integer.MAX_VALUE ? -1 : (int) n;
    }
    return -1;
  }

  /** min(size, the array's capacity), as try_state (a size beyond the array is never read). */
  private static long elementsRead(Direct.View v, long list) {
    long arr = v.load(list + v.offListArray);
    long n = v.load(list + v.offListSize);
    long cap = arr == 0 ? 0 : v.loadRelaxed(arr + v.offArrayCapacity);
    return Long.compareUnsigned(n, cap) > 0 ? cap : n;
  }

  /** Element {@code i} (0 &lt;= i), or {@link Proxies#MISS} (also when i is out of range). */
  static Object get(Direct.View v, Handle h, int i) {
    try {
      return get(v, h.raw, i);
    } finally {
      Reference.reachabilityFence(h);
    }
  }

  private static Object get(Direct.View v, long list, int i) {
    for (int a = 0; a < ATTEMPTS; a++) {
      long ver = v.load(list + v.offListVersion);
      if ((ver & 1) != 0) return Proxies.MISS;
      long arr = v.load(list + v.offListArray);
      long n = v.load(list + v.offListSize);
      long cap = arr == 0 ? 0 : v.loadRelaxed(arr + v.offArrayCapacity);
      if (v.load(list + v.offListVersion) != ver) continue;
      if (i < 0 || i >= Math.min(Long.compareUnsigned(n, cap) > 0 ? cap : n, Integer.MAX_VALUE)) return Proxies.MISS;
      long w = v.load(arr + v.offArraySlots + 8L * i);
      if (v.load(list + v.offListVersion) != ver) continue;
      if ((w & Words.TAG_MASK) != 0 || w == 0) return scalar(w);
      ReadScope.State sc = ReadScope.here();
      if (sc != null) return Proxies.borrowed(v, sc, w);  // in the list inside the scope (validated above)
      Object live = Proxies.lookup(w);
      long slot = 0;
      if (live == null) {
        slot = Roots.take(v);
        v.storeSeqCst(slot, w);
      }
      if (v.loadSeqCst(list + v.offListVersion) != ver) {
        if (slot != 0) Roots.drop(v, slot);
        continue;
      }
      return live != null ? live : adopt(v, slot, w);
    }
    return Proxies.MISS;
  }

  /** What {@link #items} returns when an element is a value only the JNI path converts. */
  static final Object[] NOT_DECODED = new Object[0];

  /** All elements at one instant; null (the list kept changing) or {@link #NOT_DECODED}. */
  static Object[] items(Direct.View v, Handle h) {
    return items(v, h, null);
  }

  /**
   * As {@link #items(Direct.View, Handle)}; when {@code version} is given, its first element is
   * set to the list's seqlock version the elements were read at, or to -1 when they are a read
   * scope's borrowed proxies (which must not outlive the scope).
   */
  static Object[] items(Direct.View v, Handle h, long[] version) {
    try {
      return items(v, h.raw, version);
    } finally {
      Reference.reachabilityFence(h);
    }
  }

  /** The list's seqlock version now (an acquire load; odd while a change is under way). */
  static long version(Direct.View v, Handle h) {
    try {
      return v.load(h.raw + v.offListVersion);
    } finally {
      Reference.reachabilityFence(h);
    }
  }

  private static Object[] items(Direct.View v, long list, long[] version) {
    for (int a = 0; a < ATTEMPTS; a++) {
      long ver = v.load(list + v.offListVersion);
      if ((ver & 1) != 0) return null;
      long arr = v.load(list + v.offListArray);
      long n = v.load(list + v.offListSize);
      long cap = arr == 0 ? 0 : v.loadRelaxed(arr + v.offArrayCapacity);
      if (v.load(list + v.offListVersion) != ver) continue;
      if (Long.compareUnsigned(n, cap) > 0) n = cap;
      if (n > Integer.MAX_VALUE - 8) return null;
      int len = (int) n;
      long[] words = new long[len];
      long at = arr + v.offArraySlots;
      for (int i = 0; i < len; i++) words[i] = v.load(at + 8L * i);
      if (v.load(list + v.offListVersion) != ver) continue;
      ReadScope.State sc = ReadScope.here();
      if (sc != null) {
        if (version != null) version[0] = -1;
        return borrowedItems(v, sc, words);
      }
      if (version != null) version[0] = ver;
      Object[] out = new Object[len];
      long[] slots = null;  // the roots taken, by position (0: none)
      for (int i = 0; i < len; i++) {
        long w = words[i];
        if ((w & Words.TAG_MASK) != 0 || w == 0) {
          Object s = scalar(w);
          if (s == Proxies.MISS) return dropAll(v, slots, NOT_DECODED);
          out[i] = s;
          continue;
        }
        Object live = Proxies.lookup(w);
        if (live != null) {
          out[i] = live;
          continue;
        }
        if (slots == null) slots = new long[len];
        long slot = Roots.take(v);
        v.storeSeqCst(slot, w);
        slots[i] = slot;
      }
      if (v.loadSeqCst(list + v.offListVersion) != ver) {
        dropAll(v, slots, null);
        continue;
      }
      if (slots == null) return out;
      // Every word is a rooted object now: its kind can be read. A kind this path does not proxy
      // (a boxed number, a string, a binary) sends the whole read to JNI.
      int[] kinds = new int[len];
      for (int i = 0; i < len; i++) {
        if (slots[i] != 0 && !Proxies.proxied(kinds[i] = v.kindOf(words[i]))) return dropAll(v, slots, NOT_DECODED);
      }
      for (int i = 0; i < len; i++) {
        if (slots[i] == 0) continue;
        long slot = slots[i];
        slots[i] = 0;  // adopt owns it from here, whatever happens
        try {
          out[i] = Proxies.adopt(v, slot, words[i], kinds[i], null);
        } catch (RuntimeException | Error e) {
          dropAll(v, slots, null);
          throw e;
        }
      }
      return out;
    }
    return null;
  }

  /**
   * Inside the calling thread's read scope {@code sc}: the proxies of {@code words}, read from the
   * list at one instant inside the scope (so each reference is borrowed: alive until the scope
   * ends), without a root each; or {@link #NOT_DECODED}.
   */
  private static Object[] borrowedItems(Direct.View v, ReadScope.State sc, long[] words) {
    Object[] out = new Object[words.length];
    for (int i = 0; i < words.length; i++) {
      long w = words[i];
      Object x;
      if ((w & Words.TAG_MASK) != 0 || w == 0) {
        x = scalar(w);
      } else {
        x = Proxies.borrowed(v, sc, w);
      }
      if (x == Proxies.MISS) return NOT_DECODED;
      out[i] = x;
    }
    return out;
  }

  /**
   * All elements at one instant read by libshared ({@link Direct#listWords}: the list's lock-free
   * read or its lock, and inside a transaction its ownership record, as the JNI path), with the
   * proxies made in Java from the root slots it hands over instead of one JNI upcall per element;
   * or {@link #NOT_DECODED}. A rooted word's object is alive at that address, so a live proxy of
   * the address is of that object (the handed root is then dropped). For use where {@link #items}
   * does not apply (inside a transaction, or a list that kept changing). REQUIRES: as the class.
   */
  static Object[] itemsRooted(Direct.View v, Handle h) {
    long[] ws = Direct.listWords(h);  // h is an argument: reachable for the call
    int len = ws.length / 2;
    long[] slots = new long[len];
    for (int i = 0; i < len; i++) {
      slots[i] = ws[2 * i + 1];
      if (slots[i] != 0) Roots.adopted();  // Java-held from now on, as Direct.newObject's
    }
    Object[] out = new Object[len];
    int[] kinds = new int[len];
    for (int i = 0; i < len; i++) {
      long w = ws[2 * i];
      if (slots[i] == 0) {
        Object x = scalar(w);
        if (x == Proxies.MISS) return dropAll(v, slots, NOT_DECODED);
        out[i] = x;
      } else if (!Proxies.proxied(kinds[i] = v.kindOf(w))) {
        return dropAll(v, slots, NOT_DECODED);
      }
    }
    for (int i = 0; i < len; i++) {
      if (slots[i] == 0) continue;
      long slot = slots[i];
      slots[i] = 0;  // owned below, whatever happens
      try {
        out[i] = Proxies.ofRooted(v, slot, ws[2 * i], kinds[i]);
      } catch (RuntimeException | Error e) {
        dropAll(v, slots, null);
        throw e;
      }
    }
    return out;
  }

  /** The proxy of rooted {@code w} owning {@code slot}, or MISS (the slot dropped) for a kind not proxied. */
  static Object adopt(Direct.View v, long slot, long w) {
    int kind = v.kindOf(w);  // rooted: safe to read
    if (!Proxies.proxied(kind)) {
      Roots.drop(v, slot);
      return Proxies.MISS;
    }
    return Proxies.adopt(v, slot, w, kind, null);
  }


  /** A non-reference word as its Java value (SharedList's types), or MISS for an internal marker. */
  static Object scalar(long w) {
    if (w == 0) return null;
    if (Words.isSmallInt(w)) return Words.smallValue(w);
    if (Words.isBool(w)) return Words.boolValue(w);
    if (Words.isSmallFloat(w)) return Double.longBitsToDouble(Words.smallFloatBits(w));
    return Proxies.MISS;
  }

  /** Drops every root slot taken in {@code slots} (0: none) and returns {@code result}. */
  static Object[] dropAll(Direct.View v, long[] slots, Object[] result) {
    if (slots != null) {
      for (int i = 0; i < slots.length; i++) {
        if (slots[i] != 0) Roots.drop(v, slots[i]);
        slots[i] = 0;
      }
    }
    return result;
  }
}
