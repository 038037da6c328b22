"""Publish: a profile set's life after its candidate was stored (service/workflows/analyse.py) and validated
(service/workflows/validate.py): publish, roll back, history, fsck, and what a campaign gave.  The API
(service/api/profiles.py), the pages (service/dashboards/) and `pgmpi profile` (service/commands/profile.py)
all call these functions.

Each runs inside an app context and commits: the profile root (the file-system work of
service/profiles/publish.py) and the database change together or not at all (if the database refuses the
commit after the swap of ``current``, ``current`` is swapped back and the caller gets a PublishError).
"""
from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import select

from pgmpi_formats.checker import mpi_flavor
from pgmpi_formats.native import file_digest
from pgmpi_formats.prf import parse_prf
from service.auth import audit
from service.profiles import publish as pub
from service.store.db import db
from service.store.models import (Analysis, AuditLog, Campaign, Machine, MpiLibrary, ProfileSet, ProfileVersion, Run,
                                  Violation)
from service.analysis import spans
from service.workflows.validate import recorded_native_validation, span_version

SPAN_DROPPED = "dropped from the live set"     # how a span version's notes say it is no longer live
# a version the profile root has held: "published" is current (one per set at most), "superseded" was current
# until a later publication, both in the same commit as the swap of ``current``
WAS_LIVE = ("published", "superseded")


# ----------------------------------------------------------------- publish, roll back, history


def set_directory(ps: ProfileSet) -> str:
    """The directory of a profile set under <root>/<machine>/, assigned once and stored: <name>-<version>
    when no other set of the machine holds it, else <name>-<version>+<10 hex of sha256(module)> (two
    libraries of one name and version built differently, e.g. two modules, never share a ``current``)."""
    if ps.directory:
        return ps.directory
    base = pub.library_dirname(ps.library.name, ps.library.version)
    taken = set(db.session.scalars(select(ProfileSet.directory).where(ProfileSet.machine_id == ps.machine_id,
                                                                      ProfileSet.id != ps.id)))
    name = base
    if name in taken:
        name = f"{base}+{hashlib.sha256((ps.library.module or '').encode()).hexdigest()[:10]}"
        if name in taken:
            name = f"{base}+lib{ps.library_id}"
    ps.directory = name
    db.session.flush()
    return name


def _names(ps: ProfileSet) -> tuple[tuple[str, str, str], str]:
    return (ps.machine.name, ps.library.name, ps.library.version), set_directory(ps)


