"""Reader for raw results in ReproMPI's text format (ours from pgmpi-bench and genuine ReproMPI output).

Stable API (the service, the agent and the CLI use it; the agent's validation figures come from here too):

    parse_text(text: str, source: str) -> RunResult      # one file = one mpirun
    read_file(path) -> RunResult
    read_files(paths) -> ResultSet                       # many mpiruns, node counts, libraries, machines
    ResultSet.from_runs(runs: list[RunResult]) -> ResultSet
    ResultsFormatError(source, line, message)            # str(e) == "source:line: message"
    format_results(header, rows) -> str                  # the writer: our layout, read back by parse_text

A file is: `#@key=value` header lines (spaces around '=' accepted), a column line, one line per measurement,
and `#@pgmpi ...` footer lines. Columns are found by name, so all of these layouts work:

    test nrep msize runtime_sec algorithm          (ours; `algorithm` is our extension)
    test nrep msize runtime_sec                    (genuine ReproMPI)
    test nrep count msize runtime_sec              (ReproMPI versions that print the count)
    test errorcode nrep msize runtime_sec          (window-based sync: rows with errorcode != 0 are dropped;
                                                    per-process rows: the whole measurement is dropped)
    p test nrep msize loc_tstart_sec loc_tend_sec  (per-process rows, local clocks: runtime = max over
                                                    processes of loc_tend - loc_tstart)
    p test nrep msize gl_tstart_sec gl_tend_sec    (per-process rows, global clocks: runtime = max over
                                                    processes of gl_tend - min over processes of gl_tstart,
                                                    as ReproMPI defines it; with both kinds of columns the
                                                    file's #@runtime_type (local | global) chooses, as it
                                                    chose ReproMPI's own figures; global without it)
    test nrep count runtime_sec                    (no msize: msize = count x size of #@datatype)

The algorithm of a row is its `algorithm` column, else the `#@pgmpi alg <MPI_Name> <bytes> <alg>` footer
for that call and size, else the `#@algorithm=` header, else "default". Summary output (ReproMPI's
`--summary`, columns like mean_sec/median_sec) carries no raw measurements and is rejected.

RunResult holds one mpirun's columns as numpy arrays (test names and algorithms as codes into small
tables). ResultSet concatenates many runs into flat columns plus a run table; analyses group rows by
(machine, library, version, nprocs, collective, msize, algorithm) and use one median per mpirun.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np

from . import collectives as _colls
from . import footer
from .native import LABEL_RE as _NATIVE_RE
from . import layouts as _layouts

__all__ = ["ResultsFormatError", "RunResult", "ResultSet", "parse_text", "read_file", "read_files",
           "format_results", "BARRIER", "OTHER"]

BARRIER = -1   # ResultSet.coll value of MPI_Barrier rows
OTHER = -2     # ResultSet.coll value of calls outside collectives.def

DATATYPE_BYTES = {
    "MPI_BYTE": 1, "MPI_CHAR": 1, "MPI_SIGNED_CHAR": 1, "MPI_UNSIGNED_CHAR": 1, "MPI_INT8_T": 1, "MPI_UINT8_T": 1,
    "MPI_SHORT": 2, "MPI_UNSIGNED_SHORT": 2, "MPI_INT16_T": 2,
    "MPI_INT": 4, "MPI_UNSIGNED": 4, "MPI_FLOAT": 4, "MPI_INT32_T": 4, "MPI_UINT32_T": 4,
    "MPI_LONG": 8, "MPI_UNSIGNED_LONG": 8, "MPI_LONG_LONG": 8, "MPI_LONG_LONG_INT": 8, "MPI_DOUBLE": 8,
    "MPI_INT64_T": 8, "MPI_UINT64_T": 8, "MPI_LONG_DOUBLE": 16,
}
SUMMARY_COLUMNS = {"mean_sec", "median_sec", "min_sec", "max_sec", "total_nrep", "valid_nrep"}
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ResultsFormatError(ValueError):
    """Malformed raw-result input; carries the source (file name) and 1-based line number."""

    def __init__(self, source: str, line: int | None, message: str):
        self.source, self.line, self.message = source, line, message
        super().__init__(f"{source}:{line}: {message}" if line else f"{source}: {message}")


@dataclass
class RunResult:
    """One mpirun: header, footer and the measurements as numpy columns."""
    source: str
    header: dict[str, str]
    tests: list[str]                 # table of call names (e.g. MPI_Allreduce); `test` holds codes into it
    algorithms: list[str]            # table of algorithm names; `algorithm` holds codes into it
    test: np.ndarray                 # int32 codes, one per measurement
    nrep: np.ndarray                 # int64 repetition index
    msize: np.ndarray                # int64 bytes (collectives.def definition)
    runtime: np.ndarray              # float64 seconds (max over ranks)
    algorithm: np.ndarray            # int32 codes
    alg_footer: dict[tuple[str, int], str] = field(default_factory=dict)   # (MPI name, bytes) -> algorithm
    config: dict[str, str] = field(default_factory=dict)                    # #@pgmpi config key value
    pgmpi_lines: list[str] = field(default_factory=list)                    # every #@pgmpi line, raw
    # the count argument of each cell (call, algorithm, bytes) when the file has a `count` column next to
    # `msize` (pgmpi-dtbench: the count of the row's datatype description)
    cell_counts: dict[tuple[str, str, int], int] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.runtime.shape[0])

    # metadata keys of docs/contracts.md, raw results (empty string / 0 when the file does not say)
    def meta(self, key: str, default: str = "") -> str:
        return self.header.get(key, default)

    @property
    def machine(self) -> str:
        return self.header.get("machine") or self.header.get("hostname") or "unknown"

    @property
    def library(self) -> str:
        return self.header.get("mpi_library") or "unknown"

    @property
    def version(self) -> str:
        return self.header.get("mpi_version", "")

    @property
    def nprocs(self) -> int:
        return _int_or(self.header.get("nprocs") or self.header.get("np") or self.header.get("p"), 0)

    @property
    def nodes(self) -> int:
        return _int_or(self.header.get("nodes"), 0)

    @property
    def ppn(self) -> int:
        return _int_or(self.header.get("ppn"), 0)

    @property
    def layout(self) -> str:
        """nodes x ppn as measured ("2x2", "3+2", "2x2-interleaved"; "" unknown): pgmpi_formats.layouts."""
        return _layouts.run_layout(self.header)

    @property
    def mpirun_index(self) -> int:
        return _int_or(self.header.get("mpirun_index"), -1)

    @property
    def campaign(self) -> str:
        return self.header.get("campaign", "")

    @property
    def sync(self) -> str:
        """The measurement method (process synchronisation) of this mpirun: sync_method(header)."""
        return sync_method(self.header)


# The process synchronisation before every measurement decides what a run-time means (lib/bench/README.md,
# "Synchronisation"): the two barriers time each rank locally (max over ranks), window and round-time time on a
# global clock (max end - min start). Figures of different methods are never compared (service/analysis).
SYNC_METHODS = {"dissem_barrier": "dissem_barrier", "dissem": "dissem_barrier", "mpi_barrier": "MPI_Barrier",
                "window": "window", "roundtime": "roundtime", "double_mpi_barrier": "Double_MPI_Barrier",
                "none": "None"}


def sync_method(header: dict) -> str:
    """The one reading of a run's method: `#@procsync` (pgmpi-bench and ReproMPI write it; pgmpi-bench's older
    `#@sync` as fallback), in its canonical spelling; "" when the file does not say. An unknown value is kept as
    written (a method we do not know is still not the same as another)."""
    raw = (header.get("procsync") or header.get("sync") or "").strip()
    return SYNC_METHODS.get(raw.lower(), raw)


_INT_EXACT = float(2 ** 53)


def _int_or(v, default: int) -> int:
    try:
        return int(str(v).strip())
    except (TypeError, ValueError):
        return default


def _is_number(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False


def parse_text(text: str, source: str) -> RunResult:
    """Parse one raw-result file's text. Raises ResultsFormatError(source, line, message)."""
    header: dict[str, str] = {}
    pgmpi_lines: list[tuple[int, str]] = []
    columns: list[str] | None = None
    col_lineno = 0
    # header and column line: read line by line (few lines)
    pos, lineno, n = 0, 0, len(text)
    while pos < n:
        nl = text.find("\n", pos)
        if nl < 0:
            nl = n
        s = text[pos:nl].strip()
        pos = nl + 1
        lineno += 1
        if not s:
            continue
        if s[0] == "#":
            _comment(s, lineno, source, header, pgmpi_lines)
            continue
        toks = s.split()
        if all(not _is_number(t) for t in toks) and any(t in ("runtime_sec", "msize", "count", "nrep",
                                                                 "loc_tstart_sec", "gl_tstart_sec") for t in toks):
            columns = toks
            col_lineno = lineno
            break
        raise ResultsFormatError(source, lineno, "measurement line before the column line "
                                 "(expected e.g. 'test nrep msize runtime_sec algorithm')")
    if columns is None:
        raise ResultsFormatError(source, None, "no column line found (expected e.g. "
                                 "'test nrep msize runtime_sec algorithm'); is this a ReproMPI result file?")
    summary = SUMMARY_COLUMNS.intersection(columns)
    if summary:
        raise ResultsFormatError(source, col_lineno, f"summary output (columns {', '.join(sorted(summary))}) "
                                 "has no raw measurements; rerun ReproMPI without --summary")
    if len(set(columns)) != len(columns):
        raise ResultsFormatError(source, col_lineno, f"duplicate column names in {' '.join(columns)}")
    start = min(pos, n)
    # footer: trailing comment / blank lines, found from the end
    end = n
    while end > start:
        ls = text.rfind("\n", start, end - 1) + 1 if end - 1 > start else start
        ls = max(ls, start)
        line = text[ls:end].strip()
        if line and line[0] != "#":
            break
        end = ls
    e2 = end
    while e2 > start and text[e2 - 1] in "\r\n":
        e2 -= 1
    block = text[start:e2]
    footer = text[end:]
    data_first = col_lineno + 1
    foot_first = data_first + text.count("\n", start, end)
    for k, raw in enumerate(footer.split("\n")):
        s = raw.strip()
        if s:
            _comment(s, foot_first + k, source, header, pgmpi_lines)
    if "#" not in block:
        try:
            return _build(source, header, pgmpi_lines, columns, col_lineno, block, None, data_first)
        except ResultsFormatError:
            pass    # maybe a repeated column line: the line-by-line path below skips it or reports the error
    # comments between the data, or a repeated column line (several blocks)
    col_text = " ".join(columns)
    data, linenos = [], []
    for j, raw in enumerate(block.split("\n"), data_first):
        s = raw.strip()
        if not s:
            continue
        if s[0] == "#":
            _comment(s, j, source, header, pgmpi_lines)
            continue
        if " ".join(s.split()) == col_text:
            continue
        data.append(s)
        linenos.append(j)
    return _build(source, header, pgmpi_lines, columns, col_lineno, data, linenos, data_first)


