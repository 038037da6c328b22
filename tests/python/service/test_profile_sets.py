"""Profile sets on disk and in the database: two libraries of one name and version (two modules) never share
a `current`, the database and the profile root agree after every publish and rollback (`pgmpi profile
fsck`), publishing trusts only the service's record of a validation, tokens record their last use."""
from __future__ import annotations

import json
import os
from datetime import datetime, timezone

import pytest
from click.testing import CliRunner
from sqlalchemy import select, text

from service.workflows import publish as publishing
from service.commands.profile import profile
from service.store.db import db
from service.store.models import ApiToken, Machine, MpiLibrary, ProfileSet, ProfileVersion

PRF_A = {"MPI_Allreduce.prf": "MPI_Allreduce\n2\n2\n0 default\n1 allreduce_as_reduce_bcast\n1\n1 1024 1\n"}
PRF_B = {"MPI_Allreduce.prf": "MPI_Allreduce\n2\n2\n0 default\n1 allreduce_as_reduce_bcast\n1\n1 65536 1\n"}


def _two_modules(app) -> tuple[int, int]:
    """openmpi 4.1.4 twice on m1, as two modules; a validated candidate for each."""
    with app.app_context():
        m = db.session.scalar(select(Machine).where(Machine.name == "m1"))
        ids = []
        for module, files in (("openmpi/4.1.4", PRF_A), ("openmpi/4.1.4-debug", PRF_B)):
            lib = MpiLibrary(machine_id=m.id, name="openmpi", version="4.1.4", module=module)
            db.session.add(lib)
            db.session.flush()
            ps = ProfileSet(machine_id=m.id, library_id=lib.id)
            db.session.add(ps)
            db.session.flush()
            v = ProfileVersion(profile_set_id=ps.id, number=1, state="validated", files=files,
                               validated_at=datetime.now(timezone.utc))
            db.session.add(v)
            db.session.flush()
            ids.append(v.id)
        db.session.commit()
        return ids[0], ids[1]


def _fsck(root, url) -> tuple[int, list]:
    r = CliRunner().invoke(profile, ["fsck", "--root", str(root), "--json", "--database-url", url])
    return r.exit_code, json.loads(r.output) if r.output.strip().startswith("[") else r.output


def _visible(path) -> dict:
    return {p.name: p.read_text() for p in path.iterdir()} if path.exists() else {}


def test_two_modules_never_share_current(app, seeded, tmp_path, monkeypatch, database_url):
    monkeypatch.setenv("PGMPITUNE_CHECK", "/bin/true")
    root = tmp_path / "profiles"
    va, vb = _two_modules(app)
    with app.app_context():
        a, b = db.session.get(ProfileVersion, va), db.session.get(ProfileVersion, vb)
        ra = publishing.publish_candidate(a, root, "test")
        rb = publishing.publish_candidate(b, root, "test")
        assert ra.target != rb.target
        assert ra.target.name == "openmpi-4.1.4"        # the first keeps the name the modules read
        publishing.rollback_set(a.profile_set, root, "test")
        b_current = rb.target / "current"
        assert _visible(b_current) == PRF_B              # rolling back A left B live
        assert db.session.get(ProfileVersion, vb).state == "published"
        assert db.session.get(ProfileVersion, va).state == "rolled-back"
    assert _fsck(root, database_url) == (0, [])
    # a second rollback of A: A at the empty set, B untouched
    with app.app_context():
        ps_a = db.session.get(ProfileVersion, va).profile_set
        try:
            publishing.rollback_set(ps_a, root, "test")
        except Exception:
            db.session.rollback()
    assert _visible(rb.target / "current") == PRF_B
    assert _fsck(root, database_url) == (0, [])
    # the CLI asks which module when two sets share name and version
    r = CliRunner().invoke(profile, ["rollback", "--root", str(root), "--machine", "m1", "--mpi", "openmpi",
                                     "--mpi-version", "4.1.4", "--database-url", database_url])
    assert r.exit_code != 0 and "--module" in r.output


def test_fsck_finds_disagreement(app, seeded, tmp_path, monkeypatch, database_url):
    monkeypatch.setenv("PGMPITUNE_CHECK", "/bin/true")
    root = tmp_path / "profiles"
    va, _ = _two_modules(app)
    with app.app_context():
        res = publishing.publish_candidate(db.session.get(ProfileVersion, va), root, "test")
    assert _fsck(root, database_url) == (0, [])
    # someone swaps current behind the service's back
    os.replace(res.target / "current", res.target / "old")
    os.symlink("versions/0", res.target / "current")
    code, problems = _fsck(root, database_url)
    assert code == 1 and "marked published" in problems[0]["problem"], problems


