package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import demo.tree.Node;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Read scopes ({@link ReadScope}): proxies read inside one are borrowed (no root, no identity
 * entry), one per object within the scope; kept ones outlive it; the others refuse every use
 * after the close and on other threads; and borrowed reads stay correct while the collector runs
 * and another thread rewrites what they read.
 */
@ExtendWith(ColorsServer.class)
class ReadScopeTest {

  /** A private full tree of the given depth; node i numbered in preorder from {@code first}. */
  private static Node tree(int depth, long[] next) {
    if (depth == 0) return null;
    Node n = new Node();
    n.i = next[0]++;
    n.f = n.i * 0.5;
    n.left = tree(depth - 1, next);
    n.right = tree(depth - 1, next);
    return n;
  }

  /** A shared copy of tree(depth): only its root has a proxy. */
  private static Node sharedTree(int depth) {
    Node n = (Node) SharedMemory.copyToSharedMemory(tree(depth, new long[] {0}));
    assertNotNull(SharedMemory.sharedView(n), "the copy is bound to a shared object");
    return n;
  }

  private static long sum(Node n) {
    if (n == null) return 0;
    assertEquals(n.i * 0.5, n.f);
    return n.i + sum(n.left) + sum(n.right);
  }

  /**
   * A scope closed while a detach is under way (here waiting for another thread's monitor): its
   * native exit was refused like any call during a detach, the native scope stayed open while
   * Java counted it closed, and every later scope on the thread failed ("already open").
   */
  @Test
  void aScopeClosedDuringADetachLetsTheThreadOpenScopesAgain() throws Exception {
    ObjectRepository rep = SharedMemory.findOrCreateRepository("scope-during-detach-" + java.util.UUID.randomUUID());
    java.util.concurrent.CountDownLatch opened = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch closeNow = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch held = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch reattached = new java.util.concurrent.CountDownLatch(1);
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Thread scoper = new Thread(() -> {
      try {
        ReadScope sc = SharedMemory.readScope();
        opened.countDown();
        closeNow.await();
        try {
          sc.close();
        } catch (NotAttachedException e) {
          // the detach's answer; the scope is closed all the same
        }
        reattached.await();
        try (ReadScope again = SharedMemory.readScope()) {
          assertTrue(ReadScope.active());
        }
      } catch (Throwable e) {
        failure.set(e);
      }
    }, "scoper");
    Thread holder = new Thread(() -> {
      try (SharedMonitor m = SharedMemory.lock(rep)) {
        held.countDown();
        Thread.sleep(1000);  // the detach waits for this monitor meanwhile
      } catch (Throwable e) {
        failure.compareAndSet(null, e);
      }
    }, "holder");
    scoper.start();
    opened.await();
    holder.start();
    held.await();
    Thread detacher = new Thread(SharedMemory::detach, "detacher");
    detacher.start();
    Thread.sleep(300);
    closeNow.countDown();
    detacher.join(10_000);
    holder.join(10_000);
    SharedMemory.attach();
    reattached.countDown();
    scoper.join(10_000);
    if (failure.get() != null) throw new AssertionError("the scope thread failed", failure.get());
  }

  @Test
  void proxiesReadInAScopeTakeNoRootAndAreOnePerObject() {
    Node root = sharedTree(6);  // 63 nodes
    long handles = SharedMemory.liveHandles();
    int cached = SharedMemory.identityCacheSize();
    try (ReadScope scope = SharedMemory.readScope()) {
      assertTrue(ReadScope.active());
      assertSame(root.left, root.left, "one proxy per object within a scope");
      assertSame(root.left.right, root.left.right);
      assertEquals(62L * 63 / 2, sum(root));
      assertEquals(handles, SharedMemory.liveHandles(), "no root per proxy read in the scope");
      assertEquals(cached, SharedMemory.identityCacheSize(), "no identity-cache entry either");
    }
    assertFalse(ReadScope.active());
    assertEquals(62L * 63 / 2, sum(root), "outside the scope the same reads take rooted proxies");
  }

  @Test
  void aProxyThatExistedBeforeTheScopeIsTheOneReadInIt() {
    Node root = sharedTree(3);
    Node left = root.left;  // rooted, identity-cached
    Node inScope;
    try (ReadScope scope = SharedMemory.readScope()) {
      inScope = root.left;
    }
    assertSame(left, inScope);
    assertEquals(1L, inScope.i, "a rooted proxy stays usable after the scope");
  }

