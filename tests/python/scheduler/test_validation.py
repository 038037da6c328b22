"""Validation jobs for candidate profiles: which sizes are measured, how launches are built, the figures."""
from __future__ import annotations

from pathlib import Path

from scheduler.campaign import parse_campaign
from pgmpi_formats.prf import parse_prf
from scheduler.validation import figures, redirected_sizes, validation_job

PRF = """# pgtune profile
#@pgmpi profile_version=1
MPI_Allreduce
2 # nb. of processes
2 # nb. of mock-up impl.
0 default
3 allreduce_as_reduce_bcast
2 # nb. of ranges
1 512 0
1024 4096 3 # redirected
"""


def campaign():
    return parse_campaign({
        "name": "c", "machine": "m", "backend": "local",
        "modules": [{"name": "openmpi/4.1.4", "mpi": "openmpi"}, {"name": "mpich/4.0.2", "mpi": "mpich"}],
        "layouts": [{"nodes": 1, "ppn": 2}, {"nodes": 1, "ppn": 4}],
        "collectives": {"allreduce": {"sizes": [8, 512, 1024, 2048, 4096, 65536]}},
        "validation": {"nrep": 7, "mpiruns": 2}})


def test_parse_and_sizes():
    prf = parse_prf(PRF)
    assert prf["mpi_name"] == "MPI_Allreduce" and prf["nprocs"] == 2
    assert prf["ranges"] == [(1, 512, "default"), (1024, 4096, "allreduce_as_reduce_bcast")]
    # redirected sizes and their neighbours on the campaign's grid
    assert redirected_sizes(campaign(), prf) == ("allreduce", [512, 1024, 2048, 4096, 65536])


def test_validation_job_tuned_against_default(tmp_path):
    job = validation_job(campaign(), {"id": 17, "library": "mpich", "files": {"allreduce_p2.prf": PRF}},
                         tmp_path, 600)
    assert job.key == "validate-mpich-4.0.2-n1x2-v17" and job.kind == "validate"
    assert job.module.mpi == "mpich" and job.layout.nprocs == 2
    roles = [ln.role for ln in job.launches]
    assert roles == ["default", "default", "tuned", "tuned"]
    for ln in job.launches:
        assert "--sizes=512,1024,2048,4096,65536" in ln.argv and "--nrep=7" in ln.argv
        if ln.role == "tuned":
            assert ln.env == {"PGMPITUNE_PROFILE_DIR": str(tmp_path)} and "--algorithms=tuned" in ln.argv
        else:
            assert ln.env == {} and "--algorithms=default" in ln.argv
    # a profile that redirects nothing needs no validation
    assert validation_job(campaign(), {"id": 1, "files": {"a.prf": PRF.replace("1024 4096 3", "1024 4096 0")}},
                          tmp_path, 600) is None


def test_figures_medians_per_size():
    hdr = "#@pgmpi_format=1\ntest nrep msize runtime_sec algorithm\n"
    default = hdr + "".join(f"MPI_Allreduce {i} 1024 {t} default\n" for i, t in enumerate([4e-6, 5e-6, 6e-6]))
    default += "MPI_Barrier 0 1024 1e-6 default\n"
    tuned = hdr + "".join(f"MPI_Allreduce {i} 1024 {t} tuned\n" for i, t in enumerate([2e-6, 2.5e-6, 9e-6]))
    figs = figures([("default", default), ("tuned", tuned)], 2)
    assert figs == [{"collective": "allreduce", "msize": 1024, "nprocs": 2, "layout": "", "default_time": 5e-6,
                     "tuned_time": 2.5e-6, "speedup": 2.0, "run_ratios": [2.0], "paired": False,
                     "n_default": 3, "n_tuned": 3}]


def test_figures_paired_when_both_arms_share_an_mpirun():
    """--algorithms=default,tuned: the ratio is taken inside each mpirun, so a slow launch (x3 on both arms)
    does not move it, while medians over launches would mix the two launches' speeds."""
    hdr = "#@pgmpi_format=1\ntest nrep msize runtime_sec algorithm\n"

    def run(scale):
        rows = "".join(f"MPI_Allreduce {i} 1024 {scale * t} default\nMPI_Allreduce {i} 1024 {scale * t / 1.25} tuned\n"
                       for i, t in enumerate([4e-6, 5e-6, 6e-6]))
        return hdr + rows
    figs = figures([("paired", run(1.0)), ("paired", run(3.0))], 2)
    assert len(figs) == 1 and figs[0]["paired"] is True
    assert [round(r, 9) for r in figs[0]["run_ratios"]] == [1.25, 1.25]
    assert abs(figs[0]["speedup"] - 1.25) < 1e-9 and figs[0]["n_default"] == 6 and figs[0]["n_tuned"] == 6


