#!/usr/bin/env bash
# Collects what kiln's build needs from Debian's packages into one folder (default build/gpu_vendor,
# ignored by git), laid out as an install prefix, for a machine that has a compiler and CMake but
# none of these packages: the GPU machine of scripts/gpu_check.sh, which gets the folder through the
# device tool's `carry`. CMake uses it with -DKILN_VENDOR_DIR=<folder>, and only for what the system
# lacks (cmake/vendor.cmake). It holds:
#   include/, share/cmake/   nlohmann-json and CLI11 (header-only) with their CMake packages
#   include/, lib/libz.a     zlib's headers and static library (gzip-compressed datasets)
#   httplib/httplib.h        cpp-httplib's upstream single header, of Debian's version: Debian's own
#                            header needs its shared library, and that one needs OpenSSL and brotli
#   googletest/              GoogleTest's sources, built with the tests
#   fashion-mnist/           the test split and the first $TRAIN_IMAGES training images, gzipped
# usage: scripts/gpu_vendor.sh [FOLDER]
# The upstream header comes from a clone of https://github.com/yhirose/cpp-httplib: HTTPLIB_GIT names
# its git directory (default: this workplace's mirror), or HTTPLIB_HEADER a ready httplib.h.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/gpu_vendor}
TRAIN_IMAGES=${TRAIN_IMAGES:-10000}
mnist=/usr/share/datasets/fashion-mnist
need() { [ -e "$1" ] || { echo "gpu_vendor: missing $1: install $2 (scripts/setup.sh)" >&2; exit 1; }; }
need /usr/include/nlohmann/json.hpp nlohmann-json3-dev
need /usr/include/CLI/CLI.hpp libcli11-dev
need /usr/include/zlib.h zlib1g-dev
need /usr/src/googletest/CMakeLists.txt googletest
need $mnist/t10k-images-idx3-ubyte.gz dataset-fashion-mnist

rm -rf "$out"
mkdir -p "$out"/{include,lib,share/cmake,httplib,fashion-mnist}
cp -r /usr/include/nlohmann /usr/include/CLI /usr/include/zlib.h /usr/include/zconf.h "$out/include/"
# Debian's CMake packages find their headers relative to their own folder, so they work from here.
cp -r /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 "$out/share/cmake/"
cp "/usr/lib/$(gcc -print-multiarch)/libz.a" "$out/lib/"
cp -r /usr/src/googletest "$out/googletest"
rm -rf "$out"/googletest/{docs,googlemock/docs,googletest/docs,googletest/samples}

version=$(pkg-config --modversion cpp-httplib 2>/dev/null || echo 0.11.4)
if [ -n "${HTTPLIB_HEADER:-}" ]; then
  cp "$HTTPLIB_HEADER" "$out/httplib/httplib.h"
else
  git --git-dir="${HTTPLIB_GIT:-/work/.mirror/yhirose+cpp-httplib/repo}" show "v$version:httplib.h" >"$out/httplib/httplib.h"
fi
grep -q "CPPHTTPLIB_VERSION \"$version\"" "$out/httplib/httplib.h" ||
  { echo "gpu_vendor: $out/httplib/httplib.h is not cpp-httplib $version" >&2; exit 1; }

# The test split whole; of the training split only the first TRAIN_IMAGES images and labels, so the
# folder stays small (an idx file's header holds its item count, rewritten to match).
cp $mnist/t10k-*.gz "$out/fashion-mnist/"
/usr/bin/python3 - "$mnist" "$out/fashion-mnist" "$TRAIN_IMAGES" <<'EOF'
import gzip, struct, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for name, item_bytes, header in (("train-images-idx3-ubyte", 28 * 28, 16), ("train-labels-idx1-ubyte", 1, 8)):
    data = gzip.open(f"{src}/{name}.gz").read()
    magic, count = struct.unpack(">II", data[:8])
    n = min(n, count)
    with gzip.open(f"{dst}/{name}.gz", "wb") as f:
        f.write(struct.pack(">II", magic, n) + data[8:header] + data[header:header + n * item_bytes])
EOF
echo "gpu_vendor: $(du -sh "$out" | cut -f1) in $out (carry it as $out)"
