package org.colors;

import java.util.AbstractSet;
import java.util.Collection;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Set;

/**
 * A shared set: a proxy implementing {@link Set} over a set in the shared heap.
 *
 * <p>Elements are stored, read back and compared as the keys of a {@link SharedMap}
 * (language-neutrally: {@code 1}, {@code 1L} and {@code 1.0} are the same element; shared
 * containers by identity). Iterators walk a snapshot taken when they are created and support
 * {@code remove}. {@code equals}/{@code hashCode} follow {@link Set}: a shared set equals a
 * {@code HashSet} with the same elements.
 */
public final class SharedSet extends AbstractSet<Object> {
  final Handle handle;

  SharedSet(Handle handle) {
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
  public boolean contains(Object o) {
    int t = Codec.probeTag(o);
    if (t == Codec.NONE) return false;
    return Native.setContains(handle, t, Codec.bits(o, t), Codec.obj(o, t));
  }

  @Override
  public boolean add(Object o) {
    int t = Codec.tag(o);
    return Native.setAdd(handle, t, Codec.bits(o, t), Codec.obj(o, t));
  }

  @Override
  public boolean remove(Object o) {
    int t = Codec.probeTag(o);
    if (t == Codec.NONE) return false;
    return Native.setRemove(handle, t, Codec.bits(o, t), Codec.obj(o, t));
  }

  @Override
  public boolean addAll(Collection<?> c) {
    Object[] a = c.toArray();
    for (Object o : a) Codec.tag(o);  // all storable, or nothing is added
    boolean changed = false;
    for (Object o : a) changed |= add(o);
    return changed;
  }

  @Override
  public void clear() {
    Native.clear(handle);
  }

  /**
   * Removes the elements {@code c} does not contain. The elements are read once no transaction of
   * another thread holds the set, so that a rollback never brings back an element this should
   * have removed.
   */
  @Override
  public boolean retainAll(Collection<?> c) {
    boolean changed = false;
    for (Object o : Native.setItemsForUpdate(handle)) {
      if (!c.contains(o)) changed |= remove(o);
    }
    return changed;
  }

  /** A snapshot of the elements, read in one native call. */
  @Override
  public Object[] toArray() {
    return Native.setItems(handle);
  }

  @Override
  public Iterator<Object> iterator() {
    return new Iterator<Object>() {
      private final Object[] items = Native.setItems(handle);
      private int next;
      private boolean canRemove;

      @Override
      public boolean hasNext() {
        return next < items.length;
      }

      @Override
      public Object next() {
        if (next >= items.length) throw new NoSuchElementException();
        canRemove = true;
        return items[next++];
      }

      @Override
      public void remove() {
        if (!canRemove) throw new IllegalStateException("next() was not called, or remove() was called already");
        canRemove = false;
        SharedSet.this.remove(items[next - 1]);
      }
    };
  }
}
