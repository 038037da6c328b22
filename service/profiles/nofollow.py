"""The profile root's file system without following symbolic links (plain Python, Linux).

Below the profile root every directory is opened relative to its parent's descriptor with
``O_NOFOLLOW | O_DIRECTORY`` and every file with ``O_NOFOLLOW``: a symlink planted anywhere in a set
(``versions``, ``versions/<n>``, a profile file, ``history.jsonl``, ``.lock``, the machine directory) is
refused with a message naming it, instead of moving a publication, an append or a read outside the root.
The root itself is the administrator's setting and may be a symlink; ``current`` is the one symlink the
layout has, and it is only ever read with readlink(), never followed.

Failures are ``Refused`` (a ValueError) with a message; the publishing code turns them into PublishError.
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import Iterator

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Refused(ValueError):
    """A symlink or non-directory where the profile root's layout needs a real directory or file."""


def _why(path: str, exc: OSError, parent_fd: int, name: str) -> Refused:
    try:
        st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            return Refused(f"{path} is a symbolic link; the profile root holds real directories and files only "
                           "(remove the link; nothing was written)")
        if exc.errno == errno.ENOTDIR:
            return Refused(f"{path} is not a directory")
    except OSError:
        pass
    return Refused(f"{path}: {exc.strerror or exc}")


def open_dir(parent_fd: int, name: str, path: str, create: bool = False) -> int:
    """A descriptor of the directory `name` inside `parent_fd` (created when asked); refuses a symlink."""
    if name in ("", ".", "..") or "/" in name:
        raise Refused(f"{path}: {name!r} is not one path component")
    if create:
        try:
            os.mkdir(name, 0o755, dir_fd=parent_fd)
        except FileExistsError:
            pass
        except OSError as exc:
            raise Refused(f"cannot create {path}: {exc.strerror or exc}") from None
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _why(path, exc, parent_fd, name) from None


def open_path(root: Path, parts: tuple[str, ...], create: bool = False) -> int:
    """A descriptor of root/parts[0]/parts[1]/..., every part opened without following symlinks (created
    when `create`). FileNotFoundError when a part is missing and not created."""
    if create:
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise Refused(f"cannot create the profile root {root}: {exc.strerror or exc}") from None
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise Refused(f"cannot open the profile root {root}: {exc.strerror or exc}") from None
    path = root
    try:
        for part in parts:
            path = path / part
            nfd = open_dir(fd, part, str(path), create)
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def opened(root: Path, parts: tuple[str, ...], create: bool = False) -> Iterator[int]:
    fd = open_path(root, parts, create)
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def subdir(parent_fd: int, name: str, path: str, create: bool = False) -> Iterator[int]:
    fd = open_dir(parent_fd, name, path, create)
    try:
        yield fd
    finally:
        os.close(fd)


def open_file(dir_fd: int, name: str, path: str, flags: int, mode: int = 0o644) -> int:
    """os.open relative to dir_fd with O_NOFOLLOW; a symlink (or a non-regular file) is refused."""
    try:
        fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _why(path, exc, dir_fd, name) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Refused(f"{path} is not a regular file")
    return fd


def read_file(dir_fd: int, name: str, path: str, limit: int) -> bytes:
    fd = open_file(dir_fd, name, path, os.O_RDONLY)
    try:
        chunks, size = [], 0
        while True:
            b = os.read(fd, 1 << 16)
            if not b:
                return b"".join(chunks)
            size += len(b)
            if size > limit:
                raise Refused(f"{path} is larger than {limit} bytes")
            chunks.append(b)
    finally:
        os.close(fd)


def kind(dir_fd: int, name: str) -> str:
    """'dir', 'file', 'link', 'other' or '' (absent), without following a link."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return ""
    if stat.S_ISLNK(mode):
        return "link"
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"


def fd_path(fd: int) -> str:
    """A path naming exactly the directory behind fd (for a subprocess such as the checker)."""
    return f"/proc/{os.getpid()}/fd/{fd}"
