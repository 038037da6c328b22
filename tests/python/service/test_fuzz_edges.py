"""Fuzzing of the service's edges (issue 31): the upload parser (text and JSON forms, and the raw body) and
every page's and GET route's URL and query parameters.  Bounded and deterministic: a fixed seed and a fixed
number of cases (a few seconds each on a loaded machine), on SQLite and on PostgreSQL; the answer is never
a 5xx.  The case counts and the status codes seen are printed (pytest shows them even without -s).

test_fuzz.py fuzzes the API's request bodies from the OpenAPI document (schemathesis); this file covers what
a schema does not describe: the ReproMPI text of an upload, the stream parser, pages and their parameters.
"""
from __future__ import annotations

import json
import random
import re
from collections import Counter
from urllib.parse import quote

import numpy as np
import pytest

from svc_data import results_file

SEED = 31
UPLOAD_CASES = 300
PAGE_CASES = 500

# values no entrance should choke on: control characters, lone surrogates, huge and odd numbers, markup,
# paths, long and right-to-left text (each alone and inside other text)
HOSTILE = ["", " ", "\x00", "a\x00b", "\r\n", "x\r\nSet-Cookie: a=1", "\ud800", "a\udfffb", "\u202e", "ж" * 300,
           "<script>alert(1)</script>", "'; DROP TABLE runs; --", "../../etc/passwd", "%00", "%", "\\",
           "9" * 30, "9" * 5000, "-1", "0", "2147483647", "2147483648", "9223372036854775808", "1e309", "-1e309",
           "nan", "inf", "1e-320", "0x10", "1_000", "a" * 5000, "m1", "openmpi", "4.1.4", "2x2", "63x32+16"]
NUMBERS = ["0", "-0", "1", "-1", "1e309", "nan", "inf", "-inf", "1e-320", "9" * 400, "2147483648",
           "1152921504606846976", "x", "", "1.5", "0x10", "\ud800", "1\x00"]
HEADER_KEYS = ["machine", "mpi_library", "mpi_version", "module", "nodes", "ppn", "nprocs", "placement", "hosts",
               "slurm_job_id", "campaign", "job_key", "datatype", "mpirun_index", "test", "clock", "x-y.z",
               "bad key", "", "k" * 100]
COLUMN_LINES = ["test nrep msize runtime_sec algorithm", "test nrep count runtime_sec algorithm",
                "test nrep msize runtime_sec", "p test nrep msize loc_tstart_sec loc_tend_sec",
                "test errorcode nrep msize runtime_sec", "test nrep msize msize runtime_sec", "nrep msize",
                "test nrep count msize runtime_sec algorithm"]


def _mutate_text(rng: random.Random) -> str:
    lines = results_file(nrep=3).splitlines()
    # mostly one change, mostly to a header: a file must stay readable enough to reach the database
    for _ in range(1 if rng.random() < 0.6 else rng.randint(2, 4)):
        op = rng.choice([0, 0, 0, 0, 1, 1, 2, 3, 4, 5, 6])
        if op == 0:      # a header set to a hostile value
            lines.insert(1, f"#@{rng.choice(HEADER_KEYS)}={rng.choice(HOSTILE + NUMBERS)}")
        elif op == 1:    # a number of a data row replaced
            rows = [i for i, l in enumerate(lines) if l.startswith("MPI_")]
            if rows:
                i = rng.choice(rows)
                toks = lines[i].split()
                toks[rng.randrange(len(toks))] = rng.choice(NUMBERS + HOSTILE[:12])
                lines[i] = " ".join(toks)
        elif op == 2:    # another column line
            i = next((k for k, l in enumerate(lines) if l.startswith("test ")), 0)
            lines[i] = rng.choice(COLUMN_LINES)
        elif op == 3:    # a line dropped or doubled
            i = rng.randrange(len(lines))
            if rng.random() < 0.5:
                del lines[i]
            else:
                lines.insert(i, lines[i])
        elif op == 4:    # a stray line
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(HOSTILE + ["#@pgmpi " + rng.choice(HOSTILE)]))
        elif op == 5:    # a pgmpi footer line with odd words
            lines.append(f"#@pgmpi {rng.choice(['config', 'dtcase', 'served', 'layout'])} {rng.choice(HOSTILE)} "
                         f"{rng.choice(NUMBERS)}")
        else:            # the text cut somewhere
            text = "\n".join(lines)
            lines = text[:rng.randrange(len(text) + 1)].splitlines() or [""]
    return "\n".join(lines) + rng.choice(["\n", "", "\r\n", "\n\n\n"])


