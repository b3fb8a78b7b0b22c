# The manual pages: docs/p2pscope.1.md (the command) and docs/libp2pscope.3.md (the library), made troff by
# go-md2man at build time and installed in section 1 and 3, with psc_copy(3) and the other names of the
# library's main calls as links to libp2pscope(3). Without go-md2man the build goes on without pages.
include(GNUInstallDirs)
find_program(P2PSCOPE_GO_MD2MAN go-md2man DOC "go-md2man, to make the manual pages from docs/*.md")
if(NOT P2PSCOPE_GO_MD2MAN)
  message(STATUS "go-md2man not found: the manual pages (p2pscope.1, libp2pscope.3) are not built or installed; "
                 "install go-md2man (Debian, Ubuntu: apt-get install go-md2man) and configure again")
  set(P2PSCOPE_MAN_PAGES OFF)
  return()
endif()
set(P2PSCOPE_MAN_PAGES ON)
set(psc_man_pages)
foreach(page p2pscope.1 libp2pscope.3)
  string(REGEX REPLACE ".*\\." "" section ${page})
  add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/man/${page}
                     COMMAND ${CMAKE_COMMAND} -DMD2MAN=${P2PSCOPE_GO_MD2MAN}
                             -DIN=${PROJECT_SOURCE_DIR}/docs/${page}.md -DOUT=${PROJECT_BINARY_DIR}/man/${page}
                             -DVERSION=${PROJECT_VERSION} -P ${PROJECT_SOURCE_DIR}/cmake/md2man.cmake
                     DEPENDS ${PROJECT_SOURCE_DIR}/docs/${page}.md ${PROJECT_SOURCE_DIR}/cmake/md2man.cmake
                     COMMENT "Making the manual page ${page}" VERBATIM)
  list(APPEND psc_man_pages ${PROJECT_BINARY_DIR}/man/${page})
  install(FILES ${PROJECT_BINARY_DIR}/man/${page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
endforeach()
add_custom_target(man ALL DEPENDS ${psc_man_pages})
# `man psc_copy` and the like open the library's page (a .so link, as man-db and mandoc read it).
foreach(name psc_copy psc_copy_route psc_copy_calibration_load psc_peer_enable psc_peer_disable psc_mem_alloc
             psc_mem_free psc_context_create)
  file(WRITE ${PROJECT_BINARY_DIR}/man/${name}.3 ".so man3/libp2pscope.3\n")
  install(FILES ${PROJECT_BINARY_DIR}/man/${name}.3 DESTINATION ${CMAKE_INSTALL_MANDIR}/man3)
endforeach()
