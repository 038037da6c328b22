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


UPLOAD_ENDPOINTS = {"api.post_upload"}
PUBLIC_ASSETS = {"dash.plotly_js", "static"}
# plotly.js draws with inline styles and <style> rules; it needs no eval for the charts these pages draw
CSP = ("default-src 'self'; script-src 'self' 'nonce-{nonce}'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; object-src 'none'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def csp_nonce() -> str:
    """This request's nonce for inline <script nonce="..."> (templates: {{ csp_nonce() }})."""
    if "csp_nonce" not in g:
        g.csp_nonce = secrets.token_urlsafe(16)
    return g.csp_nonce


def _url_rule() -> None:
    """Every path segment and query parameter of every route through the one URL rule
    (pgmpi_formats.limits.check_url_value: no NUL, no lone surrogate, <= 1000 characters): 400 with the
    parameter's name, before a value reaches a database that cannot hold it."""
    from pgmpi_formats import limits
    items = [("path", k, v) for k, v in (request.view_args or {}).items() if isinstance(v, str)]
    items += [("query", k, v) for k, v in request.args.items(multi=True)]
    for where, k, v in items:
        try:
            limits.check_url_value(k, f"{where} parameter name")
            limits.check_url_value(v, f"{where} parameter {k[:40]!r}")
        except limits.LimitError as e:
            if request.blueprint == "api":
                from service.api.common import ApiError
                raise ApiError(400, "bad_parameter", str(e), field=k[:80]) from None
            from flask import abort
            abort(400, description=str(e))


def _body_limit() -> None:
    """The largest body this route reads (413 beyond it, before anything is read when Content-Length
    says so; a chunked body is cut off at the limit): an anonymous request costs a worker at most the form
    limit, since the API reads its bodies only after the bearer token is checked."""
    from flask import current_app
    c = current_app.config
    if request.endpoint in UPLOAD_ENDPOINTS:
        request.max_content_length = c["MAX_CONTENT_LENGTH"]
    elif request.blueprint == "api":
        request.max_content_length = min(c["API_MAX_BODY_BYTES"], c["MAX_CONTENT_LENGTH"])
    else:
        request.max_content_length = min(c["FORM_MAX_BODY_BYTES"], c["MAX_CONTENT_LENGTH"])


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
        # per-route body limits (_body_limit): the uploads route takes MAX_CONTENT_LENGTH, read while it
        # arrives and only after the token is checked; the other API writes a JSON body read after the token
        # check; every form (login, logout, publish, rollback) a small body, which CSRF reads before any login
        API_MAX_BODY_BYTES=int(os.environ.get("PGMPI_API_MAX_BODY_BYTES", 32 * 1024 * 1024)),
        FORM_MAX_BODY_BYTES=int(os.environ.get("PGMPI_FORM_MAX_BODY_BYTES", 64 * 1024)),
        WTF_CSRF_TIME_LIMIT=None,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        # Secure cookies when the site is served over TLS (deploy/service/pgmpi-site.service turns it on)
        SESSION_COOKIE_SECURE=_flag("PGMPI_SECURE_COOKIES", False),
        REMEMBER_COOKIE_SECURE=_flag("PGMPI_SECURE_COOKIES", False),
        # login throttle: failures per user name / per address within the window lock that name / address
        PASSWORD_MIN_LENGTH=int(os.environ.get("PGMPI_PASSWORD_MIN_LENGTH", 12)),
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

    # first of the before_request functions: the limit is in place before CSRF reads a form
    app.before_request(_body_limit)
    app.before_request(_url_rule)

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

    @app.context_processor
    def _csp_nonce():
        return {"csp_nonce": csp_nonce}

    @app.after_request
    def _security_headers(resp):
        """docs/admin-guide.md, Security: a Content-Security-Policy (scripts of this site only, inline ones
        by nonce; plotly's inline styles allowed), no framing, no sniffing; nothing a login or a token
        showed is kept by a browser or proxy cache."""
        resp.headers.setdefault("Content-Security-Policy", CSP.format(nonce=csp_nonce()))
        resp.headers.setdefault("X-Content-Type-Options", "nosniff")
        resp.headers.setdefault("Referrer-Policy", "same-origin")
        from flask_login import current_user
        private = bool(request.headers.get("Authorization")) or request.blueprint == "auth" or \
            bool(getattr(current_user, "is_authenticated", False))
        if private and request.endpoint not in PUBLIC_ASSETS:
            resp.headers["Cache-Control"] = "no-store"
        return resp

    @app.after_request
    def _access_log(resp):
        ms = (time.perf_counter() - g.get("t0", time.perf_counter())) * 1000
        log.info("request", extra={"method": request.method, "path": request.path, "status": resp.status_code,
                                   "ms": round(ms, 2), "actor": g.get("actor_name")})
        return resp

    return app
