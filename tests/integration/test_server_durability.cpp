// Durability with --data-dir (colors-server/README.md, "Durability"): checkpoints taken while
// clients run, restored after a simulated reboot (server and clients killed, segment removed);
// damaged checkpoints skipped, a full disk reported, one server per data directory, private files,
// and no client left stopped by a server that died during a checkpoint.
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "colors/colors.hpp"
#include "colors/errors.hpp"
#include "block.hpp"
#include "checkpoint_file.hpp"
#include "crc32c.hpp"
#include "layout.hpp"
#include "options.hpp"
#include "segment.hpp"
#include "server_process.hpp"
#include "server_test_util.hpp"

using namespace colors::test;

namespace {

std::vector<std::string> checkpoint_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("checkpoint-", 0) == 0) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

unsigned mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

void flip_byte(const std::string& path, off_t at) {
  int fd = ::open(path.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  unsigned char b = 0;
  REQUIRE(::pread(fd, &b, 1, at) == 1);
  b ^= 0x5a;
  REQUIRE(::pwrite(fd, &b, 1, at) == 1);
  ::close(fd);
}

off_t file_size(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_size;
}

// Whether process `p` is stopped (state T in /proc/p/stat, after the name's closing parenthesis).
bool stopped(pid_t p) {
  std::string stat = read_file("/proc/" + std::to_string(p) + "/stat");
  auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'T';
}

// Stores `value` in repository dur.marker, takes a checkpoint and returns its number.
std::uint64_t mark_and_checkpoint(const std::string& value) {
  colors::repository("dur.marker").set(colors::Value(value));
  return colors::checkpoint();
}

constexpr int kAccounts = 64;
constexpr std::int64_t kStart = 1000;

// Accounts in a list under "dur.accounts", each a "dur.Account" with a balance.
void make_accounts() {
  colors::Class cls = colors::define_class("dur.Account", {{"balance", colors::TypeKind::kInteger, ""}});
  colors::List list = colors::new_list();
  for (int i = 0; i < kAccounts; ++i) {
    colors::Object o = colors::new_object(cls);
    o.set("balance", colors::Value(kStart));
    list.append(o);
  }
  colors::repository("dur.accounts").set(list);
}

std::int64_t total_balance() {
  return colors::atomically([] {
    colors::List list(colors::repository("dur.accounts").get());
    std::int64_t sum = 0;
    for (std::size_t i = 0; i < list.size(); ++i) sum += colors::Object(list.get(i)).get("balance").as_int();
    return sum;
  });
}

// A client process that transfers between random accounts in transactions until killed; each
// transaction also appends to a list and grows a string, so the heap changes shape under the
// checkpoints too. Exits 0 only if it is killed (never returns).
[[noreturn]] void transfer_forever(const std::string& socket, unsigned seed) {
  try {
    colors::attach(socket);
    colors::List list(colors::repository("dur.accounts").get());
    colors::List log = colors::new_list();
    colors::repository("dur.log." + std::to_string(seed)).set(log);
    unsigned x = seed * 2654435761u + 1;
    for (std::uint64_t n = 0;; ++n) {
      x = x * 1103515245u + 12345u;
      const std::size_t a = (x >> 8) % kAccounts, b = (x >> 20) % kAccounts;
      colors::atomically([&] {
        colors::Object from(list.get(a)), to(list.get(b));
        const std::int64_t amount = static_cast<std::int64_t>(x % 7);
        from.set("balance", colors::Value(from.get("balance").as_int() - amount));
        to.set("balance", colors::Value(to.get("balance").as_int() + amount));
        if (log.size() > 200) log.clear();
        log.append(colors::Value(std::string(n % 40, 'x')));
      });
    }
  } catch (const std::exception&) {
    ::_exit(3);  // the server died under it: the test kills it anyway
  }
}

}  // namespace

TEST_CASE("CRC-32C gives the standard check value", "[server][durability]") {
  CHECK(colors::server::crc32c(0, "123456789", 9) == 0xe3069283u);
  // Extending in pieces gives the same value as one call (the writer checksums a chunk in pieces).
  CHECK(colors::server::crc32c(colors::server::crc32c(0, "1234", 4), "56789", 5) == 0xe3069283u);
}

TEST_CASE("a checkpoint taken while clients run transactions restores after a reboot: committed state, no torn transaction",
          "[server][durability]") {
  TempDir data;
  Running r({"--data-dir", data.path() + "/d", "--checkpoint-interval", "0"});
  {
    Attached a(r.cfg);
    make_accounts();
  }
  // The transferring clients are forked while this process is not attached.
  std::vector<pid_t> kids;
  for (unsigned i = 0; i < 2; ++i) {
    pid_t k = ::fork();
    REQUIRE(k >= 0);
    if (k == 0) transfer_forever(r.cfg.socket, i + 1);
    kids.push_back(k);
  }
  std::uint64_t last = 0;
  {
    Attached a(r.cfg);
    REQUIRE(eventually([] { return !colors::repository("dur.log.1").get().is_null() &&
                                   !colors::repository("dur.log.2").get().is_null(); }, 10000));
    colors::repository("dur.marker").set(colors::Value("before"));
    for (int i = 0; i < 5; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      const std::uint64_t seq = colors::checkpoint();
      CHECK(seq == last + 1);
      last = seq;
    }
    colors::repository("dur.marker").set(colors::Value("after"));  // after the last checkpoint: lost
  }
  kill9(*r.server);
  for (pid_t k : kids) {
    ::kill(k, SIGKILL);
    ::waitpid(k, nullptr, 0);
  }
  // The reboot: the segment is gone.
  REQUIRE(::unlink(r.cfg.shm_path().c_str()) == 0);
  ServerProcess next(r.cfg, r.cfg.args({"--data-dir", data.path() + "/d", "--checkpoint-interval", "0"}),
                     r.dir.path() + "/next.log");
  REQUIRE(next.wait_ready());
  INFO(next.log());
  CHECK(next.log().find("restored checkpoint " + std::to_string(last)) != std::string::npos);
  Attached a(r.cfg);
  CHECK(total_balance() == kAccounts * kStart);  // every transfer whole or not at all
  CHECK(colors::repository("dur.marker").get().as_string() == "before");
  colors::VerifyResult v = colors::verify_heap();
  INFO(v.report);
  CHECK(v.ok);
  // The restored heap is a working heap: transactions run, and the next checkpoint follows on.
  colors::atomically([] {
    colors::Object o(colors::List(colors::repository("dur.accounts").get()).get(0));
    o.set("balance", colors::Value(o.get("balance").as_int()));
  });
  CHECK(colors::checkpoint() == last + 1);
}

