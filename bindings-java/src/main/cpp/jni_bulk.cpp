// Bulk copies between private Java object graphs and the shared heap, one native call each way
// (org.colors.Bulk; Java halves: BulkWriter encodes a private graph, BulkReader builds private
// instances from a flattened shared graph). The natives are resolved by their exported JNI names.
//
// ---- private -> shared: Java_org_colors_Bulk_toShared ----
// Input (made by org.colors.BulkWriter): the private graph's containers and user objects numbered
// 0..n-1 in the order Java met them (object 0 is the root), each a pair in `objs`:
// (class index >= 0, field count) for a user object, (kList, length) for a list, (kSet, size)
// for a set, (kMap or kSortedMap, 2 * size) for a map or a sorted map, whose keys and values
// alternate. Their values follow
// one another in (tags, vals): object 0's fields/elements, then object 1's, ... Value tags are
// those of jni_common.hpp plus colors_jni::kTagObj (vals = an object number); strings and binaries carry their
// byte length in vals, their bytes follow one another in `blob` (strings as UTF-8 encoded by
// Java); kTagRef values index `refs` (Handles of proxies, stored as they are). The arrays are the
// encoder's reused buffers: only objs[0, 2 nobj), (tags, vals)[0, nvals) and blob[0, nblob) are
// read, and classes and the field arrays may be null (no user objects). Class k is
// `classes[k]` (a ClassRecord address), its i-th mapped field the record's field
// `field_idx[field_start[k] + i]`.
//
// A graph whose references all point forward is built inside a read scope instead, with no root
// per object ("private -> shared in a read scope" below, with its invariants); the rest, built
// rooted, keeps these:
// Invariants (GC safety, gc/README.md "transient references"):
//  * Pass 1 allocates the n objects in order; each comes back rooted from libshared's allocator.
//    A graph of more than kHeldRoots objects has `scratch`, an array of n slots rooted for the
//    whole call, and each object is stored into its scratch slot before its Rooted is dropped; a
//    smaller one (an rpc call's arguments, most replies) keeps each object's own Rooted for the
//    whole call instead, with no scratch allocation. Either way each object is reachable from a
//    root from its allocation on. ("Scratch-pinned" below means either.)
//  * Pass 2 fills the objects: user objects and lists by init_slot (their slots are null and no
//    other thread writes them, so no deletion barrier is needed), sets and maps by set_add,
//    map_put and sorted_put (the per-object copy's calls, barriers included). Every reference stored is either
//    an object of scratch, the object of a proxy Java holds (its root lives: the Handle is
//    reachable from `refs` for the whole call), or a string/binary/boxed scalar that is still
//    rooted by its own Rooted until the store has made it reachable from its scratch-pinned
//    parent (a map's key stays rooted while its value is made).
//  * So no object made here is ever unreachable-and-unrooted between two allocations (any of which
//    may wait for a collector cycle). On a failure the roots are dropped: everything built
//    becomes garbage that the next cycles free; nothing half-built stays reachable.
//  * The result is rooted (a Value taken while scratch or its own Rooted still holds it) before
//    they go.
//
// The same encoding carries a copyToSharedMemory (toShared: the root's proxy), a served call's
// reply (toSharedReply) and an rpc client's arguments (clientCall, clientSend: the root is the
// list of arguments). Cases this copy does not reproduce exactly (a field the shared version
// lacks, a value the field's type refuses, which the explicit path widens or reports) are
// declined: Java then runs org.colors.Copier, which gives the result or the exception of the
// non-bulk path.
//
// ---- shared -> private: Java_org_colors_Bulk_flatten ----
// Walks the graph reachable from a root (a user object or a list) through user objects' fields
// and lists' elements, and returns it flattened: {byte[] tags, long[] vals, int[] starts,
// byte[] blob, Object[] proxies}. Object k (0 = the root) starts at starts[k] with a header value:
// colors_jni::kTagUser (vals = its ClassRecord address, then one value per field of that record, in the
// record's order) or colors_jni::kTagList (vals = length, then the elements). Values: kTagNull/Int/Float
// (raw double bits)/Bool; kTagString/kTagBinary with vals = blob offset << 32 | byte length
// (UTF-8 for strings); colors_jni::kTagObj (an object number); colors_jni::kTagProxy (index into proxies: maps and sets,
// made into proxies here, each with its own root).
//
// Invariants (GC safety): see `struct Flat` (a walk without roots inside a read scope, else, inside
// a transaction or when the scoped walk gives up, a walk that roots everything it follows).
#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "barrier.hpp"
#include "classes.hpp"
#include "container_lock.hpp"
#include "containers.hpp"
#include "jni_class_record.hpp"
#include "jni_common.hpp"
#include "layout.hpp"
#include "list_seqlock.hpp"
#include "objects.hpp"
#include "read_scope.hpp"
#include "roots.hpp"
#include "segment.hpp"
#include "sorted_map.hpp"
#include "transaction.hpp"

namespace cd = colors::detail;

