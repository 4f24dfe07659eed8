package org.colors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@link SharedMap#get}: values come back flat (Native.mapGetFlat): scalars without a boxing
 * upcall, shared objects with their root handed over and their proxy found or made in Java. Every
 * kind of value reads as before, one proxy per object, and no root is left behind.
 */
@ExtendWith(ColorsServer.class)
class MapGetTest {
  @Test
  @SuppressWarnings("unchecked")
  void everyKindOfValueReadsBackAndObjectsKeepTheirProxy() {
    Map<Object, Object> m = SharedMemory.allocate(Map.class);
    m.put("long", 5L);
    m.put("big", Long.MAX_VALUE);  // a boxed integer in the heap
    m.put("double", 0.5);
    m.put("tiny", 1e-300);  // a boxed float
    m.put("bool", true);
    m.put("null", null);
    m.put("string", "päärynä");
    m.put("bytes", new byte[] {1, 2, 3});
    List<Object> list = SharedMemory.allocate(List.class);
    list.add(1L);
    m.put("list", list);
    m.put(7L, "by a number");
    assertEquals(5L, m.get("long"));
    assertEquals(Long.MAX_VALUE, m.get("big"));
    assertEquals(0.5, m.get("double"));
    assertEquals(1e-300, m.get("tiny"));
    assertEquals(true, m.get("bool"));
    assertNull(m.get("null"));
    assertTrue(m.containsKey("null"));
    assertNull(m.get("absent"));
    assertNull(m.get(new Object()));  // a key no shared map can hold
    assertEquals("päärynä", m.get("string"));
    assertArrayEquals(new byte[] {1, 2, 3}, (byte[]) m.get("bytes"));
    assertEquals("by a number", m.get(7L));
    assertSame(list, m.get("list"));

    long before = RootCounts.settled();
    for (int i = 0; i < 1000; i++) assertSame(list, m.get("list"));
    assertEquals(before, Roots.live(), "every handed-over root of an object with a live proxy was dropped");

    // A value with no live proxy: get makes one with the handed root, and later reads find it.
    SharedList holder = (SharedList) SharedMemory.copyToSharedMemory(List.of(List.of(2L, 3L)));
    m.put("copied", holder.get(0));
    Object made = m.get("copied");
    assertEquals(List.of(2L, 3L), new ArrayList<>((List<?>) made));
    assertSame(made, m.get("copied"));
    assertSame(made, holder.get(0));
  }
}
