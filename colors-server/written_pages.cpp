#include "written_pages.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "write_tracking.hpp"

namespace colors::server {

namespace {
constexpr std::uint64_t kPage = 4096;
constexpr std::size_t kRegions = 512;  // page_region entries per ioctl
constexpr std::uint64_t kMergeGap = std::uint64_t{1} << 20;
constexpr std::uint64_t kParallelBytes = std::uint64_t{64} << 20;  // scans of less take under ~50 us

int open_pagemap(const std::string& path) { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); }
}  // namespace

WrittenPages::WrittenPages(detail::Metadata* meta, std::size_t segment_size, bool self_tracked)
    : meta_(meta), base_(reinterpret_cast<std::uintptr_t>(meta)), size_(segment_size) {
  if (self_tracked) self_fd_ = open_pagemap("/proc/self/pagemap");
}

WrittenPages::~WrittenPages() {
  if (self_fd_ >= 0) ::close(self_fd_);
  for (auto& [slot, p] : procs_)
    if (p.pagemap_fd >= 0) ::close(p.pagemap_fd);
}

void WrittenPages::add(std::uint32_t slot, pid_t pid) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = procs_.find(slot);
  if (it != procs_.end()) {
    if (it->second.pid == pid && it->second.pagemap_fd >= 0) return;
    if (it->second.pagemap_fd >= 0) ::close(it->second.pagemap_fd);
    procs_.erase(it);
    lost_ = true;
  }
  // The descriptor pins the process's address space: a pid reused later cannot be mistaken for it.
  procs_[slot] = Process{pid, open_pagemap("/proc/" + std::to_string(pid) + "/pagemap")};
}

void WrittenPages::remove(std::uint32_t slot) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = procs_.find(slot);
  if (it == procs_.end()) return;
  if (it->second.pagemap_fd >= 0) ::close(it->second.pagemap_fd);
  procs_.erase(it);
  lost_ = true;
}

// Whether the process behind `fd` still has a tracked mapping at the segment's first and last
// page: a scan of a range nothing maps succeeds and lists nothing (a client that unmapped or moved
// its mapping), which must not pass for "wrote nothing". "" or why not.
std::string WrittenPages::check_mapped(int fd) {
  for (std::uint64_t at : {base_, base_ + size_ - kPage}) {
    detail::PageRegion region[1];
    detail::PageScanArg a{};
    a.size = sizeof a;
    a.flags = detail::kScanCheckWpAsync;
    a.start = at;
    a.end = at + kPage;
    a.vec = reinterpret_cast<std::uintptr_t>(region);
    a.vec_len = 1;
    a.category_mask = detail::kPageIsWpAllowed;
    a.return_mask = detail::kPageIsWpAllowed;
    const long n = ::ioctl(fd, detail::kPagemapScan, &a);
    if (n < 0) return std::strerror(errno);
    if (n == 0) return "the segment is not mapped there";
  }
  return "";
}

// The extents, with those less than kMergeGap apart merged: each span is one walk (an ioctl of
// about 1.3 us here, per process, two to four times per capture), and walking the page-table
// entries of a small hole costs less than that. Long holes stay out: walking the tens of MiB
// between the objects space's data and the end of the segment cost about 70 us per process.
static std::vector<Extent> scan_spans(const std::vector<Extent>& extents) {
  std::vector<Extent> spans;
  for (const Extent& e : extents) {
    if (!spans.empty() && e.offset <= spans.back().offset + spans.back().length + kMergeGap)
      spans.back().length = std::max(spans.back().length, e.offset + e.length - spans.back().offset);
    else
      spans.push_back(e);
  }
  return spans;
}

