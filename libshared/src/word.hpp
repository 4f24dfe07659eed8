// Tagged 8-byte words: the representation of every value stored in a shared slot (object field,
// container element, repository root, channel slot, root-table entry).
//
// Each slot is one std::atomic<uint64_t>, so racing unsynchronized stores can lose an update but
// never tear a value into something that is half a pointer.
//   0                       null
//   low nibble 0000, != 0   reference: address of the target's BlockHeader (16-byte aligned)
//   low nibble 0001         small integer: value << 4 | 1 (60-bit signed; wider ones are boxed)
//   low nibble 0010         boolean: b << 4 | 2
//   low nibble 0011         internal markers of hash tables (never visible to users)
//   low 3 bits 100          immediate float (nibbles 0100 and 1100): a double whose binary exponent
//                           lies in [-126, 128], or +-0.0, in the 61 bits above the tag
// Other floats (NaN, infinities, subnormals, magnitudes outside ~1e-38..6e38) and integers outside
// 60 bits are boxed as heap objects.
//
// Immediate floats (the encoding of Spur's SmallFloat64): rotate the double's bits left by one, so
// the sign is bit 0 and the 11-bit exponent bits 53..63, then subtract kFloatExponentOffset << 53;
// exponents 897..1151 become 1..255 and the payload fits 61 bits. Zero keeps only its sign
// (payload 0 or 1, which no non-zero payload can be, those being >= 1 << 53). The encoding is
// canonical: every double that fits is stored immediate (new_float), so equal doubles in range
// have equal words. bindings-java's Words.java encodes and decodes the same layout, and its
// WordsConformanceTest checks it against these functions bit for bit: change both together.
#pragma once
#include <cstdint>
#include <cstring>

namespace colors::detail {

using Word = std::uint64_t;

inline constexpr Word kNull = 0;
inline constexpr Word kTombstone = 0x03;  // deleted hash-table key
inline constexpr Word kNullKey = 0x13;    // null used as a hash-table key
inline constexpr std::int64_t kSmallMin = -(std::int64_t{1} << 59);
inline constexpr std::int64_t kSmallMax = (std::int64_t{1} << 59) - 1;

inline bool is_ref(Word w) { return w != 0 && (w & 15) == 0; }
inline bool is_small_int(Word w) { return (w & 15) == 1; }
inline bool is_bool(Word w) { return (w & 15) == 2; }
inline bool fits_small(std::int64_t v) { return v >= kSmallMin && v <= kSmallMax; }
inline Word make_small(std::int64_t v) { return (static_cast<Word>(v) << 4) | 1; }
inline std::int64_t small_value(Word w) { return static_cast<std::int64_t>(w) >> 4; }
inline Word make_bool(bool b) { return (static_cast<Word>(b) << 4) | 2; }
inline bool bool_value(Word w) { return (w >> 4) & 1; }

inline constexpr Word kFloatTag = 4;
inline constexpr Word kFloatExponentOffset = 896;  // IEEE biased exponent 1023 - 127
inline bool is_small_float(Word w) { return (w & 7) == kFloatTag; }
inline std::uint64_t double_bits(double d) {
  std::uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}
inline bool fits_small_float(double d) {
  std::uint64_t b = double_bits(d);
  std::uint64_t e = (b >> 52) & 0x7ff;
  return e - 897 < 255 || (b << 1) == 0;
}
// REQUIRES: fits_small_float(d)
inline Word make_small_float(double d) {
  std::uint64_t b = double_bits(d);
  std::uint64_t r = (b << 1) | (b >> 63);
  std::uint64_t p = (b << 1) == 0 ? r : r - (kFloatExponentOffset << 53);
  return (p << 3) | kFloatTag;
}
// REQUIRES: is_small_float(w)
inline double small_float_value(Word w) {
  std::uint64_t p = w >> 3;
  std::uint64_t b = p <= 1 ? p << 63 : p + (kFloatExponentOffset << 53);
  if (p > 1) b = (b >> 1) | (b << 63);
  double d;
  std::memcpy(&d, &b, sizeof d);
  return d;
}

}  // namespace colors::detail
