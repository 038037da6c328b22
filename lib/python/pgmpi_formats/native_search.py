"""Searching the MPI library's own algorithms x segment sizes with fewer experiments (the seed paper's MGD and
SMGD: the seed paper "tuned collective operations by experiment", section 4.2).  One engine serves both
uses, so a replay and a live campaign take exactly the same steps:

    space = grid(methods, segmented, SEGMENTS, size)        # {method: [None, 524288, ..., 1024]}
    path = run("smgd", space, measure, start=previous)      # measure([variants]) -> {variant: seconds}
    path.choice, path.experiments, path.rounds

- replay: `measure` looks the variants up in an exhaustive campaign's stored results (`Cell.measure`);
- live: the campaign job's search driver (scheduler/native_driver.py) launches pgmpi-bench for each round's
  variants, default interleaved in the same mpirun.

An experiment is one (method, segment size) measured at one (collective, message size, p); its cost is its
run-time (the same repetitions everywhere, so cost ratios are time ratios).  Variant `(method, None)` is the
unsegmented one ("segment size equal to message size", the paper's largest segment); segment sizes searched
at a message size are the grid's powers of two *below* it (the paper: "powers of 2 ... and less than the
message size").  Methods that take no segment size have the single variant `(method, None)`.

- exhaustive: every variant of the cell.
- mgd (modified gradient descent): per method, start at the largest segment (unsegmented) and step to
  smaller segments only; keep going past the first minimum for `lookahead` steps without improvement (the
  curves have several local minima), then stop.  The methods descend side by side, one step per round.
- smgd (scanning MGD): round 0 scans every method's start; the methods are ordered by that value and those
  more than `prune` slower than the best start are pruned; the rest descend in that order, and a descent
  stops early when its last gradient, continued for two more steps, cannot reach the best found so far
  (the paper's "rates of change ... to predict values and thus prune").
- race (successive halving in two stages): round 0 measures every variant of the cell once, with few
  repetitions (the driver's first-stage nrep); only when some variant beat the default in that round
  (REFERENCE) are the `keep` fastest measured again, `repeat` times over, and the fastest there is the
  choice.  A cell where nothing beat the default costs one short round: on a grid where most cells keep
  their default (MPICH, Intel: no segment sizes, a handful of methods) that is where exhaustive's time goes.
- start=<the neighbouring (smaller) message size's path> (run_sizes, neighbour "segment" or "prune"): a method
  starts its descent at the segment size that was its best at the neighbour when that is below this size
  (then it still looks `lookahead` steps past it); with "prune" the scan is also limited to the methods that
  were not pruned there (rescan=False), except at every `rescan_every`-th message size.

mgd and smgd (and neighbour "segment") measure at least one variant of every method in every cell, so on a
grid they cannot make fewer experiments than the cells' methods: `bound_row` is that floor, which the
search report prints as "scan bound" (variants / methods; Open MPI at p = 2: 2.0x with segments from 1 KiB,
4.4x from 64 B: scheduler/README.md).
"""
from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field

SEARCHES = ("exhaustive", "mgd", "smgd", "race")
Variant = tuple[str, "int | None"]
# A measure() may answer, next to its batch, the default's time in the same round under this key (the driver
# does: the default is in every round); race uses it to decide whether a cell deserves more repetitions.
REFERENCE: Variant = ("default", None)
# race (successive halving, two stages): the variants kept for the second stage and how many times its round
# is measured (the driver repeats the round: `repeat` x the campaign's first-stage nrep)
RACE_KEEP = 2
RACE_REPEAT = 3
# A confirmation round (scheduler/native_driver.py) first measures the default alone at this size, its rows
# left out of every cell (service/analysis/native_decision.mark_blocks): the first calls of an mpirun can cost
# milliseconds (MPICH at load 7: 2.8 ms a call at allgather 8 B, then 1 us), and measured alone, unlike
# interleaved, they would fall on one arm of the first cell only.
WARMUP_BYTES = 1


class Batch(list):
    """One round's variants; `repeat`: how many times over the driver measures them (1: once)."""

    def __init__(self, variants=(), repeat: int = 1):
        super().__init__(variants)
        self.repeat = repeat

