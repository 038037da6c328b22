"""Reader: our layout, genuine ReproMPI layouts, file:line errors."""
import numpy as np
import pytest

from pgmpi_formats.results import BARRIER, ResultsFormatError, ResultSet, parse_text, read_files

OURS = """#@pgmpi_format=1
#@machine=box
#@mpi_library=openmpi
#@mpi_version=4.1.4
#@nprocs=2
#@nodes=1
#@ppn=2
#@mpirun_index=3
test nrep msize runtime_sec algorithm
MPI_Allreduce 0 1024 0.0000123456 default
MPI_Allreduce 1 1024 0.0000133456 default
MPI_Allreduce 0 1024 0.0000103456 allreduce_as_reduce_bcast
MPI_Barrier 0 1024 0.000001 default
#@pgmpi config size_msg_buffer_bytes 1048576
#@pgmpi nrep MPI_Allreduce 1024 2
"""

GENUINE = """#@reproMPIcommitSHA1 = 0123abc
#@nprocs = 4
#@datatype=MPI_INT
#@operation=MPI_SUM
                          test       nrep   count   msize   runtime_sec
                 MPI_Allreduce          0       1       4     0.0000120000
                 MPI_Allreduce          1       1       4     0.0000130000
                     MPI_Bcast          0     256    1024     0.0000500000
#@pgmpi alg MPI_Allreduce 4 allreduce_as_reduce_bcast
"""


def test_ours():
    r = parse_text(OURS, "a.txt")
    assert r.machine == "box" and r.library == "openmpi" and r.nprocs == 2 and r.mpirun_index == 3
    assert len(r) == 4
    names = [r.tests[c] for c in r.test]
    assert names == ["MPI_Allreduce"] * 3 + ["MPI_Barrier"]
    assert [r.algorithms[a] for a in r.algorithm] == ["default", "default", "allreduce_as_reduce_bcast", "default"]
    assert r.msize.tolist() == [1024] * 4
    assert r.runtime[0] == pytest.approx(1.23456e-5)
    assert r.config["size_msg_buffer_bytes"] == "1048576"


def test_genuine_spaces_and_footer_algorithm():
    r = parse_text(GENUINE, "g.txt")
    assert r.nprocs == 4 and r.machine == "unknown"
    algs = [r.algorithms[a] for a in r.algorithm]
    names = [r.tests[c] for c in r.test]
    assert list(zip(names, r.msize.tolist(), algs)) == [
        ("MPI_Allreduce", 4, "allreduce_as_reduce_bcast"), ("MPI_Allreduce", 4, "allreduce_as_reduce_bcast"),
        ("MPI_Bcast", 1024, "default")]


def test_count_only_uses_datatype():
    text = "#@datatype=MPI_DOUBLE\ntest nrep count runtime_sec\nMPI_Bcast 0 16 0.5\n"
    assert parse_text(text, "c").msize.tolist() == [128]


def test_per_process_rows_take_max_and_errorcodes_drop():
    text = ("#@nprocs=2\n p test nrep errorcode msize loc_tstart_sec loc_tend_sec\n"
            "0 MPI_Bcast 0 0 8 1.0 1.5\n1 MPI_Bcast 0 0 8 1.0 2.0\n"
            "0 MPI_Bcast 1 1 8 1.0 9.0\n1 MPI_Bcast 1 1 8 1.0 9.0\n")
    r = parse_text(text, "p")
    assert r.runtime.tolist() == [1.0] and r.nrep.tolist() == [0]


@pytest.mark.parametrize("text,line,needle", [
    ("test nrep msize runtime_sec\nMPI_Bcast 0 x 0.1\n", 2, "'msize'"),
    ("test nrep msize runtime_sec\nMPI_Bcast 0 8 0.1\nMPI_Bcast 0 8\n", 3, "expected 4 fields"),
    ("test nrep msize runtime_sec\nMPI_Bcast 0 8 -0.1\n", 2, ">= 0"),
    ("test nrep msize runtime_sec\nMPI_Bcast 0 8 nan\n", 2, "finite"),
    ("#@a=1\nMPI_Bcast 0 8 0.1\n", 2, "before the column line"),
    ("#@a=1\n", None, "no column line"),
    ("test nrep msize mean_sec\n", 1, "summary"),
    ("test nrep msize runtime_sec\nMPI_Bcast 0 8.5 0.1\n", 2, "not an integer"),
    ("test nrep msize runtime_sec\nMPI_Bcast 0 8 0.1\n#@pgmpi alg MPI_Bcast x y\n", 3, "#@pgmpi alg"),
    ("test nrep msize runtime_sec algorithm\nMPI_Bcast 0 8 0.1 bad-name\n", 2, "mock-up name"),
])
def test_errors_carry_file_and_line(text, line, needle):
    with pytest.raises(ResultsFormatError) as ei:
        parse_text(text, "bad.txt")
    assert ei.value.source == "bad.txt" and ei.value.line == line
    assert needle in str(ei.value)
    assert str(ei.value).startswith("bad.txt:" + (f"{line}:" if line else ""))


