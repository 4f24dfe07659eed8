// Catch2's main for test_server.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
