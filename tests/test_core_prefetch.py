"""core.loop.prefetch: a cache hint the compiled loops give before random reads of large tables
(issue 13, speed). It must compile for the arrays the loops hand it and change nothing."""

from __future__ import annotations

import numpy as np
from numba import njit

from simulator.core.loop import prefetch


@njit(cache=False)
def _touch(a1, a3, i, j, k):
    prefetch(a1, (i,))
    prefetch(a3, (i % a3.shape[0], j, k))
    prefetch(a3[i % a3.shape[0]], (j, k))  # a view, as the loop's per-drive index
    return a1[i] + a3[i % a3.shape[0], j, k]


def test_prefetch_is_a_hint_only():
    rng = np.random.default_rng(3)
    a1 = rng.integers(0, 1 << 40, 4096)
    a3 = rng.integers(0, 1 << 40, (3, 65, 2))
    b1, b3 = a1.copy(), a3.copy()
    for i, j, k in zip(rng.integers(0, 4096, 200), rng.integers(0, 65, 200), rng.integers(0, 2, 200), strict=True):
        assert _touch(a1, a3, i, j, k) == a1[i] + a3[i % 3, j, k]
    np.testing.assert_array_equal(a1, b1)
    np.testing.assert_array_equal(a3, b3)
