// The colors C++ client API.
//
//   colors::attach();                                   // default socket, or COLORS_SOCKET
//   auto cls = colors::define_class("demo.Employee", {{"name", colors::TypeKind::kString},
//                                                     {"salary", colors::TypeKind::kFloat}});
//   colors::Object e = colors::new_object(cls);
//   e.set("name", "Smith");
//   e.set("salary", 100.0);
//   colors::repository("db").set(e);                    // any process can now get() it
//
// A Value is a shared value held by this process. Scalars are held by value; references are GC
// roots: while a Value (or any copy) lives, the object and everything reachable from it stays
// alive. All operations throw colors::Error subclasses (errors.hpp). A handle that holds no object
// of the current attachment is refused, never followed: an empty one (default-constructed, moved
// from) with InvalidArgumentError, one of an ended attachment (after detach(), an attach to another
// server, or in a fork's child) with NotAttachedError, as an argument too; a copy of such a
// handle is one too (is_current() is false).
#pragma once
#include <atomic>
#include <chrono>
#include <cstddef>
#include <initializer_list>
#include <cstdint>
#include <map>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "colors/config.hpp"
#include "colors/errors.hpp"
#include "colors/types.hpp"

namespace colors {

namespace detail {
// Bumped at every attach and detach, and in a fork's child (libshared/src/session.hpp): a rooted
// Value of another epoch belongs to an ended attachment.
extern std::atomic<std::uint64_t> g_attachment_epoch;
struct ClassRecord;
struct FieldInfo;
struct RepositoryRecord;
struct ChannelRecord;
}  // namespace detail

// ---- attachment ----------------------------------------------------------------------------

// Connects to colors-server at `socket` ("" = $COLORS_SOCKET, else the server's default path) and
// maps the segment at its fixed address. Throws ServerGoneError, VersionMismatchError,
// RefusedError or AddressInUseError with what to do. The server must run as this process's user,
// as root, or as a uid in $COLORS_TRUSTED_UIDS (RefusedError otherwise). A busy server is retried
// for $COLORS_ATTACH_TIMEOUT_MS (default 5000), which also bounds the wait for the handshake's
// answer (250 ms to 10 s per attempt: a hung server fails the attach). Does nothing when attached to a live server; when
// the server died, the new server replaces the old attachment (its Values become unusable) once
// the connection to it succeeded.
void attach(const std::string& socket = "");
// Unmaps the segment. Values still alive must not be used afterwards (NotAttachedError).
// InvalidArgumentError, detaching nothing, while a thread of this process holds a shared monitor
// (a Monitor alive, an entered synchronized block): it would stay held for every process.
// REQUIRES: no other thread of this process is inside an operation on the heap. This API does
// not wait for them: one holding a heap-wide lock (an allocation refilling its TLAB holds the heap
// lock) would keep it held in the shared segment after the unmap, and the server and every other
// client would wait for it for good. (The Python and Java bindings wait for their calls first.)
void detach();
// Attached and the server alive. Turns false within microseconds of the server's death (a thread
// watches the connection); then reads and writes of objects held go on, while what needs the
// server (allocation beyond the current TLAB, classes, repositories, channels, rpc, collect)
// throws ServerGoneError.
bool is_attached();
// A segment is mapped in this process: attached, even if the server died since.
bool has_segment();
// Asks the server whether it is alive. Throws ServerGoneError if it is not.
void ping();
// Asks the server for a checkpoint of the heap (colors-server --data-dir, colors-server/README.md
// "Durability") and waits until one that began after this call is on disk; returns its sequence
// number. Client processes that write while the heap is copied are stopped for the copy's last
// pages (this one included).
// Throws Error when the server has no data directory or the checkpoint failed (the message says
// why, e.g. "No space left on device"; the heap in memory is intact), ServerGoneError when the
// server is gone, InvalidArgumentError inside a transaction (a transaction would wait for itself).
std::uint64_t checkpoint();

// ---- values --------------------------------------------------------------------------------

class Value {
 public:
  Value() noexcept = default;                      // null
  Value(std::nullptr_t) noexcept {}                // null
  Value(int v);                                    // integer
  Value(long v);                                   // integer
  Value(long long v);                              // integer
  Value(unsigned v);                               // integer
  Value(double v);                                 // float (allocates)
  Value(bool v);                                   // boolean
  Value(const char* utf8);                         // string (allocates)
  Value(std::string_view utf8);                    // string (allocates)
  Value(const std::string& utf8) : Value(std::string_view(utf8)) {}
  Value(const Value& other);
  Value(Value&& other) noexcept;
  Value& operator=(const Value& other);
  Value& operator=(Value&& other) noexcept;
  ~Value();

  TypeKind kind() const;
  bool is_null() const { return word_ == 0; }
  bool is_shared_object() const;  // a reference into the heap (not null, not an unboxed scalar)

