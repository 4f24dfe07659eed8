package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import demo.plain.PlainEmployee;
import demo.staff.Employee;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.colors.rpc.RpcClient;
import org.colors.rpc.RpcServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Transactions from Java (Transaction, SharedMemory.atomically): atomicity of field, container,
 * repository and allocation changes, flat nesting, isolation of the field fast path, conflicts,
 * deadlocks, refused operations, misuse, and rollback of a JVM killed inside a transaction.
 */
@ExtendWith(ColorsServer.class)
class TransactionTest {
  static String unique(String p) {
    return p + "-" + UUID.randomUUID();
  }

  /** A shared object of class tx.Counter: n (integer), items (list), label (string). */
  static SharedObject counter(long n) {
    Map<String, SharedType.Kind> f = new LinkedHashMap<>();
    f.put("n", SharedType.Kind.INTEGER);
    f.put("items", SharedType.Kind.LIST);
    f.put("label", SharedType.Kind.STRING);
    SharedObject c = SharedMemory.allocateObject(SharedMemory.defineClass("tx.Counter", f));
    c.set("n", n);
    c.set("items", SharedMemory.allocate(List.class));
    return c;
  }

  @Test
  void commitPublishesAndRollbackUndoesFieldWrites() {
    SharedObject c = counter(1);
    try (Transaction tx = SharedMemory.beginTransaction()) {
      assertTrue(SharedMemory.inTransaction());
      c.set("n", 2L);
      c.set("label", "in tx");
      assertEquals(2L, c.getLong("n"));  // a transaction reads its own writes
      tx.rollback();
    }
    assertFalse(SharedMemory.inTransaction());
    assertEquals(1L, c.getLong("n"));
    assertNull(c.get("label"));
    try (Transaction tx = SharedMemory.beginTransaction()) {
      c.set("n", 3L);
      c.set("label", "committed");
      tx.commit();
    }
    assertEquals(3L, c.getLong("n"));
    assertEquals("committed", c.getString("label"));
    try (Transaction tx = SharedMemory.beginTransaction()) {
      c.set("n", 4L);
    }  // closed without commit: rolled back
    assertEquals(3L, c.getLong("n"));
  }

  @Test
  void fieldsOfBoundInstancesAreTransactional() {
    Employee e = SharedMemory.allocate(Employee.class);
    e.age = 30;
    e.salary = 10.5;
    e.name = "before";
    Employee boss = SharedMemory.allocate(Employee.class);
    try (Transaction tx = SharedMemory.beginTransaction()) {
      e.age = 31;  // the agent's accessors: through JNI inside a transaction
      e.salary += 1;
      e.name = "after";
      e.active = true;
      e.manager = boss;
      e.bonus = Float.NaN;  // a boxed float
      assertEquals(31, e.age);
      assertEquals(11.5, e.salary);
      assertEquals("after", e.name);
      assertSame(boss, e.manager);
      assertTrue(Float.isNaN(e.bonus));
    }
    assertEquals(30, e.age);
    assertEquals(10.5, e.salary);
    assertEquals("before", e.name);
    assertFalse(e.active);
    assertNull(e.manager);
    assertEquals(0.0f, e.bonus);
    SharedMemory.atomically(() -> {
      e.age = 40;
      e.name = "done";
    });
    assertEquals(40, e.age);
    assertEquals("done", e.name);
  }