def _comment(s: str, lineno: int, source: str, header: dict, pgmpi_lines: list) -> None:
    if not s.startswith("#@"):
        return  # plain comment
    body = s[2:]
    if body.startswith("pgmpi") and (len(body) == 5 or body[5] in " \t"):
        pgmpi_lines.append((lineno, body))
        return
    if "=" in body:
        k, v = body.split("=", 1)
        k = k.strip()
        if not k or not _NAME_RE.match(k.replace("-", "_").replace(".", "_")):
            raise ResultsFormatError(source, lineno, f"bad header key {k!r} in {s!r}")
        header.setdefault(k, v.strip())
    # other '#@' lines (ReproMPI prints a few free-text ones) are ignored


def _line_of(linenos, start: int, row: int) -> int:
    return linenos[row] if linenos is not None else start + row


class _Table:
    """The data block as columns of tokens; numeric() converts one column, naming file:line of a bad value."""

    def __init__(self, source: str, columns: list[str], toks: list[str], nrows: int, linenos, start: int,
                 col_lineno: int):
        self.source, self.columns, self.toks, self.nrows = source, columns, toks, nrows
        self.linenos, self.start, self.col_lineno = linenos, start, col_lineno
        self.index = {c: k for k, c in enumerate(columns)}

    def __contains__(self, name: str) -> bool:
        return name in self.index

    def line(self, row: int) -> int:
        return _line_of(self.linenos, self.start, row)

    def error(self, message: str, row: int | None = None) -> ResultsFormatError:
        """At the row's line, or at the column line (row None)."""
        return ResultsFormatError(self.source, self.col_lineno if row is None else self.line(row), message)

    def col(self, name: str) -> list[str]:
        return self.toks[self.index[name]::len(self.columns)]

    def numeric(self, name: str, dtype) -> np.ndarray:
        vals = self.col(name)
        arr = None
        if vals:
            try:
                arr = np.fromiter(map(float, vals), dtype=np.float64, count=len(vals))
            except ValueError:
                arr = None
        if arr is None:
            try:
                arr = np.array(vals, dtype=np.float64)
            except ValueError:
                for r, v in enumerate(vals):
                    try:
                        float(v)
                    except ValueError:
                        raise self.error(f"field {name!r}: {v!r} is not a number", r) from None
                raise
        if dtype is np.int64:
            bad = np.nonzero(~np.isfinite(arr) | (arr != np.floor(arr)))[0]
            if bad.size:
                r = int(bad[0])
                raise self.error(f"field {name!r}: {vals[r]!r} is not an integer", r)
            big = np.nonzero(arr > _INT_EXACT)[0]
            if big.size:     # beyond 2^53 a float holds no exact integer, and a product could overflow int64
                r = int(big[0])
                raise self.error(f"field {name!r}: {vals[r][:40]!r} is more than 2^53", r)
            arr = arr.astype(np.int64)
        bad = np.nonzero(~np.isfinite(arr) | (arr < 0))[0] if arr.dtype == np.float64 else np.nonzero(arr < 0)[0]
        if bad.size:
            r = int(bad[0])
            raise self.error(f"field {name!r}: {vals[r]!r} must be a finite number >= 0", r)
        return arr


