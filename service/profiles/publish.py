"""Publishing tuned profile sets into a site's profile root (plain Python, no Flask).

Layout (docs/contracts.md, 5)::

    <root>/<machine>/<mpi name>-<mpi version>/
        versions/<n>/*.prf      complete, validated, never changed once there
                    native.rules | native.json   the MPI library's own decision file (Open MPI's
                                rules file, MPICH's JSON selection), in the same version
        current -> versions/<n> relative symlink, swapped atomically with rename()
        history.jsonl           who did what when (one JSON object per line)
        .lock                   flock()ed while publishing or rolling back

A publish writes the set into a hidden temporary directory next to ``versions``,
fsyncs every file and the directory, validates it with ``pgmpitune-check``, renames
it to ``versions/<n>`` and finally swaps ``current`` by renaming a fresh symlink over
it.  Whatever step a crash interrupts, readers of ``current`` see either the old
complete set or the new complete set; leftovers (``.tmp-*`` directories,
``.current-*`` symlinks) are swept by the next operation.

Rollback swaps ``current`` back to the version that was current before the one
being rolled back (a stack replayed from ``history.jsonl``); rolling back the first
publication points ``current`` at ``versions/0``, an empty set, so the library
uses its defaults everywhere.

Names that come from the database (machine, MPI name, version, file names) are
mapped to safe path components; a resolved path that would leave the root is
refused.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import datetime as _dt
import fcntl
import json
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from pgmpi_formats.checker import CHECKER_NAME, find_checker

_SAFE = re.compile(r"[^A-Za-z0-9._+-]")
_FILE_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,123}\.(prf|dtprf)$")   # .dtprf: datatype profiles
# the library's own decision file, one per set (pgmpi_formats.ompi_rules / mpich_json)
NATIVE_FILES = {"native.rules": "openmpi", "native.json": "mpich", "native.impi": "intelmpi"}
MAX_FILE_BYTES = 4 * 1024 * 1024

# Test hook: called with a step name between the steps of publish/rollback so that
# tests can simulate a crash (raise) at every point.  None in production.
_STEP_HOOK: Callable[[str], None] | None = None

PUBLISH_STEPS = ("tmp-created", "files-written", "validated", "version-renamed",
                 "symlink-created", "current-swapped")
ROLLBACK_STEPS = ("symlink-created", "current-swapped")


class PublishError(Exception):
    """A publish or rollback refused or failed; nothing visible changed."""


@dataclasses.dataclass(frozen=True)
class CheckResult:
    ok: bool
    command: list[str]
    returncode: int
    output: str


@dataclasses.dataclass(frozen=True)
class PublishResult:
    action: str              # "publish" | "rollback"
    target: Path             # <root>/<machine>/<mpi>-<version>
    version: int             # now current
    previous: int | None     # current before
    forced: bool
    check: CheckResult | None
    entry: dict


def _step(name: str) -> None:
    if _STEP_HOOK is not None:
        _STEP_HOOK(name)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


# ----------------------------------------------------------------- names and paths

def safe_component(name: str, what: str = "name") -> str:
    """Map a name from the database to one safe path component.

    Characters outside ``A-Za-z0-9._+-`` become ``_``; leading dots are replaced so
    that ``.``/``..``/hidden names cannot appear.  Empty names are refused.
    """
    if not isinstance(name, str) or not name.strip():
        raise PublishError(f"{what}: empty name cannot be a directory name")
    s = _SAFE.sub("_", name.strip())
    if s.startswith("."):
        s = "_" + s[1:]
    if len(s) > 100:
        raise PublishError(f"{what}: name longer than 100 characters: {name[:40]!r}...")
    return s


def library_dirname(mpi_name: str, mpi_version: str) -> str:
    return f"{safe_component(mpi_name, 'mpi name')}-{safe_component(mpi_version, 'mpi version')}"


_DIR_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,254}$")


def target_dir(root: str | os.PathLike, machine: str, mpi_name: str, mpi_version: str,
               directory: str | None = None) -> Path:
    """``<root>/<machine>/<mpi name>-<mpi version>`` (or ``<root>/<machine>/<directory>``, the directory the
    database assigned to a profile set, service/profiles/lifecycle.set_directory), guaranteed inside root."""
    root_p = Path(root)
    if not root_p.is_absolute():
        raise PublishError(f"profile root must be an absolute path, got {root!s}")
    if directory is not None and not _DIR_OK.match(directory):
        raise PublishError(f"profile set directory {directory[:40]!r}: use letters, digits and ._+- only")
    t = root_p / safe_component(machine, "machine") / (directory or library_dirname(mpi_name, mpi_version))
    _inside(root_p, t)
    return t


def _inside(root: Path, path: Path) -> None:
    """Refuse a path whose existing part resolves (through symlinks) outside root."""
    if root not in path.parents and path != root:
        raise PublishError(f"{path} is not inside the profile root {root}")
    r = root.resolve()
    p = path
    # resolve the deepest existing ancestor, so pre-planted symlinks are seen
    while not p.exists() and p != root:
        p = p.parent
    if not p.exists():
        return
    real = p.resolve()
    if real != r and r not in real.parents:
        raise PublishError(f"{path} resolves to {real}, outside the profile root {r}")


def check_file_name(name: str) -> str:
    if name in NATIVE_FILES:
        return name
    if not _FILE_OK.match(name or "") or name in (".", ".."):
        raise PublishError(
            f"profile file name {name!r}: use letters, digits and ._+- only, no directories, "
            f"not starting with a dot, ending in .prf (e.g. allreduce_p16.prf) or .dtprf (datatypes.dtprf), or "
            f"{' / '.join(NATIVE_FILES)} (the MPI library's own decision file)")
    return name


@functools.lru_cache(maxsize=2)
def _installed(library: str, version: str | None = None):
    """What the installed library offers (asked once per process: ompi_info, or the MPICH of that version:
    pgmpi_formats.native_file.MpichTarget)."""
    from pgmpi_formats import native, native_file
    if library == "openmpi":
        return native_file.ompi_target(version)
    if library == "intelmpi":
        return native_file.intel_target(version)
    return native_file.mpich_target(version)


def check_native_file(name: str, text: str, mpi: str | None, version: str | None = None) -> None:
    """The library's own decision file, read the way the library of that version will: Open MPI ignores a
    malformed rules file silently, MPICH aborts on a JSON file it cannot read or evaluate, so either is
    refused here, with the reason (also when no library of that version is installed to check against)."""
    from pgmpi_formats import impi_adjust, mpich_json, native, ompi_rules
    want = NATIVE_FILES[name]
    if mpi and mpi != want:
        raise PublishError(f"{name} is {want}'s decision file; this set is for {mpi}")
    try:
        if want == "openmpi":
            ompi_rules.parse_rules(text, name, _installed("openmpi", version), native.ORDER_UNSAFE["openmpi"])
        elif want == "intelmpi":
            impi_adjust.parse(text, name, _installed("intelmpi", version))
        else:
            t = _installed("mpich", version)
            problems = t.check(mpich_json.loads(text, name))
            if problems:
                raise PublishError(f"{name}: MPICH {t.version} would not read or evaluate it: " + "; ".join(problems))
    except (ompi_rules.RulesError, mpich_json.JsonSelectionError, impi_adjust.AdjustError, native.DiscoveryError,
            FileNotFoundError) as exc:
        raise PublishError(f"{name} refused: {exc}") from None


# ----------------------------------------------------------------- checker

def run_checker(directory: Path, checker: str | Sequence[str] | None = None,
                mpi: str | None = None, timeout: float = 60) -> CheckResult:
    """Validate every profile in directory with pgmpitune-check (exit 0 = valid)."""
    if checker is None:
        found = find_checker(mpi)
        checker = str(found) if found else None
        if checker is None:
            raise PublishError(
                f"{CHECKER_NAME} not found in build/install/<mpi>/bin nor on PATH: "
                f"run deploy/build-lib.sh, or set PGMPITUNE_CHECK")
    cmd = [checker] if isinstance(checker, str) else list(checker)
    files = sorted(str(p) for p in directory.iterdir() if p.is_file() and p.name not in NATIVE_FILES)
    if not files:
        return CheckResult(True, cmd, 0, "empty profile set (library defaults everywhere)")
    cmd = cmd + files
    env = dict(os.environ)
    libdir = Path(cmd[0]).resolve().parent.parent / "lib"
    if (libdir / "libpgmpitune.so").exists():  # an install tree without RPATH: find its library
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(libdir), env.get("LD_LIBRARY_PATH")]))
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PublishError(f"could not run {cmd[0]}: {exc}") from exc
    return CheckResult(res.returncode == 0, cmd, res.returncode, (res.stdout + res.stderr).strip())


# ----------------------------------------------------------------- low-level fs

def _fsync_dir(d: Path) -> None:
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_file(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _locked(target: Path):
    target.mkdir(parents=True, exist_ok=True)
    fd = os.open(target / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _sweep(target)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _sweep(target: Path) -> None:
    """Remove leftovers of an interrupted operation (never visible through current)."""
    for p in target.iterdir():
        if p.name.startswith(".tmp-"):
            shutil.rmtree(p, ignore_errors=True)
        elif p.name.startswith(".current-") and p.is_symlink():
            p.unlink(missing_ok=True)


def _versions(target: Path) -> list[int]:
    vdir = target / "versions"
    if not vdir.is_dir():
        return []
    return sorted(int(p.name) for p in vdir.iterdir() if p.name.isdigit() and p.is_dir())


def current_version(target: Path) -> int | None:
    cur = target / "current"
    if not cur.is_symlink():
        return None
    dest = os.readlink(cur)
    name = Path(dest).name
    return int(name) if name.isdigit() else None


def _swap_current(target: Path, version: int) -> None:
    tmp_link = target / f".current-{uuid.uuid4().hex}"
    os.symlink(f"versions/{version}", tmp_link)
    _step("symlink-created")
    os.replace(tmp_link, target / "current")
    _fsync_dir(target)
    _step("current-swapped")


def _append_history(target: Path, entry: dict) -> None:
    line = (json.dumps(entry, sort_keys=True) + "\n").encode()
    fd = os.open(target / "history.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def read_history(target: Path) -> list[dict]:
    path = target / "history.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a torn last line after a crash: ignore it
    return out


def _stack(target: Path) -> list[int]:
    """Versions made current by publishes, rollbacks popping, reconciled with the symlink."""
    stack: list[int] = []

    def reconcile(v: int) -> None:
        if stack and stack[-1] == v:
            return
        if v in stack:
            del stack[stack.index(v) + 1:]
        else:
            stack.append(v)

    for e in read_history(target):
        if e.get("action") == "publish":
            if e.get("previous") is not None:
                reconcile(int(e["previous"]))  # what was visible, even if unrecorded
            stack.append(int(e["version"]))
        elif e.get("action") == "rollback":
            to = int(e["version"])
            while stack and stack[-1] != to:
                stack.pop()
            if not stack:
                stack.append(to)
    cur = current_version(target)
    if cur is not None:
        # a crash between the swap and the history append: the symlink is the truth
        reconcile(cur)
    return stack


# ----------------------------------------------------------------- operations

def publish(root: str | os.PathLike, machine: str, mpi_name: str, mpi_version: str,
            files: Mapping[str, str | bytes], *, actor: str, validated: bool,
            force: bool = False, reason: str = "", candidate: str | None = None,
            validation: Mapping | None = None, checker: str | Sequence[str] | None = None,
            mpi: str | None = None, directory: str | None = None,
            native_validated: bool = False) -> PublishResult:
    """Publish a profile set as a new version and make it current.

    ``validated`` says whether a validation run showed the candidate is not slower
    anywhere it redirects.  An unvalidated candidate is refused unless ``force``
    (admin), which history.jsonl records with ``reason``.  ``pgmpitune-check``
    must accept the files in every case.  A native decision file (native.rules /
    native.json) also needs ``native_validated``: the service recorded a passing
    validation job of exactly that file (service/analysis/native_validation.py);
    its readers' checks apply even to a forced publication.
    """
    if not actor:
        raise PublishError("actor: who publishes must be recorded")
    if not validated and not force and any(n not in NATIVE_FILES for n in files):
        raise PublishError(
            "candidate has no passing validation run (tuned not slower than default wherever it "
            "redirects); an admin may force the publication, which the audit log records")
    if force and not reason.strip():
        raise PublishError("a forced publication needs a reason for the audit log")
    checked: dict[str, bytes] = {}
    for name, content in files.items():
        data = content.encode() if isinstance(content, str) else bytes(content)
        if len(data) > MAX_FILE_BYTES:
            raise PublishError(f"{name}: {len(data)} bytes is more than {MAX_FILE_BYTES}")
        checked[check_file_name(name)] = data
        if name in NATIVE_FILES:
            check_native_file(name, data.decode("utf-8", "replace"), mpi, mpi_version)
            if not native_validated and not force:
                raise PublishError(
                    f"{name}: no passing validation of this file is recorded by the service (a validation job "
                    "that loaded it through the module and showed correct results, the chosen algorithms in "
                    "use and none slower: `pgmpi agent native-validate`); an admin may force the publication")
            continue
        try:    # the control arm's label is no algorithm: even a forced publication refuses it
            from service.analysis.profiles import refuse_control
            refuse_control(data.decode("utf-8", "replace"), name)
        except ValueError as exc:
            raise PublishError(str(exc)) from None
    if not checked:
        raise PublishError("empty candidate: no profile files to publish")
    target = target_dir(root, machine, mpi_name, mpi_version, directory)
    Path(root).mkdir(parents=True, exist_ok=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    _inside(Path(root), target)
    with _locked(target):
        vdir = target / "versions"
        vdir.mkdir(exist_ok=True)
        previous = current_version(target)
        tmp = target / f".tmp-{uuid.uuid4().hex}"
        tmp.mkdir()
        try:
            _step("tmp-created")
            for name, data in sorted(checked.items()):
                _write_file(tmp / name, data)
            _fsync_dir(tmp)
            _step("files-written")
            check = run_checker(tmp, checker, mpi)
            if not check.ok:
                raise PublishError(f"{CHECKER_NAME} rejected the candidate (exit {check.returncode}):\n"
                                   f"{check.output}")
            _step("validated")
            n = max(_versions(target) + [0]) + 1
            os.rename(tmp, vdir / str(n))
            _fsync_dir(vdir)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        _step("version-renamed")
        _swap_current(target, n)
        entry = {"action": "publish", "version": n, "previous": previous, "actor": actor,
                 "at": _now(), "forced": bool(force), "reason": reason, "validated": bool(validated),
                 "candidate": candidate, "files": sorted(checked), "validation": dict(validation or {}),
                 "check": check.output[-2000:]}
        _append_history(target, entry)
        return PublishResult("publish", target, n, previous, bool(force), check, entry)


def rollback(root: str | os.PathLike, machine: str, mpi_name: str, mpi_version: str, *,
             actor: str, to: int | None = None, reason: str = "", directory: str | None = None) -> PublishResult:
    """Swap ``current`` back to the previous version (or to version ``to``)."""
    if not actor:
        raise PublishError("actor: who rolls back must be recorded")
    target = target_dir(root, machine, mpi_name, mpi_version, directory)
    if not target.is_dir():
        raise PublishError(f"nothing published for {machine} {mpi_name}-{mpi_version}")
    with _locked(target):
        cur = current_version(target)
        if cur is None:
            raise PublishError(f"nothing published for {machine} {mpi_name}-{mpi_version}")
        versions = _versions(target)
        if to is None:
            stack = _stack(target)
            to = stack[-2] if len(stack) >= 2 else 0
        if to == cur:
            raise PublishError(f"version {to} is already current")
        if to == 0 and 0 not in versions:
            empty = target / "versions" / "0"
            tmp = target / f".tmp-{uuid.uuid4().hex}"
            tmp.mkdir()
            _fsync_dir(tmp)
            os.rename(tmp, empty)
            _fsync_dir(target / "versions")
        elif to != 0 and to not in versions:
            raise PublishError(f"version {to} does not exist; versions: {versions}")
        _swap_current(target, to)
        entry = {"action": "rollback", "version": to, "previous": cur, "actor": actor,
                 "at": _now(), "forced": False, "reason": reason}
        _append_history(target, entry)
        return PublishResult("rollback", target, to, cur, False, None, entry)


def status(root: str | os.PathLike, machine: str, mpi_name: str, mpi_version: str,
           directory: str | None = None) -> dict:
    target = target_dir(root, machine, mpi_name, mpi_version, directory)
    if not target.is_dir():
        return {"target": str(target), "current": None, "versions": [], "history": [], "files": {}}
    cur = current_version(target)
    files = {}
    if cur is not None:
        d = target / "versions" / str(cur)
        files = {p.name: p.read_text(errors="replace") for p in sorted(d.iterdir()) if p.is_file()}
    return {"target": str(target), "current": cur, "versions": _versions(target),
            "history": read_history(target), "files": files,
            "rollback_to": (_stack(target)[-2] if len(_stack(target)) >= 2 else 0) if cur else None}


def published_files(root, machine, mpi_name, mpi_version) -> dict[str, str]:
    return status(root, machine, mpi_name, mpi_version)["files"]


def list_targets(root: str | os.PathLike) -> Iterable[tuple[str, str]]:
    """(machine dir, library dir) pairs that have a current set."""
    r = Path(root)
    if not r.is_dir():
        return []
    out = []
    for m in sorted(r.iterdir()):
        if m.is_dir() and not m.name.startswith("."):
            for lib in sorted(m.iterdir()):
                if (lib / "current").is_symlink():
                    out.append((m.name, lib.name))
    return out
