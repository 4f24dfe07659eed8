package org.colors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import demo.bulk.BNode;
import demo.bulk.CNode;
import demo.bulk.Holder;
import demo.bulk.MNode;
import java.lang.reflect.Array;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.colors.rpc.ByValue;
import org.colors.rpc.RpcClient;
import org.colors.rpc.RpcServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The bulk copies (BulkWriter/BulkReader, jni_bulk.cpp) against the per-object paths they replace
 * (Copier, Materializer): the same shared graphs and private graphs on seeded random graphs with
 * sharing, cycles, nulls and edge values; deep graphs; the same exceptions with a heap that still
 * verifies; a collector running all the time; {@code @ByValue} rpc parameters.
 */
@ExtendWith(ColorsServer.class)
class BulkCopyTest {

  // ---- random graphs ----

  static final long[] LONGS = {0, 1, -1, Long.MIN_VALUE, Long.MAX_VALUE, 1L << 59, -(1L << 59), (1L << 59) - 1, 1L << 60,
      -(1L << 60) - 1, 123456789012345L};
  static final double[] DOUBLES = {0.0, -0.0, 1.5, -2.25, 1e300, -1e300, Double.NaN, Double.MIN_VALUE, 4.9e-320,
      Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 0x1p-126, 0x1p-127, 0x1p128, 0x1p129, 1e-40, 3.0e38};
  static final float[] FLOATS = {0f, -0f, 1.5f, Float.MIN_VALUE, Float.MAX_VALUE, Float.NaN, Float.NEGATIVE_INFINITY, 1e-40f};
  static final String[] STRINGS = {"", "a", "node-000001", "héllo wörld", "日本語のテキスト", "emoji 😀 and 𝄞 (surrogate pairs)",
      "nul \u0000 inside", "\uFFFF\uFFFE edge", "tab\tnew\nline"};

  static String randomString(Random r) {
    if (r.nextInt(3) > 0) return STRINGS[r.nextInt(STRINGS.length)];
    StringBuilder b = new StringBuilder();
    int n = r.nextInt(40);
    for (int i = 0; i < n; i++) {
      int k = r.nextInt(10);
      if (k < 6) b.append((char) (32 + r.nextInt(95)));
      else if (k < 8) b.append((char) (0x80 + r.nextInt(0x700)));
      else if (k < 9) b.append((char) (0x800 + r.nextInt(0xD000)));
      else b.appendCodePoint(0x10000 + r.nextInt(0xFFFFF));
    }
    return b.toString();
  }

  static byte[] randomBytes(Random r) {
    byte[] b = new byte[r.nextInt(20)];
    r.nextBytes(b);
    return b;
  }

  /** Random scalar fields of x (every kind, edge values), bin included. */
  static void randomScalars(Random r, BNode x) {
    x.l = r.nextInt(3) == 0 ? r.nextLong() : LONGS[r.nextInt(LONGS.length)];
    x.i = r.nextInt(4) == 0 ? (r.nextBoolean() ? Integer.MIN_VALUE : Integer.MAX_VALUE) : r.nextInt();
    x.sh = (short) r.nextInt();
    x.by = (byte) r.nextInt();
    x.ch = r.nextInt(4) == 0 ? Character.MAX_VALUE : (char) r.nextInt(0x10000);
    x.d = r.nextInt(3) == 0 ? r.nextDouble() * 1e6 : DOUBLES[r.nextInt(DOUBLES.length)];
    x.fl = FLOATS[r.nextInt(FLOATS.length)];
    x.z = r.nextBoolean();
    x.s = r.nextInt(8) == 0 ? null : randomString(r);
    x.bin = r.nextInt(3) == 0 ? null : randomBytes(r);
    x.boxed = r.nextInt(3) == 0 ? null : LONGS[r.nextInt(LONGS.length)];
    x.boxedD = r.nextInt(3) == 0 ? null : DOUBLES[r.nextInt(DOUBLES.length)];
  }

  /**
   * n nodes with random fields (every kind, edge values) and random references among them
   * (sharing and cycles). {@code lists}: also private lists (nested, with scalars, nodes and
   * primitive arrays) in {@code list}, which toPrivate keeps as live proxies.
   */
  static BNode[] randomGraph(Random r, int n, boolean lists) {
    BNode[] nodes = new BNode[n];
    for (int k = 0; k < n; k++) nodes[k] = new BNode();
    for (BNode x : nodes) {
      randomScalars(r, x);
      switch (r.nextInt(7)) {
        case 0: x.any = null; break;
        case 1: x.any = LONGS[r.nextInt(LONGS.length)]; break;
        case 2: x.any = DOUBLES[r.nextInt(DOUBLES.length)]; break;
        case 3: x.any = r.nextBoolean(); break;
        case 4: x.any = randomString(r); break;
        case 5: x.any = randomBytes(r); break;
        default: x.any = nodes[r.nextInt(n)];
      }
      x.a = r.nextInt(4) == 0 ? null : nodes[r.nextInt(n)];
      x.b = r.nextInt(3) == 0 ? null : nodes[r.nextInt(n)];
      if (r.nextInt(3) == 0) {
        x.arr = new BNode[r.nextInt(5)];
        for (int i = 0; i < x.arr.length; i++) x.arr[i] = r.nextInt(4) == 0 ? null : nodes[r.nextInt(n)];
      }
      if (r.nextInt(3) == 0) {
        x.longs = new long[r.nextInt(5)];
        for (int i = 0; i < x.longs.length; i++) x.longs[i] = LONGS[r.nextInt(LONGS.length)];
      }
      if (lists && r.nextInt(3) == 0) x.list = randomList(r, nodes, 0);
      x.initialised = r.nextInt();
    }
    return nodes;
  }

