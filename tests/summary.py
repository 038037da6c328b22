"""Summarise what `make test` ran, against which real component.

Reads CTest's JUnit files and the pytest component report written by
tests/python/conftest.py; prints one row per component and a closing
`N passed, N failed` line.  Exit status 1 when anything failed or nothing ran.
"""
from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path


def ctest_rows(results: Path) -> dict[str, Counter]:
    rows: dict[str, Counter] = defaultdict(Counter)
    for f in sorted(results.glob("ctest-*.xml")):
        mpi = f.stem.removeprefix("ctest-")
        for case in ET.parse(f).getroot().iter("testcase"):
            status = case.get("status", "run")
            failed = case.find("failure") is not None or case.find("error") is not None
            skipped = case.find("skipped") is not None or status in ("notrun", "disabled")
            outcome = "failed" if failed else "skipped" if skipped else "passed"
            rows[f"C tests under mpirun ({mpi})"][outcome] += 1
    return rows


def pytest_rows(results: Path) -> dict[str, Counter]:
    rows: dict[str, Counter] = defaultdict(Counter)
    report = results / "pytest-components.json"
    if not report.exists():
        return rows
    for entry in json.loads(report.read_text()):
        comps = entry["components"] or ["python only"]
        for comp in comps:
            rows[f"pytest: {comp}"][entry["outcome"]] += 1
    return rows


def main() -> int:
    results = Path(sys.argv[1])
    rows = {**ctest_rows(results), **pytest_rows(results)}
    total: Counter = Counter()
    width = max((len(k) for k in rows), default=20)
    print(f"{'what ran (against)':<{width}}  passed  failed  skipped")
    for name, c in sorted(rows.items()):
        print(f"{name:<{width}}  {c['passed']:>6}  {c['failed']:>6}  {c['skipped']:>7}")
    ctest_total: Counter = Counter()
    for name, c in rows.items():
        if name.startswith("C tests"):
            ctest_total.update(c)
    # pytest rows count a test once per component; count tests once for the total.
    py_total: Counter = Counter()
    report = results / "pytest-components.json"
    if report.exists():
        for entry in json.loads(report.read_text()):
            py_total[entry["outcome"]] += 1
    # Collection errors and crashes never reach the component report: take pytest's own JUnit counts
    # when they say more went wrong.
    junit = results / "pytest.xml"
    if junit.exists():
        suite = ET.parse(junit).getroot()
        suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
        if suite is not None:
            bad = int(suite.get("errors", 0)) + int(suite.get("failures", 0))
            if bad > py_total["failed"]:
                print(f"{'pytest: errors outside any test':<{width}}  {0:>6}  {bad - py_total['failed']:>6}  {0:>7}")
                py_total["failed"] = bad
    total = ctest_total + py_total
    line = f"{total['passed']} passed, {total['failed']} failed"
    if total["skipped"]:
        line += f", {total['skipped']} skipped"
    print(line)
    return 0 if total["failed"] == 0 and total["passed"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
