package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.ListIterator;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * SharedList/SharedMap/SharedSet against ArrayList/HashMap/HashSet: random operation sequences
 * (seeded java.util.Random) applied to both, comparing every result (or exception class) and the
 * contents after each step; plus the views, iterators and equality contracts.
 *
 * <p>Values are the canonical forms shared values read back as (Long, non-integral Double,
 * Boolean, String, null), so that Java equality and the shared heap's neutral equality agree.
 */
@ExtendWith(ColorsServer.class)
class ContainerContractTest {
  static final int STEPS = 2500;

  static Object randomValue(Random r) {
    switch (r.nextInt(10)) {
      case 0: return null;
      case 1: return r.nextBoolean();
      case 2: return r.nextInt(8) + 0.5;
      case 3: return r.nextLong();
      case 4:
      case 5: return "s" + r.nextInt(10);
      default: return (long) r.nextInt(12) - 2;
    }
  }

  /** The result of an operation: its value, or the class of the exception it threw. */
  static Object outcome(Callable<?> op) {
    try {
      return op.call();
    } catch (Exception e) {
      return e.getClass();
    }
  }

  static void same(Object expected, Object actual, String what) {
    if (expected instanceof Object[] && actual instanceof Object[]) {
      assertTrue(Arrays.equals((Object[]) expected, (Object[]) actual), what + ": " + Arrays.toString((Object[]) expected)
          + " vs " + Arrays.toString((Object[]) actual));
    } else {
      assertEquals(expected, actual, what);
    }
  }

  static final Comparator<Object> ORDER = Comparator.comparing(o -> o == null ? "" : o.getClass().getSimpleName() + o);

  // ---- lists ---------------------------------------------------------------------------------

  @Test
  void listRandomOperations() {
    for (long seed : new long[] {1, 2, 3}) listRandom(seed, STEPS);
  }

