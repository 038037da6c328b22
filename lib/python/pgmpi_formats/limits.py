"""The one validation of names and numbers for everything that enters the site: API bodies, the headers and
rows of uploaded raw results, campaign files and the command line.

The limits are those of the database columns (service/store/models.py) and of the publish path rules
(service/profiles/publish.py: a path component is at most 100 characters of ``A-Za-z0-9._+-``), so a value
accepted here can be stored, shown on every page and published.  Plain Python: ``check_*`` raise
``LimitError`` (a ValueError naming the field); the ``Annotated`` types at the end carry the same rules into
pydantic models (the API's request bodies, the campaign file).

One rule per kind of text, used at every entrance (upload headers and JSON uploads, API bodies, native
validations, page URLs and query parameters, the login form, the CLI):

    kind                  rule                                         where it is checked
    machine / library /   NAME_RE, <= 100 / 80 / 80 / 160 characters    upload headers, API bodies (the
    version / campaign                                                 Annotated types), native validations, CLI
    module                MODULE_RE, <= 200                            upload headers, API bodies
    call / algorithm      CALL_RE <= 80 / ALGORITHM_RE <= 120          upload rows (text and JSON form)
    header value          any text <= 4096, no line break              upload headers (text and JSON form)
    user name             any text <= 80, no line break                login form, `pgmpi user add`
    file text             any length, line breaks allowed              an upload's file content
    URL value             any text <= 1000                             page and API paths, query parameters

and for every kind: no NUL and no lone surrogate (PostgreSQL stores neither; UTF-8 cannot encode the
second).  Integers: check_int (decimal text of at most 19 digits, within the column's range).
"""
from __future__ import annotations

import math
import re
from typing import Annotated, Optional

from pydantic import AfterValidator, Field

# A name: machine, MPI library, version, campaign, label.  ASCII only: it becomes a directory name, a file
# name in an export's Content-Disposition, a Slurm job name.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
# An Lmod module name: openmpi/4.1.4, OpenMPI/4.1.5-GCC-12.3.0, mpi/openmpi-x86_64.
MODULE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+/@:-]*$")
# An MPI call or mock-up name as pgmpi_formats.results reads them.
CALL_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# a mock-up's or pseudo-algorithm's name, or a native algorithm's label (pgmpi_formats.native.LABEL_RE)
ALGORITHM_RE = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*|native:[A-Za-z0-9][A-Za-z0-9_.-]*(?::seg=[0-9]+)?)$")

MACHINE_MAX = 100        # machines.name is 120, a path component 100
LIBRARY_MAX = 80         # mpi_libraries.name / .version
MODULE_MAX = 200         # mpi_libraries.module, jobs.module
CAMPAIGN_MAX = 160       # campaigns.name
CALL_MAX = 80            # series.call
ALGORITHM_MAX = 120      # series.algorithm, violations.mockup
JOB_KEY_MAX = 200        # jobs.job_key
HEADER_VALUE_MAX = 4096  # any other #@key=value header (stored in runs.headers)
HEADERS_MAX = 200        # header lines per file
INT_MAX = 2**31 - 1      # INTEGER columns (msize, nprocs, nodes, ppn, mpirun_index, ids)
NODES_MAX = 10_000_000
PPN_MAX = 1_000_000
RUNTIME_MAX = 1e6        # seconds; a measured call time beyond 11 days is no measurement


class LimitError(ValueError):
    """A value outside the site's limits; `field` names where it came from."""

    def __init__(self, field: str, message: str):
        self.field, self.message = field, message
        super().__init__(f"{field}: {message}")


def _show(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:40] + "...")


_SURROGATE = re.compile("[\ud800-\udfff]")
URL_VALUE_MAX = 1000      # a page's path segment or query value
USERNAME_MAX = 80         # users.username


def bad_char(value: str) -> Optional[str]:
    """What no text anywhere may hold: NUL or a lone surrogate (None when clean)."""
    if "\x00" in value:
        return "NUL characters are not accepted"
    if _SURROGATE.search(value):
        return "lone surrogates (\\ud800-\\udfff) are not text"
    return None


def check_text(value, field: str, max_len: int, pattern: Optional[re.Pattern] = None, what: str = "",
               allow_empty: bool = False, line_breaks: bool = False) -> str:
    if not isinstance(value, str):
        raise LimitError(field, f"must be text, not {type(value).__name__}")
    why = bad_char(value)
    if why:
        raise LimitError(field, why)
    if value == "" and allow_empty:
        return value
    if value == "":
        raise LimitError(field, "must not be empty")
    if len(value) > max_len:
        raise LimitError(field, f"{len(value)} characters is more than {max_len}: {_show(value)}")
    if pattern is not None and not pattern.match(value):
        raise LimitError(field, f"{_show(value)} is not a valid {what or 'name'}: use {_ALLOWED[pattern.pattern]}")
    if pattern is None and not line_breaks and any(c in value for c in "\r\n"):
        raise LimitError(field, f"{_show(value)}: line breaks are not accepted")
    return value


