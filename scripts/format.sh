#!/usr/bin/env bash
# Formats every tracked C++/CUDA file (*.cpp *.hpp *.cu *.cuh) in place with
# clang-format and the repository's .clang-format; scripts/check_format.sh
# (ctest's format_check) then passes. Review the change before committing it.
exec "$(dirname "${BASH_SOURCE[0]}")/check_format.sh" --fix
