"""Open MPI's rules file per version (4.1.4, Debian's; 5.0.11, the registry's): written for the version it is
for and read back by that version's reader; the `rule-file-version-2` header where the version reads it,
refused where it does not -- and the libraries agree in a real job; a file with another version's algorithm
refused; which component (tuned or han) a communicator gets on 5.0.11."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pgmpi_formats import mpi_libraries as ml
from pgmpi_formats import native
from pgmpi_formats import ompi_rules as orr
from pgmpi_formats.ompi_rules import Decision

PROBE = Path(__file__).with_name("csel_probe.c")
VERSIONS = {"openmpi": "4.1.4", "openmpi5": "5.0.11"}


class Ompi:
    def __init__(self, lid: str, tmp: Path):
        self.lib = ml.mpi_library(lid)
        if not self.lib.installed:
            pytest.fail(f"{lid}: {self.lib.mpicc} missing (deploy/install-mpis.sh installs it)")
        self.env = self.lib.environment()
        self.env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        for k in ("OMPI_MCA_coll_tuned_use_dynamic_rules", "OMPI_MCA_coll_tuned_dynamic_rules_filename"):
            self.env.pop(k, None)
        self.d = native.discover("openmpi", env=self.env)
        assert self.d.version == VERSIONS[lid]
        self.probe = tmp / f"probe-{lid}"
        subprocess.run([str(self.lib.mpicc), "-O1", "-o", str(self.probe), str(PROBE)], env=self.env, check=True,
                       timeout=120)

    def run(self, text: str, tmp: Path, *extra: str):
        f = tmp / "x.rules"
        f.write_text(text)
        env = dict(self.env, OMPI_MCA_coll_tuned_use_dynamic_rules="1", OMPI_MCA_coll_tuned_dynamic_rules_filename=str(f))
        return subprocess.run([str(self.lib.mpirun), "-np", "2", *extra, str(self.probe), "allreduce", "8,4096"],
                              env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    return {lid: Ompi(lid, tmp_path_factory.mktemp(lid)) for lid in VERSIONS}


DECS = [Decision("allreduce", 2, 8, "native:recursive_doubling"), Decision("allreduce", 2, 1024, "native:rabenseifner"),
        Decision("bcast", 2, 8, "native:binomial"), Decision("bcast", 2, 65536, "native:pipeline:seg=8192")]


@pytest.mark.parametrize("lid", sorted(VERSIONS))
def test_written_for_its_version_and_read_back(libs, lid):
    o = libs[lid]
    text = orr.write_rules(DECS, o.d)
    assert text.startswith(orr.HEADER + "\n") == (lid == "openmpi5")      # 5.0.11 reads the header, 4.1.4 not
    rules = orr.parse_rules(text, "gen.rules", o.d, native.ORDER_UNSAFE["openmpi"])
    for d in DECS:
        v = native.parse_label(d.label)
        alg, _fan, seg = rules.lookup(d.key, 2, orr.ompi_bytes(d.key, d.nbytes, 2))
        assert alg == o.d.value(d.key, v.name) and seg == (v.seg or 0)


def test_the_header_is_refused_where_the_version_has_none_and_the_libraries_agree(libs, tmp_path):
    # algorithm 99 makes the call fail where a file is read: so a job shows whether the library read it
    v2, v1 = f"{orr.HEADER}\n1\n2\n1\n2\n1\n0 99 0 0\n", "1\n2\n1\n2\n1\n0 99 0 0\n"
    assert libs["openmpi"].run(v2, tmp_path).returncode == 0         # 4.1.4 ignores it, silently
    assert libs["openmpi"].run(v1, tmp_path).returncode != 0
    assert libs["openmpi5"].run(v2, tmp_path).returncode != 0        # 5.0.11 reads it
    with pytest.raises(orr.RulesError, match=r"^h.rules:1: Open MPI 4.1.4 reads no rule-file-version-2 header"):
        orr.parse_rules(v2.replace("99", "3"), "h.rules", libs["openmpi"].d)
    orr.parse_rules(v2.replace("99", "3"), "h.rules", libs["openmpi5"].d)
    with pytest.raises(orr.RulesError, match="only as the file's first bytes"):
        orr.parse_rules("# c\n" + v2.replace("99", "3"), "h.rules", libs["openmpi5"].d)
    # version 2: a fifth number on a rule's line belongs to the rule (max requests)
    r = orr.parse_rules(f"{orr.HEADER}\n1\n3\n1\n2\n2\n0 2 0 0 8\n1024 1 0 0\n", "m.rules", libs["openmpi5"].d)
    assert r.table["alltoall"][2] == [(0, 2, 0, 0), (1024, 1, 0, 0)]
    with pytest.raises(orr.RulesError, match="algorithm 1024 does not exist"):     # without it: misread
        orr.parse_rules("1\n3\n1\n2\n2\n0 2 0 0 8\n1024 1 0 0\n", "m.rules", libs["openmpi5"].d)


def test_a_file_for_the_other_version_is_refused(libs):
    text = orr.write_rules([Decision("allgather", 2, 8, "native:sparbit")], libs["openmpi5"].d)
    with pytest.raises(orr.RulesError, match="Open MPI 4.1.4 reads no rule-file-version-2 header"):
        orr.parse_rules(text, "five.rules", libs["openmpi"].d)
    with pytest.raises(orr.RulesError, match="algorithm 7 does not exist in this Open MPI"):
        orr.parse_rules(text[len(orr.HEADER) + 1:], "five.rules", libs["openmpi"].d)
    with pytest.raises(KeyError, match="openmpi has no allgather algorithm 'sparbit'"):
        orr.write_rules([Decision("allgather", 2, 8, "native:sparbit")], libs["openmpi"].d)


def test_han_serves_only_communicators_across_nodes_on_5_0(libs, tmp_path):
    out = libs["openmpi5"].run("1\n2\n1\n2\n1\n0 3 0 0\n", tmp_path, "--mca", "coll_base_verbose", "10")
    assert out.returncode == 0, out.stderr[-1500:]
    log = out.stdout + out.stderr
    assert "coll:han:comm_query (0/MPI_COMM_WORLD): comm has only local processes; disqualifying myself" in log
    assert "selecting       tuned, priority  30" in log
    assert native.governing_component("openmpi", "5.0.11", nodes=1) == "tuned"
    assert native.governing_component("openmpi", "5.0.11", nodes=2) == "han"
    assert native.governing_component("openmpi", "4.1.4", nodes=2) == "tuned"


def test_published_only_to_the_version_it_was_written_for(libs, tmp_path):
    from service.profiles import publish as pub
    text = orr.write_rules([Decision("allgather", 2, 8, "native:sparbit")], libs["openmpi5"].d)

    def publish(ver):
        return pub.publish(tmp_path, "m1", "openmpi", ver, {"native.rules": text}, actor="t", validated=True,
                           checker=["/bin/true"], mpi="openmpi", native_validated=True)
    publish("5.0.11")
    with pytest.raises(pub.PublishError, match="native.rules refused: native.rules:1: Open MPI 4.1.4 reads no "
                                               "rule-file-version-2 header"):
        publish("4.1.4")


def _raw(path, version, index, medians):
    lines = ["#@pgmpi_format=1", "#@machine=m1", "#@mpi_library=openmpi", f"#@mpi_version={version}",
             f"#@module=openmpi/{version}", "#@nodes=1", "#@ppn=2", "#@nprocs=2", f"#@mpirun_index={index}",
             "#@campaign=v", "#@clock=MPI_Wtime", "test nrep msize runtime_sec algorithm"]
    for label, t in medians.items():
        lines += [f"MPI_Allgather {r} 1024 {t * (1 + 0.002 * (r % 3)):.10e} {label}" for r in range(6)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_native_files_reads_the_version_the_results_were_measured_on(libs, tmp_path):
    """`pgmpi analyze native-files` checks and writes the file with the algorithms of the exact Open MPI the
    results name (#@mpi_version), not whichever ompi_info is first on PATH (Debian's 4.1.4 here): results of
    5.0.11 choosing sparbit (5.0 only) give a 5.0 file; results of two versions at once are refused."""
    from click.testing import CliRunner

    from service.commands.analysis import native_files_cmd
    drift = [1.0, 1.02, 0.99, 1.01, 0.98]
    files = [_raw(tmp_path / f"r{i}.txt", "5.0.11", i,
                  {"default": 2e-6 * k, "native:sparbit": 1.2e-6 * k, "default_control": 2.01e-6 * k})
             for i, k in enumerate(drift)]
    out = CliRunner().invoke(native_files_cmd, [*files, "--out", str(tmp_path / "out")])
    assert out.exit_code == 0, out.output
    text = (tmp_path / "out" / "native.rules").read_text()
    assert text.startswith(orr.HEADER + "\n")                   # 5.0.11 reads the v2 header
    rules = orr.parse_rules(text, "native.rules", libs["openmpi5"].d)
    assert rules.lookup("allgather", 2, orr.ompi_bytes("allgather", 1024, 2))[0] == libs["openmpi5"].d.value("allgather", "sparbit")
    mixed = files[:3] + [_raw(tmp_path / "old.txt", "4.1.4", 9, {"default": 2e-6})]
    out = CliRunner().invoke(native_files_cmd, [*mixed, "--out", str(tmp_path / "mixed")])
    assert out.exit_code != 0 and "one MPI library and version" in out.output and "openmpi-4.1.4" in out.output
    # measured across nodes on 5.0, where han serves the call: no rules file from it
    across = [Path(f).read_text().replace("#@nodes=1", "#@nodes=2") for f in files]
    for i, t in enumerate(across):
        (tmp_path / f"x{i}.txt").write_text(t)
    out = CliRunner().invoke(native_files_cmd, [str(tmp_path / f"x{i}.txt") for i in range(len(across))]
                             + ["--out", str(tmp_path / "across")])
    assert out.exit_code != 0 and "coll/han, not tuned, serves the call" in out.output
    with pytest.raises(native.DiscoveryError, match="asked for openmpi 5.0.11's algorithms, but .* answered as openmpi 4.1.4"):
        native.discover("openmpi", env=libs["openmpi"].env, version="5.0.11")
