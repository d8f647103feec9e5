# Dependencies from KILN_VENDOR_DIR where the system lacks them: a folder laid out as an install
# prefix that scripts/gpu_vendor.sh fills from Debian's packages, for a machine without them (the GPU
# machine of scripts/gpu_check.sh). It is searched after every system path, so installed packages
# win. Included from the top-level CMakeLists.txt before the find_package calls.
set(KILN_VENDOR_DIR "" CACHE PATH "Folder of dependencies used where the system lacks them (scripts/gpu_vendor.sh)")
if(KILN_VENDOR_DIR)
  if(NOT EXISTS ${KILN_VENDOR_DIR}/include)
    message(FATAL_ERROR "KILN_VENDOR_DIR=${KILN_VENDOR_DIR} holds no include/: expected a folder made by scripts/gpu_vendor.sh")
  endif()
  # nlohmann-json, CLI11 (their CMake packages) and zlib (FindZLIB) are found there like installed ones.
  list(APPEND CMAKE_SYSTEM_PREFIX_PATH ${KILN_VENDOR_DIR})
endif()

# cpp-httplib (the VIZ server) as the target PkgConfig::HTTPLIB: Debian's (a header and a shared
# library, through pkg-config), else the vendored upstream single header, which needs no library.
function(kiln_find_httplib)
  find_package(PkgConfig)
  if(PkgConfig_FOUND)
    pkg_check_modules(HTTPLIB IMPORTED_TARGET GLOBAL cpp-httplib)
  endif()
  if(TARGET PkgConfig::HTTPLIB)
    return()
  endif()
  if(NOT EXISTS ${KILN_VENDOR_DIR}/httplib/httplib.h)
    message(FATAL_ERROR "cpp-httplib not found: install libcpp-httplib-dev and pkg-config, or pass "
                        "-DKILN_VENDOR_DIR=<folder made by scripts/gpu_vendor.sh>")
  endif()
  message(STATUS "kiln: cpp-httplib from ${KILN_VENDOR_DIR}/httplib (single header)")
  add_library(PkgConfig::HTTPLIB INTERFACE IMPORTED GLOBAL)
  target_include_directories(PkgConfig::HTTPLIB INTERFACE ${KILN_VENDOR_DIR}/httplib)
endfunction()

# GoogleTest as GTest::gtest and GTest::gtest_main: the installed one, else built from the vendored
# sources with the tests.
macro(kiln_find_gtest)
  find_package(GTest)
  if(NOT GTest_FOUND)
    if(NOT EXISTS ${KILN_VENDOR_DIR}/googletest/CMakeLists.txt)
      message(FATAL_ERROR "GoogleTest not found: install libgtest-dev, pass -DKILN_BUILD_TESTS=OFF, or pass "
                          "-DKILN_VENDOR_DIR=<folder made by scripts/gpu_vendor.sh>")
    endif()
    message(STATUS "kiln: GoogleTest built from ${KILN_VENDOR_DIR}/googletest")
    set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    add_subdirectory(${KILN_VENDOR_DIR}/googletest ${PROJECT_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)
  endif()
endmacro()