def _json_file(rng: random.Random) -> dict:
    headers: dict = {"machine": "m1", "mpi_library": "openmpi", "mpi_version": "4.1.4", "nprocs": 2}
    for _ in range(rng.randint(0, 3)):
        headers[rng.choice(HEADER_KEYS)] = rng.choice(HOSTILE + [3, -1, 2 ** 40, 1.5, 1e300])
    cell = [1e-5, "MPI_Allreduce", 0, 8, "default", None, [], {}, True, -1, 2 ** 31, 2 ** 70, 1e308]
    rows = [["MPI_Allreduce", r, 8, 1e-5 * (1 + r), "default"] for r in range(3)]
    for _ in range(rng.choice([0, 0, 1, 2])):
        row = rng.randrange(len(rows))
        rows[row] = list(rows[row])
        rows[row][rng.randrange(5)] = rng.choice(cell + HOSTILE[:10])
    if rng.random() < 0.1:
        rows = rng.choice([[], [[]], "rows", [[1, 2, 3, 4, 5, 6]]])
    name = rng.choice(["x" * 400, "a\nb", "\ud800"]) if rng.random() < 0.2 else f"r{rng.randrange(10**6)}.txt"
    return {"name": name, "headers": headers, "rows": rows}


def _raw_body(rng: random.Random) -> bytes:
    good = json.dumps({"upload_id": "raw", "files": [{"name": "r.txt", "content": results_file(nrep=2)}]})
    op = rng.randrange(6)
    if op == 5:          # a number of a JSON-form file replaced by a huge or odd literal
        lit = rng.choice(["9" * 5000, "-" + "9" * 30, "1e999", "-0", "1E+400", "0.0000000000001e-400"])
        where = rng.choice(["nprocs", "nodes", "nrep", "msize", "runtime"])
        head = {"machine": "m1", "mpi_library": "openmpi", "nprocs": "@nprocs", "nodes": "@nodes"}
        row = ["MPI_Allreduce", "@nrep", "@msize", "@runtime", "default"]
        text = json.dumps({"upload_id": f"num{rng.randrange(10**6)}",
                           "files": [{"name": "r.txt", "headers": head, "rows": [row]}]})
        text = text.replace(f'"@{where}"', lit)
        for k, v in (("nprocs", "2"), ("nodes", "1"), ("nrep", "0"), ("msize", "8"), ("runtime", "1e-5")):
            text = text.replace(f'"@{k}"', v)
        return text.encode()
    if op == 0:
        return good[:rng.randrange(len(good))].encode()
    if op == 1:
        i = rng.randrange(len(good))
        return (good[:i] + rng.choice(["{", "]", '"', "\\", "9" * 5000, "\x00", "-", "1e999"]) + good[i:]).encode()
    if op == 2:
        return ('{"upload_id": "deep", "files": ' + "[" * 5000 + "]" * 5000 + "}").encode()
    if op == 3:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
    return ('{"files": [' + ",".join(['{"name": "f%d", "content": ""}' % i for i in range(50)]) + '], "upload_id": "late"}').encode()


def test_fuzz_upload_parser(client, seeded, capsys, backend):
    rng = random.Random(SEED)
    seen: Counter = Counter()
    failures = []
    for case in range(UPLOAD_CASES):
        kind = rng.choice(["text", "text", "json", "raw"])
        uid = f"f{case}" if rng.random() < 0.9 else "f-reused"
        if kind == "text":
            r = client.post("/api/v1/uploads", headers=seeded["agent1"],
                            json={"upload_id": uid, "files": [{"name": f"r{case}.txt", "content": _mutate_text(rng)}]})
        elif kind == "json":
            r = client.post("/api/v1/uploads", headers=seeded["agent1"],
                            json={"upload_id": uid, "files": [_json_file(rng)]})
        else:
            r = client.post("/api/v1/uploads", headers={**seeded["agent1"], "Content-Type": "application/json"},
                            data=_raw_body(rng))
        seen[(kind, r.status_code)] += 1
        if r.status_code >= 500:
            failures.append((case, kind, r.status_code, r.get_data(as_text=True)[:200]))
        elif r.status_code >= 400:
            assert "error" in r.json, r.get_data(as_text=True)[:200]
    with capsys.disabled():
        print(f"\n[fuzz upload parser, {backend}] {UPLOAD_CASES} cases (seed {SEED}), 5xx: {len(failures)}; "
              + ", ".join(f"{k} {s}: {n}" for (k, s), n in sorted(seen.items())))
    assert failures == []
    assert sum(n for (k, s), n in seen.items() if s in (200, 201)) > 0, "the fuzzer reached a stored upload"


