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
   * Replies with {@code result} on worker {@code w}: stored values as they are, private graphs
   * (lists, arrays, user objects) built and stored as the reply in one native call by the bulk
   * copy, anything else through {@code copyToSharedMemory}.
   */
  static void reply(long w, Object result) {
    int tag = RpcSupport.tagOrNone(result);
    if (tag == RpcSupport.NONE) {
      // No proxy of the reply is made, which would keep its root until the JVM's next collection.
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
}
