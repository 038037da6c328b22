"""`pgmpi explain <machine> <library> <collective> <size> <p>`: the evidence behind one cell's decision, from
the runs the service stores (no Flask request; `pgmpi explain`, service/commands/analysis.py, calls it
with an app context).  The decision itself is service/analysis/native_decision.py's, pure.

    text = explain(session, "slurmbox", "openmpi", "bcast", 4096, 2, campaign=None, profile_root=None)

Candidates: every algorithm measured at that (machine, library, collective, size, p) -- the default, the
library's own algorithms, the mock-ups -- with the decision of service/analysis/native_decision.py over all
cells of that (machine, library, p) (the control arm's null spread and the "parts natively retuned" rule need
them all).  Search path: the runs of a native search (scheduler/native_driver.py names them
`search-<i>-<collective>-<size>-r<round>.txt`) in round order, per campaign.  Published: whether the
current native file (native.rules / native.json) and .prf profile under the profile root hold that cell.
Raises ExplainError with the valid choices for an unknown machine, library or cell.
"""
from __future__ import annotations

import re

from sqlalchemy import select

from pgmpi_formats import arms, native, native_file, ompi_rules
from pgmpi_formats.collectives import KEYS, by_key, by_mpi_name
from pgmpi_formats.footer import Nrep, Served, records
from pgmpi_formats.prf import parse_prf, profile_filename, redirected_ranges
from service.analysis.native_decision import Run as RunMedians, cells_of_mpiruns, decide, explain_lines, mark_blocks
from service.profiles import publish as pub
from service.store.models import Campaign, Machine, MpiLibrary, Run, Series
from service.analysis.reporting import nrep_source
from service.analysis.stats import CI_METHOD

SEARCH_RUN = re.compile(r"search-(\d+)-([a-z]+)-(\d+)-r(\d+)\.txt$")     # one mpirun per round
SEARCH_SERVED = re.compile(r"search-(\d+)-([a-z]+)\.txt$")                    # pgmpi-bench --serve: all rounds


class ExplainError(LookupError):
    pass


def _cells(session, lib_ids, p, campaign_id):
    runs = select(Run.id, Run.file_name, Run.campaign_id, Run.headers, Run.footer) \
        .where(Run.library_id.in_(lib_ids), Run.nprocs == p)
    if campaign_id is not None:
        runs = runs.where(Run.campaign_id == campaign_id)
    names: dict = {}
    digests: dict = {}
    heads: dict = {}
    for rid, fname, cid, headers, footer in session.execute(runs):      # once per run, not per series
        names[rid] = (fname, cid, footer if isinstance(footer, list) else [])
        digests[rid] = headers.get("native_file_fnv1a64") if isinstance(headers, dict) else None
        heads[rid] = headers if isinstance(headers, dict) else {}
    per_run: dict = {}
    q = select(Series.run_id, Series.call, Series.msize, Series.algorithm, Series.median) \
        .where(Series.run_id.in_(list(names))) if names else None
    for rid, call, msize, alg, med in (session.execute(q) if q is not None else ()):
        c = by_mpi_name(call)
        if c is None or call == "MPI_Barrier" or alg == arms.TUNED:   # the validation arm is no candidate
            continue
        per_run.setdefault((c.key, msize, p), {}).setdefault(rid, RunMedians({}, digests[rid]))[alg] = med
    by_run: dict = {}
    for cell, runs in per_run.items():
        for rid, medians in runs.items():
            by_run.setdefault(rid, {})[cell] = medians
    h = heads
    mpiruns = [((names[rid][1], h[rid].get("module", ""), p, h[rid].get("mpirun_index", "")), digests[rid],
                mark_blocks(cells, names[rid][2])) for rid, cells in by_run.items()]
    return cells_of_mpiruns(mpiruns), per_run, (names, heads)


