#pragma once
// One structured-grid scenario of the grid suites (test_grid_plan,
// test_grid_halo, test_grid_halo_packed): its name, sizes, rank grid and
// halo, and the GridSpec it stands for.
#include <array>
#include <ostream>
#include <string>

#include "haloex/plan/grid_plan.hpp"

namespace haloex::testsupport {

struct GridCase {
    std::string name;
    plan::Int3 cells;
    plan::Int3 ranks;
    int haloWidth;
    std::array<bool, 3> periodic;
    std::array<int, 3> dimOrder{2, 1, 0};
    bool edgesAndCorners = true;
};

inline void PrintTo(const GridCase& c, std::ostream* os) { *os << c.name; }

inline plan::GridSpec specOf(const GridCase& c) {
    plan::GridSpec spec;
    spec.cells = c.cells;
    spec.grid = plan::RankGrid(c.ranks);
    spec.haloWidth = c.haloWidth;
    spec.periodic = c.periodic;
    spec.dimOrder = c.dimOrder;
    spec.edgesAndCorners = c.edgesAndCorners;
    return spec;
}

}  // namespace haloex::testsupport
