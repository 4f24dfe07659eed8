package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The Java bank worker ({@code org.colors.tools.BankWorker}, the cross-language bank test's
 * contract) against this JVM's auditor: two worker JVMs (one with the commit fault hook) transfer
 * between accounts while victim worker JVMs are started and killed with SIGKILL one after another;
 * every audit in a transaction sees the initial total, and so does the heap at the end.
 * {@code COLORS_TX_BANK_SECS} (default 3) sets the length of the run.
 */
@ExtendWith(ColorsServer.class)
class BankWorkerTest {
  /** How long the two steady workers run (COLORS_TX_BANK_SECS, default 3): longer runs kill more victims. */
  static final long SECONDS = Long.parseLong(System.getenv().getOrDefault("COLORS_TX_BANK_SECS", "3"));

  @Test
  void workersKeepTheTotalThroughKills() throws Exception {
    int n = 10;
    SharedType account = SharedMemory.defineClass("bank.Account", Map.of("balance", SharedType.Kind.INTEGER));
    @SuppressWarnings("unchecked")
    List<Object> accounts = SharedMemory.allocate(List.class, n);
    for (int i = 0; i < n; i++) {
      SharedObject a = SharedMemory.allocateObject(account);
      a.set("balance", 1000L);
      accounts.add(a);
    }
    long total = 1000L * n;
    SharedMemory.findOrCreateRepository("bank.accounts").set(accounts);
    ColorsServer.Server s = ColorsServer.server();
    String sock = s.socket.toString();
    String secs = Long.toString(SECONDS);
    Process a = s.spawn("tx", "bank", "--socket", sock, "--seed", "1", "--seconds", secs);
    Process b;
    synchronized (s.childEnv) {
      s.childEnv.put("COLORS_TX_FAULT_COMMIT_US", "200");
      try {
        b = s.spawn("tx", "bank", "--socket", sock, "--seed", "2", "--seconds", secs);
      } finally {
        s.childEnv.remove("COLORS_TX_FAULT_COMMIT_US");
      }
    }
    SharedObject[] objs = accounts.stream().map(o -> (SharedObject) o).toArray(SharedObject[]::new);
    AtomicReference<String> bad = new AtomicReference<>();
    int[] audits = new int[1];
    Thread auditor = new Thread(() -> {
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(SECONDS + 1);
      while (System.nanoTime() < until && bad.get() == null) {
        try {
          long sum = SharedMemory.atomically(() -> {
            long t = 0;
            for (SharedObject o : objs) t += o.getLong("balance");
            return t;
          }, 1000);
          if (sum != total) bad.set("audit saw " + sum + " instead of " + total);
          audits[0]++;
        } catch (TransactionConflictException e) {
          // a killed worker's objects held until the server rolled it back: audit again
        }
      }
    });
    auditor.start();
    // Victims: each runs until it has transferred, then is killed with SIGKILL (mid-transaction or
    // mid-commit, wherever it is); one after another while the others run.
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(SECONDS);
    int killed = 0;
    do {
      Process victim = s.spawn("tx", "bank", "--socket", sock, "--seed", Integer.toString(3 + killed));
      BufferedReader vout = new BufferedReader(new InputStreamReader(victim.getInputStream(), StandardCharsets.UTF_8));
      String line;
      while ((line = vout.readLine()) != null
          && !(line.startsWith("transfers ") && Long.parseLong(line.substring(10)) > 0)) {
        // wait until it has transferred
      }
      victim.destroyForcibly();
      assertTrue(victim.waitFor(30, TimeUnit.SECONDS));
      killed++;
    } while (System.nanoTime() < end);
    List<String> outs = new ArrayList<>();
    for (Process p : List.of(a, b)) {
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(p.waitFor(60, TimeUnit.SECONDS));
      assertEquals(0, p.exitValue(), out);
      outs.add(out);
    }
    auditor.join();
    assertEquals(null, bad.get());
    assertTrue(audits[0] > 0);
    for (String out : outs) {
      String[] lines = out.strip().split("\n");
      String last = lines[lines.length - 1];
      assertTrue(last.startsWith("transfers ") && Long.parseLong(last.substring(10)) > 0, out);
    }
    // In a transaction: it waits (retrying) while the killed worker's objects are still held.
    long sum = SharedMemory.atomically(() -> {
      long t = 0;
      for (SharedObject o : objs) t += o.getLong("balance");
      return t;
    }, 1000);
    assertEquals(total, sum);
  }
}
