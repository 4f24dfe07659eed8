// Small-object allocation: TLAB bump allocation in the colors heap vs
// boost::interprocess::managed_shared_memory::allocate of the same sizes, in the same run.
#include <boost/interprocess/managed_shared_memory.hpp>
#include <chrono>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "heap.hpp"
#include "objects.hpp"
#include "session.hpp"
#include "test_segment.hpp"

namespace bip = boost::interprocess;
using namespace colors;

void bench_alloc(std::ostream& out) {
  const std::vector<std::size_t> sizes = {32, 48, 64, 96, 128};  // whole blocks, header included
  const std::size_t per_round = 200000;
  const int rounds = 5;
  double ours_best = 1e18, boost_best = 1e18;
  for (int r = 0; r < rounds; ++r) {
    {
      test::TestSegment seg(64 << 20);
      detail::Metadata* m = seg.meta();
      auto t0 = bench::now();
      for (std::size_t i = 0; i < per_round; ++i) {
        std::size_t bytes = sizes[i % sizes.size()];
        detail::BlockHeader* h = detail::reserve_block(m, 1, bytes);
        h->payload()[0] = 1;
        detail::publish_object(h, bytes);
      }
      ours_best = std::min(ours_best, bench::ns_since(t0) / per_round);
    }
    {
      std::string name = "colors-bench-boost-" + std::to_string(getpid());
      bip::shared_memory_object::remove(name.c_str());
      bip::managed_shared_memory msm(bip::create_only, name.c_str(), 64 << 20);
      auto t0 = bench::now();
      for (std::size_t i = 0; i < per_round; ++i) {
        char* p = static_cast<char*>(msm.allocate(sizes[i % sizes.size()] - 16));  // same payloads
        p[0] = 1;
      }
      boost_best = std::min(boost_best, bench::ns_since(t0) / per_round);
      bip::shared_memory_object::remove(name.c_str());
    }
  }
  bench::row(out, "small-object allocation (TLAB vs Boost managed_shared_memory::allocate)", ours_best, boost_best,
             "target: >= 10x faster");
}
