package org.colors;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;

/**
 * A shared map: a proxy implementing {@link Map} over a map in the shared heap.
 *
 * <p>Keys and values are stored and read back as in {@link SharedList}. Keys are hashed and
 * compared language-neutrally, as every process sees them: {@code 1}, {@code 1L} and {@code 1.0}
 * are the same key, {@code true} and {@code 1} are not; shared containers and objects used as keys
 * are compared by identity; {@code null} is a valid key and a valid value. A private key that
 * cannot be stored (e.g. an {@code ArrayList}) is simply never found; storing one throws
 * {@link TypeMismatchException}.
 *
 * <p>Contract: as {@link Map}, with live views: {@link #entrySet()}, {@link #keySet()} and
 * {@link #values()} read and write through to the shared map, their iterators support
 * {@code remove}, and {@link Map.Entry#setValue} writes through. Iterators walk a snapshot taken
 * when they are created (hash-table order, not insertion order) and never throw
 * {@link java.util.ConcurrentModificationException}. {@code equals}/{@code hashCode} follow
 * {@link Map}: a shared map equals a {@code HashMap} with the same mappings.
 */
public final class SharedMap extends AbstractMap<Object, Object> {
  final Handle handle;
  private EntrySet entries;
  private KeySet keys;

  SharedMap(Handle handle) {
    this.handle = handle;
  }

  @Override
  public int size() {
    return Native.size(handle);
  }

  @Override
  public boolean isEmpty() {
    return size() == 0;
  }

  @Override
  public boolean containsKey(Object key) {
    int t = Codec.probeTag(key);
    if (t == Codec.NONE) return false;
    return Native.mapContains(handle, t, Codec.bits(key, t), Codec.obj(key, t));
  }

  @Override
  public Object get(Object key) {
    int t = Codec.probeTag(key);
    if (t == Codec.NONE) return null;
    // Flat: a scalar without a boxing upcall, a shared object's proxy made (or found) in Java.
    long[] b = new long[2];
    Object[] o = new Object[1];
    Direct.View v = SortedNative.handOverView(handle);
    return SortedNative.flat(v, Native.mapGetFlat(handle, t, Codec.bits(key, t), Codec.obj(key, t), b, o, v != null), b, o);
  }

  @Override
  public Object put(Object key, Object value) {
    int kt = Codec.tag(key);
    int vt = Codec.tag(value);
    return Native.mapPut(handle, kt, Codec.bits(key, kt), Codec.obj(key, kt), vt, Codec.bits(value, vt),
        Codec.obj(value, vt));
  }

  @Override
  public Object remove(Object key) {
    int t = Codec.probeTag(key);
    if (t == Codec.NONE) return null;
    return Native.mapRemove(handle, t, Codec.bits(key, t), Codec.obj(key, t));
  }

  @Override
  public void putAll(Map<?, ?> m) {
    Object[] pairs = new Object[m.size() * 2];
    int n = 0;
    for (Map.Entry<?, ?> e : m.entrySet()) {
      if (n + 2 > pairs.length) pairs = java.util.Arrays.copyOf(pairs, n * 2 + 2);
      Codec.tag(e.getKey());  // all storable, or nothing is put
      Codec.tag(e.getValue());
      pairs[n++] = e.getKey();
      pairs[n++] = e.getValue();
    }
    for (int i = 0; i < n; i += 2) put(pairs[i], pairs[i + 1]);
  }

  @Override
  public boolean containsValue(Object value) {
    Object[] items = Native.mapItems(handle);
    for (int i = 1; i < items.length; i += 2) {
      if (Codec.elementEquals(value, items[i])) return true;
    }
    return false;
  }

  @Override
  public void clear() {
    Native.clear(handle);
  }

  @Override
  public Set<Map.Entry<Object, Object>> entrySet() {
    EntrySet es = entries;
    if (es == null) entries = es = new EntrySet();
    return es;
  }

  @Override
  public Set<Object> keySet() {
    KeySet ks = keys;
    if (ks == null) keys = ks = new KeySet();
    return ks;
  }

  /** Iterates a snapshot of the keys and values; remove() removes the last key from the map. */
  private abstract class SnapshotIterator<T> implements Iterator<T> {
    private final Object[] items = Native.mapItems(handle);
    private int next;
    private boolean canRemove;

    @Override
    public boolean hasNext() {
      return next < items.length;
    }

    @Override
    public T next() {
      if (next >= items.length) throw new NoSuchElementException();
      Object k = items[next];
      Object v = items[next + 1];
      next += 2;
      canRemove = true;
      return make(k, v);
    }

    abstract T make(Object key, Object value);

    @Override
    public void remove() {
      if (!canRemove) throw new IllegalStateException("next() was not called, or remove() was called already");
      canRemove = false;
      SharedMap.this.remove(items[next - 2]);
    }
  }

  private final class EntrySet extends AbstractSet<Map.Entry<Object, Object>> {
    @Override
    public Iterator<Map.Entry<Object, Object>> iterator() {
      return new SnapshotIterator<Map.Entry<Object, Object>>() {
        @Override
        Map.Entry<Object, Object> make(Object key, Object value) {
          return new LiveEntry(SharedMap.this, key, value);
        }
      };
    }

    @Override
    public int size() {
      return SharedMap.this.size();
    }

    @Override
    public boolean contains(Object o) {
      if (!(o instanceof Map.Entry)) return false;
      Map.Entry<?, ?> e = (Map.Entry<?, ?>) o;
      Object k = e.getKey();
      if (!containsKey(k)) return false;
      return java.util.Objects.equals(get(k), e.getValue());
    }

    @Override
    public boolean remove(Object o) {
      if (!contains(o)) return false;
      SharedMap.this.remove(((Map.Entry<?, ?>) o).getKey());
      return true;
    }

    @Override
    public void clear() {
      SharedMap.this.clear();
    }
  }

  private final class KeySet extends AbstractSet<Object> {
    @Override
    public Iterator<Object> iterator() {
      return new SnapshotIterator<Object>() {
        @Override
        Object make(Object key, Object value) {
          return key;
        }
      };
    }

    @Override
    public int size() {
      return SharedMap.this.size();
    }

    @Override
    public boolean contains(Object o) {
      return containsKey(o);
    }

    @Override
    public boolean remove(Object o) {
      if (!containsKey(o)) return false;
      SharedMap.this.remove(o);
      return true;
    }

    @Override
    public void clear() {
      SharedMap.this.clear();
    }

    @Override
    public Object[] toArray() {
      Object[] items = Native.mapItems(handle);
      Object[] r = new Object[items.length / 2];
      for (int i = 0; i < r.length; i++) r[i] = items[2 * i];
      return r;
    }
  }
}
