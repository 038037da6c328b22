"""The nightly native chain on the service's side (the agent drives it: scheduler/agent.py).

    v, why = native_candidate(machine, library, version, campaign, refused=[ids], root=root, actor=actor)
    out = settle(v, verdict, publish=True, root=root, actor=actor)

native_candidate: the campaign's stored runs of one library -> one decision per (collective, size, p)
(service/analysis/native_decision.py, as `pgmpi analyze native-files` decides on files), the cells the
native validation records `refused` failed taken out of it (validation_refusals, as `--validation` does), the
library's own file written for that exact version and read back by that version's reader, stored as a
candidate version of the library's profile set: the same versioned set as the .prf profiles, with the cells
the decision measured (`decided_at`: its validation job measures each rule there, not at a size nobody
measured; pgmpi_formats.native_validation.at_decided).  The live .prf
profiles whose mock-ups use none of the collectives the file retunes are carried into the candidate (they were
measured against the same algorithms); the others are left out and the notes say which.  None and the reason
when no algorithm of the library's own wins anywhere.

job_failed: the candidate's validation job failed in the resource manager (no verdict) -> failed, with
the job's reason.

settle: a native validation record of such a candidate -> its state (validated / failed), and its publication
when the campaign asks for it (publish_candidate: the record is the gate, as for any publication).
Each function runs in an app context and commits.
"""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import select

from pgmpi_formats import arms, native, native_file
from pgmpi_formats.collectives import by_mpi_name
from pgmpi_formats.prf import ProfileFormatError, parse_prf, redirected_ranges
from service.analysis.native_decision import (cells_of_mpiruns, decide, mark_blocks, mockup_parts,
                                              validation_refusals)
from service.auth import audit
from service.profiles import publish as pub
from service.store.db import db
from service.store.models import (Analysis, Campaign, Machine, MpiLibrary, NativeValidation, ProfileSet,
                                  ProfileVersion, Run, Series)
from service.workflows.publish import publish_candidate, set_directory

NATIVE_NOTE = "native candidate"     # the first words of a native candidate's notes (the pages look for them)


class NativeChainError(ValueError):
    def __init__(self, message: str, status: int = 422, field: str | None = None):
        super().__init__(message)
        self.status, self.field = status, field


def campaign_cells(lib_id: int, campaign_id: int) -> dict:
    """{(key, size, p): [per-mpirun native_decision.Run]} of a campaign's stored measurement runs of one library
    (validation launches and the tuned arm left out)."""
    heads, footers = {}, {}
    for rid, p, h, f in db.session.execute(
            select(Run.id, Run.nprocs, Run.headers, Run.footer).where(
                Run.library_id == lib_id, Run.campaign_id == campaign_id, Run.validation.is_(None))):
        heads[rid] = (p, h if isinstance(h, dict) else {})
        footers[rid] = f if isinstance(f, list) else []
    per: dict = {}
    if heads:
        q = select(Series.run_id, Series.call, Series.msize, Series.algorithm, Series.median) \
            .where(Series.run_id.in_(list(heads)))
        for rid, call, msize, alg, med in db.session.execute(q):
            c = by_mpi_name(call)
            if c is None or alg == arms.TUNED or med is None:
                continue
            p, h = heads[rid]
            per.setdefault(rid, {}).setdefault((c.key, msize, p), {})[alg] = med
    # a reduced search's confirmations measured each choice alone: paired per round (cells_of_mpiruns)
    return cells_of_mpiruns([((campaign_id, heads[rid][1].get("module", ""), heads[rid][0],
                               heads[rid][1].get("mpirun_index", "")), heads[rid][1].get("native_file_fnv1a64"),
                              mark_blocks(cells, footers[rid]))
                             for rid, cells in per.items()])


def _library(machine: str, library: str, version: str) -> tuple[Machine, MpiLibrary]:
    m = db.session.scalar(select(Machine).where(Machine.name == machine))
    if m is None:
        raise NativeChainError(f"no machine {machine!r}", 404, "machine")
    lib = db.session.scalars(select(MpiLibrary).where(MpiLibrary.machine_id == m.id, MpiLibrary.name == library,
                                                      MpiLibrary.version == version)
                             .order_by(MpiLibrary.id.desc())).first()
    if lib is None:
        raise NativeChainError(f"machine {machine!r} has no MPI library {library!r} version {version!r}", 404,
                               "library")
    if library not in native_file.NAMES:
        raise NativeChainError(f"{library}: the nightly chain writes native.rules (openmpi), native.json "
                               "(mpich) or native.impi (intelmpi)", 422, "library")
    return m, lib


