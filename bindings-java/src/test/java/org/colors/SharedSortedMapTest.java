package org.colors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Random;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * SharedSortedMap against TreeMap: random operation sequences (seeded java.util.Random) on the
 * whole map and on views (subMap/headMap/tailMap, descending), comparing every result (or
 * exception class) and the contents; key order across numeric types, strings and binaries; key
 * errors; iteration across changes; allocation, copies and identity; a map Python made.
 */
@ExtendWith(ColorsServer.class)
class SharedSortedMapTest {
  /** The result of an operation: its value (iterations as lists), or the class of what it threw. */
  static Object outcome(Callable<?> op) {
    try {
      Object r = op.call();
      if (r instanceof Map.Entry) {
        Map.Entry<?, ?> e = (Map.Entry<?, ?>) r;
        return List.of("entry", e.getKey(), String.valueOf(e.getValue()));
      }
      return r;
    } catch (Exception e) {
      return e.getClass();
    }
  }

  static List<Object> contents(NavigableMap<Object, Object> m) {
    List<Object> out = new ArrayList<>();
    for (Map.Entry<Object, Object> e : m.entrySet()) {
      out.add(e.getKey());
      out.add(e.getValue());
    }
    return out;
  }

  /** The same view of both maps (a whole map, or a random subMap/headMap/tailMap, maybe descending). */
  static List<NavigableMap<Object, Object>> views(Random r, NavigableMap<Object, Object> a, NavigableMap<Object, Object> b) {
    long k1 = r.nextInt(200), k2 = k1 + r.nextInt(100);
    boolean i1 = r.nextBoolean(), i2 = r.nextBoolean();
    NavigableMap<Object, Object> va, vb;
    switch (r.nextInt(4)) {
      case 0: va = a; vb = b; break;
      case 1: va = a.subMap(k1, i1, k2, i2); vb = b.subMap(k1, i1, k2, i2); break;
      case 2: va = a.headMap(k2, i2); vb = b.headMap(k2, i2); break;
      default: va = a.tailMap(k1, i1); vb = b.tailMap(k1, i1); break;
    }
    if (r.nextInt(3) == 0) {
      va = va.descendingMap();
      vb = vb.descendingMap();
    }
    return List.of(va, vb);
  }

  @Test
  void randomOperationsMatchTreeMapOnTheMapAndItsViews() {
    Random r = new Random(18);
    SharedSortedMap shared = SharedMemory.newSortedMap();
    TreeMap<Object, Object> ref = new TreeMap<>();
    for (int round = 0; round < 60; round++) {
      List<NavigableMap<Object, Object>> v = views(r, shared, ref);
      NavigableMap<Object, Object> s = v.get(0), t = v.get(1);
      for (int step = 0; step < 120; step++) {
        long k = r.nextInt(320) - 10;
        Object val = r.nextInt(5) == 0 ? null : (Object) ("v" + r.nextInt(1000));
        int op = r.nextInt(22);
        Callable<?> a, b;
        switch (op) {
          case 0: case 1: case 2: case 3: a = () -> s.put(k, val); b = () -> t.put(k, val); break;
          case 4: a = () -> s.remove(k); b = () -> t.remove(k); break;
          case 5: a = () -> s.get(k); b = () -> t.get(k); break;
          case 6: a = () -> s.containsKey(k); b = () -> t.containsKey(k); break;
          case 7: a = () -> s.ceilingEntry(k); b = () -> t.ceilingEntry(k); break;
          case 8: a = () -> s.floorEntry(k); b = () -> t.floorEntry(k); break;
          case 9: a = () -> s.higherKey(k); b = () -> t.higherKey(k); break;
          case 10: a = () -> s.lowerKey(k); b = () -> t.lowerKey(k); break;
          case 11: a = s::firstEntry; b = t::firstEntry; break;
          case 12: a = s::lastKey; b = t::lastKey; break;
          case 13: a = s::pollFirstEntry; b = t::pollFirstEntry; break;
          case 14: a = s::pollLastEntry; b = t::pollLastEntry; break;
          case 15: a = s::size; b = t::size; break;
          case 16: a = s::isEmpty; b = t::isEmpty; break;
          case 17: a = () -> new ArrayList<>(s.navigableKeySet()); b = () -> new ArrayList<>(t.navigableKeySet()); break;
          case 18: a = () -> new ArrayList<>(s.descendingKeySet()); b = () -> new ArrayList<>(t.descendingKeySet()); break;
          case 19: {  // a view of the view
            long from = r.nextInt(320), to = from + r.nextInt(60);
            a = () -> new ArrayList<>(s.navigableKeySet().subSet(from, true, to, false));
            b = () -> new ArrayList<>(t.navigableKeySet().subSet(from, true, to, false));
            break;
          }
          case 20: a = () -> s.navigableKeySet().ceiling(k); b = () -> t.navigableKeySet().ceiling(k); break;
          default: {  // bulk load: many keys at once, so the tree splits and merges on several levels
            long base = r.nextInt(300);
            boolean add = r.nextBoolean();
            a = () -> {
              for (long x = base; x < base + 150; x++) if (add) shared.put(x, x); else shared.remove(x);
              return null;
            };
            b = () -> {
              for (long x = base; x < base + 150; x++) if (add) ref.put(x, x); else ref.remove(x);
              return null;
            };
          }
        }
        Object expected = outcome(b);
        Object got = outcome(a);
        assertEquals(expected, got, "round " + round + " step " + step + " op " + op + " key " + k);
      }
      assertEquals(contents(ref), contents(shared), "round " + round);
      assertEquals(contents(t), contents(s), "view contents, round " + round);
    }
    assertEquals(ref, shared);  // Map.equals both ways
    assertEquals(shared, ref);
    assertEquals(ref.hashCode(), shared.hashCode());
  }

