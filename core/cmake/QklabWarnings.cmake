# QklabWarnings.cmake — the compiler as a reviewer of qklab's own code.
#
# Every target of this project compiles with these warnings. Qt, LibTorch, QCustomPlot,
# GoogleTest and CLI11 come in as system headers (imported targets, and qklab_torch's include
# folders are marked SYSTEM), so the warnings are about qklab's code only.
#
#   -DQKLAB_WERROR=ON  makes them errors; scripts/test.sh (CI) turns it on. It stays off for
#                      a user's own build, where a newer compiler may add a warning that must
#                      not stop them from building the app.
option(QKLAB_WERROR "Treat compiler warnings in qklab's own code as errors (CI)" OFF)

if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  add_compile_options(
    "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Wpedantic;-Wshadow;-Wswitch-enum>")
  if(QKLAB_WERROR)
    add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-Werror>")
  endif()
endif()
