// The heap survives its server (colors-server/README.md, "Surviving the server"): a successor
// adopts the heap a killed server left, checks it first and refuses a damaged one (set aside,
// never deleted); attached clients keep working while no server runs and reattach to the
// successor by themselves with their slots, roots and objects.
#include <signal.h>
#include <sys/stat.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <glob.h>
#include <cstddef>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "colors/colors.hpp"
#include "colors/errors.hpp"
#include "collector_barrier.hpp"
#include "layout.hpp"
#include "protocol.hpp"
#include "segment.hpp"
#include "session.hpp"
#include "server_link.hpp"
#include "server_process.hpp"
#include "server_test_util.hpp"

using namespace colors::test;
using colors::ServerGoneError;

namespace {

// Attaches this process to `cfg`'s server; detaches at scope end.
std::string item(int i) { return "item-" + std::to_string(i) + std::string(static_cast<std::size_t>(i % 7) * 5, '#'); }

// A graph of n user objects in a list under repository `name`: object i has name item(i), a value
// i and a map {"i": i}.
void write_graph(const std::string& name, int n) {
  colors::Class cls = colors::define_class("survival.Node", {{"name", colors::TypeKind::kString, ""},
                                                             {"value", colors::TypeKind::kInteger, ""},
                                                             {"props", colors::TypeKind::kMap, ""}});
  colors::List list = colors::new_list();
  for (int i = 0; i < n; ++i) {
    colors::Object o = colors::new_object(cls);
    o.set("name", colors::Value(item(i)));
    o.set("value", colors::Value(i));
    colors::Map props = colors::new_map();
    props.put(colors::Value("i"), colors::Value(i));
    o.set("props", props);
    list.append(o);
  }
  colors::repository(name).set(list);
}

// Empty when object i of the list is as write_graph wrote it, with value i + delta.
std::string check_node(const colors::List& list, int i, int delta) {
  colors::Object o(list.get(static_cast<std::size_t>(i)));
  if (o.get("name").as_string() != item(i)) return "node " + std::to_string(i) + " has name " + o.get("name").as_string();
  if (o.get("value").as_int() != i + delta) return "node " + std::to_string(i) + " has value " + std::to_string(o.get("value").as_int());
  colors::Map props(o.get("props"));
  if (props.at(colors::Value("i")).as_int() != i) return "node " + std::to_string(i) + " lost its map";
  return {};
}

std::string file_bytes(const std::string& path) { return read_file(path); }

std::vector<std::string> rejected_files(const ServerConfig& cfg) {
  std::vector<std::string> out;
  glob_t g{};
  if (::glob((cfg.shm_path() + ".rejected-*").c_str(), 0, nullptr, &g) == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  return out;
}

}  // namespace

TEST_CASE("a client survives its server's kill -9, works on while none runs and reattaches to the successor",
          "[server][survival]") {
  Running r({"--heap-size", "32M"});
  Attached a(r.cfg);
  const int n = 2000;
  write_graph("survival.graph", n);
  colors::List list(colors::repository("survival.graph").get());
  const std::uint32_t slot_before = colors::detail::current_client_slot();
  const std::uint32_t id_before = colors::detail::current_client_id();

  kill9(*r.server);
  REQUIRE(eventually([] { return !colors::is_attached(); }, 2000));

  // No server: reads, writes, containers and allocation go on.
  for (int i = 0; i < n; ++i) REQUIRE(check_node(list, i, 0).empty());
  for (int i = 0; i < n; i += 2) colors::Object(list.get(static_cast<std::size_t>(i))).set("value", colors::Value(i + 1));
  colors::List gap = colors::new_list();
  for (int i = 0; i < 3000; ++i) gap.append(colors::Value("written while no server ran " + std::to_string(i)));
  colors::Object(list.get(0)).set("name", colors::Value(item(0)));  // same value, a new string
  colors::Map extra = colors::new_map();
  extra.put(colors::Value("gap"), gap);
  list.append(extra);

  ServerProcess next(r.cfg, r.cfg.args({"--heap-size", "32M"}), r.dir.path() + "/next.log");
  REQUIRE(next.wait_ready());
  INFO(next.log());
  CHECK(next.log().find("adopted the heap " + r.cfg.shm_path()) != std::string::npos);
  CHECK(next.log().find("1 live client(s) keep their slots") != std::string::npos);

  // The next call that needs the server reattaches by itself, as the same client.
  colors::Repository repo = colors::repository("survival.graph");
  CHECK(colors::is_attached());
  CHECK(colors::detail::current_client_slot() == slot_before);
  CHECK(colors::detail::current_client_id() == id_before);
  CHECK(eventually([&] { return read_file(r.dir.path() + "/next.log").find("reattached in slot " + std::to_string(slot_before)) != std::string::npos; }, 2000));
  colors::collect(30000);
  colors::collect(30000);
  colors::List again(repo.get());
  REQUIRE(again.size() == static_cast<std::size_t>(n + 1));
  for (int i = 0; i < n; ++i) REQUIRE(check_node(again, i, i % 2 == 0 ? 1 : 0).empty());
  colors::List gap_again(colors::Map(again.get(static_cast<std::size_t>(n))).at(colors::Value("gap")));
  REQUIRE(gap_again.size() == 3000);
  for (int i = 0; i < 3000; i += 499)
    CHECK(gap_again.get(static_cast<std::size_t>(i)).as_string() == "written while no server ran " + std::to_string(i));
  colors::VerifyResult v = colors::verify_heap();
  INFO(v.report);
  CHECK(v.ok);

  // A second client of the successor sees the whole graph.
  ChildResult child = run_in_child([&](std::string& out) {
    colors::attach(r.cfg.socket);
    colors::List l(colors::repository("survival.graph").get());
    if (l.size() != static_cast<std::size_t>(n + 1)) {
      out = "size " + std::to_string(l.size());
      return 1;
    }
    for (int i = 0; i < n; ++i)
      if (std::string e = check_node(l, i, i % 2 == 0 ? 1 : 0); !e.empty()) {
        out = e;
        return 1;
      }
    colors::detach();
    return 0;
  });
  INFO(child.output);
  CHECK(child.exit_code == 0);
}

// Replaces random elements of `list` with new strings and makes garbage until `stop()`;
// version[i] is the step whose string element i holds (-1: the initial item(i)). Calls that need
// a server wait for the successor, so this runs on through server kills.
template <typename Stop>
void churn(colors::List& list, std::vector<int>& version, unsigned seed, Stop stop) {
  std::mt19937 rng(seed);
  const int n = static_cast<int>(version.size());
  for (int step = 0; !stop(); ++step) {
    const int i = static_cast<int>(rng() % static_cast<unsigned>(n));
    list.set(static_cast<std::size_t>(i), colors::Value(item(i) + "/" + std::to_string(step)));
    version[static_cast<std::size_t>(i)] = step;
    colors::Value garbage(std::string(200 + rng() % 2000, 'g'));
  }
}

std::string check_churned(const colors::List& list, const std::vector<int>& version) {
  for (std::size_t i = 0; i < version.size(); ++i) {
    const int k = static_cast<int>(i);
    const std::string want = version[i] < 0 ? item(k) : item(k) + "/" + std::to_string(version[i]);
    if (list.get(i).as_string() != want) return "element " + std::to_string(i) + " is " + list.get(i).as_string() + ", not " + want;
  }
  return {};
}

colors::List churn_list(const std::string& repo, int n) {
  colors::List list = colors::new_list();
  for (int i = 0; i < n; ++i) list.append(colors::Value(item(i)));
  colors::repository(repo).set(list);
  return list;
}

TEST_CASE("a server killed mid-collection, again and again: the successor finishes or abandons the cycle, nothing reachable is lost",
          "[server][survival]") {
  // Cycles back to back: a cycle every 64 KiB allocated, freed memory poisoned, verifier after each.
  const std::vector<std::string> flags = {"--heap-size", "16M", "--gc-pacing", "1", "--gc-min-trigger", "64K",
                                          "--gc-debug"};
  const char* kills_env = std::getenv("SURVIVAL_KILLS");  // more kills for a longer run
  const int kills = kills_env != nullptr ? std::atoi(kills_env) : 4;
  Running r(flags);
  const int n = 500;

  // A second client process churns its own list and checks it itself at the end.
  int stop_pipe[2];
  REQUIRE(::pipe(stop_pipe) == 0);
  pid_t kid = ::fork();
  REQUIRE(kid >= 0);
  if (kid == 0) {
    ::close(stop_pipe[1]);
    int code = 0;
    try {
      colors::attach(r.cfg.socket);
      colors::List list = churn_list("survival.churn.child", n);
      std::vector<int> version(static_cast<std::size_t>(n), -1);
      int polls = 0;
      churn(list, version, 1234, [&] {
        if (++polls % 64 != 0) return false;
        pollfd p{stop_pipe[0], POLLIN, 0};
        return ::poll(&p, 1, 0) > 0;
      });
      colors::collect(30000);
      if (!check_churned(list, version).empty()) code = 1;
      else if (!check_churned(colors::List(colors::repository("survival.churn.child").get()), version).empty()) code = 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "churn child: %s\n", e.what());
      code = 3;
    }
    ::_exit(code);
  }
  ::close(stop_pipe[0]);

