package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import demo.staff.Copied;
import demo.staff.Employee;
import demo.staff.Failure;
import demo.staff.Frozen;
import demo.staff.Manager;
import demo.staff.Named;
import demo.staff.OnPlainBase;
import demo.staff.Outer;
import demo.staff.Raised;
import demo.staff.Outside;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The agent's transparency (field accesses of @Shared classes read and write shared objects) and
 * the field fast path (no JNI), checked against the JNI path for every scalar kind. The tests JVM
 * runs with -javaagent (pom.xml).
 */
@ExtendWith(ColorsServer.class)
class AgentTest {
  static SharedObject view(Object o) {
    SharedObject v = SharedMemory.sharedView(o);
    assertTrue(v != null, "not bound to a shared object");
    return v;
  }

  /** The field as the JNI path reads it. */
  static Object jni(Object o, String field) {
    return Native.objGet(view(o).handle, field);
  }

  @Test
  void agentIsActive() {
    assertTrue(SharedInstance.class.isAssignableFrom(Employee.class), "run the tests with -javaagent (pom.xml)");
    Employee e = new Employee("private", 1.0);  // constructors still work on private instances
    e.salary += 2;
    e.raise(3);
    assertEquals(6.0, e.salary);
    assertFalse(SharedMemory.isObjectShared(e));
    assertNull(SharedMemory.sharedView(e));
  }

  @Test
  void allocateReturnsABoundInstance() {
    Employee e = SharedMemory.allocate(Employee.class);
    assertTrue(SharedMemory.isObjectShared(e));
    assertEquals("demo.staff.Employee", view(e).className());
    assertEquals(0, e.age);  // shared defaults, no constructor ran
    assertNull(e.name);
    ObjectRepository r = SharedMemory.findOrCreateRepository("agent-identity");
    r.set(e);
    assertSame(e, r.get());  // identity: the same shared object gives the same Java object
    List<Object> l = SharedMemory.allocate(List.class);
    l.add(e);
    assertSame(e, l.get(0));
    Named n = SharedMemory.allocate(Named.class);
    n.x = 4;
    assertEquals("staff.NamedThing", view(n).className());
    assertEquals(4L, jni(n, "x"));
  }

  @Test
  void fastReadsAgreeWithJniForEveryKind() {
    Employee e = SharedMemory.allocate(Employee.class);
    SharedObject v = view(e);
    v.set("age", 42);
    v.set("id", -(1L << 59));  // smallest unboxed integer
    v.set("active", true);
    v.set("level", (long) Short.MIN_VALUE);
    v.set("grade", (long) Byte.MAX_VALUE);
    v.set("initial", (long) 'Z');
    v.set("salary", 1234.5);
    v.set("bonus", 0.25);
    v.set("name", "Smith");
    assertEquals(((Long) jni(e, "age")).intValue(), e.age);
    assertEquals((long) (Long) jni(e, "id"), e.id);
    assertEquals(jni(e, "active"), e.active);
    assertEquals(((Long) jni(e, "level")).shortValue(), e.level);
    assertEquals(((Long) jni(e, "grade")).byteValue(), e.grade);
    assertEquals((char) (long) (Long) jni(e, "initial"), e.initial);
    assertEquals((double) (Double) jni(e, "salary"), e.salary);
    assertEquals(((Double) jni(e, "bonus")).floatValue(), e.bonus);
    assertEquals(jni(e, "name"), e.name);
    // Wide integers are boxed: the slow path.
    v.set("id", Long.MAX_VALUE);
    assertEquals(Long.MAX_VALUE, e.id);
    v.set("id", Long.MIN_VALUE);
    assertEquals(Long.MIN_VALUE, e.id);
    // Special floats through the seqlock path.
    for (double d : new double[] {Double.NaN, -0.0, Double.MIN_VALUE, Double.MAX_VALUE, Double.NEGATIVE_INFINITY}) {
      v.set("salary", d);
      assertEquals(Double.doubleToRawLongBits(d), Double.doubleToRawLongBits(e.salary));
    }
    // An integer in a float field (widened when exact), and in an 'any' field read as an int.
    v.set("extra", 7L);
    assertEquals(7L, e.extra);
  }

