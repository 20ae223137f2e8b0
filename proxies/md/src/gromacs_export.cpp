#include "haloex/md/gromacs_export.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <limits>
#include <unistd.h>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/safe_file.hpp"
#include "haloex/md/gro.hpp"
#include "haloex/md/output_backup.hpp"

namespace haloex::md {
namespace {

namespace fs = std::filesystem;

template <class... Args>
void appendFormat(std::string& out, fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(out), format, std::forward<Args>(args)...);
}

const char* moleculeName(int type) { return type == 0 ? "POS" : "NEG"; }
const char* atomTypeName(int type) { return type == 0 ? "P" : "N"; }

void writeTextFile(const fs::path& path, const std::string& text) {
    writeFileAtomically(path.string(), text, "--write-gromacs");
}

std::string topology(const System& system, const ForceField& ff) {
    std::string t;
    auto add = [&t]<class... Args>(fmt::format_string<Args...> format, Args&&... args) {
        appendFormat(t, format, std::forward<Args>(args)...);
    };
    add("; haloex-md proxy system (docs/md-engine.md#the-system-and-its-defaults): {} atoms, two atom types of charge "
        "+/-{} e.\n",
        system.size(), ff.charge);
    add("; LJ shifted to zero at rc and reaction field with eps_rf = infinity: see md.mdp.\n\n");
    add("[ defaults ]\n; nbfunc  comb-rule  gen-pairs  fudgeLJ  fudgeQQ\n");
    add("  1       2          no         1.0      1.0\n\n");
    add("[ atomtypes ]\n; name  at.num  mass  charge  ptype  sigma (nm)  epsilon (kJ/mol)\n");
    for (int type = 0; type < 2; ++type) {
        add("  {:<4}  0  {}  {}  A  {}  {}\n", atomTypeName(type), ff.mass, ff.chargeOfType(type), ff.sigma,
            ff.epsilon);
    }
    add("\n[ nonbond_params ]\n; i  j  func  sigma (nm)  epsilon (kJ/mol)   (combination rule 2)\n");
    for (int i = 0; i < 2; ++i) {
        for (int j = i; j < 2; ++j) {
            add("  {}  {}  1  {}  {}\n", atomTypeName(i), atomTypeName(j), ff.sigma, ff.epsilon);
        }
    }
    for (int type = 0; type < 2; ++type) {
        add("\n[ moleculetype ]\n; name  nrexcl\n  {}   1\n\n", moleculeName(type));
        add("[ atoms ]\n; nr  type  resnr  residue  atom  cgnr  charge  mass\n");
        add("  1   {}     1      {}      {}     1     {}  {}\n", atomTypeName(type), moleculeName(type),
            atomTypeName(type), ff.chargeOfType(type), ff.mass);
    }
    add("\n[ system ]\nhaloex-md charged Lennard-Jones liquid, {} atoms\n\n", system.size());
    add("[ molecules ]\n; name  count   (in the order of conf.gro)\n");
    for (const MoleculeRun& run : moleculeRuns(system)) add("  {}  {}\n", moleculeName(run.type), run.count);
    return t;
}

std::string mdp(const MdOptions& o) {
    std::string m;
    auto add = [&m]<class... Args>(fmt::format_string<Args...> format, Args&&... args) {
        appendFormat(m, format, std::forward<Args>(args)...);
    };
    const bool vrescale = o.thermostat == "v-rescale";
    add("; haloex-md proxy system (docs/md-engine.md#the-system-and-its-defaults), the settings of the haloex-md run "
        "that wrote it.\n");
    add("integrator               = md\n");
    add("dt                       = {}\n", o.dt);
    add("nsteps                   = {}\n", o.steps);
    add("cutoff-scheme            = Verlet\n");
    add("pbc                      = xyz\n");
    add("nstlist                  = {}\n", o.nstlist);
    add("; -1: use rlist as given (haloex-md chose it for a drift of {} kJ/mol/ps per atom)\n", o.bufferTolerance);
    add("verlet-buffer-tolerance  = -1\n");
    add("rlist                    = {}\n", o.rlist);
    add("; V = f q_i q_j (1/r + k_rf r^2 - c_rf): reaction field, eps_rf = 0 means infinity\n");
    add("coulombtype              = Reaction-Field\n");
    add("coulomb-modifier         = Potential-shift\n");
    add("rcoulomb                 = {}\n", o.rc);
    add("epsilon-r                = 1\n");
    add("epsilon-rf               = 0\n");
    add("vdwtype                  = Cut-off\n");
    add("vdw-modifier             = Potential-shift\n");
    add("rvdw                     = {}\n", o.rc);
    add("DispCorr                 = no\n");
    if (vrescale) {
        add("tcoupl                   = V-rescale\n");
        add("tc-grps                  = System\n");
        add("tau-t                    = {}\n", o.tauT);
        add("ref-t                    = {}\n", o.temperature);
        add("; haloex-md couples on energy steps\n");
        add("nsttcouple               = {}\n", o.thermoEvery);
        if (o.seed <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
            add("ld-seed                  = {}\n", o.seed);
        }
    } else {
        add("tcoupl                   = no\n");
    }
    add("gen-vel                  = no\n");
    add("constraints              = none\n");
    add("; centre-of-mass motion is removed at the start: 3N - 3 degrees of freedom as in haloex-md\n");
    add("comm-mode                = Linear\n");
    add("nstcalcenergy            = {}\n", o.thermoEvery);
    add("nstenergy                = {}\n", o.thermoEvery);
    add("nstlog                   = {}\n", o.thermoEvery);
    return m;
}

}  // namespace

