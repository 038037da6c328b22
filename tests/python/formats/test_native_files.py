"""The libraries' own decision files, generated from decisions and read back: Open MPI's classic rules file
(4.1 format) and MPICH's JSON selection file (complete: the library's built-in tree with branches in front),
and the refusals of files that Open MPI would ignore silently or that would make MPICH abort."""
from __future__ import annotations

import copy
import json

import pytest

from pgmpi_formats import mpich_json as mj
from pgmpi_formats import native
from pgmpi_formats import ompi_rules as orr
from pgmpi_formats.ompi_rules import Decision


@pytest.fixture(scope="module")
def ompi():
    return native.discover("openmpi")            # ompi_info of the installed Open MPI


@pytest.fixture(scope="module")
def mpich():
    lib = mj.find_library()
    return mj.builtin_tree(lib), mj.algorithm_names(lib), mj.library_version(lib)


DECISIONS = [Decision("allreduce", 2, 8, "default"), Decision("allreduce", 2, 1024, "native:recursive_doubling"),
             Decision("allreduce", 2, 65536, "native:rabenseifner"), Decision("allreduce", 2, 1048576, "native:rabenseifner"),
             Decision("bcast", 2, 8, "native:binomial"), Decision("bcast", 2, 65536, "native:chain:seg=8192"),
             Decision("allgather", 2, 8, "native:recursive_doubling"), Decision("allgather", 2, 65536, "native:ring"),
             Decision("allgather", 4, 8, "native:bruck"), Decision("reduce", 2, 8, "native:in-order_binary")]


def test_rules_file_round_trip(ompi):
    text = orr.write_rules(DECISIONS, ompi)
    rules = orr.parse_rules(text, "gen.rules", ompi, native.ORDER_UNSAFE["openmpi"])
    for d in DECISIONS:
        alg, fan, seg = rules.lookup(d.key, d.nprocs, orr.ompi_bytes(d.key, d.nbytes, d.nprocs))
        v = native.parse_label(d.label)
        assert alg == (0 if v is None else ompi.value(d.key, v.name)), d
        assert seg == (v.seg or 0 if v else 0)
        if v:
            assert fan == ompi.chain_fanout[d.key] == 4
    # Open MPI's own message size: allgather's is the whole receive buffer (ours is one block)
    assert rules.lookup("allgather", 2, 65536 * 2)[0] == ompi.value("allgather", "ring")
    assert rules.lookup("allgather", 2, 65536 * 2 - 1)[0] == ompi.value("allgather", "recursive_doubling")
    # only the measured process counts are tuned; the library decides everywhere else
    for p in (1, 3, 8, 64):
        assert rules.lookup("allreduce", p, 65536)[0] == 0
    assert rules.lookup("allgather", 3, 8)[0] == 0 and rules.lookup("allgather", 5, 8)[0] == 0
    assert rules.lookup("allgather", 4, 8)[0] == ompi.value("allgather", "bruck")


def test_the_writer_never_selects_an_order_unsafe_algorithm(ompi):
    for key, name in sorted(native.ORDER_UNSAFE["openmpi"]):
        with pytest.raises(orr.RulesError, match="reorders a reduction's operands"):
            orr.write_rules([Decision(key, 2, 8, f"native:{name}")], ompi)


GOOD = "1\n2\n1\n2\n2\n0 3 0 0\n1024 6 0 0\n"      # allreduce, size 2: recursive_doubling, from 1 KiB rabenseifner


@pytest.mark.parametrize("text,line,why", [
    ("1\n2\n1\n2\n3\n0 3 0 0\n1024 6 0 0\n", 7, "count is larger than what follows"),
    ("1\n2\n1\n2\n1\n0 3 0 0\n1024 6 0 0\n", 7, "smaller than what follows"),
    ("1\n2\n1\n2\n2\n0 3 0 0\n1024 -6 0 0\n", 7, "negative number"),
    ("1\n22\n1\n2\n1\n0 3 0 0\n", 2, "collective id 22"),
    ("1\n2\n1\n2\n1\n8 3 0 0\n", 6, "not 0"),
    ("1\n2\n1\n2\n2\n0 3 0 0\n01024 6 0 0\n", 7, "octal"),
    ("1\n2\n1\n2\n1\n0 9 0 0\n", 6, "algorithm 9 does not exist"),
    ("1\n0\n1\n4\n1\n0 6 0 0\n", 6, "two_proc (6) at communicator size 4"),
    ("1\n2\n1\n2\n1\n0 4 0 0\n", 6, "reorders a reduction's operands"),
    ("1\n2\n1\n2\n1\n0 3 0 x\n", 6, "not an integer"),
    ("1\n2\n1\n2\n2\n1024 3 0 0\n0 6 0 0\n", 6, "not 0"),
])
def test_a_corrupt_rules_file_is_refused_with_the_reason(ompi, text, line, why):
    orr.parse_rules(GOOD, "good.rules", ompi, native.ORDER_UNSAFE["openmpi"])
    with pytest.raises(orr.RulesError) as e:
        orr.parse_rules(text, "bad.rules", ompi, native.ORDER_UNSAFE["openmpi"])
    assert e.value.line == line and why in e.value.message, str(e.value)
    assert str(e.value).startswith(f"bad.rules:{line}: ")


