#!/usr/bin/env bash
# Does Intel MPI's own tuner tune anything on this machine?  (issue 35; scheduler/README.md, "Intel's own tuner")
#   tests/bench/intel_tuner_probe.sh [calls=400]
# With the installed intelmpi (deploy/mpi-libraries.tsv), 2 ranks: the per-call MPI_Allreduce fingerprint
# (intel_fingerprint_calls.c) at 64 B, 8 KiB and 64 KiB
#   - with presets 1-12 forced (I_MPI_ADJUST_ALLREDUCE=<p>): which presets a fingerprint tells apart;
#   - under the in-library autotuner (I_MPI_TUNING_MODE=auto, auto:cluster, auto:application, with
#     I_MPI_TUNING_AUTO_* settings, the preset list, an Intel platform name): a tuner that tries presets shows
#     as more than one fingerprint in a run; its I_MPI_TUNING_BIN_DUMP compared with the generic table it loads.
# Then where the library checks the vendor (objdump) and, under gdb, what runs under mpitune_fast's tuning-job
# variables. Prints what each printed and the machine load; asserts nothing.
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
# Why: the library's own vendor check (symbols of libmpi.so's .symtab; docs: scheduler/README.md, "Intel's own tuner").
# MPID_Init runs cpuid leaf 0 and keeps (vendor == "GenuineIntel") in MPIDI_global; MPIU_Selection_is_coll_autotuner
# and MPIU_Selection_finalize (which writes mpitune_fast's <dump>_metadata) test it.  Under the autotuner, gdb
# shows the vendor MPID_Init read and whether any autotuner function is entered at all.
lib="$I_MPI_ROOT/lib/libmpi.so"
echo "vendor check in $lib (cpuid leaf 0 against Genu/ineI/ntel = 0x756e6547/0x49656e69/0x6c65746e):"
for f in MPID_Init MPIU_Selection_is_coll_autotuner MPIU_Selection_finalize; do
    echo "  $f: $(objdump -d --no-show-raw-insn "$lib" --disassemble="$f" 2>/dev/null | grep -c -e 'cpuid' -e '0x1280(%r') lines with cpuid or the flag"
done
if command -v gdb >/dev/null; then
    cat > "$work/gdb" <<'GDB'
set pagination off
set breakpoint pending on
tbreak MPID_Init
run
break *(MPID_Init+0x415)
commands
silent
printf "cpuid leaf 0 vendor word (ebx) %#x ('Genu' = 0x756e6547, 'Auth' = 0x68747541)\n", $ebx
continue
end
dprintf MPIU_Selection_is_coll_autotuner_filtered,"entered is_coll_autotuner_filtered (init: per collective)\n"
dprintf MPIU_Selection_is_coll_autotuner,"entered is_coll_autotuner (per call)\n"
dprintf MPIU_Selection_create_autotuner_leaf,"entered create_autotuner_leaf\n"
dprintf MPIU_Selection_create_autotuner_node,"entered create_autotuner_node\n"
dprintf MPIDI_coll_select_epilogue,"entered coll_select_epilogue (times a call for the autotuner)\n"
dprintf MPIU_Selection_dump,"entered Selection_dump (I_MPI_TUNING_BIN_DUMP)\n"
continue
GDB
    echo "under mpitune_fast's tuning-job variables, both ranks in gdb (count, line; an autotuner function never entered is absent):"
    I_MPI_TUNING_MODE=auto:cluster I_MPI_TUNING_METADATA_DUMP=1 I_MPI_TUNING_BIN_DUMP="$work/gdb-dump.dat" \
        mpirun -np 2 gdb -batch -x "$work/gdb" --args "$work/fp" 8192 50 2>&1 | grep -a -o -e 'cpuid leaf 0.*' -e 'entered [A-Za-z_]*' -e '[0-9a-f]* x50' | sort | uniq -c
    echo "  dump: $(cmp -s "$work/gdb-dump.dat" "$generic" && echo identical to || echo DIFFERS from) $(basename "$generic"); $(basename "$work/gdb-dump.dat")_metadata: $([ -e "$work/gdb-dump.dat_metadata" ] && echo written || echo not written)"
else
    echo "gdb not installed: the run-time check skipped"
fi
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
