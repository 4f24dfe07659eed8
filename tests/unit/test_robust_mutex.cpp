// Unit tests of the robust process-shared mutex (libshared/src/robust_mutex.*): the count of
// acquisitions that the server's lock-holder watch reads (colors-server/lock_holder_watch.hpp).
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <new>
#include <thread>

#include "robust_mutex.hpp"

using colors::detail::RobustMutex;

namespace {

// A RobustMutex in memory shared with forked children, as in the segment.
struct SharedMutex {
  void* mem = ::mmap(nullptr, sizeof(RobustMutex), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  RobustMutex* m = nullptr;
  SharedMutex() {
    REQUIRE(mem != MAP_FAILED);
    m = new (mem) RobustMutex;
    m->init();
  }
  ~SharedMutex() { ::munmap(mem, sizeof(RobustMutex)); }
};

}  // namespace

TEST_CASE("a robust mutex counts every acquisition, and nothing else", "[robust_mutex]") {
  SharedMutex s;
  RobustMutex& m = *s.m;
  CHECK(m.holds() == 0);
  for (int i = 0; i < 3; ++i) {
    CHECK_FALSE(m.lock());
    m.unlock();
  }
  CHECK(m.holds() == 3);
  CHECK(m.lock_for(1'000'000) == 0);
  CHECK(m.holds() == 4);
  // Held: another thread's lock_for times out and counts nothing; the hold stays one.
  int other = 0;
  std::thread([&] { other = m.lock_for(2'000'000); }).join();
  CHECK(other == -1);
  CHECK(m.holds() == 4);
  m.unlock();

  // A holder that dies: the next locker takes the mutex (EOWNERDEAD) and that counts too.
  std::fflush(nullptr);
  pid_t kid = ::fork();
  REQUIRE(kid >= 0);
  if (kid == 0) {
    m.lock();
    ::_exit(0);  // dies holding it
  }
  int st = 0;
  REQUIRE(::waitpid(kid, &st, 0) == kid);
  CHECK(m.holds() == 5);
  CHECK(m.lock());  // the previous holder died
  CHECK(m.holds() == 6);
  m.unlock();
}
