package org.colors;

import java.lang.ref.Reference;
import java.lang.reflect.Array;
import java.util.AbstractList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.ConcurrentModificationException;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.RandomAccess;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.function.UnaryOperator;

/**
 * A shared list: a proxy implementing {@link List} (and {@link RandomAccess}) over a list in the
 * shared heap, which other processes (Java, Python, C++) see and change at the same time.
 *
 * <p>Elements read back as {@code null}, {@code Long} (every integer), {@code Double} (every
 * float), {@code Boolean}, {@code String}, {@code byte[]} (a private copy of a binary) or proxies
 * ({@link SharedList}, {@link SharedMap}, {@link SharedSet}, {@link SharedObject}). Use the typed
 * getters ({@link #getInt(int)}, ...) or {@link #toArray(Class)} to read them as narrower types:
 * those check every value and throw {@link SharedOverflowException} rather than truncate.
 * Storing a private scalar, String or byte[] copies it in; storing a private collection throws
 * {@link TypeMismatchException} (call {@link SharedMemory#copyToSharedMemory(Object)}).
 *
 * <p>Contract: as {@link List} ({@code equals}/{@code hashCode} over the elements, so a shared list
 * equals an {@code ArrayList} with the same elements; {@link #iterator()} reads a snapshot, list
 * iterators are fail-fast for changes made through this proxy; index errors are
 * {@link IndexOutOfBoundsException}). {@link #contains},
 * {@link #indexOf} and {@link #remove(Object)} compare scalars language-neutrally ({@code 1},
 * {@code 1L} and {@code 1.0} are equal, as in the shared heap); other probes with
 * {@code equals}. Each method that is one operation on the shared list (get, set, add, add at an
 * index, remove at an index, remove(Object), size, clear, toArray) is atomic
 * across threads and processes, as {@code Collections.synchronizedList} gives within one JVM;
 * iteration reads a snapshot ({@link #iterator()}). Compound sequences (e.g. {@code if
 * (!l.isEmpty()) l.remove(0)}) still need the list's lock ({@link SharedMemory#lock(Object)}).
 *
 * <p>Instances are created by {@link SharedMemory} only; the same shared list always gives the
 * same proxy while it is reachable.
 */
public final class SharedList extends AbstractList<Object> implements RandomAccess {
  final Handle handle;
  /** The read cache's snapshot of this list (ReadCache), or null. */
  ReadCache.Snapshot snapshot;
  /** This list has a place in the read cache's ring (ReadCache). */
  volatile boolean inReadCache;

  SharedList(Handle handle) {
    this.handle = handle;
  }

  @Override
  public Object get(int index) {
    Object[] items = ReadCache.cached(snapshot);
    Reference.reachabilityFence(this);  // its root keeps the list whose version was read
    if (items != null && index >= 0 && index < items.length) return items[index];
    Direct.View v = fastView();
    if (v != null) {
      Object x = ListReads.get(v, handle, index);
      if (x != Proxies.MISS) return x;
    }
    return Native.listGet(handle, index);
  }

  @Override
  public int size() {
    Object[] items = ReadCache.cached(snapshot);
    Reference.reachabilityFence(this);  // its root keeps the list whose version was read
    if (items != null) return items.length;
    Direct.View v = fastView();
    if (v != null) {
      int n = ListReads.size(v, handle);
      if (n >= 0) return n;
    }
    return Native.size(handle);
  }

  /**
   * The view for reading this list without JNI ({@link ListReads}), or null: no Unsafe, inside a
   * transaction, a handle of another attachment, or a released (transient) root.
   */
  private Direct.View fastView() {
    if (Direct.UNSAFE == null || Transaction.inThisThread() || !handle.usableHere()) return null;
    return Direct.viewFor(handle);
  }

  @Override
  public Object set(int index, Object element) {
    int t = Codec.tag(element);
    return Native.listSet(handle, index, t, Codec.bits(element, t), Codec.obj(element, t));
  }

  @Override
  public boolean add(Object element) {
    int t = Codec.tag(element);
    Native.listAdd(handle, t, Codec.bits(element, t), Codec.obj(element, t));
    modCount++;
    return true;
  }

