#include "mpi_test_main.hpp"

int main(int argc, char** argv) { return haloex::testsupport::runMpiTests(argc, argv); }
