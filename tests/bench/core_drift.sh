#!/usr/bin/env bash
# Core-to-core latency drift of this machine (no MPI; see core_drift.c): is a between-mpirun CV of
# 2 % reachable here at all?   tests/bench/core_drift.sh [SECONDS=20] [CPU_A=0] [CPU_B=1]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cc -O2 -pthread -o "$work/core_drift" "$here/core_drift.c" -lm
"$work/core_drift" "${1:-20}" "${2:-0}" "${3:-1}"