  @Override
  public void add(int index, Object element) {
    int t = Codec.tag(element);
    Native.listInsert(handle, index, t, Codec.bits(element, t), Codec.obj(element, t));
    modCount++;
  }

  @Override
  public Object remove(int index) {
    Object old = Native.listRemove(handle, index);
    modCount++;
    return old;
  }

  @Override
  public void clear() {
    Native.clear(handle);
    modCount++;
  }

  /** Appends every element in one operation: all of them, or (one cannot be stored) none. */
  @Override
  public boolean addAll(Collection<?> c) {
    return addAllAt(-1, c.toArray());
  }

  /** Inserts every element at {@code index} in one operation: all of them, or (one cannot be stored) none. */
  @Override
  public boolean addAll(int index, Collection<?> c) {
    int n = size();
    if (index < 0 || index > n) throw new IndexOutOfBoundsException("Index " + index + " out of bounds for length " + n);
    return addAllAt(index, c.toArray());
  }

  // -1: at the end. Every value is encoded, and checked by the native call (a lone surrogate, a
  // proxy of a closed attachment), before the list changes.
  private boolean addAllAt(int index, Object[] a) {
    if (a.length == 0) return false;
    Encoded e = new Encoded(a);
    Native.listAddAll(handle, index, e.tags, e.bits, e.objs);
    modCount++;
    return true;
  }

  /** Values in Codec's encoding, for the natives that take many at once. */
  private static final class Encoded {
    final int[] tags;
    final long[] bits;
    final Object[] objs;

    Encoded(Object[] values) {
      int n = values.length;
      tags = new int[n];
      bits = new long[n];
      objs = new Object[n];
      for (int i = 0; i < n; i++) {
        tags[i] = Codec.tag(values[i]);
        bits[i] = Codec.bits(values[i], tags[i]);
        objs[i] = Codec.obj(values[i], tags[i]);
      }
    }
  }

  @Override
  public int indexOf(Object o) {
    if (Codec.isScalar(o)) {
      int t = Codec.probeTag(o);
      if (t == Codec.NONE) return -1;  // a string no shared list can hold
      return Native.listIndexOf(handle, t, Codec.bits(o, t), Codec.obj(o, t), false);
    }
    return super.indexOf(o);
  }

  @Override
  public int lastIndexOf(Object o) {
    if (Codec.isScalar(o)) {
      int t = Codec.probeTag(o);
      if (t == Codec.NONE) return -1;  // a string no shared list can hold
      return Native.listIndexOf(handle, t, Codec.bits(o, t), Codec.obj(o, t), true);
    }
    return super.lastIndexOf(o);
  }

  @Override
  public boolean contains(Object o) {
    return indexOf(o) >= 0;
  }

  /**
   * Removes the first element equal to {@code o}: found in a snapshot, then removed only if its
   * position still holds an equal element (one atomic operation); retried if the list changed
   * meanwhile.
   */
  @Override
  public boolean remove(Object o) {
    for (;;) {
      int i;
      Object found;
      if (Codec.isScalar(o)) {
        found = o;
        i = indexOf(o);
      } else {
        Object[] items = toArray();
        i = -1;
        found = null;
        for (int k = 0; k < items.length; k++) {
          if (java.util.Objects.equals(o, items[k])) {
            i = k;
            found = items[k];
            break;
          }
        }
      }
      if (i < 0) return false;
      if (removeIfStill(i, found)) return true;
    }
  }

  private boolean removeIfStill(int i, Object element) {
    int t = Codec.tag(element);
    if (!Native.listRemoveIf(handle, i, t, Codec.bits(element, t), Codec.obj(element, t))) return false;
    modCount++;
    return true;
  }