  Attached a(r.cfg);
  colors::List list = churn_list("survival.churn", n);
  std::vector<int> version(static_cast<std::size_t>(n), -1);
  std::atomic<bool> stop{false};
  std::string mutator_error;
  std::thread mutator([&] {
    try {
      churn(list, version, 42, [&] { return stop.load(); });
    } catch (const std::exception& e) {
      mutator_error = e.what();
    }
  });

  std::mt19937 rng(7);
  std::string recoveries;
  std::unique_ptr<ServerProcess> server = std::move(r.server);
  for (int round = 0; round < kills; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50 + rng() % 300));
    kill9(*server);
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 100));
    server = std::make_unique<ServerProcess>(r.cfg, r.cfg.args(flags), r.dir.path() + "/round" + std::to_string(round) + ".log");
    INFO(server->log());
    REQUIRE(server->wait_ready());
    std::string log = server->log();
    REQUIRE(log.find("adopted the heap") != std::string::npos);
    for (const char* what : {"finished the sweep", "abandoned the marking", "no cycle was interrupted"})
      if (log.find(what) != std::string::npos) recoveries += std::string(what) + "; ";
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  stop.store(true);
  mutator.join();
  REQUIRE(::write(stop_pipe[1], "s", 1) == 1);
  int status = 0;
  REQUIRE(::waitpid(kid, &status, 0) == kid);
  ::close(stop_pipe[1]);
  INFO("recoveries: " << recoveries);
  INFO("mutator: " << mutator_error);
  REQUIRE(mutator_error.empty());
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  colors::collect(30000);
  const std::string wrong = check_churned(list, version);
  INFO(wrong);
  CHECK(wrong.empty());
  // The child's TLABs are reclaimed by the server once it sees its connection close, which may
  // come after waitpid: the heap verifies once that is done.
  colors::VerifyResult v{false, ""};
  CHECK(eventually([&] { return (v = colors::verify_heap()).ok; }, 10000));
  INFO(v.report);
  CHECK(v.ok);
  CHECK(server->log().find("gc cycle") != std::string::npos);
}

