"""`pgmpi db upgrade`, `pgmpi user add`, `pgmpi token create|list|revoke` through the real CLI group."""
from __future__ import annotations

import json

from click.testing import CliRunner

from service.cli import main


def test_cli_db_user_token(database_url, tmp_path, monkeypatch, client, app):
    monkeypatch.setenv("PGMPI_INSTANCE", str(tmp_path / "inst"))
    run = CliRunner().invoke
    opt = ["--database-url", database_url]
    r = run(main, ["db", "upgrade", *opt])
    assert r.exit_code == 0, r.output
    r = run(main, ["user", "add", "carol", "--role", "admin", "--password", "s3cret-pass", *opt])
    assert r.exit_code == 0 and "carol (admin)" in r.output
    r = run(main, ["user", "add", "carol", "--password", "s3cret-pass", *opt])
    assert r.exit_code != 0 and "exists" in r.output
    r = run(main, ["token", "create", "agent-x", "--role", "agent", *opt])
    assert r.exit_code != 0 and "bound to a machine" in r.output
    r = run(main, ["token", "create", "ci", "--role", "admin", "--json", *opt])
    assert r.exit_code == 0, r.output
    info = json.loads(r.output)
    secret = info["token"]
    # the token works against the same database, and the secret is not stored anywhere in the listing
    hdr = {"Authorization": f"Bearer {secret}"}
    assert client.post("/api/v1/machines", headers=hdr, json={"name": "cli-m", "nodes": 1,
                                                              "cores_per_node": 2}).status_code == 201
    r = run(main, ["token", "create", "agent-cli", "--role", "agent", "--machine", "cli-m", *opt])
    assert r.exit_code == 0
    listing = run(main, ["token", "list", *opt]).output
    assert "ci\tadmin" in listing and "agent-cli\tagent\tcli-m" in listing and secret not in listing
    r = run(main, ["token", "revoke", str(info["id"]), *opt])
    assert r.exit_code == 0
    assert client.get("/api/v1/me", headers=hdr).status_code == 401
    assert "revoked" in run(main, ["token", "list", *opt]).output
