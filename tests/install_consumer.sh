#!/usr/bin/env bash
# kiln as a program outside its source tree gets it: installs the build into a fresh prefix, then
#   1. configures and builds examples/custom_device against it with find_package(kiln), and runs it
#      (the MYCPU device: quickstart and a training step, checked against references);
#   2. compiles tests/install/pkg_config_check.cpp with `pkg-config --cflags --libs kiln` and runs it.
# Usage: install_consumer.sh <kiln build dir> <kiln source dir> <work dir> <C++ compiler> [extra flags]
# (extra flags: what the build was compiled with that consumers must link with too, e.g. sanitizers).
set -euo pipefail
build=$1 source=$2 work=$3 cxx=$4 flags=${5:-}
prefix=$work/prefix

rm -rf "$work"
mkdir -p "$work"
echo "== cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
test -f "$prefix/include/kiln/device.h"

echo "== find_package(kiln): building examples/custom_device"
CXXFLAGS="$flags" LDFLAGS="$flags" cmake -S "$source/examples/custom_device" -B "$work/custom_device" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" > "$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
cmake --build "$work/custom_device" -j2
"$work/custom_device/custom_device"

echo "== pkg-config kiln"
pc=$(dirname "$(find "$prefix" -name kiln.pc)")
export PKG_CONFIG_PATH=$pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
pkg-config --modversion kiln
# shellcheck disable=SC2046,SC2086  # pkg-config's flags are words
"$cxx" -std=c++20 $flags "$source/tests/install/pkg_config_check.cpp" -o "$work/pkg_config_check" \
  $(pkg-config --cflags --libs kiln) -Wl,-rpath,"$(pkg-config --variable=libdir kiln)"  # rpath: for a shared libkiln
"$work/pkg_config_check"
