// bank-worker: the C++ side of the bank test (tests/bank/README.md; the contract every language's
// worker follows is in the README too).
//
//   bank-worker --socket S --setup N [--balance B] [--counters C]
//                                                     N accounts of B (default 1000) in bank.accounts,
//                                                     C counters (0 each) in bank.counters
//   bank-worker --socket S --seed K [--seconds T] [--counter I]
//                                                     transfers until killed (or for T seconds); with
//                                                     --counter, each also adds 1 to bank.counters[I]
//   bank-worker --socket S --audit [--seconds T] [--collect-ms M]
//                                                     audits the total in transactions until SIGTERM
//   bank-worker --socket S --check                    total once, two collections, heap verifier
//
// Every mode prints `key value` lines on stdout (flushed), which tests/bank/run parses:
//   transfers <count>                     worker, every ~0.5 s and at exit
//   start <value>                         worker with --counter: its counter when it began
//   committed <value>                     worker with --counter: after every commit, the value
//                                         that commit gave the counter
//   audits <count> violations <count>     auditor, every ~0.5 s and at exit
//   total <sum> expected <sum>            setup, check
//   counter_<i> <value>                   check, when bank.counters exists (one line each)
//   heap_used <bytes>                     check (after two collections: capacity - free)
//   bytes_marked <bytes> objects_marked <count>   check (live, found by the second collection)
//   gc_heap_used_after <bytes> gc_cycles <count>   check
//   verifier ok | verifier FAILED <report>
// Exit status: 0 when everything held, 1 on a violation (audit, check), 2 on bad arguments,
// 3 on an unexpected error.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "colors/colors.hpp"

using namespace colors;

namespace {

constexpr const char* kAccounts = "bank.accounts";
constexpr const char* kTotal = "bank.total";  // the initial total, written by --setup
// One bank.Account per worker slot (--setup --counters), each counting its slot's transfers: a
// transfer adds 1 to it in the same transaction, so a commit the heap lost shows as a counter
// below what its worker reported (tests/bank/run --server-kills, --durability full).
constexpr const char* kCounters = "bank.counters";

struct Options {
  std::string socket;
  std::string mode;
  long long n = 0;           // --setup
  long long balance = 1000;  // --setup
  long long counters = 0;    // --setup
  long long counter = -1;    // transfer: the index in bank.counters, or -1: none
  unsigned long seed = 1;
  double seconds = 0;        // 0: until killed
  long collect_ms = 0;       // --audit: ask for a collection this often (0: never)
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "bank-worker: %s\n"
               "usage: bank-worker --socket PATH (--setup N [--balance B] [--counters C] |\n"
               "                   --seed K [--seconds T] [--counter I] |\n"
               "                   --audit [--seconds T] [--collect-ms M] | --check)\n",
               why.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) usage(std::string(argv[i]) + " needs a value");
    return argv[++i];
  };
  auto number = [&](int& i) -> long long {
    const char* flag = argv[i];
    std::string v = value(i);
    char* end = nullptr;
    long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || x < 0) usage(std::string(flag) + " '" + v + "': expected a non-negative integer");
    return x;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--socket") {
      o.socket = value(i);
    } else if (a == "--setup") {
      o.mode = "setup";
      o.n = number(i);
    } else if (a == "--balance") {
      o.balance = number(i);
    } else if (a == "--counters") {
      o.counters = number(i);
    } else if (a == "--counter") {
      o.counter = number(i);
    } else if (a == "--seed") {
      if (o.mode.empty()) o.mode = "transfer";
      o.seed = static_cast<unsigned long>(number(i));
    } else if (a == "--seconds") {
      std::string v = value(i);
      char* end = nullptr;
      o.seconds = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || o.seconds < 0) usage("--seconds '" + v + "': expected a non-negative number");
    } else if (a == "--audit") {
      o.mode = "audit";
    } else if (a == "--collect-ms") {
      o.collect_ms = static_cast<long>(number(i));
    } else if (a == "--check") {
      o.mode = "check";
    } else {
      usage("unknown argument '" + a + "'");
    }
  }
  if (o.mode.empty()) usage("no mode given");
  if (o.mode == "setup" && o.n < 2) usage("--setup needs at least 2 accounts");
  return o;
}

