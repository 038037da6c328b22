"""Alerts people receive: the alerts of service/dashboards/alerts/data.py sent by e-mail (SMTP) and to a
webhook (an HTTP POST of JSON), once each, as the site's admins chose in the site file (no Flask).

    settings = Settings.from_site()          # the alerts_* keys of site.conf (pgmpi_formats.site)
    report = send(session, settings, root)   # `pgmpi alerts send` after the nightly analysis

site.conf keys (docs/admin-guide.md, "Alerts"):
    alerts_types          = regression, new_violation, contradicted_violation     (which kinds are sent)
    alerts_uncovered_only = no          (yes: leave out what a live profile already serves)
    alerts_mail_to        = hpc-admins@example.org, ...      alerts_mail_from = pgmpi@<host>
    alerts_smtp           = 127.0.0.1:25                    (host:port of the site's mail server)
    alerts_webhook        = https://chat.example.org/hooks/...  (JSON: {"text", "alerts": [...]})
What was sent is recorded in the audit log (entity "alert", one row per alert), so a second run sends nothing
new, and a regression flagged on consecutive nights is sent once (its first night).
"""
from __future__ import annotations

import smtplib
import socket
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

from sqlalchemy import select

from service.store.models import AuditLog

DEFAULT_TYPES = ("regression", "new_violation", "contradicted_violation")


@dataclass
class Settings:
    types: tuple[str, ...] = DEFAULT_TYPES
    uncovered_only: bool = False
    mail_to: tuple[str, ...] = ()
    mail_from: str = field(default_factory=lambda: f"pgmpi@{socket.gethostname()}")
    smtp: str | None = None
    webhook: str | None = None

    @classmethod
    def from_site(cls, conf: dict[str, str] | None = None) -> "Settings":
        """From the site file's alerts_* keys; a bad value is an error naming the key and the valid choices."""
        from pgmpi_formats import site
        from service.dashboards.alerts.data import TYPES
        conf = site.read_site_config() if conf is None else conf

        def items(key):
            return tuple(x.strip() for x in conf.get(key, "").split(",") if x.strip())
        types = items("alerts_types") or DEFAULT_TYPES
        bad = [t for t in types if t not in TYPES]
        if bad:
            raise ValueError(f"alerts_types: unknown {', '.join(bad)}; valid: {', '.join(TYPES)}")
        flag = conf.get("alerts_uncovered_only", "no").lower()
        if flag not in ("yes", "no", "true", "false", "1", "0"):
            raise ValueError(f"alerts_uncovered_only: {flag!r}; valid: yes, no")
        smtp = conf.get("alerts_smtp") or None
        if smtp and not smtp.rpartition(":")[2].isdigit():
            raise ValueError(f"alerts_smtp: {smtp!r} is not host:port")
        return cls(types=types, uncovered_only=flag in ("yes", "true", "1"), mail_to=items("alerts_mail_to"),
                   mail_from=conf.get("alerts_mail_from") or cls().mail_from, smtp=smtp,
                   webhook=conf.get("alerts_webhook") or None)


def alert_key(a: dict) -> str:
    cell = f"{a['machine']}|{a['library']}-{a['version']}|{a['collective']}|{a.get('mockup') or a.get('algorithm')}|" \
           f"{a['msize']}|{a['nprocs']}"
    key = f"{a['type']}|{cell}|{a.get('campaign') or a.get('analysis_id')}"
    if len(key) > 160:                       # the audit log's entity_id column
        import hashlib
        key = key[:140] + "|" + hashlib.sha1(key.encode()).hexdigest()[:16]
    return key


def line(a: dict) -> str:
    """One alert as a sentence: where, what changed since the last night, whether a live profile covers it."""
    where = f"{a['machine']} {a['library']}-{a['version']} {a['collective']} {a['msize']} B p={a['nprocs']}"
    if a["type"] == "regression":
        what = f"default {a['change']}"
    else:
        what = (f"{a['status']} violation: {a['mockup']} {a['slowdown']:.2f}x faster than the default "
                f"({a['change']})")
    covered = a.get("covered_by") or "coverage unknown"
    return f"{where}: {what}; {covered}"


def select_alerts(alerts: list[dict], settings: Settings) -> list[dict]:
    return [a for a in alerts if a["type"] in settings.types and not (settings.uncovered_only and a.get("covered"))]


def _sent(session, keys: list[str]) -> set[str]:
    if not keys:
        return set()
    return set(session.scalars(select(AuditLog.entity_id).where(AuditLog.entity == "alert",
                                                                AuditLog.entity_id.in_(keys))))


def pending(session, alerts: list[dict], settings: Settings) -> list[dict]:
    """The chosen alerts not sent yet; a regression whose cell was sent for the night before is the same
    episode and is not sent again."""
    chosen = select_alerts(alerts, settings)
    keys = [alert_key(a) for a in chosen]
    prev = [alert_key({**a, "campaign": a.get("previous_night")}) for a in chosen if a["type"] == "regression"]
    done = _sent(session, keys + prev)
    out = []
    for a in chosen:
        if alert_key(a) in done:
            continue
        if a["type"] == "regression" and alert_key({**a, "campaign": a.get("previous_night")}) in done:
            continue
        out.append(a)
    return out


def message(alerts: list[dict], settings: Settings, base_url: str | None = None) -> EmailMessage:
    libs = sorted({f"{a['machine']} {a['library']}-{a['version']}" for a in alerts})
    kinds: dict[str, int] = {}
    for a in alerts:
        kinds[a["type"]] = kinds.get(a["type"], 0) + 1
    msg = EmailMessage()
    msg["Subject"] = f"[pgmpi] {', '.join(libs)}: " + ", ".join(f"{n} {k.replace('_', ' ')}{'s' if n != 1 else ''}"
                                                            for k, n in sorted(kinds.items()))
    msg["From"] = settings.mail_from
    msg["To"] = ", ".join(settings.mail_to)
    body = ["What changed since the last night:", ""] + [f"- {line(a)}" for a in alerts]
    if base_url:
        body += ["", f"Alerts page: {base_url.rstrip('/')}/alerts"]
    msg.set_content("\n".join(body) + "\n")
    return msg


def send(session, settings: Settings, alerts: list[dict], actor: str = "notify",
         base_url: str | None = None) -> dict[str, Any]:
    """Send the pending alerts by mail and webhook; record each as sent only when every channel took it
    (a channel that fails raises, nothing is recorded, the next run tries again)."""
    from service.auth import audit
    todo = pending(session, alerts, settings)
    report = {"pending": len(todo), "mailed": 0, "posted": 0}
    if not todo:
        return report
    if settings.mail_to:
        if not settings.smtp:
            raise ValueError("alerts_mail_to is set but alerts_smtp is not (host:port of the mail server)")
        host, _, port = settings.smtp.rpartition(":")
        with smtplib.SMTP(host, int(port), timeout=30) as smtp:
            smtp.send_message(message(todo, settings, base_url))
        report["mailed"] = len(todo)
    if settings.webhook:
        import requests
        r = requests.post(settings.webhook, timeout=30, json={
            "text": "\n".join(line(a) for a in todo),
            "alerts": [{k: v for k, v in a.items() if k != "library_id"} for a in todo]})
        r.raise_for_status()
        report["posted"] = len(todo)
    for a in todo:
        audit(actor, "sent", "alert", alert_key(a), {"line": line(a), "mail": bool(settings.mail_to),
                                                     "webhook": bool(settings.webhook)})
    session.commit()
    return report