  @Test
  void aBorrowedProxyRefusesEveryUseAfterItsScope() {
    Node root = sharedTree(3);
    Node left;
    List<Object> inner;
    SharedList outer = (SharedList) SharedMemory.copyToSharedMemory(new ArrayList<>(List.of(List.of(1L), List.of(2L))));
    try (ReadScope scope = SharedMemory.readScope()) {
      left = root.left;
      assertEquals(1L, left.i);
      @SuppressWarnings("unchecked") List<Object> l = (List<Object>) outer.get(0);
      inner = l;
      assertEquals(List.of(1L), inner);
    }
    Node l = left;
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> System.out.println(l.i));
    assertTrue(e.getMessage().contains("ReadScope that has closed"), e.getMessage());
    assertThrows(IllegalStateException.class, () -> System.out.println(l.left));
    assertThrows(IllegalStateException.class, () -> l.i = 5);
    assertThrows(IllegalStateException.class, inner::size);
    assertThrows(IllegalStateException.class, () -> inner.get(0));
    assertThrows(IllegalStateException.class, () -> inner.add(3L));
    assertThrows(IllegalStateException.class, () -> ReadScope.keep(l));
    assertEquals(1L, root.left.i, "the object itself is untouched, and read again gets a usable proxy");
    assertEquals(List.of(1L), outer.get(0));
  }

  @Test
  void keptProxiesOutliveTheScopeAndCollections() {
    Node root = sharedTree(4);
    Node kept;
    Node dropped;
    try (ReadScope scope = SharedMemory.readScope()) {
      kept = ReadScope.keep(root.left.left);
      dropped = root.right;
      assertSame(kept, root.left.left, "keep returns the proxy itself");
    }
    root.left = null;  // only the kept proxy holds that subtree now
    SharedMemory.collect();
    SharedMemory.collect();
    assertEquals(2L + 3 + 4, sum(kept));
    kept.i = 42;
    assertEquals(42L, kept.i);
    assertThrows(IllegalStateException.class, () -> System.out.println(dropped.i));
  }

  @Test
  void aBorrowedProxyHandedToANativeOperationIsKept() {
    SharedList outer = (SharedList) SharedMemory.copyToSharedMemory(new ArrayList<>(List.of(List.of(1L), List.of(2L))));
    Node root = sharedTree(2);
    List<Object> inner;
    Node right;
    try (ReadScope scope = SharedMemory.readScope()) {
      @SuppressWarnings("unchecked") List<Object> l = (List<Object>) outer.get(1);
      inner = l;
      inner.add(3L);  // a JNI call with the borrowed handle: it takes a root first
      right = root.right;
      outer.add(right);  // a store of a borrowed object: rooted, then stored by libshared
      root.left = right;  // the same through the field path
    }
    assertEquals(List.of(2L, 3L), inner);
    assertEquals(2L, right.i, "the proxy stored inside the scope was kept");
    assertSame(root.left, root.right);
    assertEquals(3, outer.size());
  }

  @Test
  void objectsAllocatedInAScopeTakeNoRootAndLiveOnWhereTheyWereStored() {
    SharedList keep = (SharedList) SharedMemory.copyToSharedMemory(new ArrayList<>());
    Node holder = sharedTree(1);
    long handles = SharedMemory.liveHandles();
    Node loose;
    Node linked;
    try (ReadScope scope = SharedMemory.readScope()) {
      Node a = SharedMemory.allocate(Node.class);
      Node b = SharedMemory.allocate(Node.class);
      Node c = SharedMemory.allocate(Node.class);
      assertEquals(0L, a.i, "primitive fields start at Java's zeros");
      a.i = 1;
      b.i = 2;
      c.i = 3;
      a.left = b;  // a scope-allocated object into a scope-allocated one: no root taken
      b.right = c;
      assertSame(b, a.left);
      holder.left = a;  // into an object from before the scope
      assertEquals(handles, SharedMemory.liveHandles(), "no root per object allocated or linked in the scope");
      linked = c;
      loose = SharedMemory.allocate(Node.class);
      keep.add(SharedMemory.allocate(Node.class));  // through a native: that one is kept
    }
    SharedMemory.collect();
    SharedMemory.collect();
    Node a = holder.left;
    assertEquals(1L, a.i);
    assertEquals(2L, a.left.i);
    assertEquals(3L, a.left.right.i, "the graph made in the scope survives it through holder");
    assertEquals(0L, ((Node) keep.get(0)).i);
    assertThrows(IllegalStateException.class, () -> System.out.println(linked.i),
        "the proxies of the scope are borrowed even when their objects live on");
    assertThrows(IllegalStateException.class, () -> System.out.println(loose.i));
    assertNull(Direct.verifyHeap(), "the heap verifies");
  }

  /**
   * A proxy kept out of its scope after another thread published one of the same object keeps a
   * root of its own, unpublished, as a transient proxy does. RpcSupport.releaseTransient, public
   * for the rpc package, released that root while the proxy's holder still used it (its JNI path
   * then refused the handle, and its field fast path read an object nothing kept alive); it
   * releases only the roots of the transient proxies the rpc natives make.
   */
  @Test
  void aKeptProxyIsNotReleasedAsATransientOne() throws Exception {
    Node n = new Node();
    n.i = 41;
    SharedList outer = (SharedList) SharedMemory.copyToSharedMemory(new ArrayList<>(List.of(n)));
    AtomicReference<Object> published = new AtomicReference<>();
    Node kept;
    try (ReadScope scope = SharedMemory.readScope()) {
      Node borrowed = (Node) outer.get(0);
      Thread t = new Thread(() -> published.set(outer.get(0)));  // outside any scope: published
      t.start();
      t.join();
      assertNotNull(published.get());
      kept = ReadScope.keep(borrowed);
    }
    RpcSupport.releaseTransient(kept);
    outer.clear();
    published.set(null);
    SharedMemory.collect();
    SharedMemory.collect();
    assertEquals(41L, SharedMemory.sharedView(kept).get("i"), "the JNI path still takes its handle");
    kept.i += 1;
    assertEquals(42L, kept.i);
    assertNull(Direct.verifyHeap(), "the heap verifies");
  }

  @Test
  void anotherThreadCannotUseABorrowedProxy() throws Exception {
    SharedList outer = (SharedList) SharedMemory.copyToSharedMemory(new ArrayList<>(List.of(List.of(1L))));
    AtomicReference<Throwable> seen = new AtomicReference<>();
    try (ReadScope scope = SharedMemory.readScope()) {
      Object inner = outer.get(0);
      Thread t = new Thread(() -> {
        try {
          ((List<?>) inner).size();
        } catch (Throwable e) {
          seen.set(e);
        }
      });
      t.start();
      t.join();
      assertEquals(1, ((List<?>) inner).size(), "its own thread still uses it");
    }
    assertTrue(seen.get() instanceof IllegalStateException, String.valueOf(seen.get()));
    assertTrue(seen.get().getMessage().contains("another thread's ReadScope"), seen.get().getMessage());
  }

  @Test
  void aDetachInsideAScopeLeavesItsBorrowedProxiesUnusable() {
    // The copy inside the scope below needs a fresh TLAB (a new attachment), and inside a scope an
    // allocation on a heap full of the earlier tests' garbage throws instead of waiting for a cycle.
    SharedMemory.collect();
    Node root = sharedTree(2);
    Node left;
    ReadScope scope = SharedMemory.readScope();
    try {
      left = root.left;
      assertEquals(1L, left.i);
      SharedMemory.detach();
      SharedMemory.attach();  // a new attachment: another heap may lie at the same addresses
      assertEquals(0L, sharedTree(1).i, "the new attachment's fast path is in use");
      assertThrows(NotAttachedException.class, () -> System.out.println(left.i));
      assertThrows(NotAttachedException.class, () -> left.i = 7);
    } finally {
      scope.close();
    }
    assertFalse(ReadScope.active());
    Node again = sharedTree(2);
    try (ReadScope s = SharedMemory.readScope()) {
      assertEquals(1L, again.left.i, "scopes work in the new attachment");
    }
  }

  /**
   * A scope left open across a detach and an attach: its native scope protects nothing of the
   * new attachment (the collector no longer waits for it), yet the Java side kept lending proxies
   * without a root in it. Once the objects so read lost their last reference and two cycles freed
   * them, reading through those proxies read freed, reused memory and crashed the JVM (SIGSEGV in
   * ListReads.get). Now the thread reads as outside a scope until it closes.
   */
  @Test
  void aScopeOpenAcrossADetachAndAnAttachLendsNothingInTheNewAttachment() {
    SharedMemory.collect();
    String name = "scope-across-reattach-" + java.util.UUID.randomUUID();
    List<Object> lists = new ArrayList<>();
    for (long i = 0; i < 64; i++) lists.add(new ArrayList<>(List.of(i, i + 1, i + 2)));
    SharedMemory.findOrCreateRepository(name).set(SharedMemory.copyToSharedMemory(lists));
    ReadScope scope = SharedMemory.readScope();
    try {
      SharedMemory.detach();
      SharedMemory.attach();
      assertFalse(ReadScope.active(), "a scope of the closed attachment protects nothing in this one");
      List<?> holder = (List<?>) SharedMemory.findOrCreateRepository(name).get();
      List<Object> read = new ArrayList<>();
      try (ReadScope nested = SharedMemory.readScope()) {
        assertFalse(ReadScope.active(), "nor does a scope nested in it");
        for (int i = 0; i < 64; i++) read.add(holder.get(i));
      }
      for (int i = 0; i < 64; i++) ((SharedList) holder).set(i, null);  // only `read` holds them now
      SharedMemory.collect();
      SharedMemory.collect();
      for (int i = 0; i < 2000; i++) SharedMemory.copyToSharedMemory(List.of("reused-" + i, -1L, -2L));
      for (int i = 0; i < 64; i++) {
        assertEquals(List.of((long) i, i + 1L, i + 2L), read.get(i), "list " + i + " was kept alive by its proxy");
      }
    } finally {
      scope.close();
    }
    assertNull(Direct.verifyHeap(), "the heap verifies");
    try (ReadScope s = SharedMemory.readScope()) {
      assertTrue(ReadScope.active(), "a scope opened after the close is one of this attachment");
    }
  }

  @Test
  void scopesNestAndAClosedScopeClosesNothingAgain() {
    Node root = sharedTree(2);
    Node left;
    ReadScope outer = SharedMemory.readScope();
    try (ReadScope inner = SharedMemory.readScope()) {
      left = root.left;
    }
    assertTrue(ReadScope.active(), "the outer scope is still open");
    assertEquals(1L, left.i, "borrowed until the outermost scope closes");
    outer.close();
    outer.close();
    assertFalse(ReadScope.active());
    assertThrows(IllegalStateException.class, () -> System.out.println(left.i));
  }

  @Test
  void noWaitForTheCollectorInsideAScopeAndNoScopeInsideATransaction() {
    try (ReadScope scope = SharedMemory.readScope()) {
      assertThrows(InvalidArgumentException.class, () -> SharedMemory.atomically(() -> { }));
      assertThrows(InvalidArgumentException.class, SharedMemory::collect);
    }
    SharedMemory.atomically(() -> {
      assertThrows(InvalidArgumentException.class, SharedMemory::readScope);
      assertFalse(ReadScope.active());
    });
    SharedMemory.collect();  // both work again outside
  }

  @Test
  void borrowedReadsStayCorrectWhileTheCollectorRunsAndTheGraphChanges() throws Exception {
    // A list of trees, each checked by sum(); a writer keeps replacing trees (the old ones become
    // garbage) and a collector thread runs cycles while a reader walks the list in scopes.
    int n = 32;
    List<Object> init = new ArrayList<>();
    for (int i = 0; i < n; i++) init.add(tree(4, new long[] {0}));
    SharedList trees = (SharedList) SharedMemory.copyToSharedMemory(init);
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Thread writer = new Thread(() -> {
      try {
        for (int k = 0; !stop.get(); k++) {
          trees.set(k % n, SharedMemory.copyToSharedMemory(tree(4, new long[] {0})));
        }
      } catch (Throwable e) {
        failure.compareAndSet(null, e);
      }
    });
    Thread collector = new Thread(() -> {
      try {
        while (!stop.get()) SharedMemory.collect();
      } catch (Throwable e) {
        failure.compareAndSet(null, e);
      }
    });
    writer.start();
    collector.start();
    long deadline = System.nanoTime() + 3_000_000_000L;
    int scopes = 0;
    try {
      while (System.nanoTime() < deadline && failure.get() == null) {
        try (ReadScope scope = SharedMemory.readScope()) {
          for (Object t : trees) assertEquals(14L * 15 / 2, sum((Node) t));
        }
        scopes++;
      }
    } finally {
      stop.set(true);
      writer.join();
      collector.join();
    }
    assertNull(failure.get());
    assertTrue(scopes > 10, "scopes run: " + scopes);
    for (Object t : trees) assertEquals(14L * 15 / 2, sum((Node) t));
  }
}
