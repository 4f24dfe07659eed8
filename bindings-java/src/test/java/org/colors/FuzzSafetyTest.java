package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Crash safety of the public API in child JVMs: a detach while other threads are blocked in
 * receive()/await(), and seeded random sequences of public calls ({@link FuzzProgram}) with
 * detach/attach, System.gc(), blocked threads and server kills. The child must exit 0: not killed
 * by a signal, no JVM crash (exit status &gt; 128, an hs_err file). Each fuzz test runs seeds for
 * COLORS_FUZZ_SECS seconds (default 20); a failing seed is printed and reproduces the run.
 */
@ExtendWith(ColorsServer.class)
class FuzzSafetyTest {
  private static final double SECS = Double.parseDouble(System.getenv().getOrDefault("COLORS_FUZZ_SECS", "20"));

  /** Output, exit status and crash evidence of a finished child. */
  private static final class Outcome {
    final int status;
    final String out;

    Outcome(int status, String out) {
      this.status = status;
      this.out = out;
    }
  }

  private static Outcome finish(Process p, long timeoutSec) throws Exception {
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    Thread drain = new Thread(() -> {
      try (InputStream in = p.getInputStream()) {
        in.transferTo(buf);
      } catch (IOException e) {
        // the child is gone
      }
    });
    drain.start();
    if (!p.waitFor(timeoutSec, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      p.waitFor();
      drain.join(5000);
      throw new AssertionError("child timed out; output:\n" + buf.toString(StandardCharsets.UTF_8));
    }
    drain.join(5000);
    Path hsErr = Path.of("hs_err_pid" + p.pid() + ".log");
    String out = buf.toString(StandardCharsets.UTF_8);
    assertFalse(Files.exists(hsErr), "the child JVM crashed: " + hsErr.toAbsolutePath() + "\n" + out);
    assertTrue(p.exitValue() <= 128, "child killed by signal " + (p.exitValue() - 128) + "\n" + out);
    return new Outcome(p.exitValue(), out);
  }

  @Test
  void detachWakesThreadsBlockedInReceiveAndAwait() throws Exception {
    Process p = ColorsServer.server().spawn("detach-wakes-blocked", "wake-" + UUID.randomUUID());
    Outcome o = finish(p, 60);
    assertEquals(0, o.status, o.out);
    assertTrue(o.out.contains("alive false false"), o.out);
    assertTrue(o.out.contains("results [not attached, not attached]"), o.out);
    assertTrue(o.out.contains("stale proxy raises"), o.out);
  }

  private static void fuzz(boolean killServer, int ops) throws Exception {
    long end = System.nanoTime() + (long) (SECS * 1e9);
    long seed = System.nanoTime();
    int runs = 0;
    ColorsServer.Server server = new ColorsServer.Server();
    try {
      while (System.nanoTime() < end || runs == 0) {
        if (!server.proc.isAlive()) {
          server.close();
          server = new ColorsServer.Server();
        }
        // After a server kill no successor comes: each call that needs the server waits this
        // long for one before it throws ServerGoneException (colors-server/README.md).
        server.childEnv.put("COLORS_ATTACH_TIMEOUT_MS", "100");
        long s = seed + runs;
        Process p = server.spawn("fuzz", Long.toString(s), Integer.toString(ops),
            Long.toString(killServer ? server.proc.pid() : 0));
        Outcome o = finish(p, 120);
        assertEquals(0, o.status, "seed " + s + " (killServer " + killServer + ", ops " + ops + ")\n" + o.out);
        assertTrue(o.out.contains("done"), "seed " + s + "\n" + o.out);
        runs++;
      }
    } finally {
      server.close();
    }
    System.out.println("FuzzSafetyTest: " + runs + " programs (killServer " + killServer + ") from seed " + seed);
  }

  @Test
  void randomPublicApiSequences() throws Exception {
    fuzz(false, 300);
  }

  @Test
  void randomPublicApiSequencesWithServerKills() throws Exception {
    fuzz(true, 120);
  }
}
