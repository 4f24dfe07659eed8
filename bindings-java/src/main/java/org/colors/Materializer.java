package org.colors;

import java.lang.reflect.Array;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads shared user objects into private instances of their Java classes
 * ({@link SharedObject#toPrivate(Class)}, {@link SharedObject#readInto(Object)}), through the
 * {@link ClassMapping} of the Java class: each Java field takes the shared field of the same name,
 * converted with the checks of the typed reads; Java fields the shared version lacks keep their
 * value, shared fields the Java class lacks are ignored (they stay in the shared object).
 *
 * <p>Nested shared objects become private instances too: of the Java class named like their
 * shared class if there is one that fits the field, else of the field's type if it is a user
 * class, else they stay {@link SharedObject} views (fields of type Object or SharedObject). Sharing and cycles are
 * preserved (a memo by shared address; classes are filled iteratively, records are built when read). Shared
 * containers stay live proxies where the field type allows it ({@code List}, {@code Map},
 * {@code Set}, {@code Collection}, {@code Object}); fields of concrete types ({@code ArrayList},
 * arrays, ...) get private copies.
 */
final class Materializer {
  /**
   * What each shared object read so far became, by its address: one object may be reached through
   * several proxies (a transient one for the root of an rpc argument, the cached one when a field
   * leads back to it), and keyed by proxy a cycle back to the root made a second copy.
   */
  private final java.util.HashMap<Long, Object> memo = new java.util.HashMap<>();
  private final List<Object[]> work = new ArrayList<>();
  private final ClassLoader loader;
  private final Set<Long> building = new java.util.HashSet<>();

  Materializer(ClassLoader loader) {
    this.loader = loader;
  }

  Object run(SharedObject root, Class<?> type) {
    Object result = instanceFor(root, type);
    drain();
    return result;
  }

  void readInto(SharedObject so, Object target) {
    memo.put(so.handle.raw, target);
    fill(so, target, ClassMapping.of(target.getClass()));
    drain();
  }

  private void drain() {
    while (!work.isEmpty()) {
      Object[] item = work.remove(work.size() - 1);
      fill((SharedObject) item[0], item[1], (ClassMapping) item[2]);
    }
  }

  /**
   * The Java class for a shared object: the Java class named like its shared class if there is
   * one that fits the declared type, else the declared type if it is a user class, else none.
   */
  private Class<?> javaClassFor(SharedObject so, Class<?> declared) {
    if (declared == SharedObject.class) return null;
    Class<?> c = ClassesByName.find(so.className(), loader);
    if (c != null && ClassMapping.isUserClass(c) && declared.isAssignableFrom(c)) return c;
    return ClassMapping.isUserClass(declared) ? declared : null;
  }

  private Object instanceFor(SharedObject so, Class<?> declared) {
    Object found = memo.get(so.handle.raw);
    if (found != null) {
      if (!declared.isInstance(found)) {
        throw new TypeMismatchException("the shared " + so.className() + " object was read as a "
            + found.getClass().getName() + ", which does not fit a " + declared.getName() + " field");
      }
      return found;
    }
    Class<?> c = javaClassFor(so, declared);
    if (c == null) {
      if (declared.isInstance(so)) return so;
      throw new TypeMismatchException("a shared " + so.className() + " object cannot be read as a " + declared.getName()
          + " (no Java class named " + so.className() + " that is one)");
    }
    ClassMapping m = ClassMapping.of(c);
    if (c.isRecord()) {
      if (!building.add(so.handle.raw)) {
        throw new TypeMismatchException("the shared " + so.className() + " object refers back to itself through"
            + " record components: a cycle through records cannot be read into private records");
      }
      Map<String, Object> values = new LinkedHashMap<>();
      for (ClassMapping.MappedField f : m.fields) {
        if (so.hasField(f.name)) values.put(f.name, toJava(so.get(f.name), f.field.getType(), where(so, f.name)));
      }
      Object r = m.newRecord(values);
      building.remove(so.handle.raw);
      memo.put(so.handle.raw, r);
      return r;
    }
    Object inst = m.newPrivateInstance();
    memo.put(so.handle.raw, inst);
    work.add(new Object[] {so, inst, m});
    return inst;
  }

  private static String where(SharedObject so, String field) {
    return "field '" + field + "' of the shared " + so.className();
  }

  private void fill(SharedObject so, Object target, ClassMapping m) {
    if (target.getClass().isRecord()) {
      throw new TypeMismatchException("records are immutable: read them with toPrivate(Class), not readInto");
    }
    for (ClassMapping.MappedField f : m.fields) {
      if (!so.hasField(f.name)) continue;  // a Java field the shared version lacks keeps its value
      Object v = toJava(so.get(f.name), f.field.getType(), where(so, f.name));
      if (v == null && f.field.getType().isPrimitive()) continue;  // shared null: Java's default stays
      try {
        f.field.set(target, v);
      } catch (IllegalAccessException e) {
        throw new SharedMemoryException("cannot write field " + f.name + " of " + m.name + ": " + e, e);
      }
    }
  }

  /** A value read from shared memory as a value of Java type {@code t} (arrays: private copies). */
  Object javaValue(Object v, Class<?> t, String where) {
    Object r = toJava(v, t, where);
    drain();
    return r;
  }

  /** A value read from shared memory, as a value of Java type {@code t}. */
  private Object toJava(Object v, Class<?> t, String where) {
    if (v == null) return null;
    SharedObject so = Proxies.viewOf(v);  // a view, or an instance bound by the agent: copied
    if (so != null) return instanceFor(so, t);
    if (t.isArray() && t != byte[].class && v instanceof SharedList) {
      Object[] items = ((SharedList) v).toArray();
      Class<?> ct = t.getComponentType();
      Object arr = Array.newInstance(ct, items.length);
      for (int i = 0; i < items.length; i++) {
        Object x = toJava(items[i], ct, where + " element " + i);
        if (x == null && ct.isPrimitive()) throw Codec.mismatch(null, ct.getName(), where + " element " + i);
        Array.set(arr, i, x);
      }
      return arr;
    }
    if (v instanceof SharedList && !t.isInstance(v) && t.isAssignableFrom(ArrayList.class)) {
      return new ArrayList<>((Collection<?>) v);
    }
    if (v instanceof SharedMap && !t.isInstance(v) && t.isAssignableFrom(HashMap.class)) {
      return new HashMap<>((Map<?, ?>) v);
    }
    if (v instanceof SharedSet && !t.isInstance(v) && t.isAssignableFrom(HashSet.class)) {
      return new HashSet<>((Set<?>) v);
    }
    return Codec.convert(v, t, where);
  }
}
