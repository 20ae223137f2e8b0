#pragma once
// MPI return codes as haloex errors (library haloex_mpi), for code that calls
// MPI itself beside an MpiWorld (the micro-benchmarks): the messages of
// MpiWorld's own calls.
#include <mpi.h>

namespace haloex::runtime {

// Throws Error(Runtime) "<call> failed: <MPI's error string> at <file>:<line>"
// unless `code` is MPI_SUCCESS.
void checkMpi(int code, const char* call, const char* file, int line);

}  // namespace haloex::runtime

#define HALOEX_MPI_CHECK(call) ::haloex::runtime::checkMpi((call), #call, __FILE__, __LINE__)
