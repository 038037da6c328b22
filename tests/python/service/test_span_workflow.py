"""A span between measured process counts through the workflow (service/analysis/spans.py): the analysis' span
becomes a candidate version of its own, the agent's planning validates it at its unmeasured count, the real
validation judge (spans.confirm) confirms or drops it, only a confirmed span is published (added to the live
set), and the pages name it as a span.  Python level on the real database; the figures are built here."""
from __future__ import annotations

from datetime import datetime, timezone
from types import SimpleNamespace

from sqlalchemy import select

from pgmpi_formats.prf import format_prf
from scheduler.campaign import parse_campaign
from scheduler.validation import validation_job
from service.analysis.spans import span_candidates
from service.api.schemas import ValidationFigureIn
from service.profiles import publish as pub
from service.store.analyses import store_result
from service.store.db import db
from service.store.models import Machine, MpiLibrary, ProfileVersion
from service.workflows import publish as publishing
from service.workflows.analyse import convert
from service.workflows.live import tuned_now
from service.workflows.validate import record_validation

ALG = "allreduce_as_reduce_bcast"


def _profile(p: int) -> dict:
    text = format_prf("MPI_Allreduce", p, [(1024, 4096, ALG)], meta={"machine": "m1", "mpi_library": "openmpi",
                                                                      "mpi_version": "4.1.4"})
    return {"machine": "m1", "library": "openmpi", "version": "4.1.4", "collective": "allreduce",
            "mpi_name": "MPI_Allreduce", "nprocs": p, "layout": "", "filename": f"allreduce_p{p}.prf",
            "text": text, "ranges": [{"first": 1024, "last": 4096, "mockup": ALG}]}


def _figs(p: int, inside: float) -> list[ValidationFigureIn]:
    """A paired validation at p: the control size 512 at 1.0, the sizes inside the span at `inside`."""
    out = []
    for msize, r in ((512, 1.0), (1024, inside), (2048, inside), (4096, inside)):
        out.append(ValidationFigureIn(collective="allreduce", msize=msize, nprocs=p, default_time=1e-5 * r,
                                      tuned_time=1e-5, speedup=r, n_default=20, n_tuned=20,
                                      run_ratios=[r, r * 1.01, r * 0.99], paired=True))
    return out


def _analysis(app) -> tuple[int, int, int]:
    """The analysis of a campaign that measured allreduce at p = 2 and 4, both redirecting 1-4 KiB the same
    way: the measured candidate and the span for p = 3 (returns machine-less ids: library, main, span)."""
    profs = [_profile(2), _profile(4)]
    spans, refused = span_candidates(profs, {("m1", "openmpi", "4.1.4", "allreduce"): {2, 4}})
    assert not refused and [s.filename for s in spans] == ["allreduce_p3-3.prf"]
    result = convert({"profiles": profs, "spans": [s.to_dict() for s in spans], "verdicts": [],
                      "configs": [{"nprocs": 2}, {"nprocs": 4}]})
    with app.app_context():
        m = db.session.scalar(select(Machine).where(Machine.name == "m1"))
        lib = MpiLibrary(machine_id=m.id, name="openmpi", version="4.1.4")
        db.session.add(lib)
        db.session.flush()
        data = SimpleNamespace(alpha=0.05, test="paired_t", fdr=True)
        a = store_result(m, lib, None, data, "test", result)
        db.session.commit()
        vs = db.session.scalars(select(ProfileVersion).where(ProfileVersion.analysis_id == a.id)
                                .order_by(ProfileVersion.number)).all()
        assert [sorted(v.files) for v in vs] == [["allreduce_p2.prf", "allreduce_p4.prf"], ["allreduce_p3-3.prf"]]
        assert vs[1].notes == "span: p 3, between measured 2 and 4, to be validated at 3"
        return lib.id, vs[0].id, vs[1].id


