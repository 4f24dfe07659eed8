// Fragmentation stress of the objects space, in-process with the collector running: objects of
// 16 B to 16 MiB (log-uniform), random lifetimes, live data at most half the heap, until 100x
// the heap was allocated (FRAG_TIMES=n for n x, FRAG_SEED=n for another sequence of sizes and
// lifetimes). Objects never move, so only placement keeps a 16 MiB hole available: no
// allocation may fail with OutOfMemoryError. The heap is 512 MiB, so one object is at most a
// thirty-second of it. With 128 MiB (an eighth) about one run in ten failed after 1-10 GiB, and
// with 256 MiB (a sixteenth) a run under AddressSanitizer, whose timing changes when the
// collector frees what, failed after 15 GiB with 151 MB free in 33 chunks, the largest 15.1 MB:
// a non-moving heap cannot promise a hole of a large fraction of itself with half of it live.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "collector.hpp"
#include "colors/colors.hpp"
#include "heap.hpp"
#include "test_segment.hpp"
#include "verifier.hpp"

using namespace colors;
using namespace colors::detail;

namespace {

std::uint64_t from_env(const char* name, std::uint64_t fallback) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return fallback;
  const long long v = std::strtoll(s, nullptr, 10);
  return v > 0 ? static_cast<std::uint64_t>(v) : fallback;
}

struct Held {
  Value v;
  std::size_t bytes;
};

}  // namespace

TEST_CASE("fragmentation: 16 B - 16 MiB objects with random lifetimes, half the heap live, 100x the heap allocated") {
  constexpr std::size_t kHeap = std::size_t{512} << 20;
  constexpr std::size_t kMaxObject = 16u << 20;
  const std::uint64_t times = from_env("FRAG_TIMES", 100);
  test::TestSegment seg(kHeap);
  Metadata* m = seg.meta();
  gc::Options o;
  o.threads = 2;
  gc::Collector c(m, o);
  c.start();

  static const std::vector<std::uint8_t> zeros(kMaxObject, 0);
  std::mt19937_64 rng(from_env("FRAG_SEED", 1));
  std::uniform_real_distribution<double> log_size(std::log(16.0), std::log(double(kMaxObject)));
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<Held> live;
  std::size_t live_bytes = 0, peak_live = 0;
  std::uint64_t allocated = 0, objects = 0;
  auto drop_at = [&](std::size_t i) {
    live_bytes -= live[i].bytes;
    std::swap(live[i], live.back());
    live.pop_back();
  };
  const auto t0 = std::chrono::steady_clock::now();
  while (allocated < times * kHeap) {
    const std::size_t n = static_cast<std::size_t>(std::exp(log_size(rng)));
    const std::size_t bytes = round_up(n + 32, kGranule);  // header, class pointer, length
    // Random lifetimes: each allocation ends a random live object's life half the time, and
    // more die while the new one would take the live data past half the heap.
    if (!live.empty() && unit(rng) < 0.5) drop_at(rng() % live.size());
    while (!live.empty() && live_bytes + bytes > kHeap / 2) drop_at(rng() % live.size());
    Value v;
    try {
      v = new_binary(zeros.data(), n);
    } catch (const OutOfMemoryError& e) {
      HeapUsage u = heap_usage(m);
      FAIL("allocation " << objects << " of " << n << " B failed after " << allocated / (1 << 20) << " MiB allocated, "
                         << live_bytes << " B live in " << live.size() << " objects: " << e.what() << " (largest free "
                         << u.largest_free << ")");
    }
    live.push_back({std::move(v), bytes});
    live_bytes += bytes;
    peak_live = std::max(peak_live, live_bytes);
    allocated += bytes;
    ++objects;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  live.clear();
  c.stop();
  std::printf("fragmentation: %llu objects, %.1f GiB (%.0fx the %zu MiB heap) in %.1f s, %llu cycles, peak live %.1f MiB\n",
              static_cast<unsigned long long>(objects), allocated / double(1u << 30), double(allocated) / kHeap,
              kHeap >> 20, secs, static_cast<unsigned long long>(gc::last_cycle_stats(m).cycle), peak_live / 1048576.0);
  REQUIRE(peak_live <= kHeap / 2);
  REQUIRE(allocated >= times * kHeap);
  VerifyReport r = verify_heap(m);
  INFO(r.summary());
  REQUIRE(r.ok());
}
