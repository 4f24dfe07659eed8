package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Repositories, channels and monitors, within this JVM and across two JVM processes. */
@ExtendWith(ColorsServer.class)
class SyncTest {

  static String unique(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  /** A child JVM with its stdout as lines. */
  static final class Child implements AutoCloseable {
    final Process proc;
    final BufferedReader out;

    Child(String... args) throws Exception {
      this(ColorsServer.server().spawn(args));
    }

    private Child(Process p) {
      proc = p;
      out = new BufferedReader(new InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8));
    }

    String line() throws Exception {
      String l = out.readLine();
      if (l == null) throw new AssertionError("child ended early, exit " + proc.waitFor());
      return l;
    }

    int exit() throws Exception {
      assertTrue(proc.waitFor(60, TimeUnit.SECONDS), "child did not exit");
      return proc.exitValue();
    }

    @Override
    public void close() {
      proc.destroyForcibly();
    }
  }

  // ---- within one process ----------------------------------------------------------------------

  @Test
  void repositoryGetSet() {
    ObjectRepository r = SharedMemory.findOrCreateRepository(unique("repo"));
    assertNull(r.get());
    r.set("text");
    assertEquals("text", r.get());
    r.set(42);
    assertEquals(42L, r.get());
    SharedList l = (SharedList) SharedMemory.copyToSharedMemory(List.of(1L));
    r.set(l);
    assertSame(l, r.get());
    r.set(null);
    assertNull(r.get());
    assertThrows(TypeMismatchException.class, () -> r.set(new ArrayList<>()));
  }

  @Test
  void channelBasicsAndTimeouts() {
    ObjectChannel ch = SharedMemory.findOrCreateChannel(unique("chan"), 2);
    assertEquals(2, ch.capacity());
    assertSame(ch, SharedMemory.findOrCreateChannel(ch.name()));
    assertNull(ch.tryReceive());
    assertTrue(ch.trySend(1));
    ch.send("two");
    assertFalse(ch.trySend(3));
    long t0 = System.nanoTime();
    assertFalse(ch.send(3, 100));
    assertFalse(ch.send(3, Duration.ofMillis(50)));
    assertTrue(System.nanoTime() - t0 >= TimeUnit.MILLISECONDS.toNanos(140));
    assertEquals(1L, ch.receive());
    assertEquals("two", ch.receive(Duration.ofSeconds(1)));
    t0 = System.nanoTime();
    assertNull(ch.receive(100));
    assertNull(ch.receive(Duration.ofMillis(30)));
    assertTrue(System.nanoTime() - t0 >= TimeUnit.MILLISECONDS.toNanos(120));
    assertThrows(InvalidArgumentException.class, () -> ch.send(null));
    assertThrows(InvalidArgumentException.class, () -> ch.receive(-1));
    assertThrows(InvalidArgumentException.class, () -> SharedMemory.findOrCreateChannel(unique("c"), 0));
  }

  @Test
  void channelBetweenThreadsWithBackPressure() throws Exception {
    ObjectChannel ch = SharedMemory.findOrCreateChannel(unique("threads"), 4);
    int n = 500;
    Thread producer = new Thread(() -> {
      for (long i = 0; i < n; i++) ch.send(SharedMemory.copyToSharedMemory(List.of(i, "v" + i)));
    });
    producer.start();
    for (long i = 0; i < n; i++) {
      SharedList l = (SharedList) ch.receive(10_000);
      assertEquals(i, l.getLong(0));
      assertEquals("v" + i, l.get(1));
    }
    producer.join(10_000);
    assertFalse(producer.isAlive());
  }

  @Test
  void monitorIsReentrantAndChecksOwnership() throws Exception {
    SharedMap box = SharedMemory.allocate(SharedMap.class, 0);
    try (SharedMonitor m = SharedMemory.lock(box)) {
      assertTrue(m.isHeldByCurrentThread());
      try (SharedMonitor m2 = SharedMemory.lock(box)) {
        assertTrue(m2.isHeldByCurrentThread());
        m2.signalAll();
      }
      assertTrue(m.isHeldByCurrentThread());
      assertFalse(m.await(20));
      assertFalse(m.await(Duration.ofMillis(10)));
      assertSame(box, m.target());
    }
    assertThrows(NotOwnerException.class, () -> {
      SharedMonitor m = SharedMemory.lock(box);
      m.close();
      m.close();  // twice: nothing
      m.signalAll();
    });
    // Another thread cannot take it while we hold it.
    try (SharedMonitor m = SharedMemory.lock(box)) {
      AtomicReference<Object> got = new AtomicReference<>();
      Thread t = new Thread(() -> got.set(SharedMemory.tryLock(box, Duration.ofMillis(100))));
      t.start();
      t.join();
      assertNull(got.get());
    }
    assertThrows(TypeMismatchException.class, () -> SharedMemory.lock(new ArrayList<>()));
    assertThrows(TypeMismatchException.class, () -> SharedMemory.lock("string"));
  }