def _table(source, columns, col_lineno, data_lines, linenos, start) -> _Table:
    """Tokenise the data block (one string, or the lines of a block with comments inside) and check that
    every row has one field per column."""
    ncol = len(columns)
    if isinstance(data_lines, str):
        toks = data_lines.split()
        nrows = len(toks) // ncol
        if len(toks) != nrows * ncol or (toks and data_lines.count("\n") + 1 != nrows):
            lines = data_lines.split("\n")
            linenos = [start + r for r, l in enumerate(lines) if l.strip()]
            data_lines = [l for l in lines if l.strip()]
            nrows = len(data_lines)
    else:
        toks = " ".join(data_lines).split()
        nrows = len(data_lines)
    if len(toks) != nrows * ncol:
        for r, l in enumerate(data_lines):
            k = len(l.split())
            if k != ncol:
                raise ResultsFormatError(source, _line_of(linenos, start, r),
                                         f"expected {ncol} fields ({' '.join(columns)}), found {k}")
    return _Table(source, columns, toks, nrows, linenos, start, col_lineno)


def _tests(t: _Table, header: dict) -> tuple[list[str], np.ndarray]:
    """The call names (the `test` column, else the one #@test=/#@calls= header) and each row's code."""
    if "test" in t:
        names = t.col("test")
    else:
        call = header.get("test") or header.get("calls") or header.get("call") or ""
        if not call or "," in call:
            raise t.error("no 'test' column and no single #@test=/#@calls= header "
                          f"naming the call (columns: {' '.join(t.columns)})")
        names = [call] * t.nrows
    tests, test_codes = _codes(names)
    tests = [str(x) for x in tests]
    for x in tests:
        if not _NAME_RE.match(x):
            raise t.error(f"field 'test': {x!r} is not an MPI call name (expected e.g. MPI_Allreduce; valid "
                          f"collectives: {', '.join(c.mpi_name for c in _colls.COLLECTIVES)}, MPI_Barrier)",
                          names.index(x))
    return tests, test_codes.astype(np.int32)


