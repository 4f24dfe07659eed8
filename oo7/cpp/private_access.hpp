// The accessor the operations (operations.hpp) and checks (fingerprint.hpp) use over the private
// structs: plain member reads through pointers.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "private_model.hpp"

namespace oo7 {

class PrivateAccess {
 public:
  using Module = priv::Module*;
  using Assm = priv::Assembly*;
  using Comp = priv::CompositePart*;
  using Part = priv::AtomicPart*;
  using Conn = priv::Connection*;
  template <class T>
  using Seq = const std::vector<T>&;

  explicit PrivateAccess(priv::Database& db) : db_(db) {}

  template <class T>
  static std::size_t size(const std::vector<T>& s) { return s.size(); }
  template <class T>
  static T at(const std::vector<T>& s, std::size_t i) { return s[i]; }
  template <class T, class F>
  static void for_each(const std::vector<T>& s, F&& f) {
    for (const T& x : s) f(x);
  }

  Module module() const { return db_.module; }
  const std::vector<Comp>& composites() const { return db_.composites; }
  const std::vector<Assm>& assemblies() const { return db_.assemblies; }

  static std::int64_t id(const Module& m) { return m->id; }
  static std::string_view type(const Module& m) { return m->type; }
  static std::int64_t build_date(const Module& m) { return m->build_date; }
  static Assm design_root(const Module& m) { return m->design_root; }

  static std::int64_t id(const Assm& a) { return a->id; }
  static std::string_view type(const Assm& a) { return a->type; }
  static std::int64_t build_date(const Assm& a) { return a->build_date; }
  static bool is_complex(const Assm& a) { return a->complex; }
  // 0 for the root.
  static std::int64_t super_id(const Assm& a) { return a->super_assembly == nullptr ? 0 : a->super_assembly->id; }
  // REQUIRES: is_complex(a).
  static const std::vector<Assm>& sub_assemblies(const Assm& a) {
    return static_cast<priv::ComplexAssembly*>(a)->sub_assemblies;
  }
  // REQUIRES: !is_complex(a).
  static const std::vector<Comp>& components(const Assm& a) { return static_cast<priv::BaseAssembly*>(a)->components; }

  static std::int64_t id(const Comp& c) { return c->id; }
  static std::string_view type(const Comp& c) { return c->type; }
  static std::int64_t build_date(const Comp& c) { return c->build_date; }
  static std::string_view document(const Comp& c) { return c->document; }
  static Part root_part(const Comp& c) { return c->root_part; }
  static const std::vector<Part>& parts(const Comp& c) { return c->parts; }
  // Base assemblies, seen through the Assm handle.
  static std::vector<Assm> used_in(const Comp& c) { return {c->used_in.begin(), c->used_in.end()}; }

  static std::int64_t id(const Part& p) { return p->id; }
  static std::int64_t x(const Part& p) { return p->x; }
  static std::int64_t y(const Part& p) { return p->y; }
  static std::int64_t build_date(const Part& p) { return p->build_date; }
  static std::string_view type(const Part& p) { return p->type; }
  static Comp part_of(const Part& p) { return p->part_of; }
  static const std::vector<Conn>& to(const Part& p) { return p->to; }
  static const std::vector<Conn>& from(const Part& p) { return p->from; }
  // Identity of a part for a visited set.
  static std::uintptr_t key(const Part& p) { return reinterpret_cast<std::uintptr_t>(p); }
  static void swap_xy(const Part& p) {
    std::int64_t x = p->x;
    p->x = p->y;
    p->y = x;
  }
  // Private objects need no lock: runs fn.
  template <class F>
  static void exclusive(const Comp&, F&& fn) { fn(); }

  static std::int64_t id(const Conn& c) { return c->id; }
  static std::string_view type(const Conn& c) { return c->type; }
  static std::int64_t length(const Conn& c) { return c->length; }
  static Part from(const Conn& c) { return c->from; }
  static Part to(const Conn& c) { return c->to; }

 private:
  priv::Database& db_;
};

}  // namespace oo7
