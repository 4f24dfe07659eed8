package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import demo.staff.Employee;
import demo.staff.Outside;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The paper's Employee across Java and Python with the agent: Python creates and evolves an
 * Employee, Java reads it as its own @Shared demo.staff.Employee with plain field accesses and
 * changes it from outside the class, Python sees the change; Java allocates a newer version (with
 * manager and age), Python reads it and writes back. Skipped without the Python binding.
 */
@ExtendWith(ColorsServer.class)
class AgentCrossLanguageTest {
  static final String STAFF = String.join("\n",
      "@dataclass",
      "class StaffEmployee:",
      "    name: str",
      "    salary: float",
      "cs.register(StaffEmployee, 'demo.staff.Employee')",
      "");

  @BeforeAll
  static void findPythonBinding() throws IOException {
    CrossLanguageTest.findPythonBinding();
  }

  @Test
  void employeeBothWaysWithPlainFieldAccess() throws Exception {
    String r1 = CrossLanguageTest.unique("staff");
    String r2 = CrossLanguageTest.unique("staff2");
    // Python creates an Employee and evolves it (adds `state`).
    CrossLanguageTest.run(STAFF
        + "e = cs.allocate(StaffEmployee, name='Smith', salary=100.0)\n"
        + "e.state = 'CA'\n"
        + "cs.repository('" + r1 + "').set(e)\n");
    Object got = SharedMemory.findOrCreateRepository(r1).get();
    assertTrue(got instanceof Employee, "read as " + got.getClass());
    Employee e = (Employee) got;
    assertSame(e, SharedMemory.findOrCreateRepository(r1).get());
    assertEquals("Smith", e.name);
    assertEquals(100.0, e.salary);
    assertEquals(0, e.age);  // not in Python's version: Java's default
    e.salary += 10;          // from outside the class
    Outside.give(e, 5);      // from another class
    e.raise(5);              // inside the class
    List<String> seen = CrossLanguageTest.run(STAFF
        + "e = cs.repository('" + r1 + "').get()\n"
        + "print(type(e).__name__, e.name, e.salary, e.state)\n");
    assertEquals(List.of("StaffEmployee Smith 120.0 CA"), seen);

    // A field Java has and the object lacks: added on first write (the object keeps `state`).
    e.age = 50;
    seen = CrossLanguageTest.run(STAFF
        + "e = cs.repository('" + r1 + "').get()\n"
        + "print(e.age, e.state, sorted(f.name for f in cs.shared_type(e).fields))\n");
    assertEquals(List.of("50 CA ['age', 'name', 'salary', 'state']"), seen);

    // Java allocates its own (newer) version, with manager, age and the rest; Python reads it.
    Employee m = SharedMemory.allocate(Employee.class);
    m.name = "Jones";
    m.salary = 90.5;
    m.manager = e;
    m.age = 33;
    m.active = true;
    SharedMemory.findOrCreateRepository(r2).set(m);
    seen = CrossLanguageTest.run(STAFF
        + "m = cs.repository('" + r2 + "').get()\n"
        + "print(type(m).__name__, m.name, m.salary, m.manager.name, m.manager.state, m.age, m.active)\n"
        + "m.manager.salary = 175.0\n"
        + "m.age = 34\n");
    assertEquals(List.of("StaffEmployee Jones 90.5 Smith CA 33 True"), seen);
    assertEquals(175.0, e.salary);
    assertEquals(34, m.age);
    assertSame(e, m.manager);
  }
}
