"""`pgmpi profile`: publish, roll back and show tuned profiles.

The work is done by service/workflows/ (validate.py, publish.py: a set stored in the database: files and database change
together) and service/profiles/publish.py (files only, for a directory of .prf files from elsewhere); this
module parses options and prints results.  The profile root is --root, else the site's
(pgmpi_formats.site.profile_root: site.conf's profile_root, else /opt/pgmpi-site/profiles).
"""
from __future__ import annotations

import getpass
import json
from pathlib import Path

import click

from pgmpi_formats import limits, site
from pgmpi_formats.checker import mpi_flavor
from service.profiles import publish as pub

ROOT_HELP = "site profile root (default: profile_root of the site file, else /opt/pgmpi-site/profiles)"


def _root(root: str | None) -> str:
    return str(site.profile_root(root))


def _app(database_url: str | None):
    from service.app import create_app
    return create_app({"SQLALCHEMY_DATABASE_URI": database_url} if database_url else {})


_database = click.option("--database-url", envvar="DATABASE_URL", default=None,
                         help="SQLAlchemy URL (default: $DATABASE_URL, else the embedded SQLite file)")

def _limit(check):
    """A click callback applying pgmpi_formats.limits (the same rules as the API and uploads)."""
    def cb(ctx, param, value):
        try:
            return None if value is None else check(value, f"--{param.name.replace('_', '-')}")
        except limits.LimitError as exc:
            raise click.BadParameter(exc.message) from None
    return cb


_common = [
    click.option("--root", help=ROOT_HELP),
    click.option("--machine", required=True, help="machine name, e.g. vsc5", callback=_limit(limits.check_machine)),
    click.option("--mpi", "mpi_name", required=True, help="MPI library name, e.g. openmpi",
                 callback=_limit(limits.check_library)),
    click.option("--mpi-version", required=True, help="MPI library version, e.g. 4.1.4",
                 callback=_limit(limits.check_version)),
]


def common(f):
    for opt in reversed(_common):
        f = opt(f)
    return f


@click.group("profile")
def profile() -> None:
    """Publish tuned profiles into the site's profile root, or roll back."""


@profile.command("publish")
@common
@click.option("--dir", "src", required=True, type=click.Path(exists=True, file_okay=False),
              help="directory with the candidate's .prf files")
@click.option("--validation", type=click.Path(dir_okay=False), hidden=True,
              help="refused: validation evidence comes from the service's records, not from a file")
@click.option("--force", is_flag=True, help="publish without a passing validation (recorded)")
@click.option("--reason", default="", help="why (required with --force)")
@click.option("--actor", default=None, help="who (default: the login name)")
@click.option("--replace", is_flag=True, help="publish exactly --dir even where it drops a kind of file the live "
              "set has (its native decision file, or its .prf profiles)")
