package org.colors;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Comparator;
import java.util.Iterator;
import java.util.Map;
import java.util.NavigableMap;
import java.util.NavigableSet;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;

/**
 * A shared sorted map: a proxy implementing {@link NavigableMap} over an ordered map (a B+tree)
 * in the shared heap, which Python sees as {@code colors_shm.SharedSortedDict} and C++ as
 * {@code colors::SortedMap}. Make one with {@link SharedMemory#newSortedMap()} (or
 * {@code allocate(NavigableMap.class, 0)}, {@code SortedMap.class}, {@code TreeMap.class}); a
 * private {@code SortedMap} given to {@link SharedMemory#copyToSharedMemory(Object)} becomes one.
 *
 * <p>Keys. The keys of one map are all numbers ({@code Long}, {@code Integer}, {@code Short},
 * {@code Byte}, {@code Character}, {@code Double}, {@code Float}, compared by value across types:
 * {@code 1 == 1L == 1.0 < 1.5}), all {@code String}s (in code point order, which is UTF-8 byte
 * order; {@code String.compareTo} orders UTF-16 units and differs for characters beyond U+FFFF)
 * or all {@code byte[]} (unsigned lexicographic). A key of another kind, a NaN or a boolean throws
 * {@link TypeMismatchException} and changes nothing; a {@code null} key throws
 * {@link NullPointerException}, as {@code TreeMap} does. Keys read back are {@code Long},
 * {@code Double}, {@code String} or {@code byte[]}. Values are anything storable, null included.
 * Because the order is the shared one, {@link #comparator()} returns a comparator implementing it
 * (never null).
 *
 * <p>Atomicity. Each call is one operation under the map's lock (across processes), except on a
 * bounded view ({@link #subMap}, {@link #headMap}, {@link #tailMap}): there {@code size()},
 * {@code clear()} and {@code pollFirstEntry()}/{@code pollLastEntry()} are several operations.
 * Iterators read 256 entries per batch, each batch continuing after the last key returned, and
 * are weakly consistent, as {@code ConcurrentSkipListMap}'s: they return each key at most once, in
 * order, each entry as it was at some instant of the iteration, every key that stays in the map
 * for the whole iteration, and they never throw {@link java.util.ConcurrentModificationException};
 * their {@code remove} removes the last key returned. (A batch of a map of integer keys is read
 * without the lock, leaf by leaf; other batches are one locked call.) Entries from iterators write through on {@code setValue}; entries returned by the
 * navigation methods ({@link #firstEntry()} ...) are immutable snapshots, as {@code TreeMap}'s.
 *
 * <p>Views. {@link #descendingMap()}, {@link #navigableKeySet()}, {@link #subMap}, {@link #headMap}
 * and {@link #tailMap} are live views of the same shared map; only the map itself can be stored
 * in a shared field or container (a view is refused with {@link TypeMismatchException}). Putting a key outside a bounded
 * view's range throws {@link IllegalArgumentException}; a view's bound must lie within the range
 * of the view it is taken from (else {@link IllegalArgumentException}).
 */
public final class SharedSortedMap extends AbstractMap<Object, Object> implements NavigableMap<Object, Object> {
  static final int BATCH = 256;

  final Handle handle;
  // The view's bounds in ascending key order (not given: unbounded) and its direction.
  private final Object lo;
  private final Object hi;
  private final boolean loGiven, loIncl, hiGiven, hiIncl, descending;
  private EntrySet entries;
  private KeySet keys;

  SharedSortedMap(Handle handle) {
    this(handle, null, false, true, null, false, true, false);
  }

  private SharedSortedMap(Handle handle, Object lo, boolean loGiven, boolean loIncl, Object hi, boolean hiGiven,
      boolean hiIncl, boolean descending) {
    this.handle = handle;
    this.lo = lo;
    this.loGiven = loGiven;
    this.loIncl = loIncl;
    this.hi = hi;
    this.hiGiven = hiGiven;
    this.hiIncl = hiIncl;
    this.descending = descending;
  }

