"""Web login/logout (CSRF-protected Flask-WTF form)."""
from __future__ import annotations

from urllib.parse import urlsplit

from flask import Blueprint, flash, make_response, redirect, render_template, request, url_for
from flask_login import current_user, login_required, login_user, logout_user
from flask_wtf import FlaskForm
from wtforms import PasswordField, StringField, SubmitField
from wtforms.validators import DataRequired, Length, ValidationError

from pgmpi_formats import limits

from service.auth import LoginRefused, audit, check_login, invalidate_sessions
from service.store.db import db
from service.store.models import User

bp = Blueprint("auth", __name__, url_prefix="/auth")


def _name_rule(form, field) -> None:
    try:
        limits.check_username(field.data or "", "username")
    except limits.LimitError as e:
        raise ValidationError(e.message) from None


class LoginForm(FlaskForm):
    username = StringField("User name", validators=[DataRequired(), Length(max=80), _name_rule])
    password = PasswordField("Password", validators=[DataRequired()])
    submit = SubmitField("Log in")


class LogoutForm(FlaskForm):
    submit = SubmitField("Log out")


def _safe_next(target: str | None) -> str:
    """A local path only: no scheme or host, no backslash (browsers read /\\host as //host), no control
    characters (CR/LF cannot go into a Location header)."""
    if not target or any(ord(c) < 32 or ord(c) == 127 or c == "\\" for c in target):
        return "/"
    try:
        parts = urlsplit(target)
    except ValueError:
        return "/"
    if not parts.netloc and not parts.scheme and target.startswith("/") and not target.startswith("//"):
        return target
    return "/"


@bp.route("/login", methods=["GET", "POST"])
def login():
    form = LoginForm()
    status = 200
    if form.validate_on_submit():
        try:
            user = check_login(form.username.data, form.password.data, request.remote_addr or "")
        except LoginRefused as exc:
            flash(str(exc), "error")
            resp = make_response(render_template("auth/login.html", form=form, layout=_layout()), 429)
            resp.headers["Retry-After"] = str(exc.retry_after)
            return resp
        if user:
            login_user(user)
            audit(f"user:{user.username}", "login", "user", user.username)
            db.session.commit()
            return redirect(_safe_next(request.args.get("next")))
        flash("Unknown user name or wrong password.", "error")
        status = 401
    elif request.method == "POST":
        status = 400
    return render_template("auth/login.html", form=form, layout=_layout()), status


def _layout() -> str:
    """templates/base.html when it exists, else our minimal page."""
    from flask import current_app
    try:
        current_app.jinja_env.get_template("base.html")
        return "base.html"
    except Exception:
        return "auth/_page.html"


@bp.post("/logout")
@login_required
def logout():
    form = LogoutForm()
    if not form.validate_on_submit():
        return "CSRF token missing or invalid", 400
    user = db.session.get(User, current_user.id)
    if user is not None:     # a copy of this session cookie must not work after the logout either
        invalidate_sessions(user)
        audit(f"user:{user.username}", "logout", "user", user.username)
        db.session.commit()
    logout_user()
    return redirect(url_for("auth.login"))
