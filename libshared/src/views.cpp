// The public read-scope API (colors.hpp, "read scopes"): ReadScope and the views whose reads
// borrow references instead of rooting them (read_scope.hpp has the protocol).
#include <string>

#include "classes.hpp"
#include "colors/colors.hpp"
#include "containers.hpp"
#include "objects.hpp"
#include "read_scope.hpp"
#include "transaction.hpp"

namespace colors {

using namespace detail;

namespace {

// Every view accessor starts here: a view outside any scope could name freed memory.
inline void require_scope(const char* what) {
  if (__builtin_expect(!in_read_scope(), 0))
    throw InvalidArgumentError(std::string(what) + " outside a read scope (open a colors::ReadScope on this thread first)");
}

[[noreturn]] void mismatch(Word w, const char* want) {
  throw TypeMismatchError(std::string("expected a shared ") + want + ", got " + std::string(type_name(kind_of(w))));
}

}  // namespace

ReadScope::ReadScope() {
  if (detail::in_transaction())
    throw InvalidArgumentError("a read scope cannot be opened inside a transaction (a transaction's reads are tracked; use its own reads)");
  read_scope_enter();
}
ReadScope::~ReadScope() { read_scope_exit(); }
bool ReadScope::active() { return in_read_scope(); }

TypeKind ValueView::kind() const {
  require_scope("ValueView::kind");
  return kind_of(word_);
}
std::int64_t ValueView::as_int() const {
  require_scope("ValueView::as_int");
  if (is_small_int(word_)) return small_value(word_);
  if (kind_of(word_) != TypeKind::kInteger) mismatch(word_, "integer");
  return integer_value(word_);
}
double ValueView::as_float() const {
  require_scope("ValueView::as_float");
  const TypeKind k = kind_of(word_);
  if (k == TypeKind::kFloat) return float_value(word_);
  if (k == TypeKind::kInteger) return static_cast<double>(integer_value(word_));
  mismatch(word_, "float");
}
bool ValueView::as_bool() const {
  require_scope("ValueView::as_bool");
  if (!is_bool(word_)) mismatch(word_, "boolean");
  return bool_value(word_);
}
std::string_view ValueView::string_view() const {
  require_scope("ValueView::string_view");
  if (kind_of(word_) != TypeKind::kString) mismatch(word_, "string");
  return string_value(word_);
}
ObjectView ValueView::as_object() const {
  require_scope("ValueView::as_object");
  if (!is_ref(word_) || class_of(word_)->kind != TypeKind::kObject) mismatch(word_, "object");
  return ObjectView(word_);
}
ListView ValueView::as_list() const {
  require_scope("ValueView::as_list");
  if (!is_ref(word_) || class_of(word_)->kind != TypeKind::kList) mismatch(word_, "list");
  return ListView(word_);
}
Value ValueView::promote() const {
  require_scope("ValueView::promote");
  Rooted r = promote_borrowed(word_);
  const Word w = r.word();
  return Value::adopt_root(w, r.take());
}

Class ObjectView::cls() const {
  require_scope("ObjectView::cls");
  return Class(class_of(word_));
}
ValueView ObjectView::get(const Field& f) const {
  require_scope("ObjectView::get");
  if (__builtin_expect(class_of(word_) != f.cls_, 0)) return get(f.name());  // another version
  return ValueView(slot_or_throw(word_, *f.info_)->load(std::memory_order_acquire));
}
ValueView ObjectView::get(std::string_view name) const {
  require_scope("ObjectView::get");
  return ValueView(slot_or_throw(word_, field_or_throw(word_, name))->load(std::memory_order_acquire));
}
Object ObjectView::promote() const { return Object(ValueView::promote()); }

std::size_t ListView::size() const {
  require_scope("ListView::size");
  return list_size(word_);
}
ValueView ListView::get(std::size_t i) const {
  require_scope("ListView::get");
  return ValueView(list_load_borrowed(word_, i));
}

}  // namespace colors
