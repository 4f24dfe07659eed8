// The OO7 generator (SPEC.md "Generator"): the one place the draw order is written down. It
// drives a Sink that creates the objects, so the private structs (private_builder.hpp) and the
// shared objects (shared_builder.hpp) come from the very same sequence of draws.
//
// A Sink provides the handle types Module, Comp, Part, Assm and:
//   Module module(id, type, date)
//   Comp composite(id, type, date, document)          appended to the database's composites
//   Part part(Comp&, id, type, date, x, y)            appended to the composite's parts, partOf set
//   void root_part(Comp&, Part&)
//   void connection(id, type, length, Part& from, Part& to)  appended to from.to and to.from_
//   Assm assembly(bool complex, id, type, date, Assm* super) appended to the database's
//                                                     assemblies and to super's subAssemblies
//   void component(Assm& base, Comp&)                 appended to base.components and comp.usedIn
//   void design_root(Module&, Assm&)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "params.hpp"
#include "splitmix64.hpp"

namespace oo7 {

// "I am the documentation for composite part #<c>. " repeated and cut to `size` bytes.
inline std::string document_text(std::int64_t c, int size) {
  const std::string unit = "I am the documentation for composite part #" + std::to_string(c) + ". ";
  std::string doc;
  doc.reserve(static_cast<std::size_t>(size) + unit.size());
  while (doc.size() < static_cast<std::size_t>(size)) doc += unit;
  doc.resize(static_cast<std::size_t>(size));
  return doc;
}

template <class Sink>
class Generator {
 public:
  Generator(const Params& p, std::uint64_t seed, Sink& sink) : p_(p), rng_(seed), sink_(sink) {}

  void run() {
    // 1. The module (its designRoot is the root assembly, built last).
    std::string mtype = rng_.type();
    std::int64_t mdate = rng_.date();
    typename Sink::Module module = sink_.module(1, mtype, mdate);
    // 2. The composite parts with their atomic parts and connections.
    for (int c = 1; c <= p_.comp_per_module; ++c) composite(c);
    // 3. The assembly tree in preorder from the root.
    typename Sink::Assm root = assembly(p_.assm_levels, nullptr);
    sink_.design_root(module, root);
  }

 private:
  void composite(int c) {
    std::string type = rng_.type();
    std::int64_t date = rng_.date();
    typename Sink::Comp comp = sink_.composite(c, type, date, document_text(c, p_.document_size));
    const int n = p_.atomic_per_comp;
    std::vector<typename Sink::Part> parts;
    parts.reserve(static_cast<std::size_t>(n));
    for (int j = 0; j < n; ++j) {
      std::int64_t id = static_cast<std::int64_t>(c - 1) * n + j + 1;
      std::string ptype = rng_.type();
      std::int64_t pdate = rng_.date();
      std::int64_t x = static_cast<std::int64_t>(rng_.rand(100000));
      std::int64_t y = static_cast<std::int64_t>(rng_.rand(100000));
      parts.push_back(sink_.part(comp, id, ptype, pdate, x, y));
    }
    sink_.root_part(comp, parts[0]);
    for (int j = 0; j < n; ++j) {
      for (int k = 0; k < p_.conn_per_atomic; ++k) {
        std::size_t target = k == 0 ? static_cast<std::size_t>((j + 1) % n) : static_cast<std::size_t>(rng_.rand(n));
        std::string ctype = rng_.type();
        std::int64_t length = 1 + static_cast<std::int64_t>(rng_.rand(100000));
        sink_.connection(++connection_id_, ctype, length, parts[static_cast<std::size_t>(j)], parts[target]);
      }
    }
    composites_.push_back(std::move(comp));
  }

  typename Sink::Assm assembly(int level, typename Sink::Assm* super) {
    std::string type = rng_.type();
    std::int64_t date = rng_.date();
    typename Sink::Assm a = sink_.assembly(level > 1, ++assembly_id_, type, date, super);
    if (level > 1) {
      for (int i = 0; i < p_.assm_per_assm; ++i) assembly(level - 1, &a);
    } else {
      for (int i = 0; i < p_.comp_per_assm; ++i)
        sink_.component(a, composites_[static_cast<std::size_t>(rng_.rand(static_cast<std::uint64_t>(p_.comp_per_module)))]);
    }
    return a;
  }

  const Params& p_;
  SplitMix64 rng_;
  Sink& sink_;
  std::vector<typename Sink::Comp> composites_;
  std::int64_t connection_id_ = 0;
  std::int64_t assembly_id_ = 0;
};

template <class Sink>
void generate(const Params& p, std::uint64_t seed, Sink& sink) {
  Generator<Sink>(p, seed, sink).run();
}

}  // namespace oo7
