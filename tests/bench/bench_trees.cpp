// rpc-bench's depth-4 trees (1024 trees of 15 nodes: an int, a float, a bool, an 11-character
// string and two children each) from C++, read and built: through views in a read scope (a get
// and a conversion per field, or the typed getters; no GC root per reference read or per
// allocation; a built tree's fields written at its birth) and
// through the rooted API (colors::Object: a root per reference and per allocation, a barriered
// store per field), each against the same trees in private structs; interleaved rounds in one
// run, medians of ns per node.
#include <algorithm>
#include <ctime>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "colors/colors.hpp"
#include "collector.hpp"
#include "collector_barrier.hpp"
#include "test_segment.hpp"

using namespace colors;

namespace {

struct Fields {
  Field i, f, b, s, left, right;
};

struct PNode {
  long long i;
  double f;
  bool b;
  std::string s;
  std::unique_ptr<PNode> left, right;
};

Object shared_tree(const Class& cls, const Fields& nf, int depth, int& k) {
  Object n = new_object(cls);
  n.set(nf.i, Value(k));
  n.set(nf.f, Value(k * 0.5));
  n.set(nf.b, Value(k % 2 == 0));
  n.set(nf.s, Value("str" + std::to_string(100000 + k) + "-x"));
  ++k;
  if (depth > 1) {
    n.set(nf.left, shared_tree(cls, nf, depth - 1, k));
    n.set(nf.right, shared_tree(cls, nf, depth - 1, k));
  }
  return n;
}

std::unique_ptr<PNode> private_tree(int depth, int& k) {
  auto n = std::make_unique<PNode>();
  n->i = k;
  n->f = k * 0.5;
  n->b = k % 2 == 0;
  n->s = "str" + std::to_string(100000 + k) + "-x";
  ++k;
  if (depth > 1) {
    n->left = private_tree(depth - 1, k);
    n->right = private_tree(depth - 1, k);
  }
  return n;
}

double walk_view(const Fields& nf, const ObjectView& p) {
  double acc = static_cast<double>(p.get(nf.i).as_int()) + p.get(nf.f).as_float() + (p.get(nf.b).as_bool() ? 1 : 0) +
               static_cast<double>(p.get(nf.s).string_view().size());
  ValueView l = p.get(nf.left);
  if (!l.is_null()) acc += walk_view(nf, l.as_object());
  ValueView r = p.get(nf.right);
  if (!r.is_null()) acc += walk_view(nf, r.as_object());
  return acc;
}

// The same read through the typed getters: one call per field instead of a get and a conversion.
double walk_typed(const Fields& nf, const ObjectView& p) {
  double acc = static_cast<double>(p.get_int(nf.i)) + p.get_float(nf.f) + (p.get_bool(nf.b) ? 1 : 0) +
               static_cast<double>(p.get_string(nf.s).size());
  ObjectView l = p.get_object(nf.left);
  if (!l.is_null()) acc += walk_typed(nf, l);
  ObjectView r = p.get_object(nf.right);
  if (!r.is_null()) acc += walk_typed(nf, r);
  return acc;
}

double walk_rooted(const Fields& nf, const Object& p) {
  Value s = p.get(nf.s);
  double acc = static_cast<double>(p.get(nf.i).as_int()) + p.get(nf.f).as_float() + (p.get(nf.b).as_bool() ? 1 : 0) +
               static_cast<double>(s.string_view().size());
  Value l = p.get(nf.left);
  if (!l.is_null()) acc += walk_rooted(nf, Object(std::move(l)));
  Value r = p.get(nf.right);
  if (!r.is_null()) acc += walk_rooted(nf, Object(std::move(r)));
  return acc;
}

double walk_private(const PNode& p) {
  double acc = static_cast<double>(p.i) + p.f + (p.b ? 1 : 0) + static_cast<double>(p.s.size());
  if (p.left) acc += walk_private(*p.left);
  if (p.right) acc += walk_private(*p.right);
  return acc;
}

// The nodes' strings, made before the timed builds (formatting them would dominate every side).
std::vector<std::string> g_names;

// Builds a tree in a scope (the caller's), fields written at birth.
ObjectView build_view(const Class& cls, const Fields& nf, int depth, int& k) {
  ObjectView l, r;
  if (depth > 1) {
    l = build_view(cls, nf, depth - 1, k);
    r = build_view(cls, nf, depth - 1, k);
  }
  const std::string& s = g_names[static_cast<std::size_t>(k)];
  const int i = k++;
  return new_object_view(cls, {{nf.i, ValueView::integer(i)},
                               {nf.f, ValueView::floating(i * 0.5)},
                               {nf.b, ValueView::boolean(i % 2 == 0)},
                               {nf.s, new_string_view(s)},
                               {nf.left, l},
                               {nf.right, r}});
}

Object build_rooted(const Class& cls, const Fields& nf, int depth, int& k) {
  Object l, r;
  if (depth > 1) {
    l = build_rooted(cls, nf, depth - 1, k);
    r = build_rooted(cls, nf, depth - 1, k);
  }
  const std::string& s = g_names[static_cast<std::size_t>(k)];
  const int i = k++;
  Object n = new_object(cls);
  n.set(nf.i, Value(i));
  n.set(nf.f, Value(i * 0.5));
  n.set(nf.b, Value(i % 2 == 0));
  n.set(nf.s, Value(s));
  if (depth > 1) {
    n.set(nf.left, l);
    n.set(nf.right, r);
  }
  return n;
}

std::unique_ptr<PNode> build_private(int depth, int& k) {
  auto n = std::make_unique<PNode>();
  if (depth > 1) {
    n->left = build_private(depth - 1, k);
    n->right = build_private(depth - 1, k);
  }
  const std::string& s = g_names[static_cast<std::size_t>(k)];
  const int i = k++;
  n->i = i;
  n->f = i * 0.5;
  n->b = i % 2 == 0;
  n->s = s;
  return n;
}

// This thread's CPU time: the collector's threads (building makes garbage) count for neither side.
using bench::median;
using bench::thread_ns;

}  // namespace