namespace {

using colors_jni::check_pending;
using colors_jni::guarded;

// Thrown inside toShared for a case the Copier must do (see above).
struct Fallback {};

// Reads the first `n` elements of a Java array into `v` (resized; its capacity is kept for the
// next call); n < 0: the whole array. A null array or n == 0 reads nothing, with no JNI call. An
// array shorter than n raises ArrayIndexOutOfBoundsException.
template <class T, class A>
void read_array(JNIEnv* env, A arr, jint n, void (JNIEnv::*get)(A, jsize, jsize, T*), std::vector<T>& v) {
  v.clear();
  if (arr == nullptr || n == 0) return;
  if (n < 0) n = env->GetArrayLength(arr);
  v.resize(static_cast<std::size_t>(n));
  if (n > 0) (env->*get)(arr, 0, n, v.data());
  check_pending(env);
}

// Container kinds in the header pair of `objs` (BulkWriter's LIST, SET, MAP, SORTED_MAP).
constexpr jint kList = -1, kSet = -2, kMap = -3, kSortedMap = -4;

// A graph of at most this many objects keeps each object's own root instead of a scratch array.
constexpr std::size_t kHeldRoots = 16;

// The input arrays of one build, reused by the thread's next one (most builds are small: an rpc
// call's arguments). Nothing build_shared calls builds another graph on the same thread.
struct BuildBuffers {
  std::vector<jint> objs, field_start, field_idx;
  std::vector<jlong> classes, vals;
  std::vector<jbyte> blob, tags;
  std::vector<cd::ClassRecord*> recs;
  std::vector<cd::Word> made;
  // The scoped build's: where each object's values and bytes start, one object's values.
  std::vector<std::size_t> value_start, blob_start;
  std::vector<cd::Word> words, values;
  std::vector<cd::SlotInit> inits;
  // A build that grew a buffer past this gives it back after it, instead of keeping it for life.
  static constexpr std::size_t kKeepBytes = std::size_t{1} << 20;
  void trim() {
    if (vals.capacity() * sizeof(jlong) > kKeepBytes || blob.capacity() > kKeepBytes ||
        objs.capacity() * sizeof(jint) > kKeepBytes || made.capacity() * sizeof(cd::Word) > kKeepBytes ||
        words.capacity() * sizeof(cd::Word) > kKeepBytes)
      *this = BuildBuffers{};
  }
};

// A cursor over the concatenated bytes of strings and binaries.
struct Blob {
  const std::vector<jbyte>& bytes;
  std::size_t pos = 0;
  std::string_view take(jlong n) {
    const auto len = static_cast<std::size_t>(n);
    if (n < 0 || len > bytes.size() - pos) throw colors::InvalidArgumentError("bulk encoding overruns its bytes (binding bug)");
    std::string_view s(reinterpret_cast<const char*>(bytes.data()) + pos, len);
    pos += len;
    return s;
  }
};

// The word for value i of the input; `hold` keeps a new string/binary/boxed scalar rooted until
// the caller has stored it.
cd::Word in_word(JNIEnv* env, cd::Metadata* m, jbyte tag, jlong bits, Blob& blob, jobjectArray refs,
                 const std::vector<cd::Word>& made, cd::Rooted& hold) {
  switch (tag) {
    case colors_jni::kTagNull: return cd::kNull;
    case colors_jni::kTagInt:
      hold = cd::new_integer(m, bits);
      return hold.word();
    case colors_jni::kTagFloat: {
      double d;
      std::memcpy(&d, &bits, sizeof d);
      hold = cd::new_float(m, d);
      return hold.word();
    }
    case colors_jni::kTagBool: return cd::make_bool(bits != 0);
    case colors_jni::kTagString: {
      std::string_view s = blob.take(bits);
      hold = cd::new_string(m, s);  // validates the UTF-8 Java made
      return hold.word();
    }
    case colors_jni::kTagBinary: {
      std::string_view s = blob.take(bits);
      hold = cd::new_binary(m, s.data(), s.size());
      return hold.word();
    }
    case colors_jni::kTagRef: {
      jobject h = env->GetObjectArrayElement(refs, static_cast<jsize>(bits));
      check_pending(env);
      // The Handle is reachable from `refs` for the whole call: its root keeps the object.
      cd::Word w = colors_jni::jvalue_of(env, h)->value().raw();
      env->DeleteLocalRef(h);
      return w;
    }
    case colors_jni::kTagObj:
      if (bits < 0 || static_cast<std::size_t>(bits) >= made.size())
        throw colors::InvalidArgumentError("bulk encoding names a missing object (binding bug)");
      return made[static_cast<std::size_t>(bits)];
    default: throw colors::InvalidArgumentError("bad bulk value tag " + std::to_string(tag) + " (binding bug)");
  }
}

// check_field_type as a predicate, with the common cases inline.
bool field_takes(const cd::FieldInfo& f, cd::Word w) {
  if (w == cd::kNull || f.type == colors::TypeKind::kAny) return true;
  if (cd::is_small_int(w)) return f.type == colors::TypeKind::kInteger;
  if (cd::is_bool(w)) return f.type == colors::TypeKind::kBoolean;
  if (cd::is_small_float(w)) return f.type == colors::TypeKind::kFloat;
  const cd::ClassRecord* c = cd::class_of(w);
  if (c->kind == f.type && (f.type != colors::TypeKind::kObject || f.class_name.len == 0)) return true;
  try {
    cd::check_field_type(f, w);
    return true;
  } catch (const colors::TypeMismatchError&) {
    return false;
  }
}

// The first store into a slot of an object this call allocated (null until now, written by no
// other thread: the object is reachable only through scratch). No deletion barrier is needed
// (it overwrites null); release, so that a collector that reads the word sees the initialised
// object behind it. REQUIRES: w is pinned (scratch, a proxy's root, or a live Rooted).
void init_slot(std::atomic<cd::Word>* slot, cd::Word w) { slot->store(w, std::memory_order_release); }

// ---- private -> shared in a read scope ----
//
// A graph whose references all point forward (object k's values name only objects numbered after
// k: a tree, as BulkWriter numbers it, and many other graphs), whose build allocates at most
// kScopedCopyMax objects (its objects, their arrays and tables, strings, binaries and boxed
// numbers), with no sorted map, is built inside a read scope of its
// own, as C++'s and Python's copy_to build theirs (colors.hpp, bindings-python values.cpp): from
// the last object to the first, each born holding its values (new_user_object_scoped,
// new_list_scoped, new_hash_scoped), with no root per object and plain stores before publication;
// the root is promoted once, at the end. Otherwise (a back reference, a sorted map, a larger
// graph, a transaction) the rooted build below runs, and it also runs when the scoped one
// meets a full heap (a scope cannot wait for the collector, the rooted build can).
//
// Invariants (gc/README.md, "Allocating in a scope"):
//  * Every word the scoped build stores is a scalar, an object this scope built (a later number,
//    built before it in the reverse order), a string, binary or boxed number this scope built, or a
//    proxy's object (its Handle is reachable from `refs` for the whole call, so its root lives).
//    The scope keeps what it built alive until it ends; the libshared builders flag what they
//    store while the collector marks, after publishing the object that holds it.
//  * No user code and no wait for the collector runs inside the scope: JNI array reads and
//    libshared allocation only (an allocation that would wait throws OutOfMemoryError instead).
//  * The result is promoted (promote_borrowed: a root, flagged while marking) before the scope ends.

// The rooted build must run instead (thrown inside the scoped build).
struct NotScoped {};

// Graphs built by the scoped build since the library loaded (Bulk.scopedBuilds: tests, diagnostics).
std::atomic<std::uint64_t> g_scoped_builds{0};

// Plans the scoped build of the input in `buf`: where each object's values and string bytes
// start. False when the graph does not qualify (see above) or its header is malformed (the rooted
// build then reports it).
bool plan_scoped(BuildBuffers& buf, std::size_t n, std::size_t nvals) {
  if (n > colors::detail::kScopedCopyMax) return false;
  buf.value_start.resize(n);
  buf.blob_start.resize(n);
  std::size_t v = 0, b = 0;
  std::size_t allocations = 2 * n;  // each object, and a list's array or a set's or map's table
  for (std::size_t k = 0; k < n; ++k) {
    const jint cls = buf.objs[2 * k];
    const jint count = buf.objs[2 * k + 1];
    if (cls < kMap || count < 0 || static_cast<std::size_t>(count) > nvals - v || (cls == kMap && count % 2 != 0))
      return false;  // a sorted map, or a malformed header
    buf.value_start[k] = v;
    buf.blob_start[k] = b;
    for (std::size_t end = v + static_cast<std::size_t>(count); v < end; ++v) {
      const jbyte tag = buf.tags[v];
      const jlong bits = buf.vals[v];
      if (tag == colors_jni::kTagString || tag == colors_jni::kTagBinary) {
        if (bits < 0) return false;
        b += static_cast<std::size_t>(bits);
        ++allocations;
      } else if (tag == colors_jni::kTagInt) {
        allocations += !cd::fits_small(bits);
      } else if (tag == colors_jni::kTagFloat) {
        double d;
        std::memcpy(&d, &bits, sizeof d);
        allocations += !cd::fits_small_float(d);
      }
      if (tag == colors_jni::kTagObj && bits <= static_cast<jlong>(k)) return false;  // a back reference
    }
    if (allocations > colors::detail::kScopedCopyMax) return false;
  }
  return true;
}

// The word for a value inside the scope: strings, binaries and boxed numbers built unrooted.
cd::Word in_word_scoped(JNIEnv* env, cd::Metadata* m, jbyte tag, jlong bits, Blob& blob, jobjectArray refs,
                        const std::vector<cd::Word>& made) {
  switch (tag) {
    case colors_jni::kTagInt: return cd::new_integer_scoped(m, bits);
    case colors_jni::kTagFloat: {
      double d;
      std::memcpy(&d, &bits, sizeof d);
      return cd::new_float_scoped(m, d);
    }
    case colors_jni::kTagString: return cd::new_string_scoped(m, blob.take(bits));  // validates the UTF-8
    case colors_jni::kTagBinary: {
      const std::string_view s = blob.take(bits);
      return cd::new_binary_scoped(m, s.data(), s.size());
    }
    default: {
      cd::Rooted none;  // null, bool, a proxy's object or one of `made`: nothing is allocated
      return in_word(env, m, tag, bits, blob, refs, made, none);
    }
  }
}

// Builds the planned graph in the current read scope; returns its root, unrooted.
// REQUIRES: inside a read scope, plan_scoped(buf, ...) returned true.
cd::Word build_in_scope(JNIEnv* env, cd::Metadata* m, BuildBuffers& buf, std::size_t n, jobjectArray refs) {
  std::vector<cd::Word>& made = buf.made;
  made.assign(n, cd::kNull);
  for (std::size_t k = n; k-- > 0;) {
    const jint cls = buf.objs[2 * k];
    const auto count = static_cast<std::size_t>(buf.objs[2 * k + 1]);
    std::size_t v = buf.value_start[k];
    Blob blob{buf.blob, buf.blob_start[k]};
    auto next = [&] {
      const cd::Word w = in_word_scoped(env, m, buf.tags[v], buf.vals[v], blob, refs, made);
      ++v;
      return w;
    };
    if (cls >= 0) {
      if (static_cast<std::size_t>(cls) >= buf.recs.size()) throw colors::InvalidArgumentError("bad class index (binding bug)");
      cd::ClassRecord* rec = buf.recs[static_cast<std::size_t>(cls)];
      const auto first = static_cast<std::size_t>(buf.field_start.at(static_cast<std::size_t>(cls)));
      buf.inits.clear();
      for (std::size_t i = 0; i < count; ++i) {
        const jint fi = buf.field_idx.at(first + i);
        if (fi < 0 || static_cast<std::uint32_t>(fi) >= rec->field_count) throw Fallback{};  // the version lacks it
        const cd::FieldInfo& fd = rec->fields[fi];
        const cd::Word w = next();
        if (!field_takes(fd, w)) throw Fallback{};  // the explicit path widens or reports it
        if (fd.slot >= rec->slot_count) throw NotScoped{};
        buf.inits.push_back({fd.slot, w});
      }
      made[k] = cd::new_user_object_scoped(m, rec, buf.inits.data(), buf.inits.size());
    } else if (cls == kList || cls == kSet) {
      buf.words.clear();
      for (std::size_t i = 0; i < count; ++i) buf.words.push_back(next());
      made[k] = cls == kList ? cd::new_list_scoped(m, buf.words.data(), count)
                             : cd::new_hash_scoped(m, colors::TypeKind::kSet, buf.words.data(), nullptr, count);
    } else {  // kMap: keys and values alternate
      buf.words.clear();
      buf.values.clear();
      for (std::size_t i = 0; i < count; i += 2) {
        buf.words.push_back(next());
        buf.values.push_back(next());
      }
      made[k] = cd::new_hash_scoped(m, colors::TypeKind::kMap, buf.words.data(), buf.values.data(), count / 2);
    }
  }
  return made[0];
}

// The scoped build, or nullopt when the rooted build must run. Throws Fallback when the Copier must.
std::optional<colors::Value> build_scoped(JNIEnv* env, cd::Metadata* m, BuildBuffers& buf, std::size_t n,
                                          jobjectArray refs) {
  if (colors::in_transaction() || !plan_scoped(buf, n, buf.tags.size())) return std::nullopt;
  try {
    colors::ReadScope scope;
    const cd::Word w = build_in_scope(env, m, buf, n, refs);
    cd::Rooted r = cd::promote_borrowed(w);
    g_scoped_builds.fetch_add(1, std::memory_order_relaxed);
    return colors::Value::adopt_root(w, r.take());
  } catch (const NotScoped&) {
    return std::nullopt;
  } catch (const colors::OutOfMemoryError&) {
    return std::nullopt;  // a full heap: the rooted build may wait for the collector
  }
}

// ---- shared -> private ----

// Identity memo of the walk: word -> object number (open addressing; words are 16-aligned).
class Memo {
 public:
  // Small at first: a flatten of a list of scalars (toBooleanArray, toStringArray) numbers only the
  // list itself, and a per-call table of 1024 entries showed in their latency (rpc-bench, 1-element
  // bool list: 6.1-6.9 us with it, 5.3-5.6 without); graphs grow it by doubling.
  Memo() : keys_(16, 0), vals_(16, 0) {}
  // The number of w, or -1 after recording it as `id`.
  std::int32_t find_or_add(cd::Word w, std::int32_t id) {
    if ((count_ + 1) * 2 > keys_.size()) grow();
    std::size_t mask = keys_.size() - 1;
    for (std::size_t i = hash(w) & mask;; i = (i + 1) & mask) {
      if (keys_[i] == w) return vals_[i];
      if (keys_[i] == 0) {
        keys_[i] = w;
        vals_[i] = id;
        ++count_;
        return -1;
      }
    }
  }

