"""Issue 32: alerts people receive. A real SMTP server (deploy/mailsink.py, aiosmtpd) and a local HTTP
receiver get the alerts of a planted regression (the default 5 % slower from night 20 of 22) once, and nothing
for an A/A series of nights; the page, the feed and the OpenAPI document show the same alerts."""
from __future__ import annotations

import email
import email.policy
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from dash_helpers import raw_file, upload

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def mailsink(tmp_path):
    folder = tmp_path / "mail"
    proc = subprocess.Popen([sys.executable, str(ROOT / "deploy" / "mailsink.py"), "--dir", str(folder), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stdout.readline()
    if "listening on" not in first:
        proc.kill()
        pytest.fail(f"deploy/mailsink.py did not start (aiosmtpd installed? `deploy/venv.sh`): {first}"
                    f"{proc.stderr.read()}")
    port = int(first.split("listening on ")[1].split(",")[0].rsplit(":", 1)[1])
    yield {"port": port, "dir": folder}
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def webhook():
    got: list = []

    class H(BaseHTTPRequestHandler):
        def do_POST(self):
            got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *a):
            pass
    srv = HTTPServer(("127.0.0.1", 0), H)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield {"url": f"http://127.0.0.1:{srv.server_address[1]}/hook", "got": got}
    srv.shutdown()


def nights(c, tokens, n, shift_at=None, factor=1.05, lib="openmpi", ver="4.1.4", start=0):
    A = tokens["admin"]
    c.post("/api/v1/machines", headers=A, json={"name": "m1", "nodes": 1, "cores_per_node": 8,
                                                "interconnect": "shm", "notes": ""})
    c.post("/api/v1/machines/m1/libraries", headers=A, json={"name": lib, "version": ver, "module": f"{lib}/{ver}"})
    for k in range(start, start + n):
        camp = f"night-{k:02d}"
        assert c.post("/api/v1/campaigns", headers=A, json={"name": camp, "machine": "m1", "definition": {},
                                                             "schedule": ""}).status_code == 201
        scale = factor if shift_at is not None and k >= shift_at else 1.0
        upload(c, A, {f"{camp}_{i}.txt": raw_file("m1", lib, ver, 2, i, camp, seed=k, scale=scale, sizes=(1024, 65536))
                      for i in range(2)}, camp)


def send(app, mailsink, webhook, tmp_path, monkeypatch):
    """`pgmpi alerts send` with a site file that chooses regressions, by mail and webhook."""
    from service.cli import main
    conf = tmp_path / "site.conf"
    conf.write_text(f"profile_root = {app.config['PGMPI_PROFILE_ROOT']}\nalerts_types = regression\n"
                    f"alerts_mail_to = hpc-admins@example.org\nalerts_smtp = 127.0.0.1:{mailsink['port']}\n"
                    f"alerts_webhook = {webhook['url']}\n")
    monkeypatch.setenv("PGMPI_SITE_CONFIG", str(conf))
    r = CliRunner().invoke(main, ["alerts", "send", "--database-url", app.config["SQLALCHEMY_DATABASE_URI"]])
    assert r.exit_code == 0, r.output
    return r.output


def mails(mailsink) -> list:
    return [email.message_from_bytes(p.read_bytes(), policy=email.policy.default)
            for p in sorted(mailsink["dir"].glob("*.eml"))]


def test_a_planted_regression_is_mailed_and_posted_once(app, tokens, mailsink, webhook, tmp_path, monkeypatch):
    c = app.test_client()
    nights(c, tokens, 22, shift_at=20)
    out = send(app, mailsink, webhook, tmp_path, monkeypatch)
    assert "4 new alert(s): 4 mailed, 4 posted" in out, out       # 2 collectives x 2 sizes, p = 2
    [m] = mails(mailsink)
    body = m.get_content()
    assert "regression" in m["Subject"] and m["To"] == "hpc-admins@example.org"
    assert "What changed since the last night" in body and "slower over the nights night-20 and night-21" in body
    assert "nothing is live for this library" in body
    [hook] = webhook["got"]
    assert len(hook["alerts"]) == 4 and all(1.03 < a["ratio"] < 1.08 for a in hook["alerts"])
    assert all(a["covered"] is False and a["campaign"] == "night-21" for a in hook["alerts"])
    # sent once: a second run and the next night of the same episode send nothing
    assert "0 new alert(s)" in send(app, mailsink, webhook, tmp_path, monkeypatch)
    nights(c, tokens, 1, shift_at=0, start=22)
    assert "0 new alert(s)" in send(app, mailsink, webhook, tmp_path, monkeypatch)
    assert len(mails(mailsink)) == 1 and len(webhook["got"]) == 1
    # the page, the feed and the API say the same
    html = c.get("/alerts").get_data(as_text=True)
    assert "slower over the nights night-21 and night-22" in html and "nothing is live" in html
    api = c.get("/api/v1/alerts", headers=tokens["viewer"]).get_json()
    assert {a["type"] for a in api["alerts"]} == {"regression"}
    assert "/alerts" in c.get("/api/v1/openapi.json").get_json()["paths"]


def test_an_aa_series_of_nights_sends_nothing(app, tokens, mailsink, webhook, tmp_path, monkeypatch):
    c = app.test_client()
    nights(c, tokens, 22)
    assert "0 new alert(s)" in send(app, mailsink, webhook, tmp_path, monkeypatch)
    assert mails(mailsink) == [] and webhook["got"] == []
    assert 'id="no-alerts"' in c.get("/alerts").get_data(as_text=True)


def test_bad_alert_settings_are_named():
    from service.workflows.notify import Settings
    with pytest.raises(ValueError, match="alerts_types: unknown regresion; valid: new_violation"):
        Settings.from_site({"alerts_types": "regresion"})
    with pytest.raises(ValueError, match="alerts_smtp"):
        Settings.from_site({"alerts_smtp": "localhost"})
