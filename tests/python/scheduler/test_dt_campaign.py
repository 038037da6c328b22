"""A campaign file's `datatypes:` section: planned as pgmpi-dtbench launches (one per mpirun and base type, the
control arm added to a description list), refused with file:line and the valid choices when wrong, and a
datatype candidate validated by pgmpi-dtbench in separate launches without and with the profile."""
from __future__ import annotations

import subprocess

import pytest

from scheduler.campaign import CampaignError, load_campaign
from scheduler.planner import plan
from scheduler.validation import validation_job

BASE = """name: dtc
machine: box
backend: local
modules:
  - {mpi: openmpi}
layouts: [{nodes: 1, ppn: 2}]
mpiruns: 2
repetitions: {policy: fixed, nrep: 10}
"""


# a datatype candidate: a .prf of the datatype campaign and a replacement rule
DT_CANDIDATE = {
    "bcast_p2.prf": "# pgtune profile\n#@pgmpi profile_version 1\n#@pgmpi source datatypes\nMPI_Bcast\n"
    "2 # nb. of processes\n1 # nb. of mock-up impl.\n1 bcast_as_packed_bcast\n1 # nb. of ranges\n3200 3200 1\n",
    "datatypes.dtprf": "#@pgmpi datatype_profile_version 1\nreplace 619a6cb1d5899959 indexed "
    "evidence=dt_bcast_int_tiled_v1_a2:nested@3200\n"}


def test_datatypes_section_plans_dtbench_launches(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(BASE + """datatypes:
  patterns: [bcast, allgather]
  layouts: [tiled, bucket]
  variants: [1]
  blocksizes: [2]
  basetypes: [MPI_INT, MPI_DOUBLE]
  sizes: [3200]
  descriptions: [typed, packed, repaired]
""")
    c = load_campaign(f)
    (job,) = plan(c)
    assert [(ln.index, ln.output, ln.program) for ln in job.launches] == [
        (0, "dt-0-int.txt", "pgmpi-dtbench"), (0, "dt-0-double.txt", "pgmpi-dtbench"),
        (1, "dt-1-int.txt", "pgmpi-dtbench"), (1, "dt-1-double.txt", "pgmpi-dtbench")]
    argv = job.launches[3].argv
    for a in ("--patterns=bcast,allgather", "--layouts=tiled,bucket", "--variants=1", "--blocksizes=2",
              "--sizes=3200", "--descriptions=typed,packed,repaired,typed_control", "--datatype=MPI_DOUBLE",
              "--nrep=10", "--mpirun-index=1", "--campaign=dtc", "--machine=box", "--output=dt-1-double.txt"):
        assert a in argv, (a, argv)
    from scheduler.backends import render_script
    script = render_script(job, tmp_path / "out", "n", c.bench_for(job.module), False)
    assert f"{c.bench_for(job.module).parent / 'pgmpi-dtbench'} --patterns=bcast,allgather" in script

    v = validation_job(c, {"id": 7, "library": "openmpi", "files": DT_CANDIDATE}, tmp_path / "prof", 600)
    roles = [(ln.role, ln.program, ln.env.get("PGMPITUNE_PROFILE_DIR")) for ln in v.launches]
    assert roles[:2] == [("default", "pgmpi-dtbench", None), ("tuned", "pgmpi-dtbench", str(tmp_path / "prof"))]
    assert len(v.launches) == c.validation.mpiruns * 2 * 2       # validation mpiruns x base types x arms
    assert "--descriptions=typed,nested" in v.launches[0].argv and "--descriptions=tuned,nested" in v.launches[1].argv


@pytest.mark.parametrize("section, words", [
    ("datatypes:\n  patterns: [bcats]\n", [":10:", "datatypes.patterns[0]", "'pingpong', 'bcast' or 'allgather'"]),
    ("datatypes:\n  layouts: [tiled]\n  descriptions: [packed]\n", ["datatypes", "typed"]),
    ("datatypes:\n  sizes: [0]\n", ["datatypes.sizes", ">= 1"]),
    ("datatypes:\n  basetypes: [MPI_FLOAT]\n", ["datatypes.basetypes[0]", "'MPI_INT' or 'MPI_DOUBLE'"]),
    ("datatypes:\n  colour: red\n", ["datatypes.colour", "unknown field", "patterns"]),
    ("", ["collectives", "datatypes section"]),
])
def test_bad_datatypes_section_names_file_line_and_choices(tmp_path, section, words):
    f = tmp_path / "c.yaml"
    f.write_text(BASE + section)
    with pytest.raises(CampaignError) as e:
        load_campaign(f)
    for w in words:
        assert w in str(e.value), str(e.value)


@pytest.mark.mpi
def test_dtbench_measures_with_the_campaigns_sync(tmp_path, mpi, mpi_prefix):
    """The campaign's sync: reaches pgmpi-dtbench (it used to measure with its default whatever the campaign
    said): its launches and a datatype candidate's validation launches carry it (window with its size), and a
    planned launch records the method in its raw file, where the analysis reads it (#@procsync)."""
    section = """datatypes:
  patterns: [bcast]
  layouts: [tiled]
  variants: [1]
  blocksizes: [2]
  basetypes: [MPI_INT]
  sizes: [64]
  descriptions: [typed, packed]
"""
    f = tmp_path / "c.yaml"
    f.write_text(BASE + "sync: window\nwindow_size_us: 5000\n" + section)
    (job,) = plan(load_campaign(f))
    assert all({"--proc-sync=window", "--window-size=5000"} <= set(ln.argv) for ln in job.launches)
    f.write_text(BASE + "sync: roundtime\n" + section)
    c = load_campaign(f)
    (job,) = plan(c)
    assert all("--proc-sync=roundtime" in ln.argv for ln in job.launches), [ln.argv for ln in job.launches]
    v = validation_job(c, {"id": 7, "library": "openmpi", "files": DT_CANDIDATE}, tmp_path / "prof", 600)
    assert v.launches and all("--proc-sync=roundtime" in ln.argv for ln in v.launches)
    out = tmp_path / "dt.txt"
    argv = [a for a in job.launches[0].argv if not a.startswith("--output=")] + [f"--output={out}"]
    launcher = (["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe"] if mpi == "openmpi"
                else ["mpirun.mpich"])
    r = subprocess.run(launcher + ["-np", "2", str(mpi_prefix / "bin" / "pgmpi-dtbench"), *argv],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "#@procsync=roundtime\n" in out.read_text()
