package org.colors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import demo.Employee;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.colors.rpc.RemoteException;
import org.colors.rpc.RpcBatch;
import org.colors.rpc.RpcClient;
import org.colors.rpc.RpcServer;
import org.colors.rpc.RpcTimeoutException;
import org.colors.rpc.UnavailableException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * org.colors.rpc between Java threads and Java processes: calls and conversions, remote
 * exceptions, timeouts, futures, batches (order and sharing), proxies of interfaces, concurrent
 * clients (threads and a second JVM), a server JVM killed mid-call, a client JVM killed mid-call.
 */
@ExtendWith(ColorsServer.class)
class RpcTest {
  static String endpoint;
  static RpcServer server;
  static RpcClient client;

  static String unique(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  @BeforeAll
  static void start() {
    endpoint = unique("svc");
    server = RpcServer.serve(endpoint, new RpcTestService(), 2);
    client = RpcClient.connect(endpoint);
  }

  @AfterAll
  static void stop() {
    client.close();
    server.close();
  }

  /** A child JVM (ChildMain) with its stdout as lines. */
  static final class Child implements AutoCloseable {
    final Process proc;
    final BufferedReader out;

    Child(String... args) throws Exception {
      proc = ColorsServer.server().spawn(args);
      out = new BufferedReader(new InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8));
    }

    String line() throws Exception {
      String l = out.readLine();
      if (l == null) throw new AssertionError("child ended early, exit " + proc.waitFor());
      return l;
    }

    @Override
    public void close() {
      proc.destroyForcibly();
    }
  }

  // ---- calls and conversions --------------------------------------------------------------------

  @Test
  void scalarsStringsAndOverloads() {
    assertEquals(5L, client.call("add", 2, 3));
    assertEquals(6L, client.call("add", 1, 2, 3));  // overload by arity
    assertEquals(7L, client.call("addInts", 3, 4));
    assertEquals("ab", client.call("concat", "a", "b"));
    assertEquals(1.25, client.call("half", 2.5));
    assertEquals(false, client.call("not", true));
    assertEquals(3L, client.call("bytesLength", (Object) new byte[] {1, 2, 3}));
    assertEquals(6L, client.call("sum", List.of(1, 2, 3)));  // a shared list to int[]
    assertNull(client.call("echo", (Object) null));
    assertNull(client.call("put", "k0", 1));  // void
    assertEquals("h\u00e9\uD83D\uDE00", client.call("echo", "h\u00e9\uD83D\uDE00"));
  }

  /**
   * RpcSupport is public for the rpc package, and replyWithCopy took any number for the serving
   * thread's native worker: user code passing one made native code use it as a pointer. Only a
   * live worker of the calling thread is taken; the serving path still replies through it.
   */
  @Test
  void replyWithCopyTakesOnlyTheCallingThreadsWorker() {
    Object graph = new ArrayList<>(List.of(new ArrayList<>(List.of(1L, 2L)), new Employee("e", 1.0)));
    for (long w : new long[] {0x1234, -1, Long.MAX_VALUE}) {
      assertThrows(InvalidArgumentException.class, () -> RpcSupport.replyWithCopy(w, graph), "worker " + w);
    }
    assertFalse(RpcSupport.replyWithCopy(0, graph));  // no worker: nothing replied
    NullPointerException npe = assertThrows(NullPointerException.class, () -> RpcSupport.callWithCopy(1, "echo", null, 1));
    assertEquals("args", npe.getMessage());
    npe = assertThrows(NullPointerException.class, () -> RpcSupport.sendWithCopy(1, "echo", null));
    assertEquals("args", npe.getMessage());
    // callWithCopy and sendWithCopy take the native client handle the same way.
    for (long c : new long[] {0, 0x1234, -1, Long.MAX_VALUE}) {
      InvalidArgumentException x = assertThrows(InvalidArgumentException.class,
          () -> RpcSupport.callWithCopy(c, "echo", new Object[] {graph}, 1000), "client " + c);
      assertTrue(x.getMessage().contains("not a live rpc client"), x.getMessage());
      assertThrows(InvalidArgumentException.class, () -> RpcSupport.sendWithCopy(c, "echo", new Object[] {graph}),
          "client " + c);
    }
    // A reply of a private user object takes the serving thread's own worker through the same path.
    Object e = client.call("employee", "w", 2.5);
    assertEquals("w", ((SharedObject) e).get("name"));
  }

