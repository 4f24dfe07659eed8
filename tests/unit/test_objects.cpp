// Module tests of values, scalars, strings, binaries and the neutral hash/equality.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "colors/colors.hpp"
#include "objects.hpp"
#include "test_segment.hpp"

using namespace colors;

TEST_CASE("scalars round-trip through values") {
  test::TestSegment seg;
  REQUIRE(Value(42).as_int() == 42);
  REQUIRE(Value(-7LL).kind() == TypeKind::kInteger);
  const long long big = std::numeric_limits<long long>::max();
  Value b(big);
  REQUIRE(b.is_shared_object());  // boxed: wider than 60 bits
  REQUIRE(b.as_int() == big);
  REQUIRE(Value(std::numeric_limits<long long>::min()).as_int() == std::numeric_limits<long long>::min());
  REQUIRE(Value(2.5).as_float() == 2.5);
  REQUIRE(Value(true).as_bool());
  REQUIRE(Value().is_null());
  REQUIRE(Value().kind() == TypeKind::kNull);
  REQUIRE(Value("héllo").as_string() == "héllo");
  REQUIRE(Value("").as_string().empty());
  std::vector<std::uint8_t> bytes{0, 1, 2, 255};
  REQUIRE(new_binary(bytes).as_bytes() == bytes);
}

TEST_CASE("floats in the immediate range live in the slot, the others are boxed") {
  test::TestSegment seg;
  const double inf = std::numeric_limits<double>::infinity();
  const double in_range[] = {0.0, -0.0, 1.0, -1.0, 0.1, 2.5, 1e-30, -3.4e38, 6.8e38, std::ldexp(1.0, -126),
                             std::nextafter(std::ldexp(1.0, 129), 0.0), 3.141592653589793};
  const double boxed[] = {1e-300, 1e300, std::ldexp(1.0, 129), std::nextafter(std::ldexp(1.0, -126), 0.0),
                          std::numeric_limits<double>::denorm_min(), inf, -inf};
  std::size_t before = heap_stats().allocated_bytes_total;
  for (double d : in_range) {
    Value v(d);
    REQUIRE(v.kind() == TypeKind::kFloat);
    REQUIRE_FALSE(v.is_shared_object());
    REQUIRE(std::signbit(v.as_float()) == std::signbit(d));
    REQUIRE(v.as_float() == d);
    REQUIRE(class_of(v).kind() == TypeKind::kFloat);
  }
  REQUIRE(heap_stats().allocated_bytes_total == before);  // nothing allocated
  for (double d : boxed) {
    Value v(d);
    REQUIRE(v.kind() == TypeKind::kFloat);
    REQUIRE(v.is_shared_object());
    REQUIRE(v.as_float() == d);
  }
  Value nan(std::numeric_limits<double>::quiet_NaN());
  REQUIRE(nan.is_shared_object());
  REQUIRE(std::isnan(nan.as_float()));
  // Equality and hash do not depend on where the float lives.
  REQUIRE(Value(2.0) == Value(2));
  REQUIRE(Value(2.0).hash() == Value(2).hash());
  REQUIRE(Value(1e300) == Value(1e300));
  REQUIRE(Value(1e300).hash() == Value(1e300).hash());
  REQUIRE(Value(0.0) == Value(-0.0));
  REQUIRE(Value(0.0).hash() == Value(-0.0).hash());
  // In containers and fields, including as map keys.
  Map m = new_map();
  m.put(Value(0.1), Value(1e300));
  m.put(Value(1e300), Value(0.1));
  REQUIRE(m.at(Value(0.1)).as_float() == 1e300);
  REQUIRE(m.at(Value(1e300)).as_float() == 0.1);
  REQUIRE(m.at(Value(1e300)).as_float() == 0.1);
  List l = new_list();
  for (double d : in_range) l.append(Value(d));
  for (double d : boxed) l.append(Value(d));
  std::size_t k = 0;
  for (double d : in_range) REQUIRE(l.get(k++).as_float() == d);
  for (double d : boxed) REQUIRE(l.get(k++).as_float() == d);
  VerifyResult vr = verify_heap();
  INFO(vr.report);
  REQUIRE(vr.ok);
}

TEST_CASE("wrong-type reads throw TypeMismatchError") {
  test::TestSegment seg;
  REQUIRE_THROWS_AS(Value("x").as_int(), TypeMismatchError);
  REQUIRE_THROWS_AS(Value(1).as_string(), TypeMismatchError);
  REQUIRE_THROWS_AS(Value(1.5).as_bool(), TypeMismatchError);
  REQUIRE_THROWS_AS(List(Value(3)), TypeMismatchError);
}

TEST_CASE("invalid UTF-8 is refused with a clear error") {
  test::TestSegment seg;
  REQUIRE_THROWS_AS(Value(std::string_view("\xff\xfe")), InvalidArgumentError);
  REQUIRE_THROWS_AS(Value(std::string_view("\xc0\xaf")), InvalidArgumentError);  // overlong
  REQUIRE_THROWS_AS(Value(std::string_view("\xed\xa0\x80")), InvalidArgumentError);  // surrogate
  REQUIRE(Value(std::string_view("\xf0\x9f\x98\x80")).as_string() == "\xf0\x9f\x98\x80");
}

