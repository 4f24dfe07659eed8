// The private OO7 database: plain C++ structs linked by raw pointers, owned by one Database. It
// is the baseline every shared-vs-private ratio is measured against, built by the same generator
// (generator.hpp) as the shared database.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace oo7::priv {

struct AtomicPart;
struct CompositePart;
struct ComplexAssembly;
struct BaseAssembly;

struct Connection {
  std::int64_t id;
  std::string type;
  std::int64_t length;
  AtomicPart* from;
  AtomicPart* to;
};

struct AtomicPart {
  std::int64_t id;
  std::int64_t x;
  std::int64_t y;
  std::int64_t build_date;
  std::string type;
  std::vector<Connection*> to;
  std::vector<Connection*> from;
  CompositePart* part_of;
};

struct CompositePart {
  std::int64_t id;
  std::string type;
  std::int64_t build_date;
  std::string document;
  AtomicPart* root_part = nullptr;
  std::vector<AtomicPart*> parts;
  std::vector<BaseAssembly*> used_in;
};

// A complex or a base assembly; `complex` says which of the two structs below it is.
struct Assembly {
  bool complex;
  std::int64_t id;
  std::string type;
  std::int64_t build_date;
  ComplexAssembly* super_assembly;
};

struct ComplexAssembly : Assembly {
  std::vector<Assembly*> sub_assemblies;
};

struct BaseAssembly : Assembly {
  std::vector<CompositePart*> components;
};

struct Module {
  std::int64_t id;
  std::string type;
  std::int64_t build_date;
  ComplexAssembly* design_root = nullptr;
};

struct Database {
  Module* module = nullptr;
  std::vector<CompositePart*> composites;  // in id order
  std::vector<Assembly*> assemblies;       // in preorder

  // Owners of every object above (the pointers never move).
  std::unique_ptr<Module> module_owner;
  std::vector<std::unique_ptr<CompositePart>> composite_owner;
  std::vector<std::unique_ptr<AtomicPart>> part_owner;
  std::vector<std::unique_ptr<Connection>> connection_owner;
  std::vector<std::unique_ptr<ComplexAssembly>> complex_owner;
  std::vector<std::unique_ptr<BaseAssembly>> base_owner;
};

}  // namespace oo7::priv
