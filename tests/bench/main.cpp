// colors-bench: every core benchmark, each against its baseline measured in the same run.
#include <iostream>

#include "bench_util.hpp"

void bench_alloc(std::ostream& out);
void bench_sync(std::ostream& out);

int main() {
  std::cout << "colors core benchmarks (speedup = baseline time / our time; > 1 means faster)\n";
  colors::bench::header(std::cout);
  bench_alloc(std::cout);
  bench_sync(std::cout);
  return 0;
}