  // ---- keys and bounds ----------------------------------------------------------------------

  private boolean whole() {
    return !loGiven && !hiGiven;
  }

  private static Object requireKey(Object key) {
    if (key == null) throw new NullPointerException("a shared sorted map has no null keys");
    return key;
  }

  /** The shared order of two keys (ascending); TypeMismatchException unless both are keys of one kind. */
  static int compareKeys(Object a, Object b) {
    int ta = Codec.tag(requireKey(a));
    int tb = Codec.tag(requireKey(b));
    if (ta == Codec.INT && tb == Codec.INT) return Long.compare(Codec.bits(a, ta), Codec.bits(b, tb));
    return SortedNative.compare(ta, Codec.bits(a, ta), Codec.obj(a, ta), tb, Codec.bits(b, tb), Codec.obj(b, tb));
  }

  private boolean tooLow(Object k) {
    if (!loGiven) return false;
    int c = compareKeys(k, lo);
    return c < 0 || (c == 0 && !loIncl);
  }

  private boolean tooHigh(Object k) {
    if (!hiGiven) return false;
    int c = compareKeys(k, hi);
    return c > 0 || (c == 0 && !hiIncl);
  }

  private boolean inRange(Object k) {
    return whole() || (!tooLow(k) && !tooHigh(k));
  }

  /**
   * Up to {@code limit} keys (each followed by its value when {@code values}) of this view in
   * ascending order, or descending when {@code rev}, starting at {@code from} when given.
   */
  private Object[] scan(Object from, boolean fromGiven, boolean fromIncl, boolean rev, int limit, boolean values) {
    return SortedNative.decodeAll(scanFlat(from, fromGiven, fromIncl, rev, limit, values, false));
  }

  /**
   * {@link #scan} as SortedNative.rangeFlat returns it: {byte[] tags, long[] bits, Object[] objects}.
   * {@code weak}: the batch may be read without the lock (an iterator's: {@link SortedReads#range}'s
   * weak consistency), else it is one instant of the map.
   */
  private Object[] scanFlat(Object from, boolean fromGiven, boolean fromIncl, boolean rev, int limit, boolean values,
      boolean weak) {
    Object l = lo, u = hi;
    boolean lg = loGiven, li = loIncl, ug = hiGiven, ui = hiIncl;
    if (fromGiven) {
      if (!rev) {
        int c = lg ? compareKeys(from, l) : 1;
        if (c > 0) {
          l = from;
          lg = true;
          li = fromIncl;
        } else if (c == 0) {
          li = li && fromIncl;
        }
      } else {
        int c = ug ? compareKeys(from, u) : -1;
        if (c < 0) {
          u = from;
          ug = true;
          ui = fromIncl;
        } else if (c == 0) {
          ui = ui && fromIncl;
        }
      }
    }
    int lt = lg ? Codec.tag(l) : Codec.NULL;
    int ut = ug ? Codec.tag(u) : Codec.NULL;
    long lb = lg ? Codec.bits(l, lt) : 0, ub = ug ? Codec.bits(u, ut) : 0;
    Direct.View v;
    if (weak && !rev && (!lg || lt == Codec.INT && SortedReads.fits(lb)) && (!ug || ut == Codec.INT && SortedReads.fits(ub))
        && (v = SortedReads.view(handle)) != null) {
      Object[] flat = SortedReads.range(v, handle, lg, lb, li, ug, ub, ui, limit, values);  // without JNI and the lock
      if (flat != null) return flat;
    }
    return SortedNative.rangeFlat(handle, lt, lb, lg ? Codec.obj(l, lt) : null, lg, li, ut, ub,
        ug ? Codec.obj(u, ut) : null, ug, ui, rev, limit, values);
  }

  private static Map.Entry<Object, Object> entry(Object[] kv) {
    return kv == null || kv.length == 0 ? null : new AbstractMap.SimpleImmutableEntry<>(kv[0], kv[1]);
  }

