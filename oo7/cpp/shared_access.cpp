#include "shared_access.hpp"

namespace oo7 {

// Only null and scalars are refused here: a reference to anything but a user object is safe to
// hold as an Object, because Object::get/set compare the object's class with the Field's and fall
// back to a lookup by name, which raises KeyError for a list, a string or any other builtin. This
// spares a kind() lookup on every reference read.
colors::Object SharedAccess::object(colors::Value&& v) {
  if (!v.is_shared_object())
    throw colors::TypeMismatchError("OO7 database: expected a shared object, found " + v.repr());
  colors::Object o;
  o.Value::operator=(std::move(v));  // no second root, unlike Object(const Value&)
  return o;
}

colors::List SharedAccess::list(colors::Value&& v) {
  if (v.kind() != colors::TypeKind::kList)
    throw colors::TypeMismatchError("OO7 database: expected a shared list, found " + v.repr());
  colors::List l;
  l.Value::operator=(std::move(v));
  return l;
}

bool SharedAccess::is_complex_class(const colors::Class& c) const {
  if (c == s_.complex.cls) return true;
  if (c == s_.base.cls) return false;
  for (const auto& [rec, complex] : complex_versions_)
    if (rec == c.record()) return complex;
  std::string name = c.name();
  if (name != "oo7.ComplexAssembly" && name != "oo7.BaseAssembly")
    throw colors::TypeMismatchError("OO7 database: expected an assembly, found an object of class " + name);
  complex_versions_.emplace_back(c.record(), name == "oo7.ComplexAssembly");
  return complex_versions_.back().second;
}

colors::Object published_database(const std::string& repository) {
  colors::Value v = colors::repository(repository).get();
  if (v.is_null()) throw colors::KeyError("repository '" + repository + "' holds no OO7 database: load one first (oo7/load)");
  colors::Object db = SharedAccess::object(std::move(v));
  std::string cls = db.cls().name();
  if (cls != "oo7.Database")
    throw colors::TypeMismatchError("repository '" + repository + "' holds a " + cls + ", not an oo7.Database");
  return db;
}

}  // namespace oo7