def publish_candidate(v: ProfileVersion, root: Path, actor: str, force: bool = False,
                      reason: str = "") -> pub.PublishResult:
    ps: ProfileSet = v.profile_set
    names, directory = _names(ps)
    # the service's own record decides, never a file: record_validation set validated_at and the state
    validated = v.validated_at is not None or v.state == "validated"
    files = dict(v.files or {})
    if span_version(v) is not None:
        # a span adds its file to what is live (service/analysis/spans.py, rule 3); only its own validation
        # at its unmeasured count publishes it, never --force
        if not validated:
            raise pub.PublishError(f"candidate {v.id}: a span between measured process counts is published only "
                                   "after a validation at its unmeasured count confirmed it")
        try:
            live_files = pub.status(root, *names, directory)["files"]
        except (OSError, ValueError, KeyError):
            live_files = {}
        files = {**live_files, **files}
        span_fates: list[dict] = []
    else:
        # the live spans stay when their measured neighbours redirect as before, else they go, with the reason
        try:
            live_files = pub.status(root, *names, directory)["files"]
        except (OSError, ValueError, KeyError, pub.PublishError):
            live_files = {}
        kept_spans, span_fates = spans.carry_spans(live_files, files)
        files.update(kept_spans)
    # a candidate of .prf profiles keeps the published native file: dropping it would change the algorithms
    # under the candidate's mock-ups.  That is right only when the campaign measured them under exactly that
    # file (a module's native_file; pgmpi-bench's #@native_file_fnv1a64 in every run); otherwise their wins
    # were against another default, and only an admin's --force publishes them (the file is kept then too)
    carried: dict = {}
    if not any(n in pub.NATIVE_FILES for n in files):
        try:
            current = pub.status(root, *names, directory)["files"]
        except (OSError, ValueError, KeyError):
            current = {}
        carried = {n: t for n, t in current.items() if n in pub.NATIVE_FILES}
        files.update(carried)
        if carried and not force:
            live = {file_digest(t) for t in carried.values()}
            seen = measured_under(v)
            if seen != live:
                raise pub.PublishError(
                    f"candidate {v.id}: the live set has {', '.join(sorted(carried))} (fnv1a64 "
                    f"{', '.join(sorted(live))}), but its mock-ups were measured under "
                    + (", ".join(sorted(x or "no native file" for x in seen)) if seen else "runs this service cannot find")
                    + ": measure them under the live file (the campaign module's native_file) or publish with "
                      "--force --reason")
    # a carried file is live already (its own publication was the gate); one the candidate brings needs a record
    native = recorded_native_validation(*names, files)
    # read before any change: a query after one would flush it outside _commit_or_undo's undo of the swap
    replaced = [sv for sv in ps.versions if sv is not v and sv.state == "published"]
    res = pub.publish(root, *names, files, directory=directory, native_validated=native is not None or bool(carried),
                      actor=actor, validated=validated, force=force, reason=reason,
                      candidate=f"profile_version:{v.id}",
                      validation={"figures": len(v.figures),
                                  "worst_speedup": min((f.speedup for f in v.figures), default=None)},
                      mpi=mpi_flavor(ps.library.name))
    v.state = "published"
    v.published_at = datetime.now(timezone.utc)
    v.published_path = str(res.target / "versions" / str(res.version))
    v.actor = actor
    for fate in span_fates:         # the span's own version says what became of it (the profile-set page)
        said = (f"kept live by candidate #{v.number}" if fate["kept"] else
                f"{SPAN_DROPPED} by candidate #{v.number}") + f": {fate['why']}"
        for sv in ps.versions:
            if sv.state in WAS_LIVE and (sv.files or {}) == {fate["file"]: live_files.get(fate["file"])}:
                sv.notes = f"{sv.notes}; {said}"[-2000:]
        v.notes = f"{v.notes}; span {fate['file']} {said.split(' by candidate')[0]}: {fate['why']}"[-2000:]
    for sv in replaced:         # one version is current; the one it replaces stays on disk as history
        sv.state = "superseded"
    audit(actor, "publish-forced" if res.forced else "publish", "profile", str(v.id),
          {"set": ps.id, "fs_version": res.version, "previous": res.previous, "forced": res.forced,
           "reason": reason, "validated": validated, "path": v.published_path, "spans": span_fates})
    _commit_or_undo(res, root, names, actor, "publish", directory)
    return res


def measured_under(v: ProfileVersion) -> set:
    """The native decision files (their #@native_file_fnv1a64; None: none) that the runs of the candidate's
    analysis (its campaign and library) ran under."""
    a = db.session.get(Analysis, v.analysis_id) if v.analysis_id else None
    if a is None:
        return set()
    q = select(Run.headers).where(Run.library_id == a.library_id)
    if a.campaign_id is not None:
        q = q.where(Run.campaign_id == a.campaign_id)
    # runs that force the library's own algorithms (#@native_switch) never run under a native file
    return {h.get("native_file_fnv1a64") if isinstance(h, dict) else None for h in db.session.scalars(q)
            if not (isinstance(h, dict) and h.get("native_switch"))}


