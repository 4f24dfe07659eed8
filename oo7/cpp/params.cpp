#include "params.hpp"

#include <colors/errors.hpp>

namespace oo7 {

Params params_for(std::string_view size) {
  if (size == "small") return Params{"small", 20, 3, 2000, 500, 3, 7, 3};
  if (size == "medium") return Params{"medium", 200, 3, 20000, 500, 3, 7, 3};
  throw colors::InvalidArgumentError("unknown OO7 size '" + std::string(size) + "': use small or medium");
}

}  // namespace oo7
