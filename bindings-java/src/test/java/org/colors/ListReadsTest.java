package org.colors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Lists read from Java without JNI ({@link ListReads}): the same values and proxies as the JNI
 * path, nothing rooted when the read falls back, and consistent snapshots while another thread
 * rewrites the list and the collector runs.
 */
@ExtendWith(ColorsServer.class)
class ListReadsTest {

  private static Direct.View view(SharedList l) {
    Direct.View v = Direct.viewFor(l.handle);
    assertNotNull(v, "attached: the view exists");
    return v;
  }

  @Test
  void readsTheSameValuesAndProxiesAsTheJniPath() {
    SharedList inner = (SharedList) SharedMemory.copyToSharedMemory(new ArrayList<>(List.of(7L)));
    SharedList l = (SharedList) SharedMemory.copyToSharedMemory(new ArrayList<>(Arrays.asList(
        1L, -5L, null, true, false, 0.5, -0.0, inner, Map.of("k", 1L), List.of(2L, 3L))));
    Direct.View v = view(l);
    Object[] fast = ListReads.items(v, l.handle);
    assertNotNull(fast, "a list of scalars and containers is read without JNI");
    Object[] slow = Native.listItems(l.handle);
    assertEquals(Arrays.asList(slow), Arrays.asList(fast));
    assertSame(inner, fast[7], "a live proxy is handed out, not a second one");
    assertSame(fast[8], slow[8], "one proxy per object: the JNI path finds the one the fast path made");
    assertEquals(10, ListReads.size(v, l.handle));
    for (int i = 0; i < 10; i++) assertEquals(slow[i], ListReads.get(v, l.handle, i));
    assertSame(Proxies.MISS, ListReads.get(v, l.handle, 10), "out of range: the JNI path reports it");
    assertSame(Proxies.MISS, ListReads.get(v, l.handle, -1));
    SharedList empty = SharedMemory.allocate(SharedList.class, 0);
    assertEquals(0, ListReads.items(view(empty), empty.handle).length);
    assertEquals(0, ListReads.size(view(empty), empty.handle));
  }

  @Test
  void valuesItDoesNotDecodeFallBackWithoutLeavingARoot() {
    // Strings, boxed numbers and big integers are read through JNI; the references rooted before
    // the read gave up are dropped again.
    List<Object> mixed = new ArrayList<>();
    for (int i = 0; i < 20; i++) mixed.add(new ArrayList<>(List.of((long) i)));
    mixed.add("a string");
    mixed.add(1L << 62);
    mixed.add(Double.NaN);
    SharedList l = (SharedList) SharedMemory.copyToSharedMemory(mixed);
    Direct.View v = view(l);
    long before = RootCounts.settled();
    assertSame(ListReads.NOT_DECODED, ListReads.items(v, l.handle));
    assertEquals(before, Roots.live(), "the roots taken for the first 20 elements were dropped");
    assertSame(ListReads.NOT_DECODED, ListReads.itemsRooted(v, l.handle));
    assertEquals(before, Roots.live(), "the roots handed over by libshared were dropped");
    assertSame(Proxies.MISS, ListReads.get(v, l.handle, 20));
    assertSame(Proxies.MISS, ListReads.get(v, l.handle, 21));
    assertEquals(before, Roots.live());
    Object[] all = l.toArray();  // the JNI path
    assertEquals("a string", all[20]);
    assertEquals(1L << 62, all[21]);
    assertTrue(Double.isNaN((Double) all[22]));
    assertEquals(List.of(19L), l.get(19));
  }

