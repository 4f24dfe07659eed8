// Random shared-object graphs with private checksums, for the collector's stress and fault tests
// (tests/stress/test_gc_stress.cpp, tests/integration/test_gc_faults.cpp).
//
// A graph is built through the public C++ API; its checksum folds every scalar it holds and its
// shape (nulls, sharing and cycles, as the DFS order of first visits) in a fixed depth-first order.
// A process computes the checksum when it builds or mutates a graph and recomputes it from the
// shared heap whenever it checks it: any object freed, reused or overwritten behind its back (a
// collector bug) changes the result or throws on a wrong kind. Trees and containers are also
// checksummed from the builder's private copy of the data, so even the first read-back is checked.
//
// Bytes allocated are counted approximately (the allocator's block sizes: a 24-byte head, 16-byte
// granules) in `alloc_bytes()`, per process.
#pragma once
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "colors/colors.hpp"

namespace colors::test::gcg {

// ---- hashing and randomness --------------------------------------------------------------------

inline std::uint64_t fmix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}
// Order-dependent fold.
inline std::uint64_t mix(std::uint64_t h, std::uint64_t v) { return fmix(h ^ fmix(v + 0x9e3779b97f4a7c15ULL)) + 0x632be59bd9b4e019ULL; }
inline std::uint64_t bytes_hash(const void* p, std::size_t n) {
  std::uint64_t h = 1469598103934665603ULL;
  auto* c = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ULL;
  return fmix(h ^ n);
}
inline std::uint64_t str_hash(std::string_view s) { return bytes_hash(s.data(), s.size()); }

enum Tag : std::uint64_t { kTNull = 11, kTInt, kTFloat, kTStr, kTBin, kTSeen, kTNode, kTList, kTMap, kTBool, kTOther };

inline std::uint64_t int_hash(std::int64_t v) { return mix(kTInt, static_cast<std::uint64_t>(v)); }
inline std::uint64_t float_hash(double d) {
  std::uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return mix(kTFloat, b);
}

struct Rng {
  std::uint64_t s;
  explicit Rng(std::uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ULL + 1) {}
  std::uint64_t next() {
    s += 0x9e3779b97f4a7c15ULL;
    return fmix(s);
  }
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }
  bool chance(unsigned percent) { return below(100) < percent; }
  std::int64_t small_int() { return static_cast<std::int64_t>(next() >> 8) - (std::int64_t{1} << 54); }
};

// ---- allocation accounting ---------------------------------------------------------------------

inline std::uint64_t& alloc_bytes() {
  static std::uint64_t n = 0;
  return n;
}
inline std::uint64_t block(std::uint64_t body) { return (24 + body + 15) / 16 * 16; }
inline std::uint64_t string_bytes(std::size_t n) { return block(16 + n); }
inline std::uint64_t table_bytes(std::size_t entries) {
  std::size_t cap = 8;
  while (cap < entries * 4 / 3 + 1) cap <<= 1;
  return block(16 + cap * 24);
}

// ---- the node class ----------------------------------------------------------------------------

inline constexpr int kExtraFields = 4;  // schema evolution adds/removes x0..x3 (integers)

struct Kit {
  Class node;
  Field f_left, f_right, f_key, f_weight, f_label, f_data;
  std::uint64_t node_bytes = 0;
  Kit() {
    node = define_class("gcstress.Node", {{"left", TypeKind::kAny, ""},
                                          {"right", TypeKind::kAny, ""},
                                          {"key", TypeKind::kInteger, ""},
                                          {"weight", TypeKind::kFloat, ""},
                                          {"label", TypeKind::kString, ""},
                                          {"data", TypeKind::kAny, ""}});
    f_left = Field(node, "left");
    f_right = Field(node, "right");
    f_key = Field(node, "key");
    f_weight = Field(node, "weight");
    f_label = Field(node, "label");
    f_data = Field(node, "data");
    node_bytes = block(8 + 6 * 8);
  }
};

inline const char* kExtraNames[kExtraFields] = {"x0", "x1", "x2", "x3"};

