"""The `#@pgmpi` footer records (lib/python/pgmpi_formats/footer.py): one reader into typed records, and no
second parser of them anywhere in the product code."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pgmpi_formats import footer
from pgmpi_formats.footer import (Alg, Check, Config, Count, DtCase, DtSig, Fallback, Fingerprint, NonCommutative,
                                  Nrep, Served, parse_line, read_line, records)
from pgmpi_formats.results import ResultsFormatError, parse_text, read_file

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "python" / "analysis" / "data"

LINES = {
    "#@pgmpi alg MPI_Allreduce 1024 allreduce_as_reduce_bcast": Alg("MPI_Allreduce", 1024, "allreduce_as_reduce_bcast"),
    "#@pgmpi count MPI_Bcast 16 default 12": Count("MPI_Bcast", 16, "default", 12),
    "#@pgmpi fallback MPI_Bcast 16 bcast_as_scatter_allgather 3": Fallback("MPI_Bcast", 16, "bcast_as_scatter_allgather", 3),
    "#@pgmpi config size_msg_buffer_bytes 100000000": Config("size_msg_buffer_bytes", "100000000"),
    "#@pgmpi config disabled": Config("disabled", ""),
    "#@pgmpi nrep MPI_Bcast 1024 3": Nrep("MPI_Bcast", 1024, 3),
    "#@pgmpi check MPI_Bcast 64 default ok": Check("MPI_Bcast", 64, "default", "ok", ""),
    "#@pgmpi check MPI_Reduce 8 native:2 fail wrong_result rank=1 byte=0": Check(
        "MPI_Reduce", 8, "native:2", "fail", "wrong_result rank=1 byte=0"),
    "#@pgmpi noncommutative MPI_Reduce 8 native:2": NonCommutative("MPI_Reduce", 8, "native:2"),
    "#@pgmpi fingerprint MPI_Allreduce 8 default 1a2b:1a2b": Fingerprint("MPI_Allreduce", 8, "default", "1a2b:1a2b"),
    "#@pgmpi served 2 MPI_Allreduce 4096 native:a,native:b": Served(2, "MPI_Allreduce", 4096, ("native:a", "native:b")),
    "#@pgmpi served 3 MPI_Allreduce 64 default_control,default,native:a blocks=5": Served(
        3, "MPI_Allreduce", 64, ("default_control", "default", "native:a"), 5),
    "#@pgmpi dtcase dt_bcast_int_tiled_v1_a2 pattern=bcast layout=tiled variant=1 A=2 basetype=MPI_INT "
    "signature=0123456789abcdef": DtCase("dt_bcast_int_tiled_v1_a2", "bcast", "tiled", 1, 2, "MPI_INT", "0123456789abcdef"),
    "#@pgmpi dtsig t1 3200 vector 0123456789abcdef count=200 message=fedcba9876543210": DtSig(
        "t1", 3200, "vector", "0123456789abcdef", "fedcba9876543210"),
}


@pytest.mark.parametrize("line", list(LINES))
def test_each_kind_reads_into_its_record(line):
    assert read_line(line) == LINES[line]
    assert footer.KIND_OF[footer.kind_of(line)] is type(LINES[line])


@pytest.mark.parametrize("line", ["#@pgmpi alg MPI_Allreduce x default", "#@pgmpi check MPI_Bcast 64 default",
                                  "#@pgmpi served x MPI_Bcast 8 -", "#@pgmpi served 1 MPI_Bcast 8 default blocks=0",
                                  "#@pgmpi served 1 MPI_Bcast 8 default alone", "#@pgmpi dtcase t1 pattern=bcast",
                                  "#@pgmpi dtsig t1 8 vector NOTHEX"])
def test_a_malformed_line_is_an_error_or_skipped(line):
    with pytest.raises(footer.FooterError):
        read_line(line)
    assert parse_line(line) is None


def test_other_lines_are_no_records():
    assert parse_line("#@pgmpi buffers MPI_Bcast 8 page_offsets=0,0 touched=yes") is None   # a kind nobody reads
    assert parse_line("#@nprocs=4") is None and parse_line("MPI_Bcast 0 8 1e-6") is None


def test_records_of_a_real_file():
    run = read_file(DATA / "bench_control_check.txt")
    checks = list(records(run.pgmpi_lines, Check))
    assert len(checks) == 6 and sum(c.ok for c in checks) == 5


def test_the_results_reader_refuses_a_bad_alg_line_at_its_line():
    text = "#@nprocs=2\ntest msize runtime_sec\nMPI_Bcast 8 1e-6\n#@pgmpi alg MPI_Bcast eight default\n"
    with pytest.raises(ResultsFormatError, match=r"x.txt:4: expected '#@pgmpi alg <MPI_Name> <bytes> <algorithm>'"):
        parse_text(text, "x.txt")


KINDS = set(footer.KIND_OF)


def _second_parsers(path: Path) -> list[str]:
    """Comparisons of a token with a footer kind ("dtcase", "check", ...) outside footer.py: a parser of
    its own.  (A kind named in a string, a docstring or a log message is no comparison.)"""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Compare):
            consts = [node.left, *node.comparators]
            names = set()
            for c in consts:
                if isinstance(c, ast.Constant) and isinstance(c.value, str):
                    names.add(c.value)
                elif isinstance(c, (ast.Tuple, ast.List, ast.Set)):
                    names |= {e.value for e in c.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if names & KINDS and any(isinstance(c, ast.Subscript) for c in consts):
                out.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return out


def test_no_second_parser_of_the_footer():
    files = [p for d in ("lib/python/pgmpi_formats", "service", "scheduler") for p in (ROOT / d).rglob("*.py")
             if p.name != "footer.py"]
    assert [x for p in files for x in _second_parsers(p)] == []