void bench_trees(std::ostream& out) {
  test::TestSegment seg(256 << 20);
  // Roots as a client of a server with the collector's membarrier takes them (no fence), when
  // this kernel offers it.
  seg.meta()->collector_barrier.store(1, std::memory_order_release);
  const bool unfenced = detail::use_collector_barrier(seg.meta());
  Class cls = define_class("bench.ReadNode", {{"i", TypeKind::kInteger, ""},
                                              {"f", TypeKind::kFloat, ""},
                                              {"b", TypeKind::kBoolean, ""},
                                              {"s", TypeKind::kString, ""},
                                              {"left", TypeKind::kObject, "bench.ReadNode"},
                                              {"right", TypeKind::kObject, "bench.ReadNode"}});
  Fields nf{Field(cls, "i"), Field(cls, "f"), Field(cls, "b"), Field(cls, "s"), Field(cls, "left"), Field(cls, "right")};
  constexpr int kTrees = 1024, kNodes = kTrees * 15;
  List trees = new_list();
  std::vector<std::unique_ptr<PNode>> ptrees;
  for (int t = 0, k = 0, pk = 0; t < kTrees; ++t) {
    trees.append(shared_tree(cls, nf, 4, k));
    ptrees.push_back(private_tree(4, pk));
  }
  const int rounds = std::getenv("COLORS_BENCH_QUICK") ? 5 : 21;
  std::vector<double> view_ns, typed_ns, rooted_ns, private_ns;
  volatile double sink = 0;
  // Every tree walked with `walk` in one read scope: ns per node.
  auto scoped_walk = [&](double (*walk)(const Fields&, const ObjectView&)) {
    const auto t0 = bench::now();
    ReadScope scope;
    ListView xs(trees);
    double acc = 0;
    for (std::size_t k = 0; k < xs.size(); ++k) acc += walk(nf, xs.get(k).as_object());
    sink = sink + acc;
    return bench::ns_since(t0) / kNodes;
  };
  for (int r = 0; r < rounds; ++r) {
    view_ns.push_back(scoped_walk(walk_view));
    typed_ns.push_back(scoped_walk(walk_typed));
    auto t0 = bench::now();
    {
      double acc = 0;
      for (std::size_t k = 0; k < trees.size(); ++k) acc += walk_rooted(nf, Object(trees.get(k)));
      sink = sink + acc;
    }
    rooted_ns.push_back(bench::ns_since(t0) / kNodes);
    t0 = bench::now();
    {
      double acc = 0;
      for (const auto& p : ptrees) acc += walk_private(*p);
      sink = sink + acc;
    }
    private_ns.push_back(bench::ns_since(t0) / kNodes);
  }
  bench::row(out, "read a tree node: views in a read scope (base: private struct)", median(view_ns), median(private_ns),
             "issue 17 target: <= 30 ns");
  bench::row(out, "read a tree node: typed view getters (base: private struct)", median(typed_ns), median(private_ns),
             "issue 17 target: <= 30 ns");
  bench::row(out, "read a tree node: rooted Values (base: views in a read scope)", median(rooted_ns), median(view_ns),
             unfenced ? "roots without a fence" : "fenced roots: this kernel has no membarrier");

  // Building: 1024 trees per round into a list that is dropped after the round; a collector runs
  // (each tree is built in a scope of its own, so a cycle waits for at most one tree). Timed in
  // this thread's CPU time, so the collector's work (on its own threads) is not in these rows.
  for (int k = 0; k < kNodes; ++k) g_names.push_back("str" + std::to_string(100000 + k) + "-x");
  gc::Options go;
  go.threads = 1;
  gc::Collector collector(seg.meta(), go);
  collector.start();
  std::vector<double> build_view_ns, build_rooted_ns, build_private_ns;
  for (int r = 0; r < rounds; ++r) {
    {
      List out = new_list(kTrees);
      const double t0 = thread_ns();
      for (int t = 0, k = 0; t < kTrees; ++t) {
        ReadScope scope;
        out.append(build_view(cls, nf, 4, k).promote());
      }
      build_view_ns.push_back((thread_ns() - t0) / kNodes);
    }
    {
      List out = new_list(kTrees);
      const double t0 = thread_ns();
      for (int t = 0, k = 0; t < kTrees; ++t) out.append(build_rooted(cls, nf, 4, k));
      build_rooted_ns.push_back((thread_ns() - t0) / kNodes);
    }
    {
      std::vector<std::unique_ptr<PNode>> out;
      out.reserve(kTrees);
      const double t0 = thread_ns();
      for (int t = 0, k = 0; t < kTrees; ++t) out.push_back(build_private(4, k));
      build_private_ns.push_back((thread_ns() - t0) / kNodes);
    }
  }
  collector.stop();
  bench::row(out, "build a tree node: allocated in a read scope (base: private struct)", median(build_view_ns),
             median(build_private_ns), "issue 17 target: <= 40 ns");
  bench::row(out, "build a tree node: rooted API (base: allocated in a read scope)", median(build_rooted_ns),
             median(build_view_ns), "");
  detail::stop_using_collector_barrier();
}
