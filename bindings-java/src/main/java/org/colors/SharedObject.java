package org.colors;

import java.util.ArrayList;
import java.util.List;

/**
 * A shared user object (an instance of a shared class such as {@code demo.Employee}), seen through
 * an explicit view: fields are read and written by name, with typed accessors that check every
 * value ({@link #getInt(String)} throws {@link SharedOverflowException} rather than truncate).
 *
 * <p>Writes go straight to shared memory and are seen by every process. A field's shared type is
 * checked on store ({@link TypeMismatchException}); {@code null} fits every field. Reading or
 * writing a field the object's class version lacks throws {@link SharedKeyException}; use
 * {@link #addField(String, SharedType.Kind)} to evolve the object (a new class version; the object
 * does not move and keeps its other fields).
 *
 * <p>Identity: the same shared object gives the same SharedObject while one is reachable;
 * {@code equals} is identity, as for every shared user object.
 */
public final class SharedObject {
  final Handle handle;
  /** The instance of a mapped class bound to this object (agent), kept alive with the view. */
  volatile Object instance;
  /** The bound instance has a place in the read cache's ring (ReadCache). */
  volatile boolean inReadCache;

  SharedObject(Handle handle) {
    this.handle = handle;
  }

  /**
   * The shared class version of this object (it changes when a field is added or removed).
   *
   * @return the shared type
   */
  public SharedType sharedType() {
    return SharedType.of(Native.classOf(handle));
  }

  /**
   * The fully qualified name of the object's shared class.
   *
   * @return the class name, e.g. {@code demo.Employee}
   */
  public String className() {
    return Native.className(Native.classOf(handle));
  }

  /**
   * The names of the fields of the object's current class version, in slot order.
   *
   * @return the field names
   */
  public List<String> fieldNames() {
    List<String> out = new ArrayList<>();
    for (SharedType.Field f : sharedType().fields()) out.add(f.name());
    return out;
  }

  /**
   * Whether the object's current class version has the field.
   *
   * @param field the field name
   * @return true if it has it
   */
  public boolean hasField(String field) {
    return Native.objHas(handle, field);
  }

  /**
   * The value of a field: null, Long, Double, Boolean, String, byte[] or a proxy.
   *
   * @param field the field name
   * @return the value
   * @throws SharedKeyException if the object has no such field
   */
  public Object get(String field) {
    return Native.objGet(handle, field);
  }

  /**
   * Stores a value into a field (private scalars, Strings and byte[] are copied in).
   *
   * @param field the field name
   * @param value the value
   * @throws SharedKeyException if the object has no such field
   * @throws TypeMismatchException if the value does not fit the field's shared type, or is a
   *     private collection (call {@link SharedMemory#copyToSharedMemory(Object)} first)
   */
  public void set(String field, Object value) {
    int t = Codec.tag(value);
    Native.objSet(handle, field, t, Codec.bits(value, t), Codec.obj(value, t));
  }

  /**
   * Stores an integer into a field (no boxing).
   *
   * @param field the field name
   * @param value the value
   * @throws TypeMismatchException if the field holds another shared type (a float field takes the
   *     integer as a float when a double represents it exactly)
   */
  public void set(String field, long value) {
    SharedField.named(field).setLong(this, value);  // the fast path for 60-bit integers
  }

  /**
   * Stores a float into a field (no boxing).
   *
   * @param field the field name
   * @param value the value
   */
  public void set(String field, double value) {
    SharedField.named(field).setDouble(this, value);  // the fast path for immediate floats
  }

  /**
   * Stores a boolean into a field (no boxing).
   *
   * @param field the field name
   * @param value the value
   */
  public void set(String field, boolean value) {
    SharedField.named(field).setBoolean(this, value);  // the fast path
  }

  /**
   * Reads this object into a new private instance of a Java class, by field name (reflection; the
   * class needs a no-argument constructor, or is a record): each Java field takes the shared field
   * of the same name, converted with the checks of the typed getters; Java fields this object lacks
   * keep their defaults; shared fields the class lacks are ignored. Nested shared objects become
   * private instances too (sharing and cycles preserved); shared containers stay live proxies in
   * fields of interface types and are copied into fields of concrete types and arrays.
   *
   * <p>The result is a private snapshot: changing it does not change the shared object (use
   * {@link #writeFrom(Object)}); transparent access needs the bytecode-rewriting agent.
   *
   * <p>Cost: when every reached value can be copied (scalars, strings, byte[], nested objects,
   * lists into array fields, maps and sets kept as proxies), the reachable graph is read in one
   * native call and the instances are built in Java; otherwise (a nested object or list that
   * stays a live proxy, records) each field is read through its own native call. The results and
   * exceptions are the same.
   *
   * @param <T> the class
   * @param cls a user class (typically the one named like this object's shared class)
   * @return the new private instance
   * @throws TypeMismatchException if a field value does not fit its Java field
   * @throws SharedOverflowException if a number does not fit its Java field
   */
  public <T> T toPrivate(Class<T> cls) {
    Object r = BulkReader.toPrivate(this, cls);  // one native call for what it covers
    if (r != BulkReader.FALLBACK) return cls.cast(r);
    return cls.cast(new Materializer(cls.getClassLoader()).run(this, cls));
  }

