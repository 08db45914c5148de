"""Resident memory of one numpy array, for tests that check memory follows use (lazy_zeros blocks)."""

from __future__ import annotations

import numpy as np


def resident_bytes(a: np.ndarray) -> int:
    """Bytes of ``a``'s pages present in memory (/proc/self/pagemap, bit 63)."""
    ps = 4096
    addr = a.__array_interface__["data"][0]
    p0, p1 = addr // ps, (addr + a.nbytes + ps - 1) // ps
    with open("/proc/self/pagemap", "rb") as f:
        f.seek(p0 * 8)
        words = np.frombuffer(f.read((p1 - p0) * 8), np.uint64)
    return int(((words >> np.uint64(63)) & np.uint64(1)).sum()) * ps
