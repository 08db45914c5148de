"""OSD failures during a run: peering pause, backfill that moves exactly the failed OSD's data and
ends, its throttles (max_backfills, recovery_max_active, wpq sleep, mClock share), client IO that
goes on meanwhile and completes exactly once."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import simulator.ceph  # noqa: F401
from simulator.ceph.cluster import Cluster
from simulator.devices.base import Op, Request
from simulator.devices.registry import resolve_params
from simulator.engine import Simulation
from simulator.errors import ConfigError

sys.path.insert(0, str(Path(__file__).parent))
from fio_drive import ClosedLoop

OBJ = 4 << 20


def _q(mean: str = "0.2ms") -> dict:
    return {"kind": "queue", "params": {"capacity": "64GiB", "servers": 1, "service": {"dist": "deterministic", "value": mean}}}


def _params(events: list, ec: bool = False, hosts: int = 6, per_host: int = 1, recovery: dict | None = None, **kw) -> dict:
    pools = [{"name": "rbd", "size": 3, "pg_num": 32}]
    images = [{"pool": "rbd", "name": "img", "size": "512MiB"}]
    if ec:
        pools.append({"name": "ec", "type": "erasure", "pg_num": 32, "erasure": {"k": 2, "m": 2}})
        images = [{"pool": "rbd", "name": "img", "size": "512MiB", "data_pool": "ec"}]
    return {
        "hosts": [{"name": "h", "count": hosts, "cpu": {"cores": 8}, "drives": [{"count": per_host, "device": _q()}]}],
        "pools": pools,
        "images": images,
        "events": events,
        "recovery": recovery or {},
        **kw,
    }


def _cluster(params: dict, seed: int = 1) -> tuple[Simulation, Cluster]:
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": params})
    sim = Simulation(seed)
    return sim, Cluster(cfg, "cluster", sim.root)


def _held(cl: Cluster, osd: int) -> tuple[int, int]:
    """(objects, bytes) the OSD holds: its shards of every existing object of every image."""
    n = b = 0
    for img in cl.images.values():
        pool = img.pool
        for pg in pool.pgs:
            pos = [i for i, o in enumerate(pg.acting) if o.id == osd]
            if not pos:
                continue
            rows = np.flatnonzero(img.obj_ps_array == pg.ps)
            k = int((img.bases(rows)[:, pos[0]] >= 0).sum())
            n += k
            b += k * img.shard_size
    return n, b


def _clean_out(cl: Cluster, pool) -> tuple[int, list]:
    """An OSD whose reweight 0 moves only its own shards (chooseleaf indep may also move another
    position of the same PG when the retry for the lost slot takes a bucket first), and the mapping."""
    before = [[o.id for o in pg.acting] for pg in pool.pgs]
    for osd in range(len(cl.osds)):
        after = cl.map_pool(pool, out={osd})
        ok = True
        for a, b in zip(before, after, strict=True):
            if pool.ec is not None:
                ok &= all(x in (y, osd) for x, y in zip(a, b, strict=True))
            else:
                ok &= (set(a) - set(b)) <= {osd}
        if ok:
            return osd, after
    raise AssertionError("no OSD moves only its own data")


@pytest.mark.parametrize("ec", [False, True])
def test_recovery_moves_exactly_the_failed_osds_data_and_ends(ec: bool) -> None:
    sim, cl = _cluster(_params([], ec=ec))
    osd, after = _clean_out(cl, cl.pools["ec" if ec else "rbd"])
    sim, cl = _cluster(_params([{"at": "1s", "action": "out", "osd": osd}], ec=ec))
    pool = cl.pools["ec" if ec else "rbd"]
    n_obj, n_bytes = _held(cl, osd)
    assert n_obj > 30
    sources: list[bool] = []
    push = cl.recovery._push
    cl.recovery._push = lambda job, img, objno, tpos: (sources.append(job.primary.up and job.primary.id != osd), push(job, img, objno, tpos))
    sim.run(until=60.0)
    assert len(sources) == n_obj and all(sources)  # every push led by a surviving primary
    r = cl.stats()["recovery"]
    assert r["pgs_backfilling"] == 0 and math.isfinite(r["recovery_s"])
    assert r["recovered_bytes"] == n_bytes
    assert r["recovered_objects"] == n_obj
    assert _held(cl, osd) == (0, 0)  # nothing maps to the out OSD any more
    for img in cl.images.values():  # every object has all its shards/replicas again, each once per OSD
        for pg in img.pool.pgs:
            rows = np.flatnonzero(img.obj_ps_array == pg.ps)
            assert (img.bases(rows) >= 0).all()
            assert len({o.id for o in pg.acting}) == img.pool.size
    # moved nothing more: a second look at the mapping gives the acting sets recovery installed
    assert [[o.id for o in pg.acting] for pg in pool.pgs] == after


@pytest.mark.parametrize("ec", [False, True])
def test_client_io_continues_during_recovery_and_completes_exactly_once(ec: bool) -> None:
    sim, cl = _cluster(_params([{"at": "2s", "action": "out", "host": "h1"}], ec=ec, hosts=6, per_host=2))
    done: dict[int, int] = {}
    cl_img = cl.image("rbd", "img")
    rng = np.random.default_rng(3)
    reqs = []

    def submit(i: int, t: float) -> None:
        off = int(rng.integers(0, cl_img.capacity // 4096)) * 4096
        r = Request(Op.WRITE if i % 2 else Op.READ, off, 4096)
        reqs.append(r)
        cl_img.submit(r).callbacks.append(lambda ev, i=i: done.__setitem__(i, done.get(i, 0) + 1))

    def gen():
        for i in range(4000):  # open loop, 400/s for 10 s
            submit(i, sim.env.now)
            yield sim.env.timeout(0.0025)

    sim.env.process(gen())
    sim.run(until=120.0)
    r = cl.stats()["recovery"]
    assert r["pgs_backfilling"] == 0
    assert len(done) == 4000 and set(done.values()) == {1}  # every request once
    ph = r["phases"]
    assert r["t_first_event"] == 2.0 and r["t_recovered"] > 2.0
    # IO went on while the PGs were backfilling: the ops submitted in that window completed in it
    # (open loop at 400/s; peering holds a PG's ops for peering_time only)
    window = min(r["t_recovered"], 10.0) - 2.0
    assert ph["during"]["n"] >= 0.5 * 400 * window
    assert ph["before"]["n"] + ph["during"]["n"] + ph["after"]["n"] == 4000
    assert r["ops_blocked_by_peering"] > 0


def test_peering_holds_new_ops_of_the_remapped_pgs_for_peering_time() -> None:
    sim, cl = _cluster(_params([{"at": "1s", "action": "down", "osd": 0}], recovery={"peering_time": "0.3s"}))
    img = cl.image("rbd", "img")
    pg = next(pg for pg in cl.pools["rbd"].pgs if pg.acting[0].id == 0)
    objno = next(i for i in range(img.n_objects) if img.obj_ps[i] == pg.ps)
    sim.run(until=1.01)
    done: list[float] = []
    img.submit(Request(Op.WRITE, objno * OBJ, 4096)).callbacks.append(lambda ev: done.append(sim.env.now))
    sim.run(until=3.0)
    assert len(done) == 1 and done[0] >= 1.3  # waited for peering to end
    # down without out: nothing is copied, the PG runs degraded on the other two replicas
    r = cl.stats()["recovery"]
    assert r["recovered_bytes"] == 0 and r["pgs_remapped"] == 0
    assert pg.acting[0].id == 0 and not pg.acting[0].up


def test_backfill_throttles_hold_and_wpq_sleep_bounds_the_pace() -> None:
    sleep = 0.05
    sim, cl = _cluster(_params([{"at": "0s", "action": "out", "osd": 1}],
                               recovery={"recovery_sleep": sleep, "max_backfills": 1, "recovery_max_active": 2}))
    n_obj, _ = _held(cl, 1)
    sim.run(until=200.0)
    r = cl.stats()["recovery"]
    assert r["peak_backfills_local"] == 1 and r["peak_backfills_remote"] == 1
    assert r["peak_pushes_active"] <= 2
    assert r["recovered_objects"] == n_obj and r["pgs_backfilling"] == 0
    # every push of a primary starts >= sleep after its previous one, so the busiest primary (at
    # least the mean number of pushes per surviving OSD) needs that many sleeps
    assert r["recovery_s"] >= (n_obj / len(cl.osds) - 1) * sleep


def test_mclock_profile_sets_the_recovery_share() -> None:
    """Paced by mClock's recovery share (devices fast, the pace binds): recovery time scales as
    1/share: high_recovery_ops (70 %) vs high_client_ops (40 %)."""
    out = {}
    for prof in ("high_client_ops", "high_recovery_ops"):
        rec = {"op_queue": "mclock_scheduler", "mclock_profile": prof, "max_backfills": 4, "recovery_max_active": 4,
               "mclock_max_sequential_bandwidth": "20MB/s", "peering_time": "0s"}
        sim, cl = _cluster(_params([{"at": "0s", "action": "out", "osd": 3}], recovery=rec))
        sim.run(until=500.0)
        r = cl.stats()["recovery"]
        assert r["recovery_sleep_s"] == 0.0 and r["pgs_backfilling"] == 0
        out[prof] = r["recovery_s"]
    assert out["high_client_ops"] / out["high_recovery_ops"] == pytest.approx(0.7 / 0.4, rel=0.1)


def test_recovery_slows_client_io_and_the_timeline_brackets_it() -> None:
    sim, cl = _cluster(_params([{"at": "3s", "action": "out", "host": "h2"}], hosts=5, per_host=2))
    r0 = ClosedLoop(sim, cl.image("rbd", "img"), qd=8, rw="randwrite", runtime=30.0, seed=2).run()
    assert r0.completions_total == r0.submitted
    s = cl.summary()
    assert math.isfinite(s["recovery_s"]) and s["recovered_gib"] > 0
    assert s["during_p99_ms"] > s["before_p99_ms"]
    bins = cl.stats()["recovery"]["timeline"]
    assert sum(b[1] for b in bins) == sum(cl.stats()["recovery"]["phases"][p]["n"] for p in ("before", "during", "after"))


def test_bad_events_name_the_field() -> None:
    with pytest.raises(ConfigError) as e:
        _cluster(_params([{"at": "1s", "action": "out", "host": "nope"}]))
    assert e.value.field == "params.events.0.host"
    with pytest.raises(ConfigError) as e:
        _cluster(_params([{"at": "1s", "action": "down", "osd": 99}]))
    assert e.value.field == "params.events.0.osd"
    with pytest.raises(ConfigError):
        _cluster(_params([{"at": "1s", "action": "down", "osd": 1, "host": "h0"}]))
