"""The compiled onode caches' write-back (simulator.core.ceph_onode_build.write_back) reads only what the
run touched.

A run leaves each OSD's list as the LruCache's order with some keys dropped (the oldest) or moved to the
young end, followed by the keys it moved or added; the kernels count the nodes appended at the young end
(``ON_MOVES``) and the write-back replays that many of the youngest into the LruCache
(``LruCache.replay``) where they are a small part of the cache, else reads the whole list. Checked
against LruCache itself (one OrderedDict LRU) under random lookups and inserts on one OSD's arrays: the
LruCache after the write-back holds exactly the reference's order and counters, whichever way it was
written back (``share`` 0: always the replay, also where the run evicted keys it had touched; a huge
``share``: always the whole list), over two runs on the same arrays (``ON_MOVES`` restarts at the
write-back); and the nodes the write-back reads (its return value, not a time) are at most the
appends the run made, far fewer than the cached keys when a run touches few of them.
"""

from __future__ import annotations

import numpy as np
import pytest

from simulator.ceph.cache import LruCache
from simulator.core import ceph_layout as L
from simulator.core import ceph_onode as K
from simulator.core import ceph_onode_build as B

_KB = 1 << 36


def _one_osd(cache: LruCache):
    class _Bs:
        onodes = cache
        block = 4096
        db_base = 0
        db_span = 4096 * 8

        class cfg:
            onode_miss_read = 4096
            onode_miss_cost = 0.0

        rand = None

    class _Osd:
        bs = _Bs

    return _Osd


class _Streams:
    @staticmethod
    def row(_comp):
        return 0


def _state(ref: LruCache, cap: int, nobj: int):
    """The arrays of one OSD built from a copy of ``ref`` (keys offset by an image's key base) and that copy."""
    imi = np.zeros((1, L.NII), np.int64)
    imi[0, L.II_NOBJ] = nobj
    imi[0, L.II_SIZE] = 1
    imi[0, L.II_KB] = _KB
    shadow = LruCache(cap)
    shadow.load(ref.order() + _KB)
    osd = _one_osd(shadow)
    oni, _onf, okey, oprev, onext = B.build([osd], [None], imi, np.zeros(nobj, np.int32), np.zeros((1, 1), np.int64),
                                            nobj, _Streams)
    st = L.CephState(*([None] * len(L.CephState._fields)))._replace(
        oni=oni, okey=okey, oprev=oprev, onext=onext, imi=imi, obj_base=np.zeros(nobj, np.int64))
    return st, osd, shadow


def _ops(rng, st, ref: LruCache, nobj: int, n: int, hot: int) -> int:
    """``n`` random lookups / inserts on the arrays and on ``ref`` (keys below ``hot``); returns the appends."""
    appends = 0
    for _ in range(n):
        k = int(rng.integers(0, hot))
        before = int(st.oni[0, L.ON_MOVES])
        if rng.random() < 0.6:
            assert K.probe(st.oni, st.oprev, st.onext, 0, k) == ref.lookup(k)
        else:
            K.insert(st.oni, st.oprev, st.onext, 0, k)
            ref.insert(k)
        appends += int(st.oni[0, L.ON_MOVES]) - before
    return appends


@pytest.mark.parametrize("share", [0, B.REPLAY_SHARE, 1 << 40])
def test_write_back_is_the_lru_whichever_way(share):
    rng = np.random.default_rng(11)
    for trial in range(60):
        cap = int(rng.integers(1, 80))
        nobj = int(rng.integers(cap, 3 * cap + 2))
        ref = LruCache(cap)
        ref.load(np.arange(max(0, nobj - cap), nobj))  # a pre-fill in object order
        if trial % 2:
            for k in rng.permutation(nobj)[: cap // 2].tolist():
                ref.insert(int(k))
        st, osd, shadow = _state(ref, cap, nobj)
        for _run in range(2):  # two runs on the same arrays, a write-back after each
            appends = _ops(rng, st, ref, nobj, int(rng.integers(0, 3 * cap + 3)), nobj)
            visited = B.write_back(st, [osd], share=share)
            assert (shadow.order() - _KB).tolist() == ref.order().tolist(), (trial, share)
            assert (shadow.hits, shadow.misses) == (ref.hits, ref.misses)
            assert st.oni[0, L.ON_MOVES] == 0
            if share == 0:
                assert visited == min(appends, len(ref))
            elif appends == 0:
                assert visited == 0


def test_write_back_reads_what_the_run_touched():
    """A cache of 20,000 pre-filled keys, runs of up to 300 lookups and inserts among the 400 hottest
    objects (some missing, inserted with an eviction): the write-back reads at most the run's appends,
    at most 1/32 of the cache, and the LruCache ends as the reference; the recently touched part of the
    LruCache stays at most 1/32 of it (the replays compact it)."""
    rng = np.random.default_rng(3)
    cap, nobj = 20000, 20400
    ref = LruCache(cap)
    ref.load(np.arange(nobj - cap, nobj))
    st, osd, shadow = _state(ref, cap, nobj)
    total = 0
    for _run in range(12):
        appends = _ops(rng, st, ref, nobj, int(rng.integers(1, 300)), 800)
        visited = B.write_back(st, [osd])
        total += visited
        assert 0 < visited <= appends <= 300 and B.REPLAY_SHARE * visited <= cap
        assert (shadow.order() - _KB).tolist() == ref.order().tolist()
        assert 32 * len(shadow._d) <= len(shadow)
    assert total < cap
