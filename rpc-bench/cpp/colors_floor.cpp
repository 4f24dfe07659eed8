// The C++ <-> C++ colors row of rpc-bench: the same workload as the Python -> Java harness (lists of
// 1..1024 elements of every kind, the server building a new list by the rules of
// java/src/main/java/bench/Derive.java and python/workload.py), called through colors::rpc by a C++
// client of a C++ server in another process. It shows what the transport and the heap cost
// without Python or JNI on either side.
//
//   colors_floor <colors-server binary> [options]
//     --kinds int,tree4          kinds (bool int float string tree1..tree4; default int,tree4)
//     --sizes 1,16,128,1024      list sizes (default 1,16,128,1024)
//     --passes P                 passes over the matrix (default 1)
//     --warmup-s S --measure-s S --min-calls N --max-calls N
//                                per-cell budget, as python/measure.py's time_calls (defaults
//                                0.05 s, 0.2 s, 5, 100000): warm up for S s (>= 2 calls), then
//                                time every call until min-calls and measure-s (<= max-calls)
//     --json                     one JSON object per line (the harness's format, below)
//                                instead of the table
//
// It starts its own colors-server (temporary socket) and a forked server process. Each cell is
// timed in two variants: "paper" (the call until the client holds the reply) and "read" (the call
// plus reading every element and field of the reply). JSON lines:
//   {"check": 1, "kind": K, "n": N, "len": L, "checksum": C}   before and after each cell
//   {"kind": K, "n": N, "variant": V, "pass": P, "per_call_s": ..., "mean_s": ..., "p10_s": ...,
//    "p90_s": ..., "calls": ...}
//   {"done": 1}
// The checksum is python/workload.py's (scalars summed, bool as 0/1, a string adds its length
// and its first character's code; a node adds i + f + b + len(s) and its children's).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "colors/colors.hpp"
#include "colors/rpc.hpp"

using namespace colors;
using clock_type = std::chrono::steady_clock;

