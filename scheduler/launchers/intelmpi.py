"""Intel MPI (2021.x; MPICH's ABI, its own hydra): flags, variables, srun plugin, identity, environment."""
from __future__ import annotations


from . import Family, register


@register
class IntelMPI(Family):
    name = "intelmpi"
    title = "Intel MPI"
    native = None
    native_at_init = True     # I_MPI_ADJUST_<COLL> is read at MPI_Init: one mpirun per preset
    native_doc = ("I_MPI_ADJUST_<COLL> (presets per message-size range; `impi_info -v I_MPI_ADJUST_ALLREDUCE`), "
                  "read and written by pgmpi_formats.impi_adjust as native.impi, validated by "
                  "scheduler/native_validation.py; I_MPI_TUNING_BIN / mpitune_fast's output is not read")
    # a preset a module sets reaches a job of any size; Intel's own tuning file or autotuner is made to replace
    # the default the file's ranges leave (the validation's default arm runs without them, planner.NATIVE_VARS)
    forces_algorithm = r"I_MPI_ADJUST_[A-Z0-9_]+|I_MPI_TUNING(_BIN|_MODE)?"
    forces_off = ("none",)

    def mpirun_args(self, nodes, ppn, in_slurm):
        return ["-ppn", str(ppn)] if nodes > 1 else []

    def pass_env(self, names):
        return ["-genvlist", ",".join(names)] if names else []

    def srun_plugin(self, version):
        return "pmi2"     # 2021.13: pmi2 and pmix both start it under srun (measured, single-node Slurm)
