"""`pip install .` (non-editable) into a scratch venv gives a working `pgmpi`: the code runs from the
installed copy, not from this checkout, and the top-level templates/ and migrations/ ship with it.  With that
install alone a campaign is validated, run on the local backend, uploaded, analysed and published
(test_installed_copy_runs_a_campaign_end_to_end; before pgmpi_formats shipped collectives.def, campaign
validation failed there: FileNotFoundError on <site-packages>/lib/src/core/collectives.def).

To stay quick and offline the scratch venv sees the project's already installed dependencies through a
path entry (.venv's site-packages as a plain sys.path line, so the editable finder there is NOT active)
and pgmpi-site itself is installed with --no-deps from a copy of the checkout's files.  deploy/site/INSTALL.md shows the full `pip install .` with dependencies, as a site runs it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import delay_interposer
from packaging_helpers import ROOT

SHIPPED = ["pyproject.toml", "README.md", "service", "scheduler", "templates", "migrations",
           "lib/src/core/collectives.def", "deploy/mpi-libraries.tsv", "lib/python", "docs/glossary.md"]


def run(cmd, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert res.returncode == 0, f"{cmd} failed:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    return res.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv python, purelib, env): pgmpi-site installed non-editable from a copy of the checkout."""
    tmp_path = tmp_path_factory.mktemp("pip")
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
    return py, purelib, env


def test_pip_install_non_editable_gives_working_pgmpi(installed, tmp_path):
    py, purelib, env = installed
    pgmpi = py.parent / "pgmpi"
    assert pgmpi.exists(), "pip did not install the pgmpi console script"

    where = run([str(py), "-c", "import service, scheduler, pgmpi_formats; print(service.__file__); "
                 "print(scheduler.__file__); print(pgmpi_formats.__file__)"], cwd=tmp_path, env=env)
    for line in where.split():
        assert line.startswith(purelib), f"imported from outside the install: {line}"
    for data in ("templates/base.html", "migrations/env.py", "migrations/alembic.ini",
                 "pgmpi_formats/collectives.def", "scheduler/templates/job.sh.tmpl",
                 "service/dashboards/glossary.md", "service/analysis/README.md"):
        assert Path(purelib, data).is_file(), f"{data} not shipped"
    assert not Path(purelib, "pgmpi_formats/collectives.def").is_symlink()

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


SLOWED = 1024

END_TO_END = """
import json, sys
from pathlib import Path
import flask_migrate
from service.app import ROOT, create_app
from service.auth import create_token
from service.store.db import db
from service.store.models import Machine, ProfileVersion
from scheduler.runner import run_local_campaign

work = Path(sys.argv[1])
url = f"sqlite:///{work / 'site.sqlite'}"
# a loaded 2-core machine: the validation's control sizes may miss 1.0 by up to 30 % (test_slurm_violation.py)
app = create_app({"SQLALCHEMY_DATABASE_URI": url, "INSTANCE_PATH": str(work / "instance"),
                  "PGMPI_VALIDATION_TOLERANCE": 0.30})
with app.app_context():
    flask_migrate.upgrade(directory=str(ROOT / "migrations"))
    db.session.add(Machine(name="pipbox", nodes=1, cores_per_node=2))
    db.session.commit()
    _row, token = create_token("pip-agent", "agent", machine="pipbox", actor="test")
    db.session.commit()
summary = run_local_campaign(work / "campaign.yaml", work / "agent", app=app, token=token, timeout=900, log=None)
with app.app_context():
    versions = [(v.id, v.state) for v in db.session.query(ProfileVersion).order_by(ProfileVersion.id)]
print(json.dumps({"done": summary["done"], "rejected": summary["rejected"], "versions": versions,
                  "url": url}))
"""


@pytest.mark.mpi
def test_installed_copy_runs_a_campaign_end_to_end(installed, tmp_path):
    """The installed copy alone: `pgmpi campaign submit --dry-run` validates the file, the agent (local
    backend, Open MPI, 2 ranks) runs pgmpi-bench with a test-only interposer that slows PMPI_Allreduce at
    1024 B, uploads, the service analyses and the agent validates the candidate, and `pgmpi profile
    publish-candidate` publishes it.  pgmpi-bench and pgmpitune-check come from the lib/ build, as a site's
    modules provide them."""
    py, purelib, env = installed
    pgmpi = py.parent / "pgmpi"
    install = ROOT / "build" / "install"
    if not (install / "openmpi" / "bin" / "pgmpi-bench").exists():
        pytest.fail(f"{install}/openmpi/bin/pgmpi-bench missing: run `deploy/build-lib.sh all` (make test does)")
    so = delay_interposer.build(tmp_path, delay_ms=5)     # on its virtual clock: the validation decides at once
    (tmp_path / "campaign.yaml").write_text(f"""
name: pipcamp
machine: pipbox
backend: local
bench_root: {install}
modules:
  - mpi: openmpi
    mpirun: mpirun.openmpi -x LD_PRELOAD={so} -x PGMPI_TEST_DELAY_BYTES={SLOWED}
layouts: [{{nodes: 1, ppn: 2}}]
collectives: {{allreduce: {{sizes: [64, {SLOWED}, 8192]}}}}
algorithms: [default, allreduce_as_reduce_bcast]
repetitions: {{policy: fixed, nrep: 8}}
mpiruns: 4
validation: {{enabled: true, nrep: 8, mpiruns: 2, interleaved: true}}
""")
    env = dict(env, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PGMPITUNE_CHECK=str(install / "openmpi" / "bin" / "pgmpitune-check"))
    out = run([str(pgmpi), "campaign", "submit", "--dry-run", str(tmp_path / "campaign.yaml")], cwd=tmp_path, env=env)
    assert "launch" in out, out
    res = json.loads(run([str(py), "-c", END_TO_END, str(tmp_path)], cwd=tmp_path, env=env).splitlines()[-1])
    assert res["done"] and res["rejected"] == 0, res
    assert [s for _, s in res["versions"]] == ["validated"], res
    root = tmp_path / "profiles"
    out = run([str(pgmpi), "profile", "publish-candidate", str(res["versions"][0][0]), "--root", str(root),
               "--database-url", res["url"], "--actor", "pip-test"], cwd=tmp_path, env=env)
    assert "published version 1" in out, out
    current = root / "pipbox" / "openmpi-4.1.4" / "current"
    text = "".join(p.read_text() for p in current.glob("*.prf"))
    assert f"{SLOWED} {SLOWED}" in text and "allreduce_as_reduce_bcast" in text, text
