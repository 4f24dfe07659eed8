package org.colors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import demo.Employee;
import demo.Manager;
import demo.Node;
import demo.Point;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** User classes through the SharedObject view, class mapping by reflection, shared types. */
@ExtendWith(ColorsServer.class)
class ObjectsTest {

  static List<String> names(SharedType t) {
    List<String> out = new ArrayList<>();
    for (SharedType.Field f : t.fields()) out.add(f.name() + ":" + f.kind());
    return out;
  }

  @Test
  void allocateObjectMapsTheJavaClass() {
    SharedObject e = SharedMemory.allocateObject(Employee.class);
    assertTrue(SharedMemory.isObjectShared(e));
    assertEquals("demo.Employee", e.className());
    assertEquals(List.of("name:STRING", "salary:FLOAT", "manager:OBJECT", "tags:LIST", "age:INTEGER"),
        names(e.sharedType()));
    assertEquals(List.of("name", "salary", "manager", "tags", "age"), e.fieldNames());
    assertNull(e.get("name"));
    assertEquals(0.0, e.get("salary"));  // primitive Java fields start at their defaults
    assertEquals(0L, e.get("age"));
    e.set("name", "Smith");
    e.set("salary", 100);  // an integer into a float field: widened
    assertEquals(100.0, e.getDouble("salary"));
    e.set("salary", e.getDouble("salary") + 10.5);
    assertEquals(110.5, e.get("salary"));
    e.set("age", 1L << 40);
    assertThrows(SharedOverflowException.class, () -> e.getInt("age"));
    assertEquals(1L << 40, e.getLong("age"));
    e.set("age", 42);
    assertEquals(42, e.getInt("age"));
    assertEquals((Integer) 42, e.get("age", Integer.class));
    assertThrows(TypeMismatchException.class, () -> e.set("name", 5));
    assertThrows(TypeMismatchException.class, () -> e.set("age", "x"));
    assertThrows(SharedKeyException.class, () -> e.get("nosuch"));
    assertThrows(SharedKeyException.class, () -> e.set("nosuch", 1));
    TypeMismatchException tm = assertThrows(TypeMismatchException.class, () -> e.set("tags", new ArrayList<>()));
    assertTrue(tm.getMessage().contains("copyToSharedMemory"), tm.getMessage());
    e.set("tags", SharedMemory.copyToSharedMemory(List.of("a", "b")));
    assertEquals(List.of("a", "b"), e.get("tags"));
    e.set("name", null);  // null fits every field
    assertNull(e.getString("name"));
    SharedObject boss = SharedMemory.allocateObject(Employee.class);
    e.set("manager", boss);
    assertSame(boss, e.get("manager"));
    assertTrue(e.sharedType().versions().contains(e.sharedType()));
    assertEquals(e.sharedType(), boss.sharedType());  // the same version is reused
    assertTrue(e.toString().startsWith("demo.Employee{"), e.toString());
  }

  @Test
  void allocateOfAUserClassNamesTheAlternatives() {
    TypeMismatchException ex = assertThrows(TypeMismatchException.class, () -> SharedMemory.allocate(Employee.class));
    assertTrue(ex.getMessage().contains("allocateObject"), ex.getMessage());
    assertInstanceOf(SharedList.class, SharedMemory.allocate(List.class));
    assertInstanceOf(SharedMap.class, SharedMemory.allocate(Map.class));
    assertThrows(TypeMismatchException.class, () -> SharedMemory.allocateObject(String.class));
    assertThrows(TypeMismatchException.class, () -> SharedMemory.allocateObject(List.class));
  }

