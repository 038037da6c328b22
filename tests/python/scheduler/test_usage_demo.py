"""Issue 33's demonstration end to end on the virtual multi-node cluster (deploy/cluster.sh), the quick form
of tests/bench/usage_demo.py:

1. three applications with different known collective mixes (tests/python/usage_demo_steps.py) run as Slurm jobs on
   2 virtual nodes after `module load openmpi/4.1.4 pgmpitunelib`; the site file switches usage recording on;
2. `pgmpi agent usage-upload` sends their records to the service; the usage API ranks the cells and names the
   layout the jobs ran in;
3. `pgmpi agent nightly` on a `cells: from-usage` campaign plans tonight's campaign from that usage within its
   node-hour budget, runs it on the cluster through Slurm, has it analysed and the candidate validated;
4. the validated profile is published into the profile root the module reads;
5. the applications run again, paired and interleaved (library default against the module's profile): the
   two that call MPI_Allreduce at 1 KiB are faster, halo is unchanged, every checksum is identical; a second
   night on the same usage keeps every cell's verdict (decided 0 nights ago) and measures nothing;
6. their records uploaded, the page shows the node-hours the redirect gained and the ranking puts the
   violated cell first.

The subject is the chain. The test-only interposer (tests/python/delay_interposer.py, virtual clock) slows the
library's own MPI_Allreduce at 1024 B and makes every MPI_Wtime figure the same in every run, whatever the load
of this 2-core machine; the usage records keep their real clock (CLOCK_MONOTONIC), so the shares are real,
but only what does not depend on them is asserted. Real figures: tests/bench/usage_demo.py."""
from __future__ import annotations

import json
import time
import urllib.request
from datetime import datetime, timedelta, timezone

import pytest
from click.testing import CliRunner

import delay_interposer
import usage_demo_steps as usage_demo
from plain_module import module_tree
from sched_helpers import add_machine, campaign_file
from test_cluster import cluster_env  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.cluster, pytest.mark.slurm, pytest.mark.postgres, pytest.mark.mpi, pytest.mark.lmod]
MACHINE = "vcusage"
SLOWED = 1024


