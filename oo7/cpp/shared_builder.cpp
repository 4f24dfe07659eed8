#include "shared_builder.hpp"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "generator.hpp"

namespace oo7 {

namespace {

using colors::List;
using colors::Object;
using colors::Value;

// A handle of the generator: the object, and its list fields taken once so that appends do not
// read the field again.
struct CompHandle {
  Object obj;
  List parts, used_in;
};
struct PartHandle {
  Object obj;
  List to;
  std::size_t index;  // in SharedSink::from_
};
struct AssmHandle {
  Object obj;
  List children;  // subAssemblies or components
};

// The generator's sink for shared objects: every object and list is created through the public
// API and linked as SPEC.md's schema says.
class SharedSink {
 public:
  using Module = Object;
  using Comp = CompHandle;
  using Part = PartHandle;
  using Assm = AssmHandle;

  SharedSink(const Schema& s, const Object& db, const List& composites, const List& assemblies)
      : s_(s), db_(db), composites_(composites), assemblies_(assemblies) {}

  Module module(std::int64_t id, const std::string& type, std::int64_t date) {
    Object m = colors::new_object(s_.module.cls);
    m.set(s_.module.id, Value(id));
    m.set(s_.module.type, type_value(type));
    m.set(s_.module.build_date, Value(date));
    db_.set(s_.database.module, m);
    return m;
  }
  Comp composite(std::int64_t id, const std::string& type, std::int64_t date, const std::string& document) {
    finish_composite();
    CompHandle c{colors::new_object(s_.composite.cls), colors::new_list(), colors::new_list()};
    c.obj.set(s_.composite.id, Value(id));
    c.obj.set(s_.composite.type, type_value(type));
    c.obj.set(s_.composite.build_date, Value(date));
    c.obj.set(s_.composite.document, Value(document));
    c.obj.set(s_.composite.parts, c.parts);
    c.obj.set(s_.composite.used_in, c.used_in);
    composites_.append(c.obj);
    return c;
  }
  Part part(Comp& comp, std::int64_t id, const std::string& type, std::int64_t date, std::int64_t x, std::int64_t y) {
    PartHandle p{colors::new_object(s_.part.cls), colors::new_list(), from_.size()};
    from_.push_back({p.obj, {}});
    p.obj.set(s_.part.id, Value(id));
    p.obj.set(s_.part.x, Value(x));
    p.obj.set(s_.part.y, Value(y));
    p.obj.set(s_.part.build_date, Value(date));
    p.obj.set(s_.part.type, type_value(type));
    p.obj.set(s_.part.to, p.to);
    p.obj.set(s_.part.part_of, comp.obj);
    comp.parts.append(p.obj);
    return p;
  }
  void root_part(Comp& comp, Part& part) { comp.obj.set(s_.composite.root_part, part.obj); }
  void connection(std::int64_t id, const std::string& type, std::int64_t length, Part& from, Part& to) {
    Object c = colors::new_object(s_.connection.cls);
    c.set(s_.connection.id, Value(id));
    c.set(s_.connection.type, type_value(type));
    c.set(s_.connection.length, Value(length));
    c.set(s_.connection.from, from.obj);
    c.set(s_.connection.to, to.obj);
    from.to.append(c);
    from_[to.index].second.push_back(c);
  }
  Assm assembly(bool complex, std::int64_t id, const std::string& type, std::int64_t date, Assm* super) {
    finish_composite();
    AssmHandle a{colors::new_object(complex ? s_.complex.cls : s_.base.cls), colors::new_list()};
    if (complex) {
      a.obj.set(s_.complex.id, Value(id));
      a.obj.set(s_.complex.type, type_value(type));
      a.obj.set(s_.complex.build_date, Value(date));
      if (super != nullptr) a.obj.set(s_.complex.super_assembly, super->obj);
      a.obj.set(s_.complex.sub_assemblies, a.children);
    } else {
      a.obj.set(s_.base.id, Value(id));
      a.obj.set(s_.base.type, type_value(type));
      a.obj.set(s_.base.build_date, Value(date));
      if (super != nullptr) a.obj.set(s_.base.super_assembly, super->obj);
      a.obj.set(s_.base.components, a.children);
    }
    if (super != nullptr) super->children.append(a.obj);
    assemblies_.append(a.obj);
    return a;
  }
  void component(Assm& base, Comp& comp) {
    base.children.append(comp.obj);
    comp.used_in.append(base.obj);
  }
  void design_root(Module& m, Assm& root) { m.set(s_.module.design_root, root.obj); }

  // The last composite part's parts get their from_ lists (the generator's connections are all
  // made before the assemblies, and a module with no assemblies has no composite parts either).
  void finish() { finish_composite(); }

 private:
  // One shared string per distinct type value (SPEC.md draws ten of them): the objects share an
  // immutable value instead of each holding a copy, which keeps a composite part's objects
  // closer together in memory (T1 reads no string: copies would only spread the objects it reads).
  const Value& type_value(const std::string& type) {
    auto it = types_.find(type);
    if (it == types_.end()) it = types_.emplace(type, Value(type)).first;
    return it->second;
  }

  // Each part's from_ list is built once its composite part's connections are all made, after
  // them, so that the lists T1 never reads lie after the objects it does, not between them.
  void finish_composite() {
    for (auto& [part, conns] : from_) {
      List from = colors::new_list(conns.size());
      for (const Object& c : conns) from.append(c);
      part.set(s_.part.from, from);
    }
    from_.clear();
  }

  const Schema& s_;
  std::vector<std::pair<Object, std::vector<Object>>> from_;  // the current composite's parts
  std::unordered_map<std::string, Value> types_;
  Object db_;
  List composites_, assemblies_;
};

}  // namespace

Object build_shared(const Schema& s, const Params& p, std::uint64_t seed) {
  Object db = colors::new_object(s.database.cls);
  List composites = colors::new_list(static_cast<std::size_t>(p.comp_per_module));
  List assemblies = colors::new_list();
  db.set(s.database.composites, composites);
  db.set(s.database.assemblies, assemblies);
  SharedSink sink(s, db, composites, assemblies);
  generate(p, seed, sink);
  sink.finish();
  return db;
}

void publish(const Params& p, const Object& db) { colors::repository(p.repository()).set(db); }

}  // namespace oo7
