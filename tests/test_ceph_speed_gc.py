"""Garbage and memory of the Ceph layer: what the speed work changed must not change results.

* A Ceph run frees its requests by reference counting: no request <-> event cycles are left for the
  cyclic collector (they made CPU per IO grow with the heap, i.e. with cluster size).
* ``gc_quiet`` (around every ``Simulation.run``) restores the collector's state.
* The pre-fill's bulk onode load leaves each OSD's onode cache exactly as inserting the OSD's
  objects one by one in object order did (the most recently written ``capacity`` objects).
"""

from __future__ import annotations

import gc

import numpy as np
from fio_drive import ClosedLoop

from simulator.ceph.bench import build_cluster_from_profile
from simulator.engine import Simulation
from simulator.engine.core import gc_quiet

SMALL = {
    "images": [
        {"pool": "test-mach2", "name": "test", "size": "64GiB", "prefilled": True},
        {"pool": "test-normal-hdd", "name": "test", "size": "64GiB", "prefilled": True},
    ],
    "bluestore": {"onode_cache_size": 1000},
}


def _cluster(seed: int = 1):
    sim = Simulation(seed=seed)
    return sim, build_cluster_from_profile(sim, params=SMALL, stand_in=True)


def test_a_ceph_run_leaves_no_cyclic_garbage() -> None:
    """Cyclic garbage per run does not grow with the number of IOs (before: ~6 objects per write,
    requests and events holding each other; now at most a handful per run, from outside the IO
    path)."""
    sim, cl = _cluster()
    img = cl.image("test-mach2", "test")
    ClosedLoop(sim, img, qd=16, bs=4096, rw="randwrite", n_ios=300, seed=3).run()
    was = gc.isenabled()
    found = {}
    try:
        for rw, bs, n in (("randwrite", 4096, 500), ("randread", 4096, 500), ("randrw", 4096, 500), ("write", 1 << 20, 50)):
            gc.set_debug(0)
            gc.collect()
            gc.garbage.clear()
            gc.disable()
            gc.set_debug(gc.DEBUG_SAVEALL)
            ClosedLoop(sim, img, qd=16, bs=bs, rw=rw, n_ios=n, seed=4).run()
            gc.collect()
            found[rw] = (len(gc.garbage), sorted({type(o).__name__ for o in gc.garbage}))
            gc.set_debug(0)
            gc.garbage.clear()
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()
    assert all(n <= 8 for n, _ in found.values()), f"cyclic garbage after Ceph runs: {found}"


def test_gc_quiet_restores_the_collector() -> None:
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with gc_quiet():
        assert gc.get_threshold()[0] >= before[0]
        with gc_quiet():  # re-entrant: the inner one does nothing
            pass
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_bulk_onode_prefill_equals_one_by_one() -> None:
    _, cl = _cluster()
    for img in cl.images.values():
        pool = img.pool
        for osd in {o for pg in pool.pgs for o in pg.acting}:
            pos = {pg.ps: pg.acting.index(osd) for pg in pool.pgs if osd in pg.acting}
            objs = [ob for ob in range(img.n_objects) if img.obj_ps[ob] in pos]
            cap = osd.bs.onodes.capacity
            want = [img.key_base + ob for ob in objs[-cap:]]
            c = osd.bs.onodes
            got = [int(c._ck[i]) + c._cbase for i in range(len(c._ck)) if c._calive[i]] + list(c._d)
            assert got == want, f"osd.{osd.id}"
            # every replica got its allocation, in object order on each OSD
            bases = [img.base_of(ob, pos[img.obj_ps[ob]]) for ob in objs]
            assert bases == sorted(bases) and min(bases) >= 0
            assert len(set(bases)) == len(bases)


def test_object_to_pg_map_is_compact_and_matches_stable_mod() -> None:
    from simulator.ceph.hashing import ceph_stable_mod, pg_num_mask, rbd_object_hashes

    _, cl = _cluster()
    img = cl.image("test-normal-hdd", "test")
    h = rbd_object_hashes(img.id, img.n_objects).tolist()
    mask = pg_num_mask(img.pool.pg_num)
    want = [ceph_stable_mod(x, img.pool.pg_num, mask) for x in h]
    assert img.obj_ps.tolist() == want
    assert img.obj_ps.itemsize == 4
    assert np.array_equal(img.obj_ps_array, np.asarray(want, dtype=np.int32))
