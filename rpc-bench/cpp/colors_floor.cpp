// The C++ <-> C++ colors row of rpc-bench: the same workload as the Python -> Java harness (an int
// list and depth-4 trees of 1..1024 elements, the server building a new list by the rules of
// java/src/main/java/bench/Derive.java), called through colors::rpc by a C++ client of a C++
// server in another process. It shows what the transport costs without Python or JNI on either
// side.
//
//   colors_floor <colors-server binary>    starts its own server (temporary socket), prints a table
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

std::string reversed(std::string_view s) { return std::string(s.rbegin(), s.rend()); }

Object derive(const NodeFields& nf, const Object& p) {
  Object q = new_object(nf.cls);
  q.set(nf.i, Value(p.get(nf.i).as_int() + 1));
  q.set(nf.f, Value(p.get(nf.f).as_float() * 0.5 + 1.0));
  q.set(nf.b, Value(!p.get(nf.b).as_bool()));
  q.set(nf.s, Value(reversed(p.get(nf.s).string_view())));
  Value l = p.get(nf.left), r = p.get(nf.right);
  if (!l.is_null()) q.set(nf.left, derive(nf, Object(l)));
  if (!r.is_null()) q.set(nf.right, derive(nf, Object(r)));
  return q;
}

int counter = 0;
Object build(const NodeFields& nf, int level, int depth) {
  int c = counter++;
  Object o = new_object(nf.cls);
  o.set(nf.i, Value(c * 31 - 5));
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
      if (m == "ints") {
        for (std::size_t k = 0; k < n; ++k) out.append(Value(in.get(k).as_int() + 1));
      } else if (m == "trees") {
        for (std::size_t k = 0; k < n; ++k) out.append(derive(nf, Object(in.get(k))));
      } else {
        return rpc::Outcome::failure("colors.rpc.NoSuchMethod", m);
      }
      return rpc::Outcome::success(out);
    });
  }
}

double median_us(rpc::Client& c, const std::string& m, const List& args, int calls) {
  std::vector<double> t;
  for (int w = 0; w < std::max(3, calls / 10); ++w) c.call(m, args);
  for (int k = 0; k < calls; ++k) {
    auto t0 = clock_type::now();
    Value r = c.call(m, args);
    t.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: colors_floor <colors-server binary>\n");
    return 2;
  }
  char dir[] = "/tmp/colors-floor-XXXXXX";
  if (::mkdtemp(dir) == nullptr) return 1;
  std::string sock = std::string(dir) + "/colors.sock";
  std::string name = "floor-" + std::to_string(::getpid());
  int out[2];
  if (::pipe(out) != 0) return 1;
  pid_t heap = ::fork();
  if (heap == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::execl(argv[1], argv[1], "--name", name.c_str(), "--socket", sock.c_str(), "--heap-size", "512M", "--log-level",
            "warn", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  char buf[256];
  ssize_t got = ::read(out[0], buf, sizeof buf);  // "colors-server ready: ..."
  if (got <= 0) return 1;
  std::fflush(stdout);
  pid_t srv = ::fork();
  if (srv == 0) {
    attach(sock);
    ::_exit(serve());
  }
  attach(sock);
  rpc::Client* client = nullptr;
  for (int tries = 0; tries < 500 && client == nullptr; ++tries) {
    try {
      client = new rpc::Client("floor");
    } catch (const UnavailableError&) {
      ::usleep(10000);
    }
  }
  if (client == nullptr) return 1;
  NodeFields nf = node_fields();
  std::printf("colors C++ client -> C++ server (median us per call)\n%-6s %8s %12s %14s\n", "kind", "n", "us/call",
              "elements/ms");
  for (const char* kind : {"int", "tree4"}) {
    for (int n : {1, 16, 128, 1024}) {
      List in = new_list(static_cast<std::size_t>(n));
      counter = 0;
      for (int k = 0; k < n; ++k) {
        if (kind[0] == 'i') in.append(Value(static_cast<long long>(k) * 1000003 - 7));
        else in.append(build(nf, 1, 4));
      }
      List args = new_list(1);
      args.append(in);
      double us = median_us(*client, kind[0] == 'i' ? "ints" : "trees", args, n <= 16 ? 2000 : (n <= 128 ? 300 : 60));
      std::printf("%-6s %8d %12.2f %14.0f\n", kind, n, us, n / us * 1000.0);
    }
  }
  delete client;
  detach();
  ::kill(srv, SIGTERM);
  ::waitpid(srv, nullptr, 0);
  ::kill(heap, SIGTERM);
  ::waitpid(heap, nullptr, 0);
  ::unlink(sock.c_str());
  ::rmdir(dir);
  return 0;
}