  @Test
  void awaitAndSignalAllBetweenThreads() throws Exception {
    SharedMap box = (SharedMap) SharedMemory.copyToSharedMemory(Map.of("n", 0L));
    int threads = 3;
    CountDownLatch done = new CountDownLatch(threads);
    for (int i = 0; i < threads; i++) {
      new Thread(() -> {
        try (SharedMonitor m = SharedMemory.lock(box)) {
          while ((Long) box.get("n") == 0) m.await();
          box.put("n", (Long) box.get("n") + 1);
          m.signalAll();
        }
        done.countDown();
      }).start();
    }
    Thread.sleep(100);
    try (SharedMonitor m = SharedMemory.lock(box)) {
      box.put("n", 1L);
      m.signalAll();
    }
    assertTrue(done.await(10, TimeUnit.SECONDS));
    assertEquals(1L + threads, box.get("n"));
  }

  // ---- interrupts ------------------------------------------------------------------------------

  /** Runs `blocking` in a thread, interrupts it after 150 ms, returns what it threw. */
  private static Throwable interruptWhile(Runnable blocking) throws Exception {
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    AtomicReference<Boolean> flagAfter = new AtomicReference<>();
    Thread t = new Thread(() -> {
      try {
        blocking.run();
      } catch (Throwable e) {
        thrown.set(e);
      }
      flagAfter.set(Thread.currentThread().isInterrupted());
    });
    t.start();
    Thread.sleep(150);
    long t0 = System.nanoTime();
    t.interrupt();
    t.join(5000);
    assertFalse(t.isAlive(), "the blocked call did not notice the interrupt");
    assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(2));
    assertEquals(Boolean.FALSE, flagAfter.get(), "the interrupt status should be cleared when the exception is thrown");
    return thrown.get();
  }

  @Test
  void interruptBlockedReceive() throws Exception {
    ObjectChannel ch = SharedMemory.findOrCreateChannel(unique("intr"), 1);
    assertInstanceOf(SharedInterruptedException.class, interruptWhile(ch::receive));
    // A full channel's send too.
    ch.send(1);
    assertInstanceOf(SharedInterruptedException.class, interruptWhile(() -> ch.send(2)));
    assertEquals(1L, ch.receive());
  }

  @Test
  void interruptAwaitAndLock() throws Exception {
    SharedMap box = SharedMemory.allocate(SharedMap.class, 0);
    AtomicReference<Boolean> heldAfter = new AtomicReference<>();
    Throwable e = interruptWhile(() -> {
      try (SharedMonitor m = SharedMemory.lock(box)) {
        try {
          m.await();
        } finally {
          heldAfter.set(m.isHeldByCurrentThread());
        }
      }
    });
    assertInstanceOf(SharedInterruptedException.class, e);
    assertEquals(Boolean.TRUE, heldAfter.get(), "await returns (throws) with the monitor held again");
    // Blocked in lock() behind another holder.
    try (SharedMonitor m = SharedMemory.lock(box)) {
      assertInstanceOf(SharedInterruptedException.class, interruptWhile(() -> SharedMemory.lock(box)));
    }
    // The monitor is free and usable.
    try (SharedMonitor m = SharedMemory.tryLock(box, Duration.ofSeconds(1))) {
      assertTrue(m.isHeldByCurrentThread());
    }
  }

  // ---- across processes --------------------------------------------------------------------------

  @Test
  void repositoryIdiomAcrossProcesses() throws Exception {
    String name = unique("idiom");
    ObjectRepository r = SharedMemory.findOrCreateRepository(name);
    try (Child child = new Child("repo-idiom", name)) {
      assertEquals("waiting", child.line());
      SharedMap box = (SharedMap) SharedMemory.copyToSharedMemory(Map.of("job", List.of(3L, 4L, 5L)));
      try (SharedMonitor m = SharedMemory.lock(r)) {
        r.set(box);
        m.signalAll();
      }
      try (SharedMonitor m = SharedMemory.lock(box)) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (box.get("result") == null && System.nanoTime() < deadline) m.await(1000);
      }
      assertEquals(12L, box.get("result"));
      assertEquals("done", child.line());
      assertEquals(0, child.exit());
    }
  }

  @Test
  void channelAcrossProcesses() throws Exception {
    String in = unique("to-child");
    String out = unique("from-child");
    ObjectChannel cin = SharedMemory.findOrCreateChannel(in, 2);  // small: back-pressure
    ObjectChannel cout = SharedMemory.findOrCreateChannel(out, 2);
    int n = 40;
    try (Child child = new Child("channel-echo", in, out, Integer.toString(n))) {
      assertEquals("ready", child.line());
      List<SharedList> sent = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        if (i % 4 == 3) {
          cin.send("scalar " + i);
          assertEquals("scalar " + i, cout.receive(30_000));
          continue;
        }
        List<Long> l = new ArrayList<>();
        for (long k = 0; k <= i; k++) l.add(k);
        SharedList s = (SharedList) SharedMemory.copyToSharedMemory(l);
        sent.add(s);
        cin.send(s);
        SharedMap reply = (SharedMap) cout.receive(30_000);
        assertEquals((long) i * (i + 1) / 2, reply.get("sum"));
        assertEquals((long) i + 1, reply.get("size"));
        assertSame(s, reply.get("same"));
      }
      assertEquals("done", child.line());
      assertEquals(0, child.exit());
    }
  }

  @Test
  void cyclicGraphWalkedInAnotherProcess() throws Exception {
    String name = unique("cycle");
    Map<String, Object> a = new java.util.HashMap<>();
    Map<String, Object> b = new java.util.HashMap<>();
    a.put("next", b);
    b.put("next", a);
    List<Object> root = new ArrayList<>(List.of(a, b));
    root.add(root);
    SharedList s = (SharedList) SharedMemory.copyToSharedMemory(root);
    SharedMemory.findOrCreateRepository(name).set(s);
    try (Child child = new Child("walk-cycle", name)) {
      assertEquals("cycle ok", child.line());
      assertEquals(0, child.exit());
    }
    assertEquals("java child", ((SharedMap) s.get(0)).get("visited"));
  }

  @Test
  void processKilledWhileHoldingAMonitor() throws Exception {
    String name = unique("killed");
    ObjectRepository r = SharedMemory.findOrCreateRepository(name);
    try (Child child = new Child("hold-monitor", name)) {
      assertEquals("locked true", child.line());
      assertNull(SharedMemory.tryLock(r, Duration.ofMillis(50)), "the child holds it");
      child.proc.destroyForcibly();  // SIGKILL while holding the monitor
      assertTrue(child.proc.waitFor(10, TimeUnit.SECONDS));
    }
    OwnerDiedException e = assertThrows(OwnerDiedException.class, () -> SharedMemory.lock(r));
    assertTrue(e.getMessage().contains("died"), e.getMessage());
    try (SharedMonitor m = SharedMemory.lock(r)) {  // once only: then it works
      assertTrue(m.isHeldByCurrentThread());
      m.signalAll();
    }
  }

  @Test
  void serverGoneUnderABlockedReceive() throws Exception {
    ColorsServer.Server own = new ColorsServer.Server();  // this JVM stays on the main server
    own.childEnv.put("COLORS_ATTACH_TIMEOUT_MS", "300");  // the receive waits this long for a successor
    try (Child child = new Child(own.spawnWithSocket(own.socket.toString(), "receive-until-gone", unique("gone")))) {
      assertEquals("receiving", child.line());
      Thread.sleep(100);
      own.proc.destroyForcibly();  // SIGKILL: the server dies without a word
      String l = child.line();
      assertTrue(l.startsWith("ServerGoneException: "), l);
      assertEquals(0, child.exit());
    } finally {
      own.close();
    }
  }

  @Test
  void noServerGivesAClearException() throws Exception {
    String bogus = ColorsServer.server().dir.resolve("nobody-listens.sock").toString();
    try (Child child = new Child(ColorsServer.server().spawnWithSocket(bogus, "no-server", bogus))) {
      // Explicit attach(Path), then implicit attach through COLORS_SOCKET: both name the socket.
      for (int i = 0; i < 2; i++) {
        String l = child.line();
        assertTrue(l.startsWith("ServerGoneException: "), l);
        assertTrue(l.contains("nobody-listens.sock"), l);
      }
      assertEquals(0, child.exit());
    }
  }

  @Test
  void channelCapacityOverTheMaximumNamesIt() {
    for (int bad : new int[] {SharedMemory.CHANNEL_MAX_CAPACITY + 1, Integer.MAX_VALUE, 0, -1}) {
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
          () -> SharedMemory.findOrCreateChannel(unique("huge"), bad));
      assertTrue(e.getMessage().contains("between 1 and " + SharedMemory.CHANNEL_MAX_CAPACITY), e.getMessage());
    }
    assertEquals(SharedMemory.CHANNEL_MAX_CAPACITY,
        SharedMemory.findOrCreateChannel(unique("max"), SharedMemory.CHANNEL_MAX_CAPACITY).capacity());
  }

  @Test
  void deletedRepositoryHandlesThrowAndTheNameStartsAfresh() {
    String name = unique("delrepo");
    assertFalse(SharedMemory.deleteRepository(name));
    ObjectRepository r = SharedMemory.findOrCreateRepository(name);
    r.set(SharedMemory.copyToSharedMemory(List.of(1L, 2L)));
    assertTrue(SharedMemory.deleteRepository(name));
    assertFalse(SharedMemory.deleteRepository(name));
    assertTrue(r.deleted());
    SharedKeyException e = assertThrows(SharedKeyException.class, r::get);
    assertTrue(e.getMessage().contains("repository '" + name + "' was deleted"), e.getMessage());
    assertThrows(SharedKeyException.class, () -> r.set(1L));
    ObjectRepository again = SharedMemory.findOrCreateRepository(name);
    assertFalse(again == r);
    assertNull(again.get());
    again.set("new");
    assertThrows(SharedKeyException.class, r::get);
    assertEquals("new", again.get());
    assertSame(again, SharedMemory.findOrCreateRepository(name));
  }

  @Test
  void deletedChannelHandlesThrowAndMemoryIsReused() {
    String name = unique("delchan");
    ObjectChannel ch = SharedMemory.findOrCreateChannel(name, 4);
    ch.send(SharedMemory.copyToSharedMemory(Map.of("dropped", true)));
    assertTrue(SharedMemory.deleteChannel(name));
    assertFalse(SharedMemory.deleteChannel(name));
    SharedKeyException e = assertThrows(SharedKeyException.class, ch::tryReceive);
    assertTrue(e.getMessage().contains("channel '" + name + "' was deleted"), e.getMessage());
    assertThrows(SharedKeyException.class, () -> ch.trySend(1L));
    // 200 channels of the maximal capacity (512 KiB of slots each: 100 MiB) through a classes
    // space of 64 MiB: only possible because deleted channels' memory is reused.
    for (int i = 0; i < 200; i++) {
      String n = name + "." + (i % 10);
      ObjectChannel c = SharedMemory.findOrCreateChannel(n, SharedMemory.CHANNEL_MAX_CAPACITY);
      c.send((long) i);
      assertEquals((long) i, c.receive(1_000));
      assertTrue(SharedMemory.deleteChannel(n));
    }
    ObjectChannel again = SharedMemory.findOrCreateChannel(name, 2);
    assertFalse(again == ch);
    assertNull(again.tryReceive());
  }

  @Test
  void deletingAChannelWakesAReceiverInAnotherProcess() throws Exception {
    String name = unique("delwake");
    SharedMemory.findOrCreateChannel(name);
    try (Child child = new Child("receive-until-gone", name)) {
      assertEquals("receiving", child.line());
      Thread.sleep(200);  // let it block; if it is not blocked yet, its receive fails at once instead
      assertTrue(SharedMemory.deleteChannel(name));
      String l = child.line();
      assertTrue(l.startsWith("SharedKeyException: channel '" + name + "' was deleted"), l);
      assertEquals(0, child.exit());
    }
  }
}
