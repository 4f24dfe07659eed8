// Command-line options of oo7-load (load_main.cpp): parsed by hand, errors as
// colors::InvalidArgumentError naming the option.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "operations.hpp"
#include "queries.hpp"

namespace oo7 {

struct LoadOptions {
  std::string size = "small";
  std::uint64_t seed = 42;
  bool check_only = false;           // --check: read the published database, build nothing
  std::optional<Op> op;              // --op: run an operation on the published database
  std::optional<Query> query;        // --op q1|q2|q3: run a query through the published indexes
  int repeat = 1;                    // --repeat: times to run --op
  bool use_transactions = true;      // --no-transaction: T2 without transactions (shows lost updates)
  std::optional<int> t2b_runs;       // --t2b-runs R: expect the database R T2b runs after loading
};

LoadOptions parse_load_options(const std::vector<std::string>& args);
extern const char* const kLoadUsage;

}  // namespace oo7
