"""Recovery details beyond the basic events: PG counts that count only PGs that copied something, backfill
scans in hash order, partial object recovery, a backfill cancelled by a second remap, the Octopus pg-log
defaults, and recovery's CPU follow-ups across CPU stalls (docs/ceph-model.md, "Failures, recovery and backfill")."""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import simulator.ceph  # noqa: F401
from simulator.ceph.cluster import Cluster
from simulator.ceph.config import ClusterConfig
from simulator.ceph.hashing import rbd_object_hashes
from simulator.ceph.recovery import Recovery
from simulator.ceph.resources import CpuPool
from simulator.devices.base import Op
from simulator.devices.registry import resolve_params
from simulator.engine import Simulation

sys.path.insert(0, str(Path(__file__).parent))
from fio_drive import ClosedLoop
from test_ceph_recovery import _cluster, _params

OSD = 2
OBJ = 4 << 20


def _run(events: list, recovery: dict | None = None, runtime: float = 3.0, hosts: int = 6, seed: int = 1,
         span: int | None = None):
    rec = {"recovery_sleep": "0.01s", **(recovery or {})}
    p = _params(events, hosts=hosts, per_host=1, recovery=rec)
    p["images"][0].update(prefilled=True, size="2GiB")
    p["hosts"][0]["drives"][0]["device"]["params"]["service"]["value"] = "2ms"
    sim, cl = _cluster(p, seed=seed)
    orig = [[o.id for o in pg.acting] for pg in cl.pools["rbd"].pgs]
    writes: list[tuple[float, int, int, int, int]] = []  # (time, ps, objno, off, length) of every completed write

    def tracer(op, t):
        if op.kind != int(Op.READ):
            writes.append((sim.env.now, op.pg.ps, op.objno, op.off, op.length))

    cl.tracer = tracer
    res = ClosedLoop(sim, cl.image("rbd", "img"), qd=4, rw="randrw", runtime=runtime, seed=2, span=span).run()
    assert res.completions_total == res.submitted  # every client IO completed exactly once
    return sim, cl, orig, writes


def _mine(orig: list) -> set[int]:
    return {ps for ps, a in enumerate(orig) if OSD in a}


# ---------------------------------------------------------------------------- PG counts
def test_pgs_recovered_counts_only_pgs_whose_recovery_pushed_objects() -> None:
    """OSD down for 2 s under writes to the image's first 16 objects: only some of its PGs were written
    meanwhile. Those are the recovered PGs; the others re-peer and have nothing to copy (before, every PG
    with a job counted as recovered)."""
    ev = [{"at": "1s", "action": "down", "osd": OSD}, {"at": "3s", "action": "up", "osd": OSD}]
    _sim, cl, orig, writes = _run(ev, runtime=5.0, span=16 * OBJ)
    r = cl.stats()["recovery"]
    mine = _mine(orig)
    written = {ps for t, ps, _o, _a, _b in writes if 1.0 <= t < 3.0 and ps in mine}
    assert 0 < len(written) < len(mine)  # the test can tell the two counts apart
    assert r["pgs_recovered"] == len(written)
    assert r["pgs_recovered"] + r["pgs_nothing_to_copy"] == len(mine)
    assert r["pgs_backfilled"] == 0


def test_pgs_backfilled_counts_only_pgs_whose_backfill_copied_objects() -> None:
    """Out, then in, under writes to the image's first 16 objects; the logs keep 1 entry, so a PG written
    more than once while the OSD was out is backfilled back. The out's backfill copies every PG of the OSD
    (all hold objects); back, only the PGs written meanwhile copy anything: the others are counted apart."""
    ev = [{"at": "1s", "action": "out", "osd": OSD}, {"at": "7s", "action": "in", "osd": OSD}]
    _sim, cl, orig, writes = _run(ev, recovery={"min_pg_log_entries": 1, "max_pg_log_entries": 1}, runtime=14.0,
                                  span=16 * OBJ)
    r = cl.stats()["recovery"]
    assert r["pgs_backfilling"] == 0
    eps = r["episodes"]
    assert [e["action"] for e in eps] == ["out", "in"]
    mine = _mine(orig)
    per_pg: dict[int, int] = {}
    for t, ps, _o, _a, _b in writes:
        if 1.0 <= t < 7.0 and ps in mine:
            per_pg[ps] = per_pg.get(ps, 0) + 1
    assert 0 < len(per_pg) < len(mine) and max(per_pg.values()) > 1
    assert r["pgs_backfilled"] == len(mine) + sum(1 for n in per_pg.values() if n > 1)
    assert r["pgs_recovered"] == sum(1 for n in per_pg.values() if n == 1)
    assert r["pgs_nothing_to_copy"] == len(mine) - len(per_pg)


