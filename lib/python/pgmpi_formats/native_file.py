"""The MPI library's own decision file written from the analysis's decisions: the one writer that
`pgmpi analyze native-files` and `pgmpi explain` share, so both hash the same text (the second pass matches
runs to it by pgmpi-bench's #@native_file_fnv1a64, native.file_digest); and the one check of such a file
against the exact library version it is for.

    name, text = render("openmpi", decisions)     # ("native.rules", Open MPI's classic rules file)
    name, text = render("mpich", decisions, version="5.0.2")   # ("native.json", from that MPICH's own tree)
    t = mpich_target("4.0.2")                     # MpichTarget(lib, version, base, known); FileNotFoundError
    problems = t.check(tree)                      # mpich_json.check_tree with that version's table
    left = left_to_library("intelmpi", decisions) # {collective: why} the file cannot hold exactly (none for
                                                  # openmpi / mpich: a range there leaves the rest to the default)
    gap_refuses_collective("intelmpi")            # True: a failed gap refuses the collective's choices
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import impi_adjust, mpich_json, native, ompi_rules


@dataclass(frozen=True)
class FileFormat:
    """What a library family's own decision file is, and what it can hold.  trim: None when a rule's ranges
    leave every other size to the library's default (Open MPI's rules file, MPICH's JSON); else the library
    changes its choice outside the ranges of a set variable (Intel MPI 2021.13's I_MPI_ADJUST_<COLL>), so a
    collective can be written only where a native choice is decided at every size measured (one that won, or
    where the default won, one measured as fast: native_decision.fill_candidate), and trim(decisions) ->
    (kept, {collective: why it is left to the library}) says which."""
    name: str
    reader: str                       # the strict reader render() checks the written text with
    trim: Callable | None = None

    @property
    def gapless(self) -> bool:
        return self.trim is not None


# one entry per family with a native decision file (scheduler/launchers/ names the families)
FORMATS = {"openmpi": FileFormat("native.rules", "ompi_rules.parse_rules"),
           "mpich": FileFormat("native.json", "mpich_json.check_tree"),
           "intelmpi": FileFormat(impi_adjust.NAME, "impi_adjust.parse", trim=impi_adjust.trim)}
NAMES = {lib: f.name for lib, f in FORMATS.items()}


def left_to_library(library: str, decisions) -> dict[str, str]:
    """{collective: why} of the decisions the library's file cannot hold exactly: each such collective gets no
    setting at all (the library's own choice everywhere); {} for a format whose ranges leave gaps to the default."""
    f = FORMATS[library]
    return f.trim(decisions)[1] if f.gapless else {}


def gap_refuses_collective(library: str) -> bool:
    """A validation failure at a size the file leaves to the library (a gap) is the file's doing: with a gapless
    format the set variable changed the choice there, so the collective's native choices are refused
    (service/analysis/native_decision.validation_refusals); elsewhere the default there is the library's own."""
    return FORMATS[library].gapless


@dataclass(frozen=True)
class MpichTarget:
    lib: Path
    version: str
    base: dict
    known: frozenset

    def check(self, tree) -> list[str]:
        return mpich_json.check_tree(tree, self.base, self.known, self.version)


def _prefixes(family: str) -> list[Path | None]:
    """Install prefixes of the family's libraries (deploy/mpi-libraries.tsv when this checkout has its reader),
    then the system's own (None: Debian's, through the linker cache)."""
    try:
        from . import mpi_libraries            # the table of the libraries the site installs
    except ImportError:
        return [None]
    return [lib.prefix for lib in mpi_libraries.read_mpi_libraries() if lib.family == family] + [None]


@functools.lru_cache(maxsize=8)
def mpich_target(version: str | None = None) -> MpichTarget:
    """The installed MPICH of that exact version (None: the system's); FileNotFoundError when none is."""
    seen = []
    for prefix in _prefixes("mpich"):
        try:
            lib = mpich_json.find_library(prefix)
        except FileNotFoundError:
            continue
        v = mpich_json.library_version(lib)
        seen.append(v)
        if version is None or v == version:
            return MpichTarget(lib, v, mpich_json.builtin_tree(lib), mpich_json.algorithm_names(lib))
    raise FileNotFoundError(f"no MPICH {version} installed here to check the file against (installed: "
                            f"{', '.join(sorted(set(seen))) or 'none'})")


@functools.lru_cache(maxsize=4)
def ompi_target(version: str | None = None) -> native.Discovery:
    """What the installed Open MPI of that exact version offers (its own ompi_info, selected by the table's
    environment, and checked to answer as that version; None: the system's, whatever `ompi_info` is on PATH)."""
    if version is None:
        return native.discover("openmpi")
    from . import mpi_libraries
    seen = []
    for r in mpi_libraries.read_mpi_libraries():
        if r.family == "openmpi" and r.installed:
            seen.append(r.version)
            if r.version == version:
                env = r.environment()
                env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
                return native.discover("openmpi", env=env, version=version)
    raise FileNotFoundError(f"no Open MPI {version} installed here to check the file against (installed: "
                            f"{', '.join(seen) or 'none'})")


@functools.lru_cache(maxsize=4)
def intel_target(version: str | None = None):
    """The installed Intel MPI whose version starts with `version` ("2021.13" matches 2021.13.1) as
    impi_adjust.Discovery; FileNotFoundError when none is."""
    from . import mpi_libraries
    rows = [r for r in mpi_libraries.read_mpi_libraries() if r.family == "intelmpi" and r.installed
            and (version is None or r.version.startswith(version) or version.startswith(r.version))]
    if not rows:
        raise FileNotFoundError(f"no Intel MPI {version} installed here to check the file against")
    return impi_adjust.discover(rows[0].environment())


def render(library: str, decisions, discovery: native.Discovery | None = None,
           comment: str = "pgmpi analyze native-files", version: str | None = None) -> tuple[str, str]:
    """(file name, text); ValueError when the library has no such file or the JSON would not be read and
    evaluated by that MPICH version (MPICH aborts every job on a selection file it cannot evaluate)."""
    if library == "openmpi":
        return NAMES[library], ompi_rules.write_rules(decisions, discovery or ompi_target(version), comment=comment)
    if library == "mpich":
        t = mpich_target(version)
        tree = mpich_json.generate(decisions, t.base, t.known)
        problems = t.check(tree)
        if problems:
            raise ValueError(f"generated JSON refused for MPICH {t.version}: " + "; ".join(problems))
        return NAMES[library], mpich_json.dumps(tree)
    if library == "intelmpi":
        return NAMES[library], impi_adjust.write(decisions, intel_target(version), comment=comment)
    raise ValueError(f"no decision file for {library!r}; valid: {', '.join(NAMES)}")
