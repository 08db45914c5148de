"""Building the compiled onode caches (:mod:`simulator.core.ceph_onode`) from the OSDs' LruCaches.

:func:`build` reads every OSD's LruCache in its LRU order (``LruCache.order``: the compact pre-filled
cold segment first, then the recently touched entries) into the arrays, keys of objects the run does
not drive included (they age and leave as in Python), of the OSDs holding objects of the run (the
others are never looked up and keep their LruCache); ``ceph_onode.write_back`` puts them back.

Each cached key is tied to its row of the run's ``obj_base`` (object x acting position) by a merge
(:func:`_merge_keys`): the run's objects in key order against each OSD's keys in ascending order, one
cursor per OSD, so the object -> PG table, the PGs' acting sets and the key -> slot map are walked in
order. Looking each key up instead (the object's PG, then its acting set) reads those tables at random:
at 1,008 OSDs, 26.7 M cached keys over a 44 MB PG table and a 132 MB map cost ~70 % of the compiled
state's build. Kept apart from ``ceph_onode`` (whose kernels the compiled loop inlines) so the build can
change without recompiling the loop.
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
    ON_MISSES,
    ON_MREAD,
    ON_N,
    ON_NSLOT,
    ON_S0,
    ON_STREAM,
    ON_TAIL,
    ONF_COST,
)
from simulator.core.ceph_onode import _KEY_BITS, _run_counts

nbcache.invalidate_stale(__file__, _clayout.__file__, _carith.__file__)

__all__ = ["build"]


@njit(cache=True, _nrt=False)
def _merge_keys(keys, kst, perm, imi, korder, obj_ps, pga, cur, mi, omap, mapped):
    """``mi[i]``: the obj_base row of key ``keys[i]`` cached on its OSD, -1 if it is not an object of
    the run's images placed on that OSD (e.g. a key no longer placed there: never looked up); the row's
    ``omap`` entry: the key's index among its OSD's keys (its slot less the OSD's first, added by
    :func:`_place`); ``mapped[o]`` counts them. ``keys`` holds OSD ``o``'s keys at ``kst[o]:kst[o + 1]``
    (LRU order); ``perm[kst[o] + j]`` is the index of its j-th smallest key (``perm[kst[o]]`` < 0: the
    keys are in ascending order already). A merge: the run's objects in key order (images by key base,
    ``korder``; only the first image of a key base, as a key names one) against every OSD's keys in
    ascending order, one cursor per OSD (``cur``, zeros), so obj_ps, pga and omap are read in order
    rather than at random for each key. An OSD listed twice in an acting set gets its first position."""
    for kk in range(korder.shape[0]):
        k = korder[kk]
        kb = imi[k, II_KB]
        size = imi[k, II_SIZE]
        ps0 = imi[k, II_PS0]
        pg0 = imi[k, II_PG0]
        row = imi[k, II_KEY]
        for x in range(imi[k, II_NOBJ]):
            key = kb + x
            r = pg0 + obj_ps[ps0 + x]
            for p in range(size):
                a = pga[r, p]
                if a < 0:
                    continue
                b = kst[a]
                e = kst[a + 1] - b
                c = cur[a]
                srt = e == 0 or perm[b] < 0
                t = 0
                while c < e:
                    t = c if srt else perm[b + c]
                    if keys[b + t] >= key:
                        break
                    c += 1
                if c < e and keys[b + t] == key:
                    mi[b + t] = row + x * size + p
                    omap[row + x * size + p] = t
                    mapped[a] += 1
                    c += 1
                cur[a] = c


@njit(cache=True, _nrt=False)
def _place(oni, imi, korder, obj_ps, pga, omap):
    """Each mapped ``omap`` entry (a key's index among its OSD's keys) plus its OSD's first slot."""
    for kk in range(korder.shape[0]):
        k = korder[kk]
        size = imi[k, II_SIZE]
        ps0 = imi[k, II_PS0]
        pg0 = imi[k, II_PG0]
        row = imi[k, II_KEY]
        for x in range(imi[k, II_NOBJ]):
            r = pg0 + obj_ps[ps0 + x]
            for p in range(size):
                m = row + x * size + p
                if omap[m] >= 0:
                    omap[m] += oni[pga[r, p], ON_S0]


@njit(cache=True, _nrt=False)
def _link(oni, no, keys, mi, okey, omi, oprev, onext):
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
    nkeys = np.array([len(o.bs.onodes) if runcnt[j] else 0 for j, o in enumerate(osds)] or [0], np.int64)
    keys = np.empty(int(nkeys.sum()), np.int64)
    k = 0
    for j, o in enumerate(osds):  # each OSD's order straight into its place (no list of copies to join)
        if nkeys[j]:
            keys[k : k + nkeys[j]] = o.bs.onodes.order()
            k += int(nkeys[j])
    if len(keys) >= 2**31 or nbase >= 2**31:
        raise ValueError(f"onode cache arrays: {len(keys):,} cached keys / {nbase:,} object rows exceed int32")
    kst = np.zeros(nr + 1, np.int64)
    np.cumsum(nkeys, out=kst[1 : len(nkeys) + 1])
    kst[len(nkeys) + 1 :] = kst[len(nkeys)]
    # per OSD: its keys' ascending order when they are not in it already (a run's touches, a written-back LRU)
    perm = np.empty(max(len(keys), 1), np.int32)
    for j in np.flatnonzero(nkeys):
        a, b = int(kst[j]), int(kst[j + 1])
        seg = keys[a:b]
        if b - a > 1 and not bool((seg[1:] > seg[:-1]).all()):
            perm[a:b] = np.argsort(seg, kind="stable")
        else:
            perm[a] = -1
    # the images by key base, the first of a key base only (a key names one image: _KEY_BITS)
    korder, seen = [], set()
    for k in sorted(range(len(imgs)), key=lambda k: (int(imi[k, II_KB]) >> _KEY_BITS, k)):
        if int(imi[k, II_KB]) >> _KEY_BITS not in seen:
            seen.add(int(imi[k, II_KB]) >> _KEY_BITS)
            korder.append(k)
    korder_a = np.array(korder, np.int64)
    mi = np.full(len(keys), -1, np.int32)
    mapped = np.zeros(nr, np.int64)
    _merge_keys(keys, kst, perm, imi, korder_a, obj_ps, pga, np.zeros(nr, np.int64), mi, omap, mapped)
    del perm
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
    _link(oni, no, keys, mi, okey, omi, oprev, onext)
    _place(oni, imi, korder_a, obj_ps, pga, omap)
    return oni, onf, okey, oprev, onext, omi, omap