def test_mpich_json_is_complete_and_keeps_the_builtin_elsewhere(mpich):
    base, known, version = mpich
    assert {"collective=bcast", "collective=allreduce", "collective=barrier"} <= set(base)
    decs = [d for d in DECISIONS if "seg=" not in d.label and d.label not in
            ("native:rabenseifner", "native:in-order_binary", "native:chain:seg=8192", "native:bruck")]
    decs += [Decision("allgather", 4, 8, "native:brucks"), Decision("reduce", 2, 8, "native:reduce_scatter_gather")]
    tree = mj.loads(mj.dumps(mj.generate(decs, base, known)), "gen.json")
    assert mj.check_tree(tree, base, known, version) == []
    intra = tree["collective=allreduce"]["comm_type=intra"]
    assert list(intra) == ["comm_size<=2", "comm_size=any"]
    assert intra["comm_size=any"] == base["collective=allreduce"]["comm_type=intra"]
    ours = intra["comm_size<=2"]["comm_size=any"]
    # non-commutative and user-defined operations keep the library's own choice
    assert ours["is_commutative=no"] == ours["is_op_built_in=no"] == base["collective=allreduce"]["comm_type=intra"]
    assert ours["avg_msg_size<=1023"] == base["collective=allreduce"]["comm_type=intra"]     # "default"
    assert ours["avg_msg_size=any"] == {"algorithm=MPIR_Allreduce_intra_recursive_doubling": {}}
    assert set(tree) == set(base)
    for ckey in set(base) - {"collective=allreduce", "collective=bcast", "collective=allgather", "collective=reduce"}:
        assert tree[ckey] == base[ckey]
    with pytest.raises(ValueError, match="no segment size"):
        mj.generate([Decision("bcast", 2, 8, "native:binomial:seg=1024")], base, known)
    with pytest.raises(ValueError, match="has no algorithm MPIR_Bcast_intra_chain"):
        mj.generate([Decision("bcast", 2, 8, "native:chain")], base, known)


def test_mpich_json_missing_a_collective_is_refused_with_the_reason(mpich):
    base, known, version = mpich
    tree = copy.deepcopy(base)
    del tree["collective=bcast"]
    problems = mj.check_tree(tree, base, known, version)
    assert problems == ["collective=bcast is missing: MPICH aborts every job at its first bcast (Barrier, "
                        "Scan and Intercomm_create use it inside)"]
    tree = copy.deepcopy(base)
    del tree["collective=allreduce"]["comm_type=inter"]
    assert mj.check_tree(tree, base, known, version) == ["collective=allreduce/comm_type=inter is missing: MPICH aborts "
                                                "at the first such call"]
    tree = copy.deepcopy(base)
    tree["collective=allreduce"]["comm_type=intra"] = {"avg_msg_size=any": {"algorithm=MPIR_Allreduce_intra_fast": {}}}
    assert mj.check_tree(tree, base, known, version) == ["/collective=allreduce/comm_type=intra/avg_msg_size=any/"
                                                "algorithm=MPIR_Allreduce_intra_fast: this MPICH has no algorithm "
                                                "MPIR_Allreduce_intra_fast", "/collective=allreduce/comm_type=intra: "
                                                f"not MPICH {version}'s built-in branch (a file made from another "
                                                "version's tree would replace this version's own choices)"]
    with pytest.raises(mj.JsonSelectionError, match=r"^bad.json:3: not valid JSON"):
        mj.loads('{\n "collective=bcast": {\n  "comm_type=intra": ,\n }\n}', "bad.json")
    with pytest.raises(mj.JsonSelectionError, match="duplicate key"):
        mj.loads(json.dumps(base)[:-1] + ', "collective=bcast": {}}', "dup.json")
