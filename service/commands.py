"""`pgmpi db|user|token|serve`: the service's command-line side.

The database is DATABASE_URL (PostgreSQL, e.g. postgresql+psycopg://pgmpi:pgmpi@127.0.0.1:55432/pgmpi),
or --database-url, else the embedded SQLite file of service.app.
"""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path

import click
from sqlalchemy import select

DB_OPT = click.option("--database-url", envvar="DATABASE_URL", default=None,
                      help="SQLAlchemy URL (default: $DATABASE_URL, else the embedded SQLite file)")
MIGRATIONS = str(Path(__file__).resolve().parents[1] / "migrations")


NO_DATABASE = ("set DATABASE_URL (e.g. postgresql+psycopg://pgmpi:pw@127.0.0.1:5432/pgmpi) or pass --database-url; "
               "for the embedded SQLite file run `pgmpi db upgrade` first")


@contextmanager
def app_context(database_url: str | None, create: bool = False, must_exist: bool = False):
    """The app bound to the database; unless `create`, a database without our schema is an error that
    says what to do (and no empty SQLite file is left behind by the attempt). `must_exist`: a SQLite file
    that does not exist is an error even with `create` (a command that only reads never creates one)."""
    from service.app import create_app
    from sqlalchemy import inspect
    from sqlalchemy.exc import OperationalError
    if database_url and database_url.startswith("sqlite:///") and not database_url.startswith("sqlite:////"):
        # a relative SQLite path means the current directory here (Flask-SQLAlchemy would take the instance dir)
        database_url = "sqlite:///" + str(Path(database_url[len("sqlite:///"):]).resolve())
    cfg = {"SQLALCHEMY_DATABASE_URI": database_url} if database_url else {}
    app = create_app(cfg)
    url = app.config["SQLALCHEMY_DATABASE_URI"]
    where = url.split("@")[-1]
    if (not create or must_exist) and url.startswith("sqlite:///") and not Path(url[len("sqlite:///"):]).exists():
        _fail(f"no database: {url[len('sqlite:///'):]} does not exist; {NO_DATABASE}")
    if not create:
        with app.app_context():
            from service.store.db import db as sa
            try:
                tables = inspect(sa.engine).get_table_names()
            except OperationalError as exc:
                _fail(f"cannot reach the database {where}: {str(exc.orig).strip().splitlines()[0]}; {NO_DATABASE}")
            if "users" not in tables:
                _fail(f"the database {where} has no pgmpi schema; run `pgmpi db upgrade` "
                      f"(with the same DATABASE_URL / --database-url)")
    with app.app_context():
        yield app


def _fail(msg: str) -> None:
    raise click.ClickException(msg)


@click.group("db")
def db() -> None:
    """Create or upgrade the database schema."""


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True)
@DB_OPT
def db_upgrade(revision: str, database_url: str | None) -> None:
    """Create the schema or upgrade it to REVISION (Alembic)."""
    import flask_migrate
    with app_context(database_url, create=True) as app:
        flask_migrate.upgrade(directory=MIGRATIONS, revision=revision)
        click.echo(f"database at {revision}: {app.config['SQLALCHEMY_DATABASE_URI'].split('@')[-1]}")


@db.command("downgrade")
@click.option("--revision", default="-1", show_default=True)
@DB_OPT
def db_downgrade(revision: str, database_url: str | None) -> None:
    """Step the schema down (default: one revision)."""
    import flask_migrate
    with app_context(database_url):
        flask_migrate.downgrade(directory=MIGRATIONS, revision=revision)


@db.command("current")
@DB_OPT
def db_current(database_url: str | None) -> None:
    """Print the schema revision of the database (nothing when it has no schema yet; an error, and no file
    created, when the SQLite file does not exist)."""
    import flask_migrate
    with app_context(database_url, create=True, must_exist=True):
        flask_migrate.current(directory=MIGRATIONS)


@click.group("user")
def user() -> None:
    """Manage people who log in to the dashboards."""


@user.command("add")
@click.argument("username")
@click.option("--role", type=click.Choice(["viewer", "agent", "admin"]), default="viewer", show_default=True)
@click.option("--password", prompt=True, hide_input=True, confirmation_prompt=True,
              envvar="PGMPI_PASSWORD", help="prompted when not given (or $PGMPI_PASSWORD)")
