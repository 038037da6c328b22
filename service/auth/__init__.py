"""Access control: people log in (Flask-Login, hashed passwords, CSRF-protected forms), agents and
scripts use bearer tokens (stored as SHA-256, shown once, revocable).  Roles viewer < agent < admin;
an agent token is bound to one machine."""
from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Optional

from flask import Flask, g, request
from flask_login import LoginManager, current_user
from flask_wtf.csrf import CSRFProtect
from sqlalchemy import select
from werkzeug.security import check_password_hash, generate_password_hash

from service.store.db import db
from service.store.models import ROLE_RANK, ROLES, ApiToken, AuditLog, Machine, User

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


def add_user(username: str, password: str, role: str = "viewer") -> User:
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    if not username or len(username) > 80:
        raise ValueError("username must be 1..80 characters")
    if len(password) < 8:
        raise ValueError("password must have at least 8 characters")
    if db.session.scalar(select(User).where(User.username == username)):
        raise ValueError(f"user {username!r} exists already")
    user = User(username=username, password_hash=generate_password_hash(password), role=role)
    db.session.add(user)
    db.session.flush()
    audit("cli", "create", "user", username, {"role": role})
    return user


def _user(username: str) -> User:
    user = db.session.scalar(select(User).where(User.username == username))
    if user is None:
        raise ValueError(f"no user {username!r} (see `pgmpi user list`)")
    return user


def set_password(username: str, password: str, actor: str = "cli") -> User:
    if len(password) < 8:
        raise ValueError("password must have at least 8 characters")
    user = _user(username)
    user.password_hash = generate_password_hash(password)
    audit(actor, "password", "user", username)
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


def check_login(username: str, password: str) -> Optional[User]:
    user = db.session.scalar(select(User).where(User.username == username))
    if user and user.active and check_password_hash(user.password_hash, password):
        return user
    return None


def create_token(name: str, role: str, machine: Optional[str] = None, user: Optional[str] = None,
                 actor: str = "cli") -> tuple[ApiToken, str]:
    """Create a token; returns (row, secret). The secret is not stored and cannot be shown again."""
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
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken(name=name, prefix=secret[:12], token_hash=hash_token(secret), role=role,
                   machine=machine_row, user=user_row)
    db.session.add(row)
    db.session.flush()
    audit(actor, "create", "api_token", str(row.id), {"name": name, "role": role, "machine": machine})
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
        if row is not None and row.revoked_at is None and row.role in ROLE_RANK:
            principal = Principal(name=f"token:{row.id}:{row.name}", role=row.role, machine_id=row.machine_id)
    elif request.method in ("GET", "HEAD", "OPTIONS") and current_user and current_user.is_authenticated:
        # sessions only read through the API; writes need a bearer token (no CSRF surface)
        principal = Principal(name=f"user:{current_user.username}", role=current_user.role, kind="session")
    g.principal = principal
    g.actor_name = principal.name if principal else None
    return principal


@login_manager.user_loader
def _load_user(user_id: str) -> Optional[User]:
    try:
        return db.session.get(User, int(user_id))
    except (TypeError, ValueError):
        return None


def init_auth(app: Flask) -> None:
    login_manager.init_app(app)
    login_manager.login_view = "auth.login"
    csrf.init_app(app)
    from service.auth.views import bp
    app.register_blueprint(bp)
