#!/usr/bin/env python3
"""Intel MPI's native decision before and after fills, on stored search tables (issue 35): which cells get a
preset now that decide(library="intelmpi") fills the sizes where the default won with a preset measured as fast
(service/analysis/native_decision.fill_candidate), and what each decision loses per cell on the exhaustive table
and on an independent re-measurement's (tests/bench/native_search.py's loss: the chosen variant's time / the
cell's best variant's - 1).

    .venv/bin/python tests/bench/intel_fill_tables.py [DIR]   # DIR: native_search.py --keep's <lib> folder

DIR holds exhaustive/, race/ and rerun/ raw files (default: /tmp/q-ns-intel/intelmpi, the quiet run of
docs/transcripts/native-search-quiet-blocks-2026-11-26.txt), or the Intel search files of
tests/bench/native_libraries.py / intel_tuner_compare.py --keep (intel-<round>-<label>[-<key>].txt, one
mpirun each, paired by round; no control arm there, so a fill needs its interval's lower bound >= 1).
Reads files only; asserts nothing.
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from native_search import cell_losses, exhaustive_table, summary  # noqa: E402

from service.analysis.native_decision import Run, decide, runs_from_files  # noqa: E402


def tuner_cells(root: Path) -> dict:
    """native_libraries.py's Intel search files -> {(key, size, 2): [Run]}, paired by round as it pairs them."""
    from pgmpi_formats.results import read_file
    per: dict = {}
    for f in sorted(root.glob("intel-*-*.txt")):
        parts = f.stem.split("-")
        rnd, label = int(parts[1]), parts[2].replace("_", ":")
        run = read_file(f)
        rows: dict = {}
        for t, m, x in zip(run.test, run.msize, run.runtime):
            rows.setdefault((run.tests[t].removeprefix("MPI_").lower(), int(m)), []).append(float(x))
        for (key, m), xs in rows.items():
            per.setdefault(rnd, {}).setdefault((key, m, 2), {})[label] = statistics.median(xs)
    cells: dict = {}
    for rnd in sorted(per):
        for cell, medians in per[rnd].items():
            cells.setdefault(cell, []).append(Run(medians, alone=True))
    return cells


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/q-ns-intel/intelmpi")
    files = {s: sorted((root / s).glob("*.txt")) for s in ("exhaustive", "race", "rerun") if (root / s).is_dir()}
    if files:
        table = exhaustive_table(files["exhaustive"])
        table2 = exhaustive_table(files["rerun"]) if "rerun" in files else {}
        sets = {s: runs_from_files(fs) for s, fs in files.items()}
        print(f"# {root}: {', '.join(f'{s} {len(f)} files' for s, f in files.items())}")
    else:
        cells = tuner_cells(root)
        sets, table2 = {"exhaustive": cells}, {}
        table = {(k, s): {a: statistics.median([r[a] for r in runs if a in r]) for a in {a for r in runs for a in r}}
                 for (k, s, _p), runs in cells.items()}
        print(f"# {root}: native_libraries.py's Intel search, {len(list(root.glob('intel-*-*.txt')))} files")
    for search, cells in sets.items():
        before, after = decide(cells, library="intelmpi", fill=False), decide(cells, library="intelmpi")
        print(f"\n## {search}: {len(cells)} cells; control arm's null spread {after.spread_line()}")
        for name, r in (("before", before), ("after", after)):
            dec = {(k, s): d.choice for (k, s, _p), d in r.decisions.items()}
            mean, p95, mx = summary(list(cell_losses(table, dec).values()))
            line = (f"  {name:6} left to the library: {', '.join(sorted(r.left_to_library)) or '-'}; presets in "
                    f"{sum(c != 'default' for c in dec.values())} of {len(dec)} cells; loss on exhaustive's table "
                    f"mean {100 * mean:.1f} % p95 {100 * p95:.1f} % max {100 * mx:.1f} %")
            if table2:
                m2, p2, _ = summary(list(cell_losses(table2, dec).values()))
                line += f"; on the rerun's mean {100 * m2:.1f} % p95 {100 * p2:.1f} %"
            print(line)
        for (k, s, p), d in sorted(after.decisions.items()):
            b = before.decisions[(k, s, p)]
            if d.choice != b.choice:
                print(f"    {k} {s} B p={p}: {b.choice} -> {d.choice} ({'fill' if d.fill else 'win'}): {d.reason[:160]}")
        for (k, s, p), d in sorted(after.decisions.items()):
            if d.choice == "default" and k in before.left_to_library:
                nat = [c for c in d.candidates if c.kind == "native" and c.ci]
                best = max(nat, key=lambda c: c.ci[0], default=None)
                if best:
                    print(f"    {k} {s} B p={p}: default; best-bounded preset {best.label} {best.paired_ratio:.3f}x, "
                          f"95 % CI {best.ci[0]:.3f}-{best.ci[1]:.3f}x over {len(best.run_ratios)} mpiruns (a fill "
                          f"needs the lower bound >= 1/(1 + {100 * after.at(s).spread:.1f} %))")


if __name__ == "__main__":
    main()
