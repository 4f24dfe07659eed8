package org.colors;

/**
 * The natives of shared sorted maps (jni_sorted_map.cpp), registered by the library's JNI_OnLoad.
 * Keys and values are (tag, bits, obj) triples built by {@link Codec}; each call is one operation
 * under the map's lock.
 */
final class SortedNative {
  private SortedNative() {}

  static {
    // Loads the library, which registers these natives. Not attaching here: the library's
    // JNI_OnLoad may be what initializes this class.
    try {
      Class.forName("org.colors.Native", true, SortedNative.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException(e);
    }
  }

  static native Object newMap();

  static native int size(Handle h);

  static native void clear(Handle h);

  /** The value, or null when absent. */
  static Object get(Handle h, int tag, long bits, Object obj) {
    long[] b = new long[2];
    Object[] o = new Object[1];
    Direct.View v = handOverView(h);
    return flat(v, getFlat(h, tag, bits, obj, b, o, v != null), b, o);
  }

  /**
   * The value's tag (-1: absent), with its bits in bitsOut[0] (scalars) or the object in objOut[0];
   * with {@code handOver}, a shared object as {@link Codec#ROOTED} with its word and root slot in
   * bitsOut[0..1] ({@link #flat}).
   */
  static native int getFlat(Handle h, int tag, long bits, Object obj, long[] bitsOut, Object[] objOut,
      boolean handOver);

  /** The view for a native to hand roots over to (the fast path's), or null: then it must not. */
  static Direct.View handOverView(Handle h) {
    return Direct.UNSAFE != null && h.usableHere() ? Direct.viewFor(h) : null;
  }

  /**
   * A value a native returned flat (jni_common.hpp's put_flat): {@code tag}, its bits in
   * {@code b[0]} or object in {@code o[0]}; for {@link Codec#ROOTED} the proxy of the object at word
   * {@code b[0]}, found or made with the root slot {@code b[1]}, which this thread owns from the
   * native's return. REQUIRES: {@code v} non-null when the native was allowed to hand over.
   */
  static Object flat(Direct.View v, int tag, long[] b, Object[] o) {
    if (tag != Codec.ROOTED) return decode(tag, b[0], o[0]);
    Roots.adopted();  // Java-held from now on, as ListReads.itemsRooted's
    return Proxies.ofRooted(v, b[1], b[0], v.kindOf(b[0]));
  }

  static native boolean contains(Handle h, int tag, long bits, Object obj);

  /** The value the key had, or null. */
  static native Object put(Handle h, int kt, long kb, Object ko, int vt, long vb, Object vo);

  /** {value} when the key was there, null when it was not. */
  static native Object[] remove(Handle h, int tag, long bits, Object obj);

  /** Keys between the bounds (each followed by its value when withValues), at most limit. */
  static Object[] range(Handle h, int lt, long lb, Object lo, boolean loGiven, boolean loIncl, int ht, long hb,
      Object hi, boolean hiGiven, boolean hiIncl, boolean reverse, int limit, boolean withValues) {
    return decodeAll(rangeFlat(h, lt, lb, lo, loGiven, loIncl, ht, hb, hi, hiGiven, hiIncl, reverse, limit, withValues));
  }

  /** The values of a flat range, decoded. */
  static Object[] decodeAll(Object[] flat) {
    byte[] tags = (byte[]) flat[0];
    long[] bits = (long[]) flat[1];
    Object[] objs = (Object[]) flat[2];
    Object[] out = new Object[tags.length];
    for (int i = 0; i < tags.length; i++) out[i] = decode(tags[i], bits[i], objs[i]);
    return out;
  }

  /** A value from its (tag, bits) or, for strings, binaries and shared objects, the object itself. */
  static Object decode(int tag, long bits, Object obj) {
    switch (tag) {
      case Codec.NULL: return null;
      case Codec.INT: return bits;
      case Codec.FLOAT: return Double.longBitsToDouble(bits);
      case Codec.BOOL: return bits != 0;
      case -1: return null;  // absent
      default: return obj;
    }
  }

  /**
   * The range as {byte[] tags, long[] bits, Object[] objects (null for scalars)}. The shared
   * objects' proxies are made (or found) in Java from the roots the native hands over, without a
   * JNI upcall each, where the fast path's view is available.
   */
  static Object[] rangeFlat(Handle h, int lt, long lb, Object lo, boolean loGiven, boolean loIncl, int ht,
      long hb, Object hi, boolean hiGiven, boolean hiIncl, boolean reverse, int limit, boolean withValues) {
    Direct.View v = handOverView(h);
    Object[] flat = rangeTagged(h, lt, lb, lo, loGiven, loIncl, ht, hb, hi, hiGiven, hiIncl, reverse, limit,
        withValues, v != null);
    if (flat.length == 4) adoptRooted(v, flat);
    return flat;
  }

  /**
   * {@link #rangeFlat}'s native: with {@code handOver}, a fourth element {@code long[] slots}, and a
   * shared object Java proxies as {@link Codec#ROOTED} with its word in bits and its root slot in slots.
   */
  private static native Object[] rangeTagged(Handle h, int lt, long lb, Object lo, boolean loGiven, boolean loIncl,
      int ht, long hb, Object hi, boolean hiGiven, boolean hiIncl, boolean reverse, int limit, boolean withValues,
      boolean handOver);

  /**
   * Turns the {@link Codec#ROOTED} entries of a handed-over range into proxies ({@link Codec#REF} with
   * the proxy): each slot is this thread's from the native's return (adopted or dropped by
   * {@link Proxies#ofRooted}; the rest dropped if one fails), as ListReads.itemsRooted's.
   */
  private static void adoptRooted(Direct.View v, Object[] flat) {
    byte[] tags = (byte[]) flat[0];
    long[] bits = (long[]) flat[1];
    Object[] objs = (Object[]) flat[2];
    long[] slots = (long[]) flat[3];
    for (long s : slots) {
      if (s != 0) Roots.adopted();  // Java-held from now on
    }
    for (int i = 0; i < slots.length; i++) {
      if (slots[i] == 0) continue;
      long slot = slots[i];
      slots[i] = 0;  // owned below, whatever happens
      try {
        objs[i] = Proxies.ofRooted(v, slot, bits[i], v.kindOf(bits[i]));
        tags[i] = (byte) Codec.REF;
        bits[i] = 0;
      } catch (RuntimeException | Error e) {
        for (int j = i + 1; j < slots.length; j++) {
          if (slots[j] != 0) Roots.drop(v, slots[j]);
          slots[j] = 0;
        }
        throw e;
      }
    }
  }

  /** {key, value} of the entry at a position (negative: from the end), removed; null when empty. */
  static native Object[] popAt(Handle h, long index);

  /** The shared key order; TypeMismatchException unless both are keys of one category. */
  static native int compare(int t1, long b1, Object o1, int t2, long b2, Object o2);
}
