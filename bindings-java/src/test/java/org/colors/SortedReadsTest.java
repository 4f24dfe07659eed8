package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Sorted-map point reads from Java without JNI or the map's lock ({@link SortedReads}): the same
 * answers and proxies as the locked JNI path on trees of several levels, a fallback (and no root
 * left behind) wherever the lock-free path does not decide, and consistent answers while other
 * threads split, merge and rewrite the tree, roll transactions back and the collector runs.
 */
@ExtendWith(ColorsServer.class)
class SortedReadsTest {

  private static Direct.View view(SharedSortedMap m) {
    Direct.View v = SortedReads.view(m.handle);
    assertNotNull(v, "attached, outside a transaction: the lock-free view exists");
    return v;
  }

  /** The locked JNI path's answer. */
  // The lock-free reads hand over (Proxies.MISS, -1, null) while a collector cycle runs, which
  // other tests' garbage or a loaded machine can make happen at any call: these retry while that
  // is why, so that what the tests check is the answer the lock-free path gives.
  private static boolean cycleRunning(Direct.View v) {
    return v.loadInt(v.gcDoneAt) != v.loadInt(v.gcStartedAt);
  }

  private static Object idleGet(Direct.View v, Handle h, long key) {
    Object x = SortedReads.get(v, h, key);
    for (long end = System.nanoTime() + 5_000_000_000L; x == Proxies.MISS && cycleRunning(v) && System.nanoTime() < end; ) {
      java.util.concurrent.locks.LockSupport.parkNanos(200_000);
      x = SortedReads.get(v, h, key);
    }
    return x;
  }

  private static int idleContains(Direct.View v, Handle h, long key) {
    int x = SortedReads.contains(v, h, key);
    for (long end = System.nanoTime() + 5_000_000_000L; x == -1 && cycleRunning(v) && System.nanoTime() < end; ) {
      java.util.concurrent.locks.LockSupport.parkNanos(200_000);
      x = SortedReads.contains(v, h, key);
    }
    return x;
  }

  private static Object[] idleRange(Direct.View v, Handle h, boolean lg, long lo, boolean li, boolean hg, long up,
      boolean hi, int limit, boolean values) {
    Object[] x = SortedReads.range(v, h, lg, lo, li, hg, up, hi, limit, values);
    for (long end = System.nanoTime() + 5_000_000_000L; x == null && cycleRunning(v) && System.nanoTime() < end; ) {
      java.util.concurrent.locks.LockSupport.parkNanos(200_000);
      x = SortedReads.range(v, h, lg, lo, li, hg, up, hi, limit, values);
    }
    return x;
  }

  private static Object locked(SharedSortedMap m, long k) {
    return SortedNative.get(m.handle, Codec.INT, k, null);
  }

  @Test
  void answersAsTheLockedPathOnATreeOfThreeLevels() {
    SharedSortedMap m = SharedMemory.newSortedMap();
    List<Object> lists = new ArrayList<>();
    // 5,000 keys: more than two levels of 32-entry leaves and 64-way nodes hold (2,048).
    for (long k = 0; k < 5000; k++) {
      long key = 3 * k - 600;
      Object value;
      switch ((int) (k % 5)) {
        case 0: value = key * 7; break;
        case 1: value = key % 2 == 0; break;
        case 2: value = key / 4.0; break;
        case 3: value = null; break;
        default:
          SharedList l = SharedMemory.allocate(SharedList.class, 1);
          l.add(key);
          lists.add(l);
          value = l;
      }
      m.put(key, value);
    }
    Direct.View v = view(m);
    long before = RootCounts.settled();
    for (long key = -610; key < 3 * 5000 - 590; key++) {
      Object fast = idleGet(v, m.handle, key);
      assertNotSame(Proxies.MISS, fast, "key " + key + " is read without JNI");
      Object slow = locked(m, key);
      if (slow instanceof SharedList) assertSame(slow, fast, "key " + key + ": one proxy per object");
      else assertEquals(slow, fast, "key " + key);
      assertEquals(m.containsKey(key) ? 1 : 0, idleContains(v, m.handle, key), "contains " + key);
    }
    for (int i = 0; i < lists.size(); i += 97) assertSame(lists.get(i), m.get(3L * (5L * i + 4) - 600));
    assertEquals(before, Roots.live(), "values with live proxies took no root");
    // A value with no live proxy: the read makes one, owning the root it took.
    m.put(100_000L, SharedMemory.copyToSharedMemory(List.of(5L, 6L)));
    Object made = idleGet(v, m.handle, 100_000L);
    assertTrue(made instanceof SharedList, "a proxy was made: " + made);
    assertEquals(List.of(5L, 6L), new ArrayList<>((SharedList) made));
    assertSame(made, m.get(100_000L));
    assertSame(made, locked(m, 100_000L));
    SharedSortedMap empty = SharedMemory.newSortedMap();
    assertNull(idleGet(view(empty), empty.handle, 1L), "an empty map holds nothing");
    assertEquals(0, idleContains(view(empty), empty.handle, 1L));
  }

