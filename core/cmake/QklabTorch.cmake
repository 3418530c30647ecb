# QklabTorch.cmake — which LibTorch the engine builds against, and how binaries find it.
#
#   -DQKLAB_TORCH=pip      (default) PyTorch's LibTorch from the virtual environment that
#                          scripts/setup.sh makes: ${QKLAB_VENV} or
#                          ~/.local/share/qklab/venv. CPU and CUDA in one build.
#   -DQKLAB_TORCH=debian   Debian's libtorch-dev 1.13 (CPU only; the offline fallback).
#   -DQKLAB_TORCH=/path    a libtorch folder, a CMake prefix (torch.utils.cmake_prefix_path),
#                          a Python environment with torch, or a Python interpreter that imports
#                          torch (scripts/gpu-check.sh passes the GPU machine's own python3).
#
# Sets QKLAB_TORCH_LIBRARY_DIRS (folders binaries get as RPATH, so that qklab and qklab-cli
# run without LD_LIBRARY_PATH), QKLAB_TORCH_HAS_CUDA and QKLAB_TORCH_VERSION.

# Installing the Python package (pip install ./app/python, SKBUILD): the torch of the Python it
# is installed into, whatever else is on the machine.
if(SKBUILD AND Python3_EXECUTABLE)
  set(_qklab_torch_default "${Python3_EXECUTABLE}")
elseif(SKBUILD AND Python_EXECUTABLE)
  set(_qklab_torch_default "${Python_EXECUTABLE}")
else()
  set(_qklab_torch_default "pip")
endif()
set(QKLAB_TORCH "${_qklab_torch_default}" CACHE STRING
    "LibTorch to build against: pip (scripts/setup.sh's venv), debian, or a path")
if(DEFINED ENV{QKLAB_VENV} AND NOT "$ENV{QKLAB_VENV}" STREQUAL "")
  set(_qklab_default_venv "$ENV{QKLAB_VENV}")
else()
  set(_qklab_default_venv "$ENV{HOME}/.local/share/qklab/venv")
endif()
set(QKLAB_VENV "${_qklab_default_venv}" CACHE PATH
    "virtual environment holding the torch wheel (QKLAB_TORCH=pip)")

# Asks a Python interpreter where its torch keeps the CMake package and the libraries,
# including the nvidia-* wheels' library folders the CUDA libraries are loaded from. -I
# (isolated mode) ignores PYTHONPATH, through which pip's build isolation hides the
# environment's own site-packages: the package builds against the torch it will run with.
function(_qklab_torch_from_python python out_prefix out_libdirs)
  execute_process(
    COMMAND "${python}" -I -c [=[
import glob, os, torch, torch.utils
root = os.path.dirname(os.path.dirname(torch.__file__))
dirs = [os.path.join(os.path.dirname(torch.__file__), "lib")]
dirs += sorted(d for d in glob.glob(os.path.join(root, "nvidia", "*", "lib")) if os.path.isdir(d))
print(torch.utils.cmake_prefix_path)
print(";".join(dirs))
]=]
    OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "qklab: ${python} cannot import torch:\n${_err}\n"
                        "Run scripts/setup.sh (it makes the environment), or configure with "
                        "-DQKLAB_TORCH=debian to build against Debian's libtorch-dev 1.13.")
  endif()
  string(REPLACE "\n" ";" _lines "${_out}")
  list(GET _lines 0 _prefix)
  list(LENGTH _lines _n)
  set(_libdirs "")
  if(_n GREATER 1)
    list(SUBLIST _lines 1 -1 _libdirs)
  endif()
  set(${out_prefix} "${_prefix}" PARENT_SCOPE)
  set(${out_libdirs} "${_libdirs}" PARENT_SCOPE)
endfunction()