@_database
def publish_cmd(root, machine, mpi_name, mpi_version, src, validation, force, reason, actor, replace, database_url):
    """Validate the candidate with pgmpitune-check and make it the current set.  It counts as validated
    only when the service recorded a passing validation of a profile version with exactly these files
    (this machine and library); otherwise --force --reason is needed."""
    if validation:
        raise click.ClickException(
            f"--validation {validation}: a file is no evidence anyone can trust; the service records validation "
            "runs itself (POST /api/v1/profiles/<id>/validation). Publish that version with "
            "`pgmpi profile publish-candidate ID`, or publish these files: they count as validated when a "
            "validated version with the same files is stored, else use --force --reason")
    files = {p.name: p.read_bytes() for p in sorted(Path(src).iterdir()) if p.is_file()}
    # the set is published whole: a directory with only a native file would silently drop the live .prf
    # profiles (or the reverse), whose mock-ups were measured under the live native file
    live = set(pub.status(_root(root), machine, mpi_name, mpi_version)["files"])
    native_kind = {True: "its native decision file", False: "its .prf profiles"}
    for is_native in (True, False):
        lost = sorted(n for n in live - set(files) if (n in pub.NATIVE_FILES) == is_native)
        if lost and not replace and not any((n in pub.NATIVE_FILES) == is_native for n in files):
            raise click.ClickException(
                f"{src} has none of {native_kind[is_native]}; publishing it drops {', '.join(lost)} from the live "
                f"set. Add them to {src} (a .prf measured under another native file no longer says what it "
                "costs: measure it again under this one), or publish exactly this directory with --replace")
    evidence, native, unread = None, None, ""
    if not force:     # a forced publication needs no evidence (and no database)
        from sqlalchemy.exc import SQLAlchemyError
        from service.workflows import validate
        try:
            with _app(database_url).app_context():
                evidence = validate.recorded_validation(machine, mpi_name, mpi_version, files)
                native = validate.recorded_native_validation(machine, mpi_name, mpi_version, files)
        except SQLAlchemyError as exc:
            unread = f" (the service's database could not be read: {str(exc).splitlines()[0][:200]})"
    try:
        res = pub.publish(_root(root), machine, mpi_name, mpi_version, files,
                          actor=actor or getpass.getuser(), validated=evidence is not None, force=force,
                          reason=reason, validation=evidence or {}, mpi=mpi_flavor(mpi_name),
                          native_validated=native is not None)
    except pub.PublishError as exc:
        raise click.ClickException(str(exc) + unread)
    click.echo(f"published version {res.version} (was {res.previous}) -> {res.target}/current"
               + (" [FORCED]" if res.forced else "")
               + (f" [validated: profile version {evidence['profile_version']}]" if evidence else ""))


@profile.command("fsck")
@click.option("--root", help=ROOT_HELP)
@click.option("--json", "as_json", is_flag=True)
@_database
def fsck_cmd(root, as_json, database_url):
    """Check that the database and the profile root agree (exit 1 and list the problems when not)."""
    from service.workflows import publish as publishing
    with _app(database_url).app_context():
        problems = publishing.fsck(Path(_root(root)))
    if as_json:
        click.echo(json.dumps(problems, indent=1))
    else:
        for p in problems:
            click.echo(f"set {p['set']} ({p['directory']}): {p['problem']}")
        click.echo(f"{len(problems)} problem(s) in {_root(root)}")
    if problems:
        raise SystemExit(1)


@profile.command("rollback")
@common
@click.option("--to", "to", type=int, default=None, help="version to make current (default: previous)")
@click.option("--reason", default="")
@click.option("--actor", default=None)
@click.option("--module", default=None, help="the library's module, when several share name and version")
@_database
def rollback_cmd(root, machine, mpi_name, mpi_version, to, reason, actor, module, database_url):
    """Swap current back to the previous version; the database records it as the profile page does
    (a set the database does not know, published with `pgmpi profile publish --dir`, changes on disk only)."""
    from service.store.db import db
    from service.workflows import publish as publishing
    actor = actor or f"cli:{getpass.getuser()}"
    with _app(database_url).app_context():
        try:
            ps = publishing.find_set(machine, mpi_name, mpi_version, module)
        except ValueError as exc:
            raise click.ClickException(str(exc))
        try:
            if ps is not None:
                res = publishing.rollback_set(ps, Path(_root(root)), actor, reason=reason, to=to)
            else:
                res = pub.rollback(_root(root), machine, mpi_name, mpi_version, actor=actor, to=to, reason=reason)
        except pub.PublishError as exc:
            db.session.rollback()
            raise click.ClickException(str(exc))
    click.echo(f"rolled back to version {res.version} (was {res.previous}) -> {res.target}/current"
               + ("" if ps is not None else " (no profile set in the database: files only)"))


