package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Threads race to make the first proxy of the same shared objects while the JVM collects
 * continuously. A proxy that loses its publication to another thread's (Proxies.publishNew) gives
 * its new root back at once, while the JVM may already have found that root's Handle unreachable
 * and enqueued it for the release thread: the root must be released exactly once (Root#claim),
 * else a native handle is freed twice (the JVM died of it in ThreadsTest, SIGSEGV or SIGABRT) or a
 * root slot gets two owners.
 */
@ExtendWith(ColorsServer.class)
class ProxyPublicationRaceTest {

  @Test
  void aProxyThatLosesItsPublicationReleasesItsRootOnce() throws Exception {
    int objects = 32;
    SharedList board = SharedMemory.allocate(SharedList.class, objects);
    for (long i = 0; i < objects; i++) board.add(SharedMemory.copyToSharedMemory(List.of(i)));
    long conflictsBefore = Proxies.publishConflicts();
    long unclaimedBefore = Root.unclaimedReleases();
    ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
    AtomicBoolean stop = new AtomicBoolean();
    Thread gc = new Thread(() -> {
      while (!stop.get()) System.gc();
    }, "gc");
    gc.start();
    List<Thread> workers = new ArrayList<>();
    long deadline = System.nanoTime() + 4_000_000_000L;
    for (int t = 0; t < 4; t++) {
      Thread w = new Thread(() -> {
        try {
          ThreadLocalRandom r = ThreadLocalRandom.current();
          while (System.nanoTime() < deadline) {
            // Each get makes a proxy unless a live one exists; dropping it at once lets the next
            // get of the same element race other threads' gets for a fresh one.
            int i = r.nextInt(objects);
            SharedList l = (SharedList) board.get(i);
            assertEquals(i, l.getLong(0));
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
    gc.join(60_000);
    if (!errors.isEmpty()) throw new AssertionError("a worker failed", errors.peek());
    // The race was exercised (otherwise this test proves nothing), and no root was released by a
    // caller that had not claimed it.
    assertTrue(Proxies.publishConflicts() > conflictsBefore, "no publication conflict happened");
    assertEquals(unclaimedBefore, Root.unclaimedReleases(), "roots released without their claim");
  }
}
