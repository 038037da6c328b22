"""The site file, ``/etc/pgmpi-site/site.conf`` (or ``$PGMPI_SITE_CONFIG``): one place that says where the
published profiles live. The modules read it at load time (spack-repo/packages/pgmpitunelib/
pgmpitune-site.lua); the service and ``pgmpi profile`` read it here, with the same rules, so the publisher
and the readers cannot disagree about the profile root.

Format: lines ``key = value``; ``#`` starts a comment; a missing file means no settings.
Plain Python, no Flask.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

DEFAULT_SITE_CONFIG = "/etc/pgmpi-site/site.conf"
_LINE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*=\s*(.*?)\s*$")


def site_config_path() -> Path:
    return Path(os.environ.get("PGMPI_SITE_CONFIG") or DEFAULT_SITE_CONFIG)


def read_site_config(path: Path | None = None) -> dict[str, str]:
    """The settings of the site file; {} when it does not exist."""
    path = path or site_config_path()
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    conf: dict[str, str] = {}
    for line in text.splitlines():
        m = _LINE.match(line.split("#", 1)[0])
        if m and m.group(2):
            conf[m.group(1)] = m.group(2)
    return conf


def profile_root(explicit: str | os.PathLike | None = None) -> Path | None:
    """The site's profile root: the explicit value, else $PGMPI_PROFILE_ROOT (the service's own setting),
    else $PGMPI_SITE_PROFILE_ROOT (the modules' override), else ``profile_root`` of the site file; None
    when none is set."""
    for value in (explicit, os.environ.get("PGMPI_PROFILE_ROOT"), os.environ.get("PGMPI_SITE_PROFILE_ROOT"),
                  read_site_config().get("profile_root")):
        if value:
            return Path(value).absolute()
    return None
