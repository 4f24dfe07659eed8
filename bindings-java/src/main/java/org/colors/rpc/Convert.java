package org.colors.rpc;

import java.lang.reflect.Array;
import java.lang.reflect.GenericArrayType;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.lang.reflect.WildcardType;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.colors.RpcSupport;
import org.colors.SharedList;
import org.colors.SharedMemory;
import org.colors.SharedObject;
import org.colors.TypeMismatchException;

/**
 * Conversions of values read from shared memory to declared Java types (server parameters, proxy
 * results), resolved once per type into a {@link Conv}. Numbers narrow with the checks of the
 * binding's typed reads (overflow raises, never truncates); lists convert to arrays; shared objects
 * to private instances of user classes; everything else must be an instance of the type (shared
 * lists, maps and sets are {@code List}, {@code Map}, {@code Set}).
 */
final class Convert {
  private Convert() {}

  /** A conversion to one type. */
  interface Conv {
    Object apply(Object v, String where);
  }

  static final Conv IDENTITY = (v, where) -> v;

  static Conv to(Class<?> type) {
    if (type == Object.class) return IDENTITY;
    if (type == int[].class) return (v, w) -> v instanceof SharedList ? ((SharedList) v).toIntArray() : check(v, type, w);
    if (type == long[].class) {
      return (v, w) -> v instanceof SharedList ? ((SharedList) v).toLongArray() : check(v, type, w);
    }
    if (type == double[].class) {
      return (v, w) -> v instanceof SharedList ? ((SharedList) v).toDoubleArray() : check(v, type, w);
    }
    if (type == boolean[].class) {
      return (v, w) -> v instanceof SharedList ? ((SharedList) v).toBooleanArray() : check(v, type, w);
    }
    if (type == String[].class) {
      return (v, w) -> v instanceof SharedList ? ((SharedList) v).toStringArray() : check(v, type, w);
    }
    if (type.isArray() && type != byte[].class) {
      Class<?> ct = type.getComponentType();
      if (ct.isPrimitive()) {
        return (v, w) -> {
          if (!(v instanceof SharedList)) return check(v, type, w);
          Object[] items = ((SharedList) v).toArray();
          Object a = Array.newInstance(ct, items.length);
          for (int i = 0; i < items.length; i++) Array.set(a, i, RpcSupport.convert(items[i], ct, w + "[" + i + "]"));
          return a;
        };
      }
      Conv elem = to(ct);
      return (v, w) -> {
        if (!(v instanceof SharedList)) return check(v, type, w);
        Object[] items = ((SharedList) v).toArray();
        Object[] a = (Object[]) Array.newInstance(ct, items.length);
        for (int i = 0; i < items.length; i++) a[i] = elem.apply(items[i], w + "[" + i + "]");
        return a;
      };
    }
    if (RpcSupport.isUserClass(type)) {
      return (v, w) -> v instanceof SharedObject ? ((SharedObject) v).toPrivate(type) : check(v, type, w);
    }
    return (v, w) -> RpcSupport.convert(v, type, w);
  }

  /**
   * Whether {@link #to}'s conversion to {@code type} reads a shared argument into a private value
   * without handing the argument's own proxy on: arrays (the elements may be proxies of their own).
   */
  static boolean consumes(Class<?> type) {
    return type.isArray() && type != byte[].class;
  }

  /**
   * The conversion of a {@link ByValue} parameter of type {@code type} (generic type
   * {@code generic}): private deep copies of the shared argument.
   *
   * @throws IllegalArgumentException for a type {@code @ByValue} does not apply to
   */
  static Conv byValue(Class<?> type, Type generic, String where) {
    if (type.isArray() && !type.getComponentType().isPrimitive()) {
      return (v, w) -> v instanceof SharedList ? RpcSupport.toPrivateArray(v, type, w) : check(v, type, w);
    }
    if (type == List.class || type == Collection.class || type == ArrayList.class) {
      Class<?> elem = Object.class;
      if (generic instanceof ParameterizedType) {
        Type a = ((ParameterizedType) generic).getActualTypeArguments()[0];
        if (a instanceof Class) elem = (Class<?>) a;
        else if (a instanceof ParameterizedType) elem = (Class<?>) ((ParameterizedType) a).getRawType();
        else if (a instanceof GenericArrayType || a instanceof WildcardType || a instanceof TypeVariable) elem = Object.class;
      }
      Class<?> arrayType = Array.newInstance(elem, 0).getClass();
      return (v, w) -> {
        if (!(v instanceof SharedList)) return check(v, type, w);
        return new ArrayList<>(Arrays.asList((Object[]) RpcSupport.toPrivateArray(v, arrayType, w)));
      };
    }
    if (RpcSupport.isUserClass(type)) {
      return (v, w) -> {
        Object p = RpcSupport.toPrivate(v, type);
        return p != null ? p : check(v, type, w);
      };
    }
    throw new IllegalArgumentException("@ByValue applies to parameters of type T[], List<T>, Collection<T>, ArrayList<T>"
        + " or a user class T; " + where + " is a " + generic.getTypeName());
  }