@profile.command("status")
@common
@click.option("--json", "as_json", is_flag=True)
def status_cmd(root, machine, mpi_name, mpi_version, as_json):
    """Show the current version, all versions and the history."""
    from service.workflows import publish as publishing
    r = Path(_root(root))
    try:
        st = publishing.history(r, machine, mpi_name, mpi_version)
    except pub.PublishError as exc:
        raise click.ClickException(str(exc))
    if not Path(st["target"]).is_dir():
        raise click.ClickException(_nothing_there(r, machine, Path(st["target"])))
    if as_json:
        click.echo(json.dumps(st, indent=1, default=str))
        return
    click.echo(f"{st['target']}: current={st['current']} versions={st['versions']}")
    for e in st["history"]:
        click.echo(f"  {e.get('at')} {e.get('actor')}: {e.get('action')} -> {e.get('version')}"
                   f" (was {e.get('previous')}){' FORCED: ' + e.get('reason', '') if e.get('forced') else ''}")


def _nothing_there(root: Path, machine: str, target: Path) -> str:
    """Why a profile set has no directory, and what there is instead: a root that does not exist, a machine
    with nothing published, or the sets this machine has."""
    if not root.is_dir():
        return f"profile root {root} does not exist (--root, or profile_root in {site.site_config_path()})"
    here = pub.list_targets(root)
    if not (root / machine).is_dir():
        known = sorted({m for m, _ in here})
        return (f"nothing published for machine {machine!r} under {root}; machines with published profiles: "
                + (", ".join(known) or "none"))
    sets = [l for m, l in here if m == machine]
    return (f"nothing published at {target}; sets of {machine}: " + (", ".join(sets) or "none")
            + " (`pgmpi profile list` shows every set)")


@profile.command("list")
@click.option("--root", help=ROOT_HELP)
@click.option("--json", "as_json", is_flag=True, help="a JSON list of objects instead of the table")
@_database
def list_cmd(root, as_json, database_url):
    """List the profile sets the database holds (machine, library, directory, versions, the live version) and
    the sets on disk the database does not know."""
    from sqlalchemy import select
    from service.commands.admin import app_context, print_rows
    from service.workflows import publish as publishing
    from service.store.db import db
    from service.store.models import ProfileSet
    r = Path(_root(root))
    rows, known = [], set()
    with app_context(database_url):
        for ps in db.session.scalars(select(ProfileSet).order_by(ProfileSet.id)):
            st = publishing.history_of(ps, r)
            target = Path(st["target"]) if st.get("target") else None
            if target is not None:
                known.add((target.parent.name, target.name))
            rows.append([ps.id, ps.machine.name, f"{ps.library.name}-{ps.library.version}",
                         str(target) if target else st.get("error"), len(ps.versions), st.get("current")])
    for m, l in pub.list_targets(r):
        if (m, l) not in known:
            st = pub.status(r, m, *l.rsplit("-", 1)) if "-" in l else {"current": None}
            rows.append([None, m, l, str(r / m / l), None, st.get("current")])
    print_rows(["set", "machine", "library", "directory", "versions", "live"], rows, as_json,
               f"no profile sets in the database and none published under {r}")


@profile.command("publish-candidate")
@click.argument("version_id", type=int)
@click.option("--root", help=ROOT_HELP)
@click.option("--force", is_flag=True, help="publish without a passing validation run (recorded)")
@click.option("--reason", default="", help="why (required with --force)")
@click.option("--actor", default=None, help="who (default: cli:<login name>)")
@_database
def publish_candidate_cmd(version_id, root, force, reason, actor, database_url):
    """Publish the candidate profile version VERSION_ID stored in the database (as the profile page does)."""
    from service.store.db import db
    from service.store.models import ProfileVersion
    from service.workflows.publish import publish_candidate
    with _app(database_url).app_context():
        v = db.session.get(ProfileVersion, version_id)
        if v is None:
            raise click.ClickException(f"no profile version {version_id} (see GET /api/v1/profiles)")
        try:
            res = publish_candidate(v, Path(_root(root)), actor or f"cli:{getpass.getuser()}", force=force,
                                    reason=reason)
        except pub.PublishError as exc:
            db.session.rollback()
            raise click.ClickException(str(exc))
    click.echo(f"published version {res.version} (was {res.previous}) -> {res.target}/current"
               + (" [FORCED]" if res.forced else ""))


COMMANDS = [profile]
