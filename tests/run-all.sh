#!/usr/bin/env bash
# `make test`: prepares the machine (idempotent), builds the library for both MPIs,
# brings up PostgreSQL and Slurm with deploy/ scripts, runs CTest (under mpirun, per
# MPI) and pytest, stops only what it started, prints a summary of what ran against
# which real component.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
export PGMPI_ROOT=$top
results=$top/build/test-results
rm -rf "$results"; mkdir -p "$results"
t0=$(date +%s)
step() { printf '\n=== %s\n' "$*"; }
die() { echo "make test: $*" >&2; exit 1; }

step "machine: Debian packages, the MPI libraries of deploy/mpi-libraries.tsv, the Python environment"
deploy/install-packages.sh all || die "could not install the Debian packages or the MPI libraries (deploy/install-mpis.sh)"
deploy/venv.sh || die "could not prepare .venv"

step "build: libpgmpitune + pgmpi-bench for Open MPI and MPICH"
deploy/build-lib.sh all || die "library build failed"

started=()
cleanup() {
  for svc in "${started[@]}"; do deploy/$svc.sh down || true; done
}
trap cleanup EXIT

step "services: PostgreSQL and single-node Slurm (localhost only)"
pg_was_up=0; deploy/postgres.sh status && pg_was_up=1
PGMPI_TEST_DATABASE_URL=$(deploy/postgres.sh up | tail -n1) || die "PostgreSQL could not start; tests that need it cannot run"
[ $pg_was_up = 0 ] && started+=(postgres)
slurm_was_up=0; deploy/slurm.sh status && slurm_was_up=1
deploy/slurm.sh up || die "Slurm could not start; tests that need it cannot run"
[ $slurm_was_up = 0 ] && started+=(slurm)
eval "$(deploy/slurm.sh env)"
export PGMPI_TEST_DATABASE_URL SLURM_CONF

step "services: virtual multi-node Slurm cluster (namespaces on this machine)"
cluster_was_up=0; deploy/cluster.sh status && cluster_was_up=1
c0=$(date +%s.%N)
deploy/cluster.sh up || die "the virtual cluster could not come up; the multi-node tests cannot run"
[ $cluster_was_up = 0 ] && started+=(cluster)
echo "virtual cluster up in $(awk -v a="$c0" -v b="$(date +%s.%N)" "BEGIN{printf \"%.1f\", b - a}") s"

rc=0
for mpi in openmpi mpich; do
  step "ctest: C tests under mpirun ($mpi)"
  (cd build/$mpi && ctest --output-on-failure --timeout 300 --output-junit "$results/ctest-$mpi.xml") || rc=1
done

step "pytest: Python tests (unit, PostgreSQL, Slurm, MPI, Lmod, EasyBuild, browser)"
.venv/bin/pytest -p no:cacheprovider --junitxml="$results/pytest.xml" \
  --pgmpi-report="$results/pytest-components.json" "$@" || rc=1

step "summary ($(( $(date +%s) - t0 )) s)"
.venv/bin/python tests/summary.py "$results" || rc=1
exit $rc
