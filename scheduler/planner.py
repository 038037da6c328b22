"""Planner: a campaign becomes jobs -- one per (module, nodes x ppn) -- with R launches each.

Every launch measures the default and all selected mock-ups of every collective, interleaved
(pgmpi-bench does the interleaving); the R launches of a job are separate mpiruns so that
run-to-run variation is part of the data. `estimate()` gives node-hours before any submission.
"""
from __future__ import annotations

import functools
import json
import math
import re
import shlex
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path

from pgmpi_formats import impi_adjust, native
from .campaign import DT_DESCRIPTIONS as DT_ALL, Campaign, Layout, Module, collectives, proc_sync

# pgmpi-bench's reserved label for the default measured a second time (lib/bench/bench_options.c); the
# analysis reads it as the control arm (service/analysis/verdicts.py)
CONTROL = "default_control"


@dataclass(frozen=True)
class Launch:
    index: int                 # mpirun index, 0..R-1
    argv: list[str]            # pgmpi-bench arguments (after the launcher)
    output: str                # file name of its raw result, relative to the job's output dir
    env: dict = field(default_factory=dict)   # extra environment of this launch only
    role: str = "measure"      # measure | default | tuned (validation) | search (scheduler/native_driver.py)
    program: str = ""          # "" = the job's pgmpi-bench; else a sibling program (pgmpi-dtbench)
    unset: list = field(default_factory=list)   # variables this launch runs without (native validation)
    unset_matching: str = ""   # and every variable whose whole name this extended regex matches (NATIVE_VARS)


# What makes an MPI library run anything but its own default, as a module or a campaign's env: may set it for
# every launch of a job: the variables the pgmpitunelib module sets to the current native file
# (pgmpitune-site.lua native_env: Open MPI's rules file, MPICH's JSON selection file, Intel MPI's native.impi that
# libpgmpitune's MPI_Init turns into I_MPI_ADJUST_<COLL>), and the variables that force an algorithm without a
# file: Open MPI's coll_tuned_<coll>_algorithm (with its _segmentsize, _tree_fanout, ... and use_dynamic_rules,
# which pgmpi-bench sets itself when it forces), MPICH's <COLL>_INTRA/INTER_ALGORITHM (MPICH reads each CVAR under
# three prefixes: MPIR_CVAR_, MPIR_PARAM_ and MPICH_, strings of libmpich 4.0.2) and Intel MPI's
# I_MPI_ADJUST_<COLL>[_...]; and Intel MPI's own tuning, made to change its default choice: I_MPI_TUNING* (the
# tuning files I_MPI_TUNING_BIN and I_MPI_TUNING, the in-run autotuner I_MPI_TUNING_MODE and its _AUTO_*
# settings, the dumps; strings of libmpi.so.12 2021.13.1).  Knobs that change how, not which, algorithm runs
# stay (scheduler/README.md).  One extended regular expression over whole names: the job script unsets every
# variable it matches (`compgen -e | grep -xE`), as Python's re.fullmatch reads it too.  A launch that measures
# the library's own algorithms against its default (a search, native:..., Intel MPI's preset rounds) runs
# without every one of them (library_default); a native file's validation loads it as users do
# (native_validation.py), mock-ups are measured under it (native_file).
NATIVE_VARS = "|".join([
    r"OMPI_MCA_coll_tuned_(use_dynamic_rules|dynamic_rules_filename|[a-z_]+_algorithm[a-z_]*)",
    r"(MPIR_CVAR|MPIR_PARAM|MPICH)_([A-Z_]+_(INTRA|INTER)_ALGORITHM|(CH4_(POSIX_)?)?COLL_SELECTION_TUNING_JSON_FILE)",
    rf"{impi_adjust.FILE_VAR}|I_MPI_ADJUST_[A-Z0-9_]+|I_MPI_TUNING(_[A-Z0-9_]+)?"])
