package org.colors;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The read cache: what a bound instance or a list proxy last read of its shared object, kept with
 * it, so that reading the same thing again costs one load of shared memory and a comparison
 * instead of an identity-cache lookup per reference ({@link Proxies#lookup}) and a proxy per
 * element.
 *
 * <p>Two kinds of entries:
 * <ul>
 *   <li>per reference field {@code f} of a mapped class, the volatile field {@code $colors$c$f}
 *       the agent adds: the proxy last read from {@code f} (its getter passes it to
 *       {@link SharedField#getObject(SharedInstance, long, Object)} and stores what
 *       {@link SharedField#cacheable} returns);
 *   <li>{@link Snapshot}, in {@link SharedList#snapshot}: a list's elements read at one instant
 *       and the list's seqlock version then (list_seqlock.hpp), an immutable object replaced whole.
 * </ul>
 *
 * <p>Invariants (why a hit returns what a read without the cache would):
 * <ul>
 *   <li>A cached proxy has a root of its own (never a read scope's borrowed proxy, never a
 *       string), so while it is cached its object is alive at its address ({@link #addressOf}): a
 *       slot that holds that address now refers to that object, whatever it held in between.
 *   <li>Every change of a list makes its version odd, then the next even value (ListWrite, also
 *       around a transaction's rollback), and a list's proxy roots the list: a list whose version
 *       is the Snapshot's still holds the Snapshot's elements (the words, hence the objects, by
 *       the argument above: the Snapshot holds their proxies).
 *   <li>Entries are used and made only on the fast path outside transactions (a transaction's
 *       reads go through the object's ownership record). Only the published proxy of an object
 *       (the identity cache's) is cached, and only by a published holder, so a hit gives the
 *       proxy an uncached read gives: outside a read scope that is the published proxy; inside
 *       one it is the scope's own proxy of the object if the scope lent one, else the published
 *       proxy ({@link Proxies#borrowed}). So inside a scope a hit also needs the scope to have
 *       lent no proxy of the object ({@link #lentByScope}); a scope's borrowed proxies, which die
 *       with it, are never cached. Nothing cached in one attachment
 *       matches in another: a detached bound instance's address is -1, a container of another
 *       epoch has none ({@link #holds} requires a positive address), and an attach that moves the
 *       epoch drops every entry.
 *   <li>About {@link #capacity()} proxies are kept: a holder that makes its first entry takes
 *       the next places of a ring (one, or one per element of a list's snapshot; by its
 *       identity-cache entry, a weak reference: the ring keeps no holder alive), and the holders
 *       it replaces there lose their entries. Heap
 *       pressure ({@link Proxies#onHeapPressure}), {@link SharedMemory#collect()} and a detach drop
 *       them all, and a store through a bound instance's field drops that field's, so the cache
 *       keeps no shared object alive that the program dropped once one of those has run.
 * </ul>
 * Races are benign: the cached field is volatile (a reader that sees a proxy sees it bound) and a
 * reader compares the address of what it found with the slot's word now; a Snapshot's fields are
 * final; places are swapped atomically. One race leaves a stray entry: a getter that stores its
 * entry just after its holder lost its place keeps it outside the ring (until the field changes
 * and is read again, or the holder dies); at most one per field of a live holder, and never a
 * wrong one.
 */
final class ReadCache {
  private ReadCache() {}

  /** A list's elements at seqlock version {@code version} (even), read at address {@code list} in attachment {@code epoch}. */
  static final class Snapshot {
    final long list;
    final long version;
    final long epoch;
    final Object[] items;  // never written after construction, never handed to user code

    Snapshot(long list, long version, long epoch, Object[] items) {
      this.list = list;
      this.version = version;
      this.epoch = epoch;
      this.items = items;
    }
  }

  /** Lists longer than this are not kept (their snapshot would hold as many proxies). */
  static final int MAX_SNAPSHOT = 4096;

  /** The largest capacity {@link SharedMemory#readCache(int)} takes. */
  static final int MAX_CAPACITY = 1 << 22;

  /**
   * The default capacity: about an eighth of the JVM's maximum heap at ~256 bytes per proxy kept
   * (the proxy, its view, handle, root, identity entry and entry), between 4,096 and 2^20.
   * {@code -Dcolors.readCache=N} overrides it (0: off).
   */
  static int defaultCapacity() {
    Integer p = Integer.getInteger("colors.readCache");
    if (p != null) return Math.max(0, Math.min(p, MAX_CAPACITY));
    long n = Runtime.getRuntime().maxMemory() / 2048;
    return (int) Math.max(4096, Math.min(n, 1 << 20));
  }

  private static final Object LOCK = new Object();
  private static final VarHandle PLACES = MethodHandles.arrayElementVarHandle(Proxies.Entry[].class);
  /**
   * The holders with entries, each by its identity-cache entry (a weak reference to the proxy that
   * the proxy's root already has: the ring keeps no holder alive, and one that died needs nothing).
   * A holder takes one place per proxy it keeps a snapshot of (a list) or one place (a bound
   * instance, whose few reference fields each keep one proxy), so the capacity bounds the proxies
   * kept, not only the holders. Places are swapped atomically (getAndSet), so a holder that loses
   * its place is always seen by whoever took it.
   */
  private static volatile Proxies.Entry[] ring = new Proxies.Entry[defaultCapacity()];
  private static final AtomicLong NEXT = new AtomicLong();

  static int capacity() {
    return ring.length;
  }

  /**
   * Sets the capacity (0 turns the cache off) and drops every entry.
   *
   * @return the previous capacity
   */
  static int setCapacity(int capacity) {
    if (capacity < 0 || capacity > MAX_CAPACITY) {
      throw new InvalidArgumentException("colors: read cache capacity must be 0.." + MAX_CAPACITY + ", not " + capacity);
    }
    synchronized (LOCK) {
      int old = ring.length;
      Proxies.Entry[] dropped = ring;
      ring = new Proxies.Entry[capacity];
      dropAll(dropped);
      return old;
    }
  }

  static boolean enabled() {
    return ring.length != 0;
  }

  /**
   * The identity-cache entry of the proxy whose handle is {@code h} when it may hold or be an
   * entry (a root of its own, published), else null.
   */
  private static Proxies.Entry published(Handle h) {
    Root r = h.root;
    return r == null ? null : r.entry;
  }

  /**
   * Gives the holder of identity entry {@code e} (whose proxy just made its first entry) {@code
   * weight} places of the ring; the holders in those places lose their entries. A holder admitted
   * into a ring that a capacity change replaced meanwhile loses its entries at once.
   */
  private static void admit(Proxies.Entry e, int weight) {
    Proxies.Entry[] r = ring;
    if (r.length == 0) {
      drop(e.get());
      return;
    }
    int n = Math.min(Math.max(weight, 1), r.length);
    long first = NEXT.getAndAdd(n);
    for (int k = 0; k < n; k++) {
      int i = (int) Long.remainderUnsigned(first + k, r.length);
      Proxies.Entry old = (Proxies.Entry) PLACES.getAndSet(r, i, k == 0 ? e : null);
      if (old != null && old != e) drop(old.get());
    }
    if (ring != r) drop(e.get());
  }

  private static void drop(Object holder) {
    if (holder instanceof SharedInstance) {
      SharedInstance i = (SharedInstance) holder;
      SharedObject view = i.$colors$view();
      if (view != null) view.inReadCache = false;
      i.$colors$forget();
    } else if (holder instanceof SharedList) {
      SharedList l = (SharedList) holder;
      l.inReadCache = false;
      l.snapshot = null;
    }
  }

  /**
   * {@link #NEXT}'s value when the last {@link #dropAll()} began: places taken before it were
   * emptied then (or by a later admit's overwrite), so the next one visits only the places taken
   * since, not the whole ring (2^20 places by default, an atomic swap each).
   */
  private static final AtomicLong DROPPED_TO = new AtomicLong();

  /**
   * Drops every entry (heap pressure, collect, attach and detach): the places taken since the last
   * drop, or the whole ring when more were taken than it has. As with a walk over the whole ring,
   * an entry being admitted meanwhile (its places taken before this call read {@link #NEXT}, its
   * swaps not yet done) may stay: a cached value, which nothing needs dropped for correctness (a
   * read checks the slot still holds its object, and a handle's attachment).
   */
  static void dropAll() {
    Proxies.Entry[] r = ring;
    long to = NEXT.get();
    long from = DROPPED_TO.getAndSet(to);
    if (Long.compareUnsigned(to - from, r.length) >= 0) {  // a lap or more (or a concurrent drop ran ahead)
      dropAll(r);
      return;
    }
    for (long k = from; k != to; k++) {
      Proxies.Entry e = (Proxies.Entry) PLACES.getAndSet(r, (int) Long.remainderUnsigned(k, r.length), null);
      if (e != null) drop(e.get());
    }
  }

  private static void dropAll(Proxies.Entry[] r) {
    for (int i = 0; i < r.length; i++) {
      Proxies.Entry e = (Proxies.Entry) PLACES.getAndSet(r, i, null);
      if (e != null) drop(e.get());
    }
  }

  // ---- bound instances ----------------------------------------------------------------------

  /**
   * The address of the shared object of {@code cached}, a proxy a bound instance's read cache
   * holds, in view {@code v}'s attachment; 0 when it has none there (never equal to a reference).
   */
  static long addressOf(Object cached, Direct.View v) {
    if (cached instanceof SharedInstance) return ((SharedInstance) cached).$colors$address();  // -1 once detached
    Handle h = Proxies.handleOf(cached);
    return h != null && h.epoch == v.epoch ? h.raw : 0;
  }

  /**
   * Whether the slot at {@code s} still holds the object of {@code cached}, a proxy a bound
   * instance's read cache holds, so the getter may return it. Never inside a read scope: there a
   * read gives the scope's own proxy of an object first, which may be another (ReadScope's "one
   * proxy per object within the scope").
   */
  static boolean holds(Direct.View v, long s, Object cached) {
    long a = addressOf(cached, v);
    if (a <= 0 || v.load(s) != a) return false;
    ReadScope.State sc = ReadScope.here();
    if (sc != null && sc.get(a) != null) return false;
    v.touch(a);  // the caller's next access is likely through this proxy
    return true;
  }

  /**
   * Whether the open scope {@code sc} lent a proxy of its own of an object one of {@code items}
   * (proxies, or scalars) is a proxy of: then the scope's reads give that one, not the cached.
   */
  static boolean lentByScope(ReadScope.State sc, Object[] items, Direct.View v) {
    if (sc.lent() == 0) return false;
    for (Object x : items) {
      if (x instanceof SharedInstance || Proxies.handleOf(x) != null) {
        long a = addressOf(x, v);
        if (a > 0 && sc.get(a) != null) return true;
      }
    }
    return false;
  }

  /** {@link SharedField#cacheable}: {@code value}, or null when it must not be kept. */
  static Object cacheable(SharedInstance owner, Object value) {
    if (value == null || value instanceof String || !enabled() || Transaction.inThisThread()) return null;
    Handle h = Proxies.handleOf(value);
    // Only the published proxy of an object (never a borrowed one, alive only while its scope is
    // open, nor a second proxy kept from a scope after another thread published one).
    if (h == null || published(h) == null) return null;
    SharedObject view = owner.$colors$view();
    Proxies.Entry e = view == null ? null : published(view.handle);
    if (e == null) return null;  // a borrowed holder (it dies with its scope) or an unpublished one
    if (!view.inReadCache) {
      view.inReadCache = true;
      admit(e, 1);
    }
    return value;
  }

  // ---- lists ---------------------------------------------------------------------------------

  /**
   * The cached elements of a list while it has not changed since they were read, or null (nothing
   * is read or kept): the snapshot's version is the list's now, in the current attachment, outside
   * a transaction, and inside a read scope none of them is an object the scope lent a proxy of its
   * own of. Needs no handle: a snapshot is made only for a list proxy with a root of its own, which
   * keeps the list at {@code s.list} for as long as the proxy (holding {@code s}) lives.
   */
  static Object[] cached(Snapshot s) {
    if (s == null || Transaction.inThisThread()) return null;
    Direct.View v = Direct.current();
    if (v == null || v.epoch != s.epoch || v.load(s.list + v.offListVersion) != s.version) return null;
    ReadScope.State sc = ReadScope.here();
    if (sc != null && lentByScope(sc, s.items, v)) return null;
    // A short list's elements' headers start loading while the caller's loop gets going.
    Object[] items = s.items;
    if (items.length <= TOUCHED) {
      for (Object x : items) {
        if (x instanceof SharedInstance) v.touch(((SharedInstance) x).$colors$address());
      }
    }
    return items;
  }

  /**
   * The longest snapshot whose elements {@link #cached} touches. Short lists are what a traversal
   * follows element by element next (OO7 T1: a part's three connections; touching them made T1
   * 0.88x). For longer ones it cost more than it saved: with the first eight elements touched, or
   * only two, OO7's Q2/Q3 (date lists of about ten parts spread over the heap, after T1 in the same
   * JVM) ran 1.6x-1.9x the time without, in interleaved runs, while T1 was the same either way
   * (doc/PERFORMANCE.md, "Java's read cache"); why those far-apart touches do not overlap with the
   * caller's work was not established.
   */
  private static final int TOUCHED = 4;

  /**
   * The elements of {@code list} at one instant, shared with other callers (read-only), or null
   * (the caller reads them itself): the cached ones ({@link #cached}), else read now and, for a
   * list proxy with a root of its own read outside a read scope, kept. REQUIRES: {@code v} the
   * list's current view, outside a transaction.
   */
  static Object[] items(Direct.View v, SharedList list) {
    Object[] hit = cached(list.snapshot);
    if (hit != null) return hit;
    long[] version = new long[1];
    Object[] items = ListReads.items(v, list.handle, version);
    if (items == null || items == ListReads.NOT_DECODED) return null;
    Proxies.Entry e;
    if (version[0] >= 0 && items.length <= MAX_SNAPSHOT && enabled() && (e = published(list.handle)) != null) {
      list.snapshot = new Snapshot(list.handle.raw, version[0], v.epoch, items);
      if (!list.inReadCache) {
        list.inReadCache = true;
        admit(e, items.length);  // one place per proxy it keeps
      }
    }
    return items;
  }
}
