#include "transaction.hpp"
#include "robust_mutex.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <sched.h>
#include <string>
#include <time.h>

#include "colors/errors.hpp"
#include "container_lock.hpp"
#include "list_seqlock.hpp"
#include "futex.hpp"
#include "objects.hpp"
#include "read_scope.hpp"
#include "segment.hpp"
#include "session.hpp"

namespace colors::detail {

namespace {

constexpr std::uint64_t kLogWord = 0;
constexpr std::uint64_t kLogCount = 1;
constexpr std::uint64_t kLogKindMask = 7;
constexpr std::size_t kEntrySlots = 3;
constexpr std::size_t kInitialLogEntries = 64;

// A wait in milliseconds from the environment variable `name`: a whole number of 1 or more, at
// most a day (larger values are a day: the product in nanoseconds must not overflow); anything
// else (unset, empty, 0, negative, not a number) is `fallback`.
std::int64_t wait_ms_from_env(const char* name, std::int64_t fallback) {
  constexpr long long kDayMs = 86'400'000;
  const char* e = std::getenv(name);
  if (e == nullptr || *e == 0) return fallback;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(e, &end, 10);
  if (*end != 0 || v <= 0) return fallback;
  if (errno == ERANGE || v > kDayMs) return kDayMs;
  return v;
}

// How long a transaction waits for another's orec before it gives up with a conflict (and
// atomically retries): a holder normally commits within microseconds; a stopped or slow one must
// not stall the waiter (transaction.hpp). COLORS_TX_CONFLICT_WAIT_MS overrides it.
std::int64_t conflict_wait_ns() {
  static const std::int64_t ns = wait_ms_from_env("COLORS_TX_CONFLICT_WAIT_MS", 20) * 1'000'000;
  return ns;
}
// How long a change to a container outside any transaction waits for a transaction that holds the
// container (transaction.hpp, TxContainerScope). Longer than the conflict wait: the plain caller has
// no atomically() to retry it. COLORS_TX_PLAIN_WAIT_MS overrides it.
std::int64_t plain_wait_ns() {
  static const std::int64_t ns = wait_ms_from_env("COLORS_TX_PLAIN_WAIT_MS", 2000) * 1'000'000;
  return ns;
}
// The most words one transaction may change (its undo log's entries); COLORS_TX_MAX_WRITES
// overrides it. Beyond it the transaction is rolled back with TransactionAbortedError.
// Read at every growth of a log (rare), so that a process may change it between transactions.
std::size_t max_log_entries() {
  const char* e = std::getenv("COLORS_TX_MAX_WRITES");
  long v = e != nullptr ? std::strtol(e, nullptr, 10) : 0;
  return v > 0 ? static_cast<std::size_t>(v) : std::size_t{1} << 20;
}

// Fault hook for crash tests: COLORS_TX_FAULT_COMMIT_US=N makes every commit of an update
// transaction sleep N microseconds just before its commit point and again just after it (orecs
// still held), so that a kill -9 lands inside a commit often. Read once per process.
void fault_commit_pause() {
  static const long us = [] {
    const char* e = std::getenv("COLORS_TX_FAULT_COMMIT_US");
    return e != nullptr ? std::strtol(e, nullptr, 10) : 0L;
  }();
  if (us > 0) {
    const struct timespec ts {us / 1'000'000, (us % 1'000'000) * 1000};
    ::nanosleep(&ts, nullptr);
  }
}

// Fault hook for crash tests: COLORS_TX_FAULT_ROLLBACK_US=N makes a rollback sleep N microseconds
// after its last step (its orecs released), so that a test can kill the process there. Read at
// every rollback (rare), so that a forked test process may set it.
void fault_rollback_pause() {
  const char* e = std::getenv("COLORS_TX_FAULT_ROLLBACK_US");
  const long us = e != nullptr ? std::strtol(e, nullptr, 10) : 0L;
  if (us > 0) {
    const struct timespec ts {us / 1'000'000, (us % 1'000'000) * 1000};
    ::nanosleep(&ts, nullptr);
  }
}

std::atomic<std::uint64_t>* orec_of(Metadata* m, const void* obj) {
  const auto a = reinterpret_cast<std::uint64_t>(obj);
  return &m->orecs[((a >> 4) * 0x9E3779B97F4A7C15ULL) >> (64 - kOrecBits)];
}
bool locked(std::uint64_t o) { return (o & 1) != 0; }
std::uint64_t version_of(std::uint64_t o) { return o >> 1; }
std::uint32_t holder_of(std::uint64_t o) { return static_cast<std::uint32_t>(o >> 1); }

std::string hex(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace

// Per-thread state of the transaction (private memory); the descriptor is its shared half.
struct TxThread {
  Metadata* m = nullptr;
  std::uint64_t epoch = 0;       // attachment_epoch() when the descriptor was claimed
  std::uint32_t index = 0;       // of the descriptor
  TxDescriptor* d = nullptr;
  std::uint64_t mine = 0;        // this transaction's orec word: index << 1 | 1
  int depth = 0;
  bool doomed = false;
  bool pessimistic = false;      // reads take orecs too (tx_escalate)
  std::string doom_reason;
  std::uint64_t rv = 0;
  std::int64_t deadline = 0;     // monotonic ns; 0: none
  std::uint32_t reads_since_clock = 0;
  struct Held { std::atomic<std::uint64_t>* orec; std::uint64_t before; };
  std::vector<Held> reads;       // orecs read and the value seen (update transactions validate them)
  std::vector<Held> writes;      // orecs held and their value before
  Rooted log_root;               // the undo log (ArrayObject), rooted while this thread lives
  std::size_t log_cap = 0;       // slots
  std::size_t log_used = 0;      // slots
  const void* container = nullptr;  // the container whose words are being logged

  ~TxThread();
  ArrayObject* log() const { return reinterpret_cast<ArrayObject*>(log_root.word()); }
};

constinit thread_local TxThread* t_tx = nullptr;

namespace {

thread_local std::unique_ptr<TxThread> t_state;

[[noreturn]] void fail_aborted(TxThread& t) {
  throw TransactionAbortedError("this transaction was aborted (" + t.doom_reason +
                                "); it is rolled back when it ends, and may be started again");
}

[[noreturn]] void doom_conflict(TxThread& t, const std::string& why) {
  t.doomed = true;
  t.doom_reason = why;
  throw TransactionConflictError(why);
}

[[noreturn]] void doom_aborted(TxThread& t, const std::string& why) {
  t.doomed = true;
  t.doom_reason = why;
  throw TransactionAbortedError(why);
}

// Every operation of a transaction starts here. The attachment check matters for reads too: after
// a detach and a new attach, this thread's old descriptor may belong to another thread, whose
// orecs this transaction would take for its own.
TxThread& usable() {
  TxThread& t = *t_tx;
  if (t.doomed) fail_aborted(t);
  if (t.epoch != attachment_epoch()) {
    t.doomed = true;
    t.doom_reason = "its attachment to the heap ended; the server rolled it back";
    fail_aborted(t);
  }
  return t;
}

void check_deadline(TxThread& t, std::int64_t now) {
  if (t.deadline != 0 && now > t.deadline) doom_aborted(t, "the transaction exceeded its timeout");
}

// Whether every orec read still holds the value seen (or is held by this transaction, which took
// it from that value).
bool validate(TxThread& t) {
  for (const TxThread::Held& r : t.reads) {
    const std::uint64_t now = r.orec->load(std::memory_order_acquire);
    if (now == r.before) continue;
    if (now != t.mine) return false;
    bool same = false;
    for (const TxThread::Held& w : t.writes)
      if (w.orec == r.orec) {
        same = w.before == r.before;
        break;
      }
    if (!same) return false;
  }
  return true;
}

// A newer version was seen: moves rv to the clock if everything read is still valid.
void extend(TxThread& t) {
  const std::uint64_t now = t.m->tx_clock.load(std::memory_order_acquire);
  if (!validate(t)) doom_conflict(t, "another transaction changed an object this transaction had read");
  t.rv = now;
}

std::string describe_holder(Metadata* m, std::uint32_t h) {
  if (h >= kMaxTransactions) return "an unknown transaction";
  const TxDescriptor& d = m->txs[h];
  return "the transaction of process " + std::to_string(d.pid.load(std::memory_order_relaxed)) + " (thread " +
         std::to_string(d.tid.load(std::memory_order_relaxed)) + ")";
}

std::atomic<TxWaitBegin> g_wait_begin{nullptr};
std::atomic<TxWaitEnd> g_wait_end{nullptr};

// The binding's wait hooks for the length of one wait (set_tx_wait_hooks).
class WaitHooks {
 public:
  WaitHooks() : end_(g_wait_end.load(std::memory_order_acquire)) {
    TxWaitBegin b = g_wait_begin.load(std::memory_order_acquire);
    if (b != nullptr && end_ != nullptr) token_ = b();
    else end_ = nullptr;
  }
  ~WaitHooks() {
    if (end_ != nullptr) end_(token_);
  }
  WaitHooks(const WaitHooks&) = delete;
  WaitHooks& operator=(const WaitHooks&) = delete;

 private:
  TxWaitEnd end_;
  void* token_ = nullptr;
};

// The pacing of every wait for an orec's holder: `done` is polled with a yield between polls;
// every 64th poll runs `periodic` (deadlines, deadlock detection, interrupts: it throws to end the
// wait), and after 1,024 polls each one is followed by a 50 µs sleep instead, so a long wait costs
// no CPU while a short one (a holder finishing a commit) ends within microseconds.
template <class Done, class Periodic>
void wait_until(Done&& done, Periodic&& periodic) {
  for (std::uint64_t polls = 0;; ++polls) {
    if (done()) return;
    if (polls % 64 == 63) {
      periodic();
      if (polls > 64 * 16) {
        const struct timespec ts {0, 50'000};
        ::nanosleep(&ts, nullptr);
        continue;
      }
    }
    sched_yield();
  }
}

// Waits until `orec` no longer holds `seen` (another transaction's lock), for at most the conflict
// wait and the transaction's deadline. Detects a wait cycle through the descriptors' waits_for
// links (each waiter publishes whom it waits for), and throws TransactionConflictError naming the
// holder on a deadlock or a timeout.
void wait_for_holder(TxThread& t, std::atomic<std::uint64_t>* orec, std::uint64_t seen, const void* obj) {
  Metadata* m = t.m;
  const std::uint32_t holder = holder_of(seen);
  const std::int64_t start = monotonic_ns();
  std::int64_t limit = start + conflict_wait_ns();
  if (t.deadline != 0 && t.deadline < limit) limit = t.deadline;
  WaitHooks hooks;  // declared before `clear`: waits_for is cleared before end() (which may block)
  t.d->waits_for.store(holder + 1, std::memory_order_seq_cst);
  struct Clear {
    TxDescriptor* d;
    ~Clear() { d->waits_for.store(0, std::memory_order_release); }
  } clear{t.d};
  wait_until([&] { return orec->load(std::memory_order_acquire) != seen; }, [&] {
    // A cycle of waits through this transaction: at most kMaxTransactions links.
    std::uint64_t next = holder + 1;
    for (std::size_t k = 0; k < kMaxTransactions && next != 0; ++k) {
      const std::uint64_t i = next - 1;
      if (i == t.index) {
        doom_conflict(t, "deadlock: this transaction waits for object " + hex(reinterpret_cast<std::uint64_t>(obj)) +
                             ", held by " + describe_holder(m, holder) + ", which waits (directly or not) for this one");
      }
      if (i >= kMaxTransactions) break;
      next = m->txs[i].waits_for.load(std::memory_order_seq_cst);
    }
    const std::int64_t now = monotonic_ns();
    if (now >= limit) {
      check_deadline(t, now);
      doom_conflict(t, "object " + hex(reinterpret_cast<std::uint64_t>(obj)) + " is held by " + describe_holder(m, holder) +
                           ", which did not finish within " + std::to_string((now - start) / 1'000'000) + " ms");
    }
  });
}

// Takes the orec of `obj` for this transaction.
void acquire(TxThread& t, const void* obj) {
  std::atomic<std::uint64_t>* orec = orec_of(t.m, obj);
  for (;;) {
    std::uint64_t o = orec->load(std::memory_order_acquire);
    if (o == t.mine) return;
    if (locked(o)) {
      wait_for_holder(t, orec, o, obj);
      continue;
    }
    if (orec->compare_exchange_weak(o, t.mine, std::memory_order_acq_rel, std::memory_order_relaxed)) {
      t.writes.push_back({orec, o});
      // Reads of this object made so far must still hold, and later ones read what this
      // transaction writes: a version newer than rv is checked by extending.
      if (version_of(o) > t.rv) extend(t);
      return;
    }
  }
}

// Records a read of `orec` at value `o` (skipping the repeat of the last one: consecutive fields).
void record_read(TxThread& t, std::atomic<std::uint64_t>* orec, std::uint64_t o) {
  if (!t.reads.empty() && t.reads.back().orec == orec && t.reads.back().before == o) return;
  t.reads.push_back({orec, o});
  if (++t.reads_since_clock == 1024) {
    t.reads_since_clock = 0;
    check_deadline(t, monotonic_ns());
  }
}

// TL2's read: the orec, the value (via `read`), the orec again.
template <class Read, class Drop>
auto read_validated(TxThread& t, const void* obj, Read&& read, Drop&& drop) {
  if (t.pessimistic) {
    acquire(t, obj);
    return read();
  }
  std::atomic<std::uint64_t>* orec = orec_of(t.m, obj);
  for (;;) {
    const std::uint64_t o = orec->load(std::memory_order_acquire);
    if (o == t.mine) return read();
    if (locked(o)) {
      wait_for_holder(t, orec, o, obj);
      continue;
    }
    if (version_of(o) > t.rv) {
      extend(t);
      continue;
    }
    auto v = read();
    if (orec->load(std::memory_order_acquire) == o) {
      record_read(t, orec, o);
      return v;
    }
    drop(v);
  }
}

// ---- the undo log ----

void put_slot(std::atomic<Word>* s, Word v) {
  // Only the owner writes its log (the server only after the owner died): no racing store, so the
  // barrier's pre-write flagging suffices without its compare-exchange.
  mark_pending(s->load(std::memory_order_relaxed));
  s->store(v, std::memory_order_release);
}

void grow_log(TxThread& t) {
  const std::size_t entries = t.log_cap / kEntrySlots;
  if (entries >= max_log_entries())
    doom_aborted(t, "transaction too large: it changes more than " + std::to_string(max_log_entries()) +
                        " words (COLORS_TX_MAX_WRITES); nothing it wrote is kept");
  std::size_t next = entries == 0 ? kInitialLogEntries : entries * 2;
  if (next > max_log_entries()) next = max_log_entries();
  Rooted fresh;
  try {
    fresh = new_array(t.m, TypeKind::kArray, next * kEntrySlots);
  } catch (const OutOfMemoryError& e) {
    doom_aborted(t, std::string("the transaction's undo log could not grow: ") + e.what());
  }
  auto* a = reinterpret_cast<ArrayObject*>(fresh.word());
  if (t.log_used != 0)
    for (std::size_t i = 0; i < t.log_used; ++i) init_ref(&a->slots[i], t.log()->slots[i].load(std::memory_order_acquire));
  // Published before any entry beyond the old capacity (log_used is stored after entries).
  t.d->log.store(fresh.word(), std::memory_order_release);
  t.log_root = std::move(fresh);
  t.log_cap = next * kEntrySlots;
}

// The third slot of an entry for a word of `owner`: the object itself when it is one of the objects
// space (a reference, so the log keeps it alive until the transaction ends and a rollback never
// writes into memory a cycle freed), else kNull (a repository's root lives in the classes space).
Word log_owner(const TxThread& t, const void* owner) {
  const auto a = reinterpret_cast<std::uintptr_t>(owner);
  return owner != nullptr && a >= t.m->objects_begin && a < t.m->objects_end ? static_cast<Word>(a) : kNull;
}

void append(TxThread& t, std::uint64_t addr_kind, Word old, Word owner) {
  if (t.log_used + kEntrySlots > t.log_cap) grow_log(t);
  ArrayObject* a = t.log();
  const std::size_t i = t.log_used;
  put_slot(&a->slots[i], make_small(static_cast<std::int64_t>(addr_kind)));
  put_slot(&a->slots[i + 1], old);
  put_slot(&a->slots[i + 2], owner);
  t.log_used = i + kEntrySlots;
  t.d->log_used.store(t.log_used, std::memory_order_release);  // the entry is in the log from here
}

// Empties the log after a commit or rollback (dropping its references so that what it held can
// be collected). A log grown beyond kKeptLogEntries is dropped instead: one large transaction
// does not keep its log's memory for the thread's lifetime.
constexpr std::size_t kKeptLogEntries = 4096;
void clear_log(TxThread& t) {
  t.d->log_used.store(0, std::memory_order_release);
  if (t.log_cap > kKeptLogEntries * kEntrySlots) {
    t.d->log.store(kNull, std::memory_order_release);
    t.log_root.reset();
    t.log_cap = 0;
    t.log_used = 0;
    return;
  }
  ArrayObject* a = t.log();
  for (std::size_t i = 0; i < t.log_used; ++i) put_slot(&a->slots[i], kNull);
  t.log_used = 0;
}

// Takes a container's lock word for a rollback. `mine` is the owner word to take it with; a word
// held by `dead_id` (a dead owner, or the server's earlier attempt) is taken over.
class RollbackLock {
 public:
  RollbackLock(std::atomic<std::uint64_t>* word, std::uint64_t mine, std::uint32_t dead_id) : word_(word) {
    for (;;) {
      std::uint64_t w = word->load(std::memory_order_acquire);
      const auto id = static_cast<std::uint32_t>(w >> 32);
      if (w == 0 || (dead_id != 0 && (id == dead_id || id == kServerLockOwner))) {
        if (word->compare_exchange_weak(w, mine, std::memory_order_acquire, std::memory_order_relaxed)) return;
        continue;
      }
      sched_yield();
    }
  }
  ~RollbackLock() {
    const std::uint64_t old = word_->exchange(0, std::memory_order_release);
    if ((old & kLockStateMask) == kLockSleepers) futex_wake_all(reinterpret_cast<std::atomic<std::uint32_t>*>(word_));
  }
  RollbackLock(const RollbackLock&) = delete;
  RollbackLock& operator=(const RollbackLock&) = delete;

 private:
  std::atomic<std::uint64_t>* word_;
};

// The lock word of a container object (every kind that logs: list, set, map, sorted map).
std::atomic<std::uint64_t>* lock_word_of(Word container) {
  switch (kind_of(container)) {
    case TypeKind::kList: return &reinterpret_cast<ListObject*>(container)->lock;
    case TypeKind::kSet:
    case TypeKind::kMap: return &reinterpret_cast<HashObject*>(container)->lock;
    case TypeKind::kSortedMap: return &reinterpret_cast<SortedMapObject*>(container)->lock;
    default: return nullptr;
  }
}

// Applies `used` slots of the log `log` from the end. Each container's entries are restored under
// its lock word, taken with `mine` (taking over from `dead_id`, when non-zero).
void undo(Word log, std::size_t used, std::uint64_t mine, std::uint32_t dead_id) {
  auto* a = reinterpret_cast<ArrayObject*>(log);
  std::unique_ptr<RollbackLock> held;
  std::unique_ptr<ListWrite> change;  // a list's restores are one change (list_seqlock.hpp)
  Word held_for = kNull;
  for (std::size_t i = used; i >= kEntrySlots; i -= kEntrySlots) {
    const Word ak = a->slots[i - 3].load(std::memory_order_acquire);
    const Word old = a->slots[i - 2].load(std::memory_order_acquire);
    const Word owner = a->slots[i - 1].load(std::memory_order_acquire);
    // The object the word belongs to (lock_word_of: a container's lock word, none for a user
    // object); a small integer is a container's address (the slot's encoding before it held
    // references, which a heap adopted from an older server may still have in a dead client's log).
    const Word container = is_small_int(owner) ? static_cast<Word>(small_value(owner)) : owner;
    if (container != held_for) {
      change.reset();  // before the lock word is released
      held.reset();
      held_for = container;
      if (container != kNull)
        if (std::atomic<std::uint64_t>* lw = lock_word_of(container)) {
          held = std::make_unique<RollbackLock>(lw, mine, dead_id);
          if (kind_of(container) == TypeKind::kList)
            change = std::make_unique<ListWrite>(reinterpret_cast<ListObject*>(container));
        }
    }
    const auto v = static_cast<std::uint64_t>(small_value(ak));
    if ((v & kLogKindMask) == kLogCount)
      reinterpret_cast<std::atomic<std::uint64_t>*>(v & ~kLogKindMask)->store(static_cast<std::uint64_t>(small_value(old)), std::memory_order_release);
    else
      store_ref(reinterpret_cast<std::atomic<Word>*>(v & ~kLogKindMask), old);
  }
}

// Releases the orecs this transaction holds, with `version`.
void release_all(const std::vector<TxThread::Held>& held, std::uint64_t version) {
  for (const TxThread::Held& h : held) h.orec->store(version << 1, std::memory_order_release);
}

void finish(TxThread& t) {
  t.d->state.store(static_cast<std::uint32_t>(TxState::kIdle), std::memory_order_release);
  t.reads.clear();
  t.writes.clear();
  t.depth = 0;
  t.doomed = false;
  t.pessimistic = false;
  t.doom_reason.clear();
  t.container = nullptr;
  t_tx = nullptr;
}

void rollback_now(TxThread& t) {
  if (t.epoch == attachment_epoch() && current_meta_or_null() == t.m) {
    t.d->state.store(static_cast<std::uint32_t>(TxState::kAborting), std::memory_order_release);
    undo(t.log_root.word(), t.log_used, container_owner_word(), 0);
    const std::uint64_t v = t.m->tx_clock.fetch_add(1, std::memory_order_acq_rel) + 1;
    // Emptied before the orecs are released: once released, others may commit to these words,
    // and a server finishing this descriptor after a kill must then find nothing to undo.
    clear_log(t);
    release_all(t.writes, v);
    fault_rollback_pause();
    finish(t);
    return;
  }
  // The attachment ended: the server rolled the transaction back; only private state remains.
  t.reads.clear();
  t.writes.clear();
  t.depth = 0;
  t.doomed = false;
  t.pessimistic = false;
  t_tx = nullptr;
}

// Claims a descriptor for this thread (its first transaction in this attachment).
TxThread& thread_state() {
  Metadata* m = current_meta();
  std::unique_ptr<TxThread>& s = t_state;
  if (s && s->epoch == attachment_epoch() && s->m == m) return *s;
  if (s) {
    // From an ended attachment: its descriptor and root belong to a segment no longer mapped.
    (void)s->log_root.take();
    s->d = nullptr;
    s.reset();
  }
  auto t = std::make_unique<TxThread>();
  t->m = m;
  t->epoch = attachment_epoch();
  const auto tid = static_cast<std::uint32_t>(::syscall(SYS_gettid));
  const std::uint64_t owner = std::uint64_t{current_client_id()} << 32 | tid;
  for (std::uint32_t i = 0; i < kMaxTransactions; ++i) {
    std::uint64_t free = 0;
    if (m->txs[i].owner.load(std::memory_order_relaxed) != 0) continue;
    if (!m->txs[i].owner.compare_exchange_strong(free, owner, std::memory_order_acq_rel)) continue;
    TxDescriptor& d = m->txs[i];
    d.client_slot.store(current_client_slot(), std::memory_order_relaxed);
    d.pid.store(static_cast<std::int32_t>(::getpid()), std::memory_order_relaxed);
    d.tid.store(static_cast<std::int32_t>(tid), std::memory_order_relaxed);
    d.waits_for.store(0, std::memory_order_relaxed);
    d.log_used.store(0, std::memory_order_relaxed);
    d.log.store(kNull, std::memory_order_relaxed);
    d.state.store(static_cast<std::uint32_t>(TxState::kIdle), std::memory_order_release);
    t->index = i;
    t->d = &d;
    t->mine = std::uint64_t{i} << 1 | 1;
    s = std::move(t);
    return *s;
  }
  throw InvalidArgumentError("too many threads run transactions at once (" + std::to_string(kMaxTransactions) +
                             " in all processes); end some first");
}

}  // namespace

TxThread::~TxThread() {
  if (d == nullptr) return;
  if (epoch != attachment_epoch() || current_meta_or_null() != m) {
    (void)log_root.take();  // the segment is gone or another one: nothing of ours to touch
    return;
  }
  if (depth > 0) {
    try {
      rollback_now(*this);
    } catch (...) {
    }
  }
  d->log.store(kNull, std::memory_order_relaxed);
  d->log_used.store(0, std::memory_order_relaxed);
  log_root.reset();
  d->owner.store(0, std::memory_order_release);
}

// ---- lifecycle ----

void tx_begin(std::int64_t timeout_ns) {
  if (t_tx != nullptr) {
    TxThread& t = usable();
    ++t.depth;
    return;
  }
  if (in_read_scope())
    throw InvalidArgumentError("a transaction cannot start inside a read scope (its commit may wait for a collector cycle, which waits for the scope)");
  TxThread& t = thread_state();
  check_server_state(t.m);
  t.depth = 1;
  t.doomed = false;
  t.reads.clear();
  t.writes.clear();
  t.container = nullptr;
  t.deadline = timeout_ns > 0 ? monotonic_ns() + timeout_ns : 0;
  t.rv = t.m->tx_clock.load(std::memory_order_acquire);
  t.d->state.store(static_cast<std::uint32_t>(TxState::kActive), std::memory_order_release);
  t_tx = &t;
}

void tx_commit() {
  if (t_tx == nullptr) throw InvalidArgumentError("commit outside a transaction: there is no transaction to commit");
  TxThread& t = *t_tx;
  if (t.depth > 1) {
    --t.depth;
    if (t.doomed) fail_aborted(t);
    return;
  }
  // A transaction past its deadline never commits (Transaction(timeout)'s promise), even if none
  // of its waits or periodic read checks noticed the deadline.
  if (!t.doomed && t.deadline != 0 && monotonic_ns() > t.deadline) {
    t.doomed = true;
    t.doom_reason = "the transaction exceeded its timeout";
  }
  if (t.doomed || t.epoch != attachment_epoch()) {
    std::string why = t.doomed ? t.doom_reason : "its attachment to the heap ended; the server rolled it back";
    rollback_now(t);
    throw TransactionAbortedError("the transaction was rolled back instead of committed (" + why + ")");
  }
  if (t.writes.empty()) {
    finish(t);  // every read was consistent at rv: nothing to publish
    return;
  }
  const std::uint64_t wv = t.m->tx_clock.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (wv != t.rv + 1 && !validate(t)) {
    rollback_now(t);
    throw TransactionConflictError("another transaction changed an object this transaction had read; it was rolled back");
  }
  fault_commit_pause();
  // The commit point: from here a dead owner's writes stand (the server only releases its orecs).
  t.d->state.store(static_cast<std::uint32_t>(TxState::kCommitted), std::memory_order_release);
  fault_commit_pause();
  release_all(t.writes, wv);
  // Only a transaction that changed a word needs the log: one escalated to pessimistic reads
  // (tx_escalate) holds records without writing.
  const bool wrote = t.log_used != 0;
  clear_log(t);
  Metadata* m = t.m;
  finish(t);
  // Durable after it is visible, as group commit does: the log record that covers it is written
  // once the other processes are stopped (colors-server/checkpointer.hpp), so it can never hold
  // half of a transaction. Waiting last keeps the orecs free for everyone meanwhile.
  if (wrote && m->durability.load(std::memory_order_relaxed) == static_cast<std::uint32_t>(DurabilityLevel::kFull)) {
    WaitHooks hooks;
    await_durable_commit();
  }
}

void tx_rollback() {
  if (t_tx == nullptr) throw InvalidArgumentError("rollback outside a transaction: there is no transaction to roll back");
  TxThread& t = *t_tx;
  if (t.depth > 1) {
    --t.depth;
    if (!t.doomed) {
      t.doomed = true;
      t.doom_reason = "an inner transaction rolled back";
    }
    return;
  }
  rollback_now(t);
}

void tx_escalate() {
  if (t_tx != nullptr && t_tx->reads.empty() && t_tx->writes.empty()) t_tx->pessimistic = true;
}

int tx_depth() { return t_tx == nullptr ? 0 : t_tx->depth; }

bool tx_attachment_gone() { return t_tx != nullptr && t_tx->epoch != attachment_epoch(); }

void set_tx_wait_hooks(TxWaitBegin begin, TxWaitEnd end) {
  g_wait_end.store(nullptr, std::memory_order_release);  // never a begin without its end
  g_wait_begin.store(begin, std::memory_order_release);
  g_wait_end.store(end, std::memory_order_release);
}

void tx_refuse(const char* what) {
  if (t_tx != nullptr)
    throw InvalidArgumentError(std::string(what) +
                               " is not allowed inside a transaction: it cannot be rolled back; do it before or after");
}

// ---- fields and repository roots ----

Word tx_read_word(const void* owner, const std::atomic<Word>* slot) {
  TxThread& t = usable();
  return read_validated(
      t, owner, [&] { return slot->load(std::memory_order_acquire); }, [](Word) {});
}

Rooted tx_read_rooted(const void* owner, const std::atomic<Word>* slot) {
  TxThread& t = usable();
  return read_validated(
      t, owner, [&] { return root_load(slot); }, [](Rooted& r) { r.reset(); });
}

void tx_write(const void* owner, std::atomic<Word>* slot, Word value) {
  TxThread& t = usable();
  acquire(t, owner);
  append(t, reinterpret_cast<std::uint64_t>(slot) | kLogWord, slot->load(std::memory_order_acquire), log_owner(t, owner));
  store_ref(slot, value);
}

// ---- containers ----

void tx_container_open(const void* container, TxAccess a) {
  TxThread& t = usable();
  if (a == TxAccess::kWrite || t.pessimistic) {
    acquire(t, container);
    return;
  }
  std::atomic<std::uint64_t>* orec = orec_of(t.m, container);
  for (;;) {
    const std::uint64_t o = orec->load(std::memory_order_acquire);
    if (!locked(o) || o == t.mine) return;
    wait_for_holder(t, orec, o, container);
  }
}

void tx_container_locked(const void* container, TxAccess a) {
  TxThread& t = *t_tx;
  if (a == TxAccess::kWrite) {
    t.container = container;
    return;
  }
  if (t.pessimistic) return;  // the orec is held (tx_container_open)
  // Under the lock word no transaction changes the container: the orec's value now covers
  // everything this operation reads.
  std::atomic<std::uint64_t>* orec = orec_of(t.m, container);
  std::uint64_t o = orec->load(std::memory_order_acquire);
  if (o == t.mine) return;
  if (locked(o))
    doom_conflict(t, "object " + hex(reinterpret_cast<std::uint64_t>(container)) + " was taken by " +
                         describe_holder(t.m, holder_of(o)) + " while this transaction read it");
  if (version_of(o) > t.rv) {
    extend(t);
    if (orec->load(std::memory_order_acquire) != o) doom_conflict(t, "another transaction changed an object this transaction read");
  }
  record_read(t, orec, o);
}

void tx_container_done() {
  if (t_tx != nullptr) t_tx->container = nullptr;
}

bool tx_container_held(const void* container) {
  return locked(orec_of(current_meta(), container)->load(std::memory_order_acquire));
}

void tx_wait_container_free(const void* container) {
  Metadata* m = current_meta();
  std::atomic<std::uint64_t>* orec = orec_of(m, container);
  const std::int64_t start = monotonic_ns();
  std::int64_t next_interrupt_check = start + kInterruptSliceNs;
  WaitHooks hooks;
  std::uint64_t o = 0;
  wait_until([&] { return !locked(o = orec->load(std::memory_order_acquire)); }, [&] {
    const std::int64_t now = monotonic_ns();
    if (now >= next_interrupt_check) {  // Ctrl-C in Python: the change is not made
      check_interrupt();
      next_interrupt_check = now + kInterruptSliceNs;
    }
    if (now - start >= plain_wait_ns()) {
      throw TransactionConflictError("object " + hex(reinterpret_cast<std::uint64_t>(container)) +
                                     " (or an object sharing its ownership record) is held by " +
                                     describe_holder(m, holder_of(o)) + ", which did not finish within " +
                                     std::to_string((now - start) / 1'000'000) +
                                     " ms; this change outside a transaction was not made (a rollback of that "
                                     "transaction would overwrite part of it)");
    }
  });
}

void tx_log_word(std::atomic<Word>* slot) {
  TxThread& t = *t_tx;
  if (t.doomed) fail_aborted(t);
  append(t, reinterpret_cast<std::uint64_t>(slot) | kLogWord, slot->load(std::memory_order_acquire), log_owner(t, t.container));
}

void tx_log_count(std::atomic<std::uint64_t>* counter) {
  TxThread& t = *t_tx;
  if (t.doomed) fail_aborted(t);
  append(t, reinterpret_cast<std::uint64_t>(counter) | kLogCount,
         make_small(static_cast<std::int64_t>(counter->load(std::memory_order_acquire))), log_owner(t, t.container));
}

// ---- the server ----

std::size_t rollback_client_transactions(Metadata* m, std::uint32_t client_id) {
  std::size_t rolled_back = 0;
  const std::uint64_t server_word = std::uint64_t{kServerLockOwner} << 32 | kLockHeld;
  for (std::uint32_t i = 0; i < kMaxTransactions; ++i) {
    TxDescriptor& d = m->txs[i];
    const std::uint64_t owner = d.owner.load(std::memory_order_acquire);
    if (owner == 0 || static_cast<std::uint32_t>(owner >> 32) != client_id) continue;
    const auto state = static_cast<TxState>(d.state.load(std::memory_order_acquire));
    if (state == TxState::kActive || state == TxState::kAborting) {
      d.state.store(static_cast<std::uint32_t>(TxState::kAborting), std::memory_order_release);
      const Word log = d.log.load(std::memory_order_acquire);
      const std::size_t used = d.log_used.load(std::memory_order_acquire);
      if (log != kNull && used != 0) undo(log, used, server_word, client_id);
      // Emptied before the orecs are released (a successor server repeating this must not undo
      // words that others changed after the release).
      d.log_used.store(0, std::memory_order_release);
      ++rolled_back;
    }
    if (state != TxState::kIdle) {
      // Every orec it holds, found by scanning (its private write set died with it).
      const std::uint64_t v = m->tx_clock.fetch_add(1, std::memory_order_acq_rel) + 1;
      const std::uint64_t held = std::uint64_t{i} << 1 | 1;
      for (auto& o : m->orecs) {
        std::uint64_t w = o.load(std::memory_order_relaxed);
        if (w == held) o.compare_exchange_strong(w, v << 1, std::memory_order_acq_rel, std::memory_order_relaxed);
      }
    }
    d.state.store(static_cast<std::uint32_t>(TxState::kIdle), std::memory_order_release);
    d.log_used.store(0, std::memory_order_relaxed);
    d.log.store(kNull, std::memory_order_relaxed);
    d.waits_for.store(0, std::memory_order_relaxed);
    d.owner.store(0, std::memory_order_release);
  }
  return rolled_back;
}

}  // namespace colors::detail