# ---------------------------------------------------------------------------- backfill scans
def _bitrev(h: np.ndarray) -> np.ndarray:
    return np.array([int(f"{int(x):032b}"[::-1], 2) for x in h], dtype=np.uint64)


def test_backfill_scans_list_every_object_in_batches_in_hash_order() -> None:
    smax = 5
    sim, cl = _cluster(_params([{"at": "1s", "action": "out", "osd": OSD}],
                               recovery={"recovery_sleep": "0.001s", "backfill_scan_max": smax}))
    img = cl.image("rbd", "img")
    pool = cl.pools["rbd"]
    img.set_bases(slice(None), -1)
    n = img.n_objects
    img.set_bases(slice(None, n // 2), np.arange(n // 2)[:, None] * OBJ)  # half the objects exist
    pushed: list[tuple[int, int]] = []
    rec = cl.recovery
    push = rec._push
    rec._push = lambda job, im, objno, tpos: (pushed.append((job.pg.ps, objno)), push(job, im, objno, tpos))
    moved = [pg for pg in pool.pgs if OSD in [o.id for o in pg.acting]]
    sim.run(until=120.0)
    r = cl.stats()["recovery"]
    assert r["pgs_backfilling"] == 0 and math.isfinite(r["recovery_s"])
    per_pg = {pg.ps: int((img.obj_ps_array[: n // 2] == pg.ps).sum()) for pg in moved}
    # the primary lists each moved PG's objects once, in ceil(n / smax) scans (one for an empty PG), and each
    # target (new: it holds nothing there) answers every scan
    scans = sum(max(1, -(-k // smax)) for k in per_pg.values())
    assert r["backfill_scans"] == 2 * scans  # size 3: one target per moved PG
    assert r["backfill_scanned_objects"] == sum(per_pg.values())
    # objects are pushed in hobject order: bit-reversed name hash
    key = _bitrev(rbd_object_hashes(img.id, n))
    for ps in per_pg:
        seq = [o for p, o in pushed if p == ps]
        assert len(seq) == per_pg[ps]
        assert all(key[a] < key[b] for a, b in itertools.pairwise(seq))


def test_backfill_scan_cost_lengthens_recovery_by_at_least_the_listing_cpu() -> None:
    """A backfill scan's listing CPU runs on the primary before its batch is pushed (max_backfills 1: one PG
    at a time per primary): recovery takes at least as long as the busiest primary's listing CPU."""
    def run(cost: str):
        sim, cl = _cluster(_params([{"at": "1s", "action": "out", "osd": OSD}],
                                   recovery={"recovery_sleep": "0s", "backfill_scan_cost": cost, "backfill_scan_max": 16}))
        img = cl.image("rbd", "img")
        img.set_bases(slice(None), np.arange(img.n_objects)[:, None] * OBJ)
        prims: dict[int, int] = {}
        for pg in cl.pools["rbd"].pgs:
            ids = [o.id for o in pg.acting]
            if OSD in ids:
                p = next(i for i in ids if i != OSD)  # the first surviving OSD leads the backfill
                prims[p] = prims.get(p, 0) + int((img.obj_ps_array == pg.ps).sum())
        sim.run(until=200.0)
        return cl.stats()["recovery"], max(prims.values())

    r0, _ = run("0us")
    r1, most = run("20ms")
    assert r0["backfill_scanned_objects"] == r1["backfill_scanned_objects"] > 0
    assert r1["recovery_s"] >= most * 0.020  # the busiest primary's listing, on 8 cores, one PG at a time
    assert r1["recovery_s"] > r0["recovery_s"] + 0.5 * most * 0.020


# ---------------------------------------------------------------------------- partial object recovery
@pytest.mark.parametrize("partial", [False, True])
def test_log_recovery_pushes_only_the_written_extents_with_partial_recovery(partial: bool) -> None:
    ev = [{"at": "1s", "action": "down", "osd": OSD}, {"at": "1.6s", "action": "up", "osd": OSD}]
    _sim, cl, orig, writes = _run(ev, recovery={"partial_recovery": partial})
    r = cl.stats()["recovery"]
    mine = _mine(orig)
    blocks: dict[int, set[int]] = {}
    for t, ps, objno, off, ln in writes:
        if 1.0 <= t < 1.6 and ps in mine:
            assert off % 4096 == 0 and ln == 4096
            blocks.setdefault(objno, set()).add(off // 4096)
    assert len(blocks) > 5 and max(len(b) for b in blocks.values()) <= 10  # within clean_region_max_intervals
    assert r["recovered_objects"] == r["log_recovered_objects"] == len(blocks)
    if partial:  # each object: the union of its written 4 KiB blocks (4 KiB random writes do not overlap often)
        assert r["recovered_bytes"] == 4096 * sum(len(b) for b in blocks.values())
        assert r["partial_pushes"] == len(blocks)
    else:
        assert r["recovered_bytes"] == len(blocks) * OBJ and r["partial_pushes"] == 0
    # the returned OSD holds every object of its PGs again, at its old location (partial pushes overwrite in place)
    img = cl.image("rbd", "img")
    assert (img.bases() >= 0).all()


def test_clean_region_cap_merges_the_shortest_gap() -> None:
    from simulator.ceph.recovery import _add_extent

    ext: list[list[int]] = []
    for a in (0, 100, 300, 310):
        _add_extent(ext, a, a + 10, 3)
    assert ext == [[0, 10], [100, 110], [300, 320]]  # 300-310 and 310-320 touch: one extent
    _add_extent(ext, 250, 260, 3)  # a fourth extent: the shortest clean gap (260..300) is merged
    assert ext == [[0, 10], [100, 110], [250, 320]]
    _add_extent(ext, 5, 105, 3)
    assert ext == [[0, 110], [250, 320]]


# ---------------------------------------------------------------------------- cancel and remap
def test_a_second_out_mid_backfill_cancels_and_restarts_without_copying_twice() -> None:
    """OSD 2 out at 1 s; while its PGs backfill, OSD 4 goes out at 1.4 s. Each backfill whose PG maps
    elsewhere now is cancelled and restarts toward the new acting set; a target it keeps goes on from what it
    has. Every object ends complete on the final acting sets; no object is counted twice for one OSD; the
    counted pushes are exactly the copies the final layout needs plus those a cancelled backfill had finished
    on an OSD that then left the PG; client IO completes exactly once."""
    ev = [{"at": "1s", "action": "out", "osd": OSD}, {"at": "1.4s", "action": "out", "osd": 4}]
    rec = {"recovery_sleep": "0.01s"}
    p = _params(ev, hosts=6, per_host=1, recovery=rec)
    p["images"][0].update(prefilled=True, size="2GiB")
    p["hosts"][0]["drives"][0]["device"]["params"]["service"]["value"] = "2ms"
    sim, cl = _cluster(p)
    pool = cl.pools["rbd"]
    img = cl.image("rbd", "img")
    before = {(objno, o.id) for pg in pool.pgs for objno in np.flatnonzero(img.obj_ps_array == pg.ps).tolist()
              for o in pg.acting}
    final_map = cl.map_pool(pool, out={OSD, 4})
    counted: list[tuple[int, int]] = []
    written = Recovery._written

    def spy(self, wop):
        if not wop.job.cancelled:
            counted.append((wop.objno, wop.osd.id))
        written(self, wop)

    Recovery._written = spy
    try:
        res = ClosedLoop(sim, img, qd=4, rw="randrw", runtime=30.0, seed=2).run()
    finally:
        Recovery._written = written
    assert res.completions_total == res.submitted
    r = cl.stats()["recovery"]
    assert r["pgs_backfilling"] == 0 and r["backfills_cancelled"] > 0
    assert [[o.id for o in pg.acting] for pg in pool.pgs] == final_map
    assert (img.bases() >= 0).all()
    after = {(objno, o.id) for pg in pool.pgs for objno in np.flatnonzero(img.obj_ps_array == pg.ps).tolist()
             for o in pg.acting}
    need = after - before
    got = set(counted)
    assert len(got) == len(counted)  # no object copied twice to one OSD
    assert need <= got
    final_of = {objno: set(final_map[img.obj_ps_array[objno]]) for objno, _ in got - need}
    assert all(osd not in final_of[objno] for objno, osd in got - need)  # the rest: copies to OSDs that left the PG
    assert r["recovered_bytes"] == len(counted) * OBJ


# ---------------------------------------------------------------------------- release defaults
def test_octopus_and_later_pg_log_and_partial_recovery_defaults() -> None:
    hosts = [{"name": "h", "drives": [{"count": 1, "device": {"kind": "queue", "params": {
        "capacity": "1GiB", "servers": 1, "service": {"dist": "deterministic", "value": "1ms"}}}}]}]
    base = {"hosts": hosts, "pools": [{"name": "p", "size": 1, "pg_num": 8}]}
    n = ClusterConfig.model_validate(base).recovery
    assert (n.min_pg_log_entries, n.target_pg_log_entries_per_osd, n.partial_recovery) == (3000, None, False)
    assert ClusterConfig.model_validate({**base, "ceph_release": "nautilus"}).recovery == n
    for rel in ("octopus", "pacific", "quincy"):
        o = ClusterConfig.model_validate({**base, "ceph_release": rel}).recovery
        assert (o.min_pg_log_entries, o.target_pg_log_entries_per_osd, o.partial_recovery) == (250, 300000, True)
    o = ClusterConfig.model_validate({**base, "ceph_release": "octopus", "recovery": {"min_pg_log_entries": 500}}).recovery
    assert o.min_pg_log_entries == 500  # a profile's own value wins


def test_clean_pg_log_length_follows_the_per_osd_budget() -> None:
    _sim, cl = _cluster(_params([{"at": "100s", "action": "down", "osd": 0}],
                               recovery={"target_pg_log_entries_per_osd": 3000, "min_pg_log_entries": 10,
                                             "max_pg_log_entries": 100}))
    rec = cl.recovery
    pg = cl.pools["rbd"].pgs[0]
    prim = pg.acting[0]
    npg = sum(1 for q in cl.pools["rbd"].pgs if prim in q.acting)
    assert npg > 0
    assert rec._log_limit(pg, trimmed=False) == 100
    assert rec._log_limit(pg, trimmed=True) == max(10, min(100, 3000 // npg))
    assert 10 < 3000 // npg < 100 or rec._log_limit(pg, trimmed=True) in (10, 100)


# ---------------------------------------------------------------------------- CPU stalls
@pytest.mark.parametrize("ec", [False, True])
def test_recovery_and_ec_bookings_never_reserve_a_core_for_a_stall(ec: bool, monkeypatch) -> None:
    """One host whose CPU jobs stall often (30 %, mean 5 ms); an OSD goes out under client writes, so backfill
    reads, EC sub-reads and decodes, pushes, acks, mirrored writes and resends all run across stalls: no CPU
    booking is made for an arrival more than 1 ms ahead (a chained follow-up waits for the stall's end)."""
    dev = {"kind": "queue", "params": {"capacity": "64GiB", "servers": 1, "service": {"dist": "deterministic", "value": "200us"}}}
    pools = [{"name": "p", "size": 3, "min_size": 2, "pg_num": 16, "rule": {"failure_domain": "osd"}}]
    images = [{"pool": "p", "name": "img", "size": "256MiB", "prefilled": True}]
    if ec:
        pools.append({"name": "e", "type": "erasure", "pg_num": 16, "erasure": {"k": 2, "m": 2}, "rule": {"failure_domain": "osd"}})
        images[0]["data_pool"] = "e"
    p = {
        "hosts": [{"name": "h", "cpu": {"cores": 4, "stall_share": 0.3, "stall_mean": 5e-3}, "drives": [{"count": 6, "device": dev}]}],
        "client": {"host": "h"},
        "pools": pools,
        "images": images,
        "events": [{"at": "0.2s", "action": "out", "osd": 1}],
        "recovery": {"recovery_sleep": "0.005s", "backfill_scan_max": 8},
    }
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": p})
    sim = Simulation(1)
    cl = Cluster(cfg, "cluster", sim.root)
    env = sim.env
    leads = []
    orig = CpuPool.book

    def book(self, t, cost):
        leads.append(t - env._now)
        return orig(self, t, cost)

    monkeypatch.setattr(CpuPool, "book", book)
    log = ClosedLoop(sim, cl.image("p", "img"), qd=4, bs=4096, rw="randrw", runtime=3.0, seed=2).run()
    assert log.completions_total == log.submitted
    r = cl.stats()["recovery"]
    assert r["recovered_objects"] > 20 and cl.hosts[0].cpu.stalls > 100
    assert max(leads) < 1e-3, f"a booking {max(leads) * 1e3:.2f} ms ahead"
