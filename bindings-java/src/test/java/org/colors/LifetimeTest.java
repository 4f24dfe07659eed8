package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import demo.tree.Node;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The lifetime of proxies made by the field fast path (agent): roots held in Java-filled slots of
 * the root table (Roots), the identity cache (Proxies), releases through phantom Roots. Each test
 * would fail if a root were dropped early (the collector frees an object Java still reads: contents
 * change or the heap verifier complains), never dropped (objects_freed stays 0), or if identity broke.
 */
@ExtendWith(ColorsServer.class)
class LifetimeTest {
  /** A private tree of depth {@code d}, copied in by copyToSharedMemory: its inner nodes have no proxies. */
  static Node privateTree(int d, int[] counter) {
    Node n = new Node();
    int c = counter[0]++;
    n.i = c;
    n.f = c + 0.25;
    n.b = c % 2 == 0;
    n.s = "n" + c + "-" + "x".repeat(c % 7);
    if (d > 1) {
      n.left = privateTree(d - 1, counter);
      n.right = privateTree(d - 1, counter);
    }
    return n;
  }

  /**
   * Lets the JVM collect the proxies copyToSharedMemory made for the inner nodes (so that reading
   * them again makes new proxies through the fast path, rooted by Java-held slots).
   */
  static void settle() throws InterruptedException {
    for (int i = 0; i < 3; i++) {
      System.gc();
      Thread.sleep(20);
    }
  }

  static void checkNode(Node n, int c) {
    assertEquals(c, n.i);
    assertEquals(c + 0.25, n.f);
    assertEquals(c % 2 == 0, n.b);
    assertEquals("n" + c + "-" + "x".repeat(c % 7), n.s);
  }

  @Test
  void aChildHeldOnlyByItsJavaRootSurvivesCollections() throws InterruptedException {
    Node root = (Node) SharedMemory.copyToSharedMemory(privateTree(3, new int[] {0}));
    settle();
    long before = SharedMemory.liveHandles();
    assertTrue(SharedMemory.isObjectShared(root));
    Node left = root.left;     // no proxy existed: a new one, rooted by a Java-held slot
    assertSame(left, root.left);  // identity through the cache
    Node deep = left.right;
    assertEquals(before + 2, SharedMemory.liveHandles(), "two new roots, held by Java");
    root.left = null;          // now only `left` (and `deep`) keep them: their Java-held roots
    left.right = null;
    for (int i = 0; i < 3; i++) SharedMemory.collect();
    reuseFreedMemory();
    checkNode(left, 1);
    checkNode(deep, 3);
    checkNode(left.left, 2);
    assertNull(left.right);
    // Used by natives (the slot is adopted by a JValue) and back.
    List<Object> l = SharedMemory.allocate(List.class);
    l.add(deep);
    assertSame(deep, l.get(0));
    SharedMemory.collect();
    checkNode((Node) l.get(0), 3);
    assertEquals("demo.tree.Node", SharedMemory.sharedView(deep).className());  // the JNI path on an adopted root
  }

  @Test
  void droppedFastPathProxiesReleaseTheirRoots() throws InterruptedException {
    Node root = (Node) SharedMemory.copyToSharedMemory(privateTree(9, new int[] {0}));  // 511 nodes
    settle();
    for (int i = 0; i < 3; i++) SharedMemory.collect();  // earlier garbage (other tests, the copy's proxies) goes
    List<WeakReference<Node>> refs = new ArrayList<>();
    List<Node> all = new ArrayList<>();
    walk(root, all);
    assertEquals(511, all.size());
    for (Node n : all) refs.add(new WeakReference<>(n));
    long held = SharedMemory.liveHandles();
    // Cut the tree below the root: only the Java roots of the proxies keep the nodes.
    root.left = null;
    root.right = null;
    long freedWhileHeld = 0;
    for (int i = 0; i < 3; i++) freedWhileHeld += SharedMemory.collect().objectsFreed();
    assertTrue(freedWhileHeld < 500, "freed " + freedWhileHeld + " objects while their proxies were alive");
    reuseFreedMemory();
    for (int k = 0; k < all.size(); k++) checkNode(all.get(k), k);
    all.clear();
    for (int i = 0; i < 200 && (refs.get(1).get() != null || SharedMemory.liveHandles() >= held - 400); i++) {
      System.gc();
      Thread.sleep(10);
    }
    assertNull(refs.get(1).get(), "the JVM did not collect the proxies");
    assertTrue(SharedMemory.liveHandles() < held - 400, "roots not released: " + SharedMemory.liveHandles() + " of "
        + held);
    long freed = SharedMemory.collect().objectsFreed() + SharedMemory.collect().objectsFreed();
    assertTrue(freed >= 2 * 510, "freed only " + freed + " objects (nodes and strings) after the proxies went");
    checkNode(root, 0);
  }

