package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import demo.Employee;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Java and Python processes sharing objects: the paper's Employee both ways (Python creates and
 * evolves it, Java reads and changes it; Java allocates a newer version, Python reads it), the
 * repository idiom with lock/await/signalAll, a channel both ways, a cyclic graph built in Java and
 * walked in Python. Skipped when the Python binding was not built (<build>/bindings-python).
 */
@ExtendWith(ColorsServer.class)
class CrossLanguageTest {
  static Path pythonPath;

  static final String PRELUDE = String.join("\n",
      "import sys, colors_shm as cs",
      "from dataclasses import dataclass",
      "@dataclass",
      "class Employee:",
      "    name: str",
      "    salary: float",
      "cs.register(Employee, 'demo.Employee')",
      "");

  @BeforeAll
  static void findPythonBinding() throws IOException {
    String p = System.getenv("COLORS_PYTHONPATH");
    Path dir = p != null && !p.isEmpty() ? Path.of(p) : ColorsServer.REPO.resolve("build/bindings-python");
    boolean built = Files.isDirectory(dir.resolve("colors_shm"))
        && Files.list(dir.resolve("colors_shm")).anyMatch(f -> f.getFileName().toString().startsWith("_colors_shm"));
    Assumptions.assumeTrue(built, "the Python binding is not built in " + dir + ": cross-language tests skipped");
    pythonPath = dir;
  }

  /** A python3 child running `code` (after PRELUDE), attached to the test server. */
  static final class Py implements AutoCloseable {
    final Process proc;
    final BufferedReader out;

    Py(String code) throws IOException {
      this(code, ColorsServer.server().socket);
    }

    /** The same, attached to the server at {@code socket}. */
    Py(String code, Path socket) throws IOException {
      ProcessBuilder pb = new ProcessBuilder("python3", "-c", PRELUDE + code);
      pb.environment().put("PYTHONPATH", pythonPath.toString());
      pb.environment().put("COLORS_SOCKET", socket.toString());
      pb.environment().put("PYTHONUNBUFFERED", "1");
      pb.redirectError(ProcessBuilder.Redirect.INHERIT);
      proc = pb.start();
      out = new BufferedReader(new InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8));
    }

    String line() throws IOException, InterruptedException {
      String l = out.readLine();
      if (l == null) throw new AssertionError("python child ended early, exit " + proc.waitFor());
      return l;
    }

    void finish() throws InterruptedException {
      assertTrue(proc.waitFor(60, TimeUnit.SECONDS), "python child did not exit");
      assertEquals(0, proc.exitValue(), "python child failed (its stderr is above)");
    }

