#include "lock_holder_watch.hpp"

#include <algorithm>

#include "proc_task.hpp"

namespace colors::server {

std::vector<LockHolderWatch::Kill> LockHolderWatch::check(detail::Metadata* m, const std::vector<pid_t>& clients,
                                                          std::int64_t now_ns) {
  struct Watched {
    const char* name;
    const detail::RobustMutex* lock;
    bool held_rule;  // the cycle lock is held for a whole heap verification (the header)
  };
  const Watched watched[kLocks] = {{"heap lock", &m->heap_lock, true},
                                   {"classes lock", &m->classes_lock, true},
                                   {"collector's cycle lock", &m->gc_cycle_lock, false}};
  std::vector<Kill> kills;
  for (int i = 0; i < kLocks; ++i) {
    Sighting& stopped = stopped_[i];
    Sighting& held = held_[i];
    // The count before the holder: a hold that begins between the two reads is then seen with
    // a count from before it, which the next check's count differs from (the header).
    const std::uint64_t holds = watched[i].lock->holds();
    const pid_t tid = watched[i].lock->holder_tid();
    const pid_t pid = tid != 0 ? thread_group_of(tid) : 0;
    const bool client = pid != 0 && std::find(clients.begin(), clients.end(), pid) != clients.end();
    const char state = client ? task_state(pid, tid) : 'X';
    if (!client || state == 't' || state == 'X' || state == 'Z') {
      stopped = {};
      held = {};
      continue;
    }
    if (stopped_timeout_ns_ > 0 && state == 'T') {
      if (stopped.tid != tid) {
        stopped = {tid, 0, now_ns};
      } else if (now_ns - stopped.since >= stopped_timeout_ns_) {
        kills.push_back({pid, tid, watched[i].name, Rule::kStopped, now_ns - stopped.since});
        stopped = {};
        held = {};
        continue;
      }
    } else {
      stopped = {};
    }
    if (held_timeout_ns_ > 0 && watched[i].held_rule) {
      if (held.tid != tid || held.holds != holds) {
        held = {tid, holds, now_ns};
      } else if (now_ns - held.since >= held_timeout_ns_) {
        kills.push_back({pid, tid, watched[i].name, Rule::kHeld, now_ns - held.since});
        stopped = {};
        held = {};
      }
    }
  }
  return kills;
}

std::int64_t LockHolderWatch::interval_ns() const {
  std::int64_t shortest = 0;
  for (std::int64_t t : {stopped_timeout_ns_, held_timeout_ns_})
    if (t > 0 && (shortest == 0 || t < shortest)) shortest = t;
  return std::clamp<std::int64_t>(shortest / 4, 10'000'000, 1'000'000'000);
}

}  // namespace colors::server
