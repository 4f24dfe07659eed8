// A fixed set of collector threads that run one phase function together and meet at the end
// (the barrier between phases). Thread 0 is the caller of run(); threads 1..n-1 are owned here.
#pragma once
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace colors::gc {

class WorkerPool {
 public:
  explicit WorkerPool(unsigned threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  unsigned size() const { return n_; }
  // Runs fn(i) on every thread i in [0, size()) and returns when all have finished.
  void run(const std::function<void(unsigned)>& fn);

 private:
  void loop(unsigned i);
  unsigned n_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(unsigned)>* job_ = nullptr;  // GUARDED_BY(mu_)
  unsigned long generation_ = 0;                        // GUARDED_BY(mu_)
  unsigned running_ = 0;                                // GUARDED_BY(mu_)
  bool stop_ = false;                                   // GUARDED_BY(mu_)
};

}  // namespace colors::gc
