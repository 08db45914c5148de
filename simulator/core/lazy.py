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
import os
import platform
import sys
from typing import Any

import numpy as np

__all__ = ["MAP_NORESERVE", "copy_touched", "copy_touched_table", "lazy_zeros", "touched_chunks"]

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
    if hasattr(buf, "madvise") and hasattr(mmap, "MADV_NOHUGEPAGE"):  # where THP is "always": 4 KiB pages all the same
        buf.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(buf, dt).reshape(shape)


#: bit 63 of a /proc/self/pagemap entry: the page is present; bit 62: it is swapped out
_PM_PRESENT_OR_SWAPPED = np.uint64(3 << 62)
_PM_PRESENT = np.uint64(1 << 63)
#: bits 0-54: the page frame number (0 unless the process may see frame numbers: CAP_SYS_ADMIN)
_PM_PFN = np.uint64((1 << 55) - 1)


def _zero_pfn(fd: int) -> int:
    """The frame number of the kernel's shared zero page, which a read of an untouched private page maps (0 where
    pagemap hides frame numbers)."""
    ps = mmap.PAGESIZE
    m = mmap.mmap(-1, ps, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    try:
        page = np.frombuffer(m, np.uint8)
        if page[0] != 0:  # (the read maps the zero page)
            return 0
        word = int(np.frombuffer(os.pread(fd, 8, page.__array_interface__["data"][0] // ps * 8), np.uint64)[0])
        del page
    finally:
        m.close()
    return word & int(_PM_PFN) if word & int(_PM_PRESENT) else 0


def touched_chunks(a: np.ndarray, chunk: int) -> np.ndarray:
    """For a 1-d C-contiguous array, which ``chunk``-element pieces may hold something other than zeros: those with a
    page present or swapped out (Linux's /proc/self/pagemap). A page of a :func:`lazy_zeros` table never touched is
    neither, so that a copy of a mostly untouched terabyte drive's FTL table visits only where it was written, without
    reading (and mapping) the rest. Pages only read map the kernel's zero page: they count as untouched where pagemap
    shows frame numbers (CAP_SYS_ADMIN), and as touched elsewhere (a superset: copies then read them).
    Where the map cannot be read (other systems, arrays not in their own pages), every piece may hold something."""
    n = a.shape[0]
    k = -(-n // chunk)
    every = np.ones(k, bool)
    if n == 0 or a.ndim != 1 or not a.flags.c_contiguous or not sys.platform.startswith("linux"):
        return every
    ps = mmap.PAGESIZE
    addr = a.__array_interface__["data"][0]
    p0, p1 = addr // ps, (addr + a.nbytes + ps - 1) // ps
    try:
        fd = os.open("/proc/self/pagemap", os.O_RDONLY)
    except OSError:
        return every
    try:
        raw = b"".join(os.pread(fd, min(1 << 24, (p1 - p) * 8), p * 8) for p in range(p0, p1, 1 << 21))
        zero = _zero_pfn(fd)
    except (OSError, ValueError):
        return every
    finally:
        os.close(fd)
    if len(raw) != (p1 - p0) * 8:
        return every
    words = np.frombuffer(raw, np.uint64)
    used = (words & _PM_PRESENT_OR_SWAPPED) != 0
    if zero:  # a page only read maps the zero page: nothing written there
        used &= ~(((words & _PM_PRESENT) != 0) & ((words & _PM_PFN) == np.uint64(zero)))
    page = np.nonzero(used)[0] + p0  # the pages in use, as page numbers
    first = np.maximum(page * ps - addr, 0) // a.itemsize  # the element range each used page covers
    last = np.minimum((page + 1) * ps - addr, a.nbytes) // a.itemsize - 1
    edge = np.zeros(k + 1, np.int64)  # +1 where a page's range of chunks starts, -1 after it ends
    np.add.at(edge, first // chunk, 1)
    np.add.at(edge, last // chunk + 1, -1)
    return np.cumsum(edge[:k]) > 0


def copy_touched(dst: np.ndarray, src: np.ndarray, both: bool = False) -> None:
    """``dst[:] = src`` for 1-d tables of anonymous memory (lazy_zeros), writing only the runs of pages where ``src``
    (or, ``both``, ``dst``) holds something, so that untouched zero pages of either stay unmapped. Only pages in use
    are read (:func:`touched_chunks`): reading a fresh 1.92 TB drive's 4 GB of tables would map them, and copying
    them in pieces larger than a page would fill ``dst``'s pages around a few written slots (a run's first
    writes land in every plane's first block, spread over the whole p2l table)."""
    n = src.shape[0]
    page = max(1, mmap.PAGESIZE // src.itemsize)
    visit = touched_chunks(src, page)
    if both:
        visit |= touched_chunks(dst, page)
    edge = np.flatnonzero(np.diff(np.concatenate(([0], visit.view(np.int8), [0]))))
    for a, b in zip((edge[0::2] * page).tolist(), np.minimum(edge[1::2] * page, n).tolist(), strict=True):
        s = src[a:b]
        if s.any() or (both and dst[a:b].any()):
            dst[a:b] = s


def copy_touched_table(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src`` for lazily zeroed tables of one shape: their pages in use only (contiguous ones;
    any other pair is copied whole)."""
    if dst.shape == src.shape and dst.flags.c_contiguous and src.flags.c_contiguous:
        copy_touched(dst.reshape(-1), src.reshape(-1))
    else:
        dst[tuple(slice(0, k) for k in src.shape)] = src
