package oo7;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.function.IntFunction;

/**
 * The OO7 indexes and the queries Q1, Q2, Q3 (oo7/README.md, "Indexes and queries"), one code for
 * the shared sorted maps ({@link org.colors.SharedSortedMap}) and the private {@code HashMap} /
 * {@code TreeMap}:
 * <ul>
 *   <li>{@code parts_by_id}: an atomic part's id → the part; {@code parts_by_date}: a buildDate →
 *       the list of the parts with that date, in id order;
 *   <li>Q1: 10 lookups of ids {@code 1 + rand(number of atomic parts)} drawn by SplitMix64(seed + 1):
 *       (parts found, sum of their x);
 *   <li>Q2 / Q3: the parts with buildDate in [1000, 1010) / [1000, 1100), through the date index's
 *       range: (count, sum of x).
 * </ul>
 */
public final class Queries {
  private Queries() {}

  public static final int Q1_LOOKUPS = 10;

  /** A query's result: the parts counted and the sum of their x. */
  public record Result(long count, long sumX) {
    @Override
    public String toString() {
      return "(" + count + ", " + sumX + ")";
    }
  }

  public static String byIdRepository(Params p) {
    return p.repository() + ".parts_by_id";
  }

  public static String byDateRepository(Params p) {
    return p.repository() + ".parts_by_date";
  }

  public static long atomicParts(Params p) {
    return (long) p.numAtomicPerComp() * p.numCompPerModule();
  }

  /**
   * Fills the two indexes from the database (composites in id order, their parts in order, so each
   * date's list is in id order). {@code newList}: a new list for a date, of a capacity hint.
   */
  @SuppressWarnings("unchecked")
  public static void build(Schema.Database db, Map<Object, Object> byId, Map<Object, Object> byDate,
      IntFunction<List<Object>> newList) {
    for (Schema.CompositePart c : db.composites()) {
      for (Schema.AtomicPart part : c.parts()) {
        byId.put(part.id(), part);
        Long date = part.buildDate();
        List<Object> same = (List<Object>) byDate.get(date);
        if (same == null) {
          same = newList.apply(16);
          byDate.put(date, same);
        }
        same.add(part);
      }
    }
  }

  public static Result q1(Map<Object, Object> byId, long seed, long parts) {
    SplitMix64 rng = new SplitMix64(seed + 1);
    long n = 0, total = 0;
    for (int i = 0; i < Q1_LOOKUPS; i++) {
      Object part = byId.get(1 + rng.rand(parts));
      if (part != null) {
        n++;
        total += ((Schema.AtomicPart) part).x();
      }
    }
    return new Result(n, total);
  }

  public static Result dateRange(NavigableMap<Object, Object> byDate, long lo, long hi) {
    long n = 0, total = 0;
    for (Object same : byDate.subMap(lo, true, hi, false).values()) {
      for (Object part : (List<?>) same) {
        n++;
        total += ((Schema.AtomicPart) part).x();
      }
    }
    return new Result(n, total);
  }

  /** Runs query {@code name} (q1, q2 or q3). */
  public static Result run(String name, Map<Object, Object> byId, NavigableMap<Object, Object> byDate, long seed,
      long parts) {
    switch (name) {
      case "q1": return q1(byId, seed, parts);
      case "q2": return dateRange(byDate, 1000, 1010);
      case "q3": return dateRange(byDate, 1000, 1100);
      default: throw new IllegalArgumentException("unknown OO7 query '" + name + "': use one of q1, q2, q3");
    }
  }

  public static boolean isQuery(String name) {
    return name.equals("q1") || name.equals("q2") || name.equals("q3");
  }

  /**
   * What is wrong with the indexes of {@code db} (empty when they index every part once, under its
   * id and its date, and nothing else).
   */
  public static List<String> problems(Schema.Database db, Map<Object, Object> byId, Map<Object, Object> byDate) {
    List<String> bad = new ArrayList<>();
    long parts = 0;
    for (Schema.CompositePart c : db.composites()) {
      for (Schema.AtomicPart part : c.parts()) {
        parts++;
        Object found = byId.get(part.id());
        if (!(found instanceof Schema.AtomicPart) || ((Schema.AtomicPart) found).id() != part.id()
            || ((Schema.AtomicPart) found).x() != part.x()) {
          bad.add("part " + part.id() + " is not indexed under its id");
        }
      }
    }
    if (byId.size() != parts) bad.add("the id index has " + byId.size() + " entries for " + parts + " parts");
    long listed = 0;
    for (Map.Entry<Object, Object> e : byDate.entrySet()) {
      if (!(e.getValue() instanceof List)) {
        bad.add("date " + e.getKey() + " maps to a non-list");
        continue;
      }
      for (Object o : (List<?>) e.getValue()) {
        listed++;
        if (!(o instanceof Schema.AtomicPart)) {
          bad.add("date " + e.getKey() + " lists a non-part");
        } else if (((Number) e.getKey()).longValue() != ((Schema.AtomicPart) o).buildDate()) {
          bad.add("part " + ((Schema.AtomicPart) o).id() + " is listed under date " + e.getKey());
        }
      }
    }
    if (listed != parts) bad.add("the date index lists " + listed + " parts for " + parts);
    return bad.size() > 10 ? bad.subList(0, 10) : bad;
  }
}
