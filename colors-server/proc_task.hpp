// What /proc says about a client's threads: the server's only view of a process it did not start.
#pragma once
#include <sys/types.h>

namespace colors::server {

// The state letter of thread `tid` of process `pid` (/proc/<pid>/task/<tid>/stat): 'R', 'S', 'D',
// 'T' (stopped: SIGSTOP, job control), 't' (stopped by a tracer), 'Z', ...; 'X' when it is gone.
char task_state(pid_t pid, pid_t tid);

// The process (thread group) thread `tid` belongs to, or 0 when it is gone.
pid_t thread_group_of(pid_t tid);

}  // namespace colors::server
