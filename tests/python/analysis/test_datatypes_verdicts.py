"""GL1-GL4 verdicts (service/analysis/datatypes.py) on raw files written with the format's own writer:
a planted 2x GL2/3 violation and a 1.5x GL4 one are found with their direction, equal descriptions and
the control arm hold, one mpirun gives no verdict, and the CLI prints the table."""
from __future__ import annotations

import numpy as np
from click.testing import CliRunner

from pgmpi_formats.results import ResultSet, format_results, parse_text
from service.analysis.datatypes import dt_verdicts

TEST = "dt_allgather_int_bucket_v1_a2"
FACTOR = {"typed": 1.0, "typed_control": 1.0, "contig": 1.0, "packed": 0.5, "indexed": 1.5}


def _run(idx: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    regime = 1.0 + 0.2 * idx              # mpirun-to-mpirun drift shared by every description (paired design)
    rows = []
    for msize, base in ((3200, 10e-6), (2560000, 2e-3)):
        for k in range(10):
            for alg, f in FACTOR.items():
                f = f if msize == 3200 else 1.0          # the large size: every description equal
                rows.append((TEST, k, msize, base * regime * f * (1 + 0.01 * rng.standard_normal()), alg))
    header = {"machine": "box", "mpi_library": "openmpi", "mpi_version": "4.1.4", "nprocs": 2, "nodes": 1, "ppn": 2,
              "mpirun_index": idx}
    footer = [f"#@pgmpi dtcase {TEST} pattern=allgather layout=bucket variant=1 A=2 basetype=MPI_INT"]
    return format_results(header, rows, footer)


def _set(n: int) -> ResultSet:
    return ResultSet.from_runs([parse_text(_run(i, 100 + i), f"r{i}.txt") for i in range(n)])


def test_planted_violations_found_with_direction():
    vs = {(v.guideline, v.msize, frozenset((v.slower, v.faster))): v for v in dt_verdicts(_set(4))}
    gl2 = vs[("GL2/3", 3200, frozenset(("typed", "packed")))]
    assert gl2.verdict == "violated" and gl2.slower == "typed" and 1.9 < gl2.ratio < 2.1 and gl2.p < 0.01
    gl4 = vs[("GL4", 3200, frozenset(("typed", "indexed")))]
    assert gl4.verdict == "violated" and gl4.slower == "indexed" and 1.4 < gl4.ratio < 1.6
    assert vs[("GL1", 3200, frozenset(("typed", "contig")))].verdict == "holds"
    assert vs[("control", 3200, frozenset(("typed", "typed_control")))].verdict == "holds"
    big = [v for v in vs.values() if v.msize == 2560000]
    assert big and all(v.verdict == "holds" for v in big)


def test_one_mpirun_gives_no_verdict():
    assert {v.verdict for v in dt_verdicts(_set(1))} == {"n/a"}


def test_cli_prints_the_table(tmp_path):
    from service.commands.analysis import analyze
    for i in range(3):
        (tmp_path / f"r{i}.txt").write_text(_run(i, 7 + i))
    r = CliRunner().invoke(analyze, ["datatypes", str(tmp_path), "--html", str(tmp_path / "rep.html")])
    assert r.exit_code == 0, r.output
    assert "GL2/3" in r.output and "typed slower than packed" in r.output
    assert "Plotly.newPlot(" in (tmp_path / "rep.html").read_text()


def _v(gl, layout, msize, slower, faster, ratio, verdict="violated", pattern="bcast", test="dt_bcast_int_x"):
    from service.analysis.datatypes import DtVerdict
    return DtVerdict(config="c", library="openmpi-4.1.4", guideline=gl, pattern=pattern, basetype="MPI_INT",
                     layout=layout, msize=msize, slower=slower, faster=faster, ratio=ratio, p=0.001, runs=5,
                     verdict=verdict, nprocs=2, test=test, signature="0123456789abcdef")


def test_repair_ranges_are_rank_uniform():
    """A size gets the packed repair only when some layout violates GL2/3 with the repair faster and no layout
    measured there (the contiguous one included) has the repair slower: the .prf range redirects them all."""
    from service.analysis.datatypes import repair_ranges
    vs = []
    for m in (3200, 65536, 262144):
        vs += [_v("GL2/3", "bucket v1 A=2", m, "typed", "packed", 1.5),
               _v("repair", "bucket v1 A=2", m, "typed", "repaired", 1.4)]
    vs.append(_v("repair", "contiguous", 3200, "repaired", "typed", 1.3))        # the repair loses there
    vs.append(_v("repair", "contiguous", 65536, "typed", "repaired", 1.0, verdict="holds"))
    ranges, refused = repair_ranges(vs)
    assert [(r.pattern, r.nprocs, r.lo, r.hi) for r in ranges] == [("bcast", 2, 65536, 262144)]
    assert refused == [{"pattern": "bcast", "nprocs": 2, "msize": 3200,
                        "why": "the repair is slower for contiguous MPI_INT"}]


def test_gl4_replacements_need_one_signature_and_no_loss():
    """`replace <signature> <description>` only between descriptions of the same type map (signature) and only
    for a description the library builds; a description measured slower elsewhere is refused."""
    from service.analysis.datatypes import gl4_replacements
    t = "dt_bcast_int_tiled_v1_a2"
    sigs = {(t, 3200, "nested"): "a" * 16, (t, 3200, "indexed"): "a" * 16, (t, 3200, "typed"): "b" * 16,
            (t, 3200, "struct_flat"): "a" * 16, (t, 3200, "vector"): "a" * 16,
            ("dt_allgather_int_tiled_v1_a2", 3200, "vector"): "a" * 16,
            ("dt_allgather_int_tiled_v1_a2", 3200, "struct_flat"): "a" * 16}
    vs = [_v("GL4", "tiled v1 A=2", 3200, "nested", "indexed", 1.3, test=t),          # same signature: a rule
          _v("GL4", "tiled v1 A=2", 3200, "typed", "struct_flat", 2.0, test=t),        # other signature: none
          _v("GL4", "tiled v1 A=2", 3200, "nested", "vector", 1.2, test=t),
          _v("GL4", "tiled v1 A=2", 3200, "vector", "struct_flat", 1.5, pattern="allgather",
             test="dt_allgather_int_tiled_v1_a2"),                                       # vector loses elsewhere
          _v("GL4", "tiled v1 A=2", 3200, "nested", "struct_flat", 1.1, verdict="holds", test=t)]
    rules, refused = gl4_replacements(vs, sigs)
    # indexed (1.3x) and struct_flat (1.5x) both qualify for signature a: the larger speed-up wins
    assert [(r.signature, r.description) for r in rules] == [("a" * 16, "struct_flat")]
    assert rules[0].evidence == ["dt_allgather_int_tiled_v1_a2:vector@3200"]
    assert [(r["description"], r["why"][:16]) for r in refused] == [("vector", "slower elsewhere")]
    # a whole-message description slower than c x t: the library's contig builds it as typed sends it
    sigs.update({(t, 65536, "vector"): "d" * 16, (t, 65536, "message"): "d" * 16, (t, 65536, "typed"): "b" * 16})
    rules, _ = gl4_replacements([_v("GL4", "tiled v1 A=2", 65536, "vector", "typed", 1.4, test=t)], sigs)
    assert [(r.signature, r.description, r.evidence) for r in rules] == [("d" * 16, "contig", [f"{t}:vector@65536"])]
    # ... unless typed is slower than a whole-message description in another pattern (contig would lose there)
    b = "dt_bcast_int_tiled_v1_a2"
    sigs.update({(b, 65536, "indexed"): "d" * 16, (b, 65536, "message"): "d" * 16, (b, 65536, "typed"): "b" * 16})
    rules, refused = gl4_replacements([_v("GL4", "tiled v1 A=2", 65536, "vector", "typed", 1.4, test=t),
                                       _v("GL4", "tiled v1 A=2", 65536, "typed", "indexed", 1.8, test=b)], sigs)
    assert [(r.signature, r.description) for r in rules] == [("d" * 16, "indexed")]
    assert [(r["signature"], r["description"]) for r in refused] == [("d" * 16, "contig")]


def test_judge_datatype_candidate():
    """A datatype candidate's validation: the .prf range judged by the worst case inside it, the control size by
    the median case; a replacement kept when the description it replaces was not slower with it."""
    from service.analysis.validation import judge
    prf = ("# pgtune profile\n#@pgmpi profile_version 1\n#@pgmpi source datatypes\nMPI_Bcast\n2 # nb. of processes\n"
           "1 # nb. of mock-up impl.\n1 bcast_as_packed_bcast\n1 # nb. of ranges\n262144 262144 1\n")
    dtprf = ("#@pgmpi datatype_profile_version 1\nreplace " + "a" * 16 + " indexed evidence=dt_bcast_int_tiled_v1_a2:"
             "nested@3200\nreplace " + "c" * 16 + " vector evidence=dt_bcast_int_bucket_v1_a2:indexed@3200\n")

    def fig(case, desc, m, r):
        return {"case": case, "description": desc, "collective": "bcast", "msize": m, "nprocs": 2, "layout": "1x2",
                "default_time": r, "tuned_time": 1.0, "run_ratios": [r, r * 1.01, r * 0.99], "paired": False}
    figs = [fig("dt_bcast_int_bucket_v1_a2", "typed", 262144, 1.4), fig("dt_bcast_int_tiled_v1_a2", "typed", 262144, 1.2),
            fig("dt_bcast_int_bucket_v1_a2", "typed", 3200, 1.01), fig("dt_bcast_int_tiled_v1_a2", "typed", 3200, 0.99),
            fig("dt_bcast_int_contiguous", "typed", 3200, 0.5),
            fig("dt_bcast_int_tiled_v1_a2", "nested", 3200, 1.25), fig("dt_bcast_int_tiled_v1_a2", "nested", 262144, 1.1),
            fig("dt_bcast_int_bucket_v1_a2", "indexed", 3200, 0.8),
            fig("dt_allgather_int_tiled_v1_a2", "nested", 3200, 1.3),      # the same type in another call
            fig("dt_allgather_int_bucket_v1_a2", "indexed", 3200, 1.5)]
    v = judge({"bcast_p2.prf": prf, "datatypes.dtprf": dtprf}, figs)
    assert v["state"] == "repaired", v
    assert [(k["range"], [f["ratio"] for f in k["figures"]]) for k in v["kept"]] == [([262144, 262144], [1.2])]
    assert [c["msize"] for c in v["control"]] == [3200] and v["control"][0]["ok"]
    # its size only, in both calls
    assert [(k["description"], len(k["figures"])) for k in v["dt_kept"]] == [("indexed", 2)]
    assert [d["signature"] for d in v["dt_dropped"]] == ["c" * 16]
    from pgmpi_formats.dtprf import parse_dtprf
    assert [r[:2] for r in parse_dtprf(v["files"]["datatypes.dtprf"])["rules"]] == [("a" * 16, "indexed")]
    assert v["files"]["bcast_p2.prf"] == prf