  /**
   * A random tree of depth at most {@code depth}: no node, list, map or set met twice, so every
   * reference of its encoding points forward and it is built in a read scope
   * (jni_bulk.cpp). Fields of every other kind, lists, and maps and sets with keys that the
   * language-neutral equality merges (1 and 1L).
   */
  static BNode randomTree(Random r, int depth) {
    BNode x = new BNode();
    randomScalars(r, x);
    switch (r.nextInt(8)) {
      case 0: x.any = null; break;
      case 1: x.any = LONGS[r.nextInt(LONGS.length)]; break;
      case 2: x.any = DOUBLES[r.nextInt(DOUBLES.length)]; break;
      case 3: x.any = r.nextBoolean(); break;
      case 4: x.any = randomString(r); break;
      case 5: x.any = randomMapOrSet(r, depth); break;
      case 6: x.any = randomBytes(r); break;
      default: x.any = depth > 0 ? randomTree(r, depth - 1) : null;
    }
    if (depth > 0) {
      x.a = r.nextInt(4) == 0 ? null : randomTree(r, depth - 1);
      x.b = r.nextInt(3) == 0 ? null : randomTree(r, depth - 1);
      if (r.nextInt(3) == 0) {
        x.arr = new BNode[r.nextInt(4)];
        for (int i = 0; i < x.arr.length; i++) x.arr[i] = r.nextInt(4) == 0 ? null : randomTree(r, depth - 1);
      }
    }
    if (r.nextInt(3) == 0) {
      x.longs = new long[r.nextInt(5)];
      for (int i = 0; i < x.longs.length; i++) x.longs[i] = LONGS[r.nextInt(LONGS.length)];
    }
    if (r.nextInt(3) == 0) x.list = randomTreeList(r, depth);
    return x;
  }

  static List<Object> randomTreeList(Random r, int depth) {
    return randomElements(r, () -> depth > 0 ? randomTreeList(r, depth - 1) : "leaf", () -> randomMapOrSet(r, depth),
        () -> depth > 0 ? randomTree(r, depth - 1) : null);
  }

