package oo7;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import oo7.plain.PlainFactory;
import oo7.plain.PlainOps;
import oo7.shared.SharedFactory;
import oo7.shared.SharedOps;
import org.colors.SharedMemory;

/**
 * The benchmark (not a test): T1, T6, T2b and Q7 over the POJOs and over the agent-bound shared
 * database, both built in this JVM from the same seed. Interleaved rounds (each round times every
 * operation on both models, alternating which goes first); per round the ratio shared / private;
 * the table gives the medians.
 *
 * <pre>bench [--size small|medium] [--seed N] [--rounds R] [--min-ms M] [--ops t1,t6,t2b,q7]</pre>
 *
 * Each timing repeats the operation until {@code --min-ms} (default 50) have passed and gives the
 * time per run.
 */
public final class Bench {
  private Bench() {}

  public static void main(String[] argv) {
    Args a;
    try {
      a = new Args(argv, Set.of("--size", "--seed", "--rounds", "--min-ms", "--ops"), Set.of());
    } catch (IllegalArgumentException e) {
      System.err.println("bench: " + e.getMessage());
      System.exit(2);
      return;
    }
    Params p = Params.of(a.get("--size", "small"));
    long seed = a.getLong("--seed", 42);
    int rounds = (int) a.getLong("--rounds", 11);
    long minNanos = a.getLong("--min-ms", 50) * 1_000_000L;
    String[] ops = a.get("--ops", "t1,t6,t2b,q7").split(",");

    SharedMemory.attach();
    long t0 = System.nanoTime();
    Schema.Database shared = Builder.build(p, seed, new SharedFactory());
    long t1 = System.nanoTime();
    Schema.Database mine = Builder.build(p, seed, new PlainFactory());
    long t2 = System.nanoTime();
    System.out.printf("oo7 bench size=%s seed=%d lang=java rounds=%d%n", p.name(), seed, rounds);
    System.out.printf("build: shared %.0f ms, private %.0f ms%n", (t1 - t0) / 1e6, (t2 - t1) / 1e6);
    Ops so = new SharedOps();
    Ops po = new PlainOps();
    Checks.Summary ss = Checks.summary(shared, so);
    Checks.Summary ps = Checks.summary(mine, po);
    if (!ss.equals(ps)) throw new IllegalStateException("the two databases differ: " + ss + " vs " + ps);

    // Warm-up: both models' code compiled before the first timed round.
    for (String op : ops) {
      time(po, mine, op, minNanos * 4);
      time(so, shared, op, minNanos * 4);
    }
    double[][] ratio = new double[ops.length][rounds];
    double[][] privNs = new double[ops.length][rounds];
    double[][] sharedNs = new double[ops.length][rounds];
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
        privNs[i][r] = pt;
        sharedNs[i][r] = st;
        ratio[i][r] = st / pt;
      }
    }
    System.out.println();
    System.out.printf("%-4s %14s %14s %10s %18s%n", "op", "private ms", "shared ms", "ratio", "ratio range");
    for (int i = 0; i < ops.length; i++) {
      double[] rs = ratio[i].clone();
      Arrays.sort(rs);
      System.out.printf("%-4s %14.3f %14.3f %9.1fx %8.1fx-%.1fx%n", ops[i], median(privNs[i]) / 1e6,
          median(sharedNs[i]) / 1e6, median(ratio[i]), rs[0], rs[rs.length - 1]);
    }
    System.out.println("(ms per run, medians over rounds; ratio = median of per-round shared/private)");
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
