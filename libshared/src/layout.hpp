// Binary layout of the segment: [metadata | classes space | objects space | pending bitmap],
// mapped at the same fixed address in every process, so the raw pointers stored in it are valid
// everywhere.
//
// Any change here must bump kLayoutVersion (include/colors/config.hpp).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "block.hpp"
#include "colors/config.hpp"
#include "colors/types.hpp"
#include "robust_mutex.hpp"
#include "word.hpp"

namespace colors::detail {

inline constexpr std::uint64_t kSegmentMagic = 0x53524f4c4f43ULL;  // "COLORS"
inline constexpr std::uint64_t kClassMagic = 0x434c415353ULL;       // "CLASS"

// ---------------------------------------------------------------------------------------------
// Classes space records (bump-allocated, immortal, immutable once published unless noted).

// A name kept in the classes space (class, field, repository and channel names).
struct NameRef {
  std::uint64_t ptr;  // const char*, not NUL-terminated
  std::uint32_t len;
  std::uint32_t hash;
};

// A field of a class version, or a deleted field's entry (kFieldDeleted) keeping its slot.
//
// Invariant: for an object's whole lifetime, each of its slots belongs to one (name, type): the
// deletion of a field leaves a deleted entry holding its slot, adding the field back with the
// same type makes that entry live again, and any other new field takes slot `slot_count`. A
// writer that resolved a slot from an older class version (a plain store or a transaction,
// neither of which waits for evolutions) therefore stores into the field it named, or into a
// deleted field's slot that no reader looks at, never into another field. Lookups by name skip
// deleted entries (find_field).
inline constexpr std::uint8_t kFieldDeleted = 1;

struct FieldInfo {
  NameRef name;
  TypeKind type;
  std::uint8_t flags;     // kFieldDeleted
  std::uint8_t reserved[2];
  std::uint32_t slot;     // index into the object's slots (inline, then extension)
  NameRef class_name;     // for kObject fields: expected class ("" = any user class)

