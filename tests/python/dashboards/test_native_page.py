"""The native-algorithms page: heatmap relative to the best per size, the default against the best, the searches
replayed over the stored exhaustive data; an empty state without native runs, blanks for unmeasured cells."""
from __future__ import annotations

import random

import pytest

from dash_helpers import raw_file, upload
from test_browser import browser, serve, wait_plot  # noqa: F401  (browser: the fixture)

LIB = "/m/m1/openmpi-4.1.4"
# planted medians (seconds) per label and size; native:linear measured at 8 B only (a blank elsewhere)
TIMES = {"default": {8: 4e-6, 65536: 60e-6, 1048576: 900e-6},
         "native:binomial": {8: 3e-6, 65536: 50e-6, 1048576: 1000e-6},
         "native:chain": {8: 6e-6, 65536: 70e-6, 1048576: 800e-6},
         "native:chain:seg=1024": {8: 9e-6, 65536: 40e-6, 1048576: 700e-6},
         "native:chain:seg=8192": {8: 9e-6, 65536: 45e-6, 1048576: 500e-6},
         "native:linear": {8: 5e-6}}


def native_file(mpirun: int) -> str:
    rnd = random.Random(mpirun)
    lines = ["#@pgmpi_format=1", "#@machine=m1", "#@mpi_library=openmpi", "#@mpi_version=4.1.4",
             "#@module=openmpi/4.1.4", "#@nodes=1", "#@ppn=2", "#@nprocs=2", f"#@mpirun_index={mpirun}",
             "#@slurm_job_id=", "#@campaign=nat", "#@clock=MPI_Wtime", "test nrep msize runtime_sec algorithm"]
    for label, per in TIMES.items():
        for m, t in per.items():
            lines += [f"MPI_Bcast {r} {m} {t * (1 + 0.002 * rnd.random()):.10f} {label}" for r in range(8)]
    return "\n".join(lines) + "\n"


@pytest.mark.browser
def test_native_page_from_stored_runs(app, tokens, browser):
    """One seeded app for the page checks and the browser (Chromium draws the heatmap)."""
    c = app.test_client()
    A = tokens["admin"]
    assert c.post("/api/v1/machines", headers=A, json={"name": "m1", "nodes": 1, "cores_per_node": 2,
                                                        "interconnect": "shm", "notes": ""}).status_code == 201
    for camp in ("nat", "plain"):
        assert c.post("/api/v1/campaigns", headers=A, json={"name": camp, "machine": "m1", "definition": {},
                                                             "schedule": ""}).status_code == 201
    # a campaign without native algorithms: the empty state, not an error
    upload(c, A, {"plain.txt": raw_file("m1", "openmpi", "4.1.4", 2, 0, "plain")}, "plain")
    html = c.get(f"{LIB}/native?key=bcast&campaign=plain").get_data(as_text=True)
    assert 'id="native-empty"' in html and "native:all" in html
    upload(c, A, {f"nat{i}.txt": native_file(i) for i in range(3)}, "nat")
    v = c.get(f"{LIB}/native?key=bcast&campaign=nat&p=2&format=json").get_json()
    assert v["algorithms"][0] == "default" and v["sizes"] == [8, 65536, 1048576]
    z = dict(zip(v["algorithms"], v["z"]))
    assert z["native:binomial"][0] == 1.0 and z["native:chain:seg=1024"][1] == 1.0 and z["native:chain:seg=8192"][2] == 1.0
    assert abs(z["default"][2] - 1.8) < 0.01 and z["native:linear"][1:] == [None, None]
    d = {r["msize"]: r for r in v["default"]}
    assert d[1048576]["best"] == "native:chain:seg=8192" and abs(d[1048576]["default_over_best"] - 1.8) < 0.01
    s = {r["search"]: r for r in v["searches"]}
    # exhaustive: every native variant whose segment is below the size (seed paper), at each size
    assert s["exhaustive"]["experiments"] == 3 + 4 + 4 and s["exhaustive"]["max_loss"] == 0
    for k in ("mgd", "smgd"):
        assert 0 < s[k]["experiments"] <= s["exhaustive"]["experiments"] and s[k]["max_loss"] >= 0
        assert s[k]["time"] <= s["exhaustive"]["time"] + 1e-12
        assert s[k]["experiments"] >= s["scan bound"]["experiments"]
    # the scan bound: one experiment per method and size (3 methods at 8 B, binomial and chain above)
    assert s["scan bound"]["experiments"] == 3 + 2 + 2 and s["scan bound"]["max_loss"] is None
    html = c.get(f"{LIB}/native?key=bcast&campaign=nat&p=2").get_data(as_text=True)
    assert 'id="native-heatmap"' in html and 'id="native-searches"' in html and "1.80×" in html
    assert 'native algorithms</a>' in c.get(f"{LIB}/heatmap").get_data(as_text=True)
    assert c.get(f"{LIB}/native?key=nosuch").status_code == 404
    # validation records of the native file (service/api/native.py stores them); any stored value is text
    assert 'id="native-no-validations"' in html
    from service.store.db import db
    from service.store.models import NativeValidation
    with app.app_context():
        db.session.add_all([
            NativeValidation(machine="m1", library="openmpi", version="4.1.4", file_name="native.rules", digest="ab" * 32,
                             nprocs=2, state="failed", job="slurm:7", actor="agent",
                             verdict={"problems": ["<script>x</script> (b) did not run", "p2", "p3", "p4"],
                                      "cells": [{"collective": "bcast", "msize": 65536, "label": "native:binomial",
                                                 "effect": 1.21, "ci_low": 1.1, "ci_high": 1.33, "ci_mpiruns": 6},
                                                {"collective": "bcast", "msize": 8, "label": "native:knomial_text",
                                                 "effect": "1.5"}]}),
            NativeValidation(machine="m1", library="openmpi", version="4.1.4", file_name="native.rules", digest="cd" * 32,
                             nprocs=2, state="passed", job="slurm:8", actor="agent", verdict=["not", "a", "dict"])])
        db.session.commit()
    html = c.get(f"{LIB}/native?key=bcast&campaign=nat&p=2").get_data(as_text=True)
    assert 'id="native-validations"' in html and "<script>x</script>" not in html and "&lt;script&gt;" in html
    assert "(+1 more)" in html and "passed" in html and "slurm:8" in html and "abababababab" in html
    # each changed cell's effect with its 95 % interval over the validation's rounds; a stored text is no number
    assert "bcast 65536 B native:binomial: 1.21× (95 % CI 1.10–1.33×, 6 rounds)" in html and "native:knomial_text" not in html
    from selenium.webdriver.common.by import By
    srv, base = serve(app)
    try:
        browser.get(base + f"{LIB}/native?key=bcast&campaign=nat&p=2")
        wait_plot(browser, "#native-heatmap")
        assert browser.find_elements(By.CSS_SELECTOR, "#native-heatmap .heatmaplayer")
        assert "smgd" in browser.find_element(By.ID, "native-searches").text
    finally:
        srv.shutdown()