TEST_CASE("a damaged newest checkpoint is skipped with what is wrong and the previous one restored, none valid refuses the start",
          "[server][durability]") {
  TempDir data;
  const std::string dir = data.path() + "/d";
  Running r({"--data-dir", dir, "--checkpoint-interval", "0"});
  {
    Attached a(r.cfg);
    REQUIRE(mark_and_checkpoint("one") == 1);
    REQUIRE(mark_and_checkpoint("two") == 2);
  }
  kill9(*r.server);
  std::vector<std::string> files = checkpoint_files(dir);
  REQUIRE(files.size() == 2);
  const std::string newest = files[1];
  bool truncate = GENERATE(false, true);
  if (truncate)
    REQUIRE(::truncate(newest.c_str(), file_size(newest) - 5000) == 0);
  else
    flip_byte(newest, file_size(newest) / 2);
  REQUIRE(::unlink(r.cfg.shm_path().c_str()) == 0);
  {
    ServerProcess next(r.cfg, r.cfg.args({"--data-dir", dir, "--checkpoint-interval", "0"}), r.dir.path() + "/next.log");
    REQUIRE(next.wait_ready());
    const std::string log = next.log();
    INFO(log);
    CHECK(log.find("skipping checkpoint " + newest) != std::string::npos);
    CHECK(log.find(truncate ? "truncated or torn" : "does not match") != std::string::npos);
    CHECK(log.find("restored checkpoint 1") != std::string::npos);
    Attached a(r.cfg);
    CHECK(colors::repository("dur.marker").get().as_string() == "one");
    kill9(next);
  }
  // Now damage the other one too: the server refuses to start and keeps both files.
  REQUIRE(::unlink(r.cfg.shm_path().c_str()) == 0);
  flip_byte(files[0], 40);  // inside the header
  ServerProcess last(r.cfg, r.cfg.args({"--data-dir", dir, "--checkpoint-interval", "0"}), r.dir.path() + "/last.log");
  CHECK_FALSE(last.wait_ready(5000));
  CHECK(last.wait_exit(5000) == 1);
  INFO(last.log());
  CHECK(last.log().find("no valid checkpoint in " + dir) != std::string::npos);
  CHECK(checkpoint_files(dir).size() == 2);
  CHECK_FALSE(path_exists(r.cfg.shm_path()));  // no half-restored heap left behind
}

TEST_CASE("a full disk fails the checkpoint with the reason, keeps the previous one and the heap intact",
          "[server][durability]") {
  TempDir data;
  const std::string dir = data.path() + "/d";
  Running ok_first({"--data-dir", dir, "--checkpoint-interval", "0"});
  {
    Attached a(ok_first.cfg);
    REQUIRE(mark_and_checkpoint("kept") == 1);
  }
  kill9(*ok_first.server);
  const std::string switch_file = data.path() + "/disk-full";
  { std::ofstream(switch_file) << "full\n"; }
  ::setenv("COLORS_DATA_DIR_FAULT_FULL", switch_file.c_str(), 1);
  ServerProcess full(ok_first.cfg, ok_first.cfg.args({"--data-dir", dir, "--checkpoint-interval", "0"}),
                     ok_first.dir.path() + "/full.log");
  ::unsetenv("COLORS_DATA_DIR_FAULT_FULL");
  REQUIRE(full.wait_ready());
  {
    Attached a(ok_first.cfg);
    colors::repository("dur.marker").set(colors::Value("new"));
    try {
      colors::checkpoint();
      FAIL("checkpoint() succeeded on a full disk");
    } catch (const colors::Error& e) {
      CHECK(std::string(e.what()).find("No space left on device") != std::string::npos);
      CHECK(std::string(e.what()).find("intact") != std::string::npos);
    }
    CHECK(colors::repository("dur.marker").get().as_string() == "new");
    colors::VerifyResult v = colors::verify_heap();
    CHECK(v.ok);
  }
  std::vector<std::string> files = checkpoint_files(dir);
  REQUIRE(files.size() == 1);  // no temporary file left, the old checkpoint untouched
  CHECK(files[0].find("checkpoint-00000000000000000001.ckpt") != std::string::npos);
  INFO(full.log());
  CHECK(full.log().find("No space left on device") != std::string::npos);
}