  @Test
  void sharedTypesAndSchemaEvolution() {
    String cls = "demo.Evolving" + UUID.randomUUID().toString().replace("-", "");
    Map<String, SharedType.Kind> fields = new LinkedHashMap<>();
    fields.put("name", SharedType.Kind.STRING);
    fields.put("salary", SharedType.Kind.FLOAT);
    SharedType v1 = SharedMemory.defineClass(cls, fields);
    assertEquals(cls, v1.name());
    assertEquals(SharedType.Kind.OBJECT, v1.kind());
    assertEquals(v1, SharedMemory.defineClass(cls, fields));  // found again by field set
    SharedObject a = SharedMemory.allocateObject(v1);
    SharedObject b = SharedMemory.allocateObject(v1);
    a.set("name", "a");
    a.set("salary", 1.5);
    a.addField("state", SharedType.Kind.STRING);  // schema evolution in place
    a.set("state", "CA");
    SharedType v2 = SharedMemory.getSharedType(a);
    assertNotEquals(v1, v2);
    assertEquals(cls, v2.name());
    assertEquals(List.of("name:STRING", "salary:FLOAT", "state:STRING"), names(v2));
    assertEquals(SharedType.Kind.STRING, v2.field("state").kind());
    assertNull(v1.field("state"));
    assertEquals(v1, SharedMemory.getSharedType(b));  // others keep their version
    assertFalse(b.hasField("state"));
    assertEquals("a", a.get("name"));  // data did not move
    assertEquals(1.5, a.get("salary"));
    assertEquals(List.of(v1, v2), v2.versions());
    assertEquals(List.of(v1), v2.otherVersions());
    assertEquals(List.of(v1, v2), SharedType.versionsOf(cls));
    assertTrue(v2.version() > v1.version());
    a.removeField("salary");
    assertFalse(a.hasField("salary"));
    assertEquals("CA", a.get("state"));
    assertTrue(SharedType.versionsOf(cls).size() >= 3);
    assertEquals(List.of(), SharedType.versionsOf("demo.NoSuchClass" + UUID.randomUUID()));
    // Builtins have builtin types.
    SharedType lt = SharedMemory.getSharedType(SharedMemory.allocate(List.class));
    assertEquals(SharedType.Kind.LIST, lt.kind());
    assertEquals(List.of(), lt.fields());
    assertThrows(TypeMismatchException.class, () -> SharedMemory.getSharedType(new ArrayList<>()));
    assertThrows(TypeMismatchException.class, () -> SharedMemory.allocateObject(lt));
    assertTrue(v2.toString().contains("state: string"), v2.toString());
  }

  /**
   * A removed field keeps its slot for itself: another field added after it takes a new slot (so a
   * write that resolved the removed field's slot never lands in it), and the field added back
   * returns to its slot. An object keeps at most 64 removed fields; past that a new
   * name fails with a message that says what to do, and a removed name still comes back.
   */
  @Test
  void aRemovedFieldKeepsItsSlotAndNewNamesStopAtTheRemovedFieldLimit() {
    String cls = "demo.Removed" + UUID.randomUUID().toString().replace("-", "");
    Map<String, SharedType.Kind> fields = new LinkedHashMap<>();
    fields.put("a", SharedType.Kind.INTEGER);
    SharedObject o = SharedMemory.allocateObject(SharedMemory.defineClass(cls, fields));
    o.addField("f", SharedType.Kind.INTEGER);
    SharedType withF = SharedMemory.getSharedType(o);
    o.set("f", 5L);
    o.removeField("f");
    assertEquals(List.of("a:INTEGER"), names(SharedMemory.getSharedType(o)));
    o.addField("g", SharedType.Kind.INTEGER);
    o.set("g", 1L);
    assertNotEquals(withF.field("f").slot(), SharedMemory.getSharedType(o).field("g").slot());
    o.removeField("g");
    o.addField("f", SharedType.Kind.INTEGER);
    assertEquals(withF.field("f").slot(), SharedMemory.getSharedType(o).field("f").slot());
    assertNull(o.get("f"));
    SharedType back = SharedMemory.getSharedType(o);
    o.removeField("f");
    o.addField("f", SharedType.Kind.INTEGER);  // the same layout again: the same version
    assertEquals(back, SharedMemory.getSharedType(o));
    for (int i = 0; i < 63; ++i) {  // with g: 64 removed fields
      o.addField("k" + i, SharedType.Kind.INTEGER);
      o.removeField("k" + i);
    }
    SharedType before = SharedMemory.getSharedType(o);
    SharedOutOfMemoryException e =
        assertThrows(SharedOutOfMemoryException.class, () -> o.addField("fresh", SharedType.Kind.INTEGER));
    assertTrue(e.getMessage().contains(cls) && e.getMessage().contains("map field"), e.getMessage());
    assertEquals(before, SharedMemory.getSharedType(o));
    // With another type a removed name needs a new slot too; with its own type it comes back.
    assertThrows(SharedOutOfMemoryException.class, () -> o.addField("k7", SharedType.Kind.STRING));
    o.addField("k7", SharedType.Kind.INTEGER);
    o.set("k7", 7L);
    assertEquals(7L, o.get("k7"));
  }