def test_validation_job_interleaved(tmp_path):
    c = campaign().model_copy(update={"validation": campaign().validation.model_copy(update={"interleaved": True})})
    job = validation_job(c, {"id": 3, "library": "openmpi", "files": {"allreduce_p2.prf": PRF}}, tmp_path, 600)
    assert [ln.role for ln in job.launches] == ["paired", "paired"]
    for ln in job.launches:
        assert "--algorithms=default,tuned" in ln.argv and ln.env == {"PGMPITUNE_PROFILE_DIR": str(tmp_path)}


def test_a_layout_profile_is_validated_on_its_layout_and_judged_by_its_figures(tmp_path):
    """A candidate with `#@pgmpi layout 2x2` is measured on 2x2 (not on the campaign's 1x4 of the same p);
    the figures carry the layout the launches measured, and the judge counts only figures of that layout."""
    from pgmpi_formats.prf import format_prf
    from service.analysis.validation import judge
    c = parse_campaign({
        "name": "c", "machine": "m", "backend": "local", "modules": [{"name": "openmpi/4.1.4", "mpi": "openmpi"}],
        "layouts": [{"nodes": 1, "ppn": 4}, {"nodes": 2, "ppn": 2}],
        "collectives": {"allreduce": {"sizes": [512, 1024, 4096]}}, "validation": {"nrep": 3, "mpiruns": 1}})
    prf = format_prf("MPI_Allreduce", 4, [(1024, 1024, "allreduce_as_reduce_bcast")], meta={"layout": "2x2"})
    job = validation_job(c, {"id": 5, "library": "openmpi", "files": {"allreduce_p4_2x2.prf": prf}}, tmp_path, 600)
    assert (job.layout.nodes, job.layout.ppn) == (2, 2) and job.key.endswith("-n2x2-v5")
    plain = prf.replace("#@pgmpi layout 2x2\n", "")
    assert validation_job(c, {"id": 6, "files": {"allreduce_p4.prf": plain}}, tmp_path, 600).layout.nodes == 1

    def launch(nodes: int, tuned_1024: float) -> str:
        hdr = (f"#@pgmpi_format=1\n#@nodes={nodes}\n#@ppn={4 // nodes}\n#@nprocs=4\n"
               f"#@placement={','.join(f'{k}:{4 // nodes}' for k in range(nodes))}\n"
               "test nrep msize runtime_sec algorithm\n")
        rows = "".join(f"MPI_Allreduce {i} {m} {t} {a}\n" for i in range(3) for m in (512, 1024, 4096)
                       for a, t in (("default", 1e-5), ("tuned", tuned_1024 if m == 1024 else 1e-5)))
        return hdr + rows
    on_2x2 = figures([("paired", launch(2, 5e-6))], 4)
    assert {f["layout"] for f in on_2x2} == {"2x2"}
    assert judge({"allreduce_p4_2x2.prf": prf}, on_2x2)["state"] == "passed"
    # figures of another layout of the same p say nothing about this profile: its range is missing
    on_1x4 = figures([("paired", launch(1, 5e-6))], 4)
    assert {f["layout"] for f in on_1x4} == {"1x4"}
    assert judge({"allreduce_p4_2x2.prf": prf}, on_1x4)["state"] != "passed"


def test_a_candidate_is_validated_under_the_native_file_it_was_measured_under(tmp_path):
    c = campaign()
    for m in ("openmpi", "mpich"):
        (tmp_path / m).mkdir()
        (tmp_path / m / f"native.{'rules' if m == 'openmpi' else 'json'}").write_text("x\n")
    mods = [m.model_copy(update={"native_file": str(tmp_path / m.mpi / f"native.{'rules' if m.mpi == 'openmpi' else 'json'}")})
            for m in c.modules]
    c = c.model_copy(update={"modules": mods})
    job = validation_job(c, {"id": 5, "library": "mpich", "files": {"allreduce_p2.prf": PRF}}, tmp_path, 600)
    for ln in job.launches:       # both arms: the file decides the default's algorithms and the mock-up's parts
        assert ln.env["MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"] == str(tmp_path / "mpich" / "native.json")
    inter = c.model_copy(update={"validation": c.validation.model_copy(update={"interleaved": True})})
    job = validation_job(inter, {"id": 6, "library": "openmpi", "files": {"allreduce_p2.prf": PRF}}, tmp_path, 600)
    assert all(ln.env == {"PGMPITUNE_PROFILE_DIR": str(tmp_path), "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                          "OMPI_MCA_coll_tuned_dynamic_rules_filename": str(tmp_path / "openmpi" / "native.rules")}
               for ln in job.launches)
