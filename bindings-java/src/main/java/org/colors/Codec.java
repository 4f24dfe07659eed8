package org.colors;

import java.util.Arrays;
import java.util.Collection;
import java.util.Map;
import java.util.Objects;

/**
 * Java values to the (tag, bits, obj) triples the natives take, the checked narrowing
 * conversions of typed reads, and the language-neutral equality of scalars.
 *
 * <p>Storable values (Table 1 of the paper): {@code null}; {@code Byte}, {@code Short},
 * {@code Integer}, {@code Long}, {@code Character} (integer); {@code Float}, {@code Double}
 * (float); {@code Boolean}; {@code String}; {@code byte[]} (binary); proxies of shared objects.
 * Private scalars, strings and byte arrays are copied in; anything else is refused with a
 * {@link TypeMismatchException} that names {@link SharedMemory#copyToSharedMemory(Object)}.
 */
final class Codec {
  private Codec() {}

  // The one tag set of every flat encoding between Java and the JNI library: a value's (tag, bits,
  // obj) triple, the bulk copies' graphs (BulkWriter, BulkReader; jni_bulk.cpp: copies, served
  // calls' replies and rpc clients' arguments) and the sorted map's hand-over (SortedNative). javac -h
  // writes these @Native constants into org_colors_Codec.h, and jni_common.hpp's Tag
  // static_asserts each against them, so Java and C++ cannot disagree.
  @java.lang.annotation.Native
  static final int NULL = 0, INT = 1, FLOAT = 2, BOOL = 3, STRING = 4, BINARY = 5, REF = 6;
  /** A shared object handed over with its root: its word, then its root slot (SortedNative). */
  @java.lang.annotation.Native static final int ROOTED = 7;
  /** In a bulk graph: a reference to the object of that number (bits). */
  @java.lang.annotation.Native static final int OBJ = 8;
  /** In a flattened shared graph: the proxy at that index (bits) of the graph's proxies. */
  @java.lang.annotation.Native static final int PROXY = 9;
  /** In a flattened shared graph: a user object's header (bits: its class record). */
  @java.lang.annotation.Native static final int USER = 10;
  /** In a flattened shared graph: a list's header (bits: its length). */
  @java.lang.annotation.Native static final int LIST = 11;
  /** Not storable (lookups only: such a key is never in a shared map or set). */
  static final int NONE = -1;

  /** The tag of a storable value; {@link #NONE} for anything else. */
  static int tagOrNone(Object o) {
    if (o == null) return NULL;
    if (o instanceof String) return STRING;
    if (o instanceof Long || o instanceof Integer || o instanceof Short || o instanceof Byte) return INT;
    if (o instanceof Double || o instanceof Float) return FLOAT;
    if (o instanceof Boolean) return BOOL;
    if (o instanceof Character) return INT;
    if (o instanceof byte[]) return BINARY;
    if (Proxies.handleOf(o) != null) return REF;
    return NONE;
  }

  /**
   * The tag of a value looked up (contains, get, indexOf, remove), or {@link #NONE} for one no
   * shared container can hold: an unstorable type, or a string with a lone surrogate (it has no
   * UTF-8 form), which the lookup then reports absent, as a {@code java.util} collection reports an
   * element it does not hold.
   */
  static int probeTag(Object o) {
    return hasNoUtf8(o) ? NONE : tagOrNone(o);
  }