def rollback_set(ps: ProfileSet, root: Path, actor: str, reason: str = "", to: int | None = None) -> pub.PublishResult:
    """Make version `to` (default: the previous one) current again (published; it was superseded); the
    version that was current is marked rolled-back."""
    names, directory = _names(ps)
    res = pub.rollback(root, *names, actor=actor, reason=reason, to=to, directory=directory)
    old_path = str(res.target / "versions" / str(res.previous))
    new_path = str(res.target / "versions" / str(res.version))
    for v in ps.versions:
        if v.published_path == old_path:
            v.state = "rolled-back"
            v.rolled_back_at = datetime.now(timezone.utc)
        elif v.published_path == new_path:
            v.state = "published"
    audit(actor, "rollback", "profile", f"set:{ps.id}",
          {"set": ps.id, "fs_version": res.version, "previous": res.previous, "reason": reason})
    _commit_or_undo(res, root, names, actor, "rollback", directory)
    return res


def find_set(machine: str, library: str, version: str, module: str | None = None) -> ProfileSet | None:
    """The stored profile set of machine x MPI library x version (x module), None when the database has none;
    ValueError when several libraries of that name and version (other modules) have sets and no module
    says which."""
    q = (select(ProfileSet).join(Machine, ProfileSet.machine_id == Machine.id)
         .join(MpiLibrary, ProfileSet.library_id == MpiLibrary.id)
         .where(Machine.name == machine, MpiLibrary.name == library, MpiLibrary.version == version))
    if module is not None:
        q = q.where(MpiLibrary.module == module)
    sets = db.session.scalars(q.order_by(ProfileSet.id.desc())).all()
    if len(sets) > 1:
        raise ValueError(f"{len(sets)} profile sets of {machine} {library}-{version}, one per module ("
                         + ", ".join(repr(s.library.module) for s in sets) + "): say which with --module")
    return sets[0] if sets else None


def history(root: Path, machine: str, library: str, version: str, directory: str | None = None) -> dict:
    """The published versions and the history.jsonl of a profile set, as `pgmpi profile status` shows it."""
    return pub.status(root, machine, library, version, directory)


def history_of(ps: ProfileSet, root: Path) -> dict:
    """history() of a stored set, in its own directory; a set whose stored names no longer make a path
    (stored before the name rules) shows as unpublishable instead of failing the page."""
    try:
        names, directory = _names(ps)
        return pub.status(root, *names, directory)
    except pub.PublishError as exc:
        return {"target": None, "current": None, "versions": [], "history": [], "files": {}, "error": str(exc)}


def fsck(root: Path) -> list[dict]:
    """Database and profile root agree: every set's ``current`` is the version the database marks published
    (none when it points at the empty version 0), with the same files; no two sets share a directory.  The
    versions it replaced are superseded (publish_candidate), so a version still marked published elsewhere
    is a disagreement.
    Returns the problems found ({set, directory, problem}); [] when all agree."""
    problems: list[dict] = []
    seen: dict[tuple[int, str], int] = {}
    for ps in db.session.scalars(select(ProfileSet).order_by(ProfileSet.id)):
        try:
            names, directory = _names(ps)
            target = pub.target_dir(root, *names, directory)
        except pub.PublishError as exc:
            problems.append({"set": ps.id, "directory": None, "problem": f"no valid directory: {exc}"})
            continue
        key = (ps.machine_id, directory)
        if key in seen:
            problems.append({"set": ps.id, "directory": str(target),
                             "problem": f"shares its directory with set {seen[key]}"})
        seen[key] = ps.id
        published = [v for v in ps.versions if v.state == "published"]
        try:
            cur = pub.current_version(target)
        except pub.PublishError as exc:
            problems.append({"set": ps.id, "directory": str(target), "problem": str(exc)})
            continue
        cur_path = str(target / "versions" / str(cur)) if cur else None
        elsewhere = [v for v in published if v.published_path and not Path(v.published_path).is_relative_to(root)]
        if elsewhere and cur_path is None:
            # not a disagreement of this root: the set was published under another root (make demo's own, a
            # test's); say which, instead of reporting every version as missing
            problems.append({"set": ps.id, "directory": str(target), "problem":
                             f"version {elsewhere[0].number} was published under another profile root "
                             f"({elsewhere[0].published_path}); check that root with --root (or the "
                             f"profile_root of the site file)", "other_root": True})
            continue
        if cur_path is None:
            for v in published:
                problems.append({"set": ps.id, "directory": str(target), "problem":
                                 f"version {v.number} is marked published but current is "
                                 f"{'the empty version 0' if cur == 0 else 'absent'}"})
            continue
        marked = [v for v in published if v.published_path == cur_path]
        for v in published:
            if v.published_path != cur_path:
                problems.append({"set": ps.id, "directory": str(target), "problem":
                                 f"version {v.number} is marked published at {v.published_path} but current "
                                 f"is {cur_path}"})
        if not marked:
            problems.append({"set": ps.id, "directory": str(target), "problem":
                             f"current is {cur_path}, which no version of the set is marked published at"})
            continue
        try:
            on_disk = pub.version_files(target, cur)
        except pub.PublishError as exc:
            problems.append({"set": ps.id, "directory": str(target), "problem": str(exc)})
            continue
        mine = dict(marked[0].files or {})
        # a span's publication adds the live files, and a later one keeps live spans (spans.carry_spans): a
        # file on disk beyond the version's own is right when a validated version of the set brought that text
        brought = lambda n, t: any((x.files or {}).get(n) == t and x.validated_at is not None  # noqa: E731
                                   for x in ps.versions if x is not marked[0])
        if (any(on_disk.get(n) != t for n, t in mine.items())
                or any(not brought(n, t) for n, t in on_disk.items() if n not in mine)):
            problems.append({"set": ps.id, "directory": str(target), "problem":
                             f"files of {cur_path} differ from version {marked[0].number} in the database"})
    return problems


