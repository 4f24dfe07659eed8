#include "roots.hpp"

#include <mutex>
#include <vector>

#include "barrier.hpp"
#include "objects.hpp"
#include "segment.hpp"
#include "session.hpp"

namespace colors::detail {

namespace {
// Slot 0 of every chunk links to the next chunk, so the chain is itself ordinary heap data that
// the collector traces from ClientSlot::roots.
constexpr std::size_t kChunkSlots = 1024;

std::mutex g_mu;
std::vector<std::atomic<Word>*> g_free;  // GUARDED_BY(g_mu)

ArrayObject* chunk(Word w) { return reinterpret_cast<ArrayObject*>(w); }
}  // namespace

std::atomic<Word>* root_acquire(Word value) {
  std::lock_guard<std::mutex> g(g_mu);
  if (g_free.empty()) {
    Metadata* m = current_meta();
    ClientSlot& cs = m->clients[current_client_slot()];
    Word fresh = new_array(m, TypeKind::kRootChunk, kChunkSlots);
    init_ref(&chunk(fresh)->slots[0], cs.roots.load(std::memory_order_acquire));
    store_ref(&cs.roots, fresh);
    for (std::size_t i = kChunkSlots - 1; i >= 1; --i) g_free.push_back(&chunk(fresh)->slots[i]);
  }
  std::atomic<Word>* slot = g_free.back();
  g_free.pop_back();
  // The slot is null: no deletion barrier needed, but the store must be visible to the collector
  // scanning the table (release).
  slot->store(value, std::memory_order_release);
  return slot;
}

void root_release(std::atomic<Word>* slot) {
  store_ref(slot, kNull);
  std::lock_guard<std::mutex> g(g_mu);
  g_free.push_back(slot);
}

void roots_forget_process_state() {
  std::lock_guard<std::mutex> g(g_mu);
  g_free.clear();
}

void release_client_roots(Metadata* m, std::uint32_t slot) {
  ClientSlot& cs = m->clients[slot];
  for (Word c = cs.roots.load(std::memory_order_acquire); c != kNull; c = chunk(c)->slots[0].load(std::memory_order_acquire)) {
    for (std::size_t i = 1; i < chunk(c)->capacity; ++i) store_ref(&chunk(c)->slots[i], kNull);
  }
  store_ref(&cs.roots, kNull);
}

}  // namespace colors::detail
