#!/usr/bin/env bash
# spack_scenario.sh <work dir> [id ...]: real Spack (the vendored snapshot, set up by spack_setup.sh)
# installs pgmpitunelib from this checkout's spack-repo (a clone of its HEAD without local branches) against MPI libraries of deploy/mpi-libraries.tsv
# (default: all installed ones), each an external with its own prefix, runs `spack test run`, and
# generates the Lmod hierarchy. Everything Spack writes stays under <work dir>, except the user cache
# (SPACK_USER_CACHE_PATH, default <work dir>/cache; reuse one to skip re-indexing).
# Offline: no mirrors, no bootstrapping (clingo from the project's .venv: SPACK_PYTHON, spack_setup.sh).
# Spack sees the builtin packages a solve of these specs can reach, not all ~8,000 (spack_repo_subset.py:
# the index of the whole builtin repository took 190 s of a clean run at load 7-11; tests/README.md).
# One Spack environment holds every spec: one `spack concretize` (one solver start, unify: false).
# Prints each command as "$ ..." followed by its (trimmed) output, and "TIME <step> <seconds>".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
work=$(mkdir -p "$1" && cd "$1" && pwd); shift
cfg=$work/config
mkdir -p "$cfg" "$work/shims"
# Spack builds pgmpitunelib from the checkout its package.py sits in: that checkout's HEAD commit. Here a clone
# of this checkout's HEAD, detached and without any local branch, as a CI checkout may be (until 2026-11-26 the
# recipe cloned the local branch "main" and failed there). Only committed code is built.
src=$work/checkout
rm -rf "$src"
git clone -q "$top" "$src"
git -C "$src" checkout -q --detach
git -C "$src" for-each-ref --format='%(refname)' refs/heads | while read -r ref; do git -C "$src" update-ref -d "$ref"; done
echo "\$ git -C $src for-each-ref refs/heads; git -C $src rev-parse HEAD"
echo "local branches: $(git -C "$src" for-each-ref refs/heads | wc -l)"
echo "HEAD $(git -C "$src" rev-parse HEAD)"
setup=$("$here/spack_setup.sh" "${PGMPI_SPACK_DIR:-$top/build/spack}") || exit $?   # 3: no snapshot
eval "$(sed 's/^/export /' <<<"$setup")"
export SPACK_DISABLE_LOCAL_CONFIG=1
export SPACK_USER_CACHE_PATH=${SPACK_USER_CACHE_PATH:-$work/cache}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

run() { echo "\$ $*"; "$@" 2>&1 | grep -v -E '^==> (Fetching|Staging|Moving|No patches|Using cached|Ran patch)' | tail -n "${TAIL:-25}"; return "${PIPESTATUS[0]}"; }
timed() { local step=$1 t0; shift; t0=$(date +%s.%N); "$@"; local rc=$?
          echo "TIME $step $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}') load $(cut -d' ' -f1 /proc/loadavg)"; return $rc; }
sp() { "$SPACK" -C "$cfg" "$@"; }
spe() { "$SPACK" -C "$cfg" -e "$work/env" "$@"; }

# The MPIs: Spack's package name and spec of each id; Intel MPI's package wants <prefix>/mpi/<x.y>/.
rows() { grep -v -e '^#' -e '^$' -e $'^id\tfamily\tversion\tsource\tprefix$' "$top/deploy/mpi-libraries.tsv"; }   # data rows only
ids=("$@"); [ ${#ids[@]} -gt 0 ] || mapfile -t ids < <(rows | cut -f1)
externals=() specs=()
declare -A ext_by_pkg
for id in "${ids[@]}"; do
  IFS=$'\t' read -r _ family version _ prefix < <(rows | awk -F'\t' -v id="$id" '$1 == id')
  [ -n "${family:-}" ] || { echo "spack_scenario.sh: unknown MPI id '$id'" >&2; exit 2; }
  [ -x "$prefix/bin/mpicc" ] || { echo "spack_scenario.sh: $id not installed in $prefix (deploy/install-mpis.sh $id)" >&2; exit 1; }
  case $family in
    intelmpi) pkg=intel-oneapi-mpi; variants="+generic-names~envmods"
              mkdir -p "$work/shims/$id/mpi"; ln -sfn "$prefix" "$work/shims/$id/mpi/$(cut -d. -f1-2 <<<"$version")"
              prefix=$work/shims/$id ;;
    *)        pkg=$family; variants= ;;
  esac
  ext_by_pkg[$pkg]+="    - spec: $pkg@$version$variants"$'\n'"      prefix: $prefix"$'\n'
  specs+=("pgmpitunelib ^$pkg@$version")
done
cat > "$cfg/config.yaml" <<YAML
config:
  install_tree:
    root: $work/opt
  build_stage: [$work/stage]
  source_cache: $work/source-cache
  misc_cache: $SPACK_USER_CACHE_PATH/misc
  test_stage: $work/test-stage
  build_jobs: 2
  template_dirs:
  - \$spack/share/spack/templates
  - $src/spack-repo/templates