def _msize(t: _Table, header: dict) -> np.ndarray:
    """Bytes per row: the `msize` column, else `count` x the size of #@datatype."""
    if "msize" in t:
        return t.numeric("msize", np.int64)
    if "count" in t:
        dt = header.get("datatype", "MPI_BYTE")
        if dt not in DATATYPE_BYTES:
            raise t.error(f"no 'msize' column and unknown #@datatype={dt!r} to "
                          f"convert 'count' (known: {', '.join(sorted(DATATYPE_BYTES))})")
        return t.numeric("count", np.int64) * DATATYPE_BYTES[dt]
    raise t.error(f"no 'msize' or 'count' column (columns: {' '.join(t.columns)})")


def _runtime(t: _Table, header: dict) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(run-time per row, global start, global end); the global clocks (else None) serve the per-process
    reduction of _per_process."""
    t_start = t_end = None
    if "runtime_sec" in t:
        runtime = t.numeric("runtime_sec", np.float64)
    elif ("gl_tstart_sec" in t and "gl_tend_sec" in t) or ("loc_tstart_sec" in t and "loc_tend_sec" in t):
        # ReproMPI's run-time types (#@runtime_type, its --runtime-type): "local" = max over processes of
        # loc_tend - loc_tstart; "global" = max gl_tend - min gl_tstart (its global clock; on the local columns
        # when it printed none, as ReproMPI computes it then). Without the header: global when the file has
        # global columns, else local.
        rtype = (header.get("runtime_type") or header.get("runtime-type") or "").strip().lower()
        has_gl = "gl_tstart_sec" in t and "gl_tend_sec" in t
        if rtype not in ("", "local", "global"):
            raise t.error(f"#@runtime_type={rtype!r}; valid: local, global")
        if rtype == "local" and not ("loc_tstart_sec" in t and "loc_tend_sec" in t):
            raise t.error("#@runtime_type=local needs the columns "
                          f"'loc_tstart_sec loc_tend_sec' (columns: {' '.join(t.columns)})")
        if rtype == "global" or (rtype == "" and has_gl):
            sc, ec = ("gl_tstart_sec", "gl_tend_sec") if has_gl else ("loc_tstart_sec", "loc_tend_sec")
            t_start, t_end = t.numeric(sc, np.float64), t.numeric(ec, np.float64)
            runtime = t_end - t_start
        else:
            runtime = t.numeric("loc_tend_sec", np.float64) - t.numeric("loc_tstart_sec", np.float64)
    else:
        raise t.error("no runtime column: expected 'runtime_sec' or 'loc_tstart_sec loc_tend_sec' or "
                      f"'gl_tstart_sec gl_tend_sec' (columns: {' '.join(t.columns)})")
    if t.nrows and runtime.min() < 0:
        raise t.error("end time before start time", int(np.argmin(runtime)))
    return runtime, t_start, t_end


def _nrep(t: _Table, test_codes: np.ndarray, msize: np.ndarray) -> np.ndarray:
    """The repetition index: the `nrep` column, else the row's rank within its (call, size)."""
    if "nrep" in t:
        return t.numeric("nrep", np.int64)
    nrows = t.nrows
    nrep = np.zeros(nrows, dtype=np.int64)
    key = test_codes.astype(np.int64) * (1 << 40) + msize
    order = np.argsort(key, kind="stable")
    ks = key[order]
    first = np.r_[0, np.nonzero(np.diff(ks))[0] + 1] if nrows else np.zeros(0, dtype=np.int64)
    grp_start = np.repeat(first, np.diff(np.r_[first, nrows]))
    nrep[order] = np.arange(nrows) - grp_start
    return nrep