  static Object randomMapOrSet(Random r, int depth) {
    int n = r.nextInt(6);
    if (r.nextBoolean()) {
      Set<Object> s = new java.util.LinkedHashSet<>();
      for (int i = 0; i < n; i++) s.add(r.nextBoolean() ? (Object) (long) r.nextInt(4) : (Object) r.nextInt(4));
      if (r.nextBoolean()) s.add(randomString(r));
      return s;
    }
    Map<Object, Object> m = new java.util.LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      Object key = r.nextInt(3) == 0 ? randomString(r) : r.nextBoolean() ? (Object) (long) r.nextInt(4) : (Object) r.nextInt(4);
      m.put(key, r.nextInt(3) == 0 && depth > 0 ? randomTreeList(r, depth - 1) : LONGS[r.nextInt(LONGS.length)]);
    }
    return m;
  }

  static List<Object> randomList(Random r, BNode[] nodes, int depth) {
    return randomElements(r, () -> depth < 3 ? randomList(r, nodes, depth + 1) : "leaf",
        () -> new char[] {'x', (char) 0xFFFF}, () -> nodes[r.nextInt(nodes.length)]);
  }

  /**
   * Up to 4 random elements: null, an int, a float, a string, an int[], or what the suppliers make
   * (a nested list, another kind of element, a node), each drawn in the same order whatever they make.
   */
  static List<Object> randomElements(Random r, java.util.function.Supplier<Object> nested,
      java.util.function.Supplier<Object> other, java.util.function.Supplier<Object> node) {
    List<Object> l = new ArrayList<>();
    int n = r.nextInt(5);
    for (int i = 0; i < n; i++) {
      switch (r.nextInt(8)) {
        case 0: l.add(null); break;
        case 1: l.add((int) LONGS[r.nextInt(LONGS.length)]); break;
        case 2: l.add(FLOATS[r.nextInt(FLOATS.length)]); break;
        case 3: l.add(randomString(r)); break;
        case 4: l.add(nested.get()); break;
        case 5: l.add(new int[] {r.nextInt(), -1}); break;
        case 6: l.add(other.get()); break;
        default: l.add(node.get());
      }
    }
    return l;
  }

  // ---- structural comparison of two shared graphs (read through the per-field API) ----

  static long rawOf(Object proxy) {
    return Proxies.handleOf(proxy).raw;
  }

  /** Fails unless a and b (values read from shared memory) are isomorphic graphs with equal values. */
  static void assertSameShared(Object a, Object b) {
    Map<Long, Long> ab = new HashMap<>();
    Map<Long, Long> ba = new HashMap<>();
    ArrayDeque<Object[]> work = new ArrayDeque<>();
    work.push(new Object[] {a, b, "root"});
    while (!work.isEmpty()) {
      Object[] w = work.pop();
      Object x = w[0];
      Object y = w[1];
      String at = (String) w[2];
      if (x == null || y == null) {
        assertSame(x, y, at);
        continue;
      }
      if (Proxies.handleOf(x) == null || Proxies.handleOf(y) == null) {
        assertScalarEquals(x, y, at);
        continue;
      }
      long rx = rawOf(x);
      long ry = rawOf(y);
      Long seen = ab.get(rx);
      if (seen != null) {
        assertEquals((long) seen, ry, at + ": sharing differs");
        continue;
      }
      assertNull(ba.get(ry), at + ": sharing differs");
      ab.put(rx, ry);
      ba.put(ry, rx);
      SharedObject vx = Proxies.viewOf(x);
      SharedObject vy = Proxies.viewOf(y);
      if (vx != null || vy != null) {
        assertNotNull(vx, at);
        assertNotNull(vy, at);
        assertEquals(x.getClass(), y.getClass(), at);
        assertEquals(vx.sharedType(), vy.sharedType(), at + ": class versions differ");
        for (String f : vx.fieldNames()) work.push(new Object[] {vx.get(f), vy.get(f), at + "." + f});
      } else if (x instanceof SharedList) {
        assertTrue(y instanceof SharedList, at);
        Object[] ix = ((SharedList) x).toArray();
        Object[] iy = ((SharedList) y).toArray();
        assertEquals(ix.length, iy.length, at + ": list sizes");
        for (int i = 0; i < ix.length; i++) work.push(new Object[] {ix[i], iy[i], at + "[" + i + "]"});
      } else if (x instanceof SharedMap) {
        assertTrue(y instanceof SharedMap, at);
        assertEquals(((SharedMap) x).size(), ((SharedMap) y).size(), at);
        for (Map.Entry<Object, Object> e : ((SharedMap) x).entrySet()) {
          work.push(new Object[] {e.getValue(), ((SharedMap) y).get(e.getKey()), at + "{" + e.getKey() + "}"});
        }
      } else if (x instanceof SharedSortedMap) {
        assertTrue(y instanceof SharedSortedMap, at);
        SharedSortedMap sx = (SharedSortedMap) x;
        SharedSortedMap sy = (SharedSortedMap) y;
        assertEquals(new ArrayList<>(sx.keySet()), new ArrayList<>(sy.keySet()), at + ": sorted keys");
        for (Object k : sx.keySet()) work.push(new Object[] {sx.get(k), sy.get(k), at + "{" + k + "}"});
      } else {
        assertEquals(x.getClass(), y.getClass(), at);
        assertEquals(((SharedSet) x).size(), ((SharedSet) y).size(), at);
        for (Object e : (SharedSet) x) {
          if (Proxies.handleOf(e) == null) assertTrue(((SharedSet) y).contains(e), at + ": no " + e);
        }
      }
    }
  }

  static void assertScalarEquals(Object x, Object y, String at) {
    assertEquals(x.getClass(), y.getClass(), at);
    if (x instanceof Double) {
      assertEquals(Double.doubleToRawLongBits((Double) x), Double.doubleToRawLongBits((Double) y), at);
    } else if (x instanceof Float) {
      assertEquals(Float.floatToRawIntBits((Float) x), Float.floatToRawIntBits((Float) y), at);
    } else if (x instanceof byte[]) {
      assertArrayEquals((byte[]) x, (byte[]) y, at);
    } else {
      assertEquals(x, y, at);
    }
  }

  // ---- structural comparison of two private graphs ----

  static List<Field> instanceFields(Class<?> c) {
    List<Field> out = new ArrayList<>();
    for (; c != null && c != Object.class; c = c.getSuperclass()) {
      for (Field f : c.getDeclaredFields()) {
        if (Modifier.isStatic(f.getModifiers()) || f.isSynthetic() || f.getName().startsWith("$colors$")) continue;
        f.setAccessible(true);
        out.add(f);
      }
    }
    return out;
  }

  /** Fails unless a and b are isomorphic private graphs with equal values (proxies: the same object). */
  static void assertSamePrivate(Object a, Object b) {
    IdentityHashMap<Object, Object> ab = new IdentityHashMap<>();
    IdentityHashMap<Object, Object> ba = new IdentityHashMap<>();
    ArrayDeque<Object[]> work = new ArrayDeque<>();
    work.push(new Object[] {a, b, "root"});
    while (!work.isEmpty()) {
      Object[] w = work.pop();
      Object x = w[0];
      Object y = w[1];
      String at = (String) w[2];
      if (x == null || y == null) {
        assertSame(x, y, at);
        continue;
      }
      if (Proxies.handleOf(x) != null) {
        assertNotNull(Proxies.handleOf(y), at);
        assertEquals(rawOf(x), rawOf(y), at + ": not the same shared object");
        continue;
      }
      assertEquals(x.getClass(), y.getClass(), at);
      if (Codec.isScalar(x)) {
        assertScalarEquals(x, y, at);
        continue;
      }
      Object seen = ab.get(x);
      if (seen != null) {
        assertSame(seen, y, at + ": sharing differs");
        continue;
      }
      assertNull(ba.get(y), at + ": sharing differs");
      ab.put(x, y);
      ba.put(y, x);
      if (x.getClass().isArray()) {
        int n = Array.getLength(x);
        assertEquals(n, Array.getLength(y), at);
        for (int i = 0; i < n; i++) work.push(new Object[] {Array.get(x, i), Array.get(y, i), at + "[" + i + "]"});
      } else if (x instanceof List) {
        List<?> lx = (List<?>) x;
        List<?> ly = (List<?>) y;
        assertEquals(lx.size(), ly.size(), at);
        for (int i = 0; i < lx.size(); i++) work.push(new Object[] {lx.get(i), ly.get(i), at + "[" + i + "]"});
      } else {
        try {
          for (Field f : instanceFields(x.getClass())) work.push(new Object[] {f.get(x), f.get(y), at + "." + f.getName()});
        } catch (IllegalAccessException e) {
          throw new AssertionError(e);
        }
      }
    }
  }

  // ---- private -> shared ----

  @Test
  void copyEqualsTheCopierOnRandomGraphs() {
    for (int seed = 1; seed <= 12; seed++) {
      Random r = new Random(seed);
      BNode[] nodes = randomGraph(r, 40 + r.nextInt(80), true);
      List<Object> root = new ArrayList<>(Arrays.asList(nodes));
      root.add(root);  // the root list inside itself
      root.add(new long[] {Long.MIN_VALUE, 0});
      root.add(new double[] {-0.0, Double.NaN});
      root.add(new boolean[] {true});
      root.add(new float[] {Float.MIN_VALUE});
      root.add(new short[] {Short.MIN_VALUE});
      root.add(new byte[] {1, 2, 3});
      root.add(new Object[] {nodes[0], null, "x", new Object[0]});
      long before = Bulk.WRITES.get();
      Object bulk = SharedMemory.copyToSharedMemory(root);
      assertEquals(before + 1, Bulk.WRITES.get(), "seed " + seed + ": the bulk path was not taken");
      Object old = new Copier().run(root);
      assertNotEquals(rawOf(bulk), rawOf(old));
      assertSameShared(bulk, old);
      // and it reads back as the original (through the per-field API)
      SharedList l = (SharedList) bulk;
      assertSame(l, l.get(nodes.length));
      for (int k = 0; k < nodes.length; k++) {
        SharedObject so = (SharedObject) l.get(k);
        assertEquals(nodes[k].l, so.getLong("l"));
        assertEquals(nodes[k].i, so.getInt("i"));
        assertEquals(nodes[k].ch, so.getChar("ch"));
        assertEquals(Double.doubleToRawLongBits(nodes[k].d), Double.doubleToRawLongBits(so.getDouble("d")));
        assertEquals(Float.floatToRawIntBits(nodes[k].fl), Float.floatToRawIntBits(so.getFloat("fl")));
        assertEquals(nodes[k].s, so.get("s"));
        assertArrayEquals(nodes[k].bin, (byte[]) so.get("bin"));
        assertEquals(nodes[k].boxed, so.get("boxed"));
        assertFalse(so.hasField("notCopied"));
        if (nodes[k].a != null) assertEquals(nodes[k].a.l, ((SharedObject) so.get("a")).getLong("l"));
      }
    }
  }

  @Test
  void copiesRootsOfEveryKindAndProxiesAsTheyAre() {
    SharedList shared = (SharedList) SharedMemory.copyToSharedMemory(List.of(1, 2));
    BNode n = new BNode();
    n.any = shared;
    n.s = "x";
    long before = Bulk.WRITES.get();
    SharedObject so = (SharedObject) SharedMemory.copyToSharedMemory(n);
    assertEquals(before + 1, Bulk.WRITES.get());
    assertSame(shared, so.get("any"));  // a proxy is stored as it is
    assertEquals(42L, so.get("initialised"));
    Object arr = SharedMemory.copyToSharedMemory(new int[] {5, -5});
    assertEquals(List.of(5L, -5L), arr);
    assertEquals(List.of(), SharedMemory.copyToSharedMemory(new ArrayList<>()));
    assertEquals(7L, SharedMemory.copyToSharedMemory(7));  // scalars: as they read back
    assertEquals("s", SharedMemory.copyToSharedMemory("s"));
    assertSame(shared, SharedMemory.copyToSharedMemory(shared));
    // maps, sets and sorted maps take the bulk copy too, with the Copier's result
    Map<String, Object> m = new HashMap<>();
    m.put("n", n);
    m.put("set", new HashSet<>(List.of(1L, 2L)));
    before = Bulk.WRITES.get();
    Object viaBulk = SharedMemory.copyToSharedMemory(m);
    assertEquals(before + 1, Bulk.WRITES.get());
    assertSameShared(viaBulk, new Copier().run(m));
    java.util.TreeMap<Object, Object> sorted = new java.util.TreeMap<>(Map.of("b", List.of(2L), "a", m));
    before = Bulk.WRITES.get();
    Object sortedCopy = SharedMemory.copyToSharedMemory(sorted);
    assertEquals(before + 1, Bulk.WRITES.get());
    assertInstanceOf(SharedSortedMap.class, sortedCopy);
    assertEquals(List.of("a", "b"), new ArrayList<>(((SharedSortedMap) sortedCopy).keySet()));
    assertSameShared(((SharedSortedMap) sortedCopy).get("a"), new Copier().run(m));
    // keys of two kinds: the shared sorted map refuses them, on either path
    java.util.TreeMap<Object, Object> mixed = new java.util.TreeMap<>((x, y) -> x.toString().compareTo(y.toString()));
    mixed.put("a", 1L);
    mixed.put(2L, 2L);
    String bulkError = messageOf(() -> SharedMemory.copyToSharedMemory(mixed));
    assertEquals(messageOf(() -> new Copier().run(mixed)), bulkError);
  }

  @Test
  void setsAndMapsCopyInOneCallAsTheCopierCopiesThem() {
    // Keys and elements of every kind the language-neutral equality sees (1 and 1L are one key:
    // the later entry wins, as it does for the Copier's puts in the same order), values that are
    // graphs, a map that holds itself, and the same private set twice (one shared set).
    Set<Object> shared = new HashSet<>(List.of("s", 2.5, true));
    Map<Object, Object> m = new java.util.LinkedHashMap<>();
    m.put("str", List.of(1L, "x"));
    m.put(7L, shared);
    m.put(7, "int 7 after long 7");
    m.put(-0.0, new byte[] {9});
    m.put(false, null);
    m.put("again", shared);
    m.put("self", m);
    m.put("node", new demo.Employee("e", 1.5));
    Set<Object> s = new java.util.LinkedHashSet<>(List.of(1L, 1, "one", 2.0, 2L));
    List<Object> root = new ArrayList<>(List.of(m, s, shared, new HashMap<>(), new HashSet<>()));
    long before = Bulk.WRITES.get();
    Object bulk = SharedMemory.copyToSharedMemory(root);
    assertEquals(before + 1, Bulk.WRITES.get(), "the bulk path was not taken");
    Object old = new Copier().run(root);
    assertSameShared(bulk, old);
    List<?> l = (List<?>) bulk;
    Map<?, ?> bm = (Map<?, ?>) l.get(0);
    assertSame(bm, bm.get("self"));
    assertSame(bm.get("again"), l.get(2));
    assertEquals("int 7 after long 7", bm.get(7L));
  }

  /** A list whose toArray() itself copies a graph to shared memory, on the copying thread. */
  static final class CopyingList extends ArrayList<Object> {
    final List<Object> inner;
    Object innerCopy;

    CopyingList(List<Object> items, List<Object> inner) {
      super(items);
      this.inner = inner;
    }

    @Override
    public Object[] toArray() {
      innerCopy = SharedMemory.copyToSharedMemory(inner);
      return super.toArray();
    }
  }

  @Test
  void aCopyMadeWhileAnotherIsEncodedOnTheSameThreadLeavesBothWhole() {
    // The encoder is one instance per thread: a user collection whose toArray() copies another
    // graph re-enters it in the middle of the outer encoding. Both copies must come out whole.
    List<Object> inner = new ArrayList<>(List.of("inner", 41L, new ArrayList<>(List.of(true))));
    Map<Object, Object> m = new HashMap<>(Map.of("k", List.of(1L, 2L)));
    CopyingList nested = new CopyingList(List.of("a", m, 3L), inner);
    List<Object> root = new ArrayList<>(List.of(m, "before", nested, List.of("after", 9L), m));
    long before = Bulk.WRITES.get();
    Object copy = SharedMemory.copyToSharedMemory(root);
    assertEquals(before + 2, Bulk.WRITES.get(), "both copies take the bulk path");
    assertEquals(List.of("inner", 41L, List.of(true)), nested.innerCopy);
    List<?> l = (List<?>) copy;
    assertEquals(5, l.size());
    assertEquals(Map.of("k", List.of(1L, 2L)), l.get(0));
    assertSame(l.get(0), l.get(4), "the map met twice is one shared map");
    assertEquals("before", l.get(1));
    List<?> n = (List<?>) l.get(2);
    assertEquals(List.of("a", Map.of("k", List.of(1L, 2L)), 3L), n);
    assertSame(l.get(0), n.get(1));
    assertEquals(List.of("after", 9L), l.get(3));
    assertSameShared(copy, new Copier().run(root));
  }

  @Test
  void mappedClassesCopyToBoundInstancesAndBack() {
    MNode a = new MNode();
    MNode b = new MNode();
    a.l = Long.MIN_VALUE;
    a.d = 1e300;
    a.s = "ä😀";
    a.left = b;
    a.right = b;
    b.left = a;  // a cycle
    b.plain = new BNode();
    b.plain.s = "plain";
    assertFalse(SharedMemory.isObjectShared(a));
    long before = Bulk.WRITES.get();
    MNode sa = (MNode) SharedMemory.copyToSharedMemory(a);
    assertEquals(before + 1, Bulk.WRITES.get());
    assertTrue(SharedMemory.isObjectShared(sa));
    assertEquals(Long.MIN_VALUE, sa.l);
    assertEquals(1e300, sa.d);
    assertEquals("ä😀", sa.s);
    assertSame(sa.left, sa.right);
    assertSame(sa, sa.left.left);
    assertEquals("plain", SharedMemory.sharedView(sa.left).get("plain", SharedObject.class).getString("s"));
    assertSameShared(sa, new Copier().run(a));

    before = Bulk.READS.get();
    MNode pa = SharedMemory.sharedView(sa).toPrivate(MNode.class);
    assertEquals(before + 1, Bulk.READS.get());
    assertFalse(SharedMemory.isObjectShared(pa));
    assertFalse(SharedMemory.isObjectShared(pa.left));
    assertSamePrivate(a, pa);
    assertSamePrivate(new Materializer(MNode.class.getClassLoader()).run(SharedMemory.sharedView(sa), MNode.class), pa);
  }

  @Test
  void deepChainsNeedNoRecursion() {
    int n = 100_000;
    BNode head = new BNode();
    BNode x = head;
    for (int i = 1; i < n; i++) {
      x.l = i - 1;
      x.a = new BNode();
      x = x.a;
    }
    x.l = n - 1;
    x.b = head;  // and back to the start
    long before = Bulk.WRITES.get();
    SharedObject so = (SharedObject) SharedMemory.copyToSharedMemory(head);
    assertEquals(before + 1, Bulk.WRITES.get());
    SharedObject y = so;
    for (int i = 0; i < n - 1; i++) {
      assertEquals(i, y.getLong("l"));
      y = (SharedObject) y.get("a");
    }
    assertEquals(n - 1, y.getLong("l"));
    assertSame(so, y.get("b"));
    before = Bulk.READS.get();
    BNode p = so.toPrivate(BNode.class);
    assertEquals(before + 1, Bulk.READS.get());
    BNode q = p;
    for (int i = 0; i < n - 1; i++) {
      assertEquals(i, q.l);
      q = q.a;
    }
    assertEquals(n - 1, q.l);
    assertSame(p, q.b);
    // a 100 000-deep nesting of lists
    List<Object> outer = new ArrayList<>();
    List<Object> in = outer;
    for (int i = 0; i < n; i++) {
      List<Object> next = new ArrayList<>();
      in.add(i);
      in.add(next);
      in = next;
    }
    SharedList sl = (SharedList) SharedMemory.copyToSharedMemory(outer);
    for (int i = 0; i < n; i++) {
      assertEquals((long) i, sl.get(0));
      sl = (SharedList) sl.get(1);
    }
    assertEquals(0, sl.size());
  }

  // ---- shared -> private ----

  @Test
  void toPrivateEqualsTheMaterializerOnRandomGraphs() {
    for (int seed = 100; seed < 112; seed++) {
      Random r = new Random(seed);
      BNode[] nodes = randomGraph(r, 30 + r.nextInt(60), false);
      SharedList shared = (SharedList) SharedMemory.copyToSharedMemory(nodes);
      for (int k = 0; k < 5; k++) {
        SharedObject so = (SharedObject) shared.get(r.nextInt(nodes.length));
        long before = Bulk.READS.get();
        BNode bulk = so.toPrivate(BNode.class);
        assertEquals(before + 1, Bulk.READS.get(), "seed " + seed + ": the bulk path was not taken");
        BNode old = (BNode) new Materializer(BNode.class.getClassLoader()).run(so, BNode.class);
        assertSamePrivate(bulk, old);
      }
      long before = Bulk.READS.get();
      BNode[] all = (BNode[]) RpcSupport.toPrivateArray(shared, BNode[].class, "nodes");
      assertEquals(before + 1, Bulk.READS.get());
      assertSamePrivate(nodes, all);  // the round trip gives the original graph back
      assertSamePrivate(new Materializer(BNode.class.getClassLoader()).javaValue(shared, BNode[].class, "nodes"), all);
    }
  }

  @Test
  void toPrivateFallsBackWhereContainersStayProxies() {
    Random r = new Random(7);
    BNode[] nodes = randomGraph(r, 50, true);
    nodes[0].list = new ArrayList<>(List.of(1, "two", nodes[1]));
    Map<String, Object> m = new HashMap<>();
    m.put("k", 1L);
    nodes[1].any = SharedMemory.copyToSharedMemory(m);  // a shared map: a proxy both ways read it as
    SharedList shared = (SharedList) SharedMemory.copyToSharedMemory(nodes);
    SharedObject so = (SharedObject) shared.get(0);
    long before = Bulk.READS.get();
    BNode bulk = so.toPrivate(BNode.class);
    assertEquals(before, Bulk.READS.get());  // a list in a List field stays a live proxy: Materializer
    assertSamePrivate(bulk, new Materializer(BNode.class.getClassLoader()).run(so, BNode.class));
    assertTrue(bulk.list instanceof SharedList);
    // a map met on the way is a proxy: covered (the same proxy as the per-field read gives)
    BNode[] one = {nodes[1]};
    nodes[1].list = null;
    nodes[1].a = nodes[1].b = null;
    nodes[1].arr = null;
    if (nodes[1].any instanceof BNode) nodes[1].any = null;
    SharedObject s1 = (SharedObject) ((SharedList) SharedMemory.copyToSharedMemory(one)).get(0);
    before = Bulk.READS.get();
    BNode p1 = s1.toPrivate(BNode.class);
    assertEquals(before + 1, Bulk.READS.get());
    assertTrue(p1.any instanceof SharedMap);
    assertEquals(1L, ((SharedMap) p1.any).get("k"));
    assertSamePrivate(p1, new Materializer(BNode.class.getClassLoader()).run(s1, BNode.class));
  }

  @Test
  void missingFieldsKeepTheirConstructorValues() {
    SharedObject so = SharedMemory.allocateObject(SharedMemory.defineClass("demo.bulk.BNode",
        Map.of("l", SharedType.Kind.INTEGER, "s", SharedType.Kind.STRING, "extra", SharedType.Kind.FLOAT)));
    so.set("l", 5);
    so.set("s", "five");
    so.set("extra", 2.5);
    long before = Bulk.READS.get();
    BNode p = so.toPrivate(BNode.class);
    assertEquals(before + 1, Bulk.READS.get());
    assertEquals(5, p.l);
    assertEquals("five", p.s);
    assertEquals(42, p.initialised);  // the version lacks it: the constructor's value stays
    assertEquals(7, p.notCopied);
    assertSamePrivate(p, new Materializer(BNode.class.getClassLoader()).run(so, BNode.class));
  }

  // ---- errors ----

  static String messageOf(Runnable r) {
    try {
      r.run();
    } catch (SharedMemoryException e) {
      return e.getClass().getName() + ": " + e.getMessage();
    }
    return fail("no exception");
  }

  static void assertHeapVerifies() {
    String report = Direct.verifyHeap();
    assertNull(report, report);
  }

  @Test
  void errorsAreTheCopiersAndLeaveAVerifiableHeap() {
    Random r = new Random(3);
    BNode[] nodes = randomGraph(r, 60, true);
    nodes[30].any = new StringBuilder("not shareable");  // deep inside the graph
    String bulk = messageOf(() -> SharedMemory.copyToSharedMemory(nodes));
    String old = messageOf(() -> new Copier().run(nodes));
    assertTrue(bulk.startsWith("org.colors.TypeMismatchException"), bulk);
    assertEquals(old, bulk);
    nodes[30].any = "lone \uD800 surrogate";
    bulk = messageOf(() -> SharedMemory.copyToSharedMemory(nodes));
    assertEquals(messageOf(() -> new Copier().run(nodes)), bulk);
    assertTrue(bulk.startsWith("org.colors.InvalidArgumentException"), bulk);
    nodes[30].any = null;
    Holder h = new Holder();  // a set in a list-typed field: the shared field refuses it
    h.items = new HashSet<>(List.of(1));
    bulk = messageOf(() -> SharedMemory.copyToSharedMemory(List.of(nodes[0], h)));
    assertEquals(messageOf(() -> new Copier().run(List.of(nodes[0], h))), bulk);
    assertTrue(bulk.startsWith("org.colors.TypeMismatchException"), bulk);
    // a shared set (stored as it is) in a list-typed field: refused by the shared field's type
    Holder h2 = new Holder();
    h2.items = (SharedSet) SharedMemory.copyToSharedMemory(new HashSet<>(List.of(1)));
    String b2 = messageOf(() -> SharedMemory.copyToSharedMemory(List.of(nodes[1], h2)));
    assertEquals(messageOf(() -> new Copier().run(List.of(nodes[1], h2))), b2);
    assertTrue(b2.startsWith("org.colors.TypeMismatchException"), b2);
    // shared -> private: a number too wide for its field, an object of the wrong class
    SharedObject so = (SharedObject) SharedMemory.copyToSharedMemory(nodes[5]);
    so.set("i", 1L << 40);
    String rb = messageOf(() -> so.toPrivate(BNode.class));
    assertEquals(messageOf(() -> new Materializer(BNode.class.getClassLoader()).run(so, BNode.class)), rb);
    assertTrue(rb.startsWith("org.colors.SharedOverflowException"), rb);
    SharedObject wrong = (SharedObject) SharedMemory.copyToSharedMemory(new BNode());
    wrong.set("arr", SharedMemory.copyToSharedMemory(List.of("not a node")));  // a string in a BNode[]
    rb = messageOf(() -> wrong.toPrivate(BNode.class));
    assertEquals(messageOf(() -> new Materializer(BNode.class.getClassLoader()).run(wrong, BNode.class)), rb);
    assertTrue(rb.startsWith("org.colors.TypeMismatchException"), rb);
    SharedMemory.collect();
    SharedMemory.collect();
    assertHeapVerifies();
  }

  // ---- a collector running all the time ----

  /** A worker's body: {@code id} numbers the worker. */
  interface Worker {
    void run(int id) throws Exception;
  }

  /**
   * Runs {@code body} on {@code threads} threads while another thread asks for collector cycles
   * back to back; fails with the first worker's failure.
   */
  static void withCyclesBackToBack(String name, int threads, Worker body) throws Exception {
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Thread gc = new Thread(() -> {
      while (!stop.get()) SharedMemory.collect();
    }, name + "-gc");
    gc.start();
    try {
      List<Thread> workers = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        final int id = t;
        Thread w = new Thread(() -> {
          try {
            body.run(id);
          } catch (Throwable e) {
            failure.compareAndSet(null, e);
          }
        }, name + "-worker-" + t);
        workers.add(w);
        w.start();
      }
      for (Thread w : workers) w.join();
    } finally {
      stop.set(true);
      gc.join();
    }
    if (failure.get() != null) throw new AssertionError("a worker failed", failure.get());
  }

  @Test
  void concurrentCollectorStress() throws Exception {
    withCyclesBackToBack("bulk", 2, id -> {
      for (int round = 0; round < 25; round++) {
        Random r = new Random(1000L * id + round);
        BNode[] nodes = randomGraph(r, 400, false);
        SharedList shared = (SharedList) SharedMemory.copyToSharedMemory(nodes);
        BNode[] back = (BNode[]) RpcSupport.toPrivateArray(shared, BNode[].class, "nodes");
        assertSamePrivate(nodes, back);
        SharedObject one = (SharedObject) shared.get(r.nextInt(nodes.length));
        BNode p = one.toPrivate(BNode.class);
        assertEquals(one.getLong("l"), p.l);
        assertEquals(one.get("s"), p.s);
      }
    });
    SharedMemory.collect();
    assertHeapVerifies();
  }

  // ---- private -> shared in a read scope ----

  @Test
  void treesAreBuiltInAReadScopeAsTheCopierBuildsThem() {
    for (int seed = 1; seed <= 12; seed++) {
      Random r = new Random(seed);
      List<Object> root = new ArrayList<>();
      for (int k = 0; k < 4; k++) root.add(randomTree(r, 4));
      root.add(randomTreeList(r, 3));
      root.add(randomMapOrSet(r, 2));
      root.add(new long[] {Long.MIN_VALUE, 0});
      long scoped = Bulk.scopedBuilds();
      long writes = Bulk.WRITES.get();
      Object bulk = SharedMemory.copyToSharedMemory(root);
      assertEquals(writes + 1, Bulk.WRITES.get(), "seed " + seed + ": the bulk path was not taken");
      assertEquals(scoped + 1, Bulk.scopedBuilds(), "seed " + seed + ": not built in a read scope");
      assertSameShared(bulk, new Copier().run(root));
    }
    // Keys equal across kinds, in a map and in a set: the earlier key stays, and the later value wins.
    Map<Object, Object> m = new java.util.LinkedHashMap<>();
    m.put(7L, "long 7");
    m.put(7, "int 7 after long 7");
    m.put(null, List.of("null key"));
    Set<Object> set = new java.util.LinkedHashSet<>(List.of(1L, 1, "one", 2.0, 2L));
    List<Object> root = new ArrayList<>(List.of(m, set, new HashMap<>(), new HashSet<>()));
    long scoped = Bulk.scopedBuilds();
    Object bulk = SharedMemory.copyToSharedMemory(root);
    assertEquals(scoped + 1, Bulk.scopedBuilds());
    assertSameShared(bulk, new Copier().run(root));
    Map<?, ?> bm = (Map<?, ?>) ((List<?>) bulk).get(0);
    assertEquals("int 7 after long 7", bm.get(7L));
    assertEquals(List.of("null key"), bm.get(null));
    assertEquals(3, ((Set<?>) ((List<?>) bulk).get(1)).size());  // 2.0 and 2L are one element
  }

  @Test
  void graphsTheScopedBuildLeavesAreBuiltRooted() {
    BNode node = randomTree(new Random(5), 2);
    node.any = null;
    BNode parent = new BNode();
    parent.a = new BNode();
    parent.a.b = parent;  // a reference back to an earlier object
    List<Object> cycle = new ArrayList<>(List.of("self"));
    cycle.add(cycle);
    Object[] cases = {parent, cycle, new java.util.TreeMap<>(Map.of("a", 1L, "b", 2L)),
        new ArrayList<>(List.of(new java.util.TreeMap<>(Map.of(1L, "x"))))};
    for (Object root : cases) {
      long scoped = Bulk.scopedBuilds();
      long writes = Bulk.WRITES.get();
      Object bulk = SharedMemory.copyToSharedMemory(root);
      assertEquals(writes + 1, Bulk.WRITES.get(), "the bulk path was not taken");
      assertEquals(scoped, Bulk.scopedBuilds(), root.getClass() + " built in a read scope");
      assertSameShared(bulk, new Copier().run(root));
    }
    // Inside a transaction (a scope would have to wait for it): rooted too.
    BNode tree = randomTree(new Random(7), 3);
    long scoped = Bulk.scopedBuilds();
    Object inTx;
    try (Transaction tx = SharedMemory.beginTransaction()) {
      inTx = SharedMemory.copyToSharedMemory(tree);
      tx.commit();
    }
    assertEquals(scoped, Bulk.scopedBuilds());
    assertSameShared(inTx, new Copier().run(tree));
    // Two references to an object numbered after both referrers point forward: built in a scope,
    // the object met twice is one shared object.
    List<Object> twice = new ArrayList<>(List.of(node, "between", node));
    scoped = Bulk.scopedBuilds();
    List<?> two = (List<?>) SharedMemory.copyToSharedMemory(twice);
    assertEquals(scoped + 1, Bulk.scopedBuilds());
    assertSame(two.get(0), two.get(2));
    assertSameShared(two, new Copier().run(twice));
    // A reference to a proxy is stored as it is, in a scoped build too.
    Object proxy = SharedMemory.copyToSharedMemory(List.of("kept"));
    scoped = Bulk.scopedBuilds();
    List<?> holder = (List<?>) SharedMemory.copyToSharedMemory(new ArrayList<>(List.of(proxy, "x")));
    assertEquals(scoped + 1, Bulk.scopedBuilds());
    assertSame(proxy, holder.get(0));
  }

  @Test
  void treesBuiltInReadScopesSurviveACollectorRunningAllTheTime() throws Exception {
    long scoped = Bulk.scopedBuilds();
    withCyclesBackToBack("scoped", 2, id -> {
      List<Object> kept = new ArrayList<>();
      for (int round = 0; round < 40; round++) {
        Random r = new Random(7000L * id + round);
        List<Object> root = new ArrayList<>();
        for (int k = 0; k < 6; k++) root.add(randomTree(r, 4));
        Object copy = SharedMemory.copyToSharedMemory(root);
        kept.add(copy);
        kept.add(root);
        if (kept.size() > 8) {  // an older copy, read after more cycles, then let go
          assertSameShared(kept.get(0), new Copier().run(kept.get(1)));
          kept.subList(0, 2).clear();
        }
      }
    });
    assertEquals(scoped + 80, Bulk.scopedBuilds(), "every copy was built in a read scope");
    SharedMemory.collect();
    assertHeapVerifies();
  }

  // ---- rpc: @ByValue ----

  /** The served methods of the @ByValue test. */
  public static final class Service {
    public BNode[] derive(@ByValue BNode[] xs) {
      IdentityHashMap<BNode, BNode> made = new IdentityHashMap<>();
      BNode[] out = new BNode[xs.length];
      for (int k = 0; k < xs.length; k++) {
        BNode x = xs[k];
        if (x == null) continue;
        if (SharedMemory.isObjectShared(x)) throw new IllegalStateException("not a private copy");
        out[k] = made.computeIfAbsent(x, p -> {
          BNode q = new BNode();
          q.l = p.l + 1;
          q.s = new StringBuilder(p.s).reverse().toString();
          return q;
        });
      }
      return out;
    }

    public long sumPrivate(@ByValue List<MNode> xs) {
      long s = 0;
      for (MNode m : xs) {
        if (SharedMemory.isObjectShared(m) || SharedMemory.isObjectShared(m.left)) throw new IllegalStateException("bound");
        s += m.l + (m.left == null ? 0 : m.left.l);
      }
      return s;
    }

    public long single(@ByValue MNode x) {
      return SharedMemory.isObjectShared(x) ? -1 : x.l;
    }

    public boolean selfCycle(@ByValue CNode n) {
      return !SharedMemory.isObjectShared(n) && n.next == n && n.tags.equals(List.of(1L));
    }

    public int bound(MNode[] xs) {  // without @ByValue: instances bound to the shared objects
      int n = 0;
      for (MNode m : xs) if (SharedMemory.isObjectShared(m)) n++;
      return n;
    }
  }

  /**
   * A {@code @ByValue} argument whose graph leads back to its root, converted by the Materializer
   * (CNode's container field sends it there): the root was read through a transient proxy and the field
   * back to it through the cached one, and the memo, keyed by proxy, made a second private copy
   * (n.next != n). The memo is keyed by shared address now.
   */
  @Test
  void aByValueArgumentThatLeadsBackToItsRootKeepsTheCycle() {
    String endpoint = "bulk-cycle-" + UUID.randomUUID();
    try (RpcServer server = RpcServer.serve(endpoint, new Service(), 1); RpcClient client = RpcClient.connect(endpoint)) {
      CNode n = new CNode();
      n.next = n;
      n.tags = new ArrayList<>(List.of(1L));
      assertEquals(true, client.call("selfCycle", n));
    }
  }

  /** A handler with @ByValue on a type it does not apply to. */
  public static final class BadService {
    public int bad(@ByValue int x) {
      return x;
    }
  }

  @Test
  void byValueParametersArriveAsPrivateCopies() {
    String endpoint = "bulk-" + UUID.randomUUID();
    try (RpcServer server = RpcServer.serve(endpoint, new Service(), 1); RpcClient client = RpcClient.connect(endpoint)) {
      BNode a = new BNode();
      a.l = 10;
      a.s = "abc";
      BNode b = new BNode();
      b.l = 20;
      b.s = "日本";
      long before = Bulk.READS.get();
      SharedList out = (SharedList) client.call("derive", (Object) new BNode[] {a, b, a, null});
      assertTrue(Bulk.READS.get() > before);
      assertEquals(4, out.size());
      assertEquals(11L, ((SharedObject) out.get(0)).getLong("l"));
      assertEquals("cba", ((SharedObject) out.get(0)).getString("s"));
      assertEquals(21L, ((SharedObject) out.get(1)).getLong("l"));
      assertEquals("本日", ((SharedObject) out.get(1)).getString("s"));
      assertSame(out.get(0), out.get(2));  // sharing kept both ways
      assertNull(out.get(3));

      MNode m1 = new MNode();
      m1.l = 5;
      MNode m2 = new MNode();
      m2.l = 7;
      m2.left = m1;
      assertEquals(5L + 7 + 5, client.call("sumPrivate", (Object) List.of(m1, m2)));
      MNode bound = (MNode) SharedMemory.copyToSharedMemory(m2);
      assertEquals(7L, client.call("single", bound));
      assertEquals(2L, client.call("bound", (Object) new MNode[] {m1, m2}));
    }
    assertThrows(IllegalArgumentException.class, () -> RpcServer.serve("bulk-bad-" + UUID.randomUUID(), new BadService()));
  }
}
