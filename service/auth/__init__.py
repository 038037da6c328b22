"""Access control: people log in (Flask-Login, hashed passwords, CSRF-protected forms), agents and
scripts use bearer tokens (stored as SHA-256, shown once, revocable).  Roles viewer < agent < admin;
an agent token is bound to one machine."""
from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Optional

from flask import Flask, current_app, g, request
from flask_login import LoginManager, current_user
from flask_wtf.csrf import CSRFProtect
from sqlalchemy import delete, select, update
from werkzeug.security import check_password_hash, generate_password_hash

from pgmpi_formats import limits
from service.store.db import db
from service.store.models import ROLE_RANK, ROLES, ApiToken, AuditLog, LoginFailure, Machine, User

login_manager = LoginManager()
csrf = CSRFProtect()
TOKEN_PREFIX = "pgmpi_"


@dataclass
class Principal:
    """Who is calling: a token or a logged-in user."""
    name: str
    role: str
    machine_id: Optional[int] = None
    kind: str = "token"

    def at_least(self, role: str) -> bool:
        return ROLE_RANK[self.role] >= ROLE_RANK[role]


def hash_token(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


PASSWORD_MIN = 12      # default of PASSWORD_MIN_LENGTH ($PGMPI_PASSWORD_MIN_LENGTH)


def check_password(password: str) -> None:
    """At least PASSWORD_MIN_LENGTH characters (docs/admin-guide.md, Security: length, no composition rules)."""
    least = int(current_app.config.get("PASSWORD_MIN_LENGTH", PASSWORD_MIN)) if current_app else PASSWORD_MIN
    if not isinstance(password, str) or len(password) < least:
        raise ValueError(f"password must have at least {least} characters")
    if limits.bad_char(password):
        raise ValueError("password: " + limits.bad_char(password))


def add_user(username: str, password: str, role: str = "viewer") -> User:
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    if not username or len(username) > 80:
        raise ValueError("username must be 1..80 characters")
    limits.check_username(username)       # no line breaks or NUL: names appear in the audit log
    check_password(password)
    if db.session.scalar(select(User).where(User.username == username)):
        raise ValueError(f"user {username!r} exists already")
    user = User(username=username, password_hash=hash_password(password), role=role)
    db.session.add(user)
    db.session.flush()
    audit("cli", "create", "user", username, {"role": role})
    return user


def _user(username: str) -> User:
    user = db.session.scalar(select(User).where(User.username == username))
    if user is None:
        raise ValueError(f"no user {username!r} (see `pgmpi user list`)")
    return user


def delete_user(username: str, actor: str = "cli") -> int:
    """Delete a user; returns how many of the user's tokens were revoked (they stay listed, detached)."""
    user = _user(username)
    revoked = 0
    for t in db.session.scalars(select(ApiToken).where(ApiToken.user_id == user.id)):
        if t.revoked_at is None:
            t.revoked_at = datetime.now(timezone.utc)
            revoked += 1
        t.user_id = None
    db.session.delete(user)
    audit(actor, "delete", "user", username, {"tokens_revoked": revoked})
    return revoked


def hash_password(password: str) -> str:
    """werkzeug's hash with the app's PASSWORD_HASH_METHOD (default: werkzeug's, scrypt)."""
    method = current_app.config.get("PASSWORD_HASH_METHOD") if current_app else None
    return generate_password_hash(password, method) if method else generate_password_hash(password)


_DUMMY_HASH: dict[str, str] = {}


def _dummy_hash() -> str:
    """A hash of the same method as real ones: an unknown user name costs the same time as a known one."""
    method = str(current_app.config.get("PASSWORD_HASH_METHOD"))
    if method not in _DUMMY_HASH:
        _DUMMY_HASH[method] = hash_password(secrets.token_hex(16))
    return _DUMMY_HASH[method]


class LoginRefused(Exception):
    """Too many failed logins for this user name or this address within the window: retry_after seconds."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


def _login_limits() -> tuple[int, int, int]:
    cfg = current_app.config
    return (int(cfg.get("LOGIN_WINDOW_SECONDS", 900)), int(cfg.get("LOGIN_MAX_FAILURES_PER_USER", 5)),
            int(cfg.get("LOGIN_MAX_FAILURES_PER_ADDRESS", 20)))


def check_login(username: str, password: str, address: str = "") -> Optional[User]:
    """The user when name and password match, else None; a failure is recorded (login_failures) and audited.
    Raises LoginRefused, without looking at the password, once the user name or the address has had
    LOGIN_MAX_FAILURES_PER_USER / _PER_ADDRESS failures within LOGIN_WINDOW_SECONDS (unknown names too,
    so a lockout tells nothing about which names exist).  Commits.

    Atomic under concurrency: the attempt is recorded (and committed) BEFORE the counts are read and the
    password is checked.  Of any number of concurrent attempts, the one whose record commits last sees
    every other's record, so no more than the limit are ever checked within a window, on SQLite and on
    PostgreSQL alike; a refused attempt takes its record back, a successful one clears the name's."""
    window, per_user, per_address = _login_limits()
    now = datetime.now(timezone.utc)
    since = now - timedelta(seconds=window)
    username, address = (username or "")[:80], (address or "")[:64]
    attempt = LoginFailure(at=now, username=username, address=address)
    db.session.add(attempt)
    db.session.commit()
    for col, value, limit, what in ((LoginFailure.username, username, per_user, "this user name"),
                                    (LoginFailure.address, address, per_address, "this address")):
        if limit <= 0:
            continue
        recent = db.session.scalars(select(LoginFailure.at).where(col == value, LoginFailure.at >= since,
                                                                  LoginFailure.id != attempt.id)
                                    .order_by(LoginFailure.at.desc()).limit(limit)).all()
        if len(recent) >= limit:
            oldest = min(_aware(t) for t in recent)
            retry = max(1, int((oldest + timedelta(seconds=window) - now).total_seconds()) + 1)
            db.session.execute(delete(LoginFailure).where(LoginFailure.id == attempt.id),
                               execution_options={"synchronize_session": False})
            audit(f"address:{address}", "login-refused", "user", username,
                  {"address": address, "why": f"{len(recent)} failed logins of {what} in {window} s"})
            db.session.commit()
            raise LoginRefused(f"too many failed logins for {what}; try again in {retry} s", retry)
    user = db.session.scalar(select(User).where(User.username == username))
    ok = check_password_hash(user.password_hash if user else _dummy_hash(), password)
    if user is not None and user.active and ok:
        db.session.execute(delete(LoginFailure).where(LoginFailure.username == username),
                           execution_options={"synchronize_session": False})
        return user
    # keep the table small: failures older than a day (or the window) count for nothing any more
    db.session.execute(delete(LoginFailure).where(LoginFailure.at < now - timedelta(seconds=max(window, 86400))),
                       execution_options={"synchronize_session": False})
    audit(f"address:{address}", "login-failed", "user", username, {"address": address})
    db.session.commit()
    return None


def _aware(t: datetime) -> datetime:
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)   # SQLite returns naive UTC


