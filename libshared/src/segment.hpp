// Creating, mapping and formatting the shared segment.
//
// Where the segment lives (the threat model is in colors-server/README.md, "Access control"):
//  * The server creates it as a regular file `<heap dir>/<name>.heap` on tmpfs, where the heap dir
//    is `/dev/shm/colors-<euid>` by default: a directory the server's user owns, mode 0700, checked
//    on every start (owner, type, not a symlink, no access for others). Nothing else in /dev/shm is
//    used, so another user cannot keep a server from starting by creating a name there first; a
//    heap dir planted by someone else is refused with the check that failed.
//  * Clients never open the segment by name: the server passes its descriptor over the attach
//    socket (SCM_RIGHTS), after the client checked who the server is (SO_PEERCRED). So the file's
//    mode can stay 0600 whatever --allow-group says.
#pragma once
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "layout.hpp"

namespace colors::detail {

struct SegmentConfig {
  std::string name = "colors";                 // logical name; the file is heap_file(dir, name)
  std::string dir;                             // heap dir; empty: default_heap_dir()
  std::uintptr_t address = kDefaultAddress;
  std::size_t heap_size = kDefaultHeapSize;    // objects space
  std::size_t classes_size = kDefaultClassesSize;
};

// /dev/shm/colors-<euid>.
std::string default_heap_dir();
// `dir`/`name`.heap (`dir` empty: the default heap dir).
std::string heap_file(const std::string& dir, const std::string& name);
// Creates `dir` (0700) when missing and checks that it is a real directory (not a symlink) owned
// by this process's effective uid with no access for group or others. Returns an empty string
// when it may be used, else which check failed, phrased for a log line or an exception.
std::string ensure_private_dir(const std::string& dir);
std::size_t metadata_size();

// One mapping of the segment in this process. At most one exists at a time per process: the
// segment lives at a fixed address, and the process-wide `current_meta()` points into it.
class Segment {
 public:
  // Server side: creates and formats a fresh segment file, replacing a stale one of the same name.
  // REQUIRES: the caller holds the name's instance lock (no live server uses the file).
  static std::unique_ptr<Segment> create(const SegmentConfig& cfg);
  // Server side: opens the segment file a server that is gone left under cfg's name, checks its
  // header (segment_check.hpp) before mapping anything, and maps it at the address its header
  // names (the heap's own geometry wins over cfg's sizes and address). Writes nothing. When a
  // check fails, returns nullptr with `refusal` saying what failed. Throws Error on I/O failures.
  // REQUIRES: the caller holds the name's instance lock.
  static std::unique_ptr<Segment> adopt(const SegmentConfig& cfg, std::string& refusal);
  // Server side: renames the segment file of cfg aside, to `<name>.heap.rejected-<UTC time>`, for
  // inspection. Returns the new path, or an empty string with `error` set.
  static std::string set_aside(const SegmentConfig& cfg, std::string& error);
  // Client side: maps the segment behind `fd` (received from the server) at `address` without
  // clobbering any mapping other than the view a detach left there. Takes ownership of `fd`.
  // Destroying it (detach) leaves the range as a private copy-on-write view (see ~Segment).
  static std::unique_ptr<Segment> open_fd(int fd, std::uintptr_t address, std::size_t size);
  // Removes the segment file (mappings stay valid until unmapped).
  static void remove(const SegmentConfig& cfg);

  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  Metadata* meta() const { return meta_; }
  std::size_t size() const { return size_; }
  // Server side: the open segment file, passed to clients at attach. -1 on the client side.
  int fd() const { return fd_; }
  // The file's identity (st_dev, st_ino), for telling this heap's mappings from others.
  bool file_id(std::uint64_t& dev, std::uint64_t& ino) const;
  // Server side: the file's path. Empty on the client side.
  const std::string& path() const { return path_; }
  // Client side: replaces the mapping with a private copy-on-write view of the same file (reads see
  // the heap, writes stay in this process). Idempotent; ~Segment does it too.
  void privatize();
  // Whether the kernel tracks this mapping's writes (write_tracking.hpp); why not, when it does not.
  bool writes_tracked() const { return tracking_fd_ >= 0; }
  const std::string& why_untracked() const { return why_untracked_; }

 private:
  Segment() = default;
  Metadata* meta_ = nullptr;
  std::size_t size_ = 0;
  int fd_ = -1;
  std::string path_;
  int tracking_fd_ = -1;  // the userfaultfd that registers the mapping for write tracking
  bool private_ = false;  // privatize() replaced the shared mapping
  std::string why_untracked_;
  void track();
};

// The segment this process uses, or nullptr.
Metadata* current_meta_or_null();
// The segment this process uses (set_current_meta); read through current_meta*.
extern std::atomic<Metadata*> g_current_meta;
[[noreturn, gnu::cold]] void throw_not_attached();  // NotAttachedError
// The segment this process uses. Throws NotAttachedError otherwise.
inline Metadata* current_meta() {
  Metadata* m = g_current_meta.load(std::memory_order_acquire);
  if (__builtin_expect(m == nullptr, 0)) throw_not_attached();
  return m;
}
// Makes `m` the segment every thread of this process uses (nullptr: none).
// Invariant: an attach publishes the segment here only once the attachment is whole (its client id
// named, the collector barrier chosen, the TLABs of earlier attachments forgotten): another
// thread that sees it allocates under this client's id, which the server reclaims, never under
// none. The release store pairs with current_meta()'s acquire load.
void set_current_meta(Metadata* m);

// Maps `size` bytes of `fd` at exactly `address`, refusing (AddressInUseError) when any part of
// the range is already mapped in this process, except the private view a client's detach left
// (replaced in place when it is the same range, unmapped first otherwise).
void* map_fixed_noreplace(int fd, std::uintptr_t address, std::size_t size);

}  // namespace colors::detail
