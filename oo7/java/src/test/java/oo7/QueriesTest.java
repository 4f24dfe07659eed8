package oo7;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import oo7.plain.PlainFactory;
import oo7.shared.SharedFactory;
import org.colors.SharedMemory;
import org.colors.SharedSortedMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The indexes on the shared sorted map and Q1/Q2/Q3 (oo7/README.md, "Indexes and queries"): the
 * same results on the shared indexes, on HashMap/TreeMap indexes of the POJO model, and as the
 * C++ and Python loaders print for seed 42 small; the index check finds a missing or misplaced
 * part.
 */
@ExtendWith(Oo7Server.class)
class QueriesTest {
  /** What oo7-load and load.py print for seed 42 small (oo7/README.md). */
  static final Map<String, Queries.Result> SMALL_42 = Map.of(
      "q1", new Queries.Result(10, 574786), "q2", new Queries.Result(89, 4471274), "q3", new Queries.Result(1045, 51865313));

  @Test
  void queriesAgreeOnSharedAndPrivateIndexesAndWithTheOtherLanguages() {
    Schema.Database shared = Builder.build(Params.SMALL, 42, new SharedFactory());
    SharedSortedMap byId = SharedMemory.newSortedMap();
    SharedSortedMap byDate = SharedMemory.newSortedMap();
    Queries.build(shared, byId, byDate, n -> SharedMemory.allocate(List.class, n));
    Schema.Database mine = Builder.build(Params.SMALL, 42, new PlainFactory());
    Map<Object, Object> myById = new HashMap<>();
    TreeMap<Object, Object> myByDate = new TreeMap<>();
    Queries.build(mine, myById, myByDate, ArrayList::new);
    assertEquals(List.of(), Queries.problems(shared, byId, byDate));
    assertEquals(List.of(), Queries.problems(mine, myById, myByDate));
    long parts = Queries.atomicParts(Params.SMALL);
    for (String q : List.of("q1", "q2", "q3")) {
      Queries.Result s = Queries.run(q, byId, byDate, 42, parts);
      assertEquals(Queries.run(q, myById, myByDate, 42, parts), s, q);
      assertEquals(SMALL_42.get(q), s, q);
    }
  }

  @Test
  void theIndexCheckFindsAMissingAndAMisplacedPart() {
    Schema.Database shared = Builder.build(Params.SMALL, 42, new SharedFactory());
    SharedSortedMap byId = SharedMemory.newSortedMap();
    SharedSortedMap byDate = SharedMemory.newSortedMap();
    Queries.build(shared, byId, byDate, n -> SharedMemory.allocate(List.class, n));
    Object removed = byId.remove(17L);
    List<String> bad = Queries.problems(shared, byId, byDate);
    assertFalse(bad.isEmpty());
    assertTrue(bad.get(0).contains("part 17"), bad.toString());
    byId.put(17L, removed);
    assertEquals(List.of(), Queries.problems(shared, byId, byDate));
    // A part moved to another date's list.
    Object date = byDate.firstKey();
    @SuppressWarnings("unchecked")
    List<Object> first = (List<Object>) byDate.get(date);
    @SuppressWarnings("unchecked")
    List<Object> last = (List<Object>) byDate.get(byDate.lastKey());
    last.add(first.remove(0));
    bad = Queries.problems(shared, byId, byDate);
    assertFalse(bad.isEmpty());
    assertTrue(bad.get(0).contains("is listed under date"), bad.toString());
  }
}
