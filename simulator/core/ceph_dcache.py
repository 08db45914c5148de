"""BlueStore's data cache in the compiled Ceph core (numba): the buffer cache of every OSD
(``simulator.ceph.cache``: :class:`TwoQExtentCache`, Nautilus' 2Q, or :class:`LruExtentCache`) and
its *writing* buffers (deferred writes not applied yet, read from memory), with the same behaviour.

The Python cache keeps runs of units; its docstrings state (and the identity tests check) that a
range operation leaves the units in the order a unit-by-unit operation in increasing unit order
would. The compiled cache keeps that order unit by unit: one entry per cached unit (or 2Q ghost) in
a preallocated pool, on an intrusive doubly linked list per OSD and queue (2Q: warm_in, warm_out,
hot; LRU: one list), found through a chained hash on (OSD, object, unit). Entries come from a free
stack, then from an untouched tail of the pool (arrays made by ``np.zeros`` are not touched until
used), so the pool is sized by the caches' limits (capacity + ghosts, plus one object's units of
slack for the moment between an insert and its trim) without costing memory it does not use.

The writing buffers are entries (OSD, object, first unit, end unit) on a chained hash by (OSD,
object): a deferred write adds one, its batch's apply removes one equal to it (``list.remove``).

:func:`build` makes the arrays from the Python caches (their exact order); :func:`write_back` puts
the arrays back into them (runs of consecutive units), so persist_state sweeps hand the cache over
both ways. The kernels (:func:`probe`, :func:`read_done`, :func:`write`, :func:`writing_add`,
:func:`writing_remove`) are what the loop calls where the Python model calls the cache
(``ObjectStore.probe_read`` / ``_read_done``, ``BlueStore.write`` / ``_deferred_io_done``).
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np
from numba import njit

from simulator import nbcache
from simulator.ceph import cache as _pycache
from simulator.ceph.cache import twoq_limits
from simulator.core import ceph_layout as _clayout
from simulator.core.ceph_layout import (
    DC_BUFR,
    DC_BUFW,
    DC_CAP,
    DC_HEAD,
    DC_HITS,
    DC_HOT,
    DC_IN,
    DC_KIN,
    DC_KOUT,
    DC_MISSES,
    DC_NW,
    DC_OUT,
    DC_POLICY,
    DC_TAIL,
    DC_UNIT,
    DC_UNITS,
    DC_WU,
    DCG_FREE,
    DCG_MASK,
    DCG_OVER,
    DCG_TOP,
    DCG_WFREE,
    DCG_WMASK,
    DCG_WTOP,
    NDC,
    NDCG,
    POL_2Q,
    POL_LRU,
)

# the kernels read the layout's constants and compile the Python cache's 2Q arithmetic: a change there recompiles them
nbcache.invalidate_stale(__file__, _clayout.__file__, _pycache.__file__)

#: the 2Q trim targets, written once in simulator.ceph.cache and compiled here
_twoq_limits = njit(cache=True, nogil=True)(twoq_limits)

__all__ = ["DCache", "build", "held", "probe", "read_done", "reset_counters", "resize", "write", "write_back",
           "writing_add", "writing_remove"]

#: the cache arrays of one compiled run (a field of ``CephState``)
DCache = namedtuple(
    "DCache",
    [
        "oi",  # per OSD (DC_* columns): policy, limits, counters, list heads / tails / lengths
        "of",  # per OSD: cache_hit_cost, seconds
        "ek", "eu", "eo", "el", "ep", "en", "eh",  # entries: object, unit, OSD, list, prev, next, hash next (+1)
        "bk",  # hash buckets: entry + 1 (0 = empty)
        "fr",  # free stack of entries
        "g",  # globals (DCG_*)
        "wk", "wa", "wb", "wo", "wh", "wbk", "wfr",  # writing buffers: object, units [a, b), OSD, hash next (+1), buckets, free
    ],
)  # fmt: skip


# =============================================================================== hash
@njit(cache=True, inline="always", _nrt=False)
def _h(o, key, u, mask):
    h = key * 0x5851F42D4C957F2D + u * 0x14057B7EF767814F + o * 0x2545F4914F6CDD1D
    h ^= h >> 29
    h *= 0x1B873593
    h ^= h >> 32
    return h & mask


@njit(cache=True, _nrt=False)
def _find(dc, o, key, u):
    e = dc.bk[_h(o, key, u, dc.g[DCG_MASK])] - 1
    while e >= 0:
        if dc.ek[e] == key and dc.eu[e] == u and dc.eo[e] == o:
            return e
        e = dc.eh[e] - 1
    return -1


@njit(cache=True, _nrt=False)
def _hash_in(dc, e):
    b = _h(dc.eo[e], dc.ek[e], dc.eu[e], dc.g[DCG_MASK])
    dc.eh[e] = dc.bk[b]
    dc.bk[b] = e + 1


@njit(cache=True, _nrt=False)
def _new(dc, o, key, u):
    """A new entry (hashed, on no list)."""
    g = dc.g
    if g[DCG_FREE]:
        g[DCG_FREE] -= 1
        e = dc.fr[g[DCG_FREE]]
    else:
        e = g[DCG_TOP]
        if e >= dc.ek.shape[0]:  # cannot happen (the builder sized the pool for every entry the caches can
            g[DCG_OVER] = 1  # hold at once): flag it, reuse the last entry; write_back refuses the run
            e = dc.ek.shape[0] - 1
            _hash_out(dc, e)
        else:
            g[DCG_TOP] = e + 1
    dc.ek[e] = key
    dc.eu[e] = u
    dc.eo[e] = o
    _hash_in(dc, e)
    return e


@njit(cache=True, _nrt=False)
def _hash_out(dc, e):
    """Take entry ``e`` off its hash chain."""
    b = _h(dc.eo[e], dc.ek[e], dc.eu[e], dc.g[DCG_MASK])
    x = dc.bk[b] - 1
    if x == e:
        dc.bk[b] = dc.eh[e]
    else:
        while x >= 0:
            nx = dc.eh[x] - 1
            if nx == e:
                dc.eh[x] = dc.eh[e]
                break
            x = nx


@njit(cache=True, _nrt=False)
def _del(dc, e):
    """Unhash entry ``e`` (on no list) and free it."""
    _hash_out(dc, e)
    g = dc.g
    dc.fr[g[DCG_FREE]] = e
    g[DCG_FREE] += 1


# =============================================================================== lists (oldest first)
@njit(cache=True, _nrt=False)
def _unlink(dc, o, e):
    lst = dc.el[e]
    p = dc.ep[e]
    n = dc.en[e]
    if p < 0:
        dc.oi[o, DC_HEAD + lst] = n
    else:
        dc.en[p] = n
    if n < 0:
        dc.oi[o, DC_TAIL + lst] = p
    else:
        dc.ep[n] = p
    dc.oi[o, DC_UNITS + lst] -= 1


@njit(cache=True, _nrt=False)
def _append(dc, o, lst, e):
    t = dc.oi[o, DC_TAIL + lst]
    dc.el[e] = lst
    dc.ep[e] = t
    dc.en[e] = -1
    if t < 0:
        dc.oi[o, DC_HEAD + lst] = e
    else:
        dc.en[t] = e
    dc.oi[o, DC_TAIL + lst] = e
    dc.oi[o, DC_UNITS + lst] += 1


@njit(cache=True, _nrt=False)
def _trim_front(dc, o, lst, n, to):
    """_ExtentCache._trim_front: the ``n`` oldest units of ``lst`` to the young end of ``to`` (ghosts),
    or gone (``to`` < 0)."""
    for _ in range(n):
        e = dc.oi[o, DC_HEAD + lst]
        _unlink(dc, o, e)
        if to < 0:
            _del(dc, e)
        else:
            _append(dc, o, to, e)


@njit(cache=True, _nrt=False)
def _trim_2q(dc, o):
    """TwoQExtentCache._trim."""
    oi = dc.oi
    cap = oi[o, DC_CAP]
    n_in = oi[o, DC_UNITS + DC_IN]
    n_hot = oi[o, DC_UNITS + DC_HOT]
    if n_in + n_hot <= cap:
        return
    kin, khot = _twoq_limits(cap, oi[o, DC_KIN], n_in, n_hot)
    if n_in > kin:
        _trim_front(dc, o, DC_IN, n_in - kin, DC_OUT)
    if n_hot > khot:
        _trim_front(dc, o, DC_HOT, n_hot - khot, -1)
    n_out = oi[o, DC_UNITS + DC_OUT]
    if n_out > oi[o, DC_KOUT]:
        _trim_front(dc, o, DC_OUT, n_out - oi[o, DC_KOUT], -1)


@njit(cache=True, _nrt=False)
def _insert_range(dc, o, key, a, b):
    """insert_range of TwoQExtentCache / LruExtentCache, unit by unit in increasing order."""
    if dc.oi[o, DC_CAP] <= 0 or b <= a:
        return
    if dc.oi[o, DC_POLICY] == POL_2Q:
        for u in range(a, b):
            e = _find(dc, o, key, u)
            if e < 0:
                _append(dc, o, DC_IN, _new(dc, o, key, u))
            elif dc.el[e] != DC_IN:  # hot: refresh; a ghost: back as hot
                _unlink(dc, o, e)
                _append(dc, o, DC_HOT, e)
        _trim_2q(dc, o)
    else:
        for u in range(a, b):
            e = _find(dc, o, key, u)
            if e < 0:
                _append(dc, o, DC_IN, _new(dc, o, key, u))
            else:
                _unlink(dc, o, e)
                _append(dc, o, DC_IN, e)
        over = dc.oi[o, DC_UNITS + DC_IN] - dc.oi[o, DC_CAP]
        if over > 0:
            _trim_front(dc, o, DC_IN, over, -1)


@njit(cache=True, _nrt=False)
def _entries(dc, o):
    return dc.oi[o, DC_UNITS + DC_IN] + dc.oi[o, DC_UNITS + DC_OUT] + dc.oi[o, DC_UNITS + DC_HOT]


@njit(cache=True, _nrt=False)
def resize(dc, o, cap, kin, kout):
    """autotune.resize_cache on OSD ``o``'s data cache: the new capacity (units) and, for 2Q, its warm_in and
    ghost limits; what no longer fits leaves in the cache's own order (2Q: its trim; a capacity of 0
    clears it, ghosts too; LRU: the oldest units)."""
    oi = dc.oi
    cap = max(0, cap)
    oi[o, DC_CAP] = cap
    if oi[o, DC_POLICY] == POL_2Q:
        oi[o, DC_KIN] = kin
        oi[o, DC_KOUT] = kout
        if cap == 0:
            for lst in (DC_IN, DC_OUT, DC_HOT):
                _trim_front(dc, o, lst, oi[o, DC_UNITS + lst], -1)
        else:
            _trim_2q(dc, o)
    else:
        over = oi[o, DC_UNITS + DC_IN] - cap
        if over > 0:
            _trim_front(dc, o, DC_IN, over, -1)


@njit(cache=True, _nrt=False)
def held(dc, o):
    """len() of OSD ``o``'s data cache: the units it holds (not the 2Q ghosts)."""
    return dc.oi[o, DC_UNITS + DC_IN] + dc.oi[o, DC_UNITS + DC_HOT]