# A CUDA LibTorch's CMake package refuses to load without a CUDA toolkit (nvcc, cudart), even
# for a consumer that links only its CPU half, as qklab does. Where no toolkit is installed,
# describe the CPU half from the install folder instead; the CUDA half stays loadable at run
# time (core/engine/src/cuda_backend.cpp needs only the wheel's libraries and a driver).
macro(_qklab_describe_cpu_half root)
  set(TORCH_INCLUDE_DIRS "${root}/include" "${root}/include/torch/csrc/api/include")
  find_library(QKLAB_TORCH_CPU_LIBRARY torch_cpu PATHS "${root}/lib" NO_DEFAULT_PATH)
  find_library(QKLAB_C10_LIBRARY c10 PATHS "${root}/lib" NO_DEFAULT_PATH)
  set(TORCH_LIBRARY "${QKLAB_TORCH_CPU_LIBRARY}")
  set(TORCH_LIBRARIES "${QKLAB_TORCH_CPU_LIBRARY}" "${QKLAB_C10_LIBRARY}")
  file(STRINGS "${root}/share/cmake/Torch/TorchConfig.cmake" _flags REGEX "set\\(TORCH_CXX_FLAGS")
  string(REGEX MATCH "-D_GLIBCXX_USE_CXX11_ABI=[01]" TORCH_CXX_FLAGS "${_flags}")
  set(QKLAB_TORCH_TOOLKIT OFF)
  message(STATUS "qklab: no CUDA toolkit found: linking LibTorch's CPU half from ${root} "
                 "directly (bench_train reports no CUDA memory statistics)")
endmacro()

# Finds Torch from a CMake prefix (the folder holding Torch/ and Caffe2/). The install root
# goes first on CMAKE_PREFIX_PATH so that TorchConfig's own find_library calls see its
# libraries before any system LibTorch (Debian's libtorch-dev may be installed too).
macro(_qklab_find_torch_at prefix)
  get_filename_component(_qklab_torch_root "${prefix}/../.." ABSOLUTE)
  find_package(CUDAToolkit QUIET)
  if(EXISTS "${_qklab_torch_root}/lib/libtorch_cuda.so" AND NOT CUDAToolkit_FOUND)
    _qklab_describe_cpu_half("${_qklab_torch_root}")
  else()
    list(PREPEND CMAKE_PREFIX_PATH "${_qklab_torch_root}")
    set(Caffe2_DIR "${prefix}/Caffe2" CACHE PATH "" FORCE)
    find_package(Torch REQUIRED PATHS "${prefix}" NO_DEFAULT_PATH)
  endif()
endmacro()

set(QKLAB_TORCH_TOOLKIT ON)

set(QKLAB_TORCH_LIBRARY_DIRS "")
if(QKLAB_TORCH STREQUAL "pip")
  if(NOT EXISTS "${QKLAB_VENV}/bin/python")
    message(FATAL_ERROR
      "qklab: no torch environment at ${QKLAB_VENV} (QKLAB_TORCH=pip). Run scripts/setup.sh, "
      "set QKLAB_VENV, or configure with -DQKLAB_TORCH=debian (Debian's libtorch-dev 1.13, "
      "CPU only).")
  endif()
  _qklab_torch_from_python("${QKLAB_VENV}/bin/python" _torch_prefix QKLAB_TORCH_LIBRARY_DIRS)
  _qklab_find_torch_at("${_torch_prefix}")
elseif(QKLAB_TORCH STREQUAL "debian")
  find_package(Torch REQUIRED PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake
                                    /usr/lib/x86_64-linux-gnu/cmake NO_DEFAULT_PATH)
else()
  set(_p "${QKLAB_TORCH}")
  if(EXISTS "${_p}/bin/python")  # a Python environment
    _qklab_torch_from_python("${_p}/bin/python" _p QKLAB_TORCH_LIBRARY_DIRS)
  elseif(NOT IS_DIRECTORY "${_p}" AND EXISTS "${_p}")  # a Python interpreter
    _qklab_torch_from_python("${_p}" _p QKLAB_TORCH_LIBRARY_DIRS)
  endif()
  if(EXISTS "${_p}/share/cmake/Torch")  # a libtorch folder
    set(_p "${_p}/share/cmake")
  endif()
  _qklab_find_torch_at("${_p}")