namespace {

struct NodeFields {
  Class cls;
  Field i, f, b, s, left, right;
};

NodeFields node_fields() {
  NodeFields n;
  n.cls = define_class("bench.Node", {{"i", TypeKind::kInteger, ""},
                                      {"f", TypeKind::kFloat, ""},
                                      {"b", TypeKind::kBoolean, ""},
                                      {"s", TypeKind::kString, ""},
                                      {"left", TypeKind::kObject, "bench.Node"},
                                      {"right", TypeKind::kObject, "bench.Node"}});
  n.i = Field(n.cls, "i");
  n.f = Field(n.cls, "f");
  n.b = Field(n.cls, "b");
  n.s = Field(n.cls, "s");
  n.left = Field(n.cls, "left");
  n.right = Field(n.cls, "right");
  return n;
}

int tree_depth(const std::string& kind) { return kind.rfind("tree", 0) == 0 ? std::atoi(kind.c_str() + 4) : 0; }

const char* method_of(const std::string& kind) {
  if (kind == "bool") return "bools";
  if (kind == "int") return "ints";
  if (kind == "float") return "floats";
  if (kind == "string") return "strings";
  return "trees";
}

std::string reversed(std::string_view s) { return std::string(s.rbegin(), s.rend()); }

// ---- the server: Derive.java's rules ---------------------------------------------------------

// Derive.java's rule for a node, in a read scope: the input read through views and the reply's nodes allocated with their
// fields written at birth, no GC root per node (libshared/README.md, "Read scopes").
ObjectView derive_view(const NodeFields& nf, const ObjectView& p) {
  const ValueView l = p.get(nf.left), r = p.get(nf.right);
  return new_object_view(nf.cls, {{nf.i, ValueView::integer(p.get(nf.i).as_int() + 1)},
                                  {nf.f, ValueView::floating(p.get(nf.f).as_float() * 0.5 + 1.0)},
                                  {nf.b, ValueView::boolean(!p.get(nf.b).as_bool())},
                                  {nf.s, new_string_view(reversed(p.get(nf.s).string_view()))},
                                  {nf.left, l.is_null() ? ValueView() : derive_view(nf, l.as_object())},
                                  {nf.right, r.is_null() ? ValueView() : derive_view(nf, r.as_object())}});
}

// One scope per tree, so that a collector cycle waits for one tree's build at most; the tree's
// root is promoted to leave it. A full heap inside a scope throws OutOfMemoryError (a scope cannot
// wait for the collector): the tree is built again after a collection.
Value derive_scoped(const NodeFields& nf, const Object& p) {
  for (int attempt = 0;; ++attempt) {
    try {
      ReadScope scope;
      return derive_view(nf, ObjectView(p)).promote();
    } catch (const OutOfMemoryError&) {
      if (attempt == 2) throw;
      collect();
    }
  }
}

int serve() {
  NodeFields nf = node_fields();
  rpc::Server srv("floor");
  for (;;) {
    auto call = srv.next(1000);
    if (!call) {
      if (::getppid() == 1) return 0;  // the client is gone
      continue;
    }
    call->run([&](const std::string& m, const List& args) {
      List in(args.get(0));
      std::size_t n = in.size();
      List out = new_list(n);
      if (m == "bools") {
        for (std::size_t k = 0; k < n; ++k) out.append(Value(!in.get(k).as_bool()));
      } else if (m == "ints") {
        for (std::size_t k = 0; k < n; ++k) out.append(Value(static_cast<long long>(in.get(k).as_int() + 1)));
      } else if (m == "floats") {
        for (std::size_t k = 0; k < n; ++k) out.append(Value(in.get(k).as_float() * 0.5 + 1.0));
      } else if (m == "strings") {
        for (std::size_t k = 0; k < n; ++k) out.append(Value(reversed(in.get(k).string_view())));
      } else if (m == "trees") {
        for (std::size_t k = 0; k < n; ++k) out.append(derive_scoped(nf, Object(in.get(k))));
      } else {
        return rpc::Outcome::failure("colors.rpc.NoSuchMethod", m);
      }
      return rpc::Outcome::success(out);
    });
  }
}

// ---- the client: inputs (python/workload.py's values), reads, timing ------------------------

int counter = 0;
Object build(const NodeFields& nf, int level, int depth) {
  int c = counter++;
  Object o = new_object(nf.cls);
  o.set(nf.i, Value(static_cast<long long>(c) * 31 - 5));
  o.set(nf.f, Value(c * 0.25 + 0.125));
  o.set(nf.b, Value(c % 2 == 0));
  char s[32];
  std::snprintf(s, sizeof s, "node-%06d", c);
  o.set(nf.s, Value(s));
  if (level < depth) {
    o.set(nf.left, build(nf, level + 1, depth));
    o.set(nf.right, build(nf, level + 1, depth));
  }
  return o;
}

List build_input(const NodeFields& nf, const std::string& kind, int n) {
  List in = new_list(static_cast<std::size_t>(n));
  int depth = tree_depth(kind);
  counter = 0;  // nodes are numbered in preorder over the whole list
  for (int k = 0; k < n; ++k) {
    if (depth) {
      in.append(build(nf, 1, depth));
    } else if (kind == "bool") {
      in.append(Value(k % 3 == 0));
    } else if (kind == "int") {
      in.append(Value(static_cast<long long>(k) * 1000003 - 7));
    } else if (kind == "float") {
      in.append(Value(k * 0.37 + 0.5));
    } else {
      char s[32];
      std::snprintf(s, sizeof s, "str%06d-xyz", k);
      in.append(Value(s));
    }
  }
  return in;
}

// Reads a node and its subtree through views: the reply is read inside one read scope, so no
// reference read takes a GC root (libshared's read scopes).
double walk(const NodeFields& nf, const ObjectView& p) {
  double acc = static_cast<double>(p.get(nf.i).as_int()) + p.get(nf.f).as_float() + (p.get(nf.b).as_bool() ? 1 : 0) +
               static_cast<double>(p.get(nf.s).string_view().size());
  ValueView l = p.get(nf.left);
  if (!l.is_null()) acc += walk(nf, l.as_object());
  ValueView r = p.get(nf.right);
  if (!r.is_null()) acc += walk(nf, r.as_object());
  return acc;
}

// Reads every element and field of a reply (the read variant and the checks), in one read scope.
double read_all(const NodeFields& nf, const std::string& kind, const Value& reply) {
  ReadScope scope;
  ListView xs(List{reply});
  std::size_t n = xs.size();
  if (tree_depth(kind)) {
    double acc = 0;
    for (std::size_t k = 0; k < n; ++k) acc += walk(nf, xs.get(k).as_object());
    return acc;
  }
  if (kind == "float") {
    double acc = 0;
    for (std::size_t k = 0; k < n; ++k) acc += xs.get(k).as_float();
    return acc;
  }
  long long acc = 0;
  for (std::size_t k = 0; k < n; ++k) {
    ValueView v = xs.get(k);
    if (kind == "bool") acc += v.as_bool() ? 1 : 0;
    else if (kind == "int") acc += v.as_int();
    else {
      std::string_view s = v.string_view();
      acc += static_cast<long long>(s.size()) + static_cast<unsigned char>(s[0]);
    }
  }
  return static_cast<double>(acc);
}

struct Budget {
  double warmup_s = 0.05, measure_s = 0.2;
  long min_calls = 5, max_calls = 100000, min_warmup_calls = 2;
};

struct Cell {
  double median, mean, p10, p90;
  long calls;
};

double now_s() { return std::chrono::duration<double>(clock_type::now().time_since_epoch()).count(); }

// python/measure.py's time_calls: warm-up, then every call timed on its own; median and spread.
template <class F>
Cell time_calls(F&& fn, const Budget& b) {
  double t0 = now_s();
  for (long calls = 0; calls < b.min_warmup_calls || now_s() - t0 < b.warmup_s; ++calls) fn();
  std::vector<double> t;
  double end = now_s() + b.measure_s;
  while (static_cast<long>(t.size()) < b.min_calls || (now_s() < end && static_cast<long>(t.size()) < b.max_calls)) {
    auto s = clock_type::now();
    fn();
    t.push_back(std::chrono::duration<double>(clock_type::now() - s).count());
  }
  std::sort(t.begin(), t.end());
  std::size_t m = t.size();
  Cell c;
  c.median = m % 2 ? t[m / 2] : (t[m / 2 - 1] + t[m / 2]) / 2;
  c.mean = std::accumulate(t.begin(), t.end(), 0.0) / static_cast<double>(m);
  auto q = [&](double p) { return t[std::min(m - 1, static_cast<std::size_t>(p * static_cast<double>(m)))]; };
  c.p10 = q(0.10);
  c.p90 = q(0.90);
  c.calls = static_cast<long>(m);
  return c;
}

std::vector<std::string> split(const char* s) {
  std::vector<std::string> out;
  std::string cur;
  for (const char* p = s;; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
      if (*p == '\0') break;
    } else {
      cur += *p;
    }
  }
  return out;
}

