"""`pgmpi analyze`: statistics, violations and profiles on the command line.

    pgmpi analyze violations FILES... [--view absolute|relative|violation|detailed|grouped|guidelines]
                                      [--format table|csv|json] [--alpha 0.05] [--test paired_t|wilcoxon|mannwhitney|welch|ks] [--fdr]
    pgmpi analyze quality FILES... [--format table|json]
    pgmpi analyze profile FILES... --out DIR [--gain 0.10] [--memory-budget BYTES] [--int-budget BYTES]
                                   [--cautious] [--check/--no-check]
    pgmpi analyze datatypes FILES... [--format table|csv|json] [--detail violated|all|none] [--alpha 0.05]
                                     [--fdr] [--min-effect 0.10] [--test paired_t|wilcoxon] [--html FILE]
FILES may be directories (searched recursively).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from service.analysis.comparers import VIEWS, render_table, to_csv, to_json, view
from pgmpi_formats.results import ResultsFormatError, read_files
from service.analysis.stats import DEFAULT_TEST, TESTS


def _load(files):
    try:
        rs = read_files(files)
    except ResultsFormatError as e:
        raise click.ClickException(str(e)) from None
    if len(rs) == 0:
        raise click.ClickException("no measurements in the given files")
    return rs


class _OldNamesHidden(click.Option):
    """An option whose first name is the one --help shows; the others are older names still accepted."""

    def get_help_record(self, ctx):
        opts, self.opts = self.opts, self.opts[:1]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = opts


def min_gain_option(default: float, help_: str, upper: float = 10):
    """The one name of the minimum gain in every command (`--min-gain`, a fraction: 0.05 = 5 %); `--gain` and
    `--min-effect`, the older names, are still accepted."""
    return click.option("--min-gain", "--gain", "--min-effect", "min_gain", cls=_OldNamesHidden,
                        type=click.FloatRange(0, upper, max_open=upper == 1), default=default, show_default=True,
                        help=help_)


def _common(f):
    f = click.option("--split-tolerance", type=click.FloatRange(0, 10), default=0.05, show_default=True,
                     help="relative tolerance of the split-robustness guideline")(f)
    f = click.option("--fdr/--no-fdr", default=True, show_default=True,
                     help="Benjamini-Hochberg across all tests (alpha = FDR target), as the service analyses")(f)
    f = click.option("--test", "test", type=click.Choice(TESTS), default=DEFAULT_TEST, show_default=True,
                     help="paired_t/wilcoxon: paired per mpirun (default); mannwhitney/welch/ks: unpaired")(f)
    f = click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
                     show_default=True)(f)
    f = click.argument("files", nargs=-1, required=True, type=click.Path(exists=True))(f)
    return f


@click.group("analyze")
def analyze() -> None:
    """Verify performance guidelines in raw results and generate tuned profiles."""


@analyze.command("violations")
@_common
@click.option("--view", "view_name", type=click.Choice(VIEWS), default="grouped", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
def violations(files, alpha, test, fdr, split_tolerance, view_name, fmt):
    """Show a comparer view and brave/cautious violation counts."""
    from service.analysis.guidelines import analyze as run
    a = run(_load(files), alpha=alpha, test=test, fdr=fdr, split_tolerance=split_tolerance)
    v = view(a, view_name)
    if fmt == "csv":
        sys.stdout.write(to_csv(v))
        return
    if fmt == "json":
        click.echo(json.dumps({"view": v.name, "alpha": alpha, "test": test, "fdr": fdr, "counts": a.counts(),
                               "rows": to_json(v)}, indent=1))
        return
    from rich.console import Console
    con = Console(width=max(400, Console().width))
    con.print(render_table(v, title=f"{v.name} view (one-sided {test}{' + BH' if fdr else ''}, alpha={alpha})"))
    c = a.counts()
    for kind in ("pattern", "monotony", "split"):
        con.print(f"{kind:9s}: {c[kind]['checks']:5d} checks, {c[kind]['brave']:4d} violations brave, "
                  f"{c[kind]['cautious']:4d} cautious ({c[kind]['barrier_warnings']} with barrier warning)")
    con.print(a.control.line())


# the README ships with the package (package data), so the help names the copy this install has
_README = Path(__file__).resolve().parents[1] / "analysis" / "README.md"


@analyze.command("quality", help="Quality score per (machine, library, p): 100 x geometric mean over the measured "
                 "cells of the fastest cautiously violating mock-up's time / the default's (100 = nothing beats "
                 f"the library). Definitions: {_README} and the dashboards' "
                 "glossary page (/glossary).")
@_common
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def quality_cmd(files, alpha, test, fdr, split_tolerance, fmt):
    from service.analysis.guidelines import analyze as run
    from service.analysis.quality import quality
    q = quality(run(_load(files), alpha=alpha, test=test, fdr=fdr, split_tolerance=split_tolerance))
    if fmt == "json":
        click.echo(json.dumps(q, indent=1))
        return
    from rich.console import Console
    from rich.table import Table
    t = Table(title="quality (100 = no guideline violated)")
    for c in ("machine", "library", "p", "score", "passed", "pattern", "monotony", "split"):
        t.add_column(c, justify="left" if c in ("machine", "library") else "right", no_wrap=True)
    for e in q:
        cc = e["counts"]
        t.add_row(e["machine"], f"{e['library']}-{e['version']}" if e["version"] else e["library"], str(e["nprocs"]) + (f" {e['layout']}" if e.get("layout") else ""),
                  "" if e["score"] is None else f"{e['score']:.1f}",
                  "" if e["passed_share"] is None else f"{e['passed_share']:.1%}",
                  *(f"{cc[k]['brave']}/{cc[k]['cautious']} of {cc[k]['checks']}" for k in ("pattern", "monotony", "split")))
    Console(width=max(300, Console().width)).print(t)
    click.echo("violations: brave/cautious of checks")


@analyze.command("profile")
@_common
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="output directory")
@min_gain_option(0.10, "minimum relative gain of the mock-up over the default", upper=1)
@click.option("--memory-budget", type=click.IntRange(0), default=None,
              help="bytes of extra message memory per process a mock-up may use [default: the pool the runs report]")
@click.option("--int-budget", type=click.IntRange(0), default=None, help="bytes of the int pool (counts/displs)")
@click.option("--cautious", is_flag=True, help="ignore violations that carry a barrier warning")
@click.option("--campaign", default=None, help="campaign id written as provenance")
@click.option("--check/--no-check", default=True, show_default=True, help="validate with pgmpitune-check")
def profile_cmd(files, alpha, test, fdr, split_tolerance, out_dir, min_gain, memory_budget, int_budget, cautious,
                campaign, check):
    """Generate .prf profiles (lib/docs/profile-format.md) from significant, large-enough pattern violations."""
    from service.analysis.guidelines import analyze as run
    from service.analysis.profiles import check_profiles, generate_profiles, write_profiles
    rs = _load(files)
    a = run(rs, alpha=alpha, test=test, fdr=fdr, split_tolerance=split_tolerance)
    if campaign is None:
        camps = {r.campaign for r in rs.runs if r.campaign}
        campaign = camps.pop() if len(camps) == 1 else None
    try:
        profs = generate_profiles(a, gain=min_gain, msg_budget=memory_budget, int_budget=int_budget,
                                  cautious=cautious, campaign=campaign)
    except (ValueError, RuntimeError) as exc:   # two synchronisation methods for one config; no checker
        raise click.ClickException(str(exc)) from None
    paths = write_profiles(profs, out_dir)
    for p, path in zip(profs, paths):
        rng = ", ".join(f"{lo}-{hi}:{m}" for lo, hi, m in p.ranges)
        click.echo(f"{path}: {p.mpi_name} p={p.nprocs}{' layout ' + p.layout if p.layout else ''} {rng}")
    click.echo(a.control.line())
    if not profs:
        click.echo("no profile: " + ("the control arm is untrustworthy" if not a.control.trustworthy else
                   "no mock-up is significantly and sufficiently faster within the memory budget"))
    if check and paths:
        ok, out = check_profiles(paths)
        if ok is None:
            click.echo(f"note: {out}", err=True)
        elif not ok:
            raise click.ClickException(f"pgmpitune-check rejected the profiles:\n{out}")
        else:
            click.echo("pgmpitune-check: ok")


@analyze.command("datatypes")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05, show_default=True)
@click.option("--fdr/--no-fdr", default=True, show_default=True,
              help="Benjamini-Hochberg across all comparisons (alpha = FDR target), as the service analyses")
@min_gain_option(0.10, "a violation needs slower / faster > 1 + this")
@click.option("--test", "test", type=click.Choice(["paired_t", "wilcoxon"]), default=DEFAULT_TEST, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@click.option("--detail", type=click.Choice(["violated", "all", "none"]), default="violated", show_default=True,
              help="which single verdicts to list under the summary (table format)")
@click.option("--html", "html_out", type=click.Path(dir_okay=False), default=None,
              help="also write the heatmaps and per-layout details to this HTML file (self-contained)")
def datatypes_cmd(files, alpha, fdr, min_gain, test, fmt, detail, html_out):
    """GL1-GL4 verdicts of the derived-datatype guidelines on pgmpi-dtbench results (service/analysis/datatypes.py)."""
    from service.analysis.datatypes import dt_verdicts, summary
    rs = _load(files)
    min_effect = min_gain
    vs = dt_verdicts(rs, alpha=alpha, fdr=fdr, min_effect=min_effect, test=test)
    if not vs:
        raise click.ClickException("no pgmpi-dtbench cases (#@pgmpi dtcase lines) with two descriptions in the given files")
    if html_out:
        from pathlib import Path
        from service.analysis.datatypes_report import render
        Path(html_out).write_text(render(rs, vs))
        click.echo(f"wrote {html_out}", err=True)
    if fmt == "json":
        click.echo(json.dumps({"alpha": alpha, "fdr": fdr, "min_effect": min_effect, "test": test,
                               "verdicts": [v.as_dict() for v in vs]}, indent=1))
        return
    if fmt == "csv":
        import csv
        import io
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(vs[0].as_dict()))
        w.writeheader()
        for v in vs:
            w.writerow(v.as_dict())
        sys.stdout.write(buf.getvalue())
        return
    from rich.console import Console
    from rich.table import Table
    con = Console(width=max(220, Console().width))
    t = Table(title=f"derived-datatype guidelines (one-sided {test}{' + BH' if fdr else ''}, alpha={alpha}, "
                    f"min effect {min_effect:.0%}; ratio = slower / faster, median over mpiruns)")
    for c in ("library", "guideline", "pattern", "tested", "violated", "largest violation", "ratio", "p"):
        t.add_column(c, justify="right" if c in ("tested", "violated", "ratio", "p") else "left", no_wrap=True)
    for s in summary(vs):
        w = s.worst
        t.add_row(s.library, s.guideline, s.pattern, str(s.tested), str(s.violated),
                  "" if w is None else f"{w.basetype} {w.layout} {w.msize} B: {w.slower} slower than {w.faster}",
                  "" if w is None else f"{w.ratio:.2f}", "" if w is None else f"{w.p:.2g}")
    con.print(t)
    if detail == "none":
        return
    d = Table(title="single verdicts" + (" (violated)" if detail == "violated" else ""))
    for c in ("library", "guideline", "pattern", "base", "layout", "bytes", "slower", "faster", "ratio", "p", "runs",
              "verdict"):
        d.add_column(c, justify="right" if c in ("bytes", "ratio", "p", "runs") else "left", no_wrap=True)
    for v in vs:
        if detail == "violated" and v.verdict != "violated":
            continue
        d.add_row(v.library, v.guideline, v.pattern, v.basetype, v.layout, str(v.msize), v.slower, v.faster,
                  f"{v.ratio:.2f}", f"{v.p:.2g}", str(v.runs), v.verdict)
    con.print(d)




def _collective(ctx, param, value):
    from pgmpi_formats.words import collective_key
    try:
        return collective_key(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _bytes(ctx, param, value):
    from pgmpi_formats.words import parse_bytes
    try:
        n = parse_bytes(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    if n < 1:
        raise click.BadParameter("a size is at least 1 byte")
    return n


@click.command("explain")
@click.argument("machine")
@click.argument("library")
@click.argument("collective", callback=_collective)
@click.argument("size", callback=_bytes)
@click.argument("p", type=click.IntRange(1))
@click.option("--campaign", default=None, help="only the runs of this campaign (default: every stored run)")
@click.option("--profile-root", default=None, help="site profile root to check what is published "
              "(default: profile_root of the site file, else /opt/pgmpi-site/profiles)")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05, show_default=True)
@min_gain_option(0.05, "minimum relative gain of a choice over the default")
@click.option("--database-url", envvar="DATABASE_URL", default=None,
              help="SQLAlchemy URL (default: $DATABASE_URL, else the embedded SQLite file)")
def explain_cmd(machine, library, collective, size, p, campaign, profile_root, alpha, min_gain, database_url):
    """The evidence of one cell: every candidate (default, the library's own algorithms, mock-ups) with its
    median, paired ratio to the default, CI, p-value and regimes, the search path that visited it, the
    choice and why, and whether the published native file / profile holds it."""
    from pgmpi_formats import site
    from service.commands.admin import app_context
    from service.store.db import db as sa

    from service.workflows.explain import ExplainError, explain
    root = str(site.profile_root(profile_root))
    with app_context(database_url):
        try:
            click.echo(explain(sa.session, machine, library, collective, size, p, campaign=campaign,
                               profile_root=root, alpha=alpha, min_gain=min_gain))
        except ExplainError as exc:
            raise click.ClickException(str(exc)) from None


@analyze.command("native-files")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="folder to write into")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05, show_default=True)
@min_gain_option(0.05, "minimum relative gain of a choice over the default")
@click.option("--validation", "verdicts", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="verdict.json of a validation job of an earlier file (`pgmpi agent native-validate`): the "
                   "choices it failed are refused, so the file is written without them (validate it again)")
def native_files_cmd(files, out_dir, alpha, min_gain, verdicts):
    """One decision per (collective, size, p) over FILES of one MPI library (default, its own algorithms,
    mock-ups; service/analysis/native_decision.py), written as the library's own file (native.rules for Open
    MPI, native.json for MPICH, native.impi for Intel MPI, each checked by its reader) and .prf profiles for the
    cells a mock-up wins.  Intel MPI changes its choice outside the ranges of a set I_MPI_ADJUST_<COLL>, so
    native.impi holds a collective only where one of its presets won at every size measured; the others are
    named as left to the library (and no file is written when none is left)."""
    from pathlib import Path

    from pgmpi_formats import native, native_file
    from pgmpi_formats.collectives import by_key
    from pgmpi_formats.prf import format_prf, profile_filename
    from pgmpi_formats.results import read_file

    from service.analysis.native_decision import decide, runs_from_files, validation_refusals
    heads = [read_file(f).header for f in files]
    libs = {(h.get("mpi_library"), h.get("mpi_version", "")) for h in heads}
    if len(libs) != 1 or not {lib for lib, _ in libs} <= set(native_file.NAMES):
        raise click.ClickException(f"FILES must be of one MPI library and version, {', '.join(native_file.NAMES)}; "
                                   "got " + ", ".join(sorted(f"{name}-{ver}" for name, ver in libs)))
    lib, version = libs.pop()
    # Open MPI 5's coll/han serves communicators that span nodes; a tuned rules file then reaches only han's
    # sub-communicators (measured on the virtual cluster, 2 nodes x 2 ranks: the file's allreduce choice left
    # the result's fingerprint the default's; with han off it was the choice's), so a choice measured there is
    # not what the file makes run
    across = sorted({f for f, h in zip(files, heads) if int(h.get("nodes") or 1) > 1
                     and native.governing_component(lib, version, int(h.get("nodes") or 1)) != "tuned"})
    if across:
        raise click.ClickException(
            f"{across[0]}: measured on {read_file(across[0]).header.get('nodes')} nodes with Open MPI {version}, "
            "where coll/han, not tuned, serves the call (pgmpi_formats.native.governing_component): a rules file "
            "would not select what was measured; decide from runs on one node")
    cells = runs_from_files(files)
    refused: dict = {}
    for v in verdicts:
        try:
            verdict = json.loads(Path(v).read_text())
            if not isinstance(verdict.get("cells"), list):
                raise ValueError("no 'cells' list")
        except (ValueError, AttributeError) as exc:
            raise click.ClickException(f"{v}: not a validation verdict ({exc})") from None
        refused.update(validation_refusals(verdict, cells, f"{Path(v).name} record {verdict.get('id')}",
                                           gap_refuses_collective=native_file.gap_refuses_collective(lib)))

    def render(decs) -> tuple[str, str] | None:
        # the exact version the results were measured on (#@mpi_version): Open MPI 5's rules file is checked
        # against 5's algorithms, MPICH 5's JSON against 5's selection code, native.impi against that Intel
        # MPI's presets; None: a gapless file (native.impi) with nothing it can hold exactly
        fmt = native_file.FORMATS[lib]
        if fmt.gapless and not any(d.label != "default" for d in fmt.trim(decs)[0]):
            return None
        try:
            return native_file.render(lib, decs, version=version or None)
        except (ValueError, FileNotFoundError, native.DiscoveryError) as exc:
            raise click.ClickException(str(exc)) from None

    # the file's digest lets the mock-ups measured under exactly this file compete (second pass)
    res = decide(cells, alpha=alpha, min_gain=min_gain, refused=refused,
                 file_digest=lambda decs: native.file_digest(r[1]) if (r := render(decs)) else None, library=lib)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    untuned = native_file.left_to_library(lib, res.native_decisions())
    written = render(res.native_decisions())
    if written is None:
        click.echo(f"no {native_file.NAMES[lib]} written: nothing its variables can hold exactly")
    else:
        name, text = written
        (out / name).write_text(text)
        click.echo(f"wrote {out / name} (read back by {native_file.FORMATS[lib].reader}; "
                   f"fnv1a64 {native.file_digest(text)})")
    for key, why in sorted(untuned.items()):
        click.echo(f"{key:10} left to the library: {why}")
    under = sum(1 for runs in cells.values() for r in runs if getattr(r, "native_file", None))
    if under:
        same = sum(1 for runs in cells.values() for r in runs if getattr(r, "native_file", None) == res.file_digest)
        click.echo(f"second pass: {same} of {under} (cell, mpirun) measurement(s) under a native file ran under "
                   f"this one (control arm null spread {100 * res.spread_under_file:.1f} %); the others are ignored")
    for (key, p), ranges in res.prf_ranges().items():
        name = profile_filename(key, p)
        (out / name).write_text(format_prf(by_key(key).mpi_name, p, ranges))
        click.echo(f"wrote {out / name}: {len(ranges)} mock-up range(s)")
    for (key, size, p), d in sorted(res.decisions.items()):
        if d.choice != "default" or d.left_to_library:       # the latter: a native win the file cannot hold
            click.echo(f"{key:10} {size:>8} p={p}: {d.choice} ({d.kind}) {d.reason}")
    judged = [(d, c) for d in res.decisions.values() for c in d.candidates if c.under]
    if judged:
        from service.analysis.native_decision import mockup_parts
        file_keys = {x.key for x in res.native_decisions() if x.label != "default"}
        touched = [(d, c) for d, c in judged if mockup_parts(c.label) & file_keys]
        click.echo(f"second pass: {len(judged)} mock-up candidate(s) judged under the file, "
                   f"{sum(c.refused is None for _, c in judged)} winning; {len(touched)} with parts the file "
                   f"retunes ({', '.join(sorted(file_keys))}):")
        shown = sorted(touched, key=lambda x: (x[1].refused is not None, x[0].key, x[0].size, x[1].label))
        if len(shown) > 12:
            click.echo(f"  (the {len(shown) - 12} after the first 12 are left out; `pgmpi explain` shows any cell)")
        for d, c in shown[:12]:
            click.echo(f"  {d.key:10} {d.size:>8} p={d.nprocs}: {c.label} {c.paired_ratio or float('nan'):.3f}x "
                       f"the file's default over {len(c.run_ratios)} mpiruns"
                       + (f" -- refused: {c.refused[:100]}" if c.refused else " -- wins"))
    for (key, size, p, label), why in sorted(refused.items()):
        click.echo(f"{key:10} {size:>8} p={p}: {label} refused, {why[:160]}")
    n = sum(d.choice != "default" for d in res.decisions.values())
    click.echo(f"{n} of {len(res.decisions)} cells leave the default (control arm null spread per size class "
               f"{res.spread_line()}; threshold max(min_gain, the class's spread))")


COMMANDS = [analyze, explain_cmd]