def _commit_or_undo(res: pub.PublishResult, root: Path, names: tuple[str, str, str], actor: str, what: str,
                    directory: str | None = None) -> None:
    """Commit the database side of a swap already made on disk; when the database refuses, swap ``current``
    back to what it was (recorded in history.jsonl as an undo) so modules never load a profile the
    service does not know it published."""
    try:
        db.session.commit()
    except Exception as exc:
        db.session.rollback()
        back = res.previous or 0
        refused = f"the database refused to record the {what} ({type(exc).__name__}: {str(exc).splitlines()[0]})"
        try:
            pub.rollback(root, *names, actor=actor, to=back, directory=directory,
                         reason=f"undo {what} of version {res.version}: the database refused to record it")
        except pub.PublishError as undo_exc:
            raise pub.PublishError(f"{refused}, and setting the profile root back to version {back} failed "
                                   f"({undo_exc}): version {res.version} is current on disk only") from exc
        raise pub.PublishError(f"{refused}; the profile root is back at version {back}") from exc


# ----------------------------------------------------------------- what a campaign gave

def campaign_report(campaign: str, machine: str | None = None) -> list[dict]:
    """What one campaign gave, per MPI library (its latest analysis of the campaign), as plain data for
    `make demo` and the command line (report_lines prints it):

    * found: the violations by status (verified / unconfirmed / contradicted, service/store/models.py) and the
      pattern violations with their figures and replication across nights; refused: the violated checks that
      did not become a redirection and why (minimum gain, null spread, regimes, results check, K nights);
      defects: algorithms whose result failed pgmpi-bench's results check;
    * control: the control arm's figures ("control: k of n flagged; null ratio spread x %", trustworthy);
    * candidates: each candidate profile version of the analysis, its state and, from its latest validation
      (the audit record of record_validation), the ranges kept and dropped with their default/tuned figures,
      the control sizes and the tolerance;
    * published: the ranges of the candidate version that is published (None when nothing is)."""
    q = select(Campaign).where(Campaign.name == campaign)
    if machine:
        q = q.join(Machine, Campaign.machine_id == Machine.id).where(Machine.name == machine)
    camp = db.session.scalar(q)
    if camp is None:
        raise LookupError(f"unknown campaign {campaign!r}" + (f" on {machine!r}" if machine else ""))
    latest: dict[int, Analysis] = {}
    for a in db.session.scalars(select(Analysis).where(Analysis.campaign_id == camp.id).order_by(Analysis.id)):
        latest[a.library_id] = a
    out = []
    for lib_id, a in sorted(latest.items()):
        lib = db.session.get(MpiLibrary, lib_id)
        summ = a.summary or {}
        ctrl = summ.get("control") or {}
        viols = db.session.scalars(select(Violation).where(Violation.analysis_id == a.id)
                                   .order_by(Violation.collective, Violation.nprocs, Violation.msize)).all()
        counts = {st: sum(v.status == st for v in viols) for st in ("verified", "unconfirmed", "contradicted")}
        found = [{"collective": v.collective, "msize": v.msize, "nprocs": v.nprocs, "mockup": v.mockup,
                  "slowdown": v.slowdown, "p_value": v.p_value, "status": v.status, "why": v.status_why,
                  "nights_confirmed": v.nights_confirmed, "nights_contradicted": v.nights_contradicted}
                 for v in viols if v.kind == "pattern"]
        spread = ctrl.get("null_spread")
        control = {"tested": ctrl.get("tested", 0), "flagged": ctrl.get("flagged", 0),
                   "flagged_raw": ctrl.get("flagged_raw", 0), "null_spread": spread,
                   "trustworthy": ctrl.get("trustworthy", True), "line": ctrl.get("line"),
                   "figures": (f"control: {ctrl.get('flagged', 0)} of {ctrl['tested']} flagged; null ratio spread "
                               + (f"{100 * spread:.1f} %" if spread is not None else "n/a"))
                   if ctrl.get("tested") else "control: none measured"}
        cands, published = [], None
        for v in db.session.scalars(select(ProfileVersion).where(ProfileVersion.analysis_id == a.id)
                                    .order_by(ProfileVersion.id)):
            recs = [r.details or {} for r in db.session.scalars(
                select(AuditLog).where(AuditLog.entity == "profile", AuditLog.entity_id == str(v.id),
                                       AuditLog.action == "validate").order_by(AuditLog.id.desc()))]
            # the latest validation that gave a verdict (an inconclusive one is no verdict), else the latest
            det = next((d for d in recs if d.get("state") != "inconclusive"), recs[0] if recs else None)
            validation = None if det is None else {
                "state": det.get("state"), "job": det.get("job"), "tolerance": det.get("tolerance"),
                "kept": det.get("kept") or [], "dropped": det.get("dropped") or [],
                "control": det.get("control") or [], "contradicted": det.get("contradicted", 0),
                "runs": len(recs), "inconclusive": sum(d.get("state") == "inconclusive" for d in recs)}
            ranges = _ranges(v.files or {})
            cands.append({"id": v.id, "number": v.number, "state": v.state, "notes": v.notes,
                          "ranges": ranges, "validation": validation,
                          "native": sorted(n for n in (v.files or {}) if n in pub.NATIVE_FILES)})
            if v.state in WAS_LIVE:     # what the campaign gave, current or superseded since
                published = {"candidate": v.number, "path": v.published_path, "ranges": ranges,
                             "native": cands[-1]["native"]}
        out.append({"library": lib.name, "version": lib.version, "analysis_id": a.id, "test": a.test,
                    "fdr": a.fdr, "alpha": a.alpha, "checked": a.n_checked, "counts": counts, "found": found,
                    "refused": summ.get("refused") or [], "defects": summ.get("defects") or [],
                    "control": control, "confirmations": summ.get("confirmations"), "candidates": cands,
                    "published": published})
    return out


