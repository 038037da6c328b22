"""deploy/intel-guest.sh: the machine on which Intel MPI's own autotuner runs (issue 35, "Against Intel's own
tuner").  Intel MPI 2021.13 autotunes only when the cpuid vendor is GenuineIntel (scheduler/README.md, "Intel's
own tuner"); the guest is an emulated Skylake that runs this machine's programs from its own file tree."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

# Intel's tuning job for one collective, as mpitune_fast starts it (fewer iterations), around IMB-MPI1
TUNING_JOB = r'''set -e
eval "$(deploy/mpi-env.sh intelmpi)"
grep -m1 vendor_id /proc/cpuinfo > "$1/vendor"
I_MPI_DEBUG=5 I_MPI_TUNING_MODE=auto:cluster I_MPI_TUNING_METADATA_DUMP=1 I_MPI_TUNING_AUTO_ITER_NUM=4 \
  I_MPI_TUNING_AUTO_WARMUP_ITER_NUM=1 I_MPI_TUNING_COLL_LIST=allreduce I_MPI_TUNING_BIN_DUMP="$1/dump.dat" \
  mpirun -n 2 IMB-MPI1 Allreduce -msglog 3:12 -iter 40 -npmin 2 > "$1/imb.txt" 2>&1
'''


def tuning_job(where: Path, guest: bool) -> dict:
    where.mkdir(parents=True)
    (where / "job.sh").write_text(TUNING_JOB)
    argv = ["bash", str(where / "job.sh"), str(where)]
    if guest:
        argv = [str(ROOT / "deploy" / "intel-guest.sh"), "run", "--share", str(where), "--", *argv]
    p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, (argv, p.stdout[-2000:], p.stderr[-2000:])
    imb = (where / "imb.txt").read_text()
    table = re.search(r'Load tuning file: "([^"]+)"', imb)
    assert table and "Allreduce" in imb, imb[-2000:]
    dump = where / "dump.dat"
    return {"vendor": (where / "vendor").read_text().split(":", 1)[1].strip(), "metadata": Path(f"{dump}_metadata").exists(),
            "same_as_loaded": dump.exists() and dump.read_bytes() == Path(table.group(1)).read_bytes()}


@pytest.mark.guest
def test_intels_autotuner_tunes_in_the_guest(tmp_path):
    """In the guest cpuid says GenuineIntel, and Intel's tuning job really tunes: the library writes the metadata
    file mpitune_fast merges, and its dump differs from the table it loaded.  On this machine's own processor
    (not GenuineIntel) the same job writes no metadata and dumps the loaded table unchanged: why the comparison
    with Intel's tuner runs in the guest."""
    guest = tuning_job(tmp_path / "guest", guest=True)
    assert guest == {"vendor": "GenuineIntel", "metadata": True, "same_as_loaded": False}, guest
    host = tuning_job(tmp_path / "host", guest=False)
    if host["vendor"] != "GenuineIntel":
        assert host == {"vendor": host["vendor"], "metadata": False, "same_as_loaded": True}, host
