package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterProperty;
import net.jqwik.api.lifecycle.BeforeProperty;

/**
 * Java's copy of the windows in which strings and boxed floats are read without a root
 * ({@link Direct.View#windowBegin}, {@link Direct.View#windowOpen}) against libshared's
 * definitions ({@code no_sweep_window_begin}, {@code no_sweep_window_end} in objects.hpp), bit
 * for bit: the natives below are those C++ functions, compiled into the test library
 * (src/test/cpp/window_conformance.cpp), reading the same memory as the Java view, laid out by
 * the C++ {@code Metadata}'s own offsets. Property tests (jqwik) over collector states (the
 * started and done counts, equal, one apart or arbitrary; every phase byte) in which a window
 * begins, and states in which it is checked: the tokens must be equal, and so must the answers.
 * The ordering of the loads is argued in gc/README.md ("Reads without a root"), not tested here.
 */
class WindowConformanceTest {
  static {
    ColorsServer.loadConformanceLibrary();
  }

  static native long cMetadataSize();
  static native long cOffGcStarted();
  static native long cOffGcDone();
  static native long cOffGcPhase();
  static native int cPhase(int which);
  static native long cWindowBegin(long meta);
  static native boolean cWindowEnd(long meta, long token);

  /** A state of the collector's words: gc_started_seq, gc_done_seq, gc_phase. */
  record State(int started, int done, byte phase) {}

  private long mem;
  private Direct.View v;

  @BeforeProperty
  void fakeMetadata() {
    assertNotNull(Direct.UNSAFE, "the field fast path needs sun.misc.Unsafe");
    long size = cMetadataSize();
    mem = Direct.UNSAFE.allocateMemory(size);  // 16-aligned: malloc's alignment
    Direct.UNSAFE.setMemory(mem, size, (byte) 0);
    v = DirectWindowTest.viewOfCollectorWords(mem, size, cOffGcStarted(), cOffGcDone(), cOffGcPhase(), cPhase(1));
  }

  @AfterProperty
  void free() {
    Direct.UNSAFE.freeMemory(mem);
  }

  private void set(State s) {
    Direct.UNSAFE.putIntVolatile(null, mem + cOffGcStarted(), s.started());
    Direct.UNSAFE.putIntVolatile(null, mem + cOffGcDone(), s.done());
    Direct.UNSAFE.putByteVolatile(null, mem + cOffGcPhase(), s.phase());
  }

  @Property(tries = 20000)
  void aWindowBeginsWithLibsharedsToken(@ForAll("states") State s) {
    set(s);
    assertEquals(cWindowBegin(mem), v.windowBegin(), () -> "windowBegin at " + s);
  }

  @Property(tries = 20000)
  void aWindowIsOpenExactlyWhenLibsharedSaysSo(@ForAll("states") State begin, @ForAll("states") State check,
      @ForAll boolean sameCount) {
    set(begin);
    long token = cWindowBegin(mem);
    if (token == 0) return;  // no window: nothing to check (the property above compares the 0)
    // Half the checks keep the count the window began at, so that the phase decides them.
    set(sameCount ? new State(begin.started(), check.done(), check.phase()) : check);
    assertEquals(cWindowEnd(mem, token), v.windowOpen(token), () -> "window of " + begin + " checked at " + check);
  }

  @Example
  void theTestSeesEachKindOfWindowAndEachAnswer() {
    // The properties above would pass vacuously if no state opened a window or closed one.
    set(new State(5, 5, (byte) cPhase(0)));
    long idle = cWindowBegin(mem);
    set(new State(6, 5, (byte) cPhase(1)));
    long marking = cWindowBegin(mem);
    assertEquals(1, idle & 3);
    assertEquals(3, marking & 3);
    assertEquals(true, v.windowOpen(marking) && cWindowEnd(mem, marking));
    assertEquals(false, v.windowOpen(idle) || cWindowEnd(mem, idle));
    set(new State(6, 5, (byte) cPhase(2)));
    assertEquals(0, cWindowBegin(mem));
    assertEquals(0, v.windowBegin());
  }

  @Provide
  Arbitrary<State> states() {
    Arbitrary<Integer> started = Arbitraries.oneOf(Arbitraries.integers(),
        Arbitraries.of(0, 1, -1, Integer.MAX_VALUE, Integer.MIN_VALUE));
    // done: equal to started (idle), one behind (a cycle running), or anything.
    Arbitrary<Integer> lag = Arbitraries.oneOf(Arbitraries.of(0, 1), Arbitraries.integers());
    Arbitrary<Byte> phase = Arbitraries.oneOf(Arbitraries.of((byte) 0, (byte) 1, (byte) 2), Arbitraries.bytes());
    return Combinators.combine(started, lag, phase).as((st, d, ph) -> new State(st, st - d, ph));
  }
}