def test_a_republish_supersedes_the_version_it_replaces(app, seeded, tmp_path, monkeypatch, database_url):
    """Publishing version 2 of a set marks version 1 superseded in the same commit (one version is current), so
    fsck agrees after every publish and rollback; a database that refuses the superseded state leaves version
    1 current on disk and published; a rollback makes the superseded version current again."""
    monkeypatch.setenv("PGMPITUNE_CHECK", "/bin/true")
    root = tmp_path / "profiles"
    va, _ = _two_modules(app)
    with app.app_context():
        v1 = db.session.get(ProfileVersion, va)
        v2 = ProfileVersion(profile_set_id=v1.profile_set_id, number=2, state="validated", files=PRF_B,
                            validated_at=datetime.now(timezone.utc))
        db.session.add(v2)
        db.session.commit()
        vb = v2.id
        res = publishing.publish_candidate(v1, root, "test")
        sqlite = db.engine.dialect.name == "sqlite"
        refuse, allow = (("CREATE TRIGGER refuse_superseded BEFORE UPDATE OF state ON profile_versions WHEN "
                          "NEW.state = 'superseded' BEGIN SELECT RAISE(ABORT, 'refused by test'); END",
                          "DROP TRIGGER refuse_superseded") if sqlite else
                         ("ALTER TABLE profile_versions ADD CONSTRAINT refuse_superseded CHECK "
                          "(state <> 'superseded') NOT VALID",
                          "ALTER TABLE profile_versions DROP CONSTRAINT refuse_superseded"))
        with db.engine.begin() as conn:
            conn.execute(text(refuse))
        with pytest.raises(publishing.pub.PublishError, match="database refused to record the publish"):
            publishing.publish_candidate(db.session.get(ProfileVersion, vb), root, "test")
        with db.engine.begin() as conn:
            conn.execute(text(allow))
        assert _visible(res.target / "current") == PRF_A
        assert db.session.get(ProfileVersion, va).state == "published"
    assert _fsck(root, database_url) == (0, [])
    with app.app_context():
        publishing.publish_candidate(db.session.get(ProfileVersion, vb), root, "test")
        assert (db.session.get(ProfileVersion, va).state, db.session.get(ProfileVersion, vb).state) == \
            ("superseded", "published")
    assert _fsck(root, database_url) == (0, [])
    with app.app_context():
        publishing.rollback_set(db.session.get(ProfileVersion, va).profile_set, root, "test")
        assert (db.session.get(ProfileVersion, va).state, db.session.get(ProfileVersion, vb).state) == \
            ("published", "rolled-back")
    assert _fsck(root, database_url) == (0, [])


def test_publish_trusts_only_recorded_validation(app, seeded, tmp_path, monkeypatch, database_url):
    monkeypatch.setenv("PGMPITUNE_CHECK", "/bin/true")
    root, src = tmp_path / "profiles", tmp_path / "cand"
    src.mkdir()
    (src / "MPI_Allreduce.prf").write_text(PRF_B["MPI_Allreduce.prf"])
    (tmp_path / "v.json").write_text('{"ok": true}')
    base = ["publish", "--root", str(root), "--machine", "m1", "--mpi", "openmpi", "--mpi-version", "4.1.4",
            "--dir", str(src), "--actor", "eve", "--database-url", database_url]
    r = CliRunner().invoke(profile, base + ["--validation", str(tmp_path / "v.json")])
    assert r.exit_code != 0, r.output
    r = CliRunner().invoke(profile, base)
    assert r.exit_code != 0 and "validation" in r.output        # nothing recorded yet
    _two_modules(app)                                            # the service validated PRF_B's files
    r = CliRunner().invoke(profile, base)
    assert r.exit_code == 0 and "validated: profile version" in r.output, r.output


def test_token_records_last_use(client, seeded, app):
    with app.app_context():
        assert db.session.get(ApiToken, seeded["viewer_id"]).last_used_at is None
    assert client.get("/api/v1/me", headers=seeded["viewer"]).status_code == 200
    with app.app_context():
        assert db.session.get(ApiToken, seeded["viewer_id"]).last_used_at is not None


def test_a_prf_candidate_keeps_the_published_native_file(app, seeded, tmp_path, monkeypatch, database_url):
    """Publishing a .prf candidate keeps the live native file when its campaign measured the mock-ups under
    exactly that file (the runs' #@native_file_fnv1a64); measured under another file or none, it is refused
    unless forced (the file is kept then too); a rollback brings back the set as it was."""
    import pytest

    from pgmpi_formats import native
    from pgmpi_formats import ompi_rules as orr
    from service.profiles import publish as pub
    from service.store.models import Analysis, Run, Upload
    monkeypatch.setenv("PGMPITUNE_CHECK", "/bin/true")
    root = tmp_path / "profiles"
    va, _ = _two_modules(app)
    rules = orr.write_rules([orr.Decision("bcast", 2, 4096, "native:binomial")], native.FALLBACK["openmpi"])
    with app.app_context():
        v = db.session.get(ProfileVersion, va)
        names, directory = publishing._names(v.profile_set)
        pub.publish(root, *names, {"native.rules": rules}, directory=directory, actor="t", validated=False,
                    force=True, reason="test: a live native file", mpi="openmpi")
        lib = v.profile_set.library
        up = Upload(upload_id="u1", machine_id=lib.machine_id, actor="t", n_files=3, n_timings=0)
        db.session.add(up)
        db.session.flush()

        def run(name, headers):
            db.session.add(Run(upload_pk=up.id, machine_id=lib.machine_id, library_id=lib.id, file_name=name,
                               nprocs=2, headers=headers, footer=[]))

        run("run-0.txt", {"native_file_fnv1a64": "0123456789abcdef"})          # another file
        run("run-native-0.txt", {"native_switch": "communicator_per_variant"})  # forced natives: never under one
        a = Analysis(machine_id=lib.machine_id, library_id=lib.id, alpha=0.05, test="paired_t", fdr=False, actor="t")
        db.session.add(a)
        db.session.flush()
        v.analysis_id = a.id
        db.session.commit()
        with pytest.raises(pub.PublishError, match=r"measured under 0123456789abcdef: measure them under the live"):
            publishing.publish_candidate(v, root, "test")
        db.session.rollback()
        # the same campaign measured under the live file: published, and the file stays
        db.session.execute(Run.__table__.update().where(Run.file_name == "run-0.txt")
                           .values(headers={"native_file_fnv1a64": native.file_digest(rules)}))
        db.session.commit()
        v = db.session.get(ProfileVersion, va)
        res = publishing.publish_candidate(v, root, "test")
        assert _visible(res.target / "current") == {**PRF_A, "native.rules": rules}
        assert res.version == 2 and not res.forced
        publishing.rollback_set(v.profile_set, root, "test")
        assert _visible(res.target / "current") == {"native.rules": rules}