std::string WrittenPages::scan_one(int fd, const std::vector<Extent>& spans, std::vector<std::uint64_t>& pages) {
  detail::PageRegion regions[kRegions];
  for (const Extent& e : spans) {
  std::uint64_t start = base_ + e.offset;
  const std::uint64_t end = start + e.length;
  while (start < end) {
    // The masks must stay exactly PAGE_IS_WRITTEN: with them the kernel counts an entry it
    // dropped (reclaim, paging out) as written; other categories take a path that does not. A
    // hole (no page-table entry: no page ever touched there through this mapping) is not written.
    detail::PageScanArg a{};
    a.size = sizeof a;
    a.flags = detail::kScanWriteProtectMatching | detail::kScanCheckWpAsync;
    a.start = start;
    a.end = end;
    a.vec = reinterpret_cast<std::uintptr_t>(regions);
    a.vec_len = kRegions;
    a.category_mask = detail::kPageIsWritten;
    a.return_mask = detail::kPageIsWritten;
    const long n = ::ioctl(fd, detail::kPagemapScan, &a);
    if (n < 0) return std::strerror(errno);
    for (long i = 0; i < n; ++i)
      for (std::uint64_t p = regions[i].start; p < regions[i].end; p += kPage) pages.push_back(p - base_);
    // A full vector ends the walk early; walk_end says where (the pages before it are protected).
    if (a.walk_end <= start) return "the page scan made no progress";
    start = a.walk_end;
  }
  }
  return check_mapped(fd);
}

std::string WrittenPages::scan(const std::vector<Extent>& extents, std::vector<std::uint64_t>& pages) {
  std::lock_guard<std::mutex> g(mu_);
  // One job per process, the server's own first.
  struct Job {
    int fd;
    std::string who;  // for the reason; "" when fd is good
    pid_t pid;
    std::vector<std::uint64_t> pages;
    std::string error;
  };
  std::vector<Job> jobs;
  jobs.push_back(Job{self_fd_, self_fd_ < 0 ? "the server's own mapping is not tracked" : "", 0, {}, {}});
  for (auto& [slot, p] : procs_) {
    jobs.push_back(Job{p.pagemap_fd,
                       p.pagemap_fd < 0 ? "the pagemap of client process " + std::to_string(p.pid) + " could not be opened" : "",
                       p.pid, {}, {}});
  }
  const std::vector<Extent> spans = scan_spans(extents);
  const auto run = [&](std::size_t from, std::size_t step) {
    for (std::size_t i = from; i < jobs.size(); i += step)
      if (jobs[i].fd >= 0) jobs[i].error = scan_one(jobs[i].fd, spans, jobs[i].pages);
  };
  // A scan walks every page-table entry over the data (about 0.5 ms per GiB per process): with
  // much data, a second thread takes every other process (the clients are stopped meanwhile when
  // this is a capture's last scan, so the CPUs are free).
  std::uint64_t bytes = 0;
  for (const Extent& e : extents) bytes += e.length;
  if (jobs.size() > 1 && bytes >= kParallelBytes) {
    std::thread helper(run, 1, 2);
    run(0, 2);
    helper.join();
  } else {
    run(0, 1);
  }
  std::string why;
  for (Job& j : jobs) {
    if (why.empty() && !j.who.empty()) why = j.who;
    if (why.empty() && !j.error.empty()) {
      why = j.pid == 0 ? "scanning the server's own mapping: " + j.error
                       : "client process " + std::to_string(j.pid) + ": " + j.error +
                             (j.error == std::strerror(EPERM)
                                  ? " (the segment there is not a tracked mapping: a detach, or COLORS_WRITE_TRACKING=off)"
                                  : "");
    }
    pages.insert(pages.end(), j.pages.begin(), j.pages.end());
  }
  // After the scans (written_pages.hpp): a departure before this point fails this scan.
  if (std::exchange(lost_, false) && why.empty()) why = "a client left since the last scan";
  for (std::uint32_t i = 0; i < kMaxClients; ++i) {
    // Read before cleared: a store, even of the same value, is a write the next scan would list.
    std::atomic<std::uint32_t>& gap = meta_->clients[i].write_tracking_gap;
    if (gap.load(std::memory_order_seq_cst) == 0 || gap.exchange(0, std::memory_order_seq_cst) == 0) continue;
    if (why.empty()) why = "a client detached since the last scan";
  }
  std::sort(pages.begin(), pages.end());
  pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
  return why;
}

}  // namespace colors::server
