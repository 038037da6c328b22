#!/usr/bin/env bash
# Install the MPI libraries of deploy/mpi-libraries.tsv, each into a prefix of its own (idempotent).
#   deploy/install-mpis.sh [all|registry|debian|<id> ...]        (default: all)
# debian:<packages>  the packages must be present (deploy/install-packages.sh base); <prefix> becomes a
#                    shim whose bin/, include/ and lib/ point at that one MPI in /usr (Debian's unsuffixed
#                    mpicc/mpirun follow the alternatives, which nothing here changes).
# pypi:<reqs>        `pip install --no-deps --ignore-installed --prefix <prefix> <reqs>`: the wheels' data
#                    (bin/ lib/ include/ ...) lands directly in <prefix>; nothing is added to any Python.
# site               installed by the site itself: only checked (<prefix>/bin/mpicc must exist).
# A prefix is complete when its .pgmpi-source stamp holds the row's source; anything else is reinstalled.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
table=$top/deploy/mpi-libraries.tsv
py=${PYTHON:-python3}
export PIP_ROOT_USER_ACTION=ignore   # root installs into a prefix of our own, not into that Python

rows() { grep -v -e '^#' -e '^$' -e $'^id\tfamily\tversion\tsource\tprefix$' "$table"; }   # data rows only
ids=()
for want in "${@:-all}"; do
  case $want in
    all)      mapfile -t -O "${#ids[@]}" ids < <(rows | cut -f1) ;;
    registry) mapfile -t -O "${#ids[@]}" ids < <(rows | awk -F'\t' '$4 ~ /^pypi:/ {print $1}') ;;
    debian)   mapfile -t -O "${#ids[@]}" ids < <(rows | awk -F'\t' '$4 ~ /^debian:/ {print $1}') ;;
    *) rows | cut -f1 | grep -qx -- "$want" \
         || { echo "install-mpis.sh: unknown MPI id '$want' (valid: all, registry, debian, $(rows | cut -f1 | paste -sd, | sed 's/,/, /g'))" >&2; exit 2; }
       ids+=("$want") ;;
  esac
done

# The commands of one Debian MPI, by their unsuffixed names (hydra's helpers are started by name).
debian_tools() {
  case $1 in
    openmpi) echo "mpicc mpicxx mpic++ mpif77 mpif90 mpifort mpirun mpiexec ompi_info orted orterun" ;;
    mpich)   echo "mpicc mpicxx mpif77 mpif90 mpifort mpirun mpiexec mpichversion mpiexec.hydra hydra_pmi_proxy hydra_nameserver hydra_persist" ;;
  esac
}

install_debian() {  # id family source prefix
  local id=$1 family=$2 source=$3 prefix=$4 p t src
  for p in $(tr ',' ' ' <<<"${source#debian:}"); do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
      || { echo "install-mpis.sh: $id needs the Debian package $p (deploy/install-packages.sh base)" >&2; return 1; }
  done
  mkdir -p "$prefix/bin"
  for t in $(debian_tools "$family"); do
    src=/usr/bin/$t.$family
    [ -e "$src" ] || src=/usr/bin/$t
    [ -e "$src" ] || { echo "install-mpis.sh: $src missing" >&2; return 1; }
    ln -sfn "$src" "$prefix/bin/$t"
  done
  case $family in   # Spack and CMake look for headers and libraries under an external's prefix
    openmpi) ln -sfn /usr/lib/x86_64-linux-gnu/openmpi/include "$prefix/include"
             ln -sfn /usr/lib/x86_64-linux-gnu/openmpi/lib "$prefix/lib" ;;
    mpich)   ln -sfn /usr/include/x86_64-linux-gnu/mpich "$prefix/include"
             mkdir -p "$prefix/lib"
             for p in /usr/lib/x86_64-linux-gnu/libmpich*.so* /usr/lib/x86_64-linux-gnu/libmpi.so*; do
               [ -e "$p" ] && ln -sfn "$p" "$prefix/lib/"
             done ;;
  esac
}

install_pypi() {  # id source prefix
  local id=$1 source=$2 prefix=$3
  rm -rf "$prefix"
  # shellcheck disable=SC2046
  "$py" -m pip install --quiet --no-deps --ignore-installed --no-warn-script-location \
    --prefix "$prefix" $(tr ',' ' ' <<<"${source#pypi:}") \
    || { rm -rf "$prefix"; echo "install-mpis.sh: pip could not install $id (${source#pypi:})" >&2; return 1; }
  [ -x "$prefix/bin/mpicc" ] || { echo "install-mpis.sh: $id installed but $prefix/bin/mpicc is missing" >&2; return 1; }
}

root_dir=$(rows | head -n1 | cut -f5); root_dir=${root_dir%/*}
mkdir -p "$root_dir" 2>/dev/null \
  || { echo "install-mpis.sh: cannot create $root_dir (run as root, or create it writable for you)" >&2; exit 1; }
exec 9>"$root_dir/.install.lock"; flock 9     # one installer at a time (make test, helpers, demo)
rc=0
for id in "${ids[@]}"; do
  IFS=$'\t' read -r _ family version source prefix < <(rows | awk -F'\t' -v id="$id" '$1 == id')
  if [ "$(cat "$prefix/.pgmpi-source" 2>/dev/null)" = "$source" ] && [ -x "$prefix/bin/mpicc" ]; then
    echo "install-mpis.sh: $id ($family $version) present in $prefix"
    continue
  fi
  t0=$(date +%s.%N)
  case $source in
    debian:*) install_debian "$id" "$family" "$source" "$prefix" || { rc=1; continue; } ;;
    pypi:*)   install_pypi "$id" "$source" "$prefix" || { rc=1; continue; } ;;
    site)     echo "install-mpis.sh: $id (source site) is the site's own and not installed in $prefix" >&2
              rc=1; continue ;;
    *) echo "install-mpis.sh: $table: $id: unknown source '$source' (valid: debian:<packages>, pypi:<requirements>, site)" >&2
       rc=1; continue ;;
  esac
  printf '%s\n' "$source" > "$prefix/.pgmpi-source"
  echo "install-mpis.sh: $id ($family $version) installed in $prefix in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}') s"
done
exit $rc
