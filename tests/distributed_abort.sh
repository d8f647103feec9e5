#!/usr/bin/env bash
# A rank that fails ends every rank of the job within seconds, with its message, while the other rank
# waits for it in a collective: kiln::distributed calls MPI_Abort on an uncaught exception and on a
# nonzero exit status. Without that the job would hang until `timeout` ends it (status 124).
#   distributed_abort.sh MPIEXEC DISTRIBUTED_FAIL
set -u
mpiexec=$1 program=$2
status=0
for mode in throw exit; do
  start=$(date +%s)
  output=$(timeout 60 "$mpiexec" --allow-run-as-root --oversubscribe -np 2 "$program" "$mode" 2>&1)
  rc=$?
  elapsed=$(($(date +%s) - start))
  problem=""
  if [ "$rc" -eq 0 ]; then problem="the job succeeded"
  elif [ "$rc" -eq 124 ]; then problem="the job hung (ended by timeout after 60 s)"
  elif [ "$elapsed" -gt 20 ]; then problem="the job took ${elapsed} s to end"
  elif ! grep -q "rank 1 failed on purpose" <<<"$output"; then problem="the rank's message is missing"
  elif ! grep -q "rank 1 of 2.*aborting the job" <<<"$output"; then problem="the abort notice is missing"
  fi
  if [ -n "$problem" ]; then
    echo "FAIL ($mode): $problem; exit status $rc; output:"
    echo "$output"
    status=1
  else
    echo "ok ($mode): exit status $rc after ${elapsed} s"
  fi
done
exit $status