  @Test
  void batchesAsTheLockedPathForAnyBoundsAndLimit() {
    SharedSortedMap m = SharedMemory.newSortedMap();
    List<Object> keep = new ArrayList<>();  // live proxies of the list values
    for (long k = 0; k < 3000; k++) {
      long key = 3 * k - 600;
      Object value = k % 3 == 0 ? listOf(key) : k % 3 == 1 ? (Object) (key * 7) : (Object) (key / 8.0);
      keep.add(value);
      m.put(key, value);
    }
    Direct.View v = view(m);
    java.util.Random r = new java.util.Random(7);
    long before = RootCounts.settled();
    for (int round = 0; round < 400; round++) {
      boolean lg = r.nextInt(5) != 0, hg = r.nextInt(5) != 0, li = r.nextBoolean(), hi = r.nextBoolean();
      long lo = r.nextInt(9200) - 700, up = lo + r.nextInt(round % 2 == 0 ? 400 : 9000);
      int limit = 1 + r.nextInt(300);
      boolean values = r.nextInt(4) != 0;
      Object[] fast = idleRange(v, m.handle, lg, lo, li, hg, up, hi, limit, values);
      assertNotNull(fast, "round " + round + " is read without JNI");
      Object[] slow = SortedNative.rangeFlat(m.handle, lg ? Codec.INT : Codec.NULL, lo, null, lg, li,
          hg ? Codec.INT : Codec.NULL, up, null, hg, hi, false, limit, values);
      Object[] a = SortedNative.decodeAll(fast), b = SortedNative.decodeAll(slow);
      assertEquals(b.length, a.length, "round " + round);
      for (int i = 0; i < a.length; i++) {
        if (b[i] instanceof SharedList) assertSame(b[i], a[i], "round " + round + ", element " + i);
        else assertEquals(b[i], a[i], "round " + round + ", element " + i);
      }
    }
    assertEquals(before, Roots.live(), "values with live proxies took no root");
    java.lang.ref.Reference.reachabilityFence(keep);
    // Iteration (batches of 256) and views read the same as a TreeMap's.
    java.util.TreeMap<Object, Object> ref = new java.util.TreeMap<>(m);
    assertEquals(new ArrayList<>(ref.subMap(-10L, true, 5000L, false).keySet()),
        new ArrayList<>(m.subMap(-10L, true, 5000L, false).keySet()));
    assertEquals(new ArrayList<>(ref.values()).size(), new ArrayList<>(m.values()).size());
    // A value with no live proxy: the batch makes one, owning the root it took.
    m.put(100_000L, SharedMemory.copyToSharedMemory(List.of(5L, 6L)));
    Object[] made = SortedNative.decodeAll(idleRange(v, m.handle, true, 100_000L, true, false, 0, true, 5, true));
    assertEquals(2, made.length);
    assertEquals(List.of(5L, 6L), new ArrayList<>((SharedList) made[1]));
    assertSame(made[1], m.get(100_000L));
    // Values only JNI converts send the batch there, leaving no root behind.
    m.put(100_001L, "a string");
    long roots = RootCounts.settled();
    assertNull(idleRange(v, m.handle, true, 99_000L, true, false, 0, true, 10, true));
    assertEquals(roots, Roots.live(), "a fallback leaves no root behind");
    assertEquals(List.of(List.of(5L, 6L), "a string"), new ArrayList<>(m.tailMap(100_000L).values()));
  }