 private:
  static std::size_t hash(cd::Word w) { return static_cast<std::size_t>((w >> 4) * 0x9E3779B97F4A7C15ULL >> 20); }
  void grow() {
    std::vector<cd::Word> k(keys_.size() * 2, 0);
    std::vector<std::int32_t> v(k.size(), 0);
    std::size_t mask = k.size() - 1;
    for (std::size_t j = 0; j < keys_.size(); ++j) {
      if (keys_[j] == 0) continue;
      std::size_t i = hash(keys_[j]) & mask;
      while (k[i] != 0) i = (i + 1) & mask;
      k[i] = keys_[j];
      v[i] = vals_[j];
    }
    keys_.swap(k);
    vals_.swap(v);
  }
  std::vector<cd::Word> keys_;
  std::vector<std::int32_t> vals_;
  std::size_t count_ = 0;
};

// Thrown by the scoped walk when the rooted one must do the copy (a map or set that needs a rooted
// proxy, a list that kept changing under its seqlock reads, a transaction).
struct Retry {};

// The walk. Two modes:
//  * scoped (no roots): the whole walk runs inside a read scope (colors::ReadScope, gc/README.md
//    "Read scopes"): every word it reads from a reachable object is a borrowed reference that no
//    collector cycle frees before the scope ends, so nothing is rooted and nothing is checked.
//    A list is read through its seqlock (list_seqlock.hpp: its words copied, then the version
//    checked), not under its lock word: a thread inside a scope must never wait for another that
//    may wait for a collector cycle (a list's writer allocating its new array). Maps and sets
//    (which become proxies, each with a root, made by Java code) and a list that keeps changing
//    under the reads throw Retry, and so does every transaction (a scope cannot open in one).
//  * rooted: every reference followed is read with root_load (rooted, then the slot re-read: it
//    was in the slot at an instant when this thread already held the root) and its Rooted kept in
//    `pins` until the walk ends (user objects, lists and their storage arrays) or until its
//    payload was copied (strings, binaries, boxed scalars). Always valid; lists are read under
//    their lock word (and, inside a transaction, its TxContainerScope).
// The root is rooted by the caller's Handle (a parameter, so reachable for the whole call).
// Racing writers of other threads may change the graph during either walk; the copy then mixes
// old and new values per slot (as a walk through proxies would), but never reads a freed object.
struct Flat {
  std::vector<jbyte> tags;
  std::vector<jlong> vals;
  std::vector<jint> starts;
  std::vector<jbyte> blob;
  std::vector<jobject> proxies;  // local refs
  std::vector<cd::Rooted> pins;  // object k (its root in the rooted mode; an unrooted word otherwise)
  std::vector<cd::Rooted> arrays;  // rooted mode: lists' storage arrays
  std::vector<cd::Word> list_words;  // scoped mode: the list being copied, read under its seqlock
  Memo memo;
  bool scoped;

