"""Campaign files: valid YAML/TOML load; bad ones name file:line, the field and the valid choices."""
from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from scheduler.campaign import LARGE_SIZES, SMALL_SIZES, CampaignError, load_campaign
from scheduler.planner import check_budget, estimate, plan
from scheduler.uploader import upload_id

GOOD = """\
name: nightly
machine: hydra
modules:
  - name: openmpi/4.1.4
    mpi: openmpi
    env: {OMPI_MCA_btl: "self,vader"}
  - name: mpich/4.0.2
    mpi: mpich
layouts:
  - {nodes: 1, ppn: 2}
  - {nodes: 2, ppn: 16}
collectives:
  allreduce: {}
  allgather: {}
  bcast: {sizes: [8, 1024], algorithms: [bcast_as_scatter_allgather]}
repetitions: {policy: predict, rules: [rse, covmedian], max_nrep: 500}
mpiruns: 3
budget: {node_hours: 50}
slurm: {partition: batch, account: hpc, qos: normal, walltime: "01:30:00", constraints: "ib"}
service: {url: "https://pgmpi.example.org", token_file: /etc/pgmpi-site/agent.token}
"""


def write(tmp_path, text, name="c.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_good_yaml_and_plan(tmp_path):
    c = load_campaign(write(tmp_path, GOOD))
    assert c.sizes_for("allreduce") == LARGE_SIZES and c.sizes_for("allgather") == SMALL_SIZES
    assert c.algorithms_for("bcast") == ["default", "bcast_as_scatter_allgather"]
    assert c.slurm.walltime_seconds == 5400 and c.slurm.exclusive is False
    from scheduler.backends.slurm import SlurmBackend
    lines = SlurmBackend.from_campaign(c.model_copy(update={"slurm": c.slurm.model_copy(
        update={"exclusive": True})})).directives(plan(c)[1], tmp_path, "n")
    assert {"#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=16", "#SBATCH --time=0-01:30:00",
            "#SBATCH --partition=batch", "#SBATCH --account=hpc", "#SBATCH --qos=normal",
            "#SBATCH --constraint=ib", "#SBATCH --exclusive"} <= set(lines)
    jobs = plan(c)
    # one job per (module, layout); R=3 launches per job, one bench call per size group
    assert [j.key for j in jobs] == ["openmpi-4.1.4-n1x2", "openmpi-4.1.4-n2x16", "mpich-4.0.2-n1x2",
                                     "mpich-4.0.2-n2x16"]
    j = jobs[0]
    assert sorted({ln.index for ln in j.launches}) == [0, 1, 2]
    groups = {tuple(a for a in ln.argv if a.startswith(("--calls", "--algorithms"))) for ln in j.launches}
    # every measured cell has the control arm (the default again under default_control), unless switched off
    assert groups == {("--calls=allreduce", "--algorithms=all,default_control"),
                      ("--calls=allgather", "--algorithms=all,default_control"),
                      ("--calls=bcast", "--algorithms=default,bcast_as_scatter_allgather,default_control")}
    off = plan(c.model_copy(update={"control": False}))[0]
    assert {a for ln in off.launches for a in ln.argv if a.startswith("--algorithms")} == \
        {"--algorithms=all", "--algorithms=default,bcast_as_scatter_allgather"}
    assert all("--campaign=nightly" in ln.argv for ln in j.launches)
    # campaign-wide NREP: mpirun 0 is the pilot that predicts, every other mpirun takes its counts per cell
    for ln in j.launches:
        pilot = ln.output.replace(f"run-{ln.index}", "run-0", 1)
        assert ("--predict=rse,covmedian" in ln.argv) == (ln.index == 0)
        assert (f"--nrep-from={pilot}" in ln.argv) == (ln.index > 0), ln.argv
    alone = plan(c.model_copy(update={"repetitions": c.repetitions.model_copy(update={"campaign_wide": False})}))[0]
    assert all("--predict=rse,covmedian" in ln.argv for ln in alone.launches)
    night = plan(c.model_copy(update={"repetitions": c.repetitions.model_copy(
        update={"nrep_from": ["/n/run-0.txt", "/n/run-1.txt"]})}))[0]
    assert all("--nrep-from=/n/run-0.txt,/n/run-1.txt" in ln.argv and not any(a.startswith("--predict") for a in ln.argv)
               for ln in night.launches)
    est = estimate(c, jobs)
    assert est.jobs == 4 and est.launches == 4 * 9
    assert 0 < est.node_hours <= est.node_hours_walltime == pytest.approx((1 + 2 + 1 + 2) * 1.5)
    assert check_budget(c, est) is None


def test_toml_equivalent(tmp_path):
    toml = """
name = "t1"
machine = "hydra"
mpiruns = 2
[[modules]]
name = "openmpi/4.1.4"
mpi = "openmpi"
[[layouts]]
nodes = 1
ppn = 4
[collectives.reduce]
sizes = "small"
"""
    c = load_campaign(write(tmp_path, toml, "c.toml"))
    assert c.sizes_for("reduce") == SMALL_SIZES and plan(c)[0].key == "openmpi-4.1.4-n1x4"


@pytest.mark.parametrize("extra,expect", [
    ("native: {publish: true}\nvalidation: {enabled: false}\n", ["native", "validation.enabled: false"]),
    ("native: {rounds: 1}\n", ["native.rounds", "greater than or equal to 2"]),
    ("native: {}\n", None),
])
def test_native_section(tmp_path, extra, expect):
    text = GOOD.replace("  allgather: {}", "  allgather: {search: exhaustive}") + extra
    if expect is None:
        c = load_campaign(write(tmp_path, text))
        assert c.measures_native() and c.native_nprocs() == 2 and not c.native.publish
        return
    with pytest.raises(CampaignError) as exc:
        load_campaign(write(tmp_path, text))
    for e in expect:
        assert e in str(exc.value), str(exc.value)


@pytest.mark.parametrize("old,new,expect", [
    ("    mpi: mpich\n", "    mpi: MPICH!\n", ["c.yaml:8:", "modules[1].mpi", "pattern"]),
    ("  - {nodes: 2, ppn: 16}", "  - {nodes: 0, ppn: 16}", ["c.yaml:11:", "layouts[1].nodes", "greater than or equal to 1"]),
    ("  allgather: {}", "  allgathr: {}", ["collectives", "unknown collective(s) allgathr", "valid: allgather"]),
    ("mpiruns: 3", "mpiruns: three", ["c.yaml:17:", "mpiruns", "integer"]),
    ("slurm: {partition: batch,", "slurm: {partiton: batch,", ["c.yaml:19:", "slurm.partiton", "unknown field",
                                                                 "valid fields here: partition"]),
    ("walltime: \"01:30:00\"", "walltime: \"90 minutes\"", ["slurm.walltime", "pattern"]),
    ("[bcast_as_scatter_allgather]", "[allreduce_as_reduce_bcast]", ["collectives.bcast", "not a mock-up of bcast"]),
    ("repetitions: {policy: predict,", "repetitions: {policy: adaptive,", ["repetitions.policy", "'fixed'", "'predict'"]),
    ("name: nightly\n", "", ["name", "required field is missing"]),
    ("repetitions: {policy: predict, rules: [rse, covmedian], max_nrep: 500}",
     "repetitions: {policy: fixed, nrep_from: [/x/run-0.txt]}", ["repetitions", "nrep_from", "policy 'fixed'"]),
    ("max_nrep: 500}", "max_nrep: 500, covmean_thres: 0.01}", ["repetitions", "covmean_thres applies to policy "
                                                               "'predict' with rule 'covmean'"]),
    ("max_nrep: 500}", "max_nrep: 500, covmedian_window: 1}", ["repetitions.covmedian_window",
                                                               "greater than or equal to 2"]),
    ("  allgather: {}", "  allgather: {search: random}", ["c.yaml:14:", "collectives.allgather.search",
                                                         "'exhaustive', 'mgd', 'smgd' or 'race'"]),
    ("  allgather: {}", "  allgather: {segments: [1024]}", ["c.yaml:14:", "collectives.allgather",
                                                           "segments applies to a search"]),
    ("  allgather: {}", "  allgather: {search: mgd, neighbour: left}", ["collectives.allgather.neighbour",
                                                                       "'none', 'segment' or 'prune'"]),
    ("[bcast_as_scatter_allgather]}", "[bcast_as_scatter_allgather], search: smgd}",
     ["collectives.bcast", "a search measures the MPI library's own algorithms"]),
    # the nightly native chain needs the library's own algorithms measured and the analysis switched on
    ("mpiruns: 3\n", "mpiruns: 3\nnative: {publish: true}\n", ["native", "measures none of the MPI library's own"]),
    # within-night looks (scheduler/looks.py): each look is a job of its own, the last is mpiruns
    ("mpiruns: 3\n", "mpiruns: 3\nsequential: {looks: [2, 4]}\n", ["sequential.looks: the last look (4) must be "
                                                                  "mpiruns (3)"]),
    ("mpiruns: 3\n", "mpiruns: 3\nsequential: {looks: [1, 3]}\n", ["sequential.looks", "start at 2 or more"]),
    ("mpiruns: 3\n", "mpiruns: 3\nsequential: {looks: [2, 3]}\n", ["sequential: needs repetitions policy fixed"]),
])
def test_bad_fields_are_named(tmp_path, old, new, expect):
    assert old in GOOD
    with pytest.raises(CampaignError) as exc:
        load_campaign(write(tmp_path, GOOD.replace(old, new)))
    msg = str(exc.value)
    for e in expect:
        assert e in msg, msg


def test_search_runs_in_one_driver_per_job_and_only_there(tmp_path):
    """search: the searched collectives leave the plain launches; exhaustive sweeps R times, mgd/smgd search once
    (sequential) and confirm the choices in R mpiruns; the job script runs the driver with the job's launcher."""
    import json

    from scheduler.backends import render_script
    c = load_campaign(write(tmp_path, GOOD.replace("  allgather: {}", "  allgather: {search: smgd, segments: [4096, 1024]}")))
    job = plan(c)[0]
    plain = [ln for ln in job.launches if ln.role == "measure"]
    search = [ln for ln in job.launches if ln.role == "search"]
    assert len(plain) == 3 * 2 and all("allgather" not in ln.argv[0] for ln in plain)   # two size groups x R
    assert len(search) == 1 and search[0].output == "search-0.json"
    spec = json.loads(search[0].argv[1])
    assert spec["collectives"]["allgather"] == {"search": "smgd", "sizes": SMALL_SIZES, "segments": [1024, 4096],
                                                "lookahead": 2, "prune": 0.5, "neighbour": "none"}
    # under predict (max_nrep 500) a search measures a fixed count: --serve and the race need one
    assert spec["confirm"] == 3 and "--nrep=500" in spec["bench_args"] \
        and not any(a.startswith("--predict") for a in spec["bench_args"])
    script = render_script(job, tmp_path, "j", tmp_path / "pgmpi-bench", in_slurm=True)
    assert "-m scheduler.native_driver --spec" in script and "--list-native" in script
    ex = load_campaign(write(tmp_path, GOOD.replace("  allgather: {}", "  allgather: {search: exhaustive}")))
    sweeps = [ln for ln in plan(ex)[0].launches if ln.role == "search"]
    assert [ln.index for ln in sweeps] == [0, 1, 2] and json.loads(sweeps[0].argv[1])["confirm"] == 0
    race = load_campaign(write(tmp_path, GOOD.replace("  allgather: {}", "  allgather: {search: race, first_nrep: 3}")))
    one = [ln for ln in plan(race)[0].launches if ln.role == "search"]
    spec = json.loads(one[0].argv[1])
    assert len(one) == 1 and spec["confirm"] == 3 and spec["collectives"]["allgather"]["first_nrep"] == 3


def test_bad_yaml_syntax_and_budget(tmp_path):
    with pytest.raises(CampaignError, match=r"c.yaml:4: not valid YAML"):
        load_campaign(write(tmp_path, "name: x\nmachine: y\nmodules: [\n  - :\n"))
    c = load_campaign(write(tmp_path, GOOD.replace("node_hours: 50", "node_hours: 0.001")))
    assert "above budget.node_hours = 0.001" in check_budget(c, estimate(c))


def test_upload_ids_are_stable_and_distinct():
    a = upload_id("c", "job", 0, "content")
    assert a == upload_id("c", "job", 0, "content")
    assert len({a, upload_id("c", "job", 1, "content"), upload_id("c", "job2", 0, "content"),
                upload_id("c2", "job", 0, "content"), upload_id("c", "job", 0, "content2")}) == 5


@pytest.mark.mpi
def test_prediction_thresholds_reach_pgmpi_bench(tmp_path, mpi, mpi_prefix):
    text = GOOD.replace("max_nrep: 500}", "max_nrep: 500, min_nrep: 50, rse_thres: 0.02, covmedian_thres: 0.002, "
                                          "covmedian_window: 50}")
    c = load_campaign(write(tmp_path, text))
    argv = plan(c)[0].launches[0].argv
    assert {"--predict=rse,covmedian", "--pred-params=min=50,max=500,step=10", "--rse-thres=0.02",
            "--covmedian-thres=0.002", "--covmedian-window=50"} <= set(argv)
    assert not any(a.startswith("--covmean") for a in argv)
    # pgmpi-bench takes them (dry run: the policy line shows what it will do)
    exe = mpi_prefix / "bin/pgmpi-bench"
    bench_opts = [a for a in argv if a.startswith(("--predict", "--pred-params", "--rse-", "--covmedian-"))]
    launcher = ["mpirun.openmpi", "--allow-run-as-root"] if mpi == "openmpi" else ["mpirun.mpich"]
    r = subprocess.run(launcher + ["-np", "1", str(exe), "--dry-run", "--calls=allreduce", "--sizes=8", *bench_opts],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "predict:rse<0.02+covmedian<0.002/w50;min:50;max:500;step:10" in r.stdout


def test_native_file_for_the_measurement_launches_only(tmp_path):
    """native_file: default and mock-ups run under the library's decision file (as users get them); launches
    that force the library's own algorithms (native:..., searches) never do, a rules file would override them."""
    from scheduler.backends import render_script
    site = tmp_path / "site"
    for f in ("p/hydra/openmpi-4.1.4/current/native.rules", "p/hydra/mpich-4.0.2/current/native.json"):
        (site / f).parent.mkdir(parents=True)
        (site / f).write_text("x\n")
    text = GOOD.replace("    env: {OMPI_MCA_btl: \"self,vader\"}",
                        "    env: {OMPI_MCA_btl: \"self,vader\"}\n    native_file: /site/p/hydra/openmpi-4.1.4/current/native.rules")
    text = text.replace("    mpi: mpich\n", "    mpi: mpich\n    native_file: /site/p/hydra/mpich-4.0.2/current/native.json\n")
    text = text.replace("native_file: /site/", f"native_file: {site}/")
    text = text.replace("  allgather: {}", "  allgather: {search: exhaustive}")
    text = text.replace("  allreduce: {}", "  allreduce: {algorithms: [default, native:all]}")
    c = load_campaign(write(tmp_path, text))
    ompi, mpich = plan(c)[0], plan(c)[2]
    for job, want in ((ompi, {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", "OMPI_MCA_coll_tuned_dynamic_rules_filename":
                               f"{site}/p/hydra/openmpi-4.1.4/current/native.rules"}),
                      (mpich, {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": f"{site}/p/hydra/mpich-4.0.2/current/native.json"})):
        under = [ln for ln in job.launches if ln.env]
        assert all(ln.env == want for ln in under) and any("--calls=bcast" in ln.argv for ln in under), job.key
        # allreduce's native:all goes to launches of its own (run-native-*), its default stays under the file
        assert any("--calls=allreduce" in ln.argv and "--algorithms=default,default_control" in ln.argv
                   for ln in under)
        forced = [ln for ln in job.launches if "native:" in " ".join(ln.argv) or ln.role == "search"]
        assert forced and not any(ln.env for ln in forced)
        assert {ln.output for ln in forced if ln.role != "search"} == {"run-native-0.txt", "run-native-1.txt",
                                                                      "run-native-2.txt"}
    script = render_script(ompi, tmp_path, "j", tmp_path / "pgmpi-bench", in_slurm=True)
    assert f"export OMPI_MCA_coll_tuned_dynamic_rules_filename={site}/p/hydra/openmpi-4.1.4/current/native.rules" in script
    # nothing published yet: the launches run without it (MPICH would abort on a file it cannot read)
    (site / "p/hydra/mpich-4.0.2/current/native.json").unlink()
    assert not any(ln.env for ln in plan(c)[2].launches)
    bad = text.replace(f"native_file: {site}/p/hydra/mpich-4.0.2", "native_file: site/p/hydra/mpich-4.0.2")
    with pytest.raises(CampaignError, match="native_file.*is not an absolute path"):
        load_campaign(write(tmp_path, bad, "bad.yaml"))


def _launch_environment(job, ln) -> dict[str, str]:
    """The environment a launch's command gets: the job's (module, campaign env:), then the launch's own lines
    of the job script (backends.launch_env_lines) run by bash, as the job script runs them."""
    from scheduler.backends import job_env, launch_env_lines
    script = "; ".join([*launch_env_lines(ln), "env -0"])
    out = subprocess.run(["bash", "-c", script], env={"PATH": os.environ["PATH"], **job_env(job, in_slurm=False)},
                         capture_output=True, text=True, check=True).stdout
    return dict(x.split("=", 1) for x in out.split("\0") if x)


@pytest.mark.mpi
def test_searches_and_native_arms_measure_the_librarys_default_whatever_the_module_sets(tmp_path):
    """A job's module may carry a published native file (the pgmpitunelib module sets its variables,
    pgmpitune-site.lua native_env) or force an algorithm without a file (Open MPI's coll_tuned_<coll>_algorithm,
    MPICH's <COLL>_INTRA_ALGORITHM under any of its three prefixes, Intel MPI's I_MPI_ADJUST_<COLL>, or Intel's
    own tuning file or autotuner, I_MPI_TUNING*, which the old planner left); here module
    env: does that for every launch.  A search and every launch of the library's own algorithms -- Intel MPI's
    default and preset mpirun rounds included -- runs without any of them: the "default" it pairs against is the
    library's own, and an Intel preset mpirun does not add the file's presets of other collectives
    (libpgmpitune's MPI_Init would set them).  Launches of default and mock-ups alone keep what the module set
    (what users get); the job script does the unset (its lines run here in bash).  On the old planner the
    forcing variables reached every arm."""
    from scheduler.backends import render_script
    from scheduler.planner import NATIVE_VARS
    site = "/site/p/hydra"
    published = {"openmpi": {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                             "OMPI_MCA_coll_tuned_dynamic_rules_filename": f"{site}/openmpi-4.1.4/current/native.rules"},
                 "mpich": {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": f"{site}/mpich-4.0.2/current/native.json"},
                 "intelmpi": {"PGMPITUNE_NATIVE_IMPI": f"{site}/intelmpi-2021.13/current/native.impi"}}
    forcing = {"openmpi": {"OMPI_MCA_coll_tuned_allreduce_algorithm": "3",
                           "OMPI_MCA_coll_tuned_bcast_algorithm_segmentsize": "1024"},
               "mpich": {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "recursive_doubling",
                         "MPICH_BCAST_INTRA_ALGORITHM": "binomial", "MPIR_PARAM_ALLGATHER_INTRA_ALGORITHM": "ring"},
               "intelmpi": {"I_MPI_ADJUST_ALLREDUCE": "5", "I_MPI_ADJUST_BCAST_SEGMENT": "4096",
                            # Intel MPI's own tuning files and its in-run autotuner change its default too
                            "I_MPI_TUNING_BIN": "/site/intel/tuned.dat", "I_MPI_TUNING": "/site/intel/tuned.json",
                            "I_MPI_TUNING_MODE": "auto", "I_MPI_TUNING_AUTO_ITER_NUM": "4"}}
    # not ours, or knobs that change how, not which, algorithm runs (scheduler/README.md): they stay
    kept = {"OMPI_MCA_btl": "self,vader", "MPIR_CVAR_ASYNC_PROGRESS": "0", "I_MPI_FABRICS": "shm",
            "MPIR_CVAR_DEVICE_COLLECTIVES": "percoll", "OMPI_MCA_coll": "^han", "I_MPI_CBWR": "1",
            "I_MPI_COLL_INTRANODE": "pt2pt"}
    for mpi, env in forcing.items():
        assert all(re.fullmatch(NATIVE_VARS, k) for k in env) and not any(re.fullmatch(NATIVE_VARS, k) for k in kept)
    mods = "".join(f"  - {{mpi: {m}, env: {json.dumps({**env, **forcing[m], **kept})}}}\n"
                   for m, env in published.items())
    text = (GOOD.split("modules:\n")[0] + "modules:\n" + mods + "layouts:\n  - {nodes: 1, ppn: 2}\n"
            + "collectives:\n  allreduce: {sizes: [8, 1024], search: race}\n"
            + "  bcast: {sizes: [8, 1024], algorithms: [default, native:1, bcast_as_scatter_allgather]}\n"
            + "  allgather: {sizes: [8], algorithms: [allgather_as_gather_bcast]}\n"
            + "repetitions: {nrep: 20}\nmpiruns: 2\n")
    c = load_campaign(write(tmp_path, text))
    jobs = {j.module.mpi: j for j in plan(c)}
    for mpi, job in jobs.items():
        for ln in job.launches:
            env = _launch_environment(job, ln)
            algs = " ".join(a for a in ln.argv if a.startswith("--algorithms="))
            native_arm = ln.role == "search" or "native:" in algs or mpi == "intelmpi" and "--calls=allgather" not in ln.argv
            got = {k: v for k, v in env.items()
                   if k in {**published[mpi], **forcing[mpi]} or k.startswith(("I_MPI_ADJUST_", "I_MPI_TUNING"))}
            assert {k: env.get(k) for k in kept} == kept, (mpi, ln.output)
            if native_arm:
                # only the preset an Intel MPI mpirun forces itself
                assert got == {k: v for k, v in ln.env.items() if k.startswith("I_MPI_ADJUST_")}, (mpi, ln.output, got)
            else:
                assert got == {**published[mpi], **forcing[mpi]}, (mpi, ln.output, got)
        assert any(ln.role == "search" for ln in job.launches), mpi
    # Intel MPI: the default mpirun of each round (bcast's default, mock-up and control arm) without the file too
    intel = [ln for ln in jobs["intelmpi"].launches if "--calls=bcast" in ln.argv]
    assert {ln.output for ln in intel} == {"run-0-g0.txt", "run-1-g0.txt", "run-0-native-1.txt", "run-1-native-1.txt"}
    assert all(ln.unset_matching == NATIVE_VARS for ln in intel)
    # the job script unsets them in the search driver's subshell (its pgmpi-bench mpiruns inherit that)
    script = render_script(jobs["mpich"], tmp_path, "j", tmp_path / "pgmpi-bench", in_slurm=False)
    line = next(x for x in script.splitlines() if "scheduler.native_driver" in x)
    assert line.startswith("(unset $(compgen -e | grep -xE ") and "COLL_SELECTION_TUNING_JSON_FILE" in line.split(";")[0]


@pytest.mark.mpi
def test_a_search_and_intel_preset_rounds_run_without_the_published_file_the_module_names(tmp_path, bench_root):
    """The same in real jobs (local backend, 2 ranks): the module names a published native.json (MPICH) or
    native.impi (Intel MPI, whose bcast preset libpgmpitune's MPI_Init would set), and pgmpi-bench's header
    (#@native_file, #@native_impi: what Intel MPI read) shows that no mpirun of the MPICH search driver nor of
    Intel MPI's default and preset rounds ran under it.  On the old planner every raw file named the file and the
    Intel default mpirun ran I_MPI_ADJUST_BCAST=1:0-2147483647@2-2."""
    from pgmpi_formats import native_file
    from pgmpi_formats.ompi_rules import Decision
    from pgmpi_formats.results import read_file
    from scheduler.backends import make_backend, wait
    if not (bench_root / "intelmpi" / "bin" / "pgmpi-bench").exists():
        pytest.fail(f"{bench_root}/intelmpi/bin/pgmpi-bench missing: deploy/build-lib.sh intelmpi (make test does)")
    (tmp_path / "native.json").write_text(native_file.render(
        "mpich", [Decision("allreduce", 2, 8, "native:recursive_doubling")], version="4.0.2")[1])
    (tmp_path / "native.impi").write_text(native_file.render(
        "intelmpi", [Decision("bcast", 2, 8, "native:1")], version="2021.13")[1])
    for mpi, var, coll in (("mpich", "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE", "{sizes: [8], search: exhaustive}"),
                           ("intelmpi", "PGMPITUNE_NATIVE_IMPI", "{sizes: [8], algorithms: [default, native:3]}")):
        path = tmp_path / ("native.json" if mpi == "mpich" else "native.impi")
        c = load_campaign(write(tmp_path, f"""name: arms-{mpi}
machine: box
backend: local
bench_root: {bench_root}
modules: [{{mpi: {mpi}, env: {{{var}: {path}}}}}]
layouts: [{{nodes: 1, ppn: 2}}]
collectives: {{allreduce: {coll}, bcast: {{sizes: [16], algorithms: [default]}}}}
repetitions: {{nrep: 5}}
mpiruns: 2
validation: {{enabled: false}}
""", f"{mpi}.yaml"))
        job = plan(c)[0]
        d = tmp_path / mpi
        d.mkdir()
        be = make_backend(c)
        st = wait(be, be.submit(job, d, f"arms-{mpi}", c.bench_for(job.module)), d, 300)
        assert st.state == "COMPLETED", (st, (d / "local.out").read_text()[-2000:])
        runs = {f.name: read_file(f) for f in sorted(d.glob("*.txt")) if f.name != "native-algorithms.txt"}
        arms = {n: r.header for n, r in runs.items() if "MPI_Allreduce" in r.tests}
        assert len(arms) == (2 if mpi == "mpich" else 4), sorted(runs)
        assert all("native_file" not in h and "native_impi" not in h for h in arms.values()), arms
        # bcast measured alone (no preset of it asked): under the file, as users get it
        under = [r.header for n, r in runs.items() if n not in arms]
        assert under and all(h.get("native_file") == str(path) for h in under), runs


@pytest.mark.mpi
def test_the_default_arm_of_a_native_launch_is_not_an_algorithm_the_module_forces(tmp_path, bench_root):
    """A real job (local backend, Open MPI 4.1.4, 2 ranks) whose module forces recursive_doubling on
    MPI_Allreduce without any file (OMPI_MCA_coll_tuned_allreduce_algorithm=3).  pgmpi-bench sets
    use_dynamic_rules=1 itself for native: variants, so Open MPI makes MPI_COMM_WORLD with the forced algorithm:
    on the old planner the "default" arm's reduction fingerprint was recursive_doubling's (bae2... against the
    library's ring a1af... at 64 KiB, 2026-11-26).  Now the launch runs without the variable and its default is
    the library's, told apart by the result fingerprint (no timing)."""
    from pgmpi_formats.results import read_file
    from scheduler.backends import make_backend, wait
    c = load_campaign(write(tmp_path, f"""name: forced-openmpi
machine: box
backend: local
bench_root: {bench_root}
modules: [{{mpi: openmpi, env: {{OMPI_MCA_coll_tuned_allreduce_algorithm: "3", PGMPI_NATIVE_EVIDENCE: "1"}}}}]
layouts: [{{nodes: 1, ppn: 2}}]
collectives: {{allreduce: {{sizes: [65536], algorithms: [default, native:recursive_doubling]}}}}
repetitions: {{nrep: 5}}
mpiruns: 1
validation: {{enabled: false}}
"""))
    job = plan(c)[0]
    d = tmp_path / "job"
    d.mkdir()
    be = make_backend(c)
    st = wait(be, be.submit(job, d, "forced-openmpi", c.bench_for(job.module)), d, 300)
    assert st.state == "COMPLETED", (st, (d / "local.out").read_text()[-2000:])
    run = read_file(d / "run-0.txt")
    prints = {f[4]: f[5] for f in (str(x).removeprefix("#@").split() for x in run.pgmpi_lines)
              if f[:2] == ["pgmpi", "fingerprint"]}
    assert set(prints) == {"default", "native:recursive_doubling"}, run.pgmpi_lines
    assert prints["default"] != prints["native:recursive_doubling"], prints


@pytest.mark.mpi
def test_campaign_wide_nrep_every_mpirun_measures_the_pilots_counts(tmp_path, mpi, mpi_prefix):
    """The planned launches of a predict campaign run as the job runs them (in order, in one directory): the
    pilot predicts a count per cell, the other mpiruns measure exactly that count and say where it came from."""
    from pgmpi_formats.results import read_files
    text = GOOD.replace("repetitions: {policy: predict, rules: [rse, covmedian], max_nrep: 500}",
                        "repetitions: {policy: predict, rules: [rse], min_nrep: 10, max_nrep: 60, step: 5}")
    text = text.replace("  allreduce: {}\n  allgather: {}\n", "").replace("sizes: [8, 1024]", "sizes: [8, 4096]")
    c = load_campaign(write(tmp_path, text))
    job = plan(c)[0]
    exe = mpi_prefix / "bin/pgmpi-bench"
    launcher = ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe"] if mpi == "openmpi" else ["mpirun.mpich"]
    for ln in sorted(job.launches, key=lambda x: x.index):
        r = subprocess.run(launcher + ["-np", "2", str(exe), *ln.argv], capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    rs = read_files([tmp_path / ln.output for ln in job.launches])
    counts = {}
    for run in rs.runs:
        for line in run.pgmpi_lines:
            f = line.removeprefix("#@").split()         # pgmpi nrep <MPI_Name> <bytes> <n>
            if f[:2] == ["pgmpi", "nrep"]:
                counts.setdefault((f[2], int(f[3])), set()).add(int(f[4]))
    assert counts and all(len(v) == 1 for v in counts.values()), counts     # one count per cell, every mpirun
    assert {r.header["nrep_policy"].split(":")[0] for r in rs.runs} == {"predict", "from"}
    assert sum(r.header["nrep_policy"] == "from:run-0.txt" for r in rs.runs) == c.mpiruns - 1


@pytest.mark.parametrize("sync, one_node, multi_node", [
    (None, "dissem", None), ("roundtime", "roundtime", "roundtime"), ("mpi_barrier", "mpi_barrier", "mpi_barrier")])
def test_the_campaign_chooses_the_synchronisation_of_every_launch(tmp_path, sync, one_node, multi_node):
    from scheduler.campaign import MULTI_NODE_SYNC
    text = GOOD + (f"sync: {sync}\n" if sync else "")
    jobs = plan(load_campaign(write(tmp_path, text)))
    for j in jobs:
        want = one_node if j.layout.nodes == 1 else (multi_node or MULTI_NODE_SYNC)
        for ln in j.launches:
            syncs = [a for a in ln.argv if a.startswith("--proc-sync=")]
            if ln.role == "search":
                continue
            assert syncs == [f"--proc-sync={want}"], (j.key, ln.argv)


@pytest.mark.parametrize("extra, expect", [
    ("sync: window\nwindow_size_us: 5000\n", None),
    ("sync: hca\n", "sync"),
    ("sync: dissem\nwindow_size_us: 5000\n", "window_size_us: belongs to sync: window"),
    ("bench_args: [--sync=mpi_barrier]\n", "'--sync=mpi_barrier' is chosen by the campaign's sync:"),
    ("bench_args: [--method=reprompi]\n", "'--method=reprompi' is chosen by the campaign's sync:"),
])
def test_sync_fields_and_bench_args_that_would_change_the_method(tmp_path, extra, expect):
    if expect is None:
        c = load_campaign(write(tmp_path, GOOD + extra))
        argv = plan(c)[0].launches[0].argv
        assert "--proc-sync=window" in argv and "--window-size=5000" in argv
        return
    with pytest.raises(CampaignError) as exc:
        load_campaign(write(tmp_path, GOOD + extra))
    assert expect in str(exc.value)


def test_intel_presets_are_planned_one_mpirun_each_and_mgd_smgd_refused(tmp_path):
    """An Intel MPI module's presets (native:<p>): per mpirun index the default mpirun (fingerprinting its
    reductions) and one per preset, the same index, order alternating, the preset forced by its variable
    without ranges; native:all and search: exhaustive are every preset the installed Intel MPI lists
    (impi_info -v: allreduce 1-32, bcast 1-22), one mpirun each; mgd / smgd are refused with the reason
    (Intel MPI reads I_MPI_ADJUST_<COLL> once at MPI_Init)."""
    text = """name: ic
machine: hydra
modules: [{mpi: intelmpi}]
layouts: [{nodes: 1, ppn: 2}]
collectives:
  allreduce: {sizes: [8, 1024], algorithms: [default, native:3, native:12]}
  bcast: {sizes: [8], algorithms: [default, native:3]}
repetitions: {policy: fixed, nrep: 5}
mpiruns: 2
"""
    (job,) = plan(load_campaign(write(tmp_path, text)))
    got = [(ln.index, ln.output, ln.env) for ln in job.launches]
    ev = {"PGMPI_NATIVE_EVIDENCE": "1"}
    first = [(0, "run-0-g0.txt", ev), (0, "run-0-g1.txt", ev),
             (0, "run-0-native-3-g0.txt", {"I_MPI_ADJUST_ALLREDUCE": "3"}),
             (0, "run-0-native-3-g1.txt", {"I_MPI_ADJUST_BCAST": "3"}),
             (0, "run-0-native-12.txt", {"I_MPI_ADJUST_ALLREDUCE": "12"})]
    assert [x[1] for x in got[:5]] == [x[1] for x in first] and got[:5] == first, got
    assert [x[1] for x in got[5:]] == [x[1].replace("-0", "-1") for x in first][::-1], got
    for ln in job.launches:
        algs = next(a for a in ln.argv if a.startswith("--algorithms="))
        assert f"--mpirun-index={ln.index}" in ln.argv
        assert algs == ("--algorithms=default,default_control" if ln.env == ev
                        else f"--algorithms=native:{next(iter(ln.env.values()))}"), ln
    for every in ("algorithms: [default, native:all]", "search: exhaustive"):
        (job,) = plan(load_campaign(write(tmp_path, text.replace("algorithms: [default, native:3, native:12]", every),
                                          "a.yaml")))
        mine = [ln for ln in job.launches if ln.index == 0]
        forced = {}
        for ln in mine[2:]:
            for var, p in ln.env.items():
                forced.setdefault(var, []).append(int(p))
        # the default mpiruns first (two size groups), then presets 1-32 of allreduce; bcast keeps its native:3
        assert [x.env for x in mine[:2]] == [ev, ev] and len(mine) == 2 + 33, [x.output for x in mine]
        assert forced == {"I_MPI_ADJUST_ALLREDUCE": list(range(1, 33)), "I_MPI_ADJUST_BCAST": [3]}, forced
        assert not [ln for ln in job.launches if ln.role == "search"]
        assert job.estimate_seconds >= 2.0 * 33 * 2          # a start-up per preset mpirun, two rounds
    with pytest.raises(CampaignError, match="segments: Intel MPI's presets have no segment size"):
        load_campaign(write(tmp_path, text.replace("algorithms: [default, native:3, native:12]",
                                                   "search: exhaustive, segments: [1024]"), "s.yaml"))
    for bad in ("mgd", "smgd"):
        # the line of the collective that asks it (a check over the whole campaign used to give line 1)
        with pytest.raises(CampaignError, match=f"b.yaml:6: collectives.allreduce: .*search: {bad} cannot search "
                                                "Intel MPI's presets .*once at MPI_Init"):
            load_campaign(write(tmp_path, text.replace("algorithms: [default, native:3, native:12]",
                                                       f"search: {bad}"), "b.yaml"))


def test_intel_race_is_one_search_driver_run_over_the_listed_presets(tmp_path):
    """search: race on an Intel MPI module (refused before: presets are fixed at MPI_Init): the raced collective
    leaves the preset mpiruns of intel_preset_launches and becomes one search driver run (scheduler/intel_race.py)
    whose spec carries every preset the installed Intel MPI lists (impi_info -v: allreduce 1-32) and the campaign's
    mpiruns as its rounds; a collective searched exhaustively next to it keeps its preset mpiruns."""
    text = """name: ir
machine: hydra
modules: [{mpi: intelmpi}]
layouts: [{nodes: 1, ppn: 2}]
collectives:
  allreduce: {sizes: [8, 1024], search: race}
  bcast: {sizes: [8], search: exhaustive}
repetitions: {policy: fixed, nrep: 30}
mpiruns: 3
"""
    (job,) = plan(load_campaign(write(tmp_path, text)))
    (search,) = [ln for ln in job.launches if ln.role == "search"]
    spec = json.loads(search.argv[1])
    assert spec["intel"] == {"version": "2021.13", "presets": {"allreduce": 32}} and spec["confirm"] == 3, spec
    assert spec["collectives"]["allreduce"]["search"] == "race" and list(spec["collectives"]) == ["allreduce"]
    assert "--nrep=30" in spec["bench_args"]
    forced = {v for ln in job.launches for v in ln.env if v.startswith("I_MPI_ADJUST_")}
    assert forced == {"I_MPI_ADJUST_BCAST"}, forced          # bcast's exhaustive presets, none of allreduce
    assert all("MPI_Allreduce" not in a and "allreduce" not in a for ln in job.launches if ln.role != "search"
               for a in ln.argv if a.startswith("--calls=")), [ln.argv for ln in job.launches]
