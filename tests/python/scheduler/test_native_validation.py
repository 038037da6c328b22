"""A native decision file is validated the way users get it -- a Slurm job that loads it through the
pgmpitunelib module -- and the service records the verdict; only a recorded pass lets it be published.
Files the readers refuse (corrupt, a collective missing, an order-unsafe algorithm) never reach a job.
The Slurm job's ranks read the virtual clock of delay_interposer.py (nothing delayed): what the test shows is the
record, the fingerprint proof and the gate, so rule (c) "not slower" must not hang on the machine's load."""
from __future__ import annotations

from pathlib import Path

import pytest

from pgmpi_formats import mpich_json as mj
from pgmpi_formats import native
from pgmpi_formats import ompi_rules as orr
from pgmpi_formats.ompi_rules import Decision
from scheduler.native_validation import NativeValidationJob, post, precheck
from scheduler.uploader import Rejected, ServiceClient

import delay_interposer
from plain_module import module_tree as tunelib_modules
from sched_helpers import ROOT, add_machine

VERSIONS = {"openmpi": "4.1.4", "mpich": "4.0.2"}
# allreduce at 64 KiB: Open MPI's rabenseifner runs as fast as its default there but leaves another
# fingerprint (measured at 2 ranks: 10.5 vs 10.4 us)
DECISIONS = [Decision("allreduce", 2, 8, "default"), Decision("allreduce", 2, 65536, "native:rabenseifner"),
             Decision("allreduce", 2, 131072, "default")]


def test_refused_before_any_job(tmp_path):
    d = native.discover("openmpi")
    with pytest.raises(orr.RulesError, match=r"native.rules:7: .*count is larger"):
        precheck("native.rules", "1\n2\n1\n2\n3\n0 3 0 0\n1024 6 0 0\n", "openmpi", 2)     # 3 rules, 2 given
    with pytest.raises(orr.RulesError, match="ring \\(4\\) reorders a reduction's operands"):
        precheck("native.rules", "1\n2\n1\n2\n1\n0 4 0 0\n", "openmpi", 2)
    lib = mj.find_library()
    tree = mj.generate([Decision("bcast", 2, 8, "native:binomial")], mj.builtin_tree(lib), mj.algorithm_names(lib))
    del tree["collective=allreduce"]
    with pytest.raises(ValueError, match="collective=allreduce is missing: MPICH aborts every job"):
        precheck("native.json", mj.dumps(tree), "mpich", 2)
    job = NativeValidationJob(tmp_path / "job", "m", "openmpi", "4.1.4", "native.rules", "1\n2\n1\n2\n1\n0 5 0 0\n",
                              "openmpi/4.1.4", "pgmpitunelib/0.1.0", [])
    with pytest.raises(orr.RulesError, match="segmented_ring"):
        job.write()
    assert not (tmp_path / "job" / "job.sh").exists()
    assert precheck("native.rules", orr.write_rules(DECISIONS, d), "openmpi", 2)[1].label == "native:rabenseifner"
    # the command refuses it the same way, before writing or submitting anything
    from click.testing import CliRunner
    from scheduler.cli import agent
    bad = tmp_path / "native.rules"
    bad.write_text("1\n2\n1\n2\n1\n0 5 0 0\n")
    token = tmp_path / "token"
    token.write_text("x\n")
    r = CliRunner().invoke(agent, ["native-validate", str(bad), "--machine", "m", "--mpi", "openmpi", "--mpi-version",
                                   "4.1.4", "--mpi-module", "openmpi/4.1.4", "--tunelib-module", "pgmpitunelib/0.1.0",
                                   "--workdir", str(tmp_path / "cli"), "--service-url", "http://127.0.0.1:9",
                                   "--token-file", str(token)])
    assert r.exit_code == 1 and "refused before submitting: native.rules:6: allreduce: segmented_ring (5) reorders" in r.output
    assert not (tmp_path / "cli").exists()