  static constexpr int kListAttempts = 8;  // seqlock reads of one list before the rooted walk

  explicit Flat(bool in_scope) : scoped(in_scope) {}

  void put(jbyte t, jlong v) {
    tags.push_back(t);
    vals.push_back(v);
  }
  jlong bytes(const void* p, std::size_t n) {
    if (blob.size() + n > 0x7fffffffu) throw colors::InvalidArgumentError("graph too large to copy in one call (over 2 GiB of strings)");
    const jlong at = static_cast<jlong>(blob.size());
    blob.insert(blob.end(), static_cast<const jbyte*>(p), static_cast<const jbyte*>(p) + n);
    return at << 32 | static_cast<jlong>(n);
  }
};

// The word in `slot`: rooted into `r` in the rooted mode, a plain acquire load in the scoped one. `owner`:
// the user object owning a field slot, read under the running transaction's isolation
// (read_slot_rooted; only the rooted mode runs inside one); null for a list element, read under
// the list's lock and, inside a transaction, its TxContainerScope (out_object).
cd::Word load(Flat& f, const std::atomic<cd::Word>* slot, cd::Rooted& r, const void* owner = nullptr) {
  if (f.scoped) return slot->load(std::memory_order_acquire);
  r = owner != nullptr ? cd::read_slot_rooted(owner, slot) : cd::root_load(slot);
  return r.word();
}

void put_double(Flat& f, double d) {
  jlong b;
  std::memcpy(&b, &d, sizeof b);
  f.put(colors_jni::kTagFloat, b);
}

// Encodes the value `w`, rooted by `r` in the rooted mode.
void out_word(JNIEnv* env, Flat& f, cd::Word w, cd::Rooted& r) {
  if (w == cd::kNull) return f.put(colors_jni::kTagNull, 0);
  if (cd::is_small_int(w)) return f.put(colors_jni::kTagInt, cd::small_value(w));
  if (cd::is_bool(w)) return f.put(colors_jni::kTagBool, cd::bool_value(w) ? 1 : 0);
  if (cd::is_small_float(w)) return put_double(f, cd::small_float_value(w));
  if (!cd::is_ref(w)) throw colors::CorruptHeapError("a slot holds a word that is no value");
  switch (cd::class_of(w)->kind) {
    case colors::TypeKind::kInteger:
      return f.put(colors_jni::kTagInt, reinterpret_cast<const cd::IntegerObject*>(w)->value);
    case colors::TypeKind::kFloat:
      return put_double(f, reinterpret_cast<const cd::FloatObject*>(w)->value);
    case colors::TypeKind::kString: {
      auto* so = reinterpret_cast<const cd::StringObject*>(w);
      return f.put(colors_jni::kTagString, f.bytes(so->bytes, so->length));
    }
    case colors::TypeKind::kBinary: {
      auto* b = reinterpret_cast<const cd::BinaryObject*>(w);
      return f.put(colors_jni::kTagBinary, f.bytes(b->bytes, b->length));
    }
    case colors::TypeKind::kObject:
    case colors::TypeKind::kList: {
      const auto id = static_cast<std::int32_t>(f.pins.size());
      std::int32_t known = f.memo.find_or_add(w, id);
      if (known >= 0) return f.put(colors_jni::kTagObj, known);
      f.pins.push_back(f.scoped ? cd::Rooted(w, nullptr) : std::move(r));
      return f.put(colors_jni::kTagObj, id);
    }
    default: {  // maps, sets: a proxy with its own root, made by Java code
      if (f.scoped) throw Retry{};
      jobject p = colors_jni::to_java(env, colors::Value::adopt_root(w, r.take()));
      check_pending(env);
      f.proxies.push_back(p);
      return f.put(colors_jni::kTagProxy, static_cast<jlong>(f.proxies.size() - 1));
    }
  }
}

// Encodes the value in `slot`.
void out_value(JNIEnv* env, Flat& f, const std::atomic<cd::Word>* slot, const void* owner = nullptr) {
  cd::Rooted r;
  const cd::Word w = load(f, slot, r, owner);
  out_word(env, f, w, r);
}

// Scoped mode: the words of list `l` at one instant between two changes (its seqlock), into
// f.list_words; Retry when changes keep coming (or a writer died inside one: the lock repairs it).
void scoped_list_words(Flat& f, const cd::ListObject* l) {
  for (int attempt = 0; attempt < Flat::kListAttempts; ++attempt) {
    std::uint64_t v;
    cd::ListStorage st;
    if (!cd::list_try_storage(l, v, st)) continue;
    // The array was the list's at the instant the version names (checked below); a racing
    // change may have replaced it, but inside the scope it stays allocated memory.
    f.list_words.clear();
    for (std::size_t i = 0; i < st.n; ++i) f.list_words.push_back(st.array->slots[i].load(std::memory_order_acquire));
    if (cd::list_still_unchanged(l, v)) return;
  }
  throw Retry{};
}

void out_object(JNIEnv* env, Flat& f, std::size_t k) {
  cd::Word w = f.pins[k].word();
  f.starts.push_back(static_cast<jint>(f.tags.size()));
  const cd::ClassRecord* cls = cd::class_of(w);
  if (cls->kind == colors::TypeKind::kObject) {
    f.put(colors_jni::kTagUser, static_cast<jlong>(reinterpret_cast<std::uintptr_t>(cls)));
    for (std::uint32_t i = 0; i < cls->field_count; ++i) {
      if (cls->fields[i].deleted()) continue;  // Class::fields() lists live fields only
      const std::atomic<cd::Word>* s = cd::field_slot(w, cls->fields[i]);
      if (s == nullptr) {
        f.put(colors_jni::kTagNull, 0);
      } else {
        out_value(env, f, s, reinterpret_cast<const void*>(w));
      }
    }
    return;
  }
  if (cls->kind != colors::TypeKind::kList) throw colors::CorruptHeapError("a bulk copy met an object that is neither a user object nor a list");
  auto* l = reinterpret_cast<cd::ListObject*>(w);
  if (f.scoped) {
    scoped_list_words(f, l);
    const std::vector<cd::Word> words = std::move(f.list_words);  // out_word may meet another list
    f.put(colors_jni::kTagList, static_cast<jlong>(words.size()));
    cd::Rooted none;
    for (cd::Word e : words) out_word(env, f, e, none);
    return;
  }
  // The rooted mode reads a list under its container lock (libshared containers.hpp): every list
  // operation holds it, so the copy sees the list between two operations, never half of one (a
  // shifted insert or a pop from the front would otherwise show an element twice, or a null
  // nobody stored). Inside a transaction, a read of the list as libshared's list operations make
  // it: the orec before the lock word (lock order), then validated under it.
  cd::TxContainerScope tx(l, cd::TxAccess::kRead);
  cd::ContainerGuard guard(&l->lock);
  (void)tx.admitted();  // a read: always admitted (validated inside a transaction)
  // Its storage array is rooted too (the old one stays ours if a later append replaces it).
  cd::Rooted ar;
  cd::Word arr = load(f, &l->array, ar);
  std::size_t n = l->size.load(std::memory_order_acquire);
  std::size_t cap = arr == cd::kNull ? 0 : reinterpret_cast<const cd::ArrayObject*>(arr)->capacity;
  f.arrays.push_back(std::move(ar));
  if (n > cap) n = cap;
  f.put(colors_jni::kTagList, static_cast<jlong>(n));
  for (std::size_t i = 0; i < n; ++i) out_value(env, f, &reinterpret_cast<const cd::ArrayObject*>(arr)->slots[i]);
}

// Walks the graph from `root` (a live user object or list) in one mode.
void walk(JNIEnv* env, Flat& f, cd::Word root) {
  f.memo.find_or_add(root, 0);
  f.pins.emplace_back(root, nullptr);  // rooted by the caller's Handle
  for (std::size_t k = 0; k < f.pins.size(); ++k) out_object(env, f, k);
}

template <class T, class A>
A new_array(JNIEnv* env, const std::vector<T>& v, A (JNIEnv::*make)(jsize),
            void (JNIEnv::*set)(A, jsize, jsize, const T*)) {
  if (v.size() > 0x7fffffffu) throw colors::InvalidArgumentError("graph too large to copy in one call");
  A a = (env->*make)(static_cast<jsize>(v.size()));
  check_pending(env);
  if (!v.empty()) (env->*set)(a, 0, static_cast<jsize>(v.size()), v.data());
  check_pending(env);
  return a;
}

// Builds the encoded graph (see the top of this file); the root rooted by a Value of its own, or
// nullopt when the Copier must run instead.
std::optional<colors::Value> build_shared(JNIEnv* env, jintArray objs_a, jint nobj, jbyteArray tags_a, jlongArray vals_a,
                                          jint nvals, jbyteArray blob_a, jint nblob, jobjectArray refs, jlongArray classes_a,
                                          jintArray field_start_a, jintArray field_idx_a) {
  using namespace colors_jni;
  cd::Metadata* m = cd::current_meta();
  thread_local BuildBuffers buf;
  struct Trim {
    ~Trim() { buf.trim(); }
  } trim;
  if (nobj < 1 || nobj > std::numeric_limits<jint>::max() / 2 || nblob < 0 || nvals < 0)
    throw colors::InvalidArgumentError("bad counts in bulk encoding (binding bug)");
  read_array(env, objs_a, 2 * nobj, &JNIEnv::GetIntArrayRegion, buf.objs);
  read_array(env, classes_a, -1, &JNIEnv::GetLongArrayRegion, buf.classes);
  read_array(env, field_start_a, -1, &JNIEnv::GetIntArrayRegion, buf.field_start);
  read_array(env, field_idx_a, -1, &JNIEnv::GetIntArrayRegion, buf.field_idx);
  read_array(env, blob_a, nblob, &JNIEnv::GetByteArrayRegion, buf.blob);
  const std::vector<jint>& objs = buf.objs;
  const std::vector<jint>& field_start = buf.field_start;
  const std::vector<jint>& field_idx = buf.field_idx;
  std::vector<jbyte>& tags = buf.tags;
  std::vector<jlong>& vals = buf.vals;
  tags.resize(static_cast<std::size_t>(nvals));
  vals.resize(tags.size());
  if (nvals > 0) {
    env->GetByteArrayRegion(tags_a, 0, nvals, tags.data());
    env->GetLongArrayRegion(vals_a, 0, nvals, vals.data());
    check_pending(env);
  }
  const std::size_t n = objs.size() / 2;
  if (n == 0) throw colors::InvalidArgumentError("bulk copy without a root object (binding bug)");
  std::vector<cd::ClassRecord*>& recs = buf.recs;
  recs.clear();
  for (jlong c : buf.classes) recs.push_back(colors_jni::user_class_record(c));

  try {
    if (std::optional<colors::Value> scoped = build_scoped(env, m, buf, n, refs)) return scoped;
  } catch (const Fallback&) {
    return std::nullopt;
  }

  // Pass 1: allocate every object, each rooted (by scratch or by its own Rooted, see the top of
  // this file) before the next allocation.
  cd::Rooted scratch;
  cd::ArrayObject* pin = nullptr;
  if (n > kHeldRoots) {
    scratch = cd::new_array(m, colors::TypeKind::kArray, n);
    pin = reinterpret_cast<cd::ArrayObject*>(scratch.word());
  }
  std::array<cd::Rooted, kHeldRoots> held;
  std::vector<cd::Word>& made = buf.made;
  made.assign(n, cd::kNull);
  for (std::size_t k = 0; k < n; ++k) {
    const jint cls = objs[2 * k];
    const jint count = objs[2 * k + 1];
    if (count < 0) throw colors::InvalidArgumentError("negative count in bulk encoding (binding bug)");
    cd::Rooted r;
    if (cls >= 0) {
      if (static_cast<std::size_t>(cls) >= recs.size()) throw colors::InvalidArgumentError("bad class index (binding bug)");
      r = cd::new_user_object(m, recs[static_cast<std::size_t>(cls)]);
    } else if (cls == kList) {
      r = cd::new_list(m, static_cast<std::size_t>(count));
    } else if (cls == kSet) {
      r = cd::new_set(m, static_cast<std::size_t>(count));
    } else if (cls == kMap && count % 2 == 0) {
      r = cd::new_map(m, static_cast<std::size_t>(count / 2));
    } else if (cls == kSortedMap && count % 2 == 0) {
      r = cd::new_sorted_map(m);
    } else {
      throw colors::InvalidArgumentError("bad object header in bulk encoding (binding bug)");
    }
    made[k] = r.word();
    if (pin != nullptr)
      cd::store_ref(&pin->slots[k], r.word());  // now reachable from the rooted scratch array
    else
      held[k] = std::move(r);  // keeps its root for the whole call
  }

  // Pass 2: fill them. Every stored word is pinned (scratch or `held`, a proxy's root, or `hold`).
  Blob blob{buf.blob};
  std::size_t v = 0;
  try {
    for (std::size_t k = 0; k < n; ++k) {
      const jint cls = objs[2 * k];
      const auto count = static_cast<std::size_t>(objs[2 * k + 1]);
      if (count > static_cast<std::size_t>(nvals) - v) throw colors::InvalidArgumentError("bulk encoding overruns its values (binding bug)");
      const cd::Word o = made[k];
      if (cls >= 0) {
        const cd::ClassRecord* rec = recs[static_cast<std::size_t>(cls)];
        const auto first = static_cast<std::size_t>(field_start.at(static_cast<std::size_t>(cls)));
        for (std::size_t i = 0; i < count; ++i, ++v) {
          const jint fi = field_idx.at(first + i);
          if (fi < 0 || static_cast<std::uint32_t>(fi) >= rec->field_count) throw Fallback{};  // the version lacks it
          const cd::FieldInfo& fd = rec->fields[fi];
          cd::Rooted hold;
          const cd::Word w = in_word(env, m, tags[v], vals[v], blob, refs, made, hold);
          if (!field_takes(fd, w)) throw Fallback{};  // the explicit path widens or reports it
          std::atomic<cd::Word>* slot = cd::field_slot(o, fd);
          if (slot == nullptr) throw Fallback{};
          init_slot(slot, w);
        }
      } else if (cls == kSet) {
        // A set or map no other thread can reach yet, filled by the calls the per-object copy
        // makes (SharedSet.add, SharedMap.put): the same hashing, locking and barriers.
        for (std::size_t i = 0; i < count; ++i, ++v) {
          cd::Rooted hold;
          cd::set_add(m, o, in_word(env, m, tags[v], vals[v], blob, refs, made, hold));
        }
      } else if (cls == kMap || cls == kSortedMap) {
        for (std::size_t i = 0; i < count; i += 2, v += 2) {
          cd::Rooted hold_key, hold_value;  // the key stays rooted while the value is made
          const cd::Word key = in_word(env, m, tags[v], vals[v], blob, refs, made, hold_key);
          const cd::Word value = in_word(env, m, tags[v + 1], vals[v + 1], blob, refs, made, hold_value);
          if (cls == kMap)
            cd::map_put(m, o, key, value);
          else
            cd::sorted_put(m, o, key, value);
        }
      } else {
        auto* l = reinterpret_cast<cd::ListObject*>(o);
        auto* a = reinterpret_cast<cd::ArrayObject*>(l->array.load(std::memory_order_acquire));
        for (std::size_t i = 0; i < count; ++i, ++v) {
          cd::Rooted hold;
          const cd::Word w = in_word(env, m, tags[v], vals[v], blob, refs, made, hold);
          init_slot(&a->slots[i], w);
        }
        l->size.store(count, std::memory_order_release);
      }
    }
  } catch (const Fallback&) {
    return std::nullopt;  // the roots go with this scope: what was built is garbage
  }
  // The root, rooted by a Value of its own while scratch or `held` still pins it.
  return colors::Value::from_raw(made[0]);
}

}  // namespace

