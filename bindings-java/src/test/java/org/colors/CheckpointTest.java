package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link SharedMemory#checkpoint()} against servers started with {@code --data-dir}
 * (colors-server/data_dir.hpp, checkpointer.hpp): numbered private checkpoint files, the errors
 * without a data directory and inside a transaction, and a heap lost with its server (a reboot)
 * coming back from the newest checkpoint.
 *
 * <p>This JVM leaves the run's server for the servers a test starts ({@link #attachTo}) and goes
 * back to it after each test (the next implicit attach uses {@code -Dcolors.socket}).
 */
@ExtendWith(ColorsServer.class)
class CheckpointTest {
  @TempDir Path tmp;
  private final List<ColorsServer.Server> started = new ArrayList<>();

  static String unique(String p) {
    return p + "-" + UUID.randomUUID();
  }

  private Path dataDir() {
    return tmp.resolve("data");  // does not exist yet: the server creates it
  }

  /** A server keeping checkpoints in {@link #dataDir()}, its heap in tmp/heap, none periodic. */
  private ColorsServer.Server serverWithDataDir() {
    ColorsServer.Server s = new ColorsServer.Server("16M", List.of("--data-dir", dataDir().toString(),
        "--heap-dir", tmp.resolve("heap").toString(), "--checkpoint-interval", "0"));
    started.add(s);
    return s;
  }

  private static void attachTo(ColorsServer.Server s) {
    SharedMemory.detach();
    SharedMemory.attach(s.socket);
  }

  @AfterEach
  void backToTheRunsServer() throws IOException {
    SharedMemory.detach();
    for (int i = started.size() - 1; i >= 0; i--) started.get(i).close();
  }

  private static String checkpointName(long seq) {
    return String.format("checkpoint-%020d.ckpt", seq);
  }

  private List<String> dataDirListing() throws IOException {
    try (Stream<Path> files = Files.list(dataDir())) {
      return files.map(p -> p.getFileName().toString()).sorted().collect(Collectors.toList());
    }
  }

