"""Publishing: layout, atomic swap, crash safety, sanitised names, validation gate, rollback.

Atomicity tests inject `/bin/true` as the checker (they test the file-system protocol,
not the profile format); the tests marked mpi use the real pgmpitune-check.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from service.profiles import publish as pub
from pgmpi_formats import site as site_config
from service.commands.profile import profile

ACCEPT_ALL = ["/bin/true"]
PRF_V1 = {"MPI_Allreduce.prf": "MPI_Allreduce\n2\n2\n0 default\n1 allreduce_as_reduce_bcast\n1\n1 1024 1\n"}
PRF_V2 = {"MPI_Allreduce.prf": "MPI_Allreduce\n2\n2\n0 default\n1 allreduce_as_reduce_bcast\n1\n1 65536 1\n",
          "MPI_Bcast.prf": "MPI_Bcast\n2\n2\n0 default\n1 bcast_as_scatter_allgather\n1\n16 4096 1\n"}


def visible(root: Path, machine="m1", mpi="openmpi", ver="4.1.4") -> dict[str, str] | None:
    """What a reader of current sees (None if no current)."""
    cur = root / machine / f"{mpi}-{ver}" / "current"
    if not cur.exists():
        return None
    return {p.name: p.read_text() for p in sorted(cur.iterdir())}


def do_publish(root, files, **kw):
    kw.setdefault("actor", "alice")
    kw.setdefault("validated", True)
    kw.setdefault("checker", ACCEPT_ALL)
    return pub.publish(root, "m1", "openmpi", "4.1.4", files, **kw)


def test_layout_and_swap(tmp_path):
    r1 = do_publish(tmp_path, PRF_V1)
    t = tmp_path / "m1" / "openmpi-4.1.4"
    assert r1.version == 1 and r1.previous is None
    assert os.readlink(t / "current") == "versions/1"
    assert visible(tmp_path) == PRF_V1
    r2 = do_publish(tmp_path, PRF_V2)
    assert (r2.version, r2.previous) == (2, 1)
    assert visible(tmp_path) == PRF_V2
    assert (t / "versions" / "1" / "MPI_Allreduce.prf").read_text() == PRF_V1["MPI_Allreduce.prf"]
    hist = pub.read_history(t)
    assert [(e["action"], e["version"], e["actor"]) for e in hist] == [("publish", 1, "alice"), ("publish", 2, "alice")]
    assert not [p for p in t.iterdir() if p.name.startswith((".tmp-", ".current-"))]


def test_rollback_stack(tmp_path):
    for files in (PRF_V1, PRF_V2, PRF_V1):
        do_publish(tmp_path, files)
    t = tmp_path / "m1" / "openmpi-4.1.4"
    assert pub.rollback(tmp_path, "m1", "openmpi", "4.1.4", actor="bob").version == 2
    assert pub.rollback(tmp_path, "m1", "openmpi", "4.1.4", actor="bob").version == 1
    assert visible(tmp_path) == PRF_V1
    # rolling back the first publication: an empty set, library defaults everywhere
    r = pub.rollback(tmp_path, "m1", "openmpi", "4.1.4", actor="bob")
    assert r.version == 0 and visible(tmp_path) == {}
    with pytest.raises(pub.PublishError, match="already current"):
        pub.rollback(tmp_path, "m1", "openmpi", "4.1.4", actor="bob")
    # explicit target
    assert pub.rollback(tmp_path, "m1", "openmpi", "4.1.4", actor="bob", to=3).version == 3
    with pytest.raises(pub.PublishError, match="does not exist"):
        pub.rollback(tmp_path, "m1", "openmpi", "4.1.4", actor="bob", to=9)
    assert [e["actor"] for e in pub.read_history(t)][-1] == "bob"


def test_rollback_nothing_published(tmp_path):
    with pytest.raises(pub.PublishError, match="nothing published"):
        pub.rollback(tmp_path, "m1", "openmpi", "4.1.4", actor="bob")


@pytest.mark.parametrize("step", pub.PUBLISH_STEPS)
def test_crash_by_exception_at_every_step(tmp_path, monkeypatch, step):
    do_publish(tmp_path, PRF_V1)

    def hook(s):
        if s == step:
            raise KeyboardInterrupt(f"crash at {s}")
    monkeypatch.setattr(pub, "_STEP_HOOK", hook)
    with pytest.raises(KeyboardInterrupt):
        do_publish(tmp_path, PRF_V2)
    seen = visible(tmp_path)
    # either the old complete set or (only once current was swapped) the new complete set
    if step == "current-swapped":
        assert seen == PRF_V2
    else:
        assert seen == PRF_V1
    monkeypatch.setattr(pub, "_STEP_HOOK", None)
    # the next operation sweeps leftovers and works
    r = do_publish(tmp_path, PRF_V2)
    assert visible(tmp_path) == PRF_V2
    t = tmp_path / "m1" / "openmpi-4.1.4"
    assert not [p for p in t.iterdir() if p.name.startswith((".tmp-", ".current-"))]
    # every version directory is complete
    for v in (t / "versions").iterdir():
        assert {p.name for p in v.iterdir()} in ({"MPI_Allreduce.prf"}, set(PRF_V2))
    # rollback after a crash goes to the set that was visible before the last publish
    rb = pub.rollback(tmp_path, "m1", "openmpi", "4.1.4", actor="bob")
    assert visible(tmp_path) == (PRF_V2 if step == "current-swapped" else PRF_V1), rb


KILLER = textwrap.dedent("""
    import os, signal, sys
    from service.profiles import publish as pub
    step = sys.argv[2]
    def hook(s):
        if s == step:
            os.kill(os.getpid(), signal.SIGKILL)
    pub._STEP_HOOK = hook
    files = {"MPI_Allreduce.prf": "new\\n" * 100000, "MPI_Bcast.prf": "new-bcast\\n"}
    pub.publish(sys.argv[1], "m1", "openmpi", "4.1.4", files, actor="k", validated=True,
                checker=["/bin/true"])