def _reporting_line(headers: list[dict], counts: list[int] | None = None) -> str:
    """What the figures above rest on (analysis/reporting.py): sync method, clock, repetitions (the cell's
    `#@pgmpi nrep` count per mpirun where the runs recorded one, else the header's fixed nrep) and where they
    came from, statistic."""
    def one(*keys):
        vals = {str(next((h[k] for k in keys if h.get(k)), "")) for h in headers} - {""}
        return ",".join(sorted(vals)) or "unknown"
    counts = sorted(set(counts or ()))
    nrep = (str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}") if counts else one("nrep")
    policies = {str(h.get("nrep_policy") or "") for h in headers}
    return (f"reporting: sync {one('sync', 'procsync')}, clock {one('clock')}, repetitions per mpirun "
            f"{nrep} ({nrep_source(policies)}; {one('nrep_policy')}), {len(headers)} mpiruns; statistic: median "
            f"per mpirun, ratio "
            f"default / candidate in the same mpirun; ratio = median over mpiruns, 95 % CI = {CI_METHOD}; "
            f"excluded: candidates that failed the results check (no rows)")


def _digest_of(library: str, version: str | None = None):
    """decide's file_digest: the text `pgmpi analyze native-files` would write for that library version,
    hashed; None where this host cannot write it (no such MPI installed here): then no second-pass run can
    match."""

    def digest(decisions):
        try:
            return native.file_digest(native_file.render(library, decisions, version=version or None)[1])
        except (ValueError, OSError, native.DiscoveryError):
            return None
    return digest


def _impi_choice(text: str, version: str, key: str, size: int, p: int) -> str:
    """What a published native.impi makes Intel MPI run for one call: libpgmpitune sets a variable only with
    its ranges of the job's size (rule 8), and once one is set Intel MPI leaves its default outside them."""
    from pgmpi_formats import impi_adjust
    try:
        adj = impi_adjust.parse(text, "native.impi", native_file.intel_target(version))
    except (ValueError, FileNotFoundError, OSError) as exc:
        return f"not read here ({exc})"
    var = f"I_MPI_ADJUST_{impi_adjust.VARIABLES.get(key, key.upper())}"
    rows = adj.table.get(key, [])
    if not rows:
        return f"no {var}: the library's own choice"
    if not any(pmin <= p <= pmax for _a, _lo, _hi, pmin, pmax in rows):
        return f"{var} has no range for p={p}: libpgmpitune sets nothing in such a job (the library's own choice)"
    preset = adj.lookup(key, p, size)
    return (f"{var} preset {preset} at {size} B, p={p}" if preset else
            f"{var} is set at p={p} but no range holds {size} B: Intel MPI runs another algorithm than its default")


def _published(profile_root, machine, lib, key, size, p) -> list[str]:
    out = []
    try:
        files = pub.published_files(profile_root, machine, lib.name, lib.version)
    except (OSError, ValueError, KeyError) as exc:
        return [f"published: none under {profile_root} ({exc})"]
    cur = pub.status(profile_root, machine, lib.name, lib.version).get("current")
    target = pub.target_dir(profile_root, machine, lib.name, lib.version)
    base = target / "current"
    if not files:
        return [f"published: no current set for {machine}/{lib.name}-{lib.version} under {profile_root}"]
    prf = profile_filename(key, p)
    if prf in files:
        ranges = redirected_ranges(parse_prf((base / prf).read_text(), prf))
        hit = [r for r in ranges if r[0] <= size <= r[1]]
        out.append(f"published .prf (version {cur}) {prf}: " + (f"redirects {size} B to {hit[0][2]}" if hit
                                                                 else f"no range holds {size} B (default)"))
    else:
        out.append(f"published .prf (version {cur}): no {prf}")
    if "native.rules" in files and lib.name == "openmpi":
        try:        # the vocabulary of the exact version the file is published for (5.0 has more algorithms)
            vocab = native_file.ompi_target(lib.version)
        except (FileNotFoundError, native.DiscoveryError):
            vocab = native.FALLBACK["openmpi"]
        rules = ompi_rules.parse_rules((base / "native.rules").read_text(), "native.rules", vocab)
        hit = rules.lookup(key, p, ompi_rules.ompi_bytes(key, size, p))
        names = {a.value: a.name for a in vocab.algorithms.get(key, ())}
        what = ("the library's own decision (algorithm 0)" if not hit or hit[0] == 0 else
                f"{names.get(hit[0], hit[0])}" + (f" segment {hit[2]} B" if hit[2] else ""))
        out.append(f"published native.rules (version {cur}): {what} at {size} B, p={p}")
    elif "native.json" in files and lib.name == "mpich":
        out.append(f"published native.json (version {cur}): present")
    elif "native.impi" in files and lib.name == "intelmpi":
        what = _impi_choice(files["native.impi"], lib.version, key, size, p)
        out.append(f"published native.impi (version {cur}): {what}")
    else:
        out.append(f"published native file (version {cur}): none")
    return out


