#!/usr/bin/env bash
# Does the GL4 replacement make an application faster, with identical results? The chain end to end on
# this machine, p = 2, per MPI:
#  1. pgmpi-dtbench measures the tiled layout (A=2, variant 1, SIZE bytes) in ping-pong: the typed
#     reference against the vector description, and records the layout signatures (#@pgmpi dtsig);
#  2. a datatype profile maps the vector description's signature to `contig` (one contiguous of the
#     layout's repeating block, GL1's description), checked by pgmpitune-check;
#  3. tests/bench/dt_app.c -- which describes that layout with MPI_Type_vector -- runs PAIRS times with
#     and without the profile, alternating which goes first (paired, interleaved mpiruns); per pair the
#     ratio without/with of the median time per iteration, ping-pong and Allgather; the checksums of
#     all runs must be one.
# Prints the per-pair ratios, their median and geometric mean, and the machine load.
#   tests/bench/dt_app.sh [openmpi|mpich|all]    (PAIRS=5 ITER=100 SIZE=65536; INSTALL_ROOT=build/install)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
mpis=${1:-all}; [ "$mpis" = all ] && mpis="openmpi mpich"
PAIRS=${PAIRS:-5}; ITER=${ITER:-100}; SIZE=${SIZE:-65536}
A=2; X=4; C=$((SIZE / 4 / A))    # tiled variant 1: tiles of A ints, A + 2 ints apart
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
field() { sed -n "s/.* $1=\([-0-9.a-z]*\).*/\1/p"; }
echo "load before: $(uptime)"
for mpi in $mpis; do
  prefix=${INSTALL_ROOT:-$top/build/install}/$mpi
  [ -f "$prefix/lib/libpgmpitune.so" ] || "$top/deploy/build-lib.sh" "$mpi" >/dev/null
  "mpicc.$mpi" -O2 -o "$work/app.$mpi" "$top/tests/bench/dt_app.c" -L"$prefix/lib" -Wl,--no-as-needed -lpgmpitune \
      -Wl,-rpath,"$prefix/lib"
  if [ "$mpi" = openmpi ]; then run=(mpirun.openmpi --allow-run-as-root --oversubscribe --bind-to none); else run=(mpirun.mpich); fi
  clean=(env -u PGMPITUNE_PROFILE_DIR -u PGMPI_PROFILE_PATH -u PGMPITUNE_MODULES -u PGMPI_PARAMS -u PGMPITUNE_VERBOSE)
  # 1. the benchmark and its signatures
  "${clean[@]}" "${run[@]}" -np 2 "$prefix/bin/pgmpi-dtbench" --patterns=pingpong --layouts=tiled --variants=1 \
      --blocksizes=$A --sizes=$SIZE --descriptions=typed,vector --nrep=20 --output="$work/dt.$mpi.txt" >/dev/null 2>&1
  sig=$(awk '$2 == "dtsig" && $5 == "vector" {print $6; exit}' "$work/dt.$mpi.txt")
  ratio=$(python3 -c 'import statistics, sys
t = {"typed": [], "vector": []}
for line in open(sys.argv[1]):
    f = line.split()
    if line.startswith("#") or len(f) < 6 or f[5] not in t: continue
    t[f[5]].append(float(f[4]))
print("%.2f" % (statistics.median(t["vector"]) / statistics.median(t["typed"])))' "$work/dt.$mpi.txt")
  echo "$mpi: pgmpi-dtbench tiled A=$A $SIZE B ping-pong: vector / typed = $ratio (median times); vector's signature $sig"
  # 2. the profile
  mkdir -p "$work/prof.$mpi"
  printf '#@pgmpi datatype_profile_version 1\nreplace %s contig evidence=dt_pingpong_int_tiled_v1_a%s:vector/typed=%s\n' \
      "$sig" $A "$ratio" >"$work/prof.$mpi/datatypes.dtprf"
  "$prefix/bin/pgmpitune-check" "$work/prof.$mpi" >/dev/null
  # 3. paired, interleaved runs of the application
  : >"$work/pairs.$mpi"
  for i in $(seq "$PAIRS"); do
    for arm in $( [ $((i % 2)) = 1 ] && echo "off on" || echo "on off"); do
      if [ $arm = on ]; then
        out=$("${clean[@]}" PGMPITUNE_PROFILE_DIR="$work/prof.$mpi" PGMPITUNE_VERBOSE=1 "${run[@]}" -np 2 "$work/app.$mpi" $C $A $X "$ITER")
        echo "$out" | grep -q "dtreplace $sig contig types=1 calls=[1-9]" || { echo "$mpi: the replacement was not used:"; echo "$out"; exit 1; }
      else
        out=$("${clean[@]}" "${run[@]}" -np 2 "$work/app.$mpi" $C $A $X "$ITER")
      fi
      line=$(echo "$out" | grep '^dt_app')
      echo "$arm $(echo "$line" | field pingpong_sec) $(echo "$line" | field allgather_sec) $(echo "$line" | field checksum)" >>"$work/pairs.$mpi"
    done
  done
  python3 - "$mpi" "$work/pairs.$mpi" <<'PY'
import math, statistics, sys
mpi, rows = sys.argv[1], [line.split() for line in open(sys.argv[2])]
rp, ra = [], []
for i in range(0, len(rows) - 1, 2):
    pair = {rows[i][0]: rows[i], rows[i + 1][0]: rows[i + 1]}
    off, on = pair["off"], pair["on"]
    rp.append(float(off[1]) / float(on[1])); ra.append(float(off[2]) / float(on[2]))
    print(f"{mpi} pair {len(rp)}: ping-pong {float(off[1]):.6f} s -> {float(on[1]):.6f} s (x{rp[-1]:.2f})   "
          f"allgather {float(off[2]):.6f} s -> {float(on[2]):.6f} s (x{ra[-1]:.2f})")
def summary(v):
    return (f"median x{statistics.median(v):.2f} (geomean x{math.exp(sum(map(math.log, v)) / len(v)):.2f}, "
            f"range {min(v):.2f}..{max(v):.2f})")
checks = {r[3] for r in rows}
print(f"{mpi}: speed-up without/with the profile, {len(rp)} pairs: ping-pong {summary(rp)}; allgather {summary(ra)}; "
      f"checksums: {'all identical' if len(checks) == 1 else 'DIFFER'}")
PY
done
echo "load after: $(uptime)"
