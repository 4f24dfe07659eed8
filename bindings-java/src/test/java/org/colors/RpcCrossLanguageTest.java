package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import demo.Employee;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.colors.rpc.RemoteException;
import org.colors.rpc.RpcBatch;
import org.colors.rpc.RpcClient;
import org.colors.rpc.RpcServer;
import org.colors.rpc.UnavailableException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Remote calls between Java and Python processes ({@code colors_shm.rpc}, python3 children as in
 * {@link CrossLanguageTest}; skipped when the Python binding is not built): a Python client calling
 * a Java server and a Java client calling a Python server, with arguments and results of every
 * kind, remote exceptions both ways, batches, futures, a stopped and a killed Python server.
 */
@ExtendWith(ColorsServer.class)
class RpcCrossLanguageTest {
  @BeforeAll
  static void findPythonBinding() throws Exception {
    CrossLanguageTest.findPythonBinding();
  }

  static final String PY_SERVER = String.join("\n",
      "import time",
      "from colors_shm import rpc",
      "class Handler:",
      "    def add(self, a, b):",
      "        return a + b",
      "    def echo(self, x):",
      "        return x",
      "    def fail(self, message):",
      "        raise ValueError(message)",
      "    def emp(self, name, salary):",
      "        return Employee(name, salary)",
      "    def grow(self, l, x):",
      "        l.append(x)",
      "        return len(l)",
      "    def sleep(self, s):",
      "        time.sleep(s)",
      "        return s",
      "srv = rpc.serve(sys.argv[1] if len(sys.argv) > 1 else NAME, Handler(), threads=2)",
      "print('ready', flush=True)",
      "sys.stdin.read()",
      "srv.stop()",
      "print('stopped', flush=True)",
      "");

  /**
   * Serves RpcTestService, makes one warm-up call from this JVM (class mapping, the serving
   * thread's state; its result stays referenced, so its root counts before and after), runs
   * {@code python} with {@code c} connected, and checks its output and that the serving JVM holds
   * as many roots afterwards as before. The count before is taken once the JVM collected what
   * earlier tests dropped: their proxies still hold roots until it does, and a collection during
   * the calls (the JVM's own, or the heap-pressure watcher's) would release them in between.
   */
  private static void assertCallsLeaveNoRoot(String warmMethod, Object[] warmArgs, String python, String expected)
      throws Exception {
    String ep = CrossLanguageTest.unique("java-roots");
    try (RpcServer s = RpcServer.serve(ep, new RpcTestService(), 1);
        RpcClient warm = RpcClient.connect(ep)) {
      Object kept = warm.call(warmMethod, warmArgs);
      long before = settledLiveHandles();
      List<String> out = CrossLanguageTest.run("from colors_shm import rpc\nc = rpc.connect('" + ep + "')\n" + python);
      assertEquals(List.of(expected), out);
      assertEquals(before, SharedMemory.liveHandles());
      java.lang.ref.Reference.reachabilityFence(kept);
    }
  }

  /**
   * {@link SharedMemory#liveHandles()} once the roots of every proxy this JVM dropped are released:
   * after a GC (and the releases it causes), three more in a row leave the count unchanged.
   */
  private static long settledLiveHandles() throws InterruptedException {
    long last = Long.MIN_VALUE;
    for (int i = 0, same = 0; i < 200 && same < 3; i++) {
      System.gc();
      Thread.sleep(20);
      Proxies.drain(Integer.MAX_VALUE);  // what the release thread has not taken yet
      long now = SharedMemory.liveHandles();
      same = now == last ? same + 1 : 0;
      last = now;
    }
    return last;
  }

  @Test
  void repliesCopiedFromPrivateObjectsLeaveNoRootInTheServer() throws Exception {
    // Each private Employee is copied into the heap by the native call that stores it as the
    // reply; no proxy of it is made, which would hold its root until a JVM collection.
    assertCallsLeaveNoRoot("employee", new Object[] {"warm", 1.0}, String.join("\n",
        "for i in range(50):",
        "    e = c.employee('e%d' % i, float(i))",
        "print(type(e).__name__, e.name, e.salary)",
        ""), "Employee e49 49.0");
  }

  @Test
  void argumentsConvertedToPrivateValuesLeaveNoRootInTheServer() throws Exception {
    // Each call sends fresh shared arguments: a list of ints (int[] parameter), a list of
    // Employees (@ByValue List<Employee>), a list of strings (String[]), and a map where a list is
    // expected (refused: the conversion fails with the argument already made); then a batch of
    // such calls. Each is converted to a private value and its root released then, not at the
    // JVM's next collection.
    assertCallsLeaveNoRoot("sum", new Object[] {new int[] {1}}, String.join("\n",
        "t = 0",
        "for i in range(50):",
        "    t += c.sum([i, 1, 2])",
        "    t += c.payroll([Employee('a', float(i)), Employee('b', 1.0)])",
        "    t += len(c.strings(['x', 'y%d' % i]))",
        "    try:",
        "        c.sum({'k': i})",
        "    except rpc.RemoteError as e:",
        "        r = e.remote_type",
        "with c.batch() as b:",
        "    fs = [b.sum([j, 1]) for j in range(20)] + [b.payroll([Employee('c', 2.0)])]",
        "t += sum(f.result() for f in fs)",
        "print(t, r)",
        ""), "2962.0 org.colors.TypeMismatchException");
  }

