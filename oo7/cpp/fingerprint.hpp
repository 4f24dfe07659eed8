// The fingerprint of SPEC.md "Checks", over either database (an accessor: private_access.hpp or
// shared_access.hpp). It folds every field of every object, so two databases with the same
// fingerprint hold the same data.
#pragma once
#include <cstdint>

#include "fnv.hpp"

namespace oo7 {

template <class A>
std::uint64_t fingerprint(const A& a) {
  Fnv h;
  const auto m = a.module();
  h.i(a.id(m));
  { auto t = a.type(m); h.s(view(t)); }
  h.i(a.build_date(m));
  h.i(a.id(a.design_root(m)));

  const auto& comps = a.composites();
  const std::size_t nc = A::size(comps);
  for (std::size_t ci = 0; ci < nc; ++ci) {
    const auto c = A::at(comps, ci);
    h.i(a.id(c));
    { auto t = a.type(c); h.s(view(t)); }
    h.i(a.build_date(c));
    { auto d = a.document(c); h.s(view(d)); }
    h.i(a.id(a.root_part(c)));
    const auto& used = a.used_in(c);
    const std::size_t nu = A::size(used);
    h.i(static_cast<std::int64_t>(nu));
    for (std::size_t k = 0; k < nu; ++k) h.i(a.id(A::at(used, k)));
    const auto& parts = a.parts(c);
    const std::size_t np = A::size(parts);
    for (std::size_t k = 0; k < np; ++k) {
      const auto p = A::at(parts, k);
      h.i(a.id(p));
      h.i(a.x(p));
      h.i(a.y(p));
      h.i(a.build_date(p));
      { auto t = a.type(p); h.s(view(t)); }
      h.i(a.id(a.part_of(p)));
      const auto& to = a.to(p);
      const auto& from = a.from(p);
      const std::size_t nto = A::size(to), nfrom = A::size(from);
      h.i(static_cast<std::int64_t>(nto));
      h.i(static_cast<std::int64_t>(nfrom));
      for (std::size_t q = 0; q < nto; ++q) {
        const auto cn = A::at(to, q);
        h.i(a.id(cn));
        { auto t = a.type(cn); h.s(view(t)); }
        h.i(a.length(cn));
        h.i(a.id(a.from(cn)));
        h.i(a.id(a.to(cn)));
      }
      for (std::size_t q = 0; q < nfrom; ++q) h.i(a.id(A::at(from, q)));
    }
  }

  const auto& assms = a.assemblies();
  const std::size_t na = A::size(assms);
  for (std::size_t ai = 0; ai < na; ++ai) {
    const auto x = A::at(assms, ai);
    h.i(a.id(x));
    { auto t = a.type(x); h.s(view(t)); }
    h.i(a.build_date(x));
    h.i(a.super_id(x));
    if (a.is_complex(x)) {
      const auto& subs = a.sub_assemblies(x);
      const std::size_t n = A::size(subs);
      h.i(2);
      h.i(static_cast<std::int64_t>(n));
      for (std::size_t k = 0; k < n; ++k) h.i(a.id(A::at(subs, k)));
    } else {
      const auto& cs = a.components(x);
      const std::size_t n = A::size(cs);
      h.i(3);
      h.i(static_cast<std::int64_t>(n));
      for (std::size_t k = 0; k < n; ++k) h.i(a.id(A::at(cs, k)));
    }
  }
  return h.value();
}

}  // namespace oo7
