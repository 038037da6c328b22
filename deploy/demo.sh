#!/usr/bin/env bash
# `make demo`: the main job on this machine with the embedded defaults.
# Installs what is missing, builds the library per MPI, runs a short local tuning
# campaign with mpirun (no Slurm), analyses it, publishes a tuned profile into a
# local module tree, and serves the dashboard on 127.0.0.1 from a SQLite file.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
demo=$top/demo
mkdir -p "$demo"
t0=$(date +%s)
deploy/install-packages.sh demo      # base + Lmod: the printed next steps load modules
deploy/venv.sh base                  # the demo needs no test extras (make test adds them)
# The demo measures Debian's Open MPI 4.1.4 and MPICH 4.0.2 (no download). The other libraries of
# deploy/mpi-libraries.tsv (Open MPI 5, MPICH 5, Intel MPI; ~250 MB from the Python package registry):
#   deploy/install-mpis.sh registry && deploy/build-lib.sh all
deploy/build-lib.sh openmpi mpich
echo "demo: Debian's Open MPI and MPICH; to add Open MPI 5, MPICH 5 and Intel MPI:" \
     "deploy/install-mpis.sh registry && deploy/build-lib.sh all (docs/install.md)"
echo "demo: prepared in $(( $(date +%s) - t0 )) s"
exec .venv/bin/python deploy/demo.py run --workdir "$demo"
