// The server's side of Metadata::clients: giving attaching clients a slot and an id, and
// cleaning up after clients that are gone.
//
// Invariants:
//  * Only the server's event-loop thread changes slot states and ids (single writer), so claiming
//    needs no CAS. Other threads and processes (clients, later the collector) only read them.
//  * A slot's client_id, pid and uid are written before its state turns kActive (release), so a reader
//    that sees kActive (acquire) sees the right owner.
//  * A slot goes kActive -> kReclaiming -> kFree. While kReclaiming the server reclaims the dead
//    client's TLABs and roots; the slot is reused only once it is kFree, after the cleanup
//    finished. If the cleanup throws, the slot stays kReclaiming forever (a leaked slot is
//    harmless; reusing a half-cleaned slot would not be).
//  * Client ids come from Metadata::next_client_id, are never 0 and never reused (until the
//    32-bit counter wraps after 4 billion attachments).
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "layout.hpp"

namespace colors::server {

struct Claim {
  std::uint32_t client_id = 0;
  std::uint32_t slot = 0;
};

// nullopt when every slot is taken.
std::optional<Claim> claim_client_slot(detail::Metadata* m, pid_t pid, uid_t uid);

struct Cleanup {
  bool ok = true;
  std::size_t tlab_bytes = 0;  // bytes of TLABs returned to the heap
  std::string error;           // set when !ok
};

// After the client's connection closed (exit, detach or death): reclaims its TLABs and roots,
// then frees the slot.
// `reclaim` drops the client's roots and reclaims its TLABs (the collector does it, serialised
// with its own heap walks) and returns the TLAB bytes reclaimed.
Cleanup release_client_slot(detail::Metadata* m, const Claim& c,
                            const std::function<std::size_t(std::uint32_t client_id, std::uint32_t slot)>& reclaim);

std::size_t active_clients(const detail::Metadata* m);

}  // namespace colors::server
