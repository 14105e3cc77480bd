# cuda_module_build.cmake - runs the nvcc command that builds libsavedmodel_cuda.so (CMakeLists.txt,
# CMD the command's arguments joined by |, OUT the module) and turns its failure into a warning: the core library and the CLI
# do not need the module, so a toolkit that cannot compile it must not fail the build (configure
# with -DSM_CUDA_REQUIRED=ON to make it fail). A failed build leaves no module behind.
string(REPLACE "|" ";" cmd "${CMD}")
execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  file(REMOVE "${OUT}")
  message(WARNING "CUDA backend: libsavedmodel_cuda.so did not compile (--device gpu will say so):\n${out}")
elseif(out)
  message("${out}")
endif()
