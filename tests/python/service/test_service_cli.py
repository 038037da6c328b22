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
    r = run(main, ["user", "add", "carol", "--role", "admin", "--password", "s3cret-passphrase", *opt])
    assert r.exit_code == 0 and "carol (admin)" in r.output
    r = run(main, ["user", "add", "carol", "--password", "s3cret-passphrase", *opt])
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


def test_cli_without_database_says_what_to_do(tmp_path, monkeypatch):
    """No DATABASE_URL and no embedded file: a message naming DATABASE_URL, no traceback, no file left."""
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("PGMPI_INSTANCE", str(tmp_path / "inst"))
    for args in (["token", "list"], ["user", "add", "dave", "--password", "s3cret-passphrase"], ["user", "list"]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 1 and "set DATABASE_URL" in r.output and "pgmpi db upgrade" in r.output, r.output
        assert r.exception is None or isinstance(r.exception, SystemExit)
    assert not (tmp_path / "inst" / "pgmpi.sqlite").exists()


def test_cli_user_list_passwd_delete(database_url, tmp_path, monkeypatch, client, app):
    monkeypatch.setenv("PGMPI_INSTANCE", str(tmp_path / "inst"))
    run = CliRunner().invoke
    opt = ["--database-url", database_url]
    assert run(main, ["user", "add", "erin", "--role", "viewer", "--password", "first-passphrase", *opt]).exit_code == 0
    r = run(main, ["token", "create", "erin-script", "--role", "viewer", "--user", "erin", *opt])
    assert r.exit_code == 0
    assert "erin\tviewer\tactive" in run(main, ["user", "list", *opt]).output
    r = run(main, ["user", "passwd", "erin", "--password", "short", *opt])
    assert r.exit_code == 1 and "at least 12" in r.output
    assert run(main, ["user", "passwd", "erin", "--password", "second-passphrase", *opt]).exit_code == 0
    from service.auth import check_login
    with app.app_context():
        assert check_login("erin", "first-passphrase") is None and check_login("erin", "second-passphrase") is not None
    r = run(main, ["user", "delete", "erin", "--yes", *opt])
    assert r.exit_code == 0 and "1 token(s) revoked" in r.output
    assert "erin" not in run(main, ["user", "list", *opt]).output
    assert "erin-script\tviewer\t-" in (lst := run(main, ["token", "list", *opt]).output) and "revoked" in lst
    r = run(main, ["user", "delete", "nobody", "--yes", *opt])
    assert r.exit_code == 1 and "no user 'nobody'" in r.output
