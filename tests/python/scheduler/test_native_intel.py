"""Intel MPI's native decision (native.impi: I_MPI_ADJUST_<COLL> ranges) validated the way users load it, through
the nightly chain's service side: a campaign's stored preset runs -> a candidate (POST /native/candidates) ->
the validation job on the local backend (the site's intelmpi module and the pgmpitunelib module, which names the
candidate for libpgmpitune's MPI_Init in pgmpi-bench, which sets its variables at the job's size; per round the file arm, the default arm without them and preset 3 forced alone, paired by
the round's mpirun index) -> the service's verdict (POST /native/validations) -> failed choices back into the
decision -> a candidate that passes, published into the versioned set.

Intel MPI reads its presets once at MPI_Init and exports none of its algorithms, so the ranks carry
delay_interposer.py's virtual clock in its Intel mode: every preset but 3 (and the library's default) is slowed at
8 B and 64 KiB; in the first job preset 3 takes twice the delay at 8 B when it comes from the file's ranges.
Campaign "ic" saw preset 3 win at 8 B and 64 KiB and lose at 4 KiB: no candidate, allreduce is left to the library
(with the variable set, a size outside every range runs another algorithm than without it, so a gap at 4 KiB
would not be the default: impi_adjust.trim).  Campaign "ic2" saw preset 3 win everywhere: one range; its first
candidate fails at 8 B (slower), the failed choice goes back and nothing exact is left; asked again without the
slowness, the same file is validated (the file's time follows the forced preset's, not the default's; every
result checked, a non-commutative operation in every round) and published."""
from __future__ import annotations

import subprocess
import sys

import pytest

import delay_interposer
from plain_module import module_tree as tunelib_modules
from sched_helpers import ROOT, add_machine

pytestmark = [pytest.mark.postgres, pytest.mark.mpi, pytest.mark.lmod]

LOSES, MIDDLE, WINS, VERSION = 8, 4096, 65536, "2021.13"


def _run(mpirun: int, campaign: str, middle: bool) -> str:
    """One stored mpirun of a campaign: preset 3 about twice as fast as the default at 8 B and 64 KiB; with
    `middle`, slower at 4 KiB (the library's default stays there: two ranges of preset 3 with a gap)."""
    lines = ["#@pgmpi_format=1", "#@machine=ibox", "#@mpi_library=intelmpi", f"#@mpi_version={VERSION}",
             "#@module=intelmpi/2021.13.1", "#@nodes=1", "#@ppn=2", "#@nprocs=2", f"#@mpirun_index={mpirun}",
             "#@slurm_job_id=", f"#@campaign={campaign}", "#@clock=MPI_Wtime", "test nrep msize runtime_sec algorithm"]
    for size in (LOSES, MIDDLE, WINS) if middle else (LOSES, WINS):
        for alg, base in (("default", 2e-4), ("native:3", (3e-4 if size == MIDDLE else 1e-4) * (1 + 0.01 * mpirun))):
            lines += [f"MPI_Allreduce {r} {size} {base + r * 1e-8:.10f} {alg}" for r in range(5)]
    return "\n".join(lines) + "\n"


def _modules(tmp_path):
    subprocess.run([sys.executable, str(ROOT / "deploy" / "modules.py"), "--root", str(tmp_path / "mods"), "intelmpi"],
                   check=True, capture_output=True)
    return [str(tmp_path / "mods" / "Core"), str(tunelib_modules(tmp_path / "tunelib", "intelmpi"))]


def _job(tmp_path, name, cand, modulepath, extra, rounds=3):
    from scheduler.native_validation import NativeValidationJob
    return NativeValidationJob(tmp_path / name, "ibox", "intelmpi", VERSION, cand["name"], cand["text"],
                               "intelmpi/2021.13.1", "pgmpitunelib/0.1.0", modulepath, rounds=rounds, nrep=5,
                               extra_lines=extra, decided_at=cand.get("decided_at"))


