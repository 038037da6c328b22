"""Searching the MPI library's own algorithms x segment sizes with fewer experiments (the seed paper's MGD and
SMGD), evaluated on exhaustive data: which (method, segment) each search would have measured, what it
would have chosen, and what that costs against the exhaustive optimum of the same cell.

    cell = Cell(times={"binomial": {None: 8.1e-5, 262144: 7.9e-5, ...}, ...})   # seconds, None = unsegmented
    r = search("mgd", cell, size)       # -> Result(choice, experiments, cost)
    loss = cell.loss(r.choice)          # (t(choice) - t(best)) / t(best) over the cell's variants

An experiment is one (method, segment size) measured at one (collective, message size, p); its cost is its
run-time (every experiment repeats the same number of times, so cost ratios are time ratios).  Segment sizes
searched at a message size are the measured ones below it (the seed paper), plus the unsegmented variant.

- exhaustive: every variant.
- mgd (modified gradient descent): per method, start at the largest segment (the unsegmented variant) and
  step to smaller segments; keep going past the first minimum for `lookahead` steps without improvement
  (the curves have several local minima), then stop.
- smgd (scanning MGD): first one experiment per method at its start; order the methods by that value and
  prune those more than `prune` slower than the best start; descend the rest in that order with MGD, and
  stop a descent early when it has not improved on its own start after `lookahead` steps while it is
  already `prune` behind the best found so far.
"""
from __future__ import annotations

from dataclasses import dataclass, field

SEARCHES = ("exhaustive", "mgd", "smgd")


@dataclass
class Cell:
    times: dict[str, dict[int | None, float]]

    def variants(self, size: int) -> list[tuple[str, int | None]]:
        return [(m, s) for m, segs in self.times.items() for s in self.segments(m, size)]

    def segments(self, method: str, size: int) -> list[int | None]:
        """Start first: the unsegmented variant (if measured), then segment sizes below `size`, descending."""
        segs = self.times[method]
        out = [None] if None in segs else []
        return out + sorted((s for s in segs if s is not None and s < size), reverse=True)

    def t(self, v: tuple[str, int | None]) -> float:
        return self.times[v[0]][v[1]]

    def best(self, size: int) -> tuple[str, int | None]:
        return min(self.variants(size), key=self.t)

    def loss(self, choice: tuple[str, int | None], size: int) -> float:
        b = self.t(self.best(size))
        return (self.t(choice) - b) / b


@dataclass
class Result:
    choice: tuple[str, int | None]
    experiments: list[tuple[str, int | None]] = field(default_factory=list)

    def cost(self, cell: Cell) -> float:
        return sum(cell.t(v) for v in self.experiments)


def _descend(cell: Cell, method: str, size: int, lookahead: int, seen: list, start_done: bool = False,
             give_up=None) -> tuple[str, int | None]:
    best = None
    misses = 0
    for i, s in enumerate(cell.segments(method, size)):
        v = (method, s)
        if not (start_done and i == 0):
            seen.append(v)
        if best is None or cell.t(v) < cell.t(best):
            best, misses = v, 0
        else:
            misses += 1
            if misses > lookahead or (give_up and give_up(best, misses)):
                break
    return best


def search(kind: str, cell: Cell, size: int, lookahead: int = 2, prune: float = 0.5) -> Result:
    if kind not in SEARCHES:
        raise ValueError(f"unknown search {kind!r}; valid: {', '.join(SEARCHES)}")
    if kind == "exhaustive":
        vs = cell.variants(size)
        return Result(min(vs, key=cell.t), list(vs))
    seen: list = []
    if kind == "mgd":
        picks = [_descend(cell, m, size, lookahead, seen) for m in cell.times if cell.segments(m, size)]
        return Result(min(picks, key=cell.t), seen)
    # smgd: scan the starts, order, prune, descend
    starts = [(m, cell.segments(m, size)[0]) for m in cell.times if cell.segments(m, size)]
    seen.extend(starts)
    starts.sort(key=cell.t)
    best = starts[0]
    for v in starts:
        if cell.t(v) > cell.t(best) * (1 + prune):
            continue                                           # clearly worse from the start: pruned
        pick = _descend(cell, v[0], size, lookahead, seen, start_done=True,
                        give_up=lambda b, misses: misses >= 1 and cell.t(b) > cell.t(best) * (1 + prune / 2))
        if cell.t(pick) < cell.t(best):
            best = pick
    return Result(best, seen)
