package org.colors;

/**
 * The tagged 8-byte words of libshared's {@code word.hpp}, in Java: what the JNI-free fast paths
 * (bound fields, list and sorted-map reads, the store barrier) decode and encode themselves.
 *
 * <p>This is the only Java copy of that encoding; every fast path goes through these functions.
 * {@code WordsConformanceTest} pins each of them bit for bit to the C++ definitions they mirror
 * (over arbitrary and edge-case inputs, against the C++ functions compiled into a test library),
 * so a change on one side that the other does not follow fails the Java tests.
 *
 * <pre>
 *   0                       null
 *   low nibble 0000, != 0   reference: the address of the object's block header
 *   low nibble 0001         small integer: value &lt;&lt; 4 | 1 (60-bit signed)
 *   low nibble 0010         boolean: b &lt;&lt; 4 | 2
 *   low nibble 0011         internal markers of hash tables (never visible to users)
 *   low 3 bits 100          immediate float (word.hpp has the encoding and why)
 * </pre>
 */
final class Words {
  private Words() {}

  static final long TAG_MASK = 15, TAG_INT = 1, TAG_BOOL = 2;
  /** Immediate floats: the low three bits. */
  static final long FLOAT_TAG_MASK = 7, TAG_FLOAT = 4;
  /** kSmallMin, kSmallMax: the integers a word holds unboxed. */
  static final long SMALL_MIN = -(1L << 59), SMALL_MAX = (1L << 59) - 1;
  /** kFloatExponentOffset, shifted to the exponent of a rotated double. */
  private static final long FLOAT_OFFSET = 896L << 53;
  /** log2 of kGranule (block.hpp): the pending set has one bit per granule. */
  static final int GRANULE_SHIFT = 4;

  /** is_ref. */
  static boolean isRef(long w) {
    return w != 0 && (w & TAG_MASK) == 0;
  }

  /** is_small_int. */
  static boolean isSmallInt(long w) {
    return (w & TAG_MASK) == TAG_INT;
  }

  /** fits_small. */
  static boolean fitsSmall(long v) {
    return v >= SMALL_MIN && v <= SMALL_MAX;
  }

  /** make_small. REQUIRES: fitsSmall(v). */
  static long smallWord(long v) {
    return (v << 4) | TAG_INT;
  }

  /**
   * small_value: also the value of any word as a signed number above its tag nibble, which is how
   * the sorted map's node levels are read.
   */
  static long smallValue(long w) {
    return w >> 4;
  }

  /** is_bool. */
  static boolean isBool(long w) {
    return (w & TAG_MASK) == TAG_BOOL;
  }

  /** make_bool. */
  static long boolWord(boolean b) {
    return ((b ? 1L : 0L) << 4) | TAG_BOOL;
  }

  /** bool_value. */
  static boolean boolValue(long w) {
    return ((w >> 4) & 1) != 0;
  }

  /** is_small_float. */
  static boolean isSmallFloat(long w) {
    return (w & FLOAT_TAG_MASK) == TAG_FLOAT;
  }

  /** fits_small_float: the double with these bits can be stored in the slot. */
  static boolean fitsSmallFloat(long bits) {
    long e = (bits >>> 52) & 0x7ff;
    return Long.compareUnsigned(e - 897, 255) < 0 || (bits << 1) == 0;
  }

  /** make_small_float. REQUIRES: fitsSmallFloat(bits). */
  static long smallFloatWord(long bits) {
    long r = Long.rotateLeft(bits, 1);
    long p = (bits << 1) == 0 ? r : r - FLOAT_OFFSET;
    return (p << 3) | TAG_FLOAT;
  }

  /** small_float_value as raw bits. REQUIRES: isSmallFloat(w). */
  static long smallFloatBits(long w) {
    long p = w >>> 3;
    return p <= 1 ? p << 63 : Long.rotateRight(p + FLOAT_OFFSET, 1);
  }

  /** pending_index (pending_bits.hpp): the bit of the object at {@code ref} in the pending set. */
  static long pendingIndex(long objectsBegin, long ref) {
    return (ref - objectsBegin) >>> GRANULE_SHIFT;
  }
}
