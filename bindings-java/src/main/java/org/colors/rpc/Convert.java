package org.colors.rpc;

import java.lang.reflect.Array;
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

  private static Object check(Object v, Class<?> type, String where) {
    if (v == null) return null;
    if (type.isInstance(v)) return v;
    throw new TypeMismatchException(where + " is a " + v.getClass().getName() + ", not a " + type.getTypeName());
  }

  /**
   * A value ready to store: scalars, strings, byte[] and proxies as they are; private lists, maps,
   * sets, arrays and user objects copied in ({@link SharedMemory#copyToSharedMemory(Object)}).
   */
  static Object storable(Object v) {
    return RpcSupport.tagOrNone(v) == RpcSupport.NONE ? SharedMemory.copyToSharedMemory(v) : v;
  }

  /**
   * The shared list of a call's arguments: one {@code copyToSharedMemory} over all of them, so
   * that objects shared between arguments stay shared; null (an empty list) for no arguments.
   */
  static Object argsHandle(Object[] args) {
    if (args == null || args.length == 0) return null;
    return RpcSupport.handleOf(SharedMemory.copyToSharedMemory(args));
  }
}