# The exhaustive grid a site would sweep (tests/bench/native_search.py, lib/bench/README.md): message sizes
# in powers of two from 8 B to 1 MiB (the paper's primary grid) and segment sizes in powers of two from
# 1 KiB below the message size (the paper: powers of two below the message size; 1 KiB is the smallest
# segment Open MPI's own fixed decision uses, and below it a 1 MiB message needs >1000 segments per call).
SIZES = [2 ** k for k in range(3, 21)]
SEGMENTS = [2 ** k for k in range(10, 20)]

# Open MPI 4.1 methods that take coll_tuned_<coll>_algorithm_segmentsize (the base functions' segsize
# argument in ompi/mca/coll/base/coll_base_{bcast,reduce,allreduce}.c); every other method ignores it, so
# sweeping it there would only inflate the grid.  MPICH has no segment size for blocking algorithms.
SEGMENTED = {
    "openmpi": {"bcast": {"chain", "pipeline", "split_binary_tree", "binary_tree", "binomial", "knomial"},
                "reduce": {"chain", "pipeline", "binary", "binomial", "in-order_binary"},
                "allreduce": {"segmented_ring"}},
    "mpich": {},
}


def grid(methods, segmented, segments, size: int) -> dict[str, list]:
    """The cell's variants per method, start first: unsegmented, then segment sizes below `size` descending."""
    return {m: [None] + (sorted((s for s in segments if s < size), reverse=True) if m in segmented else [])
            for m in methods}


@dataclass
class Path:
    """What one search of one cell did: the rounds of variants it measured and what it chose."""
    kind: str
    choice: Variant | None = None
    rounds: list[list[Variant]] = field(default_factory=list)
    times: dict[Variant, float] = field(default_factory=dict)
    pruned: list[str] = field(default_factory=list)        # methods left out (scan threshold or neighbour)
    repeats: list[int] = field(default_factory=list)       # per round: times over it was measured (race)
    reference: float | None = None                         # the default's time in the last round (REFERENCE)
    best_segment: dict[str, "int | None"] = field(default_factory=dict)   # per method: its best variant's seg

    @property
    def experiments(self) -> list[Variant]:
        return [v for r in self.rounds for v in r]

    def cost(self) -> float:
        """The visited variants' times, a round measured `repeat` times over counted so often."""
        reps = self.repeats or [1] * len(self.rounds)
        return sum(n * self.times[v] for r, n in zip(self.rounds, reps) for v in r)

    def to_json(self) -> dict:
        lab = _label
        return {"kind": self.kind, "choice": lab(self.choice) if self.choice else None,
                "rounds": [[lab(v) for v in r] for r in self.rounds],
                "times": {lab(v): t for v, t in self.times.items()}, "pruned": self.pruned,
                "best_segment": self.best_segment, "repeats": self.repeats, "reference": self.reference}


def _label(v: Variant) -> str:
    return f"native:{v[0]}" + (f":seg={v[1]}" if v[1] is not None else "")


class _Descent:
    """One method's walk down its variants, starting at index `first`, `lookahead` misses past a minimum."""

    def __init__(self, method: str, variants: list, lookahead: int, first: int = 0):
        self.method, self.variants, self.lookahead = method, variants, lookahead
        self.i, self.best, self.misses, self.last = first, None, 0, []
        self.done = not variants

    def next(self) -> Variant | None:
        if self.done or self.i >= len(self.variants):
            self.done = True
            return None
        return (self.method, self.variants[self.i])

    def record(self, t: float, times: dict) -> None:
        v = (self.method, self.variants[self.i])
        self.last = (self.last + [t])[-2:]
        if self.best is None or t < times[self.best]:
            self.best, self.misses = v, 0
        else:
            self.misses += 1
            if self.misses > self.lookahead:
                self.done = True
        self.i += 1