@njit(cache=True, _nrt=False)
def _discard_range(dc, o, key, a, b):
    """discard_range: units [a, b) (and their ghosts) leave: the data was overwritten."""
    if _entries(dc, o) == 0:
        return
    for u in range(a, b):
        e = _find(dc, o, key, u)
        if e >= 0:
            _unlink(dc, o, e)
            _del(dc, e)


@njit(cache=True, _nrt=False)
def _written(dc, o, key, u):
    """Unit ``u`` of the object lies in one of its writing buffers."""
    x = dc.wbk[_h(o, key, -1, dc.g[DCG_WMASK])] - 1
    while x >= 0:
        if dc.wk[x] == key and dc.wo[x] == o and dc.wa[x] <= u < dc.wb[x]:
            return True
        x = dc.wh[x] - 1
    return False


@njit(cache=True, _nrt=False)
def _has_writing(dc, o, key):
    x = dc.wbk[_h(o, key, -1, dc.g[DCG_WMASK])] - 1
    while x >= 0:
        if dc.wk[x] == key and dc.wo[x] == o:
            return True
        x = dc.wh[x] - 1
    return False


# =============================================================================== what the loop calls
@njit(cache=True, _nrt=False)
def probe(dc, o, key, off, length):
    """ObjectStore.probe_read: 1 if every read unit of [off, off+length) is in memory (cached — then
    refreshed — or in a writing buffer), counted as a hit; else 0, a miss."""
    oi = dc.oi
    u0 = oi[o, DC_UNIT]
    a = off // u0
    b = (off + length - 1) // u0 + 1
    twoq = oi[o, DC_POLICY] == POL_2Q
    live = True
    if oi[o, DC_UNITS + DC_IN] + oi[o, DC_UNITS + DC_HOT] == 0:
        live = False
    else:
        for u in range(a, b):
            e = _find(dc, o, key, u)
            if e < 0 or (twoq and dc.el[e] == DC_OUT):
                live = False
                break
    if live:
        for u in range(a, b):  # touch_range
            e = _find(dc, o, key, u)
            if not twoq:
                _unlink(dc, o, e)
                _append(dc, o, DC_IN, e)
            elif dc.el[e] == DC_HOT:
                _unlink(dc, o, e)
                _append(dc, o, DC_HOT, e)
        oi[o, DC_HITS] += 1
        return 1
    if oi[o, DC_NW] and _has_writing(dc, o, key):
        covered = True
        for u in range(a, b):
            e = _find(dc, o, key, u) if _entries(dc, o) else -1
            if (e < 0 or (twoq and dc.el[e] == DC_OUT)) and not _written(dc, o, key, u):
                covered = False
                break
        if covered:
            oi[o, DC_HITS] += 1
            return 1
    oi[o, DC_MISSES] += 1
    return 0


