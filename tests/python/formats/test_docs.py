"""docs/ stays true: the worked example's diff names files that exist and hold every line it adds, and
every repository path the docs name in backquotes exists."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DOCS = sorted((ROOT / "docs").glob("*.md"))


def test_worked_example_diff_is_in_the_tree():
    text = (ROOT / "docs" / "adding-a-mockup.md").read_text()
    diff = re.search(r"```diff\n(.*?)```", text, re.S).group(1)
    added: dict[str, list[str]] = {}
    current = None
    for line in diff.splitlines():
        if line.startswith("+++ b/"):
            current = line[6:]
            added[current] = []
        elif line.startswith("+") and current:
            added[current].append(line[1:].strip())
    assert len(added) == 3 and "lib/docs/mockup-names.md" in added   # the C file, the names, the check test
    for path, lines in added.items():
        body = " ".join((ROOT / path).read_text().split())
        for ln in lines:
            assert " ".join(ln.split()) in body, f"{path}: the example adds a line the file does not have: {ln}"


def test_paths_named_by_the_docs_exist():
    assert DOCS
    for doc in DOCS:
        for path in re.findall(r"`((?:lib|service|scheduler|tests|deploy|spack-repo|docs|migrations|templates)"
                               r"/[\w./-]+)`", doc.read_text()):
            path = path.rstrip("/")
            if "<" in path or "*" in path:
                continue
            assert (ROOT / path).exists(), f"{doc.name} names {path}, which is not in the repository"


def test_docs_site_builds_without_warnings(tmp_path):
    """mkdocs.yml builds the docs site with warnings as errors (broken links, pages missing from the
    nav, images or transcripts the pages point at)."""
    import subprocess
    import sys
    mkdocs = Path(sys.executable).parent / "mkdocs"
    assert mkdocs.exists(), "mkdocs missing: deploy/venv.sh installs the test extras (pyproject.toml)"
    r = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    for page in ("index.html", "admin-guide.html", "user-guide.html", "maintainers-guide.html", "glossary.html"):
        assert (tmp_path / "site" / page).is_file(), page
