"""MPICH (4.x, 5.x; hydra's mpirun): flags, variables, srun plugin, identity."""
from __future__ import annotations


from . import Family, register


@register
class MPICH(Family):
    name = "mpich"
    title = "MPICH"
    native = "mpich"
    native_doc = ("JSON selection file (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE; pgmpi_formats/mpich_json.py) "
                  "and per-collective MPIR_CVAR_<COLL>_INTRA_ALGORITHM")
    # a CVAR overrides the JSON file: that collective never runs the file's choice (each CVAR under the three
    # prefixes MPICH 4.0.2 reads)
    forces_algorithm = r"(MPIR_CVAR|MPIR_PARAM|MPICH)_[A-Z_]+_(INTRA|INTER)_ALGORITHM"
    forces_off = ("auto",)

    def mpirun_args(self, nodes, ppn, in_slurm):
        return ["-ppn", str(ppn)] if nodes > 1 else []

    def pass_env(self, names):
        return ["-genvlist", ",".join(names)] if names else []

    def srun_plugin(self, version):
        # 4.0.2 and 5.0.2: pmi2; with pmix/none 4.0.2 starts singletons "rank 0 of 1" without an error,
        # 5.0.2 aborts in MPI_Init
        return "pmi2"