  @Test
  void fastWritesAgreeWithJniForEveryKind() {
    Employee e = SharedMemory.allocate(Employee.class);
    e.age = -17;
    e.id = (1L << 59) - 1;
    e.active = true;
    e.level = Short.MAX_VALUE;
    e.grade = Byte.MIN_VALUE;
    e.initial = '\uffff';
    e.salary = 99.75;
    e.bonus = 1.5f;
    e.name = "Jones \ud83d\ude00";
    e.extra = "any";
    assertEquals(-17L, jni(e, "age"));
    assertEquals((1L << 59) - 1, jni(e, "id"));
    assertEquals(true, jni(e, "active"));
    assertEquals((long) Short.MAX_VALUE, jni(e, "level"));
    assertEquals((long) Byte.MIN_VALUE, jni(e, "grade"));
    assertEquals(0xffffL, jni(e, "initial"));
    assertEquals(99.75, jni(e, "salary"));
    assertEquals(1.5, jni(e, "bonus"));
    assertEquals("Jones \ud83d\ude00", jni(e, "name"));
    assertEquals("any", jni(e, "extra"));
    e.id = Long.MIN_VALUE;  // boxed: JNI
    assertEquals(Long.MIN_VALUE, jni(e, "id"));
    e.id = 5;  // back to unboxed, over a boxed integer (a reference: flagged)
    assertEquals(5L, jni(e, "id"));
    e.active = false;
    assertEquals(false, jni(e, "active"));
    e.name = null;
    assertNull(jni(e, "name"));
    // Compound assignments, inside and outside the class.
    e.salary = 100;
    e.salary += 10;
    e.raise(5);
    Outside.give(e, 1);
    assertEquals(116.0, jni(e, "salary"));
    e.age++;
    assertEquals(-16L, jni(e, "age"));
    // Doubles in the immediate range are stored without JNI, the others boxed through JNI; both
    // read back bit for bit through the fast read and through JNI.
    double[] doubles = {0.0, -0.0, 0.1, -2.5e-30, 3.4e38, Math.scalb(1.0, -126), Math.scalb(1.0, 129), 1e300,
        Double.MIN_VALUE, Double.MAX_VALUE, Double.NaN, Double.POSITIVE_INFINITY, -Double.MIN_NORMAL};
    for (double d : doubles) {
      e.salary = d;
      assertEquals(Double.doubleToRawLongBits(d), Double.doubleToRawLongBits(e.salary), "fast read of " + d);
      assertEquals(Double.doubleToRawLongBits(d), Double.doubleToRawLongBits((Double) jni(e, "salary")),
          "JNI read of " + d);
    }
    for (float f : new float[] {0.5f, -0.0f, Float.MIN_VALUE, Float.MAX_VALUE, Float.NaN}) {
      e.bonus = f;
      assertEquals(Float.floatToRawIntBits(f), Float.floatToRawIntBits(e.bonus), "float " + f);
    }
    // The Java fields of the bound instance were never touched.
    Employee[] es = {e, SharedMemory.allocate(Employee.class)};
    es[1].age = 20;
    assertEquals(4, Outside.sumAges(es));
  }

