# Installing kiln: cmake --install <build> [--prefix <dir>] puts the public headers (include/kiln/),
# the library, a CMake package (find_package(kiln) gives kiln::kiln) and kiln.pc (pkg-config) under
# the prefix, in GNUInstallDirs' folders. The library is static unless BUILD_SHARED_LIBS=ON; a
# static one exports the libraries it links privately, so consumers link them too
# (cmake/kilnConfig.cmake.in). Included from the top-level CMakeLists.txt after the kiln target.
include(CMakePackageConfigHelpers)

# libkiln.so.0.1 when shared: 0.x releases may break the ABI at every minor version.
set_target_properties(kiln PROPERTIES VERSION ${PROJECT_VERSION}
                                      SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
install(TARGETS kiln EXPORT kilnTargets)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kiln DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The CMake package.
set(KILN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${KILN_CMAKE_DIR})
get_target_property(KILN_LIBRARY_TYPE kiln TYPE)
set(KILN_WITH_OPENCL ${OpenCL_FOUND})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kilnConfig.cmake.in ${PROJECT_BINARY_DIR}/kilnConfig.cmake
                              INSTALL_DESTINATION ${KILN_CMAKE_DIR})
# 0.x: a new minor version may change the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kilnConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/kilnConfig.cmake ${PROJECT_BINARY_DIR}/kilnConfigVersion.cmake
        DESTINATION ${KILN_CMAKE_DIR})

# kiln.pc. A static library's dependencies go in Requires and Libs (pkg-config --libs lists them
# without --static), a shared one's in Requires.private.
set(KILN_PC_DEPENDENCIES "zlib cpp-httplib")
if(OpenCL_FOUND)
  string(APPEND KILN_PC_DEPENDENCIES " OpenCL")
endif()
set(KILN_PC_LIBS "-pthread")
# nlohmann/json.hpp is in kiln's public headers (kiln/nn/gguf_json.h): every consumer compiles with it.
set(KILN_PC_PUBLIC "nlohmann_json")
if(KILN_LIBRARY_TYPE STREQUAL "STATIC_LIBRARY")
  set(KILN_PC_REQUIRES "${KILN_PC_PUBLIC} ${KILN_PC_DEPENDENCIES}")
  set(KILN_PC_REQUIRES_PRIVATE "")
  foreach(lib ${CMAKE_DL_LIBS})
    string(APPEND KILN_PC_LIBS " -l${lib}")
  endforeach()
else()
  set(KILN_PC_REQUIRES ${KILN_PC_PUBLIC})
  set(KILN_PC_REQUIRES_PRIVATE ${KILN_PC_DEPENDENCIES})
endif()
# The prefix relative to the .pc file, so an installed tree still works after being moved.
file(RELATIVE_PATH KILN_PC_PREFIX_FROM_PCFILEDIR ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" KILN_PC_PREFIX_FROM_PCFILEDIR "${KILN_PC_PREFIX_FROM_PCFILEDIR}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/kiln.pc.in ${PROJECT_BINARY_DIR}/kiln.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
