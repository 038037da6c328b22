"""The import graph across the tree (parsed with ast, nothing imported): the agent never imports the
service, the service never imports the agent, and the shared package imports neither, nor Flask; reading a
profile needs no numpy/scipy.  Imports inside functions count too."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TREES = {"scheduler": ROOT / "scheduler", "service": ROOT / "service",
         "pgmpi_formats": ROOT / "lib" / "python" / "pgmpi_formats"}


def imports(path: Path, package: str) -> set[str]:
    """Absolute module names imported by one file (relative imports resolved against its package)."""
    tree = ast.parse(path.read_text(), str(path))
    rel = path.relative_to(TREES[package]).with_suffix("").parts
    here = [package, *rel[:-1]] if rel[-1] != "__init__" else [package, *rel[:-1]]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return out


def graph(package: str) -> dict[str, set[str]]:
    return {str(p.relative_to(ROOT)): imports(p, package) for p in sorted(TREES[package].rglob("*.py"))}


def offenders(package: str, forbidden: tuple[str, ...]) -> list[str]:
    return [f"{f} imports {m}" for f, mods in graph(package).items() for m in sorted(mods)
            if any(m == x or m.startswith(x + ".") for x in forbidden)]


def test_the_graph_is_read():
    g = graph("scheduler")
    assert "pgmpi_formats.prf.parse_prf" in g["scheduler/validation.py"]
    assert "scheduler.campaign.Campaign" in g["scheduler/validation.py"]      # relative import resolved


def test_agent_does_not_import_the_service():
    assert offenders("scheduler", ("service", "flask", "flask_login", "sqlalchemy")) == []


def test_service_does_not_import_the_agent():
    assert offenders("service", ("scheduler",)) == []


def test_shared_package_imports_neither_side_nor_flask():
    assert offenders("pgmpi_formats", ("service", "scheduler", "flask", "sqlalchemy", "scipy")) == []


def test_reading_a_profile_or_the_site_needs_no_numpy():
    for name in ("prf.py", "site.py", "checker.py", "collectives.py"):
        mods = imports(TREES["pgmpi_formats"] / name, "pgmpi_formats")
        assert not {m for m in mods if m.split(".")[0] in ("numpy", "scipy")}, name
        assert "pgmpi_formats.results" not in mods, name
