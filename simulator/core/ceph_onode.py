"""The onode caches of the compiled Ceph core: one LRU per OSD over object keys, exactly as
:class:`simulator.ceph.cache.LruCache` (one OrderedDict LRU: a lookup hit moves the key to the young
end, an insert of a new key at a full cache drops the oldest), in preallocated arrays.

Layout (``ceph_layout``, ON_*): a row of ``oni`` / ``onf`` per OSD (capacity, entries, oldest and
youngest slot, its slot range, hit and miss counters, what a miss costs); slots in one range per OSD,
each an object key (``okey``) with intrusive LRU links (``oprev`` / ``onext``) and its row of the
dense key -> slot map (``omi``); ``omap`` has one entry per row of the run's ``obj_base`` (object x
acting position: one object on one OSD), -1 = not cached. A lookup or an insert is a few array
reads and writes; nothing is allocated in the loop. An OSD's range holds as many slots as its cache
can hold entries in the run (its entries now plus the run's objects on it not cached, at most its
capacity), so an insert finds a free slot or evicts the oldest and reuses its slot.

:func:`build` reads every OSD's LruCache in its LRU order (``LruCache.order``: the compact pre-filled
cold segment first, then the recently touched entries) into the arrays, keys of objects the run
does not drive included (they age and leave as in Python) — of the OSDs holding objects of the run
(the others are never looked up and keep their LruCache); :func:`write_back` puts the caches back
(``LruCache.set_order``) with their counters, so a run can go on in Python or compiled code.
The loop (ceph_loop) calls :func:`probe` and :func:`insert` where Osd / BlueStore call
``probe_onode`` and ``onodes.insert``, and books a miss's consequences there (decode CPU, the DB read).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from simulator import nbcache
from simulator.core import ceph_arith as _carith
from simulator.core import ceph_layout as _clayout
from simulator.core.ceph_arith import align_up
from simulator.core.ceph_layout import (
    II_KB,
    II_KEY,
    II_NOBJ,
    II_PG0,
    II_PS0,
    II_SIZE,
    NONF,
    NONI,
    ON_BLOCK,
    ON_CAP,
    ON_DBBASE,
    ON_DBN,
    ON_HEAD,
    ON_HITS,
    ON_LOOKS,
    ON_MISSES,
    ON_MREAD,
    ON_N,
    ON_NSLOT,
    ON_S0,
    ON_STREAM,
    ON_TAIL,
    ONF_COST,
)

# the kernels read the layout's constants and call ceph_arith: a change there recompiles them
nbcache.invalidate_stale(__file__, _clayout.__file__, _carith.__file__)

__all__ = ["build", "insert", "probe", "write_back"]

#: an object key's image part (rbd.RbdImage.key_base = (index + 1) << 36)
_KEY_BITS = 36


# =============================================================================== kernels
@njit(cache=True, inline="always", _nrt=False)
def _unlink(oni, oprev, onext, o, s):
    p = oprev[s]
    n = onext[s]
    if p < 0:
        oni[o, ON_HEAD] = n
    else:
        onext[p] = n
    if n < 0:
        oni[o, ON_TAIL] = p
    else:
        oprev[n] = p


@njit(cache=True, inline="always", _nrt=False)
def _append(oni, oprev, onext, o, s):
    t = oni[o, ON_TAIL]
    oprev[s] = t
    onext[s] = -1
    if t < 0:
        oni[o, ON_HEAD] = s
    else:
        onext[t] = s
    oni[o, ON_TAIL] = s


@njit(cache=True, inline="always", _nrt=False)
def _refresh(oni, oprev, onext, o, s):
    """move_to_end: slot ``s`` becomes the youngest."""
    if oni[o, ON_TAIL] != s:
        _unlink(oni, oprev, onext, o, s)
        _append(oni, oprev, onext, o, s)


@njit(cache=True, _nrt=False)
def probe(oni, oprev, onext, omap, o, mi):
    """LruCache.lookup on OSD ``o`` of the object at ``omap`` row ``mi``: True (and refresh) if cached;
    counts the hit or the miss."""
    oni[o, ON_LOOKS] += 1
    s = omap[mi]
    if s >= 0:
        _refresh(oni, oprev, onext, o, s)
        oni[o, ON_HITS] += 1
        return True
    oni[o, ON_MISSES] += 1
    return False


@njit(cache=True, _nrt=False)
def insert(oni, okey, oprev, onext, omi, omap, o, mi, key):
    """LruCache.insert of object ``key`` (``omap`` row ``mi``) on OSD ``o``: refresh it if cached, else
    add it as the youngest, dropping the oldest when the cache is full. False = no slot left (the
    builder sized the range too small: the caller voids the run)."""
    cap = oni[o, ON_CAP]
    if cap <= 0:
        return True
    s = omap[mi]
    if s >= 0:
        _refresh(oni, oprev, onext, o, s)
        return True
    n = oni[o, ON_N]
    if n >= cap:  # the new key joins, the oldest leaves: its slot is reused
        s = oni[o, ON_HEAD]
        _unlink(oni, oprev, onext, o, s)
        old = omi[s]
        if old >= 0:
            omap[old] = -1
    elif n < oni[o, ON_NSLOT]:
        s = oni[o, ON_S0] + n
        oni[o, ON_N] = n + 1
    else:
        return False
    okey[s] = key
    omi[s] = mi
    omap[mi] = s
    _append(oni, oprev, onext, o, s)
    return True


@njit(cache=True, _nrt=False)
def _orders(oni, okey, onext, out):
    """Every OSD's keys, oldest first, into ``out`` (OSD ``o``'s from ``oni[o, ON_S0]``)."""
    for o in range(oni.shape[0]):
        k = oni[o, ON_S0]
        s = oni[o, ON_HEAD]
        while s >= 0:
            out[k] = okey[s]
            k += 1
            s = onext[s]


# =============================================================================== build / write back
@njit(cache=True, _nrt=False)
def _run_counts(imi, nimg, obj_ps, pga, out):
    """``out[o]`` += the run's objects on OSD ``o`` (rows of obj_base by OSD: object x acting position)."""
    for k in range(nimg):
        n = imi[k, II_NOBJ]
        size = imi[k, II_SIZE]
        ps0 = imi[k, II_PS0]
        pg0 = imi[k, II_PG0]
        for x in range(n):
            r = pg0 + obj_ps[ps0 + x]
            for p in range(size):
                a = pga[r, p]
                if a >= 0:
                    out[a] += 1