  private static Object keyOrNull(Map.Entry<Object, Object> e) {
    return e == null ? null : e.getKey();
  }

  private static Object keyOrThrow(Map.Entry<Object, Object> e) {
    if (e == null) throw new NoSuchElementException("the shared sorted map (view) is empty");
    return e.getKey();
  }

  // ---- Map ---------------------------------------------------------------------------------

  @Override
  public int size() {
    if (whole()) return SortedNative.size(handle);
    int n = 0;
    for (Iterator<Object> it = new ScanIterator<>(false, Mode.KEYS); it.hasNext(); it.next()) n++;
    return n;
  }

  @Override
  public boolean isEmpty() {
    return whole() ? size() == 0 : firstEntry() == null;
  }

  @Override
  public boolean containsKey(Object key) {
    requireKey(key);
    if (Codec.hasNoUtf8(key) || !inRange(key)) return false;  // no shared map holds such a string
    int t = Codec.tag(key);
    long b = Codec.bits(key, t);
    Direct.View v;
    if (t == Codec.INT && SortedReads.fits(b) && (v = SortedReads.view(handle)) != null) {
      int c = SortedReads.contains(v, handle, b);
      if (c >= 0) return c == 1;
    }
    return SortedNative.contains(handle, t, b, Codec.obj(key, t));
  }

  @Override
  public Object get(Object key) {
    requireKey(key);
    if (Codec.hasNoUtf8(key) || !inRange(key)) return null;
    int t = Codec.tag(key);
    long b = Codec.bits(key, t);
    Direct.View v;
    if (t == Codec.INT && SortedReads.fits(b) && (v = SortedReads.view(handle)) != null) {
      Object x = SortedReads.get(v, handle, b);  // without JNI and the map's lock
      if (x != Proxies.MISS) return x;
    }
    return SortedNative.get(handle, t, b, Codec.obj(key, t));
  }

  @Override
  public Object put(Object key, Object value) {
    requireKey(key);
    if (!inRange(key)) throw new IllegalArgumentException("key out of the range of this view of a shared sorted map");
    int kt = Codec.tag(key);
    int vt = Codec.tag(value);
    return SortedNative.put(handle, kt, Codec.bits(key, kt), Codec.obj(key, kt), vt, Codec.bits(value, vt),
        Codec.obj(value, vt));
  }

  /** Removes the key; the one-element array of its value, or null when it was absent. */
  private Object[] removeKey(Object key) {
    requireKey(key);
    if (Codec.hasNoUtf8(key) || !inRange(key)) return null;
    int t = Codec.tag(key);
    return SortedNative.remove(handle, t, Codec.bits(key, t), Codec.obj(key, t));
  }

  @Override
  public Object remove(Object key) {
    Object[] r = removeKey(key);
    return r == null ? null : r[0];
  }

  @Override
  public void clear() {
    if (whole()) {
      SortedNative.clear(handle);
      return;
    }
    for (Iterator<Object> it = new ScanIterator<>(false, Mode.KEYS); it.hasNext(); ) {
      it.next();
      it.remove();
    }
  }

  @Override
  public Set<Map.Entry<Object, Object>> entrySet() {
    EntrySet es = entries;
    if (es == null) entries = es = new EntrySet();
    return es;
  }

  @Override
  public Set<Object> keySet() {
    return navigableKeySet();
  }

  // ---- SortedMap / NavigableMap -------------------------------------------------------------

  @Override
  public Comparator<? super Object> comparator() {
    return descending ? (a, b) -> compareKeys(b, a) : SharedSortedMap::compareKeys;
  }

  private Map.Entry<Object, Object> rawUp(Object key, boolean incl) {
    return entry(scan(requireKey(key), true, incl, false, 1, true));
  }

  private Map.Entry<Object, Object> rawDown(Object key, boolean incl) {
    return entry(scan(requireKey(key), true, incl, true, 1, true));
  }

  @Override
  public Map.Entry<Object, Object> firstEntry() {
    return entry(scan(null, false, true, descending, 1, true));
  }

