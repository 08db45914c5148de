"""What the OSD asks of an object store (BlueStore or FileStore), and the read-cache logic both share.

The OSD calls ``probe_read`` / ``probe_onode`` (cache lookups), ``read`` / ``read_onode`` (device
reads on misses), ``admit`` (queue_transactions' throttles), ``write`` (queue a transaction, call
back on commit), ``alloc`` / ``alloc_many`` / ``data_capacity`` (object placement), and reads
``meta_miss_read`` / ``meta_miss_cost`` / ``hit_cost``. Cached data is held as runs of read units
per object (:mod:`simulator.ceph.cache`); a per-unit key is ``objkey << BLOCK_BITS`` + unit index.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simulator.engine import Component

__all__ = ["BLOCK_BITS", "ObjectStore", "fill_offsets", "fill_skip"]

BLOCK_BITS = 17  # block index bits in a cache key (objects up to 2^26 bytes at 512-byte units)


class ObjectStore(Component):
    """Base of the object stores: data cache (``cache``, unit ``unit``), metadata cache
    (``onodes``), in-flight written blocks readable from memory (``writing``)."""

    KIND = ""  # the key of the store's statistics in the OSD's (bluestore / filestore)
    unit: int
    cache: Any
    onodes: Any
    buffered_read: bool
    #: deferred writes not yet applied, readable from memory: objkey -> [first unit, end unit) runs
    writing: dict[int, list[tuple[int, int]]]

    def keys(self, objkey: int, off: int, length: int) -> range:
        """Cache keys of the read units covering [off, off+length) of an object."""
        u = self.unit
        base = objkey << BLOCK_BITS
        return range(base + off // u, base + (off + length - 1) // u + 1)

    def units(self, off: int, length: int) -> tuple[int, int]:
        """The read units [a, b) covering [off, off+length) of an object."""
        u = self.unit
        return off // u, (off + max(length, 1) - 1) // u + 1

    def probe_read(self, objkey: int, off: int, length: int) -> bool:
        """True if every read unit of [off, off+length) of the object is in memory (cache, or a
        written block not yet on the device)."""
        u = self.unit
        a = off // u
        b = (off + length - 1) // u + 1
        c = self.cache
        if c.contains_range(objkey, a, b):
            c.touch_range(objkey, a, b)
            c.hits += 1
            return True
        runs = self.writing.get(objkey) if self.writing else None
        if runs and _covered(c.missing(objkey, a, b), runs):
            c.hits += 1
            return True
        c.misses += 1
        return False

    def probe_onode(self, objkey: int) -> bool:
        return self.onodes.lookup(objkey)

    def _onode_only_done(self, ev: Any) -> None:
        req = ev._value
        req.event = None  # break the request <-> event cycle (freed by reference counting)
        req.parent(req.tag)

    def _read_done(self, ev: Any) -> None:
        """A miss read is done: the data joins the cache (buffered reads); ``req.parent(op)``."""
        req = ev._value
        req.event = None
        op = req.tag
        if self.buffered_read:
            u = self.unit
            self.cache.insert_range(op.objkey, op.off // u, (op.off + op.length - 1) // u + 1)
        req.parent(op)


def _covered(gaps: list[tuple[int, int]], runs: list[tuple[int, int]]) -> bool:
    """True if every range of ``gaps`` lies in the union of ``runs`` (few, unsorted)."""
    rs = sorted(runs)
    for a, b in gaps:
        cur = a
        for x, y in rs:
            if x <= cur < y:
                cur = y
                if cur >= b:
                    break
        if cur < b:
            return False
    return True


def fill_skip(cursor: int, count: int, n: int, lo: int, hi: int, target: int) -> tuple[int, int]:
    """A sequential fill of ``count`` allocations of ``n`` bytes from ``cursor`` past a reserved span:
    allocation r is at ``cursor + r * n``, and from the first one that would overlap [lo, hi) (ends
    after ``lo`` and starts before ``hi``) on, each moves by the same ``jump`` so that one starts at
    ``target``. Returns (k, jump): the first moved allocation (``count``: none) and the move. In closed
    form (the offsets rise, so the first allocation ending after ``lo`` is the only one to check)."""
    if count <= 0:
        return count, 0
    k = max(0, (lo - n - cursor) // n + 1) if n > 0 else (0 if cursor > lo else count)
    if k >= count or cursor + k * n >= hi:
        return count, 0
    return k, target - (cursor + k * n)


def fill_offsets(cursor: int, count: int, n: int, k: int, jump: int) -> np.ndarray:
    """The device offsets (int64) of the fill that :func:`fill_skip` describes."""
    offs = cursor + np.arange(count, dtype=np.int64) * n
    offs[k:] += jump
    return offs