@pytest.mark.slurm
@pytest.mark.mpi
@pytest.mark.lmod
def test_validation_job_on_slurm_recorded_and_gating_publication(tmp_path, slurm_env, mpi_modulepath, bench_root,
                                                                 service):
    from service.profiles import publish as pub
    from service.workflows import validate
    token = add_machine(service, "nvbox", role="agent")
    client = ServiceClient(service.url, token)
    mods = tunelib_modules(tmp_path, "openmpi")
    clock = [f"export LD_PRELOAD={delay_interposer.build(tmp_path, 'openmpi')}"]
    text = orr.write_rules(DECISIONS, native.discover("openmpi"))

    def run(name: str, extra: list[str]) -> dict:
        job = NativeValidationJob(tmp_path / name, "nvbox", "openmpi", "4.1.4", "native.rules", text, "openmpi/4.1.4",
                                  "pgmpitunelib/0.1.0", [str(mpi_modulepath), str(mods)], rounds=4, nrep=20,
                                  extra_lines=clock + [ln.format(staged=job_staged(name)) for ln in extra])
        assert job.staged == job_staged(name)
        job.write()
        job_id = job.submit(env=slurm_env)
        return post(client, job, job.figures(), job_id)

    def job_staged(name: str) -> Path:
        return NativeValidationJob(tmp_path / name, "nvbox", "openmpi", "4.1.4", "native.rules", text,
                                   "openmpi/4.1.4", "pgmpitunelib/0.1.0", []).staged

    # the module names the file, but what the ranks open is not what was validated (here: emptied after
    # staging): Open MPI 4.1 falls back to its built-in rules without a message when the file does not parse;
    # the fingerprint shows the file's rabenseifner did not run.  (A line that switches dynamic rules off is
    # refused before measuring: test_validation_refuses_a_site_line_that_switches_the_file_off)
    off = run("off", [": > {staged}"])
    assert off["state"] == "failed", off
    cell = next(c for c in off["cells"] if c["label"] == "native:rabenseifner")
    assert cell["evidence"] == "fingerprint" and any("did not run" in p for p in cell["problems"]), cell
    files = {"native.rules": text}
    with service.app.app_context():
        assert validate.recorded_native_validation("nvbox", "openmpi", "4.1.4", files) is None

    # as users get it: the module sets the file; the fingerprint shows the file's choice at every round
    ok = run("on", [])
    used = next(c for c in ok["cells"] if c["label"] == "native:rabenseifner")
    assert used["evidence"] == "fingerprint" and not any(p.startswith("(b)") for p in used["problems"]), used
    assert not any(p.startswith(("(a)", "(d)")) for c in ok["cells"] for p in c["problems"]), ok
    assert ok["state"] == "passed", ok    # (c) included: the virtual clock gives both arms the same times
    with service.app.app_context():
        rec = validate.recorded_native_validation("nvbox", "openmpi", "4.1.4", files)
        assert rec and rec["native.rules"]["native_validation"] == ok["id"]
        # publishing: refused without the record (another text), accepted with it
        root = tmp_path / "profiles"
        with pytest.raises(pub.PublishError, match="no passing validation of this file is recorded"):
            pub.publish(root, "nvbox", "openmpi", "4.1.4", {"native.rules": text + "# changed\n"}, actor="t",
                        validated=False, checker=["/bin/true"], mpi="openmpi",
                        native_validated=validate.recorded_native_validation(
                            "nvbox", "openmpi", "4.1.4", {"native.rules": text + "# changed\n"}) is not None)
        pub.publish(root, "nvbox", "openmpi", "4.1.4", files, actor="t", validated=False, checker=["/bin/true"],
                    mpi="openmpi", native_validated=rec is not None)
    # the service itself refuses a file its readers refuse (no record)
    with pytest.raises(Rejected, match="HTTP 422.*reorders a reduction's operands"):
        client.request("POST", "/api/v1/native/validations", {"machine": "nvbox", "library": "openmpi",
                       "version": "4.1.4", "name": "native.rules", "text": "1\n2\n1\n2\n1\n0 4 0 0\n", "nprocs": 2,
                       "figures": {}, "job": "x"})


