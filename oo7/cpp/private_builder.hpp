// Builds the private OO7 database (private_model.hpp) with the generator.
#pragma once
#include <cstdint>
#include <memory>

#include "params.hpp"
#include "private_model.hpp"

namespace oo7 {

std::unique_ptr<priv::Database> build_private(const Params& p, std::uint64_t seed);

}  // namespace oo7