  @Test
  void numbersCompareByValueAcrossTypes() {
    SharedSortedMap m = SharedMemory.newSortedMap();
    m.put(2.5, "2.5");
    m.put(1, "int");
    m.put(Long.MAX_VALUE, "max");
    m.put(9.3e18, "above every long");
    m.put(-0.5f, "float");
    m.put((short) 3, "short");
    assertEquals("int", m.put(1.0, "one"));  // equal to 1: replaces the value, keeps the key 1L
    assertEquals(List.of(-0.5, 1L, 2.5, 3L, Long.MAX_VALUE, 9.3e18), new ArrayList<>(m.keySet()));
    assertEquals("one", m.get(1L));
    assertEquals("one", m.get((byte) 1));
    assertEquals(1L, m.floorKey(1.9));
    assertEquals(Long.MAX_VALUE, m.higherKey(9.2e18));
  }

  @Test
  void stringsInCodePointOrderAndBinariesInByteOrder() {
    SharedSortedMap m = SharedMemory.newSortedMap();
    // U+1F600 (a surrogate pair in UTF-16) sorts after U+FFFD by code point, before it by UTF-16 units.
    String[] words = {"b", "a", "", "\uFFFD", "\uD83D\uDE00", "ab"};
    TreeMap<String, Object> ref = new TreeMap<>((x, y) -> Arrays.compare(x.codePoints().toArray(), y.codePoints().toArray()));
    for (String w : words) {
      m.put(w, w.length());
      ref.put(w, (long) w.length());
    }
    assertEquals(new ArrayList<>(ref.keySet()), new ArrayList<>(m.keySet()));
    SharedSortedMap b = SharedMemory.newSortedMap();
    b.put(new byte[] {(byte) 0xff}, 1);
    b.put(new byte[] {}, 2);
    b.put(new byte[] {0, 0}, 3);
    b.put(new byte[] {0}, 4);
    List<Object> ks = new ArrayList<>(b.keySet());
    assertArrayEquals(new byte[] {}, (byte[]) ks.get(0));
    assertArrayEquals(new byte[] {0}, (byte[]) ks.get(1));
    assertArrayEquals(new byte[] {0, 0}, (byte[]) ks.get(2));
    assertArrayEquals(new byte[] {(byte) 0xff}, (byte[]) ks.get(3));
  }

  @Test
  void keysItCannotOrderAreRefusedAndChangeNothing() {
    SharedSortedMap m = SharedMemory.newSortedMap();
    assertThrows(NullPointerException.class, () -> m.put(null, 1));
    assertThrows(NullPointerException.class, () -> m.get(null));
    assertThrows(TypeMismatchException.class, () -> m.put(true, 1));
    assertThrows(TypeMismatchException.class, () -> m.put(Double.NaN, 1));
    assertThrows(TypeMismatchException.class, () -> m.put(new ArrayList<>(), 1));
    m.put(1, "x");
    TypeMismatchException e = assertThrows(TypeMismatchException.class, () -> m.put("a", 1));
    assertTrue(e.getMessage().contains("string \"a\""), e.getMessage());
    assertThrows(TypeMismatchException.class, () -> m.get("a"));
    assertThrows(TypeMismatchException.class, () -> m.subMap("a", "b").size());
    assertEquals(1, m.size());
    assertEquals(Map.of(1L, "x"), m);
    assertThrows(IllegalArgumentException.class, () -> m.headMap(5L).put(7L, 1));
    assertThrows(IllegalArgumentException.class, () -> m.headMap(5L).tailMap(7L));
    assertThrows(IllegalArgumentException.class, () -> m.subMap(5L, 3L));
  }

