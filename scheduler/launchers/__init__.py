"""MPI families: how each one is launched. One file per family in this folder, each registers itself.

    from scheduler import launchers
    lib = launchers.library("intelmpi")     # Library: a row of deploy/mpi-libraries.tsv + its Family
    lib.family.mpirun_args(nodes=2, ppn=2, in_slurm=True)   # ["-ppn", "2"]
    lib.family.pass_env(["A", "B"])          # ["-genvlist", "A,B"] (Open MPI: ["-x", "A", "-x", "B"])
    launchers.identify("Intel(R) MPI Library 2021.13 for Linux* OS")   # ("intelmpi", "2021.13")
    launchers.family("openmpi").srun_plugin("5.0.11")                  # "pmix"

A family (Open MPI, MPICH, Intel MPI) is what decides the launcher's flags, how environment variables
reach the ranks, what running as root needs, which `srun --mpi=` plugin starts its ranks, how its
MPI_Get_library_version string names it, which native decision files it reads (pgmpi_formats.native
holds their readers and writers; what each file can hold: pgmpi_formats.native_file.FORMATS), and whether it
reads its own algorithm choice only at MPI_Init (native_at_init).  A *library* is one installed MPI (deploy/mpi-libraries.tsv: id,
family, version, prefix): openmpi (Debian 4.1.4) and openmpi5 (5.0.11) are both of the openmpi family.
MPICH-derived libraries share MPICH's ABI but not its launcher flags or variables: Intel MPI is a family.

A new family is one file here with a `@register` subclass of Family (CONTRIBUTING.md, "An MPI family");
nothing else in scheduler/ names a family, and a table row of an unregistered family is refused here.  What selecting a
library sets without a module (PATH, LD_LIBRARY_PATH, I_MPI_ROOT, ...) is the table reader's environment().
"""
from __future__ import annotations

import importlib
import os
import pkgutil
import re
import shlex
from dataclasses import dataclass

from pgmpi_formats import mpi_libraries

FAMILIES: dict[str, "Family"] = {}


def register(cls):
    """Class decorator of a family file: one instance enters the registry under cls.name."""
    if cls.name in FAMILIES:
        raise ValueError(f"MPI family {cls.name!r} registered twice ({cls.__module__})")
    FAMILIES[cls.name] = cls()
    return cls


class Family:
    name = "base"                 # the family id (deploy/mpi-libraries.tsv, column family)
    title = "MPI"
    # A family that pgmpi_formats.mpi_libraries.library_identity (the rule pgmpi-bench shares) does not name
    # may bring its own: MPI_Get_library_version's text of this family, the version in group 1.
    library_pattern: re.Pattern | None = None
    # the key of pgmpi_formats.native (FILE_VARS, file_env, discovery) for its native decision files;
    # None: no native files yet (the `native` engineer's vocabulary)
    native: str | None = None
    native_doc = ""               # where its native knobs are documented / read
    # True: the library reads its own algorithm choice once, at MPI_Init (Intel MPI's I_MPI_ADJUST_<COLL>), so a
    # forced algorithm is measured in an mpirun of its own (planner.intel_preset_launches) and a validation
    # round is one mpirun per arm (native_validation); False: it can be changed between calls of one mpirun
    native_at_init = False
    # What a module may not set next to a native decision file (native_validation refuses to measure): the
    # variables that choose an algorithm without the file, an extended regular expression over whole names
    # (planner.NATIVE_VARS covers them, so the validation's default arms run without them); a value among
    # `forces_off` (compared in lower case) or empty leaves the choice to the library
    forces_algorithm = ""
    forces_off: tuple[str, ...] = ()

    def mpirun_args(self, nodes: int, ppn: int, in_slurm: bool) -> list[str]:
        """Launcher options beyond `-np N`: the placement of ppn ranks per node, oversubscription."""
        return []

    def job_env(self, nodes: int, ppn: int, in_slurm: bool, as_root: bool, cores: int) -> dict[str, str]:
        """Variables every launch of a job needs (running as root, the progress mode)."""
        return {}

    def pass_env(self, names: list[str]) -> list[str]:
        """Launcher options that hand the variables `names` (set in the launching shell) to every rank."""
        raise NotImplementedError

    def srun_plugin(self, version: str) -> str | None:
        """The `srun --mpi=` plugin that starts this library's ranks directly; None: launch with its own
        mpirun inside the allocation (measured on deploy/slurm.sh and deploy/cluster.sh; scheduler/README.md)."""
        return None

    def identify(self, text: str) -> str | None:
        """The version in MPI_Get_library_version's text if it is this family's library, else None."""
        if self.library_pattern is not None:
            m = self.library_pattern.search(text)
            return m.group(1) if m else None
        name, version = mpi_libraries.library_identity(text)
        return version if name == self.name and version[:1].isdigit() else None


