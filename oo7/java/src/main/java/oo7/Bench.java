package oo7;

import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import oo7.plain.PlainFactory;
import oo7.plain.PlainOps;
import oo7.shared.SharedFactory;
import oo7.shared.SharedOps;
import org.colors.ReadScope;
import org.colors.SharedMemory;

/**
 * The benchmark (not a test): T1, T6, T2b and Q7 over the POJOs and over the agent-bound shared
 * database, both built in this JVM from the same seed. Interleaved rounds (each round times every
 * operation on both models, alternating which goes first); per round the ratio shared / private;
 * the table gives the medians.
 *
 * <pre>bench [--size small|medium] [--seed N] [--rounds R] [--min-ms M] [--ops t1,t6,t2b,q7,q1,q2,q3] [--breakdown]</pre>
 *
 * Each timing repeats the operation until {@code --min-ms} (default 50) have passed and gives the
 * time per run. {@code --breakdown} adds the same rounds for the shared operations run while a
 * Java list holds every bound instance and list proxy they read ("pinned"): each reference read
 * is then an identity-cache hit, so the difference to the normal run is the cost of making
 * proxies (and collecting them) per read.
 *
 * <p>The read-only operations (all but T2*) are also timed inside a read scope, one
 * {@link ReadScope} per run ("scoped"): the same code, with every proxy it makes borrowed (no GC
 * root, reference object or identity-cache entry each).
 */
public final class Bench {
  private Bench() {}

