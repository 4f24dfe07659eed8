package org.colors;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.util.HashSet;
import java.util.Set;

/**
 * Proxies of shared objects and their identity cache.
 *
 * <p>Invariants: every proxy owns exactly one {@link Handle} (one GC root, held by its {@link Root});
 * while a proxy of a shared object is reachable, reading that object again (from a container, a
 * repository, a channel, a field) gives the same proxy: the cache maps the object's raw word to an
 * {@link Entry}, a weak reference to the proxy ({@code get()} is non-null only while the proxy is
 * strongly reachable, hence while its root is held: a hit is a live object, never a dead one whose
 * address was reused). Once the Handle is phantom reachable its Root is enqueued; {@link #drain}
 * unlinks the entry (only that entry) and releases the root. Threads that make proxies drain
 * {@link #DRAIN_PER_PROXY} Roots per new proxy, so releases keep pace with creation (one daemon
 * thread alone falls behind a busy thread and the roots, hence the shared heap, grow); a daemon
 * thread ({@code colors-release}) drains the rest.
 *
 * <p>The cache: {@link #STRIPES} stripes, each a chained hash table whose writes (insert, remove,
 * resize) hold the stripe's lock and whose reads ({@link #lookup}) take no lock: a reader follows
 * volatile links and may miss an entry while a resize relinks the chains (bounded walk), never find
 * a wrong one (it compares the raw word, and a non-null {@code get()} is a live proxy). Every path
 * that creates a proxy after a miss checks again under the lock ({@link #publish}), so a miss never
 * makes a second proxy of an object that has a live one.
 */
final class Proxies {
  private Proxies() {}

  /** Shared TypeKinds of containers and objects (colors::TypeKind). */
  static final int INTEGER = 1, FLOAT = 2, BOOLEAN = 3, STRING = 4, BINARY = 5, LIST = 6, SET = 7, MAP = 8,
      OBJECT = 9;

  // ---- releases -----------------------------------------------------------------------------

  /** Roots of Handles that became phantom reachable. */
  static final ReferenceQueue<Handle> QUEUE = new ReferenceQueue<>();
  static final int DRAIN_PER_PROXY = 4;
  /** Roots whose entries {@link #clear} dropped (detach): kept reachable until processed. */
  private static final Set<Root> ORPHANS = new HashSet<>();  // GUARDED_BY(ORPHANS)

  static {
    Thread t = new Thread(Proxies::releaseLoop, "colors-release");
    t.setDaemon(true);
    t.start();
  }

  private static void releaseLoop() {
    for (;;) {
      try {
        process((Root) QUEUE.remove(), false);
      } catch (InterruptedException e) {
        // daemon: keep going
      } catch (Throwable t) {
        // a failed release must not end the thread (e.g. NotAttachedException): the root is gone
      }
    }
  }

  /** Processes up to {@code max} enqueued Roots (threads that use shared objects). */
  static void drain(int max) {
    for (int i = 0; i < max; i++) {
      Root r = (Root) QUEUE.poll();  // no lock when the queue is empty
      if (r == null) return;
      process(r, true);
    }
  }

  private static void process(Root r, boolean mutator) {
    Entry e = r.entry;
    if (e == null || !remove(e)) {
      synchronized (ORPHANS) {
        ORPHANS.remove(r);
      }
    }
    r.release(mutator);
  }

  // ---- the identity cache --------------------------------------------------------------------

  /** A cache entry: a weak reference to a proxy, keyed by its object's raw word. */
  static final class Entry extends WeakReference<Object> {
    final long raw;
    /** Keeps the Root reachable (so it is enqueued) while the entry is linked. */
    final Root root;
    /** Next entry of the bucket (written under the stripe's lock, read without). */
    volatile Entry next;

    Entry(Object proxy, long raw, Root root) {
      super(proxy);
      this.raw = raw;
      this.root = root;
    }
  }

  private static final int STRIPES = 16;
  private static final VarHandle SLOTS = MethodHandles.arrayElementVarHandle(Entry[].class);

  private static final class Stripe {
    volatile Entry[] table = new Entry[64];
    int size;  // GUARDED_BY(this)
  }

  private static final Stripe[] CACHE = new Stripe[STRIPES];

  static {
    for (int i = 0; i < STRIPES; i++) CACHE[i] = new Stripe();
  }