// Hash of one node's own scalars (not its children), read from the heap.
inline std::uint64_t node_scalars_hash(const Kit& k, const Object& o) {
  std::uint64_t h = mix(kTNode, int_hash(o.get(k.f_key).as_int()));
  h = mix(h, float_hash(o.get(k.f_weight).as_float()));
  h = mix(h, mix(kTStr, str_hash(o.get(k.f_label).string_view())));
  Value d = o.get(k.f_data);
  if (d.is_null()) {
    h = mix(h, kTNull);
  } else {
    auto b = d.as_bytes();
    h = mix(h, mix(kTBin, bytes_hash(b.data(), b.size())));
  }
  for (int i = 0; i < kExtraFields; ++i) {
    if (!o.has_field(kExtraNames[i])) continue;
    Value x = o.get(kExtraNames[i]);
    h = mix(h, mix(100 + i, x.is_null() ? kTNull : int_hash(x.as_int())));
  }
  return h;
}

// The same hash from the builder's data (a fresh node has no extra fields).
inline std::uint64_t node_scalars_hash(std::int64_t key, double weight, std::string_view label, const std::vector<std::uint8_t>* data) {
  std::uint64_t h = mix(kTNode, int_hash(key));
  h = mix(h, float_hash(weight));
  h = mix(h, mix(kTStr, str_hash(label)));
  h = mix(h, data == nullptr ? std::uint64_t{kTNull} : mix(kTBin, bytes_hash(data->data(), data->size())));
  return h;
}

inline std::uint64_t scalar_hash(const Value& v) {
  switch (v.kind()) {
    case TypeKind::kNull: return kTNull;
    case TypeKind::kInteger: return int_hash(v.as_int());
    case TypeKind::kFloat: return float_hash(v.as_float());
    case TypeKind::kBoolean: return mix(kTBool, v.as_bool());
    case TypeKind::kString: return mix(kTStr, str_hash(v.string_view()));
    case TypeKind::kBinary: {
      auto b = v.as_bytes();
      return mix(kTBin, bytes_hash(b.data(), b.size()));
    }
    default: throw std::runtime_error("unexpected kind in scalar position: " + v.repr());
  }
}

// Depth-first checksum of everything reachable from `root` (pre-order, left before right, list
// items in order; maps folded order-independently; an object seen before folds its visit index).
inline std::uint64_t checksum(const Kit& k, const Value& root, std::uint64_t* objects = nullptr) {
  std::uint64_t h = 0x243f6a8885a308d3ULL;
  std::unordered_map<std::uint64_t, std::uint64_t> seen;
  std::vector<Value> stack;
  stack.push_back(root);
  while (!stack.empty()) {
    Value v = std::move(stack.back());
    stack.pop_back();
    if (!v.is_shared_object()) {
      h = mix(h, scalar_hash(v));
      continue;
    }
    TypeKind kind = v.kind();
    if (kind != TypeKind::kObject && kind != TypeKind::kList && kind != TypeKind::kMap) {
      h = mix(h, scalar_hash(v));  // boxed scalars, strings, binaries: by value
      continue;
    }
    auto [it, fresh] = seen.emplace(v.raw(), seen.size());
    if (!fresh) {
      h = mix(h, mix(kTSeen, it->second));
      continue;
    }
    if (kind == TypeKind::kObject) {
      Object o(v);
      h = mix(h, node_scalars_hash(k, o));
      stack.push_back(o.get(k.f_right));
      stack.push_back(o.get(k.f_left));
    } else if (kind == TypeKind::kList) {
      List l(v);
      std::vector<Value> items = l.items();
      h = mix(h, mix(kTList, items.size()));
      for (auto i = items.rbegin(); i != items.rend(); ++i) stack.push_back(std::move(*i));
    } else {
      Map m(v);
      std::uint64_t acc = 0;
      auto items = m.items();
      for (auto& [key, val] : items) acc += mix(scalar_hash(key), scalar_hash(val));
      h = mix(h, mix(mix(kTMap, items.size()), acc));
    }
  }
  if (objects) *objects = seen.size();
  return h;
}

// ---- builders ----------------------------------------------------------------------------------