  @Test
  void objectArgumentsKeepTheirIdentity() throws Exception {
    String ep = CrossLanguageTest.unique("java-same");
    try (RpcServer s = RpcServer.serve(ep, new RpcTestService(), 1)) {
      List<String> out = CrossLanguageTest.run(String.join("\n",
          "from colors_shm import rpc",
          "c = rpc.connect('" + ep + "')",
          "l = cs.copy_to([1])",
          "print(c.same(l, l), c.same(l, cs.copy_to([1])), c.append(l, 5), list(l))",
          ""));
      assertEquals(List.of("True False 2 [1, 5]"), out);
    }
  }

  @Test
  void pythonClientCallsJavaServer() throws Exception {
    String ep = CrossLanguageTest.unique("java-svc");
    try (RpcServer s = RpcServer.serve(ep, new RpcTestService(), 2)) {
      List<String> out = CrossLanguageTest.run(String.join("\n",
          "from colors_shm import rpc",
          "c = rpc.connect('" + ep + "')",
          "print(c.add(2, 3), c.add(1, 2, 3), c.addInts(3, 4))",
          "print(list(c.echo([1, 2, 3])), c.concat('a', 'b\u00e9'), c.sum([1, 2, 3]), c.half(3.0), c.bytesLength(b'xyz'))",
          "try:",
          "    c.fail('from python')",
          "except rpc.RemoteError as e:",
          "    print(e.remote_type, '|', e.remote_message)",
          "try:",
          "    c.addInts(2**40, 1)",
          "except rpc.RemoteError as e:",
          "    print(e.remote_type)",
          "l = cs.copy_to([1])",
          "print(c.append(l, 2), list(l))",
          "e = c.employee('Smith', 100.0)",
          "print(type(e).__name__, e.name, e.salary)",
          "print(c.salaryOf(Employee('Jones', 80.0)))",
          "m = c.makeMap()",
          "print(m['a'], list(m['b']))",
          "with c.batch() as b:",
          "    p = b.put('k', 7)",
          "    g = b.get('k')",
          "    f = b.fail('in batch')",
          "    n = b.add(1, 1)",
          "print(g.result(), n.result(), type(f.exception()).__name__, f.exception().remote_type)",
          "print(c.call_async('add', 4, 5).result())",
          ""));
      assertEquals(List.of(
          "5 6 7",
          "[1, 2, 3] ab\u00e9 6 1.5 3",
          "java.lang.IllegalStateException | from python",
          "org.colors.SharedOverflowException",
          "2 [1, 2]",
          "Employee Smith 100.0",
          "80.0",
          "1 ['x', 'y']",
          "7 2 RemoteError java.lang.IllegalStateException",
          "9"), out);
    }
  }

  @Test
  void stringsBothWaysWithPython() throws Exception {
    String ep = CrossLanguageTest.unique("java-str");
    try (RpcServer s = RpcServer.serve(ep, new RpcTestService(), 2)) {
      // Python sends strings to Java and reads the ones Java's replies built from its blob.
      List<String> out = CrossLanguageTest.run(String.join("\n",
          "from colors_shm import rpc",
          "c = rpc.connect('" + ep + "')",
          "def plain(x):",
          "    return x if isinstance(x, (str, bytes, int, float, bool, type(None))) else [plain(e) for e in x]",
          "S = ['', 'a', 'h\\xe9llo', '\\u20ac\\u4e2d\\u6587', '\\U0001F600', 'a\\U0001D11Eb', 'nul\\x00x',"
              + " '\\x7f\\x80\\u07ff\\u0800\\uffff\\U00010000\\U0010FFFF', 'z\\xe9\\U0001F600' * 300]",
          "xs = [S[i % len(S)] + str(i) for i in range(1024)]",
          "print(plain(c.strings(xs)) == xs, plain(c.strings(xs[:1])) == xs[:1], plain(c.stringList(xs)) == xs)",
          "m = [1, '\\xe9', ['', 2.5, ['\\U0001F600', True, 'x']], None, '', ['a', None, 7, []], 'tail']",
          "print(plain(c.privateCopy(m)) == m, plain(c.echo(m)) == m, plain(c.privateCopy(S)) == S)",
          ""));
      assertEquals(List.of("True True True", "True True True"), out);
    }
    // Java sends strings to Python, which computes with them.
    String pep = CrossLanguageTest.unique("py-str");
    try (CrossLanguageTest.Py py = new CrossLanguageTest.Py("NAME = '" + pep + "'\n" + PY_SERVER)) {
      assertEquals("ready", py.line());
      try (RpcClient c = RpcClient.connect(pep)) {
        for (String x : RpcTest.STRINGS) {
          assertEquals(x + "\u00e9\uD83D\uDE00", c.call("add", x, "\u00e9\uD83D\uDE00"));
          assertEquals(List.of(x, "", x), c.call("echo", List.of(x, "", x)));
        }
        String[] xs = RpcTest.manyStrings(1024);
        assertEquals(java.util.Arrays.asList(xs), c.call("echo", (Object) xs));
        List<Object> mixed = java.util.Arrays.asList("a", 1, List.of("\u4e2d", List.of("\uD834\uDD1E", 2.5)), null, "");
        assertEquals(java.util.Arrays.asList("a", 1L, List.of("\u4e2d", List.of("\uD834\uDD1E", 2.5)), null, ""),
            c.call("echo", mixed));
        SharedList grown = (SharedList) SharedMemory.copyToSharedMemory(new java.util.ArrayList<>(List.of("j")));
        assertEquals(2L, c.call("grow", grown, "\uD83D\uDE00"));
        assertEquals(List.of("j", "\uD83D\uDE00"), grown);
      }
      py.proc.getOutputStream().close();
      assertEquals("stopped", py.line());
      py.finish();
    }
  }

