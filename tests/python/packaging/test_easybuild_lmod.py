"""EasyBuild (PyPI) + Lmod (Debian) install libpgmpitune against the MPI libraries of
deploy/mpi-libraries.tsv (packaging_helpers.packaging_mpis(): a representative subset in `make test`), each
an external module of the site (deploy/modules.py); the modules point applications (C, and Fortran where
the MPI has it) at the published profiles, computed when the module is loaded.  Real tools throughout:
eb, Lmod, mpirun."""
from __future__ import annotations

import os
import re
import shutil
import time
import subprocess
import sys
from pathlib import Path

import pytest

import plain_module
from packaging_helpers import (EB_NAMES, ROOT, VERSION, clean_env, lmod_shell, make_source_tarball, mpi_label, profile_label,
                               packaging_mpis, write_mpi_modules, write_published_profile)

pytestmark = [pytest.mark.easybuild, pytest.mark.lmod, pytest.mark.mpi]

EASYCONFIGS = ROOT / "spack-repo/easybuild/easyconfigs"
LIBS = packaging_mpis()
IDS = [lib.id for lib in LIBS]
MACHINE = "testmachine"
REPORT_RE = re.compile(r"^#@pgmpi alg MPI_Allreduce (\d+) (\S+)", re.M)

C_APP = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
  int rank, size, i, in[256], out[256], ok = 1;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (i = 0; i < 256; i++) in[i] = rank + i;
  MPI_Allreduce(in, out, 256, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  for (i = 0; i < 256; i++) ok &= (out[i] == size * i + size * (size - 1) / 2);
  if (rank == 0) printf("c allreduce %s size %d\n", ok ? "ok" : "WRONG", size);
  MPI_Finalize();
  return !ok;
}
"""

F_APP = """
program allred
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, i
  integer :: a(256), b(256)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  do i = 1, 256
    a(i) = rank + i
  end do
  call MPI_Allreduce(a, b, 256, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (all(b == [(nprocs * i + nprocs * (nprocs - 1) / 2, i = 1, 256)])) then
      print '(a,i0)', 'fortran allreduce ok size ', nprocs
    else
      print '(a)', 'fortran allreduce WRONG'
    end if
  end if
  call MPI_Finalize(ierr)
end program allred
"""


def eb_exe() -> str:
    exe = Path(sys.executable).parent / "eb"
    if not exe.exists():
        pytest.fail(f"EasyBuild is not installed in {exe.parent} (pip install easybuild; deploy/venv.sh does)")
    return str(exe)


@pytest.fixture(scope="module")
def eb_site(tmp_path_factory):
    """One EasyBuild installation tree with pgmpitunelib built against each MPI of LIBS."""
    work = tmp_path_factory.mktemp("eb")
    for lib in LIBS:
        if not lib.installed:
            pytest.fail(f"{lib.id} is not installed in {lib.prefix}: deploy/install-mpis.sh {lib.id} (make test does)")
    extmods = write_mpi_modules(work / "mpimods")
    meta = [f"[{lib.module}]\nname = {EB_NAMES[lib.family]}\nversion = {lib.version}\nprefix = {lib.prefix}\n"
            for lib in LIBS]
    (work / "external-modules.ini").write_text("\n".join(meta))
    sources = work / "sources"
    make_source_tarball(sources / "p" / "pgmpitunelib")
    venv_bin = str(Path(sys.executable).parent)
    env = clean_env(
        PATH=f"{venv_bin}:{clean_env()['PATH']}",
        EASYBUILD_ALLOW_USE_AS_ROOT_AND_ACCEPT_CONSEQUENCES="1",
        EASYBUILD_MODULES_TOOL="Lmod", EASYBUILD_MODULE_SYNTAX="Lua",
        EASYBUILD_PREFIX=str(work / "eb"), EASYBUILD_SOURCEPATH=str(sources),
        EASYBUILD_BUILDPATH=str(work / "eb/build"), EASYBUILD_TMPDIR=str(work / "eb/tmp"),
        EASYBUILD_ROBOT_PATHS=f"{EASYCONFIGS}:",
        EASYBUILD_EXTERNAL_MODULES_METADATA=str(work / "external-modules.ini"),
        EASYBUILD_IGNORE_CHECKSUMS="1",
        MODULEPATH=str(extmods),
    )
    logs, times = {}, {}
    for lib in LIBS:
        ec = f"pgmpitunelib-{VERSION}-{mpi_label(lib)}.eb"
        t0 = time.monotonic()
        res = lmod_shell(f"{eb_exe()} {ec} --robot", env=env, timeout=900)
        times[lib.id] = time.monotonic() - t0
        logs[lib.id] = res.stdout + res.stderr
        assert res.returncode == 0, f"eb {ec} failed:\n{logs[lib.id][-6000:]}"
    print("eb seconds per MPI:", {k: round(v, 1) for k, v in times.items()}, "load", os.getloadavg()[0])
    modpath = f"{work}/eb/modules/all:{extmods}"
    profiles = work / "profiles"
    for lib in LIBS:
        write_published_profile(profiles, MACHINE, profile_label(lib))
    apps = work / "apps"
    apps.mkdir()
    (apps / "allreduce.c").write_text(C_APP)
    (apps / "allreduce.f90").write_text(F_APP)
    return {"work": work, "modpath": modpath, "profiles": profiles, "apps": apps, "logs": logs}


def module_env(site, **extra):
    env = dict(MODULEPATH=site["modpath"], PGMPI_SITE_PROFILE_ROOT=str(site["profiles"]),
               PGMPI_SITE_MACHINE=MACHINE, PGMPI_SITE_CONFIG="/nonexistent/site.conf")
    env.update(extra)
    return clean_env(**env)


def mpirun_line(family: str, preload: bool) -> str:
    if family == "openmpi":
        return "mpirun -np 2" + (' -x LD_PRELOAD="$PGMPITUNE_PRELOAD"' if preload else "")
    return "mpirun -np 2" + (' -genv LD_PRELOAD "$PGMPITUNE_PRELOAD"' if preload else "")


# the MPI sonames a build links (ldd), e.g. {"libmpich.so.12", "libmpichfort.so.12"}
def mpi_sonames(ldd_out: str) -> dict[str, str]:
    return dict(re.findall(r"^\s*(libmpi\w*\.so\.\d+) => (\S+)", ldd_out, re.M))


@pytest.mark.parametrize("lib", LIBS, ids=IDS)
def test_eb_install_builds_against_the_right_mpi(eb_site, lib):
    label = mpi_label(lib)
    res = lmod_shell(f"""
module load {lib.module} pgmpitunelib/{VERSION}-{label}
module -t list 2>&1
echo "ROOT=$EBROOTPGMPITUNELIB"
ldd "$EBROOTPGMPITUNELIB/lib/libpgmpitune.so"
pgmpitune-check --list
""", env=module_env(eb_site))
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert f"pgmpitunelib/{VERSION}-{label}" in out
    # the shim trap (Debian's two in /usr) and the registry prefixes: each build links its own MPI only
    linked = mpi_sonames(out)
    if lib.id == "mpich":
        assert "libmpich.so.12" in linked and not any(n.startswith("libmpi.so") for n in linked), linked
    else:
        want = "libmpi.so.40" if lib.family == "openmpi" else "libmpi.so.12"
        assert want in linked and not any(n.startswith("libmpich") for n in linked), linked
        assert [n for n in linked if n.startswith("libmpi.so")] == [want], linked
        if not lib.debian:
            assert linked[want].startswith(f"{lib.prefix}/"), linked
    assert "allreduce_as_reduce_bcast" in out


@pytest.mark.parametrize("lib", LIBS, ids=IDS)
def test_module_points_c_and_fortran_apps_at_published_profile(eb_site, lib):
    label = mpi_label(lib)
    mpi = lib.id
    fortran = lib.source_kind == "debian"    # the registry MPIs have no working Fortran wrapper
    apps = eb_site["apps"]
    f_part = f"""mpif90 allreduce.f90 -o f_{mpi}
echo "== Fortran, preloaded into the ranks"
PGMPITUNE_VERBOSE=1 {mpirun_line(lib.family, True)} ./f_{mpi} 2>&1""" if fortran else \
        f"""echo "== Fortran, preloaded into the ranks"
echo "no Fortran wrapper: libpgmpitune's Fortran support is skipped for {mpi}"
"""
    res = lmod_shell(f"""
module load {lib.module} pgmpitunelib/{VERSION}-{label}
echo "PROFILE_DIR=$PGMPITUNE_PROFILE_DIR"
echo "SHELL_LD_PRELOAD=${{LD_PRELOAD:-}}"
cd {apps}
mpicc allreduce.c -o c_{mpi} -lpgmpitune
echo "== C, linked with -lpgmpitune"
PGMPITUNE_VERBOSE=1 {mpirun_line(lib.family, False)} ./c_{mpi} 2>&1
{f_part}
echo "== C, machine without published profiles"
PGMPI_SITE_MACHINE=othermachine module load pgmpitunelib/{VERSION}-{label}
echo "OTHER_PROFILE_DIR=$PGMPITUNE_PROFILE_DIR"
PGMPITUNE_VERBOSE=1 {mpirun_line(lib.family, False)} ./c_{mpi} 2>&1
""", env=module_env(eb_site))
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    expected = f"{eb_site['profiles']}/{MACHINE}/{profile_label(lib)}/current"
    assert f"PROFILE_DIR={expected}\n" in out
    assert "SHELL_LD_PRELOAD=\n" in out
    assert f"OTHER_PROFILE_DIR={eb_site['profiles']}/othermachine/{profile_label(lib)}/current" in out
    c_part, f_part, other_part = out.split("== C, linked")[1].split("== Fortran")[0], \
        out.split("== Fortran")[1].split("== C, machine")[0], out.split("== C, machine")[1]
    assert "c allreduce ok size 2" in c_part, out
    assert ("1024", "allreduce_as_reduce_bcast") in REPORT_RE.findall(c_part), c_part
    if fortran:
        assert "fortran allreduce ok size 2" in f_part, out
        assert ("1024", "allreduce_as_reduce_bcast") in REPORT_RE.findall(f_part), f_part
    other = REPORT_RE.findall(other_part)
    assert other and all(alg == "default" for _, alg in other), other_part


def test_profile_dir_follows_site_at_load_time_not_build_time(eb_site, tmp_path, monkeypatch):
    lib = LIBS[0]
    label = mpi_label(lib)
    conf = tmp_path / "site.conf"
    conf.write_text("# pgmpi-site\nprofile_root = /srv/from-site-file   # comment\nmachine = filemachine\n")
    res = lmod_shell(f"""
module load {lib.module} pgmpitunelib/{VERSION}-{label}
echo "A=$PGMPITUNE_PROFILE_DIR"
module unload pgmpitunelib
unset PGMPI_SITE_PROFILE_ROOT PGMPI_SITE_MACHINE
export PGMPI_SITE_CONFIG={conf}
module load pgmpitunelib/{VERSION}-{label}
echo "B=$PGMPITUNE_PROFILE_DIR"
module unload pgmpitunelib
echo "C=${{PGMPITUNE_PROFILE_DIR:-unset}}"
""", env=module_env(eb_site))
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert f"A={eb_site['profiles']}/{MACHINE}/{profile_label(lib)}/current" in out
    assert f"B=/srv/from-site-file/filemachine/{profile_label(lib)}/current" in out
    # the publisher (pgmpi_formats.site) reads the same file to the same root
    from pgmpi_formats import site as site_config
    for var in ("PGMPI_PROFILE_ROOT", "PGMPI_SITE_PROFILE_ROOT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PGMPI_SITE_CONFIG", str(conf))
    assert str(site_config.profile_root()) == "/srv/from-site-file"
    assert "C=unset" in out


def test_family_prevents_two_builds_loaded(eb_site):
    if len(LIBS) < 2:
        pytest.fail("needs two MPIs in PGMPI_PACKAGING_MPIS")
    a, b = LIBS[0], LIBS[1]
    res = lmod_shell(f"""
module load {a.module} pgmpitunelib/{VERSION}-{mpi_label(a)}
module load {b.module} pgmpitunelib/{VERSION}-{mpi_label(b)} 2>&1
module -t list 2>&1
echo "MPI=$PGMPITUNE_MPI"
""", env=module_env(eb_site))
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    listed = [ln for ln in out.splitlines() if ln.startswith(("pgmpitunelib/", a.id + "/", b.id + "/"))]
    assert listed == [b.module, f"pgmpitunelib/{VERSION}-{mpi_label(b)}"], out
    assert f"MPI={profile_label(b)}" in out


def render_plain_template(dest: Path, prefix: str, mpi: str, version: str, preload: bool) -> Path:
    text = plain_module.render(prefix, mpi, version, preload)
    assert "@" not in re.sub(r"#@pgmpi|--.*", "", text), "unreplaced placeholder"
    path = dest / "pgmpitunelib" / f"{VERSION}-{mpi}-preload.lua"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_plain_template_preloads_ranks_only(eb_site, tmp_path):
    """The plain modulefile template (sites without Spack/EasyBuild), preload flavour, on an
    EasyBuild-installed Open MPI build: ranks get LD_PRELOAD, the shell never does, unload restores."""
    ompi = next((lib for lib in LIBS if lib.family == "openmpi"), None)
    if ompi is None:
        pytest.fail("needs an Open MPI in PGMPI_PACKAGING_MPIS (OMPI_MCA_mca_base_env_list)")
    prefix = lmod_shell(f"module load {ompi.module} pgmpitunelib/0.1.0-{mpi_label(ompi)}; echo $EBROOTPGMPITUNELIB",
                        env=module_env(eb_site)).stdout.strip().splitlines()[-1]
    render_plain_template(tmp_path / "mods", prefix, "openmpi", ompi.version, preload=True)
    apps = eb_site["apps"]
    res = lmod_shell(f"""
export SRUN_EXPORT_ENV=NIL
module load {ompi.module} pgmpitunelib/{VERSION}-openmpi-preload
echo "SHELL_LD_PRELOAD=${{LD_PRELOAD:-}}"
echo "SRUN=$SRUN_EXPORT_ENV"
echo "OMPI=$OMPI_MCA_mca_base_env_list"
cd {apps}
[ -x c_plain ] || mpicc allreduce.c -o c_plain
PGMPITUNE_VERBOSE=1 mpirun --oversubscribe -np 2 ./c_plain 2>&1
mpirun -np 1 sh -c 'echo "RANK_LD_PRELOAD=$LD_PRELOAD"'
module unload pgmpitunelib
echo "AFTER_SRUN=$SRUN_EXPORT_ENV AFTER_OMPI=${{OMPI_MCA_mca_base_env_list:-unset}}"
""", env=module_env(eb_site, MODULEPATH=f"{tmp_path / 'mods'}:{eb_site['modpath']}"))
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    lib = f"{prefix}/lib/libpgmpitune.so"
    assert "SHELL_LD_PRELOAD=\n" in out
    assert f"SRUN=ALL,LD_PRELOAD={lib}" in out
    assert f"OMPI=LD_PRELOAD={lib}" in out
    assert f"RANK_LD_PRELOAD={lib}" in out
    # not linked with -lpgmpitune: only the preload can have produced this report
    assert ("1024", "allreduce_as_reduce_bcast") in REPORT_RE.findall(out), out
    assert "AFTER_SRUN=NIL AFTER_OMPI=unset" in out


def test_toolchain_easyconfigs_resolve(eb_site):
    """The gompi and gmpich easyconfigs parse and their whole dependency graph resolves (dry run)."""
    env = clean_env(PATH=f"{Path(sys.executable).parent}:{clean_env()['PATH']}",
                    EASYBUILD_ALLOW_USE_AS_ROOT_AND_ACCEPT_CONSEQUENCES="1",
                    EASYBUILD_MODULES_TOOL="Lmod", EASYBUILD_MODULE_SYNTAX="Lua",
                    EASYBUILD_PREFIX=str(eb_site["work"] / "eb-dry"), EASYBUILD_ROBOT_PATHS=f"{EASYCONFIGS}:")
    for ec, tc in ((f"pgmpitunelib-{VERSION}-gompi-2025a.eb", "gompi/2025a"),
                   (f"pgmpitunelib-{VERSION}-gmpich-2025.04.eb", "gmpich/2025.04")):
        res = lmod_shell(f"{eb_exe()} -D --robot {EASYCONFIGS}/p/pgmpitunelib/{ec}", env=env)
        out = " ".join((res.stdout + res.stderr).split())  # eb wraps long lines
        assert res.returncode == 0, out
        assert f"(module: {tc})" in out and "(module: CMake/" in out, out
        assert f"(module: pgmpitunelib/{VERSION}-{tc.replace('/', '-')})" in out, out
