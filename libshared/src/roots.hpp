// Per-client GC root tables in the segment: every reference a client process holds through a
// handle occupies one slot of its table, so the collector finds a client's roots by scanning the
// table itself, without asking (or waiting for) the client.
//
// Invariants:
//  * A client's table is a chain of ArrayObject chunks starting at ClientSlot::roots; chunks are
//    only appended (release), never unlinked while the client is attached.
//  * Slots are filled with store_ref and emptied with store_ref(null), so dropping a root goes
//    through the same deletion barrier as any heap store.
//  * Only the owning process writes its table; the server clears it after the client died.
#pragma once
#include <atomic>
#include <cstdint>

#include "layout.hpp"

namespace colors::detail {

// Takes a slot in this process's table holding `value`; returns the slot.
std::atomic<Word>* root_acquire(Word value);
// Empties the slot (deletion barrier) and returns it to this process's free slots.
void root_release(std::atomic<Word>* slot);
// Process side, at detach: forget the private free-slot list.
void roots_forget_process_state();

// Server side: drops every root of a dead client (deletion barrier on each) and unlinks its table.
void release_client_roots(Metadata* m, std::uint32_t slot);

}  // namespace colors::detail