def test_resultset_spans_runs(tmp_path):
    (tmp_path / "a.txt").write_text(OURS)
    (tmp_path / "b.txt").write_text(OURS.replace("openmpi", "mpich").replace("nprocs=2", "nprocs=4"))
    rs = read_files([tmp_path])
    assert len(rs) == 8 and rs.libraries == ["openmpi", "mpich"] and rs.run_nprocs.tolist() == [2, 4]
    assert (rs.coll == BARRIER).sum() == 2 and set(rs.run.tolist()) == {0, 1}
    assert np.all(rs.msize == 1024)


def test_repeated_column_line_and_comments_between_blocks():
    text = ("#@nprocs=2\ntest nrep msize runtime_sec\nMPI_Bcast 0 8 0.1\n\n# block 2\n"
            "  test   nrep msize runtime_sec\nMPI_Bcast 0 16 0.2\n#@pgmpi alg MPI_Bcast 16 bcast_as_allgatherv\n")
    r = parse_text(text, "blocks")
    assert r.msize.tolist() == [8, 16]
    assert [r.algorithms[a] for a in r.algorithm] == ["default", "bcast_as_allgatherv"]


def test_error_line_numbers_after_blank_and_comment_lines():
    text = "#@a=1\n\ntest nrep msize runtime_sec\nMPI_Bcast 0 8 0.1\n# c\n\nMPI_Bcast 1 8 zz\n"
    with pytest.raises(ResultsFormatError) as ei:
        parse_text(text, "f")
    assert ei.value.line == 7
    text = "test nrep msize runtime_sec\nMPI_Bcast 0 8 0.1\n   \nMPI_Bcast 1 8 zz\n#@pgmpi config a 1\n"
    with pytest.raises(ResultsFormatError) as ei:
        parse_text(text, "f")
    assert ei.value.line == 4


def test_footer_line_numbers():
    text = "test nrep msize runtime_sec\nMPI_Bcast 0 8 0.1\nMPI_Bcast 1 8 0.1\n\n#@pgmpi alg MPI_Bcast\n"
    with pytest.raises(ResultsFormatError) as ei:
        parse_text(text, "f")
    assert ei.value.line == 5


def test_no_data_rows_is_empty_run():
    r = parse_text("#@nprocs=2\ntest nrep msize runtime_sec\n#@pgmpi config x 1\n", "e")
    assert len(r) == 0


def test_genuine_reprompi_mockup_tests_map_to_our_names():
    from service.analysis.memory import KNOWN
    from pgmpi_formats.results import gl_mockup
    assert gl_mockup("GL_Allreduce_as_ReduceBcast") == ("MPI_Allreduce", "allreduce_as_reduce_bcast")
    assert gl_mockup("GL_Reduce_scatter_block_as_ReduceScatter") == ("MPI_Reduce_scatter_block",
                                                                     "reducescatterblock_as_reduce_scatter")
    for gl in ("GL_Allgather_as_GatherBcast", "GL_Allreduce_as_ReducescatterblockAllgather",
               "GL_Allreduce_as_ReducescatterAllgatherv", "GL_Bcast_as_ScatterAllgather", "GL_Gather_as_Reduce",
               "GL_Reduce_as_ReducescatterGatherv", "GL_Reduce_scatter_as_ReduceScatterv",
               "GL_Scan_as_ExscanReducelocal", "GL_Scatter_as_Bcast"):
        assert gl_mockup(gl)[1] in KNOWN, gl
    assert gl_mockup("GL_Foo_as_Bar") is None and gl_mockup("MPI_Bcast") is None
    text = ("#@nprocs=4\ntest nrep msize runtime_sec\nMPI_Allreduce 0 8 0.5\n"
            "GL_Allreduce_as_ReduceBcast 0 8 0.25\nMPI_Bcast 0 8 0.1\n")
    r = parse_text(text, "gl")
    got = [(r.tests[t], r.algorithms[a]) for t, a in zip(r.test, r.algorithm)]
    assert got == [("MPI_Allreduce", "default"), ("MPI_Allreduce", "allreduce_as_reduce_bcast"),
                   ("MPI_Bcast", "default")]


def test_crlf_line_endings():
    r = parse_text(OURS.replace("\n", "\r\n"), "crlf.txt")
    assert len(r) == 4 and r.machine == "box" and r.config["size_msg_buffer_bytes"] == "1048576"


def test_many_configs_are_analysed_separately():
    import numpy as np
    from service.analysis.guidelines import analyze
    from service.analysis.synthetic import Design, simulate
    rng = np.random.default_rng(8)
    runs = []
    for lib, p, slow in (("openmpi", 2, True), ("mpich", 2, False), ("openmpi", 8, False)):
        d = Design(collectives=["bcast"], sizes=[8, 1024], mockups={"bcast": ["bcast_as_allgatherv"]},
                   factors={("bcast", "bcast_as_allgatherv", 1024): 0.5} if slow else {}, library=lib, nprocs=p,
                   nrep=20, sigma_run=0.01)
        runs += simulate(d, rng)
    a = analyze(ResultSet.from_runs(runs), alpha=0.01)
    assert [(c.library, c.nprocs) for c in a.configs] == [("openmpi", 2), ("mpich", 2), ("openmpi", 8)]
    found = {(a.configs[v.cfg].library, a.configs[v.cfg].nprocs, v.msize) for v in a.violations("pattern")}
    assert found == {("openmpi", 2, 1024)}
