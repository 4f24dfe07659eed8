// The accessor of the read-only operations (T1, T6, Q7, the visit order and the fingerprint) over
// the shared database, inside a colors::ReadScope: the same reads as SharedAccess, through
// colors::ObjectView and ListView, which borrow references instead of taking a GC root for each
// (libshared's read scopes, gc/README.md "Read scopes"). This is what a C++ client writes for a
// read-only traversal; SharedAccess (rooted handles) serves the updates, which run in transactions.
//
// REQUIRES: every call, and every use of a handle it returned, inside one colors::ReadScope on the
// calling thread (with_read_scope below opens it). Values read are checked as SharedAccess checks
// them (TypeMismatchError, KeyError), never used blind.
#pragma once
#include <colors/colors.hpp>
#include <cstdint>
#include <string_view>

#include "operations.hpp"
#include "shared_access.hpp"

namespace oo7 {

namespace shared_view {

// A reference read from the database, checked to be an object when it is first used, not when
// it is read: T1 reaches most parts again through a connection and only compares the reference
// with the visited set, as the private model compares pointers without dereferencing them.
template <class Tag>
struct Ref {
  colors::ValueView ref;
  colors::ObjectView obj() const { return ref.as_object(); }
};
template <class T>
struct Seq {
  colors::ListView list;
};
struct Str {
  std::string_view s;
};
inline std::string_view view(const Str& s) { return s.s; }

}  // namespace shared_view

class SharedViewAccess {
 public:
  using Module = shared_view::Ref<shared::ModuleTag>;
  using Assm = shared_view::Ref<shared::AssmTag>;
  using Comp = shared_view::Ref<shared::CompTag>;
  using Part = shared_view::Ref<shared::PartTag>;
  using Conn = shared_view::Ref<shared::ConnTag>;
  template <class T>
  using Seq = shared_view::Seq<T>;

  // `rooted`: the accessor whose schema, database and class cache this one reads through.
  explicit SharedViewAccess(const SharedAccess& rooted) : a_(rooted), s_(rooted.schema()), db_(rooted.database()) {}

  template <class T>
  static std::size_t size(const Seq<T>& s) { return s.list.size(); }
  template <class T>
  static T at(const Seq<T>& s, std::size_t i) { return T{s.list.get(i)}; }
  // The elements in chunks, each chunk one validated read of the list (ListView::read); a list
  // changed between chunks is read on from where the last chunk ended.
  template <class T, class F>
  static void for_each(const Seq<T>& s, F&& f) {
    constexpr std::size_t kChunk = 16;
    colors::ValueView chunk[kChunk];
    std::size_t from = 0;
    for (;;) {
      const std::size_t k = s.list.read(from, chunk, kChunk);
      for (std::size_t i = 0; i < k; ++i) f(T{chunk[i]});
      if (k < kChunk) return;
      from += k;
    }
  }

  Module module() const { return {db_.get(s_.database.module)}; }
  Seq<Comp> composites() const { return {list(db_.get(s_.database.composites))}; }
  Seq<Assm> assemblies() const { return {list(db_.get(s_.database.assemblies))}; }

  std::int64_t id(const Module& m) const { return m.obj().get(s_.module.id).as_int(); }
  shared_view::Str type(const Module& m) const { return {m.obj().get(s_.module.type).string_view()}; }
  std::int64_t build_date(const Module& m) const { return m.obj().get(s_.module.build_date).as_int(); }
  Assm design_root(const Module& m) const { return {m.obj().get(s_.module.design_root)}; }