@njit(cache=True, _nrt=False)
def read_done(dc, o, key, off, length):
    """BlueStore's _read_done: with buffered reads the units read join the cache."""
    if dc.oi[o, DC_BUFR]:
        u0 = dc.oi[o, DC_UNIT]
        _insert_range(dc, o, key, off // u0, (off + length - 1) // u0 + 1)


@njit(cache=True, _nrt=False)
def write(dc, o, key, off, length, kind):
    """BlueStore.write's cache step: a write's units replace the cached ones (buffered writes) or the
    written range leaves the cache (``kind`` 1 = write, 2 = trim)."""
    oi = dc.oi
    u0 = oi[o, DC_UNIT]
    a = off // u0
    b = (off + length - 1) // u0 + 1
    if oi[o, DC_BUFW] and kind == 1:
        _insert_range(dc, o, key, a, b)
    elif oi[o, DC_UNITS + DC_IN] + oi[o, DC_UNITS + DC_HOT]:
        _discard_range(dc, o, key, a, b)


@njit(cache=True, _nrt=False)
def writing_add(dc, o, key, off, length):
    """A deferred write's data stays readable from its writing buffer until it is applied."""
    g = dc.g
    u0 = dc.oi[o, DC_UNIT]
    if g[DCG_WFREE]:
        g[DCG_WFREE] -= 1
        x = dc.wfr[g[DCG_WFREE]]
    else:
        x = g[DCG_WTOP]
        if x >= dc.wk.shape[0]:  # cannot happen (bounded by the transaction rows): flagged, as in _new
            g[DCG_OVER] = 1
            return
        g[DCG_WTOP] = x + 1
    dc.wk[x] = key
    dc.wo[x] = o
    dc.wa[x] = off // u0
    dc.wb[x] = (off + length - 1) // u0 + 1
    b = _h(o, key, -1, g[DCG_WMASK])
    dc.wh[x] = dc.wbk[b]
    dc.wbk[b] = x + 1
    dc.oi[o, DC_NW] += 1
    dc.oi[o, DC_WU] += dc.wb[x] - dc.wa[x]


@njit(cache=True, _nrt=False)
def writing_remove(dc, o, key, off, length):
    """The deferred write is applied: one writing buffer equal to its range goes."""
    g = dc.g
    u0 = dc.oi[o, DC_UNIT]
    wa = off // u0
    wb = (off + length - 1) // u0 + 1
    b = _h(o, key, -1, g[DCG_WMASK])
    prev = -1
    x = dc.wbk[b] - 1
    while x >= 0:
        if dc.wk[x] == key and dc.wo[x] == o and dc.wa[x] == wa and dc.wb[x] == wb:
            if prev < 0:
                dc.wbk[b] = dc.wh[x]
            else:
                dc.wh[prev] = dc.wh[x]
            dc.wfr[g[DCG_WFREE]] = x
            g[DCG_WFREE] += 1
            dc.oi[o, DC_NW] -= 1
            dc.oi[o, DC_WU] -= wb - wa
            return
        prev = x
        x = dc.wh[x] - 1


# =============================================================================== build / write back
@njit(cache=True, _nrt=False)
def _load(dc, o, lst, keys, units):
    """Append the units (in order, oldest first) to list ``lst`` of OSD ``o``."""
    for i in range(keys.shape[0]):
        _append(dc, o, lst, _new(dc, o, keys[i], units[i]))


@njit(cache=True, _nrt=False)
def _dump(dc, o, lst, keys, units):
    """The units of list ``lst`` of OSD ``o``, oldest first."""
    e = dc.oi[o, DC_HEAD + lst]
    i = 0
    while e >= 0:
        keys[i] = dc.ek[e]
        units[i] = dc.eu[e]
        i += 1
        e = dc.en[e]


def _pow2(n: int) -> int:
    return 1 << max(4, int(n - 1).bit_length())


#: hash buckets of the data caches for the entries a run adds (4 M: 16 MB; a run of 1 M 4 KiB misses
#: adds at most ~1 M entries, a quarter of a bucket each); sized by the caches' limits instead, the
#: buckets of 1,008 OSDs' caches would be 1 GB, every page of it touched by a long run
RUN_BUCKETS = 1 << 22


def build(osds: list[Any], run_osds: set[int], n_tx: int, max_obj: int, grow_to: int = 0,
          reach: np.ndarray | None = None) -> DCache:
    """The cache arrays of ``osds`` (BlueStore data caches of the OSDs in ``run_osds``, in their
    exact order, and every writing buffer); ``n_tx`` transaction rows bound the writing buffers a
    run can add, ``max_obj`` (bytes) the units one insert adds before its trim, ``grow_to`` (bytes) the
    largest capacity an autotuned cache may be given during the run (0: the caches keep their capacity), and
    ``reach`` (bytes per OSD) the run's objects on each OSD: a cache comes to hold at most what it holds now
    plus those, so the entry pool of a large cluster is not sized by budgets it cannot fill."""
    no = len(osds)
    oi = np.zeros((max(no, 1), NDC), np.int64)
    of = np.zeros(max(no, 1))
    oi[:, DC_HEAD : DC_HEAD + 3] = -1
    oi[:, DC_TAIL : DC_TAIL + 3] = -1
    oi[:, DC_UNIT] = 1
    cached: list[tuple[int, Any]] = []
    pool = 0
    slack = 0
    nw = 0
    live = 0  # entries the caches hold now
    for j, o in enumerate(osds):
        bs = o.bs
        c = getattr(bs, "cache", None)
        if c is None or not hasattr(bs, "writing"):
            continue
        nw += sum(len(w) for w in bs.writing.values())
        oi[j, DC_UNIT] = bs.unit
        if j not in run_osds:
            continue
        twoq = hasattr(c, "_hot")
        oi[j, DC_POLICY] = POL_2Q if twoq else POL_LRU
        oi[j, DC_CAP] = c.capacity
        oi[j, DC_KIN] = c.kin if twoq else 0
        oi[j, DC_KOUT] = c.kout if twoq else 0
        oi[j, DC_BUFR] = int(bs.buffered_read)
        oi[j, DC_BUFW] = int(bs.buffered_write)
        oi[j, DC_HITS] = c.hits
        oi[j, DC_MISSES] = c.misses
        of[j] = bs.hit_cost
        held = sum(pl.units for pl in c.lists())
        grow = grow_to if reach is None else min(grow_to, held * bs.unit + int(reach[j]))
        cap = max(c.capacity, grow // bs.unit)
        if cap > 0:
            live += held
            pool += max(held, cap + (int(cap * bs.cfg.cache.kout_ratio) if twoq else 0))
            slack = max(slack, max_obj // bs.unit + 2)
        cached.append((j, c))
    pool += slack
    # hash buckets by what a run reaches, not by the caches' limits (a lookup walks its chain: the bucket
    # count changes speed, never a result): twice the entries held now plus RUN_BUCKETS, at most the pool
    mask = _pow2(max(1, min(pool, 2 * live + RUN_BUCKETS))) - 1
    nwp = max(n_tx + nw, 1)
    wmask = _pow2(nwp) - 1
    z = np.zeros
    g = z(NDCG, np.int64)
    g[DCG_MASK] = mask
    g[DCG_WMASK] = wmask
    pool = max(pool, 1)
    # np.zeros: pages untouched until entries are used (the pool is the caches' limit, not their use)
    dc = DCache(oi=oi, of=of, ek=z(pool, np.int64), eu=z(pool, np.int64), eo=z(pool, np.int32), el=z(pool, np.int8),
                ep=z(pool, np.int32), en=z(pool, np.int32), eh=z(pool, np.int32), bk=z(mask + 1, np.int32),
                fr=z(pool, np.int32), g=g, wk=z(nwp, np.int64), wa=z(nwp, np.int64), wb=z(nwp, np.int64),
                wo=z(nwp, np.int32), wh=z(nwp, np.int32), wbk=z(wmask + 1, np.int32), wfr=z(nwp, np.int32))
    for j, c in cached:
        for lst, (k, u) in enumerate(c.unit_arrays()):
            if k.size:
                _load(dc, j, lst, k, u)
    for j, o in enumerate(osds):
        w = getattr(o.bs, "writing", None)
        if w:
            u0 = int(oi[j, DC_UNIT])
            for key, runs in w.items():
                for a, b in runs:  # writing_add takes a byte range: [a, b) units
                    writing_add(dc, j, key, a * u0, (b - a) * u0)
    return dc


def reset_counters(dc: DCache) -> None:
    """BlueStore.reset_stats on the compiled caches (the hit and miss counts restart)."""
    dc.oi[:, DC_HITS] = 0
    dc.oi[:, DC_MISSES] = 0


def write_back(dc: DCache, osds: list[Any]) -> None:
    """The compiled caches back into the Python ones (runs of consecutive units of one object,
    in list order), their counters, and every BlueStore's writing buffers."""
    if dc.g[DCG_OVER]:
        raise RuntimeError("compiled Ceph core: the data cache's entry pool ran out (a sizing bug): the run is void")
    oi = dc.oi
    for j, o in enumerate(osds):
        bs = o.bs
        c = getattr(bs, "cache", None)
        if c is None or not hasattr(bs, "writing"):
            continue
        if oi[j, DC_POLICY]:
            parts = []
            for lst in range(len(c.lists())):
                n = int(oi[j, DC_UNITS + lst])
                k = np.empty(n, np.int64)
                u = np.empty(n, np.int64)
                if n:
                    _dump(dc, j, lst, k, u)
                parts.append((k, u))
            c.pack(parts)  # the runs are built only if a Python-engine run uses this cache
            c.capacity = int(oi[j, DC_CAP])  # (the autotuner re-sizes it)
            if oi[j, DC_POLICY] == POL_2Q:
                c.kin = int(oi[j, DC_KIN])
                c.kout = int(oi[j, DC_KOUT])
            c.hits = int(oi[j, DC_HITS])
            c.misses = int(oi[j, DC_MISSES])
        bs.writing = {}
    g = dc.g
    live = np.ones(int(g[DCG_WTOP]), bool)
    live[dc.wfr[: int(g[DCG_WFREE])]] = False
    for x in np.nonzero(live)[0].tolist():
        bs = osds[int(dc.wo[x])].bs
        bs.writing.setdefault(int(dc.wk[x]), []).append((int(dc.wa[x]), int(dc.wb[x])))
