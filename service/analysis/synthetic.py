"""Synthetic raw results with a known truth (tests, the 1M benchmark, demos).

    runs = simulate(design, rng)          # list[RunResult], one per mpirun
    text = to_text(run)                   # the same run as a ReproMPI-format file (our layout)

Noise model (stated in README.md): the true time of (collective, size, algorithm) is
latency + bytes / bandwidth, times the injected factor of that algorithm; every mpirun multiplies all its
blocks by one shared drift exp(N(0, sigma_shared)) (default 0: the node's speed in that launch, which every
algorithm measured interleaved in it shares; 0.10-0.20 on the VMs here, tests/bench/core_drift.sh) and each
(collective, algorithm, size) block by its own exp(N(0, sigma_run)) (default 5 %; 1-3 % when sigma_shared
carries the drift, the spread of a ratio of two algorithms inside one mpirun here), every measurement by
exp(N(0, sigma_rep)) (default 5 %) and, with probability p_outlier (default 2 %), by 1 + Exp(mean 1) (heavy
right tail: interrupts, OS noise). MPI_Barrier rows are added per size when barrier_time is set. With
control=True every collective also gets verdicts.CONTROL, the default measured a second time (truth 1.0).

    MEASURED = dict(sigma_shared=0.15, sigma_run=0.02)   # the structure measured on this machine
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pgmpi_formats import collectives as _colls
from .memory import KNOWN
from pgmpi_formats.results import RunResult
from .verdicts import CONTROL

# the noise structure measured here: a shared per-mpirun drift of 10-20 % and 1-3 % independent per-block noise
MEASURED = {"sigma_shared": 0.15, "sigma_run": 0.02}

# collective key -> its mock-ups, from the one list of the analysis (memory.KNOWN)
MOCKUPS: dict[str, list[str]] = {}
for _name in KNOWN:
    MOCKUPS.setdefault(_colls.key_of_mockup(_name), []).append(_name)


@dataclass
class Design:
    collectives: list[str]
    sizes: list[int]
    mockups: dict[str, list[str]]                   # collective -> mock-up names measured
    # (collective, algorithm, size) -> time factor relative to the default's true time (absent: 1.0, i.e.
    # the mock-up is exactly as fast as the default). A factor 1/1.2 makes the default 1.2x slower.
    factors: dict[tuple[str, str, int], float] = field(default_factory=dict)
    nruns: int = 10
    nrep: int = 125
    nprocs: int = 2
    machine: str = "synthetic"
    library: str = "openmpi"
    version: str = "4.1.4"
    latency: float = 5e-6
    bandwidth: float = 2e9
    sigma_run: float = 0.05
    sigma_rep: float = 0.05
    p_outlier: float = 0.02
    barrier_time: float | None = None
    campaign: str = "synthetic"
    sigma_shared: float = 0.0
    control: bool = False
    # (collective, algorithm, size) -> one extra time factor per mpirun, cycled (a cost that switches between
    # regimes from one launch to the next, e.g. [1.0] * 6 + [3.4] * 4; service/analysis/regimes.py)
    regimes: dict[tuple[str, str, int], list[float]] = field(default_factory=dict)
    nodes: int = 1                                  # the layout: nodes x nprocs/nodes ranks in blocks
    placement: str = ""                             # or as pgmpi-bench records it ("0:3,1:2"), for uneven ones


def simulate(d: Design, rng: np.random.Generator) -> list[RunResult]:
    runs = []
    tests = [_colls.by_key(c).mpi_name for c in d.collectives]
    extra = [CONTROL] if d.control else []
    algos: list[str] = ["default"] + extra
    for c in d.collectives:
        for m in d.mockups.get(c, []):
            if m not in algos:
                algos.append(m)
    # one block per (collective, algorithm, size)
    blocks, switching = [], []
    for ti, c in enumerate(d.collectives):
        for alg in ["default"] + extra + d.mockups.get(c, []):
            for s in d.sizes:
                f = d.factors.get((c, alg, s), 1.0)
                if (c, alg, s) in d.regimes:
                    switching.append((len(blocks), d.regimes[(c, alg, s)]))
                blocks.append((ti, algos.index(alg), s, (d.latency + s / d.bandwidth) * f))
    if d.barrier_time is not None:
        tests.append("MPI_Barrier")
        for s in d.sizes:
            blocks.append((len(tests) - 1, 0, s, d.barrier_time))
    nb = len(blocks)
    t_code = np.repeat(np.array([b[0] for b in blocks], dtype=np.int32), d.nrep)
    a_code = np.repeat(np.array([b[1] for b in blocks], dtype=np.int32), d.nrep)
    msize = np.repeat(np.array([b[2] for b in blocks], dtype=np.int64), d.nrep)
    base = np.repeat(np.array([b[3] for b in blocks]), d.nrep)
    nrep = np.tile(np.arange(d.nrep, dtype=np.int64), nb)
    n = nb * d.nrep
    for r in range(d.nruns):
        shared = rng.normal(0.0, d.sigma_shared) if d.sigma_shared > 0 else 0.0
        block_f = np.exp(rng.normal(0.0, d.sigma_run, nb) + shared)
        for b, per_run in switching:
            block_f[b] *= per_run[r % len(per_run)]
        run_f = block_f.repeat(d.nrep)
        rep_f = np.exp(rng.normal(0.0, d.sigma_rep, n))
        out = rng.random(n) < d.p_outlier
        rep_f[out] *= 1.0 + rng.exponential(1.0, out.sum())
        header = {"pgmpi_format": "1", "machine": d.machine, "mpi_library": d.library, "mpi_version": d.version,
                  "nodes": str(d.nodes), "ppn": str(-(-d.nprocs // d.nodes)), "nprocs": str(d.nprocs),
                  "placement": d.placement or ",".join(f"{k}:{d.nprocs // d.nodes}" for k in range(d.nodes)),
                  "mpirun_index": str(r), "campaign": d.campaign}
        lay = "" if d.nodes == 1 and not d.placement else f"-n{d.nodes}{'-' + d.placement if d.placement else ''}"
        runs.append(RunResult(source=f"{d.machine}-{d.library}-p{d.nprocs}{lay}-run{r}.txt", header=header,
                              tests=list(tests), algorithms=list(algos), test=t_code, nrep=nrep, msize=msize,
                              runtime=base * run_f * rep_f, algorithm=a_code))
    return runs


def to_text(run: RunResult) -> str:
    head = "".join(f"#@{k}={v}\n" for k, v in run.header.items())
    tn = np.array(run.tests, dtype=object)[run.test]
    an = np.array(run.algorithms, dtype=object)[run.algorithm]
    body = "\n".join(f"{t} {k} {m} {x:.10f} {a}" for t, k, m, x, a in
                     zip(tn, run.nrep.tolist(), run.msize.tolist(), run.runtime.tolist(), an))
    return head + "test nrep msize runtime_sec algorithm\n" + body + "\n"
