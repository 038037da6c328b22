#!/usr/bin/env bash
# Benchmarks of libpgmpitune's call path (prints figures; not a test):
#  (a) overhead per call on the default path against the bare MPI library (PMPI_Allreduce), 8-byte
#      MPI_Allreduce, 1 and 2 ranks, median of 5 mpiruns (each the median of interleaved blocks);
#      goal <= 10 ns;
#  (b) the same with a profile of 10,000 ranges for MPI_Allreduce loaded (the call takes the tuned path:
#      profile index + bucket table + range search, then the default), plus the pure lookup cost
#      (pgmpitune_selected over random sizes); goal <= 50 ns;
#  (c) the default path with usage records on (PGMPITUNE_USAGE_DIR, one call in 64 sampled and timed with
#      CLOCK_MONOTONIC, the rest counted down in a thread-local counter); goal <= 10 ns, as (a).
#      The record's cost at MPI_Finalize is tests/bench/usage_finalize.sh.
# The machine is shared by several helpers: times are thread CPU time (preemption excluded) but caches
# and frequency are shared too; figures at 2 ranks are noisier, look at the spread of the 5 runs.
#   tests/bench/lib_overhead.sh [openmpi|mpich|all]
set -euo pipefail
. "$(dirname "$0")/overhead_common.bash"

for mpi in $mpis; do
  overhead_build "$mpi"
  for np in 1 2; do
    if [ $np = 1 ]; then iter=200000; else iter=${ITER2:-5000}; fi
    # profile with 10,000 ranges for this p, alternating default / a mock-up, 8 bytes in a gap
    pdir=$work/prof.$np; mkdir -p "$pdir"
    { echo "# pgtune profile"; echo "#@pgmpi profile_version 1"; echo MPI_Allreduce; echo $np; echo 2
      echo "1 default"; echo "2 allreduce_as_reduce_bcast"; echo 10000
      awk 'BEGIN { for (i = 0; i < 10000; i++) printf "%d %d %d\n", i*16 + 9, i*16 + 15, 1 + i % 2 }'; } >"$pdir/allreduce_p$np.prf"
    "$prefix/bin/pgmpitune-check" "$pdir" >/dev/null
    for mode in default usage lookup; do
      : >"$work/out"
      for r in $(seq "$RUNS"); do
        if [ $mode = default ]; then
          env -u PGMPITUNE_PROFILE_DIR -u PGMPI_PROFILE_PATH "${run[@]}" -np $np "$work/ovh.$mpi" $iter ${BLOCKS:-21} >>"$work/out"
        elif [ $mode = usage ]; then
          mkdir -p "$work/spool"
          env -u PGMPITUNE_PROFILE_DIR -u PGMPI_PROFILE_PATH PGMPITUNE_USAGE_DIR="$work/spool" "${run[@]}" -np $np "$work/ovh.$mpi" $iter ${BLOCKS:-21} >>"$work/out"
        else
          PGMPITUNE_PROFILE_DIR=$pdir LOOKUP=1 "${run[@]}" -np $np "$work/ovh.$mpi" $iter ${BLOCKS:-21} >>"$work/out"
        fi
      done
      o=$(field overhead_ns <"$work/out" | median); w=$(field wrapped_ns <"$work/out" | median)
      b=$(field bare_ns <"$work/out" | median); spread=$(field overhead_ns <"$work/out" | sort -g | tr '\n' ' ')
      if [ $mode = usage ]; then
        printf '%-8s p=%d  (c) usage on:   overhead %6s ns/call  (wrapped %s ns, bare %s ns; runs: %s)\n' "$mpi" $np "$o" "$w" "$b" "$spread"
      elif [ $mode = default ]; then
        printf '%-8s p=%d  (a) default path: overhead %6s ns/call  (wrapped %s ns, bare %s ns; runs: %s)\n' "$mpi" $np "$o" "$w" "$b" "$spread"
      else
        l=$(field lookup_ns <"$work/out" | median)
        printf '%-8s p=%d  (b) 10,000 ranges: overhead %6s ns/call, pure lookup %s ns  (wrapped %s ns, bare %s ns; runs: %s)\n' "$mpi" $np "$o" "$l" "$w" "$b" "$spread"
      fi
    done
  done
done
