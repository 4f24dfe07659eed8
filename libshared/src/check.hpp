// Invariant checks at three levels, chosen at compile time by COLORS_CHECK_LEVEL (after mimalloc's
// MI_DEBUG levels). CMake sets it for every target that links libshared: 1 by default, 3 in the
// sanitizer builds (-DCOLORS_SANITIZE=...), or -DCOLORS_CHECK_LEVEL=n.
//
//  1  COLORS_CHECK            always on. O(1) checks where a broken invariant would otherwise make
//                             this process follow a wild pointer or write shared memory it does not
//                             own. Every client maps the segment writable, so a buggy or hostile one
//                             can break any invariant the others rely on; these checks turn what
//                             would be a crash or a silent corruption into an error.
//  2  COLORS_CHECK_INTERNAL   O(1) checks of this library's own bookkeeping on hot paths, stated as
//                             prose invariants next to the code they guard.
//  3  COLORS_CHECK_EXPENSIVE  walks, O(n) in the size of a structure.
//
// A failed check throws CorruptHeapError naming the file, line and condition, before anything is
// written on its path: the caller's language gets an exception and its process goes on.
// REQUIRES: not used where an exception cannot pass (destructors, noexcept functions); the
// condition has no side effects (it is not evaluated below its level).
#pragma once

#ifndef COLORS_CHECK_LEVEL
#define COLORS_CHECK_LEVEL 1
#endif

namespace colors::detail {

inline constexpr int kCheckLevel = COLORS_CHECK_LEVEL;

[[noreturn]] void check_failed(const char* file, int line, const char* condition, const char* what);

}  // namespace colors::detail

#define COLORS_CHECK_AT(level, cond, what)                                        \
  do {                                                                            \
    if (::colors::detail::kCheckLevel >= (level) && __builtin_expect(!(cond), 0)) \
      ::colors::detail::check_failed(__FILE__, __LINE__, #cond, what);            \
  } while (0)

#define COLORS_CHECK(cond, what) COLORS_CHECK_AT(1, cond, what)
#define COLORS_CHECK_INTERNAL(cond, what) COLORS_CHECK_AT(2, cond, what)
#define COLORS_CHECK_EXPENSIVE(cond, what) COLORS_CHECK_AT(3, cond, what)
