"""The derived-datatype pages on uploads in pgmpi-dtbench's format (count column, `#@pgmpi dtcase` footer):
the upload records each case's layout, base type, pattern, counts and signature; the analysis stores GL1-GL4
verdicts and a GL2/3 repair profile; the heatmap and the layout page show them; empty states and odd stored
values do not break a page."""
from __future__ import annotations

import math

import numpy as np
from sqlalchemy import select

from dash_helpers import upload
from service.store.db import db

SIG = "0123456789abcdef"
CASES = {  # test -> (pattern, layout, factors per description at 3200 B; 65536 B: all equal)
    "dt_bcast_int_bucket_v1_a2": ("bcast", "bucket", {"typed": 1.0, "typed_control": 1.0, "packed": 0.5,
                                                     "repaired": 0.55, "indexed": 1.5}),
    "dt_bcast_int_contiguous": ("bcast", "contiguous", {"typed": 1.0, "typed_control": 1.0, "packed": 1.0,
                                                        "repaired": 1.0}),
}


def dt_file(idx: int, machine="m1", campaign="dtc", signature=SIG) -> str:
    rng = np.random.default_rng(idx)
    regime = 1.0 + 0.2 * idx          # mpirun-to-mpirun drift shared by the descriptions (paired design)
    head = {"machine": machine, "mpi_library": "openmpi", "mpi_version": "4.1.4", "nprocs": 2, "nodes": 1,
            "ppn": 2, "mpirun_index": idx, "campaign": campaign, "pgmpi_dtbench_version": 1}
    lines = [f"#@{k}={v}" for k, v in head.items()] + ["test nrep msize count runtime_sec algorithm"]
    for test, (_, layout, fac) in CASES.items():
        for msize, base in ((3200, 10e-6), (65536, 80e-6)):
            for k in range(8):
                for alg, f in fac.items():
                    f = f if msize == 3200 else 1.0
                    count = 1 if alg == "indexed" else msize // 4 // (1 if layout == "contiguous" else 2)
                    t = base * regime * f * (1 + 0.01 * rng.standard_normal())
                    lines.append(f"{test} {k} {msize} {count} {t:.9f} {alg}")
    for test, (pattern, layout, _) in CASES.items():
        a = "0" if layout == "contiguous" else "2"
        lines.append(f"#@pgmpi dtcase {test} pattern={pattern} layout={layout} variant=1 A={a} basetype=MPI_INT"
                     + (f" signature={signature}" if layout != "contiguous" else ""))
    return "\n".join(lines) + "\n"


def _seed(client, A, runs=4):
    assert client.post("/api/v1/machines", headers=A, json={"name": "m1", "nodes": 1, "cores_per_node": 8,
                                                           "interconnect": "shm"}).status_code == 201
    assert client.post("/api/v1/campaigns", headers=A, json={"name": "dtc", "machine": "m1",
                                                            "definition": {}}).status_code in (200, 201)
    upload(client, A, {f"dt-{i}.txt": dt_file(i) for i in range(runs)}, campaign="dtc")
    r = client.post("/api/v1/analyses", headers=A, json={"machine": "m1", "library": "openmpi", "campaign": "dtc",
                                                         "alpha": 0.05, "test": "paired_t"})
    assert r.status_code == 201, r.get_data(as_text=True)
    return r.get_json()


