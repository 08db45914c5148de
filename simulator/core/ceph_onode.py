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
does not drive included (they age and leave as in Python); :func:`write_back` puts the caches back
(``LruCache.set_order``) with their counters, so a run can go on in Python or compiled code.
The loop (ceph_loop) calls :func:`probe` and :func:`insert` where Osd / BlueStore call
``probe_onode`` and ``onodes.insert``, and books a miss's consequences there (decode CPU, the DB read).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

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
def build(osds: list[Any], imgs: list[Any], imi: np.ndarray, obj_ps: np.ndarray, pga: np.ndarray, nbase: int,
          streams: Any) -> tuple[np.ndarray, ...]:
    """The onode arrays (oni, onf, okey, oprev, onext, omi, omap) of ``osds`` from their LruCaches, for a
    run on ``imgs`` (rows of ``imi``; ``pga`` the PGs' acting OSDs, ``nbase`` the rows of obj_base).
    A BlueStore whose misses read the DB gets a random stream row (its ``rand``, _db_offset) when a
    miss can happen in the run (an object of the run on it is not cached)."""
    no = len(osds)
    oni = np.zeros((max(no, 1), NONI), np.int64)
    onf = np.zeros((max(no, 1), NONF), np.float64)
    omap = np.full(max(nbase, 1), -1, np.int64)
    # the run's objects per OSD (rows of obj_base by OSD: object x acting position)
    runcnt = np.zeros(max(no, 1), np.int64)
    for k in range(len(imgs)):
        n, size = int(imi[k, II_NOBJ]), int(imi[k, II_SIZE])
        ps = obj_ps[imi[k, II_PS0] : imi[k, II_PS0] + n].astype(np.int64)
        act = pga[imi[k, II_PG0] + ps, :size].ravel()
        runcnt += np.bincount(act[act >= 0], minlength=len(runcnt))[: len(runcnt)]
    orders = [o.bs.onodes.order() for o in osds]
    nkeys = np.array([len(x) for x in orders], np.int64)
    keys = np.concatenate(orders) if orders else np.zeros(0, np.int64)
    owner = np.repeat(np.arange(no, dtype=np.int64), nkeys)
    mi = np.full(len(keys), -1, np.int64)
    hi = keys >> _KEY_BITS
    for k in range(len(imgs)):
        kb = int(imi[k, II_KB])
        sel = np.nonzero(hi == (kb >> _KEY_BITS))[0]
        objno = keys[sel] - kb
        ok = (objno >= 0) & (objno < imi[k, II_NOBJ])
        sel, objno = sel[ok], objno[ok]
        size = int(imi[k, II_SIZE])
        act = pga[imi[k, II_PG0] + obj_ps[imi[k, II_PS0] + objno].astype(np.int64), :size]
        on = act == owner[sel, None]
        found = on.any(axis=1)  # a key of an object no longer on this OSD stays unmapped (never looked up)
        pos = on.argmax(axis=1)
        mi[sel[found]] = imi[k, II_KEY] + objno[found] * size + pos[found]
    mapped = np.bincount(owner[mi >= 0], minlength=max(no, 1))
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
        r[ON_NSLOT] = max(n0, min(cap, n0 + int(runcnt[j]) - int(mapped[j]))) if cap > 0 else n0
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
    ns = max(s0, 1)
    okey = np.zeros(ns, np.int64)
    omi = np.full(ns, -1, np.int64)
    oprev = np.full(ns, -1, np.int64)
    onext = np.full(ns, -1, np.int64)
    slot = np.repeat(oni[:no, ON_S0], nkeys) + (np.arange(len(keys), dtype=np.int64) - np.repeat(np.cumsum(nkeys) - nkeys, nkeys))
    okey[slot] = keys
    omi[slot] = mi
    first = np.zeros(len(keys), bool)
    last = np.zeros(len(keys), bool)
    ends = np.cumsum(nkeys)
    first[(ends - nkeys)[nkeys > 0]] = True
    last[(ends - 1)[nkeys > 0]] = True
    oprev[slot] = np.where(first, -1, slot - 1)
    onext[slot] = np.where(last, -1, slot + 1)
    omap[mi[mi >= 0]] = slot[mi >= 0]
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