def test_span_is_planned_judged_and_published_on_its_own(app, seeded, tmp_path, monkeypatch):
    monkeypatch.setenv("PGMPITUNE_CHECK", "/bin/true")
    root = tmp_path / "profiles"
    app.config["PGMPI_PROFILE_ROOT"] = str(root)
    lib_id, main_id, span_id = _analysis(app)
    c = parse_campaign({"name": "c", "machine": "m1", "backend": "local",
                        "modules": [{"name": "openmpi/4.1.4", "mpi": "openmpi"}],
                        "layouts": [{"nodes": 1, "ppn": 2}, {"nodes": 1, "ppn": 4}],
                        "collectives": {"allreduce": {"sizes": [512, 1024, 2048, 4096, 65536]}},
                        "validation": {"nrep": 5, "mpiruns": 3}})
    with app.app_context():
        main, span = db.session.get(ProfileVersion, main_id), db.session.get(ProfileVersion, span_id)
        # the agent's planning: one job per candidate version; the span's at its unmeasured count p = 3
        jm = validation_job(c, {"id": main.id, "library": "openmpi", "files": main.files}, tmp_path / "vm", 600)
        js = validation_job(c, {"id": span.id, "library": "openmpi", "files": span.files}, tmp_path / "vs", 600)
        assert (jm.layout.nodes, jm.layout.ppn) == (1, 2)
        assert (js.layout.nodes, js.layout.ppn) == (1, 3) and js.key != jm.key
        # the measured profiles validated at p = 2 (the first profile's count) and published
        assert record_validation(main, _figs(2, 1.3) + _figs(4, 1.3), None, "agent", "j1", "c", [])["ok"]
        publishing.publish_candidate(main, root, "test")
        # unvalidated, the span is never published, not even forced
        try:
            publishing.publish_candidate(span, root, "test", force=True, reason="try")
            raise AssertionError("an unconfirmed span was published")
        except pub.PublishError as exc:
            assert "validation at its unmeasured count" in str(exc)
        db.session.rollback()
        # figures from a measured neighbour say nothing about p = 3: refused by the judge (spans.confirm)
        v = record_validation(span, _figs(2, 1.3), None, "agent", "j2", "c", [])
        assert v["state"] == "failed" and "must run at p=3" in v["why"] and span.validated_at is None
        # at p = 3, slower inside the span: dropped, still unpublishable
        v = record_validation(span, _figs(3, 0.8), None, "agent", "j3", "c", [])
        assert v["state"] == "failed" and v["slower"] and span.validated_at is None
        # at p = 3, faster: confirmed, and publishing adds it to the live set
        v = record_validation(span, _figs(3, 1.25), None, "agent", "j4", "c", [])
        assert v["state"] == "passed" and span.validated_at is not None
        res = publishing.publish_candidate(span, root, "test")
        live = {p.name for p in (res.target / "current").iterdir()}
        assert {"allreduce_p2.prf", "allreduce_p4.prf", "allreduce_p3-3.prf"} <= live
        now = tuned_now(db.session, db.session.get(MpiLibrary, lib_id), root)
        by_p = {r["nprocs"]: r for r in now["live"]}
        assert by_p[3]["span"] == "p 3, between measured 2 and 4, validated at 3"
        assert by_p[2]["span"] is None and by_p[2]["figures"], "the carried profile keeps its validation figures"
        assert [f["msize"] for f in by_p[3]["figures"]] == [1024, 2048, 4096]
        set_id = span.profile_set_id
    client = app.test_client()
    hdr = seeded["viewer"]
    lib = "openmpi-4.1.4"
    page = client.get(f"/m/m1/{lib}/tuned", headers=hdr).get_data(as_text=True)
    assert "p 3, between measured 2 and 4, validated at 3" in page
    page = client.get(f"/profiles/{set_id}", headers=hdr).get_data(as_text=True)
    assert "span: p 3, between measured 2 and 4, validated at 3" in page


def test_a_confirmed_span_stays_live_while_its_neighbours_keep_their_decisions(app, seeded, tmp_path, monkeypatch):
    """A measured candidate published after a confirmed span: the span stays live when p = 2 and p = 4 redirect
    exactly as before (it used to vanish from the live set), and is dropped with the reason on the page when
    one of them changed; fsck finds database and disk agreeing both times (the versions replaced superseded)."""
    monkeypatch.setenv("PGMPITUNE_CHECK", "/bin/true")
    root = tmp_path / "profiles"
    app.config["PGMPI_PROFILE_ROOT"] = str(root)
    _, main_id, span_id = _analysis(app)
    with app.app_context():
        main, span = db.session.get(ProfileVersion, main_id), db.session.get(ProfileVersion, span_id)
        assert record_validation(main, _figs(2, 1.3) + _figs(4, 1.3), None, "agent", "j1", "c", [])["ok"]
        publishing.publish_candidate(main, root, "test")
        assert record_validation(span, _figs(3, 1.25), None, "agent", "j2", "c", [])["ok"]
        publishing.publish_candidate(span, root, "test")

        def measured(files: dict[str, str]) -> ProfileVersion:
            n = 1 + max(x.number for x in main.profile_set.versions)
            v = ProfileVersion(profile_set_id=main.profile_set_id, number=n, state="validated", files=files,
                               validated_at=datetime.now(timezone.utc), actor="test", notes="")
            db.session.add(v)
            db.session.flush()
            return v

        # the next night measured the same decisions at p = 2 and 4 (a new p = 8 profile besides)
        same = {f"allreduce_p{p}.prf": _profile(p)["text"] for p in (2, 4)}
        same["allreduce_p8.prf"] = format_prf("MPI_Allreduce", 8, [(8, 64, ALG)])
        again = measured(same)
        res = publishing.publish_candidate(again, root, "test")
        live = {p.name for p in (res.target / "current").iterdir()}
        assert live == {"allreduce_p2.prf", "allreduce_p4.prf", "allreduce_p8.prf", "allreduce_p3-3.prf"}
        assert "kept live by candidate #3" in span.notes and publishing.fsck(root) == []
        # then p = 4 redirects only from 2 KiB: the span's evidence no longer holds
        changed = dict(same)
        changed["allreduce_p4.prf"] = format_prf("MPI_Allreduce", 4, [(2048, 4096, ALG)])
        res = publishing.publish_candidate(measured(changed), root, "test")
        assert "allreduce_p3-3.prf" not in {p.name for p in (res.target / "current").iterdir()}
        assert publishing.fsck(root) == []
        set_id = span.profile_set_id
        db.session.commit()
    page = app.test_client().get(f"/profiles/{set_id}", headers=seeded["viewer"]).get_data(as_text=True)
    assert ("dropped from the live set by candidate #4: its measured neighbours&#39; decisions changed: p=4 "
            "redirects 2048-4096 B allreduce_as_reduce_bcast (was 1024-4096 B allreduce_as_reduce_bcast)") in page, page
