// `colors`: commands an operator runs against a running colors-server, as a client of it.
//
//   colors checkpoint [--socket PATH]   asks for a checkpoint (--data-dir) and prints its number
//   colors ping [--socket PATH]         checks that the server answers
//
// The socket is PATH, else $COLORS_SOCKET, else the default (libshared/src/server_link.hpp).
//   colors --help                       prints this usage
// Exit codes: 0 done (and for --help), 1 the server refused or failed (the message says why),
// 2 bad usage.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "colors/colors.hpp"
#include "colors/errors.hpp"

namespace {
constexpr const char* kUsage =
    "usage: colors checkpoint [--socket PATH]   ask the server for a checkpoint (--data-dir)\n"
    "       colors ping [--socket PATH]         check that the server answers\n"
    "       colors --help\n"
    "PATH: the server's socket, else $COLORS_SOCKET, else the default socket.\n";
int usage() {
  std::fputs(kUsage, stderr);
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    }
  }
  const std::string command = argv[1];
  std::string socket;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
      socket = argv[++i];
    } else if (std::strncmp(argv[i], "--socket=", 9) == 0) {
      socket = argv[i] + 9;
    } else {
      return usage();
    }
  }
  if (command != "checkpoint" && command != "ping") return usage();
  try {
    colors::attach(socket);
    if (command == "checkpoint") {
      std::printf("checkpoint %llu written\n", static_cast<unsigned long long>(colors::checkpoint()));
    } else {
      colors::ping();
      std::printf("the server answers\n");
    }
    colors::detach();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "colors %s: %s\n", command.c_str(), e.what());
    return 1;
  }
}