endif()
if(NOT QKLAB_TORCH STREQUAL "debian" AND DEFINED _qklab_torch_root)
  # TorchConfig's find_library calls search the system before its own folder: with Debian's
  # libtorch-dev also installed they would silently mix two LibTorch versions.
  string(FIND "${TORCH_LIBRARY}" "${_qklab_torch_root}" _at)
  if(NOT _at EQUAL 0)
    message(FATAL_ERROR "qklab: Torch's CMake package is in ${_qklab_torch_root} but its "
                        "library was found at ${TORCH_LIBRARY}. Delete the build folder and "
                        "configure again.")
  endif()
endif()

# The torch library folder, for RPATH, whichever way Torch was found.
get_filename_component(_torch_libdir "${TORCH_LIBRARY}" DIRECTORY)
list(PREPEND QKLAB_TORCH_LIBRARY_DIRS "${_torch_libdir}")
list(REMOVE_DUPLICATES QKLAB_TORCH_LIBRARY_DIRS)

# Torch's version from its own header (TorchConfigVersion is not always installed).
# (2.x moved the numbers to torch/headeronly/version.h.)
set(QKLAB_TORCH_VERSION "unknown")
foreach(_h torch/headeronly/version.h torch/csrc/api/include/torch/version.h)
  foreach(_inc ${TORCH_INCLUDE_DIRS})
    if(QKLAB_TORCH_VERSION STREQUAL "unknown" AND EXISTS "${_inc}/${_h}")
      file(STRINGS "${_inc}/${_h}" _v REGEX "#define TORCH_VERSION_(MAJOR|MINOR|PATCH) ")
      if(_v)
        string(REGEX REPLACE "[^;]*MAJOR ([0-9]+)[^;]*;[^;]*MINOR ([0-9]+)[^;]*;[^;]*PATCH ([0-9]+).*"
                             "\\1.\\2.\\3" QKLAB_TORCH_VERSION "${_v}")
      endif()
    endif()
  endforeach()
endforeach()
set(QKLAB_TORCH_HAS_CUDA OFF)
if(TORCH_CUDA_LIBRARIES OR TARGET torch_cuda OR EXISTS "${_torch_libdir}/libtorch_cuda.so")
  set(QKLAB_TORCH_HAS_CUDA ON)
endif()
# Whether tools may link the CUDA half and call CUDA APIs directly (needs the toolkit).
set(QKLAB_TORCH_CUDA_LINKABLE OFF)
if(TARGET torch_cuda)
  set(QKLAB_TORCH_CUDA_LINKABLE ON)
endif()

# ABI: LibTorch and every C++ library it shares std::string with (here Debian's Qt, built
# with the C++11 ABI) must agree, or linking fails with puzzling undefined symbols.
set(QKLAB_TORCH_CXX11_ABI 1)
if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
  set(QKLAB_TORCH_CXX11_ABI 0)
endif()
if(QKLAB_TORCH_CXX11_ABI EQUAL 0)
  if(QKLAB_GUI)
    message(FATAL_ERROR
      "qklab: this LibTorch (${TORCH_LIBRARY}) is built with the pre-C++11 ABI "
      "(_GLIBCXX_USE_CXX11_ABI=0), but Debian's Qt uses the C++11 ABI, so the app cannot link "
      "against both. Use a cxx11-abi LibTorch (the PyPI wheels since 2.7 are), or build without "
      "the app: -DQKLAB_GUI=OFF.")
  endif()
  # Core and CLI alone: compile all of qklab with torch's ABI so their std::strings agree.
  # The tests link Debian's GoogleTest, built with the C++11 ABI: they cannot come along.
  add_compile_definitions(_GLIBCXX_USE_CXX11_ABI=0)
  if(QKLAB_TESTS)
    message(WARNING "qklab: pre-C++11-ABI LibTorch: the tests (Debian's GoogleTest uses the "
                    "C++11 ABI) are switched off")
    set(QKLAB_TESTS OFF CACHE BOOL "Build the test suite" FORCE)
  endif()
