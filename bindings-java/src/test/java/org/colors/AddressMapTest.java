package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The read scopes' address map against a HashMap, across growth and reuse after clear. */
class AddressMapTest {

  @Test
  void findsWhatWasPutAndNothingElseAcrossGrowthAndReuse() {
    SplittableRandom rnd = new SplittableRandom(7);
    AddressMap m = new AddressMap();
    for (int round = 0; round < 40; round++) {
      // Sizes around the small-map log (64), and some large maps; 16-aligned addresses, clustered
      // as a heap's are.
      int n = round % 4 == 0 ? 1 + rnd.nextInt(20_000) : rnd.nextInt(130);
      long base = 0x7f00_0000_0000L + ((long) rnd.nextInt(1 << 20) << 4);
      Map<Long, Object> ref = new HashMap<>();
      for (int i = 0; i < n; i++) {
        long raw = base + ((long) rnd.nextInt(1 << 22) << 4);
        if (ref.containsKey(raw)) continue;
        Object p = new Object();
        ref.put(raw, p);
        m.put(raw, p);
      }
      assertEquals(ref.size(), m.size());
      for (Map.Entry<Long, Object> e : ref.entrySet()) assertSame(e.getValue(), m.get(e.getKey()));
      for (int i = 0; i < 1000; i++) {
        long raw = base + ((long) rnd.nextInt(1 << 22) << 4) + 8;  // never put: 8 mod 16
        assertNull(m.get(raw));
      }
      Map<Object, Boolean> seen = new IdentityHashMap<>();
      List<Object> visited = new ArrayList<>();
      m.forEachValue(v -> {
        visited.add(v);
        seen.put(v, true);
      });
      assertEquals(ref.size(), visited.size(), "each value visited once");
      assertEquals(ref.size(), seen.size());
      m.clear(round % 8 == 7 ? 64 : 1 << 20);
      assertEquals(0, m.size());
      for (long raw : ref.keySet()) assertNull(m.get(raw), "cleared");
    }
  }
}
