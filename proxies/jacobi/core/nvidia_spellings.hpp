// NVIDIA's multi-GPU Jacobi examples (multi-gpu-programming-models) take
// single-dash options: `jacobi -niter 10 -nx 256 -ny 256`. Users bring that
// habit; haloex-jacobi accepts those spellings for the options it shares and
// maps them to its own (--niter, --nccheck, --nx, --ny, --csv). CLI11 would read
// `-niter` as the one-letter flags -n -i -t -e -r, so they are rewritten first.
#pragma once

#include <string>
#include <vector>

namespace haloex::jacobi {

// The arguments (without the program name) with NVIDIA's spellings mapped:
// `-niter 10` and `-niter=10` become `--niter 10` and `--niter=10`. Any other
// single-dash word of two or more letters (-use_hp_streams, -foo) is refused
// with ErrorKind::InvalidInput, naming what is accepted; one-letter flags
// (-h), numbers (-1) and everything else pass unchanged.
std::vector<std::string> mapNvidiaSpellings(const std::vector<std::string>& args);

}  // namespace haloex::jacobi
