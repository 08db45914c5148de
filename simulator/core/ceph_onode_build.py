"""Building the compiled onode caches (:mod:`simulator.core.ceph_onode`) from the OSDs' LruCaches.

:func:`build` reads every OSD's LruCache in its LRU order (``LruCache.order``: the compact pre-filled
cold segment first, then the recently touched entries) into the lists, keys of objects the run does
not drive included (they age and leave as in Python), of the OSDs holding objects of the run (the
others are never looked up and keep their LruCache); :func:`write_back` puts them back, reading only
the youngest nodes the run appended (``ON_MOVES``) where it touched a small part of a cache.

Each cached key is tied to its node, its row of the run's ``obj_base`` (object x acting position), by a
merge (:func:`_merge_keys`): the run's objects in key order against each OSD's keys in ascending order,
one cursor per OSD, so the object -> PG table and the PGs' acting sets are walked in order. Looking
each key up instead (the object's PG, then its acting set) reads those tables at random. The lists are
linked from the rows found (:func:`_link`); the keys are not kept (a row's key is its object's).
Kept apart from ``ceph_onode`` (whose kernels the compiled loop inlines) so the build can change
without recompiling the loop.

Memory at 1,008 OSDs (26.7 M cached keys, 33 M rows): the lists take two int32 per row (264 MB);
while they are built, the keys (int64, 213 MB) and each key's row (int32, 107 MB) are held, and freed
before the links are allocated except the row of each key.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from simulator import nbcache
from simulator.ceph.cache import HOT_SHARE
from simulator.core import ceph_arith as _carith
from simulator.core import ceph_layout as _clayout
from simulator.core import ceph_onode as _conode
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
    ON_MOVES,
    ON_MREAD,
    ON_N,
    ON_STREAM,
    ON_TAIL,
    ONF_COST,
)

nbcache.invalidate_stale(__file__, _clayout.__file__, _carith.__file__)

__all__ = ["build", "write_back"]

#: an object key's image part (rbd.RbdImage.key_base = (index + 1) << 36)
_KEY_BITS = 36


@njit(cache=True, _nrt=False)
def _merge_keys(keys, kst, perm, imi, korder, obj_ps, pga, cur, mi, mapped):
    """``mi[i]``: the obj_base row of key ``keys[i]`` cached on its OSD, -1 if it is not an object of
    the run's images placed on that OSD (e.g. a key no longer placed there: never looked up);
    ``mapped[o]`` counts them. ``keys`` holds OSD ``o``'s keys at ``kst[o]:kst[o + 1]``
    (LRU order); ``perm[kst[o] + j]`` is the index of its j-th smallest key (``perm[kst[o]]`` < 0: the
    keys are in ascending order already). A merge: the run's objects in key order (images by key base,
    ``korder``; only the first image of a key base, as a key names one) against every OSD's keys in
    ascending order, one cursor per OSD (``cur``, zeros), so obj_ps and pga are read in order rather
    than at random for each key. An OSD listed twice in an acting set gets its first position."""
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
                    mapped[a] += 1
                    c += 1
                cur[a] = c


@njit(cache=True, _nrt=False)
def _link(oni, kst, mi, nbase, oprev, onext):
    """Each OSD's keys (``kst[o]:kst[o + 1]`` of ``mi``, oldest first) linked into its list: a key's node
    is its row ``mi``, or the next node past the rows (``nbase`` on) for a key outside the run's objects."""
    f = nbase
    for o in range(oni.shape[0]):
        prev = -1
        for i in range(kst[o], kst[o + 1]):
            s = mi[i]
            if s < 0:
                s = f
                f += 1
            oprev[s] = prev
            if prev >= 0:
                onext[prev] = s
            else:
                oni[o, ON_HEAD] = s
            prev = s
        if prev >= 0:
            onext[prev] = -1
        else:
            oni[o, ON_HEAD] = -1
        oni[o, ON_TAIL] = prev


def _run_counts(imgs: list[Any], imi: np.ndarray, obj_ps: np.ndarray, pga: np.ndarray, nr: int) -> np.ndarray:
    """Per OSD: the run's objects on it (rows of obj_base: object x acting position), from each image's
    objects per PG and the PGs' acting sets."""
    out = np.zeros(nr, np.int64)
    for k in range(len(imgs)):
        n, size, ps0, pg0 = (int(imi[k, c]) for c in (II_NOBJ, II_SIZE, II_PS0, II_PG0))
        per_pg = np.bincount(obj_ps[ps0 : ps0 + n])
        acting = pga[pg0 : pg0 + len(per_pg), :size]
        on = acting >= 0
        out += np.bincount(acting[on], weights=np.broadcast_to(per_pg[:, None], acting.shape)[on],
                           minlength=nr)[:nr].astype(np.int64)
    return out