endif()

# Binaries find torch (and the CUDA libraries of the nvidia-* wheels) through their RPATH,
# in the build tree and once installed.
# Exactly these folders: the automatic build RPATH would also carry the link folders that
# TorchConfig lists (MKL's Windows folders, the toolkit's /usr/local/cuda/lib).
set(CMAKE_BUILD_WITH_INSTALL_RPATH ON)
set(CMAKE_INSTALL_RPATH "${QKLAB_TORCH_LIBRARY_DIRS}")
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH OFF)

message(STATUS "qklab: LibTorch ${QKLAB_TORCH_VERSION} (QKLAB_TORCH=${QKLAB_TORCH}) from "
               "${_torch_libdir}; CUDA ${QKLAB_TORCH_HAS_CUDA}; C++11 ABI "
               "${QKLAB_TORCH_CXX11_ABI}")

# qklab_torch: what the engine and its white-box tests compile and link against.
#
# With a CUDA LibTorch, only the CPU half (libtorch_cpu, libc10) is linked. Its CUDA half
# (libtorch_cuda with cuBLAS, cuDNN, NCCL...) costs a CPU-only process about 210 MB of resident
# memory for its static data alone, so core/engine/src/cuda_backend.cpp loads it at start-up only on
# machines with an NVIDIA driver (QKLAB_CUDA=on|off overrides). qklab_torch_full links the
# whole LibTorch, CUDA included, for the tools that call CUDA APIs directly (bench_train's
# allocator statistics): the CUDA half and the toolkit's runtime still link in every build.
add_library(qklab_torch INTERFACE)
add_library(qklab_torch_full INTERFACE)
target_compile_options(qklab_torch INTERFACE ${TORCH_CXX_FLAGS})
target_compile_options(qklab_torch_full INTERFACE ${TORCH_CXX_FLAGS})
target_link_libraries(qklab_torch_full INTERFACE ${TORCH_LIBRARIES})
if(NOT QKLAB_TORCH_TOOLKIT)  # the CPU half, described by _qklab_describe_cpu_half
  target_link_libraries(qklab_torch INTERFACE ${TORCH_LIBRARIES})
  target_include_directories(qklab_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
  target_include_directories(qklab_torch_full SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
  target_compile_features(qklab_torch INTERFACE cxx_std_20)
  target_compile_features(qklab_torch_full INTERFACE cxx_std_20)
  set(_cuda_lib "${_torch_libdir}/libtorch_cuda.so")
elseif(TARGET torch_cpu_library AND TARGET torch_cuda)
  target_link_libraries(qklab_torch INTERFACE torch_cpu_library c10)
  target_include_directories(qklab_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
  get_target_property(_features torch INTERFACE_COMPILE_FEATURES)
  if(_features)
    target_compile_features(qklab_torch INTERFACE ${_features})
  endif()
  get_target_property(_cuda_lib torch_cuda IMPORTED_LOCATION_RELEASE)
  if(NOT _cuda_lib)
    get_target_property(_cuda_lib torch_cuda IMPORTED_LOCATION)
  endif()
  if(NOT _cuda_lib)
    set(_cuda_lib "${_torch_libdir}/libtorch_cuda.so")
  endif()
else()
  target_link_libraries(qklab_torch INTERFACE ${TORCH_LIBRARIES})
endif()
if(_cuda_lib)
  target_compile_definitions(qklab_torch INTERFACE QKLAB_TORCH_CUDA_LIBRARY="${_cuda_lib}")
  message(STATUS "qklab: libtorch_cuda loaded at run time where an NVIDIA driver is present "
                 "(${_cuda_lib})")
endif()
