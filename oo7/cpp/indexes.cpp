#include "indexes.hpp"

#include <algorithm>
#include <tuple>

namespace oo7 {

std::string parts_by_id_repository(const Params& p) { return p.repository() + ".parts_by_id"; }
std::string parts_by_date_repository(const Params& p) { return p.repository() + ".parts_by_date"; }

namespace {

struct Indexed {
  std::int64_t date, id;
  colors::Object part;
};

// Every atomic part of the database (composites[*].parts[*]) with its date and id.
std::vector<Indexed> all_parts(const SharedAccess& a) {
  std::vector<Indexed> out;
  const auto comps = a.composites();
  for (std::size_t c = 0; c < SharedAccess::size(comps); ++c) {
    const auto parts = a.parts(SharedAccess::at(comps, c));
    for (std::size_t k = 0; k < SharedAccess::size(parts); ++k) {
      auto p = SharedAccess::at(parts, k);
      out.push_back({a.build_date(p), a.id(p), p.obj});
    }
  }
  return out;
}

std::string str(std::int64_t v) { return std::to_string(v); }

}  // namespace

SharedIndexes build_shared_indexes(const SharedAccess& a) {
  std::vector<Indexed> parts = all_parts(a);
  std::sort(parts.begin(), parts.end(),
            [](const Indexed& l, const Indexed& r) { return std::tie(l.date, l.id) < std::tie(r.date, r.id); });
  SharedIndexes ix{colors::new_sorted_map(), colors::new_sorted_map()};
  for (std::size_t i = 0; i < parts.size();) {
    std::size_t j = i;
    while (j < parts.size() && parts[j].date == parts[i].date) ++j;
    colors::List same = colors::new_list(j - i);
    for (std::size_t k = i; k < j; ++k) same.append(parts[k].part);
    ix.by_date.put(colors::Value(static_cast<long long>(parts[i].date)), same);
    i = j;
  }
  for (const Indexed& p : parts) ix.by_id.put(colors::Value(static_cast<long long>(p.id)), p.part);
  return ix;
}

void publish_indexes(const Params& p, const SharedIndexes& ix) {
  colors::repository(parts_by_id_repository(p)).set(ix.by_id);
  colors::repository(parts_by_date_repository(p)).set(ix.by_date);
}

std::optional<SharedIndexes> published_indexes(const Params& p) {
  colors::Value id = colors::repository(parts_by_id_repository(p)).get();
  colors::Value date = colors::repository(parts_by_date_repository(p)).get();
  if (id.is_null() && date.is_null()) return std::nullopt;
  if (id.is_null() || date.is_null())
    throw colors::KeyError("repository '" + (id.is_null() ? parts_by_id_repository(p) : parts_by_date_repository(p)) +
                           "' holds no index while its companion does");
  return SharedIndexes{colors::SortedMap(id), colors::SortedMap(date)};
}

std::vector<std::string> index_problems(const SharedAccess& a, const SharedIndexes& ix) {
  std::vector<std::string> problems;
  auto problem = [&](std::string s) {
    if (problems.size() < 10) problems.push_back(std::move(s));
  };
  const std::vector<Indexed> parts = all_parts(a);

  // By id: one entry per part, the part itself under its id.
  if (ix.by_id.size() != parts.size())
    problem("parts_by_id holds " + std::to_string(ix.by_id.size()) + " entries for " + std::to_string(parts.size()) +
            " atomic parts");
  for (const Indexed& p : parts) {
    std::optional<colors::Value> v = ix.by_id.get(colors::Value(static_cast<long long>(p.id)));
    if (!v) problem("parts_by_id has no entry for part " + str(p.id));
    else if (v->raw() != p.part.raw()) problem("parts_by_id maps " + str(p.id) + " to another object than part " + str(p.id));
  }

  // By date: every part once, in the list under its date, each list in id order.
  std::unordered_map<std::uint64_t, std::int64_t> date_of;  // part (raw reference) -> its key
  std::size_t listed = 0;
  for (const auto& [key, value] : ix.by_date.items()) {
    if (value.kind() != colors::TypeKind::kList) {
      problem("parts_by_date holds a " + value.repr() + " under " + key.repr());
      continue;
    }
    colors::List same(value);
    std::int64_t last_id = 0;
    for (const colors::Value& e : same.items()) {
      ++listed;
      if (!date_of.emplace(e.raw(), key.as_int()).second) problem("parts_by_date lists a part twice");
      if (e.kind() != colors::TypeKind::kObject) {
        problem("parts_by_date lists " + e.repr() + " under " + key.repr());
        continue;
      }
      auto part = SharedAccess::Part{colors::Object(e)};
      if (a.id(part) <= last_id) problem("parts_by_date's list under " + key.repr() + " is not in id order");
      last_id = a.id(part);
    }
  }
  if (listed != parts.size())
    problem("parts_by_date lists " + std::to_string(listed) + " parts for " + std::to_string(parts.size()) + " atomic parts");
  for (const Indexed& p : parts) {
    auto it = date_of.find(p.part.raw());
    if (it == date_of.end()) problem("parts_by_date does not list part " + str(p.id));
    else if (it->second != p.date)
      problem("parts_by_date lists part " + str(p.id) + " under " + str(it->second) + ", its buildDate is " + str(p.date));
  }
  return problems;
}

PrivateIndexes build_private_indexes(const priv::Database& db) {
  PrivateIndexes ix;
  for (const priv::CompositePart* c : db.composites)
    for (priv::AtomicPart* p : c->parts) {
      ix.by_id.emplace(p->id, p);
      ix.by_date[p->build_date].push_back(p);
    }
  for (auto& [date, same] : ix.by_date)
    std::sort(same.begin(), same.end(), [](const priv::AtomicPart* l, const priv::AtomicPart* r) { return l->id < r->id; });
  return ix;
}

}  // namespace oo7
