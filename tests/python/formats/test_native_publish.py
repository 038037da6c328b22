"""The library's own decision files travel in the same versioned, atomic profile set as the .prf files:
published next to them after their readers accepted them, refused with the reason otherwise, and a
rollback swaps both."""
from __future__ import annotations

import copy

import pytest

from pgmpi_formats import mpich_json as mj
from pgmpi_formats import ompi_rules as orr
from pgmpi_formats.ompi_rules import Decision
from service.profiles import publish as pub

PRF = {"MPI_Allreduce.prf": "MPI_Allreduce\n2\n2\n0 default\n1 allreduce_as_reduce_bcast\n1\n1 1024 1\n"}


def publish(root, files, mpi, ver):
    return pub.publish(root, "m1", mpi, ver, files, actor="alice", validated=True, checker=["/bin/true"], mpi=mpi,
                       native_validated=True)


def current(root, mpi, ver):
    return {p.name: p.read_text() for p in sorted((root / "m1" / f"{mpi}-{ver}" / "current").iterdir())}


def test_open_mpi_rules_file_published_with_the_profiles_and_rolled_back(tmp_path):
    d = pub._installed("openmpi")
    rules1 = orr.write_rules([Decision("bcast", 2, 8, "native:binomial")], d)
    rules2 = orr.write_rules([Decision("bcast", 2, 8, "native:chain:seg=8192")], d)
    publish(tmp_path, {**PRF, "native.rules": rules1}, "openmpi", "4.1.4")
    publish(tmp_path, {**PRF, "native.rules": rules2}, "openmpi", "4.1.4")
    assert current(tmp_path, "openmpi", "4.1.4")["native.rules"] == rules2
    pub.rollback(tmp_path, "m1", "openmpi", "4.1.4", actor="alice", reason="test")
    assert current(tmp_path, "openmpi", "4.1.4") == {**PRF, "native.rules": rules1}


def test_a_corrupt_rules_file_is_refused_before_publishing(tmp_path):
    bad = "1\n2\n1\n2\n3\n0 3 0 0\n1024 6 0 0\n"          # says 3 rules, holds 2: Open MPI ignores the file
    with pytest.raises(pub.PublishError, match=r"native.rules refused: native.rules:7: .*count is larger"):
        publish(tmp_path, {**PRF, "native.rules": bad}, "openmpi", "4.1.4")
    with pytest.raises(pub.PublishError, match="reorders a reduction's operands"):
        publish(tmp_path, {"native.rules": "1\n2\n1\n2\n1\n0 4 0 0\n"}, "openmpi", "4.1.4")
    with pytest.raises(pub.PublishError, match="openmpi's decision file; this set is for mpich"):
        publish(tmp_path, {"native.rules": "1\n2\n1\n2\n1\n0 3 0 0\n"}, "mpich", "4.0.2")
    assert not (tmp_path / "m1" / "openmpi-4.1.4" / "current").exists()   # nothing became visible


def test_a_json_file_missing_a_collective_is_refused_before_publishing(tmp_path):
    t = pub._installed("mpich")
    base, known = t.base, t.known
    tree = mj.generate([Decision("bcast", 2, 8, "native:binomial")], base, known)
    publish(tmp_path, {"native.json": mj.dumps(tree)}, "mpich", "4.0.2")
    broken = copy.deepcopy(tree)
    del broken["collective=allreduce"]
    with pytest.raises(pub.PublishError, match="native.json: MPICH 4.0.2 would not read or evaluate it: collective=allreduce "
                                               "is missing: MPICH aborts every job at its first allreduce"):
        publish(tmp_path, {"native.json": mj.dumps(broken)}, "mpich", "4.0.2")
    assert current(tmp_path, "mpich", "4.0.2") == {"native.json": mj.dumps(tree)}
    # checked by the reader of the version the set is for (MPICH 5.0.2's own tree, deploy/mpi-libraries.tsv)
    with pytest.raises(pub.PublishError, match=r"native.json: MPICH 5.0.2 would not read or evaluate it: "
                                               r".*not MPICH 5.0.2's built-in"):
        publish(tmp_path, {"native.json": mj.dumps(tree)}, "mpich", "5.0.2")


