#include "haloex/md/energy_file.hpp"

#include <fmt/format.h>

namespace haloex::md {

std::string energyXvgHeader(std::int64_t atoms, double dt, std::int64_t every) {
    std::string h = fmt::format("# haloex-md energies: {} atoms, dt {} ps, a row every {} steps\n"
                                "# Coulomb (SR) includes the reaction-field self term, as GROMACS reports it\n"
                                "@    title \"haloex-md energies\"\n"
                                "@    xaxis  label \"Time (ps)\"\n"
                                "@    yaxis  label \"(kJ/mol), (K), (bar)\"\n"
                                "@TYPE xy\n"
                                "@ legend on\n",
                                atoms, dt, every);
    int k = 0;
    for (const char* term : kEnergyTerms) h += fmt::format("@ s{} legend \"{}\"\n", k++, term);
    return h;
}

std::array<double, std::size(kEnergyTerms)> energyTerms(const EnergySample& e) {
    return {e.lj, e.coulomb, e.potential, e.kinetic, e.total, e.conserved, e.temperature, e.pressure};
}

namespace {
std::string timeColumn(double time) { return fmt::format("{:12.6f}", time); }
}  // namespace

std::string energyXvgRow(const EnergySample& e) {
    std::string row = timeColumn(e.time);
    for (const double value : energyTerms(e)) row += fmt::format(" {:.17g}", value);
    return row + "\n";
}

bool isEnergyXvgRowAt(std::string_view text, double time) {
    const std::string start = timeColumn(time) + " ";
    return text.starts_with(start) && text.find('\n') == text.size() - 1;
}

}  // namespace haloex::md
