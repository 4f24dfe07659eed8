// An in-process segment for module tests: created and formatted like the server does, with this
// process registered as client 1 in slot 0, so the C++ API and the internals work without a
// server. Each test executable gets its own address (COLORS_TEST_ADDRESS) so that executables
// running in parallel under ctest never meet.
#pragma once
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>

#include "heap.hpp"
#include "layout.hpp"
#include "segment.hpp"
#include "session.hpp"

#ifndef COLORS_TEST_ADDRESS
#define COLORS_TEST_ADDRESS 0x620000000000ULL
#endif

namespace colors::detail {
void reset_process_state();
}

namespace colors::test {

class TestSegment {
 public:
  explicit TestSegment(std::size_t heap_bytes = 8 << 20, std::size_t classes_bytes = 4 << 20) {
    static std::atomic<int> counter{0};
    detail::SegmentConfig cfg;
    cfg.name = "test-" + std::to_string(getpid()) + "-" + std::to_string(counter.fetch_add(1));
    cfg.address = COLORS_TEST_ADDRESS;
    cfg.heap_size = heap_bytes;
    cfg.classes_size = classes_bytes;
    detail::reset_process_state();
    seg_ = detail::Segment::create(cfg);
    detail::Metadata* m = seg_->meta();
    m->server_state.store(static_cast<std::uint32_t>(detail::ServerState::kRunning), std::memory_order_release);
    register_client(0, 1);
    detail::set_current_client(1, 0);
  }
  ~TestSegment() {
    detail::reset_process_state();
    detail::set_current_client(0, 0);
    std::string path = seg_->path();
    seg_.reset();
    detail::set_current_meta(nullptr);
    ::unlink(path.c_str());
  }
  TestSegment(const TestSegment&) = delete;
  TestSegment& operator=(const TestSegment&) = delete;

  detail::Metadata* meta() const { return seg_->meta(); }

  // Marks slot `slot` as attached client `id` (what the server does at attach).
  void register_client(std::uint32_t slot, std::uint32_t id) {
    detail::ClientSlot& cs = meta()->clients[slot];
    cs.client_id.store(id, std::memory_order_relaxed);
    cs.pid.store(getpid(), std::memory_order_relaxed);
    cs.state.store(static_cast<std::uint32_t>(detail::ClientState::kActive), std::memory_order_release);
  }

 private:
  std::unique_ptr<detail::Segment> seg_;
};

}  // namespace colors::test
