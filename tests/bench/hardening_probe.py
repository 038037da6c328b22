"""Issue 31's fifteen defects as requests, and the service's answers: one line per request (defect, request,
status, the start of the message).  In-process (Flask test client) on a scratch PostgreSQL database of
deploy/postgres.sh's server, against the service of a source tree (default: this one; `--tree` another
checkout, e.g. an export of main, to compare before and after).

    .venv/bin/python tests/bench/hardening_probe.py [--tree /path/to/other/checkout]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CODE = r'''
import json, os, re, sys, threading, tempfile
from pathlib import Path
import flask_migrate
from sqlalchemy import select, update
from service.app import create_app
from service.store.db import db
from service.store.models import Machine, MpiLibrary, ProfileSet, ProfileVersion, Run, User, ApiToken
from service.auth import add_user, create_token
sys.path.insert(0, TESTS)
from svc_data import results_file

tmp = Path(tempfile.mkdtemp())
app = create_app({"SQLALCHEMY_DATABASE_URI": URL, "SECRET_KEY": "probe", "INSTANCE_PATH": str(tmp / "inst"),
                  "PASSWORD_HASH_METHOD": "pbkdf2:sha256:200000", "PGMPI_PROFILE_ROOT": str(tmp / "root")})
with app.app_context():
    flask_migrate.upgrade(directory=MIGRATIONS)
    db.session.add(Machine(name="m1", nodes=64, cores_per_node=32, interconnect="", notes=""))
    db.session.flush()
    add_user("alice", "correct horse battery", "admin")
    add_user("bob", "correct horse battery", "viewer")
    _, AGENT = create_token("agent1", "agent", "m1")
    _, ADMIN = create_token("admin", "admin")
    _, BOB = create_token("bob-script", "viewer", user="bob")
    db.session.commit()
A = {"Authorization": "Bearer " + AGENT}
ADM = {"Authorization": "Bearer " + ADMIN}
c = app.test_client()

def show(d, req, r):
    try:
        msg = (r.json or {}).get("error", {}).get("message", "") if r.is_json else ""
    except Exception:
        msg = ""
    if not msg:
        text = r.get_data(as_text=True)
        m = re.search(r'class="(?:bad|flash[^"]*)"[^>]*>([^<]{0,120})', text) or re.search(r"<p>([^<]{0,120})", text)
        msg = m.group(1) if m else text[:80]
    print(f"{d:<4} {req[:92]:<92} -> {r.status_code} {' '.join(str(msg).split())[:110]}", flush=True)

def header(key, value, text=None):
    lines = (text or results_file()).splitlines()
    for i, l in enumerate(lines):
        if l.startswith(f"#@{key}="):
            lines[i] = f"#@{key}={value}"; break
    else:
        lines.insert(1, f"#@{key}={value}")
    return "\n".join(lines) + "\n"

def up(uid, files, headers=A):
    return c.post("/api/v1/uploads", headers=headers, json={"upload_id": uid, "files": files})

def csrf(client):
    return re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', client.get("/auth/login").get_data(as_text=True)).group(1)

# D1
big = b"csrf_token=x&password=p&username=" + b"x" * 5_000_000
show("D1", "anonymous POST /auth/login, 5 MB urlencoded form", c.post("/auth/login", data=big, content_type="application/x-www-form-urlencoded"))
show("D1", "anonymous POST /profiles/1/publish, 5 MB urlencoded form", c.post("/profiles/1/publish", data=big, content_type="application/x-www-form-urlencoded"))
show("D1", "admin-token POST /api/v1/machines, 40 MB JSON body", c.post("/api/v1/machines", headers=ADM, data=b'{"name": "' + b"x" * 40_000_000 + b'"}', content_type="application/json"))
# D3
text = re.sub(r"^(MPI_Allreduce \d+ \d+) [0-9.e-]+ allreduce_as", r"\1 0.0000000000 allreduce_as", results_file(nrep=5), flags=re.M)
up("zeros", [{"name": f"r{i}.txt", "content": header("mpirun_index", str(i), text)} for i in range(3)])
for t in ("welch", "mannwhitney", "ks"):
    show("D3", f"POST /api/v1/analyses test={t}, a mock-up's timings all 0", c.post("/api/v1/analyses", headers=ADM, json={"machine": "m1", "library": "openmpi", "test": t}))
# D2
from service.profiles import publish as pub
root = tmp / "p2"; outside = tmp / "outside"; outside.mkdir()
(root / "m1" / "openmpi-4.1.4").mkdir(parents=True)
os.symlink(outside, root / "m1" / "openmpi-4.1.4" / "versions")
PRF = {"MPI_Allreduce.prf": "MPI_Allreduce\n2\n2\n0 default\n1 allreduce_as_reduce_bcast\n1\n1 1024 1\n"}
try:
    res = pub.publish(root, "m1", "openmpi", "4.1.4", PRF, actor="probe", validated=True, checker=["/bin/true"])
    print(f"D2   publish with <set>/versions -> {outside} (symlink)                                   -> published; outside the root now: {sorted(p.name for p in outside.iterdir())}")
except Exception as e:
    print(f"D2   publish with <set>/versions -> outside (symlink)                                   -> {type(e).__name__}: {str(e)[:110]}")
root3 = tmp / "p3"; (root3 / "m1" / "openmpi-4.1.4").mkdir(parents=True)
os.symlink(outside / "hist", root3 / "m1" / "openmpi-4.1.4" / "history.jsonl")
try:
    pub.publish(root3, "m1", "openmpi", "4.1.4", PRF, actor="probe", validated=True, checker=["/bin/true"])
    print(f"D2   publish with <set>/history.jsonl -> outside/hist (symlink)                         -> published; outside/hist exists: {(outside / 'hist').exists()}")
except Exception as e:
    print(f"D2   publish with <set>/history.jsonl -> outside/hist (symlink)                         -> {type(e).__name__}: {str(e)[:110]}")
secret = tmp / "secret.txt"; secret.write_text("TOP-SECRET\n")
with app.app_context():
    m = db.session.scalar(select(Machine))
    lib = MpiLibrary(machine_id=m.id, name="openmpi", version="4.1.4", module="openmpi/4.1.4-probe"); db.session.add(lib); db.session.flush()
    ps = ProfileSet(machine_id=m.id, library_id=lib.id); db.session.add(ps); db.session.flush()
    v = ProfileVersion(profile_set_id=ps.id, number=1, state="validated", files=PRF)
    v2 = ProfileVersion(profile_set_id=ps.id, number=2, state="candidate", files={"MPI_Allreduce.prf": "x"})
    db.session.add_all([v, v2]); db.session.flush()
    try:                                   # this tree; f7532e5 (--tree of the "before" column) had it in profiles/
        from service.workflows import publish as lifecycle
    except ImportError:
        from service.profiles import lifecycle
    os.environ["PGMPITUNE_CHECK"] = "/bin/true"
    r = lifecycle.publish_candidate(v, tmp / "root", "probe"); db.session.commit()
    SET, CAND = ps.id, v2.id
f = r.target / "versions" / "1" / "MPI_Allreduce.prf"; f.unlink(); os.symlink(secret, f)
page = c.get(f"/profiles/{SET}?candidate={CAND}")
print(f"D2   {'anonymous GET /profiles/%d?candidate=%d, versions/1/MPI_Allreduce.prf -> secret file' % (SET, CAND):<92} -> {page.status_code} secret shown: {'TOP-SECRET' in page.get_data(as_text=True)}")
# D4
for k in ("hosts", "placement", "slurm_job_id"):
    show("D4", f"POST /api/v1/uploads, #@{k}=a\\ud800b", up("s" + k, [{"name": "r.txt", "content": header(k, "a\ud800b")}]))
# D5
body = '{"upload_id": "big", "files": [{"name": "r.txt", "headers": {"machine": "m1", "mpi_library": "openmpi", "nprocs": ' + "9" * 5000 + '}, "rows": [["MPI_Allreduce", 0, 8, 1e-5, "default"]]}]}'
show("D5", "POST /api/v1/uploads, a JSON integer of 5000 digits", c.post("/api/v1/uploads", headers={**A, "Content-Type": "application/json"}, data=body))
# D6
for url in ("/m/a%00b/openmpi-4.1.4/heatmap", "/m/m1/1/trends?key=a%00b", "/m/m1/1/trends?algorithm=%00"):
    show("D6", "GET " + url, c.get(url))
show("D6", "POST /auth/login username=ali\\x00ce", c.post("/auth/login", data={"username": "ali\x00ce", "password": "x" * 12, "csrf_token": csrf(c)}))
# D7
pl = ",".join(f"{i}:32" for i in range(63)) + ",63:16"
t7 = header("placement", pl, header("nodes", "64", header("ppn", "32", header("nprocs", str(63 * 32 + 16)))))
r = up("uneven", [{"name": "r.txt", "content": t7}])
with app.app_context():
    lab = db.session.scalar(select(Run.layout).where(Run.file_name == "r.txt").order_by(Run.id.desc()))
show("D7", f"POST /api/v1/uploads, 64 nodes, the last half full (stored label {lab!r})", r)
# D8
t8 = header("datatype", "MPI_DOUBLE", results_file().replace("test nrep msize runtime_sec algorithm", "test nrep count runtime_sec algorithm"))
t8 = re.sub(r"^(MPI_Allreduce \d+) 1024 ", rf"\1 {2**60} ", t8, count=1, flags=re.M)
r = up("count", [{"name": "r8.txt", "content": t8}])
with app.app_context():
    from service.store.models import Series
    sizes = sorted(set(db.session.scalars(select(Series.msize).join(Run).where(Run.file_name == "r8.txt")).all()))
show("D8", f"POST /api/v1/uploads, count 2^60 of MPI_DOUBLE (stored sizes {sizes})", r)
# D9
blocker = tmp / "file"; blocker.write_text("")
try:
    pub.publish(blocker / "root", "m1", "openmpi", "4.1.4", PRF, actor="probe", validated=True, checker=["/bin/true"])
    print("D9   publish into a root under a regular file -> published?!")
except Exception as e:
    print(f"D9   {'publish into a profile root below a regular file':<92} -> {type(e).__name__}: {str(e)[:100]}")
# D10, D11
admin = app.test_client()
r = admin.post("/auth/login?next=/x%0d%0aX-Injected:%201", data={"username": "alice", "password": "correct horse battery", "csrf_token": csrf(admin)})
print(f"D11  {'POST /auth/login?next=/x%0d%0aX-Injected:%201 (right password)':<92} -> {r.status_code} Location: {r.headers.get('Location')}")
r = admin.post(f"/profiles/{SET}/publish", data={"version_id": str(2**31), "csrf_token": csrf(admin)})
show("D10", f"admin POST /profiles/{SET}/publish version_id=2^31", r)
# D12
from service.auth import LoginRefused, check_login
checked, refused = [], []
bar = threading.Barrier(8)
def guess(i):
    with app.test_request_context():
        bar.wait()
        try:
            check_login("bob", f"wrong{i}", f"10.0.0.{i}"); checked.append(i)
        except LoginRefused:
            refused.append(i)
        finally:
            db.session.remove()
ts = [threading.Thread(target=guess, args=(i,)) for i in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
print(f"D12  {'8 concurrent wrong passwords for bob (limit 5 per user name)':<92} -> passwords checked: {len(checked)}, refused: {len(refused)}")
# D13
with app.app_context():
    db.session.execute(update(User).where(User.username == "bob").values(active=False)); db.session.commit()
show("D13", "GET /api/v1/me with bob's token after bob was made inactive", c.get("/api/v1/me", headers={"Authorization": "Bearer " + BOB}))
with app.app_context():
    exp = getattr(db.session.scalar(select(ApiToken).where(ApiToken.name == "agent1")), "expires_at", "no such column")
print(f"D13  {'expiry of a token created with the defaults':<92} -> {exp}")
# D14
show("D14", "POST /api/v1/native/validations library='open\\nmpi'", c.post("/api/v1/native/validations", headers=A, json={"machine": "m1", "library": "open\nmpi", "version": "4.1.4", "name": "native.rules", "text": "", "nprocs": 2, "figures": {}}))
# D15
r = up("lb", [{"name": "r15.txt", "headers": {"machine": "m1", "mpi_library": "openmpi", "nprocs": 2, "comment": "x\n#@hosts=injected"}, "rows": [["MPI_Allreduce", 0, 8, 1e-5, "default\nMPI_Allreduce 1 8 0.5 default"]]}])
with app.app_context():
    h = db.session.scalar(select(Run.headers).where(Run.file_name == "r15.txt"))
    from service.store.models import Series
    n15 = sum(x.n for x in db.session.scalars(select(Series).join(Run).where(Run.file_name == "r15.txt")))
show("D15", "POST /api/v1/uploads JSON form, comment='x\\n#@hosts=injected', algorithm 'default\\nMPI_Allreduce 1 8 0.5 default'", r)
print(f"D15  {'   stored: hosts header, rows of r15.txt':<92} -> hosts {(h or {}).get('hosts')!r}, rows {n15}")
'''


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", default=str(HERE.parents[1]))
    a = ap.parse_args()
    tree = Path(a.tree).resolve()
    sys.path.insert(0, str(HERE))
    import service_common
    print(f"tree {tree}; PostgreSQL; load {os.getloadavg()[0]:.2f}", flush=True)
    with service_common.scratch_database("probe") as url:
        code = (f"URL = {url!r}\nMIGRATIONS = {str(tree / 'migrations')!r}\n"
                f"TESTS = {str(HERE.parents[0] / 'python' / 'service')!r}\n" + CODE)
        env = dict(os.environ, PYTHONPATH=f"{tree}:{tree / 'lib' / 'python'}")
        out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tempfile.gettempdir(), text=True,
                             capture_output=True)
        print(out.stdout, end="")
        errors = [l for l in out.stderr.splitlines() if l.startswith(("Traceback", "  File \"<string>\"")) or
                  re.match(r"^\w+Error", l)]
        if out.returncode:
            print("probe stopped:", "\n".join(errors[-4:]))


if __name__ == "__main__":
    main()
