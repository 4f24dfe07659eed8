// Wire format of the Unix-socket conversation between a client and colors-server.
//
// The socket carries only the attach handshake and a few rare control requests; shared objects
// never travel over it. After the handshake the connection stays open for the client's whole life:
// the server reads EOF on it when the client exits or dies (kill -9 included), which is how dead
// clients are detected.
//
// Format: fixed-size little-endian integer fields, strings as a u32 length plus that many bytes
// (no NUL), at most kMaxWireString bytes each.
//
//   Hello (client -> server, kHelloFullSize = 40 bytes, sent once right after connect):
//     u32 magic (kWireMagic) | u32 protocol version | u32 layout version | i32 client pid
//     u32 mode (HelloMode) | u32 slot | u32 client id | u32 reserved | u64 heap id
//   The server reads the first 16 bytes, answers a version mismatch at once, and reads the rest
//   only from a client of its own versions. Mode kReattach asks for the client's old slot back
//   after its server died (slot, client id and heap id are its attachment's); kAttach ignores them.
//   AttachReply (server -> client, kReplyFixedSize bytes, then the two strings; with status kOk
//   its first byte carries the segment's descriptor as an SCM_RIGHTS message):
//     u32 magic | u32 status (AttachStatus) | u32 server protocol version | u32 server layout version
//     u32 client id | u32 slot | u64 segment address | u64 segment total size
//     u32 segment-name length | u32 message length | segment name bytes | message bytes
//   Request / response (either direction after a successful handshake, 16 bytes):
//     u32 magic | u32 type (RequestType) | u64 argument
//
// Compatibility rule: the first 16 bytes of Hello and the first 16 bytes of AttachReply (magic,
// status, both versions) never change in any future protocol version, so that any two versions
// can always tell each other which versions they speak. Everything after them may change with
// kProtocolVersion.
#pragma once
#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace colors::detail {

inline constexpr std::uint32_t kWireMagic = 0x53524c43;  // "CLRS" as little-endian bytes
inline constexpr std::size_t kHelloSize = 16;      // the frozen part
inline constexpr std::size_t kHelloFullSize = 40;  // the whole hello of this protocol version
inline constexpr std::size_t kReplyFixedSize = 48;
inline constexpr std::size_t kRequestSize = 16;
inline constexpr std::size_t kMaxWireString = 4096;

// How long the server waits for a connected peer's Hello before dropping it.
inline constexpr int kHandshakeTimeoutMs = 2000;

enum class HelloMode : std::uint32_t {
  kAttach = 0,    // a new client: any free slot
  kReattach = 1,  // the client of a server that died: its slot in the heap the successor adopted
};

struct Hello {
  std::uint32_t magic = kWireMagic;
  std::uint32_t protocol_version = 0;
  std::uint32_t layout_version = 0;
  std::int32_t pid = 0;
  // Extension (not in the frozen 16 bytes).
  HelloMode mode = HelloMode::kAttach;
  std::uint32_t slot = 0;
  std::uint32_t client_id = 0;
  std::uint64_t heap_id = 0;
};

enum class AttachStatus : std::uint32_t {
  kOk = 0,
  kVersionMismatch = 1,  // message names both sides' versions
  kCredentials = 2,      // SO_PEERCRED check failed; message says why
  kFull = 3,             // every client slot is taken
  kBadHello = 4,         // wrong magic: not a colors client
  kShuttingDown = 5,     // the server is stopping
  kInternal = 6,         // the server failed while attaching (message says how)
  kBusy = 7,             // too many connections of this peer wait for their handshake: retry
  kNotReattached = 8,    // a reattach the server cannot grant (another heap, the slot is not the
                         // client's any more); message says why. The client's objects are lost to it.
};

struct AttachReply {
  std::uint32_t magic = kWireMagic;
  AttachStatus status = AttachStatus::kOk;
  std::uint32_t protocol_version = 0;  // the server's
  std::uint32_t layout_version = 0;    // the server's
  std::uint32_t client_id = 0;         // kOk only
  std::uint32_t slot = 0;              // kOk only: index into Metadata::clients
  std::uint64_t address = 0;           // kOk only: where the segment must be mapped
  std::uint64_t size = 0;              // kOk only: total bytes of the segment
  std::string segment_name;            // kOk only: the segment's logical name (for messages)
  std::string message;                 // human-readable reason when status != kOk
};

