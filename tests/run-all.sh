#!/usr/bin/env bash
# `make test`: prepares the machine (idempotent: Debian packages, the MPI libraries of
# deploy/mpi-libraries.tsv), builds the library for every MPI, brings up PostgreSQL and
# Slurm with deploy/ scripts, runs CTest (under mpirun, per MPI) and pytest, stops only
# what it started, prints a summary of what ran against which real component.
# What runs on every MPI and what on a representative subset: tests/README.md.
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
deploy/intel-guest.sh build || die "could not build the emulated GenuineIntel guest (deploy/intel-guest.sh: QEMU, Debian's kernel)"

step "build: libpgmpitune + pgmpi-bench for every MPI of deploy/mpi-libraries.tsv"
deploy/build-lib.sh $(deploy/mpi-env.sh --list) || die "library build failed"

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
# The whole C suite on Debian's two; on the others all of it but the main matrix at p = 4, 5, 8 and its
# small-pool run (tests/README.md: PGMPI_CTEST_FULL="<ids>" or "all" runs everything there too).
full=" ${PGMPI_CTEST_FULL:-openmpi mpich} "
for mpi in $(deploy/mpi-env.sh --list); do
  sel=()
  case "$full" in *" all "*|*" $mpi "*) ;; *) sel=(-E '^matrix_(p4|p5|p8|smallpool_p3)$') ;; esac
  step "ctest: C tests under mpirun ($mpi${sel:+, without the main matrix at p = 4, 5, 8})"
  c0=$(date +%s)
  (cd build/$mpi && ctest --output-on-failure --timeout 900 "${sel[@]}" --output-junit "$results/ctest-$mpi.xml") || rc=1
  echo "ctest $mpi: $(( $(date +%s) - c0 )) s"
done

step "pytest: Python tests (unit, PostgreSQL, Slurm, MPI, Lmod, EasyBuild, browser)"
.venv/bin/pytest -p no:cacheprovider --junitxml="$results/pytest.xml" \
  --pgmpi-report="$results/pytest-components.json" "$@" || rc=1

step "summary ($(( $(date +%s) - t0 )) s)"
.venv/bin/python tests/summary.py "$results" || rc=1
exit $rc
