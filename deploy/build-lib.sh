#!/usr/bin/env bash
# Build and install libpgmpitune, pgmpi-bench and pgmpitune-check once per MPI library of
# deploy/mpi-libraries.tsv. Incremental and idempotent.
#   deploy/build-lib.sh [all|<id> ...]      -> build/<id>/, installed into build/install/<id>/
#   all = every library of the table that is installed (Debian's two need only their packages; the
#   registry ones their prefix: deploy/install-mpis.sh). Fortran is built where the MPI has a working
#   Fortran wrapper and skipped with a message otherwise (lib/CMakeLists.txt, PGMPITUNE_FORTRAN=AUTO).
# Debian's MPIs are built with their suffixed compiler names (the unsuffixed ones follow Debian's
# alternatives); the others with the commands of their prefix, under the environment of deploy/mpi-env.sh.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
table=$top/deploy/mpi-libraries.tsv
rows() { grep -v -e '^#' -e '^$' -e $'^id\tfamily\tversion\tsource\tprefix$' "$table"; }   # data rows only
jobs=$(nproc 2>/dev/null || echo 2)

# The C and Fortran wrappers and mpiexec of one id; empty when it is not installed.
wrappers() {  # id family source prefix
  local id=$1 family=$2 source=$3 prefix=$4
  case $source in
    debian:*) command -v "mpicc.$family" >/dev/null || return 0
              echo "$(command -v "mpicc.$family") /usr/bin/mpif90.$family /usr/bin/mpiexec.$family" ;;
    *)        [ -x "$prefix/bin/mpicc" ] || return 0
              echo "$prefix/bin/mpicc $prefix/bin/mpif90 $prefix/bin/mpiexec" ;;
  esac
}

# The environment of a registry MPI (deploy/mpi-env.sh) as CTest ENVIRONMENT_MODIFICATION entries, so that
# `ctest` in build/<id> runs that MPI from any shell.
test_env_mods() {  # id
  local out; out=$("$top/deploy/mpi-env.sh" "$1")
  ( unset PATH LD_LIBRARY_PATH I_MPI_ROOT FI_PROVIDER_PATH; eval "$out"
    mods=()
    for v in PATH LD_LIBRARY_PATH; do
      IFS=: read -r -a dirs <<<"${!v-}"
      for (( i = ${#dirs[@]} - 1; i >= 0; i-- )); do mods+=("$v=path_list_prepend:${dirs[i]}"); done
    done
    for v in I_MPI_ROOT FI_PROVIDER_PATH; do [ -z "${!v-}" ] || mods+=("$v=set:${!v}"); done
    IFS=';'; printf '%s' "${mods[*]}" )
}

ids=()
for want in "${@:-all}"; do
  if [ "$want" = all ]; then
    while IFS=$'\t' read -r id family _ source prefix; do
      [ -n "$(wrappers "$id" "$family" "$source" "$prefix")" ] && ids+=("$id")
    done < <(rows)
  elif rows | cut -f1 | grep -qx -- "$want"; then
    ids+=("$want")
  else
    echo "build-lib.sh: unknown MPI '$want' (valid: all, $(rows | cut -f1 | paste -sd, | sed 's/,/, /g'))" >&2; exit 2
  fi
done
[ ${#ids[@]} -gt 0 ] || { echo "build-lib.sh: no MPI library installed (deploy/install-packages.sh base)" >&2; exit 1; }

# Serialise concurrent builds of the same tree (tests, helpers, make targets).
mkdir -p "$top/build"; exec 9>"$top/build/.build-lib.lock"; flock 9
for id in "${ids[@]}"; do
  IFS=$'\t' read -r _ family version source prefix < <(rows | awk -F'\t' -v id="$id" '$1 == id')
  w=$(wrappers "$id" "$family" "$source" "$prefix")
  [ -n "$w" ] || { echo "build-lib.sh: $id ($family $version) is not installed (deploy/install-mpis.sh $id)" >&2; exit 1; }
  read -r mpicc mpif90 mpiexec <<<"$w"
  bdir=$top/build/$id
  mods=
  case $source in debian:*) ;; *) mods=$(test_env_mods "$id") ;; esac
  (
    case $source in debian:*) ;; *) eval "$("$top/deploy/mpi-env.sh" "$id")" ;; esac
    # Configured every time (a few seconds once FindMPI's results are cached): the table may have changed.
    # MPI_Fortran_COMPILER is given even when it does not exist, so that FindMPI never picks another
    # MPI's mpif90 from PATH.
    cmake -S "$top/lib" -B "$bdir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_INSTALL_PREFIX="$top/build/install/$id" \
      -DMPI_C_COMPILER="$mpicc" -DMPI_Fortran_COMPILER="$mpif90" -DMPIEXEC_EXECUTABLE="$mpiexec" \
      -DPGMPITUNE_MPI_ID="$id" -DPGMPITUNE_MPI_FAMILY="$family" -DPGMPITUNE_TEST_ENV_MODS="$mods" \
      -DPGMPITUNE_BUILD_TESTS=ON >"$bdir.configure.log" 2>&1 \
      || { mkdir -p "$bdir"; cat "$bdir.configure.log" >&2; exit 1; }
    cmake --build "$bdir" -j "$jobs" >"$bdir.build.log" 2>&1 || { tail -n 40 "$bdir.build.log" >&2; exit 1; }
    cmake --install "$bdir" >/dev/null
  )
  fortran=$(cat "$bdir/fortran-status.txt" 2>/dev/null || echo "Fortran: see build/$id.configure.log")
  echo "build-lib.sh: $id ($family $version) built in build/$id, installed in build/install/$id; $fortran"
done
