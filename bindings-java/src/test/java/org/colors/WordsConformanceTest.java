package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.LongRange;

/**
 * Java's copy of the word encoding ({@link Words}) against libshared's definitions (word.hpp,
 * pending_bits.hpp), bit for bit: the natives below are those C++ functions themselves, compiled
 * into a test library (src/test/cpp/words_conformance.cpp). Property tests (jqwik) over arbitrary
 * words, integers and double bit patterns, and over the edges of each encoding.
 */
class WordsConformanceTest {
  static {
    ColorsServer.loadConformanceLibrary();
  }

  static native boolean cIsRef(long w);
  static native boolean cIsSmallInt(long w);
  static native boolean cFitsSmall(long v);
  static native long cMakeSmall(long v);
  static native long cSmallValue(long w);
  static native boolean cIsBool(long w);
  static native long cMakeBool(boolean b);
  static native boolean cBoolValue(long w);
  static native boolean cIsSmallFloat(long w);
  static native boolean cFitsSmallFloat(long bits);
  static native long cMakeSmallFloat(long bits);
  static native long cSmallFloatBits(long w);
  static native long cPendingIndex(long objectsBegin, long addr);
  static native long cGranule();
  static native long cSmallMin();
  static native long cSmallMax();

  @Example
  void constantsAreLibsharedsOwn() {
    assertEquals(cSmallMin(), Words.SMALL_MIN);
    assertEquals(cSmallMax(), Words.SMALL_MAX);
    assertEquals(cGranule(), 1L << Words.GRANULE_SHIFT);
    assertEquals(cMakeBool(false), Words.boolWord(false));
    assertEquals(cMakeBool(true), Words.boolWord(true));
  }

  /** Every word is classified and decoded alike (references, tags, payloads). */
  @Property(tries = 20000)
  void anyWordReadsTheSame(@ForAll("words") long w) {
    assertEquals(cIsRef(w), Words.isRef(w), hex(w));
    assertEquals(cIsSmallInt(w), Words.isSmallInt(w), hex(w));
    assertEquals(cIsBool(w), Words.isBool(w), hex(w));
    assertEquals(cIsSmallFloat(w), Words.isSmallFloat(w), hex(w));
    assertEquals(cSmallValue(w), Words.smallValue(w), hex(w));
    assertEquals(cBoolValue(w), Words.boolValue(w), hex(w));
    if (Words.isSmallFloat(w)) assertEquals(cSmallFloatBits(w), Words.smallFloatBits(w), hex(w));
  }

  /** Integers: the same range, the same words, and back. */
  @Property(tries = 20000)
  void integersEncodeTheSame(@ForAll("integers") long v) {
    assertEquals(cFitsSmall(v), Words.fitsSmall(v), Long.toString(v));
    if (!Words.fitsSmall(v)) return;
    long w = Words.smallWord(v);
    assertEquals(cMakeSmall(v), w, Long.toString(v));
    assertTrue(Words.isSmallInt(w));
    assertEquals(v, Words.smallValue(w));
  }

  /**
   * What the Java sorted-map reads rely on: small integers compare as their words do (a node's keys
   * are compared without decoding them).
   */
  @Property(tries = 5000)
  void smallIntegerWordsKeepTheOrder(@ForAll("smallIntegers") long a, @ForAll("smallIntegers") long b) {
    assertEquals(Long.signum(Long.compare(a, b)), Long.signum(Long.compare(cMakeSmall(a), cMakeSmall(b))));
  }

  /** Doubles: which fit in the word, their words, and the bits they decode to. */
  @Property(tries = 20000)
  void doublesEncodeTheSame(@ForAll("doubleBits") long bits) {
    String what = Double.toString(Double.longBitsToDouble(bits)) + " (" + hex(bits) + ")";
    assertEquals(cFitsSmallFloat(bits), Words.fitsSmallFloat(bits), what);
    if (!Words.fitsSmallFloat(bits)) return;
    long w = Words.smallFloatWord(bits);
    assertEquals(cMakeSmallFloat(bits), w, what);
    assertTrue(Words.isSmallFloat(w), what);
    assertEquals(bits, Words.smallFloatBits(w), what);  // exact: the encoding loses nothing
    assertEquals(bits, cSmallFloatBits(w), what);
  }

  /** The store barrier flags the same bit of the pending set as libshared's. */
  @Property(tries = 5000)
  void pendingBitsAreTheSame(@ForAll @LongRange(min = 0, max = 1L << 40) long beginGranule,
      @ForAll @LongRange(min = 0, max = 1L << 36) long granule) {
    long begin = 0x6000_0000_0000L + (beginGranule << Words.GRANULE_SHIFT);
    long addr = begin + (granule << Words.GRANULE_SHIFT);
    assertEquals(cPendingIndex(begin, addr), Words.pendingIndex(begin, addr));
  }

  @Provide
  Arbitrary<Long> words() {
    // Every tag nibble over arbitrary payloads, plus jqwik's edge cases of longs.
    Arbitrary<Long> tagged = Combinators.combine(Arbitraries.longs(), Arbitraries.longs().between(0, 15))
        .as((payload, tag) -> (payload << 4) | tag);
    return Arbitraries.oneOf(Arbitraries.longs(), tagged);
  }

  @Provide
  Arbitrary<Long> integers() {
    return Arbitraries.oneOf(Arbitraries.longs(), smallIntegers(),
        Arbitraries.of(Words.SMALL_MIN, Words.SMALL_MAX, Words.SMALL_MIN - 1, Words.SMALL_MAX + 1, 0L, -1L,
            Long.MIN_VALUE, Long.MAX_VALUE));
  }

  @Provide
  Arbitrary<Long> smallIntegers() {
    return Arbitraries.longs().between(Words.SMALL_MIN, Words.SMALL_MAX);
  }

  @Provide
  Arbitrary<Long> doubleBits() {
    // Arbitrary bit patterns (NaNs with payloads, infinities and subnormals among them), ordinary
    // doubles, and every sign and mantissa at the exponents where the immediate range starts and
    // ends (896/897 and 1151/1152), at zero and at the top.
    Arbitrary<Long> exponents = Arbitraries.of(0L, 1L, 2L, 895L, 896L, 897L, 898L, 1022L, 1023L, 1150L, 1151L, 1152L,
        1153L, 2046L, 2047L);
    Arbitrary<Long> mantissas = Arbitraries.oneOf(Arbitraries.longs().between(0, (1L << 52) - 1),
        Arbitraries.of(0L, 1L, (1L << 52) - 1, 1L << 51));
    Arbitrary<Long> edges = Combinators.combine(Arbitraries.of(0L, 1L), exponents, mantissas)
        .as((sign, e, m) -> (sign << 63) | (e << 52) | m);
    Arbitrary<Long> ordinary = Arbitraries.doubles().map(Double::doubleToRawLongBits);
    return Arbitraries.oneOf(Arbitraries.longs(), edges, ordinary);
  }

  private static String hex(long w) {
    return "0x" + Long.toHexString(w);
  }
}