  @Test
  void insideATransactionLibsharedReadsTheListAndJavaMakesTheProxies() {
    SharedList inner = (SharedList) SharedMemory.copyToSharedMemory(new ArrayList<>(List.of(7L)));
    SharedList l = (SharedList) SharedMemory.copyToSharedMemory(new ArrayList<>(Arrays.asList(
        1L, null, true, 0.25, inner, Map.of("k", 1L), List.of(2L, 3L))));
    Direct.View v = view(l);
    Object[] slow = Native.listItems(l.handle);
    long before = RootCounts.settled();
    Object[] inTx = SharedMemory.atomically(() -> {
      assertTrue(Transaction.inThisThread());
      return l.toArray();
    });
    assertEquals(Arrays.asList(slow), Arrays.asList(inTx));
    assertSame(inner, inTx[4], "a live proxy is handed out");
    assertSame(slow[5], inTx[5], "one proxy per object");
    assertEquals(before, Roots.live(), "a root handed over for an object with a live proxy is dropped");
    Object[] rooted = ListReads.itemsRooted(v, l.handle);
    assertEquals(Arrays.asList(slow), Arrays.asList(rooted));
    // A transaction that changed the list reads its own change; another reader does not see it
    // before the commit.
    SharedMemory.atomically(() -> {
      l.add(SharedMemory.copyToSharedMemory(new ArrayList<>(List.of(9L))));
      Object[] mine = l.toArray();
      assertEquals(8, mine.length);
      assertEquals(List.of(9L), mine[7]);
    });
    assertEquals(List.of(9L), l.toArray()[7]);
  }

  @Test
  void snapshotsStayConsistentWhileAWriterRewritesTheListAndTheCollectorRuns() throws Exception {
    // The writer keeps the invariant "element i is a list holding i" at every instant between its
    // operations, growing and shrinking the list (arrays are replaced and freed) and replacing
    // elements by fresh objects (the old ones become garbage). A reader that saw a freed array or
    // rooted a stale word would see a wrong value or a non-list, or crash the collector.
    SharedList l = SharedMemory.allocate(SharedList.class, 0);
    AtomicBoolean stop = new AtomicBoolean();
    ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
    AtomicLong fastReads = new AtomicLong();
    Thread writer = new Thread(() -> {
      try {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        while (!stop.get()) {
          int n = l.size();
          switch (r.nextInt(3)) {
            case 0:
              if (n < 300) l.add(SharedMemory.copyToSharedMemory(new ArrayList<>(List.of((long) n))));
              break;
            case 1:
              if (n > 0) l.remove(n - 1);
              break;
            default:
              if (n > 0) {
                int i = r.nextInt(n);
                l.set(i, SharedMemory.copyToSharedMemory(new ArrayList<>(List.of((long) i))));
              }
          }
        }
      } catch (Throwable e) {
        errors.add(e);
      }
    }, "writer");
    Thread collector = new Thread(() -> {
      try {
        while (!stop.get()) SharedMemory.collect();
      } catch (Throwable e) {
        errors.add(e);
      }
    }, "collector");
    List<Thread> readers = new ArrayList<>();
    for (int t = 0; t < 2; t++) {
      readers.add(new Thread(() -> {
        try {
          Direct.View v = view(l);
          while (!stop.get()) {
            Object[] items = ListReads.items(v, l.handle);
            if (items != null) {
              fastReads.incrementAndGet();
              for (int i = 0; i < items.length; i++) check(items[i], i);
            }
            int n = ListReads.size(v, l.handle);
            if (n > 0) {
              int i = ThreadLocalRandom.current().nextInt(n);
              Object x = ListReads.get(v, l.handle, i);
              if (x != Proxies.MISS) check(x, i);
            }
          }
        } catch (Throwable e) {
          errors.add(e);
        }
      }, "reader-" + t));
    }
    writer.start();
    collector.start();
    for (Thread t : readers) t.start();
    Thread.sleep(Long.getLong("colors.listReadsTestMs", 3000L));
    stop.set(true);
    writer.join(60_000);
    collector.join(60_000);
    for (Thread t : readers) t.join(60_000);
    if (!errors.isEmpty()) throw new AssertionError(errors.peek());
    assertTrue(fastReads.get() > 100, "the lock-free path read the list (" + fastReads.get() + " times)");
    String report = Direct.verifyHeap();
    assertNull(report, report);
  }

  private static void check(Object x, int i) {
    assertTrue(x instanceof SharedList, "element " + i + " is " + x);
    assertArrayEquals(new Object[] {(long) i}, ((SharedList) x).toArray(), "element " + i);
  }
}
