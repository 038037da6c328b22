"""The `#@pgmpi <kind> ...` footer records of a raw-results file, read into typed records (one reader; the
results reader keeps the lines in RunResult.pgmpi_lines, lib/docs/results-format.md).

    case = case_of_line("#@pgmpi dtcase t1 pattern=bcast layout=bucket variant=1 A=2 basetype=MPI_INT")
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class DtCase:
    test: str
    pattern: str
    layout: str
    variant: int
    A: int
    basetype: str
    signature: str = ""    # the layout signature pgmpi-dtbench recorded (lib/docs/profile-format.md); "" none

    @property
    def layout_label(self) -> str:
        if self.layout == "contiguous":
            return "contiguous"
        if self.layout in ("altrep", "rowcol"):
            return f"{self.layout} A={self.A}"
        return f"{self.layout} v{self.variant} A={self.A}"

    @property
    def reference(self) -> str:
        return "indexed_block" if self.layout == "rowcol" else "typed"


SIGNATURE_RE = re.compile(r"^[0-9a-f]{16}$")


def case_of_line(line: str) -> DtCase | None:
    """One `#@pgmpi dtcase <test> pattern=.. layout=.. variant=.. A=.. basetype=.. [signature=<16 hex>]` line,
    None for any other line (or a malformed one: the case is then not analysed)."""
    parts = line.split()
    if len(parts) < 3 or parts[1] != "dtcase":
        return None
    kv = dict(p.split("=", 1) for p in parts[3:] if "=" in p)
    sig = kv.get("signature", "")
    try:
        return DtCase(parts[2], kv["pattern"], kv["layout"], int(kv["variant"]), int(kv["A"]), kv["basetype"],
                      sig if SIGNATURE_RE.match(sig) else "")
    except (KeyError, ValueError):
        return None


