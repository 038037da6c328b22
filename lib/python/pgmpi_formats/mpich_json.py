"""MPICH's JSON collective selection file (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE): the built-in tree read
from the installed library, a complete file generated from decisions, and the check that refuses an
incomplete one.

    lib = find_library(prefix)                   # libmpich.so (ldconfig) or <prefix>/lib/libmpi.so.12
    version = library_version(lib)               # "4.0.2", read from the library itself
    base = builtin_tree(lib)                     # the MPIR-level tree compiled into the library
    known = algorithm_names(lib)                 # every MPIR_<Coll>_{intra,inter,allcomm}_<name> it knows
    tree = generate(decisions, base, known)      # decisions: ompi_rules.Decision, labels native:<name>
    problems = check_tree(tree, base, known, version)   # [] when that version reads and evaluates it all
    text = dumps(tree); tree = loads(text, source)   # JsonSelectionError with the line

Why complete: a user file replaces the whole built-in tree, and a collective left out aborts every job
at its first call (`Assertion failed ... mpir_coll.c`; a missing bcast also kills Barrier, Scan and
Intercomm_create).  So the generated file is the library's own tree with branches put in front of it:

    "comm_type=intra": {"comm_size<=P": {"comm_size<P": <built-in>, "comm_size=any": <ours>}, ...,
                        "comm_size=any": <built-in>}

first match wins, so every other communicator size keeps the built-in choice.  For a reduction <ours>
sends non-commutative and user-defined operations to the built-in subtree first (the tree, unlike Open
MPI's rules file, can say so), alltoall sends MPI_IN_PLACE calls there, then <ours> chooses by message size.
A "default" decision is the built-in subtree itself.

Which message-size operator: the one MPICH's selection code evaluates for that collective (SIZE_OPERATOR,
from CSEL below).  `avg_msg_size` exists only for allreduce, bcast, reduce and alltoall (count x type size,
alltoall: one block -- our collectives.def size); allgather has none -- MPICH asserts (csel.c
get_avg_msgsize: "avg_msg_size not defined", every MPI_Allgather aborts, and so does
MPI_Intercomm_create, which calls it) -- so allgather uses `total_msg_size` (type size x count x
communicator size: our block size x p, exact under a `comm_size<=p / not <p` branch).  gather and scatter
get one algorithm for all sizes or none: their `total_msg_size` is count x communicator size, no type
size, in 4.0.2 and 5.0 (not bytes).

The strict reader (check_tree) accepts a file only when the target version's selection code would read
every key and could evaluate every operator where it stands: CSEL, written from src/mpi/coll/src/csel.c
of MPICH v4.0.2 and v5.0.1 (whose csel.c the 5.0.x branch, which 5.0.2 is cut from, leaves unchanged).
"""
from __future__ import annotations

import copy
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .native import parse_label

__all__ = ["JsonSelectionError", "find_library", "library_version", "builtin_tree", "algorithm_names", "generate",
           "check_tree", "series_of", "dumps", "loads", "MPICH_NAMES", "SIZE_OPERATOR", "CSEL"]

# collectives.def key -> MPICH's collective name in the tree and in MPIR_<Name>_intra_<alg>
MPICH_NAMES = {"allreduce": ("allreduce", "Allreduce"), "bcast": ("bcast", "Bcast"), "reduce": ("reduce", "Reduce"),
               "allgather": ("allgather", "Allgather"), "alltoall": ("alltoall", "Alltoall"),
               "gather": ("gather", "Gather"), "scatter": ("scatter", "Scatter")}
