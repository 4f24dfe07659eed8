#include "server_watch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>

#include "colors/errors.hpp"

namespace colors::detail {

namespace {

std::atomic<bool> g_lost{false};

// The running watcher; touched only under the attach lock (start/stop) and by the fork handler.
struct Watch {
  bool running = false;
  pthread_t thread{};
  int link_fd = -1;
  int wake_rd = -1, wake_wr = -1;
  void* stack = nullptr;  // the thread's own stack (kStackBytes, lowest page a guard), while it runs
};

// The watcher runs on a stack of its own, not one glibc allocates. A child forked while the
// watcher runs keeps glibc's record of the watcher's stack, and glibc gives the child's first new
// thread that same stack, hence the same pthread_t: ThreadSanitizer, which still counts the
// parent's watcher as a thread of the child, then kills the child ("dup thread with used id").
// A stack the program mapped itself is never handed to another thread.
constexpr std::size_t kStackBytes = 1024 * 1024;  // virtual: only the pages used are backed
Watch g_watch;

void* watch_main(void* arg) {
  auto* w = static_cast<Watch*>(arg);
  // Blocks no signal the process wants: a signal only interrupts poll (EINTR), and we poll again.
  pollfd fds[2] = {{w->link_fd, POLLRDHUP, 0}, {w->wake_rd, POLLIN, 0}};
  for (;;) {
    fds[0].revents = fds[1].revents = 0;
    int rc = ::poll(fds, 2, -1);
    if (rc < 0) {
      if (errno == EINTR) continue;
      return nullptr;  // cannot watch (ENOMEM): operations still fail at their next use of the link
    }
    if (fds[1].revents != 0) return nullptr;  // detach: stop quietly
    if (fds[0].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) {
      // Release: whoever sees the flag sees everything this thread saw before (nothing yet, but
      // later watchers may record why).
      g_lost.store(true, std::memory_order_release);
      return nullptr;
    }
  }
}

void close_pipe(Watch& w) {
  if (w.wake_rd >= 0) ::close(w.wake_rd);
  if (w.wake_wr >= 0) ::close(w.wake_wr);
  w.wake_rd = w.wake_wr = -1;
}

}  // namespace

bool server_lost() { return g_lost.load(std::memory_order_acquire); }

void start_server_watch(int link_fd) {
  g_lost.store(false, std::memory_order_release);
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0)
    throw Error(ErrorCode::kGeneric, std::string("cannot watch the server connection: pipe2: ") + std::strerror(errno));
  g_watch.link_fd = link_fd;
  g_watch.wake_rd = p[0];
  g_watch.wake_wr = p[1];
  // A small stack (the thread only polls; sanitizer builds need more than the poll does).
  void* stack = ::mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  int rc = stack == MAP_FAILED ? errno : 0;
  if (rc == 0 && ::mprotect(stack, static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)), PROT_NONE) != 0) rc = errno;
  if (rc == 0) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, stack, kStackBytes);
    rc = ::pthread_create(&g_watch.thread, &attr, &watch_main, &g_watch);
    pthread_attr_destroy(&attr);
  }
  if (rc != 0) {
    if (stack != MAP_FAILED) ::munmap(stack, kStackBytes);
    close_pipe(g_watch);
    throw Error(ErrorCode::kGeneric, std::string("cannot start the server watcher thread: ") + std::strerror(rc));
  }
  g_watch.stack = stack;
  g_watch.running = true;
}

void stop_server_watch() {
  if (!g_watch.running) return;
  char b = 1;
  ssize_t n;
  do n = ::write(g_watch.wake_wr, &b, 1);
  while (n < 0 && errno == EINTR);
  ::pthread_join(g_watch.thread, nullptr);
  ::munmap(g_watch.stack, kStackBytes);
  g_watch.stack = nullptr;
  close_pipe(g_watch);
  g_watch.running = false;
  g_watch.link_fd = -1;
}

void forget_server_watch_after_fork() {
  // The thread does not exist here; the pipe's descriptors are this child's copies. Its stack
  // stays mapped, unused: unmapped, the child's own watcher would get the same addresses, hence
  // the parent watcher's pthread_t again (see kStackBytes).
  if (g_watch.running) close_pipe(g_watch);
  g_watch = Watch{};
  g_lost.store(false, std::memory_order_relaxed);
}

}  // namespace colors::detail