  @Override
  public Map.Entry<Object, Object> lastEntry() {
    return entry(scan(null, false, true, !descending, 1, true));
  }

  @Override
  public Map.Entry<Object, Object> ceilingEntry(Object key) {
    return descending ? rawDown(key, true) : rawUp(key, true);
  }

  @Override
  public Map.Entry<Object, Object> higherEntry(Object key) {
    return descending ? rawDown(key, false) : rawUp(key, false);
  }

  @Override
  public Map.Entry<Object, Object> floorEntry(Object key) {
    return descending ? rawUp(key, true) : rawDown(key, true);
  }

  @Override
  public Map.Entry<Object, Object> lowerEntry(Object key) {
    return descending ? rawUp(key, false) : rawDown(key, false);
  }

  @Override
  public Object firstKey() {
    return keyOrThrow(firstEntry());
  }

  @Override
  public Object lastKey() {
    return keyOrThrow(lastEntry());
  }

  @Override
  public Object ceilingKey(Object key) {
    return keyOrNull(ceilingEntry(key));
  }

  @Override
  public Object higherKey(Object key) {
    return keyOrNull(higherEntry(key));
  }

  @Override
  public Object floorKey(Object key) {
    return keyOrNull(floorEntry(key));
  }

  @Override
  public Object lowerKey(Object key) {
    return keyOrNull(lowerEntry(key));
  }

  /** Removes the first (last) entry of this view: one operation on the whole map, else find and remove. */
  private Map.Entry<Object, Object> poll(boolean first) {
    if (whole()) return entry(SortedNative.popAt(handle, first != descending ? 0 : -1));
    for (;;) {
      Map.Entry<Object, Object> e = first ? firstEntry() : lastEntry();
      if (e == null) return null;
      Object[] r = removeKey(e.getKey());
      if (r != null) return new AbstractMap.SimpleImmutableEntry<>(e.getKey(), r[0]);
    }
  }

  @Override
  public Map.Entry<Object, Object> pollFirstEntry() {
    return poll(true);
  }

  @Override
  public Map.Entry<Object, Object> pollLastEntry() {
    return poll(false);
  }

  @Override
  public NavigableMap<Object, Object> descendingMap() {
    return new SharedSortedMap(handle, lo, loGiven, loIncl, hi, hiGiven, hiIncl, !descending);
  }

  @Override
  public NavigableSet<Object> navigableKeySet() {
    KeySet ks = keys;
    if (ks == null) keys = ks = new KeySet();
    return ks;
  }

  @Override
  public NavigableSet<Object> descendingKeySet() {
    return descendingMap().navigableKeySet();
  }

  /** Throws unless {@code k} (a new bound, inclusive or not) lies within this view's range. */
  private void checkBound(Object k, boolean incl) {
    requireKey(k);
    if (loGiven) {
      int c = compareKeys(k, lo);
      if (c < 0 || (c == 0 && !loIncl && incl)) throw new IllegalArgumentException("key out of range: " + k);
    }
    if (hiGiven) {
      int c = compareKeys(k, hi);
      if (c > 0 || (c == 0 && !hiIncl && incl)) throw new IllegalArgumentException("key out of range: " + k);
    }
    if (!loGiven && !hiGiven) compareKeys(k, k);  // a key at all (TypeMismatchException otherwise)
  }

  /** A view with new bounds, given in ascending key order (null flag: keep this view's). */
  private SharedSortedMap bounded(Object l, boolean lg, boolean li, Object u, boolean ug, boolean ui) {
    if (lg) checkBound(l, li);
    if (ug) checkBound(u, ui);
    if (lg && ug && compareKeys(l, u) > 0) throw new IllegalArgumentException("fromKey > toKey");
    return new SharedSortedMap(handle, lg ? l : lo, lg || loGiven, lg ? li : loIncl, ug ? u : hi, ug || hiGiven,
        ug ? ui : hiIncl, descending);
  }

