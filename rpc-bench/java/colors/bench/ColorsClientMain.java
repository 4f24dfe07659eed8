package bench;

import bench.ColorsServer.Node;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.colors.SharedList;
import org.colors.SharedMemory;
import org.colors.rpc.RpcClient;

/**
 * The Java client of rpc-bench's "Java client -> Python server" colors row: calls the endpoint
 * served by {@code python/colors_py_server.py} (colors_shm.rpc) through an {@link RpcClient}
 * proxy of {@link Bench}, with the workload of the Python -> Java harness, and times each call.
 * Run with the colors agent ({@code -javaagent:colors-agent.jar}) and {@code COLORS_SOCKET}:
 *
 * <pre>
 *   bench.ColorsClientMain ENDPOINT [--kinds int,tree4] [--sizes 1,16] [--passes P]
 *       [--warmup-s S] [--measure-s S] [--min-calls N] [--max-calls N] [--prewarm-s S]
 * </pre>
 *
 * Inputs are built once per (kind, n) in the heap (python/workload.py's values; trees as
 * {@link ColorsServer.Node} instances, the {@code @Shared(name = "bench.Node")} class the Java server
 * uses, copied in) and reused by every call. Variants:
 * "paper" (the call until the proxy returns the reply: a {@link SharedList} proxy, nothing read)
 * and "read" (the call plus reading every element and field: one native call for the elements,
 * {@code toLongArray}/{@code toDoubleArray}/{@code toArray}, and the nodes' fields through the
 * agent's field accessors). Timing as python/measure.py's {@code time_calls}. Prints one JSON
 * object per line (the same lines as cpp/colors_floor.cpp with --json): a {@code check} line
 * with the reply's length and workload.py's checksum before and after each cell, one line per
 * cell and variant, and {@code {"done": 1}}.
 */
public final class ColorsClientMain {
  private ColorsClientMain() {}

  /** The remote methods; {@code List} results are the shared lists themselves (no copy). */
  public interface Bench {
    List<Object> bools(List<Object> xs);

    List<Object> ints(List<Object> xs);

    List<Object> floats(List<Object> xs);

    List<Object> strings(List<Object> xs);

    List<Object> trees(List<Object> xs);
  }

  private static int depth(String kind) {
    return kind.startsWith("tree") ? Integer.parseInt(kind.substring(4)) : 0;
  }

  // ---- inputs: python/workload.py's values ---------------------------------------------------

  private static int counter;

  private static Node build(int level, int depth) {
    int c = counter++;
    Node o = new Node();  // private; copied into the heap with its list
    o.i = c * 31L - 5;
    o.f = c * 0.25 + 0.125;
    o.b = c % 2 == 0;
    o.s = String.format("node-%06d", c);
    if (level < depth) {
      o.left = build(level + 1, depth);
      o.right = build(level + 1, depth);
    }
    return o;
  }

  @SuppressWarnings("unchecked")
  static List<Object> input(String kind, int n) {
    List<Object> xs = new ArrayList<>(n);
    int d = depth(kind);
    counter = 0;
    for (int k = 0; k < n; k++) {
      if (d > 0) xs.add(build(1, d));
      else if (kind.equals("bool")) xs.add(k % 3 == 0);
      else if (kind.equals("int")) xs.add(k * 1_000_003L - 7);
      else if (kind.equals("float")) xs.add(k * 0.37 + 0.5);
      else if (kind.equals("string")) xs.add(String.format("str%06d-xyz", k));
      else throw new IllegalArgumentException("unknown kind " + kind);
    }
    return (List<Object>) SharedMemory.copyToSharedMemory(xs);
  }

  // ---- calls and reads -----------------------------------------------------------------------

  static List<Object> call(Bench api, String kind, List<Object> xs) {
    switch (kind) {
      case "bool": return api.bools(xs);
      case "int": return api.ints(xs);
      case "float": return api.floats(xs);
      case "string": return api.strings(xs);
      default: return api.trees(xs);
    }
  }

  private static double walk(Node p) {
    double acc = p.i + p.f + (p.b ? 1 : 0) + p.s.length();
    Node l = p.left;
    if (l != null) acc += walk(l);
    Node r = p.right;
    if (r != null) acc += walk(r);
    return acc;
  }

  /** Reads every element and field; workload.py's checksum. */
  static double readAll(String kind, List<Object> reply) {
    SharedList xs = (SharedList) reply;
    switch (kind) {
      case "int": {
        long acc = 0;
        for (long v : xs.toLongArray()) acc += v;
        return acc;
      }
      case "float": {
        double acc = 0;
        for (double v : xs.toDoubleArray()) acc += v;
        return acc;
      }
      case "bool": {
        long acc = 0;
        for (Object v : xs.toArray()) acc += ((Boolean) v) ? 1 : 0;
        return acc;
      }
      case "string": {
        long acc = 0;
        for (Object v : xs.toArray()) {
          String s = (String) v;
          acc += s.length() + s.charAt(0);
        }
        return acc;
      }
      default: {
        double acc = 0;
        for (Object p : xs.toArray()) acc += walk((Node) p);
        return acc;
      }
    }
  }

  // ---- timing (python/measure.py's time_calls) -----------------------------------------------

