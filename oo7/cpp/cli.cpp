#include "cli.hpp"

#include <colors/errors.hpp>
#include <cerrno>
#include <cstdlib>

#include "params.hpp"

namespace oo7 {

const char* const kLoadUsage =
    "usage: oo7-load [--size small|medium] [--seed N]\n"
    "         builds OO7 in the heap of the server COLORS_SOCKET names, publishes it in the\n"
    "         repository oo7.<size>, reads it back and prints visits, fingerprint, visit-order\n"
    "       oo7-load --check [--size S] [--seed N] [--t2b-runs R]\n"
    "         reads the published database (built by any language) and checks the same lines\n"
    "         against the database the generator gives for the seed (after R runs of T2b),\n"
    "         and the indexes oo7.<size>.parts_by_id / parts_by_date against the database\n"
    "       oo7-load --check --op t1|t6|t2a|t2b|t2c|q7|q1|q2|q3 [--repeat N] [--no-transaction] [--size S]\n"
    "         runs an operation N times on the published database and prints its result\n";

namespace {

std::int64_t number(const std::string& flag, const std::string& v, std::int64_t min) {
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || n < min)
    throw colors::InvalidArgumentError(flag + " needs an integer >= " + std::to_string(min) + ", got '" + v + "'");
  return n;
}

std::uint64_t seed_number(const std::string& v) {
  char* end = nullptr;
  errno = 0;
  unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || v[0] == '-' || *end != '\0' || errno != 0)
    throw colors::InvalidArgumentError("--seed needs an unsigned 64-bit integer, got '" + v + "'");
  return n;
}

}  // namespace

LoadOptions parse_load_options(const std::vector<std::string>& args) {
  LoadOptions o;
  bool repeat_given = false, no_monitor = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw colors::InvalidArgumentError(a + " needs a value");
      return args[++i];
    };
    if (a == "--size") {
      o.size = value();
      params_for(o.size);  // rejects an unknown size here
    } else if (a == "--seed") {
      o.seed = seed_number(value());
    } else if (a == "--check") {
      o.check_only = true;
    } else if (a == "--op") {
      const std::string& name = value();
      if (auto q = query_from_name(name)) o.query = q;
      else o.op = op_from_name(name);
    } else if (a == "--repeat") {
      o.repeat = static_cast<int>(number(a, value(), 1));
      repeat_given = true;
    } else if (a == "--no-transaction") {
      o.use_transactions = false;
      no_monitor = true;
    } else if (a == "--t2b-runs") {
      o.t2b_runs = static_cast<int>(number(a, value(), 0));
    } else {
      throw colors::InvalidArgumentError("unknown option '" + a + "'");
    }
  }
  const bool any_op = o.op || o.query;
  if ((any_op || repeat_given || no_monitor || o.t2b_runs) && !o.check_only)
    throw colors::InvalidArgumentError("--op, --repeat, --no-transaction and --t2b-runs go with --check");
  if ((repeat_given || no_monitor) && !any_op) throw colors::InvalidArgumentError("--repeat and --no-transaction go with --op");
  if (any_op && o.t2b_runs) throw colors::InvalidArgumentError("--t2b-runs checks the database: run it apart from --op");
  return o;
}

}  // namespace oo7
