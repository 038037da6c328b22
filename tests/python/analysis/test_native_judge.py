"""The native validation verdict on the timing evidence (data-moving calls have no fingerprint): a file whose
choice is measured like the default where the forced choice is clearly slower did not run; one measured like
the forced choice did; cells that cannot tell the two apart prove nothing, and a collective needs one proof."""
from __future__ import annotations

from pgmpi_formats.native_validation import Cell
from service.analysis.native_validation import judge

CELL = Cell("bcast", 2, 65536, None, "native:scatter_ring_allgather", 65536)


def figs(file_t, default_t, forced_t, rounds=6, label=CELL.label):
    # alternating +-2 % drift between rounds (paired rounds cancel it)
    rs = {str(r): {"file": file_t * (1.02 if r % 2 else 0.98), "default": default_t * (1.02 if r % 2 else 0.98),
                   label: forced_t * (1.02 if r % 2 else 0.98)} for r in range(1, rounds + 1)}
    return {"bcast:65536": {"key": "bcast", "msize": 65536, "rounds": rs, "noncommutative": [],
                            "checks": {a: ["ok"] * rounds for a in ("file", "default", label)}, "fingerprints": {}}}


def test_time_evidence_decides_where_default_and_forced_differ():
    # forced 1.8x the default; under the file 1.8x too: used, but slower than the default -> (c)
    v = judge([CELL], figs(18e-6, 10e-6, 18e-6), "openmpi")
    assert v["state"] == "failed" and v["cells"][0]["separable"]
    assert [p[:3] for p in v["cells"][0]["problems"]] == ["(c)"]
    # under the file like the default: the file's choice did not run
    v = judge([CELL], figs(10e-6, 10e-6, 18e-6), "openmpi")
    assert any(p.startswith("(b) the file's choice did not run") for p in v["cells"][0]["problems"]), v
    # forced faster, file faster the same way: passed
    assert judge([CELL], figs(6e-6, 10e-6, 6e-6), "openmpi")["state"] == "passed"


def test_inseparable_cells_prove_nothing():
    v = judge([CELL], figs(10e-6, 10e-6, 10.2e-6), "openmpi")
    assert v["cells"][0]["evidence"] == "none" and v["state"] == "failed"
    assert "(b) unproven" in v["cells"][0]["problems"][0]


def test_wrong_results_unmeasured_cells_and_unsafe_algorithms_fail():
    f = figs(6e-6, 10e-6, 6e-6)
    f["bcast:65536"]["checks"]["file"][2] = "fail wrong_result rank=1 byte=3"
    v = judge([CELL], f, "openmpi")
    assert v["state"] == "failed" and v["cells"][0]["problems"] == ["(a) file: wrong result or error: fail "
                                                                    "wrong_result rank=1 byte=3"]
    assert judge([CELL], {}, "openmpi")["cells"][0]["problems"][0] == "not measured by the validation job"
    ring = Cell("allreduce", 2, 0, None, "native:ring", 8)
    assert judge([ring], {}, "openmpi")["cells"][0]["problems"][0].startswith("(d) ring reorders")


def test_every_timed_cell_carries_its_effect_with_an_interval_over_the_rounds():
    c = judge([CELL], figs(6e-6, 10e-6, 6e-6), "openmpi")["cells"][0]       # tuned 10/6 x faster every round
    assert abs(c["effect"] - 10 / 6) < 1e-9 and c["ci_low"] <= c["effect"] <= c["ci_high"] and c["ci_mpiruns"] == 6
    slow = judge([CELL], figs(18e-6, 10e-6, 18e-6), "openmpi")["cells"][0]
    assert slow["ci_high"] < 1 and "95 % CI 0.556-0.556x" in slow["problems"][0]
