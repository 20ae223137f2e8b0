// GROMACS inputs for the proxy system: conf.gro reads back as the system,
// topol.top counts every atom in conf.gro's order, md.mdp carries the run's
// settings.
#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "haloex/core/error.hpp"
#include "haloex/md/engine.hpp"
#include "haloex/md/gro.hpp"
#include "haloex/md/gromacs_export.hpp"
#include "haloex/md/system.hpp"
#include "test_temp_dir.hpp"

using namespace haloex;
using namespace haloex::md;
namespace fs = std::filesystem;

namespace {

fs::path freshDir() { return haloex::testing::freshTestDir("haloex_gmx"); }

std::string readText(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t");
    const auto e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// key = value lines of an .mdp (comments dropped).
std::map<std::string, std::string> parseMdp(const fs::path& path) {
    std::map<std::string, std::string> out;
    std::istringstream in(readText(path));
    for (std::string line; std::getline(in, line);) {
        line = line.substr(0, line.find(';'));
        const auto eq = line.find('=');
        if (eq == std::string::npos) continue;
        out[trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
    }
    return out;
}

// The lines of one [ section ] of a topology, comments and blank lines dropped.
std::vector<std::vector<std::string>> section(const std::string& top, const std::string& name) {
    std::vector<std::vector<std::string>> rows;
    std::istringstream in(top);
    bool inside = false;
    for (std::string line; std::getline(in, line);) {
        line = trim(line.substr(0, line.find(';')));
        if (line.empty()) continue;
        if (line.front() == '[') {
            inside = line == "[ " + name + " ]";
            continue;
        }
        if (!inside) continue;
        std::istringstream fields(line);
        rows.emplace_back(std::istream_iterator<std::string>(fields), std::istream_iterator<std::string>());
    }
    return rows;
}

MdOptions resolvedOptions(const std::string& thermostat) {
    MdOptions o;
    o.atoms = 1000;
    o.steps = 500;
    o.dt = 0.0015;
    o.nstlist = 40;
    o.thermoEvery = 25;
    o.thermostat = thermostat;
    o.tauT = 0.5;
    o.temperature = 280.0;
    return resolveOptions(o, 1, false);
}

}  // namespace

TEST(GromacsExport, FilesDescribeTheSystemAndTheRun) {
    const fs::path dir = freshDir() / "nested" / "gmx";  // created on demand
    ForceField ff;
    System system = makeLatticeSystem(1000, 11, 300.0, ff);
    // Interleaved types: [ molecules ] must follow conf.gro's order run by run.
    for (int i = 0; i < system.size(); ++i) system.types[i] = (i / 7 + i / 300) % 2;
    const MdOptions o = resolvedOptions("v-rescale");
    writeGromacsInputs(dir.string(), system, o, ff);
    for (const char* name : {"conf.gro", "topol.top", "md.mdp"}) ASSERT_TRUE(fs::exists(dir / name)) << name;

    // conf.gro: the system, to the precision of the format.
    const GroFrame frame = readGro((dir / "conf.gro").string());
    ASSERT_TRUE(frame.hasVelocities);
    ASSERT_EQ(frame.system.size(), system.size());
    EXPECT_EQ(frame.system.types, system.types);
    for (int d = 0; d < 3; ++d) EXPECT_NEAR(frame.system.box.length[d], system.box.length[d], 5.000001e-6);
    for (int i = 0; i < system.size(); ++i) {
        for (int d = 0; d < 3; ++d) {
            ASSERT_NEAR(frame.system.positions[i][d], system.positions[i][d], 5.000001e-4) << "atom " << i;
            ASSERT_NEAR(frame.system.velocities[i][d], system.velocities[i][d], 5.000001e-5) << "atom " << i;
        }
    }

    // topol.top: the molecules, one line per run of a type, in conf.gro's order.
    const std::string top = readText(dir / "topol.top");
    const auto molecules = section(top, "molecules");
    int atom = 0;
    for (const auto& row : molecules) {
        ASSERT_EQ(row.size(), 2u);
        ASSERT_TRUE(row[0] == "POS" || row[0] == "NEG") << row[0];
        const int type = row[0] == "POS" ? 0 : 1;
        const int count = std::stoi(row[1]);
        ASSERT_GT(count, 0);
        for (int k = 0; k < count; ++k, ++atom) {
            ASSERT_LT(atom, system.size());
            ASSERT_EQ(system.types[atom], type) << "atom " << atom;
        }
    }
    EXPECT_EQ(atom, system.size());
    EXPECT_EQ(molecules.size(), moleculeRuns(system).size());
    EXPECT_GT(molecules.size(), 100u);

    const auto defaults = section(top, "defaults");
    ASSERT_EQ(defaults.size(), 1u);
    EXPECT_EQ(defaults[0][1], "2");  // combination rule 2: sigma, epsilon
    const auto types = section(top, "atomtypes");
    ASSERT_EQ(types.size(), 2u);
    for (const auto& row : types) {
        ASSERT_EQ(row.size(), 7u);
        EXPECT_DOUBLE_EQ(std::stod(row[2]), ff.mass);
        EXPECT_DOUBLE_EQ(std::stod(row[3]), row[0] == "P" ? ff.charge : -ff.charge);
        EXPECT_DOUBLE_EQ(std::stod(row[5]), ff.sigma);
        EXPECT_DOUBLE_EQ(std::stod(row[6]), ff.epsilon);
    }
    EXPECT_EQ(section(top, "nonbond_params").size(), 3u);
    EXPECT_EQ(section(top, "moleculetype").size(), 2u);
    EXPECT_EQ(section(top, "system").size(), 1u);

    // md.mdp: the run's settings.
    auto mdp = parseMdp(dir / "md.mdp");
    EXPECT_EQ(mdp["integrator"], "md");
    EXPECT_DOUBLE_EQ(std::stod(mdp["dt"]), o.dt);
    EXPECT_EQ(mdp["nsteps"], "500");
    EXPECT_EQ(mdp["cutoff-scheme"], "Verlet");
    EXPECT_EQ(mdp["nstlist"], "40");
    EXPECT_EQ(mdp["verlet-buffer-tolerance"], "-1");
    EXPECT_DOUBLE_EQ(std::stod(mdp["rlist"]), o.rlist);
    EXPECT_GT(o.rlist, o.rc);
    EXPECT_EQ(mdp["coulombtype"], "Reaction-Field");
    EXPECT_EQ(mdp["epsilon-rf"], "0");
    EXPECT_DOUBLE_EQ(std::stod(mdp["rcoulomb"]), o.rc);
    EXPECT_EQ(mdp["vdwtype"], "Cut-off");
    EXPECT_EQ(mdp["vdw-modifier"], "Potential-shift");
    EXPECT_DOUBLE_EQ(std::stod(mdp["rvdw"]), o.rc);
    EXPECT_EQ(mdp["tcoupl"], "V-rescale");
    EXPECT_EQ(mdp["tc-grps"], "System");
    EXPECT_DOUBLE_EQ(std::stod(mdp["tau-t"]), 0.5);
    EXPECT_DOUBLE_EQ(std::stod(mdp["ref-t"]), 280.0);
    EXPECT_EQ(mdp["gen-vel"], "no");
    EXPECT_EQ(mdp["constraints"], "none");
    EXPECT_EQ(mdp["nstcalcenergy"], "25");
    EXPECT_EQ(mdp["nstenergy"], "25");

    // Without a thermostat, and over the existing directory.
    writeGromacsInputs(dir.string(), system, resolvedOptions("none"), ff);
    mdp = parseMdp(dir / "md.mdp");
    EXPECT_EQ(mdp["tcoupl"], "no");
    EXPECT_EQ(mdp.count("tau-t"), 0u);
}

TEST(GromacsExport, MoleculeRunsGroupConsecutiveAtoms) {
    System s;
    s.box.length = {3.0, 3.0, 3.0};
    s.types = {0, 0, 1, 0, 1, 1, 1};
    s.positions.assign(s.types.size(), Vec3d{1.0, 1.0, 1.0});
    s.velocities.assign(s.types.size(), Vec3d{});
    const auto runs = moleculeRuns(s);
    ASSERT_EQ(runs.size(), 4u);
    EXPECT_EQ(runs[0].type, 0);
    EXPECT_EQ(runs[0].count, 2);
    EXPECT_EQ(runs[1].type, 1);
    EXPECT_EQ(runs[1].count, 1);
    EXPECT_EQ(runs[2].count, 1);
    EXPECT_EQ(runs[3].type, 1);
    EXPECT_EQ(runs[3].count, 3);
}

TEST(GromacsExport, AFileInTheWayIsAnIoError) {
    const fs::path dir = freshDir();
    const fs::path blocker = dir / "gmx";
    std::ofstream(blocker) << "not a directory\n";
    ForceField ff;
    const System system = makeLatticeSystem(1000, 11, 300.0, ff);
    try {
        writeGromacsInputs(blocker.string(), system, resolvedOptions("none"), ff);
        ADD_FAILURE() << "wrote into a regular file";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Io);
        EXPECT_NE(std::string(e.what()).find(blocker.string()), std::string::npos) << e.what();
    }
}
