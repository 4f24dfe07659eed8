// Catch2's main, compiled once (the colors_catch_main object library, tests/CMakeLists.txt) and
// linked into every Catch2 test executable: the single header's main takes ~30 s to compile.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
