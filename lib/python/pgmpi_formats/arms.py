"""What each algorithm label of a measurement is: the one definition of "a mock-up" that every page, the API,
the alerts feed and the command line use.

    is_mockup("scan_as_exscan_reducelocal")  -> True
    is_mockup("default_control")             -> False   (the control arm: the default measured a second time)
    is_mockup("tuned")                       -> False   (the validation arm: the default with the profile loaded)

Labels (pgmpi-bench --algorithms, lib/docs/mockup-names.md):
- `default`: the library's own choice, nothing forced;
- `default_control`: the control arm, the default again under another label; it measures the test's false
  alarms and the null ratio spread (service/analysis/verdicts.py), it is never a candidate;
- `tuned`: the validation arm, the default with a candidate profile loaded (scheduler/validation.py); it
  measures a profile, it is never a candidate either;
- `native:<name>[:seg=<bytes>]`: one of the library's own algorithms, forced (pgmpi_formats/native.py);
- anything else: a mock-up, `<key>_as_<part>_<part>...`, an equivalent composition of other collectives.
"""
from __future__ import annotations

DEFAULT = "default"
CONTROL = "default_control"
TUNED = "tuned"
ARMS = (CONTROL, TUNED)        # measured beside the candidates, never one of them


def is_native(label: str) -> bool:
    return label.startswith("native:")


def is_mockup(label: str) -> bool:
    """A composition of other collectives: not the default, not an arm, not one of the library's own."""
    return label != DEFAULT and label not in ARMS and not is_native(label)


def kind(label: str) -> str:
    """'default', 'control', 'validation', 'native' or 'mockup' (words the pages print)."""
    if label == DEFAULT:
        return "default"
    if label == CONTROL:
        return "control"
    if label == TUNED:
        return "validation"
    return "native" if is_native(label) else "mockup"
