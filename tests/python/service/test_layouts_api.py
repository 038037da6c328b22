"""The same p on 1x4 and 2x2 through the service: runs keep their measured layout (label, hosts,
placement), one analysis keeps their violations apart, the candidate holds a profile per layout, and the
API's runs / violations and the detail page's CSV carry the layout (SQLite and PostgreSQL)."""
from __future__ import annotations

import csv
import io

import numpy as np

from pgmpi_formats.prf import parse_prf, profile_layout
from service.analysis.synthetic import Design, simulate, to_text

RB = "allreduce_as_reduce_bcast"
NA = "allreduce_as_nodereduce_leaderallreduce_nodebcast"


def _files(nodes: int, factors: dict, seed: int) -> list[dict]:
    d = Design(collectives=["allreduce"], sizes=[64, 4096, 65536], mockups={"allreduce": [RB, NA]},
               factors=factors, nruns=6, nrep=20, nprocs=4, nodes=nodes, machine="m1", campaign="c1",
               sigma_run=0.02, sigma_rep=0.02, p_outlier=0.0)
    out = []
    for i, r in enumerate(simulate(d, np.random.default_rng(seed))):
        if nodes > 1:
            r.header["hosts"] = ",".join(f"node{k + 1}" for k in range(nodes))
        out.append({"name": f"n{nodes}-run{i}.txt", "content": to_text(r)})
    return out


def test_one_p_two_layouts_kept_apart(client, seeded):
    files = _files(1, {("allreduce", RB, 4096): 0.5}, 3) + _files(2, {("allreduce", NA, 65536): 0.5}, 4)
    r = client.post("/api/v1/uploads", headers=seeded["agent1"], json={"upload_id": "lay", "files": files})
    assert r.status_code == 201, r.json
    runs = client.get("/api/v1/runs?limit=100", headers=seeded["viewer"]).json["items"]
    assert sorted({(x["nprocs"], x["layout"], x["nodes"], x["ppn"], x["hosts"], x["placement"]) for x in runs}) == \
        [(4, "1x4", 1, 4, "", "0:4"), (4, "2x2", 2, 2, "node1,node2", "0:2,1:2")]
    only = client.get("/api/v1/runs?layout=2x2&limit=100", headers=seeded["viewer"]).json["items"]
    assert len(only) == 6 and {x["layout"] for x in only} == {"2x2"}

    r = client.post("/api/v1/analyses", headers=seeded["admin"], json={"machine": "m1", "library": "openmpi",
                                                                      "campaign": None, "alpha": 0.01})
    assert r.status_code == 201, r.json
    pattern = {(v["layout"], v["msize"], v["mockup"]) for v in r.json["violations"] if v["kind"] == "pattern"}
    assert pattern == {("1x4", 4096, RB), ("2x2", 65536, NA)}
    v2 = client.get("/api/v1/violations?layout=2x2", headers=seeded["viewer"]).json["items"]
    assert [(v["layout"], v["msize"]) for v in v2 if v["kind"] == "pattern"] == [("2x2", 65536)]
    files = r.json["profiles"][0]["files"]
    assert sorted(files) == ["allreduce_p4.prf", "allreduce_p4_2x2.prf"]
    assert profile_layout(parse_prf(files["allreduce_p4_2x2.prf"])) == "2x2"
    assert parse_prf(files["allreduce_p4_2x2.prf"])["ranges"] == [(65536, 65536, NA)]

    # the detail page's CSV of one layout holds only that layout's measurements, and says which
    rows = list(csv.DictReader(io.StringIO(client.get(
        "/m/m1/openmpi-4.1.4/detail/allreduce?layout=2x2&format=csv", headers=seeded["viewer"]).get_data(as_text=True))))
    assert rows and {(x["nprocs"], x["layout"]) for x in rows} == {("4", "2x2")}
    assert {x["mpiruns"] for x in rows} == {"6"}          # not 12: the 1x4 mpiruns are not mixed in