std::vector<MoleculeRun> moleculeRuns(const System& system) {
    std::vector<MoleculeRun> runs;
    for (const int type : system.types) {
        if (runs.empty() || runs.back().type != type) runs.push_back({type, 0});
        ++runs.back().count;
    }
    return runs;
}

std::vector<std::string> writeGromacsInputs(const std::string& dir, const System& system, const MdOptions& o,
                                            const ForceField& ff) {
    system.validate();
    HALOEX_ASSERT(o.nstlist > 0 && o.rlist > 0.0 && o.thermoEvery > 0,
                  "writeGromacsInputs needs resolved options (resolveOptions)");
    // Never into the directory a link points to (checked again here, after
    // the check before step 0: the files go where the name is now).
    requireNotALink("--write-gromacs", dir);
    std::error_code ec;
    const bool existed = fs::is_directory(dir, ec);
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir)) {
        throwError(ErrorKind::Io, fmt::format("--write-gromacs {}: cannot create the directory: {}", dir,
                                              ec ? ec.message() : "a file of that name exists"));
    }
    const fs::path base(dir);
    std::vector<std::string> backups;
    for (const char* name : {"conf.gro", "topol.top", "md.mdp"}) {
        const std::string path = (base / name).string();
        if (const auto backup = backUpExistingFile(path, "--write-gromacs")) {
            backups.push_back(fmt::format("Backed up {} to {}", path, *backup));
        }
    }
    std::vector<fs::path> written;
    try {
        written.push_back(base / "conf.gro");
        writeGro(written.back().string(), system,
                 fmt::format("haloex-md proxy system, {} atoms, seed {}", system.size(), o.seed), true);
        written.push_back(base / "topol.top");
        writeTextFile(written.back(), topology(system, ff));
        written.push_back(base / "md.mdp");
        writeTextFile(written.back(), mdp(o));
    } catch (...) {
        // All three or none (a full disk used to leave an empty directory or
        // some of the files): what this call wrote goes, and the directory if
        // it made it.
        written.pop_back();  // the one that failed was not written
        for (const fs::path& f : written) ::unlink(f.c_str());
        if (!existed) ::rmdir(base.c_str());
        throw;
    }
    return backups;
}

}  // namespace haloex::md
