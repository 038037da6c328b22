"""The scripts of tests/bench/ imported by the tests that check their rules on planted data (not conftest: with
several test directories in one pytest call, `from conftest import` would get whichever conftest came first)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def bench_script(name: str, module: str):
    """tests/bench/<name>.py imported as <module>, registered in sys.modules (its dataclasses look it up there)."""
    spec = importlib.util.spec_from_file_location(module, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module] = mod
    spec.loader.exec_module(mod)
    return mod