TEST_CASE("a damaged heap is refused with what failed, set aside and never deleted", "[server][survival]") {
  TempDir dir;
  ServerConfig cfg = ServerConfig::fresh(dir.path());
  LeftoverCleaner cleaner{cfg};
  const std::size_t objects_at = colors::detail::metadata_size() + (4u << 20);  // classes space: 4M

  struct Damage {
    const char* what;
    std::function<void(std::fstream&)> apply;
    const char* expect;
  };
  const Damage damages[] = {
      {"a flipped byte of the header", [](std::fstream& f) {
         f.seekp(offsetof(colors::detail::Metadata, objects_end) + 2);
         char c = 0;
         f.seekg(offsetof(colors::detail::Metadata, objects_end) + 2);
         f.read(&c, 1);
         c = static_cast<char>(c ^ 0x10);
         f.seekp(offsetof(colors::detail::Metadata, objects_end) + 2);
         f.write(&c, 1);
       },
       "the header checksum does not match"},
      {"another layout version", [](std::fstream& f) {
         std::uint32_t v = colors::kLayoutVersion + 1;
         f.seekp(offsetof(colors::detail::Metadata, layout_version));
         f.write(reinterpret_cast<const char*>(&v), sizeof v);
       },
       nullptr},
      {"a client slot in an unknown state", [](std::fstream& f) {
         std::uint32_t st = 7;
         f.seekp(static_cast<std::streamoff>(offsetof(colors::detail::Metadata, clients) + 3 * sizeof(colors::detail::ClientSlot)));
         f.write(reinterpret_cast<const char*>(&st), sizeof st);
       },
       "client slot 3 has unknown state 7"},
      {"a zeroed block header in the objects space", [objects_at](std::fstream& f) {
         std::uint64_t zero = 0;
         f.seekp(static_cast<std::streamoff>(objects_at));
         f.write(reinterpret_cast<const char*>(&zero), sizeof zero);
       },
       "has an unknown kind"},
  };
  const std::string layout_msg = "the heap has layout version " + std::to_string(colors::kLayoutVersion + 1) +
                                 ", this server uses layout version " + std::to_string(colors::kLayoutVersion);
  int round = 0;
  for (const Damage& d : damages) {
    SECTION(d.what) {
      {
        ServerProcess first(cfg, cfg.args(), dir.path() + "/first" + std::to_string(round) + ".log");
        REQUIRE(first.wait_ready());
        kill9(first);
      }
      {
        std::fstream f(cfg.shm_path(), std::ios::in | std::ios::out | std::ios::binary);
        REQUIRE(f.good());
        d.apply(f);
      }
      const std::string damaged = file_bytes(cfg.shm_path());
      ServerProcess next(cfg, cfg.args(), dir.path() + "/next" + std::to_string(round) + ".log");
      CHECK(!next.wait_ready(3000));
      CHECK(next.wait_exit(5000) == 3);
      const std::string log = next.log();
      INFO(log);
      CHECK(log.find("refusing the heap " + cfg.shm_path()) != std::string::npos);
      CHECK(log.find(d.expect != nullptr ? std::string(d.expect) : layout_msg) != std::string::npos);
      CHECK(!path_exists(cfg.shm_path()));
      std::vector<std::string> aside = rejected_files(cfg);
      REQUIRE(aside.size() == 1);
      CHECK(log.find("Kept it as " + aside[0]) != std::string::npos);
      CHECK(file_bytes(aside[0]) == damaged);  // set aside untouched

      // The name is free again: the next start formats a fresh heap.
      ServerProcess fresh(cfg, cfg.args(), dir.path() + "/fresh" + std::to_string(round) + ".log");
      CHECK(fresh.wait_ready());
      CHECK(rejected_files(cfg).size() == 1);
    }
    ++round;
  }
}

