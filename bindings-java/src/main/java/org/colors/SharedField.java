package org.colors;

import java.lang.ref.Reference;
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
 * null directly, boxed floats under the collector's seqlock ({@code read_without_sweep}).
 * Writes of small integers, booleans and null into a field whose shared type accepts them are a
 * compare-and-set loop that flags an overwritten reference pending first ({@code store_ref}).
 * Everything else (boxed integers beyond 60 bits, floats, strings, objects, a field the object's
 * version lacks, a type that needs a check or a conversion) takes the JNI path of
 * {@link SharedObject}, with its checks and exceptions.
 *
 * <p>Inside a transaction ({@link Transaction}) the slot is found the same way, but its word is
 * read and written through JNI with libshared's transactional slot functions
 * ({@link Direct#txLoad}: read_slot_word, {@link Direct#txStore}: write_slot, owner = the object),
 * and references take the JNI path by name (read_slot_rooted / write_slot): the transaction's
 * reads are validated against the object's orec and its writes logged. Outside transactions the
 * only extra cost is one plain int read ({@link Transaction#inThisThread}).
 */
public final class SharedField {
  // TypeKind codes (colors/types.hpp).
  private static final int ANY = 0, INTEGER = 1, FLOAT = 2, BOOLEAN = 3, STRING = 4;
  private static final int MISSING = -1;

  private static final class Entry {
    final long cls;
    final long epoch;
    final int slot;  // MISSING when the version lacks the field
    final int type;
    /** The field is typed with a class name: only user objects of that class fit (check_field_type). */
    final boolean constrained;
    /** A user object class version this constrained field was checked to take (0: none yet). */
    volatile long okClass;

    Entry(long cls, long epoch, int slot, int type, boolean constrained) {
      this.cls = cls;
      this.epoch = epoch;
      this.slot = slot;
      this.type = type;
      this.constrained = constrained;
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

  private static final StackWalker CALLER = StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE);

  /**
   * The shared field mapped from instance field {@code name} declared by {@code owner} (called
   * from the static initializer the agent adds to mapped classes). Only {@code owner} itself gets
   * its fields: a field's accessor entry points read and write at the address they are given, which
   * only the accessors the agent generates in {@code owner} pass, from the instance's own binding.
   *
   * @param owner the declaring class
   * @param name the field name
   * @return the field
   * @throws InvalidArgumentException when called from another class than {@code owner}
   */
  public static SharedField of(Class<?> owner, String name) {
    if (CALLER.getCallerClass() != owner) {
      throw new InvalidArgumentException("SharedField.of(" + owner.getName() + ", \"" + name + "\"): a mapped class's"
          + " fields are its own (its static initializer, which the colors agent generates, gets them);"
          + " it is not part of the API");
    }
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
    Entry e = new Entry(cls, v.epoch, r == null ? MISSING : (int) r[0], r == null ? MISSING : (int) r[1],
        r != null && r[2] != 0);
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
   * The address of the field's slot in the object at {@code obj}, 0 for "take the slow path", -1
   * when the object's class version lacks the field.
   */
  private long slot(Direct.View v, long obj) {
    Entry e = entry(v, obj);
    if (e.slot == MISSING) return -1;
    return v.slotAddress(obj, e.slot, v.inlineSlots(obj));
  }

  /**
   * The view for the fast path on the object at {@code a}, or null. Addresses are positive
   * (user-space); 0 and {@link #NO_ADDRESS} take the slow path.
   */
  private static Direct.View viewOf(long a) {
    // The accessors' entry points are public, so `a` is checked (-1, a private instance's 0 and
    // anything outside the objects space fail): what fails takes the JNI path, which uses the
    // owner's own binding. Forged addresses inside the segment remain possible (as with Unsafe).
    Direct.View v = Direct.current();
    return v != null && v.mayHoldObjectAt(a) ? v : null;
  }

  /**
   * The word in slot {@code s} of the object at {@code a}: an acquire load; inside a transaction
   * libshared's read_slot_word through JNI (the object's orec), so that the transaction's reads
   * stay isolated. The check costs one plain int read while no thread of this JVM runs a
   * transaction ({@link Transaction#inThisThread}). {@code owner} roots the object.
   */
  private static long load(Direct.View v, long a, long s, Object owner) {
    return Transaction.inThisThread() ? Direct.txLoad(owner, a, s) : v.load(s);
  }

  /** The address of a bound instance whose fast path is off (detached, no view): JNI path. */
  static final long NO_ADDRESS = -1;

  /**
   * Checks a binding before a bound instance stores it (called by the {@code $colors$bind} the
   * agent generates, which {@link SharedInstance} makes public). The field fast path reads and
   * writes at the stored address, so only the view's own instance ({@code view.instance}, which
   * colors sets before it binds) is bound, and only two ways: the fast path off ({@code address}
   * -1), or the address of the object {@code view} refers to, through a handle of the current
   * attachment that no read scope but this thread's open one lends ({@link Direct#viewFor}; a
   * proxy being made has no root yet: the caller's slot keeps its object). An instance may also
   * switch its own binding off when its view has another instance since. So no instance but the
   * one colors made for a view keeps its address, and detach switches all of those off.
   *
   * @param view the view of the shared object
   * @param address the address to store
   * @param instance the instance being bound (the generated method passes {@code this})
   * @return {@code address}
   * @throws InvalidArgumentException for any other address: a call not made by the binding
   */
  public static long bindAddress(SharedObject view, long address, Object instance) {
    if (view != null && view.instance == instance) {
      if (address == NO_ADDRESS) return address;
      Handle h = view.handle;
      if (address > 0 && h.raw == address && Direct.viewFor(h) != null) return address;
    } else if (address == NO_ADDRESS && instance instanceof SharedInstance
        && ((SharedInstance) instance).$colors$view() == view) {
      return address;  // switching an instance's own binding off (a view that has another instance since)
    }
    throw new InvalidArgumentException("$colors$bind(view, " + address + "): an instance is bound by colors only"
        + " (the view's own instance, to the address of the object the view refers to, or -1); it is not part"
        + " of the API");
  }

  /** The address of a SharedObject's object for the fast path, or 0 (stale handle, no view). */
  private static long addressOf(SharedObject o) {
    Handle h = o.handle;
    return Direct.viewFor(h) != null ? h.raw : 0;
  }

  // ---- slow path -----------------------------------------------------------------------------

  private static final Object ABSENT = new Object();

  private static SharedObject viewOf(Object owner) {
    if (owner instanceof SharedObject) return (SharedObject) owner;
    SharedObject v = ((SharedInstance) owner).$colors$view();
    if (v == null) throw new IllegalStateException("colors: a private instance reached the shared path");
    return v;
  }

  private Object readSlow(Object owner) {
    SharedObject o = viewOf(owner);
    if (mapped && !o.hasField(name)) return ABSENT;
    return o.get(name);
  }

  private Object zero() {
    return type == null ? null : ClassMapping.zeroOf(type);
  }

  private void writeSlow(Object owner, Object value) {
    SharedObject o = viewOf(owner);
    // A field Java uses but the object's version lacks is added (a new version; the object stays).
    if (mapped && !o.hasField(name)) o.addField(name, kind);
    o.set(name, value);
  }

  // ---- reads ---------------------------------------------------------------------------------

  /**
   * The small integer in the field of the object at {@code a}, or {@code Long.MIN_VALUE} for "not
   * a small integer" (60-bit values never are Long.MIN_VALUE). Absent fields of mapped classes
   * read as 0.
   */
  private long small(long a, Object owner) {
    Direct.View v = viewOf(a);
    if (v == null) return Long.MIN_VALUE;
    long s = slot(v, a);
    if (s > 0) {
      long w = load(v, a, s, owner);
      return Words.isSmallInt(w) ? Words.smallValue(w) : Long.MIN_VALUE;
    }
    return s < 0 && mapped ? 0 : Long.MIN_VALUE;
  }

  private long getLong0(long a, Object owner) {
    long x = small(a, owner);
    if (x != Long.MIN_VALUE) return x;
    Object v = readSlow(owner);
    return v == ABSENT ? 0 : Codec.toLong(v, where);
  }

  private int getInt0(long a, Object owner) {
    long x = small(a, owner);
    if (x == (int) x) return (int) x;
    Object v = readSlow(owner);
    return v == ABSENT ? 0 : Codec.toInt(v, where);
  }

  private short getShort0(long a, Object owner) {
    long x = small(a, owner);
    if (x == (short) x) return (short) x;
    Object v = readSlow(owner);
    return v == ABSENT ? 0 : Codec.toShort(v, where);
  }

  private byte getByte0(long a, Object owner) {
    long x = small(a, owner);
    if (x == (byte) x) return (byte) x;
    Object v = readSlow(owner);
    return v == ABSENT ? 0 : Codec.toByte(v, where);
  }

  private char getChar0(long a, Object owner) {
    long x = small(a, owner);
    if (x == (char) x) return (char) x;
    Object v = readSlow(owner);
    return v == ABSENT ? 0 : Codec.toChar(v, where);
  }

  private boolean getBoolean0(long a, Object owner) {
    Direct.View v = viewOf(a);
    if (v != null) {
      long s = slot(v, a);
      if (s > 0) {
        long w = load(v, a, s, owner);
        if (Words.isBool(w)) return Words.boolValue(w);
      } else if (s < 0 && mapped) {
        return false;
      }
    }
    Object x = readSlow(owner);
    return x != ABSENT && Codec.toBoolean(x, where);
  }

  private double getDouble0(long a, Object owner) {
    Direct.View v = viewOf(a);
    if (v != null) {
      long s = slot(v, a);
      if (s > 0) {
        long bits = Transaction.inThisThread() ? txDoubleBits(a, s, owner) : v.readDoubleBits(s);
        if (bits != Direct.NO_FLOAT) return Double.longBitsToDouble(bits);
      } else if (s < 0 && mapped) {
        return 0.0;
      }
    }
    Object x = readSlow(owner);
    return x == ABSENT ? 0.0 : Codec.toDouble(x, where);
  }

  /**
   * Inside a transaction: the word read through it as the raw bits of a double when it is an
   * immediate float or an integer a double represents exactly; {@link Direct#NO_FLOAT} otherwise
   * (a boxed float: the JNI path by name reads it with read_slot_rooted).
   */
  private static long txDoubleBits(long a, long s, Object owner) {
    long w = Direct.txLoad(owner, a, s);
    if (Words.isSmallFloat(w)) return Words.smallFloatBits(w);
    if (Words.isSmallInt(w)) {
      long x = Words.smallValue(w);
      double d = (double) x;
      return (long) d == x ? Double.doubleToRawLongBits(d) : Direct.NO_FLOAT;
    }
    return Direct.NO_FLOAT;
  }

  private float getFloat0(long a, Object owner) {
    double d = getDouble0(a, owner);
    float f = (float) d;
    if ((Float.isInfinite(f) && !Double.isInfinite(d)) || (f == 0.0f && d != 0.0)) {
      return Codec.toFloat(d, where);  // throws with the checked read's message
    }
    return f;
  }

  private Object getObject0(long a, Object owner, Object cached) {
    Object v = Proxies.MISS;
    Direct.View view = Direct.UNSAFE != null ? viewOf(a) : null;
    if (view != null) {
      Entry e = entry(view, a);
      long s = e.slot == MISSING ? -1 : view.slotAddress(a, e.slot, view.inlineSlots(a));
      if (s > 0 && Transaction.inThisThread()) {
        // Read through the transaction by libshared; the proxy made in Java (strings: JNI).
        v = Proxies.readRefInTx(view, owner, a, s);
      } else if (s > 0) {
        // Strings in place, references through the read cache, the identity cache or a Java-held
        // root: no JNI. Only a field typed string or any can hold a string (check_field_type on
        // every store).
        // A bound instance's cached value (ReadCache) while the slot still holds its object: what
        // this getter returned for that object, after the type check and conversion below.
        if (cached != null && ReadCache.holds(view, s, cached)) {
          Reference.reachabilityFence(owner);
          return cached;
        }
        v = Proxies.readRef(view, s, e.type == STRING || e.type == ANY);
      } else if (s < 0 && mapped) {
        v = ABSENT;
      }
      Reference.reachabilityFence(owner);  // its root keeps the object owning `s` alive until here
    }
    if (v == Proxies.MISS) v = readSlow(owner);
    if (v == ABSENT) return zero();
    if (type == null || v == null || type.isInstance(v)) return v;
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
  private boolean storeFast(long a, long word, int accepts, Object owner) {
    Direct.View v = viewOf(a);
    if (v == null) return false;
    Entry e = entry(v, a);
    if (e.slot == MISSING || (accepts != -2 && e.type != accepts && e.type != ANY)) return false;
    long s = v.slotAddress(a, e.slot, v.inlineSlots(a));
    if (s == 0) return false;
    if (Transaction.inThisThread()) {
      Direct.txStore(owner, a, s, word);  // write_slot: the object's orec taken, the old word logged
    } else {
      v.storeWord(s, word);
    }
    return true;
  }

  private void setLong0(long a, Object owner, long x) {
    if (Words.fitsSmall(x) && storeFast(a, Words.smallWord(x), INTEGER, owner)) {
      Reference.reachabilityFence(owner);  // its root keeps the object alive through the store
      return;
    }
    writeSlow(owner, x);
  }

  private void setDouble0(long a, Object owner, double d) {
    long bits = Double.doubleToRawLongBits(d);
    if (Words.fitsSmallFloat(bits) && storeFast(a, Words.smallFloatWord(bits), FLOAT, owner)) {
      Reference.reachabilityFence(owner);  // its root keeps the object alive through the store
      return;
    }
    writeSlow(owner, d);
  }

  private void setBoolean0(long a, Object owner, boolean b) {
    if (storeFast(a, Words.boolWord(b), BOOLEAN, owner)) {
      Reference.reachabilityFence(owner);  // its root keeps the object alive through the store
      return;
    }
    writeSlow(owner, b);
  }

  private void setObject0(long a, Object owner, Object value) {
    if (value == null) {
      if (storeFast(a, 0L, -2, owner)) {
        Reference.reachabilityFence(owner);
        return;
      }
    } else if (Direct.UNSAFE != null && a > 0) {
      if (value instanceof String) {
        // Direct.storeUtf8 writes with write_slot: transactional inside a transaction.
        if (storeString(a, owner, (String) value)) return;  // owner is an argument of the native
      } else if (!Transaction.inThisThread()) {  // inside one, references take the JNI path
        Handle h = Proxies.handleOf(value);
        if (h != null && storeReference(a, h, value)) {
          Reference.reachabilityFence(owner);
          return;
        }
      }
    }
    writeSlow(owner, value);
  }

  /**
   * A string into a field that takes strings: encoded to UTF-8 here, then one JNI call
   * (allocation and store_ref), no field lookup by name. False: take the slow path (which also
   * refuses a lone surrogate, with the binding's message).
   */
  private boolean storeString(long a, Object owner, String str) {
    Direct.View v = viewOf(a);
    if (v == null) return false;
    Entry e = entry(v, a);
    if (e.slot == MISSING || (e.type != STRING && e.type != ANY)) return false;
    long s = v.slotAddress(a, e.slot, v.inlineSlots(a));
    if (s == 0) return false;
    // A string written lately (an equal one) is stored as the shared string made for it.
    StringWrites w = StringWrites.mine(v);
    if (str.length() <= StringWrites.MAX_CHARS && !Transaction.inThisThread() && w.store(v, owner, a, s, str)) return true;
    Direct.Utf8Buffer u = w.buffer();
    boolean buffered = str.length() <= Direct.Utf8Buffer.MAX_CHARS;
    // A char takes at most 3 bytes (a surrogate pair, two chars, 4).
    byte[] utf8 = buffered ? u.bytes : new byte[3 * str.length()];
    int n = BulkWriter.utf8(str, utf8, 0);
    if (n < 0) return false;  // a lone surrogate
    // owner, an argument of either native, roots the object owning s for the call.
    if (buffered) {
      u.copyToMemory(n);
      Direct.storeUtf8At(owner, a, s, u.address, n);
    } else {
      Direct.storeUtf8(owner, a, s, utf8, n);
    }
    return true;
  }

  /**
   * A shared container or user object (its proxy's handle {@code h}) into a field whose type takes
   * it (check_field_type: same kind, and for a field typed with a class name an object of that
   * class, checked once per class version through JNI): store_ref in Java. The value is rooted by
   * its proxy, the owner by its own, until the store is done (reachability fences).
   */
  private boolean storeReference(long a, Handle h, Object value) {
    Direct.View v = viewOf(a);
    if (v == null || h.epoch != v.epoch) return false;
    // A borrowed reference (no root: read or allocated in this thread's read scope) is stored by
    // libshared, which flags it for the collector (store_scope_reference); one of another thread's
    // scope, or of a closed one, takes the JNI path, which says why it cannot be used.
    boolean borrowed = h.root == null;
    if (borrowed && !h.usableHere()) return false;
    Entry e = entry(v, a);
    if (e.slot == MISSING) return false;
    if (e.type != ANY) {
      if (e.type != h.kind) return false;
      if (e.constrained) {
        long vc = v.classOf(h.raw);
        if (vc != e.okClass) {
          if (!Direct.accepts(e.cls, name, value, h.raw)) return false;  // the slow path raises
          e.okClass = vc;
        }
      }
    }
    long s = v.slotAddress(a, e.slot, v.inlineSlots(a));
    if (s == 0) return false;
    if (borrowed) Direct.storeScoped(s, h.raw);
    else v.storeWord(s, h.raw);
    Reference.reachabilityFence(value);
    return true;
  }

  // ---- entry points: SharedObject views (by name) --------------------------------------------

  long getLong(SharedObject o) {
    return getLong0(addressOf(o), o);
  }

  int getInt(SharedObject o) {
    return getInt0(addressOf(o), o);
  }

  boolean getBoolean(SharedObject o) {
    return getBoolean0(addressOf(o), o);
  }

  double getDouble(SharedObject o) {
    return getDouble0(addressOf(o), o);
  }

  void setLong(SharedObject o, long x) {
    setLong0(addressOf(o), o, x);
  }

  void setBoolean(SharedObject o, boolean b) {
    setBoolean0(addressOf(o), o, b);
  }

  void setDouble(SharedObject o, double d) {
    setDouble0(addressOf(o), o, d);
  }

  // ---- entry points: the accessors the agent generates ----------------------------------------
  // `o` is an instance of a mapped class, `a` the address of its shared object (0: take the JNI
  // path through its view, e.g. after detach).

  /**
   * Reads a long field of a bound instance.
   *
   * @param o the instance
   * @param a the address of its shared object
   * @return the value
   */
  public long getLong(SharedInstance o, long a) {
    return getLong0(a, o);
  }

  /**
   * Reads an int field of a bound instance (SharedOverflowException if the value does not fit).
   *
   * @param o the instance
   * @param a the address of its shared object
   * @return the value
   */
  public int getInt(SharedInstance o, long a) {
    return getInt0(a, o);
  }

  /**
   * Reads a short field of a bound instance.
   *
   * @param o the instance
   * @param a the address of its shared object
   * @return the value
   */
  public short getShort(SharedInstance o, long a) {
    return getShort0(a, o);
  }

  /**
   * Reads a byte field of a bound instance.
   *
   * @param o the instance
   * @param a the address of its shared object
   * @return the value
   */
  public byte getByte(SharedInstance o, long a) {
    return getByte0(a, o);
  }

  /**
   * Reads a char field of a bound instance.
   *
   * @param o the instance
   * @param a the address of its shared object
   * @return the value
   */
  public char getChar(SharedInstance o, long a) {
    return getChar0(a, o);
  }

  /**
   * Reads a boolean field of a bound instance.
   *
   * @param o the instance
   * @param a the address of its shared object
   * @return the value
   */
  public boolean getBoolean(SharedInstance o, long a) {
    return getBoolean0(a, o);
  }

  /**
   * Reads a double field of a bound instance: a boxed float under the collector's seqlock, an
   * integer when a double represents it exactly.
   *
   * @param o the instance
   * @param a the address of its shared object
   * @return the value
   */
  public double getDouble(SharedInstance o, long a) {
    return getDouble0(a, o);
  }

  /**
   * Reads a float field of a bound instance (SharedOverflowException out of range or on
   * underflow to zero).
   *
   * @param o the instance
   * @param a the address of its shared object
   * @return the value
   */
  public float getFloat(SharedInstance o, long a) {
    return getFloat0(a, o);
  }

  /**
   * Reads a reference field of a bound instance, as a value of the field's Java type: strings,
   * byte arrays, containers, instances of mapped classes, boxes; arrays as private copies.
   *
   * @param o the instance
   * @param a the address of its shared object
   * @param cached what the instance's read cache holds for the field (null: nothing): returned
   *     when the field still refers to its shared object
   * @return the value
   */
  public Object getObject(SharedInstance o, long a, Object cached) {
    return getObject0(a, o, cached);
  }

  /**
   * What the instance's read cache should keep for the field after {@code value} was read from
   * it: {@code value} when it is a proxy with a root of its own read outside a transaction into
   * an instance with a root of its own (the instance then has a place in the cache's ring), else
   * null.
   *
   * @param o the instance the value was read from
   * @param value what {@link #getObject(SharedInstance, long, Object)} returned
   * @return the value to keep, or null
   */
  public Object cacheable(SharedInstance o, Object value) {
    return ReadCache.cacheable(o, value);
  }

  /**
   * Writes a long field (small integers without JNI).
   *
   * @param o the instance
   * @param a the address of its shared object
   * @param x the value
   */
  public void setLong(SharedInstance o, long a, long x) {
    setLong0(a, o, x);
  }

  /**
   * Writes an int field.
   *
   * @param o the instance
   * @param a the address of its shared object
   * @param x the value
   */
  public void setInt(SharedInstance o, long a, int x) {
    setLong0(a, o, x);
  }

  /**
   * Writes a short field.
   *
   * @param o the instance
   * @param a the address of its shared object
   * @param x the value
   */
  public void setShort(SharedInstance o, long a, short x) {
    setLong0(a, o, x);
  }

  /**
   * Writes a byte field.
   *
   * @param o the instance
   * @param a the address of its shared object
   * @param x the value
   */
  public void setByte(SharedInstance o, long a, byte x) {
    setLong0(a, o, x);
  }

  /**
   * Writes a char field.
   *
   * @param o the instance
   * @param a the address of its shared object
   * @param x the value
   */
  public void setChar(SharedInstance o, long a, char x) {
    setLong0(a, o, x);
  }

  /**
   * Writes a boolean field.
   *
   * @param o the instance
   * @param a the address of its shared object
   * @param b the value
   */
  public void setBoolean(SharedInstance o, long a, boolean b) {
    setBoolean0(a, o, b);
  }

  /**
   * Writes a double field: without JNI when the double is stored in the slot (zero, or a
   * magnitude in [2^-126, 2^129)); a boxed float through JNI otherwise.
   *
   * @param o the instance
   * @param a the address of its shared object
   * @param d the value
   */
  public void setDouble(SharedInstance o, long a, double d) {
    setDouble0(a, o, d);
  }

  /**
   * Writes a float field (as a double; without JNI except for infinities, NaN and subnormals).
   *
   * @param o the instance
   * @param a the address of its shared object
   * @param f the value
   */
  public void setFloat(SharedInstance o, long a, float f) {
    setDouble0(a, o, f);
  }

  /**
   * Writes a reference field: null without JNI; strings, boxes and byte arrays are copied in,
   * shared objects (views, bound instances) stored by reference, other private objects refused.
   *
   * @param o the instance
   * @param a the address of its shared object
   * @param value the value
   */
  public void setObject(SharedInstance o, long a, Object value) {
    setObject0(a, o, value);
  }
}
