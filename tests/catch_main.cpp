// Used only where Debian's prebuilt libCatch2WithMain.a is missing.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