def _report(source: str, pgmpi_lines) -> tuple[dict[tuple[str, int], str], dict[str, str]]:
    """libpgmpitune's report in the footer (pgmpi_formats/footer.py): (call lowered, bytes) -> the algorithm
    it ran (`alg`; a malformed one is an error at its line) and the `config` keys."""
    alg_footer: dict[tuple[str, int], str] = {}
    config: dict[str, str] = {}
    for lineno, body in pgmpi_lines:
        line = "#@" + body
        kind = footer.kind_of(line)
        if kind == "alg":
            try:
                rec = footer.read_line(line)
            except footer.FooterError as exc:
                raise ResultsFormatError(source, lineno, f"{exc}, got {line!r}") from None
            alg_footer[(rec.call.lower(), rec.msize)] = rec.algorithm
        elif kind == "config":
            rec = footer.parse_line(line)
            if rec is not None:
                config[rec.key] = rec.value
    return alg_footer, config


def _algorithms(t: _Table, header: dict, tests, test_codes, msize, alg_footer) -> tuple[list[str], np.ndarray]:
    """Each row's algorithm: the `algorithm` column, else #@algorithm (default) with the footer's `alg`
    lines per (call, size); every name must be a mock-up, `default` or a native label."""
    if "algorithm" in t:
        algorithms, alg_codes = _codes(t.col("algorithm"))
    else:
        algorithms = [header.get("algorithm") or "default"]
        alg_codes = np.zeros(t.nrows, dtype=np.int32)
        if alg_footer and t.nrows:
            lowered = [x.lower() for x in tests]
            for (call, size), alg in alg_footer.items():
                if call not in lowered:
                    continue
                sel = (test_codes == lowered.index(call)) & (msize == size)
                if sel.any():
                    if alg not in algorithms:
                        algorithms.append(alg)
                    alg_codes[sel] = algorithms.index(alg)
    for a in algorithms:
        if not _NAME_RE.match(a) and not _NATIVE_RE.match(a):
            raise t.error(f"field 'algorithm': {a!r} is not a mock-up name (expected 'default', "
                          "'<collective>_as_<parts>' or 'native:<name>[:seg=<bytes>]')",
                          int(np.nonzero(alg_codes == algorithms.index(a))[0][0]))
    return algorithms, alg_codes


