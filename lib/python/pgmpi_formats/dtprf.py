"""Datatype profiles (`*.dtprf`, lib/docs/profile-format.md "Datatype profiles"): the one Python reader and
writer. Plain Python, no numpy.

    text = format_dtprf([("a51b3f7987010960", "indexed", {"speedup": "1.31"})], comments=["made by ..."])
    prof = parse_dtprf(text, "datatypes.dtprf")     # {"version": 1, "rules": [(signature, description, {k: v})]}

The C reader (lib/src/core/profile_dtprf.c, pgmpi_dtprofile_parse) is the anchor: the same lines, the same errors.
"""
from __future__ import annotations

import re

VERSION = 1
FILE_NAME = "datatypes.dtprf"                 # the name pgmpi-site writes in a profile set
DESCRIPTIONS = ("contiguous", "vector", "indexed_block", "indexed", "hindexed", "struct_flat", "contig")  # the library's
MAX_RULES = 1024
_SIG = re.compile(r"^[0-9a-f]{16}$")
_KV = re.compile(r"^[^=\s]+=\S*$")


class DtProfileFormatError(ValueError):
    """A datatype profile that cannot be read or written; str() names source:line where there is one."""


def parse_dtprf(text: str, source: str = "<datatype profile>") -> dict:
    version = 0
    rules: list[tuple[str, str, dict[str, str]]] = []
    seen: dict[str, str] = {}
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith("#@pgmpi") and (len(line) == 7 or line[7].isspace()):
            parts = line.split()
            if len(parts) < 2 or parts[1] != "datatype_profile_version":
                raise DtProfileFormatError(f"{source}:{no}: unknown #@pgmpi line in a datatype profile "
                                           "(valid: #@pgmpi datatype_profile_version 1)")
            if len(parts) != 3 or not parts[2].isdigit() or int(parts[2]) < 1:
                raise DtProfileFormatError(f"{source}:{no}: #@pgmpi datatype_profile_version needs one positive integer")
            if int(parts[2]) > VERSION:
                raise DtProfileFormatError(f"{source}:{no}: datatype profile version {parts[2]} is newer than this "
                                           f"reader ({VERSION})")
            version = int(parts[2])
            continue
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if parts[0] != "replace":
            raise DtProfileFormatError(f"{source}:{no}: unknown line {parts[0][:40]!r} (valid: replace <signature> "
                                       "<description> [key=value ...])")
        if not version:
            raise DtProfileFormatError(f"{source}:{no}: a replace line before '#@pgmpi datatype_profile_version 1'")
        if len(parts) < 3 or not _SIG.match(parts[1]):
            raise DtProfileFormatError(f"{source}:{no}: replace: the signature must be 16 lowercase hex digits")
        if parts[2] not in DESCRIPTIONS:
            raise DtProfileFormatError(f"{source}:{no}: replace: unknown description {parts[2][:40]!r} "
                                       f"(valid: {', '.join(DESCRIPTIONS)})")
        bad = [t for t in parts[3:] if not _KV.match(t)]
        if bad:
            raise DtProfileFormatError(f"{source}:{no}: replace: {bad[0][:40]!r} is not key=value")
        if seen.get(parts[1], parts[2]) != parts[2]:
            raise DtProfileFormatError(f"{source}:{no}: signature {parts[1]} listed twice with different descriptions")
        if parts[1] in seen:
            continue
        seen[parts[1]] = parts[2]
        rules.append((parts[1], parts[2], dict(t.split("=", 1) for t in parts[3:])))
        if len(rules) > MAX_RULES:
            raise DtProfileFormatError(f"{source}:{no}: more than {MAX_RULES} replacements")
    if not version:
        raise DtProfileFormatError(f"{source}: not a datatype profile: no '#@pgmpi datatype_profile_version 1' line")
    return {"version": version, "rules": rules}


def format_dtprf(rules: list[tuple[str, str, dict]], comments: list[str] = ()) -> str:
    """The text of one datatype profile: `# comments`, the version line, one `replace` line per rule
    (evidence values become one whitespace-free token each). Read back by parse_dtprf."""
    lines = [f"# {' '.join(str(c).split())}" for c in comments]
    lines.append(f"#@pgmpi datatype_profile_version {VERSION}")
    if len(rules) > MAX_RULES:
        raise DtProfileFormatError(f"{len(rules)} replacements, more than {MAX_RULES}")
    seen: dict[str, str] = {}
    for sig, desc, evidence in rules:
        if not _SIG.match(sig):
            raise DtProfileFormatError(f"signature {sig!r}: not 16 lowercase hex digits")
        if desc not in DESCRIPTIONS:
            raise DtProfileFormatError(f"description {desc!r}: not one of {', '.join(DESCRIPTIONS)}")
        if seen.setdefault(sig, desc) != desc:
            raise DtProfileFormatError(f"signature {sig} with two descriptions ({seen[sig]}, {desc})")
        kv = " ".join(f"{k}={'_'.join(str(v).split()) or '-'}" for k, v in (evidence or {}).items())
        lines.append(f"replace {sig} {desc}" + (f" {kv}" if kv else ""))
    text = "\n".join(lines) + "\n"
    parse_dtprf(text, "<written>")
    return text