int usage() {
  std::fprintf(stderr,
               "usage: colors_floor <colors-server binary> [--kinds K,..] [--sizes N,..] [--passes P] "
               "[--warmup-s S] [--measure-s S] [--min-calls N] [--max-calls N] [--json]\n");
  return 2;
}

// Whole-string number parsing for the options: false (and a message) on anything else.
bool parse_long(const char* opt, const char* v, long lo, long hi, long* out) {
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < lo || x > hi) {
    std::fprintf(stderr, "colors_floor: %s wants an integer in %ld..%ld, not '%s'\n", opt, lo, hi, v);
    return false;
  }
  *out = x;
  return true;
}

bool parse_seconds(const char* opt, const char* v, double* out) {
  char* end = nullptr;
  errno = 0;
  double x = std::strtod(v, &end);
  if (errno != 0 || end == v || *end != '\0' || !(x >= 0.0 && x <= 3600.0)) {
    std::fprintf(stderr, "colors_floor: %s wants seconds in 0..3600, not '%s'\n", opt, v);
    return false;
  }
  *out = x;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return usage();
  std::vector<std::string> kinds = {"int", "tree4"};
  std::vector<int> sizes = {1, 16, 128, 1024};
  int passes = 1;
  bool json = false;
  Budget budget;
  for (int a = 2; a < argc; ++a) {
    std::string opt = argv[a];
    if (opt == "--json") {
      json = true;
      continue;
    }
    if (a + 1 >= argc) return usage();
    const char* v = argv[++a];
    long x = 0;
    bool ok = true;
    if (opt == "--kinds") {
      kinds = split(v);
    } else if (opt == "--sizes") {
      sizes.clear();
      for (auto& s : split(v)) {
        ok = ok && parse_long(opt.c_str(), s.c_str(), 1, 1 << 20, &x);
        sizes.push_back(static_cast<int>(x));
      }
      if (sizes.empty()) ok = parse_long(opt.c_str(), v, 1, 1 << 20, &x);
    } else if (opt == "--passes") {
      ok = parse_long(opt.c_str(), v, 1, 100, &x);
      passes = static_cast<int>(x);
    } else if (opt == "--warmup-s") {
      ok = parse_seconds(opt.c_str(), v, &budget.warmup_s);
    } else if (opt == "--measure-s") {
      ok = parse_seconds(opt.c_str(), v, &budget.measure_s);
    } else if (opt == "--min-calls") {
      ok = parse_long(opt.c_str(), v, 1, 1L << 40, &x);
      budget.min_calls = x;
    } else if (opt == "--max-calls") {
      ok = parse_long(opt.c_str(), v, 1, 1L << 40, &x);
      budget.max_calls = x;
    } else {
      return usage();
    }
    if (!ok) return 2;
  }
  for (auto& k : kinds) {
    int d = tree_depth(k);
    if (!(k == "bool" || k == "int" || k == "float" || k == "string" || (d >= 1 && d <= 4))) {
      std::fprintf(stderr, "colors_floor: unknown kind %s\n", k.c_str());
      return 2;
    }
  }

  char dir[] = "/tmp/colors-floor-XXXXXX";
  if (::mkdtemp(dir) == nullptr) return 1;
  std::string sock = std::string(dir) + "/colors.sock";
  std::string name = "floor-" + std::to_string(::getpid());
  int out[2];
  if (::pipe(out) != 0) return 1;
  std::fflush(stdout);
  pid_t heap = ::fork();
  if (heap == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::execl(argv[1], argv[1], "--name", name.c_str(), "--socket", sock.c_str(), "--heap-size", "1G", "--log-level",
            "warn", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  char buf[256];
  ssize_t got = ::read(out[0], buf, sizeof buf);  // "colors-server ready: ..."
  if (got <= 0 || std::strncmp(buf, "colors-server ready:", 20) != 0) {
    std::fprintf(stderr, "colors_floor: %s did not start\n", argv[1]);
    ::waitpid(heap, nullptr, 0);
    ::rmdir(dir);
    return 1;
  }
  pid_t srv = ::fork();
  if (srv == 0) {
    attach(sock);
    ::_exit(serve());
  }
  int rc = 0;
  try {
    attach(sock);
    rpc::Client* client = nullptr;
    for (int tries = 0; tries < 500 && client == nullptr; ++tries) {
      try {
        client = new rpc::Client("floor");
      } catch (const UnavailableError&) {
        ::usleep(10000);
      }
    }
    if (client == nullptr) throw std::runtime_error("the C++ server did not start");
    NodeFields nf = node_fields();
    if (!json) {
      std::printf("colors C++ client -> C++ server (median us per call)\n%-6s %8s %12s %12s %14s\n", "kind", "n",
                  "paper us", "read us", "elements/ms");
    }
    auto check = [&](const std::string& kind, int n, const List& args) {
      Value r = client->call(method_of(kind), args);
      if (json) {
        std::printf("{\"check\": 1, \"kind\": \"%s\", \"n\": %d, \"len\": %zu, \"checksum\": %.17g}\n", kind.c_str(), n,
                    List(r).size(), read_all(nf, kind, r));
      }
    };
    std::vector<List> inputs;
    for (int p = 1; p <= passes; ++p) {
      std::size_t cell = 0;
      for (const auto& kind : kinds) {
        for (int n : sizes) {
          if (inputs.size() <= cell) {
            List args = new_list(1);
            args.append(build_input(nf, kind, n));  // built once, reused by every call and pass
            inputs.push_back(args);
          }
          const List& args = inputs[cell++];
          const char* m = method_of(kind);
          check(kind, n, args);
          Cell paper = time_calls([&] { client->call(m, args); }, budget);
          Cell read = time_calls([&] { read_all(nf, kind, client->call(m, args)); }, budget);
          check(kind, n, args);
          if (json) {
            for (auto [variant, c] : {std::pair<const char*, Cell>{"paper", paper}, {"read", read}}) {
              std::printf("{\"kind\": \"%s\", \"n\": %d, \"variant\": \"%s\", \"pass\": %d, \"per_call_s\": %.9g, "
                          "\"mean_s\": %.9g, \"p10_s\": %.9g, \"p90_s\": %.9g, \"calls\": %ld}\n",
                          kind.c_str(), n, variant, p, c.median, c.mean, c.p10, c.p90, c.calls);
            }
          } else {
            std::printf("%-6s %8d %12.2f %12.2f %14.0f\n", kind.c_str(), n, paper.median * 1e6, read.median * 1e6,
                        n / paper.median / 1000.0);
          }
          std::fflush(stdout);
        }
      }
    }
    if (json) std::printf("{\"done\": 1}\n");
    inputs.clear();
    delete client;
    detach();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "colors_floor: %s\n", e.what());
    rc = 1;
  }
  ::kill(srv, SIGTERM);
  ::waitpid(srv, nullptr, 0);
  ::kill(heap, SIGTERM);
  ::waitpid(heap, nullptr, 0);
  ::unlink(sock.c_str());
  ::rmdir(dir);
  return rc;
}