  std::int64_t as_int() const;        // integer; TypeMismatchError otherwise
  double as_float() const;            // float or integer
  bool as_bool() const;
  std::string as_string() const;      // string
  std::string_view string_view() const;  // string; valid while this Value lives
  std::vector<std::uint8_t> as_bytes() const;  // binary

  // Language-neutral equality (by value for scalars, strings and binaries; identity otherwise).
  bool equals(const Value& other) const;
  bool operator==(const Value& other) const { return equals(other); }
  std::uint64_t hash() const;
  bool same_object(const Value& other) const { return word_ == other.word_; }
  // Whether this value can be used in the current attachment: a scalar, or a shared object
  // taken since the last attach (false for one that outlived a detach).
  bool is_current() const;
  std::string repr() const;  // debugging text

  // Raw tagged word and construction from one (takes a new root). For bindings.
  // REQUIRES for from_raw: the object is kept alive by something else meanwhile (e.g. another
  // Value, or the read scope a view's word was read in: inside a scope from_raw roots as
  // promote() does); to read a shared slot use the typed accessors, which root before they return.
  std::uint64_t raw() const { return word_; }
  static Value from_raw(std::uint64_t word);
  // Takes over an already acquired root slot of `word` (internal: allocation and rooted loads).
  static Value adopt_root(std::uint64_t word, void* root_slot);
  // The inverse, for bindings' heap-pressure paths, which may not call root_release (heap.hpp,
  // the hook's REQUIRES): takes this value's root slot out and returns it (nullptr when the value
  // held none); the value is then null and holds no root. The caller owns the slot and empties it
  // with the deletion barrier (store_ref of null) before it reuses or gives it back.
  void* take_root_slot() noexcept {
    void* slot = root_;
    root_ = nullptr;
    word_ = 0;
    return slot;
  }

 protected:
  void reset(std::uint64_t word);
  void copy_from(const Value& o);
  // word_ for an operation on the shared object: InvalidArgumentError for an empty handle
  // (default-constructed, moved from), NotAttachedError for one of an ended attachment. Inline:
  // every operation of a rooted handle pays it (two loads and a compare).
  std::uint64_t live() const {
    if (__builtin_expect(root_ != nullptr && epoch_ == detail::g_attachment_epoch.load(std::memory_order_acquire), 1))
      return word_;
    return live_slow();
  }
  std::uint64_t live_slow() const;
  std::uint64_t word_ = 0;
  void* root_ = nullptr;       // this process's root-table slot when word_ is a reference
  std::uint64_t epoch_ = 0;    // attachment the root belongs to (roots die with a detach)
};

Value new_binary(const void* data, std::size_t n);
inline Value new_binary(const std::vector<std::uint8_t>& b) { return new_binary(b.data(), b.size()); }

class List : public Value {
 public:
  List() = default;
  explicit List(const Value& v);  // TypeMismatchError unless v is a list
  explicit List(Value&& v);       // the same, taking v's root over instead of a second one
  std::size_t size() const;
  Value get(std::size_t i) const;
  Value operator[](std::size_t i) const { return get(i); }
  void set(std::size_t i, const Value& v);
  void append(const Value& v);
  void insert(std::size_t i, const Value& v);
  Value erase(std::size_t i);
  void clear();
  std::vector<Value> items() const;
};
List new_list(std::size_t capacity = 0);

class Set : public Value {
 public:
  Set() = default;
  explicit Set(const Value& v);
  explicit Set(Value&& v);
  std::size_t size() const;
  bool contains(const Value& key) const;
  bool add(const Value& key);      // true when newly added
  bool remove(const Value& key);   // true when it was there
  void clear();
  std::vector<Value> items() const;
};
Set new_set(std::size_t capacity = 0);

class Map : public Value {
 public:
  Map() = default;
  explicit Map(const Value& v);
  explicit Map(Value&& v);
  std::size_t size() const;
  bool contains(const Value& key) const;
  std::optional<Value> get(const Value& key) const;
  Value at(const Value& key) const;  // KeyError when missing
  bool put(const Value& key, const Value& value);  // true when the key was new
  bool remove(const Value& key);
  void clear();
  std::vector<std::pair<Value, Value>> items() const;
};
Map new_map(std::size_t capacity = 0);

// An ordered map (a B+tree in the heap). Keys of one map are all numbers (integers and floats,
// compared by value: 1 == 1.0 < 1.5), all strings (by code point) or all binaries (by bytes); any
// other key, a key of another category, or a NaN throws TypeMismatchError and changes nothing.
// Each call is atomic across processes; a process killed inside one leaves the map before or
// after it. Range reads see one instant; a Cursor reads in batches, each continuing after the
// last key returned, so it sees each key once, in order, with changes made past that key.
// One end of a key range (SortedMap): unbounded, or a key that belongs to the range or not.
struct KeyBound {
  std::optional<Value> key;
  bool inclusive = true;
  static KeyBound none() { return {}; }
  static KeyBound at(const Value& k, bool inclusive = true) { return {k, inclusive}; }
};

class SortedMap : public Value {
 public:
  using Entry = std::pair<Value, Value>;
  using Bound = KeyBound;
  class Cursor;

