package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import demo.tree.Node;
import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.List;
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
   * {@code n} bound {@code @Shared} instances rooted by Java-held slots (read by the field fast
   * path from a chain copied in without proxies of its inner nodes) whose slots a native adopted
   * into a JValue (copying them into a shared list reads each one's object through JNI); returns
   * their Roots, the proxies themselves unreachable once this returns.
   */
  private static List<Root> adoptedJavaHeldRoots(int n) throws InterruptedException {
    Node chain = new Node();
    for (int i = 0; i < n; i++) {
      Node x = new Node();
      x.left = chain;
      chain = x;
    }
    Node head = (Node) SharedMemory.copyToSharedMemory(chain);
    LifetimeTest.settle();  // proxies the copy made of inner nodes, if any, are gone
    List<Node> nodes = new ArrayList<>();
    for (Node x = head.left; nodes.size() < n; x = x.left) nodes.add(x);  // Java-held roots
    SharedMemory.copyToSharedMemory(nodes);  // JNI: jvalue_of adopts each Java-held slot
    List<Root> roots = new ArrayList<>();
    for (Node x : nodes) {
      Root r = Proxies.handleOf(x).root;
      assertTrue(r.slot != 0 && r.ptr != 0, "a Java-held slot adopted by a JValue: slot " + r.slot + ", ptr " + r.ptr);
      roots.add(r);
    }
    return roots;
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
}
