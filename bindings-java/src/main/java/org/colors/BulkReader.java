package org.colors;

import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * {@link SharedObject#toPrivate(Class)} (and the rpc's {@code @ByValue} arrays and lists) from one
 * native call: {@code Bulk.flatten} (jni_bulk.cpp) returns the shared graph reachable from the
 * root — user objects and lists numbered in the order met, their values, strings as UTF-8 bytes —
 * and this class builds the private instances with {@link Materializer}'s semantics: Java class
 * by shared class name if it fits the declared type, else the declared user class; fields by name
 * with the checks of the typed reads; Java fields the version lacks keep their constructor value;
 * a shared null leaves a primitive field at its default; sharing and cycles preserved (memo per
 * object number); lists read into array-typed fields become private arrays.
 *
 * <p>Two passes, so that nothing runs a constructor unless the whole graph can be built: pass A
 * assigns each reached object its Java class in Materializer's order and checks every value
 * conversion; pass B runs the no-argument constructors (in the order Materializer would) and
 * writes the fields through {@link FieldAccess}. A graph this reader does not cover — a shared
 * object that would stay a {@link SharedObject} view, a list that would stay a live proxy or
 * become an {@code ArrayList} of proxies, records, any failing conversion — makes {@link #FALLBACK}
 * come back and the caller runs {@link Materializer}, which gives its result or its exception.
 */
final class BulkReader {
  /** Returned when the Materializer must run. */
  static final Object FALLBACK = new Object();

  private static final ClassValue<Constructor<?>> CONSTRUCTORS = new ClassValue<>() {
    @Override
    protected Constructor<?> computeValue(Class<?> type) {
      try {
        Constructor<?> c = type.getDeclaredConstructor();
        c.setAccessible(true);
        return c;
      } catch (NoSuchMethodException | RuntimeException e) {
        return null;
      }
    }
  };

  private final ClassLoader loader;
  private final byte[] tags;
  private final long[] vals;
  private final int[] starts;
  private final byte[] blob;
  private final Object[] proxies;
  private final Class<?>[] assigned;
  private final Object[] inst;
  private final boolean[] inArray;  // lists being checked as arrays (a list inside itself)
  private final int[] assignOrder;
  private int nassign;
  private final int[] fillOrder;
  private int nfill;
  private final int[] work;  // each object is assigned, pushed and filled at most once: n suffice
  private int nwork;
  private final HashMap<Long, Object[]> plans = new HashMap<>();

  private BulkReader(ClassLoader loader, Object[] flat) {
    this.loader = loader;
    tags = (byte[]) flat[0];
    vals = (long[]) flat[1];
    starts = (int[]) flat[2];
    blob = (byte[]) flat[3];
    proxies = (Object[]) flat[4];
    int n = starts.length;
    assigned = new Class<?>[n];
    inst = new Object[n];
    inArray = new boolean[n];
    assignOrder = new int[n];
    fillOrder = new int[n];
    work = new int[n];
  }

  /** The private copy of a shared user object as {@code type}, or {@link #FALLBACK}. */
  static Object toPrivate(SharedObject so, Class<?> type) {
    BulkReader r = new BulkReader(type.getClassLoader(), Bulk.flatten(so.handle));
    if (!r.planObject(0, type) || !r.drainPlan()) return FALLBACK;
    r.build();
    Bulk.READS.incrementAndGet();
    return r.inst[0];
  }

  /**
   * The private array copy of a shared list as {@code arrayType} (elements as Materializer reads
   * array elements), or {@link #FALLBACK}.
   */
  static Object toPrivateArray(SharedList list, Class<?> arrayType) {
    Class<?> ct = arrayType.getComponentType();
    BulkReader r = new BulkReader(loaderOf(arrayType), Bulk.flatten(list.handle));
    if (!r.planArray(0, ct, 0) || !r.drainPlan()) return FALLBACK;
    r.build();
    Bulk.READS.incrementAndGet();
    return r.array(0, ct);
  }

  private static ClassLoader loaderOf(Class<?> arrayType) {
    Class<?> c = arrayType;
    while (c.isArray()) c = c.getComponentType();
    return c.getClassLoader();
  }

  // ---- pass A: classes and checks ----

  private boolean planObject(int id, Class<?> declared) {
    Class<?> found = assigned[id];
    if (found != null) return declared.isAssignableFrom(found);
    if (tags[starts[id]] != Codec.USER) return false;
    Class<?> c = javaClassFor(id, declared);
    if (c == null) return false;
    if (c != lastChecked) {
      if (c.isRecord() || CONSTRUCTORS.get(c) == null) return false;
      try {
        FieldAccess.of(c);
      } catch (RuntimeException e) {
        return false;
      }
      lastChecked = c;
    }
    assigned[id] = c;
    assignOrder[nassign++] = id;
    work[nwork++] = id;
    return true;
  }

  // Per-call caches of the last class seen (most graphs have one or a few classes).
  private Class<?> lastChecked;
  private Class<?> lastAccessClass;
  private FieldAccess lastAccess;

  private FieldAccess access(Class<?> c) {
    if (c != lastAccessClass) {
      lastAccess = FieldAccess.of(c);
      lastAccessClass = c;
    }
    return lastAccess;
  }

  // The last answer of javaClassFor: most objects of a graph share their class and declared type.
  private long lastCls;
  private Class<?> lastDeclared;
  private Class<?> lastClass;

  private Class<?> javaClassFor(int id, Class<?> declared) {
    long cls = vals[starts[id]];
    if (cls == lastCls && declared == lastDeclared) return lastClass;
    Class<?> c = javaClassByName(cls, declared);
    lastCls = cls;
    lastDeclared = declared;
    lastClass = c;
    return c;
  }

  private Class<?> javaClassByName(long cls, Class<?> declared) {
    if (declared == SharedObject.class) return null;
    Class<?> c = ClassesByName.find(Bulk.info(cls).name, loader);
    if (c != null && ClassMapping.isUserClass(c) && declared.isAssignableFrom(c)) return c;
    return ClassMapping.isUserClass(declared) ? declared : null;
  }

  /** Record field index of each mapped field of {@code c} in object id's class version (-1: absent). */
  private long lastPlanCls;
  private Class<?> lastPlanClass;
  private int[] lastPlan;

  private int[] plan(int id, Class<?> c) {
    long cls = vals[starts[id]];
    if (cls == lastPlanCls && c == lastPlanClass) return lastPlan;
    int[] idx = planOf(cls, c);
    lastPlanCls = cls;
    lastPlanClass = c;
    lastPlan = idx;
    return idx;
  }

  private int[] planOf(long cls, Class<?> c) {
    Object[] p = plans.get(cls);
    if (p != null && p[0] == c) return (int[]) p[1];
    Bulk.SharedClassInfo info = Bulk.info(cls);
    FieldAccess a = FieldAccess.of(c);
    int[] idx = new int[a.fields.length];
    for (int i = 0; i < idx.length; i++) idx[i] = info.indexOf(a.mapping.fields.get(i).name);
    if (p == null) plans.put(cls, new Object[] {c, idx});
    return idx;
  }

  private boolean drainPlan() {
    while (nwork > 0) {
      int id = work[--nwork];
      fillOrder[nfill++] = id;
      Class<?> c = assigned[id];
      FieldAccess a = access(c);
      int[] idx = plan(id, c);
      int base = starts[id] + 1;
      for (int i = 0; i < idx.length; i++) {
        if (idx[i] < 0) continue;
        if (!accepts(base + idx[i], a.types[i], a.conv[i], 0)) return false;
      }
    }
    return true;
  }

  /** Whether value v converts to t, whose conversion is conv (Materializer.toJava without its exceptions). */
  private boolean accepts(int v, Class<?> t, byte conv, int depth) {
    byte tag = tags[v];
    long x = vals[v];
    switch (tag) {
      case Codec.NULL: return true;
      case Codec.STRING:
        if (conv == FieldAccess.C_STRING) return true;
        return acceptsScalar(tag, x, t);
      case Codec.INT:
        if (conv == FieldAccess.C_LONG) return true;
        return acceptsScalar(tag, x, t);
      case Codec.FLOAT:
        if (conv == FieldAccess.C_DOUBLE) return true;
        return acceptsScalar(tag, x, t);
      case Codec.BOOL:
        if (conv == FieldAccess.C_BOOLEAN) return true;
        return acceptsScalar(tag, x, t);
      case Codec.OBJ: {
        int id = (int) x;
        if (tags[starts[id]] == Codec.USER) return planObject(id, t);
        return t.isArray() && t != byte[].class && planArray(id, t.getComponentType(), depth + 1);
      }
      case Codec.PROXY: {
        Object p = proxies[(int) x];
        return t.isInstance(p) || (p instanceof SharedMap && t.isAssignableFrom(HashMap.class))
            || (p instanceof SharedSet && t.isAssignableFrom(HashSet.class));
      }
      default: return acceptsScalar(tag, x, t);
    }
  }

  /** Codec.convert's rules for a non-null scalar. */
  private static boolean acceptsScalar(byte tag, long x, Class<?> t) {
    if (t == Object.class) return true;
    if (t == long.class || t == Long.class) return tag == Codec.INT;
    if (t == int.class || t == Integer.class) return tag == Codec.INT && x >= Integer.MIN_VALUE && x <= Integer.MAX_VALUE;
    if (t == short.class || t == Short.class) return tag == Codec.INT && x >= Short.MIN_VALUE && x <= Short.MAX_VALUE;
    if (t == byte.class || t == Byte.class) return tag == Codec.INT && x >= Byte.MIN_VALUE && x <= Byte.MAX_VALUE;
    if (t == char.class || t == Character.class) return tag == Codec.INT && x >= 0 && x <= Character.MAX_VALUE;
    if (t == double.class || t == Double.class) return tag == Codec.FLOAT || (tag == Codec.INT && exactDouble(x));
    if (t == float.class || t == Float.class) {
      if (tag == Codec.INT) return exactDouble(x) && floatFits((double) x);
      return tag == Codec.FLOAT && floatFits(Double.longBitsToDouble(x));
    }
    if (t == boolean.class || t == Boolean.class) return tag == Codec.BOOL;
    switch (tag) {
      case Codec.INT: return t.isAssignableFrom(Long.class);
      case Codec.FLOAT: return t.isAssignableFrom(Double.class);
      case Codec.BOOL: return t.isAssignableFrom(Boolean.class);
      case Codec.STRING: return t.isAssignableFrom(String.class);
      case Codec.BINARY: return t.isAssignableFrom(byte[].class);
      default: return false;
    }
  }

  private static boolean exactDouble(long x) {
    double d = (double) x;
    return !(d >= 0x1p63 || (long) d != x);
  }

  private static boolean floatFits(double d) {
    float f = (float) d;
    return !(Float.isInfinite(f) && !Double.isInfinite(d)) && !(f == 0.0f && d != 0.0);
  }

  private boolean planArray(int id, Class<?> ct, int depth) {
    if (tags[starts[id]] != Codec.LIST || inArray[id] || depth > 256) return false;  // deeper: Materializer recurses
    inArray[id] = true;
    int n = (int) vals[starts[id]];
    int base = starts[id] + 1;
    byte conv = FieldAccess.convOf(ct);
    for (int i = 0; i < n; i++) {
      if (tags[base + i] == Codec.NULL ? ct.isPrimitive() : !accepts(base + i, ct, conv, depth)) {
        inArray[id] = false;
        return false;
      }
    }
    inArray[id] = false;
    return true;
  }

  // ---- pass B: instances and fields ----

  private void build() {
    Class<?> lastClass = null;
    Constructor<?> ctor = null;
    for (int k = 0; k < nassign; k++) {
      int id = assignOrder[k];
      Class<?> c = assigned[id];
      if (c != lastClass) {
        ctor = CONSTRUCTORS.get(c);
        lastClass = c;
      }
      try {
        inst[id] = ctor.newInstance();
      } catch (ReflectiveOperationException e) {
        Throwable cause = e instanceof java.lang.reflect.InvocationTargetException ? e.getCause() : e;
        if (cause instanceof RuntimeException) throw (RuntimeException) cause;
        throw new SharedMemoryException("cannot create an instance of " + Mapped.sharedName(c) + ": " + e, e);
      }
    }
    for (int k = 0; k < nfill; k++) fill(fillOrder[k]);
  }

  private void fill(int id) {
    Object o = inst[id];
    Class<?> c = assigned[id];
    FieldAccess a = access(c);
    int[] idx = plan(id, c);
    int base = starts[id] + 1;
    for (int i = 0; i < idx.length; i++) {
      if (idx[i] < 0) continue;
      int v = base + idx[i];
      byte tag = tags[v];
      long x = vals[v];
      switch (a.prim[i]) {
        case FieldAccess.REF:
          if (tag == Codec.NULL) {
            a.setRef(o, i, null);
          } else if (tag == Codec.OBJ && tags[starts[(int) x]] == Codec.USER) {
            a.setRef(o, i, inst[(int) x]);
          } else if (tag == Codec.STRING && a.conv[i] == FieldAccess.C_STRING) {
            a.setRef(o, i, string(x));
          } else {
            a.setRef(o, i, value(v, a.types[i]));
          }
          break;
        case FieldAccess.DOUBLE:
        case FieldAccess.FLOAT:
          if (tag == Codec.NULL) break;
          a.setReal(o, i, tag == Codec.INT ? (double) x : Double.longBitsToDouble(x));
          break;
        case FieldAccess.BOOLEAN:
          if (tag == Codec.NULL) break;
          a.setBoolean(o, i, x != 0);
          break;
        default:
          if (tag == Codec.NULL) break;
          a.setIntegral(o, i, x);
      }
    }
  }

  /** Value v as a Java value of type t (checked in pass A). */
  private Object value(int v, Class<?> t) {
    byte tag = tags[v];
    long x = vals[v];
    switch (tag) {
      case Codec.NULL: return null;
      case Codec.OBJ: {
        int id = (int) x;
        return tags[starts[id]] == Codec.USER ? inst[id] : array(id, t.getComponentType());
      }
      case Codec.PROXY: {
        Object p = proxies[(int) x];
        if (p instanceof SharedMap && !t.isInstance(p) && t.isAssignableFrom(HashMap.class)) {
          return new HashMap<>((Map<?, ?>) p);
        }
        if (p instanceof SharedSet && !t.isInstance(p) && t.isAssignableFrom(HashSet.class)) {
          return new HashSet<>((Set<?>) p);
        }
        return p;
      }
      case Codec.INT: return Codec.convert(x, t, "a value");
      case Codec.FLOAT: return Codec.convert(Double.longBitsToDouble(x), t, "a value");
      case Codec.BOOL: return Codec.convert(x != 0, t, "a value");
      case Codec.STRING: return string(x);
      case Codec.BINARY: {
        int off = (int) (x >>> 32);
        return Arrays.copyOfRange(blob, off, off + (int) x);
      }
      default: throw new IllegalStateException("bad bulk tag " + tag);
    }
  }

  /** The string at blob offset x >>> 32, (int) x bytes of UTF-8. */
  private String string(long x) {
    return new String(blob, (int) (x >>> 32), (int) x, StandardCharsets.UTF_8);
  }

  /** List id as a new array of component ct (one per occurrence, as Materializer makes them). */
  private Object array(int id, Class<?> ct) {
    int n = (int) vals[starts[id]];
    int base = starts[id] + 1;
    Object arr = Array.newInstance(ct, n);
    for (int i = 0; i < n; i++) Array.set(arr, i, value(base + i, ct));
    return arr;
  }
}
