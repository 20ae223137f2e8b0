#pragma once
// The files of a haloex-md run, checked before its first step so that no work
// is lost to a bad path and no output destroys an input or another output:
// inputs --gro and --restart; outputs --cpt (and its previous copy
// "<cpt>.prev"; without --cpt the checkpoint a stop writes), --traj,
// --energy, --log, --json, --auto-cache and the three files of
// --write-gromacs.
#include <string>
#include <vector>

#include "haloex/md/options.hpp"

namespace haloex::md {

struct RunFile {
    std::string role;  // for messages: "--json", "--write-gromacs out (conf.gro)"
    std::string path;
    bool output = false;
};

// Every input and output file the options name, in a fixed order.
std::vector<RunFile> runFiles(const MdOptions& options);

// Throws (Io or InvalidInput, naming the options and paths and what to do)
// when an output cannot be written (haloex/detail/core/safe_file.hpp:
// requireWritableOutput: missing or unwritable directory, a directory,
// device, FIFO or symbolic link in its place), or when two of the files are
// the same file (compared through symbolic links and hard links) and one of
// them is an output; then (InvalidInput) a --traj that does not end in .gro,
// .h5 or .h5md, or an --energy that does not end in .xvg (any case): the
// formats written. The one exception to the collisions is continuing a run in place,
// --restart state.cpt --cpt state.cpt: the checkpoint is read completely
// before the first step and replaced atomically. Creates nothing (the
// directory probes are removed again). A previous checkpoint that older
// versions left as a second name of the checkpoint is no collision: it is
// separated when the outputs are opened.
void checkRunFiles(const MdOptions& options);

// Removes the temporaries a killed run left next to this run's outputs (a
// checkpoint write interrupted by kill -9 leaves "<cpt>.tmp.<16 hex
// digits>"): only those no process holds locked (removeStaleTemporaries), so
// never one a running run is writing. Returns the paths removed. Rank 0,
// before the first output is written.
std::vector<std::string> removeStaleRunTemporaries(const MdOptions& options);

}  // namespace haloex::md