  @Test
  void whatItDoesNotDecideFallsBackToTheLockedPath() {
    // Float keys: 1 == 1.0 in the shared order, which the locked path decides.
    SharedSortedMap floats = SharedMemory.newSortedMap();
    floats.put(1.0, "one");
    floats.put(2.5, "two and a half");
    assertSame(Proxies.MISS, SortedReads.get(view(floats), floats.handle, 1L));
    assertEquals(-1, SortedReads.contains(view(floats), floats.handle, 1L));
    assertEquals("one", floats.get(1L));
    assertTrue(floats.containsKey(1L));
    // String keys: an integer key cannot be compared with them (the locked path says so).
    SharedSortedMap strings = SharedMemory.newSortedMap();
    strings.put("a", 1L);
    assertSame(Proxies.MISS, SortedReads.get(view(strings), strings.handle, 5L));
    assertThrows(TypeMismatchException.class, () -> strings.get(5L));
    // Values read only through JNI (strings, wide integers), and keys beyond the small integers.
    SharedSortedMap m = SharedMemory.newSortedMap();
    m.put(1L, "a string");
    m.put(2L, Long.MAX_VALUE);
    m.put(Long.MAX_VALUE, 3L);
    long before = RootCounts.settled();
    assertSame(Proxies.MISS, SortedReads.get(view(m), m.handle, 1L));
    assertSame(Proxies.MISS, SortedReads.get(view(m), m.handle, 2L));
    assertEquals(before, Roots.live(), "a fallback leaves no root behind");
    assertEquals("a string", m.get(1L));
    assertEquals(Long.MAX_VALUE, m.get(2L));
    assertTrue(!SortedReads.fits(Long.MAX_VALUE));
    assertEquals(3L, m.get(Long.MAX_VALUE));
    // Inside a transaction the reads go through its ownership records: no lock-free view.
    try (Transaction tx = SharedMemory.beginTransaction()) {
      assertNull(SortedReads.view(m.handle));
      m.put(4L, 44L);
      assertEquals(44L, m.get(4L), "the transaction reads its own write");
      tx.commit();
    }
    assertEquals(44L, idleGet(view(m), m.handle, 4L));
  }