  /** Whether {@code o} is a string with a lone surrogate, which has no UTF-8 form to store or look up. */
  static boolean hasNoUtf8(Object o) {
    if (!(o instanceof String)) return false;
    String s = (String) o;
    for (int i = 0, n = s.length(); i < n; i++) {
      char c = s.charAt(i);
      if (!Character.isSurrogate(c)) continue;
      if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
        i++;  // a pair
        continue;
      }
      return true;
    }
    return false;
  }

  /** The tag of a value to store; throws {@link TypeMismatchException} for unstorable ones. */
  static int tag(Object o) {
    int t = tagOrNone(o);
    if (t == NONE) throw unstorable(o);
    return t;
  }

  static long bits(Object o, int tag) {
    switch (tag) {
      case INT: return o instanceof Character ? (long) (Character) o : ((Number) o).longValue();
      case FLOAT: return Double.doubleToRawLongBits(((Number) o).doubleValue());
      case BOOL: return ((Boolean) o) ? 1L : 0L;
      default: return 0L;
    }
  }

  static Object obj(Object o, int tag) {
    switch (tag) {
      case STRING:
      case BINARY: return o;
      case REF: return Proxies.handleOf(o);
      default: return null;
    }
  }

  /** True for private values that cannot be stored but that copyToSharedMemory can copy. */
  static boolean copyable(Object o) {
    return o instanceof Collection || o instanceof Map || (o != null && o.getClass().isArray());
  }

  static TypeMismatchException unstorable(Object o) {
    if (copyable(o)) {
      return new TypeMismatchException("cannot store a private " + o.getClass().getName()
          + " in shared memory: call SharedMemory.copyToSharedMemory(obj) first and store the shared copy it returns");
    }
    return new TypeMismatchException("cannot store an object of class " + o.getClass().getName()
        + " in shared memory: only null, Boolean, Byte, Short, Integer, Long, Character, Float, Double, String,"
        + " byte[] and shared objects can be stored (SharedMemory.copyToSharedMemory copies lists, sets, maps"
        + " and arrays into shared memory)");
  }

  // ---- language-neutral equality of scalars (as libshared: 1 == 1L == 1.0, true != 1) ----

  static boolean isScalar(Object o) {
    return o == null || o instanceof Number || o instanceof Character || o instanceof Boolean || o instanceof String
        || o instanceof byte[];
  }

  /**
   * Equality of a probe against an element read from shared memory: scalars compare as shared
   * values (integers and floats numerically, an integral float equal to the same integer;
   * booleans, strings and byte arrays by value); everything else with {@link Object#equals}.
   */
  static boolean elementEquals(Object probe, Object elem) {
    if (probe == elem) return true;
    if (probe == null || elem == null) return false;
    int tp = tagOrNone(probe);
    int te = tagOrNone(elem);
    if ((tp == INT || tp == FLOAT) && (te == INT || te == FLOAT)) {
      if (tp == INT && te == INT) return bits(probe, INT) == bits(elem, INT);
      if (tp == FLOAT && te == FLOAT) return ((Number) probe).doubleValue() == ((Number) elem).doubleValue();
      long i = bits(tp == INT ? probe : elem, INT);
      double d = ((Number) (tp == FLOAT ? probe : elem)).doubleValue();
      return d == (double) i && d >= -0x1p63 && d < 0x1p63 && (long) d == i;
    }
    if (tp == BINARY && te == BINARY) return Arrays.equals((byte[]) probe, (byte[]) elem);
    return Objects.equals(probe, elem);
  }

  // ---- checked narrowing conversions of typed reads ----

  private static String describe(Object v) {
    if (v == null) return "null";
    if (v instanceof Long) return "integer";
    if (v instanceof Double) return "float";
    if (v instanceof Boolean) return "boolean";
    if (v instanceof String) return "string";
    if (v instanceof byte[]) return "binary";
    if (v instanceof SharedList) return "list";
    if (v instanceof SharedMap) return "map";
    if (v instanceof SharedSet) return "set";
    if (v instanceof SharedSortedMap) return "sorted map";
    if (v instanceof SharedObject) return "object";
    return v.getClass().getName();
  }

  static TypeMismatchException mismatch(Object v, String want, String where) {
    return new TypeMismatchException(where + " is a shared " + describe(v) + ", not " + want);
  }

  static long toLong(Object v, String where) {
    if (v instanceof Long) return (Long) v;
    throw mismatch(v, "an integer (long)", where);
  }

  static int toInt(Object v, String where) {
    long x = toLong(v, where);
    if (x < Integer.MIN_VALUE || x > Integer.MAX_VALUE) throw overflow(x, "an int", where);
    return (int) x;
  }

  static short toShort(Object v, String where) {
    long x = toLong(v, where);
    if (x < Short.MIN_VALUE || x > Short.MAX_VALUE) throw overflow(x, "a short", where);
    return (short) x;
  }

  static byte toByte(Object v, String where) {
    long x = toLong(v, where);
    if (x < Byte.MIN_VALUE || x > Byte.MAX_VALUE) throw overflow(x, "a byte", where);
    return (byte) x;
  }

  static char toChar(Object v, String where) {
    long x = toLong(v, where);
    if (x < Character.MIN_VALUE || x > Character.MAX_VALUE) throw overflow(x, "a char", where);
    return (char) x;
  }

  static double toDouble(Object v, String where) {
    if (v instanceof Double) return (Double) v;
    if (v instanceof Long) {
      long x = (Long) v;
      double d = (double) x;
      if (d >= 0x1p63 || (long) d != x) {
        throw new SharedOverflowException(where + " is the shared integer " + x
            + ", which a double cannot represent exactly; read it as a long");
      }
      return d;
    }
    throw mismatch(v, "a number (double)", where);
  }

  static float toFloat(Object v, String where) {
    double d = toDouble(v, where);
    float f = (float) d;
    if (Float.isInfinite(f) && !Double.isInfinite(d)) {
      throw new SharedOverflowException(where + " is " + d + ", out of the range of a float; read it as a double");
    }
    if (f == 0.0f && d != 0.0) {
      throw new SharedOverflowException(where + " is " + d + ", which underflows a float to zero; read it as a double");
    }
    return f;
  }

  static boolean toBoolean(Object v, String where) {
    if (v instanceof Boolean) return (Boolean) v;
    throw mismatch(v, "a boolean", where);
  }

  static String toStringValue(Object v, String where) {
    if (v == null || v instanceof String) return (String) v;
    throw mismatch(v, "a string", where);
  }

  static byte[] toBytes(Object v, String where) {
    if (v == null || v instanceof byte[]) return (byte[]) v;
    throw mismatch(v, "a binary (byte[])", where);
  }

  private static SharedOverflowException overflow(long x, String what, String where) {
    return new SharedOverflowException(where + " is the shared integer " + x + ", which does not fit " + what
        + "; read it as a long");
  }

  /**
   * Converts a value read from shared memory to {@code type} with the checks of the typed reads:
   * boxed and primitive numbers narrow with overflow checks, other types must match (a checked
   * read barrier, as for arrays over shared lists).
   */
  static Object convert(Object v, Class<?> type, String where) {
    if (type == Object.class) return v;
    if (type == Long.class || type == long.class) return v == null && !type.isPrimitive() ? null : toLong(v, where);
    if (type == Integer.class || type == int.class) return v == null && !type.isPrimitive() ? null : toInt(v, where);
    if (type == Short.class || type == short.class) return v == null && !type.isPrimitive() ? null : toShort(v, where);
    if (type == Byte.class || type == byte.class) return v == null && !type.isPrimitive() ? null : toByte(v, where);
    if (type == Character.class || type == char.class) {
      return v == null && !type.isPrimitive() ? null : toChar(v, where);
    }
    if (type == Double.class || type == double.class) {
      return v == null && !type.isPrimitive() ? null : toDouble(v, where);
    }
    if (type == Float.class || type == float.class) return v == null && !type.isPrimitive() ? null : toFloat(v, where);
    if (type == Boolean.class || type == boolean.class) {
      return v == null && !type.isPrimitive() ? null : toBoolean(v, where);
    }
    if (v == null) return null;
    if (type.isInstance(v)) return v;
    throw mismatch(v, type.getName(), where);
  }
}