def explain(session, machine: str, library: str, collective: str, size: int, p: int, campaign: str | None = None,
            profile_root=None, alpha: float = 0.05, min_gain: float = 0.05) -> str:
    m = session.scalar(select(Machine).where(Machine.name == machine))
    if m is None:
        known = session.scalars(select(Machine.name).order_by(Machine.name)).all()
        raise ExplainError(f"unknown machine {machine!r}; valid: {', '.join(known) or '(none stored)'}")
    libs = session.scalars(select(MpiLibrary).where(MpiLibrary.machine_id == m.id)).all()
    mine = [x for x in libs if library in (x.name, f"{x.name}-{x.version}", x.module)]
    if not mine:
        valid = sorted({x.name for x in libs} | {f"{x.name}-{x.version}" for x in libs})
        raise ExplainError(f"unknown library {library!r} on {machine}; valid: {', '.join(valid) or '(none stored)'}")
    if collective not in KEYS:
        raise ExplainError(f"unknown collective {collective!r}; valid: {', '.join(KEYS)}")
    cid = None
    if campaign is not None:
        cid = session.scalar(select(Campaign.id).where(Campaign.name == campaign))
        if cid is None:
            raise ExplainError(f"unknown campaign {campaign!r}")
    cells, per_run, (names, heads) = _cells(session, [x.id for x in mine], p, cid)
    key = (collective, size, p)
    if key not in cells:
        have = sorted({s for (k, s, _) in cells if k == collective})
        raise ExplainError(f"no measurement of {collective} at {size} B, p={p} for {library} on {machine}; "
                           f"measured sizes at p={p}: {', '.join(map(str, have)) or '(none)'}")
    result = decide(cells, alpha=alpha, min_gain=min_gain, file_digest=_digest_of(mine[0].name, mine[0].version),
                    library=mine[0].name)
    d = result.decisions[key]
    camp_names = dict(session.execute(select(Campaign.id, Campaign.name)).all())
    path_lines = []
    rounds: dict = {}
    mpi_name = by_key(collective).mpi_name
    for rid, algs in per_run[key].items():
        fname, c, footer = names[rid]
        mt = SEARCH_RUN.search(fname)
        if mt and mt.group(2) == collective and int(mt.group(3)) == size:
            rounds.setdefault((camp_names.get(c, "?"), int(mt.group(1))), []).append(
                (int(mt.group(4)), sorted(a for a in algs if a.startswith("native:"))))
        ms = SEARCH_SERVED.search(fname)
        if ms and ms.group(2) == collective:      # pgmpi-bench --serve: one Served record per cell
            for s in records(map(str, footer), Served):
                if s.call == mpi_name and s.msize == size:
                    rounds.setdefault((camp_names.get(c, "?"), int(ms.group(1))), []).append(
                        (s.seq, sorted(x for x in s.labels if x.startswith("native:"))))
    for (cname, idx), rs in sorted(rounds.items()):
        rs.sort()
        path_lines.append(f"search path in campaign {cname} (sweep {idx}): "
                          + " -> ".join(f"[{', '.join(a[len('native:'):] for a in algs)}]" for _, algs in rs))
    here = result.at(size)
    path_lines.append(f"control arm: null spread at this size class {100 * here.spread:.1f} % (per class: "
                      f"{result.spread_line()}); threshold {100 * here.threshold:.1f} %, mpirun loss tolerance "
                      f"{100 * here.tolerance:.1f} %")
    lines = [f"{machine} {', '.join(f'{x.name}-{x.version}' for x in mine)} {by_key(collective).mpi_name}: "
             f"{len(per_run[key])} mpirun(s) measured this cell"]
    lines += explain_lines(d, path_lines)
    counts = [r.n for rid in per_run[key] for r in records(map(str, names[rid][2]), Nrep)
              if r.call == mpi_name and r.msize == size]
    lines.append(_reporting_line([heads[r] for r in per_run[key]], counts))
    if profile_root is not None:
        for lib in mine:
            lines += _published(profile_root, machine, lib, collective, size, p)
    return "\n".join(lines)
