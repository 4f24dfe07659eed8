#include "segment.hpp"
#include "write_tracking.hpp"

#include <sys/mman.h>
#include <sys/random.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <new>

#include "classes.hpp"
#include "colors/errors.hpp"
#include "format.hpp"
#include "heap.hpp"
#include "pending_bits.hpp"
#include "segment_check.hpp"

namespace colors::detail {

std::atomic<Metadata*> g_current_meta{nullptr};  // see set_current_meta

PendingBits g_pending_bits;

PendingBits pending_bits_of(const Metadata* m) {
  PendingBits pb;
  if (m != nullptr) {
    pb.objects_begin = m->objects_begin;
    pb.objects_end = m->objects_end;
    pb.words = reinterpret_cast<std::atomic<std::uint64_t>*>(m->pending_bits_begin);
    pb.gc_phase = &m->gc_phase;
    pb.gc_epoch = &m->gc_epoch;
  }
  return pb;
}

Metadata* current_meta_or_null() { return g_current_meta.load(std::memory_order_acquire); }
void throw_not_attached() { throw NotAttachedError("not attached to a colors server: call colors::attach() first"); }
void set_current_meta(Metadata* m) {
  // The pending-bit view is whole before a thread can see the segment it belongs to.
  if (m == nullptr) g_current_meta.store(nullptr, std::memory_order_release);
  g_pending_bits = pending_bits_of(m);
  if (m != nullptr) g_current_meta.store(m, std::memory_order_release);
}

std::size_t metadata_size() { return round_up(sizeof(Metadata), 1 << 16); }

std::string default_heap_dir() { return "/dev/shm/colors-" + std::to_string(::geteuid()); }

std::string heap_file(const std::string& dir, const std::string& name) {
  return (dir.empty() ? default_heap_dir() : dir) + "/" + name + ".heap";
}

std::string ensure_private_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return "cannot create the heap directory " + dir + ": " + std::strerror(errno);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return "cannot stat the heap directory " + dir + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return "the heap directory " + dir + " is not a directory (a symlink or file planted there?)";
  if (st.st_uid != ::geteuid())
    return "the heap directory " + dir + " belongs to uid " + std::to_string(st.st_uid) + ", not to this server's uid " +
           std::to_string(::geteuid()) + ": another user created it first; remove it (as root) or pass --heap-dir";
  if ((st.st_mode & 077) != 0) {
    // Our own directory with a loose mode (an old umask): tighten it, never use it open.
    if (::chmod(dir.c_str(), 0700) != 0)
      return "the heap directory " + dir + " is accessible to other users and chmod 0700 failed: " + std::strerror(errno);
  }
  return {};
}

namespace {
// The range a client's detach left as a private view (Segment::~Segment); a later attach at the
// same place replaces it. Touched only under the client's attach lock.
struct Retired {
  std::uintptr_t address = 0;
  std::size_t size = 0;
};
Retired g_retired;
}  // namespace

void* map_fixed_noreplace(int fd, std::uintptr_t address, std::size_t size) {
  int flags = MAP_SHARED | MAP_FIXED_NOREPLACE;
  if (g_retired.size != 0) {
    if (g_retired.address == address && g_retired.size == size) {
      flags = MAP_SHARED | MAP_FIXED;  // replaces the retired view in one step: no unmapped gap
    } else {
      ::munmap(reinterpret_cast<void*>(g_retired.address), g_retired.size);
    }
    g_retired = Retired{};
  }
  void* p = ::mmap(reinterpret_cast<void*>(address), size, PROT_READ | PROT_WRITE, flags, fd, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    if (e == EEXIST)
      throw AddressInUseError("cannot map the colors segment at " + hex(address) + " (" + std::to_string(size >> 20) +
                              " MiB): that range is already mapped in this process. Start the server with "
                              "another --address, or free the range before attaching.");
    throw Error(ErrorCode::kGeneric, std::string("mapping the colors segment failed: ") + std::strerror(e));
  }
  if (p != reinterpret_cast<void*>(address)) {
    // A kernel older than 4.17 ignores MAP_FIXED_NOREPLACE and treats the address as a hint.
    ::munmap(p, size);
    throw AddressInUseError("cannot map the colors segment at " + hex(address) +
                            ": the kernel placed it elsewhere (that range is in use, or the kernel lacks "
                            "MAP_FIXED_NOREPLACE)");
  }
  return p;
}