def steps(kind: str, space: dict[str, list], lookahead: int = 2, prune: float = 0.5,
          start: Path | None = None, rescan: bool = True, keep: int = RACE_KEEP,
          repeat: int = RACE_REPEAT) -> Generator[list[Variant], dict, Path]:
    """The search as a generator: yields a round's variants, receives their times, returns the Path."""
    if kind not in SEARCHES:
        raise ValueError(f"unknown search {kind!r}; valid: {', '.join(SEARCHES)}")
    path = Path(kind)
    times = path.times

    def measured(batch):
        got = yield batch
        path.rounds.append(list(batch))
        path.repeats.append(getattr(batch, "repeat", 1))
        times.update({v: got[v] for v in batch})
        if REFERENCE in got:
            path.reference = got[REFERENCE]

    if kind == "exhaustive":
        yield from measured([(m, s) for m, segs in space.items() for s in segs])
    elif kind == "race":
        every = [(m, s) for m, segs in space.items() for s in segs]
        if every:
            yield from measured(Batch(every))
            ref = path.reference if path.reference is not None else float("inf")
            fast = sorted((v for v in every if times[v] < ref), key=times.get)[:keep]
            if fast:
                yield from measured(Batch(fast, repeat))
            # the second stage's times decide among its variants; without one, the first round's fastest
            path.choice = min(fast or every, key=times.get)
            path.best_segment = {m: min(((m, s) for s in segs), key=times.get)[1]
                                 for m, segs in space.items() if segs}
        return path
    else:
        methods = [m for m in space if space[m]]
        carry = start is not None and not rescan
        if carry:                                   # the neighbour's survivors only
            kept = [m for m in methods if m not in start.pruned]
            path.pruned = [m for m in methods if m not in kept]
            methods = kept or methods

        def first(m):                               # the neighbour's best segment of m, if below this size
            seg = start.best_segment.get(m) if start is not None else None
            return space[m].index(seg) if seg in space[m] else 0

        descents = {m: _Descent(m, space[m], lookahead, first(m)) for m in methods}
        if kind == "smgd":
            scan = [d.next() for d in descents.values()]
            yield from measured(scan)
            for d in descents.values():
                d.record(times[d.next()], times)
            order = sorted(methods, key=lambda m: times[descents[m].best])
            top = times[descents[order[0]].best]
            for m in order:
                if times[descents[m].best] > top * (1 + prune):
                    descents[m].done = True
                    path.pruned.append(m)
            descents = {m: descents[m] for m in order}
        while True:
            batch = [v for v in (d.next() for d in descents.values()) if v is not None]
            if not batch:
                break
            yield from measured(batch)
            for d in descents.values():
                v = d.next()
                if v is not None and v in times and v in batch:
                    d.record(times[v], times)
            if kind == "smgd":
                best = min(times[d.best] for d in descents.values() if d.best is not None)
                for d in descents.values():
                    if not d.done and len(d.last) == 2 and d.last[1] < d.last[0]:
                        rate = d.last[1] / d.last[0]
                        if d.last[1] * rate * rate > best:          # two more steps at this rate lose anyway
                            d.done = True
                    elif not d.done and d.misses >= 1 and times[d.best] > best * (1 + prune / 2):
                        d.done = True                               # not improving and clearly behind
        for m, d in descents.items():
            if d.best is not None:
                path.best_segment[m] = d.best[1]
    path.choice = min(times, key=times.get) if times else None
    if kind == "exhaustive":
        path.best_segment = {m: min(((m, s) for s in segs), key=times.get)[1] for m, segs in space.items() if segs}
    return path


def run(kind: str, space: dict[str, list], measure: Callable[[list[Variant]], dict], **kw) -> Path:
    """Drives `steps` with `measure(variants) -> {variant: seconds}` (a replay table or real launches)."""
    gen = steps(kind, space, **kw)
    try:
        batch = next(gen)
        while True:
            batch = gen.send(measure(batch))
    except StopIteration as stop:
        return stop.value


NEIGHBOUR = ("none", "segment", "prune")


