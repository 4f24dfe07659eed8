#include "delta_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <vector>

#include "crc32c.hpp"
#include "file_io.hpp"

namespace colors::server {

namespace {

constexpr char kMagic[8] = {'C', 'L', 'R', 'S', 'W', 'A', 'L', '1'};
constexpr char kEndMagic[8] = {'C', 'L', 'R', 'S', 'W', 'E', 'N', 'D'};

struct Header {
  char magic[8];
  std::uint64_t base_seq;
  std::uint64_t seq;
  std::uint64_t page_count;
  std::uint64_t tx_clock;
  std::uint64_t created_ns;
  std::uint32_t page_size;
  std::uint32_t header_crc;  // over the header with this field zero
  std::uint64_t reserved;
};
static_assert(sizeof(Header) == 64);

struct Trailer {
  std::uint32_t body_crc;
  std::uint32_t zero;
  char magic[8];
};
static_assert(sizeof(Trailer) == 16);

}  // namespace

std::uint64_t delta_size(const DeltaRecord& r) {
  return sizeof(Header) + r.pages.size() * (8 + kDeltaPage) + sizeof(Trailer);
}

std::string grow_log(int fd, std::uint64_t need, std::uint64_t& allocated, const WriteFault& fault) {
  if (need <= allocated) return {};
  const std::uint64_t target = allocated + std::max(kLogGrowth, (need - allocated + kLogGrowth - 1) / kLogGrowth * kLogGrowth);
  static const std::vector<unsigned char> zeros(std::size_t{1} << 20, 0);
  // A growth that fails gives back what it took: on a nearly full disk, the zeros it wrote would
  // otherwise hold the last free bytes, and the checkpoint that must follow could not be written.
  auto failed = [&](const char* what) {
    const int err = errno;
    std::string why = errno_text(what);
    while (::ftruncate(fd, static_cast<off_t>(allocated)) != 0 && errno == EINTR) {
    }
    errno = err;  // the caller reports the growth's error, not the truncation's
    return why;
  };
  for (std::uint64_t at = allocated; at < target;) {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(zeros.size(), target - at));
    if (fault.disk_full()) {  // the test hook: room for full_after bytes of growth
      const std::uint64_t grown = at - allocated;
      if (grown >= fault.full_after) {
        errno = ENOSPC;
        return failed("growing the log");
      }
      n = static_cast<std::size_t>(std::min<std::uint64_t>(n, fault.full_after - grown));
    }
    ssize_t put = ::pwrite(fd, zeros.data(), n, static_cast<off_t>(at));
    if (put < 0 && errno == EINTR) continue;
    if (put == 0) errno = ENOSPC;
    if (put <= 0) return failed("growing the log");
    at += static_cast<std::uint64_t>(put);
  }
  if (::fdatasync(fd) != 0) return failed("fdatasync");
  allocated = target;
  return {};
}

std::string append_delta(int fd, const DeltaRecord& r, const unsigned char* image, const WriteFault& fault,
                         std::uint64_t& offset) {
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.base_seq = r.base_seq;
  h.seq = r.seq;
  h.page_count = r.pages.size();
  h.tx_clock = r.tx_clock;
  h.created_ns = r.created_ns;
  h.page_size = kDeltaPage;
  h.header_crc = crc32c(0, &h, sizeof h);

  // The body as iovecs: the offsets, then each run of adjacent pages as one piece of the image.
  std::vector<iovec> iov;
  iov.push_back({&h, sizeof h});
  iov.push_back({const_cast<std::uint64_t*>(r.pages.data()), r.pages.size() * 8});
  std::uint32_t crc = crc32c(0, r.pages.data(), r.pages.size() * 8);
  for (std::size_t i = 0; i < r.pages.size();) {
    std::size_t j = i + 1;
    while (j < r.pages.size() && r.pages[j] == r.pages[j - 1] + kDeltaPage) ++j;
    const unsigned char* p = image + r.pages[i];
    const std::size_t n = (j - i) * kDeltaPage;
    crc = crc32c(crc, p, n);
    iov.push_back({const_cast<unsigned char*>(p), n});
    i = j;
  }
  Trailer t{};
  t.body_crc = crc;
  std::memcpy(t.magic, kEndMagic, sizeof kEndMagic);
  iov.push_back({&t, sizeof t});

  std::uint64_t total = 0;
  for (const iovec& v : iov) total += v.iov_len;
  if (fault.disk_full()) {
    errno = ENOSPC;
    return errno_text("pwritev");
  }
  // pwritev in batches of IOV_MAX, resuming after short writes.
  std::size_t at = 0;
  std::uint64_t pos = offset;
  while (at < iov.size()) {
    const int batch = static_cast<int>(std::min<std::size_t>(iov.size() - at, IOV_MAX));
    ssize_t put = ::pwritev(fd, iov.data() + at, batch, static_cast<off_t>(pos));
    if (put < 0) {
      if (errno == EINTR) continue;
      return errno_text("pwritev");
    }
    pos += static_cast<std::uint64_t>(put);
    auto left = static_cast<std::size_t>(put);
    while (left > 0 && at < iov.size()) {
      if (left >= iov[at].iov_len) {
        left -= iov[at].iov_len;
        ++at;
      } else {
        iov[at].iov_base = static_cast<unsigned char*>(iov[at].iov_base) + left;
        iov[at].iov_len -= left;
        left = 0;
      }
    }
  }
  if (::fdatasync(fd) != 0) return errno_text("fdatasync");
  offset += total;
  return {};
}