_REDUCTIONS = {"allreduce", "reduce"}
# restrictions of the blocking intracommunicator algorithms (src/mpi/coll/coll_algorithms.txt, v4.0.2 and
# v5.0.1): the forced CVAR path checks them and falls back; a selection file goes straight to the algorithm,
# which asserts (reduce_scatter_gather at count < pof2: "Assertion failed ... count >= pof2").  generate()
# routes calls that break one to the built-in subtree, or refuses what it cannot route.
RESTRICTIONS = {
    ("allreduce", "smp"): {"commutative", "parent-comm"}, ("reduce", "smp"): {"commutative", "parent-comm"},
    ("bcast", "smp"): {"parent-comm"},
    ("allreduce", "reduce_scatter_allgather"): {"size-ge-pof2", "builtin-op"},
    ("reduce", "reduce_scatter_gather"): {"size-ge-pof2", "builtin-op"},
    ("allreduce", "recursive_multiplying"): {"commutative"}, ("allreduce", "ring"): {"commutative"},
    ("allreduce", "k_reduce_scatter_allgather"): {"commutative"},
    ("allgather", "recursive_doubling"): {"power-of-two"},
    ("alltoall", "brucks"): {"noinplace"}, ("alltoall", "k_brucks"): {"noinplace"},
    ("alltoall", "pairwise"): {"noinplace"}, ("alltoall", "scattered"): {"noinplace"},
    ("alltoall", "pairwise_sendrecv_replace"): {"inplace"},
}
# Algorithms whose parameters MPICH reads from the algorithm object of the selection file (csel_container.c,
# parse_container_params: k=, tree_type=, chunk_size=, single_phase_recv=, ...); a parameter left out is 0, and
# MPICH 5.0.2's Allreduce under {"algorithm=MPIR_Allreduce_intra_recexch": {}} never returned (64 KiB, 2 ranks,
# measured 2026-11-26; forced by MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=recexch it ran in 55 us). A file may name
# one only with the parameters the library's own tree gives it; else the choice is not written.
PARAMETERISED = frozenset({
    "MPIR_Bcast_intra_tree", "MPIR_Bcast_intra_pipelined_tree",
    "MPIR_Allreduce_intra_recursive_multiplying", "MPIR_Allreduce_intra_tree", "MPIR_Allreduce_intra_recexch",
    "MPIR_Allreduce_intra_k_reduce_scatter_allgather", "MPIR_Allreduce_intra_ccl",
    "MPIR_Allgather_intra_k_brucks", "MPIR_Allgather_intra_recexch_doubling", "MPIR_Allgather_intra_recexch_halving",
    "MPIR_Alltoall_intra_k_brucks", "MPIR_Barrier_intra_k_dissemination", "MPIR_Barrier_intra_recexch"})
# the message-size operator MPICH evaluates for the collective (module doc); None: no size rule can be written
SIZE_OPERATOR = {"allreduce": "avg_msg_size", "bcast": "avg_msg_size", "reduce": "avg_msg_size",
                 "alltoall": "avg_msg_size", "allgather": "total_msg_size", "gather": None, "scatter": None}


class JsonSelectionError(ValueError):
    def __init__(self, source: str, line: int | None, message: str):
        self.source, self.line, self.message = source, line, message
        super().__init__(f"{source}:{line}: {message}" if line else f"{source}: {message}")


def find_library(prefix: str | Path | None = None) -> Path:
    """The MPICH library of an install prefix (<prefix>/lib/libmpi.so.12, the registry's MPICH 5), else
    Debian's libmpich from the linker cache (a prefix that is only a shim of /usr, or none)."""
    if prefix is not None:
        for name in ("libmpi.so.12", "libmpich.so.12"):
            cand = Path(prefix) / "lib" / name
            if cand.is_file():
                return cand.resolve()
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        m = re.match(r"\s*libmpich\.so\.\d+ .*=> (\S+)$", line)
        if m:
            return Path(m.group(1))
    raise FileNotFoundError("libmpich.so.* is not in the linker cache (ldconfig -p); pass the library's path")


def library_version(lib: Path) -> str:
    """MPICH's version as compiled into the library (MPICH_VERSION follows MPICH_VERSION_DATE there, the
    pair MPI_Get_library_version prints)."""
    m = re.search(rb"\x00(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} [ \d]\d [\d:]{8} [A-Z]{2,5} \d{4}\x00+"
                  rb"(\d+\.\d+(?:\.\d+)?[a-z0-9]*)\x00", Path(lib).read_bytes())
    if not m:
        raise JsonSelectionError(str(lib), None, "no MPICH version string found in the library")
    return m.group(1).decode()


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