  @Test
  void consistentWhileTheTreeChangesAndTheCollectorRuns() throws Exception {
    // Even keys 0..2N-2 are always present, each mapping to a list holding the key (replaced by a
    // fresh one now and then, in place); odd keys come and go in runs, splitting and merging
    // leaves and inner nodes; some transactions rewrite keys and roll back, linking old nodes back.
    final int n = 3000;
    SharedSortedMap m = SharedMemory.newSortedMap();
    for (long k = 0; k < 2 * n; k += 2) m.put(k, listOf(k));
    AtomicBoolean stop = new AtomicBoolean();
    ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
    AtomicLong fastReads = new AtomicLong(), fastRanges = new AtomicLong();
    List<Thread> threads = new ArrayList<>();
    threads.add(new Thread(() -> {
      try {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        while (!stop.get()) {
          long start = 2L * r.nextInt(n) + 1;
          int len = 1 + r.nextInt(200);
          switch (r.nextInt(4)) {
            case 0:
              for (long k = start; k < start + 2L * len; k += 2) m.put(k, listOf(k));
              break;
            case 1:
              for (long k = start; k < start + 2L * len; k += 2) m.remove(k);
              break;
            case 2:
              for (long k = start - 1; k < start + 2L * len && k < 2 * n; k += 2) m.put(k, listOf(k));
              break;
            default:
              // The lists are made first: a rollback would empty lists filled inside it, which
              // a reader not in a transaction may already hold (it is not isolated from them).
              List<Object[]> puts = new ArrayList<>();
              for (long k = start; k < start + 2L * len; k += 2) puts.add(new Object[] {k, listOf(k)});
              for (long k = start - 1; k < start + 40 && k < 2 * n; k += 2) puts.add(new Object[] {k, listOf(k)});
              try (Transaction tx = SharedMemory.beginTransaction()) {
                for (Object[] p : puts) m.put(p[0], p[1]);
                tx.rollback();
              }
          }
        }
      } catch (Throwable e) {
        errors.add(e);
      }
    }, "writer"));
    threads.add(new Thread(() -> {
      try {
        while (!stop.get()) SharedMemory.collect();
      } catch (Throwable e) {
        errors.add(e);
      }
    }, "collector"));
    for (int t = 0; t < 2; t++) {
      threads.add(new Thread(() -> {
        try {
          Direct.View v = view(m);
          ThreadLocalRandom r = ThreadLocalRandom.current();
          while (!stop.get()) readOnce(v, m, n, r, fastReads, fastRanges);
        } catch (Throwable e) {
          errors.add(e);
        }
      }, "reader-" + t));
    }
    for (Thread t : threads) t.start();
    Thread.sleep(Long.getLong("colors.sortedReadsTestMs", 3000L));
    stop.set(true);
    for (Thread t : threads) t.join(60_000);
    if (!errors.isEmpty()) throw new AssertionError(errors.peek());
    assertTrue(fastReads.get() > 100, "the lock-free path read the map (" + fastReads.get() + " times)");
    assertTrue(fastRanges.get() > 100, "the lock-free path read batches (" + fastRanges.get() + " times)");
    String report = Direct.verifyHeap();
    assertNull(report, report);
  }

  @Test
  void consistentWhilePythonWritersChangeTheTreeAndAreKilled() throws Exception {
    // The same invariants as above, with the writers in other processes (Python), each killed by
    // SIGKILL after a while (possibly inside an operation, holding the map's lock) and replaced:
    // lock-free readers never see a torn tree, and the next writer takes the lock over.
    CrossLanguageTest.findPythonBinding();
    final int n = 3000;
    String name = CrossLanguageTest.unique("sorted-reads");
    SharedSortedMap m = SharedMemory.newSortedMap();
    for (long k = 0; k < 2 * n; k += 2) m.put(k, listOf(k));
    SharedMemory.findOrCreateRepository(name).set(m);
    String writer = String.join("\n",
        "import random",
        "d = cs.repository('" + name + "').get()",
        "rnd, n = random.Random(), " + n,
        "print('ready', flush=True)",
        "while True:",
        "    start, ln = 2 * rnd.randrange(n) + 1, 1 + rnd.randrange(200)",
        "    c = rnd.randrange(3)",
        "    if c == 0:",
        "        for k in range(start, start + 2 * ln, 2): d[k] = cs.copy_to([k])",
        "    elif c == 1:",
        "        for k in range(start, start + 2 * ln, 2): d.pop(k, None)",
        "    else:",
        "        for k in range(start - 1, min(start + 2 * ln, 2 * n), 2): d[k] = cs.copy_to([k])",
        "");
    AtomicBoolean stop = new AtomicBoolean();
    ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
    AtomicLong fastReads = new AtomicLong(), fastRanges = new AtomicLong();
    List<Thread> readers = new ArrayList<>();
    for (int t = 0; t < 2; t++) {
      readers.add(new Thread(() -> {
        try {
          Direct.View v = view(m);
          ThreadLocalRandom r = ThreadLocalRandom.current();
          while (!stop.get()) readOnce(v, m, n, r, fastReads, fastRanges);
        } catch (Throwable e) {
          errors.add(e);
        }
      }, "reader-" + t));
    }
    Thread collector = new Thread(() -> {
      try {
        while (!stop.get()) {
          SharedMemory.collect();
          Thread.sleep(20);
        }
      } catch (Throwable e) {
        errors.add(e);
      }
    }, "collector");
    for (Thread t : readers) t.start();
    collector.start();
    int kills = 0;
    long end = System.nanoTime() + Long.getLong("colors.sortedReadsTestMs", 3000L) * 1_000_000L;
    try {
      while (System.nanoTime() < end && errors.isEmpty()) {
        CrossLanguageTest.Py a = new CrossLanguageTest.Py(writer), b = null;
        try {
          b = new CrossLanguageTest.Py(writer);
          assertEquals("ready", a.line());
          assertEquals("ready", b.line());
          Thread.sleep(150 + ThreadLocalRandom.current().nextInt(300));
        } finally {
          for (CrossLanguageTest.Py p : new CrossLanguageTest.Py[] {a, b}) {
            if (p == null) continue;
            p.close();  // SIGKILL, wherever the writer is
            assertTrue(p.proc.waitFor(30, java.util.concurrent.TimeUnit.SECONDS), "a killed writer exits");
          }
        }
        kills += 2;
      }
    } finally {
      stop.set(true);
      for (Thread t : readers) t.join(60_000);
      collector.join(60_000);
    }
    if (!errors.isEmpty()) throw new AssertionError(errors.peek());
    assertTrue(kills >= 4, "writers killed: " + kills);
    assertTrue(fastReads.get() > 100 && fastRanges.get() > 100,
        "the lock-free paths read the map (" + fastReads.get() + " gets, " + fastRanges.get() + " batches)");
    // A write takes over the lock a killed writer may hold (and recounts the size).
    m.put(1L, listOf(1L));
    long evens = 0;
    for (Object key : m.keySet()) evens += (Long) key % 2 == 0 ? 1 : 0;
    assertEquals(n, evens, "every even key is still there");
    String report = Direct.verifyHeap();
    assertNull(report, report);
  }

