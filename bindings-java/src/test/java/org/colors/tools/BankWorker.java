package org.colors.tools;

import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.colors.ObjectRepository;
import org.colors.SharedMemory;
import org.colors.SharedObject;
import org.colors.TransactionConflictException;

/**
 * The Java worker of the cross-language bank test (the transactions contract): repository
 * {@code bank.accounts} holds a shared list of objects of class {@code bank.Account} with an
 * integer field {@code balance}; each transfer is one {@link SharedMemory#atomically(Runnable)}
 * that picks accounts i != j and an amount in [0, 100) at random and moves it from i to j. Prints
 * {@code transfers <count>} every ~0.5 s and at exit (flushed). With {@code --counter I} each
 * transfer also adds 1 to {@code bank.counters[I]} in the same transaction, and the worker prints
 * {@code start <value>} (the counter when it began) and {@code committed <value>} after every
 * commit, so that the driver can check that no acknowledged commit is lost.
 *
 * <pre>
 * java -cp build/bindings-java/colors.jar:build/bindings-java/colors-tools.jar \
 *      -Dcolors.jni.library=build/bindings-java/libcolors_jni.so \
 *      org.colors.tools.BankWorker --socket PATH --seed N [--seconds S] [--counter I]
 * </pre>
 *
 * Runs until killed, or for S seconds. A transfer still conflicting after atomically's retries is
 * skipped (not counted). Exit status 0, or 2 on bad arguments.
 */
public final class BankWorker {
  private BankWorker() {}

  public static void main(String[] args) throws Exception {
    String socket = null;
    long seed = 1;
    double seconds = -1;
    int counterIndex = -1;
    try {
      for (int i = 0; i < args.length; i++) {
        switch (args[i]) {
          case "--socket": socket = args[++i]; break;
          case "--seed": seed = Long.parseLong(args[++i]); break;
          case "--seconds": seconds = Double.parseDouble(args[++i]); break;
          case "--counter": counterIndex = Integer.parseInt(args[++i]); break;
          default: throw new IllegalArgumentException("unknown argument " + args[i]);
        }
      }
      if (socket == null) throw new IllegalArgumentException("--socket PATH is required");
    } catch (RuntimeException e) {
      System.err.println("BankWorker: " + e.getMessage());
      System.err.println("usage: BankWorker --socket PATH --seed N [--seconds S] [--counter I]");
      System.exit(2);
      return;
    }
    SharedMemory.attach(Path.of(socket));
    ObjectRepository repo = SharedMemory.findOrCreateRepository("bank.accounts");
    long waitUntil = System.nanoTime() + 30_000_000_000L;
    Object root;
    while ((root = repo.get()) == null) {
      if (System.nanoTime() > waitUntil) throw new IllegalStateException("bank.accounts was not set within 30 s");
      Thread.sleep(10);
    }
    @SuppressWarnings("unchecked")
    List<Object> list = (List<Object>) root;
    SharedObject[] accounts = list.stream().map(o -> (SharedObject) o).toArray(SharedObject[]::new);
    if (accounts.length < 2) throw new IllegalStateException("bank.accounts needs at least 2 accounts");
    SharedObject counter = null;
    if (counterIndex >= 0) {
      @SuppressWarnings("unchecked")
      List<Object> counters = (List<Object>) SharedMemory.findOrCreateRepository("bank.counters").get();
      if (counters == null || counterIndex >= counters.size())
        throw new IllegalStateException("bank.counters has no counter " + counterIndex);
      counter = (SharedObject) counters.get(counterIndex);
      SharedObject c = counter;
      report("start " + SharedMemory.atomically(() -> c.getLong("balance")));
    }

    AtomicLong count = new AtomicLong();
    Thread reporter = new Thread(() -> {
      try {
        for (;;) {
          Thread.sleep(500);
          report("transfers " + count.get());
        }
      } catch (InterruptedException e) {
        // exit
      }
    }, "bank-reporter");
    reporter.setDaemon(true);
    reporter.start();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> report("transfers " + count.get())));

    SplittableRandom rng = new SplittableRandom(seed);
    long end = seconds < 0 ? Long.MAX_VALUE : System.nanoTime() + (long) (seconds * 1e9);
    while (System.nanoTime() < end) {
      int i = rng.nextInt(accounts.length);
      int j = rng.nextInt(accounts.length - 1);
      if (j >= i) j++;
      long amount = rng.nextInt(100);
      SharedObject a = accounts[i], b = accounts[j], c = counter;
      try {
        long counted = SharedMemory.atomically(() -> {
          a.set("balance", a.getLong("balance") - amount);
          b.set("balance", b.getLong("balance") + amount);
          if (c == null) return 0L;
          long v = c.getLong("balance") + 1;
          c.set("balance", v);
          return v;
        });
        count.incrementAndGet();
        if (c != null) report("committed " + counted);  // after every commit: a kill leaves at most one unreported
      } catch (TransactionConflictException e) {
        // 100 retries in vain (e.g. a killed worker's objects stay held until the server rolls its
        // transaction back): this transfer is given up, nothing of it applied; go on.
      }
    }
    System.exit(0);  // the shutdown hook prints the final count
  }

  private static synchronized void report(String line) {
    System.out.println(line);
    System.out.flush();
  }
}
