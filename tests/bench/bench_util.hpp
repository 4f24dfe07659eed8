// Shared helpers of the benchmarks: timing and the ratio table.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <ostream>
#include <string>
#include <vector>

namespace colors::bench {

inline std::chrono::steady_clock::time_point now() { return std::chrono::steady_clock::now(); }
inline double ns_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::nano>(now() - t0).count();
}

// This thread's CPU time in ns: time spent descheduled, or in the collector's threads, is not in it.
inline double thread_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// The median (the upper one of an even count).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One table row: ours and the baseline measured in the same run, and their ratio
// (baseline / ours: above 1 means ours is faster).
inline void row(std::ostream& out, const std::string& what, double ours_ns, double base_ns, const std::string& note) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "| %-75s | %10.1f | %10.1f | %6.2fx | %s |", what.c_str(), ours_ns, base_ns,
                base_ns / ours_ns, note.c_str());
  out << buf << "\n";
}

inline void header(std::ostream& out) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "| %-75s | %10s | %10s | %7s | %s |", "benchmark", "ours ns", "base ns", "speedup", "note");
  out << buf << "\n";
}

}  // namespace colors::bench