  private static long mix(long raw) {
    return raw * 0x9E3779B97F4A7C15L;
  }

  private static Stripe stripe(long h) {
    return CACHE[(int) (h >>> 60)];
  }

  private static int index(long h, int length) {
    return (int) (h >>> 28) & (length - 1);
  }

  /** The live proxy of the object with raw word {@code raw}, or null (possibly a false miss). */
  static Object lookup(long raw) {
    long h = mix(raw);
    Entry[] t = stripe(h).table;
    Entry e = (Entry) SLOTS.getAcquire(t, index(h, t.length));
    for (int steps = 0; e != null && steps < 64; steps++, e = e.next) {
      if (e.raw == raw) {
        Object p = e.get();
        if (p != null) return p;
      }
    }
    return null;
  }

  /** The live proxy of {@code raw} in the stripe (REQUIRES: its lock held), or null. */
  private static Object findLocked(Stripe st, long h, long raw) {
    Entry[] t = st.table;
    for (Entry e = t[index(h, t.length)]; e != null; e = e.next) {
      if (e.raw == raw) {
        Object p = e.get();
        if (p != null) return p;
      }
    }
    return null;
  }

  /**
   * Publishes {@code entry} (whose proxy is new) unless a live proxy of its object is cached: then
   * returns that one and publishes nothing. Dead entries of the same object stay until their Roots
   * are processed (they keep those Roots reachable); lookups skip them.
   */
  private static Object publish(Entry entry) {
    long raw = entry.raw;
    long h = mix(raw);
    Stripe st = stripe(h);
    synchronized (st) {
      Object live = findLocked(st, h, raw);
      if (live != null) return live;
      Entry[] t = st.table;
      int i = index(h, t.length);
      entry.next = t[i];
      SLOTS.setRelease(t, i, entry);
      if (++st.size > t.length - (t.length >> 2)) resize(st);
    }
    return null;
  }

  // REQUIRES: st's lock held.
  private static void resize(Stripe st) {
    Entry[] old = st.table;
    Entry[] t = new Entry[old.length * 2];
    for (Entry head : old) {
      for (Entry e = head; e != null;) {
        Entry next = e.next;
        int j = index(mix(e.raw), t.length);
        e.next = t[j];
        t[j] = e;
        e = next;
      }
    }
    st.table = t;  // volatile: the chains are complete before readers see the table
  }

  /** Unlinks {@code entry}; false if it is not linked (dropped by {@link #clear}). */
  private static boolean remove(Entry entry) {
    long h = mix(entry.raw);
    Stripe st = stripe(h);
    synchronized (st) {
      Entry[] t = st.table;
      int i = index(h, t.length);
      Entry prev = null;
      for (Entry e = t[i]; e != null; prev = e, e = e.next) {
        if (e == entry) {
          if (prev == null) SLOTS.setRelease(t, i, e.next);
          else prev.next = e.next;
          st.size--;
          return true;
        }
      }
    }
    return false;
  }

  // ---- proxies from natives ------------------------------------------------------------------

  /**
   * Called by the natives for a shared reference without a live proxy: adopts the native handle
   * {@code ptr} into a new proxy, or releases it and returns the live proxy of the same object.
   */
  static Object wrap(long ptr, long raw, int kind) {
    Object live = lookup(raw);
    if (live != null) {
      Native.release(ptr);
      return live;
    }
    Handle h = new Handle(raw, kind, Direct.epoch);
    Object proxy;
    try {
      proxy = create(h, null);
    } catch (RuntimeException | Error e) {
      Native.release(ptr);
      throw e;
    }
    return publishNew(h, proxy, new Root(h, QUEUE, ptr, 0, null));
  }

  // ---- proxies from the Java fast path -------------------------------------------------------

  /**
   * A proxy of the object {@code raw}, rooted by the Java-held slot {@code slot} (which this call
   * takes over: it becomes the new proxy's root, or is dropped when a live proxy exists).
   * {@code mapped}: the mapped Java class of a user object when known (allocation), else null.
   * REQUIRES: {@code slot} holds {@code raw}; {@code v} is the current view.
   */
  static Object adopt(Direct.View v, long slot, long raw, int kind, Class<?> mapped) {
    drain(DRAIN_PER_PROXY);
    Handle h = new Handle(raw, kind, v.epoch);
    Object proxy;
    try {
      proxy = create(h, mapped);
    } catch (RuntimeException | Error e) {
      Roots.drop(v, slot);
      throw e;
    }
    return publishNew(h, proxy, new Root(h, QUEUE, 0, slot, v));
  }