def run_sizes(kind: str, spaces: dict[int, dict[str, list]], measure: Callable[[int, list], dict],
              neighbour: str = "none", rescan_every: int = 4, **kw) -> dict[int, Path]:
    """One collective at every message size, ascending.  neighbour (mgd and smgd): "none", every size on its
    own; "segment", each method starts at the segment that was its best at the previous size; "prune", also
    the methods pruned at the previous size stay out, except at every `rescan_every`-th size."""
    if neighbour not in NEIGHBOUR:
        raise ValueError(f"unknown neighbour mode {neighbour!r}; valid: {', '.join(NEIGHBOUR)}")
    out: dict[int, Path] = {}
    prev = None
    for i, size in enumerate(sorted(spaces)):
        start = prev if (neighbour != "none" and kind != "exhaustive") else None
        rescan = start is None or neighbour == "segment" or i % rescan_every == 0
        out[size] = prev = run(kind, spaces[size], lambda b, s=size: measure(s, b), start=start,
                               rescan=rescan, **kw)
    return out


@dataclass
class Cell:
    """An exhaustive campaign's times of one (collective, size, p): method -> {segment or None: seconds}."""
    times: dict[str, dict]

    def space(self, size: int | None = None) -> dict[str, list]:
        """Variants as measured (start first), optionally only segment sizes below `size`."""
        return {m: [None] * (None in segs) + sorted((s for s in segs if s is not None
                                                     and (size is None or s < size)), reverse=True)
                for m, segs in self.times.items()}

    def t(self, v: Variant) -> float:
        return self.times[v[0]][v[1]]

    def measure(self, batch: list[Variant]) -> dict:
        return {v: self.t(v) for v in batch}

    def best(self, size: int | None = None) -> Variant:
        return min(((m, s) for m, segs in self.space(size).items() for s in segs), key=self.t)

    def loss(self, choice: Variant, size: int | None = None) -> float:
        b = self.t(self.best(size))
        return (self.t(choice) - b) / b


def search(kind: str, cell: Cell, size: int, lookahead: int = 2, prune: float = 0.5,
           start: Path | None = None) -> Path:
    """Replay of one search over one cell of stored results."""
    return run(kind, cell.space(size), cell.measure, lookahead=lookahead, prune=prune, start=start,
               rescan=start is None)


# --------------------------------------------------------------------------- evaluation against exhaustive

def cells_from_files(files) -> tuple[dict, dict]:
    """An exhaustive campaign's raw files -> ({(key, size): Cell}, {(key, size): default seconds}).  A cell's
    value per variant is the median over mpiruns of each mpirun's median (pgmpi_formats.results files)."""
    import statistics
    from collections import defaultdict

    from pgmpi_formats.collectives import by_mpi_name
    from pgmpi_formats.native import parse_label
    from pgmpi_formats.results import read_file

    per = defaultdict(lambda: defaultdict(list))
    for f in files:
        run = read_file(f)
        groups = defaultdict(list)
        for t, m, a, x in zip(run.test, run.msize, run.algorithm, run.runtime):
            groups[(run.tests[t], int(m), run.algorithms[a])].append(float(x))
        for (name, m, a), xs in groups.items():
            c = by_mpi_name(name)
            if c is not None:
                per[(c.key, m)][a].append(statistics.median(xs))
    cells, defaults = {}, {}
    for cell, labels in per.items():
        times: dict = defaultdict(dict)
        for label, xs in labels.items():
            v = parse_label(label)
            if v:
                times[v.name][v.seg] = statistics.median(xs)
        if times:
            cells[cell] = Cell(dict(times))
            if "default" in labels:
                defaults[cell] = statistics.median(labels["default"])
    return cells, defaults


@dataclass
class Row:
    """One search of one collective over its message sizes, against the exhaustive optimum per cell."""
    key: str
    kind: str
    source: str                 # replay | campaign
    experiments: int
    seconds: float              # sum of the visited variants' run-times (the exhaustive table's)
    losses: list[float]

    @property
    def over3(self) -> int:
        return sum(x > 0.03 for x in self.losses)


def replay(cells: dict, key: str, kind: str, neighbour: str = "none", **kw) -> tuple[Row, dict[int, Path]]:
    mine = {s: c for (k, s), c in cells.items() if k == key}
    paths = run_sizes(kind, {s: c.space(s) for s, c in mine.items()}, lambda s, b: mine[s].measure(b),
                      neighbour=neighbour, **kw)
    row = Row(key, kind, "replay", sum(len(p.experiments) for p in paths.values()),
              sum(mine[s].t(v) for s, p in paths.items() for v in p.experiments),
              [mine[s].loss(p.choice, s) for s, p in paths.items()])
    return row, paths


