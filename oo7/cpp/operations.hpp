// The OO7 operations of issue 18 over either database (an accessor: private_access.hpp or
// shared_access.hpp), written once so that the shared and the private runs do the same work:
//   T1   depth-first over the assembly tree; at each base assembly, for each component, a
//        depth-first search over the atomic parts from rootPart along `to` connections, with a
//        fresh visited set per composite part visit; returns the number of parts visited.
//   T6   the same tree walk, visiting only each component's rootPart.
//   T2a/T2b/T2c  T1, swapping x/y of the root part / of every part visited / four times each
//        part visited, each composite part's visit one transaction (A::exclusive, which may run
//        it again after a conflict); returns the visit count like T1.
//   Q7   a scan of all atomic parts (composites[*].parts[*]): their count and the sum of x.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "visited_set.hpp"

namespace oo7 {

enum class Op { kT1, kT6, kT2a, kT2b, kT2c, kQ7 };

// Op from its name (t1 t6 t2a t2b t2c q7); colors::InvalidArgumentError otherwise.
Op op_from_name(std::string_view name);
const char* op_name(Op op);

struct OpResult {
  std::uint64_t count = 0;  // parts visited (T1, T2*), root parts (T6), parts scanned (Q7)
  std::int64_t sum = 0;     // Q7: the sum of x
  bool operator==(const OpResult&) const = default;
};

// Keeps a value the optimiser would otherwise drop (a read whose result is unused).
inline void keep(std::uintptr_t v) { asm volatile("" : : "r"(v)); }

// T1's tree walk and searches; `on_part(part)` runs for every part visited, in visit order.
template <class A, class OnPart>
class Traversal {
 public:
  enum class Swap { kNone, kRoot, kEvery, kEveryFour };

  Traversal(const A& a, Swap swap, OnPart& on_part) : a_(a), swap_(swap), on_part_(on_part) {}

  // T1 / T2: returns the number of parts visited.
  std::uint64_t run() {
    const auto m = a_.module();
    assembly(a_.design_root(m));
    return visits_;
  }

 private:
  using Assm = typename A::Assm;
  using Comp = typename A::Comp;
  using Part = typename A::Part;

  void assembly(const Assm& x) {
    if (a_.is_complex(x)) {
      A::for_each(a_.sub_assemblies(x), [&](const Assm& s) { assembly(s); });
    } else {
      A::for_each(a_.components(x), [&](const Comp& c) { composite(c); });
    }
  }

  void composite(const Comp& c) {
    const Part root = a_.root_part(c);
    if (swap_ == Swap::kNone) {
      visited_.clear();
      search(root, nullptr);
      return;
    }
    // The update may run more than once (a transaction retried): it collects the parts it
    // visits, and they are counted and reported once it is done.
    a_.exclusive(c, [&] {
      visited_.clear();
      updated_.clear();
      if (swap_ == Swap::kRoot) a_.swap_xy(root);
      search(root, &updated_);
    });
    for (const Part& p : updated_) {
      ++visits_;
      on_part_(p);
    }
    updated_.clear();
  }

  // Visits p and what it reaches; the parts go to `collect` when given, else are reported now.
  void search(const Part& p, std::vector<Part>* collect) {
    visited_.insert(A::key(p));
    if (collect != nullptr) {
      collect->push_back(p);
    } else {
      ++visits_;
      on_part_(p);
    }
    if (swap_ == Swap::kEvery) {
      a_.swap_xy(p);
    } else if (swap_ == Swap::kEveryFour) {
      for (int i = 0; i < 4; ++i) a_.swap_xy(p);
    }
    A::for_each(a_.to(p), [&](const typename A::Conn& c) {
      const Part next = a_.to(c);
      if (!visited_.contains(A::key(next))) search(next, collect);
    });
  }

  const A& a_;
  Swap swap_;
  OnPart& on_part_;
  VisitedSet visited_;
  std::vector<Part> updated_;
  std::uint64_t visits_ = 0;
};

// T6's walk: the assembly tree, and each component's rootPart only.
template <class A>
std::uint64_t t6(const A& a) {
  struct Walk {
    const A& a;
    std::uint64_t roots = 0;
    void assembly(const typename A::Assm& x) {
      if (a.is_complex(x)) {
        A::for_each(a.sub_assemblies(x), [&](const typename A::Assm& s) { assembly(s); });
      } else {
        A::for_each(a.components(x), [&](const typename A::Comp& c) {
          keep(A::key(a.root_part(c)));
          ++roots;
        });
      }
    }
  } w{a};
  const auto m = a.module();
  w.assembly(a.design_root(m));
  return w.roots;
}

template <class A>
OpResult q7(const A& a) {
  OpResult r;
  A::for_each(a.composites(), [&](const typename A::Comp& c) {
    A::for_each(a.parts(c), [&](const typename A::Part& p) {
      r.sum += a.x(p);
      ++r.count;
    });
  });
  return r;
}

template <class A>
OpResult run_op(const A& a, Op op) {
  auto nothing = [](const typename A::Part&) {};
  using T = Traversal<A, decltype(nothing)>;
  switch (op) {
    case Op::kT1: return {T(a, T::Swap::kNone, nothing).run(), 0};
    case Op::kT6: return {t6(a), 0};
    case Op::kT2a: return {T(a, T::Swap::kRoot, nothing).run(), 0};
    case Op::kT2b: return {T(a, T::Swap::kEvery, nothing).run(), 0};
    case Op::kT2c: return {T(a, T::Swap::kEveryFour, nothing).run(), 0};
    case Op::kQ7: return q7(a);
  }
  return {};
}

// T1 with the fold of the visited parts' ids (SPEC.md "Visit order").
struct VisitOrder {
  std::uint64_t visits;
  std::uint64_t fold;
};
template <class A>
VisitOrder visit_order(const A& a);

}  // namespace oo7

#include "fnv.hpp"

namespace oo7 {

template <class A>
VisitOrder visit_order(const A& a) {
  Fnv h;
  auto fold = [&](const typename A::Part& p) { h.i(a.id(p)); };
  using T = Traversal<A, decltype(fold)>;
  std::uint64_t visits = T(a, T::Swap::kNone, fold).run();
  return {visits, h.value()};
}

}  // namespace oo7