extern "C" {

// Private -> shared (see the top of this file). Returns the root's proxy, or null when the Copier
// must run instead.
JNIEXPORT jobject JNICALL Java_org_colors_Bulk_toShared(JNIEnv* env, jclass, jintArray objs_a, jint nobj, jbyteArray tags_a,
                                                        jlongArray vals_a, jint nvals, jbyteArray blob_a, jint nblob,
                                                        jobjectArray refs, jlongArray classes_a,
                                                        jintArray field_start_a, jintArray field_idx_a) {
  using namespace colors_jni;
  return guarded<jobject>(env, nullptr, [&]() -> jobject {
    std::optional<colors::Value> v =
        build_shared(env, objs_a, nobj, tags_a, vals_a, nvals, blob_a, nblob, refs, classes_a, field_start_a, field_idx_a);
    return v ? to_java(env, std::move(*v)) : nullptr;
  });
}

// As toShared, but the copy becomes the reply of the call serving thread `worker` holds
// (jni_rpc.cpp), and no proxy is made: its root goes when this function returns instead of when
// the JVM's GC finds a proxy dead, which could pin dozens of large replies between two JVM
// collections (rpc-bench: 100-260 MB of 1024-tree replies marked live by every cycle). False
// (nothing replied) when the Copier must run instead.
JNIEXPORT jboolean JNICALL Java_org_colors_Bulk_toSharedReply(JNIEnv* env, jclass, jlong worker, jintArray objs_a, jint nobj,
                                                              jbyteArray tags_a, jlongArray vals_a, jint nvals,
                                                              jbyteArray blob_a, jint nblob, jobjectArray refs,
                                                              jlongArray classes_a, jintArray field_start_a,
                                                              jintArray field_idx_a) {
  using namespace colors_jni;
  return guarded<jboolean>(env, JNI_FALSE, [&]() -> jboolean {
    check_own_worker(worker);
    std::optional<colors::Value> v =
        build_shared(env, objs_a, nobj, tags_a, vals_a, nvals, blob_a, nblob, refs, classes_a, field_start_a, field_idx_a);
    if (!v) return JNI_FALSE;
    worker_reply(worker, *v);
    return JNI_TRUE;
  });
}

// A call of rpc client `client` whose arguments are the encoded graph (its root a list: the
// arguments), built and sent in one native call (jni_rpc.cpp client_call). Returns the result, or
// `declined` (nothing sent) when the Copier must copy the arguments instead.
JNIEXPORT jobject JNICALL Java_org_colors_Bulk_clientCall(JNIEnv* env, jclass, jlong client, jstring method,
                                                          jlong timeout_ms, jobject declined, jintArray objs_a, jint nobj,
                                                          jbyteArray tags_a, jlongArray vals_a, jint nvals,
                                                          jbyteArray blob_a, jint nblob, jobjectArray refs, jlongArray classes_a,
                                                          jintArray field_start_a, jintArray field_idx_a) {
  using namespace colors_jni;
  return guarded<jobject>(env, nullptr, [&]() -> jobject {
    check_live_client(client);  // before anything is built
    std::optional<colors::Value> v =
        build_shared(env, objs_a, nobj, tags_a, vals_a, nvals, blob_a, nblob, refs, classes_a, field_start_a, field_idx_a);
    if (!v) return env->NewLocalRef(declined);
    return client_call(env, client, method, colors::List(std::move(*v)), timeout_ms);
  });
}

// As clientCall, sent without waiting: the pending call's handle, or 0 (nothing sent) when the
// Copier must copy the arguments instead.
JNIEXPORT jlong JNICALL Java_org_colors_Bulk_clientSend(JNIEnv* env, jclass, jlong client, jstring method,
                                                        jintArray objs_a, jint nobj, jbyteArray tags_a, jlongArray vals_a,
                                                        jint nvals, jbyteArray blob_a, jint nblob, jobjectArray refs,
                                                        jlongArray classes_a, jintArray field_start_a,
                                                        jintArray field_idx_a) {
  using namespace colors_jni;
  return guarded<jlong>(env, 0, [&]() -> jlong {
    check_live_client(client);  // before anything is built
    std::optional<colors::Value> v =
        build_shared(env, objs_a, nobj, tags_a, vals_a, nvals, blob_a, nblob, refs, classes_a, field_start_a, field_idx_a);
    if (!v) return 0;
    return client_send(env, client, method, colors::List(std::move(*v)));
  });
}

// Shared -> private (see the top of this file). `root` is the Handle of a user object or list.
JNIEXPORT jobjectArray JNICALL Java_org_colors_Bulk_flatten(JNIEnv* env, jclass, jobject root) {
  using namespace colors_jni;
  return guarded<jobjectArray>(env, nullptr, [&]() -> jobjectArray {
    const colors::Value& rv = jvalue_of(env, root)->value();
    const cd::Word w = rv.raw();
    if (!cd::is_ref(w) || (cd::class_of(w)->kind != colors::TypeKind::kObject &&
                           cd::class_of(w)->kind != colors::TypeKind::kList))
      throw colors::InvalidArgumentError("bulk copies start at a user object or a list (binding bug)");
    cd::current_meta();
    std::optional<Flat> opt;
    try {
      // Inside a transaction only the rooted walk runs: its reads go through the transaction.
      if (cd::in_transaction()) throw Retry{};
      colors::ReadScope scope;
      opt.emplace(true);
      walk(env, *opt, w);
    } catch (const Retry&) {
      opt.reset();  // something needs roots or the lock: again, rooting what it follows
      opt.emplace(false);
      walk(env, *opt, w);  // throws no Retry
    }
    Flat& f = *opt;
    f.pins.clear();
    f.arrays.clear();
    jobjectArray out = env->NewObjectArray(5, g.object_cls, nullptr);
    check_pending(env);
    jobject parts[4] = {
        new_array<jbyte, jbyteArray>(env, f.tags, &JNIEnv::NewByteArray, &JNIEnv::SetByteArrayRegion),
        new_array<jlong, jlongArray>(env, f.vals, &JNIEnv::NewLongArray, &JNIEnv::SetLongArrayRegion),
        new_array<jint, jintArray>(env, f.starts, &JNIEnv::NewIntArray, &JNIEnv::SetIntArrayRegion),
        new_array<jbyte, jbyteArray>(env, f.blob, &JNIEnv::NewByteArray, &JNIEnv::SetByteArrayRegion)};
    for (int i = 0; i < 4; ++i) {
      env->SetObjectArrayElement(out, i, parts[i]);
      env->DeleteLocalRef(parts[i]);
    }
    if (!f.proxies.empty()) {
      jobjectArray px = env->NewObjectArray(static_cast<jsize>(f.proxies.size()), g.object_cls, nullptr);
      check_pending(env);
      for (std::size_t i = 0; i < f.proxies.size(); ++i) {
        env->SetObjectArrayElement(px, static_cast<jsize>(i), f.proxies[i]);
        env->DeleteLocalRef(f.proxies[i]);
      }
      env->SetObjectArrayElement(out, 4, px);
      env->DeleteLocalRef(px);
    }
    return out;
  });
}

// The index in class record `cls` of each named field, -1 where the version lacks it.
// Graphs the private -> shared copies built in a read scope so far.
JNIEXPORT jlong JNICALL Java_org_colors_Bulk_scopedBuilds(JNIEnv*, jclass) {
  return static_cast<jlong>(g_scoped_builds.load(std::memory_order_relaxed));
}

JNIEXPORT jintArray JNICALL Java_org_colors_Bulk_fieldIndices(JNIEnv* env, jclass, jlong cls, jobjectArray names) {
  using namespace colors_jni;
  return guarded<jintArray>(env, nullptr, [&]() -> jintArray {
    cd::current_meta();
    const cd::ClassRecord* rec = colors_jni::user_class_record(cls);
    const jsize n = env->GetArrayLength(names);
    std::vector<jint> idx(static_cast<std::size_t>(n), -1);
    for (jsize i = 0; i < n; ++i) {
      auto s = static_cast<jstring>(env->GetObjectArrayElement(names, i));
      check_pending(env);
      const cd::FieldInfo* fi = cd::find_field(rec, java_to_utf8(env, s));
      env->DeleteLocalRef(s);
      if (fi != nullptr) idx[static_cast<std::size_t>(i)] = static_cast<jint>(fi - rec->fields);
    }
    return new_array<jint, jintArray>(env, idx, &JNIEnv::NewIntArray, &JNIEnv::SetIntArrayRegion);
  });
}

}  // extern "C"