  /**
   * String fields written through bound instances (encoded to UTF-8 in Java, one JNI call):
   * every UTF-8 length, the encoding's boundaries, NUL, the empty string and strings past the
   * native's stack buffer read back equal through the fast read and through JNI, in a field typed
   * String and in one typed Object; a lone surrogate is refused with the binding's error and
   * leaves the field as it was.
   */
  @Test
  void stringFieldWritesOfEveryKindReadBackEqual() {
    Employee e = SharedMemory.allocate(Employee.class);
    StringBuilder big = new StringBuilder();
    for (int i = 0; i < 700; i++) big.append(i % 3 == 0 ? "\u00e9" : i % 3 == 1 ? "\u65e5" : "\ud83d\ude00");
    String[] strings = {"", "a", "node-000001", "nul\u0000inside", "\u007f\u0080\u07ff\u0800\uffff",
        "\ud800\udc00\udbff\udfff", "x".repeat(1024), "y".repeat(1025), big.toString()};
    for (String str : strings) {
      e.name = str;
      e.extra = str;
      assertEquals(str, e.name, "fast read");
      assertEquals(str, jni(e, "name"), "JNI read");
      assertEquals(str, e.extra);
      assertEquals(str, jni(e, "extra"));
    }
    e.name = "kept";
    for (String lone : new String[] {"x\ud800", "\udc00", "a\ud83d b"}) {
      InvalidArgumentException x = assertThrows(InvalidArgumentException.class, () -> e.name = lone);
      assertTrue(x.getMessage().contains("lone surrogate"), x.getMessage());
      assertEquals("kept", e.name);
    }
  }

