package org.colors;

import java.util.Arrays;
import java.util.List;
import org.colors.rpc.RpcClient;
import org.colors.rpc.RpcServer;

/**
 * Round-trip latency of org.colors.rpc (not a test; run by hand against a running colors-server,
 * see the README's "Remote calls"): {@code java -cp ... org.colors.RpcLatency serve NAME} serves
 * {@code echo} until killed; {@code ... client NAME N} measures N calls of {@code echo([1])} after
 * warm-up and prints the median, 10th and 90th percentile in µs; {@code ... both NAME N} serves and
 * calls in one JVM (two threads).
 */
public final class RpcLatency {
  private RpcLatency() {}

  /** The served object. */
  public static final class Echo {
    public Object echo(Object x) {
      return x;
    }
  }

  public static void main(String[] args) throws Exception {
    String mode = args[0], name = args[1];
    int n = args.length > 2 ? Integer.parseInt(args[2]) : 20_000;
    long spin = args.length > 3 ? Long.parseLong(args[3]) : -1;
    switch (mode) {
      case "serve": {
        RpcServer.serve(name, new Echo(), RpcServer.options().spinNanos(spin));
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
        break;
      }
      case "client": measure(name, n, spin); break;
      case "both": {
        try (RpcServer s = RpcServer.serve(name, new Echo(), RpcServer.options().spinNanos(spin))) {
          measure(name, n, spin);
        }
        break;
      }
      default: throw new IllegalArgumentException(mode);
    }
  }

  static void measure(String name, int n, long spin) {
    RpcClient c = RpcClient.connect(name, RpcClient.options().spinNanos(spin));
    List<Integer> arg = List.of(1);
    for (int i = 0; i < Math.max(5_000, n / 4); i++) c.call("echo", arg);  // warm-up (JIT)
    long[] t = new long[n];
    for (int i = 0; i < n; i++) {
      long t0 = System.nanoTime();
      c.call("echo", arg);
      t[i] = System.nanoTime() - t0;
    }
    Arrays.sort(t);
    System.out.printf("java client: %d calls of echo([1]): median %.1f us, p10 %.1f us, p90 %.1f us%n", n,
        t[n / 2] / 1e3, t[n / 10] / 1e3, t[n * 9 / 10] / 1e3);
  }
}
