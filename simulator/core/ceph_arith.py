"""Pure arithmetic of the Ceph model, written once: the Python model calls these functions as they
are, the compiled Ceph core (simulator.core.ceph_loop) calls their numba compilations (``*_nb``).

Each function takes and returns numbers only (no component, no random stream: a draw is passed in
as its uniform), so the compiled and the Python model cannot drift apart on them; the differential
tests (tests/test_core_ceph.py) check both forms on the same inputs.
"""

from __future__ import annotations

import math

from numba import njit

__all__ = [
    "align_up",
    "align_up_nb",
    "alloc_offset",
    "alloc_offset_nb",
    "autotune_split",
    "autotune_split_nb",
    "lognormal_cost",
    "lognormal_cost_nb",
    "throttle_should_wait",
    "throttle_should_wait_nb",
    "txc_cost",
    "txc_cost_nb",
    "wal_extent",
    "wal_extent_nb",
]  # fmt: skip

_WRITE = 1


def align_up(x: int, a: int) -> int:
    """``x`` rounded up to a multiple of ``a``."""
    return -(-x // a) * a


def alloc_offset(cursor: int, n: int, a: int, cap: int, data_start: int, bf_start: int, bf_end: int) -> int:
    """BlueStore's allocation cursor (simulator.ceph.bluestore.BlueStore.alloc): the device offset of
    ``n`` bytes (already a multiple of min_alloc_size ``a``) allocated at ``cursor``: past the BlueFS
    extent [bf_start, bf_end) when they would overlap it (bf_start < 0: no BlueFS extent on this
    device), wrapping to ``data_start`` past the device's capacity ``cap``."""
    off = cursor
    if bf_start >= 0 and off < bf_end and off + n > bf_start:
        off = -(-bf_end // a) * a
    if off + n > cap:
        off = data_start  # wrap: reuse space freed by copy-on-write
        if bf_start >= 0 and off + n > bf_start and off < bf_end:
            off = -(-bf_end // a) * a
    return off


def txc_cost(kind: int, length: int, prefer_deferred: int, cost_per_io: int) -> tuple[int, bool]:
    """(throttle cost, deferred) of a BlueStore transaction: txc->cost = (1 + data aios) x
    throttle_cost_per_io + bytes; a write of at most ``prefer_deferred`` bytes is deferred (no data
    aio); a trim or an empty write costs one IO."""
    if kind == _WRITE and length > 0:
        if length <= prefer_deferred:
            return cost_per_io + length, True
        return 2 * cost_per_io + length, False
    return cost_per_io, False


def throttle_should_wait(maximum: int, cur: int, c: int) -> bool:
    """Ceph's Throttle::_should_wait: a get of ``c`` waits if it would pass the maximum, except that
    a single get larger than the maximum passes once the counter is at most the maximum."""
    return maximum > 0 and ((c <= maximum and cur + c > maximum) or (c >= maximum and cur > maximum))


def wal_extent(pos: int, nbytes: int, block: int, ring: int, rewrite_tail: bool) -> tuple[int, int, int]:
    """The WAL write of a kv_sync batch of ``nbytes`` (at least 1) appended at log position ``pos``:
    (offset in the ring, length, new log position). Block-aligned; with ``rewrite_tail`` the partial
    tail block is written again (as BlueFS does); a write past the ring's end wraps to its start
    (the next recycled log file)."""
    start = pos - pos % block if rewrite_tail else -(-pos // block) * block
    end = -(-(start + (pos - start if pos > start else 0) + nbytes) // block) * block
    new_pos = (pos if pos > start else start) + nbytes
    rel = start % ring
    n = end - start
    if rel + n > ring:
        rel = 0
        new_pos = n
    return rel, n, new_pos


def lognormal_cost(mean: float, ln_mu: float, ln_s: float, u1: float, u2: float) -> float:
    """An op's processing cost, log-normal with mean ``mean`` (Box-Muller from the uniforms ``u1``,
    ``u2``; ``ln_mu = -ln_s**2 / 2``)."""
    z = math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)
    return mean * math.exp(ln_mu + ln_s * z)


def autotune_split(b: int, base: int, cache_bytes: int, onodes_bytes: int, writing_bytes: int, target: int, bmax: int,
                   bmin: int, kv_ratio: float, meta_ratio: float) -> tuple[int, int, int, int, int]:
    """One OSD's cache tuning (simulator.ceph.autotune, PriorityCache::Manager::tune_memory): (budget, kv, meta,
    data, mapped) in bytes. ``b``: the budget before; the OSD's mapped memory is estimated as ``base``
    (osd_memory_base) + what its data cache (``cache_bytes``) and onode cache (``onodes_bytes``) hold + the data of
    writes in flight (``writing_bytes``); ``target`` its osd_memory_target; ``bmax`` / ``bmin`` the budget's
    bounds. The budget moves toward ``bmax`` by (1 - mapped/target) of the distance below the target, toward
    ``bmin`` by (1 - target/mapped) above it; RocksDB takes ``kv_ratio``, the onode cache what it holds plus a
    tenth of its share (at most ``meta_ratio``), the data cache the rest."""
    mapped = base + cache_bytes + onodes_bytes + writing_bytes
    if mapped < target:
        b += int((1.0 - mapped / target) * (bmax - b))
    else:
        b -= int((1.0 - target / mapped) * (b - bmin))
    b = min(bmax, max(bmin, b))
    kv = int(kv_ratio * b)
    meta_cap = int(meta_ratio * b)
    meta = min(meta_cap, onodes_bytes + meta_cap // 10)
    data = max(0, b - kv - meta)
    return b, kv, meta, data, mapped


align_up_nb = njit(cache=True, inline="always")(align_up)
autotune_split_nb = njit(cache=True, inline="always")(autotune_split)
alloc_offset_nb = njit(cache=True, inline="always")(alloc_offset)
txc_cost_nb = njit(cache=True, inline="always")(txc_cost)
throttle_should_wait_nb = njit(cache=True, inline="always")(throttle_should_wait)
wal_extent_nb = njit(cache=True, inline="always")(wal_extent)
lognormal_cost_nb = njit(cache=True, inline="always")(lognormal_cost)