std::string replay_log(const std::string& path, std::uint64_t base_seq, int segment_fd, std::uint64_t segment_size,
                       ReplayResult& res) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno != ENOENT) res.stopped = errno_text("cannot open the log");
    return {};
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    res.stopped = errno_text("cannot stat the log");
    return {};
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  std::uint64_t off = 0;
  for (std::uint64_t want = 1; off < size; ++want) {
    const std::string at = "record " + std::to_string(want) + " at byte " + std::to_string(off);
    Header h{};
    if (size - off < sizeof h || !read_exact(fd, &h, sizeof h, off)) {
      res.stopped = at + " is cut short (torn tail, " + std::to_string(size - off) + " bytes ignored)";
      return {};
    }
    static const Header kZero{};
    if (std::memcmp(&h, &kZero, sizeof h) == 0) return {};  // the zeros grow_log wrote: the end
    const std::uint32_t hc = h.header_crc;
    h.header_crc = 0;
    if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || crc32c(0, &h, sizeof h) != hc) {
      res.stopped = at + " has a damaged header (" + std::to_string(size - off) + " bytes ignored)";
      return {};
    }
    if (h.base_seq != base_seq || h.seq != want || h.page_size != kDeltaPage) {
      res.stopped = at + " belongs to checkpoint " + std::to_string(h.base_seq) + " as record " + std::to_string(h.seq) +
                    " (out of sequence; " + std::to_string(size - off) + " bytes ignored)";
      return {};
    }
    const std::uint64_t body = h.page_count * 8 + h.page_count * kDeltaPage;
    if (h.page_count > segment_size / kDeltaPage || size - off - sizeof h < body + sizeof(Trailer)) {
      res.stopped = at + " is cut short (torn tail, " + std::to_string(size - off) + " bytes ignored)";
      return {};
    }
    std::unique_ptr<unsigned char[]> buf(new unsigned char[body + sizeof(Trailer)]);
    if (!read_exact(fd, buf.get(), body + sizeof(Trailer), off + sizeof h)) {
      res.stopped = at + " cannot be read";
      return {};
    }
    Trailer t{};
    std::memcpy(&t, buf.get() + body, sizeof t);
    if (std::memcmp(t.magic, kEndMagic, sizeof kEndMagic) != 0 || crc32c(0, buf.get(), body) != t.body_crc) {
      res.stopped = at + " does not match its checksum (" + std::to_string(size - off) + " bytes ignored)";
      return {};
    }
    const auto* offsets = reinterpret_cast<const std::uint64_t*>(buf.get());
    const unsigned char* pages = buf.get() + h.page_count * 8;
    for (std::uint64_t i = 0; i < h.page_count; ++i) {
      std::uint64_t o = 0;
      std::memcpy(&o, offsets + i, 8);
      if (o % kDeltaPage != 0 || o + kDeltaPage > segment_size) {
        res.stopped = at + " names a page outside the segment";
        return {};
      }
    }
    for (std::uint64_t i = 0; i < h.page_count; ++i) {
      std::uint64_t o = 0;
      std::memcpy(&o, offsets + i, 8);
      if (::pwrite(segment_fd, pages + i * kDeltaPage, kDeltaPage, static_cast<off_t>(o)) != static_cast<ssize_t>(kDeltaPage))
        return errno_text("cannot write the restored segment");
    }
    res.records += 1;
    res.pages += h.page_count;
    res.last_clock = h.tx_clock;
    off += sizeof h + body + sizeof(Trailer);
    res.bytes = off;
  }
  return {};
}

}  // namespace colors::server
