#!/usr/bin/env bash
# Runs tinygrad's own test files against kiln through the import shim in shim/ (tinygrad's module
# names over kiln) and prints the pass count per file. Needs a tinygrad checkout (its test/ and
# extra/ folders): the files are read from there, nothing of tinygrad's library is imported.
#   bash tests/python/tinygrad_suite/run.sh /path/to/tinygrad [BUILD_DIR] [pytest args...]
set -euo pipefail
tinygrad=${1:?usage: run.sh TINYGRAD_CHECKOUT [BUILD_DIR] [pytest args]}
build=${2:-build/release}
shift $(( $# >= 2 ? 2 : 1 ))
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/test/unit" "$work/extra"
cp "$tinygrad"/test/__init__.py "$tinygrad"/test/helpers.py "$work/test/"
cp -r "$tinygrad"/test/backend "$work/test/"
cp "$tinygrad"/test/unit/__init__.py "$tinygrad"/test/unit/test_dtype_spec.py "$work/test/unit/"
cp "$tinygrad"/extra/gradcheck.py "$work/extra/" && touch "$work/extra/__init__.py"
files=(test_ops test_nn test_optim test_tensor test_dtype)
cd "$work"
for f in "${files[@]}"; do
  RUN_SLOW=1 PYTHONPATH="$here/shim:$root/python:$root/$build/python:$work" /usr/bin/python3 -m pytest -q -p no:cacheprovider \
    -o addopts="" --junitxml="$work/$f.xml" "test/backend/$f.py" "$@" >"$work/$f.log" 2>&1 || true
  /usr/bin/python3 - "$work/$f.xml" "$f" <<'PY'
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
s = r if r.tag == "testsuite" else r.find("testsuite")
t, fl, e, sk = (int(s.get(k, 0)) for k in ("tests", "failures", "errors", "skipped"))
print(f"{sys.argv[2]:12s} passed {t - fl - e - sk:4d}  failed {fl:4d}  errors {e:4d}  skipped {sk:4d}  of {t}")
PY
  [ -n "${KEEP_LOGS:-}" ] && cp "$work/$f.log" "$work/$f.xml" "$KEEP_LOGS/"
done