  /**
   * Iterates a snapshot: the elements at the instant the iterator was made, whatever other
   * processes do meanwhile. Fail-fast as ArrayList's for changes made through this proxy other than
   * the iterator's own ({@link ConcurrentModificationException} from {@code next()}).
   * {@link Iterator#remove()} removes the element just returned if the list still holds it at its
   * position (adjusted for this iterator's own removals), else throws
   * {@link ConcurrentModificationException}.
   */
  @Override
  public Iterator<Object> iterator() {
    return new Iterator<Object>() {
      private final Object[] items = itemsForReading();
      private int next;
      private int removed;  // by this iterator: later positions moved down by as many
      private boolean canRemove;
      private int expectedModCount = modCount;

      @Override
      public boolean hasNext() {
        return next < items.length;
      }

      @Override
      public Object next() {
        if (modCount != expectedModCount) throw new ConcurrentModificationException();
        if (next >= items.length) throw new NoSuchElementException();
        canRemove = true;
        return items[next++];
      }

      @Override
      public void remove() {
        if (!canRemove) throw new IllegalStateException("next() was not called, or remove() was called already");
        canRemove = false;
        int at = next - 1 - removed;
        if (!removeIfStill(at, items[next - 1]))
          throw new ConcurrentModificationException(
              "the shared list changed since this iterator's snapshot: position " + at + " no longer holds the element iterated");
        removed++;
        expectedModCount = modCount;
      }
    };
  }

  /** Splits a snapshot, as {@link #iterator()}. */
  @Override
  public Spliterator<Object> spliterator() {
    return Spliterators.spliterator(itemsForReading(), Spliterator.ORDERED);
  }

  /**
   * The elements at one instant, for reading only (never handed to user code: the array may be
   * the read cache's, shared by every reader): the cached snapshot while the list has not changed
   * since it was read, else read now (and kept, {@link ReadCache#items}).
   */
  private Object[] itemsForReading() {
    Object[] items = ReadCache.cached(snapshot);
    Reference.reachabilityFence(this);  // its root keeps the list whose version was read
    if (items != null) return items;
    Direct.View v = fastView();
    if (v != null && (items = ReadCache.items(v, this)) != null) return items;
    return toArray();
  }

  /**
   * A snapshot of the elements at one instant: read from Java through the list's seqlock, or (inside
   * a transaction, or while the list keeps changing) by libshared with the proxies made in Java
   * ({@link ListReads}); lists holding strings, boxed numbers or binaries are converted by JNI.
   */
  @Override
  public Object[] toArray() {
    Direct.View v = fastView();
    Object[] items = null;
    if (v != null) items = ListReads.items(v, handle);
    if (items == null && Direct.UNSAFE != null && handle.usableHere() && (v = Direct.viewFor(handle)) != null) {
      items = ListReads.itemsRooted(v, handle);  // inside a transaction, or a list that kept changing
    }
    if (items != null && items != ListReads.NOT_DECODED) return items;
    return Native.listItems(handle);
  }

  @Override
  @SuppressWarnings("unchecked")
  public <T> T[] toArray(T[] a) {
    Object[] items = toArray();
    int n = items.length;
    T[] r = a.length >= n ? a : (T[]) Array.newInstance(a.getClass().getComponentType(), n);
    System.arraycopy(items, 0, r, 0, n);  // ArrayStoreException for an element of another type
    if (r.length > n) r[n] = null;
    return r;
  }

  /**
   * The elements as an array of {@code componentType}, each converted with the checks of the
   * typed getters (a checked read barrier): {@code toArray(Integer.class)} throws
   * {@link SharedOverflowException} for an element beyond the int range and
   * {@link TypeMismatchException} for one that is not an integer.
   *
   * @param <T> the element type
   * @param componentType the class of the elements (boxed types for numbers)
   * @return a new private array
   */
  @SuppressWarnings("unchecked")
  public <T> T[] toArray(Class<T> componentType) {
    if (componentType.isPrimitive()) {
      throw new IllegalArgumentException("toArray(" + componentType + "): the component type must be a class (boxed types"
          + " for numbers); toLongArray() and toDoubleArray() give primitive arrays");
    }
    Object[] items = toArray();
    T[] r = (T[]) Array.newInstance(componentType, items.length);
    for (int i = 0; i < items.length; i++) r[i] = (T) Codec.convert(items[i], componentType, where(i));
    return r;
  }