def test_a_native_file_without_a_recorded_validation_is_refused(tmp_path):
    rules = orr.write_rules([Decision("bcast", 2, 8, "native:binomial")], pub._installed("openmpi"))
    with pytest.raises(pub.PublishError, match="native.rules: no passing validation of this file is recorded"):
        pub.publish(tmp_path, "m1", "openmpi", "4.1.4", {**PRF, "native.rules": rules}, actor="alice",
                    validated=True, checker=["/bin/true"], mpi="openmpi")
    assert not (tmp_path / "m1" / "openmpi-4.1.4" / "current").exists()
    # forced (recorded in the history), the readers' checks still apply
    pub.publish(tmp_path, "m1", "openmpi", "4.1.4", {"native.rules": rules}, actor="alice", validated=False,
                force=True, reason="test", checker=["/bin/true"], mpi="openmpi")
    with pytest.raises(pub.PublishError, match="reorders a reduction's operands"):
        pub.publish(tmp_path, "m1", "openmpi", "4.1.4", {"native.rules": "1\n2\n1\n2\n1\n0 4 0 0\n"},
                    actor="alice", validated=False, force=True, reason="test", checker=["/bin/true"], mpi="openmpi")


# per library id: (family, version the set is for, a file written for another version of the family and why
# that version would misread it).  Open MPI 5.0.11 reads a 4.1.4 file exactly as 4.1.4 does (the same
# algorithm ids, no header): the file it would not read is the next format, Open MPI 6's JSON rules.
FIVE = {"openmpi": ("openmpi", "4.1.4"), "openmpi5": ("openmpi", "5.0.11"), "mpich": ("mpich", "4.0.2"),
        "mpich5": ("mpich", "5.0.2"), "intelmpi": ("intelmpi", "2021.13")}
OTHER = {"4.1.4": "5.0.11", "4.0.2": "5.0.2", "5.0.2": "4.0.2"}
DECS5 = {"openmpi": [Decision("allreduce", 2, 8, "native:recursive_doubling"), Decision("bcast", 2, 4096, "native:binomial")],
         "mpich": [Decision("allreduce", 2, 8, "native:recursive_doubling"), Decision("bcast", 2, 4096, "native:binomial")],
         "intelmpi": [Decision("allreduce", 2, 8, "native:1"), Decision("bcast", 2, 4096, "native:1")]}


@pytest.mark.parametrize("lib_id", sorted(FIVE))
def test_every_library_refuses_a_corrupt_file_and_a_file_for_another_version(tmp_path, lib_id):
    """Publishing checks a native file with the reader of the exact version the set is for (each library
    installed here): the file written for it goes live; the same file cut short, and a file written for
    another version of the family, are refused with the reason and nothing changes."""
    from pgmpi_formats import native_file
    family, version = FIVE[lib_id]
    name, text = native_file.render(family, DECS5[family], version=version)
    publish(tmp_path, {name: text}, family, version)
    live = current(tmp_path, family, version)
    lines = text.rstrip("\n").split("\n")       # the last line cut in half: a file that ended mid-write
    corrupt = "\n".join(lines[:-1] + [lines[-1][: len(lines[-1]) // 2] + "x"]) + "\n"
    with pytest.raises(pub.PublishError, match=f"{name}"):
        publish(tmp_path, {name: corrupt}, family, version)
    if family == "intelmpi":          # one Intel MPI installed: a file that says it is for the next one
        other, why = text.replace("# Intel MPI 2021.13", "# Intel MPI 2021.14", 1), "written for Intel MPI 2021.14"
    elif version == "5.0.11":
        other, why = '{"collectives": {"allreduce": [{"comm_size_min": 2, "alg": "recursive_doubling"}]}}\n', \
            "native.rules refused"
    else:
        other = native_file.render(family, DECS5[family] + ([Decision("allgather", 2, 8, "native:sparbit")]
                                                            if OTHER[version] == "5.0.11" else []),
                                   version=OTHER[version])[1]
        why = "reads no rule-file-version-2 header" if family == "openmpi" else f"MPICH {version} would not read"
    with pytest.raises(pub.PublishError, match=why):
        publish(tmp_path, {name: other}, family, version)
    assert current(tmp_path, family, version) == live
