package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import demo.cache.Holder;
import demo.cache.Pair;
import demo.tree.Node;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The read cache ({@link ReadCache}): a bound instance's reference fields and a list's elements
 * read again give what a read without the cache gives, whatever changed the shared object in
 * between; what it keeps is bounded by its capacity and let go by collect, stores and scopes.
 */
@ExtendWith(ColorsServer.class)
class ReadCacheTest {
  private int capacity;

  @BeforeEach
  void on() {
    capacity = SharedMemory.readCache(1024);
  }

  @AfterEach
  void restore() {
    SharedMemory.readCache(capacity);
  }

  private static Holder holder(long n) {
    Holder h = SharedMemory.allocate(Holder.class);
    h.n = n;
    return h;
  }

  /** A proxy made and dropped inside {@code make}: only what the test keeps refers to it after. */
  private static <T> WeakReference<T> weakly(Supplier<T> make) {
    return new WeakReference<>(make.get());
  }

  /** Whether the JVM's GC clears {@code ref} (a few GCs: the referent is unreachable). */
  private static boolean cleared(WeakReference<?> ref) {
    for (int i = 0; i < 20 && ref.get() != null; i++) {
      System.gc();
      try {
        Thread.sleep(5);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    return ref.get() == null;
  }

  @Test
  void aStringReadAgainInOneCollectorWindowIsTheKeptStringAndReadAnewAfterACycle() {
    Node x = SharedMemory.allocate(Node.class);
    x.s = "hello-" + 42;
    // Direct.View.readString keeps the String it made by the shared string's address and the
    // collector's window: read again with no cycle between, the same String comes back (a cycle
    // that runs between two reads makes another; one of 50 pairs is enough).
    boolean same = false;
    for (int attempt = 0; attempt < 50 && !same; attempt++) {
      String a = x.s, b = x.s;
      assertEquals("hello-42", a);
      assertEquals("hello-42", b);
      same = a == b;
    }
    assertTrue(same, "two reads of one string field never gave the same String");
    x.s = "other";
    assertEquals("other", x.s);  // another shared string: another address
    String before = x.s;
    SharedMemory.collect();  // a finished cycle: another window, so the String is made anew
    String after = x.s;
    assertEquals("other", after);
    assertNotSame(before, after);
  }

  @Test
  void aFieldChangedBehindTheInstanceReadsTheNewObject() {
    Holder h = holder(1);
    Holder a = holder(2), b = holder(3);
    h.next = a;
    assertSame(a, h.next);
    assertSame(a, h.next, "read again: the same proxy");
    // A store by name through JNI does not touch the instance's cache field, as a store by another
    // process does not: the next read must see the new word and return b's proxy.
    Native.objSet(SharedMemory.sharedView(h).handle, "next", Codec.tag(b), Codec.bits(b, Codec.tag(b)),
        Codec.obj(b, Codec.tag(b)));
    assertSame(b, h.next);
    Native.objSet(SharedMemory.sharedView(h).handle, "next", Codec.tag(null), 0, null);
    assertNull(h.next);
    h.next = a;
    assertSame(a, h.next);
  }

  @Test
  void aRolledBackTransactionLeavesTheCachedReadRight() {
    Holder h = holder(1);
    Holder a = holder(2), b = holder(3);
    h.next = a;
    assertSame(a, h.next);
    Transaction tx = SharedMemory.beginTransaction();
    h.next = b;
    assertSame(b, h.next, "inside the transaction: its own write");
    tx.rollback();
    assertSame(a, h.next, "after the rollback: the old object again");
    SharedMemory.atomically(() -> {
      h.next = b;
    });
    assertSame(b, h.next);
  }

  @Test
  void aListChangedAfterItsSnapshotIteratesItsNewElements() {
    Holder h = holder(1);
    Holder a = holder(2), b = holder(3);
    h.items = SharedMemory.allocate(List.class);
    List<Object> items = h.items;
    items.add(a);
    List<Object> seen = new ArrayList<>();
    for (Object o : h.items) seen.add(o);
    assertEquals(List.of(a), seen);
    assertSame(items, h.items);
    Native.listAdd(((SharedList) items).handle, Codec.tag(b), Codec.bits(b, Codec.tag(b)), Codec.obj(b, Codec.tag(b)));
    seen.clear();
    for (Object o : h.items) seen.add(o);
    assertEquals(List.of(a, b), seen, "the list changed: its snapshot is not used");
    assertEquals(2, h.items.size());
    assertSame(b, h.items.get(1));
    items.remove(0);
    assertEquals(List.of(b), new ArrayList<>(h.items));
    assertEquals(1, h.items.size());
  }

  @Test
  void toArrayHandsOutACopyNeverTheSnapshot() {
    SharedList l = (SharedList) SharedMemory.allocate(List.class);
    l.add(1L);
    l.add(2L);
    for (Object o : l) assertNotNull(o);  // makes the snapshot
    Object[] a = l.toArray();
    a[0] = "scribbled";
    assertEquals(List.of(1L, 2L), new ArrayList<>(l), "the snapshot did not change");
  }

  @Test
  void theCapacityBoundsWhatIsKept() {
    SharedMemory.readCache(2);
    Holder h1 = holder(1), h2 = holder(2), h3 = holder(3);
    WeakReference<Holder> first = weakly(() -> {
      h1.next = holder(10);
      return h1.next;  // read: kept in h1's cache
    });
    h2.next = holder(20);
    assertNotNull(h2.next);
    assertTrue(!cleared(first), "two holders fit: h1 keeps its read");
    h3.next = holder(30);
    assertNotNull(h3.next);  // the third holder takes h1's place: h1 loses its entries
    assertTrue(cleared(first), "h1's cached proxy was let go");
    assertEquals(10, h1.next.n, "and is read again");
  }

  @Test
  void zeroTurnsItOffAndBadCapacitiesAreRefused() {
    SharedMemory.readCache(0);
    Holder h = holder(1);
    WeakReference<Holder> child = weakly(() -> {
      h.next = holder(2);
      return h.next;
    });
    assertTrue(cleared(child), "nothing kept with the cache off");
    assertEquals(2, h.next.n);
    assertThrows(InvalidArgumentException.class, () -> SharedMemory.readCache(-1));
    assertThrows(InvalidArgumentException.class, () -> SharedMemory.readCache((1 << 22) + 1));
    assertEquals(0, SharedMemory.readCache(16), "a refused capacity changes nothing");
  }

  @Test
  void collectAndStoresLetGo() {
    Holder h = holder(1);
    WeakReference<Holder> child = weakly(() -> {
      h.next = holder(2);
      return h.next;
    });
    assertTrue(!cleared(child), "kept by h's cache");
    SharedMemory.collect();
    assertTrue(cleared(child), "collect() drops the cache");

    Pair p = SharedMemory.allocate(Pair.class);
    WeakReference<Holder> other = weakly(() -> {
      p.other = holder(3);
      return p.other;
    });
    WeakReference<Holder> next = weakly(() -> {
      p.next = holder(4);
      return p.next;
    });
    assertTrue(!cleared(other) && !cleared(next), "a subclass caches its own and its superclass's fields");
    p.other = null;
    assertTrue(cleared(other), "a store through the field drops what it kept");
    assertTrue(!cleared(next));
    SharedMemory.readCache(16);  // drops every entry: $colors$forget of the subclass and the superclass
    assertTrue(cleared(next));
    assertEquals(4, p.next.n);
  }

  /**
   * collect() drops what the cache kept since the last drop, whether fewer places were taken
   * since than the ring has (only those are visited) or more (the whole ring is).
   */
  @Test
  void collectDropsWhatWasKeptSinceTheLastDropWithinALapOrPastIt() {
    for (int n : new int[] {3, 1500}) {  // the ring has 1024 places
      SharedMemory.collect();  // the last drop: from here on
      List<Holder> holders = new ArrayList<>();
      List<WeakReference<Holder>> children = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        Holder h = holder(i);
        holders.add(h);
        children.add(weakly(() -> {
          h.next = holder(-1);
          return h.next;
        }));
      }
      WeakReference<Holder> last = children.get(n - 1);
      assertTrue(!cleared(last), n + " holders: the last one's cache keeps its child");
      SharedMemory.collect();
      for (WeakReference<Holder> c : children) assertTrue(cleared(c), n + " holders: collect() dropped every entry");
      assertEquals(-1, holders.get(n - 1).next.n);
    }
  }

  @Test
  void aReadInsideAReadScopeIsNotKept() {
    Holder h = holder(1);
    WeakReference<Holder> child = weakly(() -> {
      Holder c = holder(2);
      h.next = c;  // the setter leaves h's cache for the field empty
      return c;
    });
    assertTrue(cleared(child), "no proxy of the child is left: a read scope lends one");
    try (ReadScope s = SharedMemory.readScope()) {
      Holder borrowed = h.next;
      assertNull(SharedMemory.sharedView(borrowed).handle.root, "a borrowed proxy (no root of its own)");
      assertEquals(2, borrowed.n);
    }
    // Had the borrowed proxy been kept in h's cache, this read would hand it out after its scope
    // closed, and reading its field would throw IllegalStateException.
    Holder after = h.next;
    assertEquals(2, after.n);
    assertNotNull(SharedMemory.sharedView(after).handle.root);

    // The same for a container: a borrowed list proxy (which the scope's end does not unbind as it
    // does a bound instance) kept in h's cache would be handed out after the scope.
    WeakReference<List<Object>> list = weakly(() -> {
      List<Object> l = SharedMemory.allocate(List.class);
      l.add(7L);
      h.items = l;
      return l;
    });
    assertTrue(cleared(list));
    try (ReadScope s = SharedMemory.readScope()) {
      List<Object> borrowed = h.items;
      assertNull(((SharedList) borrowed).handle.root, "a borrowed proxy (no root of its own)");
      for (Object o : borrowed) assertEquals(7L, o);  // no snapshot kept for it either
    }
    List<Object> items = h.items;
    assertNotNull(((SharedList) items).handle.root);
    items.add(8L);
    assertEquals(List.of(7L, 8L), new ArrayList<>(items));
  }

  /** Stores {@code value} into {@code field} of {@code o}'s object by JNI, leaving o's read cache alone (as another process's store does). */
  private static void storeBehind(Object o, String field, Object value) {
    int t = Codec.tag(value);
    Native.objSet(SharedMemory.sharedView(o).handle, field, t, Codec.bits(value, t), Codec.obj(value, t));
  }

  /**
   * A thread that, until {@code stop}, reads {@code h.next.n} and iterates {@code h.items} through
   * the read cache, and records in {@code failures} an {@code n} that went back or a list that is
   * not 0..k-1 (the writers of the tests below keep both so); counts its rounds in {@code reads}.
   */
  static Thread checkingReader(Holder h, java.util.concurrent.atomic.AtomicBoolean stop,
      java.util.Queue<Throwable> failures, java.util.concurrent.atomic.AtomicLong reads) {
    return new Thread(() -> {
      try {
        long last = 0;
        while (!stop.get()) {
          long n = h.next.n;
          if (n < last) throw new AssertionError("h.next.n went back from " + last + " to " + n);
          last = n;
          long i = 0;
          for (Object o : h.items) {
            if (!Long.valueOf(i).equals(o)) throw new AssertionError("element " + i + " is " + o);
            i++;
          }
          reads.incrementAndGet();
        }
      } catch (Throwable t) {
        failures.add(t);
      }
    }, "checking-reader");
  }

  /**
   * Readers through the cache while a writer keeps replacing a field's object and rewriting a list
   * behind their backs and the collector runs: the objects replaced become garbage, so their
   * addresses are reused. A reader must never see the field's {@code n} or the list's length go
   * back (a cached proxy handed out for a slot that no longer holds its object would), and every
   * list it iterates must be 0..k-1.
   */
  @Test
  void readersNeverSeeAnOlderValueWhileTheWriterAndCollectorRun() throws Exception {
    Holder h = holder(0);
    h.next = holder(0);
    h.items = SharedMemory.allocate(List.class);
    SharedList list = (SharedList) h.items;
    java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
    java.util.concurrent.ConcurrentLinkedQueue<Throwable> failures = new java.util.concurrent.ConcurrentLinkedQueue<>();
    java.util.concurrent.atomic.AtomicLong reads = new java.util.concurrent.atomic.AtomicLong();
    java.util.concurrent.atomic.AtomicLong written = new java.util.concurrent.atomic.AtomicLong();
    Thread writer = new Thread(() -> {
      try {
        for (long n = 1; !stop.get(); n++) {
          Holder fresh = SharedMemory.allocate(Holder.class);
          fresh.n = n;
          storeBehind(h, "next", fresh);  // the previous object is garbage from here
          if (n % 64 == 0) {
            Native.clear(list.handle);
          } else {
            long k = n % 64 - 1;  // the list holds 0..k-1: append k
            Native.listAdd(list.handle, Codec.tag(k), Codec.bits(k, Codec.tag(k)), Codec.obj(k, Codec.tag(k)));
          }
          written.set(n);
        }
      } catch (Throwable t) {
        failures.add(t);
      }
    }, "writer");
    Thread collector = new Thread(() -> {
      try {
        while (!stop.get()) Native.collect(-1);  // not SharedMemory.collect(): that empties the cache
      } catch (Throwable t) {
        failures.add(t);
      }
    }, "collector");
    List<Thread> readers = List.of(checkingReader(h, stop, failures, reads), checkingReader(h, stop, failures, reads));
    writer.start();
    collector.start();
    readers.forEach(Thread::start);
    Thread.sleep(3000);
    stop.set(true);
    writer.join();
    collector.join();
    for (Thread t : readers) t.join();
    assertTrue(failures.isEmpty(), () -> "failures: " + failures);
    assertTrue(reads.get() > 1000, "the readers ran: " + reads.get());
    long n = written.get();
    assertEquals(n, h.next.n, "the last object written, not one a reader's read kept");
    assertEquals(n % 64, new ArrayList<>(h.items).size(), "the list as last written");
  }

  /** Runs {@code body} on another thread (outside any read scope) and waits for it. */
  private static void onAnotherThread(Runnable body) throws InterruptedException {
    java.util.concurrent.atomic.AtomicReference<Throwable> failed = new java.util.concurrent.atomic.AtomicReference<>();
    Thread t = new Thread(() -> {
      try {
        body.run();
      } catch (Throwable e) {
        failed.set(e);
      }
    });
    t.start();
    t.join();
    if (failed.get() != null) throw new AssertionError(failed.get());
  }

  /**
   * Inside a read scope an object read twice gives the scope's one proxy of it, also when another
   * thread has meanwhile published a proxy of it and cached it in the holder; and a borrowed proxy
   * kept after that (rooted but not the published one) is never cached, so outside the scope the
   * field gives the published proxy.
   */
  @Test
  void theScopesOwnProxyWinsAndASecondProxyIsNeverKept() throws Exception {
    Holder h = holder(1);
    WeakReference<Holder> child = weakly(() -> {
      Holder c = holder(2);
      h.next = c;
      return c;
    });
    assertTrue(cleared(child), "no proxy of the child is left");
    Holder[] published = new Holder[1];
    try (ReadScope s = SharedMemory.readScope()) {
      Holder borrowed = h.next;  // the scope's proxy of the child
      assertNull(SharedMemory.sharedView(borrowed).handle.root);
      onAnotherThread(() -> {
        published[0] = h.next;  // outside any scope: the published proxy, cached in h
        assertNotNull(SharedMemory.sharedView(published[0]).handle.root);
      });
      assertTrue(published[0] != borrowed);
      assertSame(borrowed, h.next, "inside the scope: the scope's own proxy, not the cached one");
      ReadScope.keep(borrowed);  // rooted now, but another thread's proxy is the published one
      assertNotNull(SharedMemory.sharedView(borrowed).handle.root);
      assertSame(borrowed, h.next);
    }
    assertSame(published[0], h.next, "outside: the published proxy, as an uncached read gives");
    onAnotherThread(() -> assertSame(published[0], h.next));
  }

  @Test
  void aScopeReadsACachedListWithoutReadingItsElements() {
    Holder h = holder(1);
    h.items = SharedMemory.allocate(List.class);
    List<Holder> kept = new ArrayList<>();
    for (int i = 0; i < 200; i++) kept.add(holder(10 + i));
    h.items.addAll(kept);
    int n = 0;
    for (Object o : h.items) n++;  // outside a scope: the snapshot is made
    assertEquals(200, n);
    com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
    long id = Thread.currentThread().getId();
    long before, after;
    try (ReadScope s = SharedMemory.readScope()) {
      List<Object> items = h.items;
      before = mx.getThreadAllocatedBytes(id);
      for (int r = 0; r < 200; r++) {
        int i = 0;
        for (Object o : items) assertSame(kept.get(i++), o);
      }
      after = mx.getThreadAllocatedBytes(id);
    }
    // Reading the elements costs two arrays of 200 words per pass (~3 KB, 650 KB in all); the
    // snapshot only an iterator per pass.
    assertTrue(after - before < 100_000, "inside the scope the cached snapshot was read: " + (after - before) + " bytes");
  }

  @Test
  void aScopesOwnProxyOfAnElementWinsOverTheSnapshot() throws Exception {
    Holder h = holder(1);
    h.items = SharedMemory.allocate(List.class);
    WeakReference<Holder> element = weakly(() -> {
      Holder c = holder(2);
      h.items.add(c);
      h.next = c;
      return c;
    });
    assertTrue(cleared(element), "no proxy of the element is left");
    try (ReadScope s = SharedMemory.readScope()) {
      Holder borrowed = h.next;  // the scope's own proxy of the element
      assertNull(SharedMemory.sharedView(borrowed).handle.root);
      Object[] published = new Object[1];
      onAnotherThread(() -> {
        for (Object o : h.items) published[0] = o;  // outside a scope: publishes a proxy, kept in the snapshot
      });
      assertTrue(published[0] != borrowed);
      for (Object o : h.items) assertSame(borrowed, o, "inside the scope: its own proxy, not the snapshot's");
    }
  }
}
