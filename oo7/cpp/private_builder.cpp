#include "private_builder.hpp"

#include <string>

#include "generator.hpp"

namespace oo7 {

namespace {

// The generator's sink for plain structs.
class PrivateSink {
 public:
  using Module = priv::Module*;
  using Comp = priv::CompositePart*;
  using Part = priv::AtomicPart*;
  using Assm = priv::Assembly*;

  explicit PrivateSink(priv::Database& db) : db_(db) {}

  Module module(std::int64_t id, const std::string& type, std::int64_t date) {
    db_.module_owner = std::make_unique<priv::Module>(priv::Module{id, type, date, nullptr});
    db_.module = db_.module_owner.get();
    return db_.module;
  }
  Comp composite(std::int64_t id, const std::string& type, std::int64_t date, std::string document) {
    auto& c = db_.composite_owner.emplace_back(std::make_unique<priv::CompositePart>());
    c->id = id;
    c->type = type;
    c->build_date = date;
    c->document = std::move(document);
    db_.composites.push_back(c.get());
    return c.get();
  }
  Part part(Comp& comp, std::int64_t id, const std::string& type, std::int64_t date, std::int64_t x, std::int64_t y) {
    auto& p = db_.part_owner.emplace_back(std::make_unique<priv::AtomicPart>());
    p->id = id;
    p->x = x;
    p->y = y;
    p->build_date = date;
    p->type = type;
    p->part_of = comp;
    comp->parts.push_back(p.get());
    return p.get();
  }
  void root_part(Comp& comp, Part& part) { comp->root_part = part; }
  void connection(std::int64_t id, const std::string& type, std::int64_t length, Part& from, Part& to) {
    auto& c = db_.connection_owner.emplace_back(std::make_unique<priv::Connection>(priv::Connection{id, type, length, from, to}));
    from->to.push_back(c.get());
    to->from.push_back(c.get());
  }
  Assm assembly(bool complex, std::int64_t id, const std::string& type, std::int64_t date, Assm* super) {
    priv::Assembly* a;
    if (complex) a = db_.complex_owner.emplace_back(std::make_unique<priv::ComplexAssembly>()).get();
    else a = db_.base_owner.emplace_back(std::make_unique<priv::BaseAssembly>()).get();
    a->complex = complex;
    a->id = id;
    a->type = type;
    a->build_date = date;
    a->super_assembly = super == nullptr ? nullptr : static_cast<priv::ComplexAssembly*>(*super);
    if (super != nullptr) static_cast<priv::ComplexAssembly*>(*super)->sub_assemblies.push_back(a);
    db_.assemblies.push_back(a);
    return a;
  }
  void component(Assm& base, Comp& comp) {
    auto* b = static_cast<priv::BaseAssembly*>(base);
    b->components.push_back(comp);
    comp->used_in.push_back(b);
  }
  void design_root(Module& m, Assm& root) { m->design_root = static_cast<priv::ComplexAssembly*>(root); }

 private:
  priv::Database& db_;
};

}  // namespace

std::unique_ptr<priv::Database> build_private(const Params& p, std::uint64_t seed) {
  auto db = std::make_unique<priv::Database>();
  PrivateSink sink(*db);
  generate(p, seed, sink);
  return db;
}

}  // namespace oo7
