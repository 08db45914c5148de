"""Zeroed arrays whose memory is taken page by page as they are used, and dense arrays on huge pages.

numpy asks the kernel for transparent huge pages on its large allocations (``madvise(MADV_HUGEPAGE)``
on arrays of 4 MiB and more), so the first write into a zeroed array makes a whole 2 MiB page
resident. A table sized for the worst case and used sparsely or only at its start (a drive's
write-cache extent table and hash index, one block per drive of a 1,000-drive cluster) then costs
its full size: at 96 OSDs the device core's 48 write-cache indexes (151 MB, three headers per drive
written) were 149 MB resident with ``np.zeros`` and 0.6 MB with :func:`lazy_zeros`.

The other way round, arrays below numpy's 4 MiB threshold come from ``malloc`` in 4 KiB pages. A
compiled run that touches rows of many of them at random (the compiled Ceph core's per-OSD, per-PG and
per-drive tables at 1,000 OSDs) pays a TLB miss for most touches; :func:`huge_copy` moves such arrays,
used densely, into one mapping advised for huge pages.
"""

from __future__ import annotations

import mmap
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["HUGE", "advise_huge", "huge_copy", "lazy_zeros", "mapping_of"]

#: bytes of a transparent huge page (x86-64, arm64 with 4 KiB base pages)
HUGE = 2 << 20


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


def mapping_of(a: np.ndarray) -> mmap.mmap | None:
    """The private mapping behind an array of :func:`lazy_zeros` or :func:`huge_copy` (through its views
    and the buffer's memoryview), None for any other array."""
    buf = a.base
    while isinstance(buf, np.ndarray):
        buf = buf.base
    if isinstance(buf, memoryview):
        buf = buf.obj
    return buf if isinstance(buf, mmap.mmap) else None


def advise_huge(a: np.ndarray) -> np.ndarray:
    """Ask for huge pages on the rest of :func:`lazy_zeros` array ``a`` (``madvise(MADV_HUGEPAGE)`` on
    its mapping): each 2 MiB region then becomes resident whole at its first write. Returns ``a``; a
    no-op where the platform or the array does not allow it. (Until 2026-11-28 it looked for the
    mapping as the array's ``base`` and never found it behind numpy's memoryview: a no-op everywhere.)"""
    buf = mapping_of(a)
    if buf is not None and hasattr(mmap, "MADV_HUGEPAGE"):
        buf.madvise(mmap.MADV_HUGEPAGE)
    return a


def huge_copy(arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Copies of ``arrays`` packed into one private mapping advised for huge pages (each starts on a
    64-byte line; the first on a 2 MiB boundary), in their order. C-contiguous, writable, same shapes
    and dtypes: numba types them as the originals. Where huge pages are not available the copies are
    still correct, on 4 KiB pages. An empty list for no arrays."""
    if not arrays:
        return []
    sizes = [(a.nbytes + 63) // 64 * 64 for a in arrays]
    total = -(-(sum(sizes) + HUGE) // HUGE) * HUGE
    buf = mmap.mmap(-1, total, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        buf.madvise(mmap.MADV_HUGEPAGE)
    raw = np.frombuffer(buf, np.uint8)
    off = -raw.__array_interface__["data"][0] % HUGE
    out = []
    for a, n in zip(arrays, sizes, strict=True):
        b = raw[off : off + a.nbytes].view(a.dtype).reshape(a.shape)
        b[...] = a
        out.append(b)
        off += n
    return out
