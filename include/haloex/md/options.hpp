#pragma once
// Everything a haloex-md run can be told. Defaults are the proxy system of
// DESIGN §5; "auto" values are resolved by resolveOptions() and reported.
#include <cstdint>
#include <string>
#include <vector>

namespace haloex::md {

struct MdOptions {
    // System
    std::int64_t atoms = 0;      // 0: auto (22 500 per GPU rank; 3 000 on the CPU)
    std::string groFile;         // start from a .gro instead of the lattice recipe
    std::uint64_t seed = 2026;
    double temperature = 300.0;  // K: initial velocities and thermostat reference

    // Integration and interactions
    std::int64_t steps = 0;      // 0: auto (2 000 on GPUs, 200 on the CPU)
    double dt = 0.002;           // ps
    double rc = 0.9;             // nm
    double rlist = 0.0;          // nm; 0: from the Verlet-buffer estimate for nstlist
    int nstlist = 0;             // steps between searches; 0: auto (50)
    double bufferTolerance = 0.005;  // kJ/mol/ps per atom, for the rlist estimate
    std::string thermostat = "none";  // none | v-rescale
    double tauT = 0.1;           // ps

    // Parallel set-up
    std::string grid = "auto";   // NXxNYxNZ or auto
    int virtualRanks = 0;        // CPU: ranks as threads of one process; 0: auto (4)
    std::string device = "auto"; // auto | cpu | gpu
    std::string transport = "auto";    // auto | reference | staged | ipc | nccl | nvshmem
    std::string nvshmemPath = "auto";  // auto | direct | tma | put
    bool allowSharedGpus = false;
    bool cudaGraphs = true;
    double waitTimeoutSeconds = 0.0;   // device-side waits; 0: default

    // Output
    int thermoEvery = 0;          // 0: auto (steps/10, at least 1)
    std::string trajFile;
    int trajEvery = 0;
    std::string checkpointFile;
    int checkpointEvery = 0;
    std::string restartFile;
    // Options the user set explicitly, by name without dashes ("dt", "rc"):
    // with --restart, a given rc/rlist/nstlist/dt that differs from the
    // checkpoint's is refused, and settings not given are adopted from it.
    // (Values other than the defaults count as given too.)
    std::vector<std::string> explicitOptions;
    std::string writeGromacsDir;
    std::string jsonFile;
    bool quiet = false;
    // Recount, at every search step, the pairs within rc that the previous
    // list could not hold (beyond rlist when it was built): the buffer's error.
    bool measureBuffer = false;
};

}  // namespace haloex::md
