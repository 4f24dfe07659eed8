package org.colors;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * A read scope: while one is open on a thread, the shared objects and containers that thread
 * reads (a reference field of a bound instance, the elements of a shared list) are
 * <em>borrowed</em>: their proxies take no GC root, no reference object and no identity-cache
 * entry each, which makes reading a large graph several times cheaper. The scope keeps what it
 * read alive instead (libshared's read scopes, {@code colors::ReadScope}; the protocol is in
 * gc/README.md, "Read scopes"): the collector waits for a scope that began before its cycle to
 * end before it frees anything.
 *
 * <pre>{@code
 * try (ReadScope scope = SharedMemory.readScope()) {
 *   for (Connection c : part.to) visit(c.to);   // no root per connection or part
 *   kept = ReadScope.keep(part.partOf);          // this one outlives the scope
 * }
 * }</pre>
 *
 * <p>The contract, as for a C++ {@code ObjectView}:
 * <ul>
 *   <li>A borrowed proxy is usable by the thread of its scope until that thread's outermost scope
 *       closes. Used afterwards, or by another thread, it throws {@link IllegalStateException}
 *       (the field fast path of a bound instance is switched off at the close). To keep one, call
 *       {@link #keep} inside the scope; a proxy handed to a native operation (a container's
 *       {@code add}, a store of it into a field) is kept the same way, by itself. Proxies that
 *       existed before the scope, or are read again while another proxy of the object is kept,
 *       are the usual rooted ones.
 *   <li>Within a scope, reading an object twice gives the same proxy ({@code ==}), as outside.
 *   <li>Inside a scope a thread must not wait for the collector: {@link SharedMemory#collect()},
 *       a transaction ({@link SharedMemory#atomically}) and an allocation that finds the heap full
 *       throw instead of waiting for a cycle that waits for the scope. A scope cannot be opened
 *       inside a transaction ({@link InvalidArgumentException}). Keep scopes short: past a bound
 *       (1 s) a collector cycle is given up and frees nothing.
 *   <li>Scopes nest; the outermost one counts. Closing a scope twice does nothing.
 *   <li>A scope left open across {@link SharedMemory#detach()} protects nothing of the next
 *       attachment: from the detach on, the thread reads as outside a scope ({@link #active} is
 *       false, proxies take roots), also in scopes nested in it, until it closes.
 * </ul>
 * Handing a borrowed bound instance to another thread while the scope is open lets that thread
 * read its primitive fields only until the scope closes, and races with the close like any
 * unsynchronised hand-over: keep it first.
 */
public final class ReadScope implements AutoCloseable {
  /** Open outermost scopes in this JVM: readers skip the thread-local lookup while there are none. */
  static final AtomicInteger OPEN = new AtomicInteger();

  /** The open outermost scopes, for {@link #unbindAll} (a detach). */
  private static final java.util.Set<State> OPEN_STATES = java.util.concurrent.ConcurrentHashMap.newKeySet();

  /** Per thread: its open scope (null outside one) and the map the next scope reuses. */
  private static final class PerThread {
    State state;
    AddressMap spare = new AddressMap();
    SharedObject[] spareBound = new SharedObject[64];
  }

  private static final ThreadLocal<PerThread> CURRENT = ThreadLocal.withInitial(PerThread::new);

  /** A map larger than this (a scope that read millions of objects) is not kept for the next scope. */
  private static final int MAX_SPARE_SLOTS = 1 << 20;

  /**
   * One thread's outermost scope and what it lent out.
   * Invariants: only {@link #owner} touches it; {@link #owner} is that thread from the native
   * scope's entry until the close, null after; {@link #proxies} maps each address read in the
   * scope without a live rooted proxy to the one borrowed proxy made for it (an address stays one
   * object's while the scope is open: nothing is freed meanwhile).
   */
  static final class State {
    /** The thread of the scope; null once it closed. Read by other threads only to refuse them. */
    volatile Thread owner;
    /**
     * The attachment the native scope belongs to ({@link Direct#epoch} when it was entered). After
     * a detach the scope protects nothing (libshared's in_read_scope is false from then on, and
     * the collector does not wait for it), so {@link #here} no longer returns it: what the thread
     * reads in the new attachment is rooted, as outside a scope.
     */
    final long epoch;
    int depth;
    final AddressMap proxies;
    /** The views of the bound instances lent out, in order ({@link #unbindBorrowed}); reused like the map. */
    SharedObject[] bound;
    int nBound;

    State(Thread owner, long epoch, AddressMap proxies, SharedObject[] bound) {
      this.owner = owner;
      this.epoch = epoch;
      this.proxies = proxies;
      this.bound = bound;
    }

    /** The borrowed proxy of the object at {@code raw}, or null. */
    Object get(long raw) {
      return proxies.get(raw);
    }

    /** How many proxies of its own the scope lent so far. */
    int lent() {
      return proxies.size();
    }

    /**
     * A new borrowed proxy of the object at {@code raw}. REQUIRES: on the owner thread, inside the
     * scope; {@code raw} read inside it; no proxy of it in {@link #proxies}; {@code proxied(kind)}.
     */
    Object borrow(Direct.View v, long raw, int kind) {
      return borrow(v, raw, kind, null);
    }

    /** {@link #borrow(Direct.View, long, int)} with the mapped class of a new object ({@code null}: look it up). */
    Object borrow(Direct.View v, long raw, int kind, Class<?> mapped) {
      Handle h = new Handle(raw, kind, v.epoch);
      h.scope = this;
      Object proxy = Proxies.create(h, mapped);
      proxies.put(raw, proxy);
      if (proxy instanceof SharedInstance) {
        if (nBound == bound.length) bound = java.util.Arrays.copyOf(bound, 2 * bound.length);
        bound[nBound++] = ((SharedInstance) proxy).$colors$view();
      }
      return proxy;
    }
  }

  private State state;  // null once this (possibly nested) scope object closed

  private ReadScope(State state) {
    this.state = state;
  }

  /**
   * Opens a read scope on the calling thread (see {@link SharedMemory#readScope()}).
   *
   * @return the scope, to close (try-with-resources)
   */
  static ReadScope open() {
    PerThread t = CURRENT.get();
    State s = t.state;
    if (s != null) {
      // Nested: one more level of the outermost scope. Inside a scope of a closed attachment it
      // is one too, and protects nothing either (the native scope is one per thread).
      s.depth++;
      return new ReadScope(s);
    }
    SharedMemory.ensureAttached();
    enter();  // InvalidArgumentException inside a transaction
    // A new State each time: the proxies of an earlier scope see its owner null for good.
    s = new State(Thread.currentThread(), Direct.epoch, t.spare, t.spareBound);
    s.depth = 1;
    t.state = s;
    OPEN_STATES.add(s);
    OPEN.incrementAndGet();
    return new ReadScope(s);
  }

  /**
   * Closes this scope; when it is the thread's outermost, the proxies it lent out and that were not
   * kept stop working (their fast path is switched off, then the native scope ends).
   *
   * @throws IllegalStateException if called by a thread other than the one that opened it
   */
  @Override
  public void close() {
    State s = state;
    if (s == null) return;
    if (s.owner != Thread.currentThread()) {
      throw new IllegalStateException("colors: a ReadScope is closed by the thread that opened it");
    }
    state = null;
    if (--s.depth > 0) return;
    try {
      unbindBorrowed(s);
    } finally {
      OPEN_STATES.remove(s);
      s.owner = null;
      s.proxies.clear(MAX_SPARE_SLOTS);  // the next scope of this thread reuses its arrays
      PerThread t = CURRENT.get();
      if (s.bound.length <= MAX_SPARE_SLOTS) {
        java.util.Arrays.fill(s.bound, 0, s.nBound, null);
        t.spareBound = s.bound;
      } else {
        t.spareBound = new SharedObject[64];
      }
      t.state = null;
      OPEN.decrementAndGet();
      exit();
    }
  }

  /** Switches off the field fast path of the bound instances {@code s} lent out and nobody kept. */
  private static void unbindBorrowed(State s) {
    SharedObject[] b = s.bound;
    for (int i = 0, n = s.nBound; i < n; i++) {
      SharedObject so = b[i];
      if (so.handle.root == null) ((SharedInstance) so.instance).$colors$bind(so, SharedField.NO_ADDRESS);
    }
  }

  /**
   * At a detach (or an attach that begins a new heap): the borrowed bound instances of every open
   * scope lose their fast path, as cached proxies do ({@link Proxies#clear}), so none reads a new
   * heap at its old address; the JNI path then reports {@link NotAttachedException}. Their scopes
   * stay open until closed. REQUIRES: the scopes' threads do not use shared objects meanwhile (the
   * rule of every detach).
   */
  static void unbindAll() {
    for (State s : OPEN_STATES) unbindBorrowed(s);
  }

  /**
   * Whether the calling thread is inside a read scope of the current attachment.
   *
   * @return true between the open of its outermost scope and that scope's close, unless a detach
   *     came between
   */
  public static boolean active() {
    return here() != null;
  }

  /**
   * Keeps {@code proxy} usable after its scope closes: a proxy borrowed in this thread's scope
   * takes a GC root (and becomes the object's identity-cached proxy unless another thread made one
   * meanwhile); anything else is returned as it is.
   *
   * @param <T> the proxy's type
   * @param proxy a proxy read in a scope (or any value)
   * @return {@code proxy}
   * @throws IllegalStateException if it was borrowed in a scope that closed, or by another thread
   */
  public static <T> T keep(T proxy) {
    Handle h = Proxies.handleOf(proxy);
    if (h != null && h.root == null && h.scope != null) Proxies.promote(h);
    return proxy;
  }

  /**
   * The calling thread's open scope of the current attachment, or null (one volatile read while no
   * scope is open anywhere). A scope opened before a detach is not returned: borrowing in it would
   * hand out proxies that nothing keeps alive.
   */
  static State here() {
    if (OPEN.get() == 0) return null;
    State s = CURRENT.get().state;
    return s != null && s.epoch == Direct.epoch ? s : null;
  }

  /** Enters the native read scope of this thread (libshared colors::ReadScope). */
  private static native void enter();

  /** Leaves it. */
  private static native void exit();
}