// A client's detach does not leave the range unmapped: a thread of a runtime without a global lock
// (a JVM's field fast path) may still be reading or writing through a stale object for an instant,
// and must neither fault nor reach the shared heap. The range becomes a private copy-on-write view
// of the same file instead, in one mmap (no gap): stale reads see heap data, stale writes stay in
// this process. It costs the file's pages until the next attach replaces it (map_fixed_noreplace)
// or the process exits. A fork child's inherited mapping is made private the same way at once
// (client.cpp): it is neither tracked nor stopped by the server.
void Segment::privatize() {
  if (private_ || !path_.empty() || fd_ < 0 || meta_ == nullptr) return;
  void* p = ::mmap(meta_, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, fd_, 0);
  private_ = p == static_cast<void*>(meta_);
}

Segment::~Segment() {
  if (g_current_meta.load(std::memory_order_relaxed) == meta_) set_current_meta(nullptr);
  if (meta_ != nullptr) {
    privatize();
    if (private_)
      g_retired = Retired{reinterpret_cast<std::uintptr_t>(meta_), size_};
    else
      ::munmap(meta_, size_);
  }
  if (tracking_fd_ >= 0) ::close(tracking_fd_);
  if (fd_ >= 0) ::close(fd_);
}

// Before the first write through the new mapping: what the server's scans report must include it.
void Segment::track() { tracking_fd_ = track_writes(meta_, size_, &why_untracked_); }

static void format(Metadata* m, const SegmentConfig& cfg, std::size_t total) {
  std::memset(static_cast<void*>(m), 0, sizeof(Metadata));
  m->magic = kSegmentMagic;
  m->layout_version = kLayoutVersion;
  m->protocol_version = kProtocolVersion;
  m->base = cfg.address;
  m->total_size = total;
  m->classes_begin = cfg.address + metadata_size();
  m->classes_end = m->classes_begin + cfg.classes_size;
  m->objects_begin = m->classes_end;
  m->objects_end = m->objects_begin + cfg.heap_size;
  m->pending_bits_begin = m->objects_end;
  m->pending_bits_end = m->pending_bits_begin + pending_bits_bytes(cfg.heap_size);  // zero: new memory
  m->classes_top.store(m->classes_begin, std::memory_order_relaxed);
  m->classes_lock.init();
  m->heap_lock.init();
  m->gc_cycle_lock.init();
  m->next_client_id.store(1, std::memory_order_relaxed);
  m->gc_threshold_percent.store(70, std::memory_order_relaxed);

  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
  for (auto& mon : m->monitors) pthread_mutex_init(&mon.mutex, &a);
  pthread_mutexattr_destroy(&a);

  init_classes_space(m);
  init_objects_space(m);
  std::uint64_t id = 0;
  if (::getrandom(&id, sizeof id, 0) != static_cast<ssize_t>(sizeof id) || id == 0)
    id = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
         (static_cast<std::uint64_t>(::getpid()) << 32) ^ 1;
  m->heap_id = id;
  // Last: a successor refuses a heap whose formatting did not finish (segment_check.hpp).
  m->header_checksum = segment_header_checksum(*m);
  m->server_state.store(static_cast<std::uint32_t>(ServerState::kStarting), std::memory_order_release);
}

std::unique_ptr<Segment> Segment::create(const SegmentConfig& cfg) {
  if (cfg.heap_size < 4 * kTlabSize || cfg.heap_size % kGranule != 0)
    throw InvalidArgumentError("heap size must be a multiple of 16 bytes and at least " +
                               std::to_string(4 * kTlabSize) + " bytes");
  if (cfg.classes_size < (1 << 20) || cfg.classes_size % kGranule != 0)
    throw InvalidArgumentError("classes size must be a multiple of 16 bytes and at least 1 MiB");
  if (cfg.address % (1 << 16) != 0) throw InvalidArgumentError("segment address must be 64 KiB aligned");
  if (cfg.heap_size > (std::size_t{1} << 45) || cfg.classes_size > (std::size_t{1} << 45))
    throw InvalidArgumentError("heap and classes sizes must be at most 32 TiB each");  // or the total wraps
  std::size_t total = metadata_size() + cfg.classes_size + cfg.heap_size + pending_bits_bytes(cfg.heap_size);
  const std::string dir = cfg.dir.empty() ? default_heap_dir() : cfg.dir;
  if (std::string why = ensure_private_dir(dir); !why.empty()) throw RefusedError(why);
  const std::string path = heap_file(dir, cfg.name);
  ::unlink(path.c_str());  // a stale segment of a crashed server (the caller holds the name's lock)
  // O_EXCL | O_NOFOLLOW: the file is the one this call made, in a directory only we can write.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw Error(ErrorCode::kGeneric, "cannot create the segment file " + path + ": " + std::strerror(errno));
  std::unique_ptr<Segment> s(new Segment());
  s->fd_ = fd;
  s->path_ = path;
  if (::ftruncate(fd, static_cast<off_t>(total)) != 0) {
    int e = errno;
    ::unlink(path.c_str());
    throw Error(ErrorCode::kGeneric, "cannot size the segment file " + path + ": " + std::strerror(e));
  }
  try {
    s->meta_ = static_cast<Metadata*>(map_fixed_noreplace(fd, cfg.address, total));
  } catch (...) {
    ::unlink(path.c_str());
    throw;
  }
  s->size_ = total;
  s->track();
  format(s->meta_, cfg, total);
  set_current_meta(s->meta_);
  return s;
}