// SIGTERM / SIGINT end the auditor and a timed worker cleanly (final counts printed).
std::atomic<bool> g_stop{false};
extern "C" void on_stop(int) { g_stop.store(true, std::memory_order_relaxed); }

using Clock = std::chrono::steady_clock;

bool out_of_time(const Options& o, Clock::time_point t0) {
  if (g_stop.load(std::memory_order_relaxed)) return true;
  return o.seconds > 0 && std::chrono::duration<double>(Clock::now() - t0).count() >= o.seconds;
}

Class account_class() { return define_class("bank.Account", {{"balance", TypeKind::kInteger}}); }

List accounts() {
  Value v = repository(kAccounts).get();
  if (v.is_null()) throw KeyError("repository bank.accounts is empty: run bank-worker --setup N first");
  return List(v);
}

// The sum of all balances, read in one transaction (retried on conflict: a writer may hold an
// account, or a dead writer's account until the server rolled it back).
long long audit_total(const List& accts, const Field& balance) {
  return atomically(
      [&] {
        long long sum = 0;
        const std::size_t n = accts.size();
        for (std::size_t i = 0; i < n; ++i) sum += Object(accts.get(i)).get(balance).as_int();
        return sum;
      },
      1000);
}

int setup(const Options& o) {
  Class cls = account_class();
  Field balance(cls, "balance");
  List l = new_list(static_cast<std::size_t>(o.n));
  for (long long i = 0; i < o.n; ++i) {
    Object a = new_object(cls);
    a.set(balance, Value(o.balance));
    l.append(a);
  }
  if (o.counters > 0) {
    List c = new_list(static_cast<std::size_t>(o.counters));
    for (long long i = 0; i < o.counters; ++i) {
      Object a = new_object(cls);
      a.set(balance, Value(0LL));
      c.append(a);
    }
    repository(kCounters).set(c);
  }
  repository(kAccounts).set(l);
  repository(kTotal).set(Value(o.n * o.balance));
  std::printf("total %lld expected %lld\n", audit_total(l, balance), o.n * o.balance);
  return 0;
}

int transfer(const Options& o) {
  Field balance(account_class(), "balance");
  List accts = accounts();
  const auto n = static_cast<std::uint64_t>(accts.size());
  std::mt19937_64 rng(o.seed);
  // The slot's counter (--counter), or none: then a transfer touches the two accounts only.
  Value counter_value;
  if (o.counter >= 0) {
    Value v = repository(kCounters).get();
    if (v.is_null()) throw KeyError("repository bank.counters is empty: run bank-worker --setup N --counters C first");
    List cs(v);
    if (static_cast<std::size_t>(o.counter) >= cs.size()) usage("--counter " + std::to_string(o.counter) + ": bank.counters has " + std::to_string(cs.size()));
    counter_value = cs.get(static_cast<std::size_t>(o.counter));
    const long long start = atomically([&] { return Object(counter_value).get(balance).as_int(); }, 1000);
    std::printf("start %lld\n", start);
    std::fflush(stdout);
  }
  const bool counting = !counter_value.is_null();
  long long count = 0;
  const auto t0 = Clock::now();
  auto last = t0;
  while (!out_of_time(o, t0)) {
    const std::uint64_t i = rng() % n;
    std::uint64_t j = rng() % (n - 1);
    if (j >= i) ++j;  // j != i
    const long long amount = static_cast<long long>(rng() % 100);
    long long counted = 0;
    atomically(
        [&] {
          Object a(accts.get(i)), b(accts.get(j));
          a.set(balance, Value(a.get(balance).as_int() - amount));
          b.set(balance, Value(b.get(balance).as_int() + amount));
          if (counting) {
            Object c(counter_value);
            counted = c.get(balance).as_int() + 1;
            c.set(balance, Value(counted));
          }
        },
        1000);
    ++count;
    if (counting) {  // after every commit: a kill leaves at most one commit unreported
      std::printf("committed %lld\n", counted);
      std::fflush(stdout);
    }
    if (Clock::now() - last >= std::chrono::milliseconds(500)) {
      last = Clock::now();
      std::printf("transfers %lld\n", count);
      std::fflush(stdout);
    }
  }
  std::printf("transfers %lld\n", count);
  return 0;
}

