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
deploy/venv.sh
deploy/build-lib.sh all
echo "demo: prepared in $(( $(date +%s) - t0 )) s"
exec .venv/bin/python deploy/demo.py run --workdir "$demo"
