#pragma once
// GROMACS inputs for the proxy system (docs/md-engine.md#the-system-and-its-defaults), so the same run can be
// repeated with GROMACS (gmx grompp -f md.mdp -c conf.gro -p topol.top):
//   conf.gro   positions and velocities (POS/P = +q, NEG/N = -q), the box;
//   topol.top  atom types P and N (mass, charge, LJ sigma/epsilon, combination
//              rule 2, explicit [ nonbond_params ]), molecule types POS and NEG
//              of one atom each, [ molecules ] in conf.gro's order (one line
//              per run of consecutive atoms of one type);
//   md.mdp     leapfrog, dt, nsteps, Verlet lists with our nstlist and rlist,
//              reaction field with eps_rf = infinity, potential-shifted LJ, the
//              thermostat, energies every thermo-every steps.
#include <string>
#include <vector>

#include "haloex/md/forcefield.hpp"
#include "haloex/md/options.hpp"
#include "haloex/md/system.hpp"

namespace haloex::md {

// Writes conf.gro, topol.top and md.mdp into `dir`, creating it if missing;
// `dir` must not be a symbolic link. Existing non-empty files of those names
// are backed up first (#conf.gro.1#, ..., as mdrun backs up its outputs); all
// three are written or none (a failure removes what this call wrote, and the
// directory if it made it). `resolvedOptions` must be resolved
// (resolveOptions: nstlist, rlist, steps and thermo-every set). Returns a
// line per backup ("Backed up ... to ..."). Throws Io naming the path when a
// file cannot be written, InvalidInput for a system that fails
// System::validate() or a linked `dir`.
std::vector<std::string> writeGromacsInputs(const std::string& dir, const System& system,
                                            const MdOptions& resolvedOptions, const ForceField& ff);

// The [ molecules ] entries: runs of consecutive atoms of one type, in order
// (type 0 is POS, type 1 is NEG).
struct MoleculeRun {
    int type = 0;
    int count = 0;
};
std::vector<MoleculeRun> moleculeRuns(const System& system);

}  // namespace haloex::md