  @Override
  public NavigableMap<Object, Object> subMap(Object fromKey, boolean fromInclusive, Object toKey, boolean toInclusive) {
    requireKey(fromKey);
    requireKey(toKey);
    if (descending) {
      if (compareKeys(fromKey, toKey) < 0) throw new IllegalArgumentException("fromKey > toKey");
      return bounded(toKey, true, toInclusive, fromKey, true, fromInclusive);
    }
    return bounded(fromKey, true, fromInclusive, toKey, true, toInclusive);
  }

  @Override
  public NavigableMap<Object, Object> headMap(Object toKey, boolean inclusive) {
    return descending ? bounded(toKey, true, inclusive, null, false, true) : bounded(null, false, true, toKey, true, inclusive);
  }

  @Override
  public NavigableMap<Object, Object> tailMap(Object fromKey, boolean inclusive) {
    return descending ? bounded(null, false, true, fromKey, true, inclusive) : bounded(fromKey, true, inclusive, null, false, true);
  }

  @Override
  public SortedMap<Object, Object> subMap(Object fromKey, Object toKey) {
    return subMap(fromKey, true, toKey, false);
  }

  @Override
  public SortedMap<Object, Object> headMap(Object toKey) {
    return headMap(toKey, false);
  }

  @Override
  public SortedMap<Object, Object> tailMap(Object fromKey) {
    return tailMap(fromKey, true);
  }

  // ---- iteration ---------------------------------------------------------------------------

  private enum Mode { KEYS, VALUES, ENTRIES }

  /**
   * Iterates this view in its order (or the reverse), a batch of {@link #BATCH} entries per locked
   * read, each batch after the last key of the previous one.
   */
  private final class ScanIterator<T> implements Iterator<T> {
    private final boolean rev;
    private final Mode mode;
    // The current batch, flat (decoded one element at a time by next()).
    private byte[] tags = new byte[0];
    private long[] bits;
    private Object[] objs;
    private int pos;
    private boolean done;
    private Object cursor;
    private boolean cursorGiven;
    // The last key returned, as its batch held it (decoded by remove(): values() boxes no key).
    private byte lastTag;
    private long lastBits;
    private Object lastObj;
    private boolean canRemove;

    ScanIterator(boolean reverse, Mode mode) {
      this.rev = reverse != descending;
      this.mode = mode;
    }

    private int stride() {
      return mode == Mode.KEYS ? 1 : 2;
    }

    private Object at(int i) {
      return SortedNative.decode(tags[i], bits[i], objs[i]);
    }

    @Override
    public boolean hasNext() {
      if (pos < tags.length) return true;
      if (done) return false;
      Object[] flat = scanFlat(cursor, cursorGiven, false, rev, BATCH, mode != Mode.KEYS, true);
      tags = (byte[]) flat[0];
      bits = (long[]) flat[1];
      objs = (Object[]) flat[2];
      pos = 0;
      if (tags.length < BATCH * stride()) done = true;
      if (tags.length == 0) return false;
      cursor = at(tags.length - stride());
      cursorGiven = true;
      return true;
    }

    @Override
    @SuppressWarnings("unchecked")
    public T next() {
      if (!hasNext()) throw new NoSuchElementException();
      int i = pos;
      pos += stride();
      lastTag = tags[i];
      lastBits = bits[i];
      lastObj = objs[i];
      canRemove = true;
      switch (mode) {
        case KEYS: return (T) at(i);
        case VALUES: return (T) at(i + 1);
        default: return (T) new LiveEntry(SharedSortedMap.this, at(i), at(i + 1));
      }
    }

    @Override
    public void remove() {
      if (!canRemove) throw new IllegalStateException("next() has not been called, or remove() was called already");
      canRemove = false;
      SharedSortedMap.this.remove(SortedNative.decode(lastTag, lastBits, lastObj));
    }
  }

  @Override
  public java.util.Collection<Object> values() {
    return new java.util.AbstractCollection<Object>() {
      @Override
      public Iterator<Object> iterator() {
        return new ScanIterator<>(false, Mode.VALUES);
      }

      @Override
      public int size() {
        return SharedSortedMap.this.size();
      }

      @Override
      public void clear() {
        SharedSortedMap.this.clear();
      }
    };
  }

