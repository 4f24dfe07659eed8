// The OO7 database parameters (SPEC.md "Parameters") for the sizes small and medium.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace oo7 {

struct Params {
  std::string size;  // "small" or "medium": also names the repository "oo7.<size>"
  int atomic_per_comp;
  int conn_per_atomic;
  int document_size;
  int comp_per_module;
  int assm_per_assm;
  int assm_levels;
  int comp_per_assm;

  std::string repository() const { return "oo7." + size; }
};

// The parameters of `size`; colors::InvalidArgumentError for any other name.
Params params_for(std::string_view size);

// The values SPEC.md states for seed 42 small.
inline constexpr std::uint64_t kSeed42SmallVisits = 43740;
inline constexpr std::uint64_t kSeed42SmallFingerprint = 0xe0381c302e05b74aULL;
inline constexpr std::uint64_t kSeed42SmallVisitOrder = 0x2c0f1a48f8151d7dULL;

}  // namespace oo7