@dataclass(frozen=True)
class Library:
    """One installed MPI library: its row of deploy/mpi-libraries.tsv (pgmpi_formats.mpi_libraries) and its
    family."""
    row: mpi_libraries.MpiLibrary
    family: Family

    @property
    def id(self) -> str:
        return self.row.id

    @property
    def version(self) -> str:
        return self.row.version

    @property
    def prefix(self) -> str:
        return str(self.row.prefix)

    @property
    def mpirun(self) -> str:
        """Its launcher without a module: <prefix>/bin/mpirun (Debian's two: a prefix of shims)."""
        return str(self.row.mpirun)

    def setup_lines(self) -> list[str]:
        """Shell lines that select this library as its module would (the table reader's environment():
        its bin/ first on PATH -- Intel MPI's hydra finds its proxies by name --, lib/, I_MPI_ROOT, ...)."""
        env = self.row.environment({})
        out = []
        for k, v in env.items():
            if k in ("PATH", "LD_LIBRARY_PATH"):
                out.append(f"export {k}={shlex.quote(v)}${{{k}:+:${k}}}")
            else:
                out.append(f"export {k}={shlex.quote(v)}")
        return out


class UnknownLibrary(ValueError):
    pass


def _load() -> None:
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")


def family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise UnknownLibrary(f"unknown MPI family {name!r}; valid: {', '.join(sorted(FAMILIES))}") from None


def libraries() -> dict[str, Library]:
    """The site's MPI libraries (deploy/mpi-libraries.tsv) whose family is registered, by id."""
    out = {}
    for row in mpi_libraries.read_mpi_libraries():
        if row.family not in FAMILIES:
            raise mpi_libraries.MpiTableError(
                f"{row.id}: family {row.family!r} has no file in scheduler/launchers/ "
                f"(valid: {', '.join(sorted(FAMILIES))})")
        out[row.id] = Library(row, FAMILIES[row.family])
    return out


def library(lib_id: str) -> Library:
    libs = libraries()
    try:
        return libs[lib_id]
    except KeyError:
        raise UnknownLibrary(f"unknown MPI library {lib_id!r}; valid: {', '.join(libs)} "
                             "(deploy/mpi-libraries.tsv)") from None


def identify(text: str) -> tuple[str, str] | None:
    """(family, version) from MPI_Get_library_version's text; None when no family recognises it."""
    for fam in FAMILIES.values():
        v = fam.identify(text)
        if v is not None:
            return fam.name, v
    return None


def command(module, nodes: int, ppn: int, in_slurm: bool) -> str:
    """The launch command of a campaign module's ranks (argv before the program): its own mpirun with the
    family's flags, or `srun --mpi=<the family's plugin>` where the module says `launch: srun`."""
    lib = library(module.mpi)
    np = nodes * ppn
    if getattr(module, "launch", "mpirun") == "srun":
        if not in_slurm:
            raise UnknownLibrary(f"{module.key}: launch: srun needs the slurm backend")
        plugin = lib.family.srun_plugin(lib.version)
        if plugin is None:
            raise UnknownLibrary(f"{module.key}: launch: srun: {lib.family.title} has no srun plugin; "
                                 "use launch: mpirun")
        return shlex.join(["srun", "-n", str(np), f"--ntasks-per-node={ppn}", f"--mpi={plugin}"])
    cmd = shlex.split(module.mpirun) if module.mpirun else ["mpirun" if module.name else lib.mpirun]
    return shlex.join([*cmd, "-np", str(np), *lib.family.mpirun_args(nodes, ppn, in_slurm)])


def environment(module, nodes: int, ppn: int, in_slurm: bool) -> dict[str, str]:
    """What every launch of the module's library needs (running as root, progress mode, oversubscription)."""
    return library(module.mpi).family.job_env(nodes, ppn, in_slurm, os.geteuid() == 0, os.cpu_count() or 1)


def setup_lines(module) -> list[str]:
    """Shell lines that set the library's environment where no Lmod module does (a module without name)."""
    if module.name or module.mpirun:
        return []
    return library(module.mpi).setup_lines()


_load()