  SortedMap() = default;
  explicit SortedMap(const Value& v);  // TypeMismatchError unless v is a sorted map
  std::size_t size() const;
  bool contains(const Value& key) const;
  std::optional<Value> get(const Value& key) const;
  Value at(const Value& key) const;                 // KeyError when missing
  bool put(const Value& key, const Value& value);   // true when the key was new
  bool remove(const Value& key);                    // true when it was there
  void clear();
  std::optional<Entry> first() const;
  std::optional<Entry> last() const;
  // Greatest key <= key (floor), least >= key (ceiling), greatest < key (lower), least > (higher).
  std::optional<Entry> floor(const Value& key) const;
  std::optional<Entry> ceiling(const Value& key) const;
  std::optional<Entry> lower(const Value& key) const;
  std::optional<Entry> higher(const Value& key) const;
  // The entries between lo and hi, ascending (descending when reverse), at most `limit`; one
  // instant. range(Bound::at(a), Bound::at(b, false)) is [a, b).
  std::vector<Entry> range(const Bound& lo, const Bound& hi, bool reverse = false,
                           std::size_t limit = std::numeric_limits<std::size_t>::max()) const;
  std::vector<Value> keys(const Bound& lo, const Bound& hi, bool reverse = false,
                          std::size_t limit = std::numeric_limits<std::size_t>::max()) const;
  Cursor cursor(const Bound& lo = {}, const Bound& hi = {}, bool reverse = false, std::size_t batch = 256) const;
  std::vector<Entry> items() const { return range({}, {}); }
  // The number of keys < key (<= key if inclusive); the entry at a position (negative: from the
  // end; IndexError out of range). Both walk the leaves before the position (O(n / 24)).
  std::size_t rank(const Value& key, bool inclusive = false) const;
  Entry entry_at(std::int64_t i) const;
};
SortedMap new_sorted_map();

// Iterates a range of a SortedMap in order (or reversed), fetching `batch` entries per lock.
class SortedMap::Cursor {
 public:
  std::optional<Entry> next();

 private:
  friend class SortedMap;
  Cursor(const SortedMap& map, Bound lo, Bound hi, bool reverse, std::size_t batch)
      : map_(map), lo_(std::move(lo)), hi_(std::move(hi)), reverse_(reverse), batch_(batch) {}
  SortedMap map_;
  Bound lo_, hi_;
  bool reverse_;
  std::size_t batch_;
  std::vector<Entry> buf_;
  std::size_t at_ = 0;
  bool done_ = false;
};

// ---- classes -------------------------------------------------------------------------------

struct FieldDesc {
  std::string name;
  TypeKind type;
  std::string class_name;
  std::uint32_t slot;
};

// One immutable version of a shared class (or a builtin class).
class Class {
 public:
  Class() = default;
  explicit Class(const detail::ClassRecord* rec) : rec_(rec) {}
  bool valid() const { return rec_ != nullptr; }
  std::string name() const;
  TypeKind kind() const;
  std::uint32_t version() const;
  std::vector<FieldDesc> fields() const;  // live fields; a deleted one's kept slot is not listed
  std::vector<Class> versions() const;  // every version of this name, oldest first
  bool operator==(const Class& o) const { return rec_ == o.rec_; }
  const detail::ClassRecord* record() const { return rec_; }

 private:
  const detail::ClassRecord* rec_ = nullptr;
};

// Finds the version of `name` with exactly these fields (names and types, any order) or creates
// a new version.
Class define_class(const std::string& name, const std::vector<FieldSpec>& fields);
// All versions of `name`, oldest first (empty if none).
std::vector<Class> class_versions(const std::string& name);
// The shared class of any value (builtin classes for builtins).
Class class_of(const Value& v);

class ObjectView;
struct FieldValue;

// A field resolved once against a class version: access through it skips the name lookup when
// the object still has that version.
class Field {
 public:
  Field() = default;
  Field(const Class& cls, const std::string& name);  // KeyError when the class lacks it
  const std::string& name() const { return name_; }