def build(osds: list[Any], imgs: list[Any], imi: np.ndarray, obj_ps: np.ndarray, pga: np.ndarray, nbase: int,
          streams: Any) -> tuple[np.ndarray, ...]:
    """The onode arrays (oni, onf, okey, oprev, onext) of ``osds`` from their LruCaches, for a run on
    ``imgs`` (rows of ``imi``; ``pga`` the PGs' acting OSDs, ``nbase`` the rows of obj_base).
    A BlueStore whose misses read the DB gets a random stream row (its ``rand``, _db_offset) when a
    miss can happen in the run (an object of the run on it is not cached)."""
    no = len(osds)
    nr = max(no, 1)
    oni = np.zeros((nr, NONI), np.int64)
    onf = np.zeros((nr, NONF), np.float64)
    runcnt = _run_counts(imgs, imi, obj_ps, pga, nr)
    # only the OSDs holding objects of the run get their keys (the others are never looked up: their
    # LruCaches stay as they are, write_back skips them); their keys in LRU order
    nkeys = np.zeros(nr, np.int64)
    nkeys[:no] = [len(o.bs.onodes) if runcnt[j] else 0 for j, o in enumerate(osds)]
    kst = np.zeros(nr + 1, np.int64)
    np.cumsum(nkeys, out=kst[1:])
    keys = np.empty(int(kst[-1]), np.int64)
    for j in np.flatnonzero(nkeys):  # each OSD's order straight into its place (no list of copies to join)
        keys[kst[j] : kst[j + 1]] = osds[j].bs.onodes.order()
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
    mi = np.full(len(keys), -1, np.int32)
    mapped = np.zeros(nr, np.int64)
    _merge_keys(keys, kst, perm, imi, np.array(korder, np.int64), obj_ps, pga, np.zeros(nr, np.int64), mi, mapped)
    del perm
    okey = keys[mi < 0]  # the keys outside the run's objects, in node order (nbase on)
    del keys
    nodes = nbase + len(okey)
    if nodes >= 2**31:
        raise ValueError(f"onode cache arrays: {nbase:,} object rows and {len(okey):,} other keys exceed int32")
    oprev = np.full(max(nodes, 1), _conode.OUT, np.int32)
    onext = np.empty(max(nodes, 1), np.int32)  # read only where a node is cached
    _link(oni, kst, mi, nbase, oprev, onext)
    del mi
    for j, o in enumerate(osds):
        bs = o.bs
        c = bs.onodes
        cfg = bs.cfg
        r = oni[j]
        r[ON_CAP] = int(c.capacity)
        r[ON_N] = int(nkeys[j])
        r[ON_HITS] = c.hits
        r[ON_MISSES] = c.misses
        r[ON_MREAD] = align_up(cfg.onode_miss_read, bs.block) if cfg.onode_miss_read > 0 else 0
        r[ON_STREAM] = streams.row(bs) if r[ON_MREAD] > 0 and mapped[j] < runcnt[j] else -1
        r[ON_DBBASE] = bs.db_base
        r[ON_BLOCK] = bs.block
        r[ON_DBN] = bs.db_span // bs.block
        onf[j, ONF_COST] = cfg.onode_miss_cost
    return oni, onf, okey if len(okey) else np.zeros(1, np.int64), oprev, onext


@njit(cache=True, inline="always", _nrt=False)
def _key(s, okey, imi, nbase):
    """The key of node ``s``: a row's is its image's key base plus its object number, a node past the
    rows (``nbase``) has its key in ``okey``."""
    if s >= nbase:
        return okey[s - nbase]
    for k in range(imi.shape[0]):
        b = imi[k, II_KEY]
        size = imi[k, II_SIZE]
        if b <= s < b + imi[k, II_NOBJ] * size:
            return imi[k, II_KB] + (s - b) // size
    return -1