YAML
cat > "$cfg/repos.yaml" <<YAML
repos:
- $src/spack-repo
YAML
cat > "$cfg/mirrors.yaml" <<YAML
mirrors:: {}
YAML
# Bootstrapping stays enabled (Spack 0.23 refuses to concretize with bootstrap:enable false) but has no
# source: clingo is imported from SPACK_PYTHON's venv, nothing is downloaded.
cat > "$cfg/bootstrap.yaml" <<YAML
bootstrap:
  enable: true
  root: $work/bootstrap
  sources: []
  trusted: {}
YAML
cat > "$cfg/compilers.yaml" <<YAML
compilers:
- compiler:
    spec: gcc@=12.2.0
    paths: {cc: /usr/bin/gcc, cxx: /usr/bin/g++, f77: /usr/bin/gfortran, fc: /usr/bin/gfortran}
    flags: {}
    operating_system: debian12
    target: x86_64
    modules: []
    environment: {}
    extra_rpaths: []
YAML
{
  echo "packages:"
  echo "  all:"
  echo "    providers:"
  echo "      mpi: [openmpi, mpich, intel-oneapi-mpi]"
  echo "  mpi:"
  echo "    buildable: false"
  for pkg in "${!ext_by_pkg[@]}"; do
    echo "  $pkg:"
    echo "    buildable: false"
    echo "    externals:"
    printf '%s' "${ext_by_pkg[$pkg]}"
  done
  cat <<YAML
  cmake:
    buildable: false
    externals:
    - spec: cmake@$(cmake --version | sed -n 's/cmake version //p')
      prefix: /usr
  gmake:
    buildable: false
    externals:
    - spec: gmake@$(make --version | sed -n '1s/GNU Make //p')
      prefix: /usr
YAML
} > "$cfg/packages.yaml"
mkdir -p "$work/env"
{
  echo "spack:"
  echo "  concretizer: {unify: false}"
  echo "  view: false          # two builds of pgmpitunelib cannot share one view"
  echo "  specs:"
  for s in "${specs[@]}"; do echo "  - '$s'"; done
} > "$work/env/spack.yaml"
cat > "$cfg/modules.yaml" <<YAML
modules:
  prefix_inspections:
    lib: [LIBRARY_PATH, LD_LIBRARY_PATH]
    include: [CPATH]
  default:
    enable: [lmod]
    roots:
      lmod: $work/modules
    lmod:
      core_compilers: [gcc@12.2.0]
      hierarchy: [mpi]
      hash_length: 0
      exclude: [cmake, gmake, glibc, gcc-runtime]
      all:
        autoload: direct
      projections:
        all: '{name}/{version}'
        pgmpitunelib: '{name}/{version}-{^mpi.name}-{^mpi.version}'
YAML

# The builtin packages these specs can reach (pgmpitunelib, the compiler's runtime gcc-runtime and libc glibc
# that Spack adds to every node), linked from the snapshot into a repository of the same namespace.
subset() {
  rm -rf "$work/builtin"
  sp python "$here/spack_repo_subset.py" "$work/builtin" pgmpitunelib gcc-runtime glibc || return 1
  printf 'repos::\n- %s\n- %s\n' "$src/spack-repo" "$work/builtin" > "$cfg/repos.yaml"
  # Spack keys its index by namespace and refreshes it only for packages changed since: an index of another
  # set of builtin packages in a reused cache (PGMPI_SPACK_CACHE) would be taken as this one's.
  local key; key=$(ls "$work/builtin/packages" | sha1sum | cut -c1-12)
  sed -i "s|^  misc_cache: .*|  misc_cache: $SPACK_USER_CACHE_PATH/misc-builtin-$key|" "$cfg/config.yaml"
}
run sp --version
run cat "$cfg/packages.yaml"
timed repo-subset subset
run sp repo list
run sp audit packages pgmpitunelib
TAIL=40 timed concretize run spe concretize -f
# Build-time tests (--test=root: the recipe's check(), the library's core CTest suite under that MPI) for the
# first MPI; the others install without them: `make test` runs the same core suite against every library
# (ctest), `spack test run` below tests every install (Intel MPI with them 95 s at load 8, without 40 s at load 9).
install() {
  spe install --only-concrete --test=root "${specs[0]}" && spe install --only-concrete
}
TAIL=30 timed install run install
tested=$(sp location -i "${specs[0]}")/.spack/install-time-test-log.txt
echo "\$ grep 'tests passed' $tested   # build-time tests of ${specs[0]}"
grep 'tests passed' "$tested" || true
for s in "${specs[@]}"; do
  lib=$(sp location -i "$s")/lib/libpgmpitune.so
  echo "\$ ldd $lib | grep -E 'libmpi|libmpich'   # $s"
  ldd "$lib" | grep -E 'libmpi\.|libmpich\.' || true
done
TAIL=40 timed test-run run sp test run pgmpitunelib
run sp find -v -d pgmpitunelib
timed modules run sp module lmod refresh -y
echo "\$ find $work/modules -name '*.lua' | sort"
(cd "$work/modules" && find . -name '*.lua' | sort)