def _genuine_mockups(tests, test_codes, algorithms, alg_codes):
    """Genuine ReproMPI measures mock-ups as tests of their own: GL_<Call>_as_<Parts> -> (MPI_<Call>,
    mock-up).  Returns (tests, test_codes, algorithms, alg_codes), unchanged without such tests."""
    if not any(x.startswith("GL_") for x in tests):
        return tests, test_codes, algorithms, alg_codes
    new_tests = [x for x in tests if not x.startswith("GL_") or gl_mockup(x) is None]
    tmap, amap = [], []
    for x in tests:
        g = gl_mockup(x)
        if g is None:
            tmap.append(new_tests.index(x))
            amap.append(-1)
        else:
            mpi_name, mock = g
            if mpi_name not in new_tests:
                new_tests.append(mpi_name)
            if mock not in algorithms:
                algorithms.append(mock)
            tmap.append(new_tests.index(mpi_name))
            amap.append(algorithms.index(mock))
    row_alg = np.array(amap, dtype=np.int32)[test_codes]
    alg_codes = np.where(row_alg >= 0, row_alg, alg_codes).astype(np.int32)
    test_codes = np.array(tmap, dtype=np.int32)[test_codes]
    return new_tests, test_codes, algorithms, alg_codes


def _cell_counts(t: _Table, tests, algorithms, test_codes, alg_codes, msize) -> dict[tuple[str, str, int], int]:
    """pgmpi-dtbench's `count` column next to `msize`: (call, algorithm, bytes) -> the count argument."""
    out: dict[tuple[str, str, int], int] = {}
    if "count" in t and "msize" in t and t.nrows:
        cnt = t.numeric("count", np.int64)
        cells = np.unique(np.stack([test_codes.astype(np.int64), alg_codes.astype(np.int64), msize, cnt]), axis=1)
        for ti, a, m, c in cells.T.tolist():
            out[(tests[ti], algorithms[a], m)] = c
    return out


def _per_process(t: _Table, rows: dict, t_start, t_end) -> dict:
    """ReproMPI's per-process rows and error codes: drop measurements with an error (a measurement is out of
    its window when any process was), then one row per measurement.  rows: test, alg, msize, nrep, runtime."""
    keep = t.numeric("errorcode", np.int64) == 0 if "errorcode" in t else None
    per_proc = None
    for pc in ("p", "proc", "process"):
        if pc in t:
            if any(v != "all" for v in t.col(pc)):
                per_proc = pc
            break
    test_codes, alg_codes, msize, nrep, runtime = (rows[k] for k in ("test", "alg", "msize", "nrep", "runtime"))
    if keep is not None and per_proc is not None and not keep.all() and runtime.size:
        key = np.stack([test_codes.astype(np.int64), alg_codes.astype(np.int64), msize, nrep])
        _, inv = np.unique(key, axis=1, return_inverse=True)
        inv = inv.ravel()
        bad = np.zeros(inv.max() + 1, dtype=bool)
        bad[inv[~keep]] = True
        keep = ~bad[inv]
    if keep is not None and not keep.all():
        test_codes, nrep, msize, runtime, alg_codes = (a[keep] for a in (test_codes, nrep, msize, runtime, alg_codes))
        if t_start is not None:
            t_start, t_end = t_start[keep], t_end[keep]
    if per_proc is not None and runtime.size:
        # one row per process and measurement: with global clocks the measurement lasts from the earliest
        # start to the latest end over the processes; local clocks cannot be compared across processes, so
        # there it is the longest of the processes' own durations
        key = np.stack([test_codes.astype(np.int64), alg_codes.astype(np.int64), msize, nrep])
        uniq, inv = np.unique(key, axis=1, return_inverse=True)
        inv = inv.ravel()
        if t_start is not None:
            first = np.full(uniq.shape[1], np.inf)
            last = np.full(uniq.shape[1], -np.inf)
            np.minimum.at(first, inv, t_start)
            np.maximum.at(last, inv, t_end)
            mx = last - first
        else:
            mx = np.full(uniq.shape[1], -np.inf)
            np.maximum.at(mx, inv, runtime)
        test_codes, alg_codes, msize, nrep = (uniq[k].astype(dt) for k, dt in
                                              zip(range(4), (np.int32, np.int32, np.int64, np.int64)))
        runtime = mx
    return {"test": test_codes, "alg": alg_codes, "msize": msize, "nrep": nrep, "runtime": runtime}


