"""Screenshots of the dashboards for docs/images/, in Debian's headless Chromium (as the browser tests):

    .venv/bin/python deploy/screenshots.py http://127.0.0.1:8050 --password-file demo/admin-password.txt

against a dashboard `make demo` serves (two campaigns, e.g. after `make demo FRESH=1`, for the trends with
many campaigns). Pass --one-campaign URL for a dashboard with a single campaign (the trends empty state).
Every page is the real one: what it shows is checked before the picture is taken (the h1 of the page), so a
page that fails to render fails the script instead of leaving a stale image.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1400,1000", "--hide-scrollbars"):
        opts.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


def shot(drv, url: str, name: str, out: Path, full: bool = True, before=None) -> None:
    from selenium.webdriver.common.by import By
    drv.get(url)
    time.sleep(1.5)                           # plotly draws after load
    h1 = drv.find_elements(By.TAG_NAME, "h1")
    if not h1 or h1[0].text.split(":")[0].strip().isdigit():
        raise SystemExit(f"{url}: no page to take ({h1[0].text if h1 else 'no h1'})")
    if before:
        before(drv)
        time.sleep(0.5)
    drv.execute_script("window.scrollTo(0, 0)")
    if full:                                  # the whole page, not only the window
        h = drv.execute_script("return document.documentElement.scrollHeight")
        drv.set_window_size(1400, min(max(h, 600), 3000))
    drv.save_screenshot(str(out / name))
    drv.set_window_size(1400, 1000)
    print(out / name)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("--password-file", required=True, type=Path)
    ap.add_argument("--user", default="admin")
    ap.add_argument("--machine", default=None)
    ap.add_argument("--lib", default="mpich-4.0.2")
    ap.add_argument("--key", default="scan")
    ap.add_argument("--msize", default=1024, type=int)
    ap.add_argument("--one-campaign", default=None, help="base URL of a dashboard with one campaign")
    ap.add_argument("--out", default=ROOT / "docs" / "images", type=Path)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    from selenium.webdriver.common.by import By
    drv = browser()
    try:
        base = a.base.rstrip("/")
        machine = a.machine
        if machine is None:
            drv.get(base + "/")
            link = drv.find_element(By.LINK_TEXT, "heatmap").get_attribute("href")
            machine = link.split("/m/")[1].split("/")[0]
        lib = f"{base}/m/{machine}/{a.lib}"
        shot(drv, base + "/", "overview.png", a.out)
        shot(drv, lib + "/heatmap", "heatmap.png", a.out)
        shot(drv, lib + "/tuned", "tuned-now.png", a.out)
        drv.get(lib + "/heatmap")
        libs = [o.text for o in drv.find_elements(By.CSS_SELECTOR, "select[name=vs_lib] option") if o.text != "–"]
        if libs:
            shot(drv, f"{lib}/heatmap?vs_lib={libs[0]}", "heatmap-side-by-side.png", a.out)
        shot(drv, base + "/alerts", "alerts.png", a.out)
        shot(drv, f"{lib}/detail/{a.key}", "detail.png", a.out)
        shot(drv, f"{lib}/trends?key={a.key}&msize={a.msize}&algorithm=default", "trends-many-campaigns.png", a.out)
        if a.one_campaign:
            one = a.one_campaign.rstrip("/")
            shot(drv, f"{one}/m/{machine}/{a.lib}/trends?key={a.key}&msize={a.msize}&algorithm=default",
                 "trends-one-campaign.png", a.out)
        shot(drv, base + "/campaigns", "campaigns-expanded-logs.png", a.out,
             before=lambda d: [e.click() for e in d.find_elements(   # the newest campaign's jobs and logs
                 By.CSS_SELECTOR, "#campaigns > tbody > tr:nth-child(2) summary")])
        drv.get(base + "/auth/login")
        drv.find_element(By.NAME, "username").send_keys(a.user)
        drv.find_element(By.NAME, "password").send_keys(a.password_file.read_text().strip())
        drv.find_element(By.CSS_SELECTOR, "form.login [type=submit]").click()
        time.sleep(1)
        drv.get(base + "/profiles")
        link = drv.find_element(By.CSS_SELECTOR, "a[href*='/profiles/']").get_attribute("href")
        shot(drv, link, "profile-admin.png", a.out)
        shot(drv, base + "/glossary", "glossary.png", a.out)
    finally:
        drv.quit()


if __name__ == "__main__":
    main()