  bool deleted() const { return (flags & kFieldDeleted) != 0; }
};

struct ClassFamily;

// One immutable version of a class. Builtin classes have no fields.
struct ClassRecord {
  std::uint64_t magic;             // kClassMagic
  TypeKind kind;                   // builtin kind, or kObject for user classes
  std::uint8_t reserved[3];
  std::uint32_t version;           // 1-based within the family
  std::uint32_t field_count;       // entries in `fields`, deleted ones included
  std::uint32_t slot_count;        // slots an instance needs (max slot + 1)
  NameRef name;
  ClassFamily* family;             // all versions of this name
  std::atomic<ClassRecord*> next_version;  // append-only list, oldest first
  FieldInfo fields[];              // field_count entries, in declaration order (FieldInfo)
};

// All versions of one class name. Bucket chains and the version list are append-only: readers
// walk them without locks; writers append under Metadata::classes_lock and publish with release.
struct ClassFamily {
  NameRef name;
  std::atomic<ClassRecord*> first;
  std::atomic<ClassRecord*> last;
  std::atomic<std::uint32_t> count;
  std::atomic<ClassFamily*> next_in_bucket;
  std::uint64_t bytes;  // classes-space bytes its versions took (under classes_lock)
};

// Repositories and channels can be deleted (repository.hpp, channel.hpp): a record stays in its
// bucket chain for good, as a tombstone while deleted, and a later creation of the same name
// revives it. `generation` is odd while the record is live and even while it is deleted; each
// deletion and revival adds one, so a handle taken at generation g is stale once it differs.
struct RepositoryRecord {
  NameRef name;
  std::atomic<RepositoryRecord*> next_in_bucket;
  std::atomic<Word> root;  // GC root; stores go through the write barrier; null while deleted
  std::atomic<std::uint64_t> generation;
  RobustMutex lock;        // serialises set, delete and revival
};

// Header of a slot block: the classes-space storage of a channel's slots, reused through
// Metadata::slot_free once its channel is deleted (classes.hpp).
struct SlotBlockHeader {
  std::uint64_t magic;               // kSlotBlockMagic
  std::uint64_t capacity;            // slots in the block (a power of two); never changes
  std::atomic<std::uint64_t> next_free;  // free list link while free
  std::uint64_t reserved[5];
};
inline constexpr std::uint64_t kSlotBlockMagic = 0x534c4f5453ULL;  // "SLOTS"
inline constexpr unsigned kSlotClasses = 21;  // blocks of 2^0 .. 2^20 slots

struct ChannelRecord {
  NameRef name;
  std::atomic<ChannelRecord*> next_in_bucket;
  std::atomic<std::uint32_t> capacity;  // 0 while deleted
  std::uint32_t reserved;
  // Payload of a slot block (capacity <= its block's capacity; the rest stays null); GC roots.
  // nullptr while deleted.
  std::atomic<std::atomic<Word>*> slots;
  std::atomic<std::uint64_t> generation;
  RobustMutex lock;                   // guards head/tail/slots, generation changes
  std::atomic<std::uint64_t> head;    // next to receive (monotonic count)
  std::atomic<std::uint64_t> tail;    // next to send (monotonic count)
  std::atomic<std::uint32_t> not_empty_seq;  // futex word: bumped after every send
  std::atomic<std::uint32_t> not_full_seq;   // futex word: bumped after every receive
  std::atomic<std::uint32_t> recv_waiters;   // receivers blocked in the kernel
  std::atomic<std::uint32_t> send_waiters;   // senders blocked in the kernel
};

// ---------------------------------------------------------------------------------------------
// Objects space layouts. Every object: BlockHeader, then its class pointer, then its body.

struct ObjectHead {
  BlockHeader block;
  std::atomic<ClassRecord*> cls;  // changes only by schema evolution (user objects)
};

struct IntegerObject { ObjectHead head; std::int64_t value; };
struct FloatObject { ObjectHead head; double value; };
struct StringObject { ObjectHead head; std::uint64_t length; std::uint64_t hash; char bytes[]; };
struct BinaryObject { ObjectHead head; std::uint64_t length; std::uint64_t reserved; unsigned char bytes[]; };

// Slot arrays: list elements, extension fields, root-table chunks.
struct ArrayObject { ObjectHead head; std::uint64_t capacity; std::atomic<Word> slots[]; };

struct ListObject {
  ObjectHead head;
  std::atomic<std::uint64_t> size;
  std::atomic<Word> array;  // ArrayObject reference (or null when empty)
  std::atomic<std::uint64_t> lock;  // container_lock.hpp: every locked operation holds it
  // Seqlock of the readers that take no lock (list_seqlock.hpp): odd while a change is under way.
  std::atomic<std::uint64_t> version;
};

struct TableEntry {
  std::atomic<std::uint64_t> hash;
  std::atomic<Word> key;    // kNull = empty, kTombstone = deleted, kNullKey = the null key
  std::atomic<Word> value;  // unused by sets
};
struct TableObject {
  ObjectHead head;
  std::uint64_t capacity;             // power of two
  std::atomic<std::uint64_t> used;    // live + tombstones
  TableEntry entries[];
};
// Sets and maps.
struct HashObject {
  ObjectHead head;
  std::atomic<std::uint64_t> size;
  std::atomic<Word> table;  // TableObject reference (or null when never filled)
  std::atomic<std::uint64_t> lock;  // container_lock.hpp: every operation holds it
};

// Ordered maps: a B+tree whose nodes are kArray objects (sorted_map.hpp has their format).
struct SortedMapObject {
  ObjectHead head;
  std::atomic<std::uint64_t> size;
  std::atomic<Word> root;  // root node (kArray) or null when empty
  std::atomic<std::uint64_t> lock;  // container_lock.hpp: every operation holds it
};

// User objects: `inline_slots` slots were reserved at allocation (from the block size); a version
// with more slots keeps the rest in its extension: a chain of kExtension arrays, each holding
// fields in its slots [0, capacity - 1) and, in its last slot, the next array or null.
// Invariants: a chain only grows at its end (under Metadata::classes_lock, ensure_storage); an
// array in it is never copied, replaced or unlinked while the object lives. So a field's slot has
// one address for the object's lifetime, and a store into it, concurrent with any schema change of
// the object, is never lost (a copy into a larger array would lose stores made between the copy
// and its publication).
struct UserObject {
  ObjectHead head;
  std::atomic<Word> extension;  // ArrayObject reference or null
  std::atomic<Word> slots[];
};

// ---------------------------------------------------------------------------------------------
// Metadata space.

// One object held through a monitor entry besides MonitorEntry::held (monitor.hpp: objects
// hashing to one entry, held re-entrantly by its owner).
struct MonitorHold {
  std::atomic<std::uint64_t> obj;      // 0 = unused
  std::atomic<std::uint32_t> count;    // recursion of that object
  std::uint32_t reserved;
};

inline constexpr std::size_t kMonitorExtraHolds = 3;   // further objects one owner holds through an entry
inline constexpr std::size_t kMonitorPoisonSlots = 4;  // objects awaiting their owner-died report
inline constexpr std::uint32_t kMonitorPoisonWide = 1u << 16;  // MonitorEntry::poison: overflow fallback
// MonitorEntry::recursion: the count of `held` in the low bits, and this flag while extra[] or
// overflow hold anything, so the uncontended exit needs only the entry's first cache line.
inline constexpr std::uint32_t kMonitorOthersHeld = 1u << 31;

// The first cache line holds everything the uncontended enter/exit touch.
struct alignas(64) MonitorEntry {
  pthread_mutex_t mutex;               // robust, process-shared; we count recursion ourselves
  std::atomic<std::uint64_t> owner;    // client id << 32 | kernel thread id; 0 = free
  std::atomic<std::uint64_t> held;     // the object the owner holds through this entry; 0 = none
  std::atomic<std::uint32_t> recursion;  // recursion of `held` | kMonitorOthersHeld
  std::atomic<std::uint32_t> poison;   // poisoned slots in use, plus kMonitorPoisonWide
  std::atomic<std::uint32_t> cv_seq;   // futex word of the condition: bumped by notify_all
  std::atomic<std::uint32_t> waiters;  // threads blocked in wait()
  std::atomic<std::uint32_t> extra_used;  // extra[] slots in use
  std::atomic<std::uint32_t> overflow;    // recursion of objects held beyond extra[] (untracked)
  MonitorHold extra[kMonitorExtraHolds];
  // Objects whose holder died holding them through this entry: the next acquirer of each gets
  // OwnerDiedError (monitor.hpp, "Owner death").
  std::atomic<std::uint64_t> poisoned[kMonitorPoisonSlots];
};

enum class ClientState : std::uint32_t { kFree = 0, kActive = 1, kReclaiming = 2 };

struct ClientSlot {
  std::atomic<std::uint32_t> state;      // ClientState
  std::atomic<std::uint32_t> client_id;  // unique per attachment, never 0
  std::atomic<std::int32_t> pid;
  // The owner's effective uid: a successor server lets only this uid and pid reattach to the slot
  // (colors-server/README.md, "Surviving the server").
  std::atomic<std::uint32_t> uid;
  // 1 once this client's mapping stopped being tracked (its detach replaces it): the server's next
  // capture then compares pages instead of trusting the scans (write_tracking.hpp). The server
  // clears it when it has read it.
  std::atomic<std::uint32_t> write_tracking_gap;
  std::atomic<std::uint32_t> pressure_watchers;  // heap-pressure watchers this client runs (heap.hpp)
  std::atomic<Word> roots;               // first ArrayObject chunk of this client's root table
  // What the client holds, for the per-client limit (heap.hpp, "Per-client limit"): bytes of the
  // live objects it allocated, as the last sweep counted them (the collector writes it), and the
  // bytes carved for it since (its own threads add to it; the sweep resets it).
  std::atomic<std::uint64_t> live_bytes;
  std::atomic<std::uint64_t> allocated_since;
};

// Statistics of one collector cycle, published in the segment for clients (seqlock).
struct GcCycleStats {
  std::uint64_t cycle;               // 1-based count of finished cycles
  std::uint64_t clear_ns, roots_ns, mark_ns, remark_ns, sweep_ns, total_ns;
  std::uint64_t marking_passes;      // the root pass plus the pending passes
  std::uint64_t objects_marked, bytes_marked;
  std::uint64_t objects_freed, bytes_freed;
  std::uint64_t heap_used_before, heap_used_after;  // bytes not on the freelist
  std::uint64_t largest_free;
  std::uint64_t threads;
  std::uint64_t pending_objects;     // objects the pending passes took from the pending set
};

// kAwaitingSuccessor: a server stopped with --keep-heap; clients keep the heap and wait for a
// successor like after a crash (a crashed server leaves kRunning behind).
enum class ServerState : std::uint32_t { kStarting = 0, kRunning = 1, kStopped = 2, kAwaitingSuccessor = 3 };

// Metadata::gc_phase: what the collector was doing, so that a successor server can finish or
// abandon a cycle its predecessor died in (gc/README.md, "A server that dies mid-cycle").
enum class GcPhase : std::uint8_t { kIdle = 0, kMarking = 1, kSweeping = 2 };

// Transactions (transaction.hpp has the protocol and its invariants).
//
// TxDescriptor::state: kActive while the owning thread runs a transaction; kCommitted from the
// commit point until its ownership records are released (a dead owner's writes then stand);
// kAborting while its undo log is applied (a dead owner's log is applied again, from the end).
enum class TxState : std::uint32_t { kIdle = 0, kActive = 1, kCommitted = 2, kAborting = 3 };

// One per thread that has run a transaction, claimed on its first one.
struct alignas(64) TxDescriptor {
  std::atomic<std::uint64_t> owner;      // client id << 32 | kernel thread id; 0 = free
  std::atomic<std::uint32_t> state;      // TxState
  std::atomic<std::uint32_t> client_slot;
  std::atomic<std::int32_t> pid;
  std::atomic<std::int32_t> tid;
  // The undo log: an ArrayObject of entries of three slots (transaction.hpp, "Undo log"), rooted
  // by its owner's root table; log_used slots of it are valid (stored with release after them).
  std::atomic<Word> log;
  std::atomic<std::uint64_t> log_used;
  // 1 + the index of the descriptor whose ownership record this one waits for; 0 = none
  // (deadlock detection follows these links).
  std::atomic<std::uint64_t> waits_for;
  std::uint64_t reserved[2];
};

enum class DurabilityLevel : std::uint32_t { kNone = 0, kAsync = 1, kFull = 2 };

struct Metadata {
  std::uint64_t magic;
  std::uint32_t layout_version;
  std::uint32_t protocol_version;
  std::uint64_t base;            // address the segment is mapped at
  std::uint64_t total_size;
  std::uint64_t classes_begin, classes_end;
  std::uint64_t objects_begin, objects_end;
  // The collector's pending set (pending_bits.hpp): one bit per granule of the objects space.
  std::uint64_t pending_bits_begin, pending_bits_end;
  // Random at formatting, never changed: a successor server that adopted the heap keeps it, so a
  // client reattaching after a server's death can tell its own heap from a fresh one.
  std::uint64_t heap_id;
  // Checksum of the immutable header above (magic .. heap_id), written last by the formatting
  // (segment_check.hpp): a successor refuses a heap whose header does not match it.
  std::uint64_t header_checksum;

