package org.colors;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The Java classes mapped by the agent ({@link Shared} classes that registered themselves from
 * their static initializer), and the making of their instances bound to shared objects.
 *
 * <p>Bound instances are made without running a constructor ({@code Unsafe.allocateInstance}):
 * their state is the shared object's, so constructors and field initializers would only overwrite
 * it. Their Java fields stay at their defaults and are never read while bound.
 */
final class Mapped {
  private Mapped() {}

  /** Shared class name -> Java class. */
  private static final ConcurrentHashMap<String, Class<?>> BY_NAME = new ConcurrentHashMap<>();
  /** Class version address -> Java class (or NONE), per attachment; cleared on attach/detach. */
  private static final ConcurrentHashMap<Long, Class<?>> BY_CLASS = new ConcurrentHashMap<>();
  private static final Class<?> NONE = Void.class;

  /**
   * A direct-mapped cache in front of {@link #BY_CLASS} (whose lookups box the address): what class
   * version {@code cls} mapped to in generation {@code gen}. Invariant: an entry whose generation
   * is {@link #GENERATION} was computed after the last {@link #register} or
   * {@link #clearAddresses}, which bump the generation before they clear {@code BY_CLASS}.
   */
  private record ClassHit(long cls, Class<?> jc, long gen) {}

  private static final ClassHit[] HITS = new ClassHit[64];
  private static final java.util.concurrent.atomic.AtomicLong GENERATION = new java.util.concurrent.atomic.AtomicLong();

  static void register(Class<?> cls, String sharedName) {
    if (!SharedInstance.class.isAssignableFrom(cls)) {
      throw new IllegalArgumentException(cls.getName() + " was not rewritten by the colors agent");
    }
    BY_NAME.put(sharedName, cls);
    GENERATION.incrementAndGet();  // after the put: a lookup that reads the new generation sees it
    BY_CLASS.clear();
  }

  static boolean isRegistered(Class<?> cls) {
    return BY_NAME.get(sharedName(cls)) == cls;
  }

  static void clearAddresses() {
    GENERATION.incrementAndGet();
    BY_CLASS.clear();
  }

  /** At detach: bound instances keep their view (which then throws NotAttachedException) but lose the fast path. */
  static void unbind(Object proxy) {
    if (proxy instanceof SharedInstance) {
      SharedInstance i = (SharedInstance) proxy;
      SharedObject v = i.$colors$view();
      if (v != null) i.$colors$bind(v, SharedField.NO_ADDRESS);
    }
  }

  /** The shared class name of a Java class: {@link Shared#name()} if given, else its name. */
  static String sharedName(Class<?> cls) {
    Shared s = cls.getDeclaredAnnotation(Shared.class);
    return s != null && !s.name().isEmpty() ? s.name() : cls.getName();
  }

  /**
   * What a new proxy of a shared user object is: an instance of its mapped Java class bound to
   * {@code so}, or {@code so} itself.
   */
  static Object proxyFor(SharedObject so) {
    Handle h = so.handle;
    Direct.View v = Direct.viewFor(h);
    long cls = v != null ? v.classOf(h.raw) : Native.classOf(h);
    long gen = GENERATION.get();
    int i = (int) (cls >>> 4) & (HITS.length - 1);
    ClassHit hit = HITS[i];
    Class<?> jc;
    if (hit != null && hit.cls == cls && hit.gen == gen) {
      jc = hit.jc;
    } else {
      jc = BY_CLASS.get(cls);
      if (jc == null) {
        String name = Native.className(cls);
        Class<?> found = BY_NAME.get(name);
        if (found == null) found = loadMapped(name);
        jc = found == null ? NONE : found;
        BY_CLASS.put(cls, jc);
      }
      HITS[i] = new ClassHit(cls, jc, gen);  // gen read before the lookup: stale if a register came since
    }
    if (jc == NONE) return so;
    return bind(so, jc);
  }

  /** A new instance of the mapped class {@code jc} bound to {@code so}. */
  static Object bind(SharedObject so, Class<?> jc) {
    Handle h = so.handle;
    Object inst = allocateInstance(jc);
    so.instance = inst;  // first: $colors$bind takes only the view's own instance
    ((SharedInstance) inst).$colors$bind(so, Direct.viewFor(h) != null ? h.raw : SharedField.NO_ADDRESS);
    return inst;
  }

  // ---- allocation without the JNI round trips of allocateObject ----------------------------------

  /** Per Java class: whether it is mapped, and its shared class version and zero fields per attachment. */
  private static final class Alloc {
    final Class<?> cls;
    volatile boolean registered;
    /** {epoch, shared class, then (slot, word) pairs of the primitive fields' zeros}; null before the first use. */
    volatile long[] plan;

    Alloc(Class<?> cls) {
      this.cls = cls;
    }
  }

  private static final ClassValue<Alloc> ALLOC = new ClassValue<>() {
    @Override
    protected Alloc computeValue(Class<?> type) {
      return new Alloc(type);
    }
  };