    @Override
    public void close() {
      proc.destroyForcibly();
    }
  }

  static List<String> run(String code) throws Exception {
    try (Py py = new Py(code)) {
      List<String> lines = new ArrayList<>();
      for (String l; (l = py.out.readLine()) != null;) lines.add(l);
      py.finish();
      return lines;
    }
  }

  static String unique(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  @Test
  void employeeBothWays() throws Exception {
    String r1 = unique("emp");
    String r2 = unique("emp2");
    // Python creates an Employee and evolves it (adds `state`).
    run("e = cs.allocate(Employee, name='Smith', salary=100.0)\n"
        + "e.state = 'CA'\n"
        + "cs.repository('" + r1 + "').set(e)\n");
    SharedObject e = (SharedObject) SharedMemory.findOrCreateRepository(r1).get();
    assertEquals("demo.Employee", e.className());
    assertEquals(List.of("name", "salary", "state"), e.fieldNames());
    assertTrue(SharedMemory.getSharedType(e).version() >= 2);
    Employee je = e.toPrivate(Employee.class);  // Java's own Employee; `state` stays in the shared object
    assertEquals("Smith", je.name);
    assertEquals(100.0, je.salary);
    e.set("salary", je.salary + 50);  // Java changes salary, Python sees it
    List<String> seen = run("e = cs.repository('" + r1 + "').get()\n"
        + "print(type(e).__name__, e.name, e.salary, e.state)\n");
    assertEquals(List.of("Employee Smith 150.0 CA"), seen);

    // Java allocates a newer version (with manager, tags, age); Python reads it.
    SharedObject m = SharedMemory.allocateObject(Employee.class);
    m.set("name", "Jones");
    m.set("salary", 90.5);
    m.set("manager", e);
    m.set("tags", SharedMemory.copyToSharedMemory(List.of("java", 1)));
    SharedMemory.findOrCreateRepository(r2).set(m);
    seen = run("m = cs.repository('" + r2 + "').get()\n"
        + "print(type(m).__name__, m.name, m.salary, m.manager.name, m.manager.state, list(m.tags), m.age)\n"
        + "print(sorted(f.name for f in cs.shared_type(m).fields))\n"
        + "m.manager.salary = 175.0\n");
    assertEquals("Employee Jones 90.5 Smith CA ['java', 1] 0", seen.get(0));
    assertEquals("['age', 'manager', 'name', 'salary', 'tags']", seen.get(1));
    assertEquals(175.0, e.getDouble("salary"));
  }

  @Test
  void repositoryIdiomWithAPythonProcess() throws Exception {
    String name = unique("idiom-py");
    ObjectRepository r = SharedMemory.findOrCreateRepository(name);
    try (Py py = new Py("r = cs.repository('" + name + "')\n"
        + "with cs.synchronized(r):\n"
        + "    print('waiting')\n"
        + "    while r.get() is None:\n"
        + "        cs.wait(r)\n"
        + "    box = r.get()\n"
        + "with cs.synchronized(box):\n"
        + "    box['result'] = sum(box['job'])\n"
        + "    cs.notify_all(box)\n"
        + "print('done')\n")) {
      assertEquals("waiting", py.line());
      SharedMap box = (SharedMap) SharedMemory.copyToSharedMemory(Map.of("job", List.of(3, 4, 5)));
      try (SharedMonitor m = SharedMemory.lock(r)) {
        r.set(box);
        m.signalAll();
      }
      try (SharedMonitor m = SharedMemory.lock(box)) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (box.get("result") == null && System.nanoTime() < deadline) m.await(1000);
      }
      assertEquals(12L, box.get("result"));
      assertEquals("done", py.line());
      py.finish();
    }
  }

  @Test
  void channelWithAPythonProcess() throws Exception {
    String in = unique("to-py");
    String out = unique("from-py");
    ObjectChannel cin = SharedMemory.findOrCreateChannel(in, 2);
    ObjectChannel cout = SharedMemory.findOrCreateChannel(out, 2);
    int n = 20;
    try (Py py = new Py("cin = cs.channel('" + in + "', 2)\n"
        + "cout = cs.channel('" + out + "', 2)\n"
        + "print('ready')\n"
        + "for i in range(" + n + "):\n"
        + "    v = cin.receive(timeout=30)\n"
        + "    cout.send(cs.copy_to({'sum': sum(v), 'same': v, 'py': [i, 'x' * i, 2.5, True, None]}))\n"
        + "cout.send('bye')\n")) {
      assertEquals("ready", py.line());
      for (int i = 0; i < n; i++) {
        SharedList l = (SharedList) SharedMemory.copyToSharedMemory(new long[] {i, i, 1});
        cin.send(l);
        SharedMap reply = (SharedMap) cout.receive(30_000);
        assertEquals(2L * i + 1, reply.get("sum"));
        assertSame(l, reply.get("same"));  // the very object: the same proxy
        assertEquals(java.util.Arrays.asList((long) i, "x".repeat(i), 2.5, true, null), reply.get("py"));
      }
      assertEquals("bye", cout.receive(30_000));
      py.finish();
    }
  }

  @Test
  void cyclicGraphBuiltInJavaWalkedInPython() throws Exception {
    String name = unique("cycle-py");
    Map<String, Object> a = new HashMap<>();
    Map<String, Object> b = new HashMap<>();
    a.put("next", b);
    b.put("next", a);
    a.put("name", "a");
    List<Object> root = new ArrayList<>(List.of(a, b));
    root.add(root);
    Employee boss = new Employee("Boss", 1);
    boss.manager = boss;
    root.add(boss);
    SharedList s = (SharedList) SharedMemory.copyToSharedMemory(root);
    SharedMemory.findOrCreateRepository(name).set(s);
    List<String> out = run("root = cs.repository('" + name + "').get()\n"
        + "a, b = root[0], root[1]\n"
        + "cur = a\n"
        + "for _ in range(1001):\n"
        + "    cur = cur['next']\n"
        + "print(a['next'] is b, b['next'] is a, root[2] is root, cur is b, root[3].manager is root[3])\n"
        + "a['visited'] = 'python'\n");
    assertEquals(List.of("True True True True True"), out);
    assertEquals("python", ((SharedMap) s.get(0)).get("visited"));
    assertNull(((SharedMap) s.get(1)).get("visited"));
  }

  /**
   * Java readers through the read cache (ReadCache) while a Python process replaces a bound
   * instance's field object and rewrites its list, and is killed with SIGKILL mid-run: no value a
   * reader sees ever goes back, and afterwards reads through the cache agree with JNI reads of the
   * shared object (what the Python process wrote last, whenever it died).
   */
  @Test
  void readCacheReadersWhileAPythonWriterIsKilled() throws Exception {
    int poolSize = 20000;
    demo.cache.Holder h = SharedMemory.allocate(demo.cache.Holder.class);
    h.items = SharedMemory.allocate(List.class);
    List<Object> pool = SharedMemory.allocate(List.class, 0);
    for (int i = 1; i <= poolSize; i++) {
      demo.cache.Holder x = SharedMemory.allocate(demo.cache.Holder.class);
      x.n = i;
      pool.add(x);
    }
    h.next = (demo.cache.Holder) pool.get(0);
    String key = unique("readcache");
    List<Object> root = SharedMemory.allocate(List.class, 0);
    root.add(h);
    root.add(pool);
    SharedMemory.findOrCreateRepository(key).set(root);
    java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
    java.util.concurrent.ConcurrentLinkedQueue<Throwable> failures = new java.util.concurrent.ConcurrentLinkedQueue<>();
    java.util.concurrent.atomic.AtomicLong reads = new java.util.concurrent.atomic.AtomicLong();
    List<Thread> readers = List.of(ReadCacheTest.checkingReader(h, stop, failures, reads),
        ReadCacheTest.checkingReader(h, stop, failures, reads));
    readers.forEach(Thread::start);
    try (Py py = new Py("root = cs.repository('" + key + "').get()\n"
        + "h, pool = root[0], root[1]\n"
        + "items = h.items\n"
        + "print('ready', flush=True)\n"
        + "for i in range(1, len(pool)):\n"
        + "    h.next = pool[i]\n"
        + "    if i % 64 == 0:\n"
        + "        items.clear()\n"
        + "    else:\n"
        + "        items.append(i % 64 - 1)\n"
        + "print('done', flush=True)\n")) {
      assertEquals("ready", py.line());
      Thread.sleep(1500);
      py.proc.destroyForcibly();  // SIGKILL, wherever it is
      assertTrue(py.proc.waitFor(10, TimeUnit.SECONDS));
    } finally {
      stop.set(true);
      for (Thread t : readers) t.join();
    }
    assertTrue(failures.isEmpty(), () -> "failures: " + failures);
    assertTrue(reads.get() > 100, "the readers ran: " + reads.get());
    SharedObject view = SharedMemory.sharedView(h);
    Object written = Native.objGet(view.handle, "next");
    assertSame(written, h.next, "the object Python wrote last, read through the cache");
    assertTrue(h.next.n > 1, "Python wrote before it was killed");
    assertEquals(java.util.Arrays.asList(Native.listItems(((SharedList) h.items).handle)), new ArrayList<>(h.items));
  }
}