def _leaf(key: str, label: str, known: frozenset[str], params: dict | None = None) -> dict:
    """The algorithm object of a choice; `params`: the library's own tree's parameters per algorithm key."""
    v = parse_label(label)
    if v is None:
        raise ValueError(f"{label!r} is neither 'default' nor native:<name>")
    if v.seg is not None:
        raise ValueError(f"{label}: MPICH has no segment size for blocking algorithms")
    cap = MPICH_NAMES[key][1]
    for name in (f"MPIR_{cap}_intra_{v.name}", f"MPIR_{cap}_allcomm_{v.name}"):
        if name in known:
            akey = f"algorithm={name}"
            if name in PARAMETERISED:
                given = (params or {}).get(akey)
                if not given:
                    raise ValueError(f"{key} {v.name}: MPICH reads {name}'s parameters (k=, ...) from the file and "
                                     "the library's own tree gives none to copy; left out they are 0 (the call "
                                     "may never return): not written, the library's default stays")
                return {akey: copy.deepcopy(given)}
            return {akey: {}}
    raise ValueError(f"{key}: this MPICH has no algorithm MPIR_{cap}_intra_{v.name} (nor _allcomm_)")


def _restrictions(key: str, label: str, p: int) -> set[str]:
    """The restrictions a choice needs guarded; ValueError for those a file cannot route around."""
    v = parse_label(label)
    need = RESTRICTIONS.get((key, v.name), set()) if v else set()
    if "parent-comm" in need:
        raise ValueError(f"{key} {v.name}: MPICH runs it only on a node-aware parent communicator; a selection "
                         "file would call it on any communicator of that size")
    if "inplace" in need:
        raise ValueError(f"{key} {v.name}: MPICH's algorithm for MPI_IN_PLACE calls only")
    if "power-of-two" in need and p & (p - 1):
        raise ValueError(f"{key} {v.name}: needs a power-of-two communicator size, not {p}")
    return need


def generate(decisions, base: dict, known: frozenset[str]) -> dict:
    """The built-in tree with the decisions in front (see the module docstring)."""
    tree = copy.deepcopy(base)
    params = _params(base, {})
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
                leaf = copy.deepcopy(orig) if d.label == "default" else _leaf(key, d.label, known, params)
                hi = decs[i + 1].nbytes - 1 if i + 1 < len(decs) else None
                if chain and chain[-1][1] == leaf:
                    chain[-1] = (hi, leaf)
                else:
                    chain.append((hi, leaf))
            ours: dict = {}
            if key in _REDUCTIONS:
                ours["is_commutative=no"] = copy.deepcopy(orig)
                ours["is_op_built_in=no"] = copy.deepcopy(orig)
            need = set().union(*(_restrictions(key, d.label, p) for d in decs))
            if key == "alltoall":       # MPI_IN_PLACE: sendcount and sendtype are not the message
                ours["is_sendbuf_inplace=yes"] = copy.deepcopy(orig)
            if "size-ge-pof2" in need:  # count below the power of two under p: the library's own choice
                ours["count<pow2"] = copy.deepcopy(orig)
            op = SIZE_OPERATOR[key]
            if op is None and len(chain) > 1:
                raise ValueError(f"{key}: MPICH's total_msg_size for {key} is count x communicator size, not "
                                 "bytes (csel.c, 4.0.2 and 5.0): one algorithm for all sizes or none")
            # allgather: MPICH's total_msg_size is type size x count x communicator size, ours one block
            scale = p if op == "total_msg_size" else 1
            for hi, leaf in chain:
                ours[f"{op or 'total_msg_size'}=any" if hi is None else f"{op}<={(hi + 1) * scale - 1}"] = leaf
            intra[f"comm_size<={p}"] = {f"comm_size<{p}": copy.deepcopy(orig), "comm_size=any": ours}
        intra["comm_size=any"] = copy.deepcopy(orig)
        tree[ckey]["comm_type=intra"] = intra
    return tree