def invalidate_sessions(user: User) -> None:
    """End every login session of this user on the server side (logout, password change): the session
    carries the user's session_version, which no longer matches.  The caller commits."""
    user.session_version = (user.session_version or 0) + 1


def set_password(user: User, password: str, actor: str = "cli") -> None:
    """Change a password and end the user's sessions.  The caller commits."""
    check_password(password)
    user.password_hash = hash_password(password)
    invalidate_sessions(user)
    audit(actor, "password", "user", user.username)


TOKEN_DAYS_DEFAULT = 365
TOKEN_DAYS_MAX = 5 * 366      # no token lives for ever: an agent's is renewed at most every five years


def create_token(name: str, role: str, machine: Optional[str] = None, user: Optional[str] = None,
                 actor: str = "cli", expires_days: int = TOKEN_DAYS_DEFAULT) -> tuple[ApiToken, str]:
    """Create a token valid for `expires_days` days (1..TOKEN_DAYS_MAX); returns (row, secret). The secret is
    not stored and cannot be shown again."""
    if isinstance(expires_days, bool) or not isinstance(expires_days, int) or \
            not 1 <= expires_days <= TOKEN_DAYS_MAX:
        raise ValueError(f"a token's lifetime is 1..{TOKEN_DAYS_MAX} days, not {expires_days!r}")
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    machine_row = None
    if role == "agent":
        if not machine:
            raise ValueError("an agent token must be bound to a machine (--machine)")
    if machine:
        machine_row = db.session.scalar(select(Machine).where(Machine.name == machine))
        if machine_row is None:
            raise ValueError(f"unknown machine {machine!r}")
    user_row = None
    if user:
        user_row = db.session.scalar(select(User).where(User.username == user))
        if user_row is None:
            raise ValueError(f"unknown user {user!r}")
    limits.check_text(name, "token name", 120)
    if machine:
        limits.check_machine(machine, "--machine")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken(name=name, prefix=secret[:12], token_hash=hash_token(secret), role=role,
                   machine=machine_row, user=user_row,
                   expires_at=datetime.now(timezone.utc) + timedelta(days=expires_days))
    db.session.add(row)
    db.session.flush()
    audit(actor, "create", "api_token", str(row.id), {"name": name, "role": role, "machine": machine,
                                                      "expires_at": row.expires_at.isoformat(timespec="seconds")})
    return row, secret


