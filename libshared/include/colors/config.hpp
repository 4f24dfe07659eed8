// Compile-time constants shared by the server, every client and the tests.
#pragma once
#include <cstddef>
#include <cstdint>

namespace colors {

// Bumped whenever the attach handshake or the requests after it change (3: the hello's reattach
// form; 4: checkpoint requests). A client and a server must agree exactly.
inline constexpr std::uint32_t kProtocolVersion = 4;
// Bumped whenever anything in the segment's binary layout changes (metadata, block headers,
// object layouts, class records) or in how processes share it (5: container lock words, monitor
// entries that name the objects held, repository/channel generations; front carving may leave a
// free block off the freelist after a death, which only the walk-based repair lists; 6: heap id
// and header checksum, the collector's phase, the owner uid of a client slot, kAwaitingSuccessor;
// 7: the sorted map kind, one more builtin class in Metadata::builtin; 8: transaction descriptors,
// ownership records and the version clock in Metadata; 9: the durability level in Metadata;
// 10: a list's seqlock word, which lock-free readers rely on every writer to move; the collector's
// barrier flag in Metadata, which unfenced roots rely on; 11: the hash stored in strings and
// binaries, eight bytes per step instead of FNV-1a's one; 12: a user object's extension is a
// chain of arrays whose last slot links the next, instead of one array copied when it grows;
// 13: a deleted field stays in its class's later versions as an entry that keeps its slot;
// 14: a client slot's write_tracking_gap, which the server's page scans rely on detaches to raise;
// 15: the durable-commit channel's words in Metadata, sync_requested .. sync_failed;
// 16: a robust mutex's count of acquisitions, which the server's lock-holder watch reads).
// A client and a server must agree exactly.
inline constexpr std::uint32_t kLayoutVersion = 16;

// Default fixed address of the segment. High in the user half of the x86-64 address space,
// below where the kernel places mmap()s top-down (0x7f..) and far above where executables, their
// heaps and the JVM's compressed-oops heaps go.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// Sanitizer builds: AddressSanitizer's allocator owns 0x600000000000-0x640000000000, and
// ThreadSanitizer accepts application mappings only in its own ranges; 0x7e8000000000 suits both.
inline constexpr std::uintptr_t kDefaultAddress = 0x7e8000000000ULL;
#else
inline constexpr std::uintptr_t kDefaultAddress = 0x600000000000ULL;
#endif

inline constexpr std::size_t kDefaultHeapSize = 256ULL << 20;     // objects space
inline constexpr std::size_t kDefaultClassesSize = 64ULL << 20;   // classes space
inline constexpr std::size_t kTlabSize = 32ULL << 10;             // one thread-local buffer
inline constexpr std::size_t kMonitorCount = 4096;                // hashed monitor table
inline constexpr std::size_t kMaxClients = 256;                   // attached processes at once
inline constexpr std::size_t kNameBuckets = 4096;                 // class/repository/channel tables
inline constexpr std::size_t kMaxNameLength = 1024;               // class, field, repository names
// Versions of one class name: each field layout is a version, kept for the heap's lifetime and
// scanned when a layout is looked up. Bounds what a program storing ever new attribute names
// (keys as fields) takes of the classes space that every client shares.
inline constexpr std::uint32_t kMaxClassVersions = 4096;
// Deleted fields an object's class may keep (layout.hpp, FieldInfo): each keeps its slot in the
// object and an entry in every later version. Adding a field of a new name to an object that
// has this many fails; adding a deleted name back does not.
inline constexpr std::uint32_t kMaxDeletedFields = 64;
// The share of the classes space one class name's versions may take (1/8: 8 MiB of the default
// 64 MiB), so that no class, whatever its names and versions, fills what every client shares.
inline constexpr std::size_t kClassSpaceShare = 8;
inline constexpr std::size_t kMaxTransactions = 1024;             // threads in transactions at once
inline constexpr std::size_t kOrecBits = 15;                      // ownership records: 2^15 (256 KiB)

}  // namespace colors