TEST_CASE("a SIGTERM with --keep-heap keeps the heap and the clients' slots for a successor", "[server][survival]") {
  Running r({"--keep-heap"});
  Attached a(r.cfg);
  write_graph("survival.keep", 100);
  colors::List list(colors::repository("survival.keep").get());

  r.server->signal(SIGTERM);
  REQUIRE(r.server->wait_exit(5000) == 0);
  INFO(r.server->log());
  CHECK(r.server->log().find("kept for a successor") != std::string::npos);
  REQUIRE(path_exists(r.cfg.shm_path()));
  REQUIRE(eventually([] { return !colors::is_attached(); }, 2000));
  // A planned stop with --keep-heap is not a shutdown for the clients: they work on.
  colors::Object(list.get(5)).set("value", colors::Value(1005));

  ServerProcess next(r.cfg, r.cfg.args(), r.dir.path() + "/next.log");
  REQUIRE(next.wait_ready());
  INFO(next.log());
  CHECK(next.log().find("1 live client(s) keep their slots") != std::string::npos);
  colors::List again(colors::repository("survival.keep").get());
  CHECK(colors::is_attached());
  REQUIRE(again.size() == 100);
  for (int i = 0; i < 100; ++i) REQUIRE(check_node(again, i, i == 5 ? 1000 : 0).empty());

  // Without --keep-heap the successor removes the heap at SIGTERM, as before.
  next.signal(SIGTERM);
  REQUIRE(next.wait_exit(5000) == 0);
  CHECK(!path_exists(r.cfg.shm_path()));
}

