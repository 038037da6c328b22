"""pgmpi_formats.mockups: the library's listing (`pgmpitune-check --list --json`) read into typed records, the one
source of the mock-ups' memory needs the service uses."""
from __future__ import annotations

import json
import re
import subprocess

import pytest

from pgmpi_formats import collectives
from pgmpi_formats.mockups import library_listing, parse_listing


@pytest.mark.mpi
@pytest.mark.parametrize("p,msize,elem", [(4, 1024, 4), (16, 1000, 8), (3, 7, 1)])
def test_listing_agrees_with_the_table_and_the_text_listing(mpi_prefix, p, msize, elem):
    checker = mpi_prefix / "bin" / "pgmpitune-check"
    listing = library_listing(checker, p, msize, elem)
    assert (listing.p, listing.msize, listing.elem) == (p, msize, elem)
    # the collectives of collectives.def, in its order
    assert [(c.key, c.mpi_name, c.size_rule) for c in listing.collectives] == \
        [(c.key, c.mpi_name, c.size_rule) for c in collectives.load()]
    # every algorithm and figure as the library's text listing prints it
    text = subprocess.run([str(checker), "--list", f"--p={p}", f"--bytes={msize}", f"--elem={elem}"],
                          capture_output=True, text=True, check=True).stdout
    rows = re.findall(r"^  (\d+) (\S+) msg_pool_bytes=(\d+) int_pool_bytes=(\d+)( node_aware)?$", text, re.M)
    assert rows and {r[1]: (int(r[2]), int(r[3]), bool(r[4])) for r in rows} == \
        {a.name: (a.msg_pool_bytes, a.int_pool_bytes, a.node_aware) for a in listing.algorithms().values()}
    assert all(c.algorithms[0].name == "default" and c.algorithms[0].index == 0 for c in listing.collectives)


def test_bad_listing_names_the_field():
    good = {"p": 4, "bytes": 8, "elem_bytes": 1, "collectives": [
        {"key": "bcast", "mpi_name": "MPI_Bcast", "size_rule": "BLOCK", "algorithms": [
            {"index": 0, "name": "default", "msg_pool_bytes": 0, "int_pool_bytes": 0, "node_aware": False}]}]}
    assert parse_listing(json.dumps(good)).needs("default") == (0, 0)
    bad = json.loads(json.dumps(good))
    del bad["collectives"][0]["algorithms"][0]["msg_pool_bytes"]
    with pytest.raises(ValueError, match=r"collectives\[0\]\.algorithms\[0\]: field 'msg_pool_bytes' missing"):
        parse_listing(json.dumps(bad), "x.json")
    bad["collectives"][0]["algorithms"][0]["msg_pool_bytes"] = -1
    with pytest.raises(ValueError, match="non-negative integer"):
        parse_listing(json.dumps(bad))
    with pytest.raises(ValueError, match=r"^x.json:1: not JSON"):
        parse_listing("{", "x.json")
    with pytest.raises(RuntimeError, match="deploy/build-lib.sh"):
        library_listing(None, 4, 8)


def test_the_checker_of_any_built_library_is_found_and_none_is_said(tmp_path, monkeypatch):
    """A tree where only intelmpi's lib/ was built: its pgmpitune-check is found (the listing is the library's,
    whatever MPI it was built on); with none, the message names the ids looked in and how to build one."""
    from pgmpi_formats.checker import CheckerError, find_checker, not_found
    from pgmpi_formats.mpi_libraries import read_mpi_libraries
    monkeypatch.delenv("PGMPITUNE_CHECK", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert find_checker(root=tmp_path) is None
    said = not_found()
    assert all(lib.id in said for lib in read_mpi_libraries()) and "deploy/build-lib.sh" in said
    with pytest.raises(CheckerError, match="build/install/<id>/bin/pgmpitune-check for openmpi, mpich"):
        library_listing(None, 4, 8)
    chk = tmp_path / "build" / "install" / "intelmpi" / "bin" / "pgmpitune-check"
    chk.parent.mkdir(parents=True)
    chk.write_text("#!/bin/sh\n")
    chk.chmod(0o755)
    assert find_checker(root=tmp_path) == chk
    assert find_checker("mpich", root=tmp_path) is None        # a named build is that build's only