  @Test
  void iteratorsReadInBatchesSeeChangesAheadAndWriteThrough() {
    SharedSortedMap m = SharedMemory.newSortedMap();
    for (long k = 0; k < 3000; k += 2) m.put(k, k);
    List<Object> seen = new ArrayList<>();
    for (Iterator<Map.Entry<Object, Object>> it = m.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<Object, Object> e = it.next();
      seen.add(e.getKey());
      if (e.getKey().equals(10L)) {
        m.remove(2800L);  // ahead of the first batch: not seen
        m.put(2801L, 1L);  // ahead: seen
        m.put(5L, 1L);  // behind: not seen
      }
      if (e.getKey().equals(20L)) it.remove();
      if (e.getKey().equals(30L)) e.setValue("thirty");
    }
    List<Object> want = new ArrayList<>();
    for (long k = 0; k < 3000; k += 2) if (k != 2800) want.add(k);
    want.add(want.indexOf(2802L), 2801L);
    assertEquals(want, seen);
    assertFalse(m.containsKey(20L));
    assertEquals("thirty", m.get(30L));
    assertEquals(5L, m.navigableKeySet().higher(4L));
  }

  /**
   * remove() through the values and key iterators removes the key of the element last returned,
   * also when hasNext() has loaded the next batch in between (the iterator keeps that key as its
   * batch held it), with integer keys and string keys.
   */
  @Test
  void valuesAndKeysIteratorsRemoveTheLastReturnedKeyAcrossBatches() {
    SharedSortedMap m = SharedMemory.newSortedMap();
    int n = 3 * SharedSortedMap.BATCH + 7;
    for (long k = 0; k < n; k++) m.put(k, "v" + k);
    for (Iterator<Object> it = m.values().iterator(); it.hasNext(); ) {
      String v = (String) it.next();
      long k = Long.parseLong(v.substring(1));
      it.hasNext();  // at a batch's end this reads the next batch before the remove
      if (k % 3 == 0 || (k + 1) % SharedSortedMap.BATCH == 0) it.remove();
    }
    for (long k = 0; k < n; k++) {
      boolean removed = k % 3 == 0 || (k + 1) % SharedSortedMap.BATCH == 0;
      assertEquals(!removed, m.containsKey(k), "key " + k);
    }
    SharedSortedMap s = SharedMemory.newSortedMap();
    for (int k = 0; k < n; k++) s.put(String.format("k%05d", k), (long) k);
    for (Iterator<Object> it = s.navigableKeySet().iterator(); it.hasNext(); ) {
      String k = (String) it.next();
      it.hasNext();
      if (Integer.parseInt(k.substring(1)) % 2 == 1) it.remove();
    }
    assertEquals((n + 1) / 2, s.size());
    assertTrue(s.containsKey("k00000"));
    assertFalse(s.containsKey("k00001"));
    assertThrows(IllegalStateException.class, () -> {
      Iterator<Object> it = s.values().iterator();
      it.next();
      it.remove();
      it.remove();
    });
  }

  @Test
  void allocationCopiesAndIdentity() {
    NavigableMap<?, ?> a = SharedMemory.allocate(NavigableMap.class, 0);
    assertTrue(a instanceof SharedSortedMap);
    @SuppressWarnings("unchecked")
    Class<Object> treeMap = (Class<Object>) (Class<?>) TreeMap.class;  // the result is the proxy, not a TreeMap
    assertTrue(SharedMemory.allocate(treeMap, 0) instanceof SharedSortedMap);
    TreeMap<Object, Object> src = new TreeMap<>(Map.of(3L, List.of(1L, 2L), 1L, "one"));
    SharedList holder = (SharedList) SharedMemory.copyToSharedMemory(List.of(src));
    Object copy = holder.get(0);
    assertTrue(copy instanceof SharedSortedMap, String.valueOf(copy == null ? null : copy.getClass()));
    assertSame(copy, holder.get(0));  // one proxy per shared object
    SharedSortedMap sm = (SharedSortedMap) copy;
    assertEquals(List.of(1L, 3L), new ArrayList<>(sm.keySet()));
    assertTrue(sm.get(3L) instanceof SharedList);
    assertThrows(TypeMismatchException.class, () -> holder.add(sm.headMap(2L)));  // a view is not storable
    holder.add(sm.descendingMap().descendingMap());  // ... but the whole map in its own order is
    assertSame(sm, holder.get(1));
    assertEquals(SharedType.Kind.SORTED_MAP, SharedMemory.getSharedType(sm).kind());
  }