enum class Kind : int { kTree = 0, kRing, kDag, kIntList, kStrMap, kMixed, kCount };
inline const char* kind_name(Kind k) {
  static const char* names[] = {"tree", "ring", "dag", "int-list", "string-map", "mixed"};
  return names[static_cast<int>(k)];
}

struct Built {
  Value root;
  std::uint64_t sum = 0;    // checksum; for trees and containers computed from private data
  std::uint64_t bytes = 0;  // approximate size
};

// Heap bytes of a float value: none when it is stored in the slot (libshared/src/word.hpp:
// zero, or a magnitude in [2^-126, 2^129)), a 32-byte box otherwise.
inline std::uint64_t float_bytes(double d) {
  double a = std::fabs(d);
  return d == 0.0 || (a >= std::ldexp(1.0, -126) && a < std::ldexp(1.0, 129)) ? 0 : 32;
}

class Builder {
 public:
  Builder(Kit& k, Rng& r) : k_(k), r_(r) {}

  // A fresh node with random scalars; `*h` (if given) receives its scalar hash.
  Object node(std::uint64_t* h = nullptr, std::uint64_t* bytes = nullptr) {
    Object o = new_object(k_.node);
    std::int64_t key = r_.small_int();
    double weight = static_cast<double>(r_.below(1u << 30)) / 7.0;
    std::string label = "n" + std::to_string(r_.next() % 1000000) + std::string(r_.below(48), static_cast<char>('a' + r_.below(26)));
    o.set(k_.f_key, Value(static_cast<long long>(key)));
    o.set(k_.f_weight, Value(weight));
    o.set(k_.f_label, Value(label));
    std::uint64_t b = k_.node_bytes + string_bytes(label.size()) + float_bytes(weight) + (key >= -(1LL << 59) && key < (1LL << 59) ? 0 : 32);
    std::vector<std::uint8_t> data;
    bool has_data = r_.chance(30);
    if (has_data) {
      data.resize(r_.below(512));
      for (auto& c : data) c = static_cast<std::uint8_t>(r_.next());
      o.set(k_.f_data, new_binary(data));
      b += block(16 + data.size());
    }
    if (h) *h = node_scalars_hash(key, weight, label, has_data ? &data : nullptr);
    alloc_bytes() += b;
    if (bytes) *bytes += b;
    return o;
  }

  // A complete binary tree of `depth` levels; its checksum from the builder's data.
  Built tree(int depth) {
    Built b;
    std::uint64_t h = 0x243f6a8885a308d3ULL;
    b.root = tree_rec(depth, &h, &b.bytes);
    b.sum = h;
    return b;
  }

  // `n` nodes linked through `right` into a cycle, with random `left` chords across it.
  Built ring(int n) {
    Built b;
    std::vector<Object> nodes;
    nodes.reserve(n);
    for (int i = 0; i < n; ++i) nodes.push_back(node(nullptr, &b.bytes));
    for (int i = 0; i < n; ++i) {
      nodes[i].set(k_.f_right, nodes[(i + 1) % n]);
      if (r_.chance(25)) nodes[i].set(k_.f_left, nodes[r_.below(n)]);
    }
    b.root = nodes[0];
    b.sum = checksum(k_, b.root);
    return b;
  }

  // `levels` layers of `width` nodes; each node points at two random nodes of the next layer,
  // so most lower nodes are shared.
  Built dag(int levels, int width) {
    Built b;
    std::vector<Object> below_layer;
    for (int l = 0; l < levels; ++l) {
      std::vector<Object> layer;
      int w = l == levels - 1 ? 1 : width;
      for (int i = 0; i < w; ++i) {
        Object o = node(nullptr, &b.bytes);
        if (!below_layer.empty()) {
          o.set(k_.f_left, below_layer[r_.below(below_layer.size())]);
          o.set(k_.f_right, below_layer[r_.below(below_layer.size())]);
        }
        layer.push_back(std::move(o));
      }
      below_layer = std::move(layer);
    }
    b.root = below_layer[0];
    b.sum = checksum(k_, b.root);
    return b;
  }