assert all(re.fullmatch(NATIVE_VARS, v) for v in (*(v for vs in native.FILE_VARS.values() for v in vs),
                                                  *(f"I_MPI_ADJUST_{v}" for v in impi_adjust.VARIABLES.values()))), \
    "NATIVE_VARS misses a variable of pgmpi_formats.native or impi_adjust"


def library_default(launch: "Launch") -> "Launch":
    """The launch without NATIVE_VARS (but those it sets itself, exported after the unset): its "default" is the
    library's own even in a job whose module carries a published native file or forces an algorithm -- else
    MPICH's default arm would be the file's or the forced choice, Open MPI's default arm (MPI_COMM_WORLD, made
    at MPI_Init) would run the forced algorithm and its forced variants would be refused (pgmpi-bench), and
    Intel MPI's default and preset mpiruns would run the file's presets for every other collective."""
    return launch if launch.unset_matching == NATIVE_VARS else replace(launch, unset_matching=NATIVE_VARS)


@dataclass(frozen=True)
class JobSpec:
    key: str                   # stable job key, unique in the campaign
    module: Module
    layout: Layout
    launches: list[Launch]     # several per mpirun index when size sets differ
    walltime_seconds: int
    kind: str = "measure"      # measure | validate | native-validate
    env: dict = field(default_factory=dict)   # extra env for the launches (validation: profile dir)
    estimate_seconds: float = 0.0

    @property
    def nodes(self) -> int:
        return self.layout.nodes

    @property
    def ppn(self) -> int:
        return self.layout.ppn


def job_key(module: Module, layout: Layout) -> str:
    return f"{module.key}-n{layout.nodes}x{layout.ppn}"


def groups(c: Campaign, calls: dict[str, list[int]] | None = None,
           algorithms: dict[str, object] | None = None) -> list[tuple[str, list[str], list[int], object]]:
    """Collectives that one pgmpi-bench invocation can measure together (same sizes, same algorithm
    selection): [(label, keys, sizes, "all" | [names])]. pgmpi-bench takes one --sizes list."""
    calls = calls if calls is not None else {k: c.sizes_for(k) for k in c.collectives}
    out: dict[tuple, list[str]] = {}
    for key, sizes in calls.items():
        algs = (algorithms or {}).get(key, c.algorithms_for(key))
        out.setdefault((tuple(sizes), algs == "all"), []).append(key)
    res = []
    names = {tuple(v): k for k, v in c.all_size_sets().items()}
    for i, ((sizes, is_all), keys) in enumerate(out.items()):
        if is_all:
            algs = "all"
        else:
            algs = []
            for k in keys:
                for a in (algorithms or {}).get(k, c.algorithms_for(k)):
                    if a not in algs:
                        algs.append(a)
            if "tuned" not in algs and "default" not in algs:     # tuned: the library decides, nothing forced
                algs.insert(0, "default")
        label = names.get(sizes, f"g{i}") if len(out) > 1 else ""
        res.append((label, keys, list(sizes), algs))
    return res


def bench_argv(c: Campaign, module: Module, index: int, output: str, keys: list[str], sizes: list[int],
               algorithms: object = "all", nrep: int | None = None, nrep_from: str | None = None,
               nodes: int = 1) -> list[str]:
    """pgmpi-bench options of one invocation (see `pgmpi-bench --help`).  nrep_from: the counts per (call, size)
    of these files (campaign-wide NREP: the pilot's output or an earlier night's), instead of the policy.
    nodes: of the job's layout; the campaign's sync: for it (Campaign.sync_for) is always written out."""
    argv = [f"--calls={','.join(keys)}", f"--sizes={','.join(str(s) for s in sizes)}",
            f"--algorithms={algorithms if isinstance(algorithms, str) else ','.join(algorithms)}"]
    rep = c.repetitions
    if nrep is not None:
        argv.append(f"--nrep={nrep}")
    elif nrep_from:
        argv.append(f"--nrep-from={nrep_from}")
    else:
        argv += rep.policy_argv()
    if rep.time_budget and nrep is None and not nrep_from:
        argv.append(f"--time-budget={rep.time_budget:g}")
    argv += [f"--mpirun-index={index}", f"--campaign={c.name}", f"--machine={c.machine}"]
    if module.name:
        argv.append(f"--module-name={module.name}")
    argv += sync_argv(c, nodes)
    argv += list(c.bench_args)
    argv.append(f"--output={output}")
    return argv


