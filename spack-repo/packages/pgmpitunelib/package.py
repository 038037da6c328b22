# Spack package for libpgmpitune (pgmpi-site), one build per MPI.
#
# Use:  spack repo add <pgmpi-site>/spack-repo
#       config.yaml:  template_dirs: [$spack/share/spack/templates, <pgmpi-site>/spack-repo/templates]
#       (the Lmod module of this package is rendered from pgmpitunelib/modulefile.lua there;
#       spack-repo/modules.yaml is an example of the Lmod hierarchy it belongs in)
#       spack install pgmpitunelib ^openmpi      spack install pgmpitunelib ^mpich
import os
import re
import socket
import subprocess
from pathlib import Path

from spack.package import *

# This file sits at <checkout>/spack-repo/packages/pgmpitunelib/package.py: when the repository is
# used from a pgmpi-site checkout, the "main" version is that checkout's HEAD commit, cloned from it
# (offline): what is checked out, whatever the branch -- a CI checkout is often a detached HEAD without a
# local "main" branch, and a worktree on another branch would otherwise build main's code.
_CHECKOUT = Path(__file__).resolve().parents[3]


def _checked_out_commit(checkout):
    """The commit HEAD names in `checkout` (a clone or a worktree), None when it is no git checkout."""
    if not (checkout / ".git").exists():
        return None
    res = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--verify", "HEAD^{commit}"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"pgmpitunelib: {checkout} has a .git but git cannot read its HEAD: "
                           f"{res.stderr.strip() or res.returncode}")
    return res.stdout.strip()


_HEAD = _checked_out_commit(_CHECKOUT)


def _pool_bytes(value):
    return value == "default" or bool(re.fullmatch(r"[0-9]+", str(value)))


def site_profile_dir(mpi_label, environ=None):
    """The same rule as pgmpitune-site.lua (which Lmod modules evaluate at load time):
    <profile root>/<machine>/<mpi label>/current, from the site file (PGMPI_SITE_CONFIG, else
    <PGMPI_SITE_CONFIG_DIR or /etc/pgmpi-site>/site.conf), PGMPI_SITE_MACHINE and the deprecated root
    variables PGMPI_PROFILE_ROOT / PGMPI_SITE_PROFILE_ROOT (pgmpi_formats/site.py states the rule)."""
    environ = os.environ if environ is None else environ
    conf = {}
    path = environ.get("PGMPI_SITE_CONFIG") or \
        (environ.get("PGMPI_SITE_CONFIG_DIR") or "/etc/pgmpi-site") + "/site.conf"
    try:
        with open(path) as f:
            for line in f:
                m = re.match(r"^\s*(\w+)\s*=\s*(.*?)\s*$", line.split("#", 1)[0])
                if m and m.group(2):
                    conf[m.group(1)] = m.group(2)
    except OSError:
        pass
    root = environ.get("PGMPI_PROFILE_ROOT") or environ.get("PGMPI_SITE_PROFILE_ROOT") \
        or conf.get("profile_root") or "/opt/pgmpi-site/profiles"
    machine = environ.get("PGMPI_SITE_MACHINE") or conf.get("machine")
    if not machine:
        host = socket.gethostname().split(".")[0]
        # Lua patterns and Python regexes differ; the site file's machine_pattern is a Lua
        # pattern (for the modules), so here only the default rule applies.
        machine = re.sub(r"[-_]?\d+$", "", re.sub(r"[-_]?login\d*$", "", host)) or host
    return f"{root}/{machine}/{mpi_label}/current"


