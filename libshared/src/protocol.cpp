#include "protocol.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace colors::detail {

namespace {

// Explicit little-endian encoding, independent of the host's byte order.
void put_u32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
void put_u64(std::uint8_t* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint32_t get_u32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(p[i]) << (8 * i);
  return v;
}
std::uint64_t get_u64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

using Clock = std::chrono::steady_clock;

// Milliseconds left until `deadline` for poll(): -1 means wait forever, 0 means expired.
int remaining_ms(bool bounded, Clock::time_point deadline) {
  if (!bounded) return -1;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return static_cast<int>(std::min<long long>(left, 1 << 30));
}

// Waits until `fd` is ready for `events`. Returns kOk, kTimeout or kError.
IoResult wait_ready(int fd, short events, bool bounded, Clock::time_point deadline) {
  for (;;) {
    int ms = remaining_ms(bounded, deadline);
    if (bounded && ms == 0) return IoResult::kTimeout;
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, ms);
    if (rc > 0) return IoResult::kOk;  // POLLHUP/POLLERR too: the next recv/send reports it
    if (rc == 0) return IoResult::kTimeout;
    if (errno != EINTR) return IoResult::kError;
  }
}

// Takes the descriptors of an SCM_RIGHTS message: the first goes to `passed_fd` (when it is
// non-null and still -1), every other one is closed so that a peer cannot leak descriptors into us.
void take_passed_fds(msghdr& msg, int* passed_fd) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int f;
      std::memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
      if (passed_fd != nullptr && *passed_fd < 0)
        *passed_fd = f;
      else
        ::close(f);
    }
  }
}

IoResult read_until(int fd, void* buf, std::size_t n, bool bounded, Clock::time_point deadline,
                    int* passed_fd = nullptr) {
  auto* p = static_cast<std::uint8_t*>(buf);
  std::size_t done = 0;
  while (done < n) {
    iovec iov{p + done, n - done};
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t got = ::recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (got > 0) {
      take_passed_fds(msg, passed_fd);
      done += static_cast<std::size_t>(got);
      continue;
    }
    if (got == 0) return IoResult::kEof;
    if (errno == EINTR) continue;
    if (errno == ECONNRESET) return IoResult::kEof;  // peer closed with unread data: same as EOF
    if (errno != EAGAIN && errno != EWOULDBLOCK) return IoResult::kError;
    IoResult w = wait_ready(fd, POLLIN, bounded, deadline);
    if (w != IoResult::kOk) return w;
  }
  return IoResult::kOk;
}