enum class RequestType : std::uint32_t {
  kPing = 1,    // client -> server; argument echoed back in kPong
  kPong = 2,    // server -> client
  kDetach = 3,  // client -> server right before an orderly close (only changes what is logged)
  // client -> server: take a checkpoint (colors-server --data-dir); answered by kCheckpointDone
  // once one that began after the request is on disk, or failed.
  kCheckpoint = 4,
  // server -> client, the answer to kCheckpoint and kSync: argument = the checkpoint's or log
  // record's sequence number (> 0), or kCheckpointFailed | reason << 32 | errno (reason:
  // CheckpointFailure).
  kCheckpointDone = 5,
  // client -> server (--durability full): make everything committed so far durable; answered by
  // kCheckpointDone once a log record (or checkpoint) taken after the request is on disk.
  kSync = 6,
};

inline constexpr std::uint64_t kCheckpointFailed = std::uint64_t{1} << 63;
enum class CheckpointFailure : std::uint32_t {
  kNoDataDir = 1,     // the server runs without --data-dir
  kFailed = 2,        // capture or write failed; errno in the low 32 bits (0: see the server's log)
  kShuttingDown = 3,  // the server is stopping (its shutdown checkpoint follows)
};

struct Request {
  std::uint32_t magic = kWireMagic;
  RequestType type = RequestType::kPing;
  std::uint64_t arg = 0;
};

std::array<std::uint8_t, kHelloFullSize> encode_hello(const Hello& h);
Hello decode_hello(const std::uint8_t* bytes);  // the frozen part: exactly kHelloSize bytes
// The extension: bytes [kHelloSize, kHelloFullSize) of a hello, into `h`.
void decode_hello_extension(const std::uint8_t* bytes, Hello& h);

// Strings longer than kMaxWireString are truncated.
std::vector<std::uint8_t> encode_reply(const AttachReply& r);
// Decodes the fixed part into `r` and returns the two string lengths through the out-params.
// Returns false when a length exceeds kMaxWireString (the rest of the stream is then unusable).
bool decode_reply_fixed(const std::uint8_t* bytes, AttachReply& r, std::uint32_t& name_len, std::uint32_t& msg_len);

std::array<std::uint8_t, kRequestSize> encode_request(const Request& q);
Request decode_request(const std::uint8_t* bytes);  // exactly kRequestSize bytes

// ---------------------------------------------------------------------------------------------
// Socket I/O with whole-buffer semantics. Both work on blocking and non-blocking sockets alike
// (they use MSG_DONTWAIT and poll() for waiting), retry on EINTR, and continue after short
// reads/writes until the whole buffer moved or `timeout_ms` passed (negative: no limit).
// Writes use MSG_NOSIGNAL: a closed peer gives kError (EPIPE), never SIGPIPE.

enum class IoResult { kOk, kEof, kTimeout, kError };

IoResult read_full(int fd, void* buf, std::size_t n, int timeout_ms);
IoResult write_full(int fd, const void* buf, std::size_t n, int timeout_ms);

// Reads a whole AttachReply (fixed part, then strings) within `timeout_ms` overall. A descriptor
// passed with it (SCM_RIGHTS: the segment, with kOk) goes to `*passed_fd` (close-on-exec) when
// `passed_fd` is non-null and `*passed_fd` is -1; any other passed descriptor is closed.
IoResult read_reply(int fd, AttachReply& r, int timeout_ms, int* passed_fd = nullptr);

// One non-blocking sendmsg of up to `n` bytes, with `pass_fd` attached (SCM_RIGHTS) when it is
// >= 0: the descriptor travels with the first byte that goes out. Returns the bytes sent, or -1
// with errno (EAGAIN: the socket buffer is full, nothing was sent, the descriptor neither).
ssize_t send_some(int fd, const void* buf, std::size_t n, int pass_fd);

const char* io_result_name(IoResult r);
const char* attach_status_name(AttachStatus s);

}  // namespace colors::detail