def test_intel_candidate_validated_as_users_load_it_failed_cell_back_then_published(tmp_path, service, monkeypatch):
    from scheduler.backends import make_backend
    from scheduler.native_validation import payload, precheck
    from scheduler.uploader import ServiceClient
    from service.profiles import publish as pub
    bench = ROOT / "build" / "install" / "intelmpi" / "bin" / "pgmpi-bench"
    if not bench.exists():
        pytest.fail(f"{bench} missing: deploy/build-lib.sh intelmpi (make test does)")
    client = ServiceClient(service.url, add_machine(service, "ibox", role="agent"))
    root = tmp_path / "profiles"
    monkeypatch.setitem(service.app.config, "PGMPI_PROFILE_ROOT", str(root))
    for camp, middle in (("ic", True), ("ic2", False)):
        client.request("POST", "/api/v1/campaigns", {"name": camp, "machine": "ibox", "definition": {}})
        for i in range(4):
            client.request("POST", "/api/v1/uploads", {"upload_id": f"{camp}-{i}", "campaign": camp, "files": [
                {"name": f"run{i}.txt", "content": _run(i, camp, middle)}]})
    so = delay_interposer.build(tmp_path, "intelmpi")
    clock = [f"export LD_PRELOAD={so}", "export PGMPI_TEST_FAST_PRESET=3",
             f"export PGMPI_TEST_ALGORITHM_BYTES={LOSES},{WINS}"]
    modulepath = _modules(tmp_path)
    backend = make_backend(None, "local")
    ask = {"machine": "ibox", "library": "intelmpi", "version": VERSION, "campaign": "ic"}

    def validate(name, cand, extra=(), rounds=3):
        job = _job(tmp_path, name, cand, modulepath, [*clock, *extra], rounds)
        job.write(backend)
        job_id = job.submit(backend=backend, timeout=300)
        _, verdict = client.request("POST", "/api/v1/native/validations", {
            **payload(job, job.figures(), job_id), "profile_version": cand["id"], "publish": True})
        return job, verdict

    # campaign "ic": the default won at 4 KiB.  A range cannot leave it there (with I_MPI_ADJUST_ALLREDUCE set,
    # Intel MPI 2021.13 runs another algorithm outside every range), so the collective is left to the library
    _, none = client.request("POST", "/api/v1/native/candidates", {**ask, "refused": []})
    assert none["id"] is None and "allreduce: the library's default won at 4096 B (p=2)" in none["why"], none

    # campaign "ic2": preset 3 won at every size it measured: one range, no gap; in the first job preset 3 is slow
    # when it comes from the file's ranges at 8 B, so that candidate fails there
    ask2 = {**ask, "campaign": "ic2"}
    _, first = client.request("POST", "/api/v1/native/candidates", {**ask2, "refused": []})
    assert first["name"] == "native.impi" and "\nI_MPI_ADJUST_ALLREDUCE=3:0-2147483647@2-2\n" in first["text"], first
    job1, v1 = validate("c1", first, [f"export PGMPI_TEST_FILE_SLOW_BYTES={LOSES}"])
    # the module named the candidate (never its variables: libpgmpitune sets them in the ranks, at 2 ranks
    # here); the default arm ran without the file
    assert (job1.directory / "native-env.txt").read_text().strip() == f"PGMPITUNE_NATIVE_IMPI={job1.staged}"
    assert "I_MPI_ADJUST" not in (job1.directory / "forced-1.txt").read_text().split("test nrep")[0]
    assert v1["state"] == "failed", v1
    bad = {(c["msize"], c["label"]): c["problems"] for c in v1["cells"] if c["problems"]}
    assert set(bad) == {(LOSES, "native:3")}, bad
    assert any(p.startswith("(c) tuned slower than the default") for p in bad[(LOSES, "native:3")]), bad
    assert v1["candidate"]["state"] == "failed"
    # the failed choice goes back into the decision: its range held 8 B and 64 KiB, both refused, so no new
    # candidate (not the same file again)
    _, second = client.request("POST", "/api/v1/native/candidates", {**ask2, "refused": [v1["id"]]})
    assert second["id"] is None and "2 refused by validation" in second["why"], second

    # the same campaign without the planted slowness: the same file again, validated and published
    _, third = client.request("POST", "/api/v1/native/candidates", {**ask2, "refused": []})
    assert third["text"] == first["text"] and third["id"] != first["id"], third
    job3, v3 = validate("c3", third)
    assert v3["state"] == "passed", v3["problems"]
    # measured where the decision was made: at 8 B (where preset 3 and the default leave the same fingerprint,
    # and the time tells them apart) and at 64 KiB, where the fingerprint under the file is preset 3's
    cells = {c["msize"]: c for c in v3["cells"]}
    assert set(cells) == {LOSES, WINS} and {c["label"] for c in cells.values()} == {"native:3"}, v3["cells"]
    assert cells[WINS]["evidence"] == "fingerprint" and cells[WINS]["separable"], cells[WINS]
    assert all(c["ratio"] > 1 and c["ci_mpiruns"] == 3 for c in cells.values()), cells
    figs = job3.figures()[f"allreduce:{WINS}"]
    assert set(figs["checks"]) >= {"file", "default", "native:3"} and sorted(figs["noncommutative"]) == [1, 2, 3]
    assert all(c == "ok" for arm in figs["checks"].values() for c in arm), figs["checks"]
    # published into the versioned set, what the module sets for users
    assert v3["candidate"]["state"] == "published", v3["candidate"]
    live = pub.published_files(root, "ibox", "intelmpi", VERSION)
    assert live == {"native.impi": third["text"]}