  /**
   * A new shared object of the mapped class {@code cls} as a bound instance, made with one JNI call
   * ({@link Direct#newObject}: allocation and root), its primitive fields set to Java's zeros by
   * plain stores (the object is not reachable by anyone else yet; the words are scalars over null,
   * so no barrier is needed), and its proxy made in Java ({@link Proxies#adopt}); null when the fast
   * path does not apply (not a registered mapped class, no Unsafe, not attached): the caller takes
   * the {@code allocateObject} path, which does the same through JNI. Inside a read scope the
   * object is allocated in the scope (no root) and its proxy is borrowed ({@link ReadScope}).
   */
  static Object allocateFast(Class<?> cls) {
    if (Direct.UNSAFE == null) return null;
    Alloc a = ALLOC.get(cls);
    if (!a.registered) {
      if (!SharedInstance.class.isAssignableFrom(cls) || !isRegistered(cls)) return null;
      a.registered = true;
    }
    Direct.View v = Direct.currentOrMake();
    if (v == null) return null;
    long[] plan = a.plan;
    if (plan == null || plan[0] != v.epoch) plan = plan(a, v);
    ReadScope.State sc = ReadScope.here();
    if (sc != null) {
      // In a read scope: no root, the scope keeps it; its proxy is borrowed like what it reads.
      long raw = Direct.newObjectScoped(plan[1]);
      zeroPrimitives(v, raw, plan);
      return sc.borrow(v, raw, Proxies.OBJECT, cls);
    }
    long slot = Direct.newObject(plan[1]);
    Roots.adopted();
    long raw = v.load(slot);
    zeroPrimitives(v, raw, plan);
    return Proxies.adopt(v, slot, raw, Proxies.OBJECT, cls);
  }

  /** Stores the plan's zeros into the primitive fields of the new object at {@code raw}. */
  private static void zeroPrimitives(Direct.View v, long raw, long[] plan) {
    int inline = v.inlineSlots(raw);
    for (int i = 2; i < plan.length; i += 2) {
      long at = v.slotAddress(raw, (int) plan[i], inline);
      if (at != 0) v.storeRelease(at, plan[i + 1]);
    }
  }

  private static synchronized long[] plan(Alloc a, Direct.View v) {
    ClassMapping m = ClassMapping.of(a.cls);
    long shared = m.sharedClass();
    java.util.List<Long> p = new java.util.ArrayList<>();
    p.add(v.epoch);
    p.add(shared);
    for (ClassMapping.MappedField f : m.fields) {  // as ClassMapping.allocate
      Class<?> t = f.field.getType();
      if (!t.isPrimitive()) continue;
      long[] r = Direct.resolve(shared, f.name);
      if (r == null) continue;
      long word = t == boolean.class ? Words.boolWord(false)
          : (t == double.class || t == float.class) ? Words.smallFloatWord(0L) : Words.smallWord(0);
      p.add(r[0]);
      p.add(word);
    }
    long[] plan = new long[p.size()];
    for (int i = 0; i < plan.length; i++) plan[i] = p.get(i);
    a.plan = plan;
    return plan;
  }

  /**
   * The Java class named like a shared class if it is a mapped class not initialized yet (its
   * static initializer registers it): loaded without initialization first, so other classes of
   * that name are left alone. Through the thread's context class loader, then colors.jar's.
   */
  private static Class<?> loadMapped(String name) {
    ClassLoader[] loaders = {Thread.currentThread().getContextClassLoader(), Mapped.class.getClassLoader()};
    for (ClassLoader l : loaders) {
      try {
        Class<?> c = Class.forName(name, false, l);
        if (!SharedInstance.class.isAssignableFrom(c)) return null;
        Class.forName(name, true, l);  // registers itself
        return BY_NAME.get(name);
      } catch (ClassNotFoundException | LinkageError | SecurityException e) {
        // not visible through this loader
      }
    }
    return null;
  }

  private static final MethodHandle ALLOCATE_INSTANCE;

  static {
    MethodHandle mh = null;
    try {
      Class<?> u = Class.forName("sun.misc.Unsafe");
      Field f = u.getDeclaredField("theUnsafe");
      f.setAccessible(true);
      mh = MethodHandles.lookup().findVirtual(u, "allocateInstance", MethodType.methodType(Object.class, Class.class))
          .bindTo(f.get(null));
    } catch (ReflectiveOperationException | RuntimeException e) {
      mh = null;
    }
    ALLOCATE_INSTANCE = mh;
  }

  static Object allocateInstance(Class<?> cls) {
    if (ALLOCATE_INSTANCE == null) {
      throw new SharedMemoryException("colors: sun.misc.Unsafe (module jdk.unsupported) is needed to make instances of "
          + cls.getName() + " bound to shared memory");
    }
    try {
      return ALLOCATE_INSTANCE.invoke(cls);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new SharedMemoryException("colors: cannot make an instance of " + cls.getName() + ": " + t, t);
    }
  }
}
