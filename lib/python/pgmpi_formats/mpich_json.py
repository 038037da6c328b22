"""MPICH's JSON collective selection file (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE): the built-in tree read
from the installed library, a complete file generated from decisions, and the check that refuses an
incomplete one.

    lib = find_library()                         # libmpich.so path (ldconfig)
    base = builtin_tree(lib)                     # the MPIR-level tree compiled into the library
    known = algorithm_names(lib)                 # every MPIR_<Coll>_{intra,inter,allcomm}_<name> it knows
    tree = generate(decisions, base, known)      # decisions: ompi_rules.Decision, labels native:<name>
    problems = check_tree(tree, base, known)     # [] when complete; else the reasons
    text = dumps(tree); tree = loads(text, source)   # JsonSelectionError with the line

Why complete: a user file replaces the whole built-in tree, and a collective left out aborts every job
at its first call (`Assertion failed ... mpir_coll.c`; a missing bcast also kills Barrier, Scan and
Intercomm_create).  So the generated file is the library's own tree with branches put in front of it:

    "comm_type=intra": {"comm_size<=P": {"comm_size<P": <built-in>, "comm_size=any": <ours>}, ...,
                        "comm_size=any": <built-in>}

first match wins, so every other communicator size keeps the built-in choice.  For a reduction <ours>
sends non-commutative and user-defined operations to the built-in subtree first (the tree, unlike Open
MPI's rules file, can say so), then chooses by `avg_msg_size`.  A "default" decision is the built-in
subtree itself.  `avg_msg_size` in MPICH 4.0 is count x type size of one block -- the same as our
collectives.def size for the calls generate() accepts (allreduce, bcast, reduce: the whole message;
allgather, alltoall, gather, scatter: one block); the others are refused until measured.
"""
from __future__ import annotations

import copy
import json
import re
import subprocess
from pathlib import Path

from .native import parse_label

__all__ = ["JsonSelectionError", "find_library", "builtin_tree", "algorithm_names", "generate", "check_tree",
           "dumps", "loads", "MPICH_NAMES"]

# collectives.def key -> MPICH's collective name in the tree and in MPIR_<Name>_intra_<alg>
MPICH_NAMES = {"allreduce": ("allreduce", "Allreduce"), "bcast": ("bcast", "Bcast"), "reduce": ("reduce", "Reduce"),
               "allgather": ("allgather", "Allgather"), "alltoall": ("alltoall", "Alltoall"),
               "gather": ("gather", "Gather"), "scatter": ("scatter", "Scatter")}
_REDUCTIONS = {"allreduce", "reduce"}


class JsonSelectionError(ValueError):
    def __init__(self, source: str, line: int | None, message: str):
        self.source, self.line, self.message = source, line, message
        super().__init__(f"{source}:{line}: {message}" if line else f"{source}: {message}")


def find_library() -> Path:
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        m = re.match(r"\s*libmpich\.so\.\d+ .*=> (\S+)$", line)
        if m:
            return Path(m.group(1))
    raise FileNotFoundError("libmpich.so.* is not in the linker cache (ldconfig -p); pass the library's path")


def _embedded_trees(lib: Path) -> list[str]:
    data = Path(lib).read_bytes()
    out = []
    for m in re.finditer(rb'\{"collective=', data):
        end = data.find(b"\0", m.start())
        out.append(data[m.start():end].decode("utf-8", "replace"))
    return out


def builtin_tree(lib: Path | None = None) -> dict:
    """The MPIR-level selection tree compiled into the library (the one a user file replaces)."""
    lib = lib or find_library()
    for text in _embedded_trees(lib):
        if '"algorithm=MPIR_' in text:
            return json.loads(text)
    raise JsonSelectionError(str(lib), None, "no built-in MPIR selection tree found in the library")


def algorithm_names(lib: Path | None = None) -> frozenset[str]:
    data = Path(lib or find_library()).read_bytes()
    return frozenset(n.decode() for n in re.findall(rb"MPIR_[A-Z][a-z_]*?_(?:intra|inter|allcomm)_[a-z_]+", data))


def _leaf(key: str, label: str, known: frozenset[str]) -> dict:
    v = parse_label(label)
    if v is None:
        raise ValueError(f"{label!r} is neither 'default' nor native:<name>")
    if v.seg is not None:
        raise ValueError(f"{label}: MPICH has no segment size for blocking algorithms")
    cap = MPICH_NAMES[key][1]
    for name in (f"MPIR_{cap}_intra_{v.name}", f"MPIR_{cap}_allcomm_{v.name}"):
        if name in known:
            return {f"algorithm={name}": {}}
    raise ValueError(f"{key}: this MPICH has no algorithm MPIR_{cap}_intra_{v.name} (nor _allcomm_)")


