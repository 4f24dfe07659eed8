// Which pages of the segment were written since the last capture, asked of the kernel instead of
// found by comparing every page (libshared/src/write_tracking.hpp has the mechanism).
//
// The server registers each process that maps the segment (itself, every attached client) and
// scan() asks each one's /proc/<pid>/pagemap for the pages written through its mapping since the
// previous scan, write-protecting them again in the same step. The union over the processes is
// every page written since the previous scan, or scan() says why it cannot vouch for that.
//
// Invariants:
//  * scan() succeeds only when every registered process's scan succeeded (each mapping is
//    registered: a detached, exited or untracked process fails with EPERM or ESRCH, and one whose
//    segment range is unmapped fails check_mapped), no client
//    left since the previous scan (remove() raises `lost_`: its mapping's record went with it),
//    and no client raised its slot's write_tracking_gap (a detach whose connection the server has
//    not seen close yet). `lost_` and the gaps are read after the scans, so a departure is either
//    seen by this scan or by the next one.
//  * A failed scan may have protected some mappings and not others: the caller must treat
//    everything as written until a scan succeeds (Checkpointer::tracking_valid_).
//  * mu_ is a leaf lock: nothing else is taken while it is held.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "checkpoint_file.hpp"
#include "layout.hpp"

namespace colors::server {

class WrittenPages {
 public:
  // `meta`: the segment, mapped by this process at its fixed address. `self_tracked`: whether
  // this process's own mapping is registered (Segment::writes_tracked).
  WrittenPages(detail::Metadata* meta, std::size_t segment_size, bool self_tracked);
  ~WrittenPages();
  WrittenPages(const WrittenPages&) = delete;
  WrittenPages& operator=(const WrittenPages&) = delete;

  // A client attached (or reattached) in `slot`; its pagemap is opened now, while the pid is
  // surely its.
  void add(std::uint32_t slot, pid_t pid);
  // The client in `slot` is gone.
  void remove(std::uint32_t slot);

  // Appends to `pages` the byte offsets (from the segment's start) of the pages within `extents`,
  // or in holes of less than 1 MiB between them, written since the previous scan, sorted and
  // unique, and protects them again. "" or why the list cannot be trusted (then `pages` is
  // incomplete). A page listed in such a hole gained its data after the caller read `extents`:
  // the caller copies it like any other listed page (no later scan lists it again).
  std::string scan(const std::vector<Extent>& extents, std::vector<std::uint64_t>& pages);

 private:
  struct Process {
    pid_t pid = 0;
    int pagemap_fd = -1;  // -1: could not be opened (scan() fails while it is registered)
  };
  std::string scan_one(int pagemap_fd, const std::vector<Extent>& spans, std::vector<std::uint64_t>& pages);
  std::string check_mapped(int pagemap_fd);

  detail::Metadata* meta_;
  std::uintptr_t base_;
  std::size_t size_;
  std::mutex mu_;
  int self_fd_ = -1;                        // GUARDED_BY(mu_): /proc/self/pagemap, -1 if untracked
  std::map<std::uint32_t, Process> procs_;  // GUARDED_BY(mu_): slot -> client process
  bool lost_ = false;                       // GUARDED_BY(mu_): a client left since the last scan
};

}  // namespace colors::server
