"""The import graph across the tree (parsed with ast, nothing imported): the agent never imports the
service, the service never imports the agent, and the shared package imports neither, nor Flask; reading a
profile needs no numpy/scipy.  Inside the service (docs/architecture.md, "The service's layers"): no cycle
between its packages, each package imports only the layers below it, service/analysis is pure (no database,
no Flask, no other service package), and the migrations import no service code.  Imports inside functions
count too."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TREES = {"scheduler": ROOT / "scheduler", "service": ROOT / "service",
         "pgmpi_formats": ROOT / "lib" / "python" / "pgmpi_formats", "migrations": ROOT / "migrations"}

# The service's layers, lowest first: a package may import its own layer's modules and those of lower layers.
# "service" is the top-level modules (app.py, cli.py, logs.py): the application the commands start.  The API
# may serve what an area of the pages computes (/api/v1/alerts is the alerts page's feed), never the reverse.
LAYERS = [{"analysis"}, {"store"}, {"auth"}, {"profiles"}, {"workflows"}, {"dashboards"}, {"api"}, {"service"},
          {"commands"}]


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


def service_package(module: str) -> str | None:
    """service.<pkg>.x -> <pkg> for a subpackage, "service" for a top-level module; None outside the service."""
    parts = module.split(".")
    if parts[0] != "service":
        return None
    if len(parts) > 1 and (TREES["service"] / parts[1]).is_dir():
        return parts[1]
    return "service"


def package_edges() -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package) -> the files that make that edge."""
    edges: dict[tuple[str, str], list[str]] = {}
    for f, mods in graph("service").items():
        parts = Path(f).parts
        me = parts[1] if len(parts) > 2 else "service"
        for m in mods:
            other = service_package(m)
            if other is not None and other != me:
                edges.setdefault((me, other), []).append(f)
    return edges


def cycles(edges) -> list[list[str]]:
    """The strongly connected components of more than one package (Tarjan)."""
    succ: dict[str, set[str]] = {}
    for a, b in edges:
        succ.setdefault(a, set()).add(b)
        succ.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(succ[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(succ):
        if v not in index:
            visit(v)
    return out


def test_service_graph_is_read():
    edges = package_edges()
    assert ("workflows", "analysis") in edges and ("api", "workflows") in edges
    # an import inside a function counts: the CLI imports the app only when a command runs
    assert "service/commands/admin.py" in edges[("commands", "service")]


def test_no_cycle_between_service_packages():
    edges = package_edges()
    assert cycles(edges) == [], sorted(f"{a} -> {b}: {sorted(set(fs))[0]}" for (a, b), fs in edges.items())


def test_each_service_package_imports_only_lower_layers():
    rank = {pkg: i for i, layer in enumerate(LAYERS) for pkg in layer}
    packages = {p.name for p in TREES["service"].iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages <= set(rank), f"a new service package needs its place in LAYERS: {packages - set(rank)}"
    bad = [f"{f} ({a}) imports service.{b}" for (a, b), files in sorted(package_edges().items())
           if rank[b] >= rank[a] for f in sorted(set(files))]
    assert bad == []


def test_analysis_is_pure():
    """No database, no Flask, no other service package: service/analysis computes on what it is given."""
    forbidden = ("sqlalchemy", "flask", "flask_login", "flask_wtf", "flask_sqlalchemy", "flask_migrate", "alembic",
                 "psycopg", "sqlite3") + tuple(f"service.{p}" for layer in LAYERS for p in layer if p != "analysis")
    mods = {f: m for f, m in graph("service").items() if f.startswith("service/analysis/")}
    bad = [f"{f} imports {m}" for f, ms in mods.items() for m in sorted(ms)
           if any(m == x or m.startswith(x + ".") for x in forbidden)
           or m in ("service.app", "service.cli", "service.logs")]
    assert bad == []


def test_migrations_import_no_service_code():
    """A migration keeps its meaning whatever the live code becomes: it imports alembic/sqlalchemy only
    (migrations/env.py, which hands the live models to autogenerate, is no migration)."""
    bad = offenders("migrations", ("service", "scheduler", "pgmpi_formats", "flask"))
    assert [b for b in bad if b.startswith("migrations/versions/")] == []
    assert len(list((TREES["migrations"] / "versions").glob("*.py"))) >= 9