  /** Allocates over any freed block: a node read after its block was freed would show other contents. */
  static void reuseFreedMemory() {
    List<Object> junk = new ArrayList<>();
    for (int i = 0; i < 4000; i++) junk.add("junk-" + i + "-".repeat(i % 13));
    SharedMemory.copyToSharedMemory(junk);
    int[] c = {100_000};
    for (int i = 0; i < 50; i++) SharedMemory.copyToSharedMemory(privateTree(5, c));
  }

  static void walk(Node n, List<Node> out) {
    if (n == null) return;
    out.add(n);
    walk(n.left, out);
    walk(n.right, out);
  }

  /**
   * Many transient bound instances (allocated, read through references, written) while another
   * thread runs collect() in a loop and a third drops and rereads: every node a kept instance
   * reaches has its contents, and libshared's heap verifier passes at the end.
   */
  @Test
  void transientInstancesWhileTheCollectorRuns() throws Exception {
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Throwable> failed = new AtomicReference<>();
    Thread gc = new Thread(() -> {
      try {
        while (!stop.get()) SharedMemory.collect();
      } catch (Throwable t) {
        failed.compareAndSet(null, t);
      }
    });
    gc.start();
    Thread[] ts = new Thread[2];
    for (int t = 0; t < ts.length; t++) {
      final int seed = t;
      ts[t] = new Thread(() -> {
        try {
          long until = System.nanoTime() + 2_000_000_000L;
          List<Node> kept = new ArrayList<>();
          int round = 0;
          while (System.nanoTime() < until) {
            int[] counter = {0};
            Node src = (Node) SharedMemory.copyToSharedMemory(privateTree(4, counter));
            Node out = derive(src);  // transient proxies of src's inner nodes, new nodes
            src = null;              // the source tree is garbage now (shared and Java)
            check(out, 0, new int[] {0});
            if (round++ % 8 == seed) kept.add(out);  // some trees stay, only through Java roots
            if (kept.size() > 16) kept.remove(0);
            if (round % 16 == 0) System.gc();      // releases roots while the collector runs
            for (Node k : kept) {
              // The left subtree hangs only on a Java-held root for a while, as the collector runs.
              Node l = k.left;
              k.left = null;
              Thread.yield();
              check(l, 0, new int[] {1});  // node 1 in preorder, and its subtree
              k.left = l;
              check(k, 0, new int[] {0});
            }
          }
          assertTrue(round > 10, "only " + round + " rounds");
        } catch (Throwable e) {
          failed.compareAndSet(null, e);
        }
      });
      ts[t].start();
    }
    for (Thread t : ts) t.join();
    stop.set(true);
    gc.join();
    if (failed.get() != null) throw new AssertionError(failed.get());
    SharedMemory.collect();
    String report = Direct.verifyHeap();  // no mutator runs now
    assertNull(report, report);
  }

  /** As rpc-bench's colors server: i+1, f*0.5+1, !b, s reversed, children derived. */
  static Node derive(Node p) {
    Node q = SharedMemory.allocate(Node.class);
    q.i = p.i + 1;
    q.f = p.f * 0.5 + 1.0;
    q.b = !p.b;
    q.s = new StringBuilder(p.s).reverse().toString();
    if (p.left != null) q.left = derive(p.left);
    if (p.right != null) q.right = derive(p.right);
    return q;
  }

  /** Checks a tree made by derive(privateTree(4)) in preorder. */
  static void check(Node q, int unused, int[] counter) {
    int c = counter[0]++;
    assertEquals(c + 1, q.i);
    assertEquals((c + 0.25) * 0.5 + 1.0, q.f);
    assertEquals(c % 2 != 0, q.b);
    assertEquals(new StringBuilder("n" + c + "-" + "x".repeat(c % 7)).reverse().toString(), q.s);
    if (q.left != null) check(q.left, 0, counter);
    if (q.right != null) check(q.right, 0, counter);
  }

  @Test
  void fastPathProxiesAfterDetach() {
    Node root = (Node) SharedMemory.copyToSharedMemory(privateTree(2, new int[] {0}));
    Node left = root.left;  // a Java-held root
    Node fresh = SharedMemory.allocate(Node.class);  // a root from Direct.newObject
    fresh.s = "x";
    assertNotNull(left);
    SharedMemory.detach();
    try {
      assertThrows(NotAttachedException.class, () -> left.s.length());
      assertThrows(NotAttachedException.class, () -> fresh.i = 3);
    } finally {
      SharedMemory.attach();
    }
    Node again = SharedMemory.allocate(Node.class);
    again.s = "after";
    assertEquals("after", again.s);
    System.gc();  // the old attachment's roots are released as no-ops
  }
}
