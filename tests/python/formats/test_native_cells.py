"""The cells a native decision file selects at the job's communicator size, read back from the files the
writers generate (Open MPI's message sizes converted back to ours), and the validation figures of real
pgmpi-bench output lines."""
from __future__ import annotations

import pytest

from pgmpi_formats import mpich_json as mj
from pgmpi_formats import native
from pgmpi_formats import native_validation as nv
from pgmpi_formats import ompi_rules as orr
from pgmpi_formats.ompi_rules import Decision

DECISIONS = [Decision("allreduce", 2, 8, "native:recursive_doubling"), Decision("allreduce", 2, 65536, "default"),
             Decision("allgather", 2, 8, "default"), Decision("allgather", 2, 4096, "native:ring"),
             Decision("allreduce", 4, 8, "native:rabenseifner")]


def test_rules_file_cells_at_each_size():
    text = orr.write_rules(DECISIONS, native.FALLBACK["openmpi"])
    at2 = nv.cells_of_rules(text, native.FALLBACK["openmpi"], 2)
    assert [(c.key, c.lo, c.hi, c.label, c.msize) for c in at2] == [
        ("allgather", 0, 4095, "default", 8), ("allgather", 4096, None, "native:ring", 4096),   # x p in the file
        ("allreduce", 0, 65535, "native:recursive_doubling", 8), ("allreduce", 65536, None, "default", 65536)]
    assert [(c.key, c.label) for c in nv.cells_of_rules(text, native.FALLBACK["openmpi"], 4)] == [
        ("allgather", "default"), ("allreduce", "native:rabenseifner")]        # allgather: "the library decides"


def test_each_rule_is_measured_where_its_decision_measured():
    """at_decided: a rule becomes one cell per decided size inside it (allgather's ring from 4 KiB decided at
    4 KiB and 64 KiB: both), a rule holding none keeps its picked size (allgather's default from 0 B, decided
    nowhere at p = 2 in this list), decisions at another p or of another collective change nothing."""
    text = orr.write_rules(DECISIONS, native.FALLBACK["openmpi"])
    cells = nv.cells_of_rules(text, native.FALLBACK["openmpi"], 2)
    decided = [["allreduce", 32, 2], ["allreduce", 65536, 2], ["allgather", 4096, 2], ["allgather", 65536, 2],
               ["allreduce", 8, 4], ["bcast", 16, 2]]
    assert [(c.key, c.label, c.msize) for c in nv.at_decided(cells, decided)] == [
        ("allgather", "default", 8), ("allgather", "native:ring", 4096), ("allgather", "native:ring", 65536),
        ("allreduce", "native:recursive_doubling", 32), ("allreduce", "default", 65536)]
    assert nv.at_decided(cells, None) == nv.at_decided(cells, []) == cells


def test_json_file_cells_only_where_it_differs_from_the_built_in_tree():
    lib = mj.find_library()
    base, known = mj.builtin_tree(lib), mj.algorithm_names(lib)
    tree = mj.generate([d for d in DECISIONS if d.key == "allreduce" and d.nprocs == 2], base, known)
    cells = nv.cells_of_json(tree, base, 2)
    assert [(c.key, c.lo, c.hi, c.label) for c in cells] == [("allreduce", 0, 65535, "native:recursive_doubling"),
                                                             ("allreduce", 65536, None, "default")]
    assert nv.cells_of_json(tree, base, 3) == []            # other sizes keep the built-in subtree
    assert nv.cells_of_json(base, base, 2) == []


RUN = """#@pgmpi_format=1
#@nprocs=2
test nrep msize runtime_sec algorithm
MPI_Reduce 0 65536 {t1} {a}
MPI_Reduce 1 65536 {t2} {a}
#@pgmpi check MPI_Reduce 65536 {a} ok
#@pgmpi fingerprint MPI_Reduce 65536 {a} {fp}:0
#@pgmpi noncommutative MPI_Reduce 65536 {a}
"""


def test_figures_per_round_arm_and_label():
    files = [("file", 1, RUN.format(t1=2e-5, t2=4e-5, a="default", fp="5f3b")),
             ("forced", 1, RUN.format(t1=1e-5, t2=1e-5, a="default", fp="bae2")),
             ("file", 2, RUN.format(t1=3e-5, t2=3e-5, a="default", fp="5f3b"))]
    f = nv.figures(files)["reduce:65536"]
    assert f["rounds"] == {"1": {"file": pytest.approx(3e-5), "default": 1e-5}, "2": {"file": 3e-5}}
    assert f["fingerprints"] == {"file": ["5f3b:0", "5f3b:0"], "default": ["bae2:0"]}
    assert f["checks"] == {"file": ["ok", "ok"], "default": ["ok"]} and f["noncommutative"] == [1, 2]
