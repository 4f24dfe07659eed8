package org.colors;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Random;
import java.util.TreeMap;

/**
 * Shared sorted map benchmark (bindings-java/run-bench.sh, {@code JAVA_BENCH=sortedmap}): a
 * {@link SharedSortedMap} against a {@link TreeMap} with the same 10,000 {@code Long} keys (0, 3,
 * 6, ...): point lookups of random present keys, and 1% / 10% ranges ({@code subMap(lo, true, hi,
 * true)}, every entry read). Rounds interleave the two after a warm-up; each row prints the median
 * over rounds of the per-round ratio shared / TreeMap (issue 18's target: <= 2). Needs a colors
 * server ({@code -Dcolors.socket}).
 */
public final class SortedMapBench {
  private SortedMapBench() {}

  static final int N = 10_000;
  static final int ROUNDS = Integer.getInteger("bench.rounds", 21);
  static final int WARMUP = Integer.getInteger("bench.warmup", 15);
  static long sink;

  static long lookups(Map<Object, Object> m, long[] keys) {
    long t0 = System.nanoTime();
    for (long k : keys) sink += (Long) m.get(k);
    return System.nanoTime() - t0;
  }

  static long ranges(NavigableMap<Object, Object> m, long[] los, int span) {
    long t0 = System.nanoTime();
    for (long lo : los) {
      for (Map.Entry<Object, Object> e : m.subMap(lo, true, lo + 3L * (span - 1), true).entrySet()) sink += (Long) e.getValue();
    }
    return System.nanoTime() - t0;
  }

  static double median(List<Double> v) {
    double[] a = v.stream().mapToDouble(Double::doubleValue).toArray();
    Arrays.sort(a);
    return a[a.length / 2];
  }

  public static void main(String[] args) {
    SharedSortedMap shared = SharedMemory.newSortedMap();
    TreeMap<Object, Object> tree = new TreeMap<>();
    for (long k = 0; k < N; k++) {
      shared.put(k * 3, k * 3);
      tree.put(k * 3, k * 3);
    }
    Random r = new Random(1);
    String[] names = {"point lookup", "1% range (100 entries)", "10% range (1,000 entries)"};
    List<List<Double>> ratios = new ArrayList<>();
    List<List<Double>> sharedNs = new ArrayList<>();
    for (int i = 0; i < names.length; i++) {
      ratios.add(new ArrayList<>());
      sharedNs.add(new ArrayList<>());
    }
    for (int round = -WARMUP; round < ROUNDS; round++) {  // the first rounds warm the JIT up
      long[] keys = new long[20_000];
      for (int i = 0; i < keys.length; i++) keys[i] = 3L * r.nextInt(N);
      long[] los1 = new long[400];
      for (int i = 0; i < los1.length; i++) los1[i] = 3L * r.nextInt(N - 100);
      long[] los10 = new long[40];
      for (int i = 0; i < los10.length; i++) los10[i] = 3L * r.nextInt(N - 1000);
      long[] base = {lookups(tree, keys), ranges(tree, los1, 100), ranges(tree, los10, 1000)};
      long[] ours = {lookups(shared, keys), ranges(shared, los1, 100), ranges(shared, los10, 1000)};
      int[] ops = {keys.length, los1.length, los10.length};
      if (round < 0) continue;
      for (int i = 0; i < names.length; i++) {
        ratios.get(i).add((double) ours[i] / base[i]);
        sharedNs.get(i).add((double) ours[i] / ops[i]);
      }
    }
    System.out.printf("SharedSortedMap vs TreeMap: %d Long keys, median of %d rounds%n", N, ROUNDS);
    System.out.printf("  %-28s%14s%8s   target%n", "operation", "shared ns/op", "ratio");
    for (int i = 0; i < names.length; i++) {
      System.out.printf("  %-28s%14.0f%8.2f   <= 2%n", names[i], median(sharedNs.get(i)), median(ratios.get(i)));
    }
    if (sink == 42) System.out.println();
  }
}
