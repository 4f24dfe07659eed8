// Creating, mapping and formatting the shared segment.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "layout.hpp"

namespace colors::detail {

struct SegmentConfig {
  std::string name = "colors";                 // logical name; shm object is shm_name(name)
  std::uintptr_t address = kDefaultAddress;
  std::size_t heap_size = kDefaultHeapSize;    // objects space
  std::size_t classes_size = kDefaultClassesSize;
  mode_t mode = 0600;
};

std::string shm_name(const std::string& name);
std::size_t metadata_size();

// One mapping of the segment in this process. At most one exists at a time per process: the
// segment lives at a fixed address, and the process-wide `current_meta()` points into it.
class Segment {
 public:
  // Server side: creates and formats a fresh segment, replacing a stale one of the same name.
  static std::unique_ptr<Segment> create(const SegmentConfig& cfg);
  // Client side: maps an existing segment at `address` without clobbering any mapping.
  static std::unique_ptr<Segment> open(const std::string& name, std::uintptr_t address, std::size_t size);
  // Removes the shm object (mappings stay valid until unmapped).
  static void remove(const std::string& name);

  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  Metadata* meta() const { return meta_; }
  const std::string& name() const { return name_; }
  std::size_t size() const { return size_; }

 private:
  Segment() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Metadata* meta_ = nullptr;
  std::string name_;
  std::size_t size_ = 0;
};

// The segment mapped in this process, or nullptr.
Metadata* current_meta_or_null();
// The segment mapped in this process. Throws NotAttachedError otherwise.
Metadata* current_meta();
void set_current_meta(Metadata* m);

// Maps `size` bytes of the shm fd at exactly `address`, refusing (AddressInUseError) when any
// part of the range is already mapped in this process.
void* map_fixed_noreplace(int fd, std::uintptr_t address, std::size_t size);

}  // namespace colors::detail