  /**
   * Reads this object's fields into an existing private instance (as {@link #toPrivate(Class)}).
   *
   * @param target an instance of a user class (not a record)
   */
  public void readInto(Object target) {
    new Materializer(target.getClass().getClassLoader()).readInto(this, target);
  }

  /**
   * Writes the fields of a private instance into this shared object, by name: scalars, Strings and
   * byte arrays are copied in, private collections, arrays and user objects are deep-copied
   * ({@link SharedMemory#copyToSharedMemory(Object)}), shared objects are stored as they are. A
   * field this object's shared version lacks is added to it (a new class version; the object does
   * not move); fields only the shared object has are kept.
   *
   * <p>All or none: every value is checked against its field before any is stored, so a value that
   * does not fit leaves this object as it was (the stores are not one atomic step for concurrent
   * readers; a transaction makes them one).
   *
   * @param source an instance of a user class
   * @throws TypeMismatchException if a value does not fit the shared field's type (nothing stored)
   */
  public void writeFrom(Object source) {
    ClassMapping.of(source.getClass());  // a user class, or TypeMismatchException
    new Copier().writeObject(source, this);
  }

  /**
   * The value of a field converted to {@code type} with the checks of the typed getters.
   *
   * @param <T> the type
   * @param field the field name
   * @param type the class to convert to (boxed types for numbers)
   * @return the value
   */
  @SuppressWarnings("unchecked")
  public <T> T get(String field, Class<T> type) {
    return (T) Codec.convert(get(field), type, where(field));
  }

  private static String where(String field) {
    return "field '" + field + "'";
  }

  /**
   * A field as a long.
   *
   * @param field the field name
   * @return the value
   * @throws TypeMismatchException if it is not an integer
   */
  public long getLong(String field) {
    return SharedField.named(field).getLong(this);  // the fast path; JNI for the rest
  }

  /**
   * A field as an int.
   *
   * @param field the field name
   * @return the value
   * @throws SharedOverflowException if it does not fit an int
   */
  public int getInt(String field) {
    return SharedField.named(field).getInt(this);  // the fast path; JNI for the rest
  }

  /**
   * A field as a short.
   *
   * @param field the field name
   * @return the value
   * @throws SharedOverflowException if it does not fit a short
   */
  public short getShort(String field) {
    return Codec.toShort(get(field), where(field));
  }

  /**
   * A field as a byte.
   *
   * @param field the field name
   * @return the value
   * @throws SharedOverflowException if it does not fit a byte
   */
  public byte getByte(String field) {
    return Codec.toByte(get(field), where(field));
  }

  /**
   * A field as a char.
   *
   * @param field the field name
   * @return the value
   * @throws SharedOverflowException if it does not fit a char
   */
  public char getChar(String field) {
    return Codec.toChar(get(field), where(field));
  }

  /**
   * A field as a double.
   *
   * @param field the field name
   * @return the value
   * @throws SharedOverflowException if it is an integer a double cannot represent exactly
   */
  public double getDouble(String field) {
    return SharedField.named(field).getDouble(this);  // the fast path; JNI for the rest
  }

  /**
   * A field as a float.
   *
   * @param field the field name
   * @return the value
   * @throws SharedOverflowException if it is out of the range of a float
   */
  public float getFloat(String field) {
    return Codec.toFloat(get(field), where(field));
  }

  /**
   * A field as a boolean.
   *
   * @param field the field name
   * @return the value
   */
  public boolean getBoolean(String field) {
    return SharedField.named(field).getBoolean(this);  // the fast path; JNI for the rest
  }

  /**
   * A field as a String.
   *
   * @param field the field name
   * @return the value (null for a shared null)
   */
  public String getString(String field) {
    return Codec.toStringValue(get(field), where(field));
  }

  /**
   * Adds a field to this object (schema evolution in place): the object moves to the class
   * version with its current fields plus this one (created if needed); its data does not move and
   * the new field is null. Other objects keep their version. Does nothing if the field exists.
   *
   * @param field the field name
   * @param kind its shared type
   */
  public void addField(String field, SharedType.Kind kind) {
    if (kind == SharedType.Kind.NULL) throw new InvalidArgumentException("NULL is not a field type");
    if (hasField(field)) return;
    Native.objAddField(handle, field, kind.code, null);
  }

  /**
   * Removes a field from this object (schema evolution in place): the object moves to the class
   * version without it. Other objects keep their version and data.
   *
   * @param field the field name
   */
  public void removeField(String field) {
    Native.objRemoveField(handle, field);
  }

  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder(className()).append('{');
    boolean first = true;
    for (String f : fieldNames()) {
      if (!first) sb.append(", ");
      first = false;
      Object v = get(f);
      sb.append(f).append('=').append(v == this ? "(this)" : v instanceof SharedObject ? "<" + ((SharedObject) v).className() + ">" : v);
    }
    return sb.append('}').toString();
  }
}
