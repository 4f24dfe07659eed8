package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The heap-pressure hook (libshared heap.hpp, jni_module.cpp, {@link Proxies#onHeapPressure}): when
 * a shared allocation still fails after two collector cycles, the JVM gets to release its dead
 * proxies (System.gc(), the enqueued Roots released) before the allocation gives up.
 *
 * <p>Each test runs a child JVM (with the agent) against its own colors-server with a 16 MiB heap,
 * with a fixed 384 MiB young generation: the loop's Java garbage for one shared heap's worth of
 * nodes is far smaller, so the JVM's own GC does not run before the shared heap is full, and only
 * the hook can release the roots of dropped proxies (the control test shows the loop runs out
 * without it).
 */
@ExtendWith(ColorsServer.class)
class HeapPressureTest {
  private static ColorsServer.Server small;

  /** Young GCs far apart: dropped proxies stay rooted until something else releases them. */
  private static final List<String> JVM = List.of("-Xms512m", "-Xmx512m", "-Xmn384m", "-XX:+UseG1GC");

  @BeforeAll
  static void startServer() {
    small = new ColorsServer.Server("16M");
  }

  @AfterAll
  static void stopServer() throws IOException {
    if (small != null) small.close();
  }

  private record Run(int exit, String out) {}

  private static Run run(List<String> jvmArgs, String... args) throws Exception {
    Process p = small.spawnWithAgent(jvmArgs, args);
    p.getOutputStream().close();
    byte[] out = p.getInputStream().readAllBytes();  // until the child exits (or is killed below)
    if (!p.waitFor(180, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("child did not finish within 180 s: " + new String(out, StandardCharsets.UTF_8));
    }
    return new Run(p.exitValue(), new String(out, StandardCharsets.UTF_8));
  }

  private static long field(String out, String name) {
    Matcher m = Pattern.compile("\\b" + name + "=(\\d+)").matcher(out);
    assertTrue(m.find(), name + " in: " + out);
    return Long.parseLong(m.group(1));
  }

  @Test
  void shortLivedProxiesForManyHeapsDoNotExhaustTheHeap() throws Exception {
    // 8 x 16 MiB through the heap, every proxy dropped at once.
    Run r = run(JVM, "pressure-churn", "8");
    assertEquals(0, r.exit(), r.out());
    assertTrue(r.out().startsWith("ok "), r.out());
    assertTrue(field(r.out(), "allocated") >= 8 * field(r.out(), "capacity"), r.out());
    assertTrue(field(r.out(), "pressureCalls") >= 1, "the hook ran: " + r.out());
    assertTrue(field(r.out(), "released") > 0, r.out());
    assertTrue(r.out().contains("error=null"), r.out());
  }

  @Test
  void withoutTheHookTheSameLoopRunsOut() throws Exception {
    // The control: the hook disabled (it returns at once), the JVM's GC alone is too late.
    List<String> jvm = new ArrayList<>(JVM);
    jvm.add("-Dcolors.heapPressureGc=false");
    Run r = run(jvm, "pressure-churn", "8");
    assertEquals(3, r.exit(), r.out());
    assertTrue(r.out().startsWith("oom "), r.out());
    assertTrue(r.out().contains("shared heap exhausted"), r.out());
  }

  /** A Python rpc server on the small server whose make(n) builds a new list of n 1 KB strings. */
  private static CrossLanguageTest.Py pythonMaker(String endpoint) throws Exception {
    CrossLanguageTest.findPythonBinding();
    CrossLanguageTest.Py py = new CrossLanguageTest.Py(String.join("\n",
        "from colors_shm import rpc",
        "class Maker:",
        "    def make(self, n):",
        "        return ['x' * 1000 + str(i) for i in range(n)]",
        "srv = rpc.serve(" + "'" + endpoint + "'" + ", Maker())",
        "print('ready', flush=True)",
        "sys.stdin.read()",
        "srv.stop()",
        ""), small.socket);
    assertEquals("ready", py.line());
    return py;
  }

  @Test
  void aJvmDroppingRepliesOfAPythonServerLetsThatServerAllocate() throws Exception {
    // The Python server allocates every reply; the JVM only drops them. Without the watcher the
    // JVM's dead proxies pin the 16 MiB heap and the server's next reply fails (the control below).
    String ep = CrossLanguageTest.unique("pressure-py");
    try (CrossLanguageTest.Py py = pythonMaker(ep)) {
      Run r = run(JVM, "pressure-replies", ep, "4");
      assertEquals(0, r.exit(), r.out());
      assertTrue(r.out().startsWith("ok "), r.out());
      assertTrue(field(r.out(), "allocated") >= 4 * field(r.out(), "capacity"), r.out());
      assertTrue(field(r.out(), "watchCalls") >= 1, "the watcher ran: " + r.out());
    }
  }

  @Test
  void withoutTheWatcherThePythonServerRunsOut() throws Exception {
    List<String> jvm = new ArrayList<>(JVM);
    jvm.add("-Dcolors.heapPressureGc=false");
    String ep = CrossLanguageTest.unique("pressure-py-off");
    try (CrossLanguageTest.Py py = pythonMaker(ep)) {
      Run r = run(jvm, "pressure-replies", ep, "4");
      assertEquals(3, r.exit(), r.out());
      assertTrue(r.out().startsWith("oom "), r.out());
      assertTrue(r.out().contains("shared heap exhausted"), r.out());
    }
  }

  @Test
  void reachableObjectsStillRunOutWithAClearMessageInBoundedTime() throws Exception {
    long t0 = System.nanoTime();
    Run r = run(JVM, "pressure-full");
    long ms = (System.nanoTime() - t0) / 1_000_000;
    assertEquals(0, r.exit(), r.out());
    String full = r.out().lines().filter(l -> l.startsWith("full ")).findFirst().orElseThrow(() -> new AssertionError(r.out()));
    assertTrue(field(full, "kept") > 10_000, full);  // 16 MiB of nodes
    assertTrue(full.contains("shared heap exhausted"), full);
    assertTrue(full.contains("--heap-size"), full);
    assertTrue(field(full, "pressureCalls") >= 1, full);
    // Four collector cycles and one hook call (System.gc(), at most 1 s of waiting).
    assertTrue(field(full, "failMs") < 10_000, full);
    // Dropped, the kept nodes' roots go through the hook and the allocation succeeds.
    assertTrue(r.out().contains("again ok"), r.out());
    assertTrue(ms < 120_000, "child took " + ms + " ms");
  }
}