  // A list of `n` integers.
  Built int_list(std::size_t n) {
    Built b;
    List l = new_list(n);
    std::uint64_t h = mix(0x243f6a8885a308d3ULL, mix(kTList, n));
    std::int64_t base = r_.small_int() / 4, step = static_cast<std::int64_t>(r_.below(1000)) - 500;
    for (std::size_t i = 0; i < n; ++i) {
      std::int64_t v = base + step * static_cast<std::int64_t>(i);
      l.append(Value(static_cast<long long>(v)));
      h = mix(h, int_hash(v));
    }
    b.bytes = block(16) + block(8 + 8 * n);
    alloc_bytes() += b.bytes;
    b.root = l;
    b.sum = h;
    return b;
  }

  // A map of `n` string keys to integers or strings.
  Built str_map(std::size_t n) {
    Built b;
    Map m = new_map(n);
    std::uint64_t acc = 0, tag = r_.next() % 100000;
    b.bytes = block(16) + table_bytes(n);
    for (std::size_t i = 0; i < n; ++i) {
      std::string key = "k" + std::to_string(tag) + "-" + std::to_string(i);
      b.bytes += string_bytes(key.size());
      if (r_.chance(50)) {
        std::int64_t v = r_.small_int();
        m.put(Value(key), Value(static_cast<long long>(v)));
        acc += mix(mix(kTStr, str_hash(key)), int_hash(v));
      } else {
        std::string v = "v" + std::to_string(r_.next() % 100000) + std::string(r_.below(24), 'q');
        m.put(Value(key), Value(v));
        acc += mix(mix(kTStr, str_hash(key)), mix(kTStr, str_hash(v)));
        b.bytes += string_bytes(v.size());
      }
    }
    alloc_bytes() += b.bytes;
    b.root = m;
    // Folded the way checksum() folds a map.
    b.sum = mix(0x243f6a8885a308d3ULL, mix(mix(kTMap, n), acc));
    return b;
  }

  // A list mixing small trees, a shared node referenced twice, a map and scalars.
  Built mixed() {
    Built b;
    List l = new_list(8);
    b.bytes += block(16) + block(8 + 8 * 8);
    alloc_bytes() += block(16) + block(8 + 8 * 8);
    Built t = tree(3);
    b.bytes += t.bytes;
    Object shared = node(nullptr, &b.bytes);
    l.append(t.root);
    l.append(shared);
    l.append(Value(static_cast<long long>(r_.small_int())));
    l.append(shared);
    Built m = str_map(16);
    b.bytes += m.bytes;
    l.append(m.root);
    l.append(Value("tail-" + std::to_string(r_.next())));
    b.bytes += string_bytes(25);
    alloc_bytes() += string_bytes(25);
    b.root = l;
    b.sum = checksum(k_, b.root);
    return b;
  }

  Built any(Kind kind, int scale) {
    switch (kind) {
      case Kind::kTree: return tree(5 + static_cast<int>(r_.below(scale)));
      case Kind::kRing: return ring(50 + static_cast<int>(r_.below(100 * scale)));
      case Kind::kDag: return dag(3 + static_cast<int>(r_.below(scale)), 10 + static_cast<int>(r_.below(20 * scale)));
      case Kind::kIntList: return int_list(10000);
      case Kind::kStrMap: return str_map(200 + r_.below(250 * scale));  // tables of at most 48 KiB
      default: return mixed();
    }
  }

 private:
  Value tree_rec(int depth, std::uint64_t* h, std::uint64_t* bytes) {
    if (depth == 0) {
      *h = mix(*h, kTNull);
      return Value();
    }
    std::uint64_t nh = 0;
    Object o = node(&nh, bytes);
    *h = mix(*h, nh);
    Value l = tree_rec(depth - 1, h, bytes);
    if (!l.is_null()) o.set(k_.f_left, l);
    Value r = tree_rec(depth - 1, h, bytes);
    if (!r.is_null()) o.set(k_.f_right, r);
    return o;
  }

  Kit& k_;
  Rng& r_;
};

// ---- a graph this process holds ----------------------------------------------------------------

