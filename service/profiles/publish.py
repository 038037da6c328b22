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

from pgmpi_formats import native_file
from pgmpi_formats.checker import CHECKER_NAME, find_checker
from service.profiles import nofollow

_SAFE = re.compile(r"[^A-Za-z0-9._+-]")
_FILE_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,123}\.(prf|dtprf)$")   # .dtprf: datatype profiles
# the library's own decision file, one per set (pgmpi_formats.ompi_rules / mpich_json)
NATIVE_FILES = {name: lib for lib, name in native_file.NAMES.items()}   # file -> the library family it is for
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
    database assigned to a profile set, service/workflows/publish.set_directory), guaranteed inside root."""
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
# Below the root every directory and file is opened relative to its parent's descriptor without following
# symlinks (service/profiles/nofollow.py): a planted symlink is refused, never followed.

def _split(target: Path) -> tuple[Path, tuple[str, str]]:
    """target is <root>/<machine>/<set directory> (target_dir): the trusted root and the two components."""
    return target.parent.parent, (target.parent.name, target.name)


@contextlib.contextmanager
def _target_fd(target: Path, create: bool = False):
    """The set directory's descriptor; None when it does not exist (and create is False)."""
    root, parts = _split(target)
    try:
        fd = nofollow.open_path(root, parts, create)
    except FileNotFoundError:
        if create:
            raise PublishError(f"cannot create {target}: a directory above it vanished") from None
        fd = None
    except nofollow.Refused as exc:
        raise PublishError(str(exc)) from None
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def _fsync_fd(fd: int) -> None:
    os.fsync(fd)


