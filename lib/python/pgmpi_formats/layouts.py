"""The layout of an mpirun as one label: the key that keeps results, verdicts and profiles of the same p on
different node structures apart (1x4 and 2x2 can need different choices).

    layout_label(nodes=2, ppn=2, nprocs=4, placement="0:2,1:2")   -> "2x2"
    layout_label(2, 3, 5, "0:3,1:2")                              -> "3+2"            (uneven)
    layout_label(2, 2, 4, "0:1,1:1,0:1,1:1")                      -> "2x2-interleaved"
    layout_label(64, 32, 2032, "0:32,...,62:32,63:16")            -> "63x32+16"       (compact beyond 60)
    parse_layout("2x2") -> (2, 2); parse_layout("3+2") -> None   (only even block layouts have NxP)

The numbers come from pgmpi-bench's header (#@nodes, #@ppn, #@placement: measured inside the run,
lib/bench/bench_output.c). Placement is run-length "node:count" in rank order; a node index that appears in
two runs means the ranks were dealt to the nodes in turn ("interleaved"). A label is "" when the node
count is not known (genuine ReproMPI files): such runs are keyed by p alone, as before layouts existed.
Only an even block layout ("NxP") can carry a `#@pgmpi layout` profile (lib/docs/profile-format.md): the
library matches a communicator's nodes x ranks per node, and falls back on uneven nodes.
"""
from __future__ import annotations

import re

_EVEN = re.compile(r"^([1-9][0-9]*)x([1-9][0-9]*)$")
LABEL_MAX = 60      # the layout columns (runs, violations, figures); longer labels are written compactly


def placement_counts(placement: str) -> tuple[list[int], bool] | None:
    """"0:2,1:2" -> ([2, 2], interleaved=False); None when it cannot be read."""
    counts: dict[int, int] = {}
    runs_seen: list[int] = []
    try:
        for part in (placement or "").split(","):
            node, n = part.split(":")
            node_i, n_i = int(node), int(n)
            if node_i < 0 or n_i <= 0:
                return None
            counts[node_i] = counts.get(node_i, 0) + n_i
            runs_seen.append(node_i)
    except ValueError:
        return None
    if not counts:
        return None
    return [counts[k] for k in sorted(counts)], len(runs_seen) != len(counts)


def layout_label(nodes: int, ppn: int, nprocs: int, placement: str = "") -> str:
    """The label of a run's layout (module docstring); "" when nodes are unknown."""
    got = placement_counts(placement) if placement else None
    if got is not None and sum(got[0]) == nprocs:
        counts, interleaved = got
    elif nodes and nodes > 0 and ppn and ppn > 0:
        if nodes * ppn != nprocs:
            # uneven without a placement to say how: the extremes are all that is known
            return f"{nodes}n{nprocs}p-uneven"
        counts, interleaved = [ppn] * nodes, False
    else:
        return ""
    suffix = "-interleaved" if interleaved else ""
    if len(set(counts)) == 1:
        return f"{len(counts)}x{counts[0]}" + suffix
    ordered = sorted(counts, reverse=True)
    label = "+".join(str(c) for c in ordered)
    if len(label) + len(suffix) > LABEL_MAX:
        # many nodes: equal counts grouped, "63x32+16" for 63 nodes of 32 ranks and one of 16
        groups = [(c, ordered.count(c)) for c in sorted(set(ordered), reverse=True)]
        label = "+".join(f"{k}x{c}" if k > 1 else str(c) for c, k in groups)
    if len(label) + len(suffix) > LABEL_MAX:
        # still too long (many distinct counts): the extremes and a digest of the counts keep it unique
        import hashlib
        digest = hashlib.sha256(",".join(map(str, ordered)).encode()).hexdigest()[:8]
        label = f"{len(counts)}n{nprocs}p-uneven-{digest}"
    return label + suffix


def parse_layout(label: str) -> tuple[int, int] | None:
    """(nodes, ppn) of an even block layout "NxP"; None for "", uneven or interleaved labels."""
    m = _EVEN.match(label or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def run_layout(header: dict) -> str:
    """The label of a raw-results header (#@nodes, #@ppn, #@nprocs, #@placement)."""
    def num(k: str) -> int:
        try:
            return int(str(header.get(k, "")).strip())
        except ValueError:
            return 0
    nprocs = num("nprocs") or num("np") or num("p")
    return layout_label(num("nodes"), num("ppn"), nprocs, str(header.get("placement", "") or ""))


def sort_key(label: str) -> tuple:
    """Layouts of one p ordered by node count, then label (1x4 before 2x2 before 4x1)."""
    m = _EVEN.match(label or "")
    if m:
        return (int(m.group(1)), label)
    first = re.match(r"^([0-9]+)", label or "")
    if "+" not in (label or ""):
        return (int(first.group(1)) if first else 0, label)
    # "3+2" is two nodes, "63x32+16" (the compact form) 64
    nodes = sum(int(part.split("x")[0]) if "x" in part else 1
                for part in label.split("-")[0].split("+"))
    return (nodes, label)