  /**
   * One get (with containsKey) and one batch of the stress tests' map without the lock, checked:
   * even keys 0..2n-2 are always there, each key k maps to a list holding k, and a batch holds
   * every even key of its bounds in order. Counts the reads that took the lock-free path.
   */
  private static void readOnce(Direct.View v, SharedSortedMap m, int n, ThreadLocalRandom r, AtomicLong gets,
      AtomicLong batches) {
    long k = r.nextInt(2 * n);
    Object x = SortedReads.get(v, m.handle, k);
    if (x != Proxies.MISS) {
      gets.incrementAndGet();
      if (k % 2 == 0 || x != null) check(x, k);
      int c = SortedReads.contains(v, m.handle, k);
      if (k % 2 == 0 && c != -1) assertEquals(1, c, "key " + k + " is always there");
    }
    long lo = k & ~1L, hi = lo + 2 * r.nextInt(120);
    Object[] flat = SortedReads.range(v, m.handle, true, lo, true, true, hi, true, 256, true);
    if (flat == null) return;
    batches.incrementAndGet();
    Object[] kv = SortedNative.decodeAll(flat);
    long expect = lo;  // every even key in [lo, hi], in order, with odd keys among them
    long prev = Long.MIN_VALUE;
    for (int i = 0; i < kv.length; i += 2) {
      long key = (Long) kv[i];
      assertTrue(key > prev, "key " + key + " after " + prev);
      prev = key;
      if (key % 2 == 0) {
        assertEquals(expect, key, "the even keys of [" + lo + ", " + hi + "] in order");
        expect += 2;
      }
      check(kv[i + 1], key);
    }
    assertEquals(Math.min(hi, 2L * n - 2) + 2, expect, "every even key of [" + lo + ", " + hi + "]");
  }

  private static SharedList listOf(long k) {
    SharedList l = SharedMemory.allocate(SharedList.class, 1);
    l.add(k);
    return l;
  }

  private static void check(Object x, long k) {
    assertTrue(x instanceof SharedList, "key " + k + " maps to " + x);
    assertEquals(List.of(k), new ArrayList<>((SharedList) x), "key " + k);
  }
}
