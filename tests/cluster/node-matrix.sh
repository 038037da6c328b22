#!/usr/bin/env bash
# The correctness matrices (tests/c/matrix: matrix.c for the collectives with node-aware mock-ups,
# mixed.c for all) on the virtual cluster of deploy/cluster.sh, launched by srun, over the layouts
# 2x1, 2x2, 3x2, 2x3, an uneven one (3+2) and an interleaved one (ranks dealt to the nodes in turn:
# non-commutative ops must make the node-aware mock-ups fall back there). Exit 0 only when every run
# reports 0 mismatches, its report as predicted, and the node count it measured is the requested one.
#   tests/cluster/node-matrix.sh [--quick] [openmpi|mpich|all]     (the cluster must be up)
# --quick: matrix.c at counts 0, 7, 1000 only; mixed.c in full. make test runs it all (~25 s). The ranks of
# all virtual nodes share this machine's cores: Open MPI yields when idle (deploy/cluster.sh env), MPICH
# busy-polls and gets tests/c/yield_when_idle.c preloaded (with it, every layout takes seconds).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
quick=0; [ "${1:-}" = --quick ] && { quick=1; shift; }
mpis=${1:-all}; [ "$mpis" = all ] && mpis="openmpi mpich"
matrix_args="--only=allreduce,bcast,reduce,allgather --big-combos=some"
[ $quick = 1 ] && matrix_args="--only=allreduce,bcast,reduce,allgather --counts=0,7,1000"
eval "$("$top/deploy/cluster.sh" env)"
"$top/deploy/cluster.sh" status || { echo "node-matrix: the virtual cluster is not up (deploy/cluster.sh up)" >&2; exit 1; }
# The matrices own the library's settings (as in tests/c/matrix/CMakeLists.txt).
export PGMPITUNE_VERBOSE=1 PGMPITUNE_DISABLE= PGMPI_PARAMS= PGMPITUNE_MODULES= PGMPITUNE_PROFILE_DIR= \
  PGMPI_PROFILE_PATH= PGMPITUNE_CONFIG= PGMPI_CONFIG_FILE= PGMPITUNE_MSG_POOL_BYTES=67108864 \
  PGMPITUNE_INT_POOL_BYTES=200000 PGMPI_TEST_HANG_SECONDS=60
layouts=("2x1:-N2 --ntasks-per-node=1" "2x2:-N2 --ntasks-per-node=2" "3x2:-N3 --ntasks-per-node=2"
         "2x3:-N2 --ntasks-per-node=3" "uneven3+2:-N2 -n5 --ntasks-per-node=3"
         "interleaved2x2:-N2 -n4 --ntasks-per-node=2 -m cyclic")
fail=0
for mpi in $mpis; do
  case $mpi in
    openmpi) plug=pmix; export_env=ALL ;;
    mpich) plug=pmi2; export_env=ALL,LD_PRELOAD=$top/build/mpich/tests/libpgmpi_yield_when_idle.so ;;
    *) echo "node-matrix: unknown MPI $mpi" >&2; exit 2 ;;
  esac
  for l in "${layouts[@]}"; do
    name=${l%%:*}; opts=${l#*:}
    want_nodes=${name:0:1}; [ "${name:0:6}" = uneven ] && want_nodes=2
    [ "${name:0:6}" = interl ] && want_nodes=2
    for prog in "pgmpi_matrix $matrix_args" pgmpi_mixed; do
      t0=$(date +%s.%N)
      # shellcheck disable=SC2086
      out=$(timeout 900 "$top/tests/cluster/launch-again-on-init-crash.sh" srun $opts --mpi=$plug --export="$export_env" "$top/build/$mpi/tests/matrix/"$prog 2>&1); rc=$?
      line=$(grep -E '^(matrix|mixed) p=' <<<"$out" | tail -n1)
      secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" "BEGIN{print b - a}")
      ok=1
      [ $rc = 0 ] || ok=0
      grep -q "mismatches=0 report_mismatches=0" <<<"$line" || ok=0
      grep -q " nodes=$want_nodes" <<<"$line" || ok=0
      if [ "${name:0:6}" = interl ]; then grep -q "(interleaved)" <<<"$line" || ok=0; fi
      printf '%-8s %-15s %-13s %s  [%.0f s]\n' "$mpi" "$name" "${prog%% *}" "${line:-NO SUMMARY}" "$secs"
      if [ $ok = 0 ]; then
        fail=1; echo "node-matrix: FAILED ($mpi $name ${prog%% *}, exit $rc):" >&2
        grep -vE '^#@' <<<"$out" | grep -E 'MISMATCH|REPORT|HANG|aliased|error|Error' | head -n 20 >&2
      fi
    done
  done
done
echo "node-matrix: the [s] are wall times of correctness runs across virtual nodes sharing this machine's cores;" \
  "they are not performance figures"
exit $fail