TEST_CASE("no successor: what needs the server fails with ServerGoneError after the attach timeout", "[server][survival]") {
  Running r;
  Attached a(r.cfg);
  colors::List list = colors::new_list();
  list.append(colors::Value(1));
  kill9(*r.server);
  REQUIRE(eventually([] { return !colors::is_attached(); }, 2000));
  ::setenv("COLORS_ATTACH_TIMEOUT_MS", "400", 1);
  auto t0 = std::chrono::steady_clock::now();
  try {
    colors::repository("survival.none");
    FAIL("a repository without a server");
  } catch (const ServerGoneError& e) {
    std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("no successor") != std::string::npos);
  }
  CHECK(ms_since(t0) >= 390);
  CHECK_THROWS_AS(colors::collect(1000), ServerGoneError);
  ::unsetenv("COLORS_ATTACH_TIMEOUT_MS");
  CHECK(list.get(0).as_int() == 1);  // what it holds stays readable
}

TEST_CASE("a successor with --fresh-heap: clients of the discarded heap are told at once, and attach() starts over", "[server][survival]") {
  Running r;
  Attached a(r.cfg);
  colors::repository("survival.fresh").set(colors::Value("old"));
  kill9(*r.server);
  REQUIRE(eventually([] { return !colors::is_attached(); }, 2000));
  ServerProcess next(r.cfg, r.cfg.args({"--fresh-heap"}), r.dir.path() + "/next.log");
  REQUIRE(next.wait_ready());
  auto t0 = std::chrono::steady_clock::now();
  try {
    colors::repository("survival.fresh");
    FAIL("reattached to another heap");
  } catch (const ServerGoneError& e) {
    std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("not the client's heap") != std::string::npos);
  }
  CHECK(ms_since(t0) < 3000);  // refused, not timed out
  colors::attach(r.cfg.socket);
  CHECK(colors::repository("survival.fresh").get().is_null());
}