def revoke_token(token_id: int, actor: str = "cli") -> ApiToken:
    row = db.session.get(ApiToken, token_id)
    if row is None:
        raise ValueError(f"no token with id {token_id}")
    if row.revoked_at is None:
        row.revoked_at = datetime.now(timezone.utc)
        audit(actor, "revoke", "api_token", str(row.id), {"name": row.name})
    return row


def audit(actor: str, action: str, entity: str, entity_id: Optional[str], details: Optional[dict] = None) -> None:
    db.session.add(AuditLog(actor=actor, action=action, entity=entity, entity_id=entity_id, details=details))


def current_principal() -> Optional[Principal]:
    """The caller of this request: bearer token first, then the login session."""
    if "principal" in g:
        return g.principal
    principal = None
    header = request.headers.get("Authorization", "")
    if header[:7].lower() == "bearer ":
        secret = header[7:].strip()
        row = db.session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(secret)))
        if row is not None and token_usable(row):
            principal = Principal(name=f"token:{row.id}:{row.name}", role=row.role, machine_id=row.machine_id)
            _touch(row)
    elif request.method in ("GET", "HEAD", "OPTIONS") and current_user and current_user.is_authenticated:
        # sessions only read through the API; writes need a bearer token (no CSRF surface)
        principal = Principal(name=f"user:{current_user.username}", role=current_user.role, kind="session")
    g.principal = principal
    g.actor_name = principal.name if principal else None
    return principal


def token_usable(row: ApiToken) -> bool:
    """Not revoked, not expired, a known role, and its user (when it has one) still active."""
    if row.revoked_at is not None or row.role not in ROLE_RANK:
        return False
    if row.expires_at is not None and _aware(row.expires_at) <= datetime.now(timezone.utc):
        return False
    return row.user is None or bool(row.user.active)


def _touch(row: ApiToken) -> None:
    """Record the token's use (at most once a minute: no write per request), in its own short transaction
    before the request's work starts."""
    now = datetime.now(timezone.utc)
    if row.last_used_at is None or now - _aware(row.last_used_at) > timedelta(seconds=60):
        db.session.execute(update(ApiToken).where(ApiToken.id == row.id).values(last_used_at=now))
        db.session.commit()


@login_manager.user_loader
def _load_user(session_id: str) -> Optional[User]:
    """Session ids are "<user id>:<session version>" (User.get_id); an older version was ended."""
    try:
        uid, version = str(session_id).split(":", 1)
        user = db.session.get(User, int(uid))
        return user if user is not None and int(version) == (user.session_version or 0) else None
    except (TypeError, ValueError, OverflowError):
        return None


def shown_actor(actor) -> str:
    """An audit actor as a page shows it: the whole name to a logged-in user; to anonymous visitors only its
    kind ("token", "user", "cli", ...), since token and user names help an attacker (admin guide, Security)."""
    text = "" if actor is None else str(actor)
    if current_user and current_user.is_authenticated:
        return text
    return text.split(":", 1)[0] if ":" in text else ("cli" if text == "cli" else "someone")


def init_auth(app: Flask) -> None:
    app.jinja_env.filters["actor"] = shown_actor
    login_manager.init_app(app)
    login_manager.login_view = "auth.login"
    csrf.init_app(app)
    from service.auth.views import bp
    app.register_blueprint(bp)