def sync_argv(c: Campaign, nodes: int) -> list[str]:
    """The campaign's sync: for a launch on `nodes` nodes (Campaign.sync_for), always written out: pgmpi-bench
    and pgmpi-dtbench record it (#@procsync), and every launch of the campaign, its validations included,
    measures with that one method (verdicts never mix methods)."""
    return proc_sync_argv(c.sync, c.window_size_us, nodes)


def proc_sync_argv(sync: str, window_size_us: float | None, nodes: int) -> list[str]:
    """--proc-sync [--window-size] of a `sync:` value on `nodes` nodes (campaign.proc_sync); the one place
    that writes them, for campaigns and for `pgmpi agent native-validate --sync`."""
    method = proc_sync(sync, nodes)
    return [f"--proc-sync={method}"] + ([f"--window-size={window_size_us:g}"]
                                        if method == "window" and window_size_us else [])


def launches_for(c: Campaign, module: Module, mpiruns: int, calls=None, algorithms=None, nrep=None,
                 prefix: str = "run", env: dict | None = None, role: str = "measure",
                 control: bool = False, earlier=None, nodes: int = 1, first: int = 0) -> list[Launch]:
    """first: the first mpirun index (a sequential campaign's later look continues where the last stopped).
    control: every call also measures the default a second time, interleaved, under pgmpi-bench's reserved
    label default_control (the campaign's own false-alarm rate and null spread, service/analysis/verdicts.py).
    earlier: the job's counts from an earlier night (nrep_history.Earlier), used where they cover a group."""
    out = []
    for i in range(first, first + mpiruns):
        for label, keys, sizes, algs in groups(c, calls, algorithms):
            if control:
                algs = f"{algs},{CONTROL}" if isinstance(algs, str) else \
                    algs + [a for a in (CONTROL,) if a not in algs]
            name = f"{prefix}-{i}{'-' + label if label else ''}.txt"
            src = campaign_nrep_from(c, i, f"{prefix}-0{'-' + label if label else ''}.txt",
                                     earlier if earlier is not None and earlier.covers(keys, sizes) else None)
            out.append(Launch(i, bench_argv(c, module, i, name, keys, sizes, algs, nrep,
                                            src if nrep is None else None, nodes), name, dict(env or {}), role))
    return out


def campaign_nrep_from(c: Campaign, index: int, pilot: str, earlier=None) -> str | None:
    """Campaign-wide NREP (campaign.Repetitions): the files whose counts mpirun `index` uses, None when it
    follows the policy itself (fixed, or the pilot mpirun 0 of predict / time-rule).  earlier: an earlier
    night's counts covering the launch's cells (scheduler/nrep_history.py): every mpirun reads them, no pilot."""
    rep = c.repetitions
    if rep.nrep_from:
        return ",".join(rep.nrep_from)
    if rep.policy != "fixed" and earlier is not None:
        return str(earlier.path)
    if rep.policy != "fixed" and rep.campaign_wide and index > 0:
        return pilot
    return None


DTBENCH = "pgmpi-dtbench"


