#!/usr/bin/env bash
# Install the Debian packages pgmpi-site needs on this machine (idempotent).
#   deploy/install-packages.sh [base|demo|cluster|browser|mpis|all]
#   base    : compilers, CMake, Open MPI, MPICH, Python venv support
#   demo    : base + Lmod (the demo's next steps are `module use` / `module load`)   (make demo)
#   cluster : + PostgreSQL, Slurm (munge, slurmctld, slurmd), Lmod       (make test)
#   browser : + Debian's chromium and chromium-driver                    (browser tests)
#   mpis    : + the registry MPIs of deploy/mpi-libraries.tsv (Open MPI 5, MPICH 5, Intel MPI), each in
#             its own prefix by deploy/install-mpis.sh, and the shim prefixes of Debian's two
#   all     : everything above                                           (make test)
# Services are NOT started here: the packages would start munge, Slurm and a
# PostgreSQL cluster on port 5432 themselves, so a temporary policy-rc.d forbids it.
set -euo pipefail
what=${1:-all}

base_pkgs=(build-essential gfortran cmake pkg-config python3-venv python3-dev
           openmpi-bin libopenmpi-dev mpich libmpich-dev)
cluster_pkgs=(postgresql postgresql-contrib munge slurmctld slurmd slurm-client lmod iproute2 util-linux)  # iproute2, util-linux: deploy/cluster.sh (ip netns, nsenter, unshare)
browser_pkgs=(chromium chromium-driver)
demo_pkgs=(lmod)

case "$what" in
  base)    pkgs=("${base_pkgs[@]}") ;;
  demo)    pkgs=("${base_pkgs[@]}" "${demo_pkgs[@]}") ;;
  cluster) pkgs=("${base_pkgs[@]}" "${cluster_pkgs[@]}") ;;
  browser) pkgs=("${browser_pkgs[@]}") ;;
  mpis)    pkgs=("${base_pkgs[@]}") ;;
  all)     pkgs=("${base_pkgs[@]}" "${cluster_pkgs[@]}" "${browser_pkgs[@]}") ;;
  *) echo "usage: $0 [base|demo|cluster|browser|mpis|all]" >&2; exit 2 ;;
esac
# The MPI prefixes come after the Debian packages (the shims of Debian's two point into them).
install_mpis() {
  case "$what" in mpis|all) "$(dirname "$0")/install-mpis.sh" all ;; esac
}

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-packages: all ${#pkgs[@]} Debian packages for '$what' present"
  install_mpis
  exit $?
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-packages: missing ${missing[*]}; run as root or install them yourself" >&2
  exit 1
fi
echo "install-packages: installing ${missing[*]}"
created_policy=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; created_policy=1
fi
trap '[ $created_policy = 1 ] && rm -f /usr/sbin/policy-rc.d' EXIT
export DEBIAN_FRONTEND=noninteractive
# Refresh the lists only when they are missing or older than a day.
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | head -n1)" ]; then
  apt-get update -qq
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-packages: done"
install_mpis
