// Small-object allocation: TLAB bump allocation in the colors heap vs
// boost::interprocess::managed_shared_memory::allocate of the same sizes, in the same run.
#include <boost/interprocess/managed_shared_memory.hpp>
#include <sys/mman.h>

#include <chrono>
#include <memory>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "heap.hpp"
#include "objects.hpp"
#include "session.hpp"
#include "test_segment.hpp"
#include "colors/colors.hpp"

namespace bip = boost::interprocess;
using namespace colors;

// Both heaps are fresh shared memory; fault their pages in before timing so that the page faults
// of first touch (the same for both) do not drown the allocators' own cost.
static void prefault(void* p, std::size_t n) {
  auto a = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{4095};
  if (::madvise(reinterpret_cast<void*>(a), n, MADV_POPULATE_WRITE) != 0) {
    std::perror("madvise(MADV_POPULATE_WRITE)");
  }
}

// The prefault leaves the pages it touched last in the caches, which would favour an allocator
// that starts at that end of its heap (the colors heap gives TLABs from its low end, Boost's
// best fit starts low too). Both timed loops start from caches filled with unrelated data.
static void evict_caches() {
  static std::vector<char> junk(64u << 20);
  for (std::size_t i = 0; i < junk.size(); i += 64) junk[i] = static_cast<char>(i);
  asm volatile("" : : "r"(junk.data()) : "memory");
}

void bench_alloc(std::ostream& out) {
  // Whole block sizes (header included), cycled through a precomputed power-of-two table so the
  // loop itself costs no division.
  const std::size_t mix[] = {32, 48, 64, 96, 128, 48, 32, 64};
  std::size_t sizes[1024];
  for (std::size_t i = 0; i < 1024; ++i) sizes[i] = mix[(i * 7 + i / 8) % 8];
  const std::size_t per_round = 200000;
  const int rounds = 5;
  double ours_best = 1e18, boost_best = 1e18;
  for (int r = 0; r < rounds; ++r) {
    {
      test::TestSegment seg(64 << 20);
      detail::Metadata* m = seg.meta();
      prefault(reinterpret_cast<void*>(m->objects_begin), m->objects_end - m->objects_begin);
      evict_caches();
      auto t0 = bench::now();
      for (std::size_t i = 0; i < per_round; ++i) {
        std::size_t bytes = sizes[i & 1023];
        detail::BlockHeader* h = detail::reserve_block(m, 1, bytes);
        h->payload()[0] = 1;
        detail::publish_object(m, h, bytes);
      }
      ours_best = std::min(ours_best, bench::ns_since(t0) / per_round);
    }
    {
      std::string name = "colors-bench-boost-" + std::to_string(getpid());
      bip::shared_memory_object::remove(name.c_str());
      bip::managed_shared_memory msm(bip::create_only, name.c_str(), 64 << 20);
      prefault(msm.get_address(), msm.get_size());
      evict_caches();
      auto t0 = bench::now();
      for (std::size_t i = 0; i < per_round; ++i) {
        char* p = static_cast<char*>(msm.allocate(sizes[i & 1023] - 16));  // same payloads
        p[0] = 1;
      }
      boost_best = std::min(boost_best, bench::ns_since(t0) / per_round);
      bip::shared_memory_object::remove(name.c_str());
    }
  }
  bench::row(out, "small-object allocation (TLAB vs Boost managed_shared_memory::allocate)", ours_best, boost_best,
             "target: >= 10x faster");
}

// Holding a shared object from C++: a colors::Value copy takes a GC root slot of this process's
// table and its destruction gives it back (roots.cpp, a per-thread cache of free slots), vs copying
// and dropping a std::shared_ptr (an atomic increment and decrement), the usual way C++ keeps an
// object alive. The colors API creates and drops such handles on every field read of an object.
void bench_roots(std::ostream& out) {
  const std::size_t per_round = 2000000;
  double ours_best = 1e18, base_best = 1e18;
  test::TestSegment seg(8 << 20);
  Value obj = new_list();
  auto sp = std::make_shared<int>(1);
  for (int r = 0; r < 5; ++r) {
    auto t0 = bench::now();
    for (std::size_t i = 0; i < per_round; ++i) {
      Value copy = obj;
      asm volatile("" : : "r"(&copy) : "memory");
    }
    ours_best = std::min(ours_best, bench::ns_since(t0) / per_round);
    t0 = bench::now();
    for (std::size_t i = 0; i < per_round; ++i) {
      std::shared_ptr<int> copy = sp;
      asm volatile("" : : "r"(&copy) : "memory");
    }
    base_best = std::min(base_best, bench::ns_since(t0) / per_round);
  }
  bench::row(out, "a GC root taken and dropped (Value copy vs std::shared_ptr copy)", ours_best, base_best, "");
}
