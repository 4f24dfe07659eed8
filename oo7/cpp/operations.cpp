#include "operations.hpp"

#include <colors/errors.hpp>

namespace oo7 {

Op op_from_name(std::string_view name) {
  if (name == "t1") return Op::kT1;
  if (name == "t6") return Op::kT6;
  if (name == "t2a") return Op::kT2a;
  if (name == "t2b") return Op::kT2b;
  if (name == "t2c") return Op::kT2c;
  if (name == "q7") return Op::kQ7;
  throw colors::InvalidArgumentError("unknown OO7 operation '" + std::string(name) + "': use t1, t6, t2a, t2b, t2c, q7, q1, q2 or q3");
}

const char* op_name(Op op) {
  switch (op) {
    case Op::kT1: return "t1";
    case Op::kT6: return "t6";
    case Op::kT2a: return "t2a";
    case Op::kT2b: return "t2b";
    case Op::kT2c: return "t2c";
    case Op::kQ7: return "q7";
  }
  return "?";
}

}  // namespace oo7