@njit(cache=True, _nrt=False)
def _walk(oni, onext, okey, imi, nbase, osd, pos, cur, out):
    """The keys of OSDs ``osd``, oldest first, OSD ``osd[i]``'s into ``out`` from ``pos[i]``. The lists
    are walked side by side, one step of each in turn: an OSD's nodes lie anywhere in the rows, so each
    step is a cache miss, and independent misses overlap."""
    m = osd.shape[0]
    for i in range(m):
        cur[i] = oni[osd[i], ON_HEAD]
    live = m
    while live:
        live = 0
        for i in range(m):
            s = cur[i]
            if s < 0:
                continue
            live += 1
            out[pos[i]] = _key(s, okey, imi, nbase)
            pos[i] += 1
            cur[i] = onext[s]


@njit(cache=True, _nrt=False)
def _tails(oni, oprev, okey, imi, nbase, osd, pos, out):
    """The youngest ``pos[i + 1] - pos[i]`` keys of OSD ``osd[i]``, oldest first, into ``out[pos[i]:pos[i + 1]]``
    (walked back from its youngest node). Returns the nodes visited."""
    for i in range(osd.shape[0]):
        s = oni[osd[i], ON_TAIL]
        j = pos[i + 1]
        while j > pos[i]:
            j -= 1
            out[j] = _key(s, okey, imi, nbase)
            s = oprev[s]
    return pos[-1] - pos[0]


#: OSDs whose lists one :func:`_walk` reads side by side (their keys' buffer: ~7 MB at croit's 53,000 keys each)
WALK_OSDS = 16

#: an OSD whose run moved at most 1/REPLAY_SHARE of its cached keys to the young end gets those keys
#: replayed into its LruCache (``LruCache.replay``); one that moved more gets its whole order
#: (``LruCache.set_order``, compact), as set_order's own rule
REPLAY_SHARE = HOT_SHARE


def write_back(st: Any, osds: list[Any], share: int = REPLAY_SHARE) -> int:
    """Every OSD's LruCache from the lists, and its hit / miss counters; returns the list nodes read.

    An OSD whose list is as the LruCache holds it (no node appended at the young end since the build or
    the last write-back: ``ON_MOVES`` 0) is left as it is. Otherwise the run left its list as the
    LruCache's order with some keys dropped (the oldest, when full) or moved to the young end, followed by
    the keys it moved or added, and those are among its ``m = min(ON_MOVES, ON_N)`` youngest nodes. When
    ``share * m`` is at most its entries, those ``m`` keys are replayed (``LruCache.replay``: inserted in
    turn, the cost of what the run touched); else the whole list is read (:func:`_walk`, :data:`WALK_OSDS`
    OSDs at a time, no copy of every list at once) into ``LruCache.set_order``. ``ON_MOVES`` restarts."""
    oni = st.oni
    nbase = int(st.obj_base.shape[0])
    no = len(osds)
    for j, o in enumerate(osds):
        o.bs.onodes.hits = int(oni[j, ON_HITS])
        o.bs.onodes.misses = int(oni[j, ON_MISSES])
        o.bs.onodes.capacity = int(oni[j, ON_CAP])  # (the autotuner re-sizes it)
    n = oni[:no, ON_N]
    m = np.minimum(oni[:no, ON_MOVES], n)
    moved = oni[:no, ON_MOVES] > 0  # (a list the autotuner emptied has moves and no entries: read whole)
    part = np.flatnonzero(moved & (m > 0) & (share * m <= n))
    whole = np.flatnonzero(moved & ~((m > 0) & (share * m <= n)))
    visited = 0
    if len(part):
        pos = np.zeros(len(part) + 1, np.int64)
        np.cumsum(m[part], out=pos[1:])
        out = np.empty(max(int(pos[-1]), 1), np.int64)
        visited += int(_tails(oni, st.oprev, st.okey, st.imi, nbase, part, pos, out))
        for i, j in enumerate(part.tolist()):
            osds[j].bs.onodes.replay(out[pos[i] : pos[i + 1]])
    cur = np.empty(WALK_OSDS, np.int64)
    for a in range(0, len(whole), WALK_OSDS):
        grp = whole[a : a + WALK_OSDS]
        k = n[grp]
        pos = np.zeros(len(grp), np.int64)
        np.cumsum(k[:-1], out=pos[1:])
        out = np.empty(max(int(k.sum()), 1), np.int64)
        _walk(oni, st.onext, st.okey, st.imi, nbase, grp, pos.copy(), cur, out)
        visited += int(k.sum())
        for i, j in enumerate(grp.tolist()):
            osds[j].bs.onodes.set_order(out[pos[i] : pos[i] + k[i]])
    oni[:no, ON_MOVES] = 0
    return visited
