#include "sorted_map.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "barrier.hpp"
#include "colors/errors.hpp"
#include "container_lock.hpp"
#include "transaction.hpp"
#include "objects.hpp"

namespace colors::detail {

namespace {

// ---- keys ----

enum class KeyCategory { kNumeric, kString, kBinary };

const char* category_name(KeyCategory c) {
  switch (c) {
    case KeyCategory::kNumeric: return "numbers (integers and floats)";
    case KeyCategory::kString: return "strings";
    case KeyCategory::kBinary: return "binaries";
  }
  return "?";
}

// A short description of a key for error messages.
std::string describe(Word k) {
  char buf[64];
  switch (kind_of(k)) {
    case TypeKind::kNull: return "null";
    case TypeKind::kInteger: return "integer " + std::to_string(integer_value(k));
    case TypeKind::kFloat: std::snprintf(buf, sizeof buf, "float %.17g", float_value(k)); return buf;
    case TypeKind::kBoolean: return bool_value(k) ? "boolean true" : "boolean false";
    case TypeKind::kString: {
      std::string_view s = string_value(k);
      return "string \"" + std::string(s.substr(0, 40)) + (s.size() > 40 ? "...\"" : "\"");
    }
    case TypeKind::kBinary: return "binary of " + std::to_string(reinterpret_cast<BinaryObject*>(k)->length) + " bytes";
    default: return std::string(type_name(kind_of(k)));
  }
}

KeyCategory category(Word k) {
  switch (kind_of(k)) {
    case TypeKind::kInteger: return KeyCategory::kNumeric;
    case TypeKind::kFloat:
      if (std::isnan(float_value(k))) throw TypeMismatchError("NaN cannot be a sorted map key: it is not ordered");
      return KeyCategory::kNumeric;
    case TypeKind::kString: return KeyCategory::kString;
    case TypeKind::kBinary: return KeyCategory::kBinary;
    default:
      throw TypeMismatchError("a sorted map key must be an integer, a float, a string or a binary, not " + describe(k));
  }
}

int sign(std::int64_t a, std::int64_t b) { return a < b ? -1 : a > b ? 1 : 0; }

// Exact comparison of an integer with a non-NaN double (no rounding through either type).
int compare_int_float(std::int64_t i, double d) {
  if (d >= 9223372036854775808.0) return -1;
  if (d < -9223372036854775808.0) return 1;
  const double t = std::trunc(d);  // |t| < 2^63: exact as an int64
  const auto ti = static_cast<std::int64_t>(t);
  if (i != ti) return sign(i, ti);
  const double frac = d - t;
  return frac > 0 ? -1 : frac < 0 ? 1 : 0;
}

int compare_bytes(const void* a, std::size_t na, const void* b, std::size_t nb) {
  int c = std::memcmp(a, b, na < nb ? na : nb);
  if (c != 0) return c < 0 ? -1 : 1;
  return na < nb ? -1 : na > nb ? 1 : 0;
}

}  // namespace

void sorted_check_key(Word key) { (void)category(key); }

int sorted_compare_keys(Word a, Word b) {
  if (is_small_int(a) && is_small_int(b)) return sign(small_value(a), small_value(b));
  const TypeKind ka = kind_of(a), kb = kind_of(b);
  if (ka == TypeKind::kInteger && kb == TypeKind::kInteger) return sign(integer_value(a), integer_value(b));
  if (ka == TypeKind::kFloat && kb == TypeKind::kFloat) {
    const double x = float_value(a), y = float_value(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (ka == TypeKind::kInteger && kb == TypeKind::kFloat) return compare_int_float(integer_value(a), float_value(b));
  if (ka == TypeKind::kFloat && kb == TypeKind::kInteger) return -compare_int_float(integer_value(b), float_value(a));
  if (ka == TypeKind::kString) {
    std::string_view x = string_value(a), y = string_value(b);
    return compare_bytes(x.data(), x.size(), y.data(), y.size());
  }
  auto* x = reinterpret_cast<BinaryObject*>(a);
  auto* y = reinterpret_cast<BinaryObject*>(b);
  return compare_bytes(x->bytes, x->length, y->bytes, y->length);
}

int sorted_compare_checked(Word a, Word b) {
  const KeyCategory ca = category(a), cb = category(b);
  if (ca != cb)
    throw TypeMismatchError("sorted map keys " + describe(a) + " and " + describe(b) + " cannot be compared: " +
                            category_name(ca) + " and " + category_name(cb));
  return sorted_compare_keys(a, b);
}

namespace {

// The hot case inline: small integers.
inline int cmp(Word a, Word b) {
  if (is_small_int(a) && is_small_int(b)) return sign(small_value(a), small_value(b));
  return sorted_compare_keys(a, b);
}

// ---- nodes ----

SortedMapObject* as_map(Word w) { return reinterpret_cast<SortedMapObject*>(w); }

[[noreturn]] void corrupt(const char* what) {
  throw CorruptHeapError(std::string("sorted map: ") + what + " (the heap verifier reports the details)");
}

// A node as read under the lock, checked: n entries (leaf) or n children (internal).
struct Node {
  Word w;
  std::atomic<Word>* s;  // its slots
  std::size_t level;
  std::size_t n;
  bool leaf() const { return level == 0; }
  Word key(std::size_t i) const { return s[1 + 2 * i].load(std::memory_order_acquire); }    // leaf
  Word value(std::size_t i) const { return s[2 + 2 * i].load(std::memory_order_acquire); }  // leaf
  Word child(std::size_t i) const { return s[1 + 2 * i].load(std::memory_order_acquire); }  // internal
  Word sep(std::size_t i) const { return s[2 + 2 * i].load(std::memory_order_acquire); }    // internal
  // Any key of this node: fixes the map's key category.
  Word some_key() const { return leaf() ? key(0) : sep(0); }
};

// `expect_level` < 0: any level (the root).
Node load_node(Word w, long expect_level) {
  if (!is_ref(w) || class_of(w)->kind != TypeKind::kArray) corrupt("a node is not a slot array");
  auto* a = reinterpret_cast<ArrayObject*>(w);
  const std::size_t cap = a->capacity;
  if (cap < 2) corrupt("a node is too small");
  const Word tag = a->slots[0].load(std::memory_order_acquire);
  if (!is_small_int(tag) || small_value(tag) < 0 || small_value(tag) > 64) corrupt("a node has no level");
  const auto level = static_cast<std::size_t>(small_value(tag));
  if (expect_level >= 0 && level != static_cast<std::size_t>(expect_level)) corrupt("a node is at the wrong level");
  Node nd{w, a->slots, level, 0};
  if (level == 0) {
    if (cap % 2 != 1 || cap < 3 || cap > 1 + 2 * kLeafMax) corrupt("a leaf has a bad capacity");
    nd.n = (cap - 1) / 2;
  } else {
    if (cap % 2 != 0 || cap < 4 || cap > 2 * kFanMax) corrupt("an internal node has a bad capacity");
    nd.n = cap / 2;
  }
  return nd;
}

// Leaf: the first position whose key is >= key (> key when `upper`); *found when equal.
std::size_t leaf_search(const Node& nd, Word key, bool upper, bool* found = nullptr) {
  std::size_t lo = 0, hi = nd.n;
  bool eq = false;
  while (lo < hi) {
    std::size_t mid = (lo + hi) / 2;
    int c = cmp(nd.key(mid), key);
    if (c == 0) eq = true;
    if (c < 0 || (upper && c == 0)) lo = mid + 1;
    else hi = mid;
  }
  if (found != nullptr) *found = eq;
  return lo;
}

// Internal: the child that holds `key` (the number of separators <= key).
std::size_t child_index(const Node& nd, Word key) {
  std::size_t lo = 0, hi = nd.n - 1;
  while (lo < hi) {
    std::size_t mid = (lo + hi) / 2;
    if (cmp(nd.sep(mid), key) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// The contents of a node being rebuilt: leaf keys and values, or children and separators.
struct Content {
  std::size_t level = 0;
  std::vector<Word> a, b;
  bool leaf() const { return level == 0; }
  std::size_t count() const { return a.size(); }
  bool too_big() const { return count() > (leaf() ? kLeafMax : kFanMax); }
  bool too_small() const { return count() < (leaf() ? kLeafMin : kFanMin); }
};

Content read_content(const Node& nd) {
  Content c;
  c.level = nd.level;
  c.a.reserve(nd.n + 1);
  c.b.reserve(nd.n + 1);
  for (std::size_t i = 0; i < nd.n; ++i) {
    c.a.push_back(nd.s[1 + 2 * i].load(std::memory_order_acquire));
    if (nd.leaf() || i + 1 < nd.n) c.b.push_back(nd.s[2 + 2 * i].load(std::memory_order_acquire));
  }
  return c;
}

// A fresh node holding `c`: initialising stores into an unreachable array, rooted in `keep` until
// the operation has published it (or dropped it).
Word build(Metadata* m, const Content& c, std::vector<Rooted>* keep) {
  const std::size_t cap = c.leaf() ? 1 + 2 * c.a.size() : 2 * c.a.size();
  Rooted r = new_array(m, TypeKind::kArray, cap);
  auto* arr = reinterpret_cast<ArrayObject*>(r.word());
  init_ref(&arr->slots[0], make_small(static_cast<std::int64_t>(c.level)));
  for (std::size_t i = 0; i < c.a.size(); ++i) {
    init_ref(&arr->slots[1 + 2 * i], c.a[i]);
    if (i < c.b.size()) init_ref(&arr->slots[2 + 2 * i], c.b[i]);
  }
  Word w = r.word();
  keep->push_back(std::move(r));
  return w;
}

// Splits an overfull node's contents in two halves; returns the separator between them.
Word split(Content* left, Content* right) {
  const std::size_t h = left->a.size() / 2;
  right->level = left->level;
  right->a.assign(left->a.begin() + static_cast<long>(h), left->a.end());
  left->a.resize(h);
  if (left->leaf()) {
    right->b.assign(left->b.begin() + static_cast<long>(h), left->b.end());
    left->b.resize(h);
    return right->a[0];
  }
  // Separators h..: separator h-1 moves up.
  Word up = left->b[h - 1];
  right->b.assign(left->b.begin() + static_cast<long>(h), left->b.end());
  left->b.resize(h - 1);
  return up;
}

// One internal node on the way from the root to a leaf, and the child taken.
struct Step {
  Node node;
  std::size_t child;
};

// A path from the root, on the stack: a valid tree of 2^64 entries is at most 16 levels deep
// (kFanMin children per node), so more levels than kMaxDepth means a corrupt tree.
constexpr std::size_t kMaxDepth = 24;
struct Path {
  Step steps[kMaxDepth];
  std::size_t n = 0;
  void push_back(const Step& st) {
    if (n == kMaxDepth) corrupt("the tree is deeper than any valid one");
    steps[n++] = st;
  }
  void pop_back() { --n; }
  bool empty() const { return n == 0; }
  std::size_t size() const { return n; }
  Step& back() { return steps[n - 1]; }
  Step& operator[](std::size_t i) { return steps[i]; }
  const Step& operator[](std::size_t i) const { return steps[i]; }
};

struct Descent {
  Path path;  // internal nodes, root first
  Node leaf;
};

// REQUIRES: the lock, or a read scope (the unlocked reads below); a non-empty tree.
Descent descend(Word root, Word key) {
  Descent d;
  Node nd = load_node(root, -1);
  while (!nd.leaf()) {
    std::size_t c = child_index(nd, key);
    d.path.push_back({nd, c});
    nd = load_node(nd.child(c), static_cast<long>(nd.level) - 1);
  }
  d.leaf = nd;
  return d;
}

// The one publishing store of a structural change: `w` replaces the node at `depth` of the path
// (0 = the root) in its parent's child slot, or becomes the root.
void publish(SortedMapObject* mo, const Path& path, std::size_t depth, Word w) {
  if (depth == 0) store_ref_logged(&mo->root, w);
  else store_ref_logged(&path[depth - 1].node.s[1 + 2 * path[depth - 1].child], w);
}

// Throws TypeMismatchError unless `key` is a valid key of this map's category (that of any key in
// the tree; an empty map takes any valid key).
void check_key(SortedMapObject* mo, Word key) {
  const KeyCategory c = category(key);
  const Word root = mo->root.load(std::memory_order_acquire);
  if (root == kNull) return;
  const KeyCategory have = category(load_node(root, -1).some_key());
  if (c != have)
    throw TypeMismatchError("the keys of this sorted map are " + std::string(category_name(have)) + ", so " + describe(key) +
                            " cannot be compared with them");
}

void check_bound(SortedMapObject* mo, const SortedBound& b) {
  if (b.present) check_key(mo, b.key);
}

// Visits the leaves in order (reverse: backwards) from the leaf holding `key` (or the first/last
// leaf when !has_key); `f(leaf)` returns false to stop.
template <class F>
void walk_leaves(Word root, bool has_key, Word key, bool reverse, F&& f) {
  Path stack;
  Node nd = load_node(root, -1);
  auto down = [&](Node x, bool by_key) {
    while (!x.leaf()) {
      std::size_t c = by_key ? child_index(x, key) : (reverse ? x.n - 1 : 0);
      stack.push_back({x, c});
      x = load_node(x.child(c), static_cast<long>(x.level) - 1);
    }
    return x;
  };
  nd = down(nd, has_key);
  for (;;) {
    if (!f(nd)) return;
    // The next leaf: up to the nearest ancestor with a next child, then down its edge.
    while (!stack.empty() && (reverse ? stack.back().child == 0 : stack.back().child + 1 == stack.back().node.n))
      stack.pop_back();
    if (stack.empty()) return;
    Step& s = stack.back();
    s.child = reverse ? s.child - 1 : s.child + 1;
    nd = down(load_node(s.node.child(s.child), static_cast<long>(s.node.level) - 1), false);
  }
}

std::size_t count_entries(Word root) {
  if (root == kNull) return 0;
  std::size_t n = 0;
  walk_leaves(root, false, kNull, false, [&](const Node& leaf) {
    n += leaf.n;
    return true;
  });
  return n;
}

// A sorted map's lock for one operation. Taken over from a dead owner, the tree is whole (every
// change is one publishing store) but the size may lag by one operation: it is re-counted.
class MapLock {
 public:
  MapLock(SortedMapObject* mo, TxAccess a) : tx_(mo, a), guard_(&mo->lock) {
    for (;;) {
      if (guard_.recovered()) mo->size.store(count_entries(mo->root.load(std::memory_order_acquire)), std::memory_order_release);
      if (tx_.admitted()) return;
      guard_.relock_after([&] { tx_.wait(); });
    }
  }

 private:
  TxContainerScope tx_;  // first: a transaction takes the container's orec before its lock word
  ContainerGuard guard_;
};

bool find(SortedMapObject* mo, Word key, Node* leaf, std::size_t* pos) {
  check_key(mo, key);
  const Word root = mo->root.load(std::memory_order_acquire);
  if (root == kNull) return false;
  Descent d = descend(root, key);
  bool found = false;
  *pos = leaf_search(d.leaf, key, false, &found);
  *leaf = d.leaf;
  return found;
}

}  // namespace

std::size_t sorted_size(Word map) {
  SortedMapObject* mo = as_map(map);
  MapLock lock(mo, TxAccess::kRead);
  return mo->size.load(std::memory_order_acquire);
}

bool sorted_load(Word map, Word key, Rooted* value) {
  SortedMapObject* mo = as_map(map);
  MapLock lock(mo, TxAccess::kRead);
  Node leaf{};
  std::size_t pos = 0;
  if (!find(mo, key, &leaf, &pos)) return false;
  *value = root_locked(&leaf.s[2 + 2 * pos]);
  return true;
}

bool sorted_contains(Word map, Word key) {
  SortedMapObject* mo = as_map(map);
  MapLock lock(mo, TxAccess::kRead);
  Node leaf{};
  std::size_t pos = 0;
  return find(mo, key, &leaf, &pos);
}

bool sorted_put(Metadata* m, Word map, Word key, Word value, Rooted* old, bool replace) {
  SortedMapObject* mo = as_map(map);
  MapLock lock(mo, TxAccess::kWrite);
  check_key(mo, key);
  std::vector<Rooted> keep;
  const Word root = mo->root.load(std::memory_order_acquire);
  const std::size_t size = mo->size.load(std::memory_order_acquire);
  if (root == kNull) {
    Content c;
    c.a.push_back(key);
    c.b.push_back(value);
    store_ref_logged(&mo->root, build(m, c, &keep));
    store_count_logged(&mo->size, size + 1);
    return true;
  }
  Descent d = descend(root, key);
  bool found = false;
  const std::size_t pos = leaf_search(d.leaf, key, false, &found);
  if (found) {
    if (old != nullptr) *old = root_locked(&d.leaf.s[2 + 2 * pos]);
    // The one change to a published leaf: its value slot, in place.
    if (replace) store_ref_logged(&d.leaf.s[2 + 2 * pos], value);
    return false;
  }
  Content cur = read_content(d.leaf);
  cur.a.insert(cur.a.begin() + static_cast<long>(pos), key);
  cur.b.insert(cur.b.begin() + static_cast<long>(pos), value);
  // From the leaf up: a node that fits is published in place of the old one; an overfull one
  // splits, and its parent is rebuilt with one more child.
  for (std::size_t depth = d.path.size();; --depth) {
    if (!cur.too_big()) {
      publish(mo, d.path, depth, build(m, cur, &keep));
      break;
    }
    Content right;
    Word sep = split(&cur, &right);
    Word lw = build(m, cur, &keep), rw = build(m, right, &keep);
    Content parent;
    std::size_t ci = 0;
    if (depth == 0) {
      parent.level = cur.level + 1;
      parent.a.push_back(lw);
    } else {
      parent = read_content(d.path[depth - 1].node);
      ci = d.path[depth - 1].child;
      parent.a[ci] = lw;
    }
    parent.a.insert(parent.a.begin() + static_cast<long>(ci) + 1, rw);
    parent.b.insert(parent.b.begin() + static_cast<long>(ci), sep);
    cur = std::move(parent);
    if (depth == 0) {
      publish(mo, d.path, 0, build(m, cur, &keep));
      break;
    }
  }
  store_count_logged(&mo->size, size + 1);
  return true;
}

namespace {

// REQUIRES: the lock; a checked key.
bool remove_locked(Metadata* m, SortedMapObject* mo, Word key, Rooted* value) {
  const Word root = mo->root.load(std::memory_order_acquire);
  if (root == kNull) return false;
  const std::size_t size = mo->size.load(std::memory_order_acquire);
  Descent d = descend(root, key);
  bool found = false;
  const std::size_t pos = leaf_search(d.leaf, key, false, &found);
  if (!found) return false;
  if (value != nullptr) *value = root_locked(&d.leaf.s[2 + 2 * pos]);
  std::vector<Rooted> keep;
  Content cur = read_content(d.leaf);
  cur.a.erase(cur.a.begin() + static_cast<long>(pos));
  cur.b.erase(cur.b.begin() + static_cast<long>(pos));
  // From the leaf up: a node that is still big enough (or the root) is published in place of the
  // old one; an underfull one is merged with a sibling, or shares its entries with it, and its
  // parent is rebuilt.
  for (std::size_t depth = d.path.size();; --depth) {
    if (depth == 0) {
      Word w;
      if (cur.count() == 0) w = kNull;                    // the last entry went
      else if (!cur.leaf() && cur.count() == 1) w = cur.a[0];  // the root loses a level
      else w = build(m, cur, &keep);
      publish(mo, d.path, 0, w);
      break;
    }
    if (!cur.too_small()) {
      publish(mo, d.path, depth, build(m, cur, &keep));
      break;
    }
    const Step& up = d.path[depth - 1];
    Content parent = read_content(up.node);
    const std::size_t ci = up.child;
    const std::size_t si = ci > 0 ? ci - 1 : ci + 1;  // a parent has >= 2 children
    Content sib = read_content(load_node(parent.a[si], static_cast<long>(cur.level)));
    const std::size_t li = ci < si ? ci : si;  // the left one of the pair
    Content merged = ci < si ? std::move(cur) : std::move(sib);
    const Content& right = ci < si ? sib : cur;
    if (!merged.leaf()) merged.b.push_back(parent.b[li]);  // the parent's separator goes between
    merged.a.insert(merged.a.end(), right.a.begin(), right.a.end());
    merged.b.insert(merged.b.end(), right.b.begin(), right.b.end());
    if (!merged.too_big()) {
      parent.a[li] = build(m, merged, &keep);
      parent.a.erase(parent.a.begin() + static_cast<long>(li) + 1);
      parent.b.erase(parent.b.begin() + static_cast<long>(li));
    } else {
      Content r2;
      Word sep = split(&merged, &r2);
      parent.a[li] = build(m, merged, &keep);
      parent.a[li + 1] = build(m, r2, &keep);
      parent.b[li] = sep;
    }
    cur = std::move(parent);
  }
  store_count_logged(&mo->size, size - 1);
  return true;
}

}  // namespace

bool sorted_remove(Metadata* m, Word map, Word key, Rooted* value) {
  SortedMapObject* mo = as_map(map);
  MapLock lock(mo, TxAccess::kWrite);
  check_key(mo, key);
  return remove_locked(m, mo, key, value);
}

void sorted_clear(Word map) {
  SortedMapObject* mo = as_map(map);
  MapLock lock(mo, TxAccess::kWrite);
  store_ref_logged(&mo->root, kNull);
  store_count_logged(&mo->size, 0);
}

std::vector<std::pair<Rooted, Rooted>> sorted_range(Word map, const SortedBound& lo, const SortedBound& hi, bool reverse,
                                                    std::size_t limit, bool with_values) {
  SortedMapObject* mo = as_map(map);
  MapLock lock(mo, TxAccess::kRead);
  check_bound(mo, lo);
  check_bound(mo, hi);
  std::vector<std::pair<Rooted, Rooted>> out;
  const Word root = mo->root.load(std::memory_order_acquire);
  if (root == kNull || limit == 0) return out;
  out.reserve(std::min<std::size_t>(limit, 64));
  const SortedBound& start = reverse ? hi : lo;
  const SortedBound& end = reverse ? lo : hi;
  auto past_end = [&](Word k) {
    if (!end.present) return false;
    int c = cmp(k, end.key);
    if (reverse) c = -c;
    return c > 0 || (c == 0 && !end.inclusive);
  };
  bool first = true;
  walk_leaves(root, start.present, start.key, reverse, [&](const Node& leaf) {
    // Position range of this leaf to visit: forward [i, n), reverse [0, i) backwards.
    std::size_t i;
    if (first && start.present) {
      // Forward from the first key >= lo (> lo when exclusive); reverse from below the first key
      // > hi (>= hi when exclusive).
      i = leaf_search(leaf, start.key, reverse ? start.inclusive : !start.inclusive);
    } else {
      i = reverse ? leaf.n : 0;
    }
    first = false;
    for (;;) {
      if (reverse ? i == 0 : i >= leaf.n) return true;
      const std::size_t at = reverse ? i - 1 : i;
      const Word k = leaf.key(at);
      if (past_end(k)) return false;
      out.emplace_back(root_locked(&leaf.s[1 + 2 * at]), with_values ? root_locked(&leaf.s[2 + 2 * at]) : Rooted());
      if (out.size() >= limit) return false;
      i = reverse ? i - 1 : i + 1;
    }
  });
  return out;
}

std::size_t sorted_rank(Word map, Word key, bool inclusive) {
  SortedMapObject* mo = as_map(map);
  MapLock lock(mo, TxAccess::kRead);
  check_key(mo, key);
  const Word root = mo->root.load(std::memory_order_acquire);
  if (root == kNull) return 0;
  std::size_t n = 0;
  walk_leaves(root, false, kNull, false, [&](const Node& leaf) {
    const int c = cmp(leaf.key(leaf.n - 1), key);
    if (c < 0 || (inclusive && c == 0)) {
      n += leaf.n;
      return true;
    }
    n += leaf_search(leaf, key, inclusive);
    return false;
  });
  return n;
}

namespace {

// REQUIRES: the lock.
std::pair<Rooted, Rooted> entry_at_locked(SortedMapObject* mo, std::int64_t i) {
  const auto size = static_cast<std::int64_t>(mo->size.load(std::memory_order_acquire));
  const std::int64_t j = i < 0 ? i + size : i;
  if (j < 0 || j >= size)
    throw IndexError("sorted map index " + std::to_string(i) + " out of range (size " + std::to_string(size) + ")");
  auto left = static_cast<std::size_t>(j);
  std::pair<Rooted, Rooted> out;
  bool got = false;
  walk_leaves(mo->root.load(std::memory_order_acquire), false, kNull, false, [&](const Node& leaf) {
    if (left >= leaf.n) {
      left -= leaf.n;
      return true;
    }
    out = {root_locked(&leaf.s[1 + 2 * left]), root_locked(&leaf.s[2 + 2 * left])};
    got = true;
    return false;
  });
  if (!got) corrupt("the size exceeds the entries");
  return out;
}

}  // namespace

std::pair<Rooted, Rooted> sorted_entry_at(Word map, std::int64_t i) {
  SortedMapObject* mo = as_map(map);
  MapLock lock(mo, TxAccess::kRead);
  return entry_at_locked(mo, i);
}

std::pair<Rooted, Rooted> sorted_pop_at(Metadata* m, Word map, std::int64_t i) {
  SortedMapObject* mo = as_map(map);
  MapLock lock(mo, TxAccess::kWrite);
  std::pair<Rooted, Rooted> e = entry_at_locked(mo, i);
  remove_locked(m, mo, e.first.word(), nullptr);
  return e;
}

// ---- reads without the lock (views in a read scope) ----

namespace {

// A key's category against the tree's, for a read that holds no lock: `root` is the one root word
// the read uses throughout (the tree's category never changes while it holds a key).
void check_key_at(Word root, Word key) {
  const KeyCategory c = category(key);
  if (root == kNull) return;
  const KeyCategory have = category(load_node(root, -1).some_key());
  if (c != have)
    throw TypeMismatchError("the keys of this sorted map are " + std::string(category_name(have)) + ", so " + describe(key) +
                            " cannot be compared with them");
}

}  // namespace

bool sorted_get_unlocked(Word map, Word key, Word* value) {
  const Word root = as_map(map)->root.load(std::memory_order_acquire);
  check_key_at(root, key);
  if (root == kNull) return false;
  const Descent d = descend(root, key);
  bool found = false;
  const std::size_t pos = leaf_search(d.leaf, key, false, &found);
  if (found) *value = d.leaf.value(pos);
  return found;
}

std::size_t sorted_read_unlocked(Word map, const SortedBound& lo, const SortedBound& hi, std::size_t max,
                                 void (*emit)(void* to, std::size_t i, Word key, Word value), void* to) {
  const Word root = as_map(map)->root.load(std::memory_order_acquire);
  if (lo.present) check_key_at(root, lo.key);
  if (hi.present) check_key_at(root, hi.key);
  if (root == kNull || max == 0) return 0;
  std::size_t n = 0;
  Word last = kNull;
  bool first = true;
  walk_leaves(root, lo.present, lo.key, false, [&](const Node& leaf) {
    std::size_t i = first && lo.present ? leaf_search(leaf, lo.key, !lo.inclusive) : 0;
    first = false;
    for (; i < leaf.n; ++i) {
      const Word k = leaf.key(i);
      if (hi.present) {
        const int c = cmp(k, hi.key);
        if (c > 0 || (c == 0 && !hi.inclusive)) return false;
      }
      // The walk's leaves cover consecutive key ranges (gc/README.md): keys only ascend, unless
      // the tree is corrupt.
      if (n > 0 && cmp(last, k) >= 0) corrupt("keys out of order along the leaves");
      emit(to, n++, k, leaf.value(i));
      last = k;
      if (n == max) return false;
    }
    return true;
  });
  return n;
}

// ---- verification ----

namespace {

struct TreeChecker {
  const std::function<bool(Word)>& is_object;
  std::vector<std::string>* errors;
  std::string at;
  std::size_t entries = 0;
  bool have_category = false;
  KeyCategory cat = KeyCategory::kNumeric;

  bool fail(const std::string& e) {
    errors->push_back(at + ": " + e);
    return false;
  }
  bool key_ok(Word k) {
    if (is_ref(k) && !is_object(k)) return fail("a key is not a live object");
    KeyCategory c;
    try {
      c = category(k);
    } catch (const Error& e) {
      return fail(std::string("invalid key: ") + e.what());
    }
    if (have_category && c != cat) return fail("keys of two categories");
    have_category = true;
    cat = c;
    return true;
  }
  // Checks the subtree at w: level, shape, keys within [lo, hi) (kNull: unbounded), in order.
  bool check(Word w, long level, bool root, Word lo, Word hi) {
    if (!is_ref(w) || !is_object(w)) return fail("a node is not a live object");
    Node nd;
    try {
      nd = load_node(w, level);
    } catch (const Error& e) {
      return fail(e.what());
    }
    if (!root && (nd.leaf() ? nd.n < kLeafMin : nd.n < kFanMin)) return fail("an underfull node");
    auto in_bounds = [&](Word k) { return (lo == kNull || cmp(k, lo) >= 0) && (hi == kNull || cmp(k, hi) < 0); };
    if (nd.leaf()) {
      for (std::size_t i = 0; i < nd.n; ++i) {
        if (!key_ok(nd.key(i))) return false;
        if (!in_bounds(nd.key(i))) return fail("a key outside its separators");
        if (i > 0 && cmp(nd.key(i - 1), nd.key(i)) >= 0) return fail("leaf keys out of order");
      }
      entries += nd.n;
      return true;
    }
    for (std::size_t i = 0; i + 1 < nd.n; ++i) {
      if (!key_ok(nd.sep(i))) return false;
      if (!in_bounds(nd.sep(i))) return fail("a separator outside its parent's");
      if (i > 0 && cmp(nd.sep(i - 1), nd.sep(i)) >= 0) return fail("separators out of order");
    }
    for (std::size_t i = 0; i < nd.n; ++i) {
      if (!check(nd.child(i), static_cast<long>(nd.level) - 1, false, i == 0 ? lo : nd.sep(i - 1),
                 i + 1 == nd.n ? hi : nd.sep(i)))
        return false;
    }
    return true;
  }
};

}  // namespace

void sorted_verify(Word map, const std::function<bool(Word)>& is_object, std::vector<std::string>* errors) {
  SortedMapObject* mo = as_map(map);
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%lx", static_cast<unsigned long>(map));
  TreeChecker ck{is_object, errors, std::string("sorted map ") + buf};
  const Word root = mo->root.load(std::memory_order_acquire);
  if (root != kNull && !ck.check(root, -1, true, kNull, kNull)) return;
  if (mo->lock.load(std::memory_order_acquire) == 0 && ck.entries != mo->size.load(std::memory_order_acquire))
    ck.fail("size " + std::to_string(mo->size.load()) + " but " + std::to_string(ck.entries) + " entries");
}

}  // namespace colors::detail
