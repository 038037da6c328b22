"""Browser tests in Debian's headless Chromium against the app served on 127.0.0.1 by the test.

- overview, heatmap and detail render a real campaign: pgmpi-bench output (Open MPI, 2 ranks,
  3 mpiruns) uploaded through the API and analysed;
- an admin publishes a candidate and rolls it back with the page's buttons (files on disk checked);
- a viewer sees no publish button, and a POST to the endpoint from the viewer's browser is refused.
Screenshots go to $PGMPI_SCREENSHOT_DIR (default: the test's tmp dir).
"""
from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest
from werkzeug.serving import make_server

from dash_helpers import (add_users_and_tokens, analyse, mpi_install, mpirun_cmd, raw_file,
                          measured_candidate, upload)

pytestmark = pytest.mark.browser

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


@pytest.fixture
def browser(tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    for exe in (CHROMIUM, CHROMEDRIVER):
        if not os.access(exe, os.X_OK):
            pytest.fail(f"{exe} missing: apt-get install chromium chromium-driver (deploy/install-packages.sh)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                 f"--user-data-dir={tmp_path / 'chromium-profile'}", "--window-size=1400,1000"):
        opts.add_argument(flag)
    drv = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    drv.set_page_load_timeout(60)
    yield drv
    drv.quit()


def serve(app):
    srv = make_server("127.0.0.1", 0, app, threaded=True)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    return srv, f"http://127.0.0.1:{srv.server_port}"


@pytest.fixture
def live(db_app):
    """(app, base url, tokens) on SQLite and on a scratch database of the real PostgreSQL."""
    tokens = add_users_and_tokens(db_app)
    srv, base = serve(db_app)
    yield db_app, base, tokens
    srv.shutdown()


def shots_dir(tmp_path) -> Path:
    d = Path(os.environ.get("PGMPI_SCREENSHOT_DIR") or tmp_path / "shots")
    d.mkdir(parents=True, exist_ok=True)
    return d


def browser_login(drv, base, user, password):
    from selenium.webdriver.common.by import By
    drv.get(base + "/auth/login")
    drv.find_element(By.NAME, "username").send_keys(user)
    drv.find_element(By.NAME, "password").send_keys(password)
    nav_click(drv, drv.find_element(By.CSS_SELECTOR, "form.login [type=submit]"))
    from selenium.webdriver.support.ui import WebDriverWait
    WebDriverWait(drv, 30).until(lambda d: "/auth/login" not in d.current_url
                                 and d.find_elements(By.TAG_NAME, "header"))
    assert user in drv.find_element(By.TAG_NAME, "header").text


def nav_click(drv, element, timeout=60):
    """Click something that loads a new page and wait until the new page has loaded.

    The old page is marked with a window property that the new page does not have.  (Selenium's
    staleness_of polls the old element, and chromedriver can answer that poll mid-navigation with an
    'unhandled inspector error' instead of 'stale': seen in CI.)  Any WebDriverException while the
    navigation is under way means "not yet"."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait
    drv.execute_script("window.__pgmpiOldPage = true;")
    element.click()

    def new_page_loaded(d):
        try:
            return d.execute_script("return window.__pgmpiOldPage !== true && document.readyState === 'complete'")
        except WebDriverException:
            return False
    WebDriverWait(drv, timeout).until(new_page_loaded)


def wait_plot(drv, css, timeout=20):
    from selenium.webdriver.support.ui import WebDriverWait
    WebDriverWait(drv, timeout).until(
        lambda d: d.execute_script(f"return document.querySelectorAll('{css} .main-svg').length") > 0)


def bench_campaign(tmp_path, campaign, machine="testbox", mpiruns=3) -> dict[str, str]:
    """Real pgmpi-bench output (Open MPI, 2 ranks): one file per mpirun."""
    prefix = mpi_install("openmpi")
    files = {}
    for i in range(mpiruns):
        out = tmp_path / f"{campaign}_{i}.txt"
        cmd = mpirun_cmd("openmpi", 2) + [str(prefix / "bin" / "pgmpi-bench"), "--calls=allreduce,bcast,scatter",
                                          "--sizes=8,1K,16K,256K", "--nrep=15", f"--machine={machine}",
                                          f"--campaign={campaign}", f"--mpirun-index={i}", "--module-name=openmpi/4.1.4",
                                          f"--output={out}"]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        files[out.name] = out.read_text()
    return files


@pytest.mark.mpi
def test_pages_render_a_real_campaign(live, browser, tmp_path):
    from selenium.webdriver.common.by import By
    app, base, tokens = live
    A = tokens["admin"]
    c = app.test_client()
    assert c.post("/api/v1/machines", headers=A, json={"name": "testbox", "nodes": 1, "cores_per_node": 2,
                                                        "interconnect": "shm", "notes": ""}).status_code == 201
    files = bench_campaign(tmp_path, "nightly-real")
    version = next(l.split("=", 1)[1] for l in files[next(iter(files))].splitlines() if l.startswith("#@mpi_version="))
    c.post("/api/v1/machines/testbox/libraries", headers=A, json={"name": "openmpi", "version": version,
                                                                  "module": "openmpi/4.1.4"})
    assert c.post("/api/v1/campaigns", headers=A, json={"name": "nightly-real", "machine": "testbox",
                                                         "definition": {}, "schedule": ""}).status_code == 201
    up = upload(c, A, files, "nightly-real")
    assert up["timings"] > 0
    analyse(app, c, A, "testbox", "openmpi", "nightly-real")
    lib = f"openmpi-{version}"
    shots = shots_dir(tmp_path)
    browser_login(browser, base, "viewer1", "viewer-password")

    browser.get(base + "/")
    table = browser.find_element(By.ID, "overview")
    assert "testbox" in table.text and lib in table.text and "brave" in table.text
    browser.save_screenshot(str(shots / "overview.png"))

    nav_click(browser, browser.find_element(By.LINK_TEXT, "heatmap"))
    wait_plot(browser, ".heatmap")
    rows = browser.find_elements(By.CSS_SELECTOR, "table.hm-table tr")
    assert [r.find_element(By.TAG_NAME, "th").text for r in rows[1:]] == ["allreduce", "bcast", "scatter"]
    cells = browser.find_elements(By.CSS_SELECTOR, "table.hm-table td")
    assert len(cells) == 12 and all(cell.text.endswith(("x", "x *")) for cell in cells)
    # the chart's x axis reads like the table's header (B/KiB), the axes and the colour bar say what they show
    hm = browser.execute_script("const g=document.querySelector('.heatmap');return {x:g.data[0].x,"
                                "xt:g.layout.xaxis.title.text,yt:g.layout.yaxis.title.text,"
                                "cb:g.data[0].colorbar.title.text,cbt:g.data[0].colorbar.ticktext}")
    header = [th.text for th in rows[0].find_elements(By.TAG_NAME, "th")][1:]
    assert hm["x"] == header == ["8 B", "1 KiB", "16 KiB", "256 KiB"]
    assert hm["xt"] == "message size per call" and hm["yt"] == "collective"
    assert "speed-up" in hm["cb"] and "2×" in hm["cbt"] and "½×" in hm["cbt"]
    # one colour scale on every page (¼× .. 4×), never a scale set by this page's data
    assert browser.execute_script("const d=document.querySelector('.heatmap').data[0];return [d.zmin,d.zmax]") \
        == [-2, 2]
    counts = browser.find_element(By.CSS_SELECTOR, "p.status-counts").text
    assert counts.startswith("p = 2: ") and "verified" in counts and "(all p, all guidelines)" in counts
    browser.save_screenshot(str(shots / "heatmap.png"))

    nav_click(browser, browser.find_element(By.LINK_TEXT, "allreduce"))
    wait_plot(browser, "#latency")
    ntraces = browser.execute_script("return document.getElementById('latency').data.length")
    assert ntraces == 4  # default + the three Allreduce mock-ups that pgmpi-bench measured
    medians = browser.find_element(By.ID, "medians").text
    assert "allreduce_as_reduce_bcast" in medians and "256 KiB" in medians
    ax = browser.execute_script("const g=document.getElementById('latency');return {xt:g.layout.xaxis.title.text,"
                                "yt:g.layout.yaxis.title.text,ticks:g.layout.xaxis.ticktext,"
                                "y:g.data[0].y[0],med:g.data[0].customdata}")
    assert ax["xt"].startswith("message size") and ax["yt"].startswith("time per call (µs")
    assert ax["ticks"] == ["8 B", "1 KiB", "16 KiB", "256 KiB"]
    assert 0.1 < ax["y"] < 1e5           # µs: an 8-byte Allreduce on 2 ranks, not seconds (1e-6)
    # the log axis labels every tick with its whole value (plotly's default labels 20 and 50 as "2" and "5")
    yticks = browser.execute_script("return [...document.querySelectorAll('#latency .ytick text')]"
                                    ".map(t=>t.textContent)")
    yvals = [float(t.replace("\u2212", "-")) for t in yticks]
    assert len(yvals) >= 2 and yvals == sorted(set(yvals)), yticks
    browser.save_screenshot(str(shots / "detail.png"))
    r = c.get(f"/m/testbox/{lib}/detail/nosuchcollective")
    assert r.status_code == 404 and "no collective &#39;nosuchcollective&#39;" in r.get_data(as_text=True)

    # one campaign: the trends page says it needs two instead of plotting one dot
    browser.get(base + f"/m/testbox/{lib}/trends?key=allreduce&msize=1024&p=2")
    assert "needs two campaigns" in browser.find_element(By.ID, "trend-empty").text
    assert not browser.find_elements(By.ID, "trend")
    browser.save_screenshot(str(shots / "trends-one-campaign.png"))
    browser.get(base + f"/m/testbox/{lib}/trends?key=allreduce&msize=777&p=2")
    assert "No campaign has measured MPI_Allreduce at 777 B" in browser.find_element(By.ID, "trend-empty").text
    # a second campaign (the same files under another name): now a chart with titled axes
    assert c.post("/api/v1/campaigns", headers=A, json={"name": "nightly-two", "machine": "testbox",
                                                         "definition": {}, "schedule": ""}).status_code == 201
    upload(c, A, {k.replace("nightly-real", "nightly-two"): v.replace("nightly-real", "nightly-two")
                  for k, v in files.items()}, "nightly-two")
    browser.get(base + f"/m/testbox/{lib}/trends?key=allreduce&msize=1024&p=2")
    wait_plot(browser, "#trend")
    tr = browser.execute_script("const g=document.getElementById('trend');return {n:g.data[0].x.length,"
                                "xt:g.layout.xaxis.title.text,yt:g.layout.yaxis.title.text}")
    assert tr["n"] == 2 and tr["xt"].startswith("campaign") and tr["yt"].startswith("time per call (µs")
    browser.save_screenshot(str(shots / "trends-many-campaigns.png"))
    # side by side: both panels on the same scale, each chart inside its panel, the page no wider than the window
    browser.get(base + f"/m/testbox/{lib}/heatmap?p=2&campaign=nightly-real&vs_campaign=nightly-two")
    wait_plot(browser, "#hm2")
    side = browser.execute_script(
        "return [...document.querySelectorAll('.heatmap')].map(g=>[g.data[0].zmin,g.data[0].zmax,"
        "g.querySelector('.main-svg').getBoundingClientRect().right<=g.parentElement.getBoundingClientRect().right+1])")
    assert side == [[-2, 2, True], [-2, 2, True]], side
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 1400
    browser.save_screenshot(str(shots / "heatmap-side-by-side.png"))
    # the new pages render in the browser: what is tuned now, the alerts
    browser.get(base + f"/m/testbox/{lib}/tuned")
    assert "What is tuned now" in browser.find_element(By.TAG_NAME, "h1").text
    assert browser.find_element(By.ID, "live-summary").text.startswith(("Nothing is live", "Live:"))
    browser.save_screenshot(str(shots / "tuned-now.png"))
    browser.get(base + "/alerts")
    assert browser.find_element(By.TAG_NAME, "h1").text.startswith("Alerts")
    browser.save_screenshot(str(shots / "alerts.png"))
    browser.get(base + "/no/such/page")
    assert browser.find_element(By.LINK_TEXT, "overview").get_attribute("href").endswith("/")
    # a finished job with a long log line: the state follows the jobs, the expanded log wraps in its box
    long_line = "mpirun: " + "x" * 3000
    assert c.put("/api/v1/campaigns/nightly-real/jobs/openmpi-n1x2", headers=A, json={
        "library": lib, "module": "openmpi/4.1.4", "nodes": 1, "ppn": 2, "state": "COMPLETED",
        "log_tail": long_line}).status_code in (200, 201)
    browser.get(base + "/campaigns")
    table = browser.find_element(By.ID, "campaigns")
    assert "nightly-real" in table.text
    row = next(r for r in table.find_elements(By.CSS_SELECTOR, "tr") if "nightly-real" in r.text)
    assert row.find_element(By.CSS_SELECTOR, "td.state").text == "finished"      # not "planned" at 1/1
    for summary in browser.find_elements(By.CSS_SELECTOR, "#campaigns summary"):
        summary.click()
    width = browser.execute_script("return document.documentElement.scrollWidth")
    assert width <= 1400, f"the expanded log widened the page to {width} px"
    browser.save_screenshot(str(shots / "campaigns-expanded-logs.png"))


def seed_candidate(app, c, tokens):
    A = tokens["admin"]
    c.post("/api/v1/machines", headers=A, json={"name": "m1", "nodes": 1, "cores_per_node": 8,
                                                "interconnect": "shm", "notes": ""})
    c.post("/api/v1/machines/m1/libraries", headers=A, json={"name": "openmpi", "version": "4.1.4",
                                                             "module": "openmpi/4.1.4"})
    c.post("/api/v1/campaigns", headers=A, json={"name": "n1", "machine": "m1", "definition": {}, "schedule": ""})
    upload(c, A, {f"p{p}_{i}.txt": raw_file("m1", "openmpi", "4.1.4", p, i, "n1") for p in (2, 4) for i in range(3)},
           "n1")
    analyse(app, c, A, "m1", "openmpi", "n1")
    from datetime import datetime, timezone
    from service.store.db import db
    from service.store.models import ProfileSet, ValidationFigure
    with app.app_context():   # what the agent's validation run reports: tuned not slower where it redirects
        ps = db.session.query(ProfileSet).one()
        v = measured_candidate(ps)
        assert v.files, "the analysis made no candidate profile"
        v.state, v.validated_at = "validated", datetime.now(timezone.utc)
        for size in (65536, 1048576):
            db.session.add(ValidationFigure(version_id=v.id, collective="allreduce", msize=size, nprocs=2,
                                            default_time=2e-4, tuned_time=1.4e-4, speedup=2e-4 / 1.4e-4))
        db.session.commit()
        return ps.id, v.id, dict(v.files)


def test_admin_publishes_and_rolls_back(live, browser, tmp_path):
    from selenium.webdriver.common.by import By
    app, base, tokens = live
    set_id, vid, files = seed_candidate(app, app.test_client(), tokens)
    root = Path(app.config["PGMPI_PROFILE_ROOT"])
    current = root / "m1" / "openmpi-4.1.4" / "current"
    browser_login(browser, base, "admin1", "admin-password")
    browser.get(base + f"/profiles/{set_id}")
    assert browser.find_element(By.ID, "current-version").text == "nothing"
    assert "gain of the redirected ranges ≥ 1.43× (2 redirected, 0 dropped, 0 control points)" in \
        browser.find_element(By.ID, "versions").text
    assert "+MPI_Allreduce" in browser.find_element(By.ID, "diff").text
    browser.save_screenshot(str(shots_dir(tmp_path) / "profile_before.png"))
    nav_click(browser, browser.find_element(By.ID, "publish"))
    assert "Published as version 1" in browser.find_element(By.CSS_SELECTOR, ".flash").text
    assert browser.find_element(By.ID, "current-version").text == "version 1"
    assert {p.name: p.read_text() for p in current.iterdir()} == files
    hist = browser.find_element(By.ID, "history").text
    assert "user:admin1" in hist and "publish" in hist
    browser.save_screenshot(str(shots_dir(tmp_path) / "profile_published.png"))
    nav_click(browser, browser.find_element(By.ID, "rollback"))
    assert "Rolled back to version 0" in browser.find_element(By.CSS_SELECTOR, ".flash").text
    assert os.readlink(current) == "versions/0" and list(current.iterdir()) == []
    assert "rollback" in browser.find_element(By.ID, "history").text
    browser.save_screenshot(str(shots_dir(tmp_path) / "profile_rolled_back.png"))


def test_viewer_cannot_publish(live, browser, tmp_path):
    from selenium.webdriver.common.by import By
    app, base, tokens = live
    set_id, vid, _ = seed_candidate(app, app.test_client(), tokens)
    browser_login(browser, base, "viewer1", "viewer-password")
    browser.get(base + f"/profiles/{set_id}")
    assert browser.find_elements(By.ID, "publish") == [] and browser.find_elements(By.ID, "rollback") == []
    csrf = browser.find_element(By.CSS_SELECTOR, "header input[name=csrf_token]").get_attribute("value")
    status = browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const body = new URLSearchParams({version_id: arguments[1], csrf_token: arguments[2]});
        fetch(arguments[0], {method: 'POST', body: body, credentials: 'same-origin'}).then(r => done(r.status));
    """, f"{base}/profiles/{set_id}/publish", str(vid), csrf)
    assert status == 403
    root = Path(app.config["PGMPI_PROFILE_ROOT"])
    assert not (root / "m1").exists()


@pytest.mark.mpi
def test_published_from_the_page_reaches_the_application(live, browser, tmp_path):
    """Publish with the admin's button, run an application under the tuned library with the module's
    PGMPITUNE_PROFILE_DIR=<root>/<machine>/<mpi>-<version>/current: the #@pgmpi report shows the
    redirected sizes; after the rollback button it does not."""
    from selenium.webdriver.common.by import By
    from test_publish_mpi import APP, run_app
    app, base, tokens = live
    set_id, vid, files = seed_candidate(app, app.test_client(), tokens)
    assert "allreduce_p2.prf" in files or any("MPI_Allreduce" in t and "\n2\n" in t for t in files.values())
    exe = tmp_path / "app"
    (tmp_path / "app.c").write_text(APP)
    subprocess.run(["mpicc.openmpi", "-O1", "-o", str(exe), str(tmp_path / "app.c")], check=True)
    current = Path(app.config["PGMPI_PROFILE_ROOT"]) / "m1" / "openmpi-4.1.4" / "current"
    browser_login(browser, base, "admin1", "admin-password")
    browser.get(base + f"/profiles/{set_id}")
    nav_click(browser, browser.find_element(By.ID, "publish"))
    assert browser.find_element(By.ID, "current-version").text == "version 1"
    tuned = run_app("openmpi", exe, current)
    assert tuned[65536] == "allreduce_as_reduce_bcast"     # the violated size is redirected
    assert tuned[8] == tuned[1024] == "default"            # the others are not
    nav_click(browser, browser.find_element(By.ID, "rollback"))
    assert browser.find_element(By.ID, "current-version").text == "version 0"
    assert set(run_app("openmpi", exe, current).values()) == {"default"}
