package org.colors;

import java.lang.reflect.Array;
import java.util.ArrayDeque;
import java.util.Collection;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The deep copy of {@link SharedMemory#copyToSharedMemory(Object)}: each private container gets
 * its (empty) shared copy when first met, is memoised by identity and queued; queued containers are
 * then filled. Sharing and cycles of the private graph are preserved, and deep graphs need no
 * recursion. The memo holds the proxies, so everything copied so far stays rooted. Instances of
 * user classes become shared objects of their {@link ClassMapping} (fields by name).
 */
final class Copier {
  private final IdentityHashMap<Object, Object> memo = new IdentityHashMap<>();
  private final ArrayDeque<Object[]> work = new ArrayDeque<>();

  Object run(Object root) {
    Object result = convert(root);
    while (!work.isEmpty()) {
      Object[] item = work.pop();
      fill(item[0], item[1]);
    }
    if (Codec.tagOrNone(result) == Codec.REF) return result;
    return SharedMemory.roundTrip(result);  // a scalar root: the value as it reads back
  }

  /** The storable value standing for {@code x}: x itself for scalars and proxies, else the copy. */
  private Object convert(Object x) {
    int t = Codec.tagOrNone(x);
    if (t != Codec.NONE) return x;
    Object found = memo.get(x);
    if (found != null) return found;
    int kind;
    int n;
    if (x instanceof Set) {
      kind = Proxies.SET;
      n = ((Set<?>) x).size();
    } else if (x instanceof Collection) {
      kind = Proxies.LIST;
      n = ((Collection<?>) x).size();
    } else if (x instanceof java.util.SortedMap) {
      kind = Proxies.SORTED_MAP;
      n = 0;
    } else if (x instanceof Map) {
      kind = Proxies.MAP;
      n = ((Map<?, ?>) x).size();
    } else if (x.getClass().isArray()) {
      kind = Proxies.LIST;
      n = Array.getLength(x);
    } else if (ClassMapping.isUserClass(x.getClass())) {
      Object made = Native.newObject(ClassMapping.of(x.getClass()).sharedClass());  // a view or a bound instance
      memo.put(x, made);
      work.push(new Object[] {x, Proxies.viewOf(made)});
      return made;
    } else {
      throw new TypeMismatchException("copyToSharedMemory(): cannot copy an object of class " + x.getClass().getName()
          + " to shared memory: supported are null, Boolean, Byte, Short, Integer, Long, Character, Float, Double,"
          + " String, byte[], arrays, Collections (Lists, Sets, ...), Maps, instances of user classes and shared"
          + " objects");
    }
    Object shared = kind == Proxies.SORTED_MAP ? SortedNative.newMap() : Native.newContainer(kind, n);
    memo.put(x, shared);
    work.push(new Object[] {x, shared});
    return shared;
  }

  /**
   * Copies the mapped fields of a user instance into a shared object (SharedObject.writeFrom), all
   * or none: the copies of private values are made and filled first (new objects nothing else can
   * reach yet), then one native call checks every value against its field before it stores any
   * ({@link Native#objSetFields}). A value that does not fit leaves {@code so} as it was.
   */
  void writeObject(Object x, SharedObject so) {
    memo.put(x, so);
    ClassMapping m = ClassMapping.of(x.getClass());
    Object[] values = m.read(x);
    for (int i = 0; i < values.length; i++) values[i] = convert(values[i]);
    while (!work.isEmpty()) {
      Object[] item = work.pop();
      fill(item[0], item[1]);
    }
    int n = values.length;
    String[] names = new String[n];
    int[] tags = new int[n], kinds = new int[n];
    long[] bits = new long[n];
    Object[] objs = new Object[n];
    for (int i = 0; i < n; i++) {
      ClassMapping.MappedField f = m.fields.get(i);
      names[i] = f.name;
      kinds[i] = f.kind.code;
      tags[i] = Codec.tag(values[i]);
      bits[i] = Codec.bits(values[i], tags[i]);
      objs[i] = Codec.obj(values[i], tags[i]);
    }
    Native.objSetFields(so.handle, names, tags, bits, objs, kinds);
  }

  private void fill(Object x, Object shared) {
    if (shared instanceof SharedObject) {
      SharedObject so = (SharedObject) shared;
      ClassMapping m = ClassMapping.of(x.getClass());
      Object[] values = m.read(x);
      for (int i = 0; i < values.length; i++) {
        ClassMapping.MappedField f = m.fields.get(i);
        Object v = convert(values[i]);
        // A field the object's shared version lacks is added to it (a new version; it does not move).
        if (!so.hasField(f.name)) so.addField(f.name, f.kind);
        so.set(f.name, v);
      }
    } else if (x instanceof java.util.SortedMap) {
      SharedSortedMap m = (SharedSortedMap) shared;
      Object[] entries = ((Map<?, ?>) x).entrySet().toArray();  // snapshot
      for (Object o : entries) {
        Map.Entry<?, ?> e = (Map.Entry<?, ?>) o;
        Object k = convert(e.getKey());
        m.put(k, convert(e.getValue()));
      }
    } else if (x instanceof Map) {
      SharedMap m = (SharedMap) shared;
      Object[] entries = ((Map<?, ?>) x).entrySet().toArray();  // snapshot
      for (Object o : entries) {
        Map.Entry<?, ?> e = (Map.Entry<?, ?>) o;
        Object k = convert(e.getKey());
        m.put(k, convert(e.getValue()));
      }
    } else if (x instanceof Set) {
      SharedSet s = (SharedSet) shared;
      for (Object o : ((Set<?>) x).toArray()) s.add(convert(o));
    } else if (x instanceof Collection) {
      SharedList l = (SharedList) shared;
      for (Object o : ((Collection<?>) x).toArray()) l.add(convert(o));
    } else {
      SharedList l = (SharedList) shared;
      int n = Array.getLength(x);
      if (x instanceof Object[]) {
        Object[] a = (Object[]) x;
        for (int i = 0; i < n; i++) l.add(convert(a[i]));
      } else {
        for (int i = 0; i < n; i++) l.add(Array.get(x, i));  // primitives: boxed scalars
      }
    }
  }
}
