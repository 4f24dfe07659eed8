#include "worker_pool.hpp"

namespace colors::gc {

WorkerPool::WorkerPool(unsigned threads) : n_(threads == 0 ? 1 : threads) {
  for (unsigned i = 1; i < n_; ++i) threads_.emplace_back([this, i] { loop(i); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::run(const std::function<void(unsigned)>& fn) {
  {
    std::lock_guard<std::mutex> g(mu_);
    job_ = &fn;
    running_ = n_ - 1;
    ++generation_;
  }
  start_cv_.notify_all();
  fn(0);
  std::unique_lock<std::mutex> g(mu_);
  done_cv_.wait(g, [this] { return running_ == 0; });
  job_ = nullptr;
}

void WorkerPool::loop(unsigned i) {
  unsigned long seen = 0;
  for (;;) {
    const std::function<void(unsigned)>* job;
    {
      std::unique_lock<std::mutex> g(mu_);
      start_cv_.wait(g, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    (*job)(i);
    {
      std::lock_guard<std::mutex> g(mu_);
      if (--running_ == 0) done_cv_.notify_all();
    }
  }
}

}  // namespace colors::gc