 private:
  friend class Object;
  friend class ObjectView;
  friend ObjectView new_object_view(const Class& cls, std::initializer_list<FieldValue> values);
  const detail::ClassRecord* cls_ = nullptr;
  const detail::FieldInfo* info_ = nullptr;
  std::string name_;
};

class Object : public Value {
 public:
  Object() = default;
  explicit Object(const Value& v);  // TypeMismatchError unless v is a user object
  explicit Object(Value&& v);       // the same, taking v's root over instead of a second one
  Class cls() const;
  bool has_field(std::string_view name) const;
  Value get(std::string_view name) const;  // KeyError when absent
  Value get(const Field& f) const;
  void set(std::string_view name, const Value& v);  // KeyError when absent, TypeMismatchError
  void set(const Field& f, const Value& v);
  // Throws what set(name, v) would throw (KeyError, TypeMismatchError) and stores nothing.
  void check(std::string_view name, const Value& v) const;
  // Stores several fields, all or none: every name and value is checked first (KeyError,
  // TypeMismatchError: nothing stored), then each is stored. Each store is atomic on its own, the
  // group is not (a transaction makes it one); a schema change by another thread between the
  // checks and the stores fails the first store it affects, with the stores before it done.
  void set_fields(std::span<const std::pair<std::string_view, Value>> fields);
  // Schema evolution in place: switches the object to a version with (without) the field.
  void add_field(const FieldSpec& field);
  void remove_field(std::string_view name);
};
Object new_object(const Class& cls);

// ---- read scopes: borrowed references -----------------------------------------------------------

// While a ReadScope lives on this thread, reads through the view types below borrow references:
// no GC root is taken per reference read, which makes a traversal's reads plain loads. A view is
// valid until this thread's outermost ReadScope ends, like a std::string_view of its string: keep
// nothing from a scope but Values (promote()). The collector waits for a scope that began before
// its cycle to end before it frees memory (gc/README.md, "Read scopes"), so a scope should be
// short: past a bound (1 s) the cycle is given up and frees nothing.
//
// Inside a scope a thread may read, promote, allocate (new_object_view below: no root per
// object either) and store, but must not wait for the collector: collect() and starting a
// transaction throw InvalidArgumentError, an allocation that finds the heap full (or that would
// pass the client's --client-live-limit) OutOfMemoryError, instead of waiting for a cycle that
// waits for the scope. A scope cannot be
// opened inside a transaction (InvalidArgumentError). Scopes nest; the outermost one counts.
//
//   colors::ReadScope scope;
//   colors::ObjectView part{db_root};              // a view of a held Object
//   std::int64_t x = part.get(x_field).as_int();
//   colors::ListView to = part.get(to_field).as_list();
//   for (std::size_t i = 0; i < to.size(); ++i) visit(to.get(i).as_object());
class ReadScope {
 public:
  ReadScope();   // NotAttachedError, InvalidArgumentError inside a transaction
  ~ReadScope();
  ReadScope(const ReadScope&) = delete;
  ReadScope& operator=(const ReadScope&) = delete;
  // Whether this thread is inside a read scope.
  static bool active();
};

class ObjectView;
class ListView;
class SortedMapView;

// A value read inside a read scope: scalars by value, references borrowed. Every accessor throws
// InvalidArgumentError when called outside a read scope; one used after its scope ended (in a
// later scope) is undefined behaviour, as for a dangling string_view.
class ValueView {
 public:
  ValueView() = default;
  // A view of a value this thread holds; NotAttachedError for one of an ended attachment (a
  // detach, an attach to another server, a fork's child), whose word means nothing in this heap.
  explicit ValueView(const Value& v);
  TypeKind kind() const;
  bool is_null() const { return word_ == 0; }
  std::int64_t as_int() const;           // integer; TypeMismatchError otherwise
  double as_float() const;               // float or integer
  bool as_bool() const;
  std::string_view string_view() const;  // string; valid while the scope lives
  ObjectView as_object() const;          // TypeMismatchError unless a user object
  ListView as_list() const;              // TypeMismatchError unless a list
  SortedMapView as_sorted_map() const;   // TypeMismatchError unless a sorted map
  bool same_object(const ValueView& other) const { return word_ == other.word_; }
  std::uint64_t raw() const { return word_; }
  // A Value holding this value beyond the scope (a GC root for a reference).
  Value promote() const;

  // Scalars as views, for new_object_view and ObjectView::set. One outside the unboxed ranges
  // (60-bit integers; floats with a binary exponent in [-126, 128], and zeros) is allocated, kept
  // by the scope like any allocation in it; those need a scope.
  static ValueView integer(std::int64_t v);
  static ValueView floating(double v);
  static ValueView boolean(bool v);

 protected:
  friend class ObjectView;
  friend class ListView;
  friend class SortedMapView;
  friend ValueView new_string_view(std::string_view utf8);
  friend ValueView new_set_view(std::span<const ValueView> keys);
  friend ValueView new_map_view(std::span<const ValueView> keys, std::span<const ValueView> values);
  explicit ValueView(std::uint64_t word) : word_(word) {}
  std::uint64_t word_ = 0;
};

class ObjectView : public ValueView {
 public:
  ObjectView() = default;
  explicit ObjectView(const Object& o) : ValueView(o) {}
  Class cls() const;
  ValueView get(const Field& f) const;         // as Object::get, borrowed
  ValueView get(std::string_view name) const;  // KeyError when absent
  // A field read and converted in one call, as get(f).as_int() (as_float, as_bool, string_view)
  // would: half the calls of a traversal that reads typed fields. get_object gives a null view
  // (is_null()) for a null field, where get(f).as_object() throws.
  std::int64_t get_int(const Field& f) const;
  double get_float(const Field& f) const;
  bool get_bool(const Field& f) const;
  std::string_view get_string(const Field& f) const;
  ObjectView get_object(const Field& f) const;
  // As Object::set (KeyError, TypeMismatchError), with a value read or allocated in the scope.
  void set(const Field& f, const ValueView& v);
  Object promote() const;