  /** The Python server's remote methods as a Java interface. */
  interface PyHandler {
    long add(long a, long b);

    int add(int a, int b);  // same name and arity: the proxy converts to the declared type

    Employee emp(String name, double salary);

    void fail(String message);
  }

  @Test
  void javaClientCallsPythonServer() throws Exception {
    String ep = CrossLanguageTest.unique("py-svc");
    try (CrossLanguageTest.Py py = new CrossLanguageTest.Py("NAME = '" + ep + "'\n" + PY_SERVER)) {
      assertEquals("ready", py.line());
      try (RpcClient c = RpcClient.connect(ep)) {
        assertEquals(5L, c.call("add", 2, 3));
        assertEquals("ab", c.call("add", "a", "b"));
        assertEquals(List.of(1L, 2L), c.call("echo", List.of(1, 2)));
        assertEquals(2.5, c.call("echo", 2.5));
        RemoteException e = assertThrows(RemoteException.class, () -> c.call("fail", "from java"));
        assertEquals("ValueError", e.getRemoteType());
        assertEquals("from java", e.getRemoteMessage());
        e = assertThrows(RemoteException.class, () -> c.call("missing"));
        assertEquals("AttributeError", e.getRemoteType());
        SharedList mine = (SharedList) SharedMemory.copyToSharedMemory(List.of("j"));
        assertEquals(2L, c.call("grow", mine, "p"));
        assertEquals(List.of("j", "p"), mine);
        SharedObject so = (SharedObject) c.call("emp", "Smith", 10.5);
        assertEquals("demo.Employee", so.className());
        PyHandler h = c.proxy(PyHandler.class);
        assertEquals(3L, h.add(1L, 2L));
        assertEquals("Smith", h.emp("Smith", 1.0).name);
        RemoteException pe = assertThrows(RemoteException.class, () -> h.fail("proxied"));
        assertEquals("ValueError", pe.getRemoteType());
        CompletableFuture<Object> put, fail, last;
        List<Object> shared = new java.util.ArrayList<>();
        try (RpcBatch b = c.batch()) {
          put = b.call("grow", shared, 1);
          fail = b.call("fail", "batched");
          last = b.call("grow", shared, 2);  // the same shared list, after the failure
        }
        assertEquals(1L, put.get());
        ExecutionException ee = assertThrows(ExecutionException.class, fail::get);
        assertEquals("ValueError", ((RemoteException) ee.getCause()).getRemoteType());
        assertEquals(2L, last.get());
        assertEquals(30L, c.callAsync("add", 10, 20).get(10, TimeUnit.SECONDS));
        // Stopped: later calls are unavailable.
        py.proc.getOutputStream().close();
        assertEquals("stopped", py.line());
        assertThrows(UnavailableException.class, () -> c.call("add", 1, 2));
      }
      py.finish();
    }
  }

  @Test
  void pythonServerKilledMidCall() throws Exception {
    String ep = CrossLanguageTest.unique("py-doomed");
    try (CrossLanguageTest.Py py = new CrossLanguageTest.Py("NAME = '" + ep + "'\n" + PY_SERVER)) {
      assertEquals("ready", py.line());
      RpcClient c = RpcClient.connect(ep);
      AtomicReference<Throwable> got = new AtomicReference<>();
      Thread caller = new Thread(() -> {
        try {
          c.call("sleep", 30);
        } catch (Throwable e) {
          got.set(e);
        }
      });
      caller.start();
      Thread.sleep(300);
      long t0 = System.nanoTime();
      py.proc.destroyForcibly();
      caller.join(10_000);
      assertFalse(caller.isAlive());
      assertInstanceOf(UnavailableException.class, got.get());
      assertTrue((System.nanoTime() - t0) / 1_000_000 < 5000);
      assertThrows(UnavailableException.class, () -> c.call(Duration.ofSeconds(5), "add", 1, 2));
    }
  }
}
