// colors-bench: every core benchmark, each against its baseline measured in the same run.
//
//   colors-bench [--quick] [alloc] [trees] [sync] [gc] [containers] [sortedmap] [tx] [copy]
//
// With no names every benchmark runs. --quick (or COLORS_BENCH_QUICK=1) shortens the long ones.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <set>
#include <string>

#include "bench_util.hpp"

void bench_alloc(std::ostream& out);
void bench_roots(std::ostream& out);
void bench_trees(std::ostream& out);
void bench_sync(std::ostream& out);
void bench_gc(std::ostream& out);
void bench_containers(std::ostream& out);
void bench_sorted_map(std::ostream& out);
void bench_tx(std::ostream& out);
void bench_copy(std::ostream& out);

int main(int argc, char** argv) {
  std::set<std::string> only;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      setenv("COLORS_BENCH_QUICK", "1", 1);
    } else if (std::strcmp(argv[i], "alloc") == 0 || std::strcmp(argv[i], "trees") == 0 || std::strcmp(argv[i], "sync") == 0 || std::strcmp(argv[i], "gc") == 0 ||
               std::strcmp(argv[i], "containers") == 0 || std::strcmp(argv[i], "sortedmap") == 0 ||
               std::strcmp(argv[i], "tx") == 0 || std::strcmp(argv[i], "copy") == 0) {
      only.insert(argv[i]);
    } else {
      std::cerr << "usage: colors-bench [--quick] [alloc] [trees] [sync] [gc] [containers] [sortedmap] [tx] [copy]\n";
      return 2;
    }
  }
  auto want = [&](const char* name) { return only.empty() || only.count(name) != 0; };
  std::cout << "colors core benchmarks (speedup = baseline time / our time; > 1 means faster)\n";
  colors::bench::header(std::cout);
  if (want("alloc")) {
    bench_alloc(std::cout);
    bench_roots(std::cout);
  }
  if (want("trees")) bench_trees(std::cout);
  if (want("sync")) bench_sync(std::cout);
  if (want("gc")) bench_gc(std::cout);
  if (want("containers")) bench_containers(std::cout);
  if (want("sortedmap")) bench_sorted_map(std::cout);
  if (want("tx")) bench_tx(std::cout);
  if (want("copy")) bench_copy(std::cout);
  return 0;
}