TEST_CASE("a reattach is granted only to the slot's own process, for the same heap", "[server][survival]") {
  Running r;
  Attached a(r.cfg);
  const std::uint32_t slot = colors::detail::current_client_slot();
  const std::uint32_t id = colors::detail::current_client_id();
  const std::uint64_t heap = colors::detail::current_meta()->heap_id;
  Hello h{kWireMagic, colors::kProtocolVersion, colors::kLayoutVersion, ::getpid()};
  h.mode = HelloMode::kReattach;
  h.slot = slot;
  h.client_id = id;
  h.heap_id = heap ^ 1;
  AttachReply rep = raw_handshake(r.cfg.socket, h);
  CHECK(rep.status == AttachStatus::kNotReattached);
  CHECK(rep.message.find("not the client's heap") != std::string::npos);
  h.heap_id = heap;
  rep = raw_handshake(r.cfg.socket, h);  // our own slot, but attached on our live connection
  CHECK(rep.status == AttachStatus::kNotReattached);
  CHECK(rep.message.find("attached on another connection") != std::string::npos);
  h.client_id = id + 1000;
  rep = raw_handshake(r.cfg.socket, h);
  CHECK(rep.status == AttachStatus::kNotReattached);
  CHECK(rep.message.find("no longer belongs to client") != std::string::npos);
  // Another process asking for our slot.
  ChildResult child = run_in_child([&](std::string& out) {
    Hello c = h;
    c.client_id = id;
    c.pid = ::getpid();
    int fd = try_raw_connect(r.cfg.socket);
    auto bytes = encode_hello(c);
    write_full(fd, bytes.data(), bytes.size(), 5000);
    AttachReply cr;
    if (read_reply(fd, cr, 10000) != IoResult::kOk) return 2;
    out = cr.message;
    return cr.status == AttachStatus::kNotReattached ? 0 : 1;
  });
  INFO(child.output);
  CHECK(child.exit_code == 0);
  CHECK(child.output.find("belongs to pid " + std::to_string(::getpid())) != std::string::npos);
  CHECK(colors::is_attached());
}

