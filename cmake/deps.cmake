# hwloc, jansson and cmocka: pkg-config when it is there, else plain search paths.
# CMAKE_PREFIX_PATH wins over the pkg-config hints, so an unpacked prefix
# (scripts/gpu-deps.sh) is found before a system copy without headers.
find_package(PkgConfig QUIET)

function(psc_find_dep NAME HEADER LIBNAME)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(PC_${NAME} QUIET ${LIBNAME})
  endif()
  find_path(${NAME}_INCLUDE_DIR ${HEADER} HINTS ${PC_${NAME}_INCLUDE_DIRS})
  find_library(${NAME}_LIBRARY ${LIBNAME} HINTS ${PC_${NAME}_LIBRARY_DIRS})
  if(${NAME}_INCLUDE_DIR AND ${NAME}_LIBRARY)
    add_library(psc_dep_${LIBNAME} INTERFACE IMPORTED GLOBAL)
    target_include_directories(psc_dep_${LIBNAME} INTERFACE ${${NAME}_INCLUDE_DIR})
    target_link_libraries(psc_dep_${LIBNAME} INTERFACE ${${NAME}_LIBRARY})
    set(${NAME}_FOUND TRUE PARENT_SCOPE)
  else()
    set(${NAME}_FOUND FALSE PARENT_SCOPE)
  endif()
endfunction()

psc_find_dep(HWLOC hwloc.h hwloc)
psc_find_dep(JANSSON jansson.h jansson)
if(NOT HWLOC_FOUND OR NOT JANSSON_FOUND)
  message(FATAL_ERROR "hwloc and jansson headers are required: apt-get install libhwloc-dev libjansson-dev")
endif()
psc_find_dep(CMOCKA cmocka.h cmocka)