# ------------------------------------------------------------------ what each version's csel.c evaluates
# Written from src/mpi/coll/src/csel.c at MPICH v4.0.2 and v5.0.1 (the 5.0.x branch, 5.0.2's, keeps it).

# the collectives parse_json_tree knows ("collective=<name>"; anything else: "unknown key", MPIR_Assert)
_COLLECTIVES = frozenset(
    "allgather allgatherv allreduce alltoall alltoallv alltoallw barrier bcast exscan gather gatherv "
    "iallgather iallgatherv iallreduce ialltoall ialltoallv ialltoallw ibarrier ibcast iexscan igather "
    "igatherv ineighbor_allgather ineighbor_allgatherv ineighbor_alltoall ineighbor_alltoallv "
    "ineighbor_alltoallw ireduce ireduce_scatter ireduce_scatter_block iscan iscatter iscatterv "
    "neighbor_allgather neighbor_allgatherv neighbor_alltoall neighbor_alltoallv neighbor_alltoallw reduce "
    "reduce_scatter reduce_scatter_block scan scatter scatterv".split())

# operator -> the collectives its getter handles (get_avg_msgsize, get_total_msgsize, get_count,
# is_sendbuf_inplace, is_commutative, is_op_built_in, is_block_regular); any other collective that reaches
# the operator aborts (MPIR_Assert(0)).  The same in v4.0.2 and v5.0.1.
_EVALUATED = {
    "avg_msg_size": frozenset("allreduce iallreduce bcast ibcast reduce ireduce alltoall ialltoall".split()),
    "total_msg_size": frozenset(
        "allreduce bcast reduce alltoall alltoallv alltoallw allgather allgatherv gather scatter reduce_scatter "
        "reduce_scatter_block iallreduce ibcast ireduce ialltoall ialltoallv ialltoallw iallgather iallgatherv "
        "ireduce_scatter ireduce_scatter_block igather iscatter".split()),
    "count": frozenset("bcast allreduce iallreduce reduce ireduce allgather allgatherv reduce_scatter "
                       "reduce_scatter_block iallgather iallgatherv ireduce_scatter ireduce_scatter_block".split()),
    "is_sendbuf_inplace": frozenset("alltoall ialltoall alltoallv ialltoallv alltoallw ialltoallw".split()),
    "is_commutative": frozenset("allreduce iallreduce reduce ireduce reduce_scatter ireduce_scatter "
                                "reduce_scatter_block ireduce_scatter_block".split()),
    "is_op_built_in": frozenset("allreduce iallreduce reduce ireduce".split()),
    "is_block_regular": frozenset("reduce_scatter ireduce_scatter".split()),
}
_YES_NO = ("is_multi_threaded", "is_commutative", "is_sendbuf_inplace", "is_op_built_in", "is_block_regular",
           "is_node_consecutive")
_NUMBER = re.compile(r"^(comm_size|count|avg_msg_size|total_msg_size|comm_avg_ppn)(<=|<)([0-9]+)$")
_INT_MAX = 2 ** 31 - 1      # the values are read with atoi into an int


@dataclass(frozen=True)
class Csel:
    """One release series' key grammar (parse_json_tree) and node rules (validate_tree, prune_tree)."""
    series: str
    any_keys: frozenset          # keys that are an "anything" operator: must be the last of their object
    any_suffix: bool             # 5.0: every "any" or "<x>=any" key is the one ANY operator
    numbers: frozenset           # "<op><cmp>" forms with a number it parses
    hierarchy: frozenset         # comm_hierarchy=<x> values of the boolean hierarchy operator