def _carried(live: dict[str, str], retuned: set[str]) -> tuple[dict[str, str], list[str]]:
    """The live .prf profiles a new native file leaves measured: those whose mock-ups call none of the
    collectives the file retunes; the names of the others."""
    keep, left = {}, []
    for name, text in sorted(live.items()):
        if name in pub.NATIVE_FILES:
            continue
        try:
            algs = {alg for _lo, _hi, alg in redirected_ranges(parse_prf(text, name))} if name.endswith(".prf") else set()
        except (ProfileFormatError, ValueError):
            left.append(name)
            continue
        if any(mockup_parts(a) & retuned for a in algs):
            left.append(name)
        else:
            keep[name] = text
    return keep, left


def native_candidate(machine: str, library: str, version: str, campaign: str, refused: list[int], root: Path,
                     actor: str, alpha: float = 0.05, min_gain: float = 0.05) -> tuple[ProfileVersion | None, str]:
    m, lib = _library(machine, library, version)
    camp = db.session.scalar(select(Campaign).where(Campaign.name == campaign, Campaign.machine_id == m.id))
    if camp is None:
        raise NativeChainError(f"unknown campaign {campaign!r} on {machine!r}", 404, "campaign")
    cells = campaign_cells(lib.id, camp.id)
    if not cells:
        raise NativeChainError(f"campaign {campaign!r} stored no runs of {library}-{version}", 422, "campaign")
    refusals: dict = {}
    for rid in refused:
        rec = db.session.get(NativeValidation, rid)
        if rec is None or (rec.machine, rec.library, rec.version) != (machine, library, version):
            raise NativeChainError(f"refused: {rid} is no native validation record of {machine} "
                                   f"{library}-{version}", 422, "refused")
        refusals.update(validation_refusals(rec.verdict or {}, cells, f"native validation {rec.id}",
                                            gap_refuses_collective=native_file.gap_refuses_collective(library)))

    def render(decisions):
        return native_file.render(library, decisions, version=version, comment=f"pgmpi nightly {campaign}")

    def digest(decisions):
        try:
            return native.file_digest(render(decisions)[1])
        except (ValueError, KeyError, OSError, native.DiscoveryError):
            return None

    res = decide(cells, alpha=alpha, min_gain=min_gain, refused=refusals, file_digest=digest, library=library)
    chosen = sorted((d for d in res.decisions.values() if d.kind == "native"), key=lambda d: (d.key, d.nprocs, d.size))
    # a file whose set variables change the library's choice outside their ranges (Intel MPI's native.impi)
    # leaves a collective where the default won anywhere to the library (native_file.FORMATS); decide() gave
    # its cells to the next candidate already
    untuned = res.left_to_library
    filled = [d for d in chosen if d.fill]      # the gapless file's fills (native_decision.fill_candidate)
    if not chosen and untuned:
        return None, (f"nothing of {library}-{version} {native_file.NAMES[library]} can hold exactly: "
                      + "; ".join(f"{k}: {w}" for k, w in sorted(untuned.items())))
    if not chosen:
        return None, (f"no algorithm of {library}-{version}'s own beats its default anywhere ({len(res.decisions)} "
                      f"cells, threshold up to {100 * res.threshold:.1f} %" + (f", {len(refusals)} refused by validation"
                                                                        if refusals else "") + ")")
    try:
        name, text = render(res.native_decisions())
        pub.check_native_file(name, text, library, version)     # the reader of exactly that version
    except (ValueError, KeyError, OSError, native.DiscoveryError) as exc:
        # KeyError: an algorithm measured under this version's name that its discovery does not list
        why = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        raise NativeChainError(f"the decision file of {library}-{version} was refused: {why}") from None
    ps = db.session.scalar(select(ProfileSet).where(ProfileSet.machine_id == m.id, ProfileSet.library_id == lib.id))
    if ps is None:
        ps = ProfileSet(machine_id=m.id, library_id=lib.id)
        db.session.add(ps)
        db.session.flush()
    set_directory(ps)
    for v in ps.versions:       # asked again (an agent restarted): the same text is the same candidate
        if (v.files or {}).get(name) == text and v.state in ("candidate", "validated", "published", "superseded"):
            return v, "the same decision file is already candidate #%d (%s)" % (v.number, v.state)
    try:
        live = pub.status(root, machine, library, version, ps.directory)["files"]
    except (OSError, ValueError, KeyError, pub.PublishError):
        live = {}
    carried, dropped = _carried(live, {d.key for d in chosen})
    analysis = db.session.scalars(select(Analysis).where(Analysis.campaign_id == camp.id,
                                                         Analysis.library_id == lib.id)
                                  .order_by(Analysis.id.desc())).first()
    notes = (f"{NATIVE_NOTE} of campaign {campaign}: {name} changes {len(chosen)} of {len(res.decisions)} cells"
             + (f"; {len(refusals)} choice(s) refused by native validation {', '.join(map(str, refused))}"
                if refusals else "")
             + (f"; {len(filled)} size(s) where the default won filled with a preset measured as fast "
                f"({', '.join(f'{d.key} {d.size} B {d.choice}' for d in filled[:6])}{' ...' if len(filled) > 6 else ''})"
                if filled else "")
             + (f"; left to the library: {', '.join(sorted(untuned))} (the default won at some size, no preset was "
                "measured as fast there, and a set variable changes the library's choice outside its ranges)"
                if untuned else "")
             + (f"; carries the live {', '.join(sorted(carried))}" if carried else "")
             + (f"; leaves out the live {', '.join(dropped)} (its mock-ups call a collective the file retunes)"
                if dropped else ""))
    v = ProfileVersion(profile_set_id=ps.id, number=1 + max((x.number for x in ps.versions), default=0),
                       state="candidate", analysis_id=analysis.id if analysis else None,
                       files={name: text, **carried}, actor=actor, notes=notes[:2000],
                       decided_at=[[k, s, p] for k, s, p in sorted(res.decisions)])
    db.session.add(v)
    db.session.flush()
    audit(actor, "native-candidate", "profile", str(v.id), {
        "campaign": campaign, "file": name, "digest": native.file_digest(text), "refused_by": list(refused),
        "threshold": res.threshold, "null_spread": res.spread,
        "null_spread_per_size_class": {str(k): v for k, v in res.spreads.items()},
        "chosen": [{"collective": d.key, "msize": d.size, "nprocs": d.nprocs, "algorithm": d.choice,
                    "ratio": next((c.paired_ratio for c in d.candidates if c.label == d.choice), None),
                    "ci": list(next((c.ci for c in d.candidates if c.label == d.choice), None) or []),
                    "why": d.reason[:200]} for d in chosen[:200]],
        "refused": [{"collective": k, "msize": s, "nprocs": p, "algorithm": a, "why": w[:200]}
                    for (k, s, p, a), w in sorted(refusals.items())[:200]],
        "carried": sorted(carried), "left_out": dropped, "left_to_library": sorted(untuned)})
    db.session.commit()
    return v, notes


