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
// Floats and integers outside 60 bits are boxed as heap objects.
#pragma once
#include <cstdint>

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

}  // namespace colors::detail
