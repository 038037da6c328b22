#!/usr/bin/env bash
# What libpgmpitune's MPI_Init leaves behind, and why it shares its start-up values by Allreduce
# (prints figures; not a test).  tests/bench/first_messages.c times MPI_Allgather of SIZE bytes at 2 ranks,
# alternating MPI_ and PMPI_ calls, in mpiruns that alternate between these arms:
#   plain       no library, nothing sent before the loop
#   gather      no library, one rooted MPI_Gather of an int as the job's first collective
#   bcast       no library, one MPI_Bcast of an int as the job's first collective
#   lib         libpgmpitune preloaded (no profile)
#   lib+prof    libpgmpitune preloaded with a profile directory (its start-up shares the profiles)
# With Open MPI 4.1 on shared memory the "gather" and "bcast" arms were 20-80 % slower than "plain" for
# the whole run, and so was "lib" while its MPI_Init shared rank 0's values by Bcast; the effect lives in
# Open MPI's shared-memory fast boxes (it disappears with --mca btl_vader_fbox_max 0).
#   tests/bench/lib_init_cost.sh [openmpi|mpich] [RUNS] [SIZE]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
mpi=${1:-openmpi}; runs=${2:-5}; size=${3:-8}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
prefix=$top/build/install/$mpi
[ -f "$prefix/lib/libpgmpitune.so" ] || "$top/deploy/build-lib.sh" "$mpi" >/dev/null
"mpicc.$mpi" -O2 -o "$work/fm" "$top/tests/bench/first_messages.c"
mkdir -p "$work/prof"
cp "$top"/tests/c/core/profiles/rsb_ours/*.prf "$work/prof/"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
lib=$prefix/lib/libpgmpitune.so
declare -A arms=(
  [plain]=""
  [gather]="FIRST=gather"
  [bcast]="FIRST=bcast"
  [lib]="LD_PRELOAD=$lib"
  [lib+prof]="LD_PRELOAD=$lib PGMPITUNE_PROFILE_DIR=$work/prof"
)
order=(plain gather bcast lib lib+prof)
run() {   # run ARM: the launcher passes the arm's variables to the ranks
  local args=()
  for kv in ${arms[$1]}; do
    if [ "$mpi" = openmpi ]; then args+=(-x "$kv"); else args+=(-env "${kv%%=*}" "${kv#*=}"); fi
  done
  if [ "$mpi" = openmpi ]; then mpirun.openmpi -np 2 "${args[@]}" "$work/fm" 3000 "$size"
  else mpirun.mpich -np 2 "${args[@]}" "$work/fm" 3000 "$size"; fi
}
echo "# $mpi, 2 ranks, MPI_Allgather $size B, 3000 rounds per mpirun, $runs mpiruns per arm (alternating); $(uptime)"
declare -A mpi_ pmpi_
for ((r = 0; r < runs; r++)); do
  for a in "${order[@]}"; do
    out=$(run "$a")
    mpi_[$a]+="$(awk '{print $2}' <<<"$out") "; pmpi_[$a]+="$(awk '{print $4}' <<<"$out") "
  done
done
printf '| arm | MPI_ median of mpiruns (us) | PMPI_ | PMPI_ / plain PMPI_ |\n|---|---|---|---|\n'
med() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
base=$(med <<<"${pmpi_[plain]}")
for a in "${order[@]}"; do
  m=$(med <<<"${mpi_[$a]}"); pm=$(med <<<"${pmpi_[$a]}")
  printf '| %s | %s [%s] | %s | %.2f |\n' "$a" "$m" "$(tr ' ' '\n' <<<"${mpi_[$a]}" | grep . | sort -g | sed -n '1p;$p' | paste -sd-)" "$pm" "$(awk -v a="$pm" -v b="$base" 'BEGIN{print a/b}')"
done
echo "# $(uptime)"