  /**
   * Threads writing strings at once each store their own: the UTF-8 of a string goes through a
   * buffer of the writing thread (Direct.Utf8Buffer), never another thread's.
   */
  @Test
  void concurrentStringWritesEachStoreTheirOwnString() throws Exception {
    int threads = 4, writes = 3000;
    Employee[] es = new Employee[threads];
    for (int t = 0; t < threads; t++) es[t] = SharedMemory.allocate(Employee.class);
    List<String> wrong = java.util.Collections.synchronizedList(new ArrayList<>());
    List<Thread> ts = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      final int me = t;
      Thread w = new Thread(() -> {
        for (int i = 0; i < writes; i++) {
          String mine = "thread " + me + " write " + i + " \u00e9\u65e5";
          es[me].name = mine;
          String back = (String) jni(es[me], "name");
          if (!mine.equals(back)) wrong.add(mine + " read back as " + back);
        }
      });
      ts.add(w);
      w.start();
    }
    for (Thread w : ts) w.join(60_000);
    assertTrue(wrong.isEmpty(), wrong.size() + " writes stored another string, e.g. " + (wrong.isEmpty() ? "" : wrong.get(0)));
  }

  @Test
  void referencesBetweenBoundInstances() {
    Employee e = SharedMemory.allocate(Employee.class);
    Manager m = SharedMemory.allocate(Manager.class);
    assertEquals("demo.staff.Manager", view(m).className());
    m.name = "Boss";
    assertEquals(1, m.addReport());
    e.manager = m;
    assertSame(m, e.manager);
    assertEquals("Boss", e.manager.name);
    assertSame(m, jni(e, "manager"));
    Employee priv = new Employee("private", 1);
    SharedMemoryException x = assertThrows(SharedMemoryException.class, () -> e.manager = priv);
    assertTrue(x.getMessage().contains("copyToSharedMemory"), x.getMessage());
    e.manager = null;
    assertNull(e.manager);
    // copyToSharedMemory of a private instance gives a bound instance.
    Object copy = SharedMemory.copyToSharedMemory(priv);
    assertTrue(copy instanceof Employee);
    assertEquals("private", ((Employee) copy).name);
    assertEquals(1.0, ((Employee) copy).salary);
  }

  @Test
  void typeMismatchesRaise() {
    Map<String, SharedType.Kind> fields = new LinkedHashMap<>();
    fields.put("name", SharedType.Kind.STRING);
    fields.put("age", SharedType.Kind.STRING);
    fields.put("active", SharedType.Kind.INTEGER);
    fields.put("salary", SharedType.Kind.FLOAT);
    SharedType t = SharedMemory.defineClass("demo.staff.Employee", fields);
    SharedObject so = SharedMemory.allocateObject(t);
    Employee e = (Employee) so.instance;
    assertThrows(TypeMismatchException.class, () -> e.age = 5);
    assertThrows(TypeMismatchException.class, () -> e.active = true);
    so.set("age", "old");
    assertThrows(TypeMismatchException.class, () -> System.out.println(e.age));
    so.set("active", 1L << 40);
    assertThrows(TypeMismatchException.class, () -> System.out.println(e.active));
    e.salary = 3;  // an int into a float field: widened by the slow path
    assertEquals(3.0, jni(e, "salary"));
    // Overflow: a shared integer that does not fit the Java field.
    Employee f = SharedMemory.allocate(Employee.class);
    view(f).set("age", 1L << 40);
    assertThrows(SharedOverflowException.class, () -> System.out.println(f.age));
    view(f).set("grade", 300);
    assertThrows(SharedOverflowException.class, () -> System.out.println(f.grade));
  }

  @Test
  void schemaEvolutionAddsMissingFields() {
    Map<String, SharedType.Kind> fields = new LinkedHashMap<>();
    fields.put("name", SharedType.Kind.STRING);
    fields.put("salary", SharedType.Kind.FLOAT);
    fields.put("state", SharedType.Kind.STRING);  // not mapped in Java: kept
    SharedType old = SharedMemory.defineClass("demo.staff.Employee", fields);
    SharedObject so = SharedMemory.allocateObject(old);
    so.set("state", "CA");
    Employee e = (Employee) so.instance;
    e.name = "Smith";
    e.salary = 10;
    assertEquals(0, e.age);  // missing in the shared version: Java's default
    assertFalse(so.hasField("age"));
    long address = Native.raw(so.handle);
    e.age = 30;  // added on first write: a new version, the object does not move
    assertTrue(so.hasField("age"));
    assertEquals(30, e.age);
    assertEquals(address, Native.raw(so.handle));
    assertEquals("CA", so.getString("state"));
    assertEquals("Smith", e.name);
    assertEquals(10.0, e.salary);
    assertTrue(so.sharedType().version() != old.version());
    e.active = true;
    assertTrue(e.active);
    assertThrows(TypeMismatchException.class, () -> e.extra = List.of());  // a private list: copy it first
  }

  @Test
  void boundInstancesOfAClosedAttachmentThrow() {
    Employee e = SharedMemory.allocate(Employee.class);
    e.age = 3;
    SharedMemory.detach();
    try {
      assertThrows(NotAttachedException.class, () -> System.out.println(e.age));
      assertThrows(NotAttachedException.class, () -> e.age = 4);
      assertThrows(NotAttachedException.class, () -> System.out.println(e.salary));
    } finally {
      SharedMemory.attach();
    }
    assertThrows(NotAttachedException.class, () -> System.out.println(e.age));
    Employee f = SharedMemory.allocate(Employee.class);  // the new attachment's fast path works
    f.age = 5;
    assertEquals(5, f.age);
    assertEquals(5L, jni(f, "age"));
  }

  /**
   * {@code $colors$bind}, public through {@link SharedInstance}, set the address the field fast
   * path reads and writes without checks: user code could bind an instance to any address (here
   * unmapped memory, or inside another object), which the next field access then read or wrote.
   * Bindings colors did not make are refused and nothing changes; the address field is not
   * public, and the accessor entry points that take an address are out of user code's reach.
   */
  /** A class that asks for its own fields' SharedField, as the agent's static initializer does. */
  static final class SelfFields {
    long x;

    static SharedField field() {
      return SharedField.of(SelfFields.class, "x");
    }
  }

  /**
   * A class may take its own fields' SharedField (the caller check lets it), and the accessors
   * take the address as an argument: one outside the objects space read there with Unsafe (a
   * JVM crash), and a class word read from what is not an object went to JNI unchecked (a crash
   * in Direct.resolve). Both now take the JNI path or raise.
   */
  @Test
  void forgedAddressesGivenToTheAccessorsNeverCrash() {
    Employee e = SharedMemory.allocate(Employee.class);
    e.age = 3;  // the fast path's view exists
    SharedField f = SelfFields.field();
    Direct.View v = Direct.current();
    List<Object> list = SharedMemory.allocate(List.class, 4);
    list.add(1L);
    long inList = ((SharedList) list).handle.raw + 16;  // not an object's header
    long[] forged = {0x1000L, 1L, Long.MAX_VALUE, Long.MIN_VALUE, v.base, v.base + v.size - 16, v.base + v.size,
        inList, ((SharedInstance) e).$colors$address() + 8};
    for (long a : forged) {
      assertThrows(RuntimeException.class, () -> f.getLong(null, a), () -> "read at 0x" + Long.toHexString(a));
      assertThrows(RuntimeException.class, () -> f.setLong(null, a, 5), () -> "write at 0x" + Long.toHexString(a));
    }
    assertEquals(3, e.age);
    assertEquals(List.of(1L), list);
  }

  /**
   * $colors$bind bound any instance to another's view and address; detach switches off only the
   * instances colors made, so a hand-bound one kept the address and wrote into whatever object
   * lived there after the next attach.
   */
  @Test
  void onlyAViewsOwnInstanceIsBoundToIt() {
    Employee a = SharedMemory.allocate(Employee.class);
    a.age = 1;
    Employee b = new Employee("private", 1.0);
    SharedInstance sa = (SharedInstance) a;
    SharedInstance sb = (SharedInstance) b;
    assertThrows(InvalidArgumentException.class, () -> sb.$colors$bind(sa.$colors$view(), sa.$colors$address()));
    assertThrows(InvalidArgumentException.class, () -> sb.$colors$bind(sa.$colors$view(), SharedField.NO_ADDRESS));
    assertFalse(SharedMemory.isObjectShared(b));
    b.age = 2;  // a private field write
    assertEquals(1, a.age);
    assertEquals(2, b.age);
    // What colors does: the view's own instance, on and off.
    sa.$colors$bind(sa.$colors$view(), SharedField.NO_ADDRESS);
    assertEquals(1, a.age);
    sa.$colors$bind(sa.$colors$view(), ((SharedObject) sa.$colors$view()).handle.raw);
    a.age = 4;
    assertEquals(4L, jni(a, "age"));
  }

  @Test
  void userCodeCannotRebindAnInstance() throws Exception {
    Employee e = SharedMemory.allocate(Employee.class);
    e.age = 7;
    SharedInstance si = (SharedInstance) e;
    SharedObject v = si.$colors$view();
    long at = si.$colors$address();
    Employee other = SharedMemory.allocate(Employee.class);
    SharedObject otherView = view(other);
    for (long bad : new long[] {0x1000, at + 8, at - 4096, 0, -2, Long.MAX_VALUE}) {
      assertThrows(InvalidArgumentException.class, () -> si.$colors$bind(v, bad), "address " + bad);
      assertThrows(InvalidArgumentException.class, () -> si.$colors$bind(otherView, bad), "address " + bad);
      assertThrows(InvalidArgumentException.class, () -> si.$colors$bind(null, bad), "address " + bad);
    }
    assertThrows(InvalidArgumentException.class, () -> si.$colors$bind(otherView, at));  // not that view's object
    assertEquals(at, si.$colors$address());
    assertSame(v, si.$colors$view());
    assertEquals(7, e.age);
    e.age = 8;
    assertEquals(8L, jni(e, "age"));
    // A field's accessor entry points take the address from the generated accessors; only the
    // mapped class gets its fields, so nobody else can pass one (getLong(e, 0x1000) read there).
    assertThrows(InvalidArgumentException.class, () -> SharedField.of(Employee.class, "age"));
    assertThrows(NoSuchFieldException.class, () -> Employee.class.getField("$colors$addr"));
    assertThrows(NoSuchFieldException.class, () -> Employee.class.getField("$colors$view"));
    assertThrows(NoSuchFieldException.class, () -> Employee.class.getField("$colors$c$manager"));  // the read cache's
    // What colors itself does: the fast path off (the JNI path answers), then the object's own address.
    si.$colors$bind(v, SharedField.NO_ADDRESS);
    assertEquals(8, e.age);
    si.$colors$bind(v, at);
    e.age = 9;
    assertEquals(9L, jni(e, "age"));
  }

  @Test
  void overwrittenReferencesAreFlaggedPending() throws Exception {
    Employee e = SharedMemory.allocate(Employee.class);
    SharedList l = (SharedList) SharedMemory.copyToSharedMemory(List.of(1, 2, 3));
    e.extra = l;
    long target = l.handle.raw;
    Direct.View v = Direct.viewFor(view(e).handle);
    long cyclesBefore = SharedMemory.gcStats().cycle();
    e.extra = 5;  // an int over the only field reference: the list is flagged pending
    // A cycle in between may have taken the bit already.
    assertTrue(v.isPending(target) || SharedMemory.gcStats().cycle() != cyclesBefore, "overwritten reference not flagged");
    assertEquals(5L, e.extra);
  }

  @Test
  void scalarStoresOverReferencesWhileCollecting() throws Exception {
    // Threads keep replacing a reference field's value (a fresh shared list, then an int over it)
    // while the collector runs; every list reachable from an object must stay intact.
    int n = 64;
    Employee[] es = new Employee[n];
    for (int i = 0; i < n; i++) es[i] = SharedMemory.allocate(Employee.class);
    ObjectRepository keep = SharedMemory.findOrCreateRepository("agent-keep");
    List<Object> all = SharedMemory.allocate(List.class);
    for (Employee e : es) all.add(e);
    keep.set(all);
    AtomicBoolean stop = new AtomicBoolean();
    Thread gc = new Thread(() -> {
      while (!stop.get()) SharedMemory.collect();
    });
    gc.start();
    List<Throwable> errors = new ArrayList<>();
    Thread[] ts = new Thread[2];
    for (int t = 0; t < ts.length; t++) {
      int me = t;
      ts[t] = new Thread(() -> {
        try {
          for (int round = 0; round < 300; round++) {
            for (int i = me; i < n; i += ts.length) {
              Employee e = es[i];
              if ((round & 1) == 0) {
                e.manager = es[(i + 1) % n];
                e.extra = SharedMemory.copyToSharedMemory(List.of(i, round, "x"));
              } else {
                Object x = e.extra;
                assertEquals(List.of((long) i, (long) round - 1, "x"), x);
                e.extra = round;  // int over the only reference to the list
                e.manager = null;
              }
            }
          }
        } catch (Throwable x) {
          synchronized (errors) {
            errors.add(x);
          }
        }
      });
      ts[t].start();
    }
    for (Thread t : ts) t.join();
    stop.set(true);
    gc.join();
    if (!errors.isEmpty()) throw new AssertionError(errors.get(0));
    SharedMemory.collect();
    for (int i = 0; i < n; i++) assertEquals(299L, es[i].extra);
    assertTrue(SharedMemory.gcStats().cycle() > 0);
    String report = Direct.verifyHeap();  // no mutator runs now (the threads above have ended)
    assertNull(report, report);
  }

  /**
   * Fields added after many others live several arrays deep in the object's extension chain
   * (layout.hpp, UserObject): the direct path (Direct.slotAddress) walks it to the same slot as
   * the C++ code behind Native.objGet and objSet.
   */
  @Test
  void fieldsDeepInTheExtensionChainAreTheSameSlotsForDirectAndNativeAccess() {
    Map<String, SharedType.Kind> fields = new LinkedHashMap<>();
    fields.put("name", SharedType.Kind.STRING);
    SharedObject so = SharedMemory.allocateObject(SharedMemory.defineClass("demo.staff.Employee", fields));
    Employee e = (Employee) so.instance;
    for (int i = 0; i < 40; ++i) so.addField("x" + i, SharedType.Kind.INTEGER);
    e.age = 41;      // added by the direct path's slow path: after x0..x39
    e.salary = 2.5;
    for (int i = 0; i < 40; ++i) so.set("x" + i, (long) i);
    assertEquals(41L, jni(e, "age"));
    assertEquals(2.5, jni(e, "salary"));
    so.set("age", 7L);
    so.set("salary", 4.5);
    assertEquals(7, e.age);
    assertEquals(4.5, e.salary);
    for (int i = 0; i < 40; ++i) assertEquals((long) i, jni(e, "x" + i));
  }

  /**
   * A class with final fields set by its constructor: the agent turns the constructor's stores into
   * calls of the fields' setters, which the JVM refused for final fields (IllegalAccessError on
   * {@code new Frozen(...)}, with or without shared memory). The fields are no longer final in the
   * rewritten class.
   */
  @Test
  void aClassWithFinalFieldsIsConstructedPrivatelyAndCopiedIn() {
    Frozen f = new Frozen(3, "p");
    f.items.add(1L);
    assertEquals(3, f.x);
    Frozen s = (Frozen) SharedMemory.copyToSharedMemory(f);
    assertTrue(SharedMemory.isObjectShared(s));
    assertEquals(3, s.x);
    assertEquals("p", s.label);
    assertEquals(List.of(1L), s.items);
    view(s).set("x", 9L);  // another process's write
    assertEquals(9, s.x, "a bound instance reads its final field from the shared object");
    Frozen a = SharedMemory.allocate(Frozen.class);
    assertEquals(0, a.x);
  }

  /**
   * A bound class extending a class the agent does not bind: the shared class had the inherited
   * fields, but accesses to them went to the Java object only (a Java write never reached Python,
   * a Python write was never seen, a copied-in value read back as 0). Binding it is now refused,
   * naming the field and what to do.
   */
  @Test
  void aBoundClassInheritingFieldsOfAnUnboundClassIsRefused() {
    TypeMismatchException e =
        assertThrows(TypeMismatchException.class, () -> SharedMemory.allocate(OnPlainBase.class));
    assertTrue(e.getMessage().contains("inherits field 'baseX' from demo.staff.PlainBase"), e.getMessage());
    assertTrue(e.getMessage().contains("@Shared"), e.getMessage());
    OnPlainBase p = new OnPlainBase();
    p.baseX = 5;
    assertThrows(TypeMismatchException.class, () -> SharedMemory.copyToSharedMemory(p));
    assertEquals(5, p.baseX, "the private instance is untouched");
  }

  /**
   * A copy constructor reading a bound original inside its this(...) or super(...) call: the
   * agent left every field access before that call alone, so the copy got the original's unused
   * Java fields (null and 0.0), and a write there went to a Java field.
   */
  @Test
  void accessesInsideAConstructorsThisOrSuperCallReachTheSharedObject() {
    Copied bound = SharedMemory.allocate(Copied.class);
    bound.name = "Smith";
    bound.salary = 100;
    Copied copy = new Copied(bound);
    assertEquals("Smith", copy.name);
    assertEquals(100.0, copy.salary);
    Raised raised = new Raised(bound);
    assertEquals("Smith", raised.name);
    assertEquals(200.0, raised.salary);
  }

  /**
   * Classes whose instances hold state no shared field can: one extending a JDK class with
   * instance fields (Throwable's message, cause), and an inner class (its enclosing instance).
   * Both were bound, and that state silently stayed in one Java object: a copied exception read
   * back with a null message, an inner instance's method threw NullPointerException on this$0.
   */
  @Test
  void classesWithStateSharedMemoryCannotHoldAreRefused() {
    TypeMismatchException jdk = assertThrows(TypeMismatchException.class,
        () -> SharedMemory.copyToSharedMemory(new Failure("disk full", 28)));
    assertTrue(jdk.getMessage().contains("a class of the JDK"), jdk.getMessage());
    assertThrows(TypeMismatchException.class, () -> SharedMemory.allocate(Failure.class));
    Outer outer = new Outer();
    Outer.Item item = outer.new Item();
    item.n = 5;
    assertEquals(15, item.total(), "a private inner instance works as without the agent");
    TypeMismatchException inner = assertThrows(TypeMismatchException.class, () -> SharedMemory.copyToSharedMemory(item));
    assertTrue(inner.getMessage().contains("inner or local class"), inner.getMessage());
    assertThrows(TypeMismatchException.class, () -> SharedMemory.allocate(Outer.Item.class));
  }
}