  public static void main(String[] argv) {
    Args a;
    try {
      a = new Args(argv, Set.of("--size", "--seed", "--rounds", "--min-ms", "--ops"), Set.of("--breakdown"));
    } catch (IllegalArgumentException e) {
      System.err.println("bench: " + e.getMessage());
      System.exit(2);
      return;
    }
    Params p = Params.of(a.get("--size", "small"));
    long seed = a.getUnsigned("--seed", 42);
    int rounds = (int) a.getLong("--rounds", 11);
    long minNanos = a.getLong("--min-ms", 50) * 1_000_000L;
    String[] ops = a.get("--ops", "t1,t6,t2b,q7,q1,q2,q3").split(",");

    SharedMemory.attach();
    long t0 = System.nanoTime();
    Schema.Database shared = Builder.build(p, seed, new SharedFactory());
    long t1 = System.nanoTime();
    Schema.Database mine = Builder.build(p, seed, new PlainFactory());
    long t2 = System.nanoTime();
    System.out.printf("oo7 bench size=%s seed=%s lang=java rounds=%d%n", p.name(), Long.toUnsignedString(seed), rounds);
    System.out.printf("build: shared %.0f ms, private %.0f ms%n", (t1 - t0) / 1e6, (t2 - t1) / 1e6);
    // Q1/Q2/Q3 through the indexes: shared sorted maps against HashMap / TreeMap.
    org.colors.SharedSortedMap byId = SharedMemory.newSortedMap();
    org.colors.SharedSortedMap byDate = SharedMemory.newSortedMap();
    Queries.build(shared, byId, byDate, n -> SharedMemory.allocate(List.class, n));
    java.util.Map<Object, Object> myById = new java.util.HashMap<>();
    java.util.TreeMap<Object, Object> myByDate = new java.util.TreeMap<>();
    Queries.build(mine, myById, myByDate, ArrayList::new);
    long parts = Queries.atomicParts(p);
    for (String q : new String[] {"q1", "q2", "q3"}) {
      if (!Queries.run(q, byId, byDate, seed, parts).equals(Queries.run(q, myById, myByDate, seed, parts)))
        throw new IllegalStateException(q + " differs between the shared and the private indexes");
    }
    Ops so = withQueries(new SharedOps(), byId, byDate, seed, parts);
    Ops po = withQueries(new PlainOps(), myById, myByDate, seed, parts);
    // Q1's ordered baseline: the same lookups through a private TreeMap, the floor of any ordered
    // index (the shared index is one) against the HashMap baseline.
    java.util.TreeMap<Object, Object> myOrderedById = new java.util.TreeMap<>(myById);
    Ops oo = withQueries(new PlainOps(), myOrderedById, myByDate, seed, parts);
    if (!oo.run("q1", mine).equals(po.run("q1", mine))) throw new IllegalStateException("q1 differs through a TreeMap");
    Ops sco = scoped(so);
    Checks.Summary ss = Checks.summary(shared, so);
    Checks.Summary ps = Checks.summary(mine, po);
    if (!ss.equals(ps)) throw new IllegalStateException("the two databases differ: " + ss + " vs " + ps);

    // Warm-up: both models' code compiled before the first timed round.
    for (String op : ops) {
      time(po, mine, op, minNanos * 4);
      if (op.equals("q1")) time(oo, mine, op, minNanos * 4);
      time(so, shared, op, minNanos * 4);
      if (readOnly(op)) {
        if (!sco.run(op, shared).equals(so.run(op, shared))) throw new IllegalStateException(op + " differs in a read scope");
        time(sco, shared, op, minNanos * 4);
      }
    }
    boolean breakdown = a.has("--breakdown");
    List<Object> pins = breakdown ? pin(shared) : null;
    double[][] pinnedNs = new double[ops.length][rounds];
    double[][] ratio = new double[ops.length][rounds];
    double[][] privNs = new double[ops.length][rounds];
    double[][] sharedNs = new double[ops.length][rounds];
    double[][] scopedNs = new double[ops.length][rounds];
    double[][] scopedRatio = new double[ops.length][rounds];
    double[] orderedRatio = new double[rounds];  // q1 through a private TreeMap / through the HashMap
    for (int r = 0; r < rounds; r++) {
      for (int i = 0; i < ops.length; i++) {
        double pt, st;
        if (r % 2 == 0) {
          pt = time(po, mine, ops[i], minNanos);
          st = time(so, shared, ops[i], minNanos);
        } else {
          st = time(so, shared, ops[i], minNanos);
          pt = time(po, mine, ops[i], minNanos);
        }
        if (breakdown) pinnedNs[i][r] = time(so, shared, ops[i], minNanos);
        if (ops[i].equals("q1")) orderedRatio[r] = time(oo, mine, "q1", minNanos) / pt;
        if (readOnly(ops[i])) {
          scopedNs[i][r] = time(sco, shared, ops[i], minNanos);
          scopedRatio[i][r] = scopedNs[i][r] / pt;
        }
        privNs[i][r] = pt;
        sharedNs[i][r] = st;
        ratio[i][r] = st / pt;
      }
    }
    System.out.println();
    System.out.printf("%-4s %14s %14s %10s %18s %14s %10s%n", "op", "private ms", "shared ms", "ratio", "ratio range",
        "scoped ms", "ratio");
    for (int i = 0; i < ops.length; i++) {
      double[] rs = ratio[i].clone();
      Arrays.sort(rs);
      String scopedCols = readOnly(ops[i])
          ? String.format(" %14.3f %9.1fx", median(scopedNs[i]) / 1e6, median(scopedRatio[i])) : "";
      System.out.printf("%-4s %14.3f %14.3f %9.1fx %8.1fx-%.1fx%s%n", ops[i], median(privNs[i]) / 1e6,
          median(sharedNs[i]) / 1e6, median(ratio[i]), rs[0], rs[rs.length - 1], scopedCols);
    }
    System.out.println("(ms per run, medians over rounds; ratio = median of per-round shared/private;");
    System.out.println(" scoped: the shared run inside a ReadScope, its ratio to the same round's private run)");
    if (Arrays.asList(ops).contains("q1")) {
      System.out.printf("q1 through a private TreeMap (an ordered index, as the shared one): %.1fx the HashMap%n",
          median(orderedRatio));
    }
    if (breakdown) {
      System.out.println();
      System.out.printf("%-4s %14s %18s %22s%n", "op", "shared ms", "pinned shared ms", "pinned/private ratio");
      for (int i = 0; i < ops.length; i++) {
        double[] pr = new double[rounds];
        for (int r = 0; r < rounds; r++) pr[r] = pinnedNs[i][r] / privNs[i][r];
        System.out.printf("%-4s %14.3f %18.3f %21.1fx%n", ops[i], median(sharedNs[i]) / 1e6, median(pinnedNs[i]) / 1e6,
            median(pr));
      }
      System.out.printf("(pinned: %d proxies held; T1 makes %d object accesses on the small database)%n", pins.size(),
          178241);
      accessCosts(shared, mine, minNanos);
      Reference.reachabilityFence(pins);
    }
  }

