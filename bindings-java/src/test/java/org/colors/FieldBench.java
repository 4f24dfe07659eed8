package org.colors;

import demo.plain.PlainEmployee;
import demo.staff.Employee;
import java.util.Arrays;
import java.util.Locale;

/**
 * Field access benchmark (bindings-java/run-bench.sh, part of `make bench`): reads and writes of an
 * int and a double field through the agent's rewritten accesses, on instances bound to shared
 * objects vs private instances, with ratios measured in the same run; the agent's overhead on code
 * that never touches shared objects (a private instance of a mapped class vs an unmapped class with
 * the same fields); one JNI downcall vs one Java call.
 *
 * <p>Harness: each case walks an array of 1024 objects (so no load can be hoisted out of the loop),
 * summing into a field the JIT cannot drop; it is warmed up for ~1 s of runs, then timed over
 * {@link #RUNS} runs of ~100 ms, reporting the median ns per access. Run with the agent
 * ({@code -javaagent:colors-agent.jar}) and a colors server ({@code COLORS_SOCKET}).
 */
public final class FieldBench {
  private FieldBench() {}

  static final int N = 1024;
  static final int RUNS = Integer.getInteger("bench.runs", 7);
  static final long RUN_NS = Long.getLong("bench.runMs", 100) * 1_000_000L;
  static long sinkL;
  static double sinkD;

  interface Case {
    /** One pass over the N objects. */
    void pass(int round);
  }

  static final java.util.List<String> LABELS = new java.util.ArrayList<>();
  static final java.util.List<Case> CASES = new java.util.ArrayList<>();

  static int add(String label, Case c) {
    LABELS.add(label);
    CASES.add(c);
    return CASES.size() - 1;
  }

  /**
   * Runs every case: ~1 s of warm-up each, then {@link #RUNS} rounds in which each case runs
   * ~100 ms in turn (interleaved, so that a burst of load on a shared machine hits all cases
   * alike); the median ns per access of each case.
   */
  static double[] measureAll() {
    int n = CASES.size();
    int[] round = new int[n];
    for (int k = 0; k < n; k++) {
      long until = System.nanoTime() + 1_000_000_000L;
      while (System.nanoTime() < until) CASES.get(k).pass(round[k]++);
    }
    double[][] ns = new double[n][RUNS];
    for (int r = 0; r < RUNS; r++) {
      for (int k = 0; k < n; k++) {
        Case c = CASES.get(k);
        long passes = 0;
        long t0 = System.nanoTime();
        long t;
        do {
          for (int i = 0; i < 64; i++) c.pass(round[k]++);
          passes += 64;
          t = System.nanoTime();
        } while (t - t0 < RUN_NS);
        ns[k][r] = (double) (t - t0) / (passes * N);
      }
    }
    double[] med = new double[n];
    for (int k = 0; k < n; k++) {
      Arrays.sort(ns[k]);
      med[k] = ns[k][RUNS / 2];
      System.out.printf(Locale.ROOT, "  %-52s %9.2f ns/access (min %.2f)%n", LABELS.get(k), med[k], ns[k][0]);
    }
    return med;
  }

  static void ratio(String what, double shared, double priv, double target) {
    double r = shared / priv;
    System.out.printf(Locale.ROOT, "  %-52s %9.2fx%s%n", what, r,
        target > 0 ? (r <= target ? "   (target <= " + target + "x: met)" : "   (target <= " + target + "x: NOT met)") : "");
  }

  /**
   * Code that never touches shared objects ({@link demo.plain.PlainWork}: unmapped objects, a
   * HashMap, strings), for the agent's overhead: run in a JVM without and one with the agent
   * ({@code --plain}); prints the median ns per element.
   */
  static void plainOnly() {
    demo.plain.PlainWork w = new demo.plain.PlainWork(N);
    add("plain code (fields, HashMap, strings)", w::pass);
    double[] m = measureAll();
    System.out.printf(Locale.ROOT, "plain-ns %.4f%n", m[0]);
    if (w.sink == 42) System.out.println();
  }

