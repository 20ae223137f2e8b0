#pragma once
// Verlet-buffer estimate: how far beyond rc the pair list must reach so that
// pairs that move inside rc during the list's lifetime (nstlist - 1 steps)
// cost less energy than a tolerance (kJ/mol/ps per atom).
//
// The model: atoms move ballistically with the Maxwell-Boltzmann velocity
// spread (a Gaussian relative displacement of variance 2 kT t^2 / m per
// dimension, conservative in a dense liquid), at uniform density; a pair that
// was beyond rlist when the list was built and comes within rc contributes its
// energy V(r), signed, so the errors of like and unlike charge pairs offset as
// they do in the total energy whose drift the tolerance bounds. For the proxy
// system this gives rlist ~ 0.985 nm at nstlist 50 (docs/md-engine.md: "about 1.0 nm" for this system).
// `haloex-md --measure-buffer` recounts the missed pairs exactly: measured
// drifts are far below the estimate (docs/md-engine.md).
#include "haloex/md/forcefield.hpp"

namespace haloex::md {

struct BufferEstimate {
    double rlist = 0.0;  // nm
    int nstlist = 0;
    double estimatedDrift = 0.0;  // kJ/mol/ps per atom at this rlist
};

// Estimated drift (kJ/mol/ps per atom) for a list of radius rlist rebuilt
// every nstlist steps of dt (ps), at number density (atoms/nm^3) and T (K).
double estimateBufferDrift(const ForceField& ff, double density, double temperature, double rlist, int nstlist,
                           double dt);

// The smallest rlist (rounded up to 0.005 nm, at least rc) whose estimated
// drift is within the tolerance.
BufferEstimate chooseRlist(const ForceField& ff, double density, double temperature, int nstlist, double dt,
                           double tolerance);

// The tolerance the GPU's outer list is held to. The ballistic model is
// pessimistic by a factor that grows with the list's life: for a list that
// lives 0.16-0.3 ps (nstlist 80-150 at 2 fs) the missed pairs recounted
// exactly cost 60-80 times less than it estimates, so --buffer-tolerance
// bounds a drift far below 1e-5; for one that lives under 0.12 ps (nstlist
// 40-50) its estimate is the recounted cost without cancellation, the signed
// cost is 0.11-0.15 of it, and at --buffer-tolerance 0.005 the NVE drift was
// -1.5e-5 to -2.5e-5 kJ/mol/ps per atom on an H200. Such short lists are held
// to a fifth of the tolerance (recounted 1.1e-4 or less; the long lists at
// the full one 7e-5). Recounts: haloex-md --device cpu --measure-buffer, 6 000
// atoms from a relaxed liquid, 1 500 steps per setting
// (bench/results/md-buffer-recount-6000-cpu-2026-12-04.json; docs/md-engine.md,
// "Pair-list buffer").
inline constexpr double kShortListLifePs = 0.12;
inline constexpr double kShortListToleranceFraction = 0.2;
double outerListTolerance(double tolerance, int nstlist, double dt);

// Dynamic (rolling) pruning of the GPU list (NonbondedOptions::rlistInner):
// an entry pruned by the force kernel of step s, with the positions of step
// s, is evaluated at steps s+1 .. s+pruneInterval (then pruned again),
// so the inner list lives pruneInterval steps -- the model above with a life
// of pruneInterval * dt (a list built at a search lives nstlist - 1 steps).
// The same model and tolerance as the outer list, as GROMACS does. The model
// treats the outer list as complete; a pair the outer list lacks came from
// beyond rlist, so it was usually beyond rlistInner at the last prune too and
// the two estimates overlap rather than add (--measure-buffer counts both
// kinds of misses, disjointly: buffer_check.hpp). Drift of an inner list of
// radius rlistInner:
double estimatePruneDrift(const ForceField& ff, double density, double temperature, double rlistInner,
                          int pruneInterval, double dt);
// The smallest inner radius (0.005 nm steps, at least rc) within the
// tolerance for pruneInterval steps, capped at rlist (then pruning would
// drop nothing the buffer allows: callers may turn it off). The result's
// nstlist field holds pruneInterval.
BufferEstimate chooseRlistInner(const ForceField& ff, double density, double temperature, int pruneInterval, double dt,
                                double tolerance, double rlist);

// The inner list's share of --buffer-tolerance (the model is pessimistic by
// far: for 0.92 nm it estimates 1e-4 kJ/mol/ps per atom, and less than a
// tenth of that was measured). At 8 parts and the default tolerance: rc + 0.02
// nm. Measured on an H200 (24 000 atoms, 10 000 NVE steps after 2 000 of
// relaxation, both search paths; docs/md-engine.md, "Energy drift"): -7.6e-6
// to -1.7e-7 kJ/mol/ps per atom at this share, -5.4e-6 to -1.46e-5 at a
// tenth (rc + 0.015 nm), for 0.05-0.5 % more time per step, all steps counted.
inline constexpr double kPruneToleranceFraction = 0.05;

}  // namespace haloex::md