def test_intel_validation_refuses_a_module_that_does_not_set_the_file(tmp_path, service):
    """A site environment whose pgmpitunelib module does not name the candidate (here: unset after loading)
    or that exports its variables into every job (the old module, here set after loading), or that loads Intel's
    own tuning file (the default arm runs without it, planner.NATIVE_VARS), makes the job refuse to measure, with
    the reason and the variable; the service refuses a native.impi written for another Intel MPI version before
    judging anything."""
    from scheduler.backends import make_backend
    from scheduler.native_validation import precheck
    from scheduler.uploader import Rejected, ServiceClient
    from pgmpi_formats import impi_adjust, native_file
    from pgmpi_formats.ompi_rules import Decision
    text = impi_adjust.write([Decision("allreduce", 2, 0, "native:3")], native_file.intel_target(VERSION))
    cand = {"name": "native.impi", "text": text, "id": 0}
    modules = _modules(tmp_path)
    backend = make_backend(None, "local")
    site = "is set by the site lines or the job environment \\(no loaded module file names it\\): it chooses"
    for key, lines, why in (("unset", ["unset PGMPITUNE_NATIVE_IMPI"], "the module did not name the candidate file"),
                            ("exported", ["export I_MPI_ADJUST_ALLREDUCE=3:0-2147483647@2-2"],
                             f"I_MPI_ADJUST_ALLREDUCE=3:0-2147483647@2-2 {site}"),
                            ("tuning", ["export I_MPI_TUNING_BIN=/site/intel/tuned.dat"],
                             f"I_MPI_TUNING_BIN=/site/intel/tuned.dat {site}")):
        job = _job(tmp_path, key, cand, modules, lines)
        job.write(backend)
        with pytest.raises(RuntimeError, match=why):
            job.submit(backend=backend, timeout=120)
        assert not list((tmp_path / key).glob("file-*.txt"))
    with pytest.raises(ValueError, match="written for Intel MPI 2021.12"):
        precheck("native.impi", text.replace("Intel MPI 2021.13", "Intel MPI 2021.12"), "intelmpi", 2, VERSION)
    client = ServiceClient(service.url, add_machine(service, "ibox2", role="agent"))
    with pytest.raises(Rejected, match="HTTP 422.*written for Intel MPI 2021.12"):
        client.request("POST", "/api/v1/native/validations", {
            "machine": "ibox2", "library": "intelmpi", "version": VERSION, "name": "native.impi",
            "text": text.replace("Intel MPI 2021.13", "Intel MPI 2021.12"), "nprocs": 2, "figures": {}, "job": "x"})



def test_pgmpi_bench_labels_a_preset_only_where_the_launch_forced_it(tmp_path):
    """Intel MPI reads I_MPI_ADJUST_<COLL> once at MPI_Init: when the launch sets it, pgmpi-bench writes
    native:<p> rows only when it forces exactly preset p (no ranges), alone on its collective; otherwise it
    refuses with the reason before measuring (on the old code native:<p> was refused on Intel MPI whatever the
    environment, so a campaign could not measure a preset).  With the variable unset: the next test."""
    from pgmpi_formats import mpi_libraries
    bench = ROOT / "build" / "install" / "intelmpi" / "bin" / "pgmpi-bench"
    if not bench.exists():
        pytest.fail(f"{bench} missing: deploy/build-lib.sh intelmpi (make test does)")
    lib = mpi_libraries.mpi_library("intelmpi")
    mpirun = str(lib.mpirun)

    def run(algs, value, index=0):
        env = {k: v for k, v in lib.environment().items() if not k.startswith("I_MPI_ADJUST_")}
        if value is not None:
            env["I_MPI_ADJUST_ALLREDUCE"] = value
        out = tmp_path / f"r{index}.txt"
        return subprocess.run([mpirun, "-n", "2", str(bench), "--calls=allreduce", "--sizes=8,65536",
                               f"--algorithms={algs}", "--nrep=3", "--no-barrier-rows", f"--mpirun-index={index}",
                               f"--output={out}"], capture_output=True, text=True, env=env, timeout=120), out

    for algs, value, why in (("native:3", "3:0-100@2-2", "it is '3:0-100@2-2'"),
                             ("native:3", "2", "it is '2'"), ("default,native:3", "3", "'default' would measure it"),
                             ("native:3:seg=1K", "3", "no ':seg='"), ("native:ring", "3", "native:<number>")):
        p, out = run(algs, value)
        assert p.returncode != 0 and why in p.stderr and not out.exists(), (algs, value, p.stderr[-600:])
    p, out = run("native:3", "3", 7)
    assert p.returncode == 0, p.stderr[-800:]
    text = out.read_text()
    rows = [ln.split() for ln in text.splitlines() if ln.startswith("MPI_Allreduce ")]
    assert {r[-1] for r in rows} == {"native:3"} and {int(r[2]) for r in rows} == {8, 65536}, rows[:4]
    assert "#@mpirun_index=7" in text and "#@native_switch=preset_at_mpi_init" in text
    assert "#@pgmpi check MPI_Allreduce 65536 native:3 ok" in text          # results checked as for any arm


