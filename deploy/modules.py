#!/usr/bin/env python3
"""Write the Lmod hierarchy of this machine's MPI libraries and of libpgmpitune built against each.

    python3 deploy/modules.py [--root DIR] [id ...]     (default root: build/modules)

    <root>/Core/<id>/<version>.lua                         the MPI itself: family("mpi"), the environment of
                                                           deploy/mpi-env.sh, and its level on MODULEPATH
    <root>/MPI/<id>/<version>/pgmpitunelib/<ver>.lua        spack-repo/modules/pgmpitunelib.lua.in over
                                                           build/install/<id> (deploy/build-lib.sh <id>)

`module use <root>/Core; module load mpich5 pgmpitunelib`. The MPI modules set what
pgmpi_formats.mpi_libraries.MpiLibrary.environment() sets (one rule for the shell helper, Python and Lmod).
Libraries that are not installed, or not built, are left out with a message.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TOP / "lib" / "python"))
from pgmpi_formats.mpi_libraries import MpiLibrary, read_mpi_libraries  # noqa: E402

LIB_VERSION = "0.1.0"
TEMPLATE = TOP / "spack-repo" / "modules" / "pgmpitunelib.lua.in"
SITE_LUA = TOP / "spack-repo" / "packages" / "pgmpitunelib" / "pgmpitune-site.lua"
PATH_VARS = ("PATH", "LD_LIBRARY_PATH")


def lua(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def mpi_module(lib: MpiLibrary, mpi_level: Path) -> str:
    env = lib.environment({})
    lines = [f"-- {lib.family} {lib.version} ({lib.source}), written by deploy/modules.py from deploy/mpi-libraries.tsv",
             f'whatis("Name: {lib.id}")', f'whatis("Version: {lib.version}")',
             f'whatis("Description: MPI library {lib.family} {lib.version} in {lib.prefix}")',
             'family("mpi")']
    for var in PATH_VARS:   # prepend in reverse so that the first directory ends up first
        for d in reversed(env.get(var, "").split(":") if env.get(var) else []):
            lines.append(f"prepend_path({lua(var)}, {lua(d)})")
    for var, val in env.items():
        if var not in PATH_VARS:
            lines.append(f"setenv({lua(var)}, {lua(val)})")
    lines.append(f"prepend_path(\"MODULEPATH\", {lua(str(mpi_level))})")
    return "\n".join(lines) + "\n"


def pgmpitunelib_module(lib: MpiLibrary, prefix: Path) -> str:
    text = TEMPLATE.read_text()
    for key, val in {"@PREFIX@": str(prefix), "@VERSION@": LIB_VERSION, "@MPI_NAME@": lib.family,
                     "@MPI_VERSION@": lib.reported_version,   # the profile path the service publishes
                     "@PRELOAD@": "false"}.items():
        text = text.replace(key, val)
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=TOP / "build" / "modules")
    ap.add_argument("--builds", type=Path, default=TOP / "build" / "install",
                    help="where build-lib.sh installed libpgmpitune per id (default build/install)")
    ap.add_argument("ids", nargs="*")
    args = ap.parse_args(argv)
    libs = read_mpi_libraries()
    known = {lib.id for lib in libs}
    for i in args.ids:
        if i not in known:
            print(f"modules.py: unknown MPI id '{i}' (valid: {', '.join(sorted(known))})", file=sys.stderr)
            return 2
    root = args.root.resolve()
    for lib in libs:
        if args.ids and lib.id not in args.ids:
            continue
        if not lib.installed:
            print(f"modules.py: {lib.id}: not installed in {lib.prefix} (deploy/install-mpis.sh {lib.id}); no module")
            continue
        level = root / "MPI" / lib.id / lib.version
        core = root / "Core" / lib.id / f"{lib.version}.lua"
        core.parent.mkdir(parents=True, exist_ok=True)
        core.write_text(mpi_module(lib, level))
        prefix = args.builds.resolve() / lib.id
        if not (prefix / "lib" / "libpgmpitune.so").exists():
            print(f"modules.py: {lib.module}: written; libpgmpitune is not built for it "
                  f"(deploy/build-lib.sh {lib.id}), so no pgmpitunelib under it")
            continue
        # the module's site logic (profile directory at load time) lives in the library's prefix
        share = prefix / "share" / "pgmpitunelib"
        share.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SITE_LUA, share / SITE_LUA.name)
        mod = level / "pgmpitunelib" / f"{LIB_VERSION}.lua"
        mod.parent.mkdir(parents=True, exist_ok=True)
        mod.write_text(pgmpitunelib_module(lib, prefix))
        print(f"modules.py: {lib.module} + pgmpitunelib/{LIB_VERSION} in {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
