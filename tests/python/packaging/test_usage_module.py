"""The pgmpitunelib module switches usage recording on from the site file (usage_dir, usage_period,
usage_identity in site.conf; pgmpitune-site.lua), off by default: after `module load` a job writes one usage
record into the site's spool, with the period and identity the admin chose; without usage_dir nothing is set
and nothing written; a value the library would not take is named with the file and the valid choices and
left to the library's default (docs/usage.md, docs/configuration.md)."""
from __future__ import annotations

import re

import pytest

from packaging_helpers import ROOT, clean_env, lmod_shell
from plain_module import module_tree

pytestmark = [pytest.mark.mpi, pytest.mark.lmod]
VARS = ("PGMPITUNE_USAGE_DIR", "PGMPITUNE_USAGE_PERIOD", "PGMPITUNE_USAGE_IDENTITY")


def _load(tmp_path, conf: str, job: str = "") -> tuple[dict, str]:
    (tmp_path / "site.conf").write_text(conf)
    env = clean_env(MODULEPATH=str(tmp_path / "mods"), PGMPI_SITE_CONFIG=str(tmp_path / "site.conf"),
                    PGMPI_SITE_MACHINE="m1", OMPI_MCA_mpi_yield_when_idle="1")
    res = lmod_shell(f"module load pgmpitunelib\nenv | grep -E '^({'|'.join(VARS)})=' | sed 's/^/SET /' || true\n{job}",
                     env=env)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    out = " ".join(out.split())         # Lmod wraps its messages
    return dict(re.findall(r"^SET (\w+)=(.*)$", res.stdout, re.M)), out


def test_module_records_usage_only_when_the_site_file_says_so(tmp_path):
    install = ROOT / "build" / "install" / "openmpi"
    if not (install / "bin" / "pgmpi-bench").exists():
        pytest.fail(f"{install}/bin/pgmpi-bench missing: run deploy/build-lib.sh openmpi")
    module_tree(tmp_path, "openmpi")
    spool = tmp_path / "spool"
    spool.mkdir()
    job = (f"mpirun.openmpi -np 2 --oversubscribe pgmpi-bench --calls=allreduce --algorithms=default --sizes=64 "
           f"--nrep=4 --output={tmp_path}/out.txt")
    got, out = _load(tmp_path, f"profile_root = {tmp_path}/profiles\nusage_dir = {spool}\nusage_period = 1\n"
                               "usage_identity = job,exe  # the admin's choice\n", job)
    assert got == {"PGMPITUNE_USAGE_DIR": str(spool), "PGMPITUNE_USAGE_PERIOD": "1",
                   "PGMPITUNE_USAGE_IDENTITY": "job,exe"}, out
    records = [p for p in spool.iterdir() if not p.name.startswith(".")]
    assert len(records) == 1, (list(spool.iterdir()), out)
    from pgmpi_formats.usage import parse_usage
    rec = parse_usage(records[0].read_text())
    assert (str(rec.header.get("sample_period")), rec.header.get("identity"), rec.header.get("exe")) == ("1", "job,exe", "pgmpi-bench"), rec.header
    assert any(c.collective == "MPI_Allreduce" and c.bytes_lo == 64 for c in rec.cells), rec.cells

    # off by default: a site file without usage_dir sets nothing and the job writes nothing
    got, out = _load(tmp_path, f"profile_root = {tmp_path}/profiles\n", job.replace("out.txt", "out2.txt"))
    assert got == {} and sorted(spool.iterdir()) == records, out


def test_module_names_a_bad_usage_setting_and_leaves_the_library_default(tmp_path):
    module_tree(tmp_path, "openmpi")
    got, out = _load(tmp_path, f"usage_dir = {tmp_path}\nusage_period = 0\nusage_identity = job,email\n")
    assert got == {"PGMPITUNE_USAGE_DIR": str(tmp_path)}, out
    assert f"{tmp_path}/site.conf: usage_period = 0: a whole number from 1 to 1048576" in out, out
    assert "usage_identity = job,email: any of job, user, exe, none" in out, out
    got, out = _load(tmp_path, "usage_dir = spool/relative\n")
    assert got == {} and "is not an absolute path; usage recording stays off" in out, out
