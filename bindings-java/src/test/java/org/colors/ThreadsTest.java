package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Several threads using shared objects at once while proxies die and the Cleaner releases them,
 * the JVM collects and the shared collector runs: the identity cache, handle release and root
 * tables must stay consistent (every thread checks what it reads).
 */
@ExtendWith(ColorsServer.class)
class ThreadsTest {

  @Test
  void threadsChurnProxiesWhileBothCollectorsRun() throws Exception {
    SharedMap board = SharedMemory.allocate(SharedMap.class, 16);
    int threads = 4;
    int rounds = 5000;
    // Every key exists before the workers start, so their unlocked puts only replace values (one
    // reference store each). Inserting new keys from several threads without the map's monitor
    // may lose one, as with java.util.HashMap (DESIGN: racing unsynchronized operations may lose
    // updates), and that is not what this test is about.
    for (long t = 0; t < threads; t++) board.put(t, null);
    board.put("last", -1L);
    ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
    AtomicBoolean stop = new AtomicBoolean();
    Thread collector = new Thread(() -> {
      while (!stop.get()) {
        System.gc();
        SharedMemory.collect();
      }
    }, "collectors");
    collector.start();
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      final long id = t;
      Thread w = new Thread(() -> {
        try {
          Random r = new Random(id);
          for (int i = 0; i < rounds; i++) {
            SharedList l = (SharedList) SharedMemory.copyToSharedMemory(List.of(id, (long) i, "t" + id + "-" + i,
                List.of((long) i)));
            board.put(id, l);
            SharedList back = (SharedList) board.get(id);
            assertSame(l, back);
            assertEquals(i, back.getInt(1));
            assertEquals("t" + id + "-" + i, back.get(2));
            assertSame(back.get(3), l.get(3));
            if (r.nextInt(10) == 0) {
              try (SharedMonitor m = SharedMemory.lock(board)) {
                board.put("last", id);
                m.signalAll();
              }
            }
            // Read someone else's list: whatever it is, it is complete.
            Object other = board.get((long) r.nextInt(threads));
            if (other != null) {
              SharedList o = (SharedList) other;
              assertEquals(4, o.size());
              assertEquals(o.getLong(1), ((SharedList) o.get(3)).getLong(0));
            }
          }
        } catch (Throwable e) {
          errors.add(e);
        }
      }, "worker-" + t);
      workers.add(w);
      w.start();
    }
    for (Thread w : workers) w.join(60_000);
    stop.set(true);
    collector.join(60_000);
    if (!errors.isEmpty()) throw new AssertionError("a worker failed", errors.peek());
    assertEquals(threads + 1, board.size());
    for (long t = 0; t < threads; t++) assertEquals(rounds - 1, ((SharedList) board.get(t)).getInt(1));
    // The dropped proxies' handles go back: live handles fall to a handful once the JVM collected.
    long handles = Long.MAX_VALUE;
    for (int i = 0; i < 100 && handles > 200; i++) {
      System.gc();
      Thread.sleep(10);
      handles = SharedMemory.liveHandles();
    }
    assertTrue(handles <= 200, "still " + handles + " live handles");
    long last = ((Number) board.get("last")).longValue();
    assertTrue(last >= 0 && last < threads, "last = " + last);
    assertEquals(board, new java.util.HashMap<>(board));
  }

  /**
   * detach() and attach() on one thread while others copy graphs into the heap (one native each)
   * and fill lists with large binaries (allocations under the heap's lock). A native caught by the
   * detach inside libshared released the heap's lock into the private copy the detach leaves, so
   * the heap stayed locked and the collector (the server's, for every process) waited for ever, or
   * released a root of the old attachment after the new one began (SIGSEGV). The detach now waits
   * for the natives running and refuses new ones (NotAttachedException) until it is done.
   */
  /**
   * heapStats() holds the heap lock while it walks the free list, and was not a use of the segment
   * that a detach waits for: a detach that unmapped the heap in that window left the unlock to
   * the private copy mapped in its place, and the heap lock held for good (the server and every
   * process's allocations waited on it; a fuzzing helper's three threads wedged a server in about
   * a minute). Now, like every native that reads the segment, it is refused while a detach is under
   * way, and a detach waits for one that runs. Made deterministic: a detach waits (up to 2 s) for
   * another thread's monitor, and that thread asks for the statistics meanwhile.
   */
  @Test
  void heapStatsAreRefusedWhileADetachIsUnderWay() throws Exception {
    ObjectRepository rep = SharedMemory.findOrCreateRepository("threads-heap-stats-" + java.util.UUID.randomUUID());
    java.util.concurrent.CountDownLatch locked = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch detaching = new java.util.concurrent.CountDownLatch(1);
    ConcurrentLinkedQueue<Object> seen = new ConcurrentLinkedQueue<>();
    Thread holder = new Thread(() -> {
      try (SharedMonitor m = SharedMemory.lock(rep)) {
        locked.countDown();
        detaching.await();
        Thread.sleep(300);  // the detach is waiting for this monitor now
        try {
          seen.add(SharedMemory.heapStats());
        } catch (NotAttachedException e) {
          seen.add(e);
        }
      } catch (Throwable t) {
        if (!(t instanceof NotAttachedException)) seen.add(t);
      }
    });
    holder.start();
    locked.await();
    Thread detacher = new Thread(() -> {
      detaching.countDown();
      SharedMemory.detach();
    });
    detacher.start();
    detacher.join(10_000);
    holder.join(10_000);
    SharedMemory.attach();
    assertEquals(1, seen.size(), () -> "" + seen);
    Object got = seen.peek();
    assertTrue(got instanceof NotAttachedException, () -> "heapStats() ran during a detach: " + got);
    assertTrue(SharedMemory.heapStats().capacity() > 0);
  }

  /**
   * A detach never leaves a shared monitor held for other processes: the segment becomes a
   * private copy, so an exit after it never reached the shared heap (and a waiter woken by the
   * detach deadlocked it, re-acquiring the monitor the detaching thread held). It refuses while
   * this thread holds one, and waits for other threads to exit theirs.
   */
  @Test
  void detachNeverLeavesAMonitorHeld() throws Exception {
    String name = "threads-detach-monitor-" + java.util.UUID.randomUUID();
    ObjectRepository rep = SharedMemory.findOrCreateRepository(name);
    ConcurrentLinkedQueue<Object> got = new ConcurrentLinkedQueue<>();
    java.util.concurrent.CountDownLatch waiting = new java.util.concurrent.CountDownLatch(1);
    Thread waiter = new Thread(() -> {
      try (SharedMonitor m = SharedMemory.lock(rep)) {
        waiting.countDown();
        got.add(m.await(10_000));
      } catch (Throwable t) {
        got.add(t);
      }
    });
    waiter.start();
    waiting.await();
    try (SharedMonitor m = SharedMemory.lock(rep)) {  // the waiter waits meanwhile
      InvalidArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(InvalidArgumentException.class,
          SharedMemory::detach);
      assertTrue(e.getMessage().contains("this thread holds 1"), e.getMessage());
      assertTrue(SharedMemory.isAttached());
      m.signalAll();
    }
    waiter.join(10_000);
    assertEquals(List.of(true), new ArrayList<>(got));

    java.util.concurrent.CountDownLatch held = new java.util.concurrent.CountDownLatch(1);
    Thread holder = new Thread(() -> {
      try (SharedMonitor m = SharedMemory.lock(rep)) {
        held.countDown();
        Thread.sleep(300);
      } catch (Throwable t) {
        got.add(t);
      }
    });
    holder.start();
    held.await();
    SharedMemory.detach();  // waits for the holder's exit
    holder.join(10_000);
    assertEquals(List.of(true), new ArrayList<>(got));
    SharedMemory.attach();
    SharedMonitor again = SharedMemory.tryLock(SharedMemory.findOrCreateRepository(name), java.time.Duration.ZERO);
    assertTrue(again != null, "the monitor stayed held after the detach");
    again.close();
  }

  @Test
  void detachWaitsForTheNativesOfOtherThreads() throws Exception {
    AtomicBoolean stop = new AtomicBoolean();
    ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
    java.util.concurrent.atomic.AtomicLong done = new java.util.concurrent.atomic.AtomicLong();
    List<Object> graph = new ArrayList<>();
    for (int i = 0; i < 200; i++) graph.add(List.of((long) i, "s" + i, List.of(1L, 2L)));
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < 3; t++) {
      final int kind = t;
      Thread w = new Thread(() -> {
        while (!stop.get()) {
          try {
            if (kind < 2) {
              SharedMemory.copyToSharedMemory(graph);
            } else {
              SharedList l = (SharedList) SharedMemory.allocate(List.class, 0);
              for (int i = 0; i < 8 && !stop.get(); i++) l.add(new byte[1 << 20]);
            }
            done.incrementAndGet();
          } catch (NotAttachedException e) {
            // the detach's answer to a call made meanwhile, or to a proxy of the attachment it ended
          } catch (Throwable e) {
            errors.add(e);
          }
        }
      }, "detach-worker-" + t);
      workers.add(w);
      w.start();
    }
    for (int i = 0; i < 300; i++) {
      Thread.sleep(i % 3, 500_000);
      SharedMemory.detach();
      SharedMemory.attach();
    }
    stop.set(true);
    for (Thread w : workers) w.join(30_000);
    for (Thread w : workers) assertTrue(!w.isAlive(), w.getName() + " is stuck");
    if (!errors.isEmpty()) throw new AssertionError("a worker failed", errors.peek());
    assertTrue(done.get() > 0, "no worker call completed");
    // The heap's lock is free: a cycle runs to its end, and the heap takes new objects.
    SharedMemory.collect(java.time.Duration.ofSeconds(30));
    SharedList l = (SharedList) SharedMemory.copyToSharedMemory(graph);
    assertEquals(200, l.size());
  }
}
