#include "checkpoint_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

#include "crc32c.hpp"
#include "file_io.hpp"

namespace colors::server {

namespace {

constexpr char kMagic[8] = {'C', 'L', 'R', 'S', 'C', 'K', 'P', 'T'};
constexpr char kEndMagic[8] = {'C', 'L', 'R', 'S', 'C', 'E', 'N', 'D'};
constexpr std::uint32_t kFormatVersion = 1;
constexpr std::uint64_t kPage = 4096;

struct Header {
  char magic[8];
  std::uint32_t format_version;
  std::uint32_t layout_version;
  std::uint64_t heap_id;
  std::uint64_t base;
  std::uint64_t segment_size;
  std::uint64_t seq;
  std::uint64_t created_ns;
  std::uint64_t data_bytes;
  std::uint32_t extent_count;
  std::uint32_t chunk_bytes;
  std::uint32_t table_crc;
  std::uint32_t header_crc;  // over the header with this field zero
};
static_assert(sizeof(Header) <= kPage);

struct Footer {
  char magic[8];
  std::uint64_t file_size;
};

// Bytes per write of a checkpoint's data: dd's block size in bench/durability.py.
constexpr std::size_t kDirectPiece = std::size_t{4} << 20;
// A restore's reads: chunks per read, and batches in flight between the reader and the checker.
constexpr std::uint32_t kReadBatch = 8;
constexpr std::size_t kReadRing = 3;

std::uint64_t round_up(std::uint64_t n, std::uint64_t to) { return (n + to - 1) / to * to; }

// Where each part of a file starts, from its header's counts.
struct Geometry {
  std::uint64_t table_off = kPage;
  std::uint64_t data_off = 0;
  std::uint64_t crcs_off = 0;
  std::uint64_t chunks = 0;
  std::uint64_t footer_off = 0;
  std::uint64_t file_size = 0;
};
Geometry geometry(std::uint64_t extent_count, std::uint64_t data_bytes, std::uint64_t chunk) {
  Geometry g;
  g.data_off = g.table_off + round_up(extent_count * sizeof(Extent), kPage);
  g.crcs_off = g.data_off + data_bytes;
  g.chunks = (data_bytes + chunk - 1) / chunk;
  g.footer_off = g.crcs_off + g.chunks * 4 + 4;
  g.file_size = g.footer_off + sizeof(Footer);
  return g;
}

// Writes all of [p, p+n) at the file's current position; "" or the error.
std::string write_all(int fd, const void* p, std::size_t n, std::uint64_t& written, const WriteFault& fault) {
  const auto* b = static_cast<const unsigned char*>(p);
  while (n > 0) {
    std::size_t piece = std::min<std::size_t>(n, std::size_t{8} << 20);
    if (written + piece > fault.full_after && fault.disk_full()) {
      errno = ENOSPC;
      return errno_text("write");
    }
    ssize_t put = ::write(fd, b, piece);
    if (put < 0) {
      if (errno == EINTR) continue;
      return errno_text("write");
    }
    b += put;
    n -= static_cast<std::size_t>(put);
    written += static_cast<std::uint64_t>(put);
  }
  return {};
}

// Whether the test hook refuses direct I/O at byte `at` of the data (g_refuse_direct_io_from).
bool refuses_direct_io(std::uint64_t at) {
  const std::int64_t from = g_refuse_direct_io_from.load(std::memory_order_relaxed);
  return from >= 0 && at >= static_cast<std::uint64_t>(from);
}

// The extents' bytes at the file's current position (g.data_off: page-aligned, as are the extents,
// their lengths and the image). With O_DIRECT where the file system takes it, and buffered from
// the first write it refuses (EINVAL: not supported there, or a short write left the position
// unaligned). Leaves the descriptor without O_DIRECT.
std::string write_data(int fd, const CheckpointInfo& info, const unsigned char* image, std::uint64_t& written,
                       const WriteFault& fault) {
  const int flags = ::fcntl(fd, F_GETFL);
  bool direct = flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_DIRECT) == 0;
  std::string why;
  std::uint64_t data = 0;  // bytes of the data written so far
  for (const Extent& e : info.extents) {
    const unsigned char* p = image + e.offset;
    std::size_t left = static_cast<std::size_t>(e.length);
    while (left > 0 && why.empty()) {
      const std::size_t piece = std::min<std::size_t>(left, kDirectPiece);
      const std::uint64_t before = written;
      if (direct && refuses_direct_io(data)) {
        errno = EINVAL;
        why = errno_text("write");
      } else {
        why = write_all(fd, p, piece, written, fault);
      }
      if (!why.empty() && direct && errno == EINVAL) {
        direct = false;
        why.clear();
        if (::fcntl(fd, F_SETFL, flags) != 0) return errno_text("fcntl");
      }
      const std::size_t put = static_cast<std::size_t>(written - before);
      p += put;
      left -= put;
      data += put;
    }
    if (!why.empty()) break;
  }
  if (direct) (void)::fcntl(fd, F_SETFL, flags);
  return why;
}

// Reads [data_off, data_off + bytes) of the checkpoint `fd` (opened from `path`) in batches of
// kReadBatch chunks and hands each, in order, to `use` (file offset relative to data_off, bytes,
// length; every batch but the last is whole chunks). A reader thread reads the next batches while
// `use` checks and stores this one, with O_DIRECT where the file system takes it (a second
// descriptor; buffered otherwise): the disk, the checksums and the copy into the segment then
// overlap instead of taking turns. "" or the first error (the reader's or `use`'s).
using BatchUse = std::function<std::string(std::uint64_t, const unsigned char*, std::size_t)>;
std::string read_batches(const std::string& path, int fd, std::uint64_t data_off, std::uint64_t bytes, std::uint32_t chunk,
                         const BatchUse& use) {
  if (bytes == 0) return {};
  const std::uint64_t batch_bytes = std::uint64_t{kReadBatch} * chunk;
  const std::uint64_t batches = (bytes + batch_bytes - 1) / batch_bytes;
  // Direct reads need the file offset, the length and the buffer aligned to the block size: the
  // data starts on a page and is whole pages (extents are), and the buffers are page-aligned.
  const bool aligned = data_off % kPage == 0 && bytes % kPage == 0 && batch_bytes % kPage == 0;
  int direct_fd = aligned ? ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_DIRECT) : -1;
  if (direct_fd < 0) ::posix_fadvise(fd, static_cast<off_t>(data_off), static_cast<off_t>(bytes), POSIX_FADV_SEQUENTIAL);
  struct Buffer {
    unsigned char* p = nullptr;
    std::size_t span = 0;
    bool full = false;
    std::string error;
    ~Buffer() { std::free(p); }
  };
  Buffer ring[kReadRing];
  // A small checkpoint (every test's) needs one buffer of its own size, not the ring's 24 MiB.
  const auto buffer_bytes = static_cast<std::size_t>(std::min(batch_bytes, round_up(bytes, kPage)));
  for (std::uint64_t i = 0; i < std::min<std::uint64_t>(kReadRing, batches); ++i) {
    Buffer& b = ring[i];
    void* p = nullptr;
    if (::posix_memalign(&p, kPage, buffer_bytes) != 0) {
      if (direct_fd >= 0) ::close(direct_fd);
      return "cannot allocate its read buffers";
    }
    b.p = static_cast<unsigned char*>(p);
  }
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;  // GUARDED_BY(mu): the consumer gave up
  // Invariant: batch i lives in ring[i % kReadRing]; the reader fills it only while !full, the
  // consumer uses it only while full, and each flips `full` under `mu`.
  std::thread reader([&] {
    bool direct = direct_fd >= 0;
    for (std::uint64_t i = 0; i < batches; ++i) {
      Buffer& b = ring[i % kReadRing];
      {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait(lk, [&] { return stop || !b.full; });
        if (stop) return;
      }
      const std::uint64_t off = i * batch_bytes;
      const auto span = static_cast<std::size_t>(std::min(batch_bytes, bytes - off));
      std::string error;
      bool ok = false;
      if (direct && refuses_direct_io(off)) {
        errno = EINVAL;
      } else {
        ok = direct && read_exact(direct_fd, b.p, span, data_off + off);
      }
      if (!ok && direct && errno == EINVAL) direct = false;  // the file system refuses O_DIRECT
      if (!ok && !direct) ok = read_exact(fd, b.p, span, data_off + off);
      if (!ok) error = "cannot read its data at byte " + std::to_string(off);
      {
        std::lock_guard<std::mutex> g(mu);
        b.span = span;
        b.error = std::move(error);
        b.full = true;
      }
      cv.notify_all();
      if (!ok) return;
    }
  });
  std::string why;
  for (std::uint64_t i = 0; i < batches && why.empty(); ++i) {
    Buffer& b = ring[i % kReadRing];
    {
      std::unique_lock<std::mutex> lk(mu);
      cv.wait(lk, [&] { return b.full; });
    }
    why = b.error.empty() ? use(i * batch_bytes, b.p, b.span) : b.error;
    {
      std::lock_guard<std::mutex> g(mu);
      b.full = false;
      if (!why.empty()) stop = true;
    }
    cv.notify_all();
  }
  reader.join();
  if (direct_fd >= 0) ::close(direct_fd);
  return why;
}

