// The accessor the operations (operations.hpp) and checks (fingerprint.hpp) use over the shared
// database: every call reads the shared object through the public C++ API (colors::Object::get
// with a resolved colors::Field, colors::List::size/get), so an operation sees what other
// processes wrote, and pays what a C++ client of the heap pays. Nothing is cached but the schema.
//
// Handles wrap colors::Object (a GC root while held) in one type per OO7 class, so the same
// operation template reads private and shared databases. Values read from the heap are checked
// before use (a reference where an object is expected, a list where a list is): a database written
// by another program with a wrong kind in a field gives colors::TypeMismatchError or KeyError,
// never a wild read.
#pragma once
#include <colors/colors.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shared_schema.hpp"

namespace oo7 {

namespace shared {

template <class Tag>
struct Ref {
  mutable colors::Object obj;  // set() is non-const; writing through a handle does not change it
};
struct ModuleTag;
struct AssmTag;
struct CompTag;
struct PartTag;
struct ConnTag;

// A shared list read element by element (each size() and get() is one locked list operation).
template <class T>
struct Seq {
  colors::List list;
};

// A shared string kept alive while its view is used.
struct Str {
  colors::Value value;
};
inline std::string_view view(const Str& s) { return s.value.string_view(); }

}  // namespace shared


class SharedAccess {
 public:
  using Module = shared::Ref<shared::ModuleTag>;
  using Assm = shared::Ref<shared::AssmTag>;
  using Comp = shared::Ref<shared::CompTag>;
  using Part = shared::Ref<shared::PartTag>;
  using Conn = shared::Ref<shared::ConnTag>;
  template <class T>
  using Seq = shared::Seq<T>;

  // `db`: an oo7.Database object.
  SharedAccess(const Schema& s, colors::Object db) : s_(s), db_(std::move(db)) {}

  template <class T>
  static std::size_t size(const Seq<T>& s) { return s.list.size(); }
  template <class T>
  static T at(const Seq<T>& s, std::size_t i) { return T{object(s.list.get(i))}; }
  template <class T, class F>
  static void for_each(const Seq<T>& s, F&& f) {
    const std::size_t n = size(s);
    for (std::size_t i = 0; i < n; ++i) f(at(s, i));
  }

  Module module() const { return {object(db_.get(s_.database.module))}; }
  Seq<Comp> composites() const { return {list(db_.get(s_.database.composites))}; }
  Seq<Assm> assemblies() const { return {list(db_.get(s_.database.assemblies))}; }

  std::int64_t id(const Module& m) const { return m.obj.get(s_.module.id).as_int(); }
  shared::Str type(const Module& m) const { return {m.obj.get(s_.module.type)}; }
  std::int64_t build_date(const Module& m) const { return m.obj.get(s_.module.build_date).as_int(); }
  Assm design_root(const Module& m) const { return {object(m.obj.get(s_.module.design_root))}; }

  std::int64_t id(const Assm& a) const { return a.obj.get(is_complex(a) ? s_.complex.id : s_.base.id).as_int(); }
  shared::Str type(const Assm& a) const { return {a.obj.get(is_complex(a) ? s_.complex.type : s_.base.type)}; }
  std::int64_t build_date(const Assm& a) const {
    return a.obj.get(is_complex(a) ? s_.complex.build_date : s_.base.build_date).as_int();
  }
  bool is_complex(const Assm& a) const { return is_complex_class(a.obj.cls()); }
  // Whether `c` is a version of oo7.ComplexAssembly (false: of oo7.BaseAssembly);
  // TypeMismatchError for any other class.
  bool is_complex_class(const colors::Class& c) const;
  const Schema& schema() const { return s_; }
  const colors::Object& database() const { return db_; }
  std::int64_t super_id(const Assm& a) const {
    colors::Value v = a.obj.get(is_complex(a) ? s_.complex.super_assembly : s_.base.super_assembly);
    if (v.is_null()) return 0;
    return object(std::move(v)).get(s_.complex.id).as_int();
  }
  Seq<Assm> sub_assemblies(const Assm& a) const { return {list(a.obj.get(s_.complex.sub_assemblies))}; }
  Seq<Comp> components(const Assm& a) const { return {list(a.obj.get(s_.base.components))}; }

