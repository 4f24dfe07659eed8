#include "queries.hpp"

namespace oo7 {

std::optional<Query> query_from_name(std::string_view name) {
  if (name == "q1") return Query::kQ1;
  if (name == "q2") return Query::kQ2;
  if (name == "q3") return Query::kQ3;
  return std::nullopt;
}

const char* query_name(Query q) {
  switch (q) {
    case Query::kQ1: return "q1";
    case Query::kQ2: return "q2";
    case Query::kQ3: return "q3";
  }
  return "?";
}

}  // namespace oo7
