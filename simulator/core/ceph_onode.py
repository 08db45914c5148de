"""The onode caches of the compiled Ceph core: one LRU per OSD over object keys, exactly as
:class:`simulator.ceph.cache.LruCache` (one OrderedDict LRU: a lookup hit moves the key to the young
end, an insert of a new key at a full cache drops the oldest), in preallocated arrays.

Layout (``ceph_layout``, ON_*): a row of ``oni`` / ``onf`` per OSD (capacity, entries, oldest and
youngest node, hit and miss counters, what a miss costs). The nodes of the LRU lists are the rows of
the run's ``obj_base`` (object x acting position: one object on one OSD, so one OSD's list) followed
by one node per cached key that is not an object of the run on its OSD (``okey``: those keys, in node
order; they age and leave as in Python). ``oprev`` / ``onext`` (int32) are the intrusive links, -1 =
none; ``oprev`` :data:`OUT` = the node is not cached. A lookup or an insert is a few array reads and
writes at the object's own row (no key -> slot map, no key per slot: a row's key is its image's key
base plus its object number); nothing is allocated in the loop and an insert always has its node.

``ceph_onode_build.build`` reads every OSD's LruCache in its LRU order into the lists;
:func:`write_back` puts the caches back (``LruCache.set_order``) with their counters, so a run can go
on in Python or compiled code. The loop (ceph_loop) calls :func:`probe` and :func:`insert` where Osd /
BlueStore call ``probe_onode`` and ``onodes.insert``, and books a miss's consequences there (decode
CPU, the DB read).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from simulator import nbcache
from simulator.core import ceph_layout as _clayout
from simulator.core.ceph_layout import (
    II_KB,
    II_KEY,
    II_NOBJ,
    II_SIZE,
    ON_CAP,
    ON_HEAD,
    ON_HITS,
    ON_LOOKS,
    ON_MISSES,
    ON_N,
    ON_TAIL,
)

# the kernels read the layout's constants: a change there recompiles them
nbcache.invalidate_stale(__file__, _clayout.__file__)

__all__ = ["OUT", "insert", "probe", "write_back"]

#: ``oprev`` of a node that is not cached
OUT = -2


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
    """move_to_end: node ``s`` becomes the youngest."""
    if oni[o, ON_TAIL] != s:
        _unlink(oni, oprev, onext, o, s)
        _append(oni, oprev, onext, o, s)


@njit(cache=True, _nrt=False)
def probe(oni, oprev, onext, o, mi):
    """LruCache.lookup on OSD ``o`` of the object at ``obj_base`` row ``mi``: True (and refresh) if
    cached; counts the hit or the miss."""
    oni[o, ON_LOOKS] += 1
    if oprev[mi] != OUT:
        _refresh(oni, oprev, onext, o, mi)
        oni[o, ON_HITS] += 1
        return True
    oni[o, ON_MISSES] += 1
    return False


@njit(cache=True, _nrt=False)
def insert(oni, oprev, onext, o, mi):
    """LruCache.insert of the object at ``obj_base`` row ``mi`` on OSD ``o``: refresh it if cached,
    else add it as the youngest, dropping the oldest when the cache is full."""
    if oni[o, ON_CAP] <= 0:
        return
    if oprev[mi] != OUT:
        _refresh(oni, oprev, onext, o, mi)
        return
    n = oni[o, ON_N]
    if n >= oni[o, ON_CAP]:  # the new key joins, the oldest leaves
        h = oni[o, ON_HEAD]
        _unlink(oni, oprev, onext, o, h)
        oprev[h] = OUT
    else:
        oni[o, ON_N] = n + 1
    _append(oni, oprev, onext, o, mi)


@njit(cache=True, _nrt=False)
def _order(oni, onext, okey, imi, nbase, o, out):
    """OSD ``o``'s keys, oldest first, into ``out``: a row's key is its image's key base plus its
    object number, a node past the rows (``nbase``) has its key in ``okey``."""
    k = 0
    s = oni[o, ON_HEAD]
    while s >= 0:
        if s >= nbase:
            out[k] = okey[s - nbase]
        else:
            for i in range(imi.shape[0]):
                b = imi[i, II_KEY]
                size = imi[i, II_SIZE]
                if b <= s < b + imi[i, II_NOBJ] * size:
                    out[k] = imi[i, II_KB] + (s - b) // size
                    break
        k += 1
        s = onext[s]


# =============================================================================== write back
def write_back(st: Any, osds: list[Any]) -> None:
    """Every OSD's LruCache from the lists (its keys in their LRU order) and its hit / miss counters,
    one OSD at a time (no copy of every list at once). An OSD whose cache the run did not look up
    keeps its LruCache as it is (an insert follows a miss)."""
    oni = st.oni
    nbase = int(st.obj_base.shape[0])
    for j, o in enumerate(osds):
        c = o.bs.onodes
        r = oni[j]
        c.hits = int(r[ON_HITS])
        c.misses = int(r[ON_MISSES])
        if r[ON_LOOKS] == 0:
            continue
        out = np.empty(int(r[ON_N]), np.int64)
        _order(oni, st.onext, st.okey, st.imi, nbase, j, out)
        c.set_order(out)