def _ranges(files: dict[str, str]) -> list[dict]:
    out = []
    for name, text in sorted(files.items()):
        try:
            prf = parse_prf(text, name)
        except ValueError:
            continue
        out += [{"mpi_name": prf["mpi_name"], "nprocs": prf["nprocs"], "first": lo, "last": hi, "algorithm": alg}
                for lo, hi, alg in prf["ranges"] if alg != "default"]
    return out


def _figs(figs: list[dict]) -> str:
    return ", ".join(f"{f['msize']} B {f['ratio']:.2f}x" if f.get("ratio") is not None else f"{f['msize']} B ?"
                     for f in figs)


def report_lines(report: list[dict]) -> list[str]:
    """campaign_report as plain lines: found, refused, control, validation kept / dropped, published."""
    lines = []
    for r in report:
        lib = f"{r['library']}-{r['version']}"
        c = r["counts"]
        lines.append(f"{lib}: analysis {r['analysis_id']} ({r['test']}{' + BH' if r['fdr'] else ''}, alpha "
                     f"{r['alpha']:g}, {r['checked']} checks): {c['verified']} verified, {c['unconfirmed']} "
                     f"unconfirmed, {c['contradicted']} contradicted violation(s)")
        lines.append(f"{lib}: {r['control']['figures']}"
                     + ("" if r["control"]["trustworthy"] else " -- UNTRUSTWORTHY: no candidate"))
        for f in r["found"]:
            n = f["nights_confirmed"]
            nights = (f", confirmed {n} of {n + (f['nights_contradicted'] or 0)} nights" if n is not None else "")
            lines.append(f"{lib}: found {f['collective']} {f['msize']} B p={f['nprocs']} {f['mockup']} "
                         f"{f['slowdown']:.2f}x faster: {f['status']}{nights}" + (f" ({f['why']})" if f["why"] else ""))
        for x in r["refused"]:
            lines.append(f"{lib}: not proposed {x['collective']} {x['msize']} B p={x['nprocs']}: {x['why']}")
        for d in r["defects"]:
            lines.append(f"{lib}: library defect {d.get('call')} {d.get('msize')} B p={d.get('nprocs')} "
                         f"{d.get('algorithm')}: {d.get('why')} (never chosen)")
        if not r["candidates"]:
            lines.append(f"{lib}: no candidate profile (nothing worth redirecting)")
        for v in r["candidates"]:
            val = v["validation"]
            if v.get("native"):     # the nightly native chain's candidate: its notes say what it chose and why
                lines.append(f"{lib}: candidate #{v['number']} {v['state']}: {', '.join(v['native'])} -- {v['notes']}")
                continue
            lines.append(f"{lib}: candidate #{v['number']} {v['state']}: " + ", ".join(
                f"{x['mpi_name']} p={x['nprocs']} {x['first']}-{x['last']} B -> {x['algorithm']}" for x in v["ranges"]))
            if val is None:
                lines.append(f"{lib}: candidate #{v['number']}: no validation reported")
                continue
            lines.append(f"{lib}: validation {val['state']} (tolerance {100 * (val['tolerance'] or 0):.0f} %; "
                         f"control sizes {_figs(val['control']) or 'none'}; {val['runs']} validation run(s), "
                         f"{val['inconclusive']} inconclusive)")
            for k in val["kept"]:
                lines.append(f"{lib}: kept {k['collective']} p={k['nprocs']} {k['range'][0]}-{k['range'][1]} B "
                             f"{k['algorithm']}: default/tuned {_figs(k['figures'])}")
            for d in val["dropped"]:
                lines.append(f"{lib}: dropped {d['collective']} p={d['nprocs']} {d['range'][0]}-{d['range'][1]} B "
                             f"{d['algorithm']}: {d['why']}" + (f"; default/tuned {_figs(d['figures'])}"
                                                                 if d["figures"] else ""))
        pub_ = r["published"]
        lines.append(f"{lib}: published candidate #{pub_['candidate']} ({pub_['path']}): " + ", ".join(
            [f"{x['mpi_name']} p={x['nprocs']} {x['first']}-{x['last']} B -> {x['algorithm']}" for x in pub_["ranges"]]
            + list(pub_.get("native") or []))
            if pub_ else f"{lib}: nothing published")
    return lines
