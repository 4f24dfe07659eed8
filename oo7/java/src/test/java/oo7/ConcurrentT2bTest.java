package oo7;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import oo7.plain.PlainFactory;
import oo7.shared.SharedFactory;
import org.colors.ObjectRepository;
import org.colors.SharedMemory;
import org.colors.SharedMonitor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Two JVMs run T2b on the same shared database at once (each composite visit under the composite
 * part's monitor). Process A runs it 3 times, B 4 times: every part of a composite visited v times
 * is swapped 7v times, so parts of composites with an odd v must end swapped and the others not;
 * one lost (or torn) swap breaks that for its part ({@link SwapCheck}, checked by
 * {@link SmallDatabaseTest#swapCheckReportsOneLostSwap}).
 */
@ExtendWith(Oo7Server.class)
class ConcurrentT2bTest {
  @Test
  void twoProcessesRunningT2bLoseNoUpdate() throws Exception {
    Schema.Database db = Builder.build(Params.SMALL, 42, new SharedFactory());
    SharedMemory.findOrCreateRepository("oo7.small").set(db);
    Schema.Database generated = Builder.build(Params.SMALL, 42, new PlainFactory());
    int oddComposites = 0;
    for (int c = 0; c < 500; c++) oddComposites += SwapCheck.visitsOf(generated, c) % 2;
    assertTrue(oddComposites > 0 && oddComposites < 500, "the check needs both parities: " + oddComposites);

    String goName = "oo7.test.go";
    ObjectRepository go = SharedMemory.findOrCreateRepository(goName);
    List<Process> procs = new ArrayList<>();
    List<BufferedReader> outs = new ArrayList<>();
    int[] repeats = {3, 4};
    try {
      for (int r : repeats) {
        Process p = Oo7Server.javaProcess("oo7.T2bChild", "small", Integer.toString(r), goName).start();
        p.getOutputStream().close();
        procs.add(p);
        outs.add(new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)));
      }
      for (BufferedReader out : outs) assertEquals("ready", firstLineOf(out), "child output");
      try (SharedMonitor m = SharedMemory.lock(go)) {
        go.set(1L);
        m.signalAll();
      }
      long[][] ran = new long[procs.size()][];
      for (int i = 0; i < procs.size(); i++) {
        String line = firstLineOf(outs.get(i));
        assertTrue(line.startsWith("ran "), "child output: " + line);
        String[] f = line.split(" ");
        ran[i] = new long[] {Long.parseLong(f[1]), Long.parseLong(f[2])};
        assertTrue(procs.get(i).waitFor(60, TimeUnit.SECONDS), "child " + i + " did not exit");
        assertEquals(0, procs.get(i).exitValue(), "child " + i + " exit code");
      }
      // The runs overlapped (both start at the same signal and each takes several T2b runs).
      assertTrue(ran[0][0] < ran[1][1] && ran[1][0] < ran[0][1],
          "the two T2b runs did not overlap: " + ran[0][0] + "-" + ran[0][1] + " and " + ran[1][0] + "-" + ran[1][1]);
    } finally {
      for (Process p : procs) p.destroyForcibly();
    }
    long total = repeats[0] + repeats[1];
    SwapCheck.Swaps swaps = (c, j) -> total * SwapCheck.visitsOf(generated, c);
    List<String> bad = SwapCheck.mismatches(generated, db, swaps);
    assertEquals(List.of(), bad.size() > 10 ? bad.subList(0, 10) : bad, bad.size() + " parts lost or tore a swap");
  }

  /**
   * A JVM and a Python process run T2b at once on the same shared database (issue 18's "T2b from
   * Python and Java at once"): the Java child 3 times, {@code oo7/python/load.py --check --op t2b}
   * 4 times, both released together; both take each composite part's monitor (the same monitor
   * table, keyed by the object), so no swap is lost: the parity check as above, over 7 runs.
   */
  @Test
  void javaAndPythonRunningT2bAtOnceLoseNoUpdate() throws Exception {
    Schema.Database db = Builder.build(Params.SMALL, 42, new SharedFactory());
    SharedMemory.findOrCreateRepository("oo7.small").set(db);
    Schema.Database generated = Builder.build(Params.SMALL, 42, new PlainFactory());
    String pyPath = System.getenv("COLORS_PYTHONPATH");
    if (pyPath == null || pyPath.isEmpty()) {
      String b = System.getenv("BUILD_DIR");
      Path build = b != null && !b.isEmpty() ? Path.of(b).toAbsolutePath() : Oo7Server.REPO.resolve("build");
      pyPath = build.resolve("bindings-python").toString();
    }
    Path loader = Oo7Server.REPO.resolve("oo7/python/load.py");
    assertTrue(Files.isRegularFile(loader), "no Python loader at " + loader);
    String goName = "oo7.test.go.python";
    ObjectRepository go = SharedMemory.findOrCreateRepository(goName);
    int javaRuns = 3, pythonRuns = 4;
    Process jvm = Oo7Server.javaProcess("oo7.T2bChild", "small", Integer.toString(javaRuns), goName).start();
    ProcessBuilder pb = Oo7Server.process(List.of("python3", loader.toString(), "--check", "--op", "t2b", "--repeat",
        Integer.toString(pythonRuns), "--wait-stdin"));
    pb.environment().put("PYTHONPATH", pyPath);
    pb.environment().put("PYTHONDONTWRITEBYTECODE", "1");
    Process python = pb.start();
    try {
      jvm.getOutputStream().close();
      BufferedReader jout = new BufferedReader(new InputStreamReader(jvm.getInputStream(), StandardCharsets.UTF_8));
      BufferedReader pout = new BufferedReader(new InputStreamReader(python.getInputStream(), StandardCharsets.UTF_8));
      assertEquals("ready", firstLineOf(jout), "Java child output");
      StringBuilder pythonOut = new StringBuilder();
      for (String line; (line = pout.readLine()) != null && !line.equals("ready");) pythonOut.append(line).append('\n');
      assertTrue(python.isAlive(), "the Python loader ended before it was ready:\n" + pythonOut);
      try (SharedMonitor m = SharedMemory.lock(go)) {
        go.set(1L);
        m.signalAll();
      }
      python.getOutputStream().write("go\n".getBytes(StandardCharsets.UTF_8));
      python.getOutputStream().close();
      String ran = firstLineOf(jout);
      assertTrue(ran.startsWith("ran "), "Java child output: " + ran);
      String[] f = ran.split(" ");
      long javaStartMs = Long.parseLong(f[1]), javaEndMs = Long.parseLong(f[2]);
      double pyStart = Double.MAX_VALUE, pyEnd = 0;
      int pyDone = 0;
      Pattern opLine = Pattern.compile("^op t2b result (\\d+) start ([\\d.]+) end ([\\d.]+)");
      for (String line; (line = pout.readLine()) != null;) {
        pythonOut.append(line).append('\n');
        Matcher mt = opLine.matcher(line);
        if (!mt.find()) continue;
        assertEquals(Checks.SMALL_42.visits(), Long.parseLong(mt.group(1)), line);
        pyStart = Math.min(pyStart, Double.parseDouble(mt.group(2)));
        pyEnd = Math.max(pyEnd, Double.parseDouble(mt.group(3)));
        pyDone++;
      }
      assertTrue(python.waitFor(120, TimeUnit.SECONDS), "the Python loader did not exit");
      assertEquals(0, python.exitValue(), "Python loader output:\n" + pythonOut);
      assertEquals(pythonRuns, pyDone, "Python loader output:\n" + pythonOut);
      assertTrue(jvm.waitFor(60, TimeUnit.SECONDS), "the Java child did not exit");
      assertEquals(0, jvm.exitValue(), "Java child exit code");
      assertTrue(pyStart * 1000 < javaEndMs && javaStartMs < pyEnd * 1000,
          "the Java (" + javaStartMs + "-" + javaEndMs + " ms) and Python (" + pyStart + "-" + pyEnd
              + " s) T2b runs did not overlap: nothing was tested");
    } finally {
      jvm.destroyForcibly();
      python.destroyForcibly();
    }
    long total = javaRuns + pythonRuns;
    SwapCheck.Swaps swaps = (c, j) -> total * SwapCheck.visitsOf(generated, c);
    List<String> bad = SwapCheck.mismatches(generated, db, swaps);
    assertEquals(List.of(), bad.size() > 10 ? bad.subList(0, 10) : bad, bad.size() + " parts lost or tore a swap");
  }

  /**
   * A process killed (SIGKILL) in the middle of T2b runs, most likely inside a composite part's
   * transaction: the server rolls it back, T2b in this JVM completes (it may wait for the
   * rollback), and every part holds its generated (x, y) or the swapped pair: none half swapped.
   */
  @Test
  void aProcessKilledInT2bIsRolledBack() throws Exception {
    Schema.Database db = Builder.build(Params.SMALL, 42, new SharedFactory());
    SharedMemory.findOrCreateRepository("oo7.small").set(db);
    Schema.Database generated = Builder.build(Params.SMALL, 42, new PlainFactory());
    String goName = "oo7.test.go.kill";
    ObjectRepository go = SharedMemory.findOrCreateRepository(goName);
    Process p = Oo7Server.javaProcess("oo7.T2bChild", "small", "0", goName).start();
    try {
      p.getOutputStream().close();
      BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
      assertEquals("ready", firstLineOf(out));
      try (SharedMonitor m = SharedMemory.lock(go)) {
        go.set(1L);
        m.signalAll();
      }
      assertEquals("done 0", firstLineOf(out));  // it is in its second run now
      p.destroyForcibly();  // SIGKILL
      assertTrue(p.waitFor(30, TimeUnit.SECONDS));
    } finally {
      p.destroyForcibly();
    }
    oo7.shared.SharedOps ops = new oo7.shared.SharedOps();
    assertEquals(Checks.SMALL_42.visits(), ops.t2b(db).count());
    List<String> torn = SwapCheck.torn(generated, db);
    assertEquals(List.of(), torn, "parts neither as generated nor swapped");
  }

  private static String firstLineOf(BufferedReader out) throws Exception {
    String line;
    // Skip JVM warnings; the child prints its lines in order.
    while ((line = out.readLine()) != null) {
      if (line.equals("ready") || line.startsWith("ran ") || line.startsWith("done ")) return line;
      if (line.startsWith("Exception") || line.startsWith("\tat ")) {
        StringBuilder sb = new StringBuilder(line);
        while ((line = out.readLine()) != null) sb.append('\n').append(line);
        throw new AssertionError("child failed:\n" + sb);
      }
    }
    throw new AssertionError("child ended without output");
  }
}
