// colors-server: flag parsing only; the process itself is in server.cpp.
#include <cstdio>

#include "options.hpp"
#include "server.hpp"

int main(int argc, char** argv) {
  colors::server::ParseResult parsed = colors::server::parse_options(argc, argv);
  if (!parsed.options) {
    std::fprintf(stderr, "colors-server: %s\nTry 'colors-server --help'.\n", parsed.error.c_str());
    return 2;
  }
  if (parsed.options->help) {
    std::fputs(colors::server::usage_text().c_str(), stdout);
    return 0;
  }
  return colors::server::run_server(*parsed.options);
}
