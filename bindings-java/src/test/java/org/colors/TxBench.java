package org.colors;

import demo.staff.Employee;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.LongSupplier;

/**
 * Transactions benchmark (bindings-java/run-bench.sh, {@code JAVA_BENCH=tx}): the cost of running
 * Java code in a transaction, with ratios against the same code outside one measured in the same
 * run.
 *
 * <ul>
 *   <li>a read-only traversal of 1024 shared objects (an int field of bound {@code @Shared}
 *       instances, through the agent's accessors; and the elements of a shared list) outside a
 *       transaction vs inside one read-only transaction (begin, the traversal, commit);
 *   <li>k = 1, 10, 1000 int field writes: without a transaction (the field fast path), in one
 *       transaction ({@code atomically}), and under the monitor of a shared object
 *       ({@code SharedMemory.lock}).
 * </ul>
 *
 * <p>Harness: each case is warmed up for ~1 s, then timed in {@link #RUNS} rounds of ~100 ms
 * (cases interleaved, so load bursts hit all alike); the median ns per operation is reported. Run
 * with the agent and a colors server ({@code COLORS_SOCKET} or {@code -Dcolors.socket}).
 */
public final class TxBench {
  private TxBench() {}

  static final int N = 1024;
  static final int RUNS = Integer.getInteger("bench.runs", 7);
  static final long RUN_NS = Long.getLong("bench.runMs", 100) * 1_000_000L;
  static long sink;

  static final List<String> LABELS = new ArrayList<>();
  static final List<LongSupplier> CASES = new ArrayList<>();
  /** Operations one call of each case performs (the unit of its ns figure). */
  static final List<Integer> OPS = new ArrayList<>();

  static int add(String label, int ops, LongSupplier c) {
    LABELS.add(label);
    CASES.add(c);
    OPS.add(ops);
    return CASES.size() - 1;
  }

  static double[] measureAll() {
    int n = CASES.size();
    for (int k = 0; k < n; k++) {
      long until = System.nanoTime() + 1_000_000_000L;
      while (System.nanoTime() < until) sink += CASES.get(k).getAsLong();
    }
    double[][] ns = new double[n][RUNS];
    for (int r = 0; r < RUNS; r++) {
      for (int k = 0; k < n; k++) {
        LongSupplier c = CASES.get(k);
        long calls = 0;
        long t0 = System.nanoTime();
        long t;
        do {
          for (int i = 0; i < 16; i++) sink += c.getAsLong();  // one clock read per 16 calls
          calls += 16;
          t = System.nanoTime();
        } while (t - t0 < RUN_NS);
        ns[k][r] = (double) (t - t0) / calls;
      }
    }
    double[] med = new double[n];
    for (int k = 0; k < n; k++) {
      Arrays.sort(ns[k]);
      med[k] = ns[k][RUNS / 2];
      System.out.printf(Locale.ROOT, "  %-58s %11.1f ns (%.2f ns/op over %d ops)%n", LABELS.get(k), med[k],
          med[k] / OPS.get(k), OPS.get(k));
    }
    return med;
  }

  static void ratio(String what, double a, double b) {
    System.out.printf(Locale.ROOT, "  %-58s %9.2fx%n", what, a / b);
  }

  public static void main(String[] args) {
    if (!SharedInstance.class.isAssignableFrom(Employee.class)) {
      System.err.println("TxBench: run with -javaagent:colors-agent.jar (demo.staff.Employee is not rewritten)");
      System.exit(2);
    }
    SharedMemory.attach();
    Employee[] objs = new Employee[N];
    for (int i = 0; i < N; i++) {
      objs[i] = SharedMemory.allocate(Employee.class);
      objs[i].age = i;
    }
    @SuppressWarnings("unchecked")
    List<Object> list = SharedMemory.allocate(List.class, N);
    for (int i = 0; i < N; i++) list.add((long) i);
    Employee target = objs[0];
    SharedObject lockObj = SharedMemory.sharedView(objs[1]);

    System.out.println("Java transactions (" + N + " objects; median of " + RUNS + " runs):");
    int travOut = add("read 1024 int fields, no transaction", N, () -> {
      long s = 0;
      for (Employee e : objs) s += e.age;
      return s;
    });
    int travIn = add("read 1024 int fields in one read-only transaction", N, () -> {
      try (Transaction tx = SharedMemory.beginTransaction()) {
        long s = 0;
        for (Employee e : objs) s += e.age;
        tx.commit();
        return s;
      }
    });
    int listOut = add("read 1024 shared list elements, no transaction", N, () -> {
      long s = 0;
      for (int i = 0; i < N; i++) s += (Long) list.get(i);
      return s;
    });
    int listIn = add("read 1024 shared list elements in one transaction", N, () -> {
      try (Transaction tx = SharedMemory.beginTransaction()) {
        long s = 0;
        for (int i = 0; i < N; i++) s += (Long) list.get(i);
        tx.commit();
        return s;
      }
    });
    int[] ks = {1, 10, 1000};
    int[][] w = new int[ks.length][3];
    for (int q = 0; q < ks.length; q++) {
      final int k = ks[q];
      w[q][0] = add("write " + k + " int field(s), no transaction", k, () -> {
        for (int i = 0; i < k; i++) objs[i].age = i;
        return k;
      });
      w[q][1] = add("write " + k + " int field(s) in one transaction (atomically)", k, () -> {
        SharedMemory.atomically(() -> {
          for (int i = 0; i < k; i++) objs[i].age = i;
        });
        return k;
      });
      w[q][2] = add("write " + k + " int field(s) under a SharedMonitor", k, () -> {
        try (SharedMonitor m = SharedMemory.lock(lockObj)) {
          for (int i = 0; i < k; i++) objs[i].age = i;
        }
        return k;
      });
    }
    double[] m = measureAll();
    System.out.println("Ratios (same run):");
    ratio("read-only traversal (fields): in a transaction / outside", m[travIn], m[travOut]);
    ratio("read-only traversal (list): in a transaction / outside", m[listIn], m[listOut]);
    for (int q = 0; q < ks.length; q++) {
      ratio("k=" + ks[q] + " writes: transaction / no transaction", m[w[q][1]], m[w[q][0]]);
      ratio("k=" + ks[q] + " writes: SharedMonitor / no transaction", m[w[q][2]], m[w[q][0]]);
      ratio("k=" + ks[q] + " writes: transaction / SharedMonitor", m[w[q][1]], m[w[q][2]]);
    }
    if (sink == 42 && target.age == -1) System.out.println();
  }
}