def _build(source, header, pgmpi_lines, columns, col_lineno, data_lines, linenos, start) -> RunResult:
    """One RunResult from a parsed file, step by step: the table, calls, sizes, run-times, repetitions,
    libpgmpitune's report, algorithms, genuine ReproMPI's mock-up tests, counts, per-process rows."""
    t = _table(source, columns, col_lineno, data_lines, linenos, start)
    tests, test_codes = _tests(t, header)
    msize = _msize(t, header)
    runtime, t_start, t_end = _runtime(t, header)
    nrep = _nrep(t, test_codes, msize)
    alg_footer, config = _report(source, pgmpi_lines)
    algorithms, alg_codes = _algorithms(t, header, tests, test_codes, msize, alg_footer)
    tests, test_codes, algorithms, alg_codes = _genuine_mockups(tests, test_codes, algorithms, alg_codes)
    cell_counts = _cell_counts(t, tests, algorithms, test_codes, alg_codes, msize)
    rows = _per_process(t, {"test": test_codes, "alg": alg_codes, "msize": msize, "nrep": nrep, "runtime": runtime},
                        t_start, t_end)
    return RunResult(source=source, header=header, tests=tests, algorithms=algorithms, test=rows["test"],
                     nrep=rows["nrep"], msize=rows["msize"], runtime=rows["runtime"], algorithm=rows["alg"],
                     alg_footer=alg_footer, config=config, pgmpi_lines=["#@" + b for _, b in pgmpi_lines],
                     cell_counts=cell_counts)


_GL_RE = re.compile(r"^GL_([A-Z][a-z]*(?:_[a-z]+)*)_as_([A-Za-z]+)$")


def gl_mockup(test_name: str) -> tuple[str, str] | None:
    """Genuine ReproMPI's mock-up test names to ours: GL_Allreduce_as_ReduceBcast ->
    ("MPI_Allreduce", "allreduce_as_reduce_bcast"); GL_Reduce_scatter_block_as_ReduceScatter ->
    ("MPI_Reduce_scatter_block", "reducescatterblock_as_reduce_scatter"). None when not such a name or the
    collective is not in collectives.def."""
    m = _GL_RE.match(test_name)
    if not m:
        return None
    coll = _colls.by_mpi_name("MPI_" + m.group(1))
    if coll is None:
        return None
    parts = re.findall(r"[A-Z][a-z]*", m.group(2))
    if not parts or "".join(parts) != m.group(2):
        return None
    return coll.mpi_name, f"{coll.key}_as_" + "_".join(p.lower() for p in parts)


def _codes(values: list[str]) -> tuple[list[str], np.ndarray]:
    """Table of distinct values (first-seen order) and int32 codes into it."""
    table = dict.fromkeys(values)
    for k, name in enumerate(table):
        table[name] = k
    return list(table), np.fromiter(map(table.__getitem__, values), dtype=np.int32, count=len(values))


def format_results(header: dict, rows: Iterable[tuple[str, int, int, float, str]],
                   footer: Iterable[str] = ()) -> str:
    """Raw results in our layout: `#@key=value` lines, the column line, one row per measurement
    (test, nrep, msize, runtime in seconds, algorithm), then `#@pgmpi ...` footer lines."""
    out = [f"#@{k}={v}" for k, v in header.items()]
    out.append("test nrep msize runtime_sec algorithm")
    out.extend(f"{t} {n} {m} {r!r} {a}" for t, n, m, r, a in rows)
    out.extend(footer)
    return "\n".join(out) + "\n"


