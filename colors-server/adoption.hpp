// A successor server adopting the heap a server that is gone left behind: which of the clients
// recorded in the heap still live (their slots wait for their reattach), and the exit code of a
// refused heap. The steps themselves are in server.cpp (Server::adopt_segment, recover_adopted);
// the contract is in colors-server/README.md, "Surviving the server".
#pragma once
#include <sys/types.h>

#include <cstdint>

#include "client_table.hpp"

namespace colors::server {

// Exit code of a server that refused the heap it found (and set it aside).
inline constexpr int kExitHeapRefused = 3;

// A client slot of an adopted heap kept for its process, which lives on and will reattach.
struct KeptClient {
  Claim claim;
  pid_t pid = 0;
};

// Whether process `pid` exists and has the file (dev, ino) mapped shared, as an attached client
// maps its heap (/proc/PID/maps). A client that detached keeps only a private view, a process
// that reused a dead client's pid maps nothing of it: both answer false. The maps of another
// user's process (an --allow-group client) are not readable: then it answers whether the process
// exists, so a pid reused by another user's process keeps the slot until that process exits.
bool process_maps_heap(pid_t pid, std::uint64_t dev, std::uint64_t ino);

}  // namespace colors::server
