// Builds the shared OO7 database in the attached heap with the generator, through the public C++
// API, and publishes it.
#pragma once
#include <colors/colors.hpp>
#include <cstdint>

#include "params.hpp"
#include "shared_schema.hpp"

namespace oo7 {

// Builds the database and returns its oo7.Database object (rooted by the returned handle; not
// yet published). REQUIRES: attached.
colors::Object build_shared(const Schema& s, const Params& p, std::uint64_t seed);

// Publishes `db` in the repository `oo7.<size>`, replacing what it held.
void publish(const Params& p, const colors::Object& db);

}  // namespace oo7
