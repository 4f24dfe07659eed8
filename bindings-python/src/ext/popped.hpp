// The Python result of a pop (list.pop, dict.pop/popitem, set.pop, a sorted map's pop/popitem),
// converted without losing the elements when the conversion fails.
//
// A pop takes its elements out of the shared container first (one atomic operation), then turns
// them into Python objects. That conversion can run Python code which raises: a class resolver or
// `__init_subclass__` while a proxy class is made, a gc callback in a new proxy's allocation, a
// detach there. The elements would then be gone from the container for every process and never
// reach the caller. So each reference taken stays rooted a second time until the conversion has
// succeeded, and when it fails `put_back` returns the words to the container (unless a detach ran
// meanwhile: they belong to the closed attachment then) before the error propagates. Another
// process may see the container without them in between, as during any pop that is followed by a
// push.
// REQUIRES: the GIL; `taken` as the pop returned them, in the current attachment.
#pragma once
#include <array>
#include <cstddef>

#include "common.hpp"
#include "roots.hpp"
#include "segment.hpp"
#include "word.hpp"

namespace colors_py {

template <std::size_t N, class Convert, class PutBack>
py::object convert_popped(std::array<colors::detail::Rooted, N>& taken, Convert convert, PutBack put_back) {
  namespace cd = colors::detail;
  const std::uint64_t gen = g_generation;
  std::array<cd::Word, N> words;
  std::array<cd::Rooted, N> keep;
  for (std::size_t i = 0; i < N; ++i) {
    words[i] = taken[i].word();
    if (cd::is_ref(words[i])) keep[i] = cd::Rooted(words[i], cd::root_acquire(words[i]));
  }
  try {
    return convert();
  } catch (...) {
    if (gen == g_generation && cd::current_meta_or_null() != nullptr) {
      try {
        put_back(words);
      } catch (...) {
        // The container refused them back (the heap is full): the conversion's error is the one
        // the caller gets.
      }
    }
    throw;
  }
}

}  // namespace colors_py
