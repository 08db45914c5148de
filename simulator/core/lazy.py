"""Zeroed arrays whose memory is taken page by page as they are used.

numpy asks the kernel for transparent huge pages on its large allocations (``madvise(MADV_HUGEPAGE)``
on arrays of 4 MiB and more), so the first write into a zeroed array makes a whole 2 MiB page
resident. A table sized for the worst case and used sparsely or only at its start (a drive's
write-cache extent table and hash index, one block per drive of a 1,000-drive cluster) then costs
its full size: at 96 OSDs the device core's 48 write-cache indexes (151 MB, three headers per drive
written) were 149 MB resident with ``np.zeros`` and 0.6 MB with :func:`lazy_zeros`.
"""

from __future__ import annotations

import mmap
from typing import Any

import numpy as np

__all__ = ["advise_huge", "lazy_zeros"]


def lazy_zeros(shape: Any, dtype: Any = np.float64) -> np.ndarray:
    """``np.zeros(shape, dtype)`` in a private anonymous mapping of its own (4 KiB pages, no huge-page
    advice): memory only for the pages written. A C-contiguous, writable ndarray like any other (numba
    types it as ``np.zeros``' result)."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if n < mmap.PAGESIZE:
        return np.zeros(shape, dt)
    buf = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    return np.frombuffer(buf, dt).reshape(shape)


def advise_huge(a: np.ndarray) -> np.ndarray:
    """Ask for huge pages on the rest of :func:`lazy_zeros` array ``a`` (``madvise(MADV_HUGEPAGE)`` on
    its mapping), after the writes that initialise it: a table accessed at random then costs fewer TLB
    misses once it is used, while the 2 MiB regions nobody writes stay unallocated (a read maps the
    zero page). Returns ``a``; a no-op where the platform or the array does not allow it."""
    buf = a.base
    while isinstance(buf, np.ndarray):
        buf = buf.base
    if isinstance(buf, mmap.mmap) and hasattr(mmap, "MADV_HUGEPAGE"):
        buf.madvise(mmap.MADV_HUGEPAGE)
    return a