  @Test
  void containersAndSharing() {
    Object l = client.call("echo", List.of(1, 2, 3));
    assertInstanceOf(SharedList.class, l);
    assertEquals(List.of(1L, 2L, 3L), l);
    // A shared list passed as it is: the server's change is the caller's.
    SharedList mine = (SharedList) SharedMemory.copyToSharedMemory(List.of("x"));
    assertEquals(2L, client.call("append", mine, "y"));
    assertEquals(List.of("x", "y"), mine);
    assertSame(mine, client.call("echo", mine));
    // One private object passed twice arrives as one shared object.
    List<Object> p = new ArrayList<>(List.of(1));
    assertEquals(true, client.call("same", p, p));
    assertEquals(false, client.call("same", p, new ArrayList<>(p)));
    // Private results are copied in.
    assertEquals(List.of(0L, 1L, 2L), client.call("makeList", 3));
    Map<?, ?> m = (Map<?, ?>) client.call("makeMap");
    assertEquals(1L, m.get("a"));
    assertEquals(List.of("x", "y"), m.get("b"));
    SharedObject e = (SharedObject) client.call("employee", "Smith", 100.0);
    assertEquals("demo.Employee", e.className());
    assertEquals(100.0, e.getDouble("salary"));
    assertEquals(150.0, client.call("salaryOf", new Employee("Jones", 150.0)));  // a user object argument
  }

  @Test
  void argumentsAndResultsOfEveryShape() {
    // Lists of scalars (built natively in one call) and what needs the copier (maps, sets, user
    // objects, containers met twice, deep or wide nesting): the same values either way.
    List<Object> nested = List.of(1, List.of(2.5, "s", List.of(true)), new byte[] {7}, new int[] {3, 4});
    SharedList r = (SharedList) client.call("echo", nested);
    assertEquals(1L, r.get(0));
    assertEquals(List.of(2.5, "s", List.of(true)), r.get(1));
    assertArrayEquals(new byte[] {7}, (byte[]) r.get(2));
    assertEquals(List.of(3L, 4L), r.get(3));
    assertEquals(List.of(1L, 2L), client.call("echo", (Object) new long[] {1, 2}));
    assertEquals(List.of('a' + 0L), client.call("echo", (Object) new char[] {'a'}));
    List<Object> big = new ArrayList<>();
    for (int i = 0; i < 5000; i++) big.add(i);
    assertEquals(big.size(), ((SharedList) client.call("echo", big)).size());
    assertEquals(5000L * 4999 / 2, client.call("sum", big));
    assertEquals(Map.of("k", List.of(1L)), client.call("echo", Map.of("k", List.of(1))));
    assertEquals(java.util.Set.of(1L, 2L), client.call("echo", java.util.Set.of(1, 2)));
    Object deep = List.of();
    for (int i = 0; i < 100; i++) deep = List.of(deep);
    Object back = client.call("echo", deep);
    for (int i = 0; i < 100; i++) back = ((SharedList) back).get(0);
    assertEquals(List.of(), back);
    List<Object> wide = new ArrayList<>();
    for (int i = 0; i < 200; i++) wide.add(List.of(i));
    assertEquals(List.of(199L), ((SharedList) client.call("echo", wide)).get(199));
    List<Object> cyclic = new ArrayList<>();
    cyclic.add(cyclic);
    SharedList c = (SharedList) client.call("echo", cyclic);
    assertSame(c, c.get(0));
    // Results of every shape.
    assertEquals(List.of(0L, 1L), client.call("makeList", 2));
    SharedList outer = (SharedList) client.call("echo", List.of(List.of(1), List.of(2)));
    assertEquals(List.of(List.of(1L), List.of(2L)), outer);
  }

  // Strings of every kind: empty, ASCII, 2-, 3- and 4-byte UTF-8 (surrogate pairs, the boundaries
  // of each length), NUL, and a long mixed one.
  static final String[] STRINGS;

