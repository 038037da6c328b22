#!/usr/bin/env bash
# How long deploy/cluster.sh takes to bring the virtual cluster up (cold: fresh state dir, no namespaces)
# and down, on a private instance of its own (own state dir, bridge, namespaces, address range and ports),
# so it runs next to the cluster the tests use without touching it. Prints one line per round and the load.
#   tests/bench/cluster_up.sh [ROUNDS] [NODES]            (root; defaults 3 rounds, 3 nodes)
# These are bring-up times of daemons and namespaces, not performance figures of anything measured on it.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-3}; nodes=${2:-3}
work=$(mktemp -d /tmp/pgmpi-cluster-up.XXXXXX); chmod 755 "$work"   # munged (user munge) reaches its dir
export PGMPI_STATE_DIR=$work PGMPI_CLUSTER_NODES=$nodes PGMPI_CLUSTER_PREFIX=pgmpibu PGMPI_CLUSTER_NET=10.199.87 \
  PGMPI_CLUSTER_CTLD_PORT=26917 PGMPI_CLUSTER_SLURMD_PORT=26918
export SLURM_CONF=$work/cluster/etc/slurm.conf
trap '"$top/deploy/cluster.sh" down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
now() { date +%s.%N; }
for r in $(seq 1 "$rounds"); do
  rm -rf "$work/cluster"
  t0=$(now); "$top/deploy/cluster.sh" up >/dev/null; t1=$(now)
  srun -N"$nodes" --ntasks-per-node=1 hostname >/dev/null 2>&1 \
    || { echo "cluster_up: a job on all $nodes nodes failed" >&2; exit 1; }
  t2=$(now); "$top/deploy/cluster.sh" down >/dev/null; t3=$(now)
  awk -v r="$r" -v n="$nodes" -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
    'BEGIN{printf "round %d: %d nodes up (all idle) in %.1f s, down in %.1f s; load %s\n", r, n, b - a, d - c, l}'
done
