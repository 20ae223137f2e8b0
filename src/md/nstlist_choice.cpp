#include "haloex/md/nstlist_choice.hpp"

#include <cmath>
#include <fmt/format.h>
#include <numbers>

#include "haloex/md/verlet_buffer.hpp"

namespace haloex::md {
namespace {

// The cost model's constants, measured with haloex-md on one H200 (GPU
// search, rolling pruning; docs/md-engine.md "Choosing nstlist"):
// a steady step costs kStepFixedUs plus kPairNs per pair the force kernel
// evaluates (cluster pairs included); a search step kSearchFixedUs plus
// kSearchAtomNs per home atom and kSearchPairNs per pair within rlist.
constexpr double kStepFixedUs = 14.6;
constexpr double kPairNs = 0.0068;
constexpr double kSearchFixedUs = 250.0;
constexpr double kSearchAtomNs = 1.0;
constexpr double kSearchPairNs = 0.02;

// Pairs per atom within r (each pair counted once) at a number density.
double pairsPerAtom(double r, double density) { return 2.0 * std::numbers::pi / 3.0 * density * r * r * r; }

}  // namespace

std::vector<int> nstlistCandidates() { return {10, 20, 25, 40, 50, 80, 100, 150, 200}; }

NstlistChoice chooseNstlist(const ForceField& ff, double density, double temperature, double dt, double tolerance,
                            double atomsPerRank, int pruneParts, bool onGpu, double fixedRlist) {
    NstlistChoice choice;
    if (!onGpu) {
        const BufferEstimate b = chooseRlist(ff, density, temperature, 50, dt, tolerance);
        choice.chosen = {50, b.rlist, 0.0, b.estimatedDrift, 0.0, 0.0};
        choice.candidates = {choice.chosen};
        choice.reason = "the CPU reference computes the exact pairs within rc every step: nstlist 50";
        return choice;
    }
    for (int nstlist : nstlistCandidates()) {
        BufferEstimate outer = chooseRlist(ff, density, temperature, nstlist, dt, tolerance);
        if (fixedRlist > 0.0) {
            // The user's radius: a candidate it does not buffer enough is out.
            if (outer.rlist > fixedRlist && choice.chosen.nstlist != 0) continue;
            outer.rlist = fixedRlist;
            outer.estimatedDrift = estimateBufferDrift(ff, density, temperature, fixedRlist, nstlist, dt);
        }
        NstlistCandidate c{nstlist, outer.rlist, 0.0, outer.estimatedDrift, 0.0, 0.0};
        double evaluated = pairsPerAtom(outer.rlist, density);
        if (pruneParts > 0) {
            c.rlistInner =
                chooseRlistInner(ff, density, temperature, pruneParts, dt, tolerance, outer.rlist).rlist;
            const double inner = pairsPerAtom(c.rlistInner, density);
            evaluated = inner + (evaluated - inner) / pruneParts;
        }
        c.steadyUs = kStepFixedUs + 1e-3 * kPairNs * atomsPerRank * evaluated;
        c.searchUs = kSearchFixedUs + 1e-3 * atomsPerRank *
                                           (kSearchAtomNs + kSearchPairNs * pairsPerAtom(outer.rlist, density));
        choice.candidates.push_back(c);
        if (choice.chosen.nstlist == 0 || c.perStepUs() < choice.chosen.perStepUs()) choice.chosen = c;
    }
    const NstlistCandidate& c = choice.chosen;
    choice.reason = fmt::format("nstlist {} of {} candidates: rlist {:.3f} nm for --buffer-tolerance {}, modelled "
                                "{:.1f} us/step ({:.1f} steady + a {:.0f} us search every {} steps)",
                                c.nstlist, choice.candidates.size(), c.rlist, tolerance, c.perStepUs(), c.steadyUs,
                                c.searchUs, c.nstlist);
    return choice;
}

}  // namespace haloex::md
