"""spack python spack_repo_subset.py DIR ROOT ...: a package repository in DIR, namespace builtin, of the builtin
packages a concretization of the ROOTs can touch (links into the snapshot's builtin repository), for
spack_scenario.sh; prints how many of how many.

Spack builds an index of every package of a repository (imports all ~8,000 package.py of the builtin repo,
190 s at load 7-11 on 2 cores) before it solves anything; the solver itself only loads the packages a root
can reach. This walks that reach without the index: every dependency under any condition, every provider
that `packages:all:providers` names for a virtual (the scenario's packages.yaml names Spack's three MPI
packages for `mpi`; Spack's defaults name the rest), and every builtin package another package.py imports.
A virtual with no provider named there stops the walk with a message (the index would be needed to find
one). Left out are packages no solve of these roots can place (other providers of a virtual, e.g. other MPIs,
which the specs' `^<mpi>` and `mpi: buildable: false` exclude anyway); a package missing that a solve needs
fails it by name ("Package '...' not found"), it cannot change a result silently."""
import os
import sys

import spack.config
import spack.repo

out, roots = sys.argv[1], sys.argv[2:]
preferred = spack.config.get("packages:all:providers", {})
seen, todo, unprovided = set(), list(roots), {}
while todo:
    name = todo.pop()
    if name in seen:
        continue
    seen.add(name)
    for dep in spack.repo.PATH.get_pkg_class(name).dependencies_by_name(when=True):
        exists = spack.repo.PATH.exists(dep)
        if exists:
            todo.append(dep)     # a virtual may have a package.py too (mpi: its stand-alone test)
        # a virtual: no package.py or one that says so (spack.repo.Repo.is_virtual_safe, without the index)
        if exists and not spack.repo.PATH.get_pkg_class(dep).virtual:
            continue
        providers = [str(p).split("+")[0].split("@")[0].strip() for p in preferred.get(dep, [])]
        providers = [p for p in providers if spack.repo.PATH.exists(p)]
        if not providers:
            unprovided.setdefault(dep, name)
        todo.extend(providers)
if unprovided:
    sys.exit("spack_repo_subset.py: no provider named in packages:all:providers for "
             + ", ".join(f"{v} (needed by {p})" for v, p in sorted(unprovided.items())))
# package.py files import helpers from other builtin packages (singularity from singularityce)
for module in list(sys.modules):
    parts = module.split(".")
    if parts[:3] == ["spack", "pkg", "builtin"] and len(parts) == 4:
        dashed = parts[3].replace("_", "-")
        seen.add(dashed if spack.repo.PATH.exists(dashed) else parts[3])
builtin = next(r for r in spack.repo.PATH.repos if r.namespace == "builtin")
names = sorted(n for n in seen if builtin.exists(n))
os.makedirs(os.path.join(out, "packages"))
with open(os.path.join(out, "repo.yaml"), "w") as f:
    f.write("repo:\n  namespace: builtin\n")
for n in names:
    os.symlink(os.path.dirname(builtin.filename_for_package_name(n)), os.path.join(out, "packages", n))
print(f"builtin subset: {len(names)} of {len(builtin.all_package_names(include_virtuals=True))} packages in {out}")
