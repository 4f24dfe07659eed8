#include "write_tracking.hpp"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace colors::detail {

namespace {
// Linux 5.11 and 6.7 flags, defined here for older headers.
constexpr int kUserModeOnly = 1;                                   // UFFD_USER_MODE_ONLY
constexpr std::uint64_t kFeatureWpShmem = std::uint64_t{1} << 12;  // UFFD_FEATURE_WP_HUGETLBFS_SHMEM
constexpr std::uint64_t kFeatureWpUnpopulated = std::uint64_t{1} << 13;
constexpr std::uint64_t kFeatureWpAsync = std::uint64_t{1} << 15;

int fail(std::string* why, const char* what) {
  if (why != nullptr) *why = std::string(what) + ": " + std::strerror(errno);
  return -1;
}
}  // namespace

int track_writes(void* base, std::size_t size, std::string* why) {
  if (const char* v = std::getenv("COLORS_WRITE_TRACKING"); v != nullptr && *v != 0 && std::strcmp(v, "on") != 0) {
    // A value other than on or off is a mistake; untracked is the choice that cannot lose a write
    // (the server then copies or compares every page), and the reason names the value.
    if (why != nullptr)
      *why = std::strcmp(v, "off") == 0 ? std::string("COLORS_WRITE_TRACKING=off")
                                        : "COLORS_WRITE_TRACKING=" + std::string(v) + " is neither on nor off: not tracked";
    return -1;
  }
  // User-mode faults only: an unprivileged process may not ask for more (vm.unprivileged_userfaultfd
  // is 0 by default), and asynchronous write protection resolves kernel-mode faults the same way.
  int fd = static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | kUserModeOnly));
  if (fd < 0) return fail(why, "userfaultfd");
  uffdio_api api{};
  api.api = UFFD_API;
  api.features = kFeatureWpAsync | kFeatureWpShmem | kFeatureWpUnpopulated;
  if (::ioctl(fd, UFFDIO_API, &api) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    return fail(why, "userfaultfd asynchronous write protection (Linux 6.7+)");
  }
  uffdio_register reg{};
  reg.range.start = reinterpret_cast<std::uintptr_t>(base);
  reg.range.len = size;
  reg.mode = UFFDIO_REGISTER_MODE_WP;
  if (::ioctl(fd, UFFDIO_REGISTER, &reg) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    return fail(why, "registering the segment for write tracking");
  }
  return fd;
}

}  // namespace colors::detail