  @Test
  void checkpointsAreNumberedInOrderAndWrittenForTheServersUserOnly() throws IOException {
    attachTo(serverWithDataDir());
    ObjectRepository r = SharedMemory.findOrCreateRepository(unique("ckpt-seq"));
    r.set(SharedMemory.copyToSharedMemory(List.of(1L, 2L)));
    long first = SharedMemory.checkpoint();
    r.set(SharedMemory.copyToSharedMemory(List.of(3L)));
    long second = SharedMemory.checkpoint();
    long third = SharedMemory.checkpoint();  // nothing written in between: still a new checkpoint
    assertEquals(List.of(1L, 2L, 3L), List.of(first, second, third));

    List<String> names = dataDirListing();
    assertTrue(names.contains(checkpointName(third)), names.toString());
    assertEquals(PosixFilePermissions.fromString("rwx------"), Files.getPosixFilePermissions(dataDir(), LinkOption.NOFOLLOW_LINKS));
    for (String n : names) {
      if (n.equals("lock")) continue;  // the data directory's instance lock
      assertTrue(n.matches("checkpoint-\\d{20}\\.ckpt"), "unexpected file " + n + " in " + names);
      Path f = dataDir().resolve(n);
      assertTrue(Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS), n);
      assertEquals(PosixFilePermissions.fromString("rw-------"), Files.getPosixFilePermissions(f, LinkOption.NOFOLLOW_LINKS), n);
    }
    assertEquals(List.of(3L), r.get());  // the clients were stopped for the copy, not changed by it
  }

  @Test
  void aServerWithoutADataDirSaysHowToGetOne() {
    SharedMemory.detach();
    SharedMemory.attach(ColorsServer.server().socket);  // the run's server: no --data-dir
    SharedMemoryException e = assertThrows(SharedMemoryException.class, SharedMemory::checkpoint);
    assertFalse(e instanceof ServerGoneException, e.toString());
    assertTrue(e.getMessage().contains("--data-dir"), e.getMessage());
    assertTrue(SharedMemory.isAttached());
    ObjectRepository r = SharedMemory.findOrCreateRepository(unique("ckpt-none"));
    r.set(SharedMemory.copyToSharedMemory(List.of("still", "served")));
    assertEquals(List.of("still", "served"), r.get());
  }

  @Test
  @SuppressWarnings("unchecked")
  void insideATransactionItIsRefusedAndTheTransactionGoesOn() {
    attachTo(serverWithDataDir());
    List<Object> l = (List<Object>) SharedMemory.copyToSharedMemory(List.of(1L));
    SharedMemory.findOrCreateRepository(unique("ckpt-tx")).set(l);
    long before = SharedMemory.checkpoint();

    Transaction tx = SharedMemory.beginTransaction();
    l.add(2L);
    InvalidArgumentException e = assertThrows(InvalidArgumentException.class, SharedMemory::checkpoint);
    assertTrue(e.getMessage().contains("checkpoint()") && e.getMessage().contains("not allowed inside a transaction"),
        e.getMessage());
    assertTrue(tx.isActive());
    assertTrue(SharedMemory.inTransaction());
    l.add(3L);  // still usable
    assertEquals(List.of(1L, 2L, 3L), new ArrayList<>(l));
    tx.rollback();
    assertFalse(SharedMemory.inTransaction());
    assertEquals(List.of(1L), new ArrayList<>(l));

    SharedMemory.atomically(() -> l.add(4L));
    assertEquals(List.of(1L, 4L), new ArrayList<>(l));
    assertEquals(before + 1, SharedMemory.checkpoint());  // the refused request took no number
  }

  /**
   * A reboot: the server dies (kill -9) and its heap file is gone with /dev/shm; a new server on
   * the same data directory restores the newest checkpoint. Data written after it is lost, data
   * written before it is back. This JVM, attached to the dead server's heap, is refused its slot
   * by the new one (the restored slot belonged to a process that does not map the new heap file,
   * so the new server reclaimed it: ServerGoneException) and must detach and attach again to see
   * the restored heap; until then it reads the heap it still maps.
   */
  @Test
  @SuppressWarnings("unchecked")
  void aCheckpointComesBackAfterTheHeapIsLost() throws Exception {
    ColorsServer.Server first = serverWithDataDir();
    attachTo(first);
    String kept = unique("ckpt-kept"), late = unique("ckpt-late");
    ObjectRepository r = SharedMemory.findOrCreateRepository(kept);
    List<Object> l = (List<Object>) SharedMemory.copyToSharedMemory(List.of("before", 1L, List.of(2L, 3L)));
    r.set(l);
    long seq = SharedMemory.checkpoint();
    l.add("after");  // not in the checkpoint
    l.set(1, 100L);
    SharedMemory.findOrCreateRepository(late).set(SharedMemory.copyToSharedMemory(List.of("late")));

    first.proc.destroyForcibly();  // SIGKILL: no shutdown checkpoint
    assertTrue(first.proc.waitFor(10, TimeUnit.SECONDS));
    Files.delete(first.heapFile());  // what a reboot does to /dev/shm
    assertEquals(List.of(checkpointName(seq), "lock"), dataDirListing());
    ColorsServer.Server successor = new ColorsServer.Server(first);
    started.add(successor);

    // This JVM still maps the dead server's heap file (unlinked, but mapped): reads go on there
    // and see what was written after the checkpoint; what needs the server is refused.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);  // the watcher notices the death by itself
    while (SharedMemory.isAttached() && System.nanoTime() < deadline) Thread.sleep(10);
    assertFalse(SharedMemory.isAttached());
    assertEquals(List.of("before", 100L, List.of(2L, 3L), "after"), r.get());
    ServerGoneException gone = assertThrows(ServerGoneException.class,
        () -> r.set(SharedMemory.copyToSharedMemory(List.of("x"))));
    assertTrue(gone.getMessage().contains("cannot take this client back")
        && gone.getMessage().contains("no longer belongs to client")
        && gone.getMessage().contains("attach again"), gone.getMessage());
    ServerGoneException refused = assertThrows(ServerGoneException.class, SharedMemory::checkpoint);
    assertTrue(refused.getMessage().contains("no longer belongs to client"), refused.getMessage());
    SharedMemory.detach();
    SharedMemory.attach(successor.socket);

    assertEquals(List.of("before", 1L, List.of(2L, 3L)), SharedMemory.findOrCreateRepository(kept).get());
    assertNull(SharedMemory.findOrCreateRepository(late).get());
    assertEquals(seq + 1, SharedMemory.checkpoint());  // the numbers go on after the restored one
  }
  /**
   * After the heap was replaced (a restore), attach() alone, as the refusal's message says
   * ("attach again"), ends the lost attachment and attaches to the restored heap, rather than
   * returning while the lost heap is still mapped and leaving the JVM reading it with no error.
   */
  @Test
  @SuppressWarnings("unchecked")
  void attachAloneMovesToTheRestoredHeap() throws Exception {
    ColorsServer.Server first = serverWithDataDir();
    attachTo(first);
    String kept = unique("ckpt-reattach");
    ObjectRepository r = SharedMemory.findOrCreateRepository(kept);
    r.set(SharedMemory.copyToSharedMemory(List.of("checkpointed")));
    SharedMemory.checkpoint();
    r.set(SharedMemory.copyToSharedMemory(List.of("lost")));
    first.proc.destroyForcibly();
    assertTrue(first.proc.waitFor(10, TimeUnit.SECONDS));
    Files.delete(first.heapFile());
    ColorsServer.Server successor = new ColorsServer.Server(first);
    started.add(successor);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (SharedMemory.isAttached() && System.nanoTime() < deadline) Thread.sleep(10);
    assertFalse(SharedMemory.isAttached());

    SharedMemory.attach(successor.socket);  // no detach() first
    assertTrue(SharedMemory.isAttached());
    assertEquals(List.of("checkpointed"), SharedMemory.findOrCreateRepository(kept).get());
  }
  /**
   * Under {@code --durability full} a commit returns once the server's log covers it on disk; on
   * a full disk it throws DurabilityException, stays committed and visible, and commits are
   * durable again once there is room.
   */
  @Test
  @SuppressWarnings("unchecked")
  void aFullDiskFailsTheDurableCommitWithDurabilityException() throws Exception {
    Path full = tmp.resolve("disk-full");  // while it exists, the server's writes fail with ENOSPC
    ColorsServer.Server s = new ColorsServer.Server("16M",
        List.of("--data-dir", dataDir().toString(), "--heap-dir", tmp.resolve("heap").toString(),
            "--checkpoint-interval", "0", "--durability", "full"),
        Map.of("COLORS_DATA_DIR_FAULT_FULL", full.toString()));
    started.add(s);
    attachTo(s);
    List<Object> box = (List<Object>) SharedMemory.copyToSharedMemory(new ArrayList<>(List.of(0L)));
    SharedMemory.findOrCreateRepository(unique("durable-box")).set(box);
    SharedMemory.atomically(() -> box.set(0, 1L));  // durable: its record is on disk
    Files.writeString(full, "full");
    DurabilityException e = assertThrows(DurabilityException.class, () -> SharedMemory.atomically(() -> box.set(0, 2L)));
    assertTrue(e.getMessage().contains("No space left on device"), e.getMessage());
    assertFalse(SharedMemory.inTransaction());  // committed: the thread's transaction ended, nothing to roll back
    assertEquals(2L, box.get(0));  // committed: visible, only not durable
    Files.delete(full);
    SharedMemory.atomically(() -> box.set(0, 3L));
    assertEquals(3L, box.get(0));
  }
}