  std::atomic<std::uint32_t> server_state;  // ServerState
  std::atomic<std::int32_t> server_pid;
  std::atomic<std::uint32_t> next_client_id;
  // Futex word: bumped by an allocation that collector cycles could not satisfy, so that other
  // processes drop roots their language no longer needs (heap.hpp, signal_heap_pressure).
  std::atomic<std::uint32_t> heap_pressure_seq;
  // Futex word: bumped by a watcher when it has dropped what it could after a heap_pressure_seq bump.
  std::atomic<std::uint32_t> heap_relief_seq;
  // Test hook (monitor.hpp, set_monitor_table_bits): index bits cleared from every monitor index,
  // so that tests can make distinct objects share entries. 0 (as formatted) = the whole table.
  std::atomic<std::uint32_t> monitor_index_clear;

  // Classes space: bump pointer, guarded by classes_lock for writers (records are published
  // afterwards with release stores into the tables).
  RobustMutex classes_lock;
  std::atomic<std::uint64_t> classes_top;
  ClassRecord* builtin[kTypeKindCount];
  std::atomic<ClassFamily*>* class_buckets;            // kNameBuckets
  std::atomic<RepositoryRecord*>* repository_buckets;  // kNameBuckets
  std::atomic<ChannelRecord*>* channel_buckets;        // kNameBuckets
  // Free slot blocks by size class (2^k slots), linked through SlotBlockHeader::next_free;
  // guarded by classes_lock.
  std::atomic<std::uint64_t> slot_free[kSlotClasses];