 private:
  friend class ValueView;
  friend ObjectView new_object_view(const Class& cls, std::initializer_list<FieldValue> values);
  explicit ObjectView(std::uint64_t word) : ValueView(word) {}
};

// ---- allocation in a read scope ----
// Objects allocated inside a read scope take no GC root each: the scope keeps them until it ends
// (gc/README.md, "Read scopes"). To keep one beyond the scope, store it (ObjectView::set, or a
// container operation with its promote()) or promote it. Each throws InvalidArgumentError outside
// a scope, and when the heap is full (the scope cannot wait for the collector: leave it, retry).
struct FieldValue {
  const Field& field;
  ValueView value;
};
// A new object of `cls` with `values` in its fields (the others null), written before anything
// else can see it (KeyError for a field `cls` lacks, TypeMismatchError for a value its type refuses).
ObjectView new_object_view(const Class& cls, std::initializer_list<FieldValue> values = {});
ValueView new_string_view(std::string_view utf8);  // InvalidArgumentError unless valid UTF-8

class ListView : public ValueView {
 public:
  ListView() = default;
  explicit ListView(const List& l) : ValueView(l) {}
  std::size_t size() const;
  ValueView get(std::size_t i) const;  // IndexError out of range
  ValueView operator[](std::size_t i) const { return get(i); }
  // Up to `max` elements from index `from` on into `out`, all of them in
  // the list at one instant; returns how many (0 from the end on), and the list's size at that
  // instant in `*size` when given. One validated read of the list for the lot, where get() makes
  // one per element: the way to iterate.
  std::size_t read(std::size_t from, ValueView* out, std::size_t max, std::size_t* size = nullptr) const;

 private:
  friend class ValueView;
  friend ListView new_list_view(std::span<const ValueView> items);
  explicit ListView(std::uint64_t word) : ValueView(word) {}
};

// A new list holding `items` in order, allocated in the read scope like new_object_view's objects
// (no root: the scope keeps it; store or promote it to keep it), its elements written before
// anything else can see it. Each item is a view read or allocated in the scope, or a ValueView of
// a Value this thread holds. InvalidArgumentError outside a scope, OutOfMemoryError when the heap
// is full (the scope cannot wait for the collector).
ListView new_list_view(std::span<const ValueView> items);
inline ListView new_list_view(std::initializer_list<ValueView> items) {
  return new_list_view(std::span<const ValueView>(items.begin(), items.size()));
}
// A new set holding `keys`, and a new map from keys[i] to values[i], allocated in the read scope
// like new_list_view's lists, each born with its table filled: what adds or puts in that order
// leave (a key equal to an earlier one keeps the earlier key; a map takes the later value).
// InvalidArgumentError outside a scope and for spans of different lengths; OutOfMemoryError when
// the heap is full.
ValueView new_set_view(std::span<const ValueView> keys);
ValueView new_map_view(std::span<const ValueView> keys, std::span<const ValueView> values);

// A sorted map read in a read scope: lookups and ranges without the map's lock and without a root
// per entry (SortedMap's locked reads take both). get() is linearizable like SortedMap::get. read()
// walks the leaves, each read at its own instant, like one batch of a Cursor in Java's
// ConcurrentSkipListMap sense of weakly consistent: keys ascend, each at most once, every entry is
// one the map held during the read, and a key in the map for the whole read is returned (unless
// `max` ends the read first). To go on after a full read, read again from Bound::at(last key,
// false). Keys are views: ValueView::integer / floating, new_string_view, or keys read before.
class SortedMapView : public ValueView {
 public:
  using Entry = std::pair<ValueView, ValueView>;
  // One end of a range: unbounded, or a key that belongs to the range or not.
  struct Bound {
    ValueView key;
    bool present = false;
    bool inclusive = true;
    static Bound none() { return {}; }
    static Bound at(const ValueView& k, bool inclusive = true) { return {k, true, inclusive}; }
  };

  SortedMapView() = default;
  explicit SortedMapView(const SortedMap& m) : ValueView(m) {}
  // The value of `key`, borrowed; nullopt when absent. TypeMismatchError for a key that is not of
  // the map's key category (as SortedMap::get).
  std::optional<ValueView> get(const ValueView& key) const;
  bool contains(const ValueView& key) const { return get(key).has_value(); }
  // Up to `max` entries with lo <= key <= hi (as the bounds say), ascending, into `out`; returns
  // how many (fewer than `max`: the range ended).
  std::size_t read(const Bound& lo, const Bound& hi, Entry* out, std::size_t max) const;