  /**
   * get() of a value that is a shared object: the native hands its root over and Java finds the
   * live proxy or makes one with that root (SortedNative.getFlat). One proxy per object, and
   * no root left behind by the gets that found a live proxy.
   */
  @Test
  void getGivesTheLiveProxyAndLeavesNoRootBehind() {
    @SuppressWarnings("unchecked")
    NavigableMap<Object, Object> m = SharedMemory.allocate(NavigableMap.class, 0);
    List<Object> values = new ArrayList<>();
    for (long k = 0; k < 50; k++) {
      List<Object> l = SharedMemory.allocate(List.class);
      l.add(k);
      m.put(k, l);
      values.add(l);
    }
    m.put(100L, "a string");
    m.put(101L, 7L);
    long before = RootCounts.settled();
    for (int r = 0; r < 20; r++) {
      for (long k = 0; k < 50; k++) assertSame(values.get((int) k), m.get(k));
    }
    assertEquals(before, Roots.live(), "every handed-over root of an object with a live proxy was dropped");
    for (int r = 0; r < 5; r++) {  // ranges: iteration in batches, a view's values
      assertEquals(values, new ArrayList<>(m.subMap(0L, true, 49L, true).values()));
      int i = 0;
      for (Object x : m.headMap(50L).values()) assertSame(values.get(i++), x);
      assertSame(values.get(7), m.ceilingEntry(7L).getValue());
    }
    assertEquals(before, Roots.live(), "the same for ranges");
    assertEquals("a string", m.get(100L));
    assertEquals(7L, m.get(101L));
    assertNull(m.get(102L));
    // A value with no live proxy: get makes one (with the handed root), and the next get finds it.
    SharedList inner = (SharedList) SharedMemory.copyToSharedMemory(List.of(List.of(1L, 2L)));
    m.put(200L, inner.get(0));
    m.put(201L, SharedMemory.copyToSharedMemory(List.of(3L)));  // no proxy left of it: the range makes one
    Object made = m.tailMap(201L, true).values().iterator().next();
    assertSame(made, m.get(201L));
    assertEquals(List.of(3L), new ArrayList<>((List<?>) made));
    Object first = m.get(200L);
    assertTrue(first instanceof SharedList);
    assertSame(first, m.get(200L));
    assertSame(first, inner.get(0));
    assertEquals(List.of(1L, 2L), new ArrayList<>((List<?>) first));
  }

  @Test
  void aSortedMapTypedFieldHoldsASharedSortedMap() {
    SharedObject o = SharedMemory.allocateObject(demo.Indexed.class);
    assertEquals(SharedType.Kind.SORTED_MAP, SharedMemory.getSharedType(o).field("byId").kind());
    SharedSortedMap m = SharedMemory.newSortedMap();
    m.put(7L, "seven");
    o.set("byId", m);
    assertSame(m, o.get("byId"));
    assertThrows(TypeMismatchException.class, () -> o.set("byId", SharedMemory.allocate(Map.class, 0)));
    assertSame(m, o.get("byId"));
  }

  @Test
  void aMapMadeInPythonReadsAsANavigableMap() throws Exception {
    CrossLanguageTest.findPythonBinding();
    String name = CrossLanguageTest.unique("sorted");
    CrossLanguageTest.run("d = cs.allocate(cs.SharedSortedDict)\n"
        + "for k in range(0, 100, 5): d[k] = str(k)\n"
        + "cs.repository('" + name + "').set(d)\n");
    SharedSortedMap m = (SharedSortedMap) SharedMemory.findOrCreateRepository(name).get();
    assertEquals(20, m.size());
    assertEquals(List.of(20L, 25L, 30L), new ArrayList<>(m.subMap(20L, true, 30L, true).keySet()));
    assertEquals("95", m.lastEntry().getValue());
    m.put(101L, "from java");
    List<String> out = CrossLanguageTest.run("print(list(cs.repository('" + name + "').get().irange(95)))\n");
    assertEquals(List.of("[95, 101]"), out);
    SortedMap<Object, Object> head = m.headMap(10L);
    assertEquals(List.of(0L, 5L), new ArrayList<>(head.keySet()));
  }
}
