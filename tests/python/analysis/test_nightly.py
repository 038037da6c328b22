"""service/analysis/nightly.py on seeded nightly data: a 5 % slowdown is flagged within two nights, an A/A
month of a library with many cells gives no alarm, and the band widens with a noisier reference."""
from __future__ import annotations

import math
import random

from service.analysis import nightly


def series(rnd, n, spread=0.01, shift_at=None, shift=0.05):
    return [math.exp(rnd.gauss(0, spread) + (math.log1p(shift) if shift_at is not None and i >= shift_at else 0))
            for i in range(n)]


def test_a_five_percent_slowdown_is_flagged_within_two_nights():
    rnd = random.Random(7)
    cells = {("MPI_Bcast", 8 << k, 2): series(rnd, 24) for k in range(99)}
    cells[("MPI_Allreduce", 1024, 2)] = series(rnd, 24, shift_at=22)          # the last two nights 5 % slower
    alarms = nightly.detect(cells)
    assert [a.cell for a in alarms] == [("MPI_Allreduce", 1024, 2)]
    a = alarms[0]
    assert 1.03 < a.ratio < 1.07 and a.nights == 2 and a.t > a.threshold


def test_an_aa_month_gives_no_alarm():
    rnd = random.Random(11)
    cells = {("MPI_Bcast", 8 << k, p): series(rnd, nightly.REFERENCE + 2 + 30) for k in range(50) for p in (2, 4)}
    alpha = nightly.level(len(cells))
    for night in range(nightly.REFERENCE + 2, nightly.REFERENCE + 2 + 30):
        assert [c for c, v in cells.items() if nightly.check(v[:night + 1], alpha)] == [], night


def test_too_short_a_history_and_a_noisy_reference_say_nothing():
    rnd = random.Random(3)
    assert nightly.detect({("MPI_Bcast", 8, 2): series(rnd, nightly.REFERENCE + 1, shift_at=19, shift=0.5)}) == []
    # 5 % inside a 10 % night-to-night spread is not evidence enough for the monthly budget
    assert nightly.detect({("MPI_Bcast", 8, 2): series(rnd, 24, spread=0.10, shift_at=22)}) == []
    # the same shift in a quiet series is
    assert nightly.detect({("MPI_Bcast", 8, 2): series(rnd, 24, spread=0.005, shift_at=22)})