  private static Object check(Object v, Class<?> type, String where) {
    if (v == null) return null;
    if (type.isInstance(v)) return v;
    throw new TypeMismatchException(where + " is a " + v.getClass().getName() + ", not a " + type.getTypeName());
  }

  /**
   * Replies with {@code result} on worker {@code w}: stored values as they are, private lists of
   * scalars and strings (string arrays included) built natively in one call from the flat
   * encoding, anything else through {@code copyToSharedMemory} (one native call too when the bulk
   * copy covers the graph).
   */
  static void reply(long w, Object result) {
    int tag = RpcSupport.tagOrNone(result);
    if (tag == RpcSupport.NONE) {
      Enc e = Enc.get();
      if (e.encode(new Object[] {result})) {
        try {
          RpcNative.workerReplyFlat(w, e.n, e.tags, e.bits, e.objs, e.blob);
        } finally {
          e.clear();
        }
        return;
      }
      // User objects and nested lists: one native call that replies too. No proxy of the reply
      // is made, which would keep its root until the JVM's next collection.
      if (RpcSupport.replyWithCopy(w, result)) return;
      result = SharedMemory.copyToSharedMemory(result);  // what the bulk copy does not cover
      tag = RpcSupport.tagOrNone(result);
    }
    RpcNative.workerReply(w, tag, RpcSupport.bits(result, tag), RpcSupport.obj(result, tag));
  }

  /**
   * The shared list of a call's arguments: one {@code copyToSharedMemory} over all of them, so
   * that objects shared between arguments stay shared; null (an empty list) for no arguments.
   */
  static Object argsHandle(Object[] args) {
    if (args == null || args.length == 0) return null;
    return RpcSupport.handleOf(SharedMemory.copyToSharedMemory(args));
  }

  /**
   * The flat encoding of a private value tree for one native call (jni_rpc.cpp decode_flat): in
   * prefix order, each scalar, binary or proxy as its (tag, bits, obj) triple, each string as
   * {@link #UTF8} with {@code offset << 32 | length} of its UTF-8 bytes in {@link #blob} (one byte
   * array for all strings, read by the native at once instead of one JNI string read per string),
   * and each private list (a non-set {@code Collection} or an array) as {@link #LIST} with its
   * length, followed by its elements. Strings with a lone surrogate go as {@code String}s (the old
   * triple), so the native refuses them with the message it always gave (the UTF-8 encoder is the
   * bulk copy's, which refuses the same strings). It covers what {@code copyToSharedMemory} would
   * copy as lists of lists and scalars; anything else (maps, sets, user objects), a private container met twice
   * (sharing and cycles must be kept: the copier keeps them), more than {@link #MAX_CONTAINERS}
   * containers or deeper than {@link #MAX_DEPTH} makes {@link #encode} return false, and the
   * caller falls back to {@code copyToSharedMemory}. One instance per thread, reused.
   */
  static final class Enc {
    static final int LIST = RpcSupport.TAG_LIST;
    static final int UTF8 = RpcSupport.TAG_UTF8;
    // A blob grown past this by one large call is dropped after it, not kept by the thread.
    private static final int KEEP_BLOB = 1 << 20;
    static final int MAX_CONTAINERS = 64;
    static final int MAX_DEPTH = 32;
    private static final ThreadLocal<Enc> LOCAL = ThreadLocal.withInitial(Enc::new);

    int n;
    int[] tags = new int[32];
    long[] bits = new long[32];
    Object[] objs = new Object[32];
    /** The strings' UTF-8 bytes, [0, nblob) used. */
    byte[] blob = new byte[256];
    int nblob;
    private final Object[] seen = new Object[MAX_CONTAINERS];
    private int nseen;

    static Enc get() {
      return LOCAL.get();
    }

