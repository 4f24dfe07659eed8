// Module tests of the objects-space allocator: TLABs, freelist, parsability, reclamation.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "colors/colors.hpp"
#include "heap.hpp"
#include "objects.hpp"
#include "test_segment.hpp"
#include "verifier.hpp"

using namespace colors;
using namespace colors::detail;

TEST_CASE("fresh heap is one parsable free region and verifies") {
  test::TestSegment seg(8 << 20);
  VerifyReport r = verify_heap(seg.meta());
  INFO(r.summary());
  REQUIRE(r.ok());
  REQUIRE(r.objects == 0);
  REQUIRE(r.free_bytes == 8u << 20);
}

TEST_CASE("small objects come from a TLAB owned by the client, large ones from the freelist") {
  test::TestSegment seg(8 << 20);
  Metadata* m = seg.meta();
  std::atomic<Word>* warm = root_acquire(kNull);  // makes this process's first root-table chunk
  root_release(warm);
  Rooted ra = new_string(m, "hello");
  Rooted rb = new_string(m, "world");
  Word a = ra.word(), b = rb.word();
  REQUIRE(b == a + block_size_of(a));  // bump allocation: adjacent
  VerifyReport r = verify_heap(m);
  INFO(r.summary());
  REQUIRE(r.ok());
  REQUIRE(r.tlab_blocks == 1);
  // The root-table chunk (8 KiB) is a large object: it does not come from the TLAB.
  REQUIRE(r.tlab_bytes == kTlabSize - block_size_of(a) - block_size_of(b));

  std::vector<char> big(100000, 'x');
  Rooted rs = new_string(m, std::string_view(big.data(), big.size()));
  Word s = rs.word();
  REQUIRE(string_value(s).size() == big.size());
  r = verify_heap(m);
  INFO(r.summary());
  REQUIRE(r.ok());
  REQUIRE(r.objects == 3 + 1);  // + this process's root-table chunk
}

TEST_CASE("placement: TLABs come from the low end of the space, large objects from its high end") {
  test::TestSegment seg(8 << 20);
  Metadata* m = seg.meta();
  std::atomic<Word>* warm = root_acquire(kNull);  // this process's first root-table chunk
  root_release(warm);
  Rooted small = new_string(m, "low");
  Rooted large = new_binary(m, nullptr, kLargeObjectBytes);
  Rooted medium = new_binary(m, nullptr, 100000);
  const std::uintptr_t s = small.word(), l = large.word(), md = medium.word();  // block starts
  // The first TLAB is the front of the space; the large object is at the top of the space (below
  // only the root-table chunk, a medium object carved before it); the medium object goes to the
  // top of the free space, next to the large object; the free space between is one chunk.
  REQUIRE(s < m->objects_begin + kTlabSize);
  REQUIRE(l + block_size_of(l) + (16u << 10) >= m->objects_end);
  REQUIRE(md + block_size_of(md) == l);
  HeapUsage u = heap_usage(m);
  REQUIRE(u.free_chunks == 1);
  const std::uintptr_t chunk = m->freelist_head.load();
  REQUIRE(chunk == s + kTlabSize);
  REQUIRE(chunk + u.free_bytes == md);
  VerifyReport r = verify_heap(m);
  INFO(r.summary());
  REQUIRE(r.ok());
}

TEST_CASE("allocation until out of memory fails cleanly and leaves a verifiable heap") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  std::size_t n = 0;
  bool oom = false;
  try {
    for (;;) {
      new_binary(m, nullptr, 1000);
      ++n;
    }
  } catch (const OutOfMemoryError& e) {
    oom = true;
    REQUIRE(std::string(e.what()).find("--heap-size") != std::string::npos);
  }
  REQUIRE(oom);
  REQUIRE(n > 900);  // 1 MiB / ~1 KiB objects, minus TLAB tails
  VerifyReport r = verify_heap(m);
  INFO(r.summary());
  REQUIRE(r.ok());
  // Large objects still fail, small requests also fail: nothing left to give.
  REQUIRE_THROWS_AS(new_binary(m, nullptr, 100000), OutOfMemoryError);
}

TEST_CASE("a dead client's TLABs are reclaimed into the freelist") {
  test::TestSegment seg(8 << 20);
  Metadata* m = seg.meta();
  std::size_t before = heap_usage(m).free_bytes;
  // Another thread allocates as client 7 (slot 3) and leaves its TLAB behind, as a killed
  // process would.
  seg.register_client(3, 7);
  retire_thread_tlab();
  set_current_client(7, 3);
  for (int i = 0; i < 10; ++i) new_string(m, "leftover");
  forget_all_tlabs();  // like a killed process: the TLAB is left behind as it is
  set_current_client(1, 0);
  REQUIRE(heap_usage(m).free_bytes == before - kTlabSize);
  m->clients[3].state.store(static_cast<std::uint32_t>(ClientState::kFree));  // it died
  REQUIRE_FALSE(verify_heap(m).ok());  // an orphaned TLAB is an error until reclaimed
  std::size_t got = reclaim_client_tlabs(m, 7);
  REQUIRE(got > 0);
  REQUIRE(got < kTlabSize);
  VerifyReport r = verify_heap(m);
  INFO(r.summary());
  REQUIRE(r.ok());
  REQUIRE(r.tlab_blocks == 0);
}

