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
``ceph_onode_build.write_back`` puts the caches back with their counters, so a run can go on in Python
or compiled code: ``ON_MOVES`` counts the nodes appended at the young end, and only that many of the
youngest are read back (the older ones are still in the LruCache's order). The loop (ceph_loop)
calls :func:`probe` and :func:`insert` where Osd / BlueStore call ``probe_onode`` and
``onodes.insert``, and books a miss's consequences there (decode CPU, the DB read).
"""

from __future__ import annotations

from numba import njit

from simulator import nbcache
from simulator.core import ceph_layout as _clayout
from simulator.core.ceph_layout import ON_CAP, ON_HEAD, ON_HITS, ON_MISSES, ON_MOVES, ON_N, ON_TAIL

# the kernels read the layout's constants: a change there recompiles them
nbcache.invalidate_stale(__file__, _clayout.__file__)

__all__ = ["OUT", "insert", "probe", "resize"]

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
    oni[o, ON_MOVES] += 1
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
def resize(oni, oprev, onext, o, cap):
    """autotune.resize_cache on OSD ``o``'s onode cache: the new capacity, and the oldest keys leave until the
    rest fits (LruCache._evict). An eviction is recorded as a move past every entry (``ON_MOVES``), so the
    write back reads the whole list (``ceph_onode_build.write_back``), not the youngest keys' replay."""
    oni[o, ON_CAP] = cap
    n = oni[o, ON_N]
    if n <= cap:
        return
    while n > cap:
        h = oni[o, ON_HEAD]
        _unlink(oni, oprev, onext, o, h)
        oprev[h] = OUT
        n -= 1
    oni[o, ON_N] = n
    oni[o, ON_MOVES] = max(oni[o, ON_MOVES], 1 << 40)
