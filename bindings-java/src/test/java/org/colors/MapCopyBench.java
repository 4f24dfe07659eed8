package org.colors;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code copyToSharedMemory} of a map (the bulk copy: one native call) against the per-object
 * {@link Copier} (not a test; run by hand against a running colors-server, as {@link RpcLatency}):
 * {@code java -cp ... org.colors.MapCopyBench N REPS} copies a list holding a map of N string keys
 * to longs (and a small map of a list) REPS times per round each way, seven interleaved rounds
 * after three of warm-up, and prints the median and range of the per-round ratios.
 */
public final class MapCopyBench {
  private MapCopyBench() {}

  public static void main(String[] a) {
    int n = Integer.parseInt(a[0]);
    int reps = Integer.parseInt(a[1]);
    Map<String, Object> m = new HashMap<>();
    for (int i = 0; i < n; i++) m.put("key-" + i, (long) i * 3);
    List<Object> wrapped = new ArrayList<>(List.of(m, Map.of("x", List.of(1L, 2L))));
    for (int w = 0; w < 3; w++) {
      run(wrapped, reps, true);
      run(wrapped, reps, false);
    }
    double[] ratio = new double[7];
    for (int r = 0; r < ratio.length; r++) {
      long b = run(wrapped, reps, true);
      long c = run(wrapped, reps, false);
      ratio[r] = (double) b / c;
      System.out.printf("round %d: bulk %.2f us, copier %.2f us per copy%n", r, b / 1e3 / reps, c / 1e3 / reps);
      SharedMemory.collect();
    }
    Arrays.sort(ratio);
    System.out.printf("n=%d: bulk/copier median %.2f (%.2f-%.2f)%n", n, ratio[3], ratio[0], ratio[6]);
  }

  static long run(Object g, int reps, boolean bulk) {
    long t0 = System.nanoTime();
    for (int i = 0; i < reps; i++) {
      if (bulk) {
        SharedMemory.copyToSharedMemory(g);
      } else {
        new Copier().run(g);
      }
    }
    return System.nanoTime() - t0;
  }
}