@pytest.mark.mpi
@pytest.mark.lmod
def test_validation_refuses_a_module_that_forces_an_algorithm_without_the_file(tmp_path, mpi_modulepath):
    """A site's MPI module that forces an algorithm without a file (Open MPI's coll_tuned_<coll>_algorithm, applied
    wherever the rules file falls through; MPICH's <COLL>_INTRA_ALGORITHM, which overrides the JSON file): the file
    would not decide what users run, and the default arms run without the variable.  The job refuses to measure,
    naming the variable and the module file; a campaign module's env: that does so is refused before anything is
    written; a value that leaves the choice to the library passes the check.  On the old job both measured."""
    import re
    import subprocess
    from scheduler import launchers
    from scheduler.planner import NATIVE_VARS
    from scheduler.backends import make_backend
    from pgmpi_formats import native_file
    from sched_helpers import VERSIONS as MPI_VERSIONS
    lib = mj.find_library()
    texts = {"openmpi": orr.write_rules(DECISIONS, native.discover("openmpi")),
             "mpich": mj.dumps(mj.generate([Decision("bcast", 2, 8, "native:binomial")], mj.builtin_tree(lib),
                                           mj.algorithm_names(lib)))}
    forcing = {"openmpi": ("OMPI_MCA_coll_tuned_allreduce_algorithm", "4"),
               "mpich": ("MPIR_CVAR_BCAST_INTRA_ALGORITHM", "scatter_ring_allgather")}
    backend = make_backend(None, "local")
    for mpi, (var, value) in forcing.items():
        assert re.fullmatch(NATIVE_VARS, var)           # the default arms run without it
        mods = tunelib_modules(tmp_path / f"tune-{mpi}", mpi)
        # the site's MPI module: the test's module of that MPI plus the forcing line
        site = tmp_path / f"site-{mpi}"
        modfile = site / mpi / f"{MPI_VERSIONS[mpi]}.lua"
        modfile.parent.mkdir(parents=True)
        modfile.write_text((mpi_modulepath / mpi / f"{MPI_VERSIONS[mpi]}.lua").read_text()
                           + f'setenv("{var}", "{value}")\n')
        name = native_file.NAMES[mpi]
        job = NativeValidationJob(tmp_path / mpi, "nvbox", mpi, MPI_VERSIONS[mpi], name, texts[mpi],
                                  f"{mpi}/{MPI_VERSIONS[mpi]}", "pgmpitunelib/0.1.0", [str(site), str(mods)],
                                  rounds=1, nrep=5)
        job.write(backend)
        with pytest.raises(RuntimeError, match=re.escape(f"{var}={value} is set by module file {modfile}: it chooses "
                                                         "an algorithm without the file")):
            job.submit(backend=backend, timeout=120)
        assert not list((tmp_path / mpi).glob("file-*.txt")) and not list((tmp_path / mpi).glob("forced-*.txt"))
        # the campaign module's env: the same, before anything is written
        env_job = NativeValidationJob(tmp_path / f"env-{mpi}", "nvbox", mpi, MPI_VERSIONS[mpi], name, texts[mpi],
                                      f"{mpi}/{MPI_VERSIONS[mpi]}", "pgmpitunelib/0.1.0", [str(mpi_modulepath)],
                                      env={var: value})
        with pytest.raises(ValueError, match=f"the campaign module's env: sets {var}={value}: it chooses"):
            env_job.write(backend)
        assert not (tmp_path / f"env-{mpi}").exists()
        # the check itself: a value that leaves the choice to the library (and a variable that forces nothing
        # alone) passes; the forcing value fails with the variable, naming no module file when none sets it
        from scheduler.native_validation import refuse_forcing
        lines = "\n".join(['fail() { echo "$1"; exit 3; }', *refuse_forcing(launchers.library(mpi).family)])
        for val, rc in ((launchers.library(mpi).family.forces_off[0].upper(), 0), (value, 3)):
            p = subprocess.run(["bash", "-c", lines], capture_output=True, text=True,
                               env={"PATH": "/usr/bin:/bin", var: val, f"{var}_segmentsize": "1024"})
            assert p.returncode == rc, (mpi, val, p.stdout, p.stderr)
        assert p.stdout.startswith(f"{var}={value} is set by the site lines or the job environment"), p.stdout