  /**
   * Links a new proxy's Handle, Root and cache entry and publishes it; if a live proxy of the object
   * was published meanwhile, returns that one instead and releases the new root at once (the new
   * proxy was never handed out, so nothing can read through it).
   */
  private static Object publishNew(Handle h, Object proxy, Root root) {
    Entry entry = new Entry(proxy, h.raw, root);
    root.entry = entry;
    h.root = root;
    Object live = publish(entry);
    if (live != null) {
      root.clear();  // never enqueued: released here
      root.release(true);
      return live;
    }
    return proxy;
  }

  /** What {@link #readRef} returns for a value the fast path does not read (take the JNI path). */
  static final Object MISS = new Object();

  /**
   * The value of the reference slot {@code s} without JNI: null, a string (read in place), or the
   * proxy of a container or user object — its live proxy, else a new one rooted by a Java-held
   * slot (the root_load protocol, {@link Roots#load}); {@link #MISS} for anything else (scalars,
   * boxed numbers, binaries, long strings, a collector cycle during a string read).
   * REQUIRES: UNSAFE; the object owning {@code s} kept alive by the caller.
   */
  static Object readRef(Direct.View v, long s) {
    for (;;) {
      long w = v.load(s);
      if (w == 0) return null;
      if ((w & Direct.TAG_MASK) != 0) return MISS;
      String str = v.readString(s);  // checks the class first: cheap for anything else
      if (str != null) return str;
      Object live = lookup(w);  // a live proxy: the object is alive (its root is held)
      if (live != null) return live;
      long slot = Roots.load(v, s, w);
      if (slot == 0) continue;  // the slot changed: read it again
      int kind = v.kindOf(w);   // rooted now: safe to read
      if (kind != LIST && kind != MAP && kind != SET && kind != OBJECT) {
        Roots.drop(v, slot);
        return MISS;
      }
      return adopt(v, slot, w, kind, null);  // publish() checks the cache again under its lock
    }
  }

  private static Object create(Handle h, Class<?> mapped) {
    switch (h.kind) {
      case LIST: return new SharedList(h);
      case MAP: return new SharedMap(h);
      case SET: return new SharedSet(h);
      case OBJECT: return mapped != null ? Mapped.bind(new SharedObject(h), mapped)
          : Mapped.proxyFor(new SharedObject(h));  // an instance of a mapped class, or the view
      default: throw new IllegalStateException("no proxy for shared kind " + h.kind);
    }
  }

  /** The handle of a proxy, or null for anything else (private objects, null). */
  static Handle handleOf(Object o) {
    if (o instanceof SharedInstance) {
      SharedObject v = ((SharedInstance) o).$colors$view();
      return v == null ? null : v.handle;
    }
    if (o instanceof SharedObject) return ((SharedObject) o).handle;
    if (o instanceof SharedList) return ((SharedList) o).handle;
    if (o instanceof SharedMap) return ((SharedMap) o).handle;
    if (o instanceof SharedSet) return ((SharedSet) o).handle;
    return null;
  }

  /** The SharedObject view of a shared user object (a view, or an instance bound by the agent), or null. */
  static SharedObject viewOf(Object o) {
    if (o instanceof SharedObject) return (SharedObject) o;
    if (o instanceof SharedInstance) return ((SharedInstance) o).$colors$view();
    return null;
  }

  /** Forgets every cached proxy (detach: the proxies of the old attachment are stale). */
  static void clear() {
    for (Stripe st : CACHE) {
      synchronized (st) {
        for (Entry head : st.table) {
          for (Entry e = head; e != null; e = e.next) {
            Mapped.unbind(e.get());
            synchronized (ORPHANS) {
              ORPHANS.add(e.root);  // still to be processed (native roots free their JValue)
            }
          }
        }
        st.table = new Entry[64];
        st.size = 0;
      }
    }
  }

  static int cacheSize() {
    int n = 0;
    for (Stripe st : CACHE) {
      synchronized (st) {
        n += st.size;
      }
    }
    return n;
  }
}
