// The public read-scope API (colors.hpp, "read scopes"): ReadScope and the views whose reads
// borrow references instead of rooting them (read_scope.hpp has the protocol).
#include <memory>
#include <string>
#include <vector>

#include "classes.hpp"
#include "colors/colors.hpp"
#include "containers.hpp"
#include "objects.hpp"
#include "read_scope.hpp"
#include "segment.hpp"
#include "sorted_map.hpp"
#include "transaction.hpp"

namespace colors {

using namespace detail;

namespace {

// Every accessor's fast path is a few loads and compares with no stack frame: whatever throws
// (or takes a slower path) lives in the cold, out-of-line functions below, so the compiler need
// not save registers for it on every call. A traversal makes about a dozen accessor calls per node.

[[noreturn, gnu::noinline, gnu::cold]] void outside_scope(const char* what) {
  throw InvalidArgumentError(std::string(what) + " outside a read scope (open a colors::ReadScope on this thread first)");
}

// Every view accessor starts here: a view outside any scope could name freed memory.
inline void require_scope(const char* what) {
  if (__builtin_expect(!in_read_scope(), 0)) outside_scope(what);
}

[[noreturn, gnu::noinline, gnu::cold]] void stale_value() {
  throw NotAttachedError("a value of an ended attachment (detach, attach to another server, or a fork's child) used "
                         "for a view: take the object again from the current attachment");
}

[[noreturn, gnu::noinline, gnu::cold]] void null_view() {
  throw InvalidArgumentError("a null ObjectView (a null field's get_object(), or a default one) has no fields or class");
}

[[noreturn, gnu::noinline, gnu::cold]] void mismatch(Word w, const char* want) {
  throw TypeMismatchError(std::string("expected a shared ") + want + ", got " + std::string(type_name(kind_of(w))));
}

// The conversions of a word read in a scope, shared by ValueView's and ObjectView's accessors.
inline std::int64_t int_of(Word w) {
  if (is_small_int(w)) return small_value(w);
  if (kind_of(w) != TypeKind::kInteger) mismatch(w, "integer");
  return integer_value(w);
}
inline double float_of(Word w) {
  const TypeKind k = kind_of(w);
  if (k == TypeKind::kFloat) return float_value(w);
  if (k == TypeKind::kInteger) return static_cast<double>(integer_value(w));
  mismatch(w, "float");
}
inline bool bool_of(Word w) {
  if (!is_bool(w)) mismatch(w, "boolean");
  return bool_value(w);
}
inline std::string_view string_of(Word w) {
  if (kind_of(w) != TypeKind::kString) mismatch(w, "string");
  return string_value(w);
}

// A reference of class kind `kind`, or TypeMismatchError naming `want`.
inline void require_ref_of(Word w, TypeKind kind, const char* want) {
  if (__builtin_expect(!is_ref(w) || class_of(w)->kind != kind, 0)) mismatch(w, want);
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
  return int_of(word_);
}
double ValueView::as_float() const {
  require_scope("ValueView::as_float");
  return float_of(word_);
}
bool ValueView::as_bool() const {
  require_scope("ValueView::as_bool");
  return bool_of(word_);
}
std::string_view ValueView::string_view() const {
  require_scope("ValueView::string_view");
  return string_of(word_);
}
ObjectView ValueView::as_object() const {
  require_scope("ValueView::as_object");
  require_ref_of(word_, TypeKind::kObject, "object");
  return ObjectView(word_);
}
ListView ValueView::as_list() const {
  require_scope("ValueView::as_list");
  require_ref_of(word_, TypeKind::kList, "list");
  return ListView(word_);
}
SortedMapView ValueView::as_sorted_map() const {
  require_scope("ValueView::as_sorted_map");
  require_ref_of(word_, TypeKind::kSortedMap, "sorted map");
  return SortedMapView(word_);
}
Value ValueView::promote() const {
  require_scope("ValueView::promote");
  Rooted r = promote_borrowed(word_);
  const Word w = r.word();
  return Value::adopt_root(w, r.take());
}

ValueView::ValueView(const Value& v) : word_(v.raw()) {
  if (__builtin_expect(!v.is_current(), 0)) stale_value();
}

ValueView ValueView::integer(std::int64_t v) {
  if (fits_small(v)) return ValueView(make_small(v));
  require_scope("ValueView::integer (a boxed integer)");
  return ValueView(new_integer_scoped(current_meta(), v));
}
ValueView ValueView::floating(double v) {
  if (fits_small_float(v)) return ValueView(make_small_float(v));
  require_scope("ValueView::floating (a boxed float)");
  return ValueView(new_float_scoped(current_meta(), v));
}
ValueView ValueView::boolean(bool v) { return ValueView(make_bool(v)); }

ValueView new_string_view(std::string_view utf8) {
  require_scope("new_string_view");
  return ValueView(new_string_scoped(current_meta(), utf8));
}

namespace {

[[noreturn, gnu::noinline, gnu::cold]] void no_class() { throw InvalidArgumentError("new_object_view needs a class"); }

[[noreturn, gnu::noinline, gnu::cold]] void no_such_field(const Class& cls, const std::string& field) {
  throw KeyError("class " + cls.name() + " version " + std::to_string(cls.version()) + " has no field '" + field + "'");
}

}  // namespace

ObjectView new_object_view(const Class& cls, std::initializer_list<FieldValue> values) {
  require_scope("new_object_view");
  if (__builtin_expect(!cls.valid(), 0)) no_class();
  const ClassRecord* rec = cls.record();
  constexpr std::size_t kInline = 16;
  SlotInit inline_init[kInline];
  std::unique_ptr<SlotInit[]> more;  // only for more values than the stack array holds
  SlotInit* init = inline_init;
  if (__builtin_expect(values.size() > kInline, 0)) {
    more.reset(new SlotInit[values.size()]);
    init = more.get();
  }
  std::size_t n = 0;
  for (const FieldValue& fv : values) {
    const FieldInfo* f = fv.field.cls_ == rec ? fv.field.info_ : find_field(rec, fv.field.name());
    if (__builtin_expect(f == nullptr, 0)) no_such_field(cls, fv.field.name());
    check_field_type(*f, fv.value.raw());
    init[n++] = {f->slot, fv.value.raw()};
  }
  return ObjectView(new_user_object_scoped(current_meta(), const_cast<ClassRecord*>(rec), init, n));
}

namespace {

// The raw words of `views`, in `inline_words` when they fit, else in `more`.
template <std::size_t kInline>
Word* words_of(std::span<const ValueView> views, Word (&inline_words)[kInline], std::unique_ptr<Word[]>& more) {
  Word* words = inline_words;
  if (views.size() > kInline) {
    more.reset(new Word[views.size()]);
    words = more.get();
  }
  for (std::size_t i = 0; i < views.size(); ++i) words[i] = views[i].raw();
  return words;
}

}  // namespace

ListView new_list_view(std::span<const ValueView> items) {
  require_scope("new_list_view");
  Word inline_words[32];
  std::unique_ptr<Word[]> more;  // only for more items than the stack array holds
  const Word* words = words_of(items, inline_words, more);
  return ListView(new_list_scoped(current_meta(), words, items.size()));
}

ValueView new_set_view(std::span<const ValueView> keys) {
  require_scope("new_set_view");
  Word inline_keys[32];
  std::unique_ptr<Word[]> more;
  const Word* k = words_of(keys, inline_keys, more);
  return ValueView(new_hash_scoped(current_meta(), TypeKind::kSet, k, nullptr, keys.size()));
}

ValueView new_map_view(std::span<const ValueView> keys, std::span<const ValueView> values) {
  require_scope("new_map_view");
  if (keys.size() != values.size())
    throw InvalidArgumentError("new_map_view: " + std::to_string(keys.size()) + " keys and " +
                               std::to_string(values.size()) + " values");
  Word inline_keys[32], inline_values[32];
  std::unique_ptr<Word[]> more_keys, more_values;
  const Word* k = words_of(keys, inline_keys, more_keys);
  const Word* v = words_of(values, inline_values, more_values);
  return ValueView(new_hash_scoped(current_meta(), TypeKind::kMap, k, v, keys.size()));
}

void ObjectView::set(const Field& f, const ValueView& v) {
  require_scope("ObjectView::set");
  if (word_ == kNull) null_view();
  const FieldInfo& info = class_of(word_) == f.cls_ ? *f.info_ : field_or_throw(word_, f.name());
  check_field_type(info, v.raw());
  store_scope_reference(slot_or_throw(word_, info), v.raw());
}

Class ObjectView::cls() const {
  require_scope("ObjectView::cls");
  if (word_ == kNull) null_view();
  return Class(class_of(word_));
}
namespace {
// The object has another version than the field's: by name.
[[gnu::noinline]] ValueView get_by_name(const ObjectView& o, const Field& f) { return o.get(f.name()); }

// The word of field f (resolved as `cls`, `info`) of the object o. REQUIRES: inside a scope.
inline Word field_word(const ObjectView& o, const Field& f, const ClassRecord* cls, const FieldInfo* info) {
  if (__builtin_expect(o.raw() == kNull, 0)) null_view();
  if (__builtin_expect(class_of(o.raw()) != cls, 0)) return get_by_name(o, f).raw();  // another version
  return slot_or_throw(o.raw(), *info)->load(std::memory_order_acquire);
}
}  // namespace

ValueView ObjectView::get(const Field& f) const {
  require_scope("ObjectView::get");
  return ValueView(field_word(*this, f, f.cls_, f.info_));
}

std::int64_t ObjectView::get_int(const Field& f) const {
  require_scope("ObjectView::get_int");
  return int_of(field_word(*this, f, f.cls_, f.info_));
}
double ObjectView::get_float(const Field& f) const {
  require_scope("ObjectView::get_float");
  return float_of(field_word(*this, f, f.cls_, f.info_));
}
bool ObjectView::get_bool(const Field& f) const {
  require_scope("ObjectView::get_bool");
  return bool_of(field_word(*this, f, f.cls_, f.info_));
}
std::string_view ObjectView::get_string(const Field& f) const {
  require_scope("ObjectView::get_string");
  return string_of(field_word(*this, f, f.cls_, f.info_));
}
ObjectView ObjectView::get_object(const Field& f) const {
  require_scope("ObjectView::get_object");
  const Word w = field_word(*this, f, f.cls_, f.info_);
  if (w != kNull) require_ref_of(w, TypeKind::kObject, "object");
  return ObjectView(w);
}
ValueView ObjectView::get(std::string_view name) const {
  require_scope("ObjectView::get");
  if (word_ == kNull) null_view();
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
std::size_t ListView::read(std::size_t from, ValueView* out, std::size_t max, std::size_t* size) const {
  require_scope("ListView::read");
  std::size_t n = 0;
  return list_read_borrowed(word_, from, max, size != nullptr ? *size : n, [out](std::size_t i, Word w) { out[i].word_ = w; });
}

std::optional<ValueView> SortedMapView::get(const ValueView& key) const {
  require_scope("SortedMapView::get");
  Word v = kNull;
  if (!sorted_get_unlocked(word_, key.word_, &v)) return std::nullopt;
  return ValueView(v);
}
std::size_t SortedMapView::read(const Bound& lo, const Bound& hi, Entry* out, std::size_t max) const {
  require_scope("SortedMapView::read");
  auto bound = [](const Bound& b) { return SortedBound{b.present ? b.key.word_ : kNull, b.present, b.inclusive}; };
  return sorted_read_unlocked(
      word_, bound(lo), bound(hi), max,
      [](void* to, std::size_t i, Word k, Word v) { static_cast<Entry*>(to)[i] = {ValueView(k), ValueView(v)}; }, out);
}

}  // namespace colors
