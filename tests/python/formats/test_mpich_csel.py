"""MPICH's selection file against the selection code of the exact version it is for (MPICH 4.0.2, Debian's,
and 5.0.2, the registry's): every written file runs a user program (tests/python/formats/csel_probe.c) that
calls the collective on an intracommunicator and an intercommunicator at sizes on both sides of every
threshold, with correct results; and the reader refuses what that version would abort on -- the refusals
that differ between the versions also run, to show the library agrees."""
from __future__ import annotations

import copy
import os
import subprocess
from pathlib import Path

import pytest

from pgmpi_formats import mpich_json as mj
from pgmpi_formats.ompi_rules import Decision

# library id -> install prefix (deploy/mpi-libraries.tsv; Debian's MPICH has a shim prefix)
PREFIXES = {"mpich": "/opt/pgmpi/mpi/mpich", "mpich5": "/opt/pgmpi/mpi/mpich5"}
VERSIONS = {"mpich": "4.0.2", "mpich5": "5.0.2"}
PROBE = Path(__file__).with_name("csel_probe.c")


class Mpich:
    def __init__(self, lib_id: str, tmp: Path):
        prefix = Path(PREFIXES[lib_id])
        if not (prefix / "bin" / "mpicc").exists():
            pytest.fail(f"{lib_id}: {prefix}/bin/mpicc missing (deploy/install-mpis.sh installs it)")
        self.id, self.prefix = lib_id, prefix
        self.lib = mj.find_library(prefix)
        self.version = mj.library_version(self.lib)
        assert self.version == VERSIONS[lib_id]
        self.base, self.known = mj.builtin_tree(self.lib), mj.algorithm_names(self.lib)
        self.env = dict(os.environ, PATH=f"{prefix / 'bin'}:{os.environ['PATH']}")
        self.env.pop("MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE", None)
        if (prefix / "lib" / "libmpi.so.12").exists():
            self.env["LD_LIBRARY_PATH"] = str(prefix / "lib")
        self.probe = tmp / f"probe-{lib_id}"
        subprocess.run([str(prefix / "bin" / "mpicc"), "-O1", "-o", str(self.probe), str(PROBE)], env=self.env,
                       check=True, timeout=120)

    def run(self, tree_or_text, coll: str, sizes: list[int], tmp: Path):
        f = tmp / f"{self.id}-{coll}.json"
        f.write_text(tree_or_text if isinstance(tree_or_text, str) else mj.dumps(tree_or_text))
        env = dict(self.env, MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE=str(f))
        return subprocess.run([str(self.prefix / "bin" / "mpirun"), "-np", "2", str(self.probe), coll,
                               ",".join(map(str, sizes))], env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module", params=sorted(PREFIXES))
def mpich(request, tmp_path_factory):
    return Mpich(request.param, tmp_path_factory.mktemp("csel"))


# per collective: decisions at p = 2 with a threshold between different algorithms wherever MPICH can
# express one (gather and scatter: one algorithm for all sizes, module doc of mpich_json)
CASES = {
    "allreduce": [(8, "native:recursive_doubling"), (1024, "native:reduce_scatter_allgather"), (65536, "default")],
    "bcast": [(8, "native:binomial"), (4096, "native:scatter_ring_allgather"),
              (65536, "native:scatter_recursive_doubling_allgather")],
    "reduce": [(8, "native:reduce_scatter_gather"), (2048, "native:binomial")],
    "allgather": [(8, "native:ring"), (512, "native:brucks"), (8192, "native:recursive_doubling")],
    "alltoall": [(8, "native:brucks"), (1024, "native:pairwise"), (32768, "native:scattered")],
    "gather": [(8, "native:binomial")],
    "scatter": [(8, "native:binomial")],
}


@pytest.mark.parametrize("coll", sorted(CASES))
def test_the_written_file_runs_every_collective_on_both_sides_of_every_threshold(mpich, coll, tmp_path):
    decs = [Decision(coll, 2, n, label) for n, label in CASES[coll]]
    tree = mj.loads(mj.dumps(mj.generate(decs, mpich.base, mpich.known)), "gen.json")
    assert mj.check_tree(tree, mpich.base, mpich.known, mpich.version) == []
    thresholds = [n for n, _ in CASES[coll][1:]]
    sizes = sorted({1, 100000} | {t - 1 for t in thresholds} | set(thresholds))
    out = mpich.run(tree, coll, sizes, tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    got = set(out.stdout.split("\n"))
    assert {f"ok {coll} {n} {kind}" for n in sizes for kind in ("intra", "inter")} <= got, out.stdout


def test_the_writer_uses_the_size_operator_each_collective_has(mpich):
    decs = [Decision("allgather", 2, 8, "native:ring"), Decision("allgather", 2, 4096, "native:brucks"),
            Decision("alltoall", 2, 8, "native:pairwise"), Decision("alltoall", 2, 64, "native:brucks")]
    tree = mj.generate(decs, mpich.base, mpich.known)
    ag = tree["collective=allgather"]["comm_type=intra"]["comm_size<=2"]["comm_size=any"]
    # allgather has no avg_msg_size in MPICH: total = block x communicator size
    assert list(ag) == ["total_msg_size<=8191", "total_msg_size=any"]
    a2a = tree["collective=alltoall"]["comm_type=intra"]["comm_size<=2"]["comm_size=any"]
    assert list(a2a) == ["is_sendbuf_inplace=yes", "avg_msg_size<=63", "avg_msg_size=any"]
    red = mj.generate([Decision("reduce", 2, 8, "native:reduce_scatter_gather")], mpich.base, mpich.known)
    # reduce_scatter_gather asserts count >= pof2 (MPICH's size-ge-pof2 restriction): smaller counts keep
    # the library's choice, as do non-commutative and user-defined operations
    assert list(_ours(red, "reduce")) == ["is_commutative=no", "is_op_built_in=no", "count<pow2", "avg_msg_size=any"]
    for bad, why in (("native:smp", "node-aware parent communicator"),):
        with pytest.raises(ValueError, match=why):
            mj.generate([Decision("bcast", 2, 8, bad)], mpich.base, mpich.known)
    with pytest.raises(ValueError, match="needs a power-of-two communicator size, not 3"):
        mj.generate([Decision("allgather", 3, 8, "native:recursive_doubling")], mpich.base, mpich.known)
    with pytest.raises(ValueError, match="count x communicator size, not bytes"):
        mj.generate([Decision("gather", 2, 8, "native:binomial"), Decision("gather", 2, 64, "native:nb")],
                    mpich.base, mpich.known)


def _ours(tree, coll):
    return tree[f"collective={coll}"]["comm_type=intra"]["comm_size<=2"]["comm_size=any"]


def _planted(mpich, coll, branch: dict):
    tree = mj.generate([Decision(coll, 2, 8, CASES[coll][0][1])], mpich.base, mpich.known)
    node = tree[f"collective={coll}"]["comm_type=intra"]["comm_size<=2"]
    node["comm_size=any"] = branch
    return tree


def test_the_reader_refuses_what_the_version_cannot_evaluate(mpich):
    ring = {"algorithm=MPIR_Allgather_intra_ring": {}}
    bino = {"algorithm=MPIR_Bcast_intra_binomial": {}}
    v = mpich.version
    cases = [
        (_planted(mpich, "allgather", {"avg_msg_size<=4095": ring, "avg_msg_size=any": ring}),
         "evaluates avg_msg_size only for allreduce, alltoall, bcast"),
        (_planted(mpich, "bcast", {"is_commutative=yes": bino, "avg_msg_size=any": bino}),
         "evaluates is_commutative only for"),
        (_planted(mpich, "bcast", {"is_sendbuf_inplace=no": bino, "avg_msg_size=any": bino}),
         "evaluates is_sendbuf_inplace only for"),
        (_planted(mpich, "allgather", {"total_msg_size<=4095": ring}), "needs a following key"),
        (_planted(mpich, "allgather", {"total_msg_size<=4095": {}, "total_msg_size=any": ring}),
         "ends without an algorithm"),
        (_planted(mpich, "allgather", {"total_msg_size<=4095": ring, "algorithm=MPIR_Allgather_intra_ring": {}}),
         "must be the only key"),
        (_planted(mpich, "allgather", {"total_msg_size<=4294967296": ring, "total_msg_size=any": ring}),
         "does not fit MPICH's int"),
        (_planted(mpich, "allgather", {"msg_size<=8": ring, "total_msg_size=any": ring}),
         f"MPICH {v[:3]} does not know this key"),
        (_planted(mpich, "allgather", {"total_msg_size=any": {"algorithm=MPIR_Allgather_intra_fast": {}}}),
         "has no algorithm MPIR_Allgather_intra_fast"),
    ]
    for tree, why in cases:
        problems = mj.check_tree(tree, mpich.base, mpich.known, v)
        assert any(why in p for p in problems), (why, problems)
    assert mj.check_tree(mpich.base, mpich.base, mpich.known, "4.2.1") == [
        "MPICH 4.2.1: no selection-code table for it (valid: 4.0, 5.0); read that version's "
        "src/mpi/coll/src/csel.c first"]


# keys one version parses and the other does not, and an operator neither evaluates for allgather: the library
# itself decides (a real job) and the reader agrees with it
@pytest.mark.parametrize("coll,branch,accepted_by", [
    ("allreduce", {"is_commutative=any": "recursive_doubling"}, {"5.0.2"}),        # 5.0: any "=any" key
    ("allreduce", {"comm_avg_ppn<4": "recursive_doubling", "count=any": "recursive_doubling"}, {"5.0.2"}),
    ("allgather", {"avg_msg_size<=4095": "ring", "count=any": "ring"}, set()),     # the defect
])
def test_the_library_agrees_with_the_reader(mpich, coll, branch, accepted_by, tmp_path):
    cap = mj.MPICH_NAMES[coll][1]
    tree = _planted(mpich, coll, {k: {f"algorithm=MPIR_{cap}_intra_{a}": {}} for k, a in branch.items()})
    problems = mj.check_tree(tree, mpich.base, mpich.known, mpich.version)
    out = mpich.run(tree, coll, [64, 8192], tmp_path)
    if mpich.version in accepted_by:
        assert problems == [] and out.returncode == 0, (problems, out.stderr[-1500:])
    else:
        assert problems and out.returncode != 0, (problems, out.stdout)


def test_a_file_made_for_the_other_version_is_refused(tmp_path_factory):
    a, b = (Mpich(i, tmp_path_factory.mktemp(i)) for i in ("mpich", "mpich5"))
    dec = [Decision("allreduce", 2, 8, "native:recursive_doubling")]
    for mine, other in ((a, b), (b, a)):
        text = mj.dumps(mj.generate(dec, other.base, other.known))
        problems = mj.check_tree(mj.loads(text, "x.json"), mine.base, mine.known, mine.version)
        assert any(f"not MPICH {mine.version}'s built-in branch" in p for p in problems), problems


def test_a_parameterised_algorithm_is_written_only_with_its_parameters(mpich, tmp_path):
    """MPICH reads recexch's k= from the file: an empty object left k = 0 and MPICH 5.0.2's Allreduce never
    returned (64 KiB, 2 ranks). The writer does not write such a choice without parameters to copy, the reader
    refuses the empty object; an algorithm whose parameters the library's own tree gives is written with them."""
    # the library's own tree passes (its parameterised leaves carry their parameters)
    assert mj.check_tree(mpich.base, mpich.base, mpich.known, mpich.version) == []
    if mpich.version.startswith("4.0"):
        # 4.0.2 has none of them (its tree/recexch algorithms came in 4.1): nothing to refuse there
        assert not mpich.known & mj.PARAMETERISED
        return
    with pytest.raises(ValueError, match="reads MPIR_Allreduce_intra_recexch's parameters"):
        mj.generate([Decision("allreduce", 2, 8, "native:recexch")], mpich.base, mpich.known)
    planted = _planted(mpich, "allreduce", {"avg_msg_size=any": {"algorithm=MPIR_Allreduce_intra_recexch": {}}})
    assert any("parameters (k=, ...)" in p for p in mj.check_tree(planted, mpich.base, mpich.known,
                                                                   mpich.version))
    given = mj._params(mpich.base, {})
    assert all(name.split("=", 1)[1] in mj.PARAMETERISED for name in given), given