TEST_CASE("strings of every length up to 40 round-trip, and one bad byte anywhere is refused") {
  // new_string checks ASCII eight bytes at a time (the tail by one overlapping load) and copies up
  // to 16 bytes inline: every length crosses those boundaries, in both the rooted and the scoped
  // allocation, and so does a byte with its high bit set at every position.
  test::TestSegment seg;
  for (std::size_t n = 0; n <= 40; ++n) {
    std::string ascii;
    for (std::size_t i = 0; i < n; ++i) ascii.push_back(static_cast<char>('a' + (i * 7 + n) % 26));
    REQUIRE(Value(ascii).as_string() == ascii);
    REQUIRE(Value(ascii).hash() == Value(std::string(ascii)).hash());
    {
      ReadScope scope;
      REQUIRE(new_string_view(ascii).string_view() == ascii);
    }
    for (std::size_t at = 0; at < n; ++at) {
      std::string bad = ascii;
      bad[at] = static_cast<char>(0xff);  // never valid in UTF-8
      REQUIRE_THROWS_AS(Value(std::string_view(bad)), InvalidArgumentError);
      ReadScope scope;
      REQUIRE_THROWS_AS(new_string_view(bad), InvalidArgumentError);
    }
    if (n >= 2) {
      std::string two = ascii.substr(0, n - 2) + "\xc3\xa9";  // é as the last character: valid
      REQUIRE(Value(two).as_string() == two);
      ReadScope scope;
      REQUIRE(new_string_view(two).string_view() == two);
    }
  }
}

TEST_CASE("neutral equality and hash") {
  test::TestSegment seg;
  REQUIRE(Value("abc") == Value("abc"));
  REQUIRE(Value("abc").hash() == Value("abc").hash());
  REQUIRE_FALSE(Value("abc") == Value("abd"));
  REQUIRE(Value(1) == Value(1.0));  // integral floats equal integers, as in Python
  REQUIRE(Value(1).hash() == Value(1.0).hash());
  REQUIRE_FALSE(Value(1) == Value(1.5));
  REQUIRE_FALSE(Value(1) == Value(true));  // booleans are their own kind
  const long long big = (1LL << 62) + 1;
  REQUIRE(Value(big) == Value(big));
  REQUIRE_FALSE(Value(big) == Value(static_cast<double>(big)));  // 2^62+1 is not representable
  REQUIRE(new_binary({1, 2}) == new_binary({1, 2}));
  List a = new_list(), b = new_list();
  REQUIRE_FALSE(a == b);  // identity
  REQUIRE(a == Value(a));
  double nan = std::nan("");
  Value n(nan);
  REQUIRE(n == n);  // same object
  REQUIRE_FALSE(n == Value(nan));
}

// The string hash reads eight bytes per step and the tail with overlapping reads: every byte of
// every length must count, and equal bytes of different lengths (a zero byte appended) must not
// collide by construction.
TEST_CASE("a string's hash depends on every byte and on the length") {
  test::TestSegment seg;
  for (std::size_t n = 0; n <= 40; ++n) {
    std::string s(n, 'a');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7) % 26);
    const std::uint64_t h = Value(s).hash();
    REQUIRE(Value(std::string(s)).hash() == h);
    REQUIRE(new_binary(s.data(), s.size()).hash() == new_binary(s.data(), s.size()).hash());
    for (std::size_t i = 0; i < n; ++i) {
      std::string t = s;
      t[i] = static_cast<char>(t[i] == 'z' ? 'y' : t[i] + 1);
      INFO("length " << n << ", byte " << i);
      REQUIRE(Value(t).hash() != h);
    }
    std::string longer = s;
    longer.push_back('\0');
    INFO("length " << n << " and the same bytes with a zero byte appended");
    REQUIRE(Value(longer).hash() != h);
  }
}

TEST_CASE("values keep roots - copies and moves are independent") {
  test::TestSegment seg;
  Value s("shared");
  Value c = s;
  REQUIRE(c.same_object(s));
  Value m = std::move(c);
  REQUIRE(c.is_null());
  REQUIRE(m.as_string() == "shared");
  s = Value();
  REQUIRE(m.as_string() == "shared");
}

TEST_CASE("a string or binary whose length wraps the object's size is refused, the heap intact") {
  // 16 + n wrapped for n near SIZE_MAX: the object got a tiny block and a length beyond it (the
  // verifier: "binary does not fit its block"; n = 2^64 - 48 broke the heap walk and the freelist).
  test::TestSegment seg;
  for (std::size_t n : {SIZE_MAX, SIZE_MAX - 47, SIZE_MAX - 15, std::size_t{1} << 63})
    REQUIRE_THROWS_AS(new_binary(nullptr, n), OutOfMemoryError);
  const char c = 'x';
  REQUIRE_THROWS_AS(detail::new_string(seg.meta(), std::string_view(&c, SIZE_MAX - 15)), OutOfMemoryError);
  REQUIRE(new_binary(nullptr, 3).as_bytes().size() == 3);
  REQUIRE(verify_heap().ok);
}
