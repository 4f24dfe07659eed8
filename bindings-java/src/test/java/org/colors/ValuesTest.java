package org.colors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Table 1 mapping, checked narrowing, unstorable values, copyToSharedMemory, identity, allocate. */
@ExtendWith(ColorsServer.class)
class ValuesTest {

  @Test
  void scalarsRoundTrip() {
    assertNull(SharedMemory.roundTrip(null));
    assertEquals(7L, SharedMemory.roundTrip((byte) 7));
    assertEquals(-300L, SharedMemory.roundTrip((short) -300));
    assertEquals(123456789L, SharedMemory.roundTrip(123456789));
    assertEquals(97L, SharedMemory.roundTrip('a'));
    assertEquals(0xFFFFL, SharedMemory.roundTrip('\uffff'));
    for (long x : new long[] {0, 1, -1, Long.MAX_VALUE, Long.MIN_VALUE, 1L << 59, -(1L << 59), (1L << 59) - 1,
        -(1L << 59) - 1, 1L << 62}) {
      assertEquals(x, SharedMemory.roundTrip(x), "long " + x);
    }
    assertEquals(0.5, SharedMemory.roundTrip(0.5f));
    assertEquals((double) 0.1f, SharedMemory.roundTrip(0.1f));
    for (double d : new double[] {0.0, 1.5, -2.25, Double.MAX_VALUE, Double.MIN_VALUE, Double.POSITIVE_INFINITY,
        Double.NEGATIVE_INFINITY}) {
      assertEquals(d, SharedMemory.roundTrip(d), "double " + d);
    }
    assertTrue(Double.isNaN((Double) SharedMemory.roundTrip(Double.NaN)));
    assertEquals(Double.doubleToRawLongBits(-0.0), Double.doubleToRawLongBits((Double) SharedMemory.roundTrip(-0.0)));
    assertEquals(Boolean.TRUE, SharedMemory.roundTrip(true));
    assertEquals(Boolean.FALSE, SharedMemory.roundTrip(Boolean.FALSE));
    assertArrayEquals(new byte[] {0, -1, 127, -128}, (byte[]) SharedMemory.roundTrip(new byte[] {0, -1, 127, -128}));
    assertArrayEquals(new byte[0], (byte[]) SharedMemory.roundTrip(new byte[0]));
  }

  @Test
  void stringsRoundTrip() {
    String[] samples = {"", "a", "héllo wörld", "日本語", "emoji \uD83D\uDE00 and \uD83C\uDF89", "nul\u0000inside",
        "\uFFFF\uFFFE", "x".repeat(5000) + "\uD83D\uDE00" + "y".repeat(700)};
    for (String s : samples) assertEquals(s, SharedMemory.roundTrip(s));
    Random r = new Random(42);
    for (int i = 0; i < 200; i++) {
      StringBuilder sb = new StringBuilder();
      int n = r.nextInt(40);
      for (int j = 0; j < n; j++) sb.appendCodePoint(randomCodePoint(r));
      String s = sb.toString();
      assertEquals(s, SharedMemory.roundTrip(s));
    }
  }

  static int randomCodePoint(Random r) {
    for (;;) {
      int c;
      switch (r.nextInt(4)) {
        case 0: c = r.nextInt(0x80); break;
        case 1: c = r.nextInt(0x800); break;
        case 2: c = r.nextInt(0x10000); break;
        default: c = 0x10000 + r.nextInt(0x100000); break;
      }
      if (c < 0xD800 || c > 0xDFFF) return c;
    }
  }