  @Test
  @SuppressWarnings("unchecked")
  void mapsAndSetsCopiedInsideATransactionAreComplete() {
    // copyToSharedMemory builds them in one native call (set_add/map_put on the new containers),
    // inside the transaction as outside; storing the copy commits or rolls back with it.
    Map<Object, Object> holder = (Map<Object, Object>) SharedMemory.copyToSharedMemory(Map.of("k", 0L));
    Map<String, Object> big = new java.util.HashMap<>();
    for (int i = 0; i < 300; i++) big.put("e" + i, i % 2 == 0 ? (Object) (long) i : Set.of("s" + i, (long) i));
    Object copy;
    try (Transaction tx = SharedMemory.beginTransaction()) {
      copy = SharedMemory.copyToSharedMemory(big);
      holder.put("m", copy);
      tx.commit();
    }
    Map<Object, Object> m = (Map<Object, Object>) holder.get("m");
    assertEquals(300, m.size());
    assertEquals(4L, m.get("e4"));
    assertEquals(Set.of("s5", 5L), Set.copyOf((Set<Object>) m.get("e5")));
    try (Transaction tx = SharedMemory.beginTransaction()) {
      holder.put("m", SharedMemory.copyToSharedMemory(Map.of("other", Set.of(1L))));
      assertEquals(Set.of(1L), Set.copyOf((Set<Object>) ((Map<Object, Object>) holder.get("m")).get("other")));
    }  // rolled back
    assertEquals(300, ((Map<Object, Object>) holder.get("m")).size());
  }

  @Test
  @SuppressWarnings("unchecked")
  void containerChangesCommitOrRollBack() {
    List<Object> list = (List<Object>) SharedMemory.copyToSharedMemory(List.of(1L, 2L, 3L));
    Map<Object, Object> map = (Map<Object, Object>) SharedMemory.copyToSharedMemory(Map.of("a", 1L));
    Set<Object> set = (Set<Object>) SharedMemory.copyToSharedMemory(Set.of("x"));
    SharedSortedMap sorted = SharedMemory.newSortedMap();
    sorted.put(1L, "one");
    try (Transaction tx = SharedMemory.beginTransaction()) {
      list.add(4L);
      list.set(0, 10L);
      list.remove(1);
      map.put("b", 2L);
      map.remove("a");
      set.add("y");
      set.remove("x");
      sorted.put(2L, "two");
      sorted.remove(1L);
      assertEquals(List.of(10L, 3L, 4L), new ArrayList<>(list));
    }
    assertEquals(List.of(1L, 2L, 3L), new ArrayList<>(list));
    assertEquals(Map.of("a", 1L), Map.copyOf(map));
    assertEquals(Set.of("x"), Set.copyOf(set));
    assertEquals(Map.of(1L, "one"), Map.copyOf(sorted));
    SharedMemory.atomically(() -> {
      list.add(4L);
      map.put("b", 2L);
      set.add("y");
      sorted.put(2L, "two");
    });
    assertEquals(List.of(1L, 2L, 3L, 4L), new ArrayList<>(list));
    assertEquals(Map.of("a", 1L, "b", 2L), Map.copyOf(map));
    assertEquals(Set.of("x", "y"), Set.copyOf(set));
    assertEquals(Map.of(1L, "one", 2L, "two"), Map.copyOf(sorted));
  }

