"""The compiled onode caches' build (simulator.core.ceph_onode_build) against a plain oracle.

The build ties every cached key of every OSD to its row of the run's object table by a merge (the run's
objects in key order against each OSD's keys in ascending order) and links each OSD's list through the
rows found. The oracle does it the plain way: for each key in each OSD's LRU order, the object's PG and
acting set from the Python objects (``obj_ps``, ``pg.acting``), the row of the first acting position on
that OSD; the OSD's list must visit those rows in that order (a key outside the run's objects: a node
past the rows holding that key), and every other row must be out of the caches. Checked on croit's fitted host (two
pre-filled images on different drive kinds, each run alone) as built (each OSD's keys in ascending order)
and after a compiled run of random writes (the touched keys follow the cold ones: not in ascending order);
and on a small cluster of queue devices with two images in one pool (one OSD's keys from both) and onode
caches smaller than the objects on an OSD (rows never cached), both images in the state, in either order.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_core_ceph_wire import _cluster

from simulator.ceph.bench import build_cluster_from_profile
from simulator.core.ceph_build import build_state, run_closed
from simulator.core.ceph_layout import ON_HEAD, ON_N, ON_TAIL
from simulator.core.ceph_onode import OUT
from simulator.engine import Simulation


def _oracle(cl, imgs) -> list[list[int]]:
    """Per OSD: the object-table row of each of its cached keys in LRU order (-1: not a run object on it)."""
    row_of: dict[tuple[int, int], int] = {}  # (key, OSD row) -> table row, first acting position
    osd_row = {id(o): j for j, o in enumerate(cl.osds)}
    seen: set[int] = set()
    boff = 0
    for img in imgs:
        size = img.pool.size
        first = img.key_base >> 36 not in seen
        seen.add(img.key_base >> 36)
        acting = [[osd_row[id(a)] for a in pg.acting] for pg in img.pool.pgs]
        for x in range(img.n_objects) if first else ():
            for p, j in enumerate(acting[img.obj_ps[x]]):
                row_of.setdefault((img.key_base + x, j), boff + x * size + p)
        boff += img.n_objects * size
    return [[row_of.get((int(k), j), -1) for k in o.bs.onodes.order()] for j, o in enumerate(cl.osds)]


def _check(cl, imgs) -> int:
    orders = [o.bs.onodes.order() for o in cl.osds]
    want = _oracle(cl, imgs)
    st, _meta = build_state(cl, n_ops=4096, n_req=0, images=imgs)
    nbase = st.obj_base.shape[0]
    assert st.oprev.shape[0] >= nbase
    cached = np.zeros(st.oprev.shape[0], bool)
    looked = 0
    foreign = nbase
    for j, (keys, rows) in enumerate(zip(orders, want, strict=True)):
        n = int(st.oni[j, ON_N])
        if n == 0:  # an OSD without objects of the run: never looked up, keeps its LruCache
            assert all(r < 0 for r in rows) and st.oni[j, ON_HEAD] == -1
            continue
        assert n == len(keys)
        nodes = []
        s = int(st.oni[j, ON_HEAD])
        while s >= 0:
            nodes.append(s)
            s = int(st.onext[s])
        assert len(nodes) == n and st.oni[j, ON_TAIL] == nodes[-1]
        assert np.array_equal(st.oprev[nodes], np.r_[-1, nodes[:-1]])
        for s, r, k in zip(nodes, rows, keys, strict=True):
            if r >= 0:
                assert s == r
                looked += 1
            else:  # a key outside the run's objects: the next node past the rows, holding the key
                assert s == foreign and st.okey[s - nbase] == k
                foreign += 1
        cached[nodes] = True
    assert np.all(st.oprev[~cached] == OUT) and np.all(st.oprev[cached] != OUT)
    return looked


@pytest.fixture(scope="module")
def croit():
    sim = Simulation(seed=5)
    cl = build_cluster_from_profile(sim, "clusters/croit_mach2_fitted")
    return cl


def _writes(cl, img, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    run_closed(cl, img, np.ones(n, np.int64), rng.integers(0, img.capacity // 4096, n) * 4096,
               np.full(n, 4096, np.int64), 64)


def _unsorted(cl) -> int:
    return sum(not np.all(np.diff(o.bs.onodes.order()) > 0) for o in cl.osds)


def test_onode_build_matches_the_oracle_as_built_and_after_a_run(croit):
    cl = croit
    imgs = list(cl.images.values())
    assert len(imgs) == 2 and _unsorted(cl) == 0
    for img in imgs:
        assert _check(cl, [img]) > 0
    _writes(cl, cl.image("test-mach2", "test"), 3000, 2)
    assert _unsorted(cl) > 0  # the run's touches follow the cold keys
    for img in imgs:
        assert _check(cl, [img]) > 0


def test_onode_build_two_images_in_one_pool_and_small_caches():
    us = 1e-6
    dev = {"kind": "queue", "params": {"capacity": "64GiB", "servers": 1,
                                       "service": {"dist": "exponential", "mean": 300 * us}}}
    params = {
        "hosts": [{"name": "h", "count": 3, "cpu": {"cores": 2}, "drives": [{"count": 2, "device": dev}]}],
        "pools": [{"name": "p", "size": 3, "min_size": 2, "pg_num": 16}],
        "images": [{"pool": "p", "name": "a", "size": "1GiB"}, {"pool": "p", "name": "b", "size": "512MiB"}],
        "block_layer": {"enabled": False},
        "bluestore": {"onode_cache_size": 100, "cache": {"buffered_read": False, "buffered_write": False}},
    }
    _sim, cl = _cluster(params, 7)
    a, b = cl.image("p", "a"), cl.image("p", "b")
    assert _check(cl, [a, b]) > 0
    _writes(cl, a, 2000, 4)
    _writes(cl, b, 60, 3)  # the caches end holding keys of both images
    assert _unsorted(cl) > 0
    n_ab = _check(cl, [a, b])
    assert n_ab == _check(cl, [b, a]) > _check(cl, [a]) > 0
