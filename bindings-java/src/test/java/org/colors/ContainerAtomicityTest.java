package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Each SharedList method that is one list operation is atomic across processes: two child JVMs
 * with two threads each append, remove (by index and by value), set and read tagged values
 * (writer * 1e9 + seq) in one shared list without any lock for CONTAINER_STRESS_SECS seconds
 * (default 4). Then nothing read was never written, no value left the list twice, and
 * appended - removed == size.
 */
@ExtendWith(ColorsServer.class)
class ContainerAtomicityTest {
  static final double SECS = Double.parseDouble(System.getenv().getOrDefault("CONTAINER_STRESS_SECS", "4"));
  static final long TAG = 1_000_000_000L;

  @Test
  void listOperationsAreAtomicAcrossProcesses() throws Exception {
    String repo = "atomic-" + UUID.randomUUID();
    SharedMemory.findOrCreateRepository(repo).set(SharedMemory.copyToSharedMemory(new ArrayList<>()));
    List<Process> children = new ArrayList<>();
    for (int c = 0; c < 2; c++) children.add(ColorsServer.server().spawn("list-stress", repo, String.valueOf(10 * (c + 1)), String.valueOf(SECS)));

    Map<Long, Long> written = new HashMap<>();
    List<long[]> maxSeen = new ArrayList<>();  // {reader, writer, seq}
    long appended = 0, removed = 0;
    List<Long> gone = new ArrayList<>();
    for (Process p : children) {
      try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = out.readLine()) != null; ) {
          String[] f = line.split(" ");
          if (f[0].equals("thread")) {
            long w = Long.parseLong(f[1]);
            written.put(w, Long.parseLong(f[2]));
            appended += Long.parseLong(f[3]);
            removed += Long.parseLong(f[4]);
            assertEquals(0, Long.parseLong(f[5]), "worker " + w + " read values nobody stored");
            if (f.length > 6) {
              for (String ws : f[6].split(",")) {
                if (ws.isEmpty()) continue;
                String[] kv = ws.split(":");
                maxSeen.add(new long[] {w, Long.parseLong(kv[0]), Long.parseLong(kv[1])});
              }
            }
          } else if (f[0].equals("removed")) {
            for (int i = 1; i < f.length; i++) gone.add(Long.parseLong(f[i]));
          }
        }
      }
      assertTrue(p.waitFor(120, TimeUnit.SECONDS), "child did not exit");
      assertEquals(0, p.exitValue());
    }
    assertEquals(4, written.size());
    for (long[] s : maxSeen) {
      assertTrue(s[2] < written.getOrDefault(s[1], 0L), "worker " + s[0] + " read " + s[1] + ":" + s[2] + ", never written");
    }
    Set<Long> goneSet = new HashSet<>(gone);
    assertEquals(gone.size(), goneSet.size(), "a value left the list twice");
    SharedList list = (SharedList) SharedMemory.findOrCreateRepository(repo).get();
    Object[] remaining = list.toArray();
    Set<Long> held = new HashSet<>();
    for (Object o : remaining) {
      assertTrue(o instanceof Long && (Long) o >= TAG, "the list holds " + o + ", which nobody stored");
      long v = (Long) o;
      assertTrue(v % TAG < written.getOrDefault(v / TAG, 0L), v + " was never written");
      assertTrue(held.add(v), v + " is held twice");
      assertTrue(!goneSet.contains(v), v + " left the list and is still in it");
    }
    assertEquals(appended - removed, remaining.length, "appended - removed != size");
    assertTrue(appended > 100, "the workers did too little to test anything");
  }
}