def test_pgmpi_bench_interleaves_presets_on_hinted_communicators(tmp_path):
    """With I_MPI_ADJUST_<COLL> unset, pgmpi-bench measures several presets of one collective in one mpirun, each
    on a communicator tagged with Intel MPI's "comm_id" hint (a tuning file it writes for MPI_Init): every
    preset leaves, at every size, the fingerprint it leaves forced at launch (tests/bench/intel_switch_probe.py).
    Nothing else on that collective (MPI_COMM_WORLD runs the file's last preset), one collective per mpirun
    (Intel MPI 2021.13 confuses the entries of two), and never over a tuning file of the environment.  On the
    old code native:<p> with the variable unset was refused."""
    from pgmpi_formats import mpi_libraries
    bench = ROOT / "build" / "install" / "intelmpi" / "bin" / "pgmpi-bench"
    if not bench.exists():
        pytest.fail(f"{bench} missing: deploy/build-lib.sh intelmpi (make test does)")
    lib = mpi_libraries.mpi_library("intelmpi")

    def run(algs, name, calls="allreduce", **extra):
        env = {k: v for k, v in lib.environment().items() if not k.startswith(("I_MPI_ADJUST_", "I_MPI_TUNING"))}
        env.update(extra)
        out = tmp_path / f"{name}.txt"
        p = subprocess.run([str(lib.mpirun), "-n", "2", str(bench), f"--calls={calls}", "--sizes=8,4096,65536",
                            f"--algorithms={algs}", "--nrep=3", "--no-barrier-rows", f"--output={out}"],
                           capture_output=True, text=True, env=env, timeout=120)
        assert p.returncode == 0, (algs, extra, p.stderr[-800:])
        text = out.read_text()
        return text, {tuple(ln.split()[3:5]): ln.split()[5] for ln in text.splitlines()
                      if ln.startswith("#@pgmpi fingerprint MPI_Allreduce ")}

    presets = (1, 3, 8)   # three fingerprints apart at 64 KiB and 4 KiB, two at 8 B (2 ranks)
    text, hinted = run(",".join(f"native:{p}" for p in presets), "hinted")
    assert "#@native_switch=communicator_hint" in text
    rows = [ln.split() for ln in text.splitlines() if ln.startswith("MPI_Allreduce ")]
    assert {r[-1] for r in rows} == {f"native:{p}" for p in presets}, rows[:4]
    forced = {}
    for p in presets:
        _, fp = run(f"native:{p}", f"forced{p}", I_MPI_ADJUST_ALLREDUCE=str(p))
        forced.update(fp)
    assert hinted == forced and len(hinted) == 9, (hinted, forced)
    assert len({hinted[("65536", f"native:{p}")] for p in presets}) == 3     # the check can tell them apart

    env = {k: v for k, v in lib.environment().items() if not k.startswith(("I_MPI_ADJUST_", "I_MPI_TUNING"))}
    for algs, calls, extra, why in (("default,native:1", "allreduce", {}, "'default' next to Intel MPI presets"),
                                    ("native:1", "allreduce,reduce", {}, "one collective per mpirun"),
                                    ("native:1", "allreduce", {"I_MPI_TUNING": "/x.json"},
                                     "already sets I_MPI_TUNING")):
        p = subprocess.run([str(lib.mpirun), "-n", "2", str(bench), f"--calls={calls}", "--sizes=8",
                            f"--algorithms={algs}", "--nrep=3", f"--output={tmp_path / 'refused.txt'}"],
                           capture_output=True, text=True, env={**env, **extra}, timeout=120)
        assert p.returncode != 0 and why in p.stderr and not (tmp_path / "refused.txt").exists(), (algs, p.stderr)
