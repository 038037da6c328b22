"""Validation jobs for candidate profiles: which sizes are measured, how launches are built, the figures."""
from __future__ import annotations

from pathlib import Path

from scheduler.campaign import parse_campaign
from scheduler.validation import figures, parse_prf, redirected_sizes, validation_job

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
    assert figs == [{"collective": "allreduce", "msize": 1024, "nprocs": 2, "default_time": 5e-6,
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