std::unique_ptr<Segment> Segment::open_fd(int fd, std::uintptr_t address, std::size_t size) {
  std::unique_ptr<Segment> s(new Segment());
  s->fd_ = fd;  // kept for the retired view at detach (~Segment); closed there, or on a throw here
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) < size)
    throw ServerGoneError("the segment descriptor the server passed is not a segment of " + std::to_string(size) +
                          " bytes");
  s->meta_ = static_cast<Metadata*>(map_fixed_noreplace(fd, address, size));
  s->size_ = size;
  s->track();
  if (s->meta_->magic != kSegmentMagic || s->meta_->layout_version != kLayoutVersion) {
    throw VersionMismatchError("the segment has layout version " + std::to_string(s->meta_->layout_version) +
                               " but this client expects layout version " + std::to_string(kLayoutVersion));
  }
  return s;  // not yet current: attach() publishes it once the attachment is whole (set_current_meta)
}

std::unique_ptr<Segment> Segment::adopt(const SegmentConfig& cfg, std::string& refusal) {
  const std::string dir = cfg.dir.empty() ? default_heap_dir() : cfg.dir;
  if (std::string why = ensure_private_dir(dir); !why.empty()) throw RefusedError(why);
  const std::string path = heap_file(dir, cfg.name);
  int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw Error(ErrorCode::kGeneric, "cannot open the segment file " + path + ": " + std::strerror(errno));
  std::unique_ptr<Segment> s(new Segment());
  s->fd_ = fd;  // closed by ~Segment on every early return
  s->path_ = path;
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error(ErrorCode::kGeneric, "cannot stat " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    refusal = "it is not a regular file of this server's user";
    return nullptr;
  }
  // The header is read from the file, not mapped: a damaged header must not choose what we map.
  // On the heap: the metadata (ownership records included) is too large for a thread's stack.
  struct alignas(Metadata) RawMetadata { unsigned char bytes[sizeof(Metadata)]; };
  auto holder = std::make_unique<RawMetadata>();
  unsigned char* raw = holder->bytes;
  ssize_t got = ::pread(fd, raw, sizeof(Metadata), 0);
  if (got < 0) throw Error(ErrorCode::kGeneric, "cannot read " + path + ": " + std::strerror(errno));
  if (static_cast<std::size_t>(got) < sizeof(Metadata)) {
    refusal = "the file is too short (" + std::to_string(got) + " bytes) to hold the heap's metadata";
    return nullptr;
  }
  const Metadata& h = *reinterpret_cast<const Metadata*>(raw);
  refusal = check_segment_header(h, static_cast<std::size_t>(st.st_size));
  if (!refusal.empty()) return nullptr;
  s->meta_ = static_cast<Metadata*>(map_fixed_noreplace(fd, h.base, h.total_size));
  s->size_ = h.total_size;
  s->track();
  set_current_meta(s->meta_);
  return s;
}

std::string Segment::set_aside(const SegmentConfig& cfg, std::string& error) {
  const std::string from = heap_file(cfg.dir, cfg.name);
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  std::string to = from + ".rejected-" + stamp;
  // Never overwrite an earlier rejected heap (two refusals within one second).
  for (int i = 1; ::access(to.c_str(), F_OK) == 0; ++i) to = from + ".rejected-" + stamp + "-" + std::to_string(i);
  if (::rename(from.c_str(), to.c_str()) != 0) {
    error = "cannot rename " + from + " to " + to + ": " + std::strerror(errno);
    return {};
  }
  return to;
}

bool Segment::file_id(std::uint64_t& dev, std::uint64_t& ino) const {
  struct stat st {};
  if (fd_ < 0 || ::fstat(fd_, &st) != 0) return false;
  dev = st.st_dev;
  ino = st.st_ino;
  return true;
}

void Segment::remove(const SegmentConfig& cfg) { ::unlink(heap_file(cfg.dir, cfg.name).c_str()); }

}  // namespace colors::detail