@DB_OPT
def user_add(username: str, role: str, password: str, database_url: str | None) -> None:
    """Add a user who logs in with USERNAME and a password (stored hashed)."""
    from service.auth import add_user
    from service.store.db import db as sa
    with app_context(database_url):
        try:
            add_user(username, password, role)
        except ValueError as e:
            _fail(str(e))
        sa.session.commit()
        click.echo(f"user {username} ({role}) added")


def print_rows(header: list[str], rows: list[list], as_json: bool, empty: str) -> None:
    """The one way a `pgmpi ... list` prints: a header line and tab-separated rows, or with --json a list of
    objects named by the header (an empty list, and the hint on stderr, when there is nothing)."""
    if as_json:
        click.echo(json.dumps([dict(zip(header, r)) for r in rows], indent=1, default=str))
    else:
        click.echo("\t".join(header))
        for r in rows:
            click.echo("\t".join("-" if x is None else str(x) for x in r))
    if not rows and not as_json:
        click.echo(empty, err=True)


JSON_OPT = click.option("--json", "as_json", is_flag=True, help="a JSON list of objects instead of the table")


def _iso(t) -> str | None:
    return t.isoformat(timespec="seconds") if t else None


@user.command("list")
@JSON_OPT
@DB_OPT
def user_list(as_json: bool, database_url: str | None) -> None:
    """List users (name, role, state, created); never the password hashes."""
    from service.store.db import db as sa
    from service.store.models import User
    with app_context(database_url):
        rows = sa.session.scalars(select(User).order_by(User.username)).all()
        print_rows(["username", "role", "state", "created"],
                   [[u.username, u.role, "active" if u.active else "disabled", _iso(u.created_at)] for u in rows],
                   as_json, "no users yet; add one with `pgmpi user add NAME --role admin`")


@user.command("passwd")
@click.argument("username")
@click.option("--password", prompt="New password", hide_input=True, confirmation_prompt=True,
              envvar="PGMPI_PASSWORD", help="prompted when not given (or $PGMPI_PASSWORD)")
@DB_OPT
def user_passwd(username: str, password: str, database_url: str | None) -> None:
    """Set USERNAME's password (at least 12 characters, $PGMPI_PASSWORD_MIN_LENGTH); ends the user's sessions."""
    from service.auth import _user, set_password
    from service.store.db import db as sa
    with app_context(database_url):
        try:
            set_password(_user(username), password)
        except ValueError as e:
            _fail(str(e))
        sa.session.commit()
        click.echo(f"password of {username} changed")


@user.command("delete")
@click.argument("username")
@click.option("--yes", is_flag=True, help="do not ask for confirmation")
@DB_OPT
def user_delete(username: str, yes: bool, database_url: str | None) -> None:
    """Delete USERNAME; the tokens that belong to the user are revoked (the audit log keeps the history)."""
    from service.auth import delete_user
    from service.store.db import db as sa
    if not yes:
        click.confirm(f"delete user {username}?", abort=True)
    with app_context(database_url):
        try:
            revoked = delete_user(username)
        except ValueError as e:
            _fail(str(e))
        sa.session.commit()
        click.echo(f"user {username} deleted" + (f"; {revoked} token(s) revoked" if revoked else ""))


@click.group("token")
def token() -> None:
    """Manage API tokens of agents and scripts."""


@token.command("create")
@click.argument("name")
@click.option("--role", type=click.Choice(["viewer", "agent", "admin"]), default="agent", show_default=True)
@click.option("--machine", default=None, help="the machine an agent token acts for (required for agents)")
@click.option("--user", "username", default=None, help="the user the token belongs to (optional)")
@click.option("--expires-days", type=int, default=365, show_default=True,
              help="the token's lifetime in days (1..1830); create a new one before it ends")
@click.option("--json", "as_json", is_flag=True, help="print {id, token, ...} as JSON")
@DB_OPT
def token_create(name: str, role: str, machine: str | None, username: str | None, expires_days: int,
                 as_json: bool, database_url: str | None) -> None:
    """Create a bearer token. The secret is printed ONCE; only its hash is stored."""
    from service.auth import create_token
    from service.store.db import db as sa
    with app_context(database_url):
        try:
            row, secret = create_token(name, role, machine, username, expires_days=expires_days)
        except ValueError as e:
            _fail(str(e))
        sa.session.commit()
        if as_json:
            click.echo(json.dumps({"id": row.id, "name": name, "role": role, "machine": machine, "token": secret,
                                   "expires_at": row.expires_at.isoformat(timespec="seconds")}))
        else:
            click.echo(secret)
            click.echo(f"token {row.id} ({name}, {role}{', machine ' + machine if machine else ''}, expires "
                       f"{row.expires_at:%Y-%m-%d}); store it now: it cannot be shown again", err=True)