  @Test
  void copyInstancesAndReadThemBack() {
    Employee boss = new Employee("Boss", 200);
    boss.manager = boss;  // a cycle
    Employee e = new Employee("Smith", 100);
    e.manager = boss;
    e.tags = new ArrayList<>(List.of("x", 1L));
    e.age = 30;
    e.cache = 99;
    SharedObject s = (SharedObject) SharedMemory.copyToSharedMemory(e);
    assertEquals("Smith", s.get("name"));
    assertEquals(100.0, s.get("salary"));
    SharedObject sb = (SharedObject) s.get("manager");
    assertSame(sb, sb.get("manager"));
    assertEquals(List.of("x", 1L), s.get("tags"));
    assertFalse(s.hasField("cache"));

    Employee back = s.toPrivate(Employee.class);
    assertEquals("Smith", back.name);
    assertEquals(100.0, back.salary);
    assertEquals(30, back.age);
    assertEquals(0, back.cache);
    assertEquals("Boss", back.manager.name);
    assertSame(back.manager, back.manager.manager);  // the cycle, as one private object
    assertInstanceOf(SharedList.class, back.tags);  // List field: the live shared list
    // Changes to the private copy are not shared until written back.
    back.salary = 150;
    assertEquals(100.0, s.get("salary"));
    s.writeFrom(back);
    assertEquals(150.0, s.get("salary"));
    assertSame(back.tags, s.get("tags"));  // proxies are stored as they are

    Manager m = new Manager();
    m.name = "M";
    m.reports = 7;
    SharedObject sm = (SharedObject) SharedMemory.copyToSharedMemory(m);
    assertEquals(List.of("name", "salary", "manager", "tags", "age", "reports"), sm.fieldNames());
    Employee asEmployee = sm.toPrivate(Employee.class);  // the Java class named like the shared one
    assertInstanceOf(Manager.class, asEmployee);
    assertEquals(7, ((Manager) asEmployee).reports);
  }

  @Test
  void recordsArraysAndNarrowing() {
    Node n = new Node();
    n.value = 5;
    n.nums = new int[] {1, 2, 3};
    n.names = new String[] {"a", null};
    n.list = new ArrayList<>(List.of(1L));
    n.map = Map.of("k", 1L);
    n.b = -3;
    n.s = 300;
    n.c = 'x';
    n.f = 1.5f;
    n.z = true;
    n.boxed = null;
    n.bin = new byte[] {9};
    n.point = new Point(1, 2, "p");
    n.any = new Point(3, 4, null);
    n.next = n;
    SharedObject s = (SharedObject) SharedMemory.copyToSharedMemory(n);
    assertEquals(List.of(1L, 2L, 3L), s.get("nums"));
    assertEquals((long) 'x', s.get("c"));
    assertEquals("demo.Point", ((SharedObject) s.get("point")).className());
    assertEquals(SharedType.Kind.ANY, s.sharedType().field("any").kind());
    Node back = s.toPrivate(Node.class);
    assertSame(back, back.next);
    assertArrayEquals(new int[] {1, 2, 3}, back.nums);
    assertArrayEquals(new String[] {"a", null}, back.names);
    assertEquals(new ArrayList<>(List.of(1L)), back.list);
    assertFalse(SharedMemory.isObjectShared(back.list));  // ArrayList field: a private copy
    assertEquals(Map.of("k", 1L), back.map);
    assertEquals(-3, back.b);
    assertEquals(300, back.s);
    assertEquals('x', back.c);
    assertEquals(1.5f, back.f);
    assertTrue(back.z);
    assertNull(back.boxed);
    assertArrayEquals(new byte[] {9}, back.bin);
    assertEquals(new Point(1, 2, "p"), back.point);
    assertEquals(new Point(3, 4, null), back.any);  // Object field: the Java class named like the shared one
    assertEquals(new Point(1, 2, "p"), ((SharedObject) s.get("point")).toPrivate(Point.class));

    s.set("s", 70000);
    SharedOverflowException e = assertThrows(SharedOverflowException.class, () -> s.toPrivate(Node.class));
    assertTrue(e.getMessage().contains("field 's'"), e.getMessage());
    s.set("s", 1);
    ((SharedList) s.get("nums")).add(1L << 33);
    assertThrows(SharedOverflowException.class, () -> s.toPrivate(Node.class));
    ((SharedList) s.get("nums")).set(3, "text");
    assertThrows(TypeMismatchException.class, () -> s.toPrivate(Node.class));
  }

