// Module tests of classes, versions and schema evolution (the paper's Employee example).
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <thread>
#include <chrono>

#include "colors/colors.hpp"
#include "classes.hpp"
#include "layout.hpp"
#include "objects.hpp"
#include "test_segment.hpp"

using namespace colors;

static std::vector<FieldSpec> employee_fields() {
  return {{"name", TypeKind::kString, ""}, {"salary", TypeKind::kFloat, ""}};
}

TEST_CASE("define_class finds the exact version by name and field set") {
  test::TestSegment seg;
  Class a = define_class("demo.Employee", employee_fields());
  Class b = define_class("demo.Employee", {{"salary", TypeKind::kFloat, ""}, {"name", TypeKind::kString, ""}});
  REQUIRE(a == b);  // same set, any order
  REQUIRE(a.version() == 1);
  Class c = define_class("demo.Employee", {{"name", TypeKind::kString, ""}, {"salary", TypeKind::kFloat, ""},
                                           {"manager", TypeKind::kObject, "demo.Employee"}});
  REQUIRE(c.version() == 2);
  REQUIRE(c.versions().size() == 2);
  REQUIRE(class_versions("demo.Employee").size() == 2);
  Class d = define_class("demo.Employee", {{"name", TypeKind::kInteger, ""}, {"salary", TypeKind::kFloat, ""}});
  REQUIRE(d.version() == 3);  // a type change is another version
  REQUIRE(a.name() == "demo.Employee");
  auto f = c.fields();
  REQUIRE(f.size() == 3);
  REQUIRE(f[2].class_name == "demo.Employee");
}

TEST_CASE("bad class definitions are refused") {
  test::TestSegment seg;
  REQUIRE_THROWS_AS(define_class("", {}), InvalidArgumentError);
  REQUIRE_THROWS_AS(define_class("x", {{"a", TypeKind::kInteger, ""}, {"a", TypeKind::kFloat, ""}}), InvalidArgumentError);
  REQUIRE_THROWS_AS(define_class("x", {{"a", TypeKind::kArray, ""}}), InvalidArgumentError);
  REQUIRE_THROWS_AS(define_class(std::string(2000, 'n'), {}), InvalidArgumentError);
}

TEST_CASE("fields are typed - mismatches and unknown fields throw") {
  test::TestSegment seg;
  Object e = new_object(define_class("demo.Employee", employee_fields()));
  e.set("name", "Smith");
  e.set("salary", 100.0);
  REQUIRE(e.get("name").as_string() == "Smith");
  REQUIRE(e.get("salary").as_float() == 100.0);
  REQUIRE_THROWS_AS(e.set("salary", "lots"), TypeMismatchError);
  REQUIRE_THROWS_AS(e.get("state"), KeyError);
  e.set("name", Value());  // null fits every field
  REQUIRE(e.get("name").is_null());
  Field salary(e.cls(), "salary");
  e.set(salary, 120.0);
  REQUIRE(e.get(salary).as_float() == 120.0);
}

TEST_CASE("adding and removing fields evolves objects in place (section 3.1.2)") {
  test::TestSegment seg;
  Class v1 = define_class("demo.Employee", employee_fields());
  Object e = new_object(v1);
  Object old = new_object(v1);
  old.set("name", "Jones");
  e.set("name", "Smith");
  e.set("salary", 100.0);
  Value same = e;
  Field salary(v1, "salary");

  e.add_field({"state", TypeKind::kString, ""});  // Python: e.state = 'NY'
  e.set("state", "NY");
  REQUIRE(e.same_object(same));  // not moved
  REQUIRE(e.cls().version() == 2);
  REQUIRE(e.get("state").as_string() == "NY");
  REQUIRE(e.get("name").as_string() == "Smith");
  REQUIRE(e.get(salary).as_float() == 100.0);  // stale Field falls back to the name
  REQUIRE(old.cls() == v1);  // other objects keep their version
  REQUIRE_FALSE(old.has_field("state"));

  // Many more fields than the object was allocated with: they live in its extension.
  for (int i = 0; i < 20; ++i) {
    e.add_field({"f" + std::to_string(i), TypeKind::kInteger, ""});
    e.set("f" + std::to_string(i), Value(i));
  }
  for (int i = 0; i < 20; ++i) REQUIRE(e.get("f" + std::to_string(i)).as_int() == i);
  REQUIRE(e.get("state").as_string() == "NY");

  e.remove_field("salary");  // Python: del e.salary
  REQUIRE_FALSE(e.has_field("salary"));
  REQUIRE_THROWS_AS(e.get("salary"), KeyError);
  REQUIRE(e.get("name").as_string() == "Smith");
  REQUIRE_THROWS_AS(e.remove_field("salary"), KeyError);
  // Re-adding starts out empty, not with the old value.
  e.add_field({"salary", TypeKind::kFloat, ""});
  REQUIRE(e.get("salary").is_null());

  // A second object taking the same evolution path reuses the versions.
  Object g = new_object(v1);
  g.add_field({"state", TypeKind::kString, ""});
  REQUIRE(g.cls().version() == 2);
  auto v = verify_heap();
  INFO(v.report);
  REQUIRE(v.ok);
}

