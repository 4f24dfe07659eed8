package org.colors;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The mapping of a private Java class to a shared class, computed once per Java class by
 * reflection (a {@link ClassValue} cache): the shared class name is the Java class's fully
 * qualified name ({@link Class#getName()}), its fields are the non-static, non-transient fields of
 * the class and its superclasses (superclass fields first, in declaration order), each with the
 * shared type of its Java type:
 *
 * <table>
 * <caption>Java field types and shared field types</caption>
 * <tr><th>Java field type</th><th>shared field type</th></tr>
 * <tr><td>byte, short, int, long, char and boxes</td><td>integer</td></tr>
 * <tr><td>float, double and boxes</td><td>float</td></tr>
 * <tr><td>boolean, Boolean</td><td>boolean</td></tr>
 * <tr><td>String</td><td>string</td></tr>
 * <tr><td>byte[]</td><td>binary</td></tr>
 * <tr><td>List, ArrayList, Collection, other arrays</td><td>list</td></tr>
 * <tr><td>Set, HashSet</td><td>set</td></tr>
 * <tr><td>Map, HashMap</td><td>map</td></tr>
 * <tr><td>a user class</td><td>object (of any user class)</td></tr>
 * <tr><td>anything else (Object, interfaces, ...)</td><td>any</td></tr>
 * </table>
 *
 * <p>The shared class version (looked up or created by field set through libshared's
 * define_class) is cached per attachment.
 */
final class ClassMapping {
  /** One mapped field. */
  static final class MappedField {
    final Field field;
    final String name;
    final SharedType.Kind kind;

    MappedField(Field field, SharedType.Kind kind) {
      this.field = field;
      this.name = field.getName();
      this.kind = kind;
    }
  }

  final Class<?> type;
  final String name;
  final List<MappedField> fields;
  final Map<String, MappedField> byName;
  private volatile long cachedClass;
  private volatile long cachedGeneration = -1;

  private static final ClassValue<ClassMapping> CACHE = new ClassValue<>() {
    @Override
    protected ClassMapping computeValue(Class<?> type) {
      return new ClassMapping(type);
    }
  };

  /** The mapping of a user class; TypeMismatchException for classes that cannot be mapped. */
  static ClassMapping of(Class<?> type) {
    if (!isUserClass(type)) {
      throw new TypeMismatchException("class " + type.getName() + " cannot be mapped to a shared class: only user"
          + " classes (not arrays, interfaces, enums, primitives or classes of java.*, javax.*, jdk.*, sun.*) can");
    }
    return CACHE.get(type);
  }

  /** True for classes whose instances copyToSharedMemory copies field by field (cached per class). */
  static boolean isUserClass(Class<?> c) {
    return USER_CLASS.get(c);
  }

  // Class.isAnonymousClass asks the JVM for the enclosing method each time: once per class here.
  private static final ClassValue<Boolean> USER_CLASS = new ClassValue<>() {
    @Override
    protected Boolean computeValue(Class<?> c) {
      return computeUserClass(c);
    }
  };

  private static boolean computeUserClass(Class<?> c) {
    if (c.isArray() || c.isInterface() || c.isPrimitive() || c.isEnum() || c.isAnonymousClass()
        || Modifier.isAbstract(c.getModifiers())) {
      return false;
    }
    String n = c.getName();
    return !(n.startsWith("java.") || n.startsWith("javax.") || n.startsWith("jdk.") || n.startsWith("sun.")
        || n.startsWith("com.sun.") || n.startsWith("org.colors."));
  }

  private ClassMapping(Class<?> type) {
    this.type = type;
    this.name = Mapped.sharedName(type);
    List<Class<?>> chain = new ArrayList<>();
    for (Class<?> c = type; c != null && c != Object.class && isMappableSuper(c); c = c.getSuperclass()) chain.add(c);
    Collections.reverse(chain);
    List<MappedField> fs = new ArrayList<>();
    Map<String, MappedField> by = new HashMap<>();
    // A class the agent binds routes the fields of the classes it binds to the shared object; a
    // field of a superclass it does not bind would keep its value in each Java object.
    boolean bound = SharedInstance.class.isAssignableFrom(type);
    if (bound) refuseUnsharableState(type, chain.isEmpty() ? Object.class : chain.get(0).getSuperclass());
    for (Class<?> c : chain) {
      for (Field f : c.getDeclaredFields()) {
        int m = f.getModifiers();
        if (Modifier.isStatic(m) || Modifier.isTransient(m) || f.isSynthetic()) continue;
        if (bound && !SharedInstance.class.isAssignableFrom(c)) {
          throw new TypeMismatchException("class " + type.getName() + " inherits field '" + f.getName() + "' from "
              + c.getName() + ", which the agent does not bind (neither @Shared nor in the agent's packages): the"
              + " field's value would stay in each Java object instead of being shared; annotate " + c.getName()
              + " with @Shared, or make the field static or transient");
        }
        if (by.containsKey(f.getName())) {
          throw new TypeMismatchException("class " + name + " has two fields named '" + f.getName()
              + "' (one hides the other): shared fields are identified by name");
        }
        f.setAccessible(true);
        MappedField mf = new MappedField(f, kindOf(f.getType()));
        fs.add(mf);
        by.put(mf.name, mf);
      }
    }
    this.fields = Collections.unmodifiableList(fs);
    this.byName = Collections.unmodifiableMap(by);
  }

  /**
   * Refuses a class the agent binds whose instances hold state no shared field can: the hidden
   * fields of an inner or local class (its enclosing instance {@code this$0}, captured variables),
   * and the instance fields of a JDK superclass ({@code jdkSuper} and above; {@code
   * java.awt.Point}'s x and y, {@code Throwable}'s message), which a bound instance would keep in
   * its own Java object, unshared and lost on the next read through another instance.
   */
  private static void refuseUnsharableState(Class<?> type, Class<?> jdkSuper) {
    for (Class<?> c = type; c != null && c != jdkSuper; c = c.getSuperclass()) {
      for (Field f : c.getDeclaredFields()) {
        int m = f.getModifiers();
        if (f.isSynthetic() && !Modifier.isStatic(m) && !Modifier.isTransient(m) && !f.getName().startsWith("$colors$")) {
          throw new TypeMismatchException("class " + type.getName() + " cannot be shared: " + c.getName()
              + " is an inner or local class, whose hidden field '" + f.getName() + "' (its enclosing instance or a"
              + " captured variable) shared memory cannot hold; make it a static nested or top-level class");
        }
      }
    }
    for (Class<?> c = jdkSuper; c != null && c != Object.class; c = c.getSuperclass()) {
      for (Field f : c.getDeclaredFields()) {
        int m = f.getModifiers();
        if (!Modifier.isStatic(m) && !Modifier.isTransient(m)) {
          throw new TypeMismatchException("class " + type.getName() + " cannot be shared: it inherits instance field '"
              + f.getName() + "' from " + c.getName() + ", a class of the JDK, whose fields the agent cannot bind;"
              + " hold such a value in a field instead of extending its class");
        }
      }
    }
  }

  private static boolean isMappableSuper(Class<?> c) {
    String n = c.getName();
    return !(n.startsWith("java.") || n.startsWith("javax.") || n.startsWith("jdk."));
  }

  /** The shared field type of a Java field type. */
  static SharedType.Kind kindOf(Class<?> t) {
    if (t == long.class || t == int.class || t == short.class || t == byte.class || t == char.class || t == Long.class
        || t == Integer.class || t == Short.class || t == Byte.class || t == Character.class) {
      return SharedType.Kind.INTEGER;
    }
    if (t == double.class || t == float.class || t == Double.class || t == Float.class) return SharedType.Kind.FLOAT;
    if (t == boolean.class || t == Boolean.class) return SharedType.Kind.BOOLEAN;
    if (t == String.class) return SharedType.Kind.STRING;
    if (t == byte[].class) return SharedType.Kind.BINARY;
    if (t.isArray() || t == List.class || t == Collection.class || t == SharedList.class
        || (List.class.isAssignableFrom(t) && !t.isInterface())) {
      return SharedType.Kind.LIST;
    }
    if (t == Set.class || t == SharedSet.class || (Set.class.isAssignableFrom(t) && !t.isInterface())) {
      return SharedType.Kind.SET;
    }
    if (java.util.SortedMap.class.isAssignableFrom(t)) return SharedType.Kind.SORTED_MAP;  // incl. SharedSortedMap
    if (t == Map.class || t == SharedMap.class || (Map.class.isAssignableFrom(t) && !t.isInterface())) {
      return SharedType.Kind.MAP;
    }
    if (t == SharedObject.class || isUserClass(t)) return SharedType.Kind.OBJECT;
    return SharedType.Kind.ANY;
  }

  /** The shared class version with exactly these fields (looked up or created once per attachment). */
  long sharedClass() {
    long gen = Native.generation();
    if (cachedGeneration == gen) return cachedClass;
    String[] names = new String[fields.size()];
    int[] kinds = new int[fields.size()];
    String[] classNames = new String[fields.size()];
    for (int i = 0; i < names.length; i++) {
      names[i] = fields.get(i).name;
      kinds[i] = fields.get(i).kind.code;
      classNames[i] = "";
    }
    long cls = Native.defineClass(name, names, kinds, classNames);
    cachedClass = cls;
    cachedGeneration = gen;
    return cls;
  }

  /** A new shared object of this class, its primitive fields set to Java's defaults (0, false). */
  SharedObject allocate() {
    SharedObject o = Proxies.viewOf(Native.newObject(sharedClass()));
    for (MappedField f : fields) {
      Object zero = zeroOf(f.field.getType());
      if (zero != null) o.set(f.name, zero);
    }
    return o;
  }

  static Object zeroOf(Class<?> t) {
    if (!t.isPrimitive()) return null;
    if (t == boolean.class) return Boolean.FALSE;
    if (t == double.class || t == float.class) return 0.0;
    return 0L;
  }

  /** A new private instance with Java's default values (no-argument constructor; records: later). */
  Object newPrivateInstance() {
    if (type.isRecord()) return null;
    try {
      Constructor<?> c = type.getDeclaredConstructor();
      c.setAccessible(true);
      return c.newInstance();
    } catch (NoSuchMethodException e) {
      throw new TypeMismatchException("class " + name + " needs a no-argument constructor (any access) to be read"
          + " from shared memory into a private instance");
    } catch (ReflectiveOperationException e) {
      throw new SharedMemoryException("cannot create an instance of " + name + ": " + e, e);
    }
  }

  /** Creates a record from its component values read by name (missing ones: defaults). */
  Object newRecord(Map<String, Object> values) {
    RecordComponent[] rc = type.getRecordComponents();
    Class<?>[] types = new Class<?>[rc.length];
    Object[] args = new Object[rc.length];
    for (int i = 0; i < rc.length; i++) {
      types[i] = rc[i].getType();
      args[i] = values.containsKey(rc[i].getName()) ? values.get(rc[i].getName()) : zeroOfBoxed(types[i]);
    }
    try {
      Constructor<?> c = type.getDeclaredConstructor(types);
      c.setAccessible(true);
      return c.newInstance(args);
    } catch (ReflectiveOperationException e) {
      throw new SharedMemoryException("cannot create the record " + name + ": " + e, e);
    }
  }

  private static Object zeroOfBoxed(Class<?> t) {
    if (!t.isPrimitive()) return null;
    if (t == boolean.class) return false;
    if (t == char.class) return (char) 0;
    if (t == byte.class) return (byte) 0;
    if (t == short.class) return (short) 0;
    if (t == int.class) return 0;
    if (t == long.class) return 0L;
    if (t == float.class) return 0f;
    return 0.0;
  }

  /** Field values of an instance, in field order. */
  Object[] read(Object instance) {
    Object[] v = new Object[fields.size()];
    try {
      for (int i = 0; i < v.length; i++) v[i] = fields.get(i).field.get(instance);
    } catch (IllegalAccessException e) {
      throw new SharedMemoryException("cannot read the fields of " + name + ": " + e, e);
    }
    return v;
  }

  static LinkedHashMap<String, Object> newValues() {
    return new LinkedHashMap<>();
  }
}
