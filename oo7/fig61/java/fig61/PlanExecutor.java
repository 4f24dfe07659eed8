package fig61;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * The server side of call aggregation (oo7/fig61/README.md, "Aggregated calls"): runs a plan, a
 * sequence of deferred calls a client sends in one request, in order, on a target object. A call
 * names one of the target's public methods whose parameters are all {@code long} (by its index in
 * {@link #methodNames()}), and its operands are literals or the result of an earlier call of the
 * same plan, so a reference a call returned can be the receiver of the next call without
 * travelling to the client and back. Nothing here knows OO7.
 *
 * <p>Plan encoding (one {@code long[]}): for each call, {@code method, argc}, then {@code argc}
 * operands as {@code (tag, value)} pairs: tag 0 a literal, tag 1 the result of call number
 * {@code value} of this plan (an earlier one). Result ({@code Object[2 * calls]}): for call k,
 * {@code [2k]} null or its failure {@code "Type: message"}, {@code [2k+1]} its value. A call whose
 * operand is a failed call's result fails with {@code DependencyError} naming it, without running;
 * a failing call does not stop the plan. A malformed plan fails the whole request
 * (IllegalArgumentException) before any call runs.
 */
public final class PlanExecutor {
  private final Object target;
  private final Method[] methods;
  private final String[] names;

  PlanExecutor(Object target) {
    this.target = target;
    List<Method> ms = new ArrayList<>();
    for (Method m : target.getClass().getMethods()) {
      if (m.getDeclaringClass() == Object.class || Modifier.isStatic(m.getModifiers())) continue;
      boolean allLong = true;
      for (Class<?> p : m.getParameterTypes()) allLong &= p == long.class;
      if (allLong) ms.add(m);
    }
    ms.sort(Comparator.comparing(Method::getName).thenComparingInt(Method::getParameterCount));
    for (int i = 1; i < ms.size(); i++) {
      if (ms.get(i).getName().equals(ms.get(i - 1).getName())) {
        throw new IllegalArgumentException("overloaded method " + ms.get(i).getName() + ": plans name methods by name");
      }
    }
    methods = ms.toArray(new Method[0]);
    names = ms.stream().map(Method::getName).toArray(String[]::new);
  }

  /** The methods a plan can call, in index order. */
  public String[] methodNames() {
    return names.clone();
  }

  /** The number of calls in a well-formed plan; IllegalArgumentException naming the first fault. */
  public int validate(long[] plan) {
    int calls = 0, i = 0;
    while (i < plan.length) {
      if (i + 2 > plan.length) throw new IllegalArgumentException("plan truncated at word " + i);
      long m = plan[i], argc = plan[i + 1];
      if (m < 0 || m >= methods.length) throw new IllegalArgumentException("call " + calls + ": no method #" + m);
      if (argc != methods[(int) m].getParameterCount()) {
        throw new IllegalArgumentException("call " + calls + ": " + names[(int) m] + " takes "
            + methods[(int) m].getParameterCount() + " operands, not " + argc);
      }
      i += 2;
      if (i + 2 * argc > plan.length) throw new IllegalArgumentException("call " + calls + ": operands truncated");
      for (long a = 0; a < argc; a++, i += 2) {
        long tag = plan[i], v = plan[i + 1];
        if (tag == 1 && (v < 0 || v >= calls)) {
          throw new IllegalArgumentException("call " + calls + ": operand refers to call " + v + ", not an earlier one");
        }
        if (tag != 0 && tag != 1) throw new IllegalArgumentException("call " + calls + ": operand tag " + tag);
      }
      calls++;
    }
    return calls;
  }

  /** Runs a plan (see the class comment); the result holds every call's outcome. */
  public Object[] run(long[] plan) {
    int calls = validate(plan);
    Object[] out = new Object[2 * calls];
    int i = 0;
    for (int k = 0; k < calls; k++) {
      Method m = methods[(int) plan[i]];
      int argc = (int) plan[i + 1];
      i += 2;
      Object[] args = new Object[argc];
      String failure = null;
      for (int a = 0; a < argc; a++, i += 2) {
        long v = plan[i + 1];
        if (plan[i] == 0) {
          args[a] = v;
        } else if (out[2 * (int) v] != null) {
          failure = failure != null ? failure : "DependencyError: call " + v + " failed (" + out[2 * (int) v] + ")";
        } else if (out[2 * (int) v + 1] instanceof Long l) {
          args[a] = l;
        } else {
          failure = failure != null ? failure : "TypeError: operand " + a + " of " + m.getName()
              + " is the result of call " + v + ", which is not a reference";
        }
      }
      if (failure == null) {
        try {
          out[2 * k + 1] = m.invoke(target, args);
        } catch (InvocationTargetException e) {
          Throwable c = e.getCause();
          failure = c.getClass().getName() + ": " + c.getMessage();
        } catch (IllegalAccessException e) {
          failure = e.getClass().getName() + ": " + e.getMessage();
        }
      }
      out[2 * k] = failure;
    }
    return out;
  }

  @Override public String toString() {
    return "PlanExecutor" + Arrays.toString(names);
  }
}
