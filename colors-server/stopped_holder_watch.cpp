#include "stopped_holder_watch.hpp"

#include <algorithm>

#include "proc_task.hpp"

namespace colors::server {

std::vector<StoppedHolderWatch::Kill> StoppedHolderWatch::check(detail::Metadata* m, const std::vector<pid_t>& clients,
                                                                std::int64_t now_ns) {
  struct Watched {
    const char* name;
    const detail::RobustMutex* lock;
  };
  const Watched watched[kLocks] = {
      {"heap lock", &m->heap_lock}, {"classes lock", &m->classes_lock}, {"collector's cycle lock", &m->gc_cycle_lock}};
  std::vector<Kill> kills;
  for (int i = 0; i < kLocks; ++i) {
    Sighting& s = seen_[i];
    const pid_t tid = watched[i].lock->holder_tid();
    const pid_t pid = tid != 0 ? thread_group_of(tid) : 0;
    const bool client = pid != 0 && std::find(clients.begin(), clients.end(), pid) != clients.end();
    if (!client || task_state(pid, tid) != 'T') {
      s = {};
      continue;
    }
    if (s.tid != tid) {
      s = {tid, now_ns};
      continue;
    }
    if (now_ns - s.since >= timeout_ns_) {
      kills.push_back({pid, tid, watched[i].name, now_ns - s.since});
      s = {};
    }
  }
  return kills;
}

std::int64_t StoppedHolderWatch::interval_ns() const {
  return std::clamp<std::int64_t>(timeout_ns_ / 4, 10'000'000, 1'000'000'000);
}

}  // namespace colors::server