int audit(const Options& o) {
  Field balance(account_class(), "balance");
  List accts = accounts();
  const long long expected = repository(kTotal).get().as_int();
  long long audits = 0, violations = 0;
  const auto t0 = Clock::now();
  auto last_print = t0, last_collect = t0;
  while (!out_of_time(o, t0)) {
    const long long total = audit_total(accts, balance);
    ++audits;
    if (total != expected) {
      ++violations;
      if (violations <= 10)  // the first ones; the count says the rest
        std::fprintf(stderr, "bank-worker --audit: VIOLATION: audit %lld saw total %lld, expected %lld\n", audits, total, expected);
    }
    const auto now = Clock::now();
    if (o.collect_ms > 0 && now - last_collect >= std::chrono::milliseconds(o.collect_ms)) {
      last_collect = now;
      collect(30000);  // with a --gc-debug server the verifier runs after this cycle
    }
    if (now - last_print >= std::chrono::milliseconds(500)) {
      last_print = now;
      std::printf("audits %lld violations %lld\n", audits, violations);
      std::fflush(stdout);
    }
  }
  std::printf("audits %lld violations %lld\n", audits, violations);
  return violations == 0 ? 0 : 1;
}

int check(const Options&) {
  Field balance(account_class(), "balance");
  List accts = accounts();
  const long long expected = repository(kTotal).get().as_int();
  const long long total = audit_total(accts, balance);
  std::printf("total %lld expected %lld\n", total, expected);
  Value counters = repository(kCounters).get();
  if (!counters.is_null()) {
    List cs(counters);
    const std::vector<long long> values = atomically(
        [&] {
          std::vector<long long> v;
          for (std::size_t i = 0; i < cs.size(); ++i) v.push_back(Object(cs.get(i)).get(balance).as_int());
          return v;
        },
        1000);
    for (std::size_t i = 0; i < values.size(); ++i) std::printf("counter_%zu %lld\n", i, values[i]);
  }
  // Twice: garbage dropped before the first call is freed by the second at the latest.
  collect(60000);
  GcStats st = collect(60000);
  HeapStats hs = heap_stats();
  std::printf("heap_used %zu\n", hs.capacity - hs.free_bytes);
  // Live bytes: what the last cycle found reachable (no mutator runs now: exact).
  std::printf("bytes_marked %llu objects_marked %llu\n", static_cast<unsigned long long>(st.bytes_marked),
              static_cast<unsigned long long>(st.objects_marked));
  std::printf("gc_heap_used_after %llu gc_cycles %llu\n", static_cast<unsigned long long>(st.heap_used_after),
              static_cast<unsigned long long>(st.cycle));
  VerifyResult v = verify_heap();
  if (v.ok) {
    std::printf("verifier ok\n");
  } else {
    std::printf("verifier FAILED %s\n", v.report.c_str());
  }
  return total == expected && v.ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  try {
    attach(o.socket);
    int rc = 0;
    if (o.mode == "setup") rc = setup(o);
    if (o.mode == "transfer") rc = transfer(o);
    if (o.mode == "audit") rc = audit(o);
    if (o.mode == "check") rc = check(o);
    std::fflush(stdout);
    detach();
    return rc;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "bank-worker --%s: error: %s\n", o.mode.c_str(), e.what());
    return 3;
  }
}