  std::int64_t id(const Comp& c) const { return c.obj.get(s_.composite.id).as_int(); }
  shared::Str type(const Comp& c) const { return {c.obj.get(s_.composite.type)}; }
  std::int64_t build_date(const Comp& c) const { return c.obj.get(s_.composite.build_date).as_int(); }
  shared::Str document(const Comp& c) const { return {c.obj.get(s_.composite.document)}; }
  Part root_part(const Comp& c) const { return {object(c.obj.get(s_.composite.root_part))}; }
  Seq<Part> parts(const Comp& c) const { return {list(c.obj.get(s_.composite.parts))}; }
  Seq<Assm> used_in(const Comp& c) const { return {list(c.obj.get(s_.composite.used_in))}; }

  std::int64_t id(const Part& p) const { return p.obj.get(s_.part.id).as_int(); }
  std::int64_t x(const Part& p) const { return p.obj.get(s_.part.x).as_int(); }
  std::int64_t y(const Part& p) const { return p.obj.get(s_.part.y).as_int(); }
  std::int64_t build_date(const Part& p) const { return p.obj.get(s_.part.build_date).as_int(); }
  shared::Str type(const Part& p) const { return {p.obj.get(s_.part.type)}; }
  Comp part_of(const Part& p) const { return {object(p.obj.get(s_.part.part_of))}; }
  Seq<Conn> to(const Part& p) const { return {list(p.obj.get(s_.part.to))}; }
  Seq<Conn> from(const Part& p) const { return {list(p.obj.get(s_.part.from))}; }
  static std::uintptr_t key(const Part& p) { return static_cast<std::uintptr_t>(p.obj.raw()); }
  // REQUIRES: inside exclusive(), so that no other swap of this part interleaves.
  void swap_xy(const Part& p) const {
    std::int64_t x = p.obj.get(s_.part.x).as_int();
    std::int64_t y = p.obj.get(s_.part.y).as_int();
    p.obj.set(s_.part.x, colors::Value(y));
    p.obj.set(s_.part.y, colors::Value(x));
  }
  // Runs fn as one transaction (colors::atomically): the updates of a composite part's visit
  // from any process and language are atomic and isolated, and a process killed in the middle
  // is rolled back by the server. fn may run more than once (retried after a conflict).
  template <class F>
  void exclusive(const Comp&, F&& fn) const {
    if (!use_transactions_) return fn();
    colors::atomically(fn);
  }
  // Without transactions, concurrent T2 runs lose updates: only for showing that the lost-update
  // check detects them.
  void set_use_transactions(bool on) { use_transactions_ = on; }

  std::int64_t id(const Conn& c) const { return c.obj.get(s_.connection.id).as_int(); }
  shared::Str type(const Conn& c) const { return {c.obj.get(s_.connection.type)}; }
  std::int64_t length(const Conn& c) const { return c.obj.get(s_.connection.length).as_int(); }
  Part from(const Conn& c) const { return {object(c.obj.get(s_.connection.from))}; }
  Part to(const Conn& c) const { return {object(c.obj.get(s_.connection.to))}; }

  // A read value as an object / a list; TypeMismatchError naming the kind otherwise.
  static colors::Object object(colors::Value&& v);
  static colors::List list(colors::Value&& v);

 private:
  const Schema s_;  // a copy: an accessor never outlives its schema
  colors::Object db_;
  bool use_transactions_ = true;
  // Class versions seen, with whether they are oo7.ComplexAssembly (another language may have
  // defined another version of it).
  mutable std::vector<std::pair<const void*, bool>> complex_versions_;
};

// The oo7.Database published in the repository `name`; colors::KeyError when it holds none.
colors::Object published_database(const std::string& repository);

}  // namespace oo7