def dt_launches(c: Campaign, module: Module, mpiruns: int, nodes: int = 1) -> list[Launch]:
    """pgmpi-dtbench launches of the campaign's datatypes section: per mpirun index one launch per base type
    (it measures one base type per run), every description of a case interleaved inside; nodes: of the job's
    layout (the campaign's sync: for it)."""
    d = c.datatypes
    if d is None:
        return []
    out = []
    rep = c.repetitions
    for i in range(mpiruns):
        for base in d.basetypes:
            name = f"dt-{i}-{base.removeprefix('MPI_').lower()}.txt"
            argv = d.argv() + [f"--descriptions={d.descriptions_for(c.control)}", f"--datatype={base}"]
            if rep.policy == "predict":
                argv += rep.predict_argv()
            else:      # pgmpi-dtbench has no time rule: the fixed count (max_nrep under time-rule)
                argv.append(f"--nrep={rep.nrep if rep.policy == 'fixed' else rep.max_nrep}")
            if rep.time_budget:
                argv.append(f"--time-budget={rep.time_budget:g}")
            argv += [f"--mpirun-index={i}", f"--campaign={c.name}", f"--machine={c.machine}"]
            if module.name:
                argv.append(f"--module-name={module.name}")
            argv += sync_argv(c, nodes)
            argv.append(f"--output={name}")
            out.append(Launch(i, argv, name, program=DTBENCH))
    return out


def _dt_seconds_per_launch(c: Campaign, layout: Layout) -> float:
    """Rough: per case, size and description nrep x (20 us + size / 0.5 GB/s), plus 2 s launch overhead."""
    d = c.datatypes
    if d is None:
        return 0.0
    rep = c.repetitions
    n = rep.nrep if rep.policy == "fixed" else rep.max_nrep
    cases = len(d.patterns) * len(d.layouts) * len(d.variants) * len(d.blocksizes)
    ndesc = len(DT_ALL) if d.descriptions == "all" else len(d.descriptions) + 1
    per = sum(20e-6 + s / 5e8 * max(1.0, math.log2(max(layout.nprocs, 2))) for s in d.sizes)
    return (2.0 + cases * ndesc * n * per * 3) * len(d.basetypes)


def mockup_counts(c: Campaign, module: Module) -> dict[str, int]:
    """Number of mock-ups per collective from `pgmpitune-check --list --json` of that build
    ({"collectives": [{"key": ..., "algorithms": [{"name": ...}, ...]}, ...]}, lib/tools/pgmpitune-check.c).
    Without a checker next to pgmpi-bench (a dry run on a machine without the build) the estimate counts
    one mock-up per collective; a checker whose output is not that document is an error."""
    check = c.bench_for(module).parent / "pgmpitune-check"
    counts = {k: 1 for k in collectives()}
    if not check.exists():
        return counts
    out = subprocess.run([str(check), "--list", "--json"], capture_output=True, text=True, timeout=10)
    try:
        for item in json.loads(out.stdout)["collectives"]:
            if item["key"] in counts:
                counts[item["key"]] = sum(a["name"] != "default" for a in item["algorithms"])
    except (ValueError, KeyError, TypeError) as exc:
        raise RuntimeError(f"{check} --list --json: not the document pgmpi-bench's checker prints ({exc!r}): "
                           f"{out.stdout[:200]!r}") from None
    return counts


def _seconds_per_launch(c: Campaign, module: Module, layout: Layout) -> float:
    """Rough cost model: per measurement 20 us + size / 1 GB/s x log2(p), plus 2 s launch overhead."""
    counts = mockup_counts(c, module)
    p = layout.nprocs
    total = 2.0
    for key in c.collectives:
        algs = c.algorithms_for(key)
        nalg = (1 + counts.get(key, 1) if algs == "all" else len(algs)) + int(c.control)
        for size in c.sizes_for(key):
            t = 20e-6 + size / 1e9 * max(1.0, math.log2(max(p, 2)))
            rep = c.repetitions
            n = rep.nrep if rep.policy == "fixed" else rep.max_nrep
            one = nalg * n * t * 3                                   # x3: sync + barrier rows
            if rep.time_budget:
                one = min(one, rep.time_budget)
            total += one
    return total


