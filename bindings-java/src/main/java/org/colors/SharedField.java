package org.colors;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One field of shared user objects, read and written through the field fast path: a direct view
 * of the segment ({@link Direct}), no JNI call for unboxed scalars and boxed floats.
 *
 * <p>Instances are made by the code the agent adds to {@link Shared} classes (one per mapped Java
 * field, {@link #of(Class, String)}) and by {@link SharedObject}'s typed accessors (by name); they
 * are public only because rewritten classes in any package call them, and are not meant to be
 * used directly.
 *
 * <p>The fast path: load the object's class pointer (acquire), find the slot index and type
 * resolved for that class version (a small per-field cache filled once per version through JNI),
 * compute the slot address (inline slots from the block size, then the extension array, as
 * {@code field_slot}), load the tagged word (acquire) and decode it: small integers, booleans and
 * null directly, boxed floats under the collector's seqlock ({@code read_without_cycle}).
 * Writes of small integers, booleans and null into a field whose shared type accepts them are a
 * compare-and-set loop that flags an overwritten reference pending first ({@code store_ref}).
 * Everything else (boxed integers beyond 60 bits, floats, strings, objects, a field the object's
 * version lacks, a type that needs a check or a conversion) takes the JNI path of
 * {@link SharedObject}, with its checks and exceptions.
 */
public final class SharedField {
  // TypeKind codes (colors/types.hpp).
  private static final int ANY = 0, INTEGER = 1, FLOAT = 2, BOOLEAN = 3;
  private static final int MISSING = -1;
  private static final long SMALL_MIN = -(1L << 59), SMALL_MAX = (1L << 59) - 1;

  private static final class Entry {
    final long cls;
    final long epoch;
    final int slot;  // MISSING when the version lacks the field
    final int type;

    Entry(long cls, long epoch, int slot, int type) {
      this.cls = cls;
      this.epoch = epoch;
      this.slot = slot;
      this.type = type;
    }
  }

  private static final Entry[] NONE = new Entry[0];
  private static final int MAX_ENTRIES = 8;

  final String name;
  /** The Java type of the mapped field, or null for access by name. */
  final Class<?> type;
  /** Mapped field: a version lacking it reads as Java's default and gains it on first write. */
  final boolean mapped;
  final SharedType.Kind kind;
  private final String where;
  private volatile Entry[] entries = NONE;
  /** The entry found last (immutable, final fields: safe to share without volatile). */
  private Entry last;

  private SharedField(String name, Class<?> type, boolean mapped) {
    this.name = name;
    this.type = type;
    this.mapped = mapped;
    this.kind = type == null ? SharedType.Kind.ANY : ClassMapping.kindOf(type);
    this.where = "field '" + name + "'";
  }

  private static final ConcurrentHashMap<String, SharedField> BY_NAME = new ConcurrentHashMap<>();

  /** The field of shared objects named {@code name}, for access by name (SharedObject). */
  static SharedField named(String name) {
    SharedField f = BY_NAME.get(name);
    if (f != null) return f;
    if (BY_NAME.size() > 4096) BY_NAME.clear();
    return BY_NAME.computeIfAbsent(name, n -> new SharedField(n, null, false));
  }

  /**
   * The shared field mapped from instance field {@code name} declared by {@code owner} (called
   * from the static initializer the agent adds to mapped classes).
   *
   * @param owner the declaring class
   * @param name the field name
   * @return the field
   */
  public static SharedField of(Class<?> owner, String name) {
    try {
      Field f = owner.getDeclaredField(name);
      if (Modifier.isStatic(f.getModifiers())) throw new IllegalArgumentException(name + " is static");
      return new SharedField(name, f.getType(), true);
    } catch (NoSuchFieldException e) {
      throw new IllegalArgumentException("class " + owner.getName() + " has no field " + name, e);
    }
  }

  /**
   * Maps a Java class to the shared class {@code sharedName} (called from the static initializer
   * the agent adds to {@link Shared} classes): shared objects of that class read afterwards appear
   * as instances of {@code cls}.
   *
   * @param cls the Java class (rewritten by the agent)
   * @param sharedName the shared class name
   */
  public static void register(Class<?> cls, String sharedName) {
    Mapped.register(cls, sharedName);
  }

  // ---- resolution ----------------------------------------------------------------------------

  private Entry entry(Direct.View v, long obj) {
    long cls = v.classOf(obj);
    Entry e = last;
    if (e != null && e.cls == cls && e.epoch == v.epoch) return e;
    for (Entry x : entries) {
      if (x.cls == cls && x.epoch == v.epoch) {
        last = x;
        return x;
      }
    }
    return last = resolve(v, cls);
  }

  private synchronized Entry resolve(Direct.View v, long cls) {
    Entry[] es = entries;
    for (Entry e : es) {
      if (e.cls == cls && e.epoch == v.epoch) return e;
    }
    long[] r = Direct.resolve(cls, name);
    Entry e = new Entry(cls, v.epoch, r == null ? MISSING : (int) r[0], r == null ? MISSING : (int) r[1]);
    int n = Math.min(es.length, MAX_ENTRIES - 1);
    Entry[] next = new Entry[n + 1];
    next[0] = e;
    int j = 1;
    for (int i = 0; i < es.length && j <= n; i++) {
      if (es[i].epoch == v.epoch) next[j++] = es[i];
    }
    entries = j == next.length ? next : java.util.Arrays.copyOf(next, j);
    return e;
  }

  /**
   * The address of the field's slot in {@code h}'s object, 0 for "take the slow path", -1 when
   * the object's class version lacks the field.
   */
  private long slot(Direct.View v, Handle h) {
    long obj = h.raw;
    Entry e = entry(v, obj);
    if (e.slot == MISSING) return -1;
    int inline = h.inlineSlots;
    if (inline < 0) h.inlineSlots = inline = v.inlineSlots(obj);
    return v.slotAddress(obj, e.slot, inline);
  }

  // ---- slow path -----------------------------------------------------------------------------

  private static final Object ABSENT = new Object();

  private Object readSlow(SharedObject o) {
    if (mapped && !o.hasField(name)) return ABSENT;
    return o.get(name);
  }

  private Object zero() {
    return type == null ? null : ClassMapping.zeroOf(type);
  }

  private void writeSlow(SharedObject o, Object value) {
    // A field Java uses but the object's version lacks is added (a new version; the object stays).
    if (mapped && !o.hasField(name)) o.addField(name, kind);
    o.set(name, value);
  }

  // ---- reads ---------------------------------------------------------------------------------

  /**
   * The small integer in the field, or {@code Long.MIN_VALUE} for "not a small integer" (60-bit
   * values never are Long.MIN_VALUE). Absent fields of mapped classes read as 0.
   */
  private long smallOrMin(SharedObject o) {
    Handle h = o.handle;
    Direct.View v = Direct.viewFor(h);
    if (v == null) return Long.MIN_VALUE;
    long s = slot(v, h);
    if (s > 0) {
      long w = v.load(s);
      return (w & Direct.TAG_MASK) == Direct.TAG_INT ? w >> 4 : Long.MIN_VALUE;
    }
    return s < 0 && mapped ? 0 : Long.MIN_VALUE;
  }

  /**
   * Reads the field as a long.
   *
   * @param o the shared object
   * @return the value
   */
  public long getLong(SharedObject o) {
    long x = smallOrMin(o);
    if (x != Long.MIN_VALUE) return x;
    Object v = readSlow(o);
    return v == ABSENT ? 0 : Codec.toLong(v, where);
  }

  /**
   * Reads the field as an int (SharedOverflowException if it does not fit).
   *
   * @param o the shared object
   * @return the value
   */
  public int getInt(SharedObject o) {
    long x = smallOrMin(o);
    if (x == (int) x) return (int) x;
    Object v = readSlow(o);
    return v == ABSENT ? 0 : Codec.toInt(v, where);
  }

  /**
   * Reads the field as a short.
   *
   * @param o the shared object
   * @return the value
   */
  public short getShort(SharedObject o) {
    long x = smallOrMin(o);
    if (x == (short) x) return (short) x;
    Object v = readSlow(o);
    return v == ABSENT ? 0 : Codec.toShort(v, where);
  }

  /**
   * Reads the field as a byte.
   *
   * @param o the shared object
   * @return the value
   */
  public byte getByte(SharedObject o) {
    long x = smallOrMin(o);
    if (x == (byte) x) return (byte) x;
    Object v = readSlow(o);
    return v == ABSENT ? 0 : Codec.toByte(v, where);
  }

  /**
   * Reads the field as a char.
   *
   * @param o the shared object
   * @return the value
   */
  public char getChar(SharedObject o) {
    long x = smallOrMin(o);
    if (x == (char) x) return (char) x;
    Object v = readSlow(o);
    return v == ABSENT ? 0 : Codec.toChar(v, where);
  }

  /**
   * Reads the field as a boolean.
   *
   * @param o the shared object
   * @return the value
   */
  public boolean getBoolean(SharedObject o) {
    Handle h = o.handle;
    Direct.View v = Direct.viewFor(h);
    if (v != null) {
      long s = slot(v, h);
      if (s > 0) {
        long w = v.load(s);
        if ((w & Direct.TAG_MASK) == Direct.TAG_BOOL) return ((w >> 4) & 1) != 0;
      } else if (s < 0 && mapped) {
        return false;
      }
    }
    Object x = readSlow(o);
    return x != ABSENT && Codec.toBoolean(x, where);
  }

  /**
   * Reads the field as a double: a boxed float under the collector's seqlock, an integer when a
   * double represents it exactly.
   *
   * @param o the shared object
   * @return the value
   */
  public double getDouble(SharedObject o) {
    Handle h = o.handle;
    Direct.View v = Direct.viewFor(h);
    if (v != null) {
      long s = slot(v, h);
      if (s > 0) {
        long w = v.load(s);
        if ((w & Direct.TAG_MASK) == Direct.TAG_INT) {
          long x = w >> 4;
          double d = (double) x;
          if ((long) d == x) return d;
        } else if (w != 0 && (w & Direct.TAG_MASK) == 0) {
          long bits = v.readFloat(s);
          if (bits != Direct.NO_FLOAT) return Double.longBitsToDouble(bits);
        }
      } else if (s < 0 && mapped) {
        return 0.0;
      }
    }
    Object x = readSlow(o);
    return x == ABSENT ? 0.0 : Codec.toDouble(x, where);
  }

  /**
   * Reads the field as a float (SharedOverflowException out of range or on underflow to zero).
   *
   * @param o the shared object
   * @return the value
   */
  public float getFloat(SharedObject o) {
    double d = getDouble(o);
    float f = (float) d;
    if ((Float.isInfinite(f) && !Double.isInfinite(d)) || (f == 0.0f && d != 0.0)) {
      return Codec.toFloat(d, where);  // throws with the checked read's message
    }
    return f;
  }

  /**
   * Reads the field as a value of the mapped field's Java type (JNI path): strings, byte arrays,
   * containers, objects (instances of mapped classes), boxes.
   *
   * @param o the shared object
   * @return the value
   */
  public Object getObject(SharedObject o) {
    Object v = readSlow(o);
    if (v == ABSENT) return zero();
    if (type == null) return v;
    if (type.isArray() && type != byte[].class && v instanceof SharedList) {
      return new Materializer(type.getClassLoader()).javaValue(v, type, where);
    }
    return Codec.convert(v, type, where);
  }

  // ---- writes --------------------------------------------------------------------------------

  /**
   * Stores the tagged scalar word {@code word} (a small integer, a boolean or null) if the field
   * exists in the object's version and its type accepts {@code accepts} (a TypeKind; -2: any).
   */
  private boolean storeFast(SharedObject o, long word, int accepts) {
    Handle h = o.handle;
    Direct.View v = Direct.viewFor(h);
    if (v == null) return false;
    long obj = h.raw;
    Entry e = entry(v, obj);
    if (e.slot == MISSING || (accepts != -2 && e.type != accepts && e.type != ANY)) return false;
    int inline = h.inlineSlots;
    if (inline < 0) h.inlineSlots = inline = v.inlineSlots(obj);
    long s = v.slotAddress(obj, e.slot, inline);
    if (s == 0) return false;
    v.storeWord(s, word);
    return true;
  }

  /**
   * Writes a long (small integers without JNI).
   *
   * @param o the shared object
   * @param x the value
   */
  public void setLong(SharedObject o, long x) {
    if (x >= SMALL_MIN && x <= SMALL_MAX && storeFast(o, (x << 4) | Direct.TAG_INT, INTEGER)) return;
    writeSlow(o, x);
  }

  /**
   * Writes an int.
   *
   * @param o the shared object
   * @param x the value
   */
  public void setInt(SharedObject o, int x) {
    setLong(o, x);
  }

  /**
   * Writes a short.
   *
   * @param o the shared object
   * @param x the value
   */
  public void setShort(SharedObject o, short x) {
    setLong(o, x);
  }

  /**
   * Writes a byte.
   *
   * @param o the shared object
   * @param x the value
   */
  public void setByte(SharedObject o, byte x) {
    setLong(o, x);
  }

  /**
   * Writes a char.
   *
   * @param o the shared object
   * @param x the value
   */
  public void setChar(SharedObject o, char x) {
    setLong(o, x);
  }

  /**
   * Writes a boolean.
   *
   * @param o the shared object
   * @param b the value
   */
  public void setBoolean(SharedObject o, boolean b) {
    if (storeFast(o, ((b ? 1L : 0L) << 4) | Direct.TAG_BOOL, BOOLEAN)) return;
    writeSlow(o, b);
  }

  /**
   * Writes a double (a new boxed float: JNI).
   *
   * @param o the shared object
   * @param d the value
   */
  public void setDouble(SharedObject o, double d) {
    writeSlow(o, d);
  }

  /**
   * Writes a float (as a double).
   *
   * @param o the shared object
   * @param f the value
   */
  public void setFloat(SharedObject o, float f) {
    writeSlow(o, (double) f);
  }

  /**
   * Writes any value: null without JNI; strings, boxes and byte arrays are copied in, shared
   * objects (proxies, bound instances) stored by reference, other private objects refused.
   *
   * @param o the shared object
   * @param value the value
   */
  public void setObject(SharedObject o, Object value) {
    if (value == null && storeFast(o, 0L, -2)) return;
    writeSlow(o, value);
  }
}
