# QklabPch.cmake — one precompiled LibTorch header for the whole build.
#
# torch/torch.h costs a file about 19 s of CPU before a line of qklab's is compiled, and about
# 30 files include it (the engine, the white-box tests, the benchmarks). The engine's
# precompiled header (core/CMakeLists.txt) is made once; the other targets reuse it. GCC uses a
# precompiled header only where the flags that shape it agree, so a target that reuses it
# compiles with -fPIC like the engine: a library through its POSITION_INDEPENDENT_CODE, a
# program with the flag itself (the property would give it -fPIE, which GCC tells apart).
# -Winvalid-pch, which CMake adds, makes a mismatch an error under QKLAB_WERROR instead of a
# silent slow build.
#
#   -DQKLAB_PCH=OFF   compile every file from the headers (clang-tidy, a compiler without PCH)
option(QKLAB_PCH "Precompile LibTorch's headers once and reuse them in every torch target" ON)

function(qklab_reuse_torch_pch target)
  if(QKLAB_PCH)
    target_precompile_headers(${target} REUSE_FROM qklab_engine)
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "EXECUTABLE")
      target_compile_options(${target} PRIVATE -fPIC)
    else()
      set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    endif()
  endif()
endfunction()