def search_nrep(c: Campaign) -> int:
    """A search's fixed count per variant and cell: the policy's nrep, under predict / time-rule its max_nrep
    (the count the prediction never exceeds, what dt_launches and the estimates take).  A search cannot
    predict: `pgmpi-bench --serve` measures each cell it is sent with a fixed count, a race's stages are
    fractions of one, and the searched cells are in no pilot's or earlier night's counts (their mpiruns
    measure the other collectives)."""
    rep = c.repetitions
    return rep.nrep if rep.policy == "fixed" else rep.max_nrep


def search_counts(c: Campaign, earlier=None) -> dict[tuple[str, int], int]:
    """Campaign-wide NREP (issue 34) a search can take: the counts per (MPI name, bytes) of the campaign's
    nrep_from files, else of the earlier night (nrep_history.Earlier); the pilot's never cover a searched
    cell (no measurement mpirun measures it).  {} under the fixed policy."""
    rep = c.repetitions
    if rep.policy == "fixed":
        return {}
    if rep.nrep_from:       # pgmpi-bench --nrep-from's rule: the largest count of a cell over the files
        from pgmpi_formats.footer import Nrep, records
        from pgmpi_formats.results import ResultsFormatError, read_file
        out: dict[tuple[str, int], int] = {}
        for f in rep.nrep_from:
            try:
                lines = read_file(Path(f)).pgmpi_lines
            except (OSError, ResultsFormatError):
                continue        # the measurement mpiruns' --nrep-from reports it
            for r in records(lines, Nrep):
                out[(r.call, r.msize)] = max(out.get((r.call, r.msize), 0), r.n)
        return out
    return dict(earlier.counts) if earlier is not None else {}


def intel_raced(c: Campaign, module: Module) -> list[str]:
    """The collectives an Intel MPI module races (search: race): the search driver's Intel rounds
    (scheduler/intel_race.py); its other searched collectives are exhaustive, intel_preset_launches."""
    return [k for k in c.searched() if c.collectives[k].search == "race"] if module.family.native_at_init else []


def search_launches(c: Campaign, module: Module, nodes: int = 1, earlier=None) -> list[Launch]:
    """The searched collectives (search: set) of one job: one search driver run per mpirun index for
    exhaustive, one in all for mgd / smgd (a sequential search is one search; scheduler/native_driver.py).
    A searched cell with a campaign-wide count (search_counts) is measured with it (the entry's `nrep` per
    size), the others with search_nrep.  Intel MPI: only its raced collectives, one driver run whose spec
    carries the presets impi_info -v lists (intel_presets), rounds up to the campaign's mpiruns."""
    intel = module.family.native_at_init
    keys = intel_raced(c, module) if intel else c.searched()
    if not keys:
        return []
    if intel:
        for k in keys:
            if k not in impi_adjust.VARIABLES:
                raise ValueError(f"collectives.{k}: Intel MPI has no I_MPI_ADJUST variable for it, so search: race "
                                 f"has no preset to measure (module {module.key}; variables: "
                                 f"{', '.join(sorted(impi_adjust.VARIABLES))})")
    from pgmpi_formats.collectives import by_key
    counts = search_counts(c, earlier)
    out = []
    sequential = any(c.collectives[k].search != "exhaustive" for k in keys)
    for i in range(1 if sequential else c.mpiruns):
        # fixed: the policy's own options (its time_budget too); otherwise search_nrep, no time budget:
        # --serve refuses `cell ... nrep=` next to --time-budget
        common = bench_argv(c, module, i, "x", keys, [1], "default",
                            None if c.repetitions.policy == "fixed" else search_nrep(c), nodes=nodes)[3:-1]
        spec = {"prefix": f"search-{i}", "control": c.control, "bench_args": common,
                "confirm": c.mpiruns if sequential else 0,
                **({"intel": {"version": intel_presets(module.mpi).version,
                              "presets": {k: intel_presets(module.mpi).presets.get(k, 0) for k in keys}}}
                   if intel else {}),
                "collectives": {k: {"search": c.collectives[k].search, "sizes": c.sizes_for(k),
                                    "segments": c.collectives[k].segment_sizes,
                                    "lookahead": c.collectives[k].lookahead, "prune": c.collectives[k].prune,
                                    "neighbour": c.collectives[k].neighbour,
                                    **({"nrep": per} if (per := {str(s): counts[(by_key(k).mpi_name, s)]
                                                                 for s in c.sizes_for(k)
                                                                 if (by_key(k).mpi_name, s) in counts}) else {}),
                                    **({"first_nrep": c.collectives[k].first_nrep}
                                       if c.collectives[k].first_nrep else {})}
                                for k in keys}}
        out.append(library_default(Launch(i, ["--spec", json.dumps(spec, separators=(",", ":"))], f"search-{i}.json",
                                          role="search")))
    return out


