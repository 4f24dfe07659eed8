// Module tests of the invariant checks (libshared/src/check.hpp): what a failed check reports, that
// each level is evaluated only in builds of that level, and that the always-on checks of the
// allocator turn a freelist broken by another process into an error instead of a wild read.
#include <catch2/catch.hpp>
#include <string>

#include "check.hpp"
#include "colors/errors.hpp"
#include "heap.hpp"
#include "objects.hpp"
#include "test_segment.hpp"

using namespace colors;
using namespace colors::detail;

TEST_CASE("a failed check is a CorruptHeapError naming the condition, file and line") {
  auto fails = [] { COLORS_CHECK(1 + 1 == 3, "arithmetic holds"); };
  try {
    fails();
    FAIL("the check did not throw");
  } catch (const CorruptHeapError& e) {
    const std::string what = e.what();
    INFO(what);
    REQUIRE(what.find("arithmetic holds") != std::string::npos);
    REQUIRE(what.find("1 + 1 == 3") != std::string::npos);
    REQUIRE(what.find("test_checks.cpp:") != std::string::npos);
  }
  REQUIRE_NOTHROW([] { COLORS_CHECK(1 + 1 == 2, "arithmetic holds"); }());
}

TEST_CASE("each check level is evaluated only in builds of that level or higher") {
  int internal = 0, expensive = 0, always = 0;
  COLORS_CHECK((++always, true), "counted");
  COLORS_CHECK_INTERNAL((++internal, true), "counted");
  COLORS_CHECK_EXPENSIVE((++expensive, true), "counted");
  CAPTURE(kCheckLevel);
  REQUIRE(always == 1);
  REQUIRE(internal == (kCheckLevel >= 2 ? 1 : 0));
  REQUIRE(expensive == (kCheckLevel >= 3 ? 1 : 0));
}

TEST_CASE("a freelist link out of the objects space fails the allocation instead of being followed") {
  test::TestSegment seg(8 << 20);
  Metadata* m = seg.meta();
  Rooted warm = new_binary(m, nullptr, 100000);  // a medium object: placed through the freelist
  const std::uint64_t head = m->freelist_head.load();
  REQUIRE(head != 0);
  const std::uint64_t saved = free_next(head)->load();
  // What a process writing the segment directly could leave: the walk would read a header at an
  // address outside the segment (a fault before the check existed).
  free_next(head)->store(0xdead0);
  REQUIRE_THROWS_AS(new_binary(m, nullptr, 100000), CorruptHeapError);
  free_next(head)->store(saved);
  Rooted after = new_binary(m, nullptr, 100000);
  REQUIRE(after.word() != kNull);
}

TEST_CASE("a broken back link in the freelist is found by the expensive check") {
  test::TestSegment seg(8 << 20);
  Metadata* m = seg.meta();
  Rooted warm = new_binary(m, nullptr, 100000);
  const std::uint64_t head = m->freelist_head.load();
  REQUIRE(head != 0);
  {
    HeapLockGuard g(m);
    REQUIRE(freelist_sound(m));
  }
  const std::uint64_t saved = free_prev(head)->load();
  free_prev(head)->store(head);  // the head names itself as its predecessor
  {
    HeapLockGuard g(m);
    REQUIRE_FALSE(freelist_sound(m));
  }
  CAPTURE(kCheckLevel);
  // Level 3 walks the list on every carve; below it a carve would trust the link (and write
  // through it), so it is tried only where the check runs.
  if (kCheckLevel >= 3) REQUIRE_THROWS_AS(new_binary(m, nullptr, 100000), CorruptHeapError);
  free_prev(head)->store(saved);
  Rooted r = new_binary(m, nullptr, 100000);
  REQUIRE(r.word() != kNull);
}
