package org.colors;

import demo.tree.Node;
import demo.tree.PlainNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Tree derivation benchmark (bindings-java/run-bench.sh, part of `make bench`): the work of
 * rpc-bench's colors server for one `trees` call (bench.ColorsServer.Handler.trees/derive) in
 * process, without the rpc: for each of {@link #TREES} complete binary trees of depth
 * {@link #DEPTH} (15 nodes each at depth 4) held in a shared list, build a new tree node by node
 * through plain field accesses of the {@code @Shared} class {@link Node} (the agent rewrites them),
 * and put the new roots into a new shared list. Reported as ns per node (median over calls), next
 * to the same derivation on private instances of the same class and of an unmapped class with the
 * same fields, measured in the same run, and to the private style of the same work: the input
 * read into private nodes by one bulk copy, a private derivation, the reply built by one bulk copy
 * (rpc-bench's {@code trees(@ByValue Node[] xs)}).
 *
 * <p>With {@code --parts}: the single operations of a derivation on 1024 nodes (allocate, read and
 * write a string, read and write a reference, ...), ns per operation.
 *
 * <p>Run with the agent ({@code -javaagent:colors-agent.jar}) and a colors server
 * ({@code -Dcolors.socket}); the shared calls run {@code SharedMemory.collect()} between timed
 * calls (outside the timing) so that the heap does not fill up.
 */
public final class TreeBench {
  private TreeBench() {}

  static final int TREES = Integer.getInteger("bench.trees", 1024);
  static final int DEPTH = Integer.getInteger("bench.depth", 4);
  static final int RUNS = Integer.getInteger("bench.runs", 7);
  static final long RUN_NS = Long.getLong("bench.runMs", 300) * 1_000_000L;
  static final long WARM_NS = Long.getLong("bench.warmMs", 2000) * 1_000_000L;
  static final int NODES = TREES * ((1 << DEPTH) - 1);

  // ---- the derivation rules of rpc-bench (bench.Derive) ----

  static boolean bool(boolean b) {
    return !b;
  }

  static long integer(long v) {
    return v + 1;
  }

  static double real(double v) {
    return v * 0.5 + 1.0;
  }

  static String string(String s) {
    return new StringBuilder(s).reverse().toString();
  }

  // ---- shared in a read scope: the same code, every proxy borrowed, every new node allocated in
  // the scope (no root each); the returned list holds the trees after the scope ----
  static List<Object> treesScoped(List<Object> xs) {
    try (ReadScope scope = SharedMemory.readScope()) {
      return trees(xs);
    }
  }

  // ---- shared: exactly ColorsServer.Handler.trees/derive ----

  static List<Object> trees(List<Object> xs) {
    int n = xs.size();
    @SuppressWarnings("unchecked")
    List<Object> out = SharedMemory.allocate(List.class, n);
    for (int k = 0; k < n; k++) out.add(derive((Node) xs.get(k)));
    return out;
  }

  static Node derive(Node p) {
    Node q = SharedMemory.allocate(Node.class);
    q.i = integer(p.i);
    q.f = real(p.f);
    q.b = bool(p.b);
    q.s = string(p.s);
    if (p.left != null) q.left = derive(p.left);
    if (p.right != null) q.right = derive(p.right);
    return q;
  }

  // ---- private instances of the same (mapped) class ----

  static List<Object> treesPrivate(List<Node> xs) {
    int n = xs.size();
    List<Object> out = new ArrayList<>(n);
    for (int k = 0; k < n; k++) out.add(derivePrivate(xs.get(k)));
    return out;
  }

  static Node derivePrivate(Node p) {
    Node q = new Node();
    q.i = integer(p.i);
    q.f = real(p.f);
    q.b = bool(p.b);
    q.s = string(p.s);
    if (p.left != null) q.left = derivePrivate(p.left);
    if (p.right != null) q.right = derivePrivate(p.right);
    return q;
  }

  // ---- bulk copies: the private derivation of rpc-bench's `trees(@ByValue Node[] xs)` ----

  /**
   * The input list read into private {@code Node}s by one bulk copy (one native call, as an
   * {@code @ByValue Node[]} parameter), derived privately, and the reply copied into shared memory
   * by one bulk copy (one native call, as the rpc reply of a {@code Node[]}).
   */
  static Object treesBulk(List<Object> xs) {
    Node[] in = (Node[]) RpcSupport.toPrivateArray(xs, Node[].class, "xs");
    Node[] out = new Node[in.length];
    for (int k = 0; k < in.length; k++) out[k] = derivePrivate(in[k]);
    return SharedMemory.copyToSharedMemory(out);
  }

  // ---- an unmapped class ----

  static List<Object> treesPlain(List<PlainNode> xs) {
    int n = xs.size();
    List<Object> out = new ArrayList<>(n);
    for (int k = 0; k < n; k++) out.add(derivePlain(xs.get(k)));
    return out;
  }

  static PlainNode derivePlain(PlainNode p) {
    PlainNode q = new PlainNode();
    q.i = integer(p.i);
    q.f = real(p.f);
    q.b = bool(p.b);
    q.s = string(p.s);
    if (p.left != null) q.left = derivePlain(p.left);
    if (p.right != null) q.right = derivePlain(p.right);
    return q;
  }

  // ---- inputs (rpc-bench/python/workload.py: node c has i = 31c - 5, f = c/4 + 1/8, b = c even, s = "node-%06d") ----

  static int counter;

  static Node build(boolean shared, int level) {
    int c = counter++;
    Node o = shared ? SharedMemory.allocate(Node.class) : new Node();
    o.i = c * 31L - 5;
    o.f = c * 0.25 + 0.125;
    o.b = c % 2 == 0;
    o.s = String.format(Locale.ROOT, "node-%06d", c);
    if (level < DEPTH) {
      o.left = build(shared, level + 1);
      o.right = build(shared, level + 1);
    }
    return o;
  }

  static PlainNode plain(Node n) {
    if (n == null) return null;
    PlainNode p = new PlainNode();
    p.i = n.i;
    p.f = n.f;
    p.b = n.b;
    p.s = n.s;
    p.left = plain(n.left);
    p.right = plain(n.right);
    return p;
  }

  /** Checks that {@code q} was derived from {@code p} (the rpc-bench client checks the same). */
  static void check(Node p, Node q) {
    if (q.i != p.i + 1 || q.f != p.f * 0.5 + 1.0 || q.b == p.b || !q.s.equals(string(p.s))
        || (p.left == null) != (q.left == null) || (p.right == null) != (q.right == null)) {
      throw new AssertionError("wrong derivation of node " + p.s);
    }
    if (p.left != null) check(p.left, q.left);
    if (p.right != null) check(p.right, q.right);
  }

  // ---- harness ----

  interface Call {
    /** One call over all trees; returns a result to keep alive until timed. */
    Object call();
  }

  static Object sink;

  /**
   * Warms each case for {@link #WARM_NS}, then {@link #RUNS} rounds in which each case runs calls
   * for ~{@link #RUN_NS} in turn (interleaved: a burst of load on a shared machine hits all alike);
   * per case the median over all timed calls of ns per node.
   */
  static double[] measure(String[] labels, Call[] cases, boolean[] collect) {
    int n = cases.length;
    for (int k = 0; k < n; k++) {
      long until = System.nanoTime() + WARM_NS;
      int calls = 0;
      while (System.nanoTime() < until) {
        sink = cases[k].call();
        if (collect[k] && ++calls % 4 == 0) SharedMemory.collect();
      }
    }
    List<List<Double>> ns = new ArrayList<>();
    for (int k = 0; k < n; k++) ns.add(new ArrayList<>());
    for (int r = 0; r < RUNS; r++) {
      for (int k = 0; k < n; k++) {
        long spent = 0;
        int calls = 0;
        while (spent < RUN_NS) {
          long t0 = System.nanoTime();
          sink = cases[k].call();
          long t = System.nanoTime() - t0;
          spent += t;
          ns.get(k).add((double) t / NODES);
          if (collect[k] && ++calls % 4 == 0) {
            sink = null;
            SharedMemory.collect();
          }
        }
      }
    }
    double[] med = new double[n];
    for (int k = 0; k < n; k++) {
      double[] a = ns.get(k).stream().mapToDouble(Double::doubleValue).toArray();
      Arrays.sort(a);
      med[k] = a[a.length / 2];
      System.out.printf(Locale.ROOT, "  %-58s %9.1f ns/node (p10 %.1f, p90 %.1f; %d calls)%n", labels[k], med[k],
          a[a.length / 10], a[a.length * 9 / 10], a.length);
    }
    return med;
  }

  public static void main(String[] args) {
    if (!SharedInstance.class.isAssignableFrom(Node.class)) {
      System.err.println("TreeBench: run with -javaagent:colors-agent.jar (demo.tree.Node is not rewritten)");
      System.exit(2);
    }
    SharedMemory.attach();
    if (args.length > 0 && args[0].equals("--parts")) {
      parts();
      return;
    }
    if (args.length > 0 && args[0].equals("--bulk-parts")) {
      bulkParts();
      return;
    }
    if (args.length > 0 && (args[0].equals("--shared-only") || args[0].equals("--scoped-only"))) {  // for profiling
      boolean scoped = args[0].equals("--scoped-only");
      List<Object> xs = inputs();
      long until = System.nanoTime() + Long.getLong("bench.seconds", 20) * 1_000_000_000L;
      int calls = 0;
      while (System.nanoTime() < until) {
        sink = scoped ? treesScoped(xs) : trees(xs);
        if (++calls % 4 == 0) {
          sink = null;
          SharedMemory.collect();
          if (Boolean.getBoolean("bench.verbose")) {
            System.out.println("cache " + SharedMemory.identityCacheSize() + " roots " + SharedMemory.liveHandles());
          }
        }
      }
      System.out.println("calls: " + calls);
      if (Boolean.getBoolean("bench.verbose")) {
        sink = null;
        for (int i = 0; i < 5; i++) {
          System.gc();
          try {
            Thread.sleep(200);
          } catch (InterruptedException e) {
            break;
          }
          System.out.println("after System.gc(): cache " + SharedMemory.identityCacheSize() + " roots "
              + SharedMemory.liveHandles());
        }
      }
      return;
    }
    List<Object> xs = inputs();
    counter = 0;
    List<Node> privs = new ArrayList<>();
    for (int k = 0; k < TREES; k++) privs.add(build(false, 1));
    List<PlainNode> plains = new ArrayList<>();
    for (Node p : privs) plains.add(plain(p));
    List<Object> ys = trees(xs);
    for (int k = 0; k < TREES; k++) check((Node) xs.get(k), (Node) ys.get(k));
    ys = treesScoped(xs);
    SharedMemory.collect();
    SharedMemory.collect();  // what the scope made is kept by the returned list alone
    for (int k = 0; k < TREES; k++) check((Node) xs.get(k), (Node) ys.get(k));
    @SuppressWarnings("unchecked")
    List<Object> bs = (List<Object>) treesBulk(xs);
    for (int k = 0; k < TREES; k++) check((Node) xs.get(k), (Node) bs.get(k));
    bs = null;
    List<Object> zs = treesPrivate(privs);
    for (int k = 0; k < TREES; k++) check(privs.get(k), (Node) zs.get(k));
    ys = zs = null;

    System.out.println("Tree derivation as rpc-bench's colors server (" + TREES + " trees of depth " + DEPTH + " = "
        + NODES + " nodes per call; median of calls over " + RUNS + " interleaved rounds):");
    double[] m = measure(
        new String[] {"shared: @Shared Node bound instances (agent)",
            "bulk: one toPrivate in, private derivation, one copy out", "private instances of the same mapped class",
            "private instances of an unmapped class", "shared in a read scope (borrowed, allocated in it)"},
        new Call[] {() -> trees(xs), () -> treesBulk(xs), () -> treesPrivate(privs), () -> treesPlain(plains),
            () -> treesScoped(xs)},
        new boolean[] {true, true, false, false, true});
    System.out.printf(Locale.ROOT, "  %-58s %9.1fx%n", "shared / private (mapped class)", m[0] / m[2]);
    System.out.printf(Locale.ROOT, "  %-58s %9.1fx%n", "bulk / private (mapped class)", m[1] / m[2]);
    System.out.printf(Locale.ROOT, "  %-58s %9.1fx%n", "shared / bulk", m[0] / m[1]);
    System.out.printf(Locale.ROOT, "  %-58s %9.1fx%n", "shared / unmapped class", m[0] / m[3]);
    System.out.printf(Locale.ROOT, "  %-58s %9.1fx%n", "scoped / private (mapped class)", m[4] / m[2]);
    System.out.printf(Locale.ROOT, "  %-58s %9.1fx%n", "scoped / shared", m[4] / m[0]);
    System.out.printf(Locale.ROOT, "tree-ns-per-node %.1f%n", m[0]);
    System.out.printf(Locale.ROOT, "tree-bulk-ns-per-node %.1f%n", m[1]);
    System.out.printf(Locale.ROOT, "tree-scoped-ns-per-node %.1f%n", m[4]);
  }

  /** --bulk-parts: the bulk case's three steps timed apart (ns per node, median of calls). */
  static void bulkParts() {
    List<Object> xs = inputs();
    Node[] in = (Node[]) RpcSupport.toPrivateArray(xs, Node[].class, "xs");
    Node[] out = new Node[in.length];
    for (int k = 0; k < in.length; k++) out[k] = derivePrivate(in[k]);
    System.out.println("Bulk steps over " + NODES + " nodes (median of calls over " + RUNS + " interleaved rounds):");
    String[] labels = {"toPrivateArray (shared list -> private Node[])", "  of which the native flatten",
        "private derivation", "copyToSharedMemory(Node[])"};
    Call[] cases = {() -> RpcSupport.toPrivateArray(xs, Node[].class, "xs"),
          () -> Bulk.flatten(((SharedList) xs).handle), () -> {
          Node[] o = new Node[in.length];
          for (int k = 0; k < in.length; k++) o[k] = derivePrivate(in[k]);
          return o;
        }, () -> SharedMemory.copyToSharedMemory(out)};
    boolean[] collect = {false, false, false, true};
    String only = System.getProperty("bench.only");  // one step (its index), e.g. for a profiler
    if (only != null) {
      int i = Integer.parseInt(only);
      measure(new String[] {labels[i]}, new Call[] {cases[i]}, new boolean[] {collect[i]});
    } else {
      measure(labels, cases, collect);
    }
  }

  static List<Object> inputs() {
    counter = 0;
    @SuppressWarnings("unchecked")
    List<Object> xs = SharedMemory.allocate(List.class, TREES);
    for (int k = 0; k < TREES; k++) xs.add(build(true, 1));
    return xs;
  }

  // ---- --parts: single operations over N nodes ----

  static final int N = 1024;
  static long sinkL;

  static void parts() {
    Node[] a = new Node[N];
    Node[] b = new Node[N];
    Node[] kids = new Node[N];
    for (int k = 0; k < N; k++) {
      a[k] = SharedMemory.allocate(Node.class);
      b[k] = SharedMemory.allocate(Node.class);
      kids[k] = SharedMemory.allocate(Node.class);
      a[k].s = String.format(Locale.ROOT, "node-%06d", k);
      a[k].left = kids[k];
      a[k].i = k;
      a[k].f = k + 0.5;
    }
    System.out.println("Single operations on bound instances (" + N + " per pass; median of " + RUNS + "):");
    FieldBench.add("allocate(Node.class)", r -> {
      Node x = null;
      for (int k = 0; k < N; k++) x = SharedMemory.allocate(Node.class);
      sink = x;
      if ((r & 1023) == 1023) SharedMemory.collect();
    });
    FieldBench.add("read long + double + boolean", r -> {
      long s = 0;
      for (Node x : a) s += x.i + (long) x.f + (x.b ? 1 : 0);
      sinkL += s;
    });
    FieldBench.add("write long + double + boolean", r -> {
      for (Node x : b) {
        x.i = r;
        x.f = r + 0.5;
        x.b = (r & 1) == 0;
      }
    });
    FieldBench.add("read String (11 ASCII characters)", r -> {
      long s = 0;
      for (Node x : a) s += x.s.length();
      sinkL += s;
    });
    String[] strs = new String[N];
    for (int k = 0; k < N; k++) strs[k] = String.format(Locale.ROOT, "edon-%06d", k);
    FieldBench.add("write String (11 ASCII characters)", r -> {
      for (int k = 0; k < N; k++) b[k].s = strs[k];
      if ((r & 1023) == 1023) SharedMemory.collect();
    });
    FieldBench.add("read reference (its bound instance is alive)", r -> {
      long s = 0;
      for (Node x : a) s += x.left == null ? 0 : 1;
      sinkL += s;
    });
    FieldBench.add("read null reference", r -> {
      long s = 0;
      for (Node x : b) s += x.right == null ? 0 : 1;
      sinkL += s;
    });
    FieldBench.add("write reference", r -> {
      for (int k = 0; k < N; k++) b[k].left = kids[(k + r) & (N - 1)];
    });
    FieldBench.measureAll();
  }
}