def under_native_file(launch: Launch, module: Module) -> Launch:
    """A launch of default and mock-ups (measurement, or a candidate's validation) runs under the module's
    native_file; one that forces the library's own algorithms (native:..., a search) must not: Open MPI applies
    a rules file before any forced algorithm, so the forced variants would silently be the file's choices, and
    its default is the library's (library_default: also without the file a module sets)."""
    algs = next((a.split("=", 1)[1] for a in launch.argv if a.startswith("--algorithms=")), "")
    if launch.program:
        return launch
    if launch.role == "search" or "native:" in algs:
        return library_default(launch)
    if not module.native_file or not Path(module.native_file).is_file():
        # nothing published yet: run as without it (MPICH aborts every job on a JSON file it cannot read);
        # the runs then carry no #@native_file and the analysis treats them as such
        return launch
    return replace(launch, env={**native.file_env(module.family.native, module.native_file), **launch.env})


def intel_preset_launches(c: Campaign, module: Module, calls: dict[str, list[int]], earlier=None,
                          nodes: int = 1) -> list[Launch] | None:
    """Intel MPI reads I_MPI_ADJUST_<COLL> once at MPI_Init, so its presets (native:<p>) cannot be interleaved
    with the default inside one mpirun: per mpirun index the default mpirun (default, mock-ups, control arm)
    and one mpirun per preset (I_MPI_ADJUST_<COLL>=<p> without ranges for every collective that lists it,
    --algorithms=native:<p>, which pgmpi-bench accepts only under that variable and writes as the rows'
    label), all with the same --mpirun-index, in alternating order (presets ascending in even rounds,
    descending first in odd ones).  The analysis pairs them by mpirun index (native_decision.cells_of_mpiruns):
    a preset's figure is set against the default of its own round, never measured next to it.  native:all
    (and search: exhaustive) is every preset 1-N the module's Intel MPI lists for the collective
    (intel_presets).  The default mpirun runs under PGMPI_NATIVE_EVIDENCE=1, so its raw file carries the
    default's reduction fingerprint per size next to each preset's (the evidence impi_adjust.trim rests on: the
    default's matches several presets, so no preset can stand in for it).  None when the campaign asks no
    preset of this module."""
    # a searched collective measures the library's own algorithms against the default, no mock-ups
    algs = {k: ["default", "native:all"] if c.collectives[k].search else c.algorithms_for(k) for k in calls}
    presets: dict[str, list[str]] = {}
    for k, v in algs.items():
        listed = [] if v == "all" else v
        if "native:all" in listed:
            if k not in impi_adjust.VARIABLES:
                raise ValueError(f"collectives.{k}: Intel MPI has no I_MPI_ADJUST variable for it, so native:all "
                                 f"has no preset to measure (module {module.key}; variables: "
                                 f"{', '.join(sorted(impi_adjust.VARIABLES))})")
            top = intel_presets(module.mpi).presets.get(k, 0)
            listed = [a for a in listed if a != "native:all"] + [f"native:{p}" for p in range(1, top + 1)]
        for a in dict.fromkeys(listed):
            lab = native.parse_label(a) if a.startswith("native:") else None
            if lab is not None:
                presets.setdefault(lab.name, []).append(k)
    if not presets:
        return None
    rest = {k: (v if v == "all" else [a for a in v if not a.startswith("native:")]) for k, v in algs.items()}
    base = launches_for(c, module, c.mpiruns, calls=calls, algorithms=rest, control=c.control, earlier=earlier,
                        nodes=nodes, env={"PGMPI_NATIVE_EVIDENCE": "1"})
    paired = {k for keys in presets.values() for k in keys}
    out = []
    for i in range(c.mpiruns):
        alone = []
        for p in sorted(presets, key=lambda x: (len(x), x)):
            by_sizes: dict[tuple, list[str]] = {}
            for k in presets[p]:
                by_sizes.setdefault(tuple(calls[k]), []).append(k)
            for g, (sizes, keys) in enumerate(by_sizes.items()):
                name = f"run-{i}-native-{p}{'-g' + str(g) if len(by_sizes) > 1 else ''}.txt"
                src = campaign_nrep_from(c, i, "run-0.txt", earlier if earlier is not None
                                         and earlier.covers(keys, list(sizes)) else None)
                alone.append(Launch(i, bench_argv(c, module, i, name, keys, list(sizes), [f"native:{p}"], None, src,
                                                  nodes), name,
                                    {f"I_MPI_ADJUST_{impi_adjust.VARIABLES[k]}": p for k in keys}, "measure"))
        # the default mpirun of a collective with presets too: each preset is paired with the library's default
        # of its round (a launch of other collectives' mock-ups alone keeps what the module sets)
        mine = [library_default(x) if set(x.argv[0].removeprefix("--calls=").split(",")) & paired else x
                for x in base if x.index == i] + [library_default(x) for x in alone]
        out += mine if i % 2 == 0 else mine[::-1]
    return out


