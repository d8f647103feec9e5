# Sourced by the MNIST shell tests: skips (exit 77) without Fashion-MNIST, sets $data to its folder,
# makes $work a fresh empty folder and defines fail().
data="${KILN_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}"
if [ ! -d "$data" ]; then
  echo "skipped: no Fashion-MNIST in $data (sudo apt-get install dataset-fashion-mnist)"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