def candidate_of(version_id: int, machine: str, library: str, version: str, name: str, text: str) -> ProfileVersion:
    """The native candidate a validation record is for: that version of that library's set, holding exactly
    that file."""
    v = db.session.get(ProfileVersion, version_id) if 0 < version_id < 2 ** 31 else None
    ps = v.profile_set if v is not None else None
    if (v is None or ps.machine.name != machine or ps.library.name != library or ps.library.version != version
            or (v.files or {}).get(name) != text):
        raise NativeChainError(f"profile_version {version_id}: no candidate of {machine} {library}-{version} "
                               f"holding this {name}", 422, "profile_version")
    return v


def job_failed(version_id: int, machine: str, library: str, version: str, job: str, reason: str,
               actor: str) -> ProfileVersion:
    """A candidate whose validation job failed in the resource manager (no figures, so no verdict): marked
    failed with the job's reason, so it never stays a candidate; a candidate already settled keeps its state."""
    v = db.session.get(ProfileVersion, version_id) if 0 < version_id < 2 ** 31 else None
    ps = v.profile_set if v is not None else None
    if (v is None or ps.machine.name != machine or ps.library.name != library or ps.library.version != version
            or not (v.notes or "").startswith(NATIVE_NOTE)):
        raise NativeChainError(f"profile_version {version_id}: no native candidate of {machine} {library}-{version}",
                               422, "profile_version")
    if v.state == "candidate":
        v.state = "failed"
        v.notes = f"{v.notes}; its validation job {job} failed without a verdict: {reason}"[:2000]
        audit(actor, "native-job-failed", "profile", str(v.id), {"job": job, "reason": reason[:500]})
    db.session.commit()
    return v


def settle(v: ProfileVersion, verdict: dict, publish: bool, root: Path, actor: str) -> dict:
    """A candidate's native validation record -> its state; published when asked and it passed.  Returns
    {"state", "published": {version, path} | None, "why"}."""
    out = {"state": v.state, "published": None, "why": ""}
    if v.state in ("published", "superseded"):      # published before: a later publication decides what is live
        return out
    if not verdict.get("ok"):
        v.state = "failed"
        failed = [c for c in verdict.get("cells", []) if c.get("problems")]
        v.notes = (f"{v.notes}; native validation {verdict.get('id')} failed {len(failed)} cell(s): "
                   + "; ".join(f"{c['collective']} {c['msize']} B {c['label']}" for c in failed[:10]))[:2000]
        db.session.commit()
        out["state"] = v.state
        return out
    v.state = "validated"
    v.validated_at = datetime.now(timezone.utc)
    v.notes = f"{v.notes}; native validation {verdict.get('id')} passed"[:2000]
    db.session.commit()
    out["state"] = v.state
    if publish:
        try:
            res = publish_candidate(v, root, actor)
        except pub.PublishError as exc:
            db.session.rollback()
            out["why"] = f"not published: {exc}"
            return out
        out.update(state=v.state, published={"version": res.version, "path": v.published_path})
    return out
