"""Issue 32: what is tuned now. A candidate validated through service/workflows/validate.py (one range kept, one
dropped, a control size) and published: the tuned-now view, the overview, the heatmap, /profiles and the profile
page all say what is live and with which gain, never the dropped range's or the control's figure as a loss."""
from __future__ import annotations

import re
from types import SimpleNamespace

from dash_helpers import analyse, login
from test_pages import seed


def fig(collective, msize, ratio, nprocs=2):
    return SimpleNamespace(collective=collective, msize=msize, nprocs=nprocs, default_time=1e-5 * ratio,
                           tuned_time=1e-5, speedup=ratio, n_default=5, n_tuned=5, run_ratios=[ratio] * 5,
                           paired=True, layout="")


def published(app, tokens):
    c = app.test_client()
    seed(c, tokens, ps=(2,))
    analyse(app, c, tokens["admin"], "m1", "openmpi", "nightly-1")
    from service.workflows import publish as publishing, validate
    from service.store.db import db
    from service.store.models import ProfileVersion
    from sqlalchemy import select
    with app.app_context():
        v = db.session.scalar(select(ProfileVersion))
        ranges = publishing._ranges(v.files)
        assert [(r["first"], r["last"]) for r in ranges] == [(65536, 1048576)], ranges
        verdict = validate.record_validation(v, [fig("allreduce", 65536, 1.5), fig("allreduce", 1048576, 0.7),
                                                  fig("allreduce", 8, 0.98)], None, "test", "val-1", "nightly-1", [])
        assert verdict["state"] == "repaired", verdict
        publishing.publish_candidate(v, app.config["PGMPI_PROFILE_ROOT"] and
                                    __import__("pathlib").Path(app.config["PGMPI_PROFILE_ROOT"]), "user:test")
        return c, v.id, v.profile_set_id


def test_tuned_now_says_what_is_live_dropped_and_not_acted_on(app, tokens):
    c, vid, set_id = published(app, tokens)
    now = c.get("/m/m1/openmpi-4.1.4/tuned?format=json").get_json()
    assert now["live_version"] == 1
    assert [(r["collective"], r["first"], r["algorithm"]) for r in now["live"]] == \
        [("allreduce", 65536, "allreduce_as_reduce_bcast")] and now["live"][0]["last"] < 1048576
    assert now["live"][0]["gain"] == 1.5
    assert [(d["last"], d["algorithm"]) for d in now["dropped"]] == [(1048576, "allreduce_as_reduce_bcast")]
    assert now["dropped"][0]["why"]
    not_acted = {(x["collective"], x["msize"]): x for x in now["not_acted"]}
    assert ("allreduce", 1048576) in not_acted and ("allreduce", 65536) not in not_acted
    html = c.get("/m/m1/openmpi-4.1.4/tuned").get_data(as_text=True)
    assert "published version 1" in html and "1.50×" in html and "allreduce_as_reduce_bcast" in html
    # linked from the overview, the heatmap's live cell and the library's pages
    ov = c.get("/").get_data(as_text=True)
    assert "live: version 1" in ov and "/m/m1/openmpi-4.1.4/tuned" in ov
    hm = c.get("/m/m1/openmpi-4.1.4/heatmap?p=2").get_data(as_text=True)
    assert re.search(r'class="num[^"]* live"[^>]*><a href="/m/m1/openmpi-4.1.4/tuned">', hm)
    assert "/m/m1/openmpi-4.1.4/tuned" in c.get("/m/m1/openmpi-4.1.4/detail/allreduce?p=2").get_data(as_text=True)
    # the campaigns page says what the campaign found and what became of it, not only the control arm
    camp = c.get("/campaigns").get_data(as_text=True)
    assert re.search(r"\d+ verified: \d+ mock-up faster violation\(s\), profile v1 published", camp), camp


def test_profile_page_shows_the_live_gain_labels_controls_and_offers_no_second_publish(app, tokens):
    c, vid, set_id = published(app, tokens)
    c = login(c, "admin1", "admin-password")
    html = c.get(f"/profiles/{set_id}?candidate={vid}").get_data(as_text=True)
    versions = html.split('id="versions"')[1].split("</table>")[0]
    assert "gain of the redirected ranges ≥ 1.50×" in versions and "0.70" not in versions
    assert "control (not redirected)" in html and "dropped by validation" in html
    assert 'id="publish"' not in html and "is published" in html


def test_profiles_has_a_row_per_library_even_with_nothing_published(app, tokens):
    c = app.test_client()
    seed(c, tokens, libs=(("openmpi", "4.1.4"), ("mpich", "4.0.2")), ps=(2,))
    analyse(app, c, tokens["admin"], "m1", "openmpi", "nightly-1")
    html = c.get("/profiles").get_data(as_text=True)
    rows = html.split('id="profiles"')[1].split("</table>")[0]
    assert "mpich-4.0.2" in rows and "nothing to publish, because no campaign of this library has been analysed" in rows
    assert "openmpi-4.1.4" in rows
