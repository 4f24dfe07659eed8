// The public C++ API (include/colors/colors.hpp) over the internal modules.
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "collector_barrier.hpp"
#include "barrier.hpp"
#include "channel.hpp"
#include "classes.hpp"
#include "colors/colors.hpp"
#include "containers.hpp"
#include "durable_commit.hpp"
#include "heap.hpp"
#include "monitor.hpp"
#include "objects.hpp"
#include "read_scope.hpp"
#include "repository.hpp"
#include "roots.hpp"
#include "segment.hpp"
#include "server_link.hpp"
#include "server_watch.hpp"
#include "session.hpp"
#include "sorted_map.hpp"
#include "transaction.hpp"
#include "verifier.hpp"

namespace colors {

namespace detail {
std::atomic<std::uint64_t> g_attachment_epoch{0};  // bumped at every attach and detach (session.hpp)
}  // namespace detail

using namespace detail;

namespace {

std::mutex g_attach_mu;
// Never destroyed: at process exit other threads (a JVM's daemon threads, Python threads) may still
// be inside the library while static destructors run, and would fault on an unmapped segment. The
// kernel unmaps it and closes the connection when the process ends.
std::unique_ptr<Segment>& g_segment = *new std::unique_ptr<Segment>();  // GUARDED_BY(g_attach_mu)
// The connection to the server, its watcher, and what a reattach needs. Taken after g_attach_mu
// (attach, detach) or alone (reattach_after_server_death); no other lock is taken under it.
std::mutex g_link_mu;
int g_link_fd = -1;                        // GUARDED_BY(g_link_mu)
// What a reattach needs. Written only by attach, under both locks, so either lock reads them.
std::string g_socket_path;                 // the socket of this attachment
std::uint64_t g_segment_dev = 0, g_segment_ino = 0;  // the mapped file

// Every API entry that touches shared state goes through here: attached, and server not stopped.
Metadata* meta() {
  Metadata* m = current_meta();
  check_server_state(m);
  return m;
}

// Entries that publish or need the server (repositories, channels, classes) also refuse once the
// server's connection is gone (server_watch.hpp): what they publish would reach nobody.
Metadata* meta_with_server() {
  Metadata* m = meta();
  check_server_link();
  return m;
}

std::int64_t to_ns(std::int64_t timeout_ms) { return timeout_ms < 0 ? -1 : timeout_ms * 1000000; }

}  // namespace

// ---- attachment ----

namespace detail {
// Drops every per-process trace of a segment (TLAB cursors, free root slots, Values' roots).
// Used by detach and by in-process test segments.
void reset_process_state() {
  forget_all_tlabs();
  roots_forget_process_state();
  g_attachment_epoch.fetch_add(1, std::memory_order_acq_rel);
}
}  // namespace detail

// fork() of an attached process: the child inherits the mapping, the server connection and this
// thread's TLAB, but they are the parent's. Using them would let two processes allocate from one
// TLAB and release each other's roots, so the child starts detached (every call throws
// NotAttachedError until it attaches again, as a new client). The child handler runs with no other
// thread alive: it touches atomics and re-initialises the locks another parent thread may have
// held at the fork. The prepare handler takes the attach lock, so no fork happens in the middle of
// another thread's attach or detach: the child would inherit the half-made state (a new mapping
// no variable names yet, which its own attach then finds in the way). The parent handler releases
// it; the child's is a fresh one.
namespace {

std::atomic<bool> g_inherited{false};  // the child still has the parent's mapping and socket

void on_fork_prepare() { g_attach_mu.lock(); }
void on_fork_parent() { g_attach_mu.unlock(); }

void on_fork_child() {
  // The child has only the forking thread: a mutex another parent thread held (an attach or a
  // detach under way, while no segment was current) would stay locked for good.
  new (&g_attach_mu) std::mutex();
  new (&g_link_mu) std::mutex();
  forget_own_client_ids();
  if (current_meta_or_null() == nullptr) return;
  // No write of the child reaches the heap before it attaches itself: the server neither tracks
  // nor stops a process it does not know (write_tracking.hpp).
  if (g_segment) g_segment->privatize();
  g_inherited.store(true, std::memory_order_relaxed);
  forget_all_tlabs();
  roots_forget_after_fork();
  g_attachment_epoch.fetch_add(1, std::memory_order_acq_rel);  // the parent's Values are inert here
  forget_server_watch_after_fork();
  set_current_client(0, 0);
  set_current_meta(nullptr);
}

// REQUIRES: g_attach_mu held. Drops what a fork left behind without a word to the server (the
// connection is the parent's: only our copy of the descriptor is closed).
void drop_inherited_attachment() {
  if (!g_inherited.exchange(false, std::memory_order_acq_rel)) return;
  {
    std::lock_guard<std::mutex> link(g_link_mu);
    if (g_link_fd >= 0) ::close(g_link_fd);
    g_link_fd = -1;
  }
  g_segment.reset();  // unmaps the child's view only
}

}  // namespace

namespace {
// REQUIRES: g_attach_mu held, attached. Ends this process's attachment: retires its TLAB, drops
// its roots and Values, stops the watcher, closes the connection (the server then releases the
// client's roots and TLABs) and unmaps the segment.
void end_attachment() {
  retire_thread_tlab();
  forget_all_tlabs();
  roots_forget_process_state();
  g_attachment_epoch.fetch_add(1, std::memory_order_acq_rel);
  int link_fd = -1;
  {
    std::lock_guard<std::mutex> link(g_link_mu);
    stop_server_watch();  // before the fd closes: the watcher polls it
    link_fd = std::exchange(g_link_fd, -1);
  }
  // The mapping goes below, and with it the record of what it wrote since the server's last scan
  // (write_tracking.hpp): the gap tells the server before it sees the connection close.
  g_segment->meta()->clients[current_client_slot()].write_tracking_gap.store(1, std::memory_order_seq_cst);
  set_current_meta(nullptr);  // before the client id goes, the reverse of attach's order
  set_current_client(0, 0);
  stop_using_collector_barrier();
  g_segment.reset();
  // Closed after the mapping went: a write that a stale thread made through it after the server
  // consumed the gap is still covered, by the departure the close reports (WrittenPages::remove).
  close_link(link_fd);
}
}  // namespace

namespace {

// The server of this attachment died (the watcher's flag): waits up to the attach timeout for a
// successor that adopted the heap, and takes this client's slot back from it, keeping the mapping,
// the client id, the roots and every object (colors-server/README.md, "Surviving the server").
// Throws ServerGoneError after the timeout, HeapReplacedError when the server there runs another
// heap. Called by every operation that needs the server (session.hpp, check_server_link).
// Invariant: the lost flag is cleared only here and by attach, under g_link_mu, by starting a new
// watcher on the new connection; the dead connection is closed only after its watcher was joined.
void reattach_after_server_death() {
  std::lock_guard<std::mutex> link_lock(g_link_mu);
  if (!server_lost()) return;  // another thread reattached meanwhile
  Metadata* m = current_meta_or_null();
  if (m == nullptr || g_link_fd < 0) throw NotAttachedError("not attached to a colors server: call colors::attach() first");
  check_server_state(m);  // a shutdown without --keep-heap removed the heap: no successor adopts it
  ServerLink link = reattach_to_server(g_socket_path, current_client_slot(), current_client_id(), m->heap_id,
                                       attach_timeout_ms());
  struct stat st {};
  const bool same_file = ::fstat(link.segment_fd, &st) == 0 && static_cast<std::uint64_t>(st.st_dev) == g_segment_dev &&
                         static_cast<std::uint64_t>(st.st_ino) == g_segment_ino;
  ::close(link.segment_fd);
  if (!same_file || link.address != m->base || link.size != m->total_size) {
    close_link(link.fd);
    throw HeapReplacedError("the colors server at " + link.socket_path +
                            " took this client back but serves another segment file; its objects are lost to it");
  }
  stop_server_watch();  // the dead connection's watcher has exited: join it
  ::close(g_link_fd);   // no detach message: the slot goes on, on the new connection
  g_link_fd = link.fd;
  start_server_watch(link.fd);  // clears the lost flag
}

// Remembers what a reattach needs. REQUIRES: g_link_mu held.
void remember_link(const ServerLink& link) {
  g_socket_path = link.socket_path;
  g_segment_dev = g_segment_ino = 0;
  if (g_segment) g_segment->file_id(g_segment_dev, g_segment_ino);
}

}  // namespace

void attach(const std::string& socket) {
  static const bool fork_handler = (pthread_atfork(&on_fork_prepare, &on_fork_parent, &on_fork_child) == 0);
  (void)fork_handler;
  static const bool reconnect_hook = (set_reconnect_hook(&reattach_after_server_death), true);
  (void)reconnect_hook;
  std::lock_guard<std::mutex> g(g_attach_mu);
  drop_inherited_attachment();
  if (g_segment && !server_lost()) return;
  const std::string path = resolve_socket_path(socket);
  if (g_segment && path == g_socket_path &&
      g_segment->meta()->server_state.load(std::memory_order_acquire) !=
          static_cast<std::uint32_t>(ServerState::kStopped)) {
    // The server died (or stopped with --keep-heap): its successor takes this client back with
    // its objects. Only a server with another heap makes this attachment end (below); no server
    // at all is ServerGoneError after the attach timeout.
    try {
      reattach_after_server_death();
      return;
    } catch (const HeapReplacedError&) {
    }
  }
  ServerLink link = connect_to_server(path);
  // The server died and a new one answered: the old attachment ends only now, so that a failed
  // attach leaves the client its objects to read.
  if (g_segment) end_attachment();
  try {
    g_segment = Segment::open_fd(link.segment_fd, link.address, link.size);
  } catch (...) {
    close_link(link.fd);
    throw;
  }
  std::lock_guard<std::mutex> link_lock(g_link_mu);
  try {
    start_server_watch(link.fd);
  } catch (...) {
    g_segment.reset();
    close_link(link.fd);
    throw;
  }
  g_link_fd = link.fd;
  remember_link(link);
  set_current_client(link.client_id, link.slot);
  use_collector_barrier(g_segment->meta());  // before this attachment's first root
  g_attachment_epoch.fetch_add(1, std::memory_order_acq_rel);
  forget_all_tlabs();
  // Last: a thread that sees the segment finds the attachment whole (set_current_meta).
  set_current_meta(g_segment->meta());
}

void detach() {
  std::lock_guard<std::mutex> g(g_attach_mu);
  drop_inherited_attachment();
  if (!g_segment) return;
  // A monitor held across the detach would stay held for every process (monitor.hpp).
  if (const MonitorHolds h = monitors_held_here(g_segment->meta()); h.process != 0) {
    throw InvalidArgumentError(
        "detach() while threads of this process hold " + std::to_string(h.process) + " shared monitor(s) (" +
        std::to_string(h.thread) +
        " by this thread): exit them first; a monitor held across a detach would stay held for every process");
  }
  end_attachment();
}

bool is_attached() { return current_meta_or_null() != nullptr && !server_lost(); }
bool has_segment() { return current_meta_or_null() != nullptr; }

void ping() {
  std::lock_guard<std::mutex> g(g_attach_mu);
  if (!g_segment) throw NotAttachedError("not attached to a colors server: call colors::attach() first");
  check_server_link();  // after a server's death: its successor, or ServerGoneError
  std::lock_guard<std::mutex> link(g_link_mu);
  if (!ping_server(g_link_fd)) throw ServerGoneError("the colors server does not answer (it died or shut down); restart it and attach again");
}

std::uint64_t checkpoint() {
  tx_refuse("checkpoint()");
  std::lock_guard<std::mutex> g(g_attach_mu);
  if (!g_segment) throw NotAttachedError("not attached to a colors server: call colors::attach() first");
  check_server_link();
  std::lock_guard<std::mutex> link(g_link_mu);
  return request_durability(g_link_fd, false);
}

namespace detail {
void await_durable_commit() {
  std::lock_guard<std::mutex> g(g_attach_mu);
  if (!g_segment) throw NotAttachedError("not attached to a colors server");
  // The channel in the segment first (durable_commit.hpp): two hand-offs instead of the link's
  // four. The link decides whatever the channel cannot vouch for.
  if (!server_lost()) {
    Metadata* m = current_meta();
    const std::uint64_t ticket = post_sync_ticket(m);
    if (await_sync_ticket(m, ticket, [] { return server_lost(); }) == TicketOutcome::kDurable) return;
  }
  for (int attempt = 0;; ++attempt) {
    check_server_link();  // after a server's death: its successor, or ServerGoneError
    try {
      std::lock_guard<std::mutex> link(g_link_mu);
      (void)request_durability(g_link_fd, true);
      return;
    } catch (const DurabilityError&) {
      throw;
    } catch (const ServerGoneError&) {
      // The server died while this commit waited. A successor that adopts the heap takes this
      // client back, and its first capture is a full checkpoint, which covers the commit: ask it.
      // (One that restored the heap from disk instead refuses the reattach: the commit was never
      // acknowledged, and check_server_link throws.) The watcher notices the death within
      // microseconds; wait for its flag so that check_server_link reattaches.
      if (attempt >= 3) throw;
      for (int i = 0; i < 1000 && !server_lost(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}
}  // namespace detail

// ---- Value ----

void Value::reset(std::uint64_t word) {
  if (root_ != nullptr) {
    if (epoch_ == g_attachment_epoch.load(std::memory_order_acquire) && current_meta_or_null() != nullptr) {
      root_release(static_cast<std::atomic<Word>*>(root_));
    }
    root_ = nullptr;
  }
  word_ = word;
  if (is_ref(word)) {
    epoch_ = g_attachment_epoch.load(std::memory_order_acquire);
    root_ = root_acquire(word);
  }
}

Value Value::from_raw(std::uint64_t word) {
  // The raw word of a view (ValueView::raw) is a borrowed reference: rooting it needs
  // promotion's flag (read_scope.hpp), which promote() would have given.
  if (in_read_scope()) {
    current_meta();
    Rooted r = promote_borrowed(word);
    const Word w = r.word();
    return adopt_root(w, r.take());
  }
  Value v;
  v.reset(word);
  return v;
}

Value Value::adopt_root(std::uint64_t word, void* root_slot) {
  Value v;
  v.word_ = word;
  if (root_slot != nullptr) {
    v.root_ = root_slot;
    v.epoch_ = g_attachment_epoch.load(std::memory_order_acquire);
  }
  return v;
}

// A rooted result (allocation or rooted load) becomes a Value without a second root.
static Value adopt(Rooted&& r) {
  Word w = r.word();
  return Value::adopt_root(w, r.take());
}

Value::Value(int v) : Value(static_cast<long long>(v)) {}
Value::Value(long v) : Value(static_cast<long long>(v)) {}
Value::Value(unsigned v) : Value(static_cast<long long>(v)) {}
Value::Value(long long v) {
  if (fits_small(v)) word_ = make_small(v);
  else *this = adopt(new_integer(meta(), v));
}
Value::Value(double v) { *this = adopt(new_float(meta(), v)); }
Value::Value(bool v) : word_(make_bool(v)) {}
Value::Value(const char* s) : Value(std::string_view(s)) {}
Value::Value(std::string_view s) { *this = adopt(new_string(meta(), s)); }
Value::Value(const Value& o) { copy_from(o); }

// A copy of a handle of an ended attachment is one too (no root in the current attachment, whose
// heap may hold anything at that address), and so is a copy of that copy, which holds no root.
void Value::copy_from(const Value& o) {
  if (is_ref(o.word_) && !o.is_current()) {
    reset(0);
    word_ = o.word_;
    epoch_ = o.epoch_;
    return;
  }
  reset(o.word_);
}
Value::Value(Value&& o) noexcept : word_(o.word_), root_(o.root_), epoch_(o.epoch_) {
  o.word_ = 0;
  o.root_ = nullptr;
}
Value& Value::operator=(const Value& o) {
  if (this != &o) copy_from(o);
  return *this;
}
Value& Value::operator=(Value&& o) noexcept {
  if (this != &o) {
    reset(0);
    word_ = o.word_;
    root_ = o.root_;
    epoch_ = o.epoch_;
    o.word_ = 0;
    o.root_ = nullptr;
  }
  return *this;
}
namespace detail {
}  // namespace detail

std::uint64_t Value::live_slow() const {
  if (!is_ref(word_))
    throw InvalidArgumentError("an empty handle (default-constructed or moved from) holds no shared object");
  if (!is_current())
    throw NotAttachedError("this handle belongs to an ended attachment (a detach, an attach to another server, or a fork's"
                           " child): take the object again from the current one");
  return word_;
}

bool Value::is_current() const {
  if (!is_ref(word_)) return true;
  return root_ != nullptr && epoch_ == g_attachment_epoch.load(std::memory_order_acquire) && current_meta_or_null() != nullptr;
}

Value::~Value() {
  if (root_ != nullptr && epoch_ == g_attachment_epoch.load(std::memory_order_acquire) && current_meta_or_null() != nullptr) {
    root_release(static_cast<std::atomic<Word>*>(root_));
  }
}

TypeKind Value::kind() const {
  if (is_ref(word_)) current_meta();  // NotAttachedError rather than a fault after detach
  return kind_of(word_);
}
bool Value::is_shared_object() const { return is_ref(word_); }

static std::string kind_str(const Value& v) { return std::string(type_name(v.kind())); }

[[noreturn]] static void mismatch(const Value& v, const char* want) {
  throw TypeMismatchError(std::string("expected a shared ") + want + ", got " + kind_str(v));
}

std::int64_t Value::as_int() const {
  if (kind() != TypeKind::kInteger) mismatch(*this, "integer");
  return integer_value(word_);
}
double Value::as_float() const {
  TypeKind k = kind();
  if (k == TypeKind::kFloat) return float_value(word_);
  if (k == TypeKind::kInteger) return static_cast<double>(integer_value(word_));
  mismatch(*this, "float");
}
bool Value::as_bool() const {
  if (kind() != TypeKind::kBoolean) mismatch(*this, "boolean");
  return bool_value(word_);
}
std::string_view Value::string_view() const {
  if (kind() != TypeKind::kString) mismatch(*this, "string");
  return string_value(word_);
}
std::string Value::as_string() const { return std::string(string_view()); }
std::vector<std::uint8_t> Value::as_bytes() const {
  if (kind() != TypeKind::kBinary) mismatch(*this, "binary");
  auto* b = reinterpret_cast<BinaryObject*>(word_);
  return std::vector<std::uint8_t>(b->bytes, b->bytes + b->length);
}
bool Value::equals(const Value& o) const {
  if (is_ref(word_) || is_ref(o.word_)) current_meta();
  return values_equal(word_, o.word_);
}
std::uint64_t Value::hash() const {
  if (is_ref(word_)) current_meta();
  return value_hash(word_);
}

std::string Value::repr() const {
  char buf[64];
  switch (kind()) {
    case TypeKind::kNull: return "null";
    case TypeKind::kInteger: return std::to_string(as_int());
    case TypeKind::kFloat: std::snprintf(buf, sizeof buf, "%.17g", as_float()); return buf;
    case TypeKind::kBoolean: return as_bool() ? "true" : "false";
    case TypeKind::kString: return "\"" + as_string() + "\"";
    default: {
      std::snprintf(buf, sizeof buf, " at 0x%lx>", static_cast<unsigned long>(word_));
      return "<" + std::string(name_view(detail::class_of(word_)->name)) + buf;
    }
  }
}

Value new_binary(const void* data, std::size_t n) { return adopt(detail::new_binary(meta(), data, n)); }

// ---- containers ----

// An argument's word for a store or a lookup: a shared object of an ended attachment (a detach, an
// attach to another server, a fork's child) would put a word of another heap into this one.
static Word arg(const Value& v) {
  if (is_ref(v.raw()) && !v.is_current())
    throw NotAttachedError("a value of an ended attachment (detach, attach to another server, or a fork's child) used as an argument");
  return v.raw();
}

static void expect(const Value& v, TypeKind k) {
  if (v.kind() != k) mismatch(v, std::string(type_name(k)).c_str());
}

List::List(const Value& v) : Value(v) { expect(*this, TypeKind::kList); }
List::List(Value&& v) : Value(std::move(v)) { expect(*this, TypeKind::kList); }
std::size_t List::size() const { return list_size(live()); }
Value List::get(std::size_t i) const { return adopt(list_load(live(), i)); }
void List::set(std::size_t i, const Value& v) { list_set(live(), i, arg(v)); }
void List::append(const Value& v) { list_append(meta(), live(), arg(v)); }
void List::insert(std::size_t i, const Value& v) { list_insert(meta(), live(), i, arg(v)); }
Value List::erase(std::size_t i) { return adopt(list_pop(live(), i)); }
void List::clear() { list_clear(live()); }
std::vector<Value> List::items() const {
  std::vector<Value> out;
  for (Rooted& r : list_snapshot(live())) out.push_back(adopt(std::move(r)));
  return out;
}
List new_list(std::size_t capacity) { return List(adopt(detail::new_list(meta(), capacity))); }

Set::Set(const Value& v) : Value(v) { expect(*this, TypeKind::kSet); }
Set::Set(Value&& v) : Value(std::move(v)) { expect(*this, TypeKind::kSet); }
std::size_t Set::size() const { return hash_size(live()); }
bool Set::contains(const Value& k) const { return hash_contains(live(), arg(k)); }
bool Set::add(const Value& k) { return set_add(meta(), live(), arg(k)); }
bool Set::remove(const Value& k) { return hash_remove(live(), arg(k)); }
void Set::clear() { hash_clear(live()); }
std::vector<Value> Set::items() const {
  std::vector<Value> out;
  hash_for_each_rooted(live(), [&](Rooted k, Rooted) { out.push_back(adopt(std::move(k))); });
  return out;
}
Set new_set(std::size_t capacity) { return Set(adopt(detail::new_set(meta(), capacity))); }

Map::Map(const Value& v) : Value(v) { expect(*this, TypeKind::kMap); }
Map::Map(Value&& v) : Value(std::move(v)) { expect(*this, TypeKind::kMap); }
std::size_t Map::size() const { return hash_size(live()); }
bool Map::contains(const Value& k) const { return hash_contains(live(), arg(k)); }
std::optional<Value> Map::get(const Value& k) const {
  Rooted v;
  if (!map_load(live(), arg(k), &v)) return std::nullopt;
  return adopt(std::move(v));
}
Value Map::at(const Value& k) const {
  auto v = get(k);
  if (!v) throw KeyError("key " + k.repr() + " not in map");
  return *v;
}
bool Map::put(const Value& k, const Value& v) { return map_put(meta(), live(), arg(k), arg(v)); }
bool Map::remove(const Value& k) { return hash_remove(live(), arg(k)); }
void Map::clear() { hash_clear(live()); }
std::vector<std::pair<Value, Value>> Map::items() const {
  std::vector<std::pair<Value, Value>> out;
  hash_for_each_rooted(live(), [&](Rooted k, Rooted v) { out.emplace_back(adopt(std::move(k)), adopt(std::move(v))); });
  return out;
}
Map new_map(std::size_t capacity) { return Map(adopt(detail::new_map(meta(), capacity))); }

static detail::SortedBound bound_of(const SortedMap::Bound& b) {
  if (!b.key) return {};
  return {b.key->raw(), true, b.inclusive};
}

SortedMap::SortedMap(const Value& v) : Value(v) { expect(*this, TypeKind::kSortedMap); }
std::size_t SortedMap::size() const { return sorted_size(live()); }
bool SortedMap::contains(const Value& k) const { return sorted_contains(live(), arg(k)); }
std::optional<Value> SortedMap::get(const Value& k) const {
  Rooted v;
  if (!sorted_load(live(), arg(k), &v)) return std::nullopt;
  return adopt(std::move(v));
}
Value SortedMap::at(const Value& k) const {
  auto v = get(k);
  if (!v) throw KeyError("key " + k.repr() + " not in sorted map");
  return *v;
}
bool SortedMap::put(const Value& k, const Value& v) { return sorted_put(meta(), live(), arg(k), arg(v)); }
bool SortedMap::remove(const Value& k) { return sorted_remove(meta(), live(), arg(k)); }
void SortedMap::clear() { sorted_clear(live()); }
std::vector<SortedMap::Entry> SortedMap::range(const Bound& lo, const Bound& hi, bool reverse, std::size_t limit) const {
  std::vector<Entry> out;
  auto rows = sorted_range(live(), bound_of(lo), bound_of(hi), reverse, limit);
  out.reserve(rows.size());
  for (auto& [k, v] : rows) out.emplace_back(adopt(std::move(k)), adopt(std::move(v)));
  return out;
}
std::vector<Value> SortedMap::keys(const Bound& lo, const Bound& hi, bool reverse, std::size_t limit) const {
  std::vector<Value> out;
  auto rows = sorted_range(live(), bound_of(lo), bound_of(hi), reverse, limit, false);
  out.reserve(rows.size());
  for (auto& kv : rows) out.push_back(adopt(std::move(kv.first)));
  return out;
}
static std::optional<SortedMap::Entry> one(std::vector<SortedMap::Entry> v) {
  if (v.empty()) return std::nullopt;
  return std::move(v[0]);
}
std::optional<SortedMap::Entry> SortedMap::first() const { return one(range({}, {}, false, 1)); }
std::optional<SortedMap::Entry> SortedMap::last() const { return one(range({}, {}, true, 1)); }
std::optional<SortedMap::Entry> SortedMap::floor(const Value& k) const { return one(range({}, Bound::at(k), true, 1)); }
std::optional<SortedMap::Entry> SortedMap::ceiling(const Value& k) const { return one(range(Bound::at(k), {}, false, 1)); }
std::optional<SortedMap::Entry> SortedMap::lower(const Value& k) const { return one(range({}, Bound::at(k, false), true, 1)); }
std::optional<SortedMap::Entry> SortedMap::higher(const Value& k) const { return one(range(Bound::at(k, false), {}, false, 1)); }
SortedMap::Cursor SortedMap::cursor(const Bound& lo, const Bound& hi, bool reverse, std::size_t batch) const {
  return Cursor(*this, lo, hi, reverse, batch == 0 ? 1 : batch);
}
std::optional<SortedMap::Entry> SortedMap::Cursor::next() {
  if (at_ == buf_.size()) {
    if (done_) return std::nullopt;
    buf_ = map_.range(lo_, hi_, reverse_, batch_);
    at_ = 0;
    if (buf_.size() < batch_) done_ = true;
    if (buf_.empty()) return std::nullopt;
    // The next batch starts after the last key returned.
    (reverse_ ? hi_ : lo_) = Bound::at(buf_.back().first, false);
  }
  return std::move(buf_[at_++]);
}
std::size_t SortedMap::rank(const Value& k, bool inclusive) const { return sorted_rank(live(), arg(k), inclusive); }
SortedMap::Entry SortedMap::entry_at(std::int64_t i) const {
  auto [k, v] = sorted_entry_at(live(), i);
  return {adopt(std::move(k)), adopt(std::move(v))};
}
SortedMap new_sorted_map() { return SortedMap(adopt(detail::new_sorted_map(meta()))); }

// ---- classes ----

// A Class handle's record: InvalidArgumentError for an empty (default-constructed) handle.
static const ClassRecord* rec_of(const Class& c) {
  if (!c.valid()) throw InvalidArgumentError("an empty Class handle (default-constructed) names no class");
  return c.record();
}

std::string Class::name() const { return std::string(name_view(rec_of(*this)->name)); }
TypeKind Class::kind() const { return rec_of(*this)->kind; }
std::uint32_t Class::version() const { return rec_of(*this)->version; }
std::vector<FieldDesc> Class::fields() const {
  std::vector<FieldDesc> out;
  for (std::uint32_t i = 0; i < rec_of(*this)->field_count; ++i) {
    const FieldInfo& f = rec_of(*this)->fields[i];
    if (f.deleted()) continue;  // only its slot remains (layout.hpp, FieldInfo)
    out.push_back({std::string(name_view(f.name)), f.type, std::string(name_view(f.class_name)), f.slot});
  }
  return out;
}
std::vector<Class> Class::versions() const {
  std::vector<Class> out;
  if (rec_of(*this)->family == nullptr) return {*this};
  for (ClassRecord* c = rec_of(*this)->family->first.load(std::memory_order_acquire); c != nullptr;
       c = c->next_version.load(std::memory_order_acquire))
    out.emplace_back(c);
  return out;
}

Class define_class(const std::string& name, const std::vector<FieldSpec>& fields) {
  return Class(find_or_define_class(meta_with_server(), name, fields));
}
std::vector<Class> class_versions(const std::string& name) {
  ClassFamily* f = find_family(meta(), name);
  if (f == nullptr || f->first.load(std::memory_order_acquire) == nullptr) return {};
  return Class(f->first.load(std::memory_order_acquire)).versions();
}
Class class_of(const Value& v) {
  Metadata* m = meta();
  Word w = arg(v);
  if (w == kNull) throw TypeMismatchError("null has no shared class");
  if (is_small_int(w)) return Class(builtin_class(m, TypeKind::kInteger));
  if (is_bool(w)) return Class(builtin_class(m, TypeKind::kBoolean));
  if (is_small_float(w)) return Class(builtin_class(m, TypeKind::kFloat));
  return Class(detail::class_of(w));
}

Field::Field(const Class& cls, const std::string& name) : cls_(rec_of(cls)), name_(name) {
  info_ = find_field(cls_, name);
  if (info_ == nullptr) throw KeyError("class " + cls.name() + " version " + std::to_string(cls.version()) + " has no field '" + name + "'");
}

Object::Object(const Value& v) : Value(v) { expect(*this, TypeKind::kObject); }
Object::Object(Value&& v) : Value(std::move(v)) { expect(*this, TypeKind::kObject); }
Class Object::cls() const { return Class(detail::class_of(live())); }
bool Object::has_field(std::string_view name) const { return find_field(detail::class_of(live()), name) != nullptr; }

Value Object::get(std::string_view name) const {
  const Word w = live();
  return adopt(read_slot_rooted(reinterpret_cast<const void*>(w), slot_or_throw(w, field_or_throw(w, name))));
}
Value Object::get(const Field& f) const {
  const Word w = live();
  if (detail::class_of(w) == f.cls_) return adopt(read_slot_rooted(reinterpret_cast<const void*>(w), slot_or_throw(w, *f.info_)));
  return get(f.name());
}
void Object::set(std::string_view name, const Value& v) {
  const Word w = live(), x = arg(v);
  const FieldInfo& f = field_or_throw(w, name);
  check_field_type(f, x);
  write_slot(reinterpret_cast<const void*>(w), slot_or_throw(w, f), x);
}
void Object::set(const Field& f, const Value& v) {
  const Word w = live(), x = arg(v);
  if (detail::class_of(w) != f.cls_) return set(f.name(), v);
  check_field_type(*f.info_, x);
  write_slot(reinterpret_cast<const void*>(w), slot_or_throw(w, *f.info_), x);
}
void Object::check(std::string_view name, const Value& v) const {
  const Word w = live(), x = arg(v);
  const FieldInfo& f = field_or_throw(w, name);
  check_field_type(f, x);
  slot_or_throw(w, f);
}
void Object::set_fields(std::span<const std::pair<std::string_view, Value>> fields) {
  for (const auto& [name, v] : fields) check(name, v);
  for (const auto& [name, v] : fields) set(name, v);
}
void Object::add_field(const FieldSpec& field) { detail::add_field(meta(), live(), field); }
void Object::remove_field(std::string_view name) { detail::remove_field(meta(), live(), name); }

Object new_object(const Class& cls) {
  if (!cls.valid()) throw InvalidArgumentError("new_object needs a class");
  return Object(adopt(new_user_object(meta(), const_cast<ClassRecord*>(cls.record()))));
}

// ---- repositories and channels ----

Repository repository(const std::string& name) {
  Repository r;
  RepoRef ref = open_repository(meta_with_server(), name);
  r.rec_ = ref.rec;
  r.gen_ = ref.generation;
  r.name_ = name;
  return r;
}
bool delete_repository(const std::string& name) { return detail::delete_repository(meta_with_server(), name); }
static void expect_record(const void* rec, const char* what) {
  if (rec == nullptr) throw InvalidArgumentError(std::string("an empty ") + what + " handle (default-constructed) names none");
}
Value Repository::get() const {
  expect_record(rec_, "Repository");
  meta();
  return adopt(repository_load({rec_, gen_}));
}
void Repository::set(const Value& v) {
  expect_record(rec_, "Repository");
  meta_with_server();
  repository_store({rec_, gen_}, arg(v));
}
bool Repository::deleted() const {
  expect_record(rec_, "Repository");
  meta();
  return rec_->generation.load(std::memory_order_acquire) != gen_;
}

static_assert(Channel::kMaxCapacity == kMaxChannelCapacity);
Channel channel(const std::string& name, std::uint32_t capacity) {
  Channel c;
  ChanRef ref = open_channel(meta_with_server(), name, capacity);
  c.rec_ = ref.rec;
  c.gen_ = ref.generation;
  c.name_ = name;
  return c;
}
bool delete_channel(const std::string& name) { return detail::delete_channel(meta_with_server(), name); }
bool Channel::send(const Value& v, std::int64_t timeout_ms) {
  expect_record(rec_, "Channel");
  return channel_send(meta_with_server(), rec_, arg(v), to_ns(timeout_ms), -1, gen_);
}
std::optional<Value> Channel::receive(std::int64_t timeout_ms) { return receive(timeout_ms, -1); }
std::optional<Value> Channel::receive(std::int64_t timeout_ms, std::int64_t spin_ns) {
  expect_record(rec_, "Channel");
  Word w;
  std::atomic<Word>* root = nullptr;
  if (!channel_receive(meta_with_server(), rec_, &w, to_ns(timeout_ms), spin_ns, &root, gen_)) return std::nullopt;
  return Value::adopt_root(w, root);
}
bool Channel::deleted() const {
  expect_record(rec_, "Channel");
  meta();
  return rec_->generation.load(std::memory_order_acquire) != gen_;
}
std::uint32_t Channel::capacity() const {
  expect_record(rec_, "Channel");
  meta();
  return channel_capacity({rec_, gen_});
}

// ---- monitors ----

Monitor::Monitor(const Value& obj) : obj_(reinterpret_cast<const void*>(obj.raw())), keep_(obj) {
  if (!obj.is_shared_object()) throw TypeMismatchError("only shared objects have monitors, not " + kind_str(obj));
  monitor_enter(meta(), obj_);
}
Monitor::Monitor(const Repository& repo) : obj_(repo.address()) { monitor_enter(meta(), obj_); }
Monitor::~Monitor() {
  if (current_meta_or_null() != nullptr && monitor_held_by_me(current_meta_or_null(), obj_)) {
    monitor_exit(current_meta_or_null(), obj_);
  }
}
bool Monitor::wait(std::int64_t timeout_ms) { return monitor_wait(meta(), obj_, to_ns(timeout_ms)); }
void Monitor::notify_all() { monitor_notify_all(meta(), obj_); }

// ---- inspection ----

HeapStats heap_stats() {
  Metadata* m = meta();
  HeapUsage u = heap_usage(m);
  HeapStats s;
  s.capacity = u.capacity;
  s.free_bytes = u.free_bytes;
  s.free_chunks = u.free_chunks;
  s.largest_free = u.largest_free;
  s.allocated_bytes_total = m->allocated_bytes_total.load(std::memory_order_relaxed);
  return s;
}

GcStats gc_stats() {
  Metadata* m = current_meta();
  GcCycleStats c;
  for (std::uint64_t spins = 0;; ++spins) {
    std::uint32_t a = m->gc_stats_seq.load(std::memory_order_acquire);
    if (a % 2 != 0) {
      // The collector is writing, or its server died while writing: then only a successor
      // closes the seqlock (gc/recovery.hpp), so wait for it, or give up as for any call that
      // needs the server.
      if (spins % 4096 == 4095 && server_lost()) check_server_link();
      continue;
    }
    std::memcpy(&c, const_cast<const GcCycleStats*>(&m->gc_last), sizeof c);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (m->gc_stats_seq.load(std::memory_order_relaxed) == a) break;
  }
  GcStats s;
  s.cycle = c.cycle;
  s.walk_ns = c.clear_ns;
  s.mark_ns = c.mark_ns;
  s.remark_ns = c.remark_ns;
  s.sweep_ns = c.sweep_ns;
  s.total_ns = c.total_ns;
  s.marking_passes = c.marking_passes;
  s.objects_marked = c.objects_marked;
  s.bytes_marked = c.bytes_marked;
  s.objects_freed = c.objects_freed;
  s.bytes_freed = c.bytes_freed;
  s.heap_used_before = c.heap_used_before;
  s.heap_used_after = c.heap_used_after;
  s.largest_free = c.largest_free;
  s.threads = c.threads;
  s.pending_objects = c.pending_objects;
  return s;
}

GcStats collect(std::int64_t timeout_ms) {
  Metadata* m = meta_with_server();
  if (m->gc_running.load(std::memory_order_acquire) == 0)
    throw Error(ErrorCode::kGeneric, "no collector is running for this heap (is colors-server up?)");
  if (!request_gc_and_wait(m, to_ns(timeout_ms))) {
    check_server(m);
    throw Error(ErrorCode::kGeneric, "collect(): no cycle finished within " + std::to_string(timeout_ms) + " ms");
  }
  return gc_stats();
}

VerifyResult verify_heap() {
  VerifyReport r = detail::verify_heap(meta());
  return {r.ok(), r.summary()};
}

}  // namespace colors

// ---- transactions ----

namespace colors {

namespace {
// Cached per thread: gettid is a system call (about 200 ns on a VM), and every transaction asks
// twice (begin and commit). A forked child's thread keeps its parent thread's value, which only
// the child's thread sees: the identity check stays exact within each process.
long this_thread_id() {
  thread_local const long tid = static_cast<long>(::syscall(SYS_gettid));
  return tid;
}
}  // namespace

Transaction::Transaction() : Transaction(std::chrono::milliseconds(0)) {}

Transaction::Transaction(std::chrono::milliseconds timeout) {
  meta();
  detail::tx_begin(static_cast<std::int64_t>(timeout.count()) * 1'000'000);
  depth_ = detail::tx_depth();
  tid_ = this_thread_id();
}

Transaction::~Transaction() {
  if (!open_ || tid_ != this_thread_id() || detail::tx_depth() != depth_) return;
  open_ = false;
  try {
    detail::tx_rollback();
  } catch (...) {
  }
}

void Transaction::check_usable(const char* what) const {
  if (!open_) throw InvalidArgumentError(std::string("cannot ") + what + ": this transaction already ended");
  if (tid_ != this_thread_id())
    throw InvalidArgumentError(std::string("cannot ") + what + " a transaction from a thread other than the one that began it");
  if (detail::tx_depth() != depth_)
    throw InvalidArgumentError(std::string("cannot ") + what + " this transaction: an inner transaction is still open");
}

void Transaction::commit() {
  check_usable("commit");
  open_ = false;
  detail::tx_commit();
}

void Transaction::rollback() {
  check_usable("roll back");
  open_ = false;
  detail::tx_rollback();
}

bool in_transaction() { return detail::in_transaction(); }

namespace detail {
void transaction_escalate() { tx_escalate(); }

void transaction_backoff(int attempt) {
  thread_local std::uint64_t seed = static_cast<std::uint64_t>(this_thread_id()) * 0x9E3779B97F4A7C15ULL + 1;
  seed ^= seed << 13;
  seed ^= seed >> 7;
  seed ^= seed << 17;
  const int shift = attempt < 12 ? attempt : 12;
  const std::uint64_t max_us = std::uint64_t{2} << shift;  // 4 us .. 8 ms
  const std::uint64_t us = 1 + seed % max_us;
  struct timespec ts {static_cast<time_t>(us / 1'000'000), static_cast<long>((us % 1'000'000) * 1000)};
  ::nanosleep(&ts, nullptr);
}
}  // namespace detail

}  // namespace colors
