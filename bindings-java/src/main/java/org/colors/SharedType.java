package org.colors;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * One version of a shared class, from {@link SharedMemory#getSharedType(Object)}: its name,
 * version number, fields with their shared types, and the other versions of the same name.
 * Shared classes are immutable once created; an object moves to another version when a field is
 * added to or removed from it. Builtin values have builtin types (e.g. {@code list}, without
 * fields).
 *
 * <p>Two SharedType objects are equal when they denote the same class version.
 */
public final class SharedType {
  /** The shared types of values and fields (colors::TypeKind). */
  public enum Kind {
    /** Field type only: any value. */
    ANY(0),
    /** 64-bit signed integer. */
    INTEGER(1),
    /** 64-bit IEEE float. */
    FLOAT(2),
    /** Boolean. */
    BOOLEAN(3),
    /** UTF-8 string. */
    STRING(4),
    /** Byte string. */
    BINARY(5),
    /** List. */
    LIST(6),
    /** Set. */
    SET(7),
    /** Map. */
    MAP(8),
    /** Instance of a user class. */
    OBJECT(9),
    /** The null value (never a field type). */
    NULL(14),
    /** Sorted map ({@link SharedSortedMap}). */
    SORTED_MAP(15);

    final int code;

    Kind(int code) {
      this.code = code;
    }

    static Kind of(int code) {
      for (Kind k : values()) {
        if (k.code == code) return k;
      }
      throw new IllegalArgumentException("unknown shared type kind " + code);
    }
  }

  /**
   * A field of a shared class version.
   *
   * @param name the field name
   * @param kind its shared type
   * @param className for {@link Kind#OBJECT} fields, the expected class ("" for any)
   * @param slot its slot in objects of this version
   */
  public record Field(String name, Kind kind, String className, int slot) {}

  private final long ptr;
  private final long generation;

  private SharedType(long ptr, long generation) {
    this.ptr = ptr;
    this.generation = generation;
  }

  static SharedType of(long ptr) {
    return new SharedType(ptr, Native.generation());
  }

  long ptr() {
    if (generation != Native.generation() || !Native.isAttached()) {
      throw new NotAttachedException("this SharedType belongs to an attachment that was closed by detach()");
    }
    return ptr;
  }

  /**
   * The class name.
   *
   * @return the fully qualified name (builtins: {@code list}, {@code string}, ...)
   */
  public String name() {
    return Native.className(ptr());
  }

  /**
   * The version number of this class version (1 for the first version of a name).
   *
   * @return the version
   */
  public int version() {
    return Native.classVersion(ptr());
  }

  /**
   * The kind of values of this class.
   *
   * @return {@link Kind#OBJECT} for user classes, the builtin kind otherwise
   */
  public Kind kind() {
    return Kind.of(Native.classKind(ptr()));
  }

  /**
   * The fields of this version, in slot order.
   *
   * @return the fields
   */
  public List<Field> fields() {
    Object[] f = Native.classFields(ptr());
    List<Field> out = new ArrayList<>(f.length / 4);
    for (int i = 0; i < f.length; i += 4) {
      out.add(new Field((String) f[i], Kind.of((Integer) f[i + 1]), (String) f[i + 2], (Integer) f[i + 3]));
    }
    out.sort((a, b) -> Integer.compare(a.slot(), b.slot()));
    return Collections.unmodifiableList(out);
  }

  /**
   * The field of this version with that name.
   *
   * @param name the field name
   * @return the field, or null if this version lacks it
   */
  public Field field(String name) {
    for (Field f : fields()) {
      if (f.name().equals(name)) return f;
    }
    return null;
  }

  /**
   * Every version of this class name, oldest first (this one included).
   *
   * @return the versions
   */
  public List<SharedType> versions() {
    long[] v = Native.classVersions(ptr());
    List<SharedType> out = new ArrayList<>(v.length);
    for (long p : v) out.add(new SharedType(p, generation));
    return Collections.unmodifiableList(out);
  }

  /**
   * The other versions of this class name, oldest first.
   *
   * @return the versions other than this one
   */
  public List<SharedType> otherVersions() {
    List<SharedType> out = new ArrayList<>(versions());
    out.remove(this);
    return Collections.unmodifiableList(out);
  }

  /**
   * Every version of the shared class {@code name}, oldest first.
   *
   * @param name a fully qualified class name
   * @return the versions (empty if the class does not exist)
   */
  public static List<SharedType> versionsOf(String name) {
    SharedMemory.ensureAttached();
    long gen = Native.generation();
    List<SharedType> out = new ArrayList<>();
    for (long p : Native.classVersionsByName(name)) out.add(new SharedType(p, gen));
    return Collections.unmodifiableList(out);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof SharedType && ((SharedType) o).ptr == ptr && ((SharedType) o).generation == generation;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(ptr);
  }

  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder(name()).append(" v").append(version());
    List<Field> fs = fields();
    if (!fs.isEmpty()) {
      sb.append(" {");
      for (int i = 0; i < fs.size(); i++) {
        if (i > 0) sb.append(", ");
        Field f = fs.get(i);
        sb.append(f.name()).append(": ").append(f.kind().name().toLowerCase(java.util.Locale.ROOT));
        if (!f.className().isEmpty()) sb.append(' ').append(f.className());
      }
      sb.append('}');
    }
    return sb.toString();
  }
}