  /**
   * The elements as a {@code long[]}.
   *
   * @return a new private array
   * @throws TypeMismatchException if an element is not an integer
   */
  public long[] toLongArray() {
    return Native.listLongs(handle);  // one native call, no boxing
  }

  /**
   * The elements as an {@code int[]}.
   *
   * @return a new private array
   * @throws SharedOverflowException if an element does not fit an int
   * @throws TypeMismatchException if an element is not an integer
   */
  public int[] toIntArray() {
    Object[] items = toArray();
    int[] r = new int[items.length];
    for (int i = 0; i < r.length; i++) r[i] = Codec.toInt(items[i], where(i));
    return r;
  }

  /**
   * The elements as a {@code double[]} (integers are converted when a double represents them
   * exactly).
   *
   * @return a new private array
   * @throws SharedOverflowException if an integer element has no exact double
   * @throws TypeMismatchException if an element is not a number
   */
  public double[] toDoubleArray() {
    return Native.listDoubles(handle);  // one native call, no boxing
  }

  /**
   * The elements as a {@code boolean[]}, read in one native call (the list flattened, no object per
   * element).
   *
   * @return a new private array
   * @throws TypeMismatchException if an element is not a boolean
   */
  public boolean[] toBooleanArray() {
    Object[] f = flatScalars();
    if (f != null) {
      byte[] tags = (byte[]) f[0];
      long[] vals = (long[]) f[1];
      boolean[] r = new boolean[(int) vals[0]];
      int i = 0;
      for (; i < r.length && tags[i + 1] == Codec.BOOL; i++) r[i] = vals[i + 1] != 0;
      if (i == r.length) return r;
    }
    Object[] items = toArray();  // the generic path raises the typed read's exception
    boolean[] r = new boolean[items.length];
    for (int i = 0; i < r.length; i++) r[i] = (Boolean) Codec.convert(items[i], boolean.class, where(i));
    return r;
  }

  /**
   * The elements as a {@code String[]} (null elements stay null), read in one native call: the
   * characters of every string come across JNI as one UTF-8 byte array.
   *
   * @return a new private array
   * @throws TypeMismatchException if an element is neither a string nor null
   */
  public String[] toStringArray() {
    Object[] f = flatScalars();
    if (f != null) {
      byte[] tags = (byte[]) f[0];
      long[] vals = (long[]) f[1];
      byte[] blob = (byte[]) f[3];
      String[] r = new String[(int) vals[0]];
      int i = 0;
      for (; i < r.length; i++) {
        byte t = tags[i + 1];
        long v = vals[i + 1];
        if (t == Codec.STRING) {
          r[i] = new String(blob, (int) (v >>> 32), (int) v, java.nio.charset.StandardCharsets.UTF_8);
        } else if (t != Codec.NULL) {
          break;
        }
      }
      if (i == r.length) return r;
    }
    return toArray(String.class);  // the generic path raises the typed read's exception
  }

  /**
   * This list flattened by one native call ({@link Bulk#flatten}): {tags, vals, starts, blob}, the
   * list's header first (its length in vals[0]) and its elements after it; null when the list holds
   * maps or sets (then made proxies, which the caller would not use).
   */
  private Object[] flatScalars() {
    Object[] f = Bulk.flatten(handle);
    return f[4] == null ? f : null;
  }

  private static String where(int i) {
    return "element " + i;
  }

  /**
   * The element at {@code index} as a long.
   *
   * @param index the index
   * @return the value
   * @throws TypeMismatchException if it is not an integer
   */
  public long getLong(int index) {
    return Codec.toLong(get(index), where(index));
  }

  /**
   * The element at {@code index} as an int.
   *
   * @param index the index
   * @return the value
   * @throws SharedOverflowException if it does not fit an int
   * @throws TypeMismatchException if it is not an integer
   */
  public int getInt(int index) {
    return Codec.toInt(get(index), where(index));
  }

  /**
   * The element at {@code index} as a short.
   *
   * @param index the index
   * @return the value
   * @throws SharedOverflowException if it does not fit a short
   * @throws TypeMismatchException if it is not an integer
   */
  public short getShort(int index) {
    return Codec.toShort(get(index), where(index));
  }