TEST_CASE("set_fields stores all fields or none, and check stores nothing") {
  test::TestSegment seg;
  Object e = new_object(define_class("demo.Employee", employee_fields()));
  e.set("name", "Smith");
  e.set("salary", 100.0);
  REQUIRE_THROWS_AS(e.check("salary", Value("lots")), TypeMismatchError);
  REQUIRE_THROWS_AS(e.check("age", Value(3)), KeyError);
  e.check("salary", Value(200.0));
  REQUIRE(e.get("salary").as_float() == 100.0);

  // The bad value comes last: the fields before it keep their values.
  using Fields = std::vector<std::pair<std::string_view, Value>>;
  REQUIRE_THROWS_AS(e.set_fields(Fields{{"name", Value("Jones")}, {"salary", Value("lots")}}), TypeMismatchError);
  REQUIRE_THROWS_AS(e.set_fields(Fields{{"name", Value("Jones")}, {"age", Value(3)}}), KeyError);
  REQUIRE(e.get("name").as_string() == "Smith");
  REQUIRE(e.get("salary").as_float() == 100.0);

  e.set_fields(Fields{{"name", Value("Jones")}, {"salary", Value(250.0)}});
  REQUIRE(e.get("name").as_string() == "Jones");
  REQUIRE(e.get("salary").as_float() == 250.0);
}

TEST_CASE("reflection: classes of builtins and of user objects") {
  test::TestSegment seg;
  REQUIRE(class_of(Value(3)).name() == "integer");
  REQUIRE(class_of(Value("s")).kind() == TypeKind::kString);
  REQUIRE(class_of(new_map()).name() == "map");
  REQUIRE_THROWS_AS(class_of(Value()), TypeMismatchError);
  Object e = new_object(define_class("demo.Employee", employee_fields()));
  REQUIRE(class_of(e).name() == "demo.Employee");
  REQUIRE(class_of(e).fields()[1].type == TypeKind::kFloat);
}