  @Test
  void loneSurrogatesAreRefused() {
    SharedList l = SharedMemory.allocate(SharedList.class, 0);
    InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> l.add("bad \uD800 here"));
    assertTrue(e.getMessage().contains("surrogate"), e.getMessage());
    assertThrows(InvalidArgumentException.class, () -> l.add("\uDC00"));
    assertEquals(0, l.size());
  }

  /**
   * No shared container can hold a string with a lone surrogate, so lookups of one answer absent,
   * as java.util collections answer for an element they do not hold (they threw
   * InvalidArgumentException); stores still refuse it.
   */
  @Test
  void lookupsOfAStringWithALoneSurrogateFindNothing() {
    for (String lone : new String[] {"bad \uD800 here", "\uDC00", "end \uD83D"}) {
      SharedList l = (SharedList) SharedMemory.copyToSharedMemory(List.of("a", 1L));
      assertFalse(l.contains(lone));
      assertEquals(-1, l.indexOf(lone));
      assertEquals(-1, l.lastIndexOf(lone));
      assertFalse(l.remove(lone));
      SharedSet s = (SharedSet) SharedMemory.copyToSharedMemory(Set.of("a"));
      assertFalse(s.contains(lone));
      assertFalse(s.remove(lone));
      SharedMap m = (SharedMap) SharedMemory.copyToSharedMemory(Map.of("a", 1L));
      assertFalse(m.containsKey(lone));
      assertNull(m.get(lone));
      assertNull(m.remove(lone));
      assertFalse(m.keySet().contains(lone));
      assertFalse(m.keySet().remove(lone));
      assertFalse(m.entrySet().contains(Map.entry(lone, 1L)));
      assertEquals(7L, m.getOrDefault(lone, 7L));
      SharedSortedMap sm = SharedMemory.newSortedMap();
      sm.put("a", 1L);
      assertFalse(sm.containsKey(lone));
      assertNull(sm.get(lone));
      assertNull(sm.remove(lone));
      assertFalse(sm.keySet().contains(lone));
      assertFalse(sm.keySet().remove(lone));
      assertThrows(InvalidArgumentException.class, () -> l.add(lone));
      assertThrows(InvalidArgumentException.class, () -> s.add(lone));
      assertThrows(InvalidArgumentException.class, () -> m.put(lone, 1L));
      assertThrows(InvalidArgumentException.class, () -> sm.put(lone, 1L));
      assertEquals(List.of("a", 1L), l);
      assertEquals(Set.of("a"), s);
      assertEquals(Map.of("a", 1L), m);
      assertEquals(Map.of("a", 1L), sm);
    }
    // A well-formed pair is an ordinary string.
    SharedSet s = (SharedSet) SharedMemory.copyToSharedMemory(Set.of("\uD83D\uDE00"));
    assertTrue(s.contains("\uD83D\uDE00"));
  }

  @Test
  void narrowingReadsRaiseInsteadOfTruncating() {
    SharedList l = (SharedList) SharedMemory.copyToSharedMemory(
        List.of(300L, 1L << 40, -129L, 70000L, 1e39, 1e-50, (1L << 53) + 1, -1L, "text", 65535L, 3.5));
    assertThrows(SharedOverflowException.class, () -> l.getByte(0));
    assertEquals(300, l.getInt(0));
    assertEquals((short) 300, l.getShort(0));
    assertThrows(SharedOverflowException.class, () -> l.getInt(1));
    assertEquals(1L << 40, l.getLong(1));
    assertThrows(SharedOverflowException.class, () -> l.getByte(2));
    assertEquals((short) -129, l.getShort(2));
    assertThrows(SharedOverflowException.class, () -> l.getShort(3));
    assertThrows(SharedOverflowException.class, () -> l.getChar(3));
    assertThrows(SharedOverflowException.class, () -> l.getFloat(4));
    assertEquals(1e39, l.getDouble(4));
    assertThrows(SharedOverflowException.class, () -> l.getFloat(5));
    assertThrows(SharedOverflowException.class, () -> l.getDouble(6));
    assertEquals((double) (1L << 40), l.getDouble(1));
    assertThrows(SharedOverflowException.class, () -> l.getChar(7));
    assertEquals(-1, l.getByte(7));
    assertThrows(TypeMismatchException.class, () -> l.getInt(8));
    assertThrows(TypeMismatchException.class, () -> l.getBoolean(0));
    assertEquals("text", l.getString(8));
    assertEquals('\uffff', l.getChar(9));
    assertEquals(3.5f, l.getFloat(10));
    assertThrows(TypeMismatchException.class, () -> l.getLong(10));  // floats never become integers
    SharedOverflowException e = assertThrows(SharedOverflowException.class, () -> l.getInt(1));
    assertTrue(e.getMessage().contains("1099511627776"), e.getMessage());

    SharedList ints = (SharedList) SharedMemory.copyToSharedMemory(new long[] {1, 2, Integer.MAX_VALUE + 1L});
    assertThrows(SharedOverflowException.class, ints::toIntArray);
    assertThrows(SharedOverflowException.class, () -> ints.toArray(Integer.class));
    assertArrayEquals(new long[] {1, 2, Integer.MAX_VALUE + 1L}, ints.toLongArray());
    ints.remove(2);
    assertArrayEquals(new int[] {1, 2}, ints.toIntArray());
    assertArrayEquals(new Integer[] {1, 2}, ints.toArray(Integer.class));
    assertArrayEquals(new Short[] {1, 2}, ints.toArray(Short.class));
    assertArrayEquals(new double[] {1, 2}, ints.toDoubleArray());
    ints.add(Long.MAX_VALUE);
    assertThrows(SharedOverflowException.class, ints::toDoubleArray);  // no exact double
    ints.set(2, 2.5);
    assertArrayEquals(new double[] {1, 2, 2.5}, ints.toDoubleArray());
    assertThrows(TypeMismatchException.class, ints::toLongArray);  // a float is not an integer
    ints.set(2, "x");
    assertThrows(TypeMismatchException.class, ints::toLongArray);
    assertThrows(TypeMismatchException.class, ints::toDoubleArray);
    assertThrows(TypeMismatchException.class, () -> ints.toArray(Integer.class));
    assertThrows(ArrayStoreException.class, () -> ints.toArray(new Long[0]));
  }

  @Test
  void booleanAndStringListsReadInOneCall() {
    SharedList bools = (SharedList) SharedMemory.copyToSharedMemory(new boolean[] {true, false, true});
    assertArrayEquals(new boolean[] {true, false, true}, bools.toBooleanArray());
    SharedList empty = SharedMemory.allocate(SharedList.class, 0);
    assertArrayEquals(new boolean[0], empty.toBooleanArray());
    assertArrayEquals(new String[0], empty.toStringArray());
    bools.add(1L);  // an integer is not a boolean: the typed read's exception
    assertThrows(TypeMismatchException.class, bools::toBooleanArray);
    bools.set(3, null);
    assertThrows(TypeMismatchException.class, bools::toBooleanArray);

    String[] texts = {"ascii", "", "é ü ß", "\u4e2d\u6587", "\ud83d\ude00 pair", null, "nul\u0000inside"};
    SharedList strs = (SharedList) SharedMemory.copyToSharedMemory(texts);
    assertArrayEquals(texts, strs.toStringArray());
    StringBuilder big = new StringBuilder();
    for (int i = 0; i < 10_000; i++) big.append((char) ('a' + i % 26));
    strs.add(big.toString());
    assertEquals(big.toString(), strs.toStringArray()[texts.length]);
    strs.add(7L);
    assertThrows(TypeMismatchException.class, strs::toStringArray);
    strs.set(texts.length + 1, SharedMemory.allocate(SharedList.class, 0));  // a list is no string
    assertThrows(TypeMismatchException.class, strs::toStringArray);
  }

  @Test
  void privateContainersAreNotStoredButNamed() {
    SharedList l = SharedMemory.allocate(SharedList.class, 4);
    TypeMismatchException e = assertThrows(TypeMismatchException.class, () -> l.add(new ArrayList<>(List.of(1))));
    assertTrue(e.getMessage().contains("copyToSharedMemory"), e.getMessage());
    assertThrows(TypeMismatchException.class, () -> l.add(new HashMap<>()));
    assertThrows(TypeMismatchException.class, () -> l.add(new int[] {1}));
    TypeMismatchException e2 = assertThrows(TypeMismatchException.class, () -> l.add(new Object()));
    assertTrue(e2.getMessage().contains("java.lang.Object"), e2.getMessage());
    assertThrows(TypeMismatchException.class, () -> l.add(new java.math.BigInteger("1")));
    assertInstanceOf(SharedMemoryException.class, e);
    SharedMap m = SharedMemory.allocate(SharedMap.class, 0);
    assertThrows(TypeMismatchException.class, () -> m.put("k", List.of()));
    assertThrows(TypeMismatchException.class, () -> m.put(List.of(), "v"));
    assertFalse(m.containsKey(List.of()));  // never there
    assertNull(m.get(new Object()));
    assertThrows(TypeMismatchException.class, () -> SharedMemory.findOrCreateRepository("values-unstorable").set(new Object()));
    // Nothing was half-added by a failing addAll.
    assertThrows(TypeMismatchException.class, () -> l.addAll(Arrays.asList(1, 2, new Object())));
    assertEquals(0, l.size());
  }

  @Test
  void copyPreservesSharingAndCycles() {
    List<Object> shared = new ArrayList<>(List.of("s", 1));
    List<Object> root = new ArrayList<>();
    root.add(shared);
    root.add(shared);
    root.add(root);
    Map<Object, Object> m = new HashMap<>();
    m.put("self", m);
    m.put("list", shared);
    root.add(m);
    Set<Object> set = new HashSet<>(List.of(1L, "two"));
    root.add(set);
    root.add(new int[] {1, 2, 3});
    root.add(new String[] {"a", null});
    root.add(new byte[] {1, 2});
    root.add(null);
    SharedList s = (SharedList) SharedMemory.copyToSharedMemory(root);
    assertEquals(9, s.size());
    assertSame(s.get(0), s.get(1));
    assertSame(s, s.get(2));
    SharedMap sm = (SharedMap) s.get(3);
    assertSame(sm, sm.get("self"));
    assertSame(s.get(0), sm.get("list"));
    assertEquals(List.of("s", 1L), s.get(0));
    assertEquals(Set.of(1L, "two"), s.get(4));
    assertEquals(List.of(1L, 2L, 3L), s.get(5));
    assertEquals(Arrays.asList("a", null), s.get(6));
    assertArrayEquals(new byte[] {1, 2}, (byte[]) s.get(7));
    assertNull(s.get(8));
    // Proxies inside a private graph are used as they are.
    SharedList again = (SharedList) SharedMemory.copyToSharedMemory(List.of(s, s));
    assertSame(s, again.get(0));
    assertSame(s, again.get(1));
    // Scalars and proxies at the root.
    assertEquals(5L, SharedMemory.copyToSharedMemory(5));
    assertEquals("x", SharedMemory.copyToSharedMemory("x"));
    assertSame(s, SharedMemory.copyToSharedMemory(s));
    assertThrows(TypeMismatchException.class, () -> SharedMemory.copyToSharedMemory(List.of(new Object())));
  }

  @Test
  void copyOfADeepGraphNeedsNoRecursion() {
    int depth = 100_000;
    List<Object> root = new ArrayList<>();
    List<Object> cur = root;
    for (int i = 0; i < depth; i++) {
      List<Object> next = new ArrayList<>();
      cur.add(i);
      cur.add(next);
      cur = next;
    }
    SharedList s = (SharedList) SharedMemory.copyToSharedMemory(root);
    SharedList c = s;
    for (int i = 0; i < depth; i++) {
      assertEquals(i, c.getInt(0));
      c = (SharedList) c.get(1);
    }
    assertEquals(0, c.size());
  }

  @Test
  void identityCache() {
    SharedList l = (SharedList) SharedMemory.copyToSharedMemory(List.of(List.of(1), Map.of("k", 2), Set.of(3)));
    assertSame(l.get(0), l.get(0));
    assertSame(l.get(1), l.get(1));
    assertSame(l.get(2), l.get(2));
    Object[] snap = l.toArray();
    assertSame(l.get(0), snap[0]);
    ObjectRepository r = SharedMemory.findOrCreateRepository("values-identity");
    r.set(l);
    assertSame(l, r.get());
    assertSame(r, SharedMemory.findOrCreateRepository("values-identity"));
    ObjectChannel ch = SharedMemory.findOrCreateChannel("values-identity", 4);
    ch.send(l);
    assertSame(l, ch.receive());
    // Equal but distinct shared lists are distinct proxies.
    SharedList other = (SharedList) SharedMemory.copyToSharedMemory(List.of(List.of(1), Map.of("k", 2), Set.of(3)));
    assertFalse(l == other);
    assertEquals(l, other);
  }

  @Test
  void isObjectSharedAndAllocate() {
    SharedList l = SharedMemory.allocate(SharedList.class, 100);
    assertTrue(SharedMemory.isObjectShared(l));
    assertEquals(0, l.size());
    List<Object> viaArrayList = SharedMemory.allocate(ArrayList.class, 3);
    assertInstanceOf(SharedList.class, viaArrayList);
    Map<Object, Object> m = SharedMemory.allocate(HashMap.class, 3);
    assertInstanceOf(SharedMap.class, m);
    assertInstanceOf(SharedSet.class, SharedMemory.allocate(HashSet.class, 0));
    assertInstanceOf(SharedSet.class, SharedMemory.allocate(Set.class, 0));
    assertInstanceOf(SharedList.class, SharedMemory.allocate(Collection.class, 0));
    assertArrayEquals(new byte[4], SharedMemory.allocate(byte[].class, 4));
    assertThrows(TypeMismatchException.class, () -> SharedMemory.allocate(String.class, 1));
    assertThrows(InvalidArgumentException.class, () -> SharedMemory.allocate(List.class, -1));
    assertFalse(SharedMemory.isObjectShared(new ArrayList<>()));
    assertFalse(SharedMemory.isObjectShared("s"));
    assertFalse(SharedMemory.isObjectShared(1));
    assertFalse(SharedMemory.isObjectShared(null));
    assertFalse(SharedMemory.isObjectShared(SharedMemory.roundTrip("s")));
  }

  @Test
  void neutralEqualityOfScalars() {
    SharedList l = (SharedList) SharedMemory.copyToSharedMemory(List.of(1L, 2.5, "x", true));
    assertTrue(l.contains(1));
    assertTrue(l.contains((short) 1));
    assertTrue(l.contains(1.0));
    assertFalse(l.contains(true) && l.indexOf(true) == 0);
    assertEquals(3, l.indexOf(true));
    assertEquals(1, l.indexOf(2.5f));
    assertTrue(l.remove((Object) 1));  // Integer 1 removes the shared integer 1
    assertEquals(List.of(2.5, "x", true), l);
    SharedSet s = (SharedSet) SharedMemory.copyToSharedMemory(Set.of(1L, "a"));
    assertTrue(s.contains(1));
    assertTrue(s.contains(1.0));
    assertFalse(s.contains(true));
    SharedMap m = SharedMemory.allocate(SharedMap.class, 0);
    m.put(1, "int");
    m.put(1.0, "float");  // same key
    m.put(true, "bool");
    assertEquals(2, m.size());
    assertEquals("float", m.get(1L));
    assertTrue(m.containsValue("bool"));
  }

  /**
   * A null where a native takes a String (a class, field, repository or channel name): a
   * NullPointerException, where the native read the null string and the JVM died (SIGSEGV).
   */
  @Test
  void nullStringsAreNullPointerExceptions() {
    assertThrows(NullPointerException.class, () -> SharedMemory.defineClass(null, Map.of()));
    Map<String, SharedType.Kind> nullField = new HashMap<>();
    nullField.put(null, SharedType.Kind.ANY);
    assertThrows(NullPointerException.class, () -> SharedMemory.defineClass("values.NullField", nullField));
    assertThrows(NullPointerException.class, () -> SharedMemory.deleteRepository(null));
    assertThrows(NullPointerException.class, () -> SharedMemory.deleteChannel(null));
    assertThrows(NullPointerException.class, () -> SharedType.versionsOf(null));
    SharedObject o = SharedMemory.allocateObject(SharedMemory.defineClass("values.NullNames", Map.of("x", SharedType.Kind.ANY)));
    assertThrows(NullPointerException.class, () -> o.get(null));
    assertThrows(NullPointerException.class, () -> o.get(null, Long.class));
    assertThrows(NullPointerException.class, () -> o.hasField(null));
    assertThrows(NullPointerException.class, () -> o.addField(null, SharedType.Kind.ANY));
    assertThrows(NullPointerException.class, () -> o.removeField(null));
    assertThrows(NullPointerException.class, () -> o.set(null, (Object) 1L));
    assertThrows(NullPointerException.class, () -> o.getString(null));
    o.set("x", 5L);  // the object is unchanged and usable
    assertEquals(5L, o.get("x"));
  }
}