 private:
  friend class ValueView;
  explicit SortedMapView(std::uint64_t word) : ValueView(word) {}
};

// ---- repositories and channels ---------------------------------------------------------------

// A repository or channel can be deleted (delete_repository, delete_channel) by any process:
// its value (its queued values) stop being roots and its classes-space memory is reused. A
// handle keeps referring to the repository or channel it was opened on: once that is deleted,
// every use of the handle throws KeyError naming it, also after the name was created again
// (open it again by name to use the new one). A thread blocked in send or receive on a channel
// being deleted wakes and gets that KeyError.
class Repository {
 public:
  Value get() const;
  void set(const Value& v);
  // True once the repository this handle was opened on has been deleted (by any process).
  bool deleted() const;
  const std::string& name() const { return name_; }
  // The repository record, usable as a monitor object.
  const void* address() const { return rec_; }

 private:
  friend Repository repository(const std::string&);
  detail::RepositoryRecord* rec_ = nullptr;
  std::uint64_t gen_ = 0;
  std::string name_;
};
// The repository called `name`, created (holding null) if it does not exist.
Repository repository(const std::string& name);
// Deletes the repository called `name`; returns false if there is none.
bool delete_repository(const std::string& name);

class Channel {
 public:
  // The largest capacity channel() accepts (a channel's slots live in the classes space).
  static constexpr std::uint32_t kMaxCapacity = 1u << 16;
  // Blocks until there is room. timeout_ms < 0: no limit. Returns false on timeout.
  bool send(const Value& v, std::int64_t timeout_ms = -1);
  bool try_send(const Value& v) { return send(v, 0); }
  // Blocks until a value arrives. Returns std::nullopt on timeout.
  std::optional<Value> receive(std::int64_t timeout_ms = -1);
  // Same, spinning `spin_ns` before blocking (< 0: the COLORS_SPIN_NS default).
  std::optional<Value> receive(std::int64_t timeout_ms, std::int64_t spin_ns);
  std::optional<Value> try_receive() { return receive(0); }
  std::uint32_t capacity() const;
  // True once the channel this handle was opened on has been deleted (by any process).
  bool deleted() const;
  const std::string& name() const { return name_; }

 private:
  friend Channel channel(const std::string&, std::uint32_t);
  detail::ChannelRecord* rec_ = nullptr;
  std::uint64_t gen_ = 0;
  std::string name_;
};
// The channel called `name`, created with `capacity` slots (1..Channel::kMaxCapacity, else
// InvalidArgumentError) if it does not exist; an existing channel keeps its capacity.
Channel channel(const std::string& name, std::uint32_t capacity = 64);
// Deletes the channel called `name`, dropping what it holds; returns false if there is none.
bool delete_channel(const std::string& name);

// ---- transactions ----------------------------------------------------------------------------

// An atomic, isolated group of reads and writes of shared objects, across the threads, processes
// and languages of one heap (doc/DESIGN.md, "Transactions"):
//
//   colors::Transaction tx;          // begins (or joins the enclosing one: nesting is flat)
//   a.set("balance", ...); b.set("balance", ...);
//   tx.commit();                     // all or nothing; the destructor rolls back if not committed
//
// Inside a transaction, field writes, container operations, allocations and repository set() are
// published at commit all at once, or never; reads see a consistent state (serializable with
// every other transaction). A process that dies in one is rolled back by the server. Conflicts
// throw TransactionConflictError (the transaction is then rolled back when it ends; atomically()
// retries it); a timeout or an undo log beyond its limit throws TransactionAbortedError. Channel
// operations, remote calls, schema evolution and repository deletion inside a transaction throw
// InvalidArgumentError (they cannot be rolled back). Code outside transactions is not isolated
// from them: it can read a transaction's writes before its commit.
// REQUIRES: a Transaction is committed, rolled back and destroyed on the thread that made it
// (commit() and rollback() elsewhere throw InvalidArgumentError; a destructor cannot, so one run
// on another thread does nothing, and the making thread stays inside the transaction).
class Transaction {
 public:
  Transaction();
  // The whole transaction fails with TransactionAbortedError once it has run longer than this.
  explicit Transaction(std::chrono::milliseconds timeout);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  // Commits (the outermost) or ends this level (an inner one). Throws TransactionConflictError or
  // TransactionAbortedError, the transaction then rolled back; InvalidArgumentError on misuse
  // (already ended, another thread, an inner transaction still open, no longer attached).
  void commit();
  // Rolls back (the outermost), or ends this level and dooms the whole transaction (an inner one).
  void rollback();
  bool active() const { return open_; }