// A removal whose object another thread or process evolved between the removal's choice of the
// new version and its switch: the switch must start over from the object's current class, not
// undo the other change. Here the test holds classes_lock while the removal of "x" waits for it,
// and meanwhile removes "z" itself (the class word switch a racing remove_field makes).
TEST_CASE("a field removal racing another evolution of the same object keeps both changes") {
  test::TestSegment seg;
  detail::Metadata* m = seg.meta();
  Class c = define_class("t.RacingRemoval", {{"x", TypeKind::kInteger, ""}, {"y", TypeKind::kInteger, ""}, {"z", TypeKind::kInteger, ""}});
  Object o = new_object(c);
  const detail::Word w = o.raw();
  detail::ClassRecord* without_z = detail::version_without_field(m, detail::class_of(w), "z");
  m->classes_lock.lock();
  std::thread remover([&] { detail::remove_field(m, w, "x"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // it now waits for classes_lock
  reinterpret_cast<detail::ObjectHead*>(w)->cls.store(without_z, std::memory_order_release);
  m->classes_lock.unlock();
  remover.join();
  CHECK_FALSE(o.has_field("x"));
  CHECK_FALSE(o.has_field("z"));  // the racing removal was undone before
  CHECK(o.has_field("y"));
}

// An evolution that outgrows an object's extension must not lose a store racing it into a field
// that already lived there: the writer increments `count`, kept in the extension, for as long as
// another thread adds fields to the same object, growing the extension several times a round.
TEST_CASE("stores into an extension field racing the growth of the extension are all kept") {
  test::TestSegment seg(8 << 20, 64 << 20);  // 300 versions of up to 305 fields: 1.9 MB of classes
  Class c = define_class("t.GrowingExtension", {{"a", TypeKind::kInteger, ""}});
  constexpr int kRounds = 100, kAdds = 300;
  int lost_rounds = 0;
  std::int64_t increments = 0;
  for (int round = 0; round < kRounds; ++round) {
    Object o = new_object(c);
    for (int i = 0; i < 4; ++i) o.add_field({"p" + std::to_string(i), TypeKind::kInteger, ""});
    o.add_field({"count", TypeKind::kInteger, ""});
    o.set("count", Value(std::int64_t{0}));
    REQUIRE(detail::find_field(detail::class_of(o.raw()), "count")->slot >= detail::inline_slots(o.raw()));  // in the extension
    std::atomic<bool> writing{false}, done{false};
    std::thread evolver([&] {
      while (!writing.load(std::memory_order_acquire)) {}
      for (int i = 0; i < kAdds; ++i) o.add_field({"f" + std::to_string(i), TypeKind::kInteger, ""});
      done.store(true, std::memory_order_release);
    });
    std::int64_t n = 0;
    writing.store(true, std::memory_order_release);
    while (!done.load(std::memory_order_acquire)) {
      o.set("count", Value(o.get("count").as_int() + 1));
      ++n;
    }
    evolver.join();
    REQUIRE(o.has_field("f" + std::to_string(kAdds - 1)));
    if (o.get("count").as_int() != n) ++lost_rounds;
    increments += n;
  }
  INFO(increments << " increments in " << kRounds << " rounds");
  CHECK(lost_rounds == 0);
}

// A program storing ever new attribute names makes a version per name; past kMaxClassVersions the
// addition fails, naming the class, with the object and every other class unchanged.
// A writer that resolved a field's slot before the field was deleted (a plain store, or a
// transaction: neither waits for evolutions) stores through that slot after the deletion and after
// another field was added: the other field must keep its value. The test takes the stale writer's
// steps in that order, for a field in the inline slots and for one in the extension.
TEST_CASE("a store through a slot resolved before its field was deleted never lands in another field") {
  test::TestSegment seg;
  for (const bool inline_field : {true, false}) {
    INFO((inline_field ? "inline" : "in the extension"));
    std::vector<FieldSpec> fields{{"a", TypeKind::kInteger, ""}};
    if (inline_field) fields.push_back({"f", TypeKind::kInteger, ""});
    Object o = new_object(define_class(inline_field ? "t.StaleInline" : "t.StaleExtension", fields));
    if (!inline_field) {
      for (int i = 0; detail::class_of(o.raw())->slot_count < detail::inline_slots(o.raw()); ++i)
        o.add_field({"p" + std::to_string(i), TypeKind::kInteger, ""});  // fill the inline room
      o.add_field({"f", TypeKind::kInteger, ""});
    }
    auto slot_of = [&](const char* name) { return detail::field_slot(o.raw(), *detail::find_field(detail::class_of(o.raw()), name)); };
    std::atomic<detail::Word>* stale = slot_of("f");
    REQUIRE((detail::find_field(detail::class_of(o.raw()), "f")->slot < detail::inline_slots(o.raw())) == inline_field);

    o.remove_field("f");
    o.add_field({"g", TypeKind::kInteger, ""});
    o.set("g", Value(std::int64_t{1}));
    detail::store_ref(stale, detail::make_small(99));  // the stale writer's store of f
    CHECK(o.get("g").as_int() == 1);
    CHECK(o.get("a").is_null());

    // Added back with its type, f takes its own slot again and starts out null.
    o.add_field({"f", TypeKind::kInteger, ""});
    CHECK(slot_of("f") == stale);
    CHECK(o.get("f").is_null());
    // Added back with another type, it takes a new slot: a stale integer store cannot reach it.
    o.remove_field("f");
    o.add_field({"f", TypeKind::kString, ""});
    CHECK(slot_of("f") != stale);
    detail::store_ref(stale, detail::make_small(7));
    CHECK(o.get("f").is_null());
    CHECK(o.get("g").as_int() == 1);

    std::vector<std::string> names;
    for (const FieldDesc& d : o.cls().fields()) names.push_back(d.name);
    if (inline_field) CHECK(names == std::vector<std::string>{"a", "g", "f"});  // live fields only, in entry order
  }
  auto v = verify_heap();
  INFO(v.report);
  REQUIRE(v.ok);
}

// The heap verifier checks class records too: a version whose two entries share a slot (which
// would let a store to one field land in the other), unknown flags, or a slot beyond the class's
// slot count is reported, naming the class and the field.
TEST_CASE("the heap verifier reports a class version whose entries break the one-entry-per-slot rule") {
  test::TestSegment seg;
  Object o = new_object(define_class("t.Verified", {{"a", TypeKind::kInteger, ""}, {"b", TypeKind::kString, ""}}));
  o.remove_field("b");
  auto* c = const_cast<detail::ClassRecord*>(detail::class_of(o.raw()));
  REQUIRE(verify_heap().ok);
  auto reported = [](const std::string& what) {
    auto v = verify_heap();
    INFO(v.report);
    return !v.ok && v.report.find("t.Verified version 2 field 'b'") != std::string::npos &&
           v.report.find(what) != std::string::npos;
  };
  detail::FieldInfo& b = c->fields[1];
  const detail::FieldInfo saved = b;
  b.slot = c->fields[0].slot;
  CHECK(reported("is held by another entry too"));
  b = saved;
  b.flags = 0x80;
  CHECK(reported("unknown flags"));
  b = saved;
  b.slot = c->slot_count;
  CHECK(reported("is not below the class's"));
  b = saved;
  CHECK(verify_heap().ok);
}

// Every layout is a class version kept for the heap's lifetime. With deleted fields keeping their
// entries, an object's layouts are its fields' order of first addition and which of them are
// live: at most 2^0 + ... + 2^5 = 63 for 5 attributes, however often they come and go, each
// attribute in one slot (without that, layouts multiply with the order of changes, thousands of
// them, then kMaxClassVersions, and slots grow without bound).
TEST_CASE("setting and deleting a few attributes at random makes few class versions and keeps every value") {
  test::TestSegment seg;
  Object o = new_object(define_class("t.Toggled", {{"a", TypeKind::kInteger, ""}}));
  std::mt19937 rng(42);
  std::map<std::string, std::int64_t> model;
  for (int op = 0; op < 20000; ++op) {
    const std::string name = "p" + std::to_string(rng() % 5);
    if (model.count(name) != 0) {
      o.remove_field(name);
      model.erase(name);
    } else {
      o.add_field({name, TypeKind::kInteger, ""});
      o.set(name, Value(std::int64_t{op}));
      model[name] = op;
    }
    REQUIRE(o.cls().fields().size() == model.size() + 1);
    for (const auto& [n, v] : model) REQUIRE(o.get(n).as_int() == v);
  }
  CHECK(o.cls().versions().size() <= 63);
  CHECK(detail::class_of(o.raw())->slot_count == 6);  // each attribute keeps one slot
}

TEST_CASE("an object stops at kMaxDeletedFields deleted fields for new names only, with a clear error") {
  test::TestSegment seg;
  Object o = new_object(define_class("t.DeletedKeys", {{"a", TypeKind::kInteger, ""}}));
  o.set("a", Value(std::int64_t{7}));
  for (std::uint32_t i = 0; i < kMaxDeletedFields; ++i) {
    o.add_field({"k" + std::to_string(i), TypeKind::kInteger, ""});
    o.remove_field("k" + std::to_string(i));
  }
  const detail::ClassRecord* before = detail::class_of(o.raw());
  std::string error;
  try {
    o.add_field({"new", TypeKind::kInteger, ""});
  } catch (const OutOfMemoryError& e) {
    error = e.what();
  }
  CHECK(error.find("t.DeletedKeys") != std::string::npos);
  CHECK(error.find("map field") != std::string::npos);
  CHECK(detail::class_of(o.raw()) == before);
  CHECK_FALSE(o.has_field("new"));
  CHECK(o.get("a").as_int() == 7);
  o.add_field({"k5", TypeKind::kInteger, ""});  // a deleted name comes back
  o.set("k5", Value(std::int64_t{5}));
  CHECK(o.get("k5").as_int() == 5);
  // Other objects of the class start from its dense first version.
  Object fresh = new_object(define_class("t.DeletedKeys", {{"a", TypeKind::kInteger, ""}}));
  fresh.add_field({"new", TypeKind::kInteger, ""});
  CHECK(fresh.has_field("new"));
}

// Versions are kept for the heap's lifetime and each repeats its class's entries, so one class
// toggling fields of long names could fill the classes space every client shares long before
// kMaxClassVersions. Its versions may take 1/kClassSpaceShare of the space; past that a schema
// change fails with a clear error and nothing changed, and other classes and names still fit.
TEST_CASE("one class's versions stop at their share of the classes space, with room left for others") {
  test::TestSegment seg(8 << 20, 4 << 20);  // a share of 512 KiB
  Object o = new_object(define_class("t.LongNames", {{"a", TypeKind::kInteger, ""}}));
  std::vector<std::string> names;
  for (int i = 0; i < 64; ++i) names.push_back("n" + std::to_string(i) + std::string(1000, 'x'));
  std::mt19937 rng(3);
  std::string error;
  int ops = 0;
  for (;; ++ops) {
    REQUIRE(ops < 100000);
    const std::string& n = names[rng() % names.size()];
    const detail::ClassRecord* before = detail::class_of(o.raw());
    try {
      if (o.has_field(n)) {
        o.remove_field(n);
      } else {
        o.add_field({n, TypeKind::kInteger, ""});
      }
    } catch (const OutOfMemoryError& e) {
      error = e.what();
      CHECK(detail::class_of(o.raw()) == before);
      break;
    }
  }
  INFO(ops << " changes, " << o.cls().versions().size() << " versions");
  CHECK(o.cls().versions().size() < kMaxClassVersions);
  CHECK(error.find("t.LongNames") != std::string::npos);
  CHECK(error.find("map field") != std::string::npos);
  // The space left serves other classes, names, repositories.
  Object other = new_object(define_class("t.Other", {{std::string(1000, 'o'), TypeKind::kString, ""}}));
  other.add_field({"more", TypeKind::kInteger, ""});
  Repository r = repository("after-the-share");
  r.set(other);
  CHECK(r.get().same_object(other));
}

// Each step of a Gray code over 13 attributes sets or deletes one of them and reaches a layout
// never seen before (which attributes were ever added, and which are live), so every step makes
// one version, until the class has kMaxClassVersions.
TEST_CASE("a class stops at kMaxClassVersions versions with a clear error and nothing changed") {
  test::TestSegment seg(8 << 20, 64 << 20);  // the classes space of a default server
  Class c = define_class("t.DynamicKeys", {{"a", TypeKind::kInteger, ""}});
  Object o = new_object(c);
  o.set("a", Value(std::int64_t{7}));
  std::uint32_t steps = 0, live = 0, prev = 0;
  std::string error;
  for (std::uint32_t i = 1;; ++i, ++steps) {
    REQUIRE(steps < kMaxClassVersions);
    const std::uint32_t next = i ^ (i >> 1);
    const std::string key = "k" + std::to_string(__builtin_ctz(next ^ live));
    try {
      if ((next & ~live) != 0) {
        o.add_field({key, TypeKind::kInteger, ""});
      } else {
        o.remove_field(key);
      }
    } catch (const OutOfMemoryError& e) {
      error = e.what();
      break;
    }
    prev = live;
    live = next;
  }
  CHECK(steps == kMaxClassVersions - 1);  // the first version, then one per step
  CHECK(error.find("t.DynamicKeys") != std::string::npos);
  CHECK(error.find("map field") != std::string::npos);
  CHECK(o.cls().versions().size() == kMaxClassVersions);
  CHECK(o.get("a").as_int() == 7);
  for (std::uint32_t b = 0; b < 13; ++b) CHECK(o.has_field("k" + std::to_string(b)) == ((live >> b & 1) != 0));
  // Existing layouts stay usable; other classes are unaffected.
  const std::string undo = "k" + std::to_string(__builtin_ctz(live ^ prev));  // back to the layout before
  if ((prev & ~live) != 0) {
    o.add_field({undo, TypeKind::kInteger, ""});
    CHECK(o.has_field(undo));
  } else {
    o.remove_field(undo);
    CHECK_FALSE(o.has_field(undo));
  }
  CHECK(o.cls().versions().size() == kMaxClassVersions);
  CHECK(define_class("t.Other", {{"b", TypeKind::kString, ""}}).version() == 1);
}
