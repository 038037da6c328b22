"""The layout switch of the dashboards: p = 4 measured on 1x4 and on 2x2 (three times slower there) are two
pills of one switch on the heatmap, detail and trend pages, never averaged together; the overview lists the
layouts of the latest analysis; a layout that was not measured is a 404 naming the valid ones. The browser
test clicks the switch in Chromium."""
from __future__ import annotations

import re

import pytest

from dash_helpers import analyse, raw_file, upload
from test_browser import browser, nav_click, serve, wait_plot  # noqa: F401  (browser: the fixture)

LIB = "/m/m1/openmpi-4.1.4"


def seed_layouts(c, tokens):
    A = tokens["admin"]
    assert c.post("/api/v1/machines", headers=A, json={"name": "m1", "nodes": 2, "cores_per_node": 4,
                                                        "interconnect": "tcp", "notes": ""}).status_code == 201
    assert c.post("/api/v1/campaigns", headers=A, json={"name": "n1", "machine": "m1", "definition": {},
                                                         "schedule": ""}).status_code == 201
    files = {f"p4_{nodes}n_{i}.txt": raw_file("m1", "openmpi", "4.1.4", 4, i, "n1", nodes=nodes,
                                               scale=1.0 if nodes == 1 else 3.0)
             for nodes in (1, 2) for i in range(3)}
    upload(c, A, files, "n1")


@pytest.mark.browser
def test_layout_switch_in_pages_and_in_the_browser(app, tokens, browser):
    """One seeded app for both halves (seeding and analysing is most of the cost)."""
    c = app.test_client()
    seed_layouts(c, tokens)
    analyse(app, c, tokens["admin"], "m1", "openmpi", "n1")
    check_pages(c)
    check_browser(app, browser)


def check_pages(c):
    html = c.get(f"{LIB}/heatmap").get_data(as_text=True)
    pills = re.findall(r'<span id="layouts">(.*?)</span>', html, re.S)[0]
    assert "[p=4 2x2]" in pills and "p=4 1x4" in pills        # the last layout is selected by default
    assert "layout=1x4" in pills
    one = c.get(f"{LIB}/detail/allreduce?layout=1x4&format=json").get_json()
    two = c.get(f"{LIB}/detail/allreduce?layout=2x2&format=json").get_json()
    assert (one["layout"], two["layout"]) == ("1x4", "2x2")
    m1 = {(r["algorithm"], r["msize"]): r for r in one["measurements"]}
    m2 = {(r["algorithm"], r["msize"]): r for r in two["measurements"]}
    assert m1.keys() == m2.keys() and all(r["mpiruns"] == 3 for r in m1.values())   # 3 each, not 6 mixed
    assert all(2.5 < m2[k]["median_s"] / m1[k]["median_s"] < 3.5 for k in m1)
    assert {v["msize"] for v in two["violations"]} and all(v["msize"] for v in one["violations"])
    # old links (?p=) keep working: the first layout of that p
    assert c.get(f"{LIB}/detail/allreduce?p=4&format=json").get_json()["layout"] == "1x4"
    t = c.get(f"{LIB}/trends?key=allreduce&msize=1024&algorithm=default&layout=2x2&format=json").get_json()
    assert t["layout"] == "2x2" and len(t["y"]) == 1
    assert t["y"][0] > 2.5 * c.get(f"{LIB}/trends?key=allreduce&msize=1024&algorithm=default&layout=1x4"
                                    "&format=json").get_json()["y"][0]
    bad = c.get(f"{LIB}/heatmap?layout=3x2")
    assert bad.status_code == 404 and "p=4 1x4, p=4 2x2" in bad.get_data(as_text=True)
    html = c.get("/").get_data(as_text=True)          # the overview lists the latest analysis' layouts
    span = re.findall(r'<span class="layouts">(.*?)</span>', html, re.S)
    assert span and "p=4 1x4" in span[0] and "p=4 2x2" in span[0], html


def check_browser(app, browser):
    from selenium.webdriver.common.by import By
    srv, base = serve(app)
    try:
        browser.get(base + f"{LIB}/heatmap")
        wait_plot(browser, "#hm1")
        assert "p=4 2x2" in browser.find_element(By.TAG_NAME, "h1").text
        nav_click(browser, browser.find_element(By.LINK_TEXT, "p=4 1x4"))
        wait_plot(browser, "#hm1")
        assert "p=4 1x4" in browser.find_element(By.TAG_NAME, "h1").text
        assert browser.find_element(By.ID, "layouts").text.count("[") == 1
        nav_click(browser, browser.find_element(By.LINK_TEXT, "allreduce"))
        wait_plot(browser, "#latency")
        assert "p=4 1x4" in browser.find_element(By.TAG_NAME, "h1").text   # the detail keeps the layout
        nav_click(browser, browser.find_element(By.LINK_TEXT, "p=4 2x2"))
        wait_plot(browser, "#latency")
        assert "[p=4 2x2]" in browser.find_element(By.ID, "layouts").text
    finally:
        srv.shutdown()
