#include "marker.hpp"

#include <algorithm>
#include <thread>

#include "channel.hpp"
#include "classes.hpp"
#include "futex.hpp"
#include "objects.hpp"
#include "pending_bits.hpp"
#include "repository.hpp"

namespace colors::gc {

using namespace colors::detail;

namespace {
constexpr std::size_t kShareAbove = 64;  // a local stack this deep offers half of itself to thieves
}

Marker::Marker(Metadata* m, unsigned threads, std::uint8_t epoch)
    : m_(m), epoch_(epoch), workers_(threads == 0 ? 1 : threads) {
  for (std::size_t i = 0; i < workers_.size(); ++i) workers_[i].rng = 0x9e3779b97f4a7c15ULL * (i + 1);
}

void Marker::visit(Worker& w, Word ref) {
  if (!is_ref(ref) || ref < m_->objects_begin || ref >= m_->objects_end) return;
  BlockHeader* h = header_at(ref);
  if (BlockHeader::kind_of(h->load()) != BlockKind::kObject) {
    // Reserved: rooted while its thread initialises it. Keep it; its contents are protected
    // otherwise (see marker.hpp).
    h->marked.exchange(epoch_, std::memory_order_acq_rel);
    return;
  }
  if (stop_at_recent_ && h->recent.load(std::memory_order_acquire) == epoch_) return;
  if (h->marked.exchange(epoch_, std::memory_order_acq_rel) == epoch_) return;
  w.marked += 1;
  w.bytes += BlockHeader::size_of(h->load(std::memory_order_relaxed));
  w.local.push_back(ref);
  if (w.local.size() > kShareAbove && w.shared_size.load(std::memory_order_relaxed) == 0) share(w);
}

void Marker::trace(Worker& w, Word obj) {
  auto* o = reinterpret_cast<ObjectHead*>(obj);
  const std::size_t block = BlockHeader::size_of(o->block.load());
  ClassRecord* c = o->cls.load(std::memory_order_acquire);
  if (!is_class_record(m_, c)) return;  // cannot happen for a published object; stay defensive
  auto slots = [&](std::atomic<Word>* s, std::size_t n, std::size_t offset) {
    // Never read past the block, whatever a racing or corrupt length says.
    std::size_t fit = block > offset ? (block - offset) / sizeof(Word) : 0;
    if (n > fit) n = fit;
    for (std::size_t i = 0; i < n; ++i) visit(w, s[i].load(std::memory_order_acquire));
  };
  switch (c->kind) {
    case TypeKind::kArray:
    case TypeKind::kExtension:
    case TypeKind::kRootChunk: {
      auto* a = reinterpret_cast<ArrayObject*>(obj);
      slots(a->slots, a->capacity, offsetof(ArrayObject, slots));
      break;
    }
    case TypeKind::kList: visit(w, reinterpret_cast<ListObject*>(obj)->array.load(std::memory_order_acquire)); break;
    case TypeKind::kSet:
    case TypeKind::kMap: visit(w, reinterpret_cast<HashObject*>(obj)->table.load(std::memory_order_acquire)); break;
    case TypeKind::kSortedMap: visit(w, reinterpret_cast<SortedMapObject*>(obj)->root.load(std::memory_order_acquire)); break;
    case TypeKind::kTable: {
      auto* t = reinterpret_cast<TableObject*>(obj);
      std::size_t n = t->capacity;
      std::size_t fit = (block - offsetof(TableObject, entries)) / sizeof(TableEntry);
      if (n > fit) n = fit;
      for (std::size_t i = 0; i < n; ++i) {
        visit(w, t->entries[i].key.load(std::memory_order_acquire));  // markers are not references
        visit(w, t->entries[i].value.load(std::memory_order_acquire));
      }
      break;
    }
    case TypeKind::kObject: {
      // Every slot of the storage, not only the fields of the current version: a racing schema
      // change may be moving the object between versions while we look.
      auto* u = reinterpret_cast<UserObject*>(obj);
      visit(w, u->extension.load(std::memory_order_acquire));
      slots(u->slots, (block - sizeof(UserObject)) / sizeof(Word), sizeof(UserObject));
      break;
    }
    default: break;  // integer, float, string, binary: no references
  }
}

void Marker::share(Worker& w) {
  std::lock_guard<std::mutex> g(w.mu);
  std::size_t half = w.local.size() / 2;
  w.shared.insert(w.shared.end(), w.local.begin(), w.local.begin() + static_cast<long>(half));
  w.local.erase(w.local.begin(), w.local.begin() + static_cast<long>(half));
  w.shared_size.store(w.shared.size(), std::memory_order_release);
}

// Takes work: own stack, own shared half, then half of a random victim's shared half.
bool Marker::take(unsigned i, Word* out) {
  Worker& w = workers_[i];
  if (!w.local.empty()) {
    *out = w.local.back();
    w.local.pop_back();
    return true;
  }
  auto grab = [&](Worker& v, bool all) {
    std::lock_guard<std::mutex> g(v.mu);
    if (v.shared.empty()) return false;
    std::size_t n = all ? v.shared.size() : (v.shared.size() + 1) / 2;
    w.local.insert(w.local.end(), v.shared.end() - static_cast<long>(n), v.shared.end());
    v.shared.resize(v.shared.size() - n);
    v.shared_size.store(v.shared.size(), std::memory_order_release);
    return true;
  };
  if (w.shared_size.load(std::memory_order_acquire) != 0 && grab(w, true)) return take(i, out);
  const std::size_t n = workers_.size();
  for (std::size_t attempt = 0; attempt < 2 * n; ++attempt) {
    w.rng ^= w.rng << 13;
    w.rng ^= w.rng >> 7;
    w.rng ^= w.rng << 17;
    Worker& v = workers_[w.rng % n];
    if (&v != &w && v.shared_size.load(std::memory_order_acquire) != 0 && grab(v, false)) return take(i, out);
  }
  return false;
}

void Marker::drain(unsigned i) {
  const unsigned n = static_cast<unsigned>(workers_.size());
  Word obj;
  for (;;) {
    while (take(i, &obj)) trace(workers_[i], obj);
    // Idle: leave when everybody is idle (no one can create work), come back when work appears.
    idle_.fetch_add(1, std::memory_order_acq_rel);
    for (;;) {
      if (idle_.load(std::memory_order_acquire) == n) return;
      bool work = false;
      for (auto& v : workers_) work |= v.shared_size.load(std::memory_order_acquire) != 0;
      if (work) {
        idle_.fetch_sub(1, std::memory_order_acq_rel);
        break;
      }
      std::this_thread::yield();
    }
  }
}

std::uint64_t Marker::total_marked() const {
  std::uint64_t t = 0;
  for (auto& w : workers_) t += w.marked;
  return t;
}

std::uint64_t Marker::root_pass(WorkerPool& pool) {
  std::uint64_t before = total_marked();
  stop_at_recent_ = false;
  Worker& w0 = workers_[0];
  for (const ClientSlot& cs : m_->clients) {
    if (cs.state.load(std::memory_order_acquire) != static_cast<std::uint32_t>(ClientState::kFree))
      visit(w0, cs.roots.load(std::memory_order_acquire));
  }
  for_each_repository(m_, [&](RepositoryRecord* r) { visit(w0, r->root.load(std::memory_order_acquire)); });
  for_each_channel(m_, [&](ChannelRecord* c) { for_each_channel_slot(c, [&](std::atomic<Word>*, Word v) { visit(w0, v); }); });
  idle_.store(0, std::memory_order_release);
  pool.run([this](unsigned i) { drain(i); });
  return total_marked() - before;
}

std::uint64_t Marker::pending_pass(WorkerPool& pool) {
  std::uint64_t before = total_marked();
  stop_at_recent_ = true;
  const PendingBits pb = pending_bits_of(m_);
  const std::size_t words = pending_bits_bytes(m_->objects_end - m_->objects_begin) / 8;
  const std::size_t chunks = (words + kPendingChunkWords - 1) / kPendingChunkWords;
  next_part_.store(0, std::memory_order_release);
  idle_.store(0, std::memory_order_release);
  pool.run([&](unsigned i) {
    Worker& w = workers_[i];
    for (std::size_t c; (c = next_part_.fetch_add(1, std::memory_order_acq_rel)) < chunks;) {
      const std::size_t end = std::min(words, (c + 1) * kPendingChunkWords);
      for (std::size_t k = c * kPendingChunkWords; k < end; ++k) {
        if (pb.words[k].load(std::memory_order_relaxed) == 0) continue;
        // Take the word's bits before reading the objects they name: a barrier that flags one of
        // them again after this point sets a bit the next pass takes (pending_bits.hpp).
        std::uint64_t bits = pb.words[k].exchange(0, std::memory_order_seq_cst);
        while (bits != 0) {
          const unsigned b = static_cast<unsigned>(__builtin_ctzll(bits));
          bits &= bits - 1;
          const std::uintptr_t p = pb.objects_begin + (k * 64 + b) * kGranule;
          // A reserved block's bit is dropped: published later in this cycle, it is recent.
          if (BlockHeader::kind_of(header_at(p)->load()) != BlockKind::kObject) continue;
          ++w.taken;
          visit(w, p);
          Word obj;
          while (!w.local.empty()) {
            obj = w.local.back();
            w.local.pop_back();
            trace(w, obj);
          }
        }
      }
    }
    drain(i);
  });
  return total_marked() - before;
}

std::uint64_t Marker::objects_taken() const {
  std::uint64_t t = 0;
  for (auto& w : workers_) t += w.taken;
  return t;
}

std::uint64_t Marker::objects_marked() const { return total_marked(); }
std::uint64_t Marker::bytes_marked() const {
  std::uint64_t t = 0;
  for (auto& w : workers_) t += w.bytes;
  return t;
}

}  // namespace colors::gc
