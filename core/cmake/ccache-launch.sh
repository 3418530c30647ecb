#!/bin/sh
# ccache-launch.sh CCACHE BASE_DIR COMPILER ARGS... — the compiler launcher of every build
# (CMakeLists.txt).
#
# ccache hashes the compiler's name as well as the compiler: the main build's /usr/bin/c++ and
# the Python package's /usr/bin/g++ (pip sets CXX) are one g++, yet missed each other's objects.
# So the compiler is named by its real path. BASE_DIR is the checkout: ccache hashes paths under
# it relative to the build folder, so that clones share objects. The sloppiness lets ccache cache
# the files that use the precompiled LibTorch header (core/cmake/QklabPch.cmake), as ccache's
# manual asks (qklab uses no __DATE__ or __TIME__).
ccache=$1
base_dir=$2
compiler=$(readlink -f "$(command -v "$3")") || compiler=$3
shift 3
CCACHE_BASEDIR=$base_dir \
  CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime \
  exec "$ccache" "$compiler" "$@"
