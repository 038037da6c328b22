#!/usr/bin/env bash
# Does Intel MPI's own tuner tune anything on this machine?  (issue 35; scheduler/README.md, "Intel's own tuner")
#   tests/bench/intel_tuner_probe.sh [calls=400]
# With the installed intelmpi (deploy/mpi-libraries.tsv), 2 ranks: the per-call MPI_Allreduce fingerprint
# (intel_fingerprint_calls.c) at 64 B, 8 KiB and 64 KiB
#   - with presets 1-12 forced (I_MPI_ADJUST_ALLREDUCE=<p>): which presets a fingerprint tells apart;
#   - under the in-library autotuner (I_MPI_TUNING_MODE=auto, auto:cluster, auto:application, with
#     I_MPI_TUNING_AUTO_* settings, the preset list, an Intel platform name): a tuner that tries presets shows
#     as more than one fingerprint in a run; its I_MPI_TUNING_BIN_DUMP compared with the generic table it loads.
# Prints what each printed and the machine load; asserts nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
calls=${1:-400}
eval "$(cd "$root" && "$root"/.venv/bin/python - <<'PY'
import shlex
from pgmpi_formats import mpi_libraries as ml
for k, v in ml.mpi_library("intelmpi").environment().items():
    print(f"export {k}={shlex.quote(v)}")
PY
)"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mpicc -O2 -o "$work/fp" "$here/intel_fingerprint_calls.c"
generic="$I_MPI_ROOT/opt/mpi/etc/tuning_generic_shm-ofi.dat"
echo "load $(cut -d' ' -f1-3 /proc/loadavg); $(grep -m1 'model name' /proc/cpuinfo)"
run() { mpirun -np 2 "$work/fp" "$@" | tr '\n' ' '; }
for bytes in 64 8192 65536; do
    echo "== $bytes B: default: $(run "$bytes" 3)"
    for p in $(seq 1 12); do echo -n "  preset $p: $(I_MPI_ADJUST_ALLREDUCE=$p run "$bytes" 3)"; echo; done
done
for extra in "I_MPI_TUNING_MODE=auto" "I_MPI_TUNING_MODE=auto:cluster" "I_MPI_TUNING_MODE=auto:application" \
             "I_MPI_TUNING_MODE=auto I_MPI_TUNING_AUTO_COMM_DEFAULT=1 I_MPI_TUNING_AUTO_POLICY=max" \
             "I_MPI_TUNING_MODE=auto I_MPI_ADJUST_ALLREDUCE_LIST=1,3,8" \
             "I_MPI_TUNING_MODE=auto I_MPI_PLATFORM=skx"; do
    for bytes in 64 8192 65536; do
        rm -f "$work/dump.bin"
        # shellcheck disable=SC2086  # $extra: NAME=VALUE words
        out=$(export $extra I_MPI_TUNING_AUTO_ITER_NUM=2 I_MPI_TUNING_AUTO_WARMUP_ITER_NUM=1 I_MPI_TUNING_AUTO_SYNC=1 \
              I_MPI_TUNING_BIN_DUMP="$work/dump.bin"; run "$bytes" "$calls")
        if [ ! -s "$work/dump.bin" ]; then dump="no dump"; elif cmp -s "$work/dump.bin" "$generic"; then
            dump="dump identical to $(basename "$generic")"; else dump="dump DIFFERS from $(basename "$generic")"; fi
        echo "== $extra, $bytes B, $calls calls: $out($dump)"
    done
done
echo "debug output under auto (I_MPI_DEBUG=10, lines naming tuning):"
I_MPI_TUNING_MODE=auto I_MPI_DEBUG=10 mpirun -np 2 "$work/fp" 8192 50 2>&1 | grep -i 'tuning\|auto' || true
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
