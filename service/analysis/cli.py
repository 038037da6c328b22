"""`pgmpi analyze`: statistics, violations and profiles on the command line.

    pgmpi analyze violations FILES... [--view absolute|relative|violation|detailed|grouped|guidelines]
                                      [--format table|csv|json] [--alpha 0.05] [--test paired_t|wilcoxon|mannwhitney|welch|ks] [--fdr]
    pgmpi analyze quality FILES... [--format table|json]
    pgmpi analyze profile FILES... --out DIR [--gain 0.10] [--memory-budget BYTES] [--int-budget BYTES]
                                   [--cautious] [--check/--no-check]
FILES may be directories (searched recursively).
"""
from __future__ import annotations

import json
import sys

import click

from .comparers import VIEWS, render_table, to_csv, to_json, view
from pgmpi_formats.results import ResultsFormatError, read_files
from .stats import DEFAULT_TEST, TESTS


def _load(files):
    try:
        rs = read_files(files)
    except ResultsFormatError as e:
        raise click.ClickException(str(e)) from None
    if len(rs) == 0:
        raise click.ClickException("no measurements in the given files")
    return rs


def _common(f):
    f = click.option("--split-tolerance", type=click.FloatRange(0, 10), default=0.05, show_default=True,
                     help="relative tolerance of the split-robustness guideline")(f)
    f = click.option("--fdr", is_flag=True, help="Benjamini-Hochberg across all tests (alpha = FDR target)")(f)
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
    from .guidelines import analyze as run
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


@analyze.command("quality")
@_common
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def quality_cmd(files, alpha, test, fdr, split_tolerance, fmt):
    """Quality score per (machine, library, p); see service/analysis/README.md."""
    from .guidelines import analyze as run
    from .quality import quality
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
@click.option("--gain", type=click.FloatRange(0, 1, max_open=True), default=0.10, show_default=True,
              help="minimum relative gain of the mock-up over the default")
@click.option("--memory-budget", type=click.IntRange(0), default=None,
              help="bytes of extra message memory per process a mock-up may use [default: the pool the runs report]")
@click.option("--int-budget", type=click.IntRange(0), default=None, help="bytes of the int pool (counts/displs)")
@click.option("--cautious", is_flag=True, help="ignore violations that carry a barrier warning")
@click.option("--campaign", default=None, help="campaign id written as provenance")
@click.option("--check/--no-check", default=True, show_default=True, help="validate with pgmpitune-check")
def profile_cmd(files, alpha, test, fdr, split_tolerance, out_dir, gain, memory_budget, int_budget, cautious,
                campaign, check):
    """Generate .prf profiles (lib/docs/profile-format.md) from significant, large-enough pattern violations."""
    from .guidelines import analyze as run
    from .profiles import check_profiles, generate_profiles, write_profiles
    rs = _load(files)
    a = run(rs, alpha=alpha, test=test, fdr=fdr, split_tolerance=split_tolerance)
    if campaign is None:
        camps = {r.campaign for r in rs.runs if r.campaign}
        campaign = camps.pop() if len(camps) == 1 else None
    profs = generate_profiles(a, gain=gain, msg_budget=memory_budget, int_budget=int_budget, cautious=cautious,
                              campaign=campaign)
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


COMMANDS = [analyze]
