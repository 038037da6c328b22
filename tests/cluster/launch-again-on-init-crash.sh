#!/usr/bin/env bash
# Runs its arguments (an srun of an MPI program across the virtual nodes of deploy/cluster.sh) and runs them
# again, at most twice more, only when the launch died of one known Open MPI 4.1.4 start-up crash; anything else
# (including a third such crash) is returned as it came, with its exit code.
#   tests/cluster/launch-again-on-init-crash.sh srun -N2 --ntasks-per-node=2 --mpi=pmix <program> [args]
#
# The crash (clean-clone make test, 2026-11-26; reproduced here at load 7: 1 of 29 launches of core_app on
# 2 virtual nodes x 2 ranks): a rank jumps to address 0 from mca_btl_tcp's receive handler while
# PMPI_Init progresses the TCP connections; the core file's backtrace is
#   0x0 <- mca_btl_tcp.so <- libevent event_base_loop <- opal_progress <- ompi_mpi_init <- PMPI_Init <- MPI_Init
# so nothing of the application or of libpgmpitune had run. Open MPI's signal handler then prints
# "Failing at address: (nil)" and no frame beyond "[ 0]" (a jump to 0 cannot be unwound); a crash in our
# code, or in a collective, prints its frames. Retried only on that signature, and every retry is reported.
set -uo pipefail
out=$(mktemp); err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
for attempt in 1 2 3; do
  "$@" >"$out" 2>"$err"; rc=$?
  [ $rc = 0 ] && break
  grep -q 'Failing at address: (nil)' "$err" || break
  grep -qE '\[ ?1\] ' "$err" && break
  [ $attempt = 3 ] && break
  echo "launch-again-on-init-crash: attempt $attempt died of Open MPI's start-up crash (jump to 0, no frame" \
       "beyond [0]); launching again. Its stderr:" >&2
  sed 's/^/  | /' "$err" >&2
done
cat "$out"; cat "$err" >&2
exit $rc
