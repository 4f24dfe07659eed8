#include "segment.hpp"

#include <sys/mman.h>

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include "classes.hpp"
#include "colors/errors.hpp"
#include "format.hpp"
#include "heap.hpp"
#include "pending_bits.hpp"

namespace bip = boost::interprocess;

namespace colors::detail {

namespace {
Metadata* g_meta = nullptr;

}  // namespace

PendingBits g_pending_bits;

PendingBits pending_bits_of(const Metadata* m) {
  PendingBits pb;
  if (m != nullptr) {
    pb.objects_begin = m->objects_begin;
    pb.words = reinterpret_cast<std::atomic<std::uint64_t>*>(m->pending_bits_begin);
  }
  return pb;
}

Metadata* current_meta_or_null() { return g_meta; }
Metadata* current_meta() {
  if (g_meta == nullptr) throw NotAttachedError("not attached to a colors server: call colors::attach() first");
  return g_meta;
}
void set_current_meta(Metadata* m) {
  g_meta = m;
  g_pending_bits = pending_bits_of(m);
}

std::string shm_name(const std::string& name) { return "colors." + name; }
std::size_t metadata_size() { return round_up(sizeof(Metadata), 1 << 16); }

struct Segment::Impl {
  bip::shared_memory_object shm;
  bip::mapped_region region;
};

Segment::~Segment() {
  if (g_meta == meta_) set_current_meta(nullptr);
}

// Boost's mapped_region passes a requested address to mmap() only as a hint (no MAP_FIXED) and
// throws busy_error when the kernel chose another place, which would be safe but cannot say why.
// We add MAP_FIXED_NOREPLACE so the kernel itself refuses (EEXIST) an occupied range.
static bip::mapped_region map_region(bip::shared_memory_object& shm, std::uintptr_t address, std::size_t size) {
  try {
    return bip::mapped_region(shm, bip::read_write, 0, size, reinterpret_cast<void*>(address), MAP_FIXED_NOREPLACE);
  } catch (const bip::interprocess_exception& e) {
    if (e.get_native_error() == EEXIST || e.get_error_code() == bip::busy_error) {
      throw AddressInUseError("cannot map the colors segment at " + hex(address) + " (" + std::to_string(size >> 20) +
                              " MiB): that range is already mapped in this process. Start the server with "
                              "another --address, or free the range before attaching.");
    }
    throw Error(ErrorCode::kGeneric, std::string("mapping the colors segment failed: ") + e.what());
  }
}

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
  m->server_state.store(static_cast<std::uint32_t>(ServerState::kStarting), std::memory_order_release);
}

std::unique_ptr<Segment> Segment::create(const SegmentConfig& cfg) {
  if (cfg.heap_size < 4 * kTlabSize || cfg.heap_size % kGranule != 0)
    throw InvalidArgumentError("heap size must be a multiple of 16 bytes and at least " +
                               std::to_string(4 * kTlabSize) + " bytes");
  if (cfg.classes_size < (1 << 20) || cfg.classes_size % kGranule != 0)
    throw InvalidArgumentError("classes size must be a multiple of 16 bytes and at least 1 MiB");
  if (cfg.address % (1 << 16) != 0) throw InvalidArgumentError("segment address must be 64 KiB aligned");
  std::size_t total = metadata_size() + cfg.classes_size + cfg.heap_size + pending_bits_bytes(cfg.heap_size);
  std::string shm = shm_name(cfg.name);
  bip::shared_memory_object::remove(shm.c_str());  // a stale segment of a crashed server
  std::unique_ptr<Segment> s(new Segment());
  s->impl_ = std::make_unique<Impl>();
  try {
    bip::permissions perm(cfg.mode);
    s->impl_->shm = bip::shared_memory_object(bip::create_only, shm.c_str(), bip::read_write, perm);
    s->impl_->shm.truncate(static_cast<bip::offset_t>(total));
  } catch (const bip::interprocess_exception& e) {
    throw Error(ErrorCode::kGeneric, "cannot create shared memory object " + shm + ": " + e.what());
  }
  s->impl_->region = map_region(s->impl_->shm, cfg.address, total);
  s->meta_ = static_cast<Metadata*>(s->impl_->region.get_address());
  s->name_ = cfg.name;
  s->size_ = total;
  format(s->meta_, cfg, total);
  set_current_meta(s->meta_);
  return s;
}

std::unique_ptr<Segment> Segment::open(const std::string& name, std::uintptr_t address, std::size_t size) {
  std::unique_ptr<Segment> s(new Segment());
  s->impl_ = std::make_unique<Impl>();
  std::string shm = shm_name(name);
  try {
    s->impl_->shm = bip::shared_memory_object(bip::open_only, shm.c_str(), bip::read_write);
  } catch (const bip::interprocess_exception& e) {
    throw ServerGoneError("cannot open shared memory object " + shm + ": " + e.what() + " (is colors-server running?)");
  }
  s->impl_->region = map_region(s->impl_->shm, address, size);
  s->meta_ = static_cast<Metadata*>(s->impl_->region.get_address());
  if (s->meta_->magic != kSegmentMagic || s->meta_->layout_version != kLayoutVersion) {
    throw VersionMismatchError("segment " + shm + " has layout version " + std::to_string(s->meta_->layout_version) +
                               " but this client expects layout version " + std::to_string(kLayoutVersion));
  }
  s->name_ = name;
  s->size_ = size;
  set_current_meta(s->meta_);
  return s;
}

void Segment::remove(const std::string& name) { bip::shared_memory_object::remove(shm_name(name).c_str()); }

}  // namespace colors::detail
