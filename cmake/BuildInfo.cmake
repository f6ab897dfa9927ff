# Writes build_info.h with the current commit at every build (not only at configure time), so a
# result's "commit" names the code that actually produced it. Rewrites only on change, so an
# unchanged commit triggers no rebuild.
execute_process(COMMAND git describe --always --dirty --abbrev=12 WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT commit)
  set(commit "unknown")
endif()
set(content "#pragma once\n#define TANDEM_VERSION_STRING \"${VERSION}\"\n#define TANDEM_GIT_COMMIT \"${commit}\"\n")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} old)
endif()
if(NOT "${old}" STREQUAL "${content}")
  file(WRITE ${OUTPUT} "${content}")
endif()
