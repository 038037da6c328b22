#!/usr/bin/env bash
# spack_scenario.sh <work dir>: real Spack (the `spack` on PATH) installs pgmpitunelib from this
# checkout's spack-repo against Debian's Open MPI and MPICH (externals behind shim prefixes) and
# generates the Lmod hierarchy. Everything Spack writes stays under <work dir>, except the user
# cache (SPACK_USER_CACHE_PATH, default <work dir>/cache; reuse one to skip re-indexing).
# Offline: no mirrors, no bootstrapping (clingo must be importable by Spack's Python: SPACK_PYTHON).
# Prints each command as "$ ..." followed by its (trimmed) output.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
work=$(mkdir -p "$1" && cd "$1" && pwd)
cfg=$work/config
mkdir -p "$cfg" "$work/shims"
export SPACK_DISABLE_LOCAL_CONFIG=1
export SPACK_USER_CACHE_PATH=${SPACK_USER_CACHE_PATH:-$work/cache}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

run() { echo "\$ $*"; "$@" 2>&1 | grep -v -E '^==> (Fetching|Staging|Moving|No patches|Using cached|Ran patch)' | tail -n "${TAIL:-25}"; return "${PIPESTATUS[0]}"; }
sp() { spack -C "$cfg" "$@"; }

for m in openmpi mpich; do "$here/mkshim.sh" "$work/shims/$m" $m; done

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
  - $top/spack-repo/templates
YAML
cat > "$cfg/repos.yaml" <<YAML
repos:
- $top/spack-repo
YAML
cat > "$cfg/mirrors.yaml" <<YAML
mirrors:: {}
YAML
cat > "$cfg/bootstrap.yaml" <<YAML
bootstrap:
  enable: false
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
cat > "$cfg/packages.yaml" <<YAML
packages:
  all:
    providers:
      mpi: [openmpi, mpich]
  mpi:
    buildable: false
  openmpi:
    buildable: false
    externals:
    - spec: openmpi@4.1.4
      prefix: $work/shims/openmpi
  mpich:
    buildable: false
    externals:
    - spec: mpich@4.0.2
      prefix: $work/shims/mpich
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

run spack --version
run sp repo list
run sp audit packages pgmpitunelib
for m in openmpi mpich; do
  TAIL=12 run sp install --test=root pgmpitunelib ^$m
  lib=$(sp location -i pgmpitunelib ^$m)/lib/libpgmpitune.so
  echo "\$ ldd $lib | grep -E 'libmpi|libmpich'"
  ldd "$lib" | grep -E 'libmpi\.|libmpich\.' || true
  run sp test run pgmpitunelib ^$m
done
run sp find -v -d pgmpitunelib
run sp module lmod refresh -y
echo "\$ find $work/modules -name '*.lua' | sort"
(cd "$work/modules" && find . -name '*.lua' | sort)