    /** Encodes {@code top} as the top list; false if the copier must do it. */
    boolean encode(Object[] top) {
      n = 0;
      nseen = 0;
      nblob = 0;
      put(LIST, top.length, null);
      for (Object o : top) {
        if (!add(o, 1)) {
          clear();
          return false;
        }
      }
      return true;
    }

    /** Drops the references to the encoded objects (after the native call). */
    void clear() {
      Arrays.fill(objs, 0, n, null);
      Arrays.fill(seen, 0, nseen, null);
      n = 0;
      nseen = 0;
      nblob = 0;
      if (blob.length > KEEP_BLOB) blob = new byte[256];
    }

    private void put(int tag, long b, Object o) {
      if (n == tags.length) {
        int cap = n * 2;
        tags = Arrays.copyOf(tags, cap);
        bits = Arrays.copyOf(bits, cap);
        objs = Arrays.copyOf(objs, cap);
      }
      tags[n] = tag;
      bits[n] = b;
      objs[n] = o;
      n++;
    }

    private boolean firstVisit(Object c) {
      for (int i = 0; i < nseen; i++) if (seen[i] == c) return false;
      if (nseen == MAX_CONTAINERS) return false;
      seen[nseen++] = c;
      return true;
    }

    // INVARIANT (blob bounds): each UTF8 element's [offset, offset + length) lies in [0, nblob) and
    // nblob <= Integer.MAX_VALUE - 8 (a Java array's limit), so both halves fit their 32 bits;
    // decode_flat checks every slice against the array it gets all the same.
    private void string(String s) {
      long room = 3L * s.length();
      if (nblob + room <= Integer.MAX_VALUE - 8) {
        if (nblob + room > blob.length) {
          blob = Arrays.copyOf(blob, (int) Math.min(Integer.MAX_VALUE - 8, Math.max(blob.length * 2L, nblob + room)));
        }
        int p = RpcSupport.utf8(s, blob, nblob);
        if (p >= 0) {
          put(UTF8, (long) nblob << 32 | (p - nblob), null);
          nblob = p;
          return;
        }
      }
      put(RpcSupport.TAG_STRING, 0, s);  // a lone surrogate (the native reports it) or a giant blob
    }

    private boolean add(Object o, int depth) {
      if (o instanceof String) {
        string((String) o);
        return true;
      }
      int t = RpcSupport.tagOrNone(o);
      if (t != RpcSupport.NONE) {
        put(t, RpcSupport.bits(o, t), RpcSupport.obj(o, t));
        return true;
      }
      if (depth > MAX_DEPTH || o instanceof Set || o instanceof Map) return false;
      if (o instanceof Collection) {
        if (!firstVisit(o)) return false;
        Object[] items = ((Collection<?>) o).toArray();
        put(LIST, items.length, null);
        for (Object x : items) if (!add(x, depth + 1)) return false;
        return true;
      }
      if (o instanceof Object[]) {
        if (!firstVisit(o)) return false;
        if (o instanceof String[]) {  // no type test per element
          String[] a = (String[]) o;
          put(LIST, a.length, null);
          for (String x : a) {
            if (x == null) put(RpcSupport.TAG_NULL, 0, null);
            else string(x);
          }
          return true;
        }
        Object[] items = (Object[]) o;
        put(LIST, items.length, null);
        for (Object x : items) if (!add(x, depth + 1)) return false;
        return true;
      }
      if (o instanceof int[]) {
        int[] a = (int[]) o;
        put(LIST, a.length, null);
        for (int x : a) put(RpcSupport.TAG_INT, x, null);
        return true;
      }
      if (o instanceof long[]) {
        long[] a = (long[]) o;
        put(LIST, a.length, null);
        for (long x : a) put(RpcSupport.TAG_INT, x, null);
        return true;
      }
      if (o instanceof double[]) {
        double[] a = (double[]) o;
        put(LIST, a.length, null);
        for (double x : a) put(RpcSupport.TAG_FLOAT, Double.doubleToRawLongBits(x), null);
        return true;
      }
      if (o instanceof boolean[]) {
        boolean[] a = (boolean[]) o;
        put(LIST, a.length, null);
        for (boolean x : a) put(RpcSupport.TAG_BOOL, x ? 1 : 0, null);
        return true;
      }
      if (o != null && o.getClass().isArray()) {  // other primitive arrays: boxed elements
        int len = Array.getLength(o);
        put(LIST, len, null);
        for (int i = 0; i < len; i++) if (!add(Array.get(o, i), depth + 1)) return false;
        return true;
      }
      return false;
    }
  }
}
