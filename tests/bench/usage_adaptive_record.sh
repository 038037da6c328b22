#!/usr/bin/env bash
# Record once the exhaustive grid that tests/bench/usage_adaptive_replay.py replays (not a test).
# Every collective x 21 sizes (1 B - 1 MiB) x every mock-up + the default + the control arm, 2 ranks,
# R mpiruns of pgmpi-bench with a fixed nrep each, written as ordinary raw files run-<i>.txt.
#   tests/bench/usage_adaptive_record.sh OUT_DIR [MPI_ID=openmpi] [R=6] [NREP=30]
set -euo pipefail
out=${1:?usage: $0 OUT_DIR [MPI_ID] [R] [NREP]}
mpi=${2:-openmpi}; runs=${3:-6}; nrep=${4:-30}
here=$(cd "$(dirname "$0")/../.." && pwd)
bench=${PGMPI_BENCH:-$here/build/install/$mpi/bin/pgmpi-bench}
[ -x "$bench" ] || { echo "$bench missing: deploy/build-lib.sh $mpi" >&2; exit 1; }
eval "$("$here/deploy/mpi-env.sh" "$mpi")"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
mkdir -p "$out/$mpi"
for ((i = 0; i < runs; i++)); do
  echo "mpirun $i of $runs, $(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  "$MPIRUN" -n 2 "$bench" --calls=all --sizes=1..1M --algorithms=all,default_control --nrep="$nrep" \
    --no-barrier-rows --mpirun-index="$i" > "$out/$mpi/run-$i.txt.tmp"
  mv "$out/$mpi/run-$i.txt.tmp" "$out/$mpi/run-$i.txt"
done
