package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The bulk reader (jni_bulk.cpp) copies a shared list between two list operations, never in the
 * middle of one: a writer that inserts at the front and removes it again shifts every element
 * each time, and a copy taken meanwhile must still hold each element exactly once.
 */
@ExtendWith(ColorsServer.class)
class BulkListAtomicityTest {
  @Test
  @SuppressWarnings("unchecked")
  void aBulkCopyNeverSeesHalfOfAListOperation() throws Exception {
    final int n = 64;
    List<Object> list = SharedMemory.allocate(List.class);
    for (long i = 0; i < n; i++) list.add(i);
    SharedList shared = (SharedList) (Object) list;
    AtomicBoolean stop = new AtomicBoolean();
    Thread writer = new Thread(() -> {
      while (!stop.get()) {
        list.add(0, -1L);  // shifts every element up
        list.remove(0);    // and down again
      }
    });
    writer.start();
    int copies = 0;
    try {
      long end = System.nanoTime() + 2_000_000_000L;
      while (System.nanoTime() < end) {
        long[] copy = (long[]) BulkReader.toPrivateArray(shared, long[].class);
        boolean[] seen = new boolean[n];
        for (long v : copy) {
          if (v == -1L) continue;  // the element the writer inserts and removes
          assertTrue(v >= 0 && v < n, "a value nobody stored: " + v);
          assertTrue(!seen[(int) v], "element " + v + " twice in one copy: a shift seen half done");
          seen[(int) v] = true;
        }
        for (int i = 0; i < n; i++) assertTrue(seen[i], "element " + i + " missing from a copy");
        copies++;
      }
    } finally {
      stop.set(true);
      writer.join();
    }
    assertTrue(copies > 10, "only " + copies + " copies");
    assertEquals(n, list.size());
  }
}