  @SuppressWarnings("unchecked")
  private void listRandom(long seed, int steps) {
    Random r = new Random(seed);
    List<Object> p = new ArrayList<>();
    List<Object> s = SharedMemory.allocate(SharedList.class, 0);
    for (int step = 0; step < steps; step++) {
      int n = p.size();
      int i = r.nextInt(n + 3) - 1;  // sometimes out of range
      Object v = randomValue(r);
      List<Object> vs = new ArrayList<>();
      for (int k = r.nextInt(4); k > 0; k--) vs.add(randomValue(r));
      int op = r.nextInt(n > 40 ? 26 : 22);  // shrink ops more often when long
      String what = "seed " + seed + " step " + step + " op " + op;
      Object a;
      Object b;
      switch (op) {
        case 0: case 1: case 2:
          a = outcome(() -> p.add(v)); b = outcome(() -> s.add(v)); break;
        case 3:
          a = outcome(() -> { p.add(i, v); return null; }); b = outcome(() -> { s.add(i, v); return null; }); break;
        case 4:
          a = outcome(() -> p.set(i, v)); b = outcome(() -> s.set(i, v)); break;
        case 5:
          a = outcome(() -> p.get(i)); b = outcome(() -> s.get(i)); break;
        case 6:
          a = outcome(() -> p.indexOf(v)); b = outcome(() -> s.indexOf(v)); break;
        case 7:
          a = outcome(() -> p.lastIndexOf(v)); b = outcome(() -> s.lastIndexOf(v)); break;
        case 8:
          a = outcome(() -> p.contains(v) + "/" + p.isEmpty() + "/" + p.size());
          b = outcome(() -> s.contains(v) + "/" + s.isEmpty() + "/" + s.size()); break;
        case 9:
          a = outcome(() -> p.addAll(vs)); b = outcome(() -> s.addAll(vs)); break;
        case 10:
          a = outcome(() -> p.addAll(i, vs)); b = outcome(() -> s.addAll(i, vs)); break;
        case 11: {
          a = outcome(() -> p.subList(Math.max(0, Math.min(i, n)), n).toString());
          b = outcome(() -> s.subList(Math.max(0, Math.min(i, n)), n).toString()); break;
        }
        case 12: {
          a = outcome(() -> p.containsAll(vs)); b = outcome(() -> s.containsAll(vs)); break;
        }
        case 13: {
          // listIterator: walk, set some, add some
          long itSeed = r.nextLong();
          a = outcome(() -> walkListIterator(p, new Random(itSeed)));
          b = outcome(() -> walkListIterator(s, new Random(itSeed))); break;
        }
        case 14:
          a = outcome(() -> { p.sort(ORDER); return null; }); b = outcome(() -> { s.sort(ORDER); return null; }); break;
        case 15:
          a = outcome(() -> { p.replaceAll(x -> x instanceof Long ? (Long) x + 1 : x); return null; });
          b = outcome(() -> { s.replaceAll(x -> x instanceof Long ? (Long) x + 1 : x); return null; }); break;
        case 16:
          a = outcome(() -> p.equals(new ArrayList<>(s)) + "/" + s.equals(p) + "/" + p.equals(s));
          b = "true/true/true"; break;
        case 17:
          a = outcome(() -> p.hashCode() + "/" + p.toString()); b = outcome(() -> s.hashCode() + "/" + s.toString()); break;
        case 18:
          a = outcome(() -> p.toArray()); b = outcome(() -> s.toArray()); break;
        case 19:
          a = outcome(() -> Arrays.toString(p.toArray(new Object[n + 1])));
          b = outcome(() -> Arrays.toString(s.toArray(new Object[n + 1]))); break;
        case 20:
          a = outcome(() -> {
            ListIterator<Object> it = p.listIterator(p.size());
            List<Object> back = new ArrayList<>();
            while (it.hasPrevious()) back.add(it.previous());
            return back;
          });
          b = outcome(() -> {
            ListIterator<Object> it = s.listIterator(s.size());
            List<Object> back = new ArrayList<>();
            while (it.hasPrevious()) back.add(it.previous());
            return back;
          }); break;
        case 21:
          a = outcome(() -> p.remove(v)); b = outcome(() -> s.remove(v)); break;
        case 22:
          a = outcome(() -> p.remove(i)); b = outcome(() -> s.remove(i)); break;
        case 23: {
          Predicate<Object> pred = x -> x instanceof Boolean || x == null;
          a = outcome(() -> p.removeIf(pred)); b = outcome(() -> s.removeIf(pred)); break;
        }
        case 24: {
          int from = Math.max(0, Math.min(i, n));
          int to = Math.min(n, from + r.nextInt(5));
          a = outcome(() -> { p.subList(from, to).clear(); return null; });
          b = outcome(() -> { s.subList(from, to).clear(); return null; }); break;
        }
        default: {
          boolean retain = r.nextBoolean();
          a = outcome(() -> retain ? p.retainAll(vs) : p.removeAll(vs));
          b = outcome(() -> retain ? s.retainAll(vs) : s.removeAll(vs)); break;
        }
      }
      same(a, b, what);
      assertEquals(p, s, what + " contents");
      if (r.nextInt(500) == 0) {
        p.clear();
        s.clear();
      }
    }
  }

  private static List<Object> walkListIterator(List<Object> l, Random r) {
    List<Object> seen = new ArrayList<>();
    ListIterator<Object> it = l.listIterator();
    while (it.hasNext()) {
      Object x = it.next();
      seen.add(x);
      switch (r.nextInt(6)) {
        case 0: it.set("set" + r.nextInt(3)); break;
        case 1: it.add(r.nextInt(5) + 0L); break;
        case 2: it.remove(); break;
        default: break;
      }
      seen.add(it.nextIndex());
    }
    return seen;
  }

