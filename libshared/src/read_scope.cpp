#include "read_scope.hpp"

#include "colors/errors.hpp"
#include "pending_bits.hpp"
#include "segment.hpp"

namespace colors::detail {

namespace {
// Gives the thread's scope word back to its root table at thread exit. Constructed (armed) after
// the thread's first root was taken, so it is destroyed before roots.cpp's cache guard, which
// then hands the emptied slot back to the process.
struct ReadScopeExitGuard {
  bool armed = false;
  ~ReadScopeExitGuard() {
    ReadScopeState& s = t_read_scope;
    if (s.slot == nullptr || s.gen != g_roots_gen.load(std::memory_order_acquire)) return;
    root_release(s.slot);  // holds a small integer: nothing to flag
    s.slot = nullptr;
    s.depth = 0;
    s.base = 0;
  }
};
thread_local ReadScopeExitGuard t_read_scope_exit_guard;

ArrayObject* root_chunk(Word w) { return reinterpret_cast<ArrayObject*>(w); }
}  // namespace

constinit thread_local ReadScopeState t_read_scope{};

void read_scope_first_entry() {
  current_meta();  // NotAttachedError when no heap is mapped
  ReadScopeState& s = t_read_scope;
  const std::uint64_t gen = g_roots_gen.load(std::memory_order_acquire);
  // A slot of an older attachment belongs to a table that is gone: forget it, never write it.
  s.slot = root_acquire(read_scope_word(s.seq & ~std::uint64_t{1}));
  s.gen = gen;
  s.seq &= ~std::uint64_t{1};
  t_read_scope_exit_guard.armed = true;
}

Rooted promote_borrowed(Word w) {
  if (!is_ref(w)) return Rooted(w, nullptr);
  std::atomic<Word>* slot = root_acquire(w);  // root_fence: the root's store before the phase read
  flag_scope_reference(w);
  return Rooted(w, slot);
}

std::vector<ActiveReadScope> active_read_scopes(const Metadata* m) {
  std::vector<ActiveReadScope> out;
  for (std::uint32_t i = 0; i < kMaxClients; ++i) {
    const ClientSlot& cs = m->clients[i];
    if (cs.state.load(std::memory_order_acquire) == static_cast<std::uint32_t>(ClientState::kFree)) continue;
    // The chain is append-only while the client is attached, and a dead client's chunks are freed
    // only by a sweep, which this cycle has not reached: every chunk read here is a root chunk.
    for (Word c = cs.roots.load(std::memory_order_acquire); c != kNull;
         c = root_chunk(c)->slots[0].load(std::memory_order_acquire)) {
      const ArrayObject* a = root_chunk(c);
      for (std::size_t k = 1; k < a->capacity; ++k) {
        const Word w = a->slots[k].load(std::memory_order_acquire);
        if (is_active_scope_word(w)) out.push_back({&a->slots[k], w, i});
      }
    }
  }
  return out;
}

}  // namespace colors::detail