""")


@pytest.mark.parametrize("step", pub.PUBLISH_STEPS)
def test_crash_by_sigkill_at_every_step(tmp_path, repo_root, step):
    do_publish(tmp_path, PRF_V1)
    res = subprocess.run([sys.executable, "-c", KILLER, str(tmp_path), step], cwd=repo_root,
                         capture_output=True, text=True)
    assert res.returncode == -signal.SIGKILL, res.stderr
    seen = visible(tmp_path)
    if step == "current-swapped":
        assert seen == {"MPI_Allreduce.prf": "new\n" * 100000, "MPI_Bcast.prf": "new-bcast\n"}
    else:
        assert seen == PRF_V1
    do_publish(tmp_path, PRF_V2)
    assert visible(tmp_path) == PRF_V2


def test_validation_gate_and_forced_audit(tmp_path):
    with pytest.raises(pub.PublishError, match="validation"):
        do_publish(tmp_path, PRF_V1, validated=False)
    assert not (tmp_path / "m1" / "openmpi-4.1.4" / "current").exists()
    with pytest.raises(pub.PublishError, match="reason"):
        do_publish(tmp_path, PRF_V1, validated=False, force=True)
    r = do_publish(tmp_path, PRF_V1, validated=False, force=True, reason="urgent fix for user X")
    assert r.forced
    e = pub.read_history(r.target)[-1]
    assert e["forced"] is True and e["reason"] == "urgent fix for user X" and e["validated"] is False


def test_control_label_never_published(tmp_path):
    """default_control is the default measured a second time: even a checker that accepts everything and a
    forced publication cannot put it into a profile."""
    bad = {"MPI_Allreduce.prf": PRF_V1["MPI_Allreduce.prf"].replace("allreduce_as_reduce_bcast", "default_control")}
    with pytest.raises(pub.PublishError, match="default_control"):
        do_publish(tmp_path, bad, validated=False, force=True, reason="try")
    assert not (tmp_path / "m1" / "openmpi-4.1.4" / "current").exists()


def test_checker_rejection_changes_nothing(tmp_path):
    do_publish(tmp_path, PRF_V1)
    with pytest.raises(pub.PublishError, match="rejected"):
        do_publish(tmp_path, PRF_V2, checker=["/bin/false"])
    assert visible(tmp_path) == PRF_V1
    t = tmp_path / "m1" / "openmpi-4.1.4"
    assert pub._versions(t) == [1]
    assert not [p for p in t.iterdir() if p.name.startswith(".tmp-")]


@pytest.mark.parametrize("machine,mpi,ver", [
    ("../../etc", "openmpi", "4.1.4"), ("m1", "../x", "1"), ("m1", "openmpi", "../../../tmp"),
    ("/abs", "openmpi", "1"), ("..", "..", ".."), ("a/b", "c\\d", "e\x00f"), (".hidden", "open mpi", "4.1.4 rc1"),
])
def test_names_never_leave_root(tmp_path, machine, mpi, ver):
    root = tmp_path / "root"
    r = pub.publish(root, machine, mpi, ver, PRF_V1, actor="a", validated=True, checker=ACCEPT_ALL)
    assert root.resolve() in r.target.resolve().parents
    assert r.target.parent.parent == root
    assert not any(p.name.startswith(".") and p.name != ".lock" for p in r.target.parents if root in p.parents)
    assert list(tmp_path.iterdir()) == [root]


def test_bad_names_refused(tmp_path):
    for bad in ["", "   "]:
        with pytest.raises(pub.PublishError, match="empty"):
            pub.publish(tmp_path, bad, "openmpi", "1", PRF_V1, actor="a", validated=True, checker=ACCEPT_ALL)
    for fname in ["../x.prf", ".hidden", "a/b.prf", ""]:
        with pytest.raises(pub.PublishError, match="file name"):
            do_publish(tmp_path, {fname: "x"})
    with pytest.raises(pub.PublishError, match="absolute"):
        pub.publish("relative/root", "m", "o", "1", PRF_V1, actor="a", validated=True, checker=ACCEPT_ALL)


def test_symlink_escape_refused(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir(), outside.mkdir()
    (root / "m1").symlink_to(outside)
    with pytest.raises(pub.PublishError, match="outside the profile root"):
        do_publish(root, PRF_V1)
    assert list(outside.iterdir()) == []


def migrated_sqlite(tmp_path) -> str:
    import flask_migrate
    from service.app import create_app
    url = f"sqlite:///{tmp_path / 'cli.sqlite'}"
    app = create_app({"SQLALCHEMY_DATABASE_URI": url, "INSTANCE_PATH": str(tmp_path / "instance")})
    with app.app_context():
        flask_migrate.upgrade(directory=str(Path(__file__).resolve().parents[3] / "migrations"))
    return url


def test_cli_publish_rollback_status(tmp_path, monkeypatch):
    monkeypatch.setenv("PGMPITUNE_CHECK", "/bin/true")
    for var in ("PGMPI_PROFILE_ROOT", "PGMPI_SITE_PROFILE_ROOT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PGMPI_SITE_CONFIG", str(tmp_path / "no-site.conf"))
    src = tmp_path / "cand"
    src.mkdir()
    for k, v in PRF_V1.items():
        (src / k).write_text(v)
    root = tmp_path / "root"
    base = ["--root", str(root), "--machine", "m1", "--mpi", "openmpi", "--mpi-version", "4.1.4"]
    monkeypatch.setenv("DATABASE_URL", migrated_sqlite(tmp_path))    # rollback asks the database
    run = CliRunner().invoke
    r = run(profile, ["publish", *base, "--dir", str(src), "--actor", "carol"])
    assert r.exit_code != 0 and "validation" in r.output
    # a file saying {"ok": true} is no evidence: only the service's record of a validation counts
    (tmp_path / "v.json").write_text(json.dumps({"ok": True, "worst_ratio": 0.97}))
    r = run(profile, ["publish", *base, "--dir", str(src), "--actor", "carol", "--validation", str(tmp_path / "v.json")])
    assert r.exit_code != 0 and "no evidence" in r.output, r.output
    r = run(profile, ["publish", *base, "--dir", str(src), "--force", "--reason", "first", "--actor", "carol"])
    assert r.exit_code == 0, r.output
    assert "published version 1" in r.output
    r = run(profile, ["publish", *base, "--dir", str(src), "--force", "--reason", "test", "--actor", "carol"])
    assert r.exit_code == 0 and "FORCED" in r.output
    # a directory with only a native file would drop the live .prf profiles: refused unless --replace
    nat = tmp_path / "nat"
    nat.mkdir()
    (nat / "native.rules").write_text("1\n7\n1\n2\n1\n0 0 0 0\n")
    r = run(profile, ["publish", *base, "--dir", str(nat), "--force", "--reason", "t", "--actor", "carol"])
    assert r.exit_code != 0 and "drops MPI_Allreduce.prf from the live set" in r.output and "--replace" in r.output, r.output
    assert json.loads(run(profile, ["status", *base, "--json"]).output)["current"] == 2
    r = run(profile, ["rollback", *base, "--actor", "dave"])
    assert r.exit_code == 0 and "rolled back to version 1" in r.output, r.output
    assert "no profile set in the database: files only" in r.output
    r = run(profile, ["status", *base, "--json"])
    st = json.loads(r.output)
    assert st["current"] == 1 and st["versions"] == [1, 2]
    assert [e["actor"] for e in st["history"]] == ["carol", "carol", "dave"]
    # no --root and no site file: the one default root, the one the modules read too
    # (that root does not exist here: a message naming it and exit 1, never an empty answer)
    r = run(profile, ["status", *base[2:]])
    assert r.exit_code == 1 and f"profile root {site_config.DEFAULT_PROFILE_ROOT} does not exist" in r.output, r.output


def test_cli_takes_the_profile_root_of_the_site_file(tmp_path, monkeypatch):
    """`pgmpi profile` publishes where the modules read: profile_root of the site file, unless overridden."""
    monkeypatch.setenv("PGMPITUNE_CHECK", "/bin/true")
    for var in ("PGMPI_PROFILE_ROOT", "PGMPI_SITE_PROFILE_ROOT"):
        monkeypatch.delenv(var, raising=False)
    conf = tmp_path / "site.conf"
    conf.write_text(f"# site\n  profile_root = {tmp_path / 'siteroot'}   # published profiles\nmachine = m1\nbad line\n")
    monkeypatch.setenv("PGMPI_SITE_CONFIG", str(conf))
    src = tmp_path / "cand"
    src.mkdir()
    for k, v in PRF_V1.items():
        (src / k).write_text(v)
    base = ["--machine", "m1", "--mpi", "openmpi", "--mpi-version", "4.1.4"]
    r = CliRunner().invoke(profile, ["publish", *base, "--dir", str(src), "--force", "--reason", "t", "--actor", "x"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "siteroot" / "m1" / "openmpi-4.1.4" / "current").is_symlink()
    # the deprecated variables still beat the file for one release, with a warning; explicit beats all
    monkeypatch.setenv("PGMPI_SITE_PROFILE_ROOT", str(tmp_path / "userroot"))
    with pytest.warns(DeprecationWarning, match="PGMPI_SITE_PROFILE_ROOT"):
        assert site_config.profile_root() == tmp_path / "userroot"
    monkeypatch.setenv("PGMPI_PROFILE_ROOT", str(tmp_path / "svcroot"))
    with pytest.warns(DeprecationWarning, match="PGMPI_PROFILE_ROOT"):
        assert site_config.profile_root() == tmp_path / "svcroot"
    assert site_config.profile_root(tmp_path / "explicit") == tmp_path / "explicit"
    assert site_config.read_site_config(conf) == {"profile_root": str(tmp_path / "siteroot"), "machine": "m1"}


def test_concurrent_publishers_get_distinct_versions(tmp_path, repo_root):
    code = ("import sys; from service.profiles import publish as p; "
            "[p.publish(sys.argv[1], 'm1', 'openmpi', '4.1.4', {'a.prf': str(i)}, actor='x', validated=True, "
            "checker=['/bin/true']) for i in range(10)]")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], cwd=repo_root) for _ in range(3)]
    assert all(p.wait() == 0 for p in procs)
    t = tmp_path / "m1" / "openmpi-4.1.4"
    assert pub._versions(t) == list(range(1, 31))
    assert len(pub.read_history(t)) == 30
