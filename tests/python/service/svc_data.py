"""Test data of the service tests (importable by tests and benchmarks)."""
from __future__ import annotations


def results_file(machine: str = "m1", library: str = "openmpi", version: str = "4.1.4", nprocs: int = 2,
                 nrep: int = 5, sizes=(8, 1024), calls=(("MPI_Allreduce", "default"),
                                                        ("MPI_Allreduce", "allreduce_as_reduce_bcast")),
                 campaign: str = "", base: float = 1e-5, barrier: bool = True) -> str:
    """A raw-results file in our ReproMPI format (docs/contracts.md, 2) with predictable timings."""
    lines = ["#@pgmpi_format=1", f"#@machine={machine}", f"#@mpi_library={library}", f"#@mpi_version={version}",
             f"#@module={library}/{version}", "#@nodes=1", f"#@ppn={nprocs}", f"#@nprocs={nprocs}",
             "#@mpirun_index=0", "#@slurm_job_id=", f"#@campaign={campaign}", "#@clock=MPI_Wtime",
             "test nrep msize runtime_sec algorithm"]
    for ci, (call, alg) in enumerate(calls):
        for s in sizes:
            for r in range(nrep):
                lines.append(f"{call} {r} {s} {base * (1 + ci) + r * 1e-7 + s * 1e-9:.10f} {alg}")
            if barrier and ci == 0:
                for r in range(nrep):
                    lines.append(f"MPI_Barrier {r} {s} {2e-6 + r * 1e-8:.10f} default")
    lines.append(f"#@pgmpi config size_msg_buffer_bytes 1048576")
    return "\n".join(lines) + "\n"
