package org.colors;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The entry point of the colors Java binding (section 2.1 of the CoLoRS paper): processes share
 * live objects through the shared-memory heap of a {@code colors-server}, without serialization.
 *
 * <pre>{@code
 * List<Object> jobs = (List<Object>) SharedMemory.copyToSharedMemory(List.of(1, 2, 3));
 * SharedMemory.findOrCreateRepository("jobs").set(jobs);   // any process can get() it
 * ObjectChannel ch = SharedMemory.findOrCreateChannel("work", 64);
 * ch.send(jobs);                                           // blocks while full
 * try (SharedMonitor m = SharedMemory.lock(jobs)) { m.signalAll(); }
 * }</pre>
 *
 * <p>Attachment: every call that needs the heap attaches implicitly on first use, to the socket
 * named by the system property {@value #SOCKET_PROPERTY}, else {@code $COLORS_SOCKET}, else the
 * server's default socket. All methods are thread-safe.
 *
 * <p>Mapping (Table 1): byte/short/int/long/char and their boxes are shared integers (read back as
 * {@code Long}), float/double floats ({@code Double}), boolean booleans, String strings, byte[]
 * binaries (read back as private copies), null null; shared lists, maps, sets and user objects
 * are proxies: {@link SharedList}, {@link SharedMap}, {@link SharedSet}, {@link SharedObject}.
 * Each proxy holds its object alive (one GC root) until the JVM collects the proxy.
 */
public final class SharedMemory {
  private SharedMemory() {}

  /** System property naming the server's socket (overrides {@code $COLORS_SOCKET}). */
  public static final String SOCKET_PROPERTY = "colors.socket";

  private static volatile boolean attached;
  private static final ConcurrentHashMap<String, ObjectRepository> REPOSITORIES = new ConcurrentHashMap<>();
  private static final ConcurrentHashMap<String, ObjectChannel> CHANNELS = new ConcurrentHashMap<>();

  // ---- attachment ----------------------------------------------------------------------------

  /**
   * Attaches to the colors server: the socket of the system property {@value #SOCKET_PROPERTY},
   * else {@code $COLORS_SOCKET}, else the server's default socket. Does nothing when attached.
   *
   * @throws ServerGoneException if no server answers on the socket (start {@code colors-server})
   * @throws VersionMismatchException if the server was built from another colors version
   */
  public static void attach() {
    String p = System.getProperty(SOCKET_PROPERTY);
    attach0(p == null || p.isEmpty() ? null : p);
  }

  /**
   * Attaches to the colors server listening on {@code socket}. Does nothing when attached to a live
   * server (detach first to switch servers). When the server of this attachment is gone, asks the
   * server now on {@code socket} for it back (a successor that adopted the heap keeps every object
   * and root), and when that server serves another heap (restored from a checkpoint, or fresh),
   * ends this attachment and begins a new one.
   *
   * @param socket the server's Unix socket
   * @throws ServerGoneException if no server answers on the socket
   */
  public static void attach(Path socket) {
    attach0(socket.toString());
  }

  private static synchronized void attach0(String socket) {
    // Attached to a live server: nothing to do. Attached to a server that is gone (the heap still
    // mapped): the native attach asks its successor for this attachment back, and when the
    // successor serves another heap (a restore from a checkpoint, --fresh-heap) it ends this one
    // and begins a new attachment, like any attach.
    if (attached && Native.serverAlive()) return;
    final boolean wasAttached = attached && Native.isAttached();
    boolean fresh;
    synchronized (Roots.LOCK) {  // no Java-held root is released meanwhile
      Direct.invalidate();
      Mapped.clearAddresses();
      // Java's pooled roots belong to the attachment: dropped only when a new one began.
      fresh = Native.attach(socket);
      if (fresh) Roots.forgetLocked(Native.generation());
      Direct.invalidate();
    }
    // The lost attachment's proxies, as detach() drops them: the new heap has objects at the same
    // addresses, which must not be taken for theirs. (As for detach(), other threads must not use
    // shared objects meanwhile.)
    if (fresh && wasAttached) Proxies.clear();
    ReadCache.dropAll();  // the epoch moved: what was cached refers to the old one's handles
    attached = true;
    Proxies.startPressureWatcher();
  }

  /**
   * Detaches from the server: unmaps the heap and drops every root of this process. Proxies
   * obtained before throw {@link NotAttachedException} afterwards; repositories and channels are
   * looked up again when used. Does nothing when not attached. Calls of other threads that are
   * inside the binding's native code when it starts finish first (blocked ones, such as a channel
   * receive, throw {@link NotAttachedException}); calls they make while it runs throw
   * {@link NotAttachedException}.
   */
  public static void detach() {
    // First, holding no Java lock: wait for other threads' natives to leave the segment (a native
    // inside libshared may hold the heap's or a container's lock, which it would then release
    // into the private copy the detach leaves behind, and every process would wait for it).
    Native.beginDetach();
    try {
      detachLocked();
    } finally {
      Native.endDetach();
    }
  }

  private static synchronized void detachLocked() {
    if (!Native.isAttached()) {
      attached = false;
      return;
    }
    attached = false;
    Proxies.clear();
    synchronized (Roots.LOCK) {  // no Java-held root is released into the unmapped segment
      Direct.invalidate();
      Mapped.clearAddresses();
      Roots.forgetLocked(0);
      Native.detach();
    }
  }

  /**
   * Whether this process is attached to a server.
   *
   * @return true when attached and the server is alive; false once the server died (objects held
   *     stay readable and writable, but what needs the server throws {@link ServerGoneException})
   */
  public static boolean isAttached() {
    return Native.serverAlive();
  }

  /** Attaches implicitly (the default socket) unless attached. */
  static void ensureAttached() {
    if (!attached) attach();
  }

  // ---- durability ----------------------------------------------------------------------------

  /**
   * Asks the server for a checkpoint of the heap in its data directory ({@code colors-server
   * --data-dir}) and waits until one that began after this call is on disk. Client processes that
   * write while the heap is copied are stopped for the copy's last pages.
   *
   * @return the checkpoint's sequence number
   * @throws SharedMemoryException if the server has no data directory or the checkpoint failed
   *     (the message says why, e.g. a full disk; the heap in memory is intact)
   * @throws ServerGoneException if the server is gone
   * @throws InvalidArgumentException inside a transaction
   */
  public static long checkpoint() {
    ensureAttached();
    return Native.checkpoint();
  }

  // ---- read scopes ---------------------------------------------------------------------------

  /**
   * Opens a read scope on the calling thread: until it closes, the shared objects and containers
   * this thread reads are borrowed (no GC root, reference object or identity-cache entry per
   * proxy), and the scope keeps them alive instead. See {@link ReadScope} for what a borrowed
   * proxy may do; {@link ReadScope#keep} keeps one beyond the scope.
   *
   * @return the scope (use it with try-with-resources)
   * @throws InvalidArgumentException inside a transaction
   * @throws ServerGoneException if not attached and no server answers (it attaches implicitly)
   */
  public static ReadScope readScope() {
    return ReadScope.open();
  }

  // ---- collector -----------------------------------------------------------------------------

  /**
   * Asks the server's collector for a cycle that starts after this call and waits for it to
   * finish. Shared objects dropped before the call (no proxy, no repository, channel or other
   * object refers to them) are freed by the second such call at the latest.
   *
   * @return the statistics of that cycle
   * @throws SharedMemoryException if no collector runs
   * @throws SharedInterruptedException if the thread is interrupted while waiting
   */
  public static GcStats collect() {
    ensureAttached();
    dropCaches();
    return GcStats.of(Native.collect(-1));
  }

  /**
   * Like {@link #collect()}, waiting at most {@code timeout}.
   *
   * @param timeout the longest wait
   * @return the statistics of the cycle
   * @throws SharedMemoryException on timeout, or if no collector runs
   */
  public static GcStats collect(Duration timeout) {
    long ms = millis(timeout);
    ensureAttached();
    dropCaches();
    return GcStats.of(Native.collect(ms));
  }

  /** What a collect() lets go: the read cache, and the strings kept for writes ({@link StringWrites}). */
  private static void dropCaches() {
    ReadCache.dropAll();
    Direct.View v = Direct.currentOrMake();
    if (v != null) StringWrites.dropAll(v);
  }

  /**
   * Sets how many proxies may keep what they last read (the read cache) and empties it: a bound
   * instance's reference fields and a shared list's elements read again while the shared object
   * still holds them cost one load of shared memory and a comparison, and give the same proxies.
   * The price: what a proxy in the cache read stays reachable from it (its proxies, and through
   * their roots their shared objects, until the field or list changes and is read again, or a
   * collect, heap pressure or a store through this JVM drops it), about 250 bytes of Java heap
   * per proxy kept. The default is about an eighth of the JVM's maximum heap at that size, between
   * 4,096 and 2^20 proxies ({@code -Dcolors.readCache=N} sets it at start). Reads inside
   * transactions do not use it.
   *
   * @param capacity how many proxies may keep entries; 0 turns the cache off; at most 2^22
   * @return the previous capacity
   * @throws InvalidArgumentException if {@code capacity} is outside 0..2^22
   */
  public static int readCache(int capacity) {
    return ReadCache.setCapacity(capacity);
  }

  /**
   * The statistics of the collector's last finished cycle.
   *
   * @return the statistics ({@code cycle() == 0} if none ran yet)
   */
  public static GcStats gcStats() {
    ensureAttached();
    return GcStats.of(Native.gcStats());
  }

  /**
   * The occupancy of the shared heap.
   *
   * @return the heap statistics
   */
  public static HeapStats heapStats() {
    ensureAttached();
    return HeapStats.of(Native.heapStats());
  }

  // ---- creating shared objects ---------------------------------------------------------------

  /**
   * Deep-copies a private object graph into the shared heap and returns the shared copy of its
   * root. Lists and other non-set collections become {@link SharedList}s, sets {@link SharedSet}s,
   * maps {@link SharedMap}s, arrays of objects and of primitives (except byte[]) lists; scalars,
   * Strings and byte[] are copied as values; proxies of shared objects are used as they are. The
   * copy preserves sharing and cycles of the private graph (identity memo) and is iterative (no
   * recursion limit for deep graphs). The private graph is not changed.
   *
   * <p>Cost: graphs of user objects, arrays, lists, sets, maps, sorted maps, scalars, strings,
   * byte[] and proxies are encoded in Java and built in one native call (about 0.1 µs per object
   * plus its strings); what that copy declines (a value a field's shared type refuses, a sorted
   * map with a null key, an error to report) takes the per-object path (a proxy and native calls
   * per object and element). Both give the same result and raise the same exceptions.
   *
   * @param root the root of the private graph
   * @return the shared copy: a proxy, or the scalar value as it reads back (e.g. {@code Long})
   * @throws TypeMismatchException for an object of a class that cannot be shared
   */
  public static Object copyToSharedMemory(Object root) {
    ensureAttached();
    Object r = BulkWriter.copy(root);  // one native call for what it covers
    if (r != BulkWriter.FALLBACK) return r;
    return new Copier().run(root);
  }

  /**
   * Allocates an empty shared sorted map (a B+tree in the heap; see {@link SharedSortedMap}).
   *
   * @return the new map
   */
  public static SharedSortedMap newSortedMap() {
    ensureAttached();
    return (SharedSortedMap) SortedNative.newMap();
  }

  /**
   * Allocates an empty shared container.
   *
   * <ul>
   *   <li>{@code List.class}, {@code ArrayList.class}, {@code Collection.class},
   *       {@code SharedList.class}: a {@link SharedList} with room for {@code length} elements;
   *   <li>{@code Map.class}, {@code HashMap.class}, {@code SharedMap.class}: a {@link SharedMap};
   *   <li>{@code Set.class}, {@code HashSet.class}, {@code SharedSet.class}: a {@link SharedSet};
   *   <li>{@code NavigableMap.class}, {@code SortedMap.class}, {@code TreeMap.class},
   *       {@code SharedSortedMap.class}: a {@link SharedSortedMap} ({@code length} is ignored);
   *   <li>{@code byte[].class}: {@code new byte[length]} (binaries are immutable values in the heap,
   *       copied in when stored, like Strings).
   * </ul>
   *
   * A stock JVM cannot make a proxy an {@code ArrayList}/{@code HashMap}/{@code HashSet}: for those
   * class tokens the result is the proxy, to be used through its interface type.
   *
   * @param <T> the container type
   * @param containerClass the kind of container
   * @param length its initial capacity (not its size)
   * @return the new shared container
   * @throws TypeMismatchException for other classes
   */
  @SuppressWarnings("unchecked")
  public static <T> T allocate(Class<T> containerClass, int length) {
    if (length < 0) throw new InvalidArgumentException("allocate(): length must be >= 0, got " + length);
    if (containerClass == byte[].class) return (T) new byte[length];
    if (containerClass == java.util.NavigableMap.class || containerClass == java.util.SortedMap.class
        || containerClass == java.util.TreeMap.class || containerClass == SharedSortedMap.class) {
      return (T) newSortedMap();
    }
    int kind;
    if (containerClass == List.class || containerClass == ArrayList.class || containerClass == Collection.class
        || containerClass == SharedList.class) {
      kind = Proxies.LIST;
    } else if (containerClass == Map.class || containerClass == HashMap.class || containerClass == SharedMap.class) {
      kind = Proxies.MAP;
    } else if (containerClass == Set.class || containerClass == HashSet.class || containerClass == SharedSet.class) {
      kind = Proxies.SET;
    } else {
      throw new TypeMismatchException("allocate(" + containerClass.getName() + ", length): containers are List,"
          + " ArrayList, Map, HashMap, Set, HashSet, NavigableMap, SortedMap, TreeMap and byte[]; user classes:"
          + " allocate(Class)");
    }
    ensureAttached();
    return (T) Native.newContainer(kind, length);
  }

  /**
   * Allocates a shared container or a shared object of a user class.
   *
   * <p>Container classes ({@code List}, {@code Map}, {@code Set}, ...) as
   * {@link #allocate(Class, int)} with length 0. A {@link Shared} class rewritten by the colors
   * agent: a new shared object of the class's shared class (as {@link #allocateObject(Class)}),
   * returned as an instance of {@code cls} bound to it, made without running a constructor (its
   * fields are the shared object's: 0/false for primitives, null otherwise); field accesses on it,
   * anywhere, read and write the shared object. Other user classes (or without the agent) throw
   * {@link TypeMismatchException}: use {@link #allocateObject(Class)} (the {@link SharedObject}
   * view) or {@link #copyToSharedMemory(Object)} of an instance.
   *
   * @param <T> the class
   * @param cls a container class or a {@link Shared} class rewritten by the agent
   * @return the new shared container or bound instance
   */
  public static <T> T allocate(Class<T> cls) {
    Object fast = Mapped.allocateFast(cls);  // a registered mapped class, attached: no upcalls, one JNI call
    if (fast != null) return cls.cast(fast);
    if (SharedInstance.class.isAssignableFrom(cls) && ClassMapping.isUserClass(cls)) {
      try {
        Class.forName(cls.getName(), true, cls.getClassLoader());  // its initializer registers it
      } catch (ClassNotFoundException e) {
        throw new IllegalStateException(e);
      }
      if (Mapped.isRegistered(cls)) {
        SharedObject so = allocateObject(cls);
        Object inst = so.instance;
        if (cls.isInstance(inst)) return cls.cast(inst);
      }
    }
    if (ClassMapping.isUserClass(cls)) {
      throw new TypeMismatchException("allocate(" + cls.getName() + ".class) would return a " + cls.getSimpleName()
          + " bound to shared memory, which needs the class annotated @org.colors.Shared and the colors agent"
          + " (-javaagent:colors-agent.jar): use"
          + " SharedMemory.allocateObject(" + cls.getSimpleName() + ".class) for a SharedObject view of a new shared "
          + cls.getName() + ", or copyToSharedMemory(instance)");
    }
    return allocate(cls, 0);
  }

  /**
   * Allocates a shared object of the shared class mapped from a Java class: named by
   * {@link Class#getName()}, with the class's non-static, non-transient fields (superclass fields
   * first) and their shared types (integer for byte/short/int/long/char and boxes, float for
   * float/double, boolean, string, binary for byte[], list for lists and arrays, set, map, object
   * for user classes, any otherwise). The class version with exactly these fields is reused or
   * created. Fields of primitive Java types start at 0/false, the others at null.
   *
   * @param cls a user class
   * @return the view of the new shared object
   * @throws TypeMismatchException if {@code cls} is not a user class
   */
  public static SharedObject allocateObject(Class<?> cls) {
    ClassMapping m = ClassMapping.of(cls);
    ensureAttached();
    return m.allocate();
  }

  /**
   * Allocates a shared object of a shared class version (e.g. one from {@link #defineClass} or
   * {@link SharedType#versionsOf(String)}). Its fields start at null.
   *
   * @param type a user class version
   * @return the view of the new shared object
   */
  public static SharedObject allocateObject(SharedType type) {
    if (type.kind() != SharedType.Kind.OBJECT) {
      throw new TypeMismatchException("allocateObject(): " + type.name() + " is a builtin type, not a user class");
    }
    return Proxies.viewOf(Native.newObject(type.ptr()));
  }

  private static String typeName(Object o) {
    return o == null ? "null" : o.getClass().getName();
  }

  /**
   * The version of shared class {@code name} with exactly these fields (in any order), created if
   * there is none: for classes without a Java class here (e.g. defined by a Python program).
   *
   * @param name the fully qualified class name, e.g. {@code demo.Employee}
   * @param fields field names and their shared types, in slot order
   * @return the class version
   */
  public static SharedType defineClass(String name, Map<String, SharedType.Kind> fields) {
    String[] names = new String[fields.size()];
    int[] kinds = new int[fields.size()];
    String[] classNames = new String[fields.size()];
    int i = 0;
    for (Map.Entry<?, ?> e : fields.entrySet()) {  // checked: a raw map may hold anything
      if (e.getKey() == null || e.getValue() == null) {
        throw new NullPointerException("defineClass: a null field " + (e.getKey() == null ? "name" : "type"));
      }
      if (!(e.getKey() instanceof String) || !(e.getValue() instanceof SharedType.Kind)) {
        throw new InvalidArgumentException("defineClass: fields must map String names to SharedType.Kind values, got "
            + typeName(e.getKey()) + " -> " + typeName(e.getValue()));
      }
      if (e.getValue() == SharedType.Kind.NULL) throw new InvalidArgumentException("NULL is not a field type");
      names[i] = (String) e.getKey();
      kinds[i] = ((SharedType.Kind) e.getValue()).code;
      classNames[i] = "";
      i++;
    }
    ensureAttached();
    return SharedType.of(Native.defineClass(name, names, kinds, classNames));
  }

  /**
   * Whether {@code o} is a shared object (a proxy of an object in the shared heap). Scalars,
   * Strings and byte arrays read from shared memory are private values: false.
   *
   * @param o any object
   * @return true for proxies of shared objects
   */
  public static boolean isObjectShared(Object o) {
    return Proxies.handleOf(o) != null;
  }

  /**
   * The {@link SharedObject} view of a shared user object: the object itself if it is a view, the
   * view an instance of a {@link Shared} class is bound to (agent), else null (private objects).
   *
   * @param o any object
   * @return its view, or null
   */
  public static SharedObject sharedView(Object o) {
    return Proxies.viewOf(o);
  }

  /**
   * The shared type (class version) of a shared object.
   *
   * @param o a shared object
   * @return its shared type
   * @throws TypeMismatchException if {@code o} is not shared
   */
  public static SharedType getSharedType(Object o) {
    Handle h = Proxies.handleOf(o);
    if (h == null) {
      throw new TypeMismatchException("getSharedType(): " + (o == null ? "null" : "a private " + o.getClass().getName())
          + " is not a shared object");
    }
    return SharedType.of(Native.classOf(h));
  }

  // ---- repositories and channels -------------------------------------------------------------

  /**
   * The repository named {@code key}, created if it does not exist yet.
   *
   * @param key the name (at most 1024 bytes of UTF-8)
   * @return the repository (the same instance for the same name, until the repository is deleted)
   */
  public static ObjectRepository findOrCreateRepository(String key) {
    ObjectRepository r = REPOSITORIES.get(key);
    if (r != null && !r.deleted()) return r;
    ensureAttached();
    // A cached handle whose repository was deleted (here or in another process) is replaced; the
    // old instance keeps throwing SharedKeyException.
    return REPOSITORIES.compute(key, (k, old) -> old != null && old != r && !old.deleted()
        ? old : new ObjectRepository(k, Native.repoFind(k)));
  }

  /**
   * Deletes the repository named {@code key}: its value is no longer a root of the shared heap
   * and its memory is reused. Every existing {@link ObjectRepository} of it, in any process,
   * throws {@link SharedKeyException} from then on, also once the name is created again.
   *
   * @param key the name
   * @return false if there was no such repository
   */
  public static boolean deleteRepository(String key) {
    ensureAttached();
    boolean deleted = Native.repoDelete(key);
    REPOSITORIES.computeIfPresent(key, (k, r) -> r.deleted() ? null : r);
    return deleted;
  }

  /**
   * Deletes the channel named {@code key} and drops the values queued in it; its memory is
   * reused. Threads of any process blocked in send or receive on it, and every later use of an
   * existing {@link ObjectChannel} of it, throw {@link SharedKeyException}.
   *
   * @param key the name
   * @return false if there was no such channel
   */
  public static boolean deleteChannel(String key) {
    ensureAttached();
    boolean deleted = Native.chanDelete(key);
    CHANNELS.computeIfPresent(key, (k, c) -> c.deleted() ? null : c);
    return deleted;
  }

  /** The largest capacity {@link #findOrCreateChannel(String, int)} accepts. */
  public static final int CHANNEL_MAX_CAPACITY = 65536;

  /**
   * The channel named {@code key}, created with capacity 64 if it does not exist yet.
   *
   * @param key the name
   * @return the channel (the same instance for the same name)
   */
  public static ObjectChannel findOrCreateChannel(String key) {
    return findOrCreateChannel(key, 64);
  }

  /**
   * The channel named {@code key}, created with {@code capacity} if it does not exist yet (an
   * existing channel keeps its capacity).
   *
   * @param key the name
   * @param capacity the number of values it holds at most (1 to {@link #CHANNEL_MAX_CAPACITY})
   * @return the channel (the same instance for the same name, until the channel is deleted)
   */
  public static ObjectChannel findOrCreateChannel(String key, int capacity) {
    if (capacity < 1 || capacity > CHANNEL_MAX_CAPACITY) {
      throw new InvalidArgumentException("channel capacity must be between 1 and " + CHANNEL_MAX_CAPACITY
          + " (the maximum), got " + capacity);
    }
    ObjectChannel c = CHANNELS.get(key);
    if (c != null && !c.deleted()) return c;
    ensureAttached();
    return CHANNELS.compute(key, (k, old) -> old != null && old != c && !old.deleted()
        ? old : new ObjectChannel(k, Native.chanFind(k, capacity)));
  }

  // ---- monitors ------------------------------------------------------------------------------

  private static long monitorAddress(Object obj) {
    if (obj instanceof ObjectRepository) return ((ObjectRepository) obj).monitorAddress();
    Handle h = Proxies.handleOf(obj);
    if (h == null) {
      throw new TypeMismatchException("only shared objects and repositories have shared monitors, not "
          + (obj == null ? "null" : "a private " + obj.getClass().getName())
          + " (use synchronized for private objects, or copyToSharedMemory() to share it)");
    }
    Native.kind(h);  // NotAttachedException for a proxy of a closed attachment
    return h.raw;
  }

  /**
   * Locks the shared monitor of a shared object or repository, waiting as long as needed.
   * Re-entrant. Use it in try-with-resources.
   *
   * @param obj a shared object (proxy) or an {@link ObjectRepository}
   * @return the held monitor; {@link SharedMonitor#close()} unlocks it
   * @throws OwnerDiedException (once) if a process died holding the monitor; it is free again
   * @throws SharedInterruptedException if the thread is interrupted while waiting for it
   * @throws TypeMismatchException if {@code obj} is not shared
   */
  public static SharedMonitor lock(Object obj) {
    long a = monitorAddress(obj);
    Native.monitorEnter(a, -1);
    return new SharedMonitor(obj, a);
  }

  /**
   * Locks the shared monitor of a shared object or repository, waiting at most {@code timeout}.
   *
   * @param obj a shared object (proxy) or an {@link ObjectRepository}
   * @param timeout the longest wait
   * @return the held monitor, or null on timeout
   * @throws OwnerDiedException (once) if a process died holding the monitor; it is free again
   */
  public static SharedMonitor tryLock(Object obj, Duration timeout) {
    long ms = millis(timeout);
    long a = monitorAddress(obj);
    if (!Native.monitorEnter(a, ms)) return null;
    return new SharedMonitor(obj, a);
  }

  // ---- helpers -------------------------------------------------------------------------------

  static long checkTimeout(long ms) {
    if (ms < 0) throw new InvalidArgumentException("timeout must be >= 0 milliseconds, got " + ms);
    return ms;
  }

  // ---- transactions (Transaction; bindings-java/README.md, "Transactions") ------------------

  /** The retries of {@link #atomically(Supplier)} and {@link #atomically(Runnable)}. */
  public static final int DEFAULT_TRANSACTION_RETRIES = 100;

  /** From this attempt on, atomically's transaction holds what it reads (libshared's kEscalateAttempt). */
  private static final int ESCALATE_ATTEMPT = 3;

  /**
   * Begins a transaction on the calling thread, or joins the one it runs (flat nesting). Use it in
   * try-with-resources: closing it without {@link Transaction#commit()} rolls it back.
   *
   * <pre>{@code
   * try (Transaction tx = SharedMemory.beginTransaction()) {
   *   from.set("balance", from.getLong("balance") - amount);
   *   to.set("balance", to.getLong("balance") + amount);
   *   tx.commit();
   * }
   * }</pre>
   *
   * @return the transaction (this level of it, when joined)
   * @throws TransactionAbortedException if joining a transaction that is already doomed
   * @throws InvalidArgumentException if too many threads (of all processes) run transactions at once
   */
  public static Transaction beginTransaction() {
    return Transaction.begin(0);
  }

  /**
   * Begins a transaction that fails with {@link TransactionAbortedException} once it has run
   * longer than {@code timeout} (its operations and its commit throw; it is rolled back when it
   * ends). A joined transaction keeps the outer one's deadline.
   *
   * @param timeout how long the transaction may run (positive)
   * @return the transaction
   * @throws InvalidArgumentException if the timeout is not positive
   */
  public static Transaction beginTransaction(Duration timeout) {
    if (timeout.isNegative() || timeout.isZero()) {
      throw new InvalidArgumentException("a transaction's timeout must be positive, got " + timeout);
    }
    long ns;
    try {
      ns = timeout.toNanos();
    } catch (ArithmeticException e) {
      ns = 0;  // longer than ~292 years: no limit
    }
    return Transaction.begin(ns);
  }

  /**
   * Whether the calling thread runs a transaction.
   *
   * @return true between a {@link #beginTransaction()} and the end of its outermost level
   */
  public static boolean inTransaction() {
    return Transaction.active();
  }

  /**
   * Runs {@code body} in a transaction and commits it, retrying up to
   * {@value #DEFAULT_TRANSACTION_RETRIES} times on {@link TransactionConflictException}; see
   * {@link #atomically(Supplier, int)}.
   *
   * @param <T> the result type
   * @param body the transaction's code; it may run several times, so it should have no effects
   *     besides shared-memory ones
   * @return what {@code body} returned in the attempt that committed
   */
  public static <T> T atomically(java.util.function.Supplier<T> body) {
    return atomically(body, DEFAULT_TRANSACTION_RETRIES);
  }

  /**
   * Runs {@code body} in a transaction and commits it. On {@link TransactionConflictException}
   * (from {@code body} or the commit) the attempt is rolled back and run again after a randomised
   * exponential backoff, up to {@code retries} more times; from the fourth attempt on, the
   * transaction holds what it reads as it holds what it writes, so that it cannot starve behind
   * writers. Any other exception rolls the attempt back and propagates. Inside an enclosing
   * transaction {@code body} joins it and is not retried: a conflict propagates to the outermost.
   *
   * @param <T> the result type
   * @param body the transaction's code (may run several times)
   * @param retries how many times to retry on a conflict (0: none)
   * @return what {@code body} returned in the attempt that committed
   * @throws TransactionConflictException when the last attempt conflicted
   * @throws InvalidArgumentException if {@code retries} is negative
   */
  public static <T> T atomically(java.util.function.Supplier<T> body, int retries) {
    java.util.Objects.requireNonNull(body, "body");
    if (retries < 0) throw new InvalidArgumentException("retries must not be negative, got " + retries);
    ensureAttached();
    final boolean nested = Transaction.active();
    for (int attempt = 0;; attempt++) {
      try (Transaction tx = Transaction.begin(0)) {
        if (!nested && attempt >= ESCALATE_ATTEMPT) Transaction.escalate();
        T r = body.get();
        tx.commit();
        return r;
      } catch (TransactionConflictException e) {
        if (nested || attempt >= retries) throw e;
      }
      Transaction.backoff(attempt + 1);
    }
  }

  /**
   * Runs {@code body} in a transaction and commits it, retrying on conflicts as
   * {@link #atomically(Supplier)}.
   *
   * @param body the transaction's code (may run several times)
   */
  public static void atomically(Runnable body) {
    atomically(body, DEFAULT_TRANSACTION_RETRIES);
  }

  /**
   * Runs {@code body} in a transaction and commits it, retrying up to {@code retries} times on
   * conflicts as {@link #atomically(Supplier, int)}.
   *
   * @param body the transaction's code (may run several times)
   * @param retries how many times to retry on a conflict (0: none)
   */
  public static void atomically(Runnable body, int retries) {
    java.util.Objects.requireNonNull(body, "body");
    atomically(() -> {
      body.run();
      return null;
    }, retries);
  }

  static long millis(Duration d) {
    if (d.isNegative()) throw new InvalidArgumentException("timeout must not be negative, got " + d);
    try {
      long ms = d.toMillis();
      if (d.toNanos() % 1_000_000 != 0) ms++;  // round up: never return before the timeout
      return ms;
    } catch (ArithmeticException e) {
      return -1;  // longer than ~292 million years: no limit
    }
  }

  /** Native handles currently held (tests). */
  static long liveHandles() {
    return Native.liveHandles() + Roots.live();
  }

  /** Live entries of the identity cache (tests). */
  static int identityCacheSize() {
    return Proxies.cacheSize();
  }

  /** Stores a value into the heap and reads it back (tests). */
  static Object roundTrip(Object v) {
    int t = Codec.tag(v);
    ensureAttached();
    return Native.roundTrip(t, Codec.bits(v, t), Codec.obj(v, t));
  }
}
