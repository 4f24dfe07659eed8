// The shared OO7 classes (SPEC.md "Shared schema"): names, fields and field order are the contract
// every language follows. Each field is resolved once (colors::Field) so that reads and writes of
// objects of this version skip the name lookup; objects of another version of a class (built by
// a language that typed a field differently) are still read correctly, by name.
#pragma once
#include <colors/colors.hpp>

namespace oo7 {

struct Schema {
  struct ModuleFields {
    colors::Class cls;
    colors::Field id, type, build_date, design_root;
  } module;
  struct ComplexFields {
    colors::Class cls;
    colors::Field id, type, build_date, super_assembly, sub_assemblies;
  } complex;
  struct BaseFields {
    colors::Class cls;
    colors::Field id, type, build_date, super_assembly, components;
  } base;
  struct CompositeFields {
    colors::Class cls;
    colors::Field id, type, build_date, document, root_part, parts, used_in;
  } composite;
  struct PartFields {
    colors::Class cls;
    colors::Field id, x, y, build_date, type, to, from, part_of;
  } part;
  struct ConnectionFields {
    colors::Class cls;
    colors::Field id, type, length, from, to;
  } connection;
  struct DatabaseFields {
    colors::Class cls;
    colors::Field module, composites, assemblies;
  } database;
};

// Defines (or finds) the seven classes in the attached heap. REQUIRES: attached.
Schema define_schema();

// The schema an existing database was built with: the class versions of its objects (another
// language may have typed a field differently, which makes another version of the class), so that
// reading it takes the resolved-field path. Objects of yet other versions are still read, by
// name. colors::KeyError when a class lacks one of the SPEC's fields, TypeMismatchError when the
// database is not shaped as the SPEC says.
Schema schema_of(const colors::Object& db);

}  // namespace oo7
