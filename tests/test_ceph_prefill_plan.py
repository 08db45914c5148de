"""The pre-fill as arithmetic (simulator.ceph.store.fill_skip, BlueStore/FileStore ``alloc_plan``,
``BaseTable.set_bases_filled``) against the vectorised fill it replaces, written out here as the oracle:
offsets ``cursor + r * n``, the first that would overlap the reserved span [lo, hi) and all after it moved
so that it starts at ``target``; and each OSD's offsets written to its entries of the table (C order, in
order) by a scatter. Random cursors, sizes and spans around the boundary cases (a span before, inside,
straddling or after the fill; an empty span; one allocation), then whole tables.
"""

from __future__ import annotations

import numpy as np
import pytest

from simulator.ceph.rbd import BaseTable
from simulator.ceph.store import fill_offsets, fill_skip


def _oracle(cursor: int, count: int, n: int, lo: int, hi: int, target: int) -> np.ndarray:
    offs = cursor + np.arange(count, dtype=np.int64) * n
    if count:
        cross = np.nonzero((offs + n > lo) & (offs < hi))[0]
        if cross.size:
            k = int(cross[0])
            offs[k:] += target - int(offs[k])
    return offs


def test_fill_skip_matches_the_vectorised_fill() -> None:
    rng = np.random.default_rng(11)
    cases = 0
    for _ in range(20000):
        n = int(rng.choice([1, 3, 4096, 65536, 4 << 20]))
        count = int(rng.integers(0, 40))
        cursor = int(rng.integers(0, 60)) * n + int(rng.integers(0, 3))
        lo = cursor + int(rng.integers(-5, 50)) * n + int(rng.integers(-n, n + 1))
        hi = lo + int(rng.choice([0, 1, n, 3 * n, 17 * n + 5]))
        target = hi + int(rng.integers(0, 3 * n + 1))
        k, jump = fill_skip(cursor, count, n, lo, hi, target)
        got = fill_offsets(cursor, count, n, k, jump)
        want = _oracle(cursor, count, n, lo, hi, target)
        assert np.array_equal(got, want), (cursor, count, n, lo, hi, target, k, jump)
        cases += k < count
    assert cases > 2000  # the move is exercised, not only fills that miss the span


@pytest.mark.parametrize("width", [1, 3, 6])
def test_set_bases_filled_matches_the_scatter(width: int) -> None:
    rng = np.random.default_rng(width)
    n_obj, n_osd, unit = 5000, 23, 4096
    where = rng.integers(-1, n_osd, n_obj * width).astype(np.int16)
    plans, want = {}, BaseTable(n_obj, width, unit, 1 << 40)
    for o in range(n_osd):
        idx = np.nonzero(where == o)[0]
        if not idx.size:
            continue
        n = unit * int(rng.integers(1, 300))
        cursor = unit * int(rng.integers(0, 10**6))
        lo = cursor + unit * int(rng.integers(-10, idx.size + 10)) * int(rng.integers(1, 300))
        hi = lo + unit * int(rng.integers(0, 5000))
        k, jump = fill_skip(cursor, idx.size, n, lo, hi, hi)
        plans[o] = (cursor, n, k, jump, idx.size)
        want.set_bases_flat(idx, _oracle(cursor, idx.size, n, lo, hi, hi))
    got = BaseTable(n_obj, width, unit, 1 << 40)
    got.set_bases_filled(where, plans)
    assert np.array_equal(got._np, want._np)
    assert (got._np == -1).sum() == (where < 0).sum()


def test_set_bases_filled_refuses_what_encode_bases_refuses() -> None:
    t = BaseTable(4, 1, 4096, 1 << 20)
    where = np.zeros(4, np.int16)
    with pytest.raises(ValueError, match="not a multiple of the allocation unit"):
        t.set_bases_filled(where, {0: (512, 4096, 4, 0, 4)})
    with pytest.raises(ValueError, match="not below the largest OSD device"):
        t.set_bases_filled(where, {0: ((1 << 20) - 4096, 4096, 4, 0, 4)})
