#include "check.hpp"

#include <string>

#include "colors/errors.hpp"

namespace colors::detail {

void check_failed(const char* file, int line, const char* condition, const char* what) {
  throw CorruptHeapError(std::string("colors invariant broken (") + what + "): " + condition + " is false at " + file +
                         ":" + std::to_string(line) +
                         "; the heap was changed by something that broke its rules (a bug, or a process writing "
                         "the segment directly)");
}

}  // namespace colors::detail
