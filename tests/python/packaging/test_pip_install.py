"""`pip install .` (non-editable) into a scratch venv gives a working `pgmpi`: the code runs from the
installed copy, not from this checkout, and the top-level templates/ and migrations/ ship with it.

To stay quick and offline the scratch venv sees the project's already installed dependencies through a
path entry (.venv's site-packages as a plain sys.path line, so the editable finder there is NOT active)
and pgmpi-site itself is installed with --no-deps from a copy of the checkout's files.  deploy/site/INSTALL.md shows the full `pip install .` with dependencies, as a site runs it."""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from packaging_helpers import ROOT

SHIPPED = ["pyproject.toml", "README.md", "service", "scheduler", "templates", "migrations",
           "lib/src/core/collectives.def"]


def run(cmd, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert res.returncode == 0, f"{cmd} failed:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    return res.stdout


def test_pip_install_non_editable_gives_working_pgmpi(tmp_path):
    # a copy of the files the package is made from (tracked + new, not ignored); symlinks kept
    files = run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "--", *SHIPPED]).split()
    src = tmp_path / "src"
    src.mkdir()
    tar = subprocess.Popen(["tar", "-C", str(ROOT), "-cf", "-", *files], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-C", str(src), "-xf", "-"], stdin=tar.stdout, check=True)
    assert tar.wait() == 0

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py = venv / "bin/python"
    purelib = run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip()
    deps = sysconfig.get_paths()["purelib"]          # the project venv's site-packages (pip included)
    Path(purelib, "zz_pgmpi_test_deps.pth").write_text(deps + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DATABASE_URL", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}:{env['PATH']}"
    # a real PEP 517 wheel build (isolated build env: setuptools and wheel from the registry or pip's cache)
    run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", str(src)],
        cwd=tmp_path, env=env)
    pgmpi = venv / "bin/pgmpi"
    assert pgmpi.exists(), "pip did not install the pgmpi console script"

    where = run([str(py), "-c", "import service, scheduler, pathlib; print(service.__file__); "
                 "print(scheduler.__file__)"], cwd=tmp_path, env=env)
    for line in where.split():
        assert line.startswith(purelib), f"imported from outside the install: {line}"
    for data in ("templates/base.html", "migrations/env.py", "migrations/alembic.ini",
                 "service/analysis/collectives.def", "scheduler/templates/job.sh.tmpl"):
        assert Path(purelib, data).is_file(), f"{data} not shipped"
    assert not Path(purelib, "service/analysis/collectives.def").is_symlink()

    out = run([str(pgmpi), "--help"], cwd=tmp_path, env=env)
    for group in ("db", "analyze", "agent", "profile"):
        assert group in out, out
    # migrations/ shipped and usable: upgrade a fresh SQLite database with the installed copy
    db = tmp_path / "pip.sqlite"
    out = run([str(pgmpi), "db", "upgrade", "--database-url", f"sqlite:///{db}"], cwd=tmp_path, env=env)
    assert db.exists() and db.stat().st_size > 0, out
    # templates/ shipped and used: the dashboard renders from the installed copy
    page = run([str(py), "-c", f"""
from service.app import create_app
app = create_app({{"SQLALCHEMY_DATABASE_URI": "sqlite:///{db}", "TESTING": True,
                  "INSTANCE_PATH": "{tmp_path / 'instance'}", "LOGIN_DISABLED": True}})
print(app.jinja_loader.searchpath[0])
print(app.jinja_env.get_template("base.html").filename)
with app.test_client() as c:
    r = c.get("/healthz")
    print(r.status_code)
"""], cwd=tmp_path, env=env)
    lines = page.split()
    assert lines[0].startswith(purelib) and lines[1].startswith(purelib), page
    assert lines[-1] == "200", page