@functools.lru_cache(maxsize=8)
def intel_presets(mpi: str):
    """The presets of the Intel MPI of library id `mpi` (deploy/mpi-libraries.tsv; the site's module loads that
    prefix): impi_adjust.Discovery from its own impi_info -v, asked once per planning process."""
    from pgmpi_formats import impi_adjust, mpi_libraries
    lib = mpi_libraries.mpi_library(mpi)
    if not lib.installed:
        raise ValueError(f"native:all on {mpi}: Intel MPI is not installed at {lib.prefix} here, so its presets "
                         "(impi_info -v I_MPI_ADJUST_<COLL>) cannot be listed; list them (native:<preset>)")
    return impi_adjust.discover(lib.environment())


def measure_launches(c: Campaign, module: Module, calls: dict[str, list[int]], earlier=None,
                     nodes: int = 1) -> list[Launch]:
    """The measurement launches.  With a native_file the library's own algorithms go to launches of their own
    (run-native-*), so that the default and the mock-ups can run under the file and the forced algorithms
    without it (under_native_file).  Intel MPI's presets: intel_preset_launches."""
    if module.family.native_at_init:
        intel = intel_preset_launches(c, module, calls, earlier, nodes)
        if intel is not None:
            return intel
    if not module.native_file:
        return launches_for(c, module, c.mpiruns, calls=calls, control=c.control, earlier=earlier, nodes=nodes)
    algs = {k: c.algorithms_for(k) for k in calls}
    natives = {k: [a for a in v if a.startswith("native:")] for k, v in algs.items() if v != "all"}
    natives = {k: v for k, v in natives.items() if v}
    rest = {k: (v if v == "all" else [a for a in v if not a.startswith("native:")]) for k, v in algs.items()}
    return (launches_for(c, module, c.mpiruns, calls=calls, algorithms=rest, control=c.control, earlier=earlier,
                         nodes=nodes)
            + (launches_for(c, module, c.mpiruns, calls={k: calls[k] for k in natives},
                            algorithms={k: ["default", *v] for k, v in natives.items()}, prefix="run-native",
                            control=c.control, earlier=earlier, nodes=nodes) if natives else []))