  /**
   * The element at {@code index} as a byte.
   *
   * @param index the index
   * @return the value
   * @throws SharedOverflowException if it does not fit a byte
   * @throws TypeMismatchException if it is not an integer
   */
  public byte getByte(int index) {
    return Codec.toByte(get(index), where(index));
  }

  /**
   * The element at {@code index} as a char (an integer in 0..65535).
   *
   * @param index the index
   * @return the value
   * @throws SharedOverflowException if it does not fit a char
   * @throws TypeMismatchException if it is not an integer
   */
  public char getChar(int index) {
    return Codec.toChar(get(index), where(index));
  }

  /**
   * The element at {@code index} as a double.
   *
   * @param index the index
   * @return the value
   * @throws SharedOverflowException if it is an integer a double cannot represent exactly
   * @throws TypeMismatchException if it is not a number
   */
  public double getDouble(int index) {
    return Codec.toDouble(get(index), where(index));
  }

  /**
   * The element at {@code index} as a float.
   *
   * @param index the index
   * @return the value
   * @throws SharedOverflowException if it is beyond the range of a float, or underflows to zero
   * @throws TypeMismatchException if it is not a number
   */
  public float getFloat(int index) {
    return Codec.toFloat(get(index), where(index));
  }

  /**
   * The element at {@code index} as a boolean.
   *
   * @param index the index
   * @return the value
   * @throws TypeMismatchException if it is not a boolean
   */
  public boolean getBoolean(int index) {
    return Codec.toBoolean(get(index), where(index));
  }

  /**
   * The element at {@code index} as a String.
   *
   * @param index the index
   * @return the value (null for a shared null)
   * @throws TypeMismatchException if it is not a string
   */
  public String getString(int index) {
    return Codec.toStringValue(get(index), where(index));
  }

  /**
   * Sorts the list: reads the elements out, sorts them privately and writes them back in one
   * atomic step (on a comparison error the shared list is unchanged). As {@code ArrayList}, a
   * change made meanwhile (by the comparator, another thread or another process) raises
   * {@link ConcurrentModificationException}, and the list keeps that change. The read waits while
   * a transaction of another thread holds the list, so that the sort never writes back changes
   * its rollback takes back.
   */
  @Override
  public void sort(Comparator<? super Object> c) {
    long[] version = new long[1];
    Object[] a = Native.listItemsForUpdate(handle, version);
    Arrays.sort(a, c);
    replaceUnlessChanged(version[0], a);
  }

  /** As {@link #sort}: reads the elements (waiting for a transaction that holds the list), writes them back. */
  @Override
  public void replaceAll(UnaryOperator<Object> operator) {
    long[] version = new long[1];
    Object[] a = Native.listItemsForUpdate(handle, version);
    for (int i = 0; i < a.length; i++) a[i] = operator.apply(a[i]);
    replaceUnlessChanged(version[0], a);
  }

  /**
   * Writes {@code result}, computed by user code (a comparator, an operator) from the elements
   * the list had at {@code version}, unless the list changed since: the check and the write are
   * one atomic step (libshared's list_replace_if). Every value is checked to be storable first.
   */
  private void replaceUnlessChanged(long version, Object[] result) {
    Encoded e = new Encoded(result);
    if (!Native.listReplaceIf(handle, version, e.tags, e.bits, e.objs)) {
      throw new ConcurrentModificationException("the shared list changed while its elements were sorted or replaced;"
          + " it keeps that change");
    }
    modCount++;
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(toArray());
  }

  @Override
  public boolean equals(Object o) {
    if (o == this) return true;
    if (!(o instanceof List)) return false;
    Object[] mine = toArray();
    Object[] theirs = ((List<?>) o).toArray();
    return Arrays.equals(mine, theirs);
  }

  @Override
  public String toString() {
    Object[] a = toArray();
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < a.length; i++) {
      if (i > 0) sb.append(", ");
      sb.append(a[i] == this ? "(this Collection)" : String.valueOf(a[i]));
    }
    return sb.append(']').toString();
  }
}
