#include "data_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "segment.hpp"

namespace colors::server {

namespace {
bool parse_name(const char* name, const char* suffix, std::uint64_t& seq) {
  unsigned long long v = 0;
  int used = 0;
  if (std::sscanf(name, "checkpoint-%20llu%n", &v, &used) != 1) return false;
  if (std::strcmp(name + used, suffix) != 0 || used != 11 + 20) return false;
  seq = v;
  return true;
}

std::vector<std::uint64_t> list(const std::string& dir, const char* suffix) {
  std::vector<std::uint64_t> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    std::uint64_t seq = 0;
    if (parse_name(e->d_name, suffix, seq)) out.push_back(seq);
  }
  ::closedir(d);
  std::sort(out.rbegin(), out.rend());
  return out;
}
}  // namespace

std::string DataDir::open(const std::string& dir) {
  dir_ = dir;
  if (std::string why = detail::ensure_private_dir(dir); !why.empty()) return why;
  switch (lock_.acquire(dir + "/lock")) {
    case InstanceLock::Result::kAcquired:
      break;
    case InstanceLock::Result::kHeld:
      return "the data directory " + dir + " is in use by another colors-server (pid " +
             std::to_string(lock_.holder_pid()) + ")";
    case InstanceLock::Result::kError:
      return lock_.error();
  }
  for (std::uint64_t seq : list(dir, ".tmp")) remove_temp(seq);
  return {};
}

std::vector<std::uint64_t> DataDir::checkpoints() const { return list(dir_, ".ckpt"); }

std::string DataDir::checkpoint_path(std::uint64_t seq) const {
  char name[64];
  std::snprintf(name, sizeof name, "/checkpoint-%020" PRIu64 ".ckpt", seq);
  return dir_ + name;
}

std::string DataDir::temp_path(std::uint64_t seq) const {
  char name[64];
  std::snprintf(name, sizeof name, "/checkpoint-%020" PRIu64 ".tmp", seq);
  return dir_ + name;
}

std::uint64_t DataDir::next_seq() const {
  std::uint64_t top = 0;
  for (std::uint64_t s : list(dir_, ".ckpt")) top = std::max(top, s);
  for (std::uint64_t s : list(dir_, ".tmp")) top = std::max(top, s);
  return top + 1;
}

std::string DataDir::log_path(std::uint64_t seq) const {
  char name[64];
  std::snprintf(name, sizeof name, "/log-%020" PRIu64 ".wal", seq);
  return dir_ + name;
}

int DataDir::open_log(std::uint64_t seq, std::string& error) const {
  const std::string path = log_path(seq);
  // A log left under this checkpoint's number belongs to no checkpoint on disk: replaced.
  ::unlink(path.c_str());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    error = "cannot create " + path + ": " + std::strerror(errno);
    return -1;
  }
  sync_dir();
  return fd;
}

int DataDir::create_temp(std::uint64_t seq, std::string& error) const {
  const std::string path = temp_path(seq);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) error = "cannot create " + path + ": " + std::strerror(errno);
  return fd;
}

std::string DataDir::commit(std::uint64_t seq) const {
  // A log under this number belongs to an earlier checkpoint of the same number that is gone
  // (deleted, or lost with a damaged disk): replayed onto this one, its records would overwrite
  // newer pages with older ones. It goes (for good, the directory synced) before this checkpoint
  // can be found under its name.
  if (::unlink(log_path(seq).c_str()) == 0) sync_dir();
  if (::rename(temp_path(seq).c_str(), checkpoint_path(seq).c_str()) != 0)
    return "cannot rename " + temp_path(seq) + ": " + std::strerror(errno);
  sync_dir();
  return {};
}

void DataDir::prune(std::size_t keep) const {
  std::vector<std::uint64_t> all = checkpoints();
  bool removed = false;
  for (std::size_t i = keep; i < all.size(); ++i) {
    removed |= ::unlink(checkpoint_path(all[i]).c_str()) == 0;
    ::unlink(log_path(all[i]).c_str());
  }
  if (removed) sync_dir();
}

void DataDir::remove_temp(std::uint64_t seq) const { ::unlink(temp_path(seq).c_str()); }

void DataDir::sync_dir() const {
  int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace colors::server
