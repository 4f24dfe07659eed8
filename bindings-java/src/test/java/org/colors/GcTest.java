package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Proxies are GC roots of the shared heap while the JVM keeps them; dropped ones let objects go. */
@ExtendWith(ColorsServer.class)
class GcTest {
  static final int N = 2000;

  static List<Object> strings(String prefix) {
    List<Object> l = new ArrayList<>();
    for (int i = 0; i < N; i++) l.add(prefix + i + "-".repeat(20));
    return l;
  }

  @Test
  void objectHeldOnlyByAProxySurvivesCollect() {
    SharedList l = (SharedList) SharedMemory.copyToSharedMemory(List.of(strings("keep"), List.of(1L, 2L)));
    Object probe = l.get(1);
    for (int i = 0; i < 3; i++) SharedMemory.collect();
    SharedList inner = (SharedList) l.get(0);
    assertEquals(N, inner.size());
    assertEquals("keep" + (N - 1) + "-".repeat(20), inner.get(N - 1));
    assertSame(probe, l.get(1));
    assertEquals(List.of(1L, 2L), probe);
  }

  @Test
  void droppedProxiesLetTheCollectorFreeTheirObjects() throws InterruptedException {
    SharedMemory.collect();
    SharedMemory.collect();  // earlier garbage is gone
    SharedList l = (SharedList) SharedMemory.copyToSharedMemory(strings("drop"));
    assertEquals(N, l.size());
    long handles = SharedMemory.liveHandles();

    // Control: while the proxy lives, nothing of it is freed.
    long freedWhileHeld = SharedMemory.collect().objectsFreed() + SharedMemory.collect().objectsFreed();
    assertTrue(freedWhileHeld < N, "freed " + freedWhileHeld + " objects while the proxy was alive");
    assertEquals(N, l.size());

    WeakReference<Object> ref = new WeakReference<>(l);
    l = null;
    // Java GC, then the Cleaner releases the handle (its root) on its own thread.
    for (int i = 0; i < 200 && (ref.get() != null || SharedMemory.liveHandles() >= handles); i++) {
      System.gc();
      Thread.sleep(10);
    }
    assertNull(ref.get(), "the JVM did not collect the proxy");
    assertTrue(SharedMemory.liveHandles() < handles, "the Cleaner did not release the handle");
    long freed = SharedMemory.collect().objectsFreed() + SharedMemory.collect().objectsFreed();
    assertTrue(freed >= N, "freed only " + freed + " objects after the proxy was dropped");
    GcStats last = SharedMemory.gcStats();
    assertTrue(last.cycle() >= 4);
    assertTrue(last.totalNs() > 0);
  }

  @Test
  void heapStats() {
    HeapStats h = SharedMemory.heapStats();
    assertEquals(64L << 20, h.capacity());
    assertTrue(h.freeBytes() > 0 && h.freeBytes() <= h.capacity());
    assertTrue(h.largestFree() <= h.freeBytes());
  }
}
