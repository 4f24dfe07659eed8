// The OO7 indexes (oo7/README.md "Indexes and queries"): atomic parts by id and by buildDate, as
// shared sorted maps published beside the database, and their private counterparts (the
// baselines of Q1/Q2/Q3).
#pragma once
#include <colors/colors.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "params.hpp"
#include "private_model.hpp"
#include "shared_access.hpp"

namespace oo7 {

// `oo7.<size>.parts_by_id`: id -> oo7.AtomicPart. `oo7.<size>.parts_by_date`: buildDate -> a
// shared list of the parts with that date, in id order.
std::string parts_by_id_repository(const Params& p);
std::string parts_by_date_repository(const Params& p);

struct SharedIndexes {
  colors::SortedMap by_id, by_date;
};

// Builds both maps from composites[*].parts[*] of the shared database (not published).
SharedIndexes build_shared_indexes(const SharedAccess& a);
void publish_indexes(const Params& p, const SharedIndexes& ix);
// The published indexes; nullopt when neither repository holds one (a loader that builds none);
// colors::KeyError when only one does, TypeMismatchError when one holds something else.
std::optional<SharedIndexes> published_indexes(const Params& p);

// What is wrong with `ix` against the database `a` reads: every part indexed exactly once, under
// its id and under its date (in id order within a date), and nothing else. Empty: all is well.
std::vector<std::string> index_problems(const SharedAccess& a, const SharedIndexes& ix);

// The private indexes: the baselines (std::unordered_map for Q1, std::map for Q2/Q3).
struct PrivateIndexes {
  std::unordered_map<std::int64_t, priv::AtomicPart*> by_id;
  std::map<std::int64_t, std::vector<priv::AtomicPart*>> by_date;
};
PrivateIndexes build_private_indexes(const priv::Database& db);

}  // namespace oo7