  // Objects space freelist: blocks of kind kFree, size >= kTlabSize, doubly linked through their
  // first two payload words (next, prev), so the sweeper can unlink the chunks it coalesces.
  // Guarded by heap_lock.
  RobustMutex heap_lock;
  std::atomic<std::uint64_t> freelist_head;
  std::atomic<std::uint64_t> free_bytes;     // bytes on the freelist
  std::atomic<std::uint64_t> free_chunks;    // blocks on the freelist
  std::atomic<std::uint64_t> allocated_bytes_total;  // bytes ever handed out (monotonic)

  // Held by the collector for a whole cycle and by the heap verifier, so a verification never
  // reads memory the sweep is reclaiming.
  RobustMutex gc_cycle_lock;
  // GC configuration and state (the collector owns these fields; gc/README.md).
  std::atomic<std::uint32_t> gc_threshold_percent;
  // Per-client limit on live bytes allocated (colors-server --client-live-limit); 0: none.
  std::atomic<std::uint64_t> client_live_limit;
  std::atomic<std::uint32_t> gc_request_seq;  // futex word: bumped to ask for a cycle
  std::atomic<std::uint32_t> gc_started_seq;  // cycles started
  std::atomic<std::uint32_t> gc_done_seq;     // futex word: cycles finished
  std::atomic<std::uint32_t> gc_waiters;      // threads blocked on gc_done_seq
  // Epoch of the current cycle, 1..255: objects published now are born with recent = epoch,
  // and the cycle marks with marked = epoch. Flipping it is the snapshot instant.
  std::atomic<std::uint8_t> gc_epoch;
  std::atomic<std::uint8_t> gc_poison;        // debug: freed memory is filled with a pattern
  std::atomic<std::uint8_t> gc_running;       // a collector serves this segment
  std::atomic<std::uint8_t> gc_phase;         // GcPhase of the cycle gc_epoch names
  std::atomic<std::uint32_t> gc_stats_seq;    // seqlock over gc_last (odd while being written)
  GcCycleStats gc_last;                       // statistics of the last finished cycle

