#include "cpu_runner.hpp"

#include <chrono>

#include "jacobi_cpu.hpp"

namespace haloex::jacobi {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

Reference cpuReferenceOnRank0(const ProblemSpec& spec, runtime::World& world, int repeats) {
    Reference ref;
    ref.kind = "one-thread CPU";
    double us = 0.0;
    if (world.rank() == 0) {
        std::vector<double> samples;
        for (int rep = 0; rep < repeats; ++rep) {
            const auto t0 = Clock::now();
            FieldResult result = cpuReference(spec, spec.niter);
            samples.push_back(secondsSince(t0) / spec.niter * 1e6);
            ref.interior = std::move(result.interior);
            ref.normSquared = result.normSquared;
        }
        us = summarize(samples).median;
    }
    ref.usPerIteration = world.allReduceValue(us, runtime::ReduceOp::Max);
    return ref;
}

RunResult runCpuTransport(const ProblemSpec& spec, const stencil::LocalStencil& stencil, runtime::World& world,
                          int repeats, const Reference& reference) {
    RunResult r = newRunResult("cpu", spec, world.size(), repeats);
    r.notes.emplace_back("host arrays, one thread per rank, halos pulse by pulse through the World (MPI_Sendrecv)");
    std::vector<double> samples;
    FieldResult result;
    for (int rep = 0; rep < repeats; ++rep) {
        world.barrier();
        const auto t0 = Clock::now();
        result = cpuDistributed(spec, stencil, world, spec.niter);
        const double seconds = world.allReduceValue(secondsSince(t0), runtime::ReduceOp::Max);
        samples.push_back(seconds / spec.niter * 1e6);
    }
    r.usPerIteration = summarize(samples);
    r.singleUsPerIteration = reference.usPerIteration;
    computeScaling(r);
    checkAgainstReference(r, spec, stencil, world, result.interior, result.normSquared, reference);
    return r;
}

}  // namespace haloex::jacobi