struct Held {
  Value root;
  Kind kind = Kind::kTree;
  std::uint64_t sum = 0;
  std::uint64_t bytes = 0;
  bool frozen = false;  // shared with other processes: never mutated
  std::string origin;   // for mismatch reports
};

// Mutates a graph this process owns in place (the caller checked it just before) and returns its
// new checksum, read back from the heap.
inline std::uint64_t mutate(Kit& k, Rng& r, Held& g) {
  Builder b(k, r);
  switch (g.kind) {
    case Kind::kIntList: {
      List l(g.root);
      for (int i = 0; i < 20; ++i) {
        std::size_t n = l.size();
        std::uint64_t op = r.below(10);
        // Erase-then-append keeps the size (the storage never grows: a doubled 160 KiB array
        // can find no room in a fragmented 16 MiB heap).
        if (op < 6 && n > 0) {
          l.set(r.below(n), Value(static_cast<long long>(r.small_int())));
        } else if (n > 0) {
          l.erase(r.below(n));
          l.append(Value(static_cast<long long>(r.small_int())));
        }
      }
      break;
    }
    case Kind::kStrMap: {
      Map m(g.root);
      for (int i = 0; i < 20; ++i) {
        std::string key = "m" + std::to_string(r.below(500));
        if (r.chance(70)) {
          m.put(Value(key), Value(static_cast<long long>(r.small_int())));
          alloc_bytes() += string_bytes(key.size());
        } else {
          m.remove(Value(key));
        }
      }
      break;
    }
    case Kind::kMixed: {
      List l(g.root);
      if (r.chance(50)) {
        Built t = b.tree(2 + static_cast<int>(r.below(3)));
        l.set(0, t.root);
        g.bytes += t.bytes;
      } else {
        l.set(2, Value(static_cast<long long>(r.small_int())));
      }
      break;
    }
    default: {  // node graphs: walk a random path, then change one node
      Object cur(g.root);
      int steps = static_cast<int>(r.below(8));
      for (int i = 0; i < steps; ++i) {
        Value next = cur.get(r.chance(50) ? k.f_left : k.f_right);
        if (next.is_null() || next.kind() != TypeKind::kObject) break;
        cur = Object(next);
      }
      for (int n = 0; n < 3; ++n) {
        switch (r.below(7)) {
          case 0: cur.set(k.f_key, Value(static_cast<long long>(r.small_int()))); break;
          case 1: {
            std::string s = "mut" + std::to_string(r.next() % 100000);
            cur.set(k.f_label, Value(s));
            alloc_bytes() += string_bytes(s.size());
            break;
          }
          case 2: {
            std::vector<std::uint8_t> d(r.below(300), static_cast<std::uint8_t>(r.next()));
            cur.set(k.f_data, r.chance(20) ? Value() : new_binary(d));
            alloc_bytes() += block(16 + d.size());
            break;
          }
          case 3: {  // schema evolution on a live node
            const char* f = kExtraNames[r.below(kExtraFields)];
            if (!cur.has_field(f)) cur.add_field({f, TypeKind::kInteger, ""});
            cur.set(f, Value(static_cast<long long>(r.small_int())));
            alloc_bytes() += block(8 + 8 * 8);
            break;
          }
          case 4: {
            const char* f = kExtraNames[r.below(kExtraFields)];
            if (cur.has_field(f)) cur.remove_field(f);
            break;
          }
          case 5: {  // replace a subtree (the old one usually becomes garbage)
            Built t = b.tree(1 + static_cast<int>(r.below(4)));
            cur.set(k.f_left, t.root);
            g.bytes += t.bytes;
            break;
          }
          default:
            if (g.kind == Kind::kTree) {  // swap children
              Value l = cur.get(k.f_left), rr = cur.get(k.f_right);
              cur.set(k.f_left, rr);
              cur.set(k.f_right, l);
            } else {
              cur.set(k.f_weight, Value(static_cast<double>(r.below(1000)) / 3.0));
              alloc_bytes() += 32;
            }
        }
      }
    }
  }
  return checksum(k, g.root);
}

}  // namespace colors::test::gcg