  /**
   * Every bound instance and list proxy the operations read (assemblies and their lists, composite
   * parts, their parts lists, parts, their {@code to} lists, connections), held by the list returned.
   */
  private static List<Object> pin(Schema.Database db) {
    List<Object> pins = new ArrayList<>();
    pins.add(db);
    pins.add(db.module());
    pins.add(db.composites());
    for (Schema.Assembly a : db.assemblies()) {
      pins.add(a);
      pins.add(a instanceof Schema.ComplexAssembly ? ((Schema.ComplexAssembly) a).subAssemblies()
          : ((Schema.BaseAssembly) a).components());
    }
    for (Schema.CompositePart c : db.composites()) {
      pins.add(c);
      pins.add(c.parts());
      for (Schema.AtomicPart p : c.parts()) {
        pins.add(p);
        pins.add(p.to());
        for (Schema.Connection k : p.to()) pins.add(k);
      }
    }
    return pins;
  }

  /**
   * ns per access of T1's three kinds of access over all 10,000 parts (shared parts pinned by the
   * caller, so references read live proxies): a scalar field, a reference field, and iterating a
   * part's {@code to} list (3 connections); and the list's size (one JNI call for a shared list,
   * no element read), which separates a list read's per-call cost from its per-element cost.
   */
  private static void accessCosts(Schema.Database shared, Schema.Database mine, long minNanos) {
    List<oo7.shared.AtomicPart> sp = new ArrayList<>();
    for (oo7.shared.CompositePart c : ((oo7.shared.Database) shared).composites) sp.addAll(c.parts);
    List<oo7.plain.AtomicPart> pp = new ArrayList<>();
    for (oo7.plain.CompositePart c : ((oo7.plain.Database) mine).composites) pp.addAll(c.parts);
    oo7.shared.AtomicPart[] s = sp.toArray(new oo7.shared.AtomicPart[0]);
    oo7.plain.AtomicPart[] q = pp.toArray(new oo7.plain.AtomicPart[0]);
    System.out.println();
    System.out.printf("%-34s %12s %12s %8s%n", "access (ns, all parts, median of 5)", "private", "shared", "ratio");
    String[] names = {"scalar field (p.x)", "reference field (p.partOf)", "list field for-each (p.to, 3 items)",
        "list field size (p.to.size())"};
    for (int k = 0; k < names.length; k++) {
      double[] pt = new double[5];
      double[] st = new double[5];
      for (int r = 0; r < 5; r++) {
        pt[r] = accessNs(k, q, null, minNanos);
        st[r] = accessNs(k, null, s, minNanos);
      }
      System.out.printf("%-34s %12.1f %12.1f %7.1fx%n", names[k], median(pt), median(st), median(st) / median(pt));
    }
  }

  private static long sink;

  // The two models' loops are separate methods so that each is compiled with its own profile.
  private static double accessNs(int kind, oo7.plain.AtomicPart[] q, oo7.shared.AtomicPart[] s, long minNanos) {
    long n = 0;
    long acc = 0;
    long start = System.nanoTime();
    long now;
    do {
      acc += q != null ? plainAccess(kind, q) : sharedAccess(kind, s);
      n += q != null ? q.length : s.length;
      now = System.nanoTime();
    } while (now - start < minNanos);
    sink += acc;
    return (double) (now - start) / n;
  }

