package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import demo.tree.Node;
import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Roots of proxies that outlive their attachment (Roots, Root, SharedMemory.attach/detach): the
 * JVM collects such proxies whenever it likes, usually after the next attachment began, and their
 * release must neither touch nor uncount the roots of the attachment that is current then.
 * {@code Roots.live()} counts exactly the Java-held roots of the current attachment.
 */
@ExtendWith(ColorsServer.class)
class AttachmentRootsTest {
  /**
   * {@code n} bound {@code @Shared} instances rooted by Java-held slots: read by the field fast
   * path from a chain copied in without proxies of its inner nodes.
   */
  private static List<Node> javaHeldRoots(int n) throws InterruptedException {
    Node chain = new Node();
    for (int i = 0; i < n; i++) {
      Node x = new Node();
      x.left = chain;
      chain = x;
    }
    Node head = (Node) SharedMemory.copyToSharedMemory(chain);
    LifetimeTest.settle();  // proxies the copy made of inner nodes, if any, are gone
    List<Node> nodes = new ArrayList<>();
    for (Node x = head.left; nodes.size() < n; x = x.left) nodes.add(x);
    for (Node x : nodes) assertTrue(Proxies.handleOf(x).root.slot != 0, "a Java-held root");
    return nodes;
  }

  private static List<Root> rootsOf(List<Node> nodes) {
    List<Root> roots = new ArrayList<>();
    for (Node x : nodes) roots.add(Proxies.handleOf(x).root);
    return roots;
  }

  /**
   * {@code n} Java-held roots whose slots a native adopted into a JValue (copying the proxies into a
   * shared list reads each one's object through JNI); returns their Roots, the proxies themselves
   * unreachable once this returns.
   */
  private static List<Root> adoptedJavaHeldRoots(int n) throws InterruptedException {
    List<Node> nodes = javaHeldRoots(n);
    SharedMemory.copyToSharedMemory(nodes);  // JNI: jvalue_of adopts each Java-held slot
    List<Root> roots = rootsOf(nodes);
    for (Root r : roots) assertTrue(r.ptr != 0, "a Java-held slot adopted by a JValue");
    return roots;
  }

  /** Java-held roots that stay unadopted; the proxies unreachable once this returns. */
  private static List<Root> unadoptedJavaHeldRoots(int n) throws InterruptedException {
    List<Root> roots = rootsOf(javaHeldRoots(n));
    for (Root r : roots) assertEquals(0, r.ptr, "not adopted");
    return roots;
  }

  private static void await(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean() && System.nanoTime() - deadline < 0) Thread.sleep(10);
    assertTrue(condition.getAsBoolean(), what);
  }

  /** Runs the JVM's GC until every root in {@code roots} was released (10 s at most). */
  private static void awaitReleased(List<Root> roots) throws InterruptedException {
    for (int i = 0; i < 1000 && !roots.stream().allMatch(Root::isReleased); i++) {
      System.gc();
      Thread.sleep(10);
    }
    assertTrue(roots.stream().allMatch(Root::isReleased), "the JVM did not collect the dropped proxies in 10 s");
  }

  @Test
  void adoptedRootsOfAnEndedAttachmentReleasedInTheNextAreNotUncountedThere() throws Exception {
    SharedMemory.attach();
    List<Root> old = adoptedJavaHeldRoots(20);
    SharedMemory.detach();
    SharedMemory.attach();
    assertEquals(0, Roots.live(), "a new attachment holds no Java-held root yet");
    Node held = SharedMemory.allocate(Node.class);  // a root of this attachment
    long live = Roots.live(), handles = SharedMemory.liveHandles();
    awaitReleased(old);
    assertEquals(live, Roots.live(), "releasing the ended attachment's Java-held roots changed this one's count");
    assertEquals(handles, SharedMemory.liveHandles(), "releasing the ended attachment's roots changed this one's count");
    held.i = 3;
    assertEquals(3, held.i);
    Reference.reachabilityFence(held);
  }

  /**
   * attach() to a successor that adopted the heap takes this attachment back (same segment, every
   * root kept) and moves the views to a new epoch. The Java-held roots made before are released
   * when the JVM collects their proxies: skipping them as belonging to another attachment would
   * keep their objects alive until detach and leave them counted.
   */
  @Test
  void javaHeldRootsFromBeforeASuccessorTookTheAttachmentBackAreReleased() throws Exception {
    ColorsServer.Server first = new ColorsServer.Server("16M");
    ColorsServer.Server successor = null;
    try {
      SharedMemory.detach();
      SharedMemory.attach(first.socket);
      List<Root> roots = unadoptedJavaHeldRoots(20);
      long live = Roots.live();
      first.proc.destroyForcibly();  // SIGKILL: the heap stays for a successor
      assertTrue(first.proc.waitFor(10, TimeUnit.SECONDS));
      await(() -> !SharedMemory.isAttached(), "the death was not noticed");
      successor = new ColorsServer.Server(first);
      long epoch = Direct.epoch;
      SharedMemory.attach(first.socket);
      assertTrue(SharedMemory.isAttached());
      assertTrue(Direct.epoch != epoch, "attach() took the attachment back");
      assertEquals(live, Roots.live(), "the same attachment: its roots still counted");
      awaitReleased(roots);
      assertEquals(live - roots.size(), Roots.live(), "the roots made before the attach were not released");
    } finally {
      SharedMemory.detach();  // the next test attaches to the run's server again
      if (successor != null) successor.close();
      first.close();
    }
  }
}
