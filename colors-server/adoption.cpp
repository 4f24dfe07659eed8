#include "adoption.hpp"

#include <signal.h>
#include <sys/sysmacros.h>

#include <cerrno>

#include <cstdio>
#include <string>

namespace colors::server {

bool process_maps_heap(pid_t pid, std::uint64_t dev, std::uint64_t ino) {
  const std::string path = "/proc/" + std::to_string(pid) + "/maps";
  std::FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) {
    if (errno == ENOENT || errno == ESRCH) return false;  // no such process
    // Another user's process (an --allow-group client) hides its maps from us: whether it
    // exists is all we can tell, and reclaiming a live client's TLABs would corrupt it.
    return ::kill(pid, 0) == 0 || errno == EPERM;
  }
  char line[4096];
  bool found = false;
  const unsigned want_major = major(static_cast<dev_t>(dev)), want_minor = minor(static_cast<dev_t>(dev));
  while (!found && std::fgets(line, sizeof line, f) != nullptr) {
    char perms[8] = {};
    unsigned maj = 0, mnr = 0;
    unsigned long long inode = 0;
    // start-end perms offset major:minor inode path
    if (std::sscanf(line, "%*x-%*x %7s %*x %x:%x %llu", perms, &maj, &mnr, &inode) != 4) continue;
    found = perms[3] == 's' && inode == ino && maj == want_major && mnr == want_minor;
  }
  std::fclose(f);
  return found;
}

}  // namespace colors::server