def _get(service, token, path):
    req = urllib.request.Request(f"{service.url}{path}", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def _upload(spool, service, token_file):
    from scheduler.cli import agent
    res = CliRunner().invoke(agent, ["usage-upload", "--spool", str(spool), "--machine", MACHINE,
                                     "--service-url", service.url, "--token-file", str(token_file)])
    assert res.exit_code == 0, res.output
    return res.output


def test_usage_to_profile_to_faster_apps_on_the_virtual_cluster(cluster_env, mpi_modulepath, bench_root, service,  # noqa: F811
                                                                 tmp_path, monkeypatch):
    from service.store.db import db
    from service.store.models import Machine, ProfileVersion
    from service.workflows.publish import publish_candidate
    from scheduler.cli import agent

    t0 = time.time()
    so = delay_interposer.build(tmp_path, "openmpi")
    exe = usage_demo.build_app(tmp_path)
    mods = module_tree(tmp_path / "tunelib", "openmpi")
    spool, root, empty = tmp_path / "spool", tmp_path / "profiles", tmp_path / "no-profile"
    for d in (spool, empty):
        d.mkdir()
    # the site's choice: usage recording on, every call timed (small apps), the job named
    site = tmp_path / "site.conf"
    site.write_text(f"profile_root = {root}\nmachine = {MACHINE}\nusage_dir = {spool}\nusage_period = 1\n")
    env = dict(cluster_env, PGMPI_SITE_CONFIG=str(site))
    token = add_machine(service, MACHINE)
    (tmp_path / "token").write_text(token)

    def _cluster_shape():        # the virtual cluster: 3 nodes of 4 cores
        m = db.session.scalar(db.select(Machine).where(Machine.name == MACHINE))
        m.nodes, m.cores_per_node = 3, 4
        db.session.commit()
    service.query(_cluster_shape)
    mpirun = f"mpirun -x LD_PRELOAD={so} -x PGMPI_TEST_DELAY_BYTES={SLOWED}"
    modules = "openmpi/4.1.4 pgmpitunelib"

    # 1. the three applications as Slurm jobs under the module, usage recording on
    first = [("first", 0, None)]
    usage_demo.sbatch(usage_demo.job_script(tmp_path, exe, [mpi_modulepath, mods], modules, first, mpirun), env)
    runs = usage_demo.read_runs(tmp_path, first)
    assert all("#@pgmpi alg MPI_Allreduce 1024 default" in r.text for r in runs if r.app != "halo"), runs
    records = [p for p in spool.iterdir() if not p.name.startswith(".")]
    assert len(records) == 3, list(spool.iterdir())

    # 2. the agent uploads them; the service ranks the cells, each with the layout its jobs ran in
    out = _upload(spool, service, tmp_path / "token")
    assert "usage: 3 sent" in out, out
    page = _get(service, token, f"/api/v1/machines/{MACHINE}/libraries/openmpi-4.1.4/usage")
    cells = {(c["collective"], c["bytes_lo"], c["p"]): c for c in page["cells"]}
    known = {("MPI_Allreduce", 1024, 2), ("MPI_Allreduce", 8, 2), ("MPI_Bcast", 4096, 2), ("MPI_Allgather", 64, 2),
             ("MPI_Reduce", 256, 2), ("MPI_Gather", 8, 2)}       # the mixes, and each app's one checksum gather
    assert set(cells) == known, sorted(cells)
    # every call timed (usage_period = 1): the calls are the mixes' exactly, over the jobs' 2 ranks
    assert cells[("MPI_Allreduce", 1024, 2)]["calls"] == 2 * 40 * (8 + 2)
    assert cells[("MPI_Bcast", 4096, 2)]["calls"] == 2 * 40 * 4
    assert all(c["layout"] == "2x1" and c["verdict"] is None for c in cells.values()), page["cells"]
    shares = [c["rank_seconds"] for c in page["cells"]]
    assert shares == sorted(shares, reverse=True)         # no verdict yet: ranked by the users' time

    # 3. tonight's from-usage campaign, by the agent's nightly loop itself, within its budget
    base = campaign_file(
        tmp_path / "usage.yaml", name="usage", machine=MACHINE, backend="slurm", cells="from-usage",
        usage={"share": 0.9, "sample": 0.0, "refresh_nights": 7}, budget={"node_hours_per_night": 0.1},
        modules=[{"name": "openmpi/4.1.4", "mpi": "openmpi", "modulepath": [str(mpi_modulepath)], "mpirun": mpirun}],
        algorithms=["default", "allreduce_as_reduce_bcast"], mpiruns=3, repetitions={"policy": "fixed", "nrep": 6},
        slurm={"partition": "vc", "walltime": "00:05:00"}, validation={"enabled": True, "nrep": 8, "mpiruns": 1},
        bench_root=str(bench_root), service={"url": service.url, "token_file": str(tmp_path / "token")})
    for k, v in cluster_env.items():        # the agent's Slurm backend talks to the virtual cluster
        monkeypatch.setenv(k, v)
    day = datetime.now(timezone.utc)
    state = tmp_path / "agent"
    res = CliRunner().invoke(agent, ["nightly", "--state-dir", str(state), "--campaign", str(base), "--interval", "0.5",
                                     "--max-hours", "0.2", "--date", day.strftime("%Y%m%d")])
    assert res.exit_code == 0, res.output
    plan_dir = state / "from-usage" / f"usage-{day:%Y%m%d}"
    plan = (plan_dir / "plan.txt").read_text()
    assert "of 0.1 node-hours" in plan, plan
    files = sorted(plan_dir.glob("*.yaml"))
    assert [f.name.endswith("-openmpi_4.1.4-2x1.yaml") for f in files] == [True], files
    import yaml
    measured = yaml.safe_load(files[0].read_text())
    assert measured["layouts"] == [{"nodes": 2, "ppn": 1}]
    colls = measured["collectives"]
    # mainly the users' cells: the heaviest is in, every measured size is a bucket bound of a used cell, the
    # checksum gather (one call a job) is not
    assert SLOWED in colls["allreduce"]["sizes"], colls
    used = {(k.split("_")[1].lower(), b) for k, b, _ in known}
    assert all((c, 1 << (s.bit_length() - 1)) in used
               for c, spec in colls.items() for s in spec["sizes"]), colls
    assert "gather" not in colls, colls

    # the candidate the agent had validated on the cluster
    from scheduler.state import State
    st = State(state)
    name = files[0].stem
    analysis = json.loads(st.campaign(name)["analysis"])["openmpi-4.1.4"]
    vals = [r for r in st.jobs(name) if r["kind"] == "validate"]
    st.close()
    assert len(analysis["profiles"]) == 1 and [v["state"] for v in vals] == ["COMPLETED"], (analysis, vals)

    # 4. publish the validated candidate where the module looks (profile_root/<machine>/openmpi-4.1.4)
    def _publish():
        v = db.session.get(ProfileVersion, analysis["profiles"][0])
        assert v.state == "validated", v.state
        return dict(v.files), publish_candidate(v, root, "test")
    pfiles, _ = service.query(_publish)
    assert (root / MACHINE / "openmpi-4.1.4" / "current").is_dir()
    assert any(f"{SLOWED} {SLOWED}" in t and "allreduce_as_reduce_bcast" in t for t in pfiles.values()), pfiles

    # 5. the applications again: paired, interleaved, default against the module's profile
    arms = usage_demo.paired_arms(1, empty)
    usage_demo.sbatch(usage_demo.job_script(tmp_path, exe, [mpi_modulepath, mods], modules, arms, mpirun), env)
    again = {(r.app, r.arm): r for r in usage_demo.read_runs(tmp_path, arms)}
    for app in usage_demo.APPS:
        d, p = again[(app, "default")], again[(app, "profile")]
        assert d.checksum == p.checksum == next(r.checksum for r in runs if r.app == app), (app, d, p)
        if app == "halo":
            assert p.seconds == d.seconds, (d.seconds, p.seconds)          # nothing redirected
        else:
            assert p.seconds < d.seconds, (app, d.seconds, p.seconds)
            assert f"#@pgmpi alg MPI_Allreduce {SLOWED} allreduce_as_reduce_bcast" in p.text, p.text
            assert f"#@pgmpi alg MPI_Allreduce {SLOWED} default" in d.text, d.text

    # a second night on the same usage (the reruns' records are not uploaded yet): every cell of tonight's
    # cover keeps its verdict (decided 0 nights ago), nothing is measured. After the reruns' upload the cover
    # would be recomputed from their rank seconds, which the records take from the real clock: at load 8 a
    # 8 B Allreduce cell holding 11 % of the time entered it and was measured (issue 34, timing luck)
    res = CliRunner().invoke(agent, ["nightly", "--state-dir", str(state), "--campaign", str(base), "--interval", "0.5",
                                     "--max-hours", "0.1", "--date", (day + timedelta(days=1)).strftime("%Y%m%d")])
    assert res.exit_code == 0, res.output
    plan2 = (state / "from-usage" / f"usage-{day + timedelta(days=1):%Y%m%d}" / "plan.txt").read_text()
    assert plan2.startswith(f"night {(day.date() - datetime(2000, 1, 1).date()).days + 1}: 0 cell(s)"), plan2
    assert f"keep    openmpi/4.1.4 allreduce {SLOWED} B p=2: decided 0 night(s) ago: violation" in plan2, plan2

    # 6. the records of the reruns: the page shows the node-hours the redirect gained, the violated cell first
    assert "usage: 6 sent" in _upload(spool, service, tmp_path / "token")
    page = _get(service, token, f"/api/v1/machines/{MACHINE}/libraries/openmpi-4.1.4/usage")
    top = page["cells"][0]
    assert (top["collective"], top["bytes_lo"], top["p"]) == ("MPI_Allreduce", SLOWED, 2), page["cells"][:2]
    assert top["verdict"]["state"] == "violation" and top["verdict"]["age_nights"] == 0, top
    assert top["lost_node_hours"] > 0 and top["gained_node_hours"] > 0 and top["tuned_rank_seconds"] > 0, top
    others = [c for c in page["cells"][1:] if c["gained_node_hours"] or c["lost_node_hours"]]
    assert others == [], others
    with urllib.request.urlopen(f"{service.url}/m/{MACHINE}/openmpi-4.1.4/usage", timeout=60) as r:
        html = r.read().decode()
    gained = sum(c["gained_node_hours"] for c in page["cells"])
    assert f'live redirects gained them <b class="good">{gained:.3g} node-hours</b>' in html, html
    assert "<td>violation, 0 night(s) ago</td>" in html, html
    print(f"usage demo on the virtual cluster: {time.time() - t0:.0f} s (loaded 2-core machine)\n{plan}")