CSEL = {
    "4.0": Csel("4.0", frozenset({"comm_size=any", "count=any", "avg_msg_size=any", "total_msg_size=any"}), False,
                frozenset({"comm_size<=", "comm_size<", "count<=", "avg_msg_size<=", "avg_msg_size<",
                           "total_msg_size<=", "total_msg_size<", "comm_avg_ppn<="}),
                frozenset({"parent", "node_roots", "node", "flat", "any"})),
    "5.0": Csel("5.0", frozenset(), True,
                frozenset({"comm_size<=", "comm_size<", "count<=", "avg_msg_size<=", "avg_msg_size<",
                           "total_msg_size<=", "total_msg_size<", "comm_avg_ppn<=", "comm_avg_ppn<"}),
                frozenset({"parent", "node_roots", "node", "flat"})),
}


def series_of(version: str) -> Csel:
    """The CSEL table of an MPICH version ("4.0.2" -> 4.0); ValueError for a series nobody has read."""
    m = re.match(r"^(\d+)\.(\d+)", version or "")
    key = f"{m.group(1)}.{m.group(2)}" if m else version
    if key not in CSEL:
        raise ValueError(f"MPICH {version or '(unknown version)'}: no selection-code table for it (valid: "
                         f"{', '.join(sorted(CSEL))}); read that version's src/mpi/coll/src/csel.c first")
    return CSEL[key]


def _operator(key: str, cs: Csel) -> tuple[str, str] | None:
    """(operator, kind) as that version parses the key; kind: any | bool | cmp (a comparison: its failure
    branch must exist); None: "unknown key" (MPICH asserts)."""
    k = key.replace(" ", "")                 # MPL_strdup_no_spaces
    name, _, val = k.partition("=")
    if k in ("comm_type=intra", "comm_type=inter"):
        return "comm_type", "bool"
    if name == "collective" and val in _COLLECTIVES:
        return "collective", "bool"
    if name in _YES_NO and val in ("yes", "no"):
        return name, "bool"
    if k in ("comm_size=pow2", "comm_size=node_comm_size"):
        return "comm_size", "cmp"
    if k == "count<pow2":
        return "count", "cmp"
    m = _NUMBER.match(k)
    if m and m.group(1) + m.group(2) in cs.numbers:
        return m.group(1), "cmp"
    if name == "comm_hierarchy" and val in cs.hierarchy:
        return "comm_hierarchy", "bool"
    if k in cs.any_keys:
        return name, "any"
    if cs.any_suffix and (k == "any" or k.endswith("=any")):
        return "any", "any"
    return None


def _params(base: dict, out: dict) -> dict:
    """algorithm key -> the parameters the library's own tree gives it (5.0: {"k=2": {}})."""
    for k, v in base.items():
        if k.startswith(("algorithm=", "composition=")):
            if v:
                out[k] = v
        elif isinstance(v, dict):
            _params(v, out)
    return out