  @Test
  void listBasics() {
    List<Object> s = SharedMemory.allocate(SharedList.class, 0);
    assertTrue(s.isEmpty());
    assertThrows(IndexOutOfBoundsException.class, () -> s.get(0));
    assertThrows(IndexOutOfBoundsException.class, () -> s.remove(0));
    assertThrows(IndexOutOfBoundsException.class, () -> s.add(1, "x"));
    IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> s.set(-1, "x"));
    assertEquals("Index -1 out of bounds for length 0", e.getMessage());
    assertEquals("[]", s.toString());
    s.add(s);
    assertEquals("[(this Collection)]", s.toString());
    s.clear();
    s.addAll(List.of(1L, 2L, 3L));
    Iterator<Object> it = s.iterator();
    it.next();
    s.add(4L);
    assertThrows(java.util.ConcurrentModificationException.class, it::next);
    assertEquals(List.of(1L, 2L, 3L, 4L).hashCode(), s.hashCode());
    assertEquals(s, List.of(1L, 2L, 3L, 4L));
    assertFalse(s.equals(Set.of(1L)));
    assertTrue(s instanceof java.util.RandomAccess);
  }

  /**
   * A comparator or operator that changes the list it runs on: ArrayList throws
   * ConcurrentModificationException. The shared list wrote its sorted (or replaced) copy over the
   * change, which was lost without a word; now it throws and keeps the change.
   */
  @Test
  void aSortOrReplaceAllWhoseCodeChangesTheListThrowsAndKeepsTheChange() {
    List<Object> s = SharedMemory.allocate(SharedList.class, 0);
    s.addAll(List.of(3L, 1L, 2L));
    boolean[] once = {false};
    Comparator<Object> adding = (a, b) -> {
      if (!once[0]) {
        once[0] = true;
        s.add(99L);
      }
      return Long.compare((Long) a, (Long) b);
    };
    assertThrows(java.util.ConcurrentModificationException.class, () -> s.sort(adding));
    assertEquals(List.of(3L, 1L, 2L, 99L), s, "the change is kept");
    assertThrows(java.util.ConcurrentModificationException.class, () -> s.replaceAll(x -> {
      if (s.size() == 4) s.remove(0);
      return x;
    }));
    assertEquals(List.of(1L, 2L, 99L), s, "the change is kept");
    s.sort(null);
    assertEquals(List.of(1L, 2L, 99L), s);
    s.replaceAll(x -> (Long) x + 1);
    assertEquals(List.of(2L, 3L, 100L), s);
    List<Object> bytes = SharedMemory.allocate(SharedList.class, 0);  // each read makes new byte[]s
    bytes.addAll(List.of(new byte[] {2}, new byte[] {1}, Double.NaN));
    bytes.sort(Comparator.comparing(Object::toString));
    assertEquals(3, bytes.size(), "no false alarm for elements read as new objects");
  }

  /**
   * addAll of a collection whose last element cannot be stored (a lone surrogate, which only the
   * native call refuses) added the elements before it and then threw; at an index, and through a
   * subList, the same. Now the list is unchanged, and a whole addAll is one operation.
   */
  @Test
  @SuppressWarnings({"unchecked", "rawtypes"})
  void anAddAllWithAnUnstorableElementAddsNothing() {
    List<Object> s = SharedMemory.allocate(SharedList.class, 0);
    s.addAll(List.of("a", "b"));
    List<Object> bad = List.of(1L, 2L, "\uD800");
    assertThrows(InvalidArgumentException.class, () -> s.addAll(bad));
    assertEquals(List.of("a", "b"), s);
    assertThrows(InvalidArgumentException.class, () -> s.addAll(1, bad));
    assertEquals(List.of("a", "b"), s);
    assertThrows(InvalidArgumentException.class, () -> s.subList(0, 1).addAll(bad));
    assertEquals(List.of("a", "b"), s);
    assertTrue(s.addAll(1, List.of(1L, 2L)));
    assertTrue(s.addAll(List.of(3L)));
    assertEquals(List.of("a", 1L, 2L, "b", 3L), s);
    assertFalse(s.addAll(2, List.of()));
    assertThrows(IndexOutOfBoundsException.class, () -> s.addAll(6, List.of(4L)));
    IllegalArgumentException prim = assertThrows(IllegalArgumentException.class, () -> ((SharedList) s).toArray(int.class));
    assertTrue(prim.getMessage().contains("boxed"), prim.getMessage());
    Map raw = new HashMap();
    raw.put(1, SharedType.Kind.INTEGER);
    assertThrows(InvalidArgumentException.class, () -> SharedMemory.defineClass("contract.RawFields", raw));
    raw.clear();
    raw.put("x", "INTEGER");
    assertThrows(InvalidArgumentException.class, () -> SharedMemory.defineClass("contract.RawFields", raw));
  }

  /**
   * A sort or replaceAll while another thread appends: each append lands, before the sort's read
   * (and is sorted) or after it (and the sort throws, keeping it). The check and the write were two
   * steps, and an append between them was overwritten without a word.
   */
  @Test
  void aSortOrReplaceAllLosesNoAppendOfAnotherThread() throws Exception {
    List<Object> s = SharedMemory.allocate(SharedList.class, 0);
    int n = 100_000;
    Thread adder = new Thread(() -> {
      for (long i = 0; i < n; i++) s.add(i);
    });
    adder.start();
    int rounds = 0;
    while (adder.isAlive()) {
      try {
        if (rounds % 2 == 0) s.sort(null);
        else s.replaceAll(x -> x);
      } catch (java.util.ConcurrentModificationException expected) {
        // the append came after the read: the list keeps it
      }
      rounds++;
    }
    adder.join();
    assertTrue(rounds > 0);
    Set<Object> missing = new HashSet<>();
    for (long i = 0; i < n; i++) missing.add(i);
    missing.removeAll(new ArrayList<>(s));
    assertEquals(Set.of(), missing, "appends lost in " + rounds + " rewrites");
    assertEquals(n, s.size());
  }

  // ---- maps ----------------------------------------------------------------------------------

  @Test
  void mapRandomOperations() {
    for (long seed : new long[] {11, 12, 13}) mapRandom(seed, STEPS);
  }

  private void mapRandom(long seed, int steps) {
    Random r = new Random(seed);
    Map<Object, Object> p = new HashMap<>();
    Map<Object, Object> s = SharedMemory.allocate(SharedMap.class, 0);
    for (int step = 0; step < steps; step++) {
      Object k = randomValue(r);
      Object v = randomValue(r);
      Object nonNull = v == null ? "nn" : v;
      Map<Object, Object> more = new HashMap<>();
      for (int i = r.nextInt(4); i > 0; i--) more.put(randomValue(r), randomValue(r));
      int op = r.nextInt(24);
      String what = "seed " + seed + " step " + step + " op " + op;
      Object a;
      Object b;
      switch (op) {
        case 0: case 1: case 2:
          a = outcome(() -> p.put(k, v)); b = outcome(() -> s.put(k, v)); break;
        case 3:
          a = outcome(() -> p.get(k)); b = outcome(() -> s.get(k)); break;
        case 4:
          a = outcome(() -> p.remove(k)); b = outcome(() -> s.remove(k)); break;
        case 5:
          a = outcome(() -> p.containsKey(k) + "/" + p.containsValue(v) + "/" + p.size() + "/" + p.isEmpty());
          b = outcome(() -> s.containsKey(k) + "/" + s.containsValue(v) + "/" + s.size() + "/" + s.isEmpty()); break;
        case 6:
          a = outcome(() -> p.putIfAbsent(k, v)); b = outcome(() -> s.putIfAbsent(k, v)); break;
        case 7:
          a = outcome(() -> p.getOrDefault(k, "dflt")); b = outcome(() -> s.getOrDefault(k, "dflt")); break;
        case 8:
          a = outcome(() -> p.merge(k, nonNull, (x, y) -> x instanceof Long && y instanceof Long ? (Long) x + (Long) y : null));
          b = outcome(() -> s.merge(k, nonNull, (x, y) -> x instanceof Long && y instanceof Long ? (Long) x + (Long) y : null));
          break;
        case 9:
          a = outcome(() -> p.compute(k, (x, y) -> y == null ? v : null));
          b = outcome(() -> s.compute(k, (x, y) -> y == null ? v : null)); break;
        case 10:
          a = outcome(() -> p.computeIfAbsent(k, x -> v)); b = outcome(() -> s.computeIfAbsent(k, x -> v)); break;
        case 11:
          a = outcome(() -> p.computeIfPresent(k, (x, y) -> v)); b = outcome(() -> s.computeIfPresent(k, (x, y) -> v)); break;
        case 12:
          a = outcome(() -> p.replace(k, v)); b = outcome(() -> s.replace(k, v)); break;
        case 13:
          a = outcome(() -> { p.putAll(more); return null; }); b = outcome(() -> { s.putAll(more); return null; }); break;
        case 14:
          a = outcome(() -> p.keySet().remove(k)); b = outcome(() -> s.keySet().remove(k)); break;
        case 15:
          // Which of several keys with that value goes depends on iteration order: only unique values.
          if (java.util.Collections.frequency(p.values(), v) > 1) {
            a = outcome(() -> p.values().contains(v)); b = outcome(() -> s.values().contains(v)); break;
          }
          a = outcome(() -> p.values().remove(v)); b = outcome(() -> s.values().remove(v)); break;
        case 16: {
          Predicate<Map.Entry<Object, Object>> pred = e -> e.getValue() instanceof Boolean;
          a = outcome(() -> p.entrySet().removeIf(pred)); b = outcome(() -> s.entrySet().removeIf(pred)); break;
        }
        case 17:
          a = outcome(() -> { setValues(p); return null; }); b = outcome(() -> { setValues(s); return null; }); break;
        case 18:
          a = outcome(() -> p.entrySet().contains(new AbstractMap.SimpleEntry<>(k, v)) + "/"
              + p.entrySet().remove(new AbstractMap.SimpleEntry<>(k, v)));
          b = outcome(() -> s.entrySet().contains(new AbstractMap.SimpleEntry<>(k, v)) + "/"
              + s.entrySet().remove(new AbstractMap.SimpleEntry<>(k, v))); break;
        case 19:
          a = outcome(() -> p.keySet().retainAll(more.keySet()) + "/" + p.keySet().contains(k));
          b = outcome(() -> s.keySet().retainAll(more.keySet()) + "/" + s.keySet().contains(k)); break;
        case 20:
          a = outcome(() -> p.replace(k, v, nonNull)); b = outcome(() -> s.replace(k, v, nonNull)); break;
        case 21:
          a = outcome(() -> p.remove(k, v)); b = outcome(() -> s.remove(k, v)); break;
        case 22:
          a = outcome(() -> Arrays.asList(p.hashCode(), new HashSet<>(p.values()), new HashSet<>(p.keySet())));
          b = outcome(() -> Arrays.asList(s.hashCode(), new HashSet<>(s.values()), new HashSet<>(s.keySet()))); break;
        default:
          a = outcome(() -> p.equals(s) + "/" + s.equals(p) + "/" + s.equals(new HashMap<>(p)));
          b = "true/true/true"; break;
      }
      same(a, b, what);
      assertEquals(p, s, what + " contents");
      assertEquals(p.size(), s.size(), what + " size");
      if (r.nextInt(500) == 0) {
        p.clear();
        s.clear();
      }
    }
  }

  /** Doubles every Long value through the entry iterator's setValue, removes Strings via the iterator. */
  private static void setValues(Map<Object, Object> m) {
    for (Iterator<Map.Entry<Object, Object>> it = m.entrySet().iterator(); it.hasNext();) {
      Map.Entry<Object, Object> e = it.next();
      if (e.getValue() instanceof Long) e.setValue((Long) e.getValue() * 2);
      else if (e.getValue() instanceof String) it.remove();
    }
  }

  @Test
  void mapViewsAndContracts() {
    SharedMap s = SharedMemory.allocate(SharedMap.class, 0);
    s.put("a", 1L);
    s.put("b", null);
    s.put(null, "null key");
    assertEquals(3, s.size());
    assertTrue(s.containsKey("b"));
    assertNull(s.get("b"));
    assertEquals("null key", s.get(null));
    Set<Object> keys = s.keySet();
    Collection<Object> values = s.values();
    Set<Map.Entry<Object, Object>> entries = s.entrySet();
    assertEquals(Set.of("a", "b"), new HashSet<>(Arrays.asList(keys.stream().filter(Objects::nonNull).toArray())));
    assertTrue(values.contains(1L));
    s.put("c", 3L);  // views are live
    assertTrue(keys.contains("c"));
    assertEquals(4, entries.size());
    Iterator<Object> it = keys.iterator();
    assertThrows(IllegalStateException.class, it::remove);
    while (it.hasNext()) {
      if ("a".equals(it.next())) it.remove();
    }
    assertThrows(NoSuchElementException.class, it::next);
    assertFalse(s.containsKey("a"));
    for (Map.Entry<Object, Object> e : entries) {
      if ("c".equals(e.getKey())) assertEquals(3L, e.setValue(30L));
    }
    assertEquals(30L, s.get("c"));
    assertTrue(entries.contains(Map.entry("c", 30L)));
    Map<Object, Object> copy = new HashMap<>(s);
    assertEquals(copy, s);
    assertEquals(s, copy);
    assertEquals(copy.hashCode(), s.hashCode());
    keys.clear();
    assertTrue(s.isEmpty());
    s.put("me", s);
    assertEquals("{me=(this Map)}", s.toString());
    assertSame(s, s.get("me"));
  }

  // ---- sets ----------------------------------------------------------------------------------

  @Test
  void setRandomOperations() {
    for (long seed : new long[] {21, 22, 23}) setRandom(seed, STEPS);
  }

  private void setRandom(long seed, int steps) {
    Random r = new Random(seed);
    Set<Object> p = new HashSet<>();
    Set<Object> s = SharedMemory.allocate(SharedSet.class, 0);
    for (int step = 0; step < steps; step++) {
      Object v = randomValue(r);
      List<Object> vs = new ArrayList<>();
      for (int k = r.nextInt(5); k > 0; k--) vs.add(randomValue(r));
      int op = r.nextInt(12);
      String what = "seed " + seed + " step " + step + " op " + op;
      Object a;
      Object b;
      switch (op) {
        case 0: case 1: case 2:
          a = outcome(() -> p.add(v)); b = outcome(() -> s.add(v)); break;
        case 3: case 4:
          a = outcome(() -> p.remove(v)); b = outcome(() -> s.remove(v)); break;
        case 5:
          a = outcome(() -> p.contains(v) + "/" + p.size() + "/" + p.isEmpty());
          b = outcome(() -> s.contains(v) + "/" + s.size() + "/" + s.isEmpty()); break;
        case 6:
          a = outcome(() -> p.addAll(vs)); b = outcome(() -> s.addAll(vs)); break;
        case 7:
          a = outcome(() -> p.removeAll(vs)); b = outcome(() -> s.removeAll(vs)); break;
        case 8: {
          List<Object> keep = new ArrayList<>(vs);
          keep.addAll(p.stream().filter(x -> x instanceof Long).toList());
          a = outcome(() -> p.retainAll(keep)); b = outcome(() -> s.retainAll(keep)); break;
        }
        case 9: {
          Predicate<Object> pred = x -> x instanceof String;
          a = outcome(() -> p.removeIf(pred)); b = outcome(() -> s.removeIf(pred)); break;
        }
        case 10:
          a = outcome(() -> p.containsAll(vs) + "/" + p.hashCode()); b = outcome(() -> s.containsAll(vs) + "/" + s.hashCode());
          break;
        default:
          a = outcome(() -> p.equals(s) + "/" + s.equals(p) + "/" + new HashSet<>(Arrays.asList(s.toArray())).equals(p));
          b = "true/true/true"; break;
      }
      same(a, b, what);
      assertEquals(p, s, what + " contents");
      if (r.nextInt(500) == 0) {
        p.clear();
        s.clear();
      }
    }
  }

  @Test
  void setIteratorRemoveAndBinaryElements() {
    SharedSet s = SharedMemory.allocate(SharedSet.class, 0);
    for (long i = 0; i < 50; i++) s.add(i);
    s.add(new byte[] {1, 2});
    assertTrue(s.contains(new byte[] {1, 2}));  // binaries compare by value
    for (Iterator<Object> it = s.iterator(); it.hasNext();) {
      Object x = it.next();
      if (x instanceof byte[] || (Long) x % 2 == 0) it.remove();
    }
    assertEquals(25, s.size());
    assertFalse(s.contains(new byte[] {1, 2}));
    assertTrue(s.contains(49L));
    assertFalse(s.contains(48L));
  }
}