def _seed_pages(app, client, seeded, campaign_with_runs) -> dict:
    """A campaign, a stored upload and an analysis (with its candidate profile set) for the pages."""
    from service.analysis.synthetic import Design, simulate, to_text
    from service.store.db import db
    from service.store.models import MpiLibrary, ProfileSet, ProfileVersion, Run
    d = Design(collectives=["allreduce"], sizes=[8, 1024], mockups={"allreduce": ["allreduce_as_reduce_bcast"]},
               factors={("allreduce", "allreduce_as_reduce_bcast", 1024): 1 / 1.5}, nruns=3, nrep=8,
               machine="m1", campaign="c1", sigma_run=0.02, sigma_rep=0.02, p_outlier=0.0)
    campaign_with_runs([to_text(r) for r in simulate(d, np.random.default_rng(3))])
    assert client.put("/api/v1/campaigns/c1/jobs/j1", headers=seeded["agent1"],
                      json={"state": "COMPLETED", "log_tail": "done"}).status_code == 201
    r = client.post("/api/v1/analyses", headers=seeded["admin"], json={"machine": "m1", "library": "openmpi"})
    assert r.status_code == 201, r.json
    with app.app_context():
        lib = db.session.query(MpiLibrary).first()
        return {"lib": f"{lib.name}-{lib.version}", "lib_id": str(lib.id),
                "set": [str(x.id) for x in db.session.query(ProfileSet).all()],
                "version": [str(x.id) for x in db.session.query(ProfileVersion).all()],
                "run": [str(x.id) for x in db.session.query(Run).all()][:3], "analysis": r.json["id"]}


QUERY_NAMES = ["p", "layout", "campaign", "vs_campaign", "vs_lib", "key", "msize", "algorithm", "format",
               "candidate", "analysis", "pattern", "basetype", "next", "limit", "offset", "machine", "library",
               "version", "run", "call", "values", "upload_id", "days", "collective", "verdict", "test", "x\x00"]


def _enc(value) -> str:
    """Percent-encoded; lone surrogates and invalid UTF-8 sent as the raw bytes a client could send."""
    text = str(value)
    if re.search("[\ud800-\udfff]", text):
        return "".join(f"%{b:02X}" for b in text.encode("utf-8", "surrogatepass"))
    return quote(text, safe="")


def test_fuzz_pages_and_query_parameters(app, client, seeded, capsys, backend, tmp_path, campaign_with_runs):
    from service.auth import add_user
    from service.store.db import db
    app.config["PGMPI_PROFILE_ROOT"] = str(tmp_path / "profiles")
    s = _seed_pages(app, client, seeded, campaign_with_runs)
    with app.app_context():
        add_user("fuzzadmin", "fuzz-admin-password", "admin")
        db.session.commit()
    admin = app.test_client()
    page = admin.get("/auth/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    assert admin.post("/auth/login", data={"username": "fuzzadmin", "password": "fuzz-admin-password",
                                           "csrf_token": token}).status_code == 302
    rules = [r for r in app.url_map.iter_rules() if "GET" in r.methods and r.endpoint not in
             ("static", "dash.plotly_js")]
    assert len(rules) >= 30, [r.rule for r in rules]
    valid = {"machine": ["m1"], "lib": [s["lib"], s["lib_id"]], "key": ["allreduce", "bcast"], "campaign": ["c1"],
             "job_key": ["j1"], "upload_id": ["pages"], "run_id": s["run"], "series_id": ["1"],
             "analysis_id": [str(s["analysis"])], "version_id": s["version"], "set_id": s["set"]}
    ints = ["0", "1", "2147483647", "2147483648", "99999999999999999999"]
    query_values = HOSTILE + ["1", "2", "2x1", "json", "csv", "c1", "openmpi", s["lib_id"], "allreduce", "default",
                              "allreduce_as_reduce_bcast", "1024", "8"]
    rng = random.Random(SEED)
    seen: Counter = Counter()
    failures = []
    for case in range(PAGE_CASES):
        rule = rules[case % len(rules)]      # every route, in turn
        url = rule.rule
        for arg in rule.arguments:
            conv = rule._converters[arg].__class__.__name__
            if conv == "IntegerConverter":
                v = rng.choice(ints + valid.get(arg, ["1"]))
            else:
                v = rng.choice(valid.get(arg, ["x"]) * 3 + HOSTILE)
            url = re.sub(rf"<(?:[a-z]+:)?{arg}>", _enc(v) or "%20", url)
        params = [(rng.choice(QUERY_NAMES), rng.choice(query_values)) for _ in range(rng.randint(0, 3))]
        if params:
            url += "?" + "&".join(f"{_enc(k)}={_enc(v)}" for k, v in params)
        who = rng.choice(["anonymous", "viewer", "admin"])
        if who == "admin":
            r = admin.get(url)
        else:
            r = client.get(url, headers=seeded["viewer"] if who == "viewer" else {})
        seen[r.status_code] += 1
        if r.status_code >= 500:
            failures.append((url[:160], who, r.status_code))
    with capsys.disabled():
        print(f"\n[fuzz pages, {backend}] {PAGE_CASES} cases over {len(rules)} GET routes (seed {SEED}), "
              f"5xx: {len(failures)}; statuses " + ", ".join(f"{k}: {n}" for k, n in sorted(seen.items())))
    assert failures == []
    assert seen[200] > 0
