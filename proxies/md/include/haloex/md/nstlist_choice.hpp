#pragma once
// The automatic pair-search interval (--nstlist 0). mdrun tries a ladder of
// candidates and keeps the largest whose buffered radius grows by at most a
// fixed factor, measuring nothing. Here every candidate gets the radii the
// buffer tolerance requires (rlist for its life, and the rolling prune's
// inner radius), and the one with the smallest modelled time per step wins:
// the steady step (pairs the force kernel evaluates) plus the search step
// (grid, pair search, plan, migration) spread over nstlist steps. The model's
// constants were measured on an H200 (docs/md-engine.md, "Choosing
// nstlist"); they rank candidates, they do not predict timings elsewhere.
#include <string>
#include <vector>

#include "haloex/md/forcefield.hpp"

namespace haloex::md {

struct NstlistCandidate {
    int nstlist = 0;
    double rlist = 0.0;           // nm, from the buffer tolerance
    double rlistInner = 0.0;      // nm, 0 without pruning
    double estimatedDrift = 0.0;  // kJ/mol/ps per atom (outer list)
    double steadyUs = 0.0;        // modelled steady step, us
    double searchUs = 0.0;        // modelled search step, us
    double perStepUs() const { return steadyUs + searchUs / nstlist; }
};

struct NstlistChoice {
    NstlistCandidate chosen;
    std::vector<NstlistCandidate> candidates;
    std::string reason;  // one line for the log
};

// The candidates mdrun tries and the longer intervals a GPU-resident search
// makes affordable.
std::vector<int> nstlistCandidates();

// atomsPerRank: home atoms of one rank; pruneParts: rolling-prune parts (0:
// no pruning); onGpu: the CPU backend computes exact pairs every step and
// keeps nstlist 50 (its search is not what limits it). fixedRlist > 0 (the
// user's --rlist): only candidates whose tolerance that radius meets, with
// that radius.
NstlistChoice chooseNstlist(const ForceField& ff, double density, double temperature, double dt, double tolerance,
                            double atomsPerRank, int pruneParts, bool onGpu, double fixedRlist = 0.0);

}  // namespace haloex::md
