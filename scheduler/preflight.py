"""Checks run before anything is submitted (`pgmpi campaign submit`, also with --dry-run): a module that
does not exist would otherwise fail only inside the job, once per retry, after a queue wait each time."""
from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

from . import launchers
from .backends import LMOD_INIT
from .campaign import Campaign


def module_problems(c: Campaign, timeout: float = 60) -> list[str]:
    """One message per module of the campaign that Lmod on this host cannot load (empty: all fine).

    Lmod's `module is-avail NAME` answers with its exit status, after the module's own `modulepath`
    entries are added, as the job script does (scheduler/backends/__init__.py render_script)."""
    problems = []
    named = [m for m in c.modules if m.name]
    if named and not Path(LMOD_INIT).exists():
        return [f"modules {', '.join(m.name for m in named)}: cannot check them, Lmod is not installed "
                f"here ({LMOD_INIT}); submit from a host that has the site's modules"]
    for m in named:
        lines = [f". {LMOD_INIT}"] + [f"module use {shlex.quote(p)}" for p in m.modulepath] \
            + [f"module is-avail {shlex.quote(m.name)}"]
        r = subprocess.run(["bash", "-c", "\n".join(lines)], capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            where = f" (with module use {', '.join(m.modulepath)})" if m.modulepath else ""
            problems.append(f"modules: {m.name!r} (mpi {m.mpi}) is not available{where}; "
                            f"`module avail` lists the ones that are")
    for m in c.modules:
        if not m.name and not m.mpirun and c.backend == "local":
            run = launchers.library(m.mpi).mpirun
            if shutil.which(run) is None:
                problems.append(f"modules: mpi {m.mpi} without a module needs {run} (not found; "
                                "deploy/install-mpis.sh installs the libraries of deploy/mpi-libraries.tsv)")
    return problems
