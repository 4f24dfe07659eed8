package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Attachment: implicit attach, detach and re-attach, stale proxies, explicit sockets, errors. */
@ExtendWith(ColorsServer.class)
class ModuleTest {

  @Test
  void implicitAttachDetachAndStaleProxies() {
    SharedList l = (SharedList) SharedMemory.copyToSharedMemory(List.of(1L, List.of(2L)));
    assertTrue(SharedMemory.isAttached());
    ObjectRepository r = SharedMemory.findOrCreateRepository("module-" + UUID.randomUUID());
    r.set(l);
    SharedMonitor held = SharedMemory.lock(l);
    held.close();

    SharedMemory.detach();
    assertFalse(SharedMemory.isAttached());
    SharedMemory.detach();  // twice: nothing
    NotAttachedException e = assertThrows(NotAttachedException.class, l::size);
    assertTrue(e.getMessage().contains("detach"), e.getMessage());
    assertThrows(NotAttachedException.class, () -> l.get(0));
    assertThrows(NotAttachedException.class, () -> SharedMemory.lock(l));
    assertTrue(SharedMemory.isObjectShared(l));

    Object again = r.get();  // implicit attach; the repository is looked up again
    assertTrue(SharedMemory.isAttached());
    assertEquals(List.of(1L, List.of(2L)), again);
    assertNotSame(l, again);
    assertSame(again, r.get());
    assertThrows(NotAttachedException.class, l::size);  // still stale
  }

  @Test
  void explicitSocketAndServerGone() {
    Path socket = ColorsServer.server().socket;
    SharedMemory.detach();
    SharedMemory.attach(socket);
    assertTrue(SharedMemory.isAttached());
    SharedMemory.attach(Path.of("/nonexistent/ignored-when-attached.sock"));  // attached: no-op
    SharedMemory.detach();
    ServerGoneException e = assertThrows(ServerGoneException.class,
        () -> SharedMemory.attach(ColorsServer.server().dir.resolve("none.sock")));
    assertTrue(e.getMessage().contains("none.sock"), e.getMessage());
    assertFalse(SharedMemory.isAttached());
    SharedMemory.attach();  // the test server, via -Dcolors.socket
    assertTrue(SharedMemory.isAttached());
  }

  @Test
  void exceptionHierarchy() {
    for (Class<?> c : List.of(NotAttachedException.class, ServerGoneException.class, VersionMismatchException.class,
        AddressInUseException.class, RefusedException.class, SharedOutOfMemoryException.class,
        TypeMismatchException.class, SharedOverflowException.class, OwnerDiedException.class, NotOwnerException.class,
        SharedIndexException.class, SharedKeyException.class, InvalidArgumentException.class,
        SharedInterruptedException.class, CorruptHeapException.class)) {
      assertTrue(SharedMemoryException.class.isAssignableFrom(c), c.getName());
    }
    assertTrue(RuntimeException.class.isAssignableFrom(SharedMemoryException.class));
  }

  @Test
  void outOfMemoryIsASharedMemoryException() {
    // 64 MiB heap: a list of 20 MiB binaries runs out; the error is SharedOutOfMemoryException.
    SharedList l = SharedMemory.allocate(SharedList.class, 0);
    byte[] big = new byte[20 << 20];
    SharedOutOfMemoryException e = assertThrows(SharedOutOfMemoryException.class, () -> {
      for (int i = 0; i < 10; i++) l.add(big);
    });
    assertFalse(e.getMessage().isEmpty());
    l.clear();
    SharedMemory.collect();
    SharedMemory.collect();
  }

  @Test
  void gcStatsAndCollectWithTimeout() {
    GcStats s = SharedMemory.collect(java.time.Duration.ofSeconds(30));
    assertTrue(s.cycle() >= 1);
    assertEquals(s.cycle(), SharedMemory.gcStats().cycle(), "no other cycle ran meanwhile, or a later one");
  }
}
