#include "robust_mutex.hpp"

#include <linux/futex.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <string>

#include "colors/errors.hpp"

namespace colors::detail {

void RobustMutex::init() {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(&m_, &a);
  pthread_mutexattr_destroy(&a);
  holds_.store(0, std::memory_order_relaxed);
}

static bool handle(int rc, pthread_mutex_t* m) {
  if (rc == 0) return false;
  if (rc == EOWNERDEAD) {
    pthread_mutex_consistent(m);
    return true;
  }
  throw Error(ErrorCode::kGeneric, std::string("pthread_mutex_lock failed: ") + std::strerror(rc));
}

bool RobustMutex::lock() {
  const bool owner_died = handle(pthread_mutex_lock(&m_), &m_);
  count_hold();
  return owner_died;
}

int RobustMutex::lock_for(std::int64_t timeout_ns) {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  std::int64_t ns = ts.tv_nsec + timeout_ns;
  ts.tv_sec += ns / 1000000000;
  ts.tv_nsec = ns % 1000000000;
  int rc = pthread_mutex_timedlock(&m_, &ts);
  if (rc == ETIMEDOUT) return -1;
  const bool owner_died = handle(rc, &m_);
  count_hold();
  return owner_died ? 1 : 0;
}

void RobustMutex::unlock() { pthread_mutex_unlock(&m_); }

pid_t RobustMutex::holder_tid() const {
  // glibc's robust mutex: __lock is the futex word, holder tid | FUTEX_WAITERS | FUTEX_OWNER_DIED.
  return static_cast<pid_t>(__atomic_load_n(&m_.__data.__lock, __ATOMIC_RELAXED) & FUTEX_TID_MASK);
}

bool RobustMutex::mark_holder_dead() { return mark_mutex_holder_dead(&m_); }

bool mark_mutex_holder_dead(pthread_mutex_t* m) {
  // glibc's robust mutex: __lock is the futex word, holder tid | FUTEX_WAITERS | FUTEX_OWNER_DIED.
  if ((m->__data.__lock & FUTEX_TID_MASK) == 0) return false;
  m->__data.__lock = FUTEX_OWNER_DIED;
  return true;
}

}  // namespace colors::detail
