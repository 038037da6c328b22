"""Flask app factory of the pgmpi-site service.

Database: `config["SQLALCHEMY_DATABASE_URI"]`, else the environment's DATABASE_URL (PostgreSQL in
production, e.g. postgresql+psycopg://user:pw@host/db), else an embedded SQLite file
`<instance>/pgmpi.sqlite` where <instance> is PGMPI_INSTANCE or <repo>/.state/service.
"""
from __future__ import annotations

import logging
import os
import secrets
import time
from pathlib import Path
from typing import Any

from flask import Flask, g, jsonify, request
from sqlalchemy import event
from sqlalchemy.engine import Engine

from service.store.db import db, migrate

ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger("service.request")


def _default_instance() -> Path:
    return Path(os.environ.get("PGMPI_INSTANCE") or ROOT / ".state" / "service").resolve()


def _secret_key(instance: Path) -> str:
    if os.environ.get("PGMPI_SECRET_KEY"):
        return os.environ["PGMPI_SECRET_KEY"]
    path = instance / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_hex(32))
        path.chmod(0o600)
    return path.read_text().strip()


def _flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    return default if raw is None else raw.strip().lower() in ("1", "true", "yes", "on")


def normalise_url(url: str) -> str:
    """postgres:// and postgresql:// mean psycopg 3 here (the only driver installed)."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


@event.listens_for(Engine, "connect")
def _sqlite_pragmas(dbapi_conn, _record) -> None:
    if type(dbapi_conn).__module__.startswith("sqlite3"):
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA busy_timeout=10000")
        cur.close()


def create_app(config: dict[str, Any] | None = None) -> Flask:
    config = dict(config or {})
    instance = Path(config.pop("INSTANCE_PATH", None) or _default_instance())
    instance.mkdir(parents=True, exist_ok=True)
    app = Flask("service", root_path=str(ROOT / "service"), instance_path=str(instance),
                template_folder=str(ROOT / "templates"),
                static_folder=str(ROOT / "static") if (ROOT / "static").is_dir() else None)
    url = config.get("SQLALCHEMY_DATABASE_URI") or os.environ.get("DATABASE_URL") \
        or f"sqlite:///{instance / 'pgmpi.sqlite'}"
    app.config.update(
        SQLALCHEMY_DATABASE_URI=normalise_url(url),
        SQLALCHEMY_ENGINE_OPTIONS={"pool_pre_ping": True},
        MAX_CONTENT_LENGTH=int(os.environ.get("PGMPI_MAX_UPLOAD_BYTES", 256 * 1024 * 1024)),
        # one file object of an upload: a worker's memory follows this, not the body (service/README.md)
        MAX_UPLOAD_FILE_BYTES=int(os.environ.get("PGMPI_MAX_UPLOAD_FILE_BYTES", 32 * 1024 * 1024)),
        WTF_CSRF_TIME_LIMIT=None,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        # Secure cookies when the site is served over TLS (deploy/service/pgmpi-site.service turns it on)
        SESSION_COOKIE_SECURE=_flag("PGMPI_SECURE_COOKIES", False),
        REMEMBER_COOKIE_SECURE=_flag("PGMPI_SECURE_COOKIES", False),
        # login throttle: failures per user name / per address within the window lock that name / address
        LOGIN_WINDOW_SECONDS=int(os.environ.get("PGMPI_LOGIN_WINDOW_SECONDS", 900)),
        LOGIN_MAX_FAILURES_PER_USER=int(os.environ.get("PGMPI_LOGIN_MAX_FAILURES_PER_USER", 5)),
        LOGIN_MAX_FAILURES_PER_ADDRESS=int(os.environ.get("PGMPI_LOGIN_MAX_FAILURES_PER_ADDRESS", 20)),
        # proxies in front that set X-Forwarded-For/-Proto (nginx: 1); the login throttle needs the client
        PROXY_COUNT=int(os.environ.get("PGMPI_PROXY_COUNT", 0)),
        JSON_SORT_KEYS=False,
        PUBLIC_DASHBOARDS=os.environ.get("PGMPI_PUBLIC_DASHBOARDS", "1").lower() not in ("0", "false", "no"),
    )
    app.config.update(config)
    app.config["SQLALCHEMY_DATABASE_URI"] = normalise_url(app.config["SQLALCHEMY_DATABASE_URI"])
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = _secret_key(instance)

    if app.config["PROXY_COUNT"] > 0:
        from werkzeug.middleware.proxy_fix import ProxyFix
        n = app.config["PROXY_COUNT"]
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=n, x_proto=n)

    db.init_app(app)
    migrate.init_app(app, db, directory=str(ROOT / "migrations"), render_as_batch=True, compare_type=True)

    from service.api import api_bp
    from service.auth import init_auth
    from service.dashboards.routes import init_app as init_dashboards
    init_auth(app)
    app.register_blueprint(api_bp)
    init_dashboards(app)

    @app.get("/healthz")
    def healthz():
        try:
            db.session.execute(db.text("SELECT 1"))
            return jsonify(status="ok", database=db.engine.dialect.name)
        except Exception as exc:  # the health check must answer, not raise
            return jsonify(status="error", error=type(exc).__name__), 503

    @app.before_request
    def _t0():
        g.t0 = time.perf_counter()

    @app.after_request
    def _access_log(resp):
        ms = (time.perf_counter() - g.get("t0", time.perf_counter())) * 1000
        log.info("request", extra={"method": request.method, "path": request.path, "status": resp.status_code,
                                   "ms": round(ms, 2), "actor": g.get("actor_name")})
        return resp

    return app
