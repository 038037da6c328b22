"""The MPI library's own decision file written from the analysis's decisions: the one writer that
`pgmpi analyze native-files` and `pgmpi explain` share, so both hash the same text (the second pass matches
runs to it by pgmpi-bench's #@native_file_fnv1a64, native.file_digest).

    name, text = render("openmpi", decisions)     # ("native.rules", Open MPI's classic rules file)
    name, text = render("mpich", decisions)       # ("native.json", complete: from MPICH's built-in tree)
"""
from __future__ import annotations

from . import mpich_json, native, ompi_rules

NAMES = {"openmpi": "native.rules", "mpich": "native.json"}


def render(library: str, decisions, discovery: native.Discovery | None = None,
           comment: str = "pgmpi analyze native-files") -> tuple[str, str]:
    """(file name, text); ValueError when the library has no such file or the JSON would be incomplete
    (MPICH aborts every job on a selection file that misses a collective)."""
    if library == "openmpi":
        return NAMES[library], ompi_rules.write_rules(decisions, discovery or native.discover("openmpi"),
                                                      comment=comment)
    if library == "mpich":
        lib = mpich_json.find_library()
        base, known = mpich_json.builtin_tree(lib), mpich_json.algorithm_names(lib)
        tree = mpich_json.generate(decisions, base, known)
        problems = mpich_json.check_tree(tree, base, known)
        if problems:
            raise ValueError("generated JSON refused: " + "; ".join(problems))
        return NAMES[library], mpich_json.dumps(tree)
    raise ValueError(f"no decision file for {library!r}; valid: {', '.join(NAMES)}")
