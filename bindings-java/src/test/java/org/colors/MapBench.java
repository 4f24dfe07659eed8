package org.colors;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Shared hash map benchmark (bindings-java/run-bench.sh, {@code JAVA_BENCH=map}): {@code get} of
 * random present keys of a shared map against a {@link HashMap} with the same 10,000 {@code Long}
 * keys, once with {@code Long} values and once with shared objects as values (each with a live
 * proxy, as a program that holds them has). Rounds interleave the two after a warm-up; each row
 * prints the shared map's ns per get and the median over rounds of the per-round ratio shared /
 * HashMap. Needs a colors server ({@code -Dcolors.socket}).
 */
public final class MapBench {
  private MapBench() {}

  // Keys, rounds and the median as SortedMapBench's.
  static final int N = SortedMapBench.N;
  static final int ROUNDS = SortedMapBench.ROUNDS;
  static final int WARMUP = SortedMapBench.WARMUP;
  static long sink;

  static long lookups(Map<Object, Object> m, long[] keys) {
    long t0 = System.nanoTime();
    for (long k : keys) sink += m.get(k).hashCode();
    return System.nanoTime() - t0;
  }

  @SuppressWarnings("unchecked")
  public static void main(String[] args) {
    Map<Object, Object> longs = SharedMemory.allocate(Map.class);
    Map<Object, Object> objects = SharedMemory.allocate(Map.class);
    Map<Object, Object> privLongs = new HashMap<>();
    Map<Object, Object> privObjects = new HashMap<>();
    List<Object> kept = new ArrayList<>();
    for (long k = 0; k < N; k++) {
      longs.put(k, k * 7);
      privLongs.put(k, k * 7);
      List<Object> l = SharedMemory.allocate(List.class);
      kept.add(l);
      objects.put(k, l);
      privObjects.put(k, new ArrayList<>());
    }
    Random r = new Random(1);
    String[] names = {"get, Long values", "get, shared-object values"};
    List<List<Double>> ratios = List.of(new ArrayList<>(), new ArrayList<>());
    List<List<Double>> sharedNs = List.of(new ArrayList<>(), new ArrayList<>());
    for (int round = -WARMUP; round < ROUNDS; round++) {  // the first rounds warm the JIT up
      long[] keys = new long[20_000];
      for (int i = 0; i < keys.length; i++) keys[i] = r.nextInt(N);
      long[] base = {lookups(privLongs, keys), lookups(privObjects, keys)};
      long[] ours = {lookups(longs, keys), lookups(objects, keys)};
      if (round < 0) continue;
      for (int i = 0; i < names.length; i++) {
        ratios.get(i).add((double) ours[i] / base[i]);
        sharedNs.get(i).add((double) ours[i] / keys.length);
      }
    }
    System.out.printf("shared map vs HashMap: %d Long keys, median of %d rounds%n", N, ROUNDS);
    System.out.printf("  %-28s%14s%8s%n", "operation", "shared ns/op", "ratio");
    for (int i = 0; i < names.length; i++) {
      System.out.printf("  %-28s%14.0f%8.1f%n", names[i], SortedMapBench.median(sharedNs.get(i)), SortedMapBench.median(ratios.get(i)));
    }
    if (sink == 42 || kept.isEmpty()) System.out.println();
  }
}