def _check_node(node, path: str, coll: str | None, cs: Csel, known, params: dict, out: list) -> None:
    if not isinstance(node, dict):
        out.append(f"{path}: a branch must be a JSON object")
        return
    leaves = [k for k in node if k.startswith(("algorithm=", "composition="))]
    if leaves:
        if len(node) != 1:
            out.append(f"{path}: {leaves[0]} must be the only key of its object (MPICH reads it and drops the "
                       "rest)")
        alg = leaves[0].split("=", 1)[1]
        if node[leaves[0]] not in ({}, params.get(leaves[0])):
            out.append(f"{path}/{leaves[0]}: an algorithm leaf must be {{}} (or the parameters the library's "
                       "own tree gives it)")
        elif alg in PARAMETERISED and not node[leaves[0]]:
            out.append(f"{path}/{leaves[0]}: MPICH reads this algorithm's parameters (k=, ...) from the file; "
                       "without them they are 0 and the call may never return")
        if alg.startswith("MPIR_") and alg not in known:
            out.append(f"{path}/{leaves[0]}: this MPICH has no algorithm {alg}")
        return
    if not node:
        out.append(f"{path or '/'} ends without an algorithm (MPICH {cs.series}: 'unexpected NULL success path')")
        return
    keys = list(node)
    for i, k in enumerate(keys):
        here = f"{path}/{k}"
        op = _operator(k, cs)
        if op is None:
            out.append(f"{here}: MPICH {cs.series} does not know this key ('unknown key', MPIR_Assert)")
            continue
        name, kind = op
        if path == "" and name != "collective":
            out.append(f"{here}: the top level holds collective=<name> keys only (MPIR_Csel_prune asserts)")
        last = i == len(keys) - 1
        if kind == "any" and not last:
            out.append(f"{here}: an 'any' key must be the last of its object in MPICH {cs.series} "
                       f"(validate_tree: 'unexpected non-NULL failure path')")
        if kind == "cmp" and last:
            out.append(f"{here}: a comparison needs a following key for the calls it does not match (MPICH "
                       f"{cs.series}: 'unexpected NULL failure path')")
        m = _NUMBER.match(k.replace(" ", ""))
        if m and int(m.group(3)) > _INT_MAX:
            out.append(f"{here}: {m.group(3)} does not fit MPICH's int (read with atoi)")
        here_coll = k.split("=", 1)[1] if name == "collective" else coll
        if name in _EVALUATED and kind != "any" and here_coll is not None and here_coll not in _EVALUATED[name]:
            out.append(f"{here}: MPICH {cs.series} evaluates {name} only for "
                       f"{', '.join(sorted(_EVALUATED[name]))}: every {here_coll} call reaching it aborts "
                       "(csel.c: MPIR_Assert(0))")
        _check_node(node[k], here, here_coll, cs, known, params, out)


def check_tree(tree, base: dict, known: frozenset[str], version: str) -> list[str]:
    """Reasons the file must not be published to MPICH `version` ([] = it will read and evaluate all of it):
    a collective or a communicator branch of the built-in tree left out; a key that version does not parse;
    an operator where that version's selection code cannot evaluate it (e.g. avg_msg_size under allgather);
    node rules its validate_tree asserts on; an algorithm the library does not have."""
    if not isinstance(tree, dict):
        return ["the file is not a JSON object"]
    try:
        cs = series_of(version)
    except ValueError as exc:
        return [str(exc)]
    problems = []
    for ckey, sub in base.items():
        if ckey not in tree:
            extra = " (Barrier, Scan and Intercomm_create use it inside)" if ckey == "collective=bcast" else ""
            problems.append(f"{ckey} is missing: MPICH aborts every job at its first {ckey.split('=')[1]}{extra}")
            continue
        for branch in sub:
            if branch.startswith("comm_type=") and isinstance(tree[ckey], dict) and branch not in tree[ckey]:
                problems.append(f"{ckey}/{branch} is missing: MPICH aborts at the first such call")
    _check_node(tree, "", None, cs, known, _params(base, {}), problems)
    problems += _foreign(tree, base, version)
    return problems


def _foreign(tree: dict, base: dict, version: str) -> list[str]:
    """Everything but the tuned branches of generate() must be this library's own tree: a file built from
    another version's tree would silently replace this version's defaults with that one's."""
    out = []
    for ckey, sub in base.items():
        mine = tree.get(ckey)
        if not isinstance(mine, dict) or mine == sub:
            continue
        for branch, want in sub.items():
            got = mine.get(branch)
            if got == want or got is None:
                continue
            tuned = (branch == "comm_type=intra" and isinstance(got, dict) and list(got)[-1:] == ["comm_size=any"]
                     and got["comm_size=any"] == want
                     and all(re.fullmatch(r"comm_size<=(\d+)", k) and isinstance(v, dict)
                             and v.get(f"comm_size<{k[11:]}") == want for k, v in list(got.items())[:-1]))
            if not tuned:
                out.append(f"/{ckey}/{branch}: not MPICH {version}'s built-in branch (a file made from another "
                           "version's tree would replace this version's own choices)")
    return out


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
