package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import demo.tree.Node;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Reference fields of bound instances read inside a transaction ({@link Proxies#readRefInTx}):
 * libshared reads through the transaction and hands the root over, Java makes the proxy. The
 * values are the transaction's (its own writes, not another thread's uncommitted ones), proxies
 * keep their identity, strings still read, and no root is left behind.
 */
@ExtendWith(ColorsServer.class)
class TxReferenceReadsTest {

  @Test
  void referenceFieldsReadInATransactionAreTheTransactionsWithTheirIdentity() throws Exception {
    Node a = SharedMemory.allocate(Node.class);
    Node b = SharedMemory.allocate(Node.class);
    Node c = SharedMemory.allocate(Node.class);
    a.left = b;
    b.s = "bee";
    long before = RootCounts.settled();
    SharedMemory.atomically(() -> {
      assertTrue(Transaction.inThisThread());
      assertSame(b, a.left, "a live proxy keeps its identity inside a transaction");
      assertNull(a.right);
      assertEquals("bee", a.left.s);
      a.right = c;
      assertSame(c, a.right, "the transaction reads its own write");
    });
    assertEquals(before, Roots.live(), "the roots handed over for live proxies were dropped");
    assertSame(c, a.right);

    // A node nobody holds a proxy of gets a new proxy, rooted, inside the transaction.
    a.left = SharedMemory.allocate(Node.class);
    a.left.i = 42;
    System.gc();
    Node fresh = SharedMemory.atomically(() -> {
      Node n = a.left;
      assertEquals(42, n.i);
      return n;
    });
    assertEquals(42, fresh.i);
    assertSame(fresh, a.left, "the proxy made inside is the object's proxy afterwards");

    // Another thread's uncommitted write is not read: it waits for, or conflicts with, the writer.
    Node d = SharedMemory.allocate(Node.class);
    AtomicReference<Object> seen = new AtomicReference<>();
    Thread reader = new Thread(() -> seen.set(SharedMemory.atomically(() -> a.right)));
    SharedMemory.atomically(() -> {
      a.right = d;
      if (!reader.isAlive() && seen.get() == null) reader.start();
      sleep(50);  // the reader's transaction runs meanwhile
    });
    reader.join(10_000);
    assertTrue(seen.get() == c || seen.get() == d, "a committed value: " + seen.get());
    assertSame(d, a.right);
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      throw new IllegalStateException(e);
    }
  }
}
