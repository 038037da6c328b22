"""`pgmpi alerts list|send`: the alerts of the dashboards, sent as the site file chooses (service/workflows/notify.py)."""
from __future__ import annotations

import json

import click

from service.commands.admin import DB_OPT, app_context


@click.group("alerts")
def alerts() -> None:
    """What changed since the last night: list it, send it by e-mail and webhook."""


def _collect(root):
    from pgmpi_formats import site
    from service.dashboards.alerts.data import alerts as all_alerts
    from service.store.db import db
    return all_alerts(db.session, site.profile_root(root))


@alerts.command("list")
@click.option("--root", default=None, help="profile root (default: profile_root of the site file)")
@click.option("--json", "as_json", is_flag=True, help="a JSON list of objects instead of lines")
@DB_OPT
def alerts_list(root, as_json, database_url):
    """Every current alert, one line each (what changed, whether a live profile covers it)."""
    from service.workflows.notify import line
    with app_context(database_url):
        found = _collect(root)
        if as_json:
            click.echo(json.dumps([{k: v for k, v in a.items() if k != "library_id"} for a in found], indent=1,
                                  default=str))
            return
        for a in found:
            click.echo(f"{a['type']}: {line(a)}")
        if not found:
            click.echo("no alerts: nothing changed since the last night", err=True)


@alerts.command("send")
@click.option("--root", default=None, help="profile root (default: profile_root of the site file)")
@click.option("--base-url", default=None, help="the dashboard's address, for the link in the mail")
@DB_OPT
def alerts_send(root, base_url, database_url):
    """Send the alerts not sent yet, as the site file's alerts_* keys choose (run after the nightly analysis)."""
    from service.workflows.notify import Settings, send
    from service.store.db import db
    try:
        settings = Settings.from_site()
    except ValueError as exc:
        raise click.ClickException(f"site file: {exc}") from None
    if not settings.mail_to and not settings.webhook:
        raise click.ClickException("no alerts_mail_to and no alerts_webhook in the site file: nothing to send to")
    with app_context(database_url):
        try:
            rep = send(db.session, settings, _collect(root), actor="cli:alerts", base_url=base_url)
        except (OSError, ValueError) as exc:
            db.session.rollback()
            raise click.ClickException(f"not sent (nothing recorded, the next run tries again): {exc}") from None
    click.echo(f"{rep['pending']} new alert(s): {rep['mailed']} mailed, {rep['posted']} posted to the webhook")


COMMANDS = [alerts]