@njit(cache=True, _nrt=False)
def _map_keys(keys, nkeys, imi, nimg, obj_ps, pga, mi, mapped):
    """``mi[i]``: the obj_base row of key ``keys[i]`` cached on its OSD (``keys`` holds OSD ``o``'s
    ``nkeys[o]`` keys after those of the OSDs before it; -1: not an object of the run's images on that
    OSD, e.g. a key no longer placed there: never looked up); ``mapped[o]`` counts them."""
    o = 0
    end = nkeys[0] if nkeys.shape[0] else 0
    for i in range(keys.shape[0]):
        while i >= end:
            o += 1
            end += nkeys[o]
        key = keys[i]
        mi[i] = -1
        for k in range(nimg):
            kb = imi[k, II_KB]
            if (kb >> _KEY_BITS) != (key >> _KEY_BITS):
                continue
            objno = key - kb
            if 0 <= objno < imi[k, II_NOBJ]:
                size = imi[k, II_SIZE]
                r = imi[k, II_PG0] + obj_ps[imi[k, II_PS0] + objno]
                for p in range(size):
                    if pga[r, p] == o:
                        mi[i] = imi[k, II_KEY] + objno * size + p
                        mapped[o] += 1
                        break
            break


@njit(cache=True, _nrt=False)
def _link(oni, no, keys, mi, okey, omi, oprev, onext, omap):
    """Each OSD's keys (in ``keys``, OSD by OSD, oldest first) into the first slots of its range, linked."""
    i = 0
    for o in range(no):
        s0 = oni[o, ON_S0]
        n = oni[o, ON_N]
        for t in range(n):
            s = s0 + t
            okey[s] = keys[i]
            omi[s] = mi[i]
            oprev[s] = s - 1 if t > 0 else -1
            onext[s] = s + 1 if t < n - 1 else -1
            if mi[i] >= 0:
                omap[mi[i]] = s
            i += 1


