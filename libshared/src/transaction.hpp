// Transactions: atomic, serializable multi-object updates across threads, processes and languages,
// rolled back by the server when their process dies.
//
// The design (doc/DESIGN.md, "Transactions", has the argument and the alternatives): a software
// transactional memory in the style of TL2 and TinySTM's write-through mode, with its undo log in
// the shared heap so that the server can finish or undo the transaction of a dead process.
//
//  * A global version clock (Metadata::tx_clock) and 2^kOrecBits ownership records (orecs): every
//    object hashes to one orec by its address. An orec is `version << 1` while free, and
//    `descriptor index << 1 | 1` while a transaction holds it.
//  * Writes are in place (write-through). Before its first write to an object a transaction takes
//    the object's orec (compare-exchange from a free value); before each store it appends the old
//    value of the word to its undo log. Container operations take the container's orec, and log
//    every word of the container they change (its slots, storage references and counters).
//  * Reads are invisible: a transaction reads an orec, the value, and the orec again, and accepts
//    the value when the orec did not change, is free, and its version is at most the transaction's
//    read version rv (the clock when it began, or when it last extended). Update transactions keep
//    the orecs they read and validate them at commit.
//  * Commit: a transaction without writes has nothing to do (every read was consistent at rv).
//    Otherwise wv = ++clock; the read set is validated (unless wv == rv + 1: nobody committed
//    since); state = kCommitted (the commit point); each held orec is released with version wv.
//  * Rollback: state = kAborting; the undo log is applied from its end; each held orec is released
//    with a fresh version (never its old one: a reader that saw an uncommitted value between its
//    two orec reads then sees the orec change).
//
// Invariants:
//  * A word changed by a transaction is logged (entry stored, then log_used published with
//    release) before it is changed, by a thread that holds the orec of its object. So the log, read
//    at any instant, names every word the transaction changed, with the value it had before.
//  * A log is emptied (log_used = 0) before the orecs it covers are released, by a rollback and by
//    the server: whoever finishes the descriptor later undoes only words still held.
//  * While a transaction holds an orec, no other transaction changes or reads (accepts a value of)
//    that object: it waits (bounded), or fails with TransactionConflictError.
//  * A dead owner's descriptor is finished by the server (rollback_client_transactions) before
//    its roots are dropped: kCommitted -> release its orecs; kActive or kAborting -> apply the
//    whole log from the end (idempotent: each entry restores the same old value), then release.
//    A successor server repeats this for a server that died in the middle of it.
//  * Writes and reads outside transactions do not take orecs: they keep their speed and meaning,
//    and are not isolated from transactions (doc/DESIGN.md says what they can see). The one
//    exception: a plain change to a container waits while a transaction holds the container's
//    orec (TxContainerScope), so that no rollback overwrites part of it.
//
// Undo log: an ArrayObject of entries of three slots: make_small(address | kind), the old value,
// and the object the word belongs to (a reference: the container or the user object; kNull for a
// word outside the objects space, a repository's root). kind kLogWord: an std::atomic<Word> slot,
// restored through the write barrier; kind kLogCount: an std::atomic<uint64_t> counter (a size)
// whose old value is a small integer. A user object's field beyond its inline slots is a word like
// any other: its slot in the extension chain never moves (layout.hpp, UserObject). A container's
// entries are restored under its lock word. The log is rooted, so it keeps
// alive every old value and every object it has entries for until the transaction ends: an object
// the transaction wrote and dropped (or that others unlinked meanwhile) is not freed before the
// rollback that writes into it.
//
// REQUIRES (everywhere below): attached; the calling thread's transaction, when one is named.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "barrier.hpp"
#include "layout.hpp"
#include "roots.hpp"