namespace {

// Rewrites the checkpoint at `path` with its heap damaged but every checksum right, as a capture
// of a heap that was already corrupt in memory would be: `what` is "tiling" (the first block's
// header zeroed: adoption's tiling check) or "class" (the first object's class pointer: the
// verifier).
void damage_heap_in_checkpoint(const std::string& path, const std::string& what, const std::string& scratch) {
  using namespace colors::server;
  const std::string image_path = scratch + "/image";
  int fd = ::open(image_path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  CheckpointInfo info;
  REQUIRE(restore_checkpoint(path, fd, info) == "");
  void* p = ::mmap(nullptr, info.segment_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  REQUIRE(p != MAP_FAILED);
  auto* image = static_cast<unsigned char*>(p);
  const auto* meta = reinterpret_cast<const colors::detail::Metadata*>(image);
  std::uint64_t at = meta->objects_begin - meta->base;
  const std::uint64_t end = meta->objects_end - meta->base;
  auto* h = reinterpret_cast<colors::detail::BlockHeader*>(image + at);
  if (what == "tiling") {
    h->word.store(0);
  } else {
    while (colors::detail::BlockHeader::kind_of(h->word.load()) != colors::detail::BlockKind::kObject) {
      at += colors::detail::BlockHeader::size_of(h->word.load());
      REQUIRE(at < end);
      h = reinterpret_cast<colors::detail::BlockHeader*>(image + at);
    }
    const std::uint64_t bogus = meta->objects_begin + 8;  // inside the space, not a class
    std::memcpy(h->payload(), &bogus, sizeof bogus);
  }
  const std::string fresh = path + ".rewritten";
  int out = ::open(fresh.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(out >= 0);
  REQUIRE(write_checkpoint(out, info, image, WriteFault{}) == "");
  ::close(out);
  ::munmap(p, info.segment_size);
  ::close(fd);
  ::unlink(image_path.c_str());
  REQUIRE(::rename(fresh.c_str(), path.c_str()) == 0);
}

std::vector<std::string> rejected_heaps(const std::string& shm_path) {
  std::vector<std::string> out;
  const std::filesystem::path heap(shm_path);
  for (const auto& e : std::filesystem::directory_iterator(heap.parent_path()))
    if (e.path().filename().string().rfind(heap.filename().string() + ".rejected-", 0) == 0) out.push_back(e.path().string());
  return out;
}

}  // namespace

TEST_CASE("a newest checkpoint whose heap fails the checks is set aside and the previous one restored, none left refuses the start",
          "[server][durability]") {
  const std::string what = GENERATE(std::string("tiling"), std::string("class"));
  TempDir data;
  const std::string dir = data.path() + "/d";
  const std::vector<std::string> flags = {"--data-dir", dir, "--checkpoint-interval", "0"};
  Running r(flags);
  {
    Attached a(r.cfg);
    REQUIRE(mark_and_checkpoint("one") == 1);
    REQUIRE(mark_and_checkpoint("two") == 2);
  }
  kill9(*r.server);
  std::vector<std::string> files = checkpoint_files(dir);
  REQUIRE(files.size() == 2);
  damage_heap_in_checkpoint(files[1], what, data.path());
  REQUIRE(::unlink(r.cfg.shm_path().c_str()) == 0);
  {
    ServerProcess next(r.cfg, r.cfg.args(flags), r.dir.path() + "/next.log");
    REQUIRE(next.wait_ready());
    const std::string log = next.log();
    INFO(log);
    CHECK(log.find("refusing the heap " + r.cfg.shm_path() + " restored from checkpoint 2") != std::string::npos);
    CHECK(log.find(what == "tiling" ? "has an unknown kind" : "the heap verifier found") != std::string::npos);
    CHECK(log.find("restored checkpoint 1") != std::string::npos);
    CHECK(log.find("refused newer " + files[1]) != std::string::npos);
    Attached a(r.cfg);
    CHECK(colors::repository("dur.marker").get().as_string() == "one");
    colors::VerifyResult v = colors::verify_heap();
    INFO(v.report);
    CHECK(v.ok);
    kill9(next);
  }
  CHECK(rejected_heaps(r.cfg.shm_path()).size() == 1);  // kept for inspection
  CHECK(checkpoint_files(dir).size() == 2);               // the refused checkpoint stays too
  // Both damaged: nothing older to fall back to. The start fails as a refused heap, files kept.
  REQUIRE(::unlink(r.cfg.shm_path().c_str()) == 0);
  damage_heap_in_checkpoint(files[0], what, data.path());
  ServerProcess last(r.cfg, r.cfg.args(flags), r.dir.path() + "/last.log");
  CHECK_FALSE(last.wait_ready(5000));
  CHECK(last.wait_exit(5000) == 3);
  INFO(last.log());
  CHECK(last.log().find("no older checkpoint in " + dir + " to fall back to") != std::string::npos);
  CHECK(checkpoint_files(dir).size() == 2);
  CHECK_FALSE(path_exists(r.cfg.shm_path()));
  for (const std::string& f : rejected_heaps(r.cfg.shm_path())) ::unlink(f.c_str());
}

TEST_CASE("a file system that refuses direct I/O: checkpoint data is written and read buffered from where it refused",
          "[server][durability]") {
  using namespace colors::server;
  // 20 MiB of data in two extents of a 32 MiB image: five 4 MiB write pieces, three 8 MiB read
  // batches. The refusal starts at the first piece (batch), in the middle, or never.
  constexpr std::uint64_t kMiB = 1 << 20;
  const std::int64_t write_from = GENERATE(std::int64_t{-1}, std::int64_t{0}, std::int64_t{9 * kMiB});
  const std::int64_t read_from = GENERATE(std::int64_t{-1}, std::int64_t{0}, std::int64_t{9 * kMiB});
  struct HookOff {
    ~HookOff() { g_refuse_direct_io_from.store(-1); }
  } hook_off;
  TempDir dir;
  std::vector<unsigned char> image(32 * kMiB, 0);
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  CheckpointInfo info;
  info.layout_version = 1;
  info.heap_id = 7;
  info.base = 0x600000000000ull;
  info.segment_size = image.size();
  info.seq = 1;
  info.extents = {{0, 16 * kMiB}, {20 * kMiB, 4 * kMiB}};
  for (const Extent& e : info.extents) {
    for (std::uint64_t i = e.offset; i < e.offset + e.length; i += 8) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      std::memcpy(&image[i], &x, 8);
    }
    info.data_bytes += e.length;
  }
  const std::string path = dir.path() + "/c.ckpt";
  int out = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(out >= 0);
  g_refuse_direct_io_from.store(write_from);
  REQUIRE(write_checkpoint(out, info, image.data(), WriteFault{}) == "");
  ::close(out);

  g_refuse_direct_io_from.store(read_from);
  CheckpointInfo checked;
  REQUIRE(validate_checkpoint(path, checked) == "");
  const std::string seg = dir.path() + "/segment";
  int fd = ::open(seg.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  CheckpointInfo restored;
  REQUIRE(restore_checkpoint(path, fd, restored) == "");
  g_refuse_direct_io_from.store(-1);
  REQUIRE(restored.segment_size == image.size());
  std::vector<unsigned char> back(image.size());
  REQUIRE(::pread(fd, back.data(), back.size(), 0) == static_cast<ssize_t>(back.size()));
  ::close(fd);
  CHECK(back == image);
}

TEST_CASE("colors --help prints its usage and exits 0, bad usage exits 2", "[server]") {
  TempDir dir;
  const std::string out = dir.path() + "/out.txt";
  auto run = [&](const std::string& args) {
    int st = std::system((std::string(COLORS_CLI_BIN) + " " + args + " > " + out + " 2>&1").c_str());
    REQUIRE(WIFEXITED(st));
    std::ifstream in(out);
    return std::pair{WEXITSTATUS(st), std::string(std::istreambuf_iterator<char>(in), {})};
  };
  for (const char* help : {"--help", "-h", "ping --help"}) {
    auto [code, text] = run(help);
    INFO(help << ": " << text);
    CHECK(code == 0);
    CHECK(text.find("colors checkpoint") != std::string::npos);
  }
  for (const char* bad : {"", "snapshot", "ping --socket", "ping --verbose"}) {
    auto [code, text] = run(bad);
    INFO("'" << bad << "': " << text);
    CHECK(code == 2);
    CHECK(text.find("usage:") != std::string::npos);
  }
}

TEST_CASE("one server per data directory, the directory is 0700 and its files 0600, no data dir is a clear error",
          "[server][durability]") {
  TempDir data;
  const std::string dir = data.path() + "/d";
  Running r({"--data-dir", dir, "--checkpoint-interval", "0"});
  // The operator's command takes one too.
  REQUIRE(std::system((std::string(COLORS_CLI_BIN) + " checkpoint --socket " + r.cfg.socket + " > /dev/null").c_str()) == 0);
  {
    Attached a(r.cfg);
    REQUIRE(colors::checkpoint() == 2);
    // Not inside a transaction: the checkpoint would wait for a thread it stops.
    colors::Transaction tx;
    CHECK_THROWS_AS(colors::checkpoint(), colors::InvalidArgumentError);
  }
  CHECK(mode_of(dir) == 0700);
  for (const std::string& f : checkpoint_files(dir)) CHECK(mode_of(f) == 0600);
  CHECK(mode_of(dir + "/lock") == 0600);

  ServerConfig other = ServerConfig::fresh(r.dir.path());
  LeftoverCleaner cleaner{other};
  ServerProcess second(other, other.args({"--data-dir", dir}), r.dir.path() + "/second.log");
  CHECK_FALSE(second.wait_ready(5000));
  CHECK(second.wait_exit(5000) == 1);
  INFO(second.log());
  CHECK(second.log().find("in use by another colors-server (pid " + std::to_string(r.server->pid()) + ")") !=
        std::string::npos);

  Running plain;
  Attached a(plain.cfg);
  try {
    colors::checkpoint();
    FAIL("checkpoint() without --data-dir succeeded");
  } catch (const colors::Error& e) {
    CHECK(std::string(e.what()).find("--data-dir") != std::string::npos);
  }
}

TEST_CASE("a server killed while its clients are stopped for a checkpoint: they resume at once", "[server][durability]") {
  TempDir data;
  ::setenv("COLORS_CHECKPOINT_FAULT_HOLD_MS", "60000", 1);
  Running r({"--data-dir", data.path() + "/d", "--checkpoint-interval", "0"});
  ::unsetenv("COLORS_CHECKPOINT_FAULT_HOLD_MS");
  int beat[2];
  REQUIRE(::pipe(beat) == 0);
  pid_t worker = ::fork();
  REQUIRE(worker >= 0);
  if (worker == 0) {
    // A client that beats every 5 ms, attached so that checkpoints stop it.
    ::close(beat[0]);
    try {
      colors::attach(r.cfg.socket);
    } catch (const std::exception&) {
      ::_exit(2);
    }
    for (;;) {
      char c = 'b';
      if (::write(beat[1], &c, 1) != 1) ::_exit(0);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ::close(beat[1]);
  char first = 0;
  REQUIRE(::read(beat[0], &first, 1) == 1);  // the worker is attached: the checkpoint will stop it
  pid_t asker = ::fork();
  REQUIRE(asker >= 0);
  if (asker == 0) {
    try {
      colors::attach(r.cfg.socket);
      colors::checkpoint();
    } catch (const std::exception&) {
    }
    ::_exit(0);
  }
  CHECK(eventually([&] { return stopped(worker) && stopped(asker); }, 10000));
  kill9(*r.server);
  // The guardian resumes them as soon as it sees its server gone.
  CHECK(eventually([&] { return !stopped(worker) && !stopped(asker); }, 5000));
  char buf[64];
  ::fcntl(beat[0], F_SETFL, O_NONBLOCK);
  while (::read(beat[0], buf, sizeof buf) > 0) {
  }
  CHECK(eventually([&] { return ::read(beat[0], buf, 1) == 1; }, 5000));  // beating again
  ::kill(worker, SIGKILL);
  ::waitpid(worker, nullptr, 0);
  ::waitpid(asker, nullptr, 0);
  ::close(beat[0]);
}

TEST_CASE("a monitor held at the checkpoint is handed on after the restore as its holder's death would be",
          "[server][durability]") {
  TempDir data;
  const std::vector<std::string> flags = {"--data-dir", data.path() + "/d", "--checkpoint-interval", "0"};
  Running r(flags);
  {
    Attached a(r.cfg);
    colors::repository("dur.lockme").set(colors::new_list());
  }
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  pid_t holder = ::fork();
  REQUIRE(holder >= 0);
  if (holder == 0) {
    try {
      colors::attach(r.cfg.socket);
      colors::Monitor m(colors::repository("dur.lockme").get());
      char c = 'h';
      if (::write(ready[1], &c, 1) != 1) ::_exit(2);
      ::pause();
    } catch (const std::exception&) {
    }
    ::_exit(1);
  }
  char c;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  {
    Attached a(r.cfg);
    REQUIRE(colors::checkpoint() == 1);  // taken with the monitor held
  }
  kill9(*r.server);
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  REQUIRE(::unlink(r.cfg.shm_path().c_str()) == 0);
  ServerProcess next(r.cfg, r.cfg.args(flags), r.dir.path() + "/next.log");
  REQUIRE(next.wait_ready());
  INFO(next.log());
  CHECK(next.log().find("lock(s) held at the checkpoint") != std::string::npos);
  // In a child: without the hand-over its Monitor would block for good.
  pid_t taker = ::fork();
  REQUIRE(taker >= 0);
  if (taker == 0) {
    int code = 10;
    try {
      colors::attach(r.cfg.socket);
      colors::Value obj = colors::repository("dur.lockme").get();
      try {
        colors::Monitor m(obj);
        code = 11;  // taken without the owner-died report
      } catch (const colors::OwnerDiedError&) {
        colors::Monitor again(obj);  // reported once, then the monitor works
        code = 0;
      }
    } catch (const std::exception&) {
      code = 12;
    }
    ::_exit(code);
  }
  int status = -1;
  const bool ended = eventually([&] { return ::waitpid(taker, &status, WNOHANG) == taker; }, 10000);
  if (!ended) {
    ::kill(taker, SIGKILL);
    ::waitpid(taker, nullptr, 0);
  }
  CHECK(ended);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  for (int fd : {ready[0], ready[1]}) ::close(fd);
}

namespace {

// A client process that, under --durability full, commits transfers and increments its own
// counter in the same transaction, and after each commit returns reports the counter on `report`
// (8 bytes): every reported value was acknowledged as durable.
[[noreturn]] void count_durably(const std::string& socket, int index, int report) {
  try {
    colors::attach(socket);
    colors::List list(colors::repository("dur.accounts").get());
    colors::Object counter(colors::List(colors::repository("dur.counters").get()).get(static_cast<std::size_t>(index)));
    unsigned x = static_cast<unsigned>(index) * 2654435761u + 7;
    for (;;) {
      x = x * 1103515245u + 12345u;
      const std::size_t a = (x >> 8) % kAccounts, b = (x >> 20) % kAccounts;
      std::int64_t n = 0;
      colors::atomically([&] {
        colors::Object from(list.get(a)), to(list.get(b));
        from.set("balance", colors::Value(from.get("balance").as_int() - 3));
        to.set("balance", colors::Value(to.get("balance").as_int() + 3));
        n = counter.get("balance").as_int() + 1;
        counter.set("balance", colors::Value(n));
      });
      if (::write(report, &n, sizeof n) != sizeof n) ::_exit(4);
    }
  } catch (const std::exception&) {
    ::_exit(3);
  }
}

void make_counters(int n) {
  colors::Class cls = colors::define_class("dur.Account", {{"balance", colors::TypeKind::kInteger, ""}});
  colors::List list = colors::new_list();
  for (int i = 0; i < n; ++i) {
    colors::Object o = colors::new_object(cls);
    o.set("balance", colors::Value(0));
    list.append(o);
  }
  colors::repository("dur.counters").set(list);
}

std::int64_t counter(int i) {
  return colors::atomically([i] {
    return colors::Object(colors::List(colors::repository("dur.counters").get()).get(static_cast<std::size_t>(i)))
        .get("balance")
        .as_int();
  });
}

}  // namespace

TEST_CASE("durability full: every commit acknowledged before a kill -9 and a reboot is there after it",
          "[server][durability]") {
  TempDir data;
  const std::vector<std::string> flags = {"--data-dir", data.path() + "/d", "--checkpoint-interval", "0", "--durability", "full"};
  Running r(flags);
  {
    Attached a(r.cfg);
    make_accounts();
    make_counters(2);
  }
  std::vector<pid_t> kids;
  std::vector<int> reports;
  for (int i = 0; i < 2; ++i) {
    int p[2];
    REQUIRE(::pipe(p) == 0);
    pid_t k = ::fork();
    REQUIRE(k >= 0);
    if (k == 0) {
      ::close(p[0]);
      count_durably(r.cfg.socket, i, p[1]);
    }
    ::close(p[1]);
    ::fcntl(p[0], F_SETFL, O_NONBLOCK);
    kids.push_back(k);
    reports.push_back(p[0]);
  }
  std::vector<std::int64_t> acked(2, 0);
  auto drain = [&] {
    for (int i = 0; i < 2; ++i) {
      std::int64_t n = 0;
      while (::read(reports[static_cast<std::size_t>(i)], &n, sizeof n) == sizeof n) acked[static_cast<std::size_t>(i)] = n;
    }
  };
  REQUIRE(eventually([&] { drain(); return acked[0] > 50 && acked[1] > 50; }, 20000));
  // A kill -9 of the server in the middle of the commits, then of its clients: the reboot.
  kill9(*r.server);
  for (pid_t k : kids) ::kill(k, SIGKILL);
  for (pid_t k : kids) ::waitpid(k, nullptr, 0);
  drain();
  for (int fd : reports) ::close(fd);
  REQUIRE(::unlink(r.cfg.shm_path().c_str()) == 0);
  ServerProcess next(r.cfg, r.cfg.args(flags), r.dir.path() + "/next.log");
  REQUIRE(next.wait_ready());
  INFO(next.log());
  CHECK(next.log().find("log record(s)") != std::string::npos);
  Attached a(r.cfg);
  for (int i = 0; i < 2; ++i) {
    INFO("client " << i << " was told " << acked[static_cast<std::size_t>(i)] << " commits were durable");
    CHECK(counter(i) >= acked[static_cast<std::size_t>(i)]);
    CHECK(counter(i) <= acked[static_cast<std::size_t>(i)] + 1);  // at most the one it could not report
  }
  CHECK(total_balance() == kAccounts * kStart);
  colors::VerifyResult v = colors::verify_heap();
  INFO(v.report);
  CHECK(v.ok);
}

TEST_CASE("durability full: each commit takes a ticket on the segment's channel, and a record serves it",
          "[server][durability]") {
  TempDir data;
  Running r({"--data-dir", data.path() + "/d", "--checkpoint-interval", "0", "--durability", "full"});
  Attached a(r.cfg);
  make_counters(1);
  colors::detail::Metadata* m = colors::detail::current_meta();
  const std::uint64_t before = m->sync_requested.load();
  colors::Object c(colors::List(colors::repository("dur.counters").get()).get(0));
  for (int i = 1; i <= 20; ++i) {
    colors::atomically([&] { c.set("balance", colors::Value(std::int64_t{i})); });
    // Acknowledged: the record that served the ticket is on disk, so sync_done already covers it.
    CHECK(m->sync_done.load() >= before + static_cast<std::uint64_t>(i));
  }
  CHECK(m->sync_requested.load() == before + 20);
  CHECK(m->sync_failed.load() < before + 1);
  // A read-only transaction takes none.
  colors::atomically([&] { (void)c.get("balance"); });
  CHECK(m->sync_requested.load() == before + 20);
}

TEST_CASE("durability async: a commit is on disk within the delay, and a torn log tail is ignored with a message",
          "[server][durability]") {
  TempDir data;
  const std::string dir = data.path() + "/d";
  const std::vector<std::string> flags = {"--data-dir", dir, "--checkpoint-interval", "0", "--durability", "async",
                                          "--async-delay", "10"};
  Running r(flags);
  {
    Attached a(r.cfg);
    make_counters(1);
    for (int i = 1; i <= 3; ++i) {
      colors::atomically([i] {
        colors::Object(colors::List(colors::repository("dur.counters").get()).get(0)).set("balance", colors::Value(i));
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // well past the delay: one record each
    }
  }
  kill9(*r.server);
  REQUIRE(::unlink(r.cfg.shm_path().c_str()) == 0);
  {
    // Restored by a server that writes nothing to the directory (--durability none, no periodic
    // checkpoints): an async one takes a checkpoint of the restored heap as soon as it starts
    // (its first capture is a full one), and one that lived long enough for it (a loaded ASan
    // run) left a newer checkpoint whose log the tear below would never reach.
    const std::vector<std::string> quiet = {"--data-dir", dir, "--checkpoint-interval", "0", "--durability", "none"};
    ServerProcess next(r.cfg, r.cfg.args(quiet), r.dir.path() + "/next.log");
    REQUIRE(next.wait_ready());
    INFO(next.log());
    Attached a(r.cfg);
    CHECK(counter(0) == 3);
    kill9(next);
  }
  // Tear the last record, as a crash in the middle of its write would (the log is grown ahead
  // with zeros, so a torn record is followed by zeros): the state before it.
  std::string log;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".wal" && std::filesystem::file_size(e.path()) > 0) log = e.path().string();
  REQUIRE(!log.empty());
  {
    // Records: a 64-byte header (page count at byte 24), 8 + 4096 bytes per page, a 16-byte trailer.
    int fd = ::open(log.c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    off_t at = 0, last = -1, last_end = -1;
    for (;;) {
      unsigned char h[64];
      if (::pread(fd, h, sizeof h, at) != static_cast<ssize_t>(sizeof h) || std::memcmp(h, "CLRSWAL1", 8) != 0) break;
      std::uint64_t pages = 0;
      std::memcpy(&pages, h + 24, 8);
      last = at;
      at += static_cast<off_t>(64 + pages * (8 + 4096) + 16);
      last_end = at;
    }
    REQUIRE(last >= 0);
    std::vector<unsigned char> zeros(static_cast<std::size_t>(last_end - last - 100), 0);
    REQUIRE(::pwrite(fd, zeros.data(), zeros.size(), last + 100) == static_cast<ssize_t>(zeros.size()));
    ::close(fd);
  }
  REQUIRE(::unlink(r.cfg.shm_path().c_str()) == 0);
  ServerProcess last(r.cfg, r.cfg.args(flags), r.dir.path() + "/last.log");
  REQUIRE(last.wait_ready());
  INFO(last.log());
  CHECK(last.log().find("the log's end was ignored") != std::string::npos);
  CHECK(last.log().find("does not match its checksum") != std::string::npos);
  Attached a(r.cfg);
  CHECK(counter(0) == 2);
}

TEST_CASE("durability full on a full disk: the commit raises DurabilityError, stays visible, and commits are durable again once there is room",
          "[server][durability]") {
  TempDir data;
  const std::vector<std::string> flags = {"--data-dir", data.path() + "/d", "--checkpoint-interval", "0", "--durability", "full"};
  const std::string switch_file = data.path() + "/disk-full";
  ::setenv("COLORS_DATA_DIR_FAULT_FULL", switch_file.c_str(), 1);
  Running r(flags);
  ::unsetenv("COLORS_DATA_DIR_FAULT_FULL");
  auto set_counter = [](std::int64_t v) {
    colors::atomically([v] {
      colors::Object(colors::List(colors::repository("dur.counters").get()).get(0)).set("balance", colors::Value(v));
    });
  };
  {
    Attached a(r.cfg);
    make_counters(1);
    set_counter(1);  // durable (its commit made the first checkpoint)
    { std::ofstream(switch_file) << "full\n"; }
    try {
      set_counter(2);
      FAIL("a commit on a full disk claimed durability");
    } catch (const colors::DurabilityError& e) {
      CHECK(std::string(e.what()).find("No space left on device") != std::string::npos);
    }
    CHECK(counter(0) == 2);  // committed: visible to everyone, only not durable
    CHECK_THROWS_AS(set_counter(3), colors::DurabilityError);
    REQUIRE(::unlink(switch_file.c_str()) == 0);
    set_counter(4);  // room again: a new checkpoint, durable
    CHECK(counter(0) == 4);
  }
  INFO(r.server->log());
  CHECK(r.server->log().find("the next capture is a full checkpoint") != std::string::npos);
  kill9(*r.server);
  REQUIRE(::unlink(r.cfg.shm_path().c_str()) == 0);
  ServerProcess next(r.cfg, r.cfg.args(flags), r.dir.path() + "/next.log");
  REQUIRE(next.wait_ready());
  INFO(next.log());
  Attached a(r.cfg);
  CHECK(counter(0) == 4);
}

TEST_CASE("a successor without a data dir adopting a durability full heap: commits no longer wait for a log",
          "[server][durability]") {
  TempDir data;
  Running r({"--data-dir", data.path() + "/d", "--checkpoint-interval", "0", "--durability", "full"});
  {
    Attached a(r.cfg);
    make_counters(1);
    colors::atomically([] {
      colors::Object(colors::List(colors::repository("dur.counters").get()).get(0)).set("balance", colors::Value(1));
    });
  }
  kill9(*r.server);
  ServerProcess plain(r.cfg, r.cfg.args(), r.dir.path() + "/plain.log");  // adopts the heap file
  REQUIRE(plain.wait_ready());
  INFO(plain.log());
  Attached a(r.cfg);
  colors::atomically([] {
    colors::Object(colors::List(colors::repository("dur.counters").get()).get(0)).set("balance", colors::Value(2));
  });
  CHECK(counter(0) == 2);
}

TEST_CASE("the durability flags: parsed, checked, and --durability needs --data-dir", "[server][durability]") {
  auto parse = [](std::vector<std::string> args) {
    args.insert(args.begin(), "colors-server");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    return colors::server::parse_options(static_cast<int>(argv.size()), argv.data());
  };
  auto ok = parse({"--data-dir", "/var/lib/colors", "--durability", "async", "--async-delay", "5", "--checkpoint-interval", "60"});
  REQUIRE(ok.options);
  CHECK(ok.options->data_dir == "/var/lib/colors");
  CHECK(ok.options->durability == colors::detail::DurabilityLevel::kAsync);
  CHECK(ok.options->async_delay_ms == 5);
  CHECK(ok.options->checkpoint_interval_s == 60);
  CHECK(parse({"--data-dir", "/d"}).options->durability == colors::detail::DurabilityLevel::kNone);
  CHECK(parse({"--durability", "full"}).error.find("needs --data-dir") != std::string::npos);
  CHECK(parse({"--data-dir", "/d", "--durability", "fsync"}).error.find("expected full, async or none") != std::string::npos);
  CHECK(parse({"--data-dir", "relative"}).error.find("absolute") != std::string::npos);
  CHECK(parse({"--data-dir", "/d", "--async-delay", "0"}).error.find("--async-delay") != std::string::npos);
}

TEST_CASE("durability full: a commit waiting for the log when the server dies is made durable by the successor",
          "[server][durability]") {
  TempDir data;
  const std::vector<std::string> flags = {"--data-dir", data.path() + "/d", "--checkpoint-interval", "0", "--durability", "full"};
  ::setenv("COLORS_CHECKPOINT_FAULT_HOLD_MS", "60000", 1);  // the first capture holds its clients stopped
  Running r(flags);
  ::unsetenv("COLORS_CHECKPOINT_FAULT_HOLD_MS");
  pid_t kid = ::fork();
  REQUIRE(kid >= 0);
  if (kid == 0) {
    int code = 10;
    try {
      colors::attach(r.cfg.socket);
      make_counters(1);
      colors::atomically([] {  // waits for the capture the server will not finish
        colors::Object(colors::List(colors::repository("dur.counters").get()).get(0)).set("balance", colors::Value(7));
      });
      code = counter(0) == 7 ? 0 : 11;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      code = 12;
    }
    ::_exit(code);
  }
  REQUIRE(eventually([&] { return stopped(kid); }, 20000));  // inside the held capture
  kill9(*r.server);
  ServerProcess next(r.cfg, r.cfg.args(flags), r.dir.path() + "/next.log");  // adopts the heap file
  REQUIRE(next.wait_ready());
  int status = -1;
  const bool ended = eventually([&] { return ::waitpid(kid, &status, WNOHANG) == kid; }, 20000);
  if (!ended) {
    ::kill(kid, SIGKILL);
    ::waitpid(kid, nullptr, 0);
  }
  INFO(next.log());
  REQUIRE(ended);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // the commit returned: the successor's log covers it
  // And it is durable: a reboot keeps it.
  kill9(next);
  REQUIRE(::unlink(r.cfg.shm_path().c_str()) == 0);
  ServerProcess last(r.cfg, r.cfg.args(flags), r.dir.path() + "/last.log");
  REQUIRE(last.wait_ready());
  Attached a(r.cfg);
  CHECK(counter(0) == 7);
}

namespace {

void set_counter(std::int64_t v) {
  colors::atomically([v] {
    colors::Object(colors::List(colors::repository("dur.counters").get()).get(0)).set("balance", colors::Value(v));
  });
}

std::string log_file(const std::string& dir, std::uint64_t seq) {
  char name[64];
  std::snprintf(name, sizeof name, "/log-%020llu.wal", static_cast<unsigned long long>(seq));
  return dir + name;
}

std::string checkpoint_file(const std::string& dir, std::uint64_t seq) {
  char name[64];
  std::snprintf(name, sizeof name, "/checkpoint-%020llu.ckpt", static_cast<unsigned long long>(seq));
  return dir + name;
}

// A server's flags for data directory `dir` under --durability full, checkpoints on demand only.
std::vector<std::string> full_flags(const std::string& dir) {
  return {"--data-dir", dir, "--checkpoint-interval", "0", "--durability", "full"};
}

}  // namespace

TEST_CASE("a log left under a checkpoint number that comes back is not replayed onto the new checkpoint",
          "[server][durability]") {
  // Checkpoint 2 and its log of 20 commits; checkpoint 2 is then deleted and the heap lost. The
  // restore (checkpoint 1) is right; the next checkpoint takes number 2 again, and the old log-2
  // was replayed onto it at the following restore: the counter went back to the old history's 20.
  TempDir data;
  const std::string dir = data.path() + "/d";
  const std::vector<std::string> flags = full_flags(dir);
  Running r(flags);
  {
    Attached a(r.cfg);
    make_counters(1);
    set_counter(1);  // the first capture: checkpoint 1
    REQUIRE(colors::checkpoint() == 2);
    for (int i = 2; i <= 20; ++i) set_counter(i);  // log-2
  }
  reboot(*r.server, r.cfg);
  REQUIRE(file_size(log_file(dir, 2)) > 0);
  REQUIRE(::unlink(checkpoint_file(dir, 2).c_str()) == 0);
  {
    ServerProcess next(r.cfg, r.cfg.args(flags), r.dir.path() + "/next.log");
    REQUIRE(next.wait_ready());
    INFO(next.log());
    Attached a(r.cfg);
    CHECK(counter(0) == 1);
    set_counter(100);  // the restored heap's first capture: a checkpoint, number 2 again
    CHECK(::access(checkpoint_file(dir, 2).c_str(), F_OK) == 0);
    reboot(next, r.cfg);
  }
  ServerProcess last(r.cfg, r.cfg.args(flags), r.dir.path() + "/last.log");
  REQUIRE(last.wait_ready());
  INFO(last.log());
  Attached a(r.cfg);
  CHECK(counter(0) == 100);
  colors::VerifyResult v = colors::verify_heap();
  INFO(v.report);
  CHECK(v.ok);
}

TEST_CASE("a server killed in the middle of a restore leaves no heap: the next start restores again, log included",
          "[server][durability]") {
  // The restore wrote the checkpoint straight into the heap file; killed before the log's replay,
  // it left a heap without the log's commits, which the next start adopted as a dead server's.
  TempDir data;
  const std::string dir = data.path() + "/d";
  const std::vector<std::string> flags = full_flags(dir);
  Running r(flags);
  {
    Attached a(r.cfg);
    make_counters(1);
    for (int i = 1; i <= 10; ++i) set_counter(i);  // checkpoint 1, then log-1
  }
  reboot(*r.server, r.cfg);
  {
    ::setenv("COLORS_RESTORE_PAUSE_MS", "20000", 1);
    ServerProcess pausing(r.cfg, r.cfg.args(flags), r.dir.path() + "/pausing.log");
    ::unsetenv("COLORS_RESTORE_PAUSE_MS");
    REQUIRE(eventually([&] { return pausing.log().find("COLORS_RESTORE_PAUSE_MS") != std::string::npos; }, 10000));
    kill9(pausing);
  }
  ServerProcess next(r.cfg, r.cfg.args(flags), r.dir.path() + "/next.log");
  REQUIRE(next.wait_ready());
  INFO(next.log());
  CHECK(next.log().find("restored checkpoint 1") != std::string::npos);
  Attached a(r.cfg);
  CHECK(counter(0) == 10);
}

TEST_CASE("a log growth that fails on a full disk gives the space it took back", "[server][durability]") {
  // The growth wrote zeros until the disk was full and kept them: on a nearly full disk they held
  // the last free bytes, and the full checkpoint that must follow failed for good.
  TempDir data;
  const std::string dir = data.path() + "/d";
  const std::vector<std::string> flags = full_flags(dir);
  const std::string switch_file = data.path() + "/disk-full";
  ::setenv("COLORS_DATA_DIR_FAULT_FULL", switch_file.c_str(), 1);
  Running r(flags);
  ::unsetenv("COLORS_DATA_DIR_FAULT_FULL");
  Attached a(r.cfg);
  make_counters(1);
  set_counter(1);  // checkpoint 1
  { std::ofstream(switch_file) << "full\n"; }
  CHECK_THROWS_AS(set_counter(2), colors::DurabilityError);  // the log's first growth fails part way
  INFO(r.server->log());
  const std::string log = log_file(dir, 1);
  CHECK((::access(log.c_str(), F_OK) != 0 || file_size(log) == 0));
  REQUIRE(::unlink(switch_file.c_str()) == 0);
  set_counter(3);
  CHECK(counter(0) == 3);
}

TEST_CASE("a stop whose shutdown checkpoint fails keeps the heap for the next server, which has every write",
          "[server][durability]") {
  // SIGTERM without --keep-heap removed the heap even when its last checkpoint could not be
  // written, and exited 0: what was written since the newest checkpoint on disk was lost.
  TempDir data;
  const std::string dir = data.path() + "/d";
  const std::vector<std::string> flags = {"--data-dir", dir, "--checkpoint-interval", "0"};
  const std::string switch_file = data.path() + "/disk-full";
  ::setenv("COLORS_DATA_DIR_FAULT_FULL", switch_file.c_str(), 1);
  Running r(flags);
  ::unsetenv("COLORS_DATA_DIR_FAULT_FULL");
  {
    Attached a(r.cfg);
    make_counters(1);
    set_counter(1);
    REQUIRE(colors::checkpoint() == 1);
    set_counter(2);  // in no checkpoint
  }
  { std::ofstream(switch_file) << "full\n"; }
  r.server->signal(SIGTERM);
  CHECK(r.server->wait_exit(20000) == 4);
  INFO(r.server->log());
  CHECK(r.server->log().find("the shutdown checkpoint failed") != std::string::npos);
  REQUIRE(::access(r.cfg.shm_path().c_str(), F_OK) == 0);
  REQUIRE(::unlink(switch_file.c_str()) == 0);
  ServerProcess next(r.cfg, r.cfg.args(flags), r.dir.path() + "/next.log");
  REQUIRE(next.wait_ready());
  INFO(next.log());
  CHECK(next.log().find("adopted") != std::string::npos);
  Attached a(r.cfg);
  CHECK(counter(0) == 2);
}