def build(osds: list[Any], imgs: list[Any], imi: np.ndarray, obj_ps: np.ndarray, pga: np.ndarray, nbase: int,
          streams: Any) -> tuple[np.ndarray, ...]:
    """The onode arrays (oni, onf, okey, oprev, onext, omi, omap) of ``osds`` from their LruCaches, for a
    run on ``imgs`` (rows of ``imi``; ``pga`` the PGs' acting OSDs, ``nbase`` the rows of obj_base).
    A BlueStore whose misses read the DB gets a random stream row (its ``rand``, _db_offset) when a
    miss can happen in the run (an object of the run on it is not cached)."""
    no = len(osds)
    nr = max(no, 1)
    oni = np.zeros((nr, NONI), np.int64)
    onf = np.zeros((nr, NONF), np.float64)
    # slots, links and the object -> slot map in int32 (fewer than 2^31 slots and obj_base rows)
    omap = np.full(max(nbase, 1), -1, np.int32)
    runcnt = np.zeros(nr, np.int64)
    _run_counts(imi, len(imgs), obj_ps, pga, runcnt)
    # only the OSDs holding objects of the run get slots (the others are never looked up: their
    # LruCaches stay as they are, write_back skips them); their keys in LRU order
    empty = np.zeros(0, np.int64)
    orders = [o.bs.onodes.order() if runcnt[j] else empty for j, o in enumerate(osds)]
    nkeys = np.array([len(x) for x in orders] or [0], np.int64)
    keys = np.concatenate(orders) if orders else empty
    del orders
    if len(keys) >= 2**31 or nbase >= 2**31:
        raise ValueError(f"onode cache arrays: {len(keys):,} cached keys / {nbase:,} object rows exceed int32")
    mi = np.empty(len(keys), np.int32)
    mapped = np.zeros(nr, np.int64)
    _map_keys(keys, nkeys, imi, len(imgs), obj_ps, pga, mi, mapped)
    s0 = 0
    for j, o in enumerate(osds):
        bs = o.bs
        c = bs.onodes
        cfg = bs.cfg
        n0 = int(nkeys[j])
        cap = int(c.capacity)
        r = oni[j]
        r[ON_CAP] = cap
        r[ON_N] = n0
        r[ON_S0] = s0
        r[ON_NSLOT] = max(n0, min(cap, n0 + int(runcnt[j]) - int(mapped[j]))) if cap > 0 and runcnt[j] else n0
        r[ON_HEAD] = s0 if n0 else -1
        r[ON_TAIL] = s0 + n0 - 1 if n0 else -1
        r[ON_HITS] = c.hits
        r[ON_MISSES] = c.misses
        r[ON_MREAD] = align_up(cfg.onode_miss_read, bs.block) if cfg.onode_miss_read > 0 else 0
        r[ON_STREAM] = streams.row(bs) if r[ON_MREAD] > 0 and mapped[j] < runcnt[j] else -1
        r[ON_DBBASE] = bs.db_base
        r[ON_BLOCK] = bs.block
        r[ON_DBN] = bs.db_span // bs.block
        onf[j, ONF_COST] = cfg.onode_miss_cost
        s0 += int(r[ON_NSLOT])
    ns = max(s0, 1)  # a slot past an OSD's entries is written by the insert that takes it, before any read
    if ns >= 2**31:
        raise ValueError(f"onode cache arrays: {ns:,} slots exceed int32")
    okey = np.empty(ns, np.int64)
    omi = np.empty(ns, np.int32)
    oprev = np.empty(ns, np.int32)
    onext = np.empty(ns, np.int32)
    _link(oni, no, keys, mi, okey, omi, oprev, onext, omap)
    return oni, onf, okey, oprev, onext, omi, omap


def write_back(st: Any, osds: list[Any]) -> None:
    """Every OSD's LruCache from the arrays (its keys in their LRU order) and its hit / miss counters.
    An OSD whose cache the run did not look up keeps its LruCache as it is (an insert follows a miss)."""
    oni = st.oni
    out = np.zeros(max(int(st.okey.shape[0]), 1), np.int64)
    _orders(oni, st.okey, st.onext, out)
    for j, o in enumerate(osds):
        c = o.bs.onodes
        r = oni[j]
        c.hits = int(r[ON_HITS])
        c.misses = int(r[ON_MISSES])
        if r[ON_LOOKS] == 0:
            continue
        s0 = int(r[ON_S0])
        c.set_order(out[s0 : s0 + int(r[ON_N])].copy())
