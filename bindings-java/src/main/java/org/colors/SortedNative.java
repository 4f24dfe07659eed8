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
  static native Object get(Handle h, int tag, long bits, Object obj);

  static native boolean contains(Handle h, int tag, long bits, Object obj);

  /** The value the key had, or null. */
  static native Object put(Handle h, int kt, long kb, Object ko, int vt, long vb, Object vo);

  /** {value} when the key was there, null when it was not. */
  static native Object[] remove(Handle h, int tag, long bits, Object obj);

  /** Keys between the bounds (each followed by its value when withValues), at most limit. */
  static native Object[] range(Handle h, int lt, long lb, Object lo, boolean loGiven, boolean loIncl, int ht, long hb,
      Object hi, boolean hiGiven, boolean hiIncl, boolean reverse, int limit, boolean withValues);

  /** {key, value} of the entry at a position (negative: from the end), removed; null when empty. */
  static native Object[] popAt(Handle h, long index);

  /** The shared key order; TypeMismatchException unless both are keys of one category. */
  static native int compare(int t1, long b1, Object o1, int t2, long b2, Object o2);
}