def generate(decisions, base: dict, known: frozenset[str]) -> dict:
    """The built-in tree with the decisions in front (see the module docstring)."""
    tree = copy.deepcopy(base)
    by: dict[str, dict[int, list]] = {}
    for d in decisions:
        if d.key not in MPICH_NAMES:
            raise ValueError(f"{d.key}: MPICH JSON generation covers {', '.join(MPICH_NAMES)} (message-size "
                             "definitions of the others not yet checked)")
        by.setdefault(d.key, {}).setdefault(d.nprocs, []).append(d)
    for key, per_p in by.items():
        ckey = f"collective={MPICH_NAMES[key][0]}"
        if ckey not in tree or "comm_type=intra" not in tree[ckey]:
            raise ValueError(f"the built-in tree has no {ckey} / comm_type=intra")
        orig = tree[ckey]["comm_type=intra"]
        intra = {}
        for p in sorted(per_p):
            decs = sorted(per_p[p], key=lambda x: x.nbytes)
            chain: list[tuple[int | None, dict]] = []
            for i, d in enumerate(decs):
                leaf = copy.deepcopy(orig) if d.label == "default" else _leaf(key, d.label, known)
                hi = decs[i + 1].nbytes - 1 if i + 1 < len(decs) else None
                if chain and chain[-1][1] == leaf:
                    chain[-1] = (hi, leaf)
                else:
                    chain.append((hi, leaf))
            ours: dict = {}
            if key in _REDUCTIONS:
                ours["is_commutative=no"] = copy.deepcopy(orig)
                ours["is_op_built_in=no"] = copy.deepcopy(orig)
            for hi, leaf in chain:
                ours["avg_msg_size=any" if hi is None else f"avg_msg_size<={hi}"] = leaf
            intra[f"comm_size<={p}"] = {f"comm_size<{p}": copy.deepcopy(orig), "comm_size=any": ours}
        intra["comm_size=any"] = copy.deepcopy(orig)
        tree[ckey]["comm_type=intra"] = intra
    return tree


def _leaves(node: dict, path: str):
    for k, v in node.items():
        here = f"{path}/{k}"
        if k.startswith(("algorithm=", "composition=")):
            yield here, k.split("=", 1)[1], v
        elif not isinstance(v, dict) or not v:
            yield here, None, v
        else:
            yield from _leaves(v, here)


def check_tree(tree, base: dict, known: frozenset[str]) -> list[str]:
    """Reasons the file must not be published ([] = complete): a collective or a communicator branch of
    the built-in tree left out, a branch that ends without an algorithm, an algorithm the library does
    not know."""
    if not isinstance(tree, dict):
        return ["the file is not a JSON object"]
    problems = []
    for ckey, sub in base.items():
        if ckey not in tree:
            extra = " (Barrier, Scan and Intercomm_create use it inside)" if ckey == "collective=bcast" else ""
            problems.append(f"{ckey} is missing: MPICH aborts every job at its first {ckey.split('=')[1]}{extra}")
            continue
        for branch in sub:
            if branch.startswith("comm_type=") and branch not in tree[ckey]:
                problems.append(f"{ckey}/{branch} is missing: MPICH aborts at the first such call")
    for path, alg, v in _leaves(tree, ""):
        if alg is None:
            problems.append(f"{path} ends without an algorithm")
        elif alg.startswith("MPIR_") and alg not in known:
            problems.append(f"{path}: this MPICH has no algorithm {alg}")
        elif v:
            problems.append(f"{path}: an algorithm leaf must be {{}}")
    return problems


def dumps(tree: dict) -> str:
    return json.dumps(tree, indent=1) + "\n"


def loads(text: str, source: str = "<json>") -> dict:
    """Reads a selection file; a JSON error or duplicate keys (MPICH keeps one silently) name the line."""
    def no_dupes(pairs):
        keys = [k for k, _ in pairs]
        dup = {k for k in keys if keys.count(k) > 1}
        if dup:
            raise JsonSelectionError(source, None, f"duplicate key(s) {sorted(dup)}: MPICH would keep only one")
        return dict(pairs)
    try:
        obj = json.loads(text, object_pairs_hook=no_dupes)
    except json.JSONDecodeError as e:
        raise JsonSelectionError(source, e.lineno, f"not valid JSON: {e.msg} (column {e.colno})") from None
    if not isinstance(obj, dict) or not obj:
        raise JsonSelectionError(source, 1, "a selection file is a non-empty JSON object")
    return obj
