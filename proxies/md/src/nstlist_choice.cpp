#include "haloex/md/nstlist_choice.hpp"

#include <cmath>
#include <fmt/format.h>
#include <numbers>

#include "haloex/md/verlet_buffer.hpp"

namespace haloex::md {
namespace {

// The cost model's constants, fitted to haloex-md on one H200 (search on the
// device, rolling pruning in 8 parts; the steady step at 22 500 and 720 000
// atoms and nstlist 50, 100 and 150; the search step, refitted after its
// z-shift skip and prune-at-search, by least squares over the 14 device-search
// runs of bench/results/md-single-NVIDIA-H200-2026-12-01-b.json, 11 250 to
// 720 000 atoms; docs/md-engine.md "Choosing nstlist"). A steady step costs
// kStepFixedUs, plus per home atom kInnerPairNs for every pair of its inner
// list and kOuterPairNs for every pair the outer list adds (the rolling
// prune reads 1/8 of them each step). A search step costs, beyond a steady
// step, kSearchFixedUs plus per home atom kSearchAtomNs and kSearchPairNs for
// every pair within rlist.
constexpr double kStepFixedUs = 14.6;
constexpr double kInnerPairNs = 0.0064;
constexpr double kOuterPairNs = 0.0015;
constexpr double kSearchFixedUs = 408.0;
constexpr double kSearchAtomNs = 1.04;
constexpr double kSearchPairNs = 0.0095;

// Candidates modelled within this fraction of the cheapest are a tie, broken
// for the shortest list: the model prices the outer list's pairs but not the
// list's age, and the steady step grows with the age (per atom 0.06 ns from
// 40 to 50 steps, 0.12-0.14 ns at 80 to 150, alike at 90 000 to 720 000
// atoms in bench/results/md-nstlist-NVIDIA-H200-2026-12-03.json), so where
// the model cannot tell candidates apart (its rms error there is 2.2 %) the
// shorter list measured faster: at 90 000 and 180 000 atoms, 40 steps
// against the model's 50 (116.2 against 119.5, 211.2 against 220.0 us/step).
// Only candidates of the record's range (40 to 150 steps) take part: below
// it the age effect was not measured.
constexpr double kModelTieFraction = 0.02;
constexpr int kShortestTieNstlist = 40;

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
        BufferEstimate outer =
            chooseRlist(ff, density, temperature, nstlist, dt, outerListTolerance(tolerance, nstlist, dt));
        if (fixedRlist > 0.0) {
            // The user's radius: a candidate it does not buffer enough is out.
            if (outer.rlist > fixedRlist && choice.chosen.nstlist != 0) continue;
            outer.rlist = fixedRlist;
            outer.estimatedDrift = estimateBufferDrift(ff, density, temperature, fixedRlist, nstlist, dt);
        }
        NstlistCandidate c{nstlist, outer.rlist, 0.0, outer.estimatedDrift, 0.0, 0.0};
        const double outerPairs = pairsPerAtom(outer.rlist, density);
        double innerPairs = outerPairs;
        if (pruneParts > 0) {
            c.rlistInner = chooseRlistInner(ff, density, temperature, pruneParts, dt,
                                            tolerance * kPruneToleranceFraction, outer.rlist)
                               .rlist;
            innerPairs = pairsPerAtom(c.rlistInner, density);
        }
        c.steadyUs =
            kStepFixedUs + 1e-3 * atomsPerRank * (kInnerPairNs * innerPairs + kOuterPairNs * (outerPairs - innerPairs));
        c.searchUs = kSearchFixedUs + 1e-3 * atomsPerRank * (kSearchAtomNs + kSearchPairNs * outerPairs);
        choice.candidates.push_back(c);
        if (choice.chosen.nstlist == 0 || c.perStepUs() < choice.chosen.perStepUs()) choice.chosen = c;
    }
    const NstlistCandidate cheapest = choice.chosen;
    for (const NstlistCandidate& k : choice.candidates) {  // in increasing nstlist: the first tie is the shortest
        if (k.nstlist >= kShortestTieNstlist && k.perStepUs() <= cheapest.perStepUs() * (1.0 + kModelTieFraction)) {
            choice.chosen = k;
            break;
        }
    }
    const NstlistCandidate& c = choice.chosen;
    const double outerTolerance = outerListTolerance(tolerance, c.nstlist, dt);
    choice.reason = fmt::format("nstlist {} of {} candidates: rlist {:.3f} nm for --buffer-tolerance {}{}, modelled "
                                "{:.1f} us/step ({:.1f} steady + a {:.0f} us search every {} steps)",
                                c.nstlist, choice.candidates.size(), c.rlist, tolerance,
                                outerTolerance < tolerance ? fmt::format(" (held to {:g}: a list living under {:g} ps)",
                                                                         outerTolerance, kShortListLifePs)
                                                           : std::string(),
                                c.perStepUs(), c.steadyUs, c.searchUs, c.nstlist);
    if (c.nstlist != cheapest.nstlist) {
        choice.reason += fmt::format("; the shortest within {:g} % of the cheapest (nstlist {}, {:.1f} us/step): the "
                                     "model does not price the list's age",
                                     100.0 * kModelTieFraction, cheapest.nstlist, cheapest.perStepUs());
    }
    return choice;
}

}  // namespace haloex::md
