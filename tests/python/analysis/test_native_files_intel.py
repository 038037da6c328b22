"""`pgmpi analyze native-files` on Intel MPI 2021.13 results: one decision per cell, written through the one
native.impi writer the nightly chain uses (pgmpi_formats.native_file.render -> impi_adjust.write), read back
against that version's presets (impi_info -v).  Preset 3 of allreduce won at every measured size: one range
over every size.  Preset 1 of bcast won at 8 B but the default won at 64 KiB: once I_MPI_ADJUST_BCAST is set,
Intel MPI runs another algorithm outside its ranges, so bcast is left to the library and the command says so
(its 8 B cell is decided as the default, with that reason).  A validation verdict that failed at a size the file left
to the library (a gap) refuses the collective's presets, and when nothing exact is left no file is written."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

pytestmark = pytest.mark.mpi

VERSION = "2021.13"
DRIFT = [1.0, 1.02, 0.99, 1.01, 0.98]


def _raw(path, index: int, k: float) -> str:
    """One mpirun's raw file as pgmpi-bench writes it for Intel MPI (one preset forced per mpirun in a real
    search; cells_of_mpiruns pairs them per round either way)."""
    lines = ["#@pgmpi_format=1", "#@machine=m1", "#@mpi_library=intelmpi", f"#@mpi_version={VERSION}",
             "#@module=intelmpi/2021.13.1", "#@nodes=1", "#@ppn=2", "#@nprocs=2", f"#@mpirun_index={index}",
             "#@campaign=v", "#@clock=MPI_Wtime", "test nrep msize runtime_sec algorithm"]
    cells = {("MPI_Allreduce", 8): {"default": 2e-6, "native:3": 1e-6},
             ("MPI_Allreduce", 65536): {"default": 4e-5, "native:3": 2e-5},
             ("MPI_Bcast", 8): {"default": 2e-6, "native:1": 1e-6},
             ("MPI_Bcast", 65536): {"default": 2e-5, "native:1": 4e-5}}
    for (call, size), times in cells.items():
        for label, t in {**times, "default_control": times["default"] * 1.005}.items():
            lines += [f"{call} {r} {size} {t * k * (1 + 0.002 * (r % 3)):.10e} {label}" for r in range(6)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_native_files_writes_a_native_impi_through_the_nightly_writer(tmp_path):
    from pgmpi_formats import impi_adjust, native_file
    from pgmpi_formats.ompi_rules import Decision
    from service.commands.analysis import native_files_cmd
    try:
        d = native_file.intel_target(VERSION)
    except FileNotFoundError as exc:
        pytest.fail(f"{exc} (deploy/install-mpis.sh installs Intel MPI 2021.13)")
    files = [_raw(tmp_path / f"r{i}.txt", i, k) for i, k in enumerate(DRIFT)]
    out = CliRunner().invoke(native_files_cmd, [*files, "--out", str(tmp_path / "out")])
    assert out.exit_code == 0, out.output
    text = (tmp_path / "out" / "native.impi").read_text()
    adj = impi_adjust.parse(text, "native.impi", d)           # the strict reader of exactly 2021.13
    assert adj.environment() == {"I_MPI_ADJUST_ALLREDUCE": "3:0-2147483647@2-2"}
    # the one writer: the text the nightly chain would store for the same decisions
    decisions = [Decision("allreduce", 2, 8, "native:3"), Decision("allreduce", 2, 65536, "native:3"),
                 Decision("bcast", 2, 8, "native:1"), Decision("bcast", 2, 65536, "default")]
    assert text == native_file.render("intelmpi", decisions, version=VERSION)[1]
    assert "# left to the library: bcast: the library's default won at 65536 B (p=2)" in text
    assert "bcast      left to the library: the library's default won at 65536 B (p=2)" in out.output
    # the cell's decision is the library's default (decide applies the file's trim), and says why
    assert "bcast             8 p=2: default (default) the library's default: native.impi leaves bcast to the " \
           "library" in out.output, out.output
    assert "2 of 4 cells leave the default" in out.output, out.output

    # a validation job that failed at a size the file leaves to the library (Intel MPI's choice changed there
    # because the variable was set): allreduce's presets are refused, nothing exact is left, no file
    verdict = {"id": 7, "ok": False, "cells": [{"collective": "allreduce", "msize": 1024, "nprocs": 2,
                                                "label": "default", "range": [1024, 4095],
                                                "problems": ["file arm 1.31x slower than the default"]}]}
    (tmp_path / "verdict.json").write_text(json.dumps(verdict))
    out = CliRunner().invoke(native_files_cmd, [*files, "--out", str(tmp_path / "again"),
                                                "--validation", str(tmp_path / "verdict.json")])
    assert out.exit_code == 0, out.output
    assert "no native.impi written: nothing its variables can hold exactly" in out.output, out.output
    assert not (tmp_path / "again" / "native.impi").exists()
    assert "allreduce         8 p=2: native:3 refused, failed validation (verdict.json record 7: 1024 B, a size " \
           "the file leaves to the library" in out.output, out.output
    assert "0 of 4 cells leave the default" in out.output, out.output


def test_explain_says_what_a_published_native_impi_runs(tmp_path):
    """`pgmpi explain` reads a published native.impi as libpgmpitune applies it (the job's size first): the
    preset where a range holds the call, the library's own choice at a process count without ranges and for a
    collective without a variable.  It used to say "published native file: none"."""
    from types import SimpleNamespace

    from pgmpi_formats import native_file
    from pgmpi_formats.ompi_rules import Decision
    from service.profiles import publish as pub
    from service.workflows.explain import _published
    name, text = native_file.render("intelmpi", [Decision("allreduce", 2, 8, "native:3")], version=VERSION)
    root = tmp_path / "profiles"
    pub.publish(root, "m1", "intelmpi", VERSION, {name: text}, actor="t", validated=True, checker=["/bin/true"],
                mpi="intelmpi", native_validated=True)
    lib = SimpleNamespace(name="intelmpi", version=VERSION)
    assert _published(root, "m1", lib, "allreduce", 1024, 2)[-1] == \
        "published native.impi (version 1): I_MPI_ADJUST_ALLREDUCE preset 3 at 1024 B, p=2"
    assert _published(root, "m1", lib, "allreduce", 1024, 4)[-1] == (
        "published native.impi (version 1): I_MPI_ADJUST_ALLREDUCE has no range for p=4: libpgmpitune sets nothing "
        "in such a job (the library's own choice)")
    assert _published(root, "m1", lib, "bcast", 8, 2)[-1] == \
        "published native.impi (version 1): no I_MPI_ADJUST_BCAST: the library's own choice"
