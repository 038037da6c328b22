"""The agent runs a `cells: from-usage` night look by look (scheduler/looks.py, the design of
scheduler/usage_plan.py): look 1's mpiruns for tonight's cells, the stopping rule per cell once they are
collected, the next look only for the undecided cells, decided cells stopped; restarted mid-night it
continues at the right look; the service's verdicts are what it stores, as for any campaign.

Through the local backend (mpirun of Debian's Open MPI, pgmpi-bench) on the interposer's virtual clock, so the
outcome does not depend on the load of this 2-core machine (tests/python/delay_interposer.py): the library's
own MPI_Allreduce is slowed by 20 ms of virtual time at 1024 and 2047 B (the planted violation: the mock-up
reduce + bcast wins by far in every mpirun, its interval lies wholly above the margin at look 1), and at 64 and
127 B each mpirun adds its own fixed number of ticks to the default (2, 8, 4, 7, 1, 9 by mpirun index: the
mpiruns disagree, 0.67x-1.56x, so the interval straddles the margin at every look and the cell goes on to the
last one, where it is inconclusive and the default stays)."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import delay_interposer
from sched_helpers import add_machine, campaign_file

pytestmark = [pytest.mark.postgres, pytest.mark.mpi, pytest.mark.lmod]
MACHINE = "seqbox"
PLANTED, NULL = 1024, 64
JITTER = "2,8,4,7,1,9"


def usage_record() -> str:
    """What a job of the users' left at MPI_Finalize (pgmpi_formats/usage.py): most time in both cells."""
    rows = [("MPI_Allreduce", PLANTED, 2, 8000, 6.0), ("MPI_Allreduce", NULL, 2, 8000, 3.0)]
    return ("#@pgmpi usage version 1\n#@pgmpi usage library Open MPI v4.1.4, package: Debian OpenMPI\n"
            "#@pgmpi usage host n1\n#@pgmpi usage ranks 2\n#@pgmpi usage layout 1x2\n#@pgmpi usage wall_s 10.0\n"
            "#@pgmpi usage rank_s 20.0\n#@pgmpi usage sample_period 64\n#@pgmpi usage identity job\n"
            "collective bytes_lo p world algorithm calls rank_seconds samples\n"
            + "".join(f"{c} {b} {p} 1 default {n} {t} {n // 64}\n" for c, b, p, n, t in rows)
            + f"#@pgmpi usage end {len(rows)}\n")


def mpiruns_of(state: Path, campaign: str) -> dict[int, set[int]]:
    """msize -> the mpirun indexes whose raw files measured it, read from the collected files themselves."""
    from pgmpi_formats.results import read_file
    out: dict[int, set[int]] = {}
    for f in (state / "campaigns" / campaign).rglob("run-*.txt"):
        r = read_file(f)
        for m in set(int(x) for x in r.msize):
            out.setdefault(m, set()).add(r.mpirun_index)
    return out