def read_file(path) -> RunResult:
    p = Path(path)
    try:
        text = p.read_text()
    except UnicodeDecodeError as e:
        raise ResultsFormatError(str(p), None, f"not a text file ({e})") from None
    except OSError as e:
        raise ResultsFormatError(str(p), None, f"cannot read: {e.strerror or e}") from None
    return parse_text(text, str(p))


def _expand(paths: Iterable) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            out.extend(sorted(q for q in p.rglob("*") if q.is_file() and not q.name.startswith(".")))
        else:
            out.append(p)
    return out


def read_files(paths: Iterable) -> ResultSet:
    """Read files (directories are searched recursively) into one ResultSet."""
    return ResultSet.from_runs([read_file(p) for p in _expand(paths)])


@dataclass
class ResultSet:
    """Flat columns over many mpiruns plus a run table.

    Row columns (one entry per measurement): run (index into `runs`), coll (collectives.def id,
    BARRIER or OTHER), test (code into `tests`), algorithm (code into `algorithms`), msize, nrep, runtime.
    Run columns (one entry per mpirun): machine / library / version (codes into `machines` /
    `libraries` / `versions`), nprocs, nodes, ppn, mpirun_index.
    """
    runs: list[RunResult]
    tests: list[str]
    algorithms: list[str]
    machines: list[str]
    libraries: list[str]
    versions: list[str]
    run: np.ndarray
    coll: np.ndarray
    test: np.ndarray
    algorithm: np.ndarray
    msize: np.ndarray
    nrep: np.ndarray
    runtime: np.ndarray
    run_machine: np.ndarray
    run_library: np.ndarray
    run_version: np.ndarray
    run_nprocs: np.ndarray
    run_nodes: np.ndarray
    run_ppn: np.ndarray
    run_index: np.ndarray

    def __len__(self) -> int:
        return int(self.runtime.shape[0])

    @property
    def sources(self) -> list[str]:
        return [r.source for r in self.runs]

    @classmethod
    def from_runs(cls, runs: list[RunResult]) -> "ResultSet":
        tests: dict[str, int] = {}
        algs: dict[str, int] = {}
        parts = {k: [] for k in ("run", "test", "algorithm", "msize", "nrep", "runtime")}
        for ri, r in enumerate(runs):
            tmap = np.array([tests.setdefault(t, len(tests)) for t in r.tests] or [0], dtype=np.int32)
            amap = np.array([algs.setdefault(a, len(algs)) for a in r.algorithms] or [0], dtype=np.int32)
            parts["run"].append(np.full(len(r), ri, dtype=np.int32))
            parts["test"].append(tmap[r.test])
            parts["algorithm"].append(amap[r.algorithm])
            parts["msize"].append(r.msize)
            parts["nrep"].append(r.nrep)
            parts["runtime"].append(r.runtime)
        cat = {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in parts.items()}
        test_names = list(tests)
        coll_of_test = np.array([_coll_id(t) for t in test_names] or [OTHER], dtype=np.int16)
        test = cat["test"].astype(np.int32)
        coll = coll_of_test[test] if test.size else np.zeros(0, dtype=np.int16)

        def table(values):
            names: dict[str, int] = {}
            codes = np.array([names.setdefault(v, len(names)) for v in values], dtype=np.int32)
            return list(names), codes

        machines, run_machine = table([r.machine for r in runs])
        libraries, run_library = table([r.library for r in runs])
        versions, run_version = table([r.version for r in runs])
        return cls(runs=list(runs), tests=test_names, algorithms=list(algs), machines=machines,
                   libraries=libraries, versions=versions, run=cat["run"].astype(np.int32), coll=coll, test=test,
                   algorithm=cat["algorithm"].astype(np.int32), msize=cat["msize"].astype(np.int64),
                   nrep=cat["nrep"].astype(np.int64), runtime=cat["runtime"].astype(np.float64),
                   run_machine=run_machine, run_library=run_library, run_version=run_version,
                   run_nprocs=np.array([r.nprocs for r in runs], dtype=np.int64),
                   run_nodes=np.array([r.nodes for r in runs], dtype=np.int64),
                   run_ppn=np.array([r.ppn for r in runs], dtype=np.int64),
                   run_index=np.array([r.mpirun_index for r in runs], dtype=np.int64))


def _coll_id(test_name: str) -> int:
    if test_name.lower() == "mpi_barrier":
        return BARRIER
    c = _colls.by_mpi_name(test_name)
    return c.id if c else OTHER