  public static void main(String[] args) {
    if (args.length > 0 && args[0].equals("--plain")) {
      plainOnly();
      return;
    }
    if (!SharedInstance.class.isAssignableFrom(Employee.class)) {
      System.err.println("FieldBench: run with -javaagent:colors-agent.jar (demo.staff.Employee is not rewritten)");
      System.exit(2);
    }
    SharedMemory.attach();
    Employee[] shared = new Employee[N];
    Employee[] priv = new Employee[N];
    PlainEmployee[] plain = new PlainEmployee[N];
    for (int i = 0; i < N; i++) {
      shared[i] = SharedMemory.allocate(Employee.class);
      shared[i].age = i;
      shared[i].salary = i + 0.5;
      priv[i] = new Employee("p", i + 0.5);
      priv[i].age = i;
      plain[i] = new PlainEmployee();
      plain[i].age = i;
      plain[i].salary = i + 0.5;
    }
    Employee[] boxed = new Employee[N];  // salaries beyond the immediate range: boxed floats
    for (int i = 0; i < N; i++) {
      boxed[i] = SharedMemory.allocate(Employee.class);
      boxed[i].salary = 1e300 * (i + 1);
    }
    SharedObject[] views = new SharedObject[N];
    for (int i = 0; i < N; i++) views[i] = SharedMemory.sharedView(shared[i]);

    System.out.println("Java field access (agent-rewritten e.f; " + N + " objects per pass, median of " + RUNS
        + " runs):");
    int rIntShared = add("read int    shared (bound instance)", r -> {
      long s = 0;
      for (Employee e : shared) s += e.age;
      sinkL += s;
    });
    int rIntPriv = add("read int    private instance", r -> {
      long s = 0;
      for (Employee e : priv) s += e.age;
      sinkL += s;
    });
    int rIntPlain = add("read int    unmapped class (no agent involvement)", r -> {
      long s = 0;
      for (PlainEmployee e : plain) s += e.age;
      sinkL += s;
    });
    int wIntShared = add("write int   shared (bound instance)", r -> {
      for (Employee e : shared) e.age = r;
    });
    int wIntPriv = add("write int   private instance", r -> {
      for (Employee e : priv) e.age = r;
    });
    int wIntPlain = add("write int   unmapped class", r -> {
      for (PlainEmployee e : plain) e.age = r;
    });
    int rDblShared = add("read double shared (float in the slot)", r -> {
      double s = 0;
      for (Employee e : shared) s += e.salary;
      sinkD += s;
    });
    int rDblPriv = add("read double private instance", r -> {
      double s = 0;
      for (Employee e : priv) s += e.salary;
      sinkD += s;
    });
    int rDblPlain = add("read double unmapped class", r -> {
      double s = 0;
      for (PlainEmployee e : plain) s += e.salary;
      sinkD += s;
    });
    int rDblBoxed = add("read double shared, boxed (1e300: outside the slot's range)", r -> {
      double s = 0;
      for (Employee e : boxed) s += e.salary;
      sinkD += s;
    });
    int wDblShared = add("write double shared (float in the slot)", r -> {
      for (Employee e : shared) e.salary = r;
    });
    int wDblPriv = add("write double private instance", r -> {
      for (Employee e : priv) e.salary = r;
    });
    int wDblBoxed = add("write double shared, boxed (allocates a float: JNI)", r -> {
      for (Employee e : boxed) e.salary = 1e300 + r;
    });
    int rIntJni = add("read int    shared, one JNI call per read (old path)", r -> {
      long s = 0;
      for (SharedObject v : views) s += (Long) Native.objGet(v.handle, "age");
      sinkL += s;
    });
    int jni = add("one JNI downcall (Native.generation())", r -> {
      long s = 0;
      for (int i = 0; i < N; i++) s += Native.generation();
      sinkL += s;
    });
    int java = add("one Java call (a static method)", r -> {
      long s = 0;
      for (int i = 0; i < N; i++) s += javaCall(i);
      sinkL += s;
    });

    double[] m = measureAll();
    System.out.println("Ratios (same run):");
    ratio("read int:    shared / private", m[rIntShared], m[rIntPriv], 5);
    ratio("read double: shared / private", m[rDblShared], m[rDblPriv], 5);
    ratio("write int:   shared / private", m[wIntShared], m[wIntPriv], 0);
    ratio("write double: shared / private", m[wDblShared], m[wDblPriv], 0);
    ratio("read double, boxed: shared / private", m[rDblBoxed], m[rDblPriv], 0);
    ratio("write double, boxed: shared / private", m[wDblBoxed], m[wDblPriv], 0);
    ratio("private instance of a mapped class / unmapped class, read int", m[rIntPriv], m[rIntPlain], 0);
    ratio("private instance of a mapped class / unmapped class, write int", m[wIntPriv], m[wIntPlain], 0);
    ratio("private instance of a mapped class / unmapped class, read double", m[rDblPriv], m[rDblPlain], 0);
    ratio("read int: JNI path / fast path", m[rIntJni], m[rIntShared], 0);
    ratio("JNI downcall / Java call", m[jni], m[java], 0);
    if (sinkL == 42 && sinkD == 42) System.out.println();
  }

  static long javaCall(int i) {
    return i ^ 1;
  }
}