// Reads and checks the file at `path` from end to end; `sink` (if set) gets each extent's bytes
// as they are verified: (segment offset, bytes, length). One reader for validation and restore.
using Sink = std::function<std::string(std::uint64_t, const unsigned char*, std::size_t)>;
std::string read_checkpoint(const std::string& path, CheckpointInfo& info, const Sink& sink) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return errno_text("cannot open it");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return errno_text("cannot stat it");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  Header h{};
  unsigned char page[kPage];
  if (size < kPage || !read_exact(fd, page, kPage, 0)) return "it is shorter than its header (" + std::to_string(size) + " bytes)";
  std::memcpy(&h, page, sizeof h);
  for (std::size_t i = sizeof h; i < kPage; ++i)
    if (page[i] != 0) return "its header page holds stray bytes at " + std::to_string(i) + " (damaged)";
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) return "it is not a colors checkpoint (bad magic)";
  const std::uint32_t want = h.header_crc;
  h.header_crc = 0;
  if (crc32c(0, &h, sizeof h) != want) return "its header's checksum does not match";
  if (h.format_version != kFormatVersion)
    return "it has checkpoint format version " + std::to_string(h.format_version) + ", this server reads version " +
           std::to_string(kFormatVersion);
  if (h.chunk_bytes == 0 || h.data_bytes > h.segment_size) return "its header's sizes are inconsistent";
  const Geometry g = geometry(h.extent_count, h.data_bytes, h.chunk_bytes);
  if (size != g.file_size)
    return "it is " + std::to_string(size) + " bytes, its header says " + std::to_string(g.file_size) + " (truncated or torn)";
  info.layout_version = h.layout_version;
  info.heap_id = h.heap_id;
  info.base = h.base;
  info.segment_size = h.segment_size;
  info.seq = h.seq;
  info.created_ns = h.created_ns;
  info.data_bytes = h.data_bytes;
  info.extents.assign(h.extent_count, Extent{});
  if (!read_exact(fd, info.extents.data(), h.extent_count * sizeof(Extent), g.table_off)) return "cannot read its extent table";
  if (crc32c(0, info.extents.data(), h.extent_count * sizeof(Extent)) != h.table_crc)
    return "its extent table's checksum does not match";
  std::uint64_t sum = 0, end = 0;
  for (const Extent& e : info.extents) {
    if (e.offset < end || e.length == 0 || e.offset + e.length > h.segment_size || e.offset + e.length < e.offset)
      return "its extent table is inconsistent";
    end = e.offset + e.length;
    sum += e.length;
  }
  if (sum != h.data_bytes) return "its extent table does not add up to its data size";
  std::vector<std::uint32_t> crcs(g.chunks + 1);
  if (!read_exact(fd, crcs.data(), crcs.size() * 4, g.crcs_off)) return "cannot read its checksums";
  if (crc32c(0, crcs.data(), g.chunks * 4) != crcs[g.chunks]) return "its checksum array's checksum does not match";
  Footer f{};
  if (!read_exact(fd, &f, sizeof f, g.footer_off) || std::memcmp(f.magic, kEndMagic, sizeof kEndMagic) != 0 ||
      f.file_size != size)
    return "its footer is missing or wrong (torn)";

  // The data, a batch of chunks at a time, each chunk checked before any of it reaches the sink.
  std::size_t ext = 0;
  std::uint64_t in_ext = 0;  // bytes of extent `ext` already passed on
  return read_batches(path, fd, g.data_off, h.data_bytes, h.chunk_bytes,
                      [&](std::uint64_t off, const unsigned char* batch, std::size_t span) -> std::string {
                        for (std::uint64_t coff = off; coff < off + span; coff += h.chunk_bytes) {
                          const std::uint64_t c = coff / h.chunk_bytes;
                          const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(h.chunk_bytes, off + span - coff));
                          const unsigned char* chunk = batch + (coff - off);
                          if (crc32c(0, chunk, n) != crcs[c])
                            return "the checksum of its data chunk " + std::to_string(c) + " (bytes " + std::to_string(coff) +
                                   ".." + std::to_string(coff + n) + ") does not match";
                          if (!sink) continue;
                          for (std::size_t done = 0; done < n;) {
                            const Extent& e = info.extents[ext];
                            const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(n - done, e.length - in_ext));
                            if (std::string why = sink(e.offset + in_ext, chunk + done, k); !why.empty()) return why;
                            done += k;
                            in_ext += k;
                            if (in_ext == e.length) {
                              ++ext;
                              in_ext = 0;
                            }
                          }
                        }
                        return {};
                      });
}

}  // namespace