def check_query_int(raw: Optional[str], name: str, lo: int = 0, hi: int = INT_MAX) -> Optional[int]:
    """An integer query parameter of a page or the API within lo..hi (by default an INTEGER column's range,
    never a database error); None when absent or empty."""
    if raw is None or raw == "":
        return None
    try:
        v = int(raw)
    except ValueError:
        raise LimitError(name, f"query parameter {name!r} must be an integer") from None
    if not lo <= v <= hi:
        raise LimitError(name, f"query parameter {name!r} must be in {lo}..{hi}")
    return v


_ALLOWED = {NAME_RE.pattern: "letters, digits and ._+- (starting with a letter or digit)",
            MODULE_RE.pattern: "letters, digits and ._+/@:- (starting with a letter or digit)",
            CALL_RE.pattern: "letters, digits and _ (starting with a letter or _)",
            ALGORITHM_RE.pattern: "letters, digits and _ (starting with a letter or _), or native:<name>[:seg=<bytes>]"}


def check_machine(value, field: str = "machine") -> str:
    return check_text(value, field, MACHINE_MAX, NAME_RE, "machine name")


def check_library(value, field: str = "library") -> str:
    return check_text(value, field, LIBRARY_MAX, NAME_RE, "MPI library name")


def check_version(value, field: str = "version") -> str:
    return check_text(value, field, LIBRARY_MAX, NAME_RE, "MPI library version")


def check_module(value, field: str = "module") -> str:
    return check_text(value, field, MODULE_MAX, MODULE_RE, "module name", allow_empty=True)


def check_campaign(value, field: str = "campaign") -> str:
    return check_text(value, field, CAMPAIGN_MAX, NAME_RE, "campaign name")


def check_call(value, field: str = "test") -> str:
    return check_text(value, field, CALL_MAX, CALL_RE, "MPI call name")


def check_algorithm(value, field: str = "algorithm") -> str:
    return check_text(value, field, ALGORITHM_MAX, ALGORITHM_RE, "algorithm (mock-up) name")


def check_int(value, field: str, lo: int = 0, hi: int = INT_MAX) -> int:
    """An integer given as int or as decimal text (no exponent, no fraction)."""
    if isinstance(value, bool):
        raise LimitError(field, "must be an integer")
    if isinstance(value, str):
        s = value.strip()
        if not re.fullmatch(r"[+-]?\d{1,19}", s):
            raise LimitError(field, f"{_show(value)} is not an integer")
        value = int(s)
    if isinstance(value, float):
        if not value.is_integer():
            raise LimitError(field, f"{value!r} is not an integer")
        value = int(value) if math.isfinite(value) and abs(value) < 2**63 else hi + 1
    if not isinstance(value, int):
        raise LimitError(field, "must be an integer")
    if not lo <= value <= hi:
        raise LimitError(field, f"{value} is outside {lo}..{hi}")
    return value


def check_header_value(key: str, value: str, field: str) -> str:
    return check_text(value, field, HEADER_VALUE_MAX, allow_empty=True)


def check_header_key(key, field: str) -> str:
    """A #@key: the reader's key rule (letters, digits, _, and - or . inside)."""
    if not isinstance(key, str):
        raise LimitError(field, "must be text")
    return check_text(key.replace("-", "_").replace(".", "_"), field, 80, CALL_RE, "header key")


def check_username(value, field: str = "username") -> str:
    return check_text(value, field, USERNAME_MAX)


def check_file_text(value, field: str) -> str:
    """An uploaded file's text: any length (the body limits bound it), line breaks of course."""
    return check_text(value, field, 1 << 62, allow_empty=True, line_breaks=True)


def check_url_value(value, field: str) -> str:
    """A page's path segment or query value.  Line breaks pass: a name stored before the rules must stay
    reachable (the lookup compares, nothing is written or echoed into a header)."""
    return check_text(value, field, URL_VALUE_MAX, allow_empty=True, line_breaks=True)


# ----------------------------------------------------------------- pydantic types with the same rules

def _pydantic(check):
    def run(value):
        try:
            return check(value, "value")
        except LimitError as e:
            raise ValueError(e.message) from None
    return AfterValidator(run)


MachineName = Annotated[str, Field(pattern=NAME_RE.pattern, max_length=MACHINE_MAX), _pydantic(check_machine)]
LibraryName = Annotated[str, Field(pattern=NAME_RE.pattern, max_length=LIBRARY_MAX), _pydantic(check_library)]
LibraryVersion = Annotated[str, Field(pattern=NAME_RE.pattern, max_length=LIBRARY_MAX), _pydantic(check_version)]
ModuleName = Annotated[str, Field(pattern=f"^$|{MODULE_RE.pattern}", max_length=MODULE_MAX), _pydantic(check_module)]
CampaignName = Annotated[str, Field(pattern=NAME_RE.pattern, max_length=CAMPAIGN_MAX), _pydantic(check_campaign)]
HeaderValue = Annotated[str, Field(max_length=HEADER_VALUE_MAX), _pydantic(lambda v, f: check_header_value("", v, f))]
Text = Annotated[str, _pydantic(lambda v, f: check_text(v, f, 1 << 62, allow_empty=True, line_breaks=True))]
