"""A stand-in for a program the bench drivers run (haloex-bench-nonbonded and its kin): a shell script written
executable, so a driver's test runs the driver's real subprocess path without a GPU."""
import os


def write_stand_in(path, script):
    """Writes `script` (a #!/bin/sh text) to `path`, executable; returns the path."""
    with open(path, "w") as f:
        f.write(script)
    os.chmod(path, 0o755)
    return path
