#pragma once
// The energy time series as an .xvg file (--energy): what `gmx energy`
// writes and xmgrace, numpy.loadtxt(comments="#@") or MDAnalysis read. One
// row per energy step (--thermo-every): time (ps), then LJ, Coulomb (with the
// reaction-field self term), potential, kinetic, total and conserved energy
// (kJ/mol), temperature (K) and pressure (bar). Rows go through the output
// layer (output_files.hpp), so a restart continues the file exactly.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "haloex/md/engine.hpp"

namespace haloex::md {

// The legend names, in column order after the time (GROMACS's names).
inline constexpr const char* kEnergyTerms[] = {"LJ (SR)",      "Coulomb (SR)",  "Potential",   "Kinetic En.",
                                               "Total Energy", "Conserved En.", "Temperature", "Pressure"};

// A sample's terms in kEnergyTerms' order: the one list the .xvg rows and
// the log's energy blocks and averages are written from.
std::array<double, std::size(kEnergyTerms)> energyTerms(const EnergySample& sample);

// The header (comment and xmgrace lines) of a new file.
std::string energyXvgHeader(std::int64_t atoms, double dt, std::int64_t every);
// One row; full double precision, so analyses lose nothing.
std::string energyXvgRow(const EnergySample& sample);
// Whether `text` is exactly one row, of the energy step at `time` (ps).
bool isEnergyXvgRowAt(std::string_view text, double time);

}  // namespace haloex::md
