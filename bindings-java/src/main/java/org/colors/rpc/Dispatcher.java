package org.colors.rpc;

import java.lang.annotation.Annotation;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.colors.RpcSupport;

/**
 * The methods a server exposes: the public methods of the handler's class (not those declared
 * by {@code Object}), resolved once, at {@link RpcServer#serve}, into a table by (name, arity).
 * Overloads with the same name and arity are tried in declaration order of
 * {@link Class#getMethods()}: the first whose parameters accept the arguments runs. Parameters
 * annotated {@link ByValue} receive private deep copies ({@link Convert#byValue}). Immutable
 * after construction, so serving threads read it without locks.
 */
final class Dispatcher {
  /** One method with its parameter conversions. */
  static final class Target {
    final Method method;
    final Convert.Conv[] params;
    final String[] where;
    /**
     * Per parameter: its conversion reads the argument into a private value and never hands the
     * argument's proxy on (arrays, {@code @ByValue}); such an argument gets a transient proxy,
     * released as soon as it is converted.
     */
    final boolean[] consumes;

    Target(Method m) {
      method = m;
      Class<?>[] types = m.getParameterTypes();
      Type[] generic = m.getGenericParameterTypes();
      Annotation[][] annotations = m.getParameterAnnotations();
      params = new Convert.Conv[types.length];
      where = new String[types.length];
      consumes = new boolean[types.length];
      for (int i = 0; i < types.length; i++) {
        where[i] = "argument " + i + " of " + m.getName();
        boolean byValue = false;
        for (Annotation a : annotations[i]) byValue |= a instanceof ByValue;
        // getGenericParameterTypes may omit synthetic parameters (inner-class constructors): only
        // methods are served, whose generic and plain parameter lists agree.
        params[i] = byValue ? Convert.byValue(types[i], generic.length == types.length ? generic[i] : types[i], where[i])
            : Convert.to(types[i]);
        consumes[i] = byValue || Convert.consumes(types[i]);
      }
    }
  }

  private final Object handler;
  private final String endpoint;
  /** name -> targets by arity (null entries: no method of that arity). */
  private final Map<String, Target[][]> table = new HashMap<>();

  Dispatcher(String endpoint, Object handler) {
    this.endpoint = endpoint;
    this.handler = handler;
    Map<String, List<Method>> byName = new HashMap<>();
    for (Method m : handler.getClass().getMethods()) {
      if (m.getDeclaringClass() == Object.class || Modifier.isStatic(m.getModifiers()) || m.isBridge()) continue;
      try {
        m.setAccessible(true);  // public methods of a non-public class (lambdas, nested classes)
      } catch (RuntimeException e) {
        // Inaccessible (a JDK class): only methods Method.invoke can call anyway.
      }
      byName.computeIfAbsent(m.getName(), k -> new ArrayList<>()).add(m);
    }
    for (Map.Entry<String, List<Method>> e : byName.entrySet()) {
      int max = 0;
      for (Method m : e.getValue()) max = Math.max(max, m.getParameterCount());
      List<List<Target>> arities = new ArrayList<>();
      for (int i = 0; i <= max; i++) arities.add(new ArrayList<>());
      for (Method m : e.getValue()) arities.get(m.getParameterCount()).add(new Target(m));
      Target[][] t = new Target[max + 1][];
      for (int i = 0; i <= max; i++) t[i] = arities.get(i).isEmpty() ? null : arities.get(i).toArray(new Target[0]);
      table.put(e.getKey(), t);
    }
  }

  /**
   * Runs {@code method} with {@code args[from..]}. An argument that is {@link RpcServer#LAZY} is
   * argument {@code index - 1} of {@code worker}'s current call ({@code item} &lt; 0) or of item
   * {@code item} of its batch (args is then serverNext's or workerBatchItem's array, {method,
   * args...}), made here as its parameter needs it.
   *
   * @throws Throwable what the handler threw, or the failure to resolve or convert
   */
  Object invoke(String method, Object[] args, int from, long worker, int item) throws Throwable {
    int n = args.length - from;
    Target[][] byArity = table.get(method);
    Target[] cands = byArity != null && n < byArity.length ? byArity[n] : null;
    if (cands == null) throw noSuchMethod(method, n, byArity);
    RuntimeException firstFailure = null;
    for (Target t : cands) {
      Object[] conv = new Object[n];
      try {
        for (int i = 0; i < n; i++) conv[i] = convert(t, i, args, from + i, worker, item);
      } catch (RuntimeException e) {
        if (firstFailure == null) firstFailure = e;
        continue;
      }
      try {
        return t.method.invoke(handler, conv);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    }
    throw firstFailure;
  }

  /** Parameter i of t from args[k] (see {@link #invoke} for a lazy argument). */
  private static Object convert(Target t, int i, Object[] args, int k, long worker, int item) {
    Object v = args[k];
    if (v != RpcServer.LAZY) return t.params[i].apply(v, t.where[i]);
    if (!t.consumes[i]) {
      v = RpcNative.workerArg(worker, item, k - 1, false);
      args[k] = v;  // other candidates (overloads) get the same proxy
      return t.params[i].apply(v, t.where[i]);
    }
    // Converted to a private value: the proxy's root goes now, not at the JVM's next collection
    // (which would keep every argument graph of every call alive in the shared heap until then).
    Object proxy = RpcNative.workerArg(worker, item, k - 1, true);
    Object r = null;
    try {
      r = t.params[i].apply(proxy, t.where[i]);
      return r;
    } finally {
      if (r != proxy) RpcSupport.releaseTransient(proxy);  // r == proxy: handed on, so kept
    }
  }

  private NoSuchMethodException noSuchMethod(String method, int n, Target[][] byArity) {
    if (byArity == null) {
      return new NoSuchMethodException("rpc endpoint '" + endpoint + "' (" + handler.getClass().getName()
          + ") has no public method '" + method + "'; it has " + new TreeSet<>(table.keySet()));
    }
    List<Integer> arities = new ArrayList<>();
    for (int i = 0; i < byArity.length; i++) if (byArity[i] != null) arities.add(i);
    return new NoSuchMethodException("rpc endpoint '" + endpoint + "': method '" + method + "' takes " + arities
        + " arguments, not " + n);
  }
}
