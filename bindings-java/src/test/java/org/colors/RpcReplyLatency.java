package org.colors;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.colors.rpc.RpcClient;
import org.colors.rpc.RpcServer;

/**
 * Round-trip latency of org.colors.rpc calls whose replies are private arrays, as rpc-bench's
 * Java server returns them (not a test; run by hand against a running colors-server, as
 * {@link RpcLatency}): {@code java -cp ... org.colors.RpcReplyLatency serve NAME SPIN_NS} serves
 * {@code long[] ints(long[])} and {@code String[] strings(String[])} until killed;
 * {@code ... client NAME SPIN_NS ints|strings N CALLS} passes one shared list of N elements to
 * CALLS calls after warm-up and prints the median and 10th percentile in µs.
 */
public final class RpcReplyLatency {
  private RpcReplyLatency() {}

  /** The served object: a new private array per call, copied into the heap as the reply. */
  public static final class Service {
    public long[] ints(long[] xs) {
      long[] out = new long[xs.length];
      for (int i = 0; i < xs.length; i++) out[i] = xs[i] + 1;
      return out;
    }

    public String[] strings(String[] xs) {
      String[] out = new String[xs.length];
      for (int i = 0; i < xs.length; i++) out[i] = new StringBuilder(xs[i]).reverse().toString();
      return out;
    }
  }

  /** The client's view: the replies are the shared lists themselves. */
  public interface Calls {
    List<Object> ints(List<Object> xs);

    List<Object> strings(List<Object> xs);
  }

  public static void main(String[] args) throws Exception {
    String mode = args[0], name = args[1];
    long spin = Long.parseLong(args[2]);
    if (mode.equals("serve")) {
      RpcServer.serve(name, new Service(), RpcServer.options().spinNanos(spin));
      System.out.println("ready");
      System.out.flush();
      Thread.sleep(Long.MAX_VALUE);
      return;
    }
    boolean ints = args[3].equals("ints");
    int n = Integer.parseInt(args[4]);
    int calls = Integer.parseInt(args[5]);
    RpcClient c = RpcClient.connect(name, RpcClient.options().spinNanos(spin));
    Calls b = c.proxy(Calls.class);
    List<Object> in = new ArrayList<>();
    for (int i = 0; i < n; i++) in.add(ints ? (Object) (i * 7L) : (Object) ("str" + i + "-xyz"));
    @SuppressWarnings("unchecked")
    List<Object> shared = (List<Object>) SharedMemory.copyToSharedMemory(in);
    for (int i = 0; i < Math.max(3000, calls / 4); i++) call(b, ints, shared);  // warm-up (JIT)
    long[] t = new long[calls];
    for (int i = 0; i < calls; i++) {
      long t0 = System.nanoTime();
      call(b, ints, shared);
      t[i] = System.nanoTime() - t0;
    }
    Arrays.sort(t);
    System.out.printf("java client: %s of %d: median %.2f us, p10 %.2f us%n", ints ? "ints" : "strings", n,
        t[calls / 2] / 1e3, t[calls / 10] / 1e3);
  }

  private static void call(Calls b, boolean ints, List<Object> shared) {
    if (ints) {
      b.ints(shared);
    } else {
      b.strings(shared);
    }
  }
}
