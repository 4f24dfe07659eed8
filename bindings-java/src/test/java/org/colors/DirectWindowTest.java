package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The windows in which the field fast path reads strings and boxed floats without a root
 * ({@link Direct.View#windowBegin}, {@link Direct.View#windowOpen}; libshared's
 * no_sweep_window_begin/_end, gc/README.md "Reads without a root"), over a fake segment whose
 * collector words the test moves as a cycle does: the same cases as test_gc.cpp's. No server.
 */
class DirectWindowTest {
  private static final int STARTED = 8, DONE = 12, PHASE = 16;
  private static final byte IDLE = 0, MARKING = 1, SWEEPING = 2;
  private long mem;
  private Direct.View v;

  @BeforeEach
  void fakeSegment() {
    assertNotNull(Direct.UNSAFE, "the field fast path needs sun.misc.Unsafe");
    mem = Direct.UNSAFE.allocateMemory(256);
    Direct.UNSAFE.setMemory(mem, 256, (byte) 0);
    v = viewOfCollectorWords(mem, 256, STARTED, DONE, PHASE, MARKING);
  }

  /**
   * A view over {@code size} bytes at {@code mem} with only the collector's words laid out (at the
   * given offsets) and {@code marking} as GcPhase::kMarking: what windowBegin/windowOpen read.
   */
  static Direct.View viewOfCollectorWords(long mem, long size, long started, long done, long phase, long marking) {
    long[] l = new long[Direct.L_GC_MARKING + 1];
    l[Direct.L_BASE] = mem;
    l[Direct.L_SIZE] = size;
    l[Direct.L_WORD] = 8;
    l[Direct.L_GRANULE] = 1L << Words.GRANULE_SHIFT;
    l[Direct.L_OFF_GC_STARTED] = started;
    l[Direct.L_OFF_GC_DONE] = done;
    l[Direct.L_OFF_GC_PHASE] = phase;
    l[Direct.L_GC_MARKING] = marking;
    return new Direct.View(1, 1, l, new ByteBuffer[] {ByteBuffer.allocate(8)});
  }

  @AfterEach
  void free() {
    Direct.UNSAFE.freeMemory(mem);
  }

  private void at(int started, int done, byte phase) {
    Direct.UNSAFE.putIntVolatile(null, mem + STARTED, started);
    Direct.UNSAFE.putIntVolatile(null, mem + DONE, done);
    Direct.UNSAFE.putByteVolatile(null, mem + PHASE, phase);
  }

  @Test
  void aWindowOpensWhileNoCycleRunsOrTheRunningOneMarksAndClosesWhenASweepMayFree() {
    at(5, 5, IDLE);
    long idle = v.windowBegin();
    assertNotEquals(0, idle);
    assertTrue(v.windowOpen(idle));

    // A cycle starts: the idle window closes; while it marks, a marking window opens.
    at(6, 5, MARKING);
    assertFalse(v.windowOpen(idle));
    long marking = v.windowBegin();
    assertNotEquals(0, marking);
    assertNotEquals(idle, marking);
    assertTrue(v.windowOpen(marking));

    // Its sweep: the marking window closes and none opens.
    Direct.UNSAFE.putByteVolatile(null, mem + PHASE, SWEEPING);
    assertFalse(v.windowOpen(marking));
    assertEquals(0, v.windowBegin());

    // The cycle ends: the marking window stays closed (gc_started_seq alone would not tell).
    at(6, 6, IDLE);
    assertFalse(v.windowOpen(marking));
    assertNotEquals(0, v.windowBegin());

    // Given up (marking back to idle), then the next cycle's marking: closed either way.
    at(7, 6, MARKING);
    long marking2 = v.windowBegin();
    assertNotEquals(0, marking2);
    at(7, 7, IDLE);
    assertFalse(v.windowOpen(marking2));
    at(8, 7, MARKING);
    assertFalse(v.windowOpen(marking2));

    // Started, phase not stored yet: no window.
    at(9, 8, IDLE);
    assertEquals(0, v.windowBegin());
  }
}
