# Sourced by bench/run.sh. Names this CPU for its results folder and gives the reference BLAS its
# best kernels:
#   KILN_BENCH_CPU     model and vector features from /proc/cpuinfo, e.g. amd-epyc-zen3-avx2 or
#                      intel-xeon-platinum-8592-avx512-bf16: each CPU met keeps its own record
#   OPENBLAS_CORETYPE  exported only where OpenBLAS, left to itself, picks a weaker kernel set than the
#                      CPU's features allow (a model newer than the library falls back to its generic
#                      "Prescott" kernels); PyTorch's matmuls go through the same library. A value the
#                      caller set is kept.

cpu_field() { grep -m1 "^$1[[:space:]]*:" /proc/cpuinfo | sed 's/^[^:]*:[[:space:]]*//'; }
cpu_flags=" $(cpu_field flags) "
cpu_has() { for f in "$@"; do [[ $cpu_flags == *" $f "* ]] || return 1; done; }

# The vector tier, and the OpenBLAS kernel set made for it.
if cpu_has avx512f avx512bw avx512vl avx512dq; then
  if cpu_has avx512_bf16; then cpu_tier=avx512-bf16 blas_best=Cooperlake; else cpu_tier=avx512 blas_best=SkylakeX; fi
elif cpu_has avx2 fma; then
  cpu_tier=avx2
  if [[ $(cpu_field vendor_id) == AuthenticAMD ]]; then blas_best=Zen; else blas_best=Haswell; fi
else
  cpu_tier=sse blas_best=
fi

# AMD's model names often hide the core generation (a VM's "AMD EPYC"): from the family and model.
cpu_generation=
if [[ $(cpu_field vendor_id) == AuthenticAMD ]]; then
  family=$(cpu_field 'cpu family') model=$(cpu_field model)
  case $family in
    23) if ((model >= 0x30)); then cpu_generation=zen2; else cpu_generation=zen; fi ;;
    25) if cpu_has avx512f; then cpu_generation=zen4; else cpu_generation=zen3; fi ;;
    26) cpu_generation=zen5 ;;
  esac
fi

# "Intel(R) Xeon(R) Platinum 8592+" -> intel-xeon-platinum-8592; "AMD EPYC 7B13 64-Core Processor" ->
# amd-epyc-7b13.
cpu_name=$(cpu_field 'model name' | tr 'A-Z' 'a-z' |
  sed -E 's/\((r|tm)\)//g; s/@.*//; s/[0-9]+-core//; s/\b(cpu|processor)\b//g; s/[^a-z0-9]+/-/g; s/^-+|-+$//g')
KILN_BENCH_CPU=$(echo "${cpu_name:-unknown-cpu}-${cpu_generation}-${cpu_tier}" | sed -E 's/-+/-/g')

# Ranks OpenBLAS's x86-64 kernel sets by the vector instructions they use.
blas_rank() {
  case $1 in
    Cooperlake | SapphireRapids) echo 4 ;;
    SkylakeX) echo 3 ;;
    Haswell | Zen) echo 2 ;;
    Sandybridge | Bulldozer | Piledriver | Steamroller | Excavator) echo 1 ;;
    *) echo 0 ;;
  esac
}
# The kernel set OpenBLAS picks for this CPU on its own ("" without OpenBLAS).
openblas_own_core() {
  env -u OPENBLAS_CORETYPE /usr/bin/python3 -c 'import ctypes
lib = ctypes.CDLL("libopenblas.so.0")
lib.openblas_get_corename.restype = ctypes.c_char_p
print(lib.openblas_get_corename().decode())' 2>/dev/null || true
}

if [[ -z ${OPENBLAS_CORETYPE:-} && -n $blas_best ]]; then
  blas_own=$(openblas_own_core)
  if [[ -n $blas_own ]] && (($(blas_rank "$blas_own") < $(blas_rank "$blas_best"))); then
    echo "bench: OpenBLAS picks its $blas_own kernels on this $cpu_tier CPU; OPENBLAS_CORETYPE=$blas_best"
    export OPENBLAS_CORETYPE=$blas_best
  fi
fi
echo "bench: CPU $KILN_BENCH_CPU, OpenBLAS core ${OPENBLAS_CORETYPE:-its own choice}"