@token.command("revoke")
@click.argument("token_id", type=int)
@DB_OPT
def token_revoke(token_id: int, database_url: str | None) -> None:
    """Revoke token TOKEN_ID (see `pgmpi token list`)."""
    from service.auth import revoke_token
    from service.store.db import db as sa
    with app_context(database_url):
        try:
            revoke_token(token_id)
        except ValueError as e:
            _fail(str(e))
        sa.session.commit()
        click.echo(f"token {token_id} revoked")


@token.command("list")
@JSON_OPT
@DB_OPT
def token_list(as_json: bool, database_url: str | None) -> None:
    """List tokens (id, name, role, machine, prefix, created, state, expires); never the secrets.  The state is
    active, revoked <when>, expired, or "user inactive" (the owner was disabled)."""
    from service.auth import token_usable
    from service.store.db import db as sa
    from service.store.models import ApiToken

    def state(t) -> str:
        if t.revoked_at:
            return "revoked " + _iso(t.revoked_at)
        if t.user is not None and not t.user.active:
            return "user inactive"
        return "active" if token_usable(t) else "expired"
    with app_context(database_url):
        rows = [[t.id, t.name, t.role, t.machine.name if t.machine else None, t.prefix + "...", _iso(t.created_at),
                 state(t), _iso(t.expires_at)]
                for t in sa.session.scalars(select(ApiToken).order_by(ApiToken.id))]
        print_rows(["id", "name", "role", "machine", "prefix", "created", "state", "expires"], rows, as_json,
                   "no tokens yet; create one with `pgmpi token create NAME --role agent --machine M`")


@click.group("machine")
def machine() -> None:
    """The machines the service knows and their MPI libraries."""


@machine.command("list")
@JSON_OPT
@DB_OPT
def machine_list(as_json: bool, database_url: str | None) -> None:
    """List machines with their MPI libraries (name-version) and their campaigns' count."""
    from sqlalchemy import func
    from service.store.db import db as sa
    from service.store.models import Campaign, Machine
    with app_context(database_url):
        ncamp = dict(sa.session.execute(select(Campaign.machine_id, func.count(Campaign.id))
                                        .group_by(Campaign.machine_id)).all())
        rows = [[m.name, m.nodes, ", ".join(sorted(f"{l.name}-{l.version}" for l in m.libraries)) or None,
                 ncamp.get(m.id, 0)]
                for m in sa.session.scalars(select(Machine).order_by(Machine.name))]
        print_rows(["machine", "nodes", "libraries", "campaigns"], rows, as_json,
                   "no machines yet (POST /api/v1/machines, or the agent's first campaign)")


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--workers", default=2, show_default=True, type=int, help="gunicorn worker processes")
@click.option("--dev", is_flag=True, help="Flask's development server instead of gunicorn")
@click.option("--upgrade/--no-upgrade", default=True, show_default=True, help="upgrade the schema first")
@DB_OPT
def serve(host: str, port: int, workers: int, dev: bool, upgrade: bool, database_url: str | None) -> None:
    """Serve the API and dashboards (gunicorn; structured JSON logs on stderr)."""
    from service import logs
    from service.app import create_app
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    if upgrade:
        import flask_migrate
        with app_context(database_url, create=True):     # serving a new database creates its schema
            flask_migrate.upgrade(directory=MIGRATIONS)
    logs.configure()
    app = create_app()
    if dev:
        app.run(host=host, port=port)
        return
    from gunicorn.app.base import BaseApplication

    class _Gunicorn(BaseApplication):
        def load_config(self):
            self.cfg.set("bind", f"{host}:{port}")
            self.cfg.set("workers", workers)
            self.cfg.set("accesslog", None)
            self.cfg.set("logconfig_dict", _gunicorn_logconfig())

        def load(self):
            return app

    _Gunicorn().run()


def _gunicorn_logconfig() -> dict:
    from service.logs import GUNICORN_LOGCONFIG
    return GUNICORN_LOGCONFIG


def _alerts():
    from service.alerts_cli import alerts
    return alerts


COMMANDS = [db, user, token, machine, serve, _alerts()]