TEST_CASE("threads allocating concurrently keep the heap parsable") {
  test::TestSegment seg(32 << 20);
  Metadata* m = seg.meta();
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> walks{0};
  // A walker parses the heap continuously while others allocate: parsability without locks.
  std::thread walker([&] {
    while (!stop.load()) {
      std::uintptr_t p = m->objects_begin;
      while (p < m->objects_end) {
        std::uint64_t w = header_at(p)->load();
        std::size_t size = BlockHeader::size_of(w);
        BlockKind k = BlockHeader::kind_of(w);
        if (size == 0 || size % kGranule || (k != BlockKind::kFree && k != BlockKind::kFiller && k != BlockKind::kTlab &&
                                             k != BlockKind::kObject)) {
          FAIL("unparsable block at " << std::hex << p << " (objects " << m->objects_begin << ".." << m->objects_end << ") size " << std::dec << size << " kind " << int(k));
        }
        p += size;
      }
      if (p != m->objects_end) FAIL("walk overran the objects space");
      walks.fetch_add(1);
    }
  });
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        if (i % 100 == 0) new_binary(m, nullptr, 9000 + t);  // large: freelist path
        else new_string(m, std::string(static_cast<std::size_t>(i % 200), 'a'));
      }
    });
  }
  for (auto& t : ts) t.join();
  stop = true;
  walker.join();
  REQUIRE(walks.load() > 0);
  for (auto& t : ts) (void)t;
  VerifyReport r = verify_heap(m);
  INFO(r.summary());
  REQUIRE(r.ok());
  // + this process's root-table chunks: threads that find no free root slot at once each add one
  // (roots.cpp, refill), so there may be up to one per allocating thread.
  std::size_t chunks = 0;
  for (Word c = m->clients[0].roots.load(); c != kNull;
       c = reinterpret_cast<ArrayObject*>(c)->slots[0].load())
    ++chunks;
  CHECK(chunks >= 1);
  CHECK(chunks <= 3);
  REQUIRE(r.objects == 60000 + chunks);
}

TEST_CASE("a client killed between the stores of a front carve leaves a free block the next holder lists") {
  test::TestSegment seg(8 << 20);
  Metadata* m = seg.meta();
  Rooted keep = new_string(m, "before");
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // A front carve up to the front turning kTlab: the rest is a kFree block (with the chunk's
    // links) that the list does not reach yet; the list still holds the carved front.
    m->heap_lock.lock();
    std::uint64_t p = m->freelist_head.load();
    std::size_t size = BlockHeader::size_of(header_at(p)->load());
    std::uintptr_t r = p + kTlabSize;
    free_next(r)->store(free_next(p)->load());
    free_prev(r)->store(free_prev(p)->load());
    header_at(r)->word.store(BlockHeader::pack(size - kTlabSize, BlockKind::kFree));
    header_at(p)->owner.store(99);
    header_at(p)->publish(kTlabSize, BlockKind::kTlab);
    ::_exit(0);
  }
  int st = 0;
  REQUIRE(::waitpid(pid, &st, 0) == pid);
  // The next holder rebuilds the list from the heap: the rest is listed, the carved front is not,
  // and the counters match the list.
  Rooted big = new_binary(m, nullptr, 20000);
  HeapUsage u = heap_usage(m);
  REQUIRE(u.free_chunks == 1);
  REQUIRE(m->free_chunks.load() == 1);
  REQUIRE(m->free_bytes.load() == u.free_bytes);
  REQUIRE(BlockHeader::kind_of(header_at(m->freelist_head.load())->load()) == BlockKind::kFree);
  // The dead client's block is an ordinary kTlab block: reclaimed with its TLABs.
  REQUIRE(reclaim_client_tlabs(m, 99) == kTlabSize);
  VerifyReport r = verify_heap(m);
  INFO(r.summary());
  REQUIRE(r.ok());
}

TEST_CASE("a client killed while holding the heap lock leaves a freelist the next holder repairs") {
  test::TestSegment seg(8 << 20);
  Metadata* m = seg.meta();
  Rooted keep = new_string(m, "before");
  std::uint64_t free_before = m->free_bytes.load();
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Dies holding the lock halfway through an operation: a chunk that is no longer kFree but
    // still listed, a broken back link, and counters not yet updated.
    m->heap_lock.lock();
    std::uint64_t head = m->freelist_head.load();
    std::size_t size = BlockHeader::size_of(header_at(head)->load());
    std::uintptr_t rest = head + size - kTlabSize;
    header_at(rest)->owner.store(99);
    header_at(rest)->word.store(BlockHeader::pack(kTlabSize, BlockKind::kFiller));
    header_at(head)->publish(size - kTlabSize, BlockKind::kFree);
    free_prev(head)->store(12345);
    ::_exit(0);
  }
  int st = 0;
  REQUIRE(::waitpid(pid, &st, 0) == pid);
  // The next allocation that needs the lock repairs the list and counters.
  Rooted big = new_binary(m, nullptr, 20000);
  VerifyReport r = verify_heap(m);
  INFO(r.summary());
  REQUIRE(r.ok());
  REQUIRE(m->free_bytes.load() < free_before);
  REQUIRE(free_prev(m->freelist_head.load())->load() == 0);
}
