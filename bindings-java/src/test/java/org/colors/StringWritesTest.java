package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import demo.staff.Employee;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The strings kept for writes ({@link StringWrites}): a string written again into a field of a
 * bound instance (from its third write on: the second keeps it) stores the shared string made for
 * an equal one, and whatever the cache keeps is alive while it keeps it and let go by collect(), a
 * thread's end and a detach.
 */
@ExtendWith(ColorsServer.class)
class StringWritesTest {
  private static Employee[] employees(int n) {
    Employee[] es = new Employee[n];
    for (int i = 0; i < n; i++) es[i] = SharedMemory.allocate(Employee.class);
    return es;
  }

  private static long allocatedBytes() {
    return SharedMemory.heapStats().allocatedBytesTotal();
  }

  private static long heldNow() {
    return StringWrites.held(Direct.currentOrMake().gen);
  }

  /**
   * Equal strings (distinct String objects) written into 5,000 fields make one shared string: the
   * heap's allocation counter (whole TLABs) moves by less than a tenth of what 5,000 distinct
   * strings of the same length move it by, measured the same way.
   */
  @Test
  void equalStringsWrittenAgainShareOneSharedString() {
    int n = 5000;
    Employee[] es = employees(n);
    long before = allocatedBytes();
    for (Employee e : es) e.name = new String("type-007 of the part");
    long equal = allocatedBytes() - before;
    before = allocatedBytes();
    for (int i = 0; i < n; i++) es[i].name = String.format("type-%03d of the xxxx", i % 1000) + (i / 1000);
    long distinct = allocatedBytes() - before;
    assertTrue(distinct > 100_000, () -> "distinct strings allocated only " + distinct + " bytes");
    assertTrue(equal * 10 < distinct, () -> "equal strings allocated " + equal + " bytes, distinct ones " + distinct);
    for (int i = 0; i < n; i++) {
      assertEquals(String.format("type-%03d of the xxxx", i % 1000) + (i / 1000), es[i].name);
      assertEquals(es[i].name, AgentTest.jni(es[i], "name"));
    }
  }

  /**
   * Many values in random order, more than the cache holds (evictions, colliding slots), with
   * collector cycles in between that do not empty the cache: every field reads back what was
   * written last, and the heap verifies (no field names a freed string).
   */
  @Test
  void fieldsReadBackWhatWasWrittenAcrossEvictionsAndCycles() {
    int n = 600;
    Employee[] es = employees(n);
    String[] values = new String[200];
    for (int i = 0; i < values.length; i++) values[i] = "value " + i + (i % 7 == 0 ? " \u00e9\u65e5\ud83d\ude00" : "");
    String[] expect = new String[n];
    Random r = new Random(17);
    for (int round = 0; round < 20; round++) {
      for (int k = 0; k < 2000; k++) {
        int i = r.nextInt(n);
        String v = new String(values[r.nextInt(values.length)]);
        es[i].name = v;
        expect[i] = v;
      }
      Native.collect(-1);  // a cycle, the cache kept (SharedMemory.collect() would empty it)
      for (int i = 0; i < n; i++) assertEquals(expect[i], es[i].name, "field " + i + " in round " + round);
    }
    for (int i = 0; i < n; i += 37) assertEquals(expect[i], AgentTest.jni(es[i], "name"));
    assertNull(Direct.verifyHeap(), "the heap verifies");
  }

  /**
   * A kept string that no field holds any more survives collector cycles (its root is the cache's)
   * and is stored again intact. Without the cache's root the second field would name freed memory.
   */
  @Test
  void aKeptStringNoFieldHoldsSurvivesCyclesAndIsStoredAgain() {
    Employee a = SharedMemory.allocate(Employee.class);
    Employee b = SharedMemory.allocate(Employee.class);
    String value = "kept only by the cache \u00e9";
    a.name = value;
    a.name = new String(value);  // the second write of the value keeps its shared string
    a.name = null;  // the cache's root is all that keeps the shared string
    for (int i = 0; i < 3; i++) Native.collect(-1);
    // Garbage in between, so that freed memory would be reused.
    for (int i = 0; i < 2000; i++) SharedMemory.copyToSharedMemory(List.of("garbage " + i, (long) i));
    b.name = new String(value);
    assertEquals(value, b.name);
    assertEquals(value, AgentTest.jni(b, "name"));
    assertNull(Direct.verifyHeap(), "the heap verifies");
  }

  /** collect() lets go of this thread's kept strings and of those of threads that ended. */
  @Test
  void collectAndAThreadsEndLetGoOfKeptStrings() throws Exception {
    Employee[] es = employees(40);
    SharedMemory.collect();
    assertEquals(0, heldNow(), "collect() emptied this thread's cache");
    for (int w = 0; w < 2; w++) for (int i = 0; i < es.length; i++) es[i].name = "mine " + i;
    assertTrue(heldNow() > 0, "strings written twice are kept");
    Thread t = new Thread(() -> {
      for (int w = 0; w < 2; w++) for (int i = 0; i < es.length; i++) es[i].name = "other " + i;
    });
    t.start();
    t.join();
    long both = heldNow();
    SharedMemory.collect();
    assertEquals(0, heldNow(), () -> "kept after collect(): " + heldNow() + " of " + both);
    for (int i = 0; i < es.length; i++) assertEquals("other " + i, es[i].name);
  }

  /**
   * Threads that come and go without a collect() do not pile up kept strings: a thread's first
   * string write lets go of what the threads that ended kept.
   */
  @Test
  void threadsThatEndedLeaveNothingKeptPastTheNextThreadsFirstWrite() throws Exception {
    Employee e = SharedMemory.allocate(Employee.class);
    SharedMemory.collect();
    for (int t = 0; t < 20; t++) {
      final int me = t;
      Thread w = new Thread(() -> {
        for (int k = 0; k < 2; k++) for (int i = 0; i < 10; i++) e.name = "thread " + me + " value " + i;
      });
      w.start();
      w.join();
    }
    Thread last = new Thread(() -> {
      e.name = "last";
      e.name = "last";
    });
    last.start();
    last.join();
    assertEquals(1, heldNow(), "only the last thread's string is kept");
    assertEquals("last", e.name);
  }

  /** Inside a transaction a string write is logged (the cache is not used): an abort restores the field. */
  @Test
  void aTransactionsStringWritesRollBack() {
    Employee e = SharedMemory.allocate(Employee.class);
    e.name = "before";
    e.name = "before";  // now kept
    try (Transaction tx = SharedMemory.beginTransaction()) {
      e.name = "inside";
      e.name = "before";
      e.name = "inside";
      tx.rollback();
    }
    assertEquals("before", e.name);
    e.name = "inside";
    assertEquals("inside", e.name);
  }

  /** A string kept in an earlier attachment is not stored in a later one: a new one is made. */
  @Test
  void keptStringsOfAnEarlierAttachmentAreNotReused() {
    Employee e = SharedMemory.allocate(Employee.class);
    e.name = "across attachments";
    e.name = "across attachments";  // kept
    assertTrue(heldNow() > 0, "kept");
    SharedMemory.detach();
    SharedMemory.attach();
    Employee f = SharedMemory.allocate(Employee.class);
    List<Employee> keep = new ArrayList<>();
    keep.add(f);
    f.name = new String("across attachments");
    assertEquals("across attachments", f.name);
    assertEquals("across attachments", AgentTest.jni(f, "name"));
    assertNull(Direct.verifyHeap(), "the heap verifies");
  }
}
