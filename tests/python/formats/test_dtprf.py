"""Datatype profiles (.dtprf): the Python writer's files are read back by the Python reader and accepted by the
library's own checker (pgmpitune-check, the C reader); each error the format names is refused by both."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pgmpi_formats.dtprf import DtProfileFormatError, format_dtprf, parse_dtprf

ROOT = Path(__file__).resolve().parents[3]
SIG1, SIG2 = "619a6cb1d5899959", "1fffc325bf411057"


def checker() -> Path:
    p = ROOT / "build" / "install" / "openmpi" / "bin" / "pgmpitune-check"
    if not p.exists():
        pytest.fail(f"{p} missing: run `deploy/build-lib.sh openmpi` (make test does)")
    return p


def test_written_file_reads_back_and_the_library_accepts_it(tmp_path):
    text = format_dtprf([(SIG1, "indexed", {"speedup": "1.16-1.24", "evidence": "dt_bcast_int_tiled_v1_a2:nested@3200"}),
                         (SIG2, "struct_flat", {})], comments=["made by a test", "two rules"])
    prof = parse_dtprf(text, "datatypes.dtprf")
    assert prof["version"] == 1
    assert prof["rules"] == [(SIG1, "indexed", {"speedup": "1.16-1.24", "evidence": "dt_bcast_int_tiled_v1_a2:nested@3200"}),
                             (SIG2, "struct_flat", {})]
    (tmp_path / "datatypes.dtprf").write_text(text)
    r = subprocess.run([str(checker()), str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("body, words", [
    (f"replace {SIG1} indexed\n", "before"),
    (f"#@pgmpi datatype_profile_version 1\nreplace {SIG1[:-1]} indexed\n", "16 lowercase hex"),
    (f"#@pgmpi datatype_profile_version 1\nreplace {SIG1} nested\n", "unknown description"),
    (f"#@pgmpi datatype_profile_version 1\nreplace {SIG1} indexed speedup\n", "not key=value"),
    (f"#@pgmpi datatype_profile_version 1\nreplace {SIG1} indexed\nreplace {SIG1} vector\n", "twice"),
    ("#@pgmpi datatype_profile_version 2\n", "newer"),
    (f"#@pgmpi datatype_profile_version 1\nswap {SIG1} indexed\n", "unknown line"),
])
def test_errors_refused_by_both_readers(tmp_path, body, words):
    with pytest.raises(DtProfileFormatError, match=words):
        parse_dtprf(body, "datatypes.dtprf")
    (tmp_path / "datatypes.dtprf").write_text(body)
    r = subprocess.run([str(checker()), str(tmp_path)], capture_output=True, text=True)
    assert r.returncode != 0, f"pgmpitune-check accepted:\n{body}"


def test_writer_refuses_what_the_format_forbids():
    for rules in ([(SIG1, "nested", {})], [("XYZ", "indexed", {})], [(SIG1, "indexed", {}), (SIG1, "vector", {})]):
        with pytest.raises(DtProfileFormatError):
            format_dtprf(rules)


def test_published_with_the_profiles_checked_and_rolled_back_together(tmp_path):
    """A datatype profile goes into the versioned profile set with the .prf files: pgmpitune-check (the
    library's reader) must accept it, the swap is one, and a rollback swaps it back with them."""
    from service.profiles import publish as pub
    prf = ("# pgtune profile\n#@pgmpi profile_version 1\nMPI_Bcast\n2 # nb. of processes\n1 # nb. of mock-up impl.\n"
           "1 bcast_as_packed_bcast\n1 # nb. of ranges\n262144 262144 1\n")
    v1 = {"bcast_p2.prf": prf, "datatypes.dtprf": format_dtprf([(SIG1, "indexed", {})])}
    v2 = {"bcast_p2.prf": prf, "datatypes.dtprf": format_dtprf([(SIG1, "struct_flat", {}), (SIG2, "vector", {})])}
    kw = dict(actor="t", validated=True, checker=[str(checker())])
    pub.publish(tmp_path, "m1", "openmpi", "4.1.4", v1, **kw)
    pub.publish(tmp_path, "m1", "openmpi", "4.1.4", v2, **kw)
    cur = tmp_path / "m1" / "openmpi-4.1.4" / "current"
    assert {p.name: p.read_text() for p in cur.iterdir()} == v2
    with pytest.raises(pub.PublishError):
        pub.publish(tmp_path, "m1", "openmpi", "4.1.4", {**v1, "datatypes.dtprf": "replace x y\n"}, **kw)
    pub.rollback(tmp_path, "m1", "openmpi", "4.1.4", actor="t")
    assert {p.name: p.read_text() for p in cur.iterdir()} == v1
