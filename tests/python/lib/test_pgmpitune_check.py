"""pgmpitune-check: the profile validator built on libpgmpitune's own reader (both MPI builds)."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi

FIXTURES = Path(__file__).resolve().parents[2] / "c" / "core" / "profiles"

# The 24 mock-ups (lib/docs/mockup-names.md); PGMPITuneLib's names where it has them.
PLANNED = {
    "allgather": ["allgather_as_gather_bcast", "allgather_as_alltoall", "allgather_as_allreduce",
                  "allgather_as_allgatherv"],
    "allreduce": ["allreduce_as_reduce_bcast", "allreduce_as_reducescatterblock_allgather",
                  "allreduce_as_reducescatter_allgatherv"],
    "alltoall": ["alltoall_as_alltoallv"],
    "bcast": ["bcast_as_allgatherv", "bcast_as_scatter_allgather"],
    "gather": ["gather_as_allgather", "gather_as_gatherv", "gather_as_reduce"],
    "reduce": ["reduce_as_allreduce", "reduce_as_reducescatterblock_gather", "reduce_as_reducescatter_gatherv"],
    "reducescatterblock": ["reducescatterblock_as_reduce_scatter", "reducescatterblock_as_reducescatter",
                           "reducescatterblock_as_allreduce"],
    "reducescatter": ["reducescatter_as_allreduce", "reducescatter_as_reduce_scatterv"],
    "scan": ["scan_as_exscan_reducelocal"],
    "scatter": ["scatter_as_bcast", "scatter_as_scatterv"],
}


def run(prefix: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(prefix / "bin" / "pgmpitune-check"), *args], capture_output=True, text=True,
                          timeout=60)


def test_listing1_and_extensions_are_valid(mpi_prefix):
    r = run(mpi_prefix, "-v", str(FIXTURES / "listing1"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"scatter_p1024\.prf: ok: MPI_Scatter p=1024\.\.1024, 8 range\(s\) \(PGMPITuneLib format\)", r.stdout)
    # several arguments form one set, as one profile directory: p=2 is covered twice -> conflict
    assert run(mpi_prefix, str(FIXTURES / "listing1"), str(FIXTURES / "range")).returncode == 1
    r = run(mpi_prefix, "-v", str(FIXTURES / "range"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"allreduce_p2-4\.prf: ok: MPI_Allreduce p=2\.\.4, 2 range\(s\)$", r.stdout, re.M)
    # unknown extension keys are notes, not errors
    assert re.search(r"allreduce_p2-4\.prf:4: note: unknown extension key 'some_future_key' ignored", r.stdout)


@pytest.mark.parametrize("case, message", [
    ("bad_truncated/allreduce_p2.prf", r":8: error: truncated: 2 of 3 ranges present"),
    ("bad_garbled/allreduce_p2.prf", r":8: error: range 2 of 2: expected '<first byte> <last byte> <id>'"),
    ("bad_overlap/allreduce_p2.prf", r":\d+: error: overlapping ranges 0\.\.100 and 50\.\.2000"),
    ("bad_wrongp/allreduce_p2.prf", r":3: error: number of processes: expected an integer > 0, got '-2'"),
    ("bad_layout/allreduce_p4.prf", r":3: error: layout 2x3 is 6 processes, the profile is for 4\.\.4"),
    ("bad_unknownalg/allreduce_p2.prf",
     r":4: error: unknown mock-up 'allreduce_as_allreduce_lane' for MPI_Allreduce \(valid: default, "),
])
def test_bad_profiles_fail_with_file_line(mpi_prefix, case, message):
    r = run(mpi_prefix, str(FIXTURES / case))
    assert r.returncode == 1, r.stdout
    assert re.search(re.escape(str(FIXTURES / case)) + message, r.stdout), r.stdout
    assert "1 error(s)" in r.stdout


def test_directory_reports_every_bad_file_and_keeps_good_ones_quiet(mpi_prefix, tmp_path):
    for d in ("bad_truncated", "bad_overlap"):
        for f in (FIXTURES / d).glob("*.prf"):
            shutil.copy(f, tmp_path / f"{d}_{f.name}")
    (tmp_path / "notes.txt").write_text("not a profile\n")          # ignored: not *.prf
    (tmp_path / ".tmp.prf").write_text("garbage\n")                  # ignored: hidden
    r = run(mpi_prefix, str(tmp_path))
    assert r.returncode == 1
    errors = [l for l in r.stdout.splitlines() if ": error: " in l]
    assert len(errors) == 2, r.stdout
    assert "bcast_p2.prf" not in r.stdout                           # the valid one


def test_conflicting_process_ranges(mpi_prefix, tmp_path):
    shutil.copy(FIXTURES / "perp" / "allreduce_p2.prf", tmp_path / "a_allreduce_p2.prf")
    shutil.copy(FIXTURES / "range" / "allreduce_p2-4.prf", tmp_path / "b_allreduce_p2-4.prf")
    r = run(mpi_prefix, str(tmp_path))
    assert r.returncode == 1
    assert re.search(r"b_allreduce_p2-4\.prf:\d+: error: MPI_Allreduce profile for p=2\.\.4 conflicts with "
                     r".*a_allreduce_p2\.prf \(p=2\.\.2\)", r.stdout), r.stdout


def test_reduce_scatter_block_genuine_profile_is_scaled_to_our_message_size(mpi_prefix, tmp_path):
    # PGMPITuneLib measured one block; a genuine file (no profile_version) for p=4 covering block bytes
    # 8..8 must not overlap with 9..9 after scaling -- and the checker accepts both forms.
    (tmp_path / "rsb.prf").write_text("MPI_Reduce_scatter_block\n4\n1\n1 reducescatterblock_as_allreduce\n"
                                      "2\n8 8 1\n9 9 1\n")
    r = run(mpi_prefix, "-v", str(tmp_path / "rsb.prf"))
    assert r.returncode == 0, r.stdout


def test_missing_path_and_usage(mpi_prefix, tmp_path):
    r = run(mpi_prefix, str(tmp_path / "nope"))
    assert r.returncode == 1 and "No such file or directory" in r.stdout
    assert run(mpi_prefix).returncode == 2
    assert run(mpi_prefix, "--bogus").returncode == 2


def test_list_json_matches_collectives_def_and_names(mpi_prefix, repo_root):
    r = run(mpi_prefix, "--list", "--json", "--p=4", "--bytes=1024")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    defs = re.findall(r'^PGMPI_COLLECTIVE\(\w+,\s*"(\w+)",\s*"(\w+)",\s*(\w+)\)',
                      (repo_root / "lib/src/core/collectives.def").read_text(), re.M)
    assert [(c["key"], c["mpi_name"], c["size_rule"]) for c in data["collectives"]] == defs
    for c in data["collectives"]:
        names = [a["name"] for a in c["algorithms"]]
        assert names[0] == "default"
        assert all(n.startswith(c["key"] + "_as_") for n in names[1:]), names
        assert set(PLANNED[c["key"]]) <= set(names), (c["key"], names)


def test_list_evaluates_memory_needs(mpi_prefix):
    def need(p):
        data = json.loads(run(mpi_prefix, "--list", "--json", f"--p={p}", "--bytes=1000").stdout)
        c = next(c for c in data["collectives"] if c["key"] == "allgather")
        return next(a for a in c["algorithms"] if a["name"] == "allgather_as_alltoall")["msg_pool_bytes"]
    assert need(8) > need(2) > 0                                   # Alltoall mock-up needs p*n
    text = run(mpi_prefix, "--list").stdout
    assert re.search(r"^allreduce MPI_Allreduce size=BLOCK$", text, re.M)


DT_OK = "#@pgmpi datatype_profile_version 1\n# comment\nreplace 0123456789abcdef contig evidence=x\n"


@pytest.mark.parametrize("text, message", [
    ("replace fedcba9876543210 contig\n", r":1: error: a replace line before '#@pgmpi datatype_profile_version 1'"),
    ("#@pgmpi datatype_profile_version 2\n", r":1: error: datatype profile version 2 is newer than this library"),
    ("#@pgmpi datatype_profile_version 1\nreplace FEDCBA9876543210 contig\n", r":2: error: replace: the signature must"),
    ("#@pgmpi datatype_profile_version 1\nreplace fedcba9876543210 fast\n",
     r":2: error: replace: unknown description 'fast' \(valid: contiguous, vector, indexed_block, indexed, "),
    ("#@pgmpi datatype_profile_version 1\nreplace fedcba9876543210 contig\nreplace fedcba9876543210 vector\n",
     r":3: error: signature fedcba9876543210 listed twice with different descriptions"),
    ("#@pgmpi datatype_profile_version 1\nswap fedcba9876543210 contig\n", r":2: error: unknown line 'swap'"),
])
def test_datatype_profiles_are_validated(mpi_prefix, tmp_path, text, message):
    """lib/docs/profile-format.md, "Datatype profiles": a bad *.dtprf is one file:line error (the library
    ignores that file with one warning); a good one next to it and the .prf files still count."""
    shutil.copy(FIXTURES / "perp" / "allreduce_p2.prf", tmp_path / "allreduce_p2.prf")
    (tmp_path / "good.dtprf").write_text(DT_OK)
    (tmp_path / "zbad.dtprf").write_text(text)
    r = run(mpi_prefix, "-v", str(tmp_path))
    assert r.returncode == 1, r.stdout
    assert re.search(re.escape(str(tmp_path / "zbad.dtprf")) + message, r.stdout), r.stdout
    assert len([l for l in r.stdout.splitlines() if ": error: " in l]) == 1, r.stdout
    assert "datatype profiles: ok: 1 file(s), 1 replacement(s)" in r.stdout
    good = run(mpi_prefix, str(tmp_path / "good.dtprf"))
    assert good.returncode == 0, good.stdout