  /**
   * A collection change outside any transaction waits for the transaction that holds the
   * collection: its rollback would otherwise overwrite part of the change, leaving a size that
   * disagrees with the contents.
   */
  @Test
  @SuppressWarnings("unchecked")
  void aPlainChangeWaitsForTheTransactionHoldingTheCollection() throws Exception {
    List<Object> list = (List<Object>) SharedMemory.allocate(List.class);
    SharedSortedMap sorted = SharedMemory.newSortedMap();
    for (long i = 0; i < 100; i++) {
      list.add(i);
      sorted.put(i, i);
    }
    CountDownLatch changed = new CountDownLatch(1);
    long[] rollbackStart = new long[1];
    Thread holder = new Thread(() -> {
      try (Transaction tx = SharedMemory.beginTransaction()) {
        for (long i = 100; i < 300; i++) sorted.put(i, i);
        for (long i = 0; i < 50; i++) {
          sorted.remove(i);
          list.remove(0);
        }
        changed.countDown();
        Thread.sleep(300);
        rollbackStart[0] = System.nanoTime();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    holder.start();
    assertTrue(changed.await(30, TimeUnit.SECONDS));
    long firstPlain = 0;
    for (long i = 1000; i < 4000; i++) {
      sorted.put(i, i);
      list.add(i);
      if (i == 1000) firstPlain = System.nanoTime();
    }
    holder.join();
    assertTrue(firstPlain > rollbackStart[0], "the plain change did not wait for the rollback");
    List<Long> expected = new ArrayList<>();
    for (long i = 0; i < 100; i++) expected.add(i);
    for (long i = 1000; i < 4000; i++) expected.add(i);
    assertEquals(expected.size(), sorted.size());
    assertEquals(expected, new ArrayList<>(sorted.keySet()));
    assertEquals(expected.size(), list.size());
    assertEquals(expected, new ArrayList<>(list));
  }

  /**
   * An interrupt does not end a plain change's wait for a transaction, also in a thread whose
   * earlier blocking call installed libshared's interrupt hook: the change is made after the
   * commit and the interrupt status is kept.
   */
  @Test
  @SuppressWarnings("unchecked")
  void anInterruptNeitherEndsNorLosesAPlainChangesWait() throws Exception {
    List<Object> list = (List<Object>) SharedMemory.allocate(List.class);
    list.add(1L);
    SharedMemory.findOrCreateChannel("tx-interrupt-" + System.nanoTime(), 4).send(1L);  // a blocking call
    CountDownLatch changed = new CountDownLatch(1);
    Thread holder = new Thread(() -> {
      try (Transaction tx = SharedMemory.beginTransaction()) {
        list.add(2L);
        changed.countDown();
        Thread.sleep(300);
        tx.commit();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    holder.start();
    assertTrue(changed.await(30, TimeUnit.SECONDS));
    Thread.currentThread().interrupt();
    try {
      list.add(3L);  // waits for the commit
      assertTrue(Thread.interrupted(), "the interrupt status is kept");
    } finally {
      Thread.interrupted();
      holder.join();
    }
    assertEquals(List.of(1L, 2L, 3L), new ArrayList<>(list));
  }

  /** Runs {@code op} outside any transaction while another thread's transaction, which made {@code change}, rolls back. */
  private static void againstARollback(Runnable change, Runnable op) throws Exception {
    CountDownLatch changed = new CountDownLatch(1);
    Thread holder = new Thread(() -> {
      try (Transaction tx = SharedMemory.beginTransaction()) {
        change.run();
        changed.countDown();
        Thread.sleep(300);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    holder.start();
    assertTrue(changed.await(30, TimeUnit.SECONDS));
    op.run();
    holder.join();
  }

  /**
   * sort, replaceAll and retainAll read the elements and write a result back: their read waits for
   * a transaction that holds the collection, so they never write back what its rollback took back.
   */
  @Test
  @SuppressWarnings("unchecked")
  void aPlainReadModifyWriteNeverWritesBackARolledBackChange() throws Exception {
    List<Object> sorted = (List<Object>) SharedMemory.copyToSharedMemory(List.of(5L, 3L, 9L, 1L));
    againstARollback(() -> {
      sorted.add(0L);
      sorted.remove(2);
    }, () -> sorted.sort(null));
    assertEquals(List.of(1L, 3L, 5L, 9L), new ArrayList<>(sorted));
    List<Object> doubled = (List<Object>) SharedMemory.copyToSharedMemory(List.of(1L, 2L, 3L));
    againstARollback(() -> {
      doubled.add(100L);
      doubled.remove(0);
    }, () -> doubled.replaceAll(x -> (Long) x * 2));
    assertEquals(List.of(2L, 4L, 6L), new ArrayList<>(doubled));
    Set<Object> set = (Set<Object>) SharedMemory.copyToSharedMemory(Set.of(1L, 2L, 3L, 4L));
    againstARollback(() -> {
      set.add(99L);
      set.remove(1L);
    }, () -> set.retainAll(Set.of(2L, 3L, 99L)));
    assertEquals(Set.of(2L, 3L), Set.copyOf(set));
  }

  @Test
  void repositorySetAndAllocationsCommitOrRollBack() {
    ObjectRepository r = SharedMemory.findOrCreateRepository(unique("tx-repo"));
    SharedObject first = counter(1);
    r.set(first);
    try (Transaction tx = SharedMemory.beginTransaction()) {
      SharedObject made = counter(2);  // allocated inside
      made.set("label", "new");
      r.set(made);
      assertEquals(2L, ((SharedObject) r.get()).getLong("n"));
    }
    assertSame(first, r.get());
    SharedObject made = SharedMemory.atomically(() -> {
      SharedObject m = counter(3);
      r.set(m);
      return m;
    });
    assertSame(made, r.get());
    assertEquals(3L, made.getLong("n"));
  }

  @Test
  void anExceptionInsideAtomicallyRollsBackAndPropagates() {
    SharedObject c = counter(5);
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> SharedMemory.atomically(() -> {
      c.set("n", 6L);
      throw new IllegalStateException("boom");
    }));
    assertEquals("boom", e.getMessage());
    assertEquals(5L, c.getLong("n"));
    assertFalse(SharedMemory.inTransaction());
  }

  @Test
  void nestingIsFlat() {
    SharedObject c = counter(0);
    // An inner commit only ends its level: the outer rollback undoes both.
    try (Transaction outer = SharedMemory.beginTransaction()) {
      c.set("n", 1L);
      try (Transaction inner = SharedMemory.beginTransaction()) {
        assertEquals(2, inner.depth());
        c.set("n", 2L);
        inner.commit();
      }
      assertTrue(SharedMemory.inTransaction());
      outer.rollback();
    }
    assertEquals(0L, c.getLong("n"));
    // An inner rollback dooms the whole transaction.
    try (Transaction outer = SharedMemory.beginTransaction()) {
      c.set("n", 1L);
      try (Transaction inner = SharedMemory.beginTransaction()) {
        c.set("n", 2L);
      }
      assertThrows(TransactionAbortedException.class, outer::commit);
    }
    assertEquals(0L, c.getLong("n"));
    assertFalse(SharedMemory.inTransaction());
    // atomically inside atomically joins: one commit.
    SharedMemory.atomically(() -> {
      c.set("n", 7L);
      SharedMemory.atomically(() -> c.set("n", c.getLong("n") + 1));
      assertTrue(SharedMemory.inTransaction());
    });
    assertEquals(8L, c.getLong("n"));
    // An exception escaping an inner atomically dooms the outer.
    assertThrows(TransactionAbortedException.class, () -> SharedMemory.atomically(() -> {
      c.set("n", 100L);
      try {
        SharedMemory.atomically((Runnable) () -> {
          throw new IllegalArgumentException("inner");
        });
      } catch (IllegalArgumentException expected) {
        // swallowed: the outer commit still fails
      }
    }));
    assertEquals(8L, c.getLong("n"));
  }

  @Test
  void atomicallyFromSeveralThreadsLosesNoIncrement() throws Exception {
    SharedObject c = counter(0);
    Employee e = SharedMemory.allocate(Employee.class);
    int threads = 4, each = 300;
    List<Thread> ts = new ArrayList<>();
    AtomicReference<Throwable> failed = new AtomicReference<>();
    for (int t = 0; t < threads; t++) {
      Thread th = new Thread(() -> {
        try {
          for (int i = 0; i < each; i++) {
            SharedMemory.atomically(() -> {
              c.set("n", c.getLong("n") + 1);  // SharedObject: the by-name fast path outside
              e.id += 1;                         // a bound instance: the agent's accessor
            });
          }
        } catch (Throwable x) {
          failed.compareAndSet(null, x);
        }
      });
      ts.add(th);
      th.start();
    }
    for (Thread th : ts) th.join();
    if (failed.get() != null) throw new AssertionError("a worker failed", failed.get());
    assertEquals((long) threads * each, c.getLong("n"));
    assertEquals((long) threads * each, e.id);
  }

  @Test
  void aChildJvmAndThisOneIncrementingTogetherLoseNothing() throws Exception {
    String name = unique("tx-child");
    SharedObject c = counter(0);
    SharedMemory.findOrCreateRepository(name).set(c);
    int childTimes = 400, mine = 400;
    Process child = ColorsServer.server().spawn("tx", "increment", name, Integer.toString(childTimes));
    for (int i = 0; i < mine; i++) SharedMemory.atomically(() -> c.set("n", c.getLong("n") + 1));
    String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(child.waitFor(120, TimeUnit.SECONDS));
    assertEquals(0, child.exitValue(), out);
    assertTrue(out.contains("done " + childTimes), out);
    assertEquals(childTimes + mine, c.getLong("n"));
  }

  /** Runs {@code body} on a new thread inside a transaction that holds until {@code release}. */
  static Thread holder(Runnable body, CountDownLatch holding, CountDownLatch release) {
    Thread t = new Thread(() -> {
      try (Transaction tx = SharedMemory.beginTransaction()) {
        body.run();
        holding.countDown();
        release.await();
        tx.commit();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "tx-holder");
    t.start();
    return t;
  }

  @Test
  void aConflictNamesTheHolderAndTheFastPathReadsThroughTheTransaction() throws Exception {
    SharedObject c = counter(1);
    Employee e = SharedMemory.allocate(Employee.class);
    e.age = 1;
    CountDownLatch holding = new CountDownLatch(1), release = new CountDownLatch(1);
    Thread t = holder(() -> {
      c.set("n", 2L);
      e.age = 2;
    }, holding, release);
    try {
      assertTrue(holding.await(30, TimeUnit.SECONDS));
      // Outside a transaction, reads are not isolated (weak atomicity): the uncommitted value.
      assertEquals(2L, c.getLong("n"));
      // Inside one, the fast-path reads go through the transaction: they wait, then conflict.
      try (Transaction tx = SharedMemory.beginTransaction()) {
        TransactionConflictException x = assertThrows(TransactionConflictException.class, () -> c.getLong("n"));
        assertTrue(x.getMessage().contains("process " + ProcessHandle.current().pid()), x.getMessage());
        assertTrue(x.getMessage().contains("held by"), x.getMessage());
        // Doomed: later operations throw TransactionAbortedException.
        assertThrows(TransactionAbortedException.class, () -> c.set("label", "x"));
      }
      try (Transaction tx = SharedMemory.beginTransaction()) {
        assertThrows(TransactionConflictException.class, () -> {
          int unused = e.age;
        });
      }
      try (Transaction tx = SharedMemory.beginTransaction()) {
        assertThrows(TransactionConflictException.class, () -> e.age = 5);
      }
      // The bulk copy (toPrivate) reads through the transaction too.
      SharedObject p = (SharedObject) SharedMemory.copyToSharedMemory(new PlainEmployee());
      CountDownLatch h2 = new CountDownLatch(1), r2 = new CountDownLatch(1);
      Thread t2 = holder(() -> p.set("age", 9L), h2, r2);
      try {
        assertTrue(h2.await(30, TimeUnit.SECONDS));
        try (Transaction tx = SharedMemory.beginTransaction()) {
          assertThrows(TransactionConflictException.class, () -> p.toPrivate(PlainEmployee.class));
        }
      } finally {
        r2.countDown();
        t2.join();
      }
      assertEquals(9, p.toPrivate(PlainEmployee.class).age);
    } finally {
      release.countDown();
      t.join();
    }
    assertEquals(2L, c.getLong("n"));
    assertEquals(2, e.age);
  }

  @Test
  void bulkCopiesInsideATransactionReadItsOwnWrites() {
    demo.bulk.Holder h = new demo.bulk.Holder();
    h.ints = new int[] {1, 2, 3};
    SharedObject s = (SharedObject) SharedMemory.copyToSharedMemory(h);
    SharedList ints = (SharedList) s.get("ints");
    demo.tree.PlainNode root = new demo.tree.PlainNode();
    root.left = new demo.tree.PlainNode();
    root.left.i = 5;
    SharedObject tree = (SharedObject) SharedMemory.copyToSharedMemory(root);
    SharedObject left = (SharedObject) tree.get("left");
    try (Transaction tx = SharedMemory.beginTransaction()) {
      ints.set(0, 10L);
      left.set("i", 6L);
      left.set("s", "in tx");
      // The bulk reader's rooted walk: list elements under the list's transactional scope, fields
      // through read_slot_rooted; it sees this transaction's writes.
      org.junit.jupiter.api.Assertions.assertArrayEquals(new int[] {10, 2, 3}, s.toPrivate(demo.bulk.Holder.class).ints);
      demo.tree.PlainNode copy = tree.toPrivate(demo.tree.PlainNode.class);
      assertEquals(6, copy.left.i);
      assertEquals("in tx", copy.left.s);
    }
    org.junit.jupiter.api.Assertions.assertArrayEquals(new int[] {1, 2, 3}, s.toPrivate(demo.bulk.Holder.class).ints);
    demo.tree.PlainNode after = tree.toPrivate(demo.tree.PlainNode.class);
    assertEquals(5, after.left.i);
    assertNull(after.left.s);
  }

  @Test
  void aDeadlockOfTwoThreadsIsDetected() throws Exception {
    // Each round: A holds x and wants y, B holds y and wants x. One of them sees the cycle; a round
    // in which the second thread arrives after the first's conflict wait (20 ms) ended is retried.
    String seen = null;
    for (int round = 0; round < 20 && seen == null; round++) {
      SharedObject x = counter(0), y = counter(0);
      CountDownLatch bothHold = new CountDownLatch(2);
      List<String> messages = java.util.Collections.synchronizedList(new ArrayList<>());
      Runnable[] bodies = {() -> cross(x, y, bothHold, messages), () -> cross(y, x, bothHold, messages)};
      Thread a = new Thread(bodies[0]), b = new Thread(bodies[1]);
      a.start();
      b.start();
      a.join();
      b.join();
      for (String m : messages) {
        if (m != null && m.startsWith("deadlock")) seen = m;
      }
      assertFalse(messages.isEmpty(), "two transactions crossing must conflict");
    }
    assertTrue(seen != null, "no deadlock reported in 20 rounds");
    assertTrue(seen.contains("held by the transaction of process " + ProcessHandle.current().pid()), seen);
  }

  private static void cross(SharedObject mine, SharedObject theirs, CountDownLatch bothHold, List<String> messages) {
    try (Transaction tx = SharedMemory.beginTransaction()) {
      mine.set("n", 1L);
      bothHold.countDown();
      bothHold.await(10, TimeUnit.SECONDS);
      theirs.set("n", 1L);
      tx.commit();
    } catch (TransactionConflictException e) {
      messages.add(e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Test
  void misuseGivesClearErrors() throws Exception {
    assertThrows(InvalidArgumentException.class, () -> SharedMemory.beginTransaction(Duration.ZERO));
    assertThrows(InvalidArgumentException.class, () -> SharedMemory.atomically(() -> 1, -1));
    Transaction tx = SharedMemory.beginTransaction();
    tx.commit();
    InvalidArgumentException twice = assertThrows(InvalidArgumentException.class, tx::commit);
    assertTrue(twice.getMessage().contains("already ended"), twice.getMessage());
    assertThrows(InvalidArgumentException.class, tx::rollback);
    tx.close();  // closing an ended transaction does nothing

    Transaction mine = SharedMemory.beginTransaction();
    AtomicReference<Throwable> other = new AtomicReference<>();
    Thread t = new Thread(() -> {
      try {
        mine.commit();
      } catch (Throwable x) {
        other.set(x);
      }
    });
    t.start();
    t.join();
    assertTrue(other.get() instanceof InvalidArgumentException, String.valueOf(other.get()));
    assertTrue(other.get().getMessage().contains("another than") || other.get().getMessage().contains("other than"),
        other.get().getMessage());
    Thread t2 = new Thread(() -> {
      try {
        mine.close();
      } catch (Throwable x) {
        other.set(x);
      }
    });
    t2.start();
    t2.join();
    assertTrue(other.get() instanceof InvalidArgumentException);
    assertTrue(mine.isActive());

    Transaction inner = SharedMemory.beginTransaction();
    InvalidArgumentException open = assertThrows(InvalidArgumentException.class, mine::commit);
    assertTrue(open.getMessage().contains("inner transaction is still open"), open.getMessage());
    inner.commit();
    mine.commit();
    assertFalse(SharedMemory.inTransaction());
  }

  @Test
  void aTimeoutAbortsTheTransaction() throws Exception {
    SharedObject c = counter(1), d1 = counter(0), d2 = counter(0);
    Transaction tx = SharedMemory.beginTransaction(Duration.ofMillis(50));
    try {
      c.set("n", 2L);
      Thread.sleep(120);
      // The deadline is checked while waiting for a holder and every 1024 reads.
      TransactionAbortedException e = assertThrows(TransactionAbortedException.class, () -> {
        for (int i = 0; i < 3000; i++) {
          d1.getLong("n");
          d2.getLong("n");
        }
      });
      assertTrue(e.getMessage().contains("timeout"), e.getMessage());
      assertThrows(TransactionAbortedException.class, tx::commit);
    } finally {
      tx.close();
    }
    assertFalse(SharedMemory.inTransaction());
    assertEquals(1L, c.getLong("n"));
  }

  @Test
  void aTransactionPastItsTimeoutDoesNotCommit() throws Exception {
    // Regression: the deadline was checked only while waiting and every 1024 reads, so a
    // transaction that wrote, then overran its timeout, still committed.
    SharedObject c = counter(1);
    try (Transaction tx = SharedMemory.beginTransaction(Duration.ofMillis(50))) {
      c.set("n", 2L);
      Thread.sleep(120);
      TransactionAbortedException e = assertThrows(TransactionAbortedException.class, tx::commit);
      assertTrue(e.getMessage().contains("timeout"), e.getMessage());
    }
    assertEquals(1L, c.getLong("n"));
  }

  @Test
  void channelsAndRemoteCallsAreRefusedInside() {
    ObjectChannel ch = SharedMemory.findOrCreateChannel(unique("tx-ch"), 4);
    String ep = unique("tx-calc");
    try (RpcServer server = RpcServer.serve(ep, new RpcTestService())) {
      RpcClient calc = RpcClient.connect(ep);
      try (Transaction tx = SharedMemory.beginTransaction()) {
        InvalidArgumentException s = assertThrows(InvalidArgumentException.class, () -> ch.send(1L));
        assertTrue(s.getMessage().contains("not allowed inside a transaction"), s.getMessage());
        assertThrows(InvalidArgumentException.class, () -> ch.trySend(1L));
        assertThrows(InvalidArgumentException.class, ch::tryReceive);
        InvalidArgumentException r = assertThrows(InvalidArgumentException.class, () -> calc.call("add", 1, 2));
        assertTrue(r.getMessage().contains("remote call"), r.getMessage());
        assertThrows(InvalidArgumentException.class, () -> calc.callAsync("add", 1, 2));
        assertThrows(InvalidArgumentException.class, () -> SharedMemory.deleteRepository(unique("x")));
        tx.commit();
      }
      assertEquals(3L, calc.call("add", 1, 2));  // outside: fine
      assertTrue(ch.trySend(1L));
      assertEquals(1L, ch.tryReceive());
      calc.close();
    }
  }

  @Test
  void detachInsideATransactionEndsIt() {
    SharedObject c = counter(1);
    Transaction tx = SharedMemory.beginTransaction();
    c.set("n", 2L);
    SharedMemory.detach();
    TransactionAbortedException e = assertThrows(TransactionAbortedException.class, tx::commit);
    assertTrue(e.getMessage().contains("attachment"), e.getMessage());
    assertFalse(SharedMemory.inTransaction());
    SharedMemory.attach();
    SharedObject again = counter(1);
    SharedMemory.atomically(() -> again.set("n", 2L));  // a new transaction works
    assertEquals(2L, again.getLong("n"));
    // The one that outlived its attachment was rolled back by the server: its orec was released.
    Transaction stale = SharedMemory.beginTransaction();
    SharedMemory.detach();
    SharedMemory.attach();
    assertThrows(TransactionAbortedException.class, () -> counter(0).set("n", 1L));
    stale.close();
    assertFalse(SharedMemory.inTransaction());
  }

  @Test
  void aThreadEndingInsideATransactionHasItRolledBack() throws Exception {
    SharedObject c = counter(1);
    Thread t = new Thread(() -> {
      SharedMemory.beginTransaction();  // never ended
      c.set("n", 2L);
    });
    t.start();
    t.join();
    // libshared's thread-exit hook rolls it back when the native thread ends (after join may return).
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (c.getLong("n") != 1L && System.nanoTime() < deadline) Thread.sleep(5);
    assertEquals(1L, c.getLong("n"));
    SharedMemory.atomically(() -> c.set("n", 3L), 20);  // its orec was released
    assertEquals(3L, c.getLong("n"));
  }

  @Test
  void aJvmKilledInsideATransactionIsRolledBackByTheServer() throws Exception {
    String name = unique("tx-kill");
    ObjectRepository r = SharedMemory.findOrCreateRepository(name);
    SharedObject c = counter(7);
    @SuppressWarnings("unchecked")
    List<Object> items = (List<Object>) c.get("items");
    items.add("committed");
    r.set(c);
    Process child = ColorsServer.server().spawn("tx", "hold", name);
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
      assertEquals("written", out.readLine());
      // Weak atomicity: its uncommitted writes are visible outside transactions.
      assertEquals(-1L, c.getLong("n"));
      assertEquals(2, items.size());
      assertTrue(r.get() != c);
    } finally {
      child.destroyForcibly();  // SIGKILL, inside the transaction
      assertTrue(child.waitFor(30, TimeUnit.SECONDS));
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (c.getLong("n") != 7L && System.nanoTime() < deadline) Thread.sleep(10);
    assertEquals(7L, c.getLong("n"));
    assertEquals(List.of("committed"), new ArrayList<>(items));
    assertSame(c, r.get());
    // Its orecs were released: a transaction can write everything it held.
    SharedMemory.atomically(() -> {
      c.set("n", 8L);
      items.add("after");
      r.set(c);
    }, 0);
    assertEquals(8L, c.getLong("n"));
  }

  @Test
  void fastPathReadsInsideTransactionsSeeConsistentSnapshots() throws Exception {
    // Transfers between accounts (bound instances and views) under atomically; an auditor sums
    // them in read-only transactions through the field fast path's entry points: every sum is
    // the total.
    int n = 8;
    long total = 1000L * n;
    Employee[] bound = new Employee[n];
    SharedObject[] views = new SharedObject[n];
    for (int i = 0; i < n; i++) {
      bound[i] = SharedMemory.allocate(Employee.class);
      bound[i].id = 1000;
      views[i] = counter(1000);
    }
    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1500);
    AtomicReference<Throwable> failed = new AtomicReference<>();
    List<Thread> ts = new ArrayList<>();
    for (int w = 0; w < 2; w++) {
      final int seed = w;
      ts.add(new Thread(() -> {
        java.util.Random rng = new java.util.Random(seed);
        try {
          while (System.nanoTime() < until) {
            int i = rng.nextInt(n), j = (i + 1 + rng.nextInt(n - 1)) % n;
            long amt = rng.nextInt(100);
            SharedMemory.atomically(() -> {
              bound[i].id -= amt;
              bound[j].id += amt;
              views[i].set("n", views[i].getLong("n") - amt);
              views[j].set("n", views[j].getLong("n") + amt);
            });
          }
        } catch (Throwable x) {
          failed.compareAndSet(null, x);
        }
      }));
    }
    long[] audits = new long[1];
    ts.add(new Thread(() -> {
      try {
        while (System.nanoTime() < until) {
          long[] sums = SharedMemory.atomically(() -> {
            long a = 0, b = 0;
            for (Employee e : bound) a += e.id;
            for (SharedObject v : views) b += v.getLong("n");
            return new long[] {a, b};
          });
          if (sums[0] != total || sums[1] != total) {
            throw new AssertionError("inconsistent snapshot: " + sums[0] + ", " + sums[1] + " != " + total);
          }
          audits[0]++;
        }
      } catch (Throwable x) {
        failed.compareAndSet(null, x);
      }
    }));
    for (Thread t : ts) t.start();
    for (Thread t : ts) t.join();
    if (failed.get() != null) throw new AssertionError(failed.get());
    assertTrue(audits[0] > 0);
    long a = 0, b = 0;
    for (int i = 0; i < n; i++) {
      a += bound[i].id;
      b += views[i].getLong("n");
    }
    assertEquals(total, a);
    assertEquals(total, b);
  }
}