 private:
  void check_usable(const char* what) const;
  bool open_ = true;
  int depth_ = 0;
  long tid_ = 0;
};

// Whether the calling thread runs a transaction.
bool in_transaction();

namespace detail {
// Sleeps before retry `attempt` (1-based) of a conflicting transaction: randomised, exponential.
void transaction_backoff(int attempt);
// From this attempt on, atomically() runs the transaction with reads that hold what they read as
// writes do (transaction.hpp, tx_escalate), so a reader cannot starve behind writers.
inline constexpr int kEscalateAttempt = 3;
void transaction_escalate();
}  // namespace detail

// Runs f() in a transaction and commits it; on TransactionConflictError, rolls back and runs it
// again, up to `retries` more times. Inside an enclosing transaction f() joins it and a conflict
// propagates to the outermost (a flat transaction cannot retry a part of itself).
template <class F>
auto atomically(F&& f, int retries = 100) -> decltype(f()) {
  const bool nested = in_transaction();
  for (int attempt = 0;; ++attempt) {
    try {
      Transaction tx;
      if (!nested && attempt >= detail::kEscalateAttempt) detail::transaction_escalate();
      if constexpr (std::is_void_v<decltype(f())>) {
        f();
        tx.commit();
        return;
      } else {
        auto result = f();
        tx.commit();
        return result;
      }
    } catch (const TransactionConflictError&) {
      if (nested || attempt >= retries) throw;
    }
    detail::transaction_backoff(attempt + 1);
  }
}

// ---- monitors --------------------------------------------------------------------------------

// Holds the monitor of a shared object for its lifetime (re-entrant). wait() releases it while
// waiting; notify_all() wakes every waiter of the monitor.
class Monitor {
 public:
  explicit Monitor(const Value& obj);
  explicit Monitor(const Repository& repo);
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;
  // Returns false on timeout (timeout_ms < 0: no limit).
  bool wait(std::int64_t timeout_ms = -1);
  void notify_all();

 private:
  const void* obj_;
  Value keep_;  // keeps the object alive while locked
};

// ---- deep copies of builtins -----------------------------------------------------------------

namespace detail {
template <class T>
void require_fits_shared_integer(T v) {
  if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(long long)) {
    if (v > static_cast<T>(std::numeric_limits<long long>::max()))
      throw OverflowError("unsigned value " + std::to_string(v) + " does not fit a shared integer (64-bit signed)");
  }
}
}  // namespace detail