def _write_file(dir_fd: int, name: str, path: str, data: bytes) -> None:
    fd = nofollow.open_file(dir_fd, name, path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
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
    """The set directory (created), flock()ed through its .lock; yields the directory's descriptor."""
    with _target_fd(target, create=True) as tfd:
        try:
            fd = nofollow.open_file(tfd, ".lock", str(target / ".lock"), os.O_RDWR | os.O_CREAT)
        except nofollow.Refused as exc:
            raise PublishError(str(exc)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            _sweep(tfd)
            yield tfd
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def _sweep(tfd: int) -> None:
    """Remove leftovers of an interrupted operation (never visible through current)."""
    for name in os.listdir(tfd):
        k = nofollow.kind(tfd, name)
        if name.startswith(".tmp-") and k == "dir":
            shutil.rmtree(name, ignore_errors=True, dir_fd=tfd)
        elif (name.startswith(".tmp-") or name.startswith(".current-")) and k in ("link", "file"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=tfd)


def _versions_fd(tfd: int, target: Path) -> list[int]:
    if nofollow.kind(tfd, "versions") == "":
        return []
    try:
        with nofollow.subdir(tfd, "versions", str(target / "versions")) as vfd:
            out = []
            for name in os.listdir(vfd):
                if name.isdigit():
                    k = nofollow.kind(vfd, name)
                    if k == "link":
                        raise nofollow.Refused(f"{target / 'versions' / name} is a symbolic link; the profile root "
                                               "holds real directories and files only")
                    if k == "dir":
                        out.append(int(name))
            return sorted(out)
    except nofollow.Refused as exc:
        raise PublishError(str(exc)) from None


def _versions(target: Path) -> list[int]:
    with _target_fd(target) as tfd:
        return [] if tfd is None else _versions_fd(tfd, target)


_CURRENT = re.compile(r"^versions/([0-9]{1,9})$")


def _current_fd(tfd: int, target: Path) -> int | None:
    k = nofollow.kind(tfd, "current")
    if k == "":
        return None
    if k != "link":
        raise PublishError(f"{target / 'current'} is not the symlink this layout keeps there")
    dest = os.readlink("current", dir_fd=tfd)
    m = _CURRENT.match(dest)
    if m is None:
        raise PublishError(f"{target / 'current'} points at {dest!r}, not versions/<n>: refusing to follow it")
    return int(m.group(1))


def current_version(target: Path) -> int | None:
    with _target_fd(target) as tfd:
        return None if tfd is None else _current_fd(tfd, target)


def _version_files(tfd: int, target: Path, version: int) -> dict[str, str]:
    """The files of versions/<version>, each read without following a symlink (a symlink is refused)."""
    vpath = target / "versions" / str(version)
    try:
        with nofollow.subdir(tfd, "versions", str(target / "versions")) as vfd, \
                nofollow.subdir(vfd, str(version), str(vpath)) as dfd:
            out = {}
            for name in sorted(os.listdir(dfd)):
                k = nofollow.kind(dfd, name)
                if k == "dir":
                    continue
                data = nofollow.read_file(dfd, name, str(vpath / name), MAX_FILE_BYTES)
                out[name] = data.decode("utf-8", "replace")
            return out
    except FileNotFoundError:
        raise PublishError(f"{vpath} is missing") from None
    except nofollow.Refused as exc:
        raise PublishError(str(exc)) from None


def version_files(target: Path, version: int) -> dict[str, str]:
    with _target_fd(target) as tfd:
        if tfd is None:
            raise PublishError(f"{target} does not exist")
        return _version_files(tfd, target, version)


def _swap_current(tfd: int, version: int) -> None:
    tmp_link = f".current-{uuid.uuid4().hex}"
    os.symlink(f"versions/{version}", tmp_link, dir_fd=tfd)
    _step("symlink-created")
    os.replace(tmp_link, "current", src_dir_fd=tfd, dst_dir_fd=tfd)
    _fsync_fd(tfd)
    _step("current-swapped")


def _append_history(tfd: int, target: Path, entry: dict) -> None:
    line = (json.dumps(entry, sort_keys=True) + "\n").encode()
    try:
        fd = nofollow.open_file(tfd, "history.jsonl", str(target / "history.jsonl"),
                                os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    except nofollow.Refused as exc:
        raise PublishError(str(exc)) from None
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_history_fd(tfd: int, target: Path) -> list[dict]:
    try:
        text = nofollow.read_file(tfd, "history.jsonl", str(target / "history.jsonl"), 1 << 30).decode(
            "utf-8", "replace")
    except FileNotFoundError:
        return []
    except nofollow.Refused as exc:
        raise PublishError(str(exc)) from None
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a torn last line after a crash: ignore it
    return out


def read_history(target: Path) -> list[dict]:
    with _target_fd(target) as tfd:
        return [] if tfd is None else _read_history_fd(tfd, target)


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
    with _locked(target) as tfd:
        try:
            vfd = nofollow.open_dir(tfd, "versions", str(target / "versions"), create=True)
        except nofollow.Refused as exc:
            raise PublishError(str(exc)) from None
        try:
            previous = _current_fd(tfd, target)
            tmp = f".tmp-{uuid.uuid4().hex}"
            os.mkdir(tmp, 0o755, dir_fd=tfd)
            try:
                _step("tmp-created")
                with nofollow.subdir(tfd, tmp, str(target / tmp)) as dfd:
                    for name, data in sorted(checked.items()):
                        _write_file(dfd, name, str(target / tmp / name), data)
                    _fsync_fd(dfd)
                    _step("files-written")
                    # the checker reads the files through this very directory, not through a path
                    check = run_checker(Path(nofollow.fd_path(dfd)), checker, mpi)
                if not check.ok:
                    raise PublishError(f"{CHECKER_NAME} rejected the candidate (exit {check.returncode}):\n"
                                       f"{check.output}")
                _step("validated")
                n = max(_versions_fd(tfd, target) + [0]) + 1
                os.rename(tmp, str(n), src_dir_fd=tfd, dst_dir_fd=vfd)
                _fsync_fd(vfd)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True, dir_fd=tfd)
                raise
        finally:
            os.close(vfd)
        _step("version-renamed")
        _swap_current(tfd, n)
        entry = {"action": "publish", "version": n, "previous": previous, "actor": actor,
                 "at": _now(), "forced": bool(force), "reason": reason, "validated": bool(validated),
                 "candidate": candidate, "files": sorted(checked), "validation": dict(validation or {}),
                 "check": check.output[-2000:]}
        _append_history(tfd, target, entry)
        return PublishResult("publish", target, n, previous, bool(force), check, entry)


def rollback(root: str | os.PathLike, machine: str, mpi_name: str, mpi_version: str, *,
             actor: str, to: int | None = None, reason: str = "", directory: str | None = None) -> PublishResult:
    """Swap ``current`` back to the previous version (or to version ``to``)."""
    if not actor:
        raise PublishError("actor: who rolls back must be recorded")
    target = target_dir(root, machine, mpi_name, mpi_version, directory)
    with _target_fd(target) as tfd:
        if tfd is None:
            raise PublishError(f"nothing published for {machine} {mpi_name}-{mpi_version}")
    with _locked(target) as tfd:
        cur = _current_fd(tfd, target)
        if cur is None:
            raise PublishError(f"nothing published for {machine} {mpi_name}-{mpi_version}")
        versions = _versions_fd(tfd, target)
        if to is None:
            stack = _stack(target)
            to = stack[-2] if len(stack) >= 2 else 0
        if to == cur:
            raise PublishError(f"version {to} is already current")
        if to == 0 and 0 not in versions:
            tmp = f".tmp-{uuid.uuid4().hex}"
            os.mkdir(tmp, 0o755, dir_fd=tfd)
            with nofollow.subdir(tfd, "versions", str(target / "versions"), create=True) as vfd:
                os.rename(tmp, "0", src_dir_fd=tfd, dst_dir_fd=vfd)
                _fsync_fd(vfd)
        elif to != 0 and to not in versions:
            raise PublishError(f"version {to} does not exist; versions: {versions}")
        _swap_current(tfd, to)
        entry = {"action": "rollback", "version": to, "previous": cur, "actor": actor,
                 "at": _now(), "forced": False, "reason": reason}
        _append_history(tfd, target, entry)
        return PublishResult("rollback", target, to, cur, False, None, entry)


def status(root: str | os.PathLike, machine: str, mpi_name: str, mpi_version: str,
           directory: str | None = None) -> dict:
    """What is published: current version, versions, history and the current files (read without following
    a symlink: one planted in the set is refused with PublishError, never shown)."""
    target = target_dir(root, machine, mpi_name, mpi_version, directory)
    with _target_fd(target) as tfd:
        if tfd is None:
            return {"target": str(target), "current": None, "versions": [], "history": [], "files": {}}
        cur = _current_fd(tfd, target)
        files = _version_files(tfd, target, cur) if cur is not None else {}
        history = _read_history_fd(tfd, target)
        versions = _versions_fd(tfd, target)
    stack = _stack(target) if cur else []
    return {"target": str(target), "current": cur, "versions": versions, "history": history, "files": files,
            "rollback_to": (stack[-2] if len(stack) >= 2 else 0) if cur else None}


def published_files(root, machine, mpi_name, mpi_version) -> dict[str, str]:
    return status(root, machine, mpi_name, mpi_version)["files"]


def list_targets(root: str | os.PathLike) -> Iterable[tuple[str, str]]:
    """(machine dir, library dir) pairs that have a current set (symlinked directories are skipped)."""
    r = Path(root)
    out = []
    try:
        with nofollow.opened(r, ()) as rfd:
            for m in sorted(os.listdir(rfd)):
                if m.startswith(".") or nofollow.kind(rfd, m) != "dir":
                    continue
                with nofollow.subdir(rfd, m, str(r / m)) as mfd:
                    for lib in sorted(os.listdir(mfd)):
                        if nofollow.kind(mfd, lib) == "dir":
                            with nofollow.subdir(mfd, lib, str(r / m / lib)) as lfd:
                                if nofollow.kind(lfd, "current") == "link":
                                    out.append((m, lib))
    except (FileNotFoundError, nofollow.Refused):
        return out
    return out
