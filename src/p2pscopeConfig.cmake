# find_package(p2pscope): the imported target p2pscope::p2pscope (the shared library and its headers).
include("${CMAKE_CURRENT_LIST_DIR}/p2pscopeTargets.cmake")