IoResult write_until(int fd, const void* buf, std::size_t n, bool bounded, Clock::time_point deadline) {
  const auto* p = static_cast<const std::uint8_t*>(buf);
  std::size_t done = 0;
  while (done < n) {
    ssize_t put = ::send(fd, p + done, n - done, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (put >= 0) {
      done += static_cast<std::size_t>(put);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return IoResult::kError;
    IoResult w = wait_ready(fd, POLLOUT, bounded, deadline);
    if (w != IoResult::kOk) return w;
  }
  return IoResult::kOk;
}

}  // namespace

std::array<std::uint8_t, kHelloFullSize> encode_hello(const Hello& h) {
  std::array<std::uint8_t, kHelloFullSize> b{};
  put_u32(&b[0], h.magic);
  put_u32(&b[4], h.protocol_version);
  put_u32(&b[8], h.layout_version);
  put_u32(&b[12], static_cast<std::uint32_t>(h.pid));
  put_u32(&b[16], static_cast<std::uint32_t>(h.mode));
  put_u32(&b[20], h.slot);
  put_u32(&b[24], h.client_id);
  put_u64(&b[32], h.heap_id);
  return b;
}

void decode_hello_extension(const std::uint8_t* b, Hello& h) {
  h.mode = static_cast<HelloMode>(get_u32(b));
  h.slot = get_u32(b + 4);
  h.client_id = get_u32(b + 8);
  h.heap_id = get_u64(b + 16);
}

Hello decode_hello(const std::uint8_t* b) {
  Hello h;
  h.magic = get_u32(b);
  h.protocol_version = get_u32(b + 4);
  h.layout_version = get_u32(b + 8);
  h.pid = static_cast<std::int32_t>(get_u32(b + 12));
  return h;
}

std::vector<std::uint8_t> encode_reply(const AttachReply& r) {
  std::size_t name_len = std::min(r.segment_name.size(), kMaxWireString);
  std::size_t msg_len = std::min(r.message.size(), kMaxWireString);
  std::vector<std::uint8_t> b(kReplyFixedSize + name_len + msg_len);
  put_u32(&b[0], r.magic);
  put_u32(&b[4], static_cast<std::uint32_t>(r.status));
  put_u32(&b[8], r.protocol_version);
  put_u32(&b[12], r.layout_version);
  put_u32(&b[16], r.client_id);
  put_u32(&b[20], r.slot);
  put_u64(&b[24], r.address);
  put_u64(&b[32], r.size);
  put_u32(&b[40], static_cast<std::uint32_t>(name_len));
  put_u32(&b[44], static_cast<std::uint32_t>(msg_len));
  std::memcpy(b.data() + kReplyFixedSize, r.segment_name.data(), name_len);
  std::memcpy(b.data() + kReplyFixedSize + name_len, r.message.data(), msg_len);
  return b;
}

bool decode_reply_fixed(const std::uint8_t* b, AttachReply& r, std::uint32_t& name_len, std::uint32_t& msg_len) {
  r.magic = get_u32(b);
  r.status = static_cast<AttachStatus>(get_u32(b + 4));
  r.protocol_version = get_u32(b + 8);
  r.layout_version = get_u32(b + 12);
  r.client_id = get_u32(b + 16);
  r.slot = get_u32(b + 20);
  r.address = get_u64(b + 24);
  r.size = get_u64(b + 32);
  name_len = get_u32(b + 40);
  msg_len = get_u32(b + 44);
  return name_len <= kMaxWireString && msg_len <= kMaxWireString;
}

std::array<std::uint8_t, kRequestSize> encode_request(const Request& q) {
  std::array<std::uint8_t, kRequestSize> b{};
  put_u32(&b[0], q.magic);
  put_u32(&b[4], static_cast<std::uint32_t>(q.type));
  put_u64(&b[8], q.arg);
  return b;
}

Request decode_request(const std::uint8_t* b) {
  Request q;
  q.magic = get_u32(b);
  q.type = static_cast<RequestType>(get_u32(b + 4));
  q.arg = get_u64(b + 8);
  return q;
}

IoResult read_full(int fd, void* buf, std::size_t n, int timeout_ms) {
  return read_until(fd, buf, n, timeout_ms >= 0, Clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0)));
}

IoResult write_full(int fd, const void* buf, std::size_t n, int timeout_ms) {
  return write_until(fd, buf, n, timeout_ms >= 0, Clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0)));
}

IoResult read_reply(int fd, AttachReply& r, int timeout_ms, int* passed_fd) {
  bool bounded = timeout_ms >= 0;
  auto deadline = Clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
  std::uint8_t fixed[kReplyFixedSize];
  IoResult res = read_until(fd, fixed, sizeof fixed, bounded, deadline, passed_fd);
  if (res != IoResult::kOk) return res;
  std::uint32_t name_len = 0, msg_len = 0;
  if (!decode_reply_fixed(fixed, r, name_len, msg_len)) return IoResult::kError;
  std::string tail(name_len + msg_len, '\0');
  if (!tail.empty()) {
    res = read_until(fd, tail.data(), tail.size(), bounded, deadline, passed_fd);
    if (res != IoResult::kOk) return res;
  }
  r.segment_name = tail.substr(0, name_len);
  r.message = tail.substr(name_len);
  return IoResult::kOk;
}

ssize_t send_some(int fd, const void* buf, std::size_t n, int pass_fd) {
  iovec iov{const_cast<void*>(buf), n};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (pass_fd >= 0) {
    std::memset(control, 0, sizeof control);
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &pass_fd, sizeof pass_fd);
  }
  ssize_t put;
  do put = ::sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  while (put < 0 && errno == EINTR);
  return put;
}

const char* io_result_name(IoResult r) {
  switch (r) {
    case IoResult::kOk: return "ok";
    case IoResult::kEof: return "connection closed";
    case IoResult::kTimeout: return "timed out";
    case IoResult::kError: return "I/O error";
  }
  return "?";
}

const char* attach_status_name(AttachStatus s) {
  switch (s) {
    case AttachStatus::kOk: return "ok";
    case AttachStatus::kVersionMismatch: return "version mismatch";
    case AttachStatus::kCredentials: return "credentials refused";
    case AttachStatus::kFull: return "client table full";
    case AttachStatus::kBadHello: return "bad hello";
    case AttachStatus::kShuttingDown: return "server shutting down";
    case AttachStatus::kInternal: return "internal server error";
    case AttachStatus::kBusy: return "server busy";
    case AttachStatus::kNotReattached: return "not reattached";
  }
  return "unknown status";
}

}  // namespace colors::detail