TEST_CASE("a kept client that ends before reattaching has its slot and TLABs reclaimed by the successor",
          "[server][survival]") {
  Running r;
  int go[2], ready[2];
  REQUIRE(::pipe(go) == 0);
  REQUIRE(::pipe(ready) == 0);
  pid_t kid = ::fork();
  REQUIRE(kid >= 0);
  if (kid == 0) {
    int code = 0;
    try {
      colors::attach(r.cfg.socket);
      colors::List l = colors::new_list();  // a TLAB of its own
      l.append(colors::Value("kid"));
      char c = 'r';
      if (::write(ready[1], &c, 1) != 1) code = 2;
      if (::read(go[0], &c, 1) != 1) code = 3;  // the successor has adopted the heap
    } catch (const std::exception&) {
      code = 1;
    }
    ::_exit(code);  // without detaching, while no server knows it
  }
  char c;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  kill9(*r.server);
  ServerProcess next(r.cfg, r.cfg.args(), r.dir.path() + "/next.log");
  REQUIRE(next.wait_ready());
  CHECK(next.log().find("1 live client(s) keep their slots") != std::string::npos);
  REQUIRE(::write(go[1], &c, 1) == 1);
  int status = 0;
  REQUIRE(::waitpid(kid, &status, 0) == kid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  const std::string log_path = r.dir.path() + "/next.log";
  CHECK(eventually([&] { return read_file(log_path).find("ended without reattaching") != std::string::npos; }, 5000));
  INFO(read_file(log_path));
  // Its TLAB went back to the heap: the quiescent verifier accepts only active clients' TLABs.
  Attached a(r.cfg);
  colors::VerifyResult v = colors::verify_heap();
  INFO(v.report);
  CHECK(v.ok);
  for (int fd : {go[0], go[1], ready[0], ready[1]}) ::close(fd);
}

TEST_CASE("threads blocked or busy through a server's kill -9 go on with the successor: one reattach for all",
          "[server][survival]") {
  Running r;
  Attached a(r.cfg);
  colors::Channel ch = colors::channel("survival.blocked", 4);
  const std::uint32_t slot = colors::detail::current_client_slot();
  std::atomic<bool> received{false};
  std::string receive_error;
  std::thread receiver([&] {
    try {
      std::optional<colors::Value> v = ch.receive(30000);  // blocked across the kill and the restart
      received.store(v.has_value() && v->as_string() == "after the restart");
    } catch (const std::exception& e) {
      receive_error = e.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  kill9(*r.server);
  REQUIRE(eventually([] { return !colors::is_attached(); }, 2000));

  // Several threads need the server at once while none runs: they all wait, one reattaches.
  std::vector<std::thread> callers;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&, t] {
      try {
        colors::repository("survival.thread" + std::to_string(t)).set(colors::Value(t));
        ok.fetch_add(1);
      } catch (const std::exception&) {
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ServerProcess next(r.cfg, r.cfg.args(), r.dir.path() + "/next.log");
  REQUIRE(next.wait_ready());
  for (std::thread& t : callers) t.join();
  CHECK(ok.load() == 4);
  CHECK(colors::detail::current_client_slot() == slot);
  ch.send(colors::Value("after the restart"), 5000);
  receiver.join();
  INFO(receive_error);
  CHECK(received.load());
  const std::string log = read_file(r.dir.path() + "/next.log");
  INFO(log);
  std::size_t reattaches = 0;
  for (std::size_t at = log.find("reattached in slot"); at != std::string::npos; at = log.find("reattached in slot", at + 1))
    ++reattaches;
  CHECK(reattaches == 1);
  for (int t = 0; t < 4; ++t) CHECK(colors::repository("survival.thread" + std::to_string(t)).get().as_int() == t);
}

// Transactions and a server's death (colors-server/README.md, "Surviving the server"): a live
// client's transaction goes on through the restart and commits; one of a client that died while
// no server ran is rolled back by the successor when it adopts the heap.
TEST_CASE("transactions through a server's kill -9: a live client's commits, a dead client's is rolled back by the successor",
          "[server][survival]") {
  Running r;
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  colors::Class cls = [&] {
    Attached a(r.cfg);
    colors::Class c = colors::define_class("survival.Account", {{"balance", colors::TypeKind::kInteger, ""}});
    colors::List accounts = colors::new_list();
    for (int i = 0; i < 2; ++i) {
      colors::Object o = colors::new_object(c);
      o.set("balance", colors::Value(100));
      accounts.append(o);
    }
    colors::repository("survival.accounts").set(accounts);
    return c;
  }();
  (void)cls;
  pid_t kid = ::fork();
  REQUIRE(kid >= 0);
  if (kid == 0) {
    int code = 0;
    try {
      colors::attach(r.cfg.socket);
      colors::List accounts(colors::repository("survival.accounts").get());
      colors::Transaction tx;  // never committed: its process dies while no server runs
      colors::Object(accounts.get(1)).set("balance", colors::Value(-1));
      char c = 'r';
      if (::write(ready[1], &c, 1) != 1) code = 2;
      ::pause();
    } catch (const std::exception&) {
      code = 1;
    }
    ::_exit(code);
  }
  char c;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  Attached a(r.cfg);
  colors::List accounts(colors::repository("survival.accounts").get());
  {
    colors::Transaction tx;
    colors::Object(accounts.get(0)).set("balance", colors::Value(7));
    kill9(*r.server);
    ::kill(kid, SIGKILL);
    int status = 0;
    REQUIRE(::waitpid(kid, &status, 0) == kid);
    ServerProcess next(r.cfg, r.cfg.args(), r.dir.path() + "/next.log");
    REQUIRE(next.wait_ready());
    INFO(next.log());
    colors::repository("survival.accounts");  // needs the server: reattaches
    tx.commit();                               // the transaction outlived the server, not its attachment
    auto balance = [&](std::size_t i) {
      return colors::atomically([&] { return colors::Object(accounts.get(i)).get("balance").as_int(); });
    };
    CHECK(balance(0) == 7);
    CHECK(balance(1) == 100);  // the dead client's write was rolled back by the successor
    colors::atomically([&] { colors::Object(accounts.get(1)).set("balance", colors::Value(5)); });  // and its lock freed
    CHECK(balance(1) == 5);
    colors::VerifyResult v = colors::verify_heap();
    INFO(v.report);
    CHECK(v.ok);
  }
  for (int fd : {ready[0], ready[1]}) ::close(fd);
}

// Roots without a fence (libshared/src/collector_barrier.hpp): a client takes them only while its
// server's collector issues membarrier after each flip, and a successor that cannot issue it
// refuses a heap whose clients may be relying on it.
namespace {

// Runs a collection, then checks every node of write_graph's graph `name` of n nodes.
void collect_and_check_graph(const std::string& name, int n) {
  colors::collect();
  colors::List list(colors::repository(name).get());
  for (int i = 0; i < n; ++i) REQUIRE(check_node(list, i, 0).empty());
}

}  // namespace

TEST_CASE("clients take roots without a fence exactly while their collector issues its barrier", "[server][survival]") {
  // This machine's kernel must offer the barrier, or the unfenced paths would go untested here.
  REQUIRE(colors::detail::collector_barrier_available());
  Running r;
  {
    Attached a(r.cfg);
    CHECK(colors::detail::current_meta()->collector_barrier.load() == 1);
    CHECK(colors::detail::g_roots_unfenced.load());
    write_graph("barrier.graph", 200);
    collect_and_check_graph("barrier.graph", 200);
  }
  CHECK_FALSE(colors::detail::g_roots_unfenced.load());  // detached
  ::setenv("COLORS_FENCED_ROOTS", "1", 1);
  {
    Attached a(r.cfg);
    CHECK_FALSE(colors::detail::g_roots_unfenced.load());
    collect_and_check_graph("barrier.graph", 200);
  }
  ::unsetenv("COLORS_FENCED_ROOTS");
}

TEST_CASE("a server without the collector's barrier serves fenced clients, and refuses to adopt a heap whose clients may run unfenced",
          "[server][survival]") {
  TempDir dir;
  ServerConfig cfg = ServerConfig::fresh(dir.path());
  LeftoverCleaner cleaner{cfg};
  ::setenv("COLORS_MEMBARRIER_FAULT", "1", 1);
  {
    ServerProcess plain(cfg, cfg.args(), dir.path() + "/plain.log");
    ::unsetenv("COLORS_MEMBARRIER_FAULT");
    REQUIRE(plain.wait_ready());
    INFO(plain.log());
    {
      Attached a(cfg);
      CHECK(colors::detail::current_meta()->collector_barrier.load() == 0);
      CHECK_FALSE(colors::detail::g_roots_unfenced.load());
      write_graph("barrier.plain", 100);
      collect_and_check_graph("barrier.plain", 100);
    }
    CHECK(plain.log().find("clients take roots with a fence") != std::string::npos);
  }
  // A heap served with the barrier, its server killed: a successor without it refuses the heap and
  // leaves it in place; one with it adopts it.
  ServerProcess first(cfg, cfg.args(), dir.path() + "/first.log");
  REQUIRE(first.wait_ready());
  {
    Attached a(cfg);
    write_graph("barrier.kept", 100);
    colors::detach();
  }
  kill9(first);
  ::setenv("COLORS_MEMBARRIER_FAULT", "1", 1);
  ServerProcess refusing(cfg, cfg.args(), dir.path() + "/refusing.log");
  ::unsetenv("COLORS_MEMBARRIER_FAULT");
  CHECK_FALSE(refusing.wait_ready(3000));
  CHECK(refusing.wait_exit(5000) == 3);
  INFO(refusing.log());
  CHECK(refusing.log().find("cannot adopt this heap: its clients take roots relying on the collector's membarrier") !=
        std::string::npos);
  REQUIRE(path_exists(cfg.shm_path()));
  ServerProcess next(cfg, cfg.args(), dir.path() + "/next.log");
  REQUIRE(next.wait_ready());
  Attached a(cfg);
  colors::List list(colors::repository("barrier.kept").get());
  for (int i = 0; i < 100; ++i) REQUIRE(check_node(list, i, 0).empty());
}
