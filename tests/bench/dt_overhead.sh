#!/usr/bin/env bash
# The hot-path cost of the datatype check (GL4 replacement, lib/src/core/datatypes.c) on a contiguous
# 8-byte MPI_Bcast, with lib_overhead.c (the same benchmark as the library's overhead figures,
# tests/bench/lib_overhead.sh): per call, wrapped MPI_Bcast minus PMPI_Bcast in one process, interleaved
# blocks, median of RUNS mpiruns, in three settings:
#   none      no profile: the check is one load and branch (and the whole wrapper is the overhead);
#   dtprofile a datatype profile loaded that matches no committed type: still one load and branch;
#   live      a datatype profile and a replaced type alive: every call hashes its handle into the
#             256-bit filter (MPI_DOUBLE is never replaced, so the call still uses the default).
# The same for a ping-pong MPI_Send + MPI_Recv of 8 bytes between ranks 0 and 1 (p = 2; per round trip
# each rank makes two wrapped calls, two checks).
# Goal: the check <= 5 ns, so the whole wrapper overhead in "none" bounds it from above, and "live"
# minus "none" is what a loaded profile adds. Prints figures and the machine load.
#   tests/bench/dt_overhead.sh [openmpi|mpich|all]
set -euo pipefail
. "$(dirname "$0")/overhead_common.bash"
echo "load before: $(uptime)"
for mpi in $mpis; do
  overhead_build "$mpi"
  clean=(env -u PGMPITUNE_PROFILE_DIR -u PGMPI_PROFILE_PATH -u PGMPITUNE_MODULES -u PGMPI_PARAMS -u PGMPITUNE_VERBOSE)
  sig=$("${clean[@]}" DT_SIGNATURE=1 "${run[@]}" -np 1 "$work/ovh.$mpi" | tail -1)
  mkdir -p "$work/dt.$mpi" "$work/nomatch.$mpi"
  printf '#@pgmpi datatype_profile_version 1\nreplace %s indexed\n' "$sig" >"$work/dt.$mpi/datatypes.dtprf"
  printf '#@pgmpi datatype_profile_version 1\nreplace 0123456789abcdef indexed\n' >"$work/nomatch.$mpi/datatypes.dtprf"
  "$prefix/bin/pgmpitune-check" "$work/dt.$mpi" >/dev/null
  for np in 1 2; do
    if [ $np = 1 ]; then iter=200000; else iter=${ITER2:-5000}; fi
    for op in bcast send; do
    [ $op = send ] && [ $np = 1 ] && continue     # ping-pong needs two ranks
    for mode in none dtprofile live; do
      : >"$work/out"
      for r in $(seq "$RUNS"); do
        case $mode in
          none) "${clean[@]}" OP=$op "${run[@]}" -np $np "$work/ovh.$mpi" $iter ${BLOCKS:-21} >>"$work/out" ;;
          dtprofile) "${clean[@]}" PGMPITUNE_PROFILE_DIR="$work/nomatch.$mpi" OP=$op DT_KEEP=1 "${run[@]}" -np $np "$work/ovh.$mpi" $iter ${BLOCKS:-21} >>"$work/out" ;;
          live) "${clean[@]}" PGMPITUNE_PROFILE_DIR="$work/dt.$mpi" OP=$op DT_KEEP=1 "${run[@]}" -np $np "$work/ovh.$mpi" $iter ${BLOCKS:-21} >>"$work/out" ;;
        esac
      done
      o=$(field overhead_ns <"$work/out" | median); w=$(field wrapped_ns <"$work/out" | median)
      b=$(field bare_ns <"$work/out" | median); spread=$(field overhead_ns <"$work/out" | sort -g | tr '\n' ' ')
      rep=$(field kept_type_replaced <"$work/out" | sort -u | tr '\n' ' ')
      what="MPI_Bcast 8 B:        "; unit=call; [ $op = send ] && { what="MPI_Send+MPI_Recv 8 B:"; unit=roundtrip; }
      printf '%-8s p=%d  %-9s %s overhead %6s ns/'$unit'  (wrapped %s ns, bare %s ns; runs: %s)%s\n' \
        "$mpi" $np "$mode" "$what" "$o" "$w" "$b" "$spread" "${rep:+ kept type replaced: $rep}"
    done
    done
  done
done
echo "load after: $(uptime)"