namespace colors::detail {

struct TxThread;
// This thread's running transaction; nullptr outside one. The only thing the non-transactional
// paths look at (one thread-local load).
extern constinit thread_local TxThread* t_tx;
inline bool in_transaction() { return t_tx != nullptr; }

// kReadForUpdate: a read whose result the caller writes back in a later operation (a binding's
// sort, reverse or slice assignment: a snapshot, then a replace). Inside a transaction a read;
// outside one it waits, as a change does, while a transaction holds the container, so that it
// never reads changes a rollback is about to take back (and then writes them back after it).
enum class TxAccess { kRead, kWrite, kReadForUpdate };

// ---- lifecycle (client.cpp's Transaction and the bindings) ----

// Begins a transaction, or joins the running one (flat nesting: depth + 1). timeout_ns <= 0: none;
// a joined transaction keeps the outer one's deadline.
void tx_begin(std::int64_t timeout_ns);
// Ends one level. The outermost commits; throws TransactionConflictError (rolled back) when
// validation fails, TransactionAbortedError (rolled back) when the transaction was doomed.
void tx_commit();
// Ends one level without committing. The outermost rolls back; an inner one dooms the whole
// transaction (its outermost commit then fails), since the inner's writes cannot be told apart.
void tx_rollback();
// Makes the transaction that just began take the orec of everything it reads, as for a write, so
// that writers cannot invalidate it (they wait for it instead). atomically() escalates an attempt
// after several conflicts: without it, a long reader can starve behind a stream of short writers.
// Only before the transaction's first access.
void tx_escalate();
// Nesting depth of this thread's transaction (0: none).
int tx_depth();
// The running transaction's attachment ended (detach or server change) or nothing is running:
// what a binding tells its user about a transaction object that outlived its attachment.
bool tx_attachment_gone();

// Throws InvalidArgumentError naming `what` when called inside a transaction: for operations that
// cannot be rolled back (channel send and receive, remote calls, schema evolution, repository
// deletion).
void tx_refuse(const char* what);
// Under --durability full, after an update transaction's commit point: asks the server for a log
// record taken after it and waits until it is on disk (client.cpp). Throws DurabilityError when the
// server could not write it; the transaction stays committed.
void await_durable_commit();

// A binding's hooks around a transaction's wait for an object another transaction holds (the
// bounded conflict wait, at most COLORS_TX_CONFLICT_WAIT_MS): `begin` runs on the waiting thread
// before it waits and returns a token, `end(token)` runs when it stops waiting (the wait ended or
// throws). The Python binding releases its GIL there, so that the holder, which may be another
// thread of the same process, can run (and a deadlock between two such threads is detected rather
// than timed out). Process-wide; the last call wins; nullptr: none (the default).
// REQUIRES of the hooks: they do not throw and start no transaction.
using TxWaitBegin = void* (*)();
using TxWaitEnd = void (*)(void* token);
void set_tx_wait_hooks(TxWaitBegin begin, TxWaitEnd end);

// ---- reads and writes of object fields and repository roots ----

// Reads `slot` of `owner` (an object or repository record) under the transaction's isolation.
Word tx_read_word(const void* owner, const std::atomic<Word>* slot);
Rooted tx_read_rooted(const void* owner, const std::atomic<Word>* slot);
// Takes `owner`'s orec, logs the slot and stores `value` through the write barrier.
void tx_write(const void* owner, std::atomic<Word>* slot, Word value);

// The one field write path: a transaction's when one runs, the write barrier otherwise.
inline void write_slot(const void* owner, std::atomic<Word>* slot, Word value) {
  if (__builtin_expect(t_tx != nullptr, 0)) return tx_write(owner, slot, value);
  store_ref(slot, value);
}
// The one field read paths (root_load: roots.hpp).
inline Word read_slot_word(const void* owner, const std::atomic<Word>* slot) {
  if (__builtin_expect(t_tx != nullptr, 0)) return tx_read_word(owner, slot);
  return slot->load(std::memory_order_acquire);
}
inline Rooted read_slot_rooted(const void* owner, const std::atomic<Word>* slot) {
  if (__builtin_expect(t_tx != nullptr, 0)) return tx_read_rooted(owner, slot);
  return root_load(slot);
}

// ---- containers (containers.cpp, sorted_map.cpp) ----

// Before a container operation takes the container's lock word: a write takes the container's
// orec (waiting, bounded, for another holder), a read waits until no other transaction holds it.
void tx_container_open(const void* container, TxAccess a);
// Under the lock word: a read validates the orec (free, version <= rv, or held by this
// transaction) and records it; a write makes `container` the owner of the words logged next.
void tx_container_locked(const void* container, TxAccess a);
void tx_container_done();
// Outside a transaction, under the container's lock word: whether a transaction holds the
// container's orec (or another object's that hashes to the same one).
bool tx_container_held(const void* container);
// Outside a transaction, without the container's lock word: waits until no transaction holds the
// container's orec. Throws TransactionConflictError naming the holder when one still does after
// COLORS_TX_PLAIN_WAIT_MS (default 2000 ms), and InterruptedError when the binding's interrupt
// hook asks (checked every kInterruptSliceNs). The binding's wait hooks run around the wait.
void tx_wait_container_free(const void* container);
// Log the word / counter before the container operation changes it (kLogWord / kLogCount).
void tx_log_word(std::atomic<Word>* slot);
void tx_log_count(std::atomic<std::uint64_t>* counter);

// A container's part in a transaction, for the length of one operation; constructed before the
// container's lock word is taken (a lock order: orec, then lock word), admitted() after.
//
// A change (or a read for update) outside any transaction is admitted only while no transaction
// holds the container: a rollback restores every word the transaction logged, and would overwrite
// a plain change made meanwhile word by word, tearing the container from its counters (a sorted
// map's size from its tree, a hash table's used count from its entries). Checked under the lock
// word, which every transactional operation on the container takes after the orec: a transaction
// that takes the orec later runs its operation after this one. Plain reads stay admitted (weak
// atomicity: doc/DESIGN.md, "Transactions").
class TxContainerScope {
 public:
  TxContainerScope(const void* container, TxAccess a)
      : container_(container),
        access_(a == TxAccess::kWrite ? TxAccess::kWrite : TxAccess::kRead),
        waits_(a != TxAccess::kRead) {
    if (__builtin_expect(t_tx != nullptr, 0)) {
      tx_container_open(container, access_);
      active_ = true;
    }
  }
  // Under the lock word. false: the operation must not run yet; the caller repairs what a dead
  // owner left, releases the lock word, calls wait(), and takes the lock word again.
  bool admitted() {
    if (active_) {
      tx_container_locked(container_, access_);
      return true;
    }
    return !waits_ || !tx_container_held(container_);
  }
  void wait() const { tx_wait_container_free(container_); }
  ~TxContainerScope() {
    if (active_) tx_container_done();
  }
  TxContainerScope(const TxContainerScope&) = delete;
  TxContainerScope& operator=(const TxContainerScope&) = delete;

 private:
  const void* container_;
  TxAccess access_;  // kRead or kWrite: what a transaction does
  bool waits_;       // outside a transaction: wait while one holds the container
  bool active_ = false;
};

// The stores of container operations: logged first inside a transaction.
inline void store_ref_logged(std::atomic<Word>* slot, Word value) {
  if (__builtin_expect(t_tx != nullptr, 0)) tx_log_word(slot);
  store_ref(slot, value);
}
inline void store_count_logged(std::atomic<std::uint64_t>* counter, std::uint64_t value) {
  if (__builtin_expect(t_tx != nullptr, 0)) tx_log_count(counter);
  counter->store(value, std::memory_order_release);
}

// ---- the server ----

// Finishes the transactions of a client that is gone (see the invariants): rolls back or completes
// each descriptor it owned and frees it. Returns how many were rolled back. Idempotent.
// REQUIRES: the client's roots not yet dropped (its logs are rooted there).
std::size_t rollback_client_transactions(Metadata* m, std::uint32_t client_id);

}  // namespace colors::detail
