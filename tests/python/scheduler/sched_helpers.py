"""Helpers and fixtures of the scheduler tests: Lmod modulefiles for Debian's two MPIs, a real service on a scratch
PostgreSQL database served on 127.0.0.1 (restartable on the same port for the service-down test),
and tiny campaign files."""
from __future__ import annotations

import os
import subprocess
import threading
import uuid
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
MPI_BINARIES = {
    "openmpi": {"mpicc": "mpicc.openmpi", "mpicxx": "mpicxx.openmpi", "mpif90": "mpif90.openmpi",
                "mpirun": "mpirun.openmpi", "mpiexec": "mpiexec.openmpi"},
    "mpich": {"mpicc": "mpicc.mpich", "mpicxx": "mpicxx.mpich", "mpif90": "mpif90.mpich",
              "mpirun": "mpirun.mpich", "mpiexec": "mpiexec.mpich", "mpiexec.hydra": "mpiexec.hydra",
              "hydra_pmi_proxy": "hydra_pmi_proxy", "hydra_nameserver": "hydra_nameserver",
              "hydra_persist": "hydra_persist"},
}
VERSIONS = {"openmpi": "4.1.4", "mpich": "4.0.2"}


def write_mpi_modules(top: Path) -> Path:
    """Shim prefixes (bin/ with unsuffixed names -> Debian's suffixed binaries) and Lmod modulefiles
    openmpi/4.1.4 and mpich/4.0.2 (family "mpi"); returns the MODULEPATH entry."""
    modpath = top / "modulefiles"
    for mpi, links in MPI_BINARIES.items():
        prefix = top / "shims" / mpi
        (prefix / "bin").mkdir(parents=True, exist_ok=True)
        for name, target in links.items():
            link = prefix / "bin" / name
            if not link.is_symlink():
                link.symlink_to(Path("/usr/bin") / target)
        (modpath / mpi).mkdir(parents=True, exist_ok=True)
        (modpath / mpi / f"{VERSIONS[mpi]}.lua").write_text(f'''-- {mpi} {VERSIONS[mpi]} from Debian (test module of pgmpi-site)
whatis("Name: {mpi}")
whatis("Version: {VERSIONS[mpi]}")
family("mpi")
local prefix = "{prefix}"
prepend_path("PATH", pathJoin(prefix, "bin"))
setenv("MPI_HOME", prefix)
setenv("MPICC", pathJoin(prefix, "bin", "mpicc"))
setenv("MPIRUN", pathJoin(prefix, "bin", "mpirun"))
setenv("PGMPI_MPI_FLAVOR", "{mpi}")
''')
    return modpath


@pytest.fixture(scope="session")
def mpi_modulepath(tmp_path_factory, lmod_init) -> Path:
    return write_mpi_modules(tmp_path_factory.mktemp("lmod"))


@pytest.fixture(scope="session")
def bench_root() -> Path:
    for mpi in ("openmpi", "mpich"):
        p = ROOT / "build" / "install" / mpi / "bin" / "pgmpi-bench"
        if not p.exists():
            pytest.fail(f"{p} missing: run `deploy/build-lib.sh all` (make test does)")
    return ROOT / "build" / "install"


class LiveService:
    """create_app on its own database, served by werkzeug on 127.0.0.1 in a thread; stop()/start()
    keep the port, so the agent sees the same URL go away and come back."""

    def __init__(self, app, port: int = 0):
        self.app = app
        self.port = port
        self.server = None
        self.thread = None

    def start(self):
        from werkzeug.serving import make_server
        self.server = make_server("127.0.0.1", self.port, self.app, threaded=True)
        self.port = self.server.server_port
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.thread.join(5)
            self.server = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def query(self, fn):
        with self.app.app_context():
            return fn()


@pytest.fixture(scope="session")
def pg_database(postgres_url):
    import psycopg
    from sqlalchemy.engine import make_url
    u = make_url(postgres_url)
    info = f"host={u.host} port={u.port or 5432} user={u.username} password={u.password} dbname={u.database}"
    name = f"pgmpi_sched_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(info, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield u.set(database=name).render_as_string(hide_password=False)
    with psycopg.connect(info, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def service(pg_database, tmp_path_factory):
    """One live service for the scheduler tests (each test uses its own machine name)."""
    import flask_migrate
    from service.app import create_app
    app = create_app({"SQLALCHEMY_DATABASE_URI": pg_database, "SECRET_KEY": "sched-test",
                      "INSTANCE_PATH": str(tmp_path_factory.mktemp("instance"))})
    with app.app_context():
        flask_migrate.upgrade(directory=str(ROOT / "migrations"))
    live = LiveService(app).start()
    yield live
    live.stop()


def add_machine(live: LiveService, machine: str, role: str = "admin") -> str:
    from service.auth import create_token
    from service.store.db import db
    from service.store.models import Machine

    def _do():
        db.session.add(Machine(name=machine, nodes=1, cores_per_node=8, interconnect="shm", notes="test"))
        db.session.flush()
        _, secret = create_token(f"agent-{machine}", role, machine if role == "agent" else None, actor="test")
        db.session.commit()
        return secret
    return live.query(_do)


def campaign_file(path: Path, **fields) -> Path:
    path.write_text(yaml.safe_dump(fields, sort_keys=False))
    return path


def tiny_campaign(name: str, machine: str, modulepath: Path, bench_root: Path, modules=None, **over) -> dict:
    modules = modules or [
        {"name": "openmpi/4.1.4", "mpi": "openmpi", "modulepath": [str(modulepath)]},
        {"name": "mpich/4.0.2", "mpi": "mpich", "modulepath": [str(modulepath)]},
    ]
    c = {
        "name": name, "machine": machine, "backend": "slurm",
        "modules": modules,
        "layouts": [{"nodes": 1, "ppn": 2}],
        "collectives": {"allreduce": {"sizes": [8, 1024, 65536]}, "bcast": {"sizes": [8, 1024, 65536]}},
        "algorithms": "all",
        "repetitions": {"policy": "fixed", "nrep": 10},
        "mpiruns": 2,
        "slurm": {"partition": "debug", "walltime": "00:05:00"},
        "retry": {"max_attempts": 2, "states": ["FAILED", "NODE_FAIL"]},
        "validation": {"enabled": False},
        "bench_root": str(bench_root),
    }
    c.update(over)
    return c


def scontrol_jobs(env) -> str:
    return subprocess.run(["scontrol", "show", "job", "-o"], capture_output=True, text=True, env=env).stdout