  private static long plainAccess(int kind, oo7.plain.AtomicPart[] q) {
    long acc = 0;
    for (oo7.plain.AtomicPart p : q) {
      if (kind == 0) {
        acc += p.x;
      } else if (kind == 1) {
        if (p.partOf != null) acc++;
      } else if (kind == 2) {
        for (oo7.plain.Connection c : p.to) if (c != null) acc++;
      } else {
        acc += p.to.size();
      }
    }
    return acc;
  }

  private static long sharedAccess(int kind, oo7.shared.AtomicPart[] q) {
    long acc = 0;
    for (oo7.shared.AtomicPart p : q) {
      if (kind == 0) {
        acc += p.x;
      } else if (kind == 1) {
        if (p.partOf != null) acc++;
      } else if (kind == 2) {
        for (oo7.shared.Connection c : p.to) if (c != null) acc++;
      } else {
        acc += p.to.size();
      }
    }
    return acc;
  }

  /** Whether {@code op} only reads (so it can run inside a read scope, which refuses transactions). */
  private static boolean readOnly(String op) {
    return !op.startsWith("t2");
  }

  /** {@code ops} with each run inside a read scope of its own. */
  private static Ops scoped(Ops ops) {
    return new Ops() {
      public OpResult t1(Schema.Database db) { return run("t1", db); }
      public OpResult t6(Schema.Database db) { return run("t6", db); }
      public OpResult t2a(Schema.Database db) { return run("t2a", db); }
      public OpResult t2b(Schema.Database db) { return run("t2b", db); }
      public OpResult t2c(Schema.Database db) { return run("t2c", db); }
      public OpResult q7(Schema.Database db) { return run("q7", db); }

      @Override
      public OpResult run(String op, Schema.Database db) {
        try (ReadScope scope = SharedMemory.readScope()) {
          return ops.run(op, db);
        }
      }
    };
  }

  /** {@code ops} that also runs q1, q2 and q3 over the given indexes (count: parts found). */
  private static Ops withQueries(Ops ops, java.util.Map<Object, Object> byId, java.util.NavigableMap<Object, Object> byDate,
      long seed, long parts) {
    return new Ops() {
      public OpResult t1(Schema.Database db) { return ops.t1(db); }
      public OpResult t6(Schema.Database db) { return ops.t6(db); }
      public OpResult t2a(Schema.Database db) { return ops.t2a(db); }
      public OpResult t2b(Schema.Database db) { return ops.t2b(db); }
      public OpResult t2c(Schema.Database db) { return ops.t2c(db); }
      public OpResult q7(Schema.Database db) { return ops.q7(db); }

      @Override
      public OpResult run(String op, Schema.Database db) {
        if (!Queries.isQuery(op)) return Ops.super.run(op, db);
        Queries.Result r = Queries.run(op, byId, byDate, seed, parts);
        return new OpResult(r.count(), r.sumX());
      }
    };
  }

  /** Nanoseconds per run of {@code op}, repeated until {@code minNanos} passed. */
  private static double time(Ops ops, Schema.Database db, String op, long minNanos) {
    List<OpResult> sink = new ArrayList<>(1);
    long n = 0;
    long start = System.nanoTime();
    long now;
    do {
      OpResult r = ops.run(op, db);
      if (sink.isEmpty()) sink.add(r);
      n++;
      now = System.nanoTime();
    } while (now - start < minNanos);
    if (sink.get(0).count() <= 0) throw new IllegalStateException(op + " visited nothing");
    return (double) (now - start) / n;
  }

  private static double median(double[] xs) {
    double[] s = xs.clone();
    Arrays.sort(s);
    int n = s.length;
    return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  }
}