@pytest.mark.mpi
@pytest.mark.lmod
def test_validation_refuses_a_site_line_that_switches_the_file_off(tmp_path, mpi_modulepath):
    """Open MPI reads a rules file only under coll_tuned_use_dynamic_rules true, and parses "0", "off", "ENABLED"
    or any word it does not know as false (ompi_info, 4.1.4 and 5.0.11).  A site line loaded after the
    pgmpitunelib module that sets it otherwise leaves users on the library's choice while the file arm would be
    judged as if it ran: the job refuses to measure, naming the variable, its value and what the module sets.
    On the old job (which checked only the file's name) it measured."""
    import subprocess
    from scheduler.backends import make_backend
    from scheduler.native_validation import require_file_env
    from pgmpi_formats import native_file
    from sched_helpers import VERSIONS as MPI_VERSIONS
    mods = tunelib_modules(tmp_path / "tune", "openmpi")
    text = orr.write_rules(DECISIONS, native.discover("openmpi"))
    job = NativeValidationJob(tmp_path / "job", "nvbox", "openmpi", MPI_VERSIONS["openmpi"],
                              native_file.NAMES["openmpi"], text, f"openmpi/{MPI_VERSIONS['openmpi']}",
                              "pgmpitunelib/0.1.0", [str(mpi_modulepath), str(mods)], rounds=1, nrep=5,
                              extra_lines=["export OMPI_MCA_coll_tuned_use_dynamic_rules=off"])
    backend = make_backend(None, "local")
    job.write(backend)
    with pytest.raises(RuntimeError, match="OMPI_MCA_coll_tuned_use_dynamic_rules=off: the published module sets "
                                           "OMPI_MCA_coll_tuned_use_dynamic_rules=1; a module or line loaded after"):
        job.submit(backend=backend, timeout=120)
    assert not list((tmp_path / "job").glob("file-*.txt"))
    # the check itself: the module's values pass; a changed or missing one fails, naming it
    wanted = native.file_env("openmpi", "/p/native.rules")
    lines = "\n".join(['fail() { echo "$1"; exit 3; }', *require_file_env(wanted)])
    for env, rc, says in ((wanted, 0, ""),
                          ({**wanted, "OMPI_MCA_coll_tuned_use_dynamic_rules": "0"}, 3, "use_dynamic_rules=0:"),
                          ({"OMPI_MCA_coll_tuned_use_dynamic_rules": "1"}, 3, "dynamic_rules_filename=(unset):")):
        p = subprocess.run(["bash", "-c", lines], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", **env})
        assert p.returncode == rc and says in p.stdout, (env, p.stdout, p.stderr)


@pytest.mark.mpi
@pytest.mark.lmod
def test_validation_job_goes_through_any_backend(tmp_path, mpi_modulepath, bench_root):
    """The native validation job is a JobSpec of the one template: the local backend runs it as Slurm does
    (the file arm under the staged file as the module sets it, the forced arm without it), both arms with the
    campaign's sync: (the method its decision was measured with; they used to take pgmpi-bench's default)."""
    from scheduler.backends import make_backend
    from scheduler.campaign import parse_campaign
    from scheduler.planner import sync_argv
    mods = tunelib_modules(tmp_path, "openmpi")
    text = orr.write_rules(DECISIONS, native.discover("openmpi"))
    c = parse_campaign({"name": "nv", "machine": "nvbox", "modules": [{"mpi": "openmpi"}], "sync": "roundtime",
                        "layouts": [{"nodes": 1, "ppn": 2}], "collectives": {"allreduce": {"sizes": [8]}}})
    job = NativeValidationJob(tmp_path / "local", "nvbox", "openmpi", "4.1.4", "native.rules", text, "openmpi/4.1.4",
                              "pgmpitunelib/0.1.0", [str(mpi_modulepath), str(mods)], rounds=2, nrep=5,
                              sync_argv=sync_argv(c, 1))
    backend = make_backend(None, "local")
    script = job.write(backend)
    assert "#SBATCH" not in script.read_text() and "generated by the agent" in script.read_text()
    job_id = job.submit(backend=backend, timeout=300)
    assert job_id.startswith("local-") and job.backend_name == "local"
    for r in (1, 2):
        assert f"#@native_file={job.staged}\n" in (tmp_path / "local" / f"file-{r}.txt").read_text()
        assert "#@native_file=" not in (tmp_path / "local" / f"forced-{r}.txt").read_text()
        for arm in ("file", "forced"):
            assert "#@procsync=roundtime\n" in (tmp_path / "local" / f"{arm}-{r}.txt").read_text()
    assert len(job.figures()) > 0


@pytest.mark.mpi
@pytest.mark.lmod
def test_native_validate_measures_with_the_sync_it_is_given(tmp_path, mpi_modulepath, bench_root):
    """`pgmpi agent native-validate --sync` reaches both arms as a campaign's sync: does (planner.proc_sync_argv,
    the one writer of --proc-sync); a window size without --sync window is refused before anything is written.
    The service is not reachable here: the job runs, its raw files say how they measured, the post fails."""
    from click.testing import CliRunner
    from scheduler.cli import agent
    rules = tmp_path / "native.rules"
    rules.write_text(orr.write_rules(DECISIONS, native.discover("openmpi")))
    token = tmp_path / "token"
    token.write_text("x\n")
    mods = tunelib_modules(tmp_path, "openmpi")
    common = ["native-validate", str(rules), "--machine", "nvbox", "--mpi", "openmpi", "--mpi-version", "4.1.4",
              "--mpi-module", "openmpi/4.1.4", "--tunelib-module", "pgmpitunelib/0.1.0", "--modulepath",
              str(mpi_modulepath), "--modulepath", str(mods), "--rounds", "1", "--nrep", "5", "--backend", "local",
              "--service-url", "http://127.0.0.1:9", "--token-file", str(token)]
    r = CliRunner().invoke(agent, [*common, "--workdir", str(tmp_path / "bad"), "--window-size-us", "500"])
    assert r.exit_code == 2 and "belongs to --sync window (--sync is auto)" in r.output, r.output
    assert not (tmp_path / "bad").exists()
    r = CliRunner().invoke(agent, [*common, "--workdir", str(tmp_path / "w"), "--sync", "window", "--window-size-us",
                                   "500"])
    assert r.exit_code == 1 and "POST /api/v1/native/validations" in r.output, r.output   # measured, post fails
    for arm in ("file", "forced"):
        raw = (tmp_path / "w" / f"{arm}-1.txt").read_text()
        assert "#@procsync=window\n" in raw and "#@window_size_sec=0.000500000\n" in raw, raw[:1500]
