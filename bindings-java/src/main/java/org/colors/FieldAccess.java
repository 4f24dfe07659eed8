package org.colors;

import java.lang.reflect.Field;

/**
 * Reads and writes the mapped fields of private instances of one user class for the bulk copies
 * ({@link BulkWriter}, {@link BulkReader}): through {@code sun.misc.Unsafe} at the fields' offsets
 * (computed once per class), not through reflection per access. Fields Unsafe cannot address
 * (records' and hidden classes' fields, or no Unsafe) use their reflective {@link Field}. For a
 * class the agent maps, a private instance's state is in these Java fields (the agent's accessors
 * read them when the instance is not bound), so both reads and writes see what plain code sees.
 *
 * <p>Field order and names are {@link ClassMapping}'s; {@link #prim} tells the Java type of each.
 */
final class FieldAccess {
  /** Java types of a field ({@link #prim}). */
  static final int REF = 0, LONG = 1, INT = 2, SHORT = 3, BYTE = 4, CHAR = 5, DOUBLE = 6, FLOAT = 7, BOOLEAN = 8;

  @SuppressWarnings("removal")
  private static final sun.misc.Unsafe U = Direct.UNSAFE;

  /** Value conversions a field's Java type asks for ({@link #conv}); primitives and their boxes alike. */
  static final byte C_OTHER = 0, C_LONG = 1, C_INT = 2, C_SHORT = 3, C_BYTE = 4, C_CHAR = 5, C_DOUBLE = 6,
      C_FLOAT = 7, C_BOOLEAN = 8, C_STRING = 9;

  final ClassMapping mapping;
  final int[] prim;
  /** The conversion of each field's type (C_*). */
  final byte[] conv;
  /** Unsafe offsets, -1 where the reflective Field is used. */
  final long[] offset;
  final Field[] fields;
  final Class<?>[] types;

  private static final ClassValue<FieldAccess> CACHE = new ClassValue<>() {
    @Override
    protected FieldAccess computeValue(Class<?> type) {
      return new FieldAccess(ClassMapping.of(type));
    }
  };

  /** The accessors of a user class (TypeMismatchException for classes ClassMapping refuses). */
  static FieldAccess of(Class<?> type) {
    return CACHE.get(type);
  }

  @SuppressWarnings("removal")
  private FieldAccess(ClassMapping m) {
    mapping = m;
    int n = m.fields.size();
    prim = new int[n];
    offset = new long[n];
    fields = new Field[n];
    types = new Class<?>[n];
    conv = new byte[n];
    for (int i = 0; i < n; i++) {
      Field f = m.fields.get(i).field;
      fields[i] = f;
      types[i] = f.getType();
      prim[i] = primOf(f.getType());
      conv[i] = convOf(f.getType());
      long off = -1;
      if (U != null && !m.type.isRecord() && !m.type.isHidden()) {
        try {
          off = U.objectFieldOffset(f);
        } catch (RuntimeException e) {
          off = -1;
        }
      }
      offset[i] = off;
    }
  }

  /** The C_* conversion of values read into type t. */
  static byte convOf(Class<?> t) {
    if (t == long.class || t == Long.class) return C_LONG;
    if (t == int.class || t == Integer.class) return C_INT;
    if (t == short.class || t == Short.class) return C_SHORT;
    if (t == byte.class || t == Byte.class) return C_BYTE;
    if (t == char.class || t == Character.class) return C_CHAR;
    if (t == double.class || t == Double.class) return C_DOUBLE;
    if (t == float.class || t == Float.class) return C_FLOAT;
    if (t == boolean.class || t == Boolean.class) return C_BOOLEAN;
    if (t == String.class) return C_STRING;
    return C_OTHER;
  }

  private static int primOf(Class<?> t) {
    if (!t.isPrimitive()) return REF;
    if (t == long.class) return LONG;
    if (t == int.class) return INT;
    if (t == short.class) return SHORT;
    if (t == byte.class) return BYTE;
    if (t == char.class) return CHAR;
    if (t == double.class) return DOUBLE;
    if (t == float.class) return FLOAT;
    return BOOLEAN;
  }

  private Object reflect(Object o, int i) {
    try {
      return fields[i].get(o);
    } catch (IllegalAccessException e) {
      throw new SharedMemoryException("cannot read the fields of " + mapping.name + ": " + e, e);
    }
  }

  private void reflectSet(Object o, int i, Object v) {
    try {
      fields[i].set(o, v);
    } catch (IllegalAccessException e) {
      throw new SharedMemoryException("cannot write field " + fields[i].getName() + " of " + mapping.name + ": " + e, e);
    }
  }

  // ---- reads (REQUIRES: prim[i] says the type) ----

  /** An integer-typed primitive field (long, int, short, byte, char) as a long. */
  @SuppressWarnings("removal")
  long getIntegral(Object o, int i) {
    long off = offset[i];
    if (off < 0) {
      Object v = reflect(o, i);
      return v instanceof Character ? (long) (Character) v : ((Number) v).longValue();
    }
    switch (prim[i]) {
      case LONG: return U.getLong(o, off);
      case INT: return U.getInt(o, off);
      case SHORT: return U.getShort(o, off);
      case BYTE: return U.getByte(o, off);
      default: return U.getChar(o, off);
    }
  }

  /** A double or float field as a double. */
  @SuppressWarnings("removal")
  double getReal(Object o, int i) {
    long off = offset[i];
    if (off < 0) return ((Number) reflect(o, i)).doubleValue();
    return prim[i] == DOUBLE ? U.getDouble(o, off) : U.getFloat(o, off);
  }

  @SuppressWarnings("removal")
  boolean getBoolean(Object o, int i) {
    long off = offset[i];
    return off < 0 ? (Boolean) reflect(o, i) : U.getBoolean(o, off);
  }

  @SuppressWarnings("removal")
  Object getRef(Object o, int i) {
    long off = offset[i];
    return off < 0 ? reflect(o, i) : U.getObject(o, off);
  }

  // ---- writes (values already converted and checked) ----

  @SuppressWarnings("removal")
  void setIntegral(Object o, int i, long v) {
    long off = offset[i];
    switch (prim[i]) {
      case LONG:
        if (off < 0) reflectSet(o, i, v); else U.putLong(o, off, v);
        return;
      case INT:
        if (off < 0) reflectSet(o, i, (int) v); else U.putInt(o, off, (int) v);
        return;
      case SHORT:
        if (off < 0) reflectSet(o, i, (short) v); else U.putShort(o, off, (short) v);
        return;
      case BYTE:
        if (off < 0) reflectSet(o, i, (byte) v); else U.putByte(o, off, (byte) v);
        return;
      default:
        if (off < 0) reflectSet(o, i, (char) v); else U.putChar(o, off, (char) v);
    }
  }

  @SuppressWarnings("removal")
  void setReal(Object o, int i, double v) {
    long off = offset[i];
    if (prim[i] == DOUBLE) {
      if (off < 0) reflectSet(o, i, v); else U.putDouble(o, off, v);
    } else {
      if (off < 0) reflectSet(o, i, (float) v); else U.putFloat(o, off, (float) v);
    }
  }

  @SuppressWarnings("removal")
  void setBoolean(Object o, int i, boolean v) {
    long off = offset[i];
    if (off < 0) reflectSet(o, i, v); else U.putBoolean(o, off, v);
  }

  /** REQUIRES: v is an instance of the field's type (or null). */
  @SuppressWarnings("removal")
  void setRef(Object o, int i, Object v) {
    long off = offset[i];
    if (off < 0) reflectSet(o, i, v); else U.putObject(o, off, v);
  }
}