  bool is_complex(const Assm& a) const { return a_.is_complex_class(a.obj().cls()); }
  std::int64_t id(const Assm& a) const { return a.obj().get(is_complex(a) ? s_.complex.id : s_.base.id).as_int(); }
  shared_view::Str type(const Assm& a) const {
    return {a.obj().get(is_complex(a) ? s_.complex.type : s_.base.type).string_view()};
  }
  std::int64_t build_date(const Assm& a) const {
    return a.obj().get(is_complex(a) ? s_.complex.build_date : s_.base.build_date).as_int();
  }
  std::int64_t super_id(const Assm& a) const {
    colors::ValueView v = a.obj().get(is_complex(a) ? s_.complex.super_assembly : s_.base.super_assembly);
    if (v.is_null()) return 0;
    return object(v).get(s_.complex.id).as_int();
  }
  Seq<Assm> sub_assemblies(const Assm& a) const { return {list(a.obj().get(s_.complex.sub_assemblies))}; }
  Seq<Comp> components(const Assm& a) const { return {list(a.obj().get(s_.base.components))}; }

  std::int64_t id(const Comp& c) const { return c.obj().get(s_.composite.id).as_int(); }
  shared_view::Str type(const Comp& c) const { return {c.obj().get(s_.composite.type).string_view()}; }
  std::int64_t build_date(const Comp& c) const { return c.obj().get(s_.composite.build_date).as_int(); }
  shared_view::Str document(const Comp& c) const { return {c.obj().get(s_.composite.document).string_view()}; }
  Part root_part(const Comp& c) const { return {c.obj().get(s_.composite.root_part)}; }
  Seq<Part> parts(const Comp& c) const { return {list(c.obj().get(s_.composite.parts))}; }
  Seq<Assm> used_in(const Comp& c) const { return {list(c.obj().get(s_.composite.used_in))}; }

  std::int64_t id(const Part& p) const { return p.obj().get(s_.part.id).as_int(); }
  std::int64_t x(const Part& p) const { return p.obj().get(s_.part.x).as_int(); }
  std::int64_t y(const Part& p) const { return p.obj().get(s_.part.y).as_int(); }
  std::int64_t build_date(const Part& p) const { return p.obj().get(s_.part.build_date).as_int(); }
  shared_view::Str type(const Part& p) const { return {p.obj().get(s_.part.type).string_view()}; }
  Comp part_of(const Part& p) const { return {p.obj().get(s_.part.part_of)}; }
  Seq<Conn> to(const Part& p) const { return {list(p.obj().get(s_.part.to))}; }
  Seq<Conn> from(const Part& p) const { return {list(p.obj().get(s_.part.from))}; }
  static std::uintptr_t key(const Part& p) { return static_cast<std::uintptr_t>(p.ref.raw()); }

  std::int64_t id(const Conn& c) const { return c.obj().get(s_.connection.id).as_int(); }
  shared_view::Str type(const Conn& c) const { return {c.obj().get(s_.connection.type).string_view()}; }
  std::int64_t length(const Conn& c) const { return c.obj().get(s_.connection.length).as_int(); }
  Part from(const Conn& c) const { return {c.obj().get(s_.connection.from)}; }
  Part to(const Conn& c) const { return {c.obj().get(s_.connection.to)}; }

  // The updates (T2*) have no place here (a read scope cannot run a transaction): the
  // traversal's update branches exist in every instantiation, so these refuse instead.
  template <class F>
  void exclusive(const Comp&, F&&) const { refuse_update(); }
  void swap_xy(const Part&) const { refuse_update(); }

  // A read value as an object / a list; TypeMismatchError naming the kind otherwise.
  static colors::ObjectView object(const colors::ValueView& v) { return v.as_object(); }
  static colors::ListView list(const colors::ValueView& v) { return v.as_list(); }

 private:
  [[noreturn]] static void refuse_update();
  const SharedAccess& a_;
  const Schema& s_;
  colors::ObjectView db_;
};

// Whether `op` only reads (T1, T6, Q7): those run through SharedViewAccess in a read scope.
inline bool read_only(Op op) { return op == Op::kT1 || op == Op::kT6 || op == Op::kQ7; }

// run_op on the shared database the way a client would: the read-only operations in one read
// scope through views, the updates through rooted handles in transactions.
OpResult run_shared_op(const SharedAccess& a, Op op);

}  // namespace oo7
