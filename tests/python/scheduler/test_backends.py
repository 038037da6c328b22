"""The registry of scheduler backends (scheduler/backends/): a new backend is one file that registers itself,
the campaign file accepts exactly the registered names, and every backend writes the one job template."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scheduler import backends
from scheduler.campaign import CampaignError, load_campaign

ROOT = Path(__file__).resolve().parents[3]

NEW_BACKEND = '''"""A backend that runs the job script with plain bash, in the foreground (a worked example)."""
import subprocess

from . import Backend, Status, read_marker, register


@register
class ForegroundBackend(Backend):
    name = "foreground"

    def directives(self, job, outdir, name):
        return [f"# foreground job {name}"]

    def start(self, script, job, attempt_dir):
        subprocess.run(["bash", str(script)], cwd=attempt_dir, env=self.env)
        return "fg-1"

    def poll(self, jobs):
        return {i: read_marker(d) or Status("FAILED", "no marker") for i, d in jobs.items()}

    def cancel(self, backend_id):
        pass
'''


def test_registered_backends():
    assert backends.names() == ["local", "slurm"]
    assert backends.make_backend(None, "local").name == "local"
    with pytest.raises(ValueError, match="unknown backend 'pbs'; valid: local, slurm"):
        backends.make_backend(None, "pbs")


def test_campaign_refuses_an_unknown_backend(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("name: c\nmachine: m\nbackend: pbs\nmodules: [{mpi: openmpi}]\nlayouts: [{nodes: 1, ppn: 2}]\n"
                 "collectives: {allreduce: {}}\n")
    with pytest.raises(CampaignError, match=r"c.yaml:3: backend: .*unknown backend 'pbs'; valid: local, slurm"):
        load_campaign(f)


def test_a_new_backend_file_registers_itself(tmp_path):
    """CONTRIBUTING's recipe "A scheduler backend": one file in scheduler/backends/, nothing else. The campaign
    names it, make_backend builds it, and it runs the one job template with its own directives."""
    shutil.copytree(ROOT / "scheduler", tmp_path / "scheduler", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "scheduler" / "backends" / "foreground.py").write_text(NEW_BACKEND)
    (tmp_path / "c.yaml").write_text(
        "name: c\nmachine: m\nbackend: foreground\nmodules: [{mpi: openmpi, mpirun: 'true'}]\n"
        "layouts: [{nodes: 1, ppn: 2}]\ncollectives: {allreduce: {sizes: [8]}}\nmpiruns: 1\n")
    code = ("from pathlib import Path\n"
            "from scheduler.campaign import load_campaign\nfrom scheduler.backends import make_backend\n"
            "from scheduler.planner import plan\n"
            "c = load_campaign('c.yaml'); b = make_backend(c); job = plan(c)[0]\n"
            "bid = b.submit(job, Path('job'), 'n', Path('/bin/true'))\n"
            "print(b.name, bid, b.poll({bid: Path('job')})[bid].state)\n"
            "print(Path('job/job.sh').read_text().splitlines()[1])\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    # `true` writes no result file: the template's own check fails the job, the backend reports it
    assert out.stdout.splitlines() == ["foreground fg-1 FAILED", "# foreground job n"]
