// The kernel's write tracking of the segment: which pages a process wrote since it was last asked.
//
// Every process that maps the segment (the server, each client) registers its mapping with a
// userfaultfd in asynchronous write-protect mode (Linux 6.7+: UFFD_FEATURE_WP_ASYNC). A scan of
// the process's /proc/<pid>/pagemap with PAGEMAP_SCAN lists the pages written through that
// mapping since the previous scan and write-protects them again in the same step; the first
// write to a protected page costs a minor fault (~0.8 us) that the kernel resolves by itself, no
// thread of ours takes part. The server scans every attached process (colors-server/
// written_pages.hpp) to copy only what changed when it captures the heap (checkpointer.hpp).
//
// Invariants (what a scan can vouch for, doc/DESIGN.md "Durability"):
//  * A page written through a registered mapping after the scan that last protected it is
//    reported by the next scan of the same mapping, including a page that had no page-table
//    entry before (a new entry starts unprotected, so it reads as written).
//  * What a mapping recorded is lost when the mapping goes: a process that exits, or a client
//    whose detach replaces its mapping with a private view. The scan of a process without a
//    registered mapping fails (EPERM, ESRCH), and a detaching client raises its slot's
//    `write_tracking_gap` before its mapping goes, so the server never mistakes a lost record for
//    an empty one.
//  * A forked child's inherited mapping is not registered (userfaultfd registrations are not
//    inherited): the fork handler makes it a private view at once (client.cpp), so nothing the
//    child writes before it attaches reaches the heap.
#pragma once
#include <sys/ioctl.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace colors::detail {

// The kernel interface (include/uapi/linux/fs.h and userfaultfd.h of Linux 6.7), declared here
// because the build machine's headers may predate it; the running kernel decides.
struct PageRegion {
  std::uint64_t start, end, categories;
};
struct PageScanArg {
  std::uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted, category_mask,
      category_anyof_mask, return_mask;
};
inline constexpr unsigned long kPagemapScan = _IOWR('f', 16, PageScanArg);
inline constexpr std::uint64_t kPageIsWpAllowed = 1u << 0;
inline constexpr std::uint64_t kPageIsWritten = 1u << 1;
inline constexpr std::uint64_t kScanWriteProtectMatching = 1u << 0;  // PM_SCAN_WP_MATCHING
inline constexpr std::uint64_t kScanCheckWpAsync = 1u << 1;          // PM_SCAN_CHECK_WPASYNC

// Registers [base, base + size) of this process's mapping for write tracking. Returns the
// userfaultfd, to keep open as long as the mapping (closing it ends the registration), or -1
// when the kernel cannot track writes this way, or COLORS_WRITE_TRACKING=off asks not to (any
// value but unset, empty or `on` counts as off: the server then compares pages instead); `why`
// says which.
int track_writes(void* base, std::size_t size, std::string* why = nullptr);

}  // namespace colors::detail
