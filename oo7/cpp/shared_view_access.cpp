#include "shared_view_access.hpp"

namespace oo7 {

void SharedViewAccess::refuse_update() {
  throw colors::InvalidArgumentError("OO7: updates run through SharedAccess in transactions, not in a read scope");
}

OpResult run_shared_op(const SharedAccess& a, Op op) {
  if (!read_only(op)) return run_op(a, op);
  colors::ReadScope scope;
  return run_op(SharedViewAccess(a), op);
}

}  // namespace oo7