bool WriteFault::disk_full() const {
  return !full_while_exists.empty() && ::access(full_while_exists.c_str(), F_OK) == 0;
}

std::vector<Extent> data_extents(int fd, std::uint64_t size) {
  std::vector<Extent> out;
  off_t pos = 0;
  const auto end = static_cast<off_t>(size);
  while (pos < end) {
    off_t data = ::lseek(fd, pos, SEEK_DATA);
    if (data < 0 || data >= end) break;  // ENXIO: no data after pos
    off_t hole = ::lseek(fd, data, SEEK_HOLE);
    if (hole < 0 || hole > end) hole = end;
    out.push_back({static_cast<std::uint64_t>(data), static_cast<std::uint64_t>(hole - data)});
    pos = hole;
  }
  return out;
}

std::string write_checkpoint(int fd, const CheckpointInfo& info, const unsigned char* image, const WriteFault& fault) {
  std::uint64_t written = 0;
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.format_version = kFormatVersion;
  h.layout_version = info.layout_version;
  h.heap_id = info.heap_id;
  h.base = info.base;
  h.segment_size = info.segment_size;
  h.seq = info.seq;
  h.created_ns = info.created_ns;
  h.data_bytes = info.data_bytes;
  h.extent_count = static_cast<std::uint32_t>(info.extents.size());
  h.chunk_bytes = kCheckpointChunk;
  h.table_crc = crc32c(0, info.extents.data(), info.extents.size() * sizeof(Extent));
  h.header_crc = crc32c(0, &h, sizeof h);
  const Geometry g = geometry(info.extents.size(), info.data_bytes, kCheckpointChunk);

  std::vector<unsigned char> head(g.data_off, 0);
  std::memcpy(head.data(), &h, sizeof h);
  std::memcpy(head.data() + g.table_off, info.extents.data(), info.extents.size() * sizeof(Extent));
  if (std::string why = write_all(fd, head.data(), head.size(), written, fault); !why.empty()) return why;

  // The data, extent by extent, written straight from the image (O_DIRECT: no copy into the page
  // cache, which halved the bandwidth against the disk's), while a second thread computes the
  // chunk checksums over the same concatenated stream.
  std::vector<std::uint32_t> crcs(g.chunks + 1, 0);
  std::thread checksums([&] {
    std::uint64_t stream = 0;
    for (const Extent& e : info.extents) {
      for (std::uint64_t done = 0; done < e.length;) {
        const std::uint64_t k = std::min<std::uint64_t>(e.length - done, kCheckpointChunk - stream % kCheckpointChunk);
        std::uint32_t& c = crcs[stream / kCheckpointChunk];
        c = crc32c(c, image + e.offset + done, static_cast<std::size_t>(k));
        done += k;
        stream += k;
      }
    }
  });
  std::string why = write_data(fd, info, image, written, fault);
  checksums.join();
  if (!why.empty()) return why;
  crcs[g.chunks] = crc32c(0, crcs.data(), g.chunks * 4);
  if (std::string why = write_all(fd, crcs.data(), crcs.size() * 4, written, fault); !why.empty()) return why;
  Footer f{};
  std::memcpy(f.magic, kEndMagic, sizeof kEndMagic);
  f.file_size = g.file_size;
  if (std::string why = write_all(fd, &f, sizeof f, written, fault); !why.empty()) return why;
  if (::fdatasync(fd) != 0) return errno_text("fdatasync");
  return {};
}

std::string validate_checkpoint(const std::string& path, CheckpointInfo& info) { return read_checkpoint(path, info, {}); }

std::string restore_checkpoint(const std::string& path, int segment_fd, CheckpointInfo& info) {
  std::string why = read_checkpoint(path, info, [segment_fd](std::uint64_t off, const unsigned char* p, std::size_t n) -> std::string {
    while (n > 0) {
      ssize_t put = ::pwrite(segment_fd, p, n, static_cast<off_t>(off));
      if (put < 0 && errno == EINTR) continue;
      if (put <= 0) return errno_text("cannot write the restored segment");
      p += put;
      n -= static_cast<std::size_t>(put);
      off += static_cast<std::uint64_t>(put);
    }
    return {};
  });
  if (why.empty() && ::ftruncate(segment_fd, static_cast<off_t>(info.segment_size)) != 0)
    why = errno_text("cannot size the restored segment");
  return why;
}

}  // namespace colors::server
