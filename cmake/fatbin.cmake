# Device code: one fatbin with machine code for each listed GPU architecture plus
# PTX for newer ones, embedded into the library with .incbin and loaded with
# cuModuleLoadData at run time.
set(P2PSCOPE_CUDA_ARCHS "80;86;89;90;100;120" CACHE STRING "SASS architectures in the fatbin")
set(P2PSCOPE_PTX_ARCH "90" CACHE STRING "PTX architecture embedded for newer GPUs")

set(_psc_gencode "")
foreach(a IN LISTS P2PSCOPE_CUDA_ARCHS)
  list(APPEND _psc_gencode "-gencode=arch=compute_${a},code=sm_${a}")
endforeach()
list(APPEND _psc_gencode "-gencode=arch=compute_${P2PSCOPE_PTX_ARCH},code=compute_${P2PSCOPE_PTX_ARCH}")

set(PSC_KERNEL_SOURCES
  ${PROJECT_SOURCE_DIR}/src/kernels/psc_kernels.cu)
set(PSC_FATBIN ${PROJECT_BINARY_DIR}/psc_kernels.fatbin)
add_custom_command(
  OUTPUT ${PSC_FATBIN}
  COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -fatbin -O3 -std=c++17
          -I${PROJECT_SOURCE_DIR}/src/lib -I${PROJECT_SOURCE_DIR}/include -I${PROJECT_BINARY_DIR}/include
          ${_psc_gencode}
          -o ${PSC_FATBIN} ${PSC_KERNEL_SOURCES}
  DEPENDS ${PSC_KERNEL_SOURCES} ${PROJECT_SOURCE_DIR}/src/lib/pattern/pattern.h
          ${PROJECT_SOURCE_DIR}/src/lib/coll/coll_values.h
          ${PROJECT_SOURCE_DIR}/src/kernels/psc_allreduce.cuh ${PROJECT_SOURCE_DIR}/src/kernels/psc_allreduce_twoshot.cuh
          ${PROJECT_SOURCE_DIR}/src/kernels/psc_allreduce_ce.cuh ${PROJECT_SOURCE_DIR}/src/kernels/psc_allgather.cuh
          ${PROJECT_SOURCE_DIR}/src/kernels/psc_compute_load.cuh
          ${PROJECT_SOURCE_DIR}/src/lib/allreduce/ar_args.h
  COMMENT "nvcc: building device fatbin (sm ${P2PSCOPE_CUDA_ARCHS} + compute_${P2PSCOPE_PTX_ARCH})"
  VERBATIM)

set(PSC_FATBIN_ASM ${PROJECT_BINARY_DIR}/psc_fatbin_embed.S)
configure_file(${PROJECT_SOURCE_DIR}/cmake/fatbin_embed.S.in ${PSC_FATBIN_ASM} @ONLY)
set_source_files_properties(${PSC_FATBIN_ASM} PROPERTIES OBJECT_DEPENDS ${PSC_FATBIN})
add_custom_target(psc_fatbin DEPENDS ${PSC_FATBIN})
