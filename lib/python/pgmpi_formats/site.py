"""Where a site keeps its configuration and its published profiles: the one resolver for the service, the
agent, `pgmpi` and (in Lua, with the same rules) the module templates, spack-repo/packages/pgmpitunelib/
pgmpitune-site.lua.  docs/configuration.md states the precedence; tests/python/formats/test_site.py holds
both implementations to it.

    config_dir()            /etc/pgmpi-site, or $PGMPI_SITE_CONFIG_DIR
    site_config_path()      <config dir>/site.conf, or $PGMPI_SITE_CONFIG (a file)
    read_site_config()      {key: value} of that file; {} when it does not exist
    profile_root(explicit)  explicit > site.conf profile_root > DEFAULT_PROFILE_ROOT

Deprecated (honoured for one release, with a DeprecationWarning): $PGMPI_PROFILE_ROOT and
$PGMPI_SITE_PROFILE_ROOT, between the explicit value and site.conf.  site.conf format: lines
`key = value`, `#` starts a comment.
"""
from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

DEFAULT_CONFIG_DIR = "/etc/pgmpi-site"
DEFAULT_PROFILE_ROOT = "/opt/pgmpi-site/profiles"
DEPRECATED_ROOT_VARS = ("PGMPI_PROFILE_ROOT", "PGMPI_SITE_PROFILE_ROOT")
_LINE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*=\s*(.*?)\s*$")


def config_dir() -> Path:
    return Path(os.environ.get("PGMPI_SITE_CONFIG_DIR") or DEFAULT_CONFIG_DIR)


def site_config_path() -> Path:
    return Path(os.environ.get("PGMPI_SITE_CONFIG") or config_dir() / "site.conf")


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


def profile_root(explicit: str | os.PathLike | None = None) -> Path:
    """The site's profile root (see the module docstring for the order)."""
    if explicit:
        return Path(explicit).absolute()
    for var in DEPRECATED_ROOT_VARS:
        value = os.environ.get(var)
        if value:
            warnings.warn(f"${var} is deprecated and will be ignored in the next release: set profile_root in "
                          f"{site_config_path()} (or pass the root explicitly)", DeprecationWarning, stacklevel=2)
            return Path(value).absolute()
    return Path(read_site_config().get("profile_root") or DEFAULT_PROFILE_ROOT).absolute()