  static {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < 700; i++) b.append(i % 3 == 0 ? "z" : i % 3 == 1 ? "\u00e9" : "\uD83D\uDE00");
    STRINGS = new String[] {"", "a", "ascii text", "h\u00e9llo", "\u20ac\u4e2d\u6587", "\uD83D\uDE00",
        "a\uD83D\uDE00b\uD834\uDD1E", "nul\u0000inside", "\u007F\u0080\u07FF\u0800\uFFFF\uD800\uDC00\uDBFF\uDFFF",
        b.toString()};
  }

  /** n strings drawn from STRINGS, each made unique, with a null every 97th. */
  static String[] manyStrings(int n) {
    String[] a = new String[n];
    for (int i = 0; i < n; i++) a[i] = i % 97 == 96 ? null : STRINGS[i % STRINGS.length] + i;
    return a;
  }

  /** String[] results converted by a proxy. */
  interface Strings {
    String[] strings(String[] xs);

    List<String> stringList(List<String> xs);
  }

  @Test
  void stringsBothWays() throws Exception {
    // Arguments: the server's echo returns the shared list it received (read back here by the
    // ordinary path); privateCopy sends it back as a private value (a reply built by the bulk copy).
    for (String s : STRINGS) {
      assertEquals(s, client.call("echo", s));
      assertEquals(List.of(s), client.call("echo", List.of(s)));
      assertEquals(List.of(s, s, "k"), client.call("privateCopy", List.of(s, s, "k")));
      assertEquals(List.of(s), client.call("strings", (Object) new String[] {s}));
    }
    for (int n : new int[] {0, 1, 2, 1024}) {
      String[] xs = manyStrings(n);
      assertEquals(Arrays.asList(xs), client.call("echo", (Object) xs));
      assertEquals(Arrays.asList(xs), client.call("strings", (Object) xs));
      assertEquals(Arrays.asList(xs), client.call("stringList", Arrays.asList(xs)));
      assertEquals(Arrays.asList(xs), client.callAsync("strings", (Object) xs).get(10, TimeUnit.SECONDS));
      Strings p = client.proxy(Strings.class);
      assertArrayEquals(xs, p.strings(xs));
      assertEquals(Arrays.asList(xs), p.stringList(Arrays.asList(xs)));
    }
    // Strings among other kinds of elements and in nested lists.
    List<Object> mixed = Arrays.asList(1, "\u00e9", List.of("", 2.5, List.of("\uD83D\uDE00", true, "x")), null, "",
        Arrays.asList("a", null, 7L, List.of()), "\u4e2d", Long.MIN_VALUE, "tail");
    List<Object> expect = Arrays.asList(1L, "\u00e9", List.of("", 2.5, List.of("\uD83D\uDE00", true, "x")), null, "",
        Arrays.asList("a", null, 7L, List.of()), "\u4e2d", Long.MIN_VALUE, "tail");
    assertEquals(expect, client.call("echo", mixed));
    assertEquals(expect, client.call("privateCopy", mixed));
    assertEquals(expect, client.callAsync("privateCopy", mixed).get(10, TimeUnit.SECONDS));
    SharedList withBytes = (SharedList) client.call("privateCopy", Arrays.asList("a", new byte[] {1, 2}, "\u00e9b"));
    assertEquals("a", withBytes.get(0));
    assertArrayEquals(new byte[] {1, 2}, (byte[]) withBytes.get(1));
    assertEquals("\u00e9b", withBytes.get(2));
    CompletableFuture<Object> f1, f2;
    try (RpcBatch b = client.batch()) {  // the batch's arguments and its outcomes' replies
      f1 = b.call("privateCopy", mixed);
      f2 = b.call("strings", (Object) manyStrings(300));
    }
    assertEquals(expect, f1.get(10, TimeUnit.SECONDS));
    assertEquals(Arrays.asList(manyStrings(300)), f2.get(10, TimeUnit.SECONDS));
  }

  @Test
  void loneSurrogatesAreRefusedAsBefore() {
    // As arguments: the native's message (the string goes as a String, not through the blob).
    for (Object arg : new Object[] {"x\uD800", new String[] {"ok", "\uDC00"}, List.of("ok", List.of("a\uD83D"))}) {
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> client.call("echo", arg));
      assertTrue(e.getMessage().contains("lone surrogate"), e.getMessage());
      e = assertThrows(InvalidArgumentException.class, () -> client.callAsync("echo", arg));
      assertTrue(e.getMessage().contains("lone surrogate"), e.getMessage());
    }
    // As results: a remote failure naming it, and the serving threads go on (more calls than threads).
    for (int i = 0; i < 3; i++) {
      for (int kind = 0; kind < 3; kind++) {
        int k = kind;
        RemoteException e = assertThrows(RemoteException.class,
            () -> client.call(Duration.ofSeconds(10), "loneSurrogate", k));
        assertEquals("org.colors.InvalidArgumentException", e.getRemoteType());
        assertTrue(e.getRemoteMessage().contains("lone surrogate"), e.getRemoteMessage());
      }
    }
    assertEquals(List.of("a"), client.call(Duration.ofSeconds(10), "strings", (Object) new String[] {"a"}));
  }

  @Test
  void bulkEncodedArgumentsAreBoundsChecked() throws Exception {
    // Arguments the bulk copy encoded wrongly (only a binding bug could): a colors error, nothing
    // sent, no crash. The graph: object 0, the argument list, of one value.
    Field f = RpcClient.class.getDeclaredField("client");
    f.setAccessible(true);
    long c = f.getLong(client);
    Object declined = new Object();
    byte[] blob = "hello".getBytes(StandardCharsets.UTF_8);
    int[] oneList = {-1, 1};
    byte[] aString = {(byte) Codec.STRING};
    for (long len : new long[] {6, -1, Long.MAX_VALUE}) {
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> Bulk.clientCall(c, "echo",
          10_000L, declined, oneList, 1, aString, new long[] {len}, 1, blob, 5, new Object[0], null, null, null));
      assertTrue(e.getMessage().contains("overruns its bytes"), e.getMessage());
    }
    InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> Bulk.clientCall(c, "echo",
        10_000L, declined, oneList, 1, new byte[] {(byte) Codec.OBJ}, new long[] {1}, 1, blob, 5, new Object[0], null,
        null, null));
    assertTrue(e.getMessage().contains("missing object"), e.getMessage());
    // Well formed: echo gets "hello".
    assertEquals("hello", Bulk.clientCall(c, "echo", 10_000L, declined, oneList, 1, aString, new long[] {5}, 1, blob,
        5, new Object[0], null, null, null));
    // Counts beyond the arrays: a blob of 5 read as 6 bytes, two objects in a pair of ints.
    assertThrows(ArrayIndexOutOfBoundsException.class, () -> Bulk.clientCall(c, "echo", 10_000L, declined, oneList,
        1, aString, new long[] {5}, 1, blob, 6, new Object[0], null, null, null));
    assertThrows(ArrayIndexOutOfBoundsException.class, () -> Bulk.clientCall(c, "echo", 10_000L, declined, oneList,
        2, aString, new long[] {5}, 1, blob, 5, new Object[0], null, null, null));
    e = assertThrows(InvalidArgumentException.class, () -> Bulk.clientCall(c, "echo", 10_000L, declined, oneList,
        0, aString, new long[] {5}, 1, blob, 5, new Object[0], null, null, null));
    assertTrue(e.getMessage().contains("bad counts"), e.getMessage());
    assertEquals(3L, client.call("add", 1, 2));
  }

  @Test
  void argumentsTakeTheBulkCopyAndWhatItDeclinesTheCopier() {
    // One encoding for copies, replies and arguments: a call's arguments are one bulk copy, built
    // and sent in the same native call (echo replies with the shared argument, no copy).
    long before = Bulk.WRITES.get();
    assertEquals(List.of(1L, 2L, 3L), client.call("echo", List.of(1, 2, 3)));
    assertEquals(before + 1, Bulk.WRITES.get());
    before = Bulk.WRITES.get();
    Object back = client.call("echo", new Employee("Ann", 3));
    assertEquals(before + 1, Bulk.WRITES.get());
    assertEquals("Ann", ((SharedObject) back).get("name"));
    // Maps, sets and sorted maps are in it too.
    before = Bulk.WRITES.get();
    java.util.TreeMap<String, Object> sorted = new java.util.TreeMap<>(Map.of("b", 2L, "a", 1L));
    Object back2 = client.call("echo", sorted);
    assertEquals(before + 1, Bulk.WRITES.get());
    assertInstanceOf(SharedSortedMap.class, back2);
    assertEquals(sorted, back2);
    // What it declines goes to the Copier, which raises the per-object path's exception (a sorted
    // map with a null key; an object of no storable class).
    java.util.TreeMap<String, Object> nullKey = new java.util.TreeMap<>(java.util.Comparator.nullsFirst(
        java.util.Comparator.<String>naturalOrder()));
    nullKey.put(null, 1L);
    before = Bulk.WRITES.get();
    NullPointerException npe = assertThrows(NullPointerException.class, () -> client.call("echo", nullKey));
    assertTrue(npe.getMessage().contains("no null keys"), npe.getMessage());
    TypeMismatchException tm = assertThrows(TypeMismatchException.class, () -> client.call("echo", new Object()));
    assertTrue(tm.getMessage().contains("cannot copy an object of class java.lang.Object"), tm.getMessage());
    assertEquals(before, Bulk.WRITES.get());
  }

  @Test
  void badCallsAreRemoteErrors() {
    RemoteException e = assertThrows(RemoteException.class, () -> client.call("nope", 1));
    assertEquals("java.lang.NoSuchMethodException", e.getRemoteType());
    assertTrue(e.getRemoteMessage().contains("nope"), e.getRemoteMessage());
    e = assertThrows(RemoteException.class, () -> client.call("add", 1));
    assertEquals("java.lang.NoSuchMethodException", e.getRemoteType());
    e = assertThrows(RemoteException.class, () -> client.call("addInts", 1L << 40, 1));  // never truncated
    assertEquals("org.colors.SharedOverflowException", e.getRemoteType());
    e = assertThrows(RemoteException.class, () -> client.call("add", "x", 1));
    assertEquals("org.colors.TypeMismatchException", e.getRemoteType());
    e = assertThrows(RemoteException.class, () -> client.call("hashCode"));  // Object's methods are not served
    assertEquals("java.lang.NoSuchMethodException", e.getRemoteType());
  }

  @Test
  void handlerExceptionsKeepTypeAndMessage() {
    RemoteException e = assertThrows(RemoteException.class, () -> client.call("fail", "boom \u00e9"));
    assertEquals("java.lang.IllegalStateException", e.getRemoteType());
    assertEquals("boom \u00e9", e.getRemoteMessage());
    assertEquals("java.lang.IllegalStateException: boom \u00e9", e.getMessage());
    assertInstanceOf(SharedMemoryException.class, e);
    e = assertThrows(RemoteException.class, () -> client.call("failNull"));
    assertEquals("java.lang.UnsupportedOperationException", e.getRemoteType());
    assertEquals("", e.getRemoteMessage());
    assertEquals(3L, client.call("add", 1, 2));  // the server goes on
  }

  // ---- timeouts and interrupts ------------------------------------------------------------------

  @Test
  void timeouts() {
    long t0 = System.nanoTime();
    assertThrows(RpcTimeoutException.class, () -> client.call(Duration.ofMillis(100), "sleep", 1500));
    long ms = (System.nanoTime() - t0) / 1_000_000;
    assertTrue(ms >= 90 && ms < 1200, "timed out after " + ms + " ms");
    assertEquals(9L, client.call(Duration.ofSeconds(30), "add", 4, 5));  // the other thread serves
    RpcClient quick = RpcClient.connect(endpoint, RpcClient.options().timeout(Duration.ofMillis(50)).spinNanos(0));
    assertThrows(RpcTimeoutException.class, () -> quick.call("sleep", 1000));
    assertEquals(2L, quick.call(Duration.ofSeconds(30), "add", 1, 1));  // both server threads may still sleep
    quick.close();
    assertThrows(IllegalStateException.class, () -> quick.call("add", 1, 1));
  }

  @Test
  void theTimeoutBoundsTheWaitForAFullRequestQueue() throws Exception {
    String name = unique("tiny");
    try (RpcServer tiny = RpcServer.serve(name, new RpcTestService(), RpcServer.options().threads(1).queueCapacity(1));
        RpcClient c = RpcClient.connect(name)) {
      CompletableFuture<Object> busy = c.callAsync("sleep", 3000);
      // The queue holds one call: this send returns once the serving thread took the sleep.
      CompletableFuture<Object> queued = c.callAsync("add", 1, 2);
      long t0 = System.nanoTime();
      RpcTimeoutException e =
          assertThrows(RpcTimeoutException.class, () -> c.call(Duration.ofMillis(200), "add", 3, 4));
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertTrue(ms >= 150 && ms < 1500, "timed out after " + ms + " ms");
      assertTrue(e.getMessage().contains("request queue stayed full"), e.getMessage());
      assertEquals(3L, queued.get(30, TimeUnit.SECONDS));
      busy.get(30, TimeUnit.SECONDS);
      assertEquals(15L, c.call(Duration.ofSeconds(30), "add", 7, 8));
    }
  }

  @Test
  void interruptOfAWaitingCaller() throws Exception {
    AtomicReference<Throwable> got = new AtomicReference<>();
    Thread t = new Thread(() -> {
      try {
        client.call("sleep", 2000);
      } catch (Throwable e) {
        got.set(e);
      }
    });
    t.start();
    Thread.sleep(200);
    long t0 = System.nanoTime();
    t.interrupt();
    t.join(5000);
    assertFalse(t.isAlive());
    assertTrue((System.nanoTime() - t0) / 1_000_000 < 1000);
    assertInstanceOf(SharedInterruptedException.class, got.get());
  }

  // ---- futures and batches ---------------------------------------------------------------------

  @Test
  void asyncCalls() throws Exception {
    List<CompletableFuture<Object>> fs = new ArrayList<>();
    for (int i = 0; i < 50; i++) fs.add(client.callAsync("add", i, 100));
    for (int i = 0; i < 50; i++) assertEquals(i + 100L, fs.get(i).get());
    // Callbacks run without get(): the client's waiter resolves the request.
    CountDownLatch done = new CountDownLatch(1);
    AtomicReference<Object> seen = new AtomicReference<>();
    client.callAsync("concat", "a", "sync").thenAccept(v -> {
      seen.set(v);
      done.countDown();
    });
    assertTrue(done.await(10, TimeUnit.SECONDS));
    assertEquals("async", seen.get());
    // Failures complete the future exceptionally.
    CompletableFuture<Object> f = client.callAsync("fail", "later");
    ExecutionException ee = assertThrows(ExecutionException.class, f::get);
    assertEquals("later", ((RemoteException) ee.getCause()).getRemoteMessage());
    // get(timeout) leaves the call running.
    CompletableFuture<Object> slow = client.callAsync("sleep", 300);
    assertThrows(TimeoutException.class, () -> slow.get(20, TimeUnit.MILLISECONDS));
    assertEquals(300L, slow.get(10, TimeUnit.SECONDS));
    assertTrue(slow.isDone());
  }

  @Test
  void batchesRunInOrderAndKeepSharing() throws Exception {
    String k = unique("k");
    List<Object> shared = new ArrayList<>();
    CompletableFuture<Object> put, get, fail, a1, a2, same, after;
    try (RpcBatch b = client.batch()) {
      put = b.call("put", k, 42);
      get = b.call("get", k);  // sees the put
      fail = b.call("fail", "in batch");
      a1 = b.call("append", shared, "x");
      a2 = b.call("append", shared, "y");  // the same shared list as a1's
      same = b.call("same", shared, shared);
      after = b.call("echo", shared);
      assertEquals(7, b.size());
      assertThrows(IllegalStateException.class, put::get);  // not sent yet
    }
    assertNull(put.get());
    assertEquals(42L, get.get());
    ExecutionException ee = assertThrows(ExecutionException.class, fail::get);
    assertEquals("java.lang.IllegalStateException", ((RemoteException) ee.getCause()).getRemoteType());
    assertEquals(1L, a1.get());
    assertEquals(2L, a2.get());
    assertEquals(true, same.get());
    assertEquals(List.of("x", "y"), after.get());
    // Callbacks of batch futures fire through the waiter.
    CompletableFuture<Object> cb;
    try (RpcBatch b = client.batch()) {
      cb = b.call("add", 20, 22).thenApply(v -> "got " + v);
    }
    assertEquals("got 42", cb.get(10, TimeUnit.SECONDS));
    try (RpcBatch b = client.batch()) {
      assertEquals(0, b.size());  // an empty batch sends nothing
    }
  }

  // ---- proxies ---------------------------------------------------------------------------------

  /** The remote methods as a Java interface. */
  interface Service {
    long add(long a, long b);

    int addInts(int a, int b);

    int big();  // 2^40 does not fit: raises

    long pid();

    int[] makeList(int n);

    List<Object> echo(Object x);

    Employee employee(String name, double salary);

    void put(String k, Object v);

    void fail(String message);

    CompletableFuture<Object> sleep(long ms);

    CompletableFuture<Integer> addInts(long a, long b);  // same arity as addInts(int, int): tried in turn

    default long twice(long x) {
      return add(x, x);
    }
  }

  @Test
  void proxies() throws Exception {
    Service s = client.proxy(Service.class);
    assertEquals(5L, s.add(2, 3));
    assertEquals(7, s.addInts(3, 4));
    assertThrows(SharedOverflowException.class, s::big);
    assertEquals(ProcessHandle.current().pid(), s.pid());
    assertArrayEquals(new int[] {0, 1, 2}, s.makeList(3));
    assertEquals(List.of(1L), s.echo(List.of(1)));
    Employee e = s.employee("Smith", 120.0);
    assertEquals("Smith", e.name);
    assertEquals(120.0, e.salary);
    s.put(unique("p"), 1);
    assertEquals(10L, s.sleep(10).get());
    assertEquals(Integer.valueOf(9), s.addInts(4L, 5L).get(10, TimeUnit.SECONDS));
    ExecutionException big = assertThrows(ExecutionException.class, () -> s.addInts(1L << 40, 0L).get());
    assertInstanceOf(RemoteException.class, big.getCause());  // the server refuses to narrow
    assertEquals(8L, s.twice(4));
    assertTrue(s.toString().contains(endpoint));
    assertEquals(s, s);
    RemoteException re = assertThrows(RemoteException.class, () -> s.fail("via proxy"));
    assertEquals("java.lang.IllegalStateException", re.getRemoteType());
    assertEquals("via proxy", re.getRemoteMessage());
  }

  // ---- concurrency -------------------------------------------------------------------------------

  @Test
  void concurrentClientThreads() throws Exception {
    int threads = 4, n = 500;
    List<Thread> ts = new ArrayList<>();
    AtomicReference<Throwable> err = new AtomicReference<>();
    RpcClient other = RpcClient.connect(endpoint);
    for (int t = 0; t < threads; t++) {
      final int id = t;
      RpcClient c = id % 2 == 0 ? client : other;  // two threads per client
      Thread th = new Thread(() -> {
        try {
          for (int i = 0; i < n; i++) {
            Object r = c.call("add", id * 100_000L, i);
            if (!Long.valueOf(id * 100_000L + i).equals(r)) throw new AssertionError(r);
            if (i % 50 == 0) assertEquals(List.of((long) i), c.call("echo", List.of(i)));
          }
        } catch (Throwable e) {
          err.compareAndSet(null, e);
        }
      });
      ts.add(th);
      th.start();
    }
    for (Thread th : ts) th.join(120_000);
    other.close();
    if (err.get() != null) throw new AssertionError(err.get());
  }

  @Test
  void clientInASecondJvm() throws Exception {
    try (Child c = new Child("rpc-client", endpoint, "300")) {
      assertEquals("connected", c.line());
      for (int i = 0; i < 300; i++) assertEquals(i + 7L, client.call("add", i, 7));  // meanwhile, here
      assertEquals("ok", c.line());
      assertTrue(c.proc.waitFor(60, TimeUnit.SECONDS));
      assertEquals(0, c.proc.exitValue());
    }
  }

  @Test
  void serverInASecondJvm() throws Exception {
    String ep = unique("child-svc");
    try (Child c = new Child("rpc-serve", ep, "2")) {
      assertTrue(c.line().startsWith("ready"));
      try (RpcClient rc = RpcClient.connect(ep)) {
        assertEquals(3L, rc.call("add", 1, 2));
        assertEquals(c.proc.pid(), rc.call("pid"));
        RemoteException e = assertThrows(RemoteException.class, () -> rc.call("fail", "over there"));
        assertEquals("java.lang.IllegalStateException", e.getRemoteType());
        assertEquals("over there", e.getRemoteMessage());
        SharedList mine = (SharedList) SharedMemory.copyToSharedMemory(List.of(1));
        assertEquals(2L, rc.call("append", mine, 2));
        assertEquals(List.of(1L, 2L), mine);
        // The child stops serving when its stdin closes: later calls are unavailable.
        c.proc.getOutputStream().close();
        assertEquals("stopped", c.line());
        assertThrows(UnavailableException.class, () -> rc.call("add", 1, 2));
      }
      assertThrows(UnavailableException.class, () -> RpcClient.connect(ep));
    }
  }

  @Test
  void serverJvmExitingClosesItsServers() throws Exception {
    String ep = unique("exiting");
    try (Child c = new Child("rpc-serve-exit", ep)) {
      assertEquals("ready", c.line());
      RpcClient rc = RpcClient.connect(ep);
      CompletableFuture<Object> running = rc.callAsync("sleep", 500);
      Thread.sleep(100);
      CompletableFuture<Object> queued = rc.callAsync("add", 1, 1);  // behind the sleep (one thread)
      c.proc.getOutputStream().close();
      assertEquals("exiting", c.line());
      assertEquals(500L, running.get(10, TimeUnit.SECONDS));  // the shutdown hook let it finish
      ExecutionException ee = assertThrows(ExecutionException.class, () -> queued.get(10, TimeUnit.SECONDS));
      assertInstanceOf(UnavailableException.class, ee.getCause());
      assertTrue(ee.getCause().getMessage().contains("stopped"), ee.getCause().getMessage());
      assertTrue(c.proc.waitFor(30, TimeUnit.SECONDS));
      assertEquals(0, c.proc.exitValue());
    }
  }

  // ---- faults ----------------------------------------------------------------------------------

  @Test
  void serverJvmKilledMidCall() throws Exception {
    String ep = unique("doomed");
    try (Child c = new Child("rpc-serve", ep, "1")) {
      assertTrue(c.line().startsWith("ready"));
      RpcClient rc = RpcClient.connect(ep);
      CompletableFuture<Object> pending = rc.callAsync("sleep", 30_000);
      AtomicReference<Throwable> got = new AtomicReference<>();
      Thread caller = new Thread(() -> {
        try {
          rc.call("sleep", 30_000);
        } catch (Throwable e) {
          got.set(e);
        }
      });
      caller.start();
      Thread.sleep(300);
      long t0 = System.nanoTime();
      c.proc.destroyForcibly();  // SIGKILL
      caller.join(10_000);
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertFalse(caller.isAlive(), "the caller still waits");
      assertInstanceOf(UnavailableException.class, got.get());
      assertTrue(ms < 5000, "noticed after " + ms + " ms");
      ExecutionException ee = assertThrows(ExecutionException.class, () -> pending.get(10, TimeUnit.SECONDS));
      assertInstanceOf(UnavailableException.class, ee.getCause());
      c.proc.waitFor();
      assertThrows(UnavailableException.class, () -> rc.call("add", 1, 2));
      assertFalse(rc.isServerAlive());
      // A new server may take the endpoint over.
      try (RpcServer again = RpcServer.serve(ep, new RpcTestService())) {
        assertEquals(3L, rc.call("add", 1, 2));
      }
    }
  }

  @Test
  void clientJvmKilledMidCall() throws Exception {
    try (Child c = new Child("rpc-slow-call", endpoint, "500")) {
      assertEquals("calling", c.line());
      c.proc.destroyForcibly();
      c.proc.waitFor();
    }
    Thread.sleep(600);  // the server finishes the orphaned call
    for (int i = 0; i < 20; i++) assertEquals(i + 1L, client.call(Duration.ofSeconds(30), "add", i, 1));
  }

  // ---- lifecycle -------------------------------------------------------------------------------

  @Test
  void oneServerPerEndpointAndClose() throws Exception {
    String ep = unique("life");
    RpcServer s = RpcServer.serve(ep, new RpcTestService(), RpcServer.options().threads(1).queueCapacity(16).spinNanos(0));
    assertThrows(InvalidArgumentException.class, () -> RpcServer.serve(ep, new Object()));
    assertThrows(UnavailableException.class, () -> RpcClient.connect(unique("nobody")));
    RpcClient rc = RpcClient.connect(ep, RpcClient.options().spinNanos(0));
    assertEquals(2L, rc.call("add", 1, 1));
    assertTrue(rc.isServerAlive());
    CompletableFuture<Object> running = rc.callAsync("sleep", 300);
    Thread.sleep(100);
    long t0 = System.nanoTime();
    s.close();  // waits for the running call
    assertTrue((System.nanoTime() - t0) / 1_000_000 >= 100);
    assertEquals(300L, running.get(5, TimeUnit.SECONDS));
    assertTrue(s.isClosed());
    s.close();  // idempotent
    assertThrows(UnavailableException.class, () -> rc.call("add", 1, 1));
    assertFalse(rc.isServerAlive());
    assertThrows(UnavailableException.class, () -> RpcClient.connect(ep));
    try (RpcServer s2 = RpcServer.serve(ep, new RpcTestService())) {
      assertEquals(4L, rc.call("add", 2, 2));  // the client follows the new server
    }
  }
}
