"""Layout labels (pgmpi_formats.layouts) and layout profiles written by the one .prf writer."""
import pytest

from pgmpi_formats.layouts import layout_label, parse_layout, run_layout
from pgmpi_formats.prf import ProfileFormatError, format_prf, parse_prf, profile_filename, profile_layout


@pytest.mark.parametrize("nodes, ppn, nprocs, placement, want", [
    (2, 2, 4, "0:2,1:2", "2x2"),
    (1, 4, 4, "0:4", "1x4"),
    (2, 3, 5, "0:3,1:2", "3+2"),
    (3, 2, 5, "0:1,1:2,2:2", "2+2+1"),
    (2, 2, 4, "0:1,1:1,0:1,1:1", "2x2-interleaved"),
    (2, 2, 4, "", "2x2"),                    # no placement recorded: nodes x ppn
    (2, 3, 5, "", "2n5p-uneven"),            # uneven without placement: only the extremes are known
    (0, 0, 4, "", ""),                       # genuine ReproMPI: nodes unknown
    (2, 2, 4, "garbage", "2x2"),
])
def test_labels(nodes, ppn, nprocs, placement, want):
    assert layout_label(nodes, ppn, nprocs, placement) == want


def test_parse_and_header():
    assert parse_layout("2x2") == (2, 2) and parse_layout("3+2") is None and parse_layout("2x2-interleaved") is None
    assert run_layout({"nodes": "3", "ppn": "2", "nprocs": "6", "placement": "0:2,1:2,2:2"}) == "3x2"


def test_layout_profile_round_trip_and_refusal():
    text = format_prf("MPI_Allreduce", 4, [(0, 1024, "allreduce_as_reduce_bcast")], meta={"layout": "2x2"})
    assert "#@pgmpi layout 2x2" in text.splitlines()
    assert profile_layout(parse_prf(text)) == "2x2"
    assert profile_filename("allreduce", 4, "2x2") == "allreduce_p4_2x2.prf"
    assert profile_filename("allreduce", 4) == "allreduce_p4.prf"
    for bad in ("2x3", "3+1", "2x2-interleaved"):
        with pytest.raises(ProfileFormatError, match="layout"):
            format_prf("MPI_Allreduce", 4, [(0, 1024, "allreduce_as_reduce_bcast")], meta={"layout": bad})