// Scalars, strings and Values; the overloads below recurse into standard containers.
template <class T>
Value copy_to(const T& v) {
  if constexpr (std::is_same_v<T, Value> || std::is_base_of_v<Value, T>) {
    return v;
  } else if constexpr (std::is_same_v<T, bool>) {
    return Value(v);
  } else if constexpr (std::is_integral_v<T>) {
    detail::require_fits_shared_integer(v);
    return Value(static_cast<long long>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    return Value(static_cast<double>(v));
  } else {
    return Value(std::string_view(v));
  }
}
template <class T> Value copy_to(const std::vector<T>& v);
template <class T> Value copy_to(const std::set<T>& v);
template <class K, class V> Value copy_to(const std::map<K, V>& v);

namespace detail {
// Vectors, sets and maps of scalars, strings, Values and such containers are copied inside a read
// scope: the containers, strings and boxed numbers the copy allocates take no root each and are
// filled before anyone can see them (new_list_view, new_set_view, new_map_view, new_string_view),
// and the copy is rooted once, at the end. The same values as the rooted copy.
// Only types whose conversion runs no user code (inside the scope, code that waits for the
// collector would throw): another type convertible to std::string_view takes the rooted copy.
template <class T>
struct scoped_copyable
    : std::bool_constant<std::is_arithmetic_v<T> || std::is_base_of_v<Value, T> || std::is_same_v<T, std::string> ||
                         std::is_same_v<T, std::string_view> || std::is_same_v<T, const char*> ||
                         std::is_same_v<T, char*>> {};
template <class T> struct scoped_copyable<std::vector<T>> : scoped_copyable<T> {};
template <class T> struct scoped_copyable<std::set<T>> : scoped_copyable<T> {};
template <class K, class V>
struct scoped_copyable<std::map<K, V>> : std::bool_constant<scoped_copyable<K>::value && scoped_copyable<V>::value> {};

// A copy that would allocate more objects than this is made rooted: a scope holds back every
// collector cycle that starts while it is open (gc/README.md, "Read scopes").
inline constexpr std::size_t kScopedCopyMax = std::size_t{1} << 16;

// The objects a scoped copy of `v` allocates at most (counting stops past kScopedCopyMax).
template <class T>
std::size_t scoped_copy_objects(const T&) {
  return 1;
}
template <class T>
std::size_t scoped_copy_objects(const std::vector<T>& v);
template <class T>
std::size_t scoped_copy_objects(const std::set<T>& v);
template <class K, class V>
std::size_t scoped_copy_objects(const std::map<K, V>& v);
template <class T>
std::size_t scoped_copy_objects(const std::vector<T>& v) {
  if constexpr (std::is_arithmetic_v<T>) {
    return 1 + v.size();
  } else {
    std::size_t n = 1;
    for (const T& x : v) {
      n += scoped_copy_objects(x);
      if (n > kScopedCopyMax) break;
    }
    return n;
  }
}
template <class T>
std::size_t scoped_copy_objects(const std::set<T>& v) {
  std::size_t n = 2;  // the set and its table
  for (const T& x : v) {
    n += scoped_copy_objects(x);
    if (n > kScopedCopyMax) break;
  }
  return n;
}
template <class K, class V>
std::size_t scoped_copy_objects(const std::map<K, V>& v) {
  std::size_t n = 2;  // the map and its table
  for (const auto& [k, x] : v) {
    n += scoped_copy_objects(k) + scoped_copy_objects(x);
    if (n > kScopedCopyMax) break;
  }
  return n;
}

// copy_to's value, built in the current read scope.
template <class T>
ValueView copy_in_scope(const T& v) {
  if constexpr (std::is_same_v<T, Value> || std::is_base_of_v<Value, T>) {
    return ValueView(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    return ValueView::boolean(v);
  } else if constexpr (std::is_integral_v<T>) {
    require_fits_shared_integer(v);
    return ValueView::integer(static_cast<std::int64_t>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    return ValueView::floating(static_cast<double>(v));
  } else {
    return new_string_view(std::string_view(v));
  }
}
template <class T>
ValueView copy_in_scope(const std::vector<T>& v);
template <class T>
ValueView copy_in_scope(const std::set<T>& v);
template <class K, class V>
ValueView copy_in_scope(const std::map<K, V>& v);
template <class T>
ValueView copy_in_scope(const std::vector<T>& v) {
  std::vector<ValueView> items;
  items.reserve(v.size());
  for (const T& x : v) items.push_back(copy_in_scope(x));
  return new_list_view(items);
}
template <class T>
ValueView copy_in_scope(const std::set<T>& v) {
  std::vector<ValueView> keys;
  keys.reserve(v.size());
  for (const T& x : v) keys.push_back(copy_in_scope(x));
  return new_set_view(keys);
}
template <class K, class V>
ValueView copy_in_scope(const std::map<K, V>& v) {
  std::vector<ValueView> keys, values;
  keys.reserve(v.size());
  values.reserve(v.size());
  for (const auto& [k, x] : v) {
    keys.push_back(copy_in_scope(k));
    values.push_back(copy_in_scope(x));
  }
  return new_map_view(keys, values);
}

// copy_to(c) built in a read scope when it can be (above), else nullopt: the rooted copy.
template <class C>
std::optional<Value> copy_scoped(const C& c) {
  if constexpr (scoped_copyable<C>::value) {
    if (!in_transaction() && scoped_copy_objects(c) <= kScopedCopyMax) {
      try {
        ReadScope scope;
        return copy_in_scope(c).promote();
      } catch (const OutOfMemoryError&) {
        // A full heap: a scope cannot wait for the collector, the rooted copy can.
      }
    }
  }
  return std::nullopt;
}
}  // namespace detail

template <class T>
Value copy_to(const std::vector<T>& v) {
  if (std::optional<Value> scoped = detail::copy_scoped(v)) return std::move(*scoped);
  List l = new_list(v.size());
  for (const T& x : v) l.append(copy_to(x));
  return l;
}
template <class T>
Value copy_to(const std::set<T>& v) {
  if (std::optional<Value> scoped = detail::copy_scoped(v)) return std::move(*scoped);
  Set s = new_set(v.size());
  for (const T& x : v) s.add(copy_to(x));
  return s;
}
template <class K, class V>
Value copy_to(const std::map<K, V>& v) {
  if (std::optional<Value> scoped = detail::copy_scoped(v)) return std::move(*scoped);
  Map m = new_map(v.size());
  for (const auto& [k, x] : v) m.put(copy_to(k), copy_to(x));
  return m;
}

// ---- heap inspection -------------------------------------------------------------------------

struct HeapStats {
  std::size_t capacity = 0, free_bytes = 0, free_chunks = 0, largest_free = 0;
  std::size_t allocated_bytes_total = 0;
};
HeapStats heap_stats();

// Statistics of one collector cycle (phase times in nanoseconds, sizes in bytes).
struct GcStats {
  std::uint64_t cycle = 0;  // number of cycles finished so far (0: none yet)
  std::uint64_t walk_ns = 0, mark_ns = 0, remark_ns = 0, sweep_ns = 0, total_ns = 0;
  std::uint64_t marking_passes = 0;
  std::uint64_t objects_marked = 0, bytes_marked = 0, objects_freed = 0, bytes_freed = 0;
  std::uint64_t heap_used_before = 0, heap_used_after = 0, largest_free = 0, threads = 0;
  std::uint64_t pending_objects = 0;  // objects the remark took from the pending set (overwritten references)
};
// Asks the server's collector for a cycle that starts after this call, waits until it finished
// (timeout_ms < 0: no limit) and returns its statistics. Garbage dropped before the call is
// freed by the second such collect() at the latest. Throws Error when no collector runs, or on
// timeout.
GcStats collect(std::int64_t timeout_ms = -1);
// Statistics of the last finished cycle.
GcStats gc_stats();

// Runs the heap verifier (REQUIRES: no mutator running). Returns the report; `ok` false on errors.
struct VerifyResult {
  bool ok;
  std::string report;
};
VerifyResult verify_heap();

}  // namespace colors
