package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The bulk copy's identity memo against an IdentityHashMap: graphs of sizes around the scanned
 * prefix (IdentityIds.SMALL) and past the table's growth, objects equal but not identical, each
 * call after clear() seeing nothing of the one before.
 */
class IdentityIdsTest {

  @Test
  void numbersByIdentityAcrossTheScannedPrefixGrowthAndReuse() {
    SplittableRandom rnd = new SplittableRandom(11);
    IdentityIds ids = new IdentityIds();
    for (int round = 0; round < 60; round++) {
      int n = round % 10 == 9 ? 200 + rnd.nextInt(3000) : rnd.nextInt(3 * IdentityIds.SMALL);
      List<Object> objects = new ArrayList<>();
      for (int i = 0; i < n; i++) objects.add(new String("same"));  // equal, never identical
      IdentityHashMap<Object, Integer> ref = new IdentityHashMap<>();
      for (int step = 0; step < 3 * n; step++) {
        Object o = objects.get(rnd.nextInt(n));
        Integer want = ref.get(o);
        int got = ids.findOrAdd(o, ref.size());
        if (want == null) {
          assertEquals(-1, got, "round " + round + ": a new object has no number yet");
          ref.put(o, ref.size());
        } else {
          assertEquals(want.intValue(), got, "round " + round + ": the number given at first sight");
        }
      }
      ids.clear();
      for (Object o : objects) assertEquals(-1, ids.findOrAdd(o, 0), "round " + round + ": cleared");
      ids.clear();
    }
  }
}
