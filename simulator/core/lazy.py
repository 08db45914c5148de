"""Zeroed arrays whose memory is taken page by page as they are used.

numpy asks the kernel for transparent huge pages on its large allocations (``madvise(MADV_HUGEPAGE)``
on arrays of 4 MiB and more), so the first write into a zeroed array makes a whole 2 MiB page
resident. A table sized for the worst case and used sparsely or only at its start (a drive's
write-cache extent table and hash index, one block per drive of a 1,000-drive cluster) then costs
its full size: at 96 OSDs the device core's 48 write-cache indexes (151 MB, three headers per drive
written) were 149 MB resident with ``np.zeros`` and 0.6 MB with :func:`lazy_zeros`.

(``advise_huge``, meant to put a lazy table on huge pages once its headers were written, looked for
the mapping as the array's ``base`` and never found it behind numpy's memoryview: it was a no-op, and
is gone with its one use. Moving the compiled Ceph core's small dense arrays into one mapping on huge
pages was tried and dropped: at 1,008 OSDs it showed no gain. See docs/design.md, "CPU per IO and
memory of the compiled core at 1,008 OSDs".)
"""

from __future__ import annotations

import mmap
import platform
import sys
from typing import Any

import numpy as np

__all__ = ["MAP_NORESERVE", "lazy_zeros"]

#: the mmap flag; Python's mmap module has it only from 3.13, so on Linux the kernel's value is used where
#: the module lacks it (0x4000 on x86-64, arm64, riscv, s390, loongarch: the generic mman.h; the other
#: architectures and systems get 0, i.e. an accounted mapping, as before)
MAP_NORESERVE: int = getattr(mmap, "MAP_NORESERVE", 0) or (
    0x4000 if sys.platform.startswith("linux") and platform.machine() in ("x86_64", "aarch64", "arm64", "riscv64", "s390x", "loongarch64") else 0
)


def lazy_zeros(shape: Any, dtype: Any = np.float64) -> np.ndarray:
    """``np.zeros(shape, dtype)`` in a private anonymous mapping of its own (4 KiB pages, no huge-page
    advice): memory only for the pages written. A C-contiguous, writable ndarray like any other (numba
    types it as ``np.zeros``' result)."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if n < mmap.PAGESIZE:
        return np.zeros(shape, dt)
    # MAP_NORESERVE: the kernel's overcommit heuristic does not charge the whole mapping up front (a
    # media cache's worst-case extent table reserves 1.2 GB per LUN of which a run touches a few MB;
    # without the flag one mapping larger than the machine's memory is refused)
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_NORESERVE
    buf = mmap.mmap(-1, n, flags=flags, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    return np.frombuffer(buf, dt).reshape(shape)