  static final class Budget {
    double warmupS = 0.05, measureS = 0.2;
    long minCalls = 5, maxCalls = 100_000, minWarmupCalls = 2;
  }

  /** {median, mean, p10, p90, calls}, seconds. */
  static double[] timeCalls(Runnable fn, Budget b) {
    long t0 = System.nanoTime();
    for (long calls = 0; calls < b.minWarmupCalls || (System.nanoTime() - t0) * 1e-9 < b.warmupS; calls++) fn.run();
    double[] t = new double[16];
    int m = 0;
    long end = System.nanoTime() + (long) (b.measureS * 1e9);
    while (m < b.minCalls || (System.nanoTime() < end && m < b.maxCalls)) {
      long s = System.nanoTime();
      fn.run();
      long e = System.nanoTime();
      if (m == t.length) t = Arrays.copyOf(t, m * 2);
      t[m++] = (e - s) * 1e-9;
    }
    Arrays.sort(t, 0, m);
    double median = m % 2 == 1 ? t[m / 2] : (t[m / 2 - 1] + t[m / 2]) / 2;
    double sum = 0;
    for (int k = 0; k < m; k++) sum += t[k];
    return new double[] {median, sum / m, t[Math.min(m - 1, (int) (0.10 * m))], t[Math.min(m - 1, (int) (0.90 * m))], m};
  }

  private static String cell(String kind, int n, String variant, int pass, double[] c) {
    return "{\"kind\": \"" + kind + "\", \"n\": " + n + ", \"variant\": \"" + variant + "\", \"pass\": " + pass
        + ", \"per_call_s\": " + c[0] + ", \"mean_s\": " + c[1] + ", \"p10_s\": " + c[2] + ", \"p90_s\": " + c[3]
        + ", \"calls\": " + (long) c[4] + "}";
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 1 || args[0].startsWith("-")) {
      System.err.println("usage: bench.ColorsClientMain ENDPOINT [--kinds K,..] [--sizes N,..] [--passes P]"
          + " [--warmup-s S] [--measure-s S] [--min-calls N] [--max-calls N] [--prewarm-s S]");
      System.exit(2);
    }
    String endpoint = args[0];
    String[] kinds = {"int", "tree4"};
    int[] sizes = {1, 16, 128, 1024};
    int passes = 1;
    double prewarmS = 0;
    Budget budget = new Budget();
    for (int a = 1; a + 1 < args.length; a += 2) {
      String v = args[a + 1];
      switch (args[a]) {
        case "--kinds": kinds = v.split(","); break;
        case "--sizes": sizes = Arrays.stream(v.split(",")).mapToInt(Integer::parseInt).toArray(); break;
        case "--passes": passes = Integer.parseInt(v); break;
        case "--warmup-s": budget.warmupS = Double.parseDouble(v); break;
        case "--measure-s": budget.measureS = Double.parseDouble(v); break;
        case "--min-calls": budget.minCalls = Long.parseLong(v); break;
        case "--max-calls": budget.maxCalls = Long.parseLong(v); break;
        case "--prewarm-s": prewarmS = Double.parseDouble(v); break;
        default: throw new IllegalArgumentException("unknown option " + args[a]);
      }
    }
    // A @Shared class named differently from its Java name is mapped once initialised.
    Class.forName(Node.class.getName(), true, Node.class.getClassLoader());
    SharedMemory.attach();
    RpcClient client = RpcClient.connect(endpoint);
    Bench api = client.proxy(Bench.class);

    // JIT warm-up of this client (the server is Python), as the harness's prewarm.
    if (prewarmS > 0) {
      List<List<Object>> warm = new ArrayList<>();
      for (String kind : kinds) warm.add(input(kind, 64));
      long end = System.nanoTime() + (long) (prewarmS * 1e9);
      while (System.nanoTime() < end) {
        for (int k = 0; k < kinds.length; k++) readAll(kinds[k], call(api, kinds[k], warm.get(k)));
      }
    }

    List<List<Object>> inputs = new ArrayList<>();
    StringBuilder out = new StringBuilder();
    for (int pass = 1; pass <= passes; pass++) {
      int cellNo = 0;
      for (String kind : kinds) {
        for (int n : sizes) {
          if (inputs.size() <= cellNo) inputs.add(input(kind, n));
          List<Object> xs = inputs.get(cellNo++);
          out.setLength(0);
          out.append(check(api, kind, n, xs)).append('\n');
          double[] paper = timeCalls(() -> call(api, kind, xs), budget);
          double[] read = timeCalls(() -> readAll(kind, call(api, kind, xs)), budget);
          out.append(check(api, kind, n, xs)).append('\n');
          out.append(cell(kind, n, "paper", pass, paper)).append('\n');
          out.append(cell(kind, n, "read", pass, read));
          System.out.println(out);
          System.out.flush();
        }
      }
    }
    System.out.println("{\"done\": 1}");
    System.out.flush();
    client.close();
    SharedMemory.detach();
    System.exit(0);
  }

  private static String check(Bench api, String kind, int n, List<Object> xs) {
    List<Object> r = call(api, kind, xs);
    return "{\"check\": 1, \"kind\": \"" + kind + "\", \"n\": " + n + ", \"len\": " + r.size() + ", \"checksum\": "
        + readAll(kind, r) + "}";
  }
}