def bound_row(cells: dict, key: str) -> Row:
    """What a search that measures every method at least once per cell (MGD, SMGD, and their "segment"
    neighbour mode do) can save at best on this grid: its experiments are at least the number of methods of
    each cell, so the reduction against exhaustive is at most (variants) / (methods) summed over the cells,
    and its measuring time at least each method's cheapest variant.  Only a search that leaves methods out
    of a cell unmeasured (neighbour "prune") can go past it.  Says nothing about loss."""
    n, secs = 0, 0.0
    for (k, size), cell in cells.items():
        if k != key:
            continue
        for m, segs in cell.space(size).items():
            if segs:
                n += 1
                secs += min(cell.t((m, s)) for s in segs)
    return Row(key, "scan bound", "grid", n, secs, [])


def campaign_row(cells: dict, key: str, kind: str, paths: dict) -> Row:
    """A real reduced campaign's search (its report's paths, {size: Path.to_json()}) judged on the exhaustive
    campaign's table: its choice's loss there, and what its visited variants cost there."""
    from pgmpi_formats.native import parse_label
    losses, n, secs = [], 0, 0.0
    for size, p in paths.items():
        cell = cells.get((key, int(size)))
        if cell is None or not p.get("choice"):
            continue
        visited = [parse_label(x) for r in p["rounds"] for x in r]
        n += len(visited)
        secs += sum(cell.times.get(v.name, {}).get(v.seg, 0.0) for v in visited)
        c = parse_label(p["choice"])
        losses.append(cell.loss((c.name, c.seg), int(size)) if c.seg in cell.times.get(c.name, {}) else float("nan"))
    return Row(key, kind, "campaign", n, secs, losses)


def table(rows: list[Row]) -> str:
    """Experiments, measuring time and loss per collective and search, ratios against exhaustive.  A row
    without experiments (the noise floor) prints no cost, a row without losses (the scan bound) no loss."""
    import math
    nan = float("nan")

    def line(key, kind, source, n, secs, ex, losses, cells):
        cost = (f"{n:>11} {(ex[0] / n if ex else nan):>5.1f}x {secs:>9.4f} "
                f"{(ex[1] / secs if ex and secs else nan):>8.1f}x " if n else f"{'-':>11} {'-':>6} {'-':>9} {'-':>9} ")
        loss = (f"{sum(losses) / len(losses) * 100:>8.2f}% {max(losses) * 100:>7.1f}% "
                f"{sum(x > 0.03 for x in losses):>5}/{cells}" if losses else f"{'-':>9} {'-':>8} {'-':>11}")
        return f"{key:10} {kind:13} {source:14} {cost}{loss}"

    ex = {r.key: (r.experiments, r.seconds) for r in rows if r.kind == "exhaustive"}
    out = [f"{'collective':10} {'search':13} {'from':14} {'experiments':>11} {'fewer':>6} {'time s':>9} "
           f"{'less time':>9} {'mean loss':>9} {'max loss':>8} {'cells > 3 %':>11}"]
    tot: dict = {}
    for r in rows:
        good = [x for x in r.losses if not math.isnan(x)]
        out.append(line(r.key, r.kind, r.source, r.experiments, r.seconds, ex.get(r.key), good, len(r.losses)))
        t = tot.setdefault((r.kind, r.source), [0, 0.0, []])
        t[0] += r.experiments
        t[1] += r.seconds
        t[2] += good
    exall = next((tuple(v[:2]) for (k, _s), v in tot.items() if k == "exhaustive"), None)
    for (kind, source), (n, secs, losses) in tot.items():
        out.append(line("ALL", kind, source, n, secs, exall, losses, len(losses)))
    if any(r.kind == "scan bound" for r in rows):
        out.append("scan bound: the most a search that measures every method of a cell at least once (mgd, smgd, "
                   "their /segment mode) can save on this grid: variants / methods over the cells, time of each "
                   "method's cheapest variant; only /prune leaves methods out and can pass it")
    return "\n".join(out)