def test_upload_analysis_pages_and_profile(app, tokens):
    from service.store.models import DtCase, DtVerdict, ProfileVersion
    client = app.test_client()
    A = tokens["admin"]
    empty = client.post("/api/v1/machines", headers=A, json={"name": "m0", "nodes": 1, "cores_per_node": 8,
                                                            "interconnect": "shm"})
    assert empty.status_code == 201
    res = _seed(client, A)
    with app.app_context():
        cases = db.session.scalars(select(DtCase)).all()
        assert len(cases) == 8          # 2 cases x 4 runs
        c = next(x for x in cases if x.dt_layout == "bucket")
        assert (c.pattern, c.basetype, c.block, c.signature) == ("bcast", "MPI_INT", 2, SIG)
        assert c.counts["typed"] == {"3200": 400, "65536": 8192} and c.counts["indexed"]["3200"] == 1
        vs = db.session.scalars(select(DtVerdict).where(DtVerdict.analysis_id == res["id"])).all()
        by = {(v.guideline, v.dt_layout, v.msize, frozenset((v.slower, v.faster))): v for v in vs}
        gl2 = by[("GL2/3", "bucket v1 A=2", 3200, frozenset(("typed", "packed")))]
        assert gl2.verdict == "violated" and gl2.slower == "typed" and 1.9 < gl2.ratio < 2.1
        assert gl2.signature == SIG and gl2.nprocs == 2
        assert by[("GL4", "bucket v1 A=2", 3200, frozenset(("typed", "indexed")))].verdict == "violated"
        assert all(v.verdict == "holds" for v in vs if v.msize == 65536)
        assert all(v.verdict == "holds" for v in vs if v.guideline == "control")
        prof = db.session.scalars(select(ProfileVersion)).all()
        assert len(prof) == 1 and list(prof[0].files) == ["bcast_p2.prf"]
        text = prof[0].files["bcast_p2.prf"]
    from pgmpi_formats.prf import parse_prf
    p = parse_prf(text)
    assert p["mpi_name"] == "MPI_Bcast" and p["nprocs"] == 2
    assert [r for r in p["ranges"] if r[2] != "default"] == [(3200, 3200, "bcast_as_packed_bcast")]
    assert SIG in text and "bucket v1 A=2" in text

    page = client.get("/m/m1/openmpi-4.1.4/datatypes").get_data(as_text=True)
    assert "Which guidelines hold" in page and "bucket v1 A=2" in page and "Plotly.newPlot" in page
    assert "typed" in page and "packed" in page and "bcast_p2.prf" in page
    assert "control: 0 of" in page
    assert "dt_bcast" not in client.get("/m/m1/openmpi-4.1.4/heatmap").get_data(as_text=True)   # own pages
    lay = client.get("/m/m1/openmpi-4.1.4/datatypes/layout?pattern=bcast&basetype=MPI_INT&p=2&layout=bucket v1 A=2")
    html = lay.get_data(as_text=True)
    assert lay.status_code == 200 and SIG in html and "count 400" in html and "violated" in html
    assert html.count("<tr>") >= 2 + 10
    # empty states: a library without a datatype campaign, a layout that was not measured, bad parameters
    assert client.post("/api/v1/machines/m0/libraries", headers=A,
                       json={"name": "mpich", "version": "4.0.2"}).status_code in (200, 201)
    assert "No datatype campaign analysed" in client.get("/m/m0/mpich-4.0.2/datatypes").get_data(as_text=True)
    assert "No datatype campaign analysed" in client.get(
        "/m/m0/mpich-4.0.2/datatypes/layout?pattern=bcast").get_data(as_text=True)
    miss = client.get("/m/m1/openmpi-4.1.4/datatypes/layout?pattern=allgather&basetype=MPI_INT&p=2&layout=zzz")
    assert miss.status_code == 200 and "has no measurement" in miss.get_data(as_text=True)
    assert client.get("/m/m1/openmpi-4.1.4/datatypes/layout?p=-3").status_code == 400
    assert client.get("/m/m1/openmpi-4.1.4/datatypes?analysis=999999").status_code == 200
    # odd stored values: no ratio, no p-value, an infinite ratio, a verdict of an unknown guideline
    with app.app_context():
        for ratio, pv, gl in ((None, None, "GL4"), (math.inf, 0.01, "GL1"), (0.0, math.nan, "GLX")):
            db.session.add(DtVerdict(analysis_id=res["id"], guideline=gl, pattern="bcast", basetype="MPI_INT",
                                     dt_layout="bucket v1 A=2", nprocs=2, msize=3200, slower="typed", faster="vector",
                                     ratio=ratio, p_value=pv, runs=0, verdict="n/a"))
        db.session.commit()
    assert client.get("/m/m1/openmpi-4.1.4/datatypes").status_code == 200
    assert client.get("/m/m1/openmpi-4.1.4/datatypes/layout?pattern=bcast&basetype=MPI_INT&p=2"
                      "&layout=bucket v1 A=2").status_code == 200