def plan(c: Campaign, earlier: dict | None = None) -> list[JobSpec]:
    """earlier: {job key: nrep_history.Earlier}, the repetitions an earlier night fixed for a job's cells.
    A sequential campaign's jobs are its first look's (the agent adds the later looks, scheduler/looks.py)."""
    if c.sequential is not None:
        c = c.model_copy(update={"mpiruns": c.sequential.looks[0]})
    jobs = []
    searched = set(c.searched())
    for module in c.modules:
        # Intel MPI's presets are fixed at MPI_Init: its exhaustive search is every preset, one mpirun each; its
        # race the search driver's rounds of such mpiruns (scheduler/intel_race.py)
        intel = module.family.native_at_init
        raced = set(intel_raced(c, module))
        calls = {k: c.sizes_for(k) for k in c.collectives if (intel or k not in searched) and k not in raced}
        for layout in c.layouts:
            launches = (measure_launches(c, module, calls, (earlier or {}).get(job_key(module, layout)),
                                         layout.nodes) if calls else []) \
                + search_launches(c, module, layout.nodes, (earlier or {}).get(job_key(module, layout))) \
                + dt_launches(c, module, c.mpiruns, layout.nodes)
            launches = [under_native_file(x, module) for x in launches]
            est = (_seconds_per_launch(c, module, layout) if c.collectives else 0.0) * c.mpiruns \
                + _dt_seconds_per_launch(c, layout) * c.mpiruns
            if intel:       # each preset mpirun: another start-up (and its own measurements, about one variant)
                est += sum(2.0 for x in launches if any(k.startswith("I_MPI_ADJUST_") for k in x.env))
                # a race: round 0's default and preset mpiruns, then at least the default and a survivor per round
                est += 2.0 * sum(1 + max(json.loads(x.argv[1])["intel"]["presets"].values()) + 2 * (c.mpiruns - 1)
                                 for x in launches if x.role == "search")
            jobs.append(JobSpec(job_key(module, layout), module, layout, launches,
                                c.slurm.walltime_seconds, estimate_seconds=est))
    return jobs


@dataclass
class Estimate:
    jobs: int
    launches: int
    node_hours: float          # from the cost model
    node_hours_walltime: float  # upper bound: nodes x walltime

    def text(self) -> str:
        return (f"{self.jobs} job(s), {self.launches} mpirun launch(es); estimated {self.node_hours:.3f} "
                f"node-hours (at most {self.node_hours_walltime:.3f} node-hours by walltime)")


def estimate(c: Campaign, jobs: list[JobSpec] | None = None) -> Estimate:
    jobs = plan(c) if jobs is None else jobs
    nh = sum(j.nodes * min(j.estimate_seconds, j.walltime_seconds) for j in jobs) / 3600
    nhw = sum(j.nodes * j.walltime_seconds for j in jobs) / 3600
    return Estimate(len(jobs), sum(len(j.launches) for j in jobs), nh, nhw)


def check_budget(c: Campaign, est: Estimate) -> str | None:
    """A message when the plan exceeds the campaign's node-hour budget, else None."""
    if c.budget.node_hours is not None and est.node_hours > c.budget.node_hours:
        return (f"plan needs about {est.node_hours:.3f} node-hours, above budget.node_hours = "
                f"{c.budget.node_hours}; lower mpiruns, sizes, repetitions or layouts")
    return None


def describe(jobs: list[JobSpec]) -> str:
    lines = []
    for j in jobs:
        lines.append(f"{j.key}: module {j.module.name or '-'} ({j.module.mpi}), {j.nodes} node(s) x {j.ppn} ppn, "
                     f"{len(j.launches)} launch(es), ~{j.estimate_seconds:.0f} s")
        for prog in dict.fromkeys(ln.program or "pgmpi-bench" for ln in j.launches):
            first = next(ln for ln in j.launches if (ln.program or "pgmpi-bench") == prog)
            lines.append(f"   {prog} " + shlex.join(first.argv))
    return "\n".join(lines)