  // DurabilityLevel of the server's --durability, set at its start (colors-server/README.md,
  // "Durability"): under kFull an update transaction's commit waits for the server's log.
  std::atomic<std::uint32_t> durability;
  // 1 while this segment's collector issues its barrier after every flip (collector_barrier.hpp):
  // clients may then take roots without a fence.
  std::atomic<std::uint32_t> collector_barrier;

  // The durable-commit channel (durable_commit.hpp): tickets handed out by committing clients,
  // the last one a log record covered, the last one a failed record covered, and the two futex
  // words (the checkpoint thread sleeps on sync_bell, waiting clients on sync_done_bell).
  alignas(64) std::atomic<std::uint64_t> sync_requested;
  std::atomic<std::uint32_t> sync_bell;
  std::atomic<std::uint32_t> sync_done_bell;
  std::atomic<std::uint64_t> sync_done;
  std::atomic<std::uint64_t> sync_failed;

  ClientSlot clients[kMaxClients];
  MonitorEntry monitors[kMonitorCount];

  // Transactions: the global version clock, the descriptors, and the ownership records (orecs),
  // one word each: `version << 1` while free, `descriptor index << 1 | 1` while a transaction
  // holds it. Objects hash to orecs by address (transaction.hpp).
  alignas(64) std::atomic<std::uint64_t> tx_clock;
  TxDescriptor txs[kMaxTransactions];
  alignas(64) std::atomic<std::uint64_t> orecs[std::size_t{1} << kOrecBits];
};

}  // namespace colors::detail