def test_a_from_usage_night_stops_decided_cells_and_measures_the_undecided_further(
        tmp_path, mpi_modulepath, bench_root, service, monkeypatch):
    from scheduler.cli import agent as agent_cli
    from scheduler.runner import make_agent, nightly_campaigns
    from scheduler.state import State
    from scheduler import looks
    so = delay_interposer.build(tmp_path, "openmpi")
    token = add_machine(service, MACHINE)
    (tmp_path / "token").write_text(token)
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "job1.pgmpi-usage").write_text(usage_record())
    res = CliRunner().invoke(agent_cli, ["usage-upload", "--spool", str(spool), "--machine", MACHINE,
                                         "--service-url", service.url, "--token-file", str(tmp_path / "token")])
    assert res.exit_code == 0 and "usage: 1 sent" in res.output, res.output

    env = {"LD_PRELOAD": str(so), "PGMPI_TEST_DELAY_BYTES": f"{PLANTED},{2 * PLANTED - 1}",
           "PGMPI_TEST_JITTER_BYTES": f"{NULL},{2 * NULL - 1}", "PGMPI_TEST_JITTER_TICKS": JITTER}
    base = campaign_file(
        tmp_path / "usage.yaml", name="seq", machine=MACHINE, backend="local", cells="from-usage",
        usage={"share": 1.0, "sample": 0.0, "refresh_nights": 7}, budget={"node_hours_per_night": 0.5},
        modules=[{"name": "openmpi/4.1.4", "mpi": "openmpi", "modulepath": [str(mpi_modulepath)], "env": env}],
        algorithms=["default", "allreduce_as_reduce_bcast"], mpiruns=6, repetitions={"policy": "fixed", "nrep": 4},
        validation={"enabled": True, "nrep": 4, "mpiruns": 1}, bench_root=str(bench_root),
        service={"url": service.url, "token_file": str(tmp_path / "token")})
    state = tmp_path / "agent"
    day = "20261126"

    # the agent's nightly loop, stopped mid-night: look 1 collected, the stopping rule asked, look 2 planned
    from datetime import datetime, timezone
    when = datetime.strptime(day, "%Y%m%d").replace(tzinfo=timezone.utc)
    [(c, src)] = nightly_campaigns(base, state, when, log=print)
    assert c.sequential is not None and c.sequential.looks == [3, 4, 6] and c.mpiruns == 6, c.sequential
    a = make_agent(c, state, source=src, log=print)
    [first] = [r["key"] for r in a.state.jobs(c.name)]
    for _ in range(600):
        s = a.run_once()
        if s["done"] or a.state.job(c.name, looks.look_key(first, 2)) is not None:
            break
        time.sleep(0.2)
    look2 = a.state.job(c.name, looks.look_key(first, 2))
    assert look2 is not None, [dict(r) for r in a.state.jobs(c.name)]
    spec = json.loads(look2["spec"])
    measured = {a_.split("=", 1)[1] for ln in spec["launches"] for a_ in ln["argv"] if a_.startswith("--sizes=")}
    assert measured == {f"{NULL},{2 * NULL - 1}"}, spec          # only the undecided cells
    assert {ln["index"] for ln in spec["launches"]} == {3}         # mpirun indexes go on where look 1 stopped
    a.state.close()

    # a restarted agent (the nightly command) continues at look 2 and goes to the end of the night
    res = CliRunner().invoke(agent_cli, ["nightly", "--state-dir", str(state), "--campaign", str(base),
                                         "--interval", "0.3", "--max-hours", "0.1", "--date", day])
    assert res.exit_code == 0, res.output
    st = State(state)
    jobs = {r["key"]: r for r in st.jobs(c.name)}
    measure = {k: r for k, r in jobs.items() if r["kind"] == "measure"}
    assert sorted(measure) == [first, looks.look_key(first, 2), looks.look_key(first, 3)], sorted(jobs)
    assert all(r["attempt"] == 1 and r["state"] == "COMPLETED" for r in measure.values()), measure
    analysis = json.loads(st.campaign(c.name)["analysis"])
    st.close()

    # the planted cells stopped after look 1 (3 mpiruns); the null cells went on to the last look (6)
    runs = mpiruns_of(state, c.name)
    assert runs[PLANTED] == runs[2 * PLANTED - 1] == {0, 1, 2}, runs
    assert runs[NULL] == runs[2 * NULL - 1] == {0, 1, 2, 3, 4, 5}, runs
    report = {(x["collective"], x["msize"]): x for x in json.loads((state / "campaigns" / c.name / "looks.json")
                                                                     .read_text())[0]["cells"]}
    assert report[("allreduce", PLANTED)]["decision"] == "redirect" and report[("allreduce", PLANTED)]["mpiruns"] == 3
    assert report[("allreduce", NULL)]["decision"] == "default" and report[("allreduce", NULL)]["mpiruns"] == 6
    assert report[("allreduce", NULL)]["arms"]["allreduce_as_reduce_bcast"]["state"] == "inconclusive", report

    # the service analysed the campaign as any other: the stopped cell's violation is its verdict, a candidate
    # redirects it, the null cell is not redirected
    assert analysis["openmpi-4.1.4"]["violations"] >= 1 and len(analysis["openmpi-4.1.4"]["profiles"]) == 1, analysis
    import urllib.request
    req = urllib.request.Request(f"{service.url}/api/v1/machines/{MACHINE}/libraries/openmpi-4.1.4/usage",
                                 headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        cells = {(x["collective"], x["bytes_lo"]): x for x in json.loads(r.read())["cells"]}
    assert cells[("MPI_Allreduce", PLANTED)]["verdict"]["state"] == "violation", cells
    assert (cells[("MPI_Allreduce", NULL)]["verdict"] or {}).get("state") != "violation", cells

    # the night's account: what ran against what the plan reserved, and where each cell stopped
    spent = (state / "from-usage" / f"seq-{day}" / "spent.txt").read_text()
    assert spent.startswith("ran ") and "planned, every look of every cell reserved: night" in spent, spent
    assert f"allreduce {PLANTED} B after 3 mpiruns (redirect allreduce_as_reduce_bcast)" in spent, spent
    assert f"allreduce {NULL} B after 6 mpiruns (default)" in spent, spent

    # the budget is charged by what ran: look 1's node-hours (nodes x its run time) per cell and mpirun, times
    # the next look's cells and mpiruns, must fit what is left, or the undecided cells stay undecided
    from scheduler.campaign import Budget
    st = State(state)
    rows = [r for r in st.jobs(c.name) if r["key"] == first]
    st.close()
    ran = looks.node_hours(rows[0])
    assert ran > 0
    roomy = looks.next_look(c.model_copy(update={"budget": Budget(node_hours=100 * ran)}), rows, first, ran)
    assert roomy.next_job is not None and roomy.taken == 1
    tight = looks.next_look(c.model_copy(update={"budget": Budget(node_hours=ran)}), rows, first, ran)
    assert tight.next_job is None and tight.why_stop.startswith("budget:") and not tight.open_cells(), tight.why_stop
