#include "shared_schema.hpp"

#include <string>
#include <vector>

namespace oo7 {

namespace {

using colors::FieldSpec;
using colors::TypeKind;

FieldSpec integer(const char* name) { return {name, TypeKind::kInteger, ""}; }
FieldSpec string(const char* name) { return {name, TypeKind::kString, ""}; }
FieldSpec list(const char* name) { return {name, TypeKind::kList, ""}; }
FieldSpec ref(const char* name, const char* cls) { return {name, TypeKind::kObject, cls}; }

colors::Field field(const colors::Class& c, const char* name) { return colors::Field(c, name); }

}  // namespace

// Resolves every field of `s` against the classes already set in it.
void resolve_fields(Schema& s);

Schema define_schema() {
  Schema s;
  s.module.cls = colors::define_class(
      "oo7.Module", {integer("id"), string("type"), integer("buildDate"), ref("designRoot", "oo7.ComplexAssembly")});
  s.complex.cls = colors::define_class("oo7.ComplexAssembly",
                                       {integer("id"), string("type"), integer("buildDate"),
                                        ref("superAssembly", "oo7.ComplexAssembly"), list("subAssemblies")});
  s.base.cls = colors::define_class("oo7.BaseAssembly", {integer("id"), string("type"), integer("buildDate"),
                                                         ref("superAssembly", "oo7.ComplexAssembly"), list("components")});
  s.composite.cls = colors::define_class(
      "oo7.CompositePart", {integer("id"), string("type"), integer("buildDate"), string("document"),
                            ref("rootPart", "oo7.AtomicPart"), list("parts"), list("usedIn")});
  s.part.cls = colors::define_class("oo7.AtomicPart", {integer("id"), integer("x"), integer("y"), integer("buildDate"),
                                                       string("type"), list("to"), list("from_"),
                                                       ref("partOf", "oo7.CompositePart")});
  s.connection.cls = colors::define_class("oo7.Connection", {integer("id"), string("type"), integer("length"),
                                                             ref("from_", "oo7.AtomicPart"), ref("to", "oo7.AtomicPart")});
  s.database.cls = colors::define_class(
      "oo7.Database", {ref("module", "oo7.Module"), list("composites"), list("assemblies")});
  resolve_fields(s);
  return s;
}

namespace {

colors::Value field_value(const colors::Object& o, const char* name) { return o.get(name); }

colors::Object object_in(colors::Value v, const char* what) {
  if (v.kind() != TypeKind::kObject) throw colors::TypeMismatchError(std::string("OO7 database: ") + what + " is " + v.repr() + ", not an object");
  return colors::Object(v);
}

colors::Object first_of(const colors::Object& o, const char* list_field) {
  colors::Value v = field_value(o, list_field);
  if (v.kind() != TypeKind::kList) throw colors::TypeMismatchError(std::string("OO7 database: field ") + list_field + " is not a list");
  colors::List l(v);
  if (l.size() == 0) throw colors::TypeMismatchError(std::string("OO7 database: list ") + list_field + " is empty");
  return object_in(l.get(0), list_field);
}

colors::Class class_named(const colors::Object& o, const char* name) {
  colors::Class c = o.cls();
  if (c.name() != name) throw colors::TypeMismatchError("OO7 database: expected an " + std::string(name) + ", found a " + c.name());
  return c;
}

}  // namespace

Schema schema_of(const colors::Object& db) {
  Schema s;
  s.database.cls = class_named(db, "oo7.Database");
  colors::Object module = object_in(field_value(db, "module"), "module");
  s.module.cls = class_named(module, "oo7.Module");
  colors::Object a = object_in(field_value(module, "designRoot"), "designRoot");
  s.complex.cls = class_named(a, "oo7.ComplexAssembly");
  for (int depth = 0; a.cls().name() == "oo7.ComplexAssembly"; ++depth) {
    if (depth > 64) throw colors::TypeMismatchError("OO7 database: no base assembly below 64 levels of complex assemblies");
    a = first_of(a, "subAssemblies");
  }
  s.base.cls = class_named(a, "oo7.BaseAssembly");
  colors::Object comp = first_of(db, "composites");
  s.composite.cls = class_named(comp, "oo7.CompositePart");
  colors::Object part = first_of(comp, "parts");
  s.part.cls = class_named(part, "oo7.AtomicPart");
  s.connection.cls = class_named(first_of(part, "to"), "oo7.Connection");
  resolve_fields(s);
  return s;
}

void resolve_fields(Schema& s) {
  const auto& m = s.module.cls;
  s.module.id = field(m, "id");
  s.module.type = field(m, "type");
  s.module.build_date = field(m, "buildDate");
  s.module.design_root = field(m, "designRoot");
  const auto& ca = s.complex.cls;
  s.complex.id = field(ca, "id");
  s.complex.type = field(ca, "type");
  s.complex.build_date = field(ca, "buildDate");
  s.complex.super_assembly = field(ca, "superAssembly");
  s.complex.sub_assemblies = field(ca, "subAssemblies");
  const auto& ba = s.base.cls;
  s.base.id = field(ba, "id");
  s.base.type = field(ba, "type");
  s.base.build_date = field(ba, "buildDate");
  s.base.super_assembly = field(ba, "superAssembly");
  s.base.components = field(ba, "components");
  const auto& cp = s.composite.cls;
  s.composite.id = field(cp, "id");
  s.composite.type = field(cp, "type");
  s.composite.build_date = field(cp, "buildDate");
  s.composite.document = field(cp, "document");
  s.composite.root_part = field(cp, "rootPart");
  s.composite.parts = field(cp, "parts");
  s.composite.used_in = field(cp, "usedIn");
  const auto& ap = s.part.cls;
  s.part.id = field(ap, "id");
  s.part.x = field(ap, "x");
  s.part.y = field(ap, "y");
  s.part.build_date = field(ap, "buildDate");
  s.part.type = field(ap, "type");
  s.part.to = field(ap, "to");
  s.part.from = field(ap, "from_");
  s.part.part_of = field(ap, "partOf");
  const auto& cn = s.connection.cls;
  s.connection.id = field(cn, "id");
  s.connection.type = field(cn, "type");
  s.connection.length = field(cn, "length");
  s.connection.from = field(cn, "from_");
  s.connection.to = field(cn, "to");
  const auto& db = s.database.cls;
  s.database.module = field(db, "module");
  s.database.composites = field(db, "composites");
  s.database.assemblies = field(db, "assemblies");
}

}  // namespace oo7