class Pgmpitunelib(CMakePackage):
    """libpgmpitune repairs MPI performance-guideline violations at run time: it intercepts the
    collectives through PMPI and redirects a violated one to a faster, semantically equivalent
    mock-up, as the tuned profiles published by pgmpi-site say. Also installs pgmpi-bench (the
    benchmark of pgmpi-site's nightly campaigns) and pgmpitune-check (profile validator). On Intel MPI
    the published native.impi reaches the ranks only through the library (PGMPITUNE_NATIVE_IMPI, set
    at the decided job sizes): a job without libpgmpitune gets no native tuning."""

    homepage = "https://github.com/pgmpi-site/pgmpi-site"
    if _HEAD:
        git = f"file://{_CHECKOUT}"
    else:
        git = "https://github.com/pgmpi-site/pgmpi-site.git"

    maintainers("pgmpi-site")
    license("BSD-3-Clause")

    # No released tarball yet: the checkout's HEAD commit (offline), else the repository's development branch.
    if _HEAD:
        version("main", commit=_HEAD)
    else:
        version("main", branch="main")

    variant("fortran", default=True,
            description="Build the Fortran (mpif.h / use mpi) wrappers where the MPI has a working Fortran "
            "wrapper; skipped with a message otherwise (Open MPI 5 and MPICH 5 from the Python registry)")
    variant("preload", default=False,
            description="The module exports LD_PRELOAD of libpgmpitune to launched ranks "
            "(srun via SRUN_EXPORT_ENV, Open MPI's mpirun via OMPI_MCA_mca_base_env_list), "
            "never to the login shell")
    variant("msg_pool_bytes", default="default", values=_pool_bytes, multi=False,
            description="Default message buffer pool of the mock-ups in bytes "
            "(module sets PGMPITUNE_MSG_POOL_BYTES; 'default' = the library's built-in size)")
    variant("int_pool_bytes", default="default", values=_pool_bytes, multi=False,
            description="Default integer (counts/displacements) pool in bytes "
            "(module sets PGMPITUNE_INT_POOL_BYTES)")

    depends_on("cmake@3.18:", type="build")
    depends_on("mpi")

    root_cmakelists_dir = "lib"
    # The Lmod module computes PGMPITUNE_PROFILE_DIR when it is loaded (see the template).
    lmod_template = "pgmpitunelib/modulefile.lua"

    @property
    def mpi_label(self):
        # the version the library reports (MPI_Get_library_version): Intel MPI names major.minor only
        v = self.spec["mpi"].version
        return f"{self.mpi_family}-{v.up_to(2) if self.mpi_family == 'intelmpi' else v}"

    @property
    def mpi_family(self):
        """The family of lib/CMakeLists.txt (openmpi, mpich, intelmpi) of Spack's MPI package."""
        name = self.spec["mpi"].name
        return {"intel-oneapi-mpi": "intelmpi", "intel-mpi": "intelmpi"}.get(name, name)

    def _mpi_runtime_env(self):
        """What a launch of this MPI needs besides its compiler wrappers: its bin/ first on PATH (Intel
        MPI's hydra starts its proxies by name), Intel MPI's I_MPI_ROOT and libraries."""
        bindir = os.path.dirname(self.spec["mpi"].mpicc)
        env = {"PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
        if self.mpi_family == "intelmpi":
            root = os.path.dirname(bindir)
            env["I_MPI_ROOT"] = root
            env["FI_PROVIDER_PATH"] = join_path(root, "lib", "libfabric", "prov")
            env["LD_LIBRARY_PATH"] = os.pathsep.join(
                [join_path(root, "lib"), join_path(root, "lib", "libfabric"), os.environ.get("LD_LIBRARY_PATH", "")])
        return env

    @property
    def preload_lib(self):
        return join_path(self.prefix.lib, "libpgmpitune.so")

    def cmake_args(self):
        mpi = self.spec["mpi"]
        args = [
            self.define("MPI_C_COMPILER", mpi.mpicc),
            # next to the compiler wrapper: Intel MPI's lives in <prefix>/mpi/<x.y>/bin, not <prefix>/bin
            self.define("MPIEXEC_EXECUTABLE", join_path(os.path.dirname(mpi.mpicc), "mpiexec")),
            # +fortran: built where the MPI's Fortran wrapper works (lib/CMakeLists.txt says why not)
            self.define("PGMPITUNE_FORTRAN", "AUTO" if self.spec.satisfies("+fortran") else "OFF"),
            self.define("PGMPITUNE_MPI_FAMILY", self.mpi_family),
            self.define("PGMPITUNE_MPI_ID", f"{mpi.name}-{mpi.version}"),
            self.define("PGMPITUNE_BUILD_TESTS", self.run_tests),
            self.define("CMAKE_INSTALL_LIBDIR", "lib"),
        ]
        if self.spec.satisfies("+fortran"):
            args.append(self.define("MPI_Fortran_COMPILER", mpi.mpifc))
        return args

    def _mpirun_env(self, env):
        # Open MPI refuses root and more ranks than cores unless told (CI containers run as root).
        env.set("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.set("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        env.set("OMPI_MCA_rmaps_base_oversubscribe", "1")

    def setup_build_environment(self, env):
        if self.run_tests:
            self._mpirun_env(env)
            for var, value in self._mpi_runtime_env().items():
                env.set(var, value)

    def check(self):
        """Build-time tests (spack install --test=root): the library's core CTest suite (profile
        reader, selection, fallbacks, Fortran entry points) under this MPI's mpiexec. The exhaustive
        mock-up matrix (CTest label "matrix", up to 25 min per MPI) is left to the project's CI."""
        with working_dir(self.builder.build_directory):
            ctest("--output-on-failure", "-L", "core")

    @run_after("install")
    def install_site_logic(self):
        # The load-time rule for PGMPITUNE_PROFILE_DIR, shared with the EasyBuild and plain modules.
        dest = join_path(self.prefix.share, "pgmpitunelib")
        mkdirp(dest)
        install(join_path(self.package_dir, "pgmpitune-site.lua"), dest)

    @run_after("install")
    @on_package_attributes(run_tests=True)
    def check_install(self):
        self.test_check_list()

    def setup_run_environment(self, env):
        env.set("PGMPITUNE_ROOT", self.prefix)
        env.set("PGMPITUNE_MPI", self.mpi_label)
        env.set("PGMPITUNE_PRELOAD", self.preload_lib)
        # For `spack load` this runs at load time. Lmod modules do NOT freeze this value: the
        # template drops it and recomputes it in Lua when the module is loaded.
        env.set("PGMPITUNE_PROFILE_DIR", site_profile_dir(self.mpi_label))
        for var, name in (("msg_pool_bytes", "PGMPITUNE_MSG_POOL_BYTES"),
                          ("int_pool_bytes", "PGMPITUNE_INT_POOL_BYTES")):
            value = self.spec.variants[var].value
            if value != "default":
                env.set(name, value)
        if self.spec.satisfies("+preload"):
            # Ranks only: srun reads SRUN_EXPORT_ENV, Open MPI's mpirun mca_base_env_list;
            # the shell that loads the module never gets LD_PRELOAD.
            env.set("SRUN_EXPORT_ENV", f"ALL,LD_PRELOAD={self.preload_lib}")
            if self.spec["mpi"].name == "openmpi":
                env.set("OMPI_MCA_mca_base_env_list", f"LD_PRELOAD={self.preload_lib}")

    # ---------------------------------------------------------------- stand-alone tests
    # spack test run pgmpitunelib

    def test_check_list(self):
        """pgmpitune-check lists the mock-up tables of this build"""
        check = which(join_path(self.prefix.bin, "pgmpitune-check"))
        out = check("--list", output=str, error=str)
        assert "allreduce_as_reduce_bcast" in out, out

    def test_profile_redirection(self):
        """an MPI program under LD_PRELOAD follows a profile (#@pgmpi report at MPI_Finalize)"""
        mpi = self.spec["mpi"]
        work = join_path(os.getcwd(), "pgmpitune-standalone")
        profiles = join_path(work, "profiles")
        mkdirp(profiles)
        with open(join_path(work, "allreduce.c"), "w") as f:
            f.write(_ALLREDUCE_C)
        with open(join_path(profiles, "allreduce_p2.prf"), "w") as f:
            f.write(_PROFILE_P2)
        exe = join_path(work, "allreduce")
        # the MPI's environment before its wrapper runs: Intel MPI's mpicc finds mpi.h through I_MPI_ROOT
        os.environ.update(self._mpi_runtime_env())
        which(mpi.mpicc)(join_path(work, "allreduce.c"), "-o", exe)
        mpiexec = which(join_path(os.path.dirname(mpi.mpicc), "mpiexec"))
        env = {"PGMPITUNE_VERBOSE": "1", "PGMPITUNE_PROFILE_DIR": profiles,
               "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
               "OMPI_MCA_rmaps_base_oversubscribe": "1"}
        env.update(self._mpi_runtime_env())
        os.environ.update(env)
        if mpi.name == "openmpi":
            args = ["-x", f"LD_PRELOAD={self.preload_lib}", "-n", "2", exe]
        else:
            args = ["-genv", "LD_PRELOAD", self.preload_lib, "-n", "2", exe]
        out = mpiexec(*args, output=str, error=str)
        assert "allreduce ok" in out, out
        assert re.search(r"^#@pgmpi alg MPI_Allreduce \d+ allreduce_as_reduce_bcast", out, re.M), out


_ALLREDUCE_C = r"""
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
  if (rank == 0) printf("allreduce %s\n", ok ? "ok" : "WRONG");
  MPI_Finalize();
  return !ok;
}
"""

_PROFILE_P2 = """# pgtune profile
#@pgmpi profile_version 1
MPI_Allreduce
2
1
1 allreduce_as_reduce_bcast
1
0 1048576 1
"""
