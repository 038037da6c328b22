"""Intel MPI 2021.13's own algorithm choice (I_MPI_ADJUST_<COLL> with message-size and process ranges): written
from decisions and read back against the installed version's presets (impi_info -v); a corrupt file and one
for another version refused; the written variables run a user program with correct results, and a value the
reader refuses is one Intel MPI itself ignores (its I_MPI_DEBUG message says so)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pgmpi_formats import impi_adjust as ia
from pgmpi_formats import mpi_libraries as ml
from pgmpi_formats.ompi_rules import Decision

PROBE = Path(__file__).with_name("csel_probe.c")


@pytest.fixture(scope="module")
def intel(tmp_path_factory):
    lib = ml.mpi_library("intelmpi")
    if not lib.installed:
        pytest.fail(f"intelmpi: {lib.mpicc} missing (deploy/install-mpis.sh installs it)")
    env = lib.environment()
    for k in [k for k in env if k.startswith("I_MPI_ADJUST_")]:
        del env[k]
    probe = tmp_path_factory.mktemp("impi") / "probe"
    subprocess.run([str(lib.mpicc), "-O1", "-o", str(probe), str(PROBE)], env=env, check=True, timeout=120)
    return lib, env, ia.discover(env), probe


DECS = [Decision("allreduce", 2, 8, "native:8"), Decision("allreduce", 2, 1024, "native:1"),
        Decision("allreduce", 2, 65536, "native:1"), Decision("bcast", 2, 8, "native:1"),
        Decision("allgather", 2, 8, "native:2"), Decision("allgather", 2, 4096, "native:2")]


def test_written_and_read_back(intel):
    _lib, _env, d, _probe = intel
    assert d.version == "2021.13" and d.presets["allreduce"] == 32 and d.presets["allgather"] == 6
    text = ia.write(DECS, d)
    assert "I_MPI_ADJUST_ALLREDUCE=8:0-1023@2-2;1:1024-2147483647@2-2\n" in text     # equal neighbours merge
    assert "I_MPI_ADJUST_ALLGATHER=2:0-2147483647@2-2\n" in text
    adj = ia.parse(text, "gen.impi", d)
    assert [adj.lookup("allreduce", 2, n) for n in (8, 1023, 1024, 65535, 65536)] == [8, 8, 1, 1, 1]
    assert adj.lookup("allreduce", 4, 8) == 0                            # only the measured process count
    with pytest.raises(ValueError, match="presets 1-6, not 7"):
        ia.write([Decision("allgather", 2, 8, "native:7")], d)


def test_a_collective_where_the_default_won_is_left_to_the_library(intel):
    """No gap: once I_MPI_ADJUST_ALLREDUCE is set, Intel MPI 2021.13 runs another algorithm outside every range
    (fingerprints: 16 B, 64 B-2 KiB change with only 3:4096-... set), so a default cell cannot stay a gap; the
    collective gets no variable, with the reason in the file, and a decision with nothing exact is refused."""
    d = intel[2]
    gapped = [Decision("allreduce", 2, 8, "native:3"), Decision("allreduce", 2, 4096, "default"),
              Decision("allreduce", 2, 65536, "native:3")]
    text = ia.write(gapped + [Decision("bcast", 2, 8, "native:1"), Decision("bcast", 2, 4096, "native:2")], d)
    adj = ia.parse(text, "gen.impi", d)
    assert set(adj.environment()) == {"I_MPI_ADJUST_BCAST"}, text
    assert adj.environment()["I_MPI_ADJUST_BCAST"] == "1:0-4095@2-2;2:4096-2147483647@2-2"
    assert ("# left to the library: allreduce: the library's default won at 4096 B (p=2) and no preset was "
            "measured as fast there;") in text, text
    kept, left = ia.trim(gapped)
    assert kept == [] and set(left) == {"allreduce"}
    with pytest.raises(ValueError, match=r"nothing Intel MPI can hold exactly: allreduce: the library's default won "
                                         r"at 4096 B \(p=2\)"):
        ia.write(gapped, d)
    # a process count where the default won leaves the whole variable out too (one variable for every count)
    assert set(ia.trim([Decision("allreduce", 2, 8, "native:3"), Decision("allreduce", 4, 8, "default")])[1]) \
        == {"allreduce"}


@pytest.mark.parametrize("line,why", [
    ("I_MPI_ADJUST_ALLREDUCE=33:0-1023@2-2", "preset 33 is outside 1-32 of Intel MPI 2021.13"),
    ("I_MPI_ADJUST_ALLREDUCE=8:0-1023", "is not <preset>:<lo>-<hi>@<pmin>-<pmax>"),
    ("I_MPI_ADJUST_ALLREDUCE=8:1024-0@2-2", "inverted"),
    ("I_MPI_ADJUST_ALLREDUCE=8:0-1023@2-2;1:512-4096@2-2", "overlaps 8:0-1023@2-2"),
    ("I_MPI_ADJUST_ALLREDUC=8:0-1023@2-2", "not an I_MPI_ADJUST variable"),
])
def test_a_corrupt_file_is_refused_with_the_line(intel, line, why):
    d = intel[2]
    with pytest.raises(ia.AdjustError) as e:
        ia.parse(f"# Intel MPI 2021.13 I_MPI_ADJUST\n{line}\n", "bad.impi", d)
    assert e.value.line == 2 and why in e.value.message, str(e.value)


def test_a_file_for_another_version_is_refused(intel):
    d = intel[2]
    text = ia.write(DECS, d).replace("# Intel MPI 2021.13", "# Intel MPI 2021.14", 1)
    with pytest.raises(ia.AdjustError, match="^x.impi:1: written for Intel MPI 2021.14, this is 2021.13"):
        ia.parse(text, "x.impi", d)
    with pytest.raises(ia.AdjustError, match="must name the Intel MPI version"):
        ia.parse("I_MPI_ADJUST_BCAST=1:0-8@2-2\n", "y.impi", d)


def test_the_variables_run_a_user_program_and_intel_agrees_with_the_reader(intel):
    lib, env, d, probe = intel
    adj = ia.parse(ia.write(DECS, d), "gen.impi", d)
    for coll in ("allreduce", "bcast", "allgather"):
        run = dict(env, I_MPI_DEBUG="6", **adj.environment())
        out = subprocess.run([str(lib.mpirun), "-np", "2", str(probe), coll, "1,1023,1024,65535,65536"], env=run,
                             capture_output=True, text=True, timeout=180)
        assert out.returncode == 0, out.stderr[-1500:]
        assert out.stdout.count(f"ok {coll} ") == 20 and "Incorrect" not in out.stdout + out.stderr
        assert f"I_MPI_ADJUST_{ia.VARIABLES[coll]}={adj.environment()[f'I_MPI_ADJUST_{ia.VARIABLES[coll]}']}" in out.stdout
    bad = dict(env, I_MPI_DEBUG="6", I_MPI_ADJUST_ALLREDUCE="33:0-1023@2-2")
    out = subprocess.run([str(lib.mpirun), "-np", "2", str(probe), "allreduce", "8"], env=bad, capture_output=True,
                         text=True, timeout=180)
    assert "Incorrect algorithm: ALLREDUCE=33, will be ignored" in out.stdout + out.stderr


def test_published_for_its_version_refused_otherwise_and_the_module_sets_it(intel, tmp_path):
    from service.profiles import publish as pub
    d = intel[2]
    text = ia.write(DECS, d)

    def publish(files, ver):
        return pub.publish(tmp_path, "m1", "intelmpi", ver, files, actor="t", validated=True,
                           checker=["/bin/true"], mpi="intelmpi", native_validated=True)
    publish({"native.impi": text}, "2021.13")
    with pytest.raises(pub.PublishError, match=r"native.impi refused: bad.impi|native.impi refused: native.impi:7: "
                                               r"I_MPI_ADJUST_ALLGATHER: preset 9 is outside 1-6"):
        publish({"native.impi": text.replace("I_MPI_ADJUST_ALLGATHER=2:", "I_MPI_ADJUST_ALLGATHER=9:")}, "2021.13")
    with pytest.raises(pub.PublishError, match="native.impi refused: native.impi:1: written for Intel MPI 2021.13, "
                                               "this is 2021.14|no Intel MPI 2021.14 installed"):
        publish({"native.impi": text}, "2021.14")
    # the module's rule (pgmpitune-site.lua native_env) names the published file for libpgmpitune, which sets
    # its variables only in a job of a size the file holds (tests/python/lib/test_native_env_intel.py); never
    # the variables themselves, which would reach jobs of every size
    lua = Path(__file__).resolve().parents[3] / "spack-repo" / "packages" / "pgmpitunelib" / "pgmpitune-site.lua"
    site = tmp_path / "site.conf"
    site.write_text(f"profile_root = {tmp_path}\nmachine = m1\n")
    code = (f"package.path = '{lua.parent}/?.lua;' .. package.path; local M = dofile('{lua}'); "
            "for k, v in pairs(M.native_env('intelmpi-2021.13')) do print(k .. '=' .. v) end")
    out = subprocess.run(["lua", "-e", code], capture_output=True, text=True, timeout=30,
                         env={"PATH": "/usr/bin:/bin", "PGMPI_SITE_CONFIG": str(site)})
    assert out.returncode == 0, out.stderr
    published = (tmp_path / "m1" / "intelmpi-2021.13" / "current").resolve() / "native.impi"
    assert published.read_text() == text
    assert dict(line.split("=", 1) for line in out.stdout.split()) == {ia.FILE_VAR: str(published)}