  @Test
  void writeFromAddsMissingFieldsAndKeepsSharedOnlyOnes() {
    // A version of demo.Employee as another program defined it: no manager/tags/age, plus state.
    Map<String, SharedType.Kind> fields = new LinkedHashMap<>();
    fields.put("name", SharedType.Kind.STRING);
    fields.put("salary", SharedType.Kind.FLOAT);
    fields.put("state", SharedType.Kind.STRING);
    SharedObject s = SharedMemory.allocateObject(SharedMemory.defineClass("demo.Employee", fields));
    s.set("state", "NY");
    s.set("name", "Other");
    Employee e = s.toPrivate(Employee.class);  // unmapped on both sides: fine
    assertEquals("Other", e.name);
    assertNull(e.tags);
    e.age = 50;
    e.salary = 10;
    s.writeFrom(e);
    assertEquals(50L, s.get("age"));  // added: a new version, the object did not move
    assertEquals(10.0, s.get("salary"));
    assertEquals("NY", s.get("state"));  // shared-only field kept
    assertTrue(s.fieldNames().containsAll(List.of("name", "salary", "state", "manager", "tags", "age")));
    Employee again = new Employee();
    again.name = "unchanged?";
    s.readInto(again);
    assertEquals("Other", again.name);
    assertEquals(50, again.age);
  }

  @Test
  void writeFromStoresNothingWhenAValueDoesNotFit() {
    // A version of demo.Employee whose salary holds a string: Employee's double does not fit it.
    Map<String, SharedType.Kind> fields = new LinkedHashMap<>();
    fields.put("name", SharedType.Kind.STRING);
    fields.put("salary", SharedType.Kind.STRING);
    SharedObject s = SharedMemory.allocateObject(SharedMemory.defineClass("demo.Employee", fields));
    s.set("name", "Other");
    s.set("salary", "high");
    SharedType version = s.sharedType();
    Employee e = new Employee("Smith", 10);  // name comes before salary in Employee's fields
    e.age = 50;
    e.manager = new Employee("Boss", 20);
    TypeMismatchException x = assertThrows(TypeMismatchException.class, () -> s.writeFrom(e));
    assertTrue(x.getMessage().contains("salary"), x.getMessage());
    assertEquals("Other", s.get("name"));
    assertEquals("high", s.get("salary"));
    assertEquals(version, s.sharedType());  // no field added either
    assertFalse(s.hasField("age"));
  }

  @Test
  void identityAndUnsupportedFieldValues() {
    SharedObject a = SharedMemory.allocateObject(Employee.class);
    SharedList l = (SharedList) SharedMemory.copyToSharedMemory(List.of(1L));
    l.add(a);
    assertSame(a, l.get(1));
    assertEquals(a, l.get(1));
    assertNotEquals(a, SharedMemory.allocateObject(Employee.class));
    try (SharedMonitor m = SharedMemory.lock(a)) {  // user objects have monitors too
      assertTrue(m.isHeldByCurrentThread());
      assertFalse(m.await(5));
    }
    // A cycle through a record cannot become private records.
    SharedObject link = SharedMemory.allocateObject(SharedMemory.defineClass("demo.Link", Map.of("next",
        SharedType.Kind.OBJECT)));
    assertEquals(new demo.Link(null), link.toPrivate(demo.Link.class));
    link.set("next", link);
    TypeMismatchException cyc = assertThrows(TypeMismatchException.class, () -> link.toPrivate(demo.Link.class));
    assertTrue(cyc.getMessage().contains("cycle"), cyc.getMessage());
    TypeMismatchException e = assertThrows(TypeMismatchException.class,
        () -> SharedMemory.copyToSharedMemory(new demo.Timed()));
    assertTrue(e.getMessage().contains("java.time.Instant"), e.getMessage());
  }
}
