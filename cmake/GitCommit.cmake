# Run at build time (cmake -P): writes the current git commit into OUTPUT,
# touching the file only when the commit changed, so rebuilds stay incremental.
execute_process(COMMAND git -C "${SOURCE_DIR}" describe --always --dirty --abbrev=40
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT commit)
  # A copy without .git (e.g. shipped to a GPU machine) may carry the commit in .commit.
  if(EXISTS "${SOURCE_DIR}/.commit")
    file(READ "${SOURCE_DIR}/.commit" commit)
    string(STRIP "${commit}" commit)
  else()
    set(commit "unknown")
  endif()
endif()
set(content "// Generated at build time by cmake/GitCommit.cmake.\n#include \"haloex/build_info.hpp\"\nconst char* haloex::gitCommit() { return \"${commit}\"; }\n")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT "${old}" STREQUAL "${content}")
  file(WRITE "${OUTPUT}" "${content}")
endif()