  private final class EntrySet extends AbstractSet<Map.Entry<Object, Object>> {
    @Override
    public Iterator<Map.Entry<Object, Object>> iterator() {
      return new ScanIterator<>(false, Mode.ENTRIES);
    }

    @Override
    public int size() {
      return SharedSortedMap.this.size();
    }

    @Override
    public boolean contains(Object o) {
      if (!(o instanceof Map.Entry)) return false;
      Map.Entry<?, ?> e = (Map.Entry<?, ?>) o;
      Object k = e.getKey();
      if (k == null || Codec.tagOrNone(k) == Codec.NONE || !containsKey(k)) return false;
      return Codec.elementEquals(e.getValue(), get(k));
    }

    @Override
    public boolean remove(Object o) {
      if (!contains(o)) return false;
      SharedSortedMap.this.remove(((Map.Entry<?, ?>) o).getKey());
      return true;
    }

    @Override
    public void clear() {
      SharedSortedMap.this.clear();
    }
  }

  /** The keys of this view as a live {@link NavigableSet}. */
  private final class KeySet extends AbstractSet<Object> implements NavigableSet<Object> {
    @Override
    public Iterator<Object> iterator() {
      return new ScanIterator<>(false, Mode.KEYS);
    }

    @Override
    public Iterator<Object> descendingIterator() {
      return new ScanIterator<>(true, Mode.KEYS);
    }

    @Override
    public int size() {
      return SharedSortedMap.this.size();
    }

    @Override
    public boolean isEmpty() {
      return SharedSortedMap.this.isEmpty();
    }

    @Override
    public boolean contains(Object o) {
      return o != null && Codec.tagOrNone(o) != Codec.NONE && containsKey(o);
    }

    @Override
    public boolean remove(Object o) {
      return o != null && Codec.tagOrNone(o) != Codec.NONE && removeKey(o) != null;
    }

    @Override
    public void clear() {
      SharedSortedMap.this.clear();
    }

    @Override
    public Comparator<? super Object> comparator() {
      return SharedSortedMap.this.comparator();
    }

    @Override
    public Object first() {
      return firstKey();
    }

    @Override
    public Object last() {
      return lastKey();
    }

    @Override
    public Object lower(Object e) {
      return lowerKey(e);
    }

    @Override
    public Object floor(Object e) {
      return floorKey(e);
    }

    @Override
    public Object ceiling(Object e) {
      return ceilingKey(e);
    }

    @Override
    public Object higher(Object e) {
      return higherKey(e);
    }

    @Override
    public Object pollFirst() {
      return keyOrNull(pollFirstEntry());
    }

    @Override
    public Object pollLast() {
      return keyOrNull(pollLastEntry());
    }

    @Override
    public NavigableSet<Object> descendingSet() {
      return descendingMap().navigableKeySet();
    }

    @Override
    public NavigableSet<Object> subSet(Object from, boolean fromInclusive, Object to, boolean toInclusive) {
      return subMap(from, fromInclusive, to, toInclusive).navigableKeySet();
    }

    @Override
    public NavigableSet<Object> headSet(Object to, boolean inclusive) {
      return headMap(to, inclusive).navigableKeySet();
    }

    @Override
    public NavigableSet<Object> tailSet(Object from, boolean inclusive) {
      return tailMap(from, inclusive).navigableKeySet();
    }

    @Override
    public SortedSet<Object> subSet(Object from, Object to) {
      return subSet(from, true, to, false);
    }

    @Override
    public SortedSet<Object> headSet(Object to) {
      return headSet(to, false);
    }

    @Override
    public SortedSet<Object> tailSet(Object from) {
      return tailSet(from, true);
    }
  }

  /** The proxy of the whole map (not a view): what a store of this object stores. */
  boolean isProxy() {
    return whole() && !descending;
  }
}
