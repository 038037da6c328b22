#!/usr/bin/env bash
# A derived-datatype campaign (pgmpi-dtbench) on both MPIs: R mpiruns per (MPI, base type), alternating
# mpirun by mpirun so that every configuration samples the same machine regimes, then the GL1-GL4 verdict
# table and the HTML report OUTDIR/report.html (pgmpi analyze datatypes). Timing figures at 2 ranks; prints `uptime` before and after.
#   tests/bench/dt_campaign.sh OUTDIR [R=5] [NP=2] [extra pgmpi-dtbench options...]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: dt_campaign.sh OUTDIR [R] [NP] [options]}; shift
R=${1:-5}; shift || true
NP=${1:-2}; shift || true
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
opts=(--layouts=all --variants=1 --blocksizes=2,100 --sizes=3200,2560000 --nrep=10 "$@")
echo "load before: $(uptime)"
for ((r = 0; r < R; r++)); do
  for mpi in openmpi mpich; do
    for base in MPI_INT MPI_DOUBLE; do
      f="$out/$mpi-${base#MPI_}-r$r.txt"
      [ -s "$f" ] && continue
      launch=("mpiexec.$mpi" -np "$NP")
      [ "$mpi" = openmpi ] && [ "$NP" -gt 2 ] && launch+=(--oversubscribe)
      t0=$(date +%s)
      "${launch[@]}" "$top/build/install/$mpi/bin/pgmpi-dtbench" --datatype=$base --mpirun-index=$r \
        --campaign=dt-$(basename "$out") --output="$f" "${opts[@]}"
      echo "$f: $(( $(date +%s) - t0 )) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
    done
  done
done
echo "load after: $(uptime)"
"$top/.venv/bin/pgmpi" analyze datatypes "$out" --html "$out/report.html"
