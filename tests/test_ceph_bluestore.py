"""BlueStore's throttles and the DB/WAL-on-SSD path: the deferred throttle bounds what is in flight
and makes sustained small writes run at the data device's apply rate; the kv throttle bounds what
waits for kv_sync; max_deferred_txc; WAL on a shared SSD (no WAL IO on the HDD, flush rules); PLP
vs non-PLP commit latency; fan-out of HDD OSDs over one DB SSD."""

from __future__ import annotations

import numpy as np
import pytest

import simulator.ceph  # noqa: F401
from simulator.ceph.bench import ClosedLoop
from simulator.ceph.cluster import Cluster
from simulator.devices.base import Op, Request
from simulator.devices.registry import resolve_params
from simulator.engine import Simulation

MiB = 1 << 20
COST_HDD = 670000
#: oracle devices have no write cache to flush (otherwise every kv cycle's data-device FLUSH waits
#: for a tag behind the queued deferred writes, which is what a write-back HDD does)
WT = {"write_cache": "write through"}


def _q(svc: float, servers: int = 1, cap: str = "2TiB", dist: str = "deterministic") -> dict:
    s = {"dist": "deterministic", "value": svc} if dist == "deterministic" else {"dist": "exponential", "mean": svc}
    return {"kind": "queue", "params": {"capacity": cap, "servers": servers, "service": s}}


def _cluster(n: int, data: dict, db: dict | None, size: int | None = None, pg_num: int = 64, img: str = "200GiB",
             **extra) -> tuple[Simulation, Cluster]:
    size = size or min(3, n)
    bl = data.pop("block_layer", None) if "block_layer" in data else None
    grp = {"count": n, "device": data} | ({"block_layer": bl} if bl else {})
    host = {"name": "h", "cpu": {"cores": 16}, "drives": [grp]}
    if db is not None:
        host["db_devices"] = {"count": 1, "device": db, "db_size": "16GiB"}
    p = {
        "hosts": [host],
        "pools": [{"name": "p", "size": size, "min_size": 1, "pg_num": pg_num, "rule": {"failure_domain": "osd"}}],
        "images": [{"pool": "p", "name": "img", "size": img}],
    }
    p.update(extra)
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": p})
    sim = Simulation(1)
    return sim, Cluster(cfg, "cluster", sim.root)


def _run(sim, cl, qd: int, ramp: float, runtime: float, rw: str = "randwrite", bs: int = 4096):
    img = cl.image("p", "img")
    ClosedLoop(sim, img, qd=qd, bs=bs, rw=rw, runtime=ramp, seed=1).run()
    cl.reset_stats()
    return ClosedLoop(sim, img, qd=qd, bs=bs, rw=rw, runtime=runtime, seed=2).run()


# ----------------------------------------------------------------------------- throttles
def test_deferred_throttle_caps_txcs_in_flight_and_writes_run_at_the_apply_rate() -> None:
    # one OSD, data device: one server, 2 ms per IO; WAL/DB on a 20 us device
    sim, cl = _cluster(1, _q(2e-3), _q(20e-6, servers=8, cap="200GiB"), size=1, block_layer=WT)
    r = _run(sim, cl, qd=64, ramp=3.0, runtime=6.0)
    o = cl.stats()["osds"][0]
    bs = o["bluestore"]
    cost = COST_HDD + 4096
    limit = 64 * MiB + 128 * MiB
    assert bs["deferred_cost_limit"] == limit
    # in flight: never above the limit, and filled to it (floor(limit / cost) = 298 txcs)
    assert bs["deferred_cost_peak"] <= limit
    assert bs["deferred_txcs_peak"] == limit // cost == 298
    # client writes block in BlueStore (the op thread waits)
    assert bs["throttled_deferred"] > 0 and bs["throttle_wait_s"] > 0
    # so the client runs at the data device's rate: 500 writes/s, device always busy
    assert o["device_utilisation"] > 0.99
    assert r.iops == pytest.approx(500, rel=0.02)
    # and (Little) its latency is QD / rate
    assert r.lat.mean() == pytest.approx(64 / r.iops, rel=0.05)


def test_without_throttle_cost_the_backlog_grows_far_beyond() -> None:
    # the same with a per-IO cost of 0 (bytes only): 192 MiB / 4 KiB = 49152 txcs may be in flight,
    # commits run at WAL speed and the deferred backlog just grows
    sim, cl = _cluster(1, _q(2e-3), _q(20e-6, servers=8, cap="200GiB"), size=1, block_layer=WT,
                       bluestore={"throttle_cost_per_io": 0})
    r = _run(sim, cl, qd=64, ramp=1.0, runtime=2.0)
    bs = cl.stats()["osds"][0]["bluestore"]
    assert bs["throttled_writes"] == 0
    assert bs["deferred_txcs_peak"] > 3000
    assert r.iops > 4 * 500


def test_kv_throttle_bounds_txcs_waiting_for_kv_sync() -> None:
    # data device fast, WAL device slow (5 ms per IO), cheap op processing: txcs pile up before kv_sync
    sim, cl = _cluster(1, _q(1e-5, servers=64), _q(5e-3, cap="200GiB"), size=1, block_layer=WT,
                       osd={"write_cost": "20us"})
    r = _run(sim, cl, qd=300, ramp=0.5, runtime=2.0)
    bs = cl.stats()["osds"][0]["bluestore"]
    per = 64 * MiB // (COST_HDD + 4096)  # 99 txcs
    assert bs["kv_cost_peak"] <= 64 * MiB
    assert bs["throttled_kv"] > 0
    # every commit batch carries what the throttle let in: about 99 txcs per 5 ms WAL write
    assert 0.9 * per <= bs["kv_txcs_per_batch"] <= per
    assert r.iops == pytest.approx(bs["kv_txcs_per_batch"] / 5e-3, rel=0.05)


def _mixed_one_pg(max_txc: int) -> dict:
    """One PG, a deferred batch size never reached; 4 KiB (deferred) and 128 KiB (direct) writes
    alternate at QD 4. Returns the OSD's BlueStore statistics."""
    sim, cl = _cluster(1, _q(1e-3, servers=4), None, size=1, pg_num=1, block_layer=WT,
                       bluestore={"deferred_batch_ops": 100000, "max_deferred_txc": max_txc})
    img = cl.image("p", "img")
    rng = np.random.default_rng(5)
    state = {"n": 0}

    def submit():
        size = 4096 if state["n"] % 2 else 131072
        off = int(rng.integers(0, img.capacity // size)) * size
        img.submit(Request(Op.WRITE, off, size)).callbacks.append(done)

    def done(ev):
        state["n"] += 1
        if state["n"] < 2000:
            submit()

    for _ in range(4):
        submit()
    sim.run()
    return cl.stats()["osds"][0]["bluestore"]


def test_max_deferred_txc_submits_a_pg_that_pins_too_many_txcs() -> None:
    bs = _mixed_one_pg(32)
    # a finishing (direct) txc sees more than 32 unfinished txcs behind a pending batch: submit
    assert bs["max_deferred_txc_submits"] > 0
    assert bs["deferred_ops"] / bs["deferred_batches"] <= 40
    # without the limit the batches wait for the deferred throttle's midpoint (~149 txcs)
    big = _mixed_one_pg(100000)
    assert big["max_deferred_txc_submits"] == 0
    assert big["deferred_ops"] / big["deferred_batches"] > 100


def test_same_device_cleanup_needs_no_extra_data_flush() -> None:
    # DB on the data device: deferred-only batches are made stable by the WAL flush itself
    sim, cl = _cluster(3, _q(1e-3, servers=4), None)
    ClosedLoop(sim, cl.image("p", "img"), qd=8, rw="randwrite", n_ios=2000, seed=1).run()
    for o in cl.stats()["osds"]:
        # 4 KiB < bluestore_prefer_deferred_size_hdd: every write this OSD stored (its clients' and its
        # replicas') is deferred, applied or still waiting in a batch
        bs = o["bluestore"]
        assert bs["deferred_ops"] + bs["deferred_pending"] == o["client_ops"]["write"] + o["subops"]
        assert bs["deferred_ops"] > 0.9 * (o["client_ops"]["write"] + o["subops"])
        assert bs["kv_data_flushes"] == 0
    # with a separate DB device every commit cycle after data was written flushes the data device
    sim, cl = _cluster(3, _q(1e-3, servers=4), _q(20e-6, servers=8, cap="200GiB"))
    ClosedLoop(sim, cl.image("p", "img"), qd=8, rw="randwrite", n_ios=2000, seed=1).run()
    for o in cl.stats()["osds"]:
        assert o["bluestore"]["kv_data_flushes"] > 0


# ----------------------------------------------------------------------------- WAL/DB on an SSD
HDD_OFF = {"profile": "hdd/toshiba_mg06sca10te"}
HDD_VOL = {"profile": "hdd/toshiba_mg06sca10te", "params": {"cache": {"write_cache": "volatile"}}}
PLP = {"profile": "ssd/intel_dc_s3700_400gb"}
NOPLP = {"profile": "ssd/samsung_850_pro_256gb"}


@pytest.mark.parametrize("hdd", [HDD_OFF, HDD_VOL], ids=["wce_off", "wce_on"])
def test_wal_on_ssd_no_wal_io_reaches_the_hdd(hdd: dict) -> None:
    sim, cl = _cluster(2, hdd, PLP, size=2, pg_num=32)
    ClosedLoop(sim, cl.image("p", "img"), qd=16, rw="randwrite", n_ios=1500, seed=1).run()
    sim.run()  # let the submitted deferred writes finish
    for osd in cl.osds:
        bs = osd.bs
        hdd_dev = osd.device
        # every write the HDD sees is a deferred apply; no WAL append, no DB read
        assert hdd_dev.completed[Op.WRITE] == bs.deferred_ios > 0
        assert hdd_dev.completed[Op.READ] == 0
        # WAL appends and flushes go to the OSD's volume on the SSD, one of each per commit batch
        dbv = osd.db_device
        assert dbv.completed[Op.WRITE] == bs.kv_batches
        assert dbv.completed[Op.FLUSH] == bs.kv_batches
        blk = osd.io_device
        if hdd is HDD_OFF:
            # kv_sync's data-device flushes stop in the block layer: the drive has no write cache
            assert hdd_dev.completed[Op.FLUSH] == 0 and blk.flushes_skipped == bs.kv_data_flushes > 0
        else:
            assert hdd_dev.completed[Op.FLUSH] == bs.kv_data_flushes > 0


def _commit_latency(db: dict) -> tuple[float, float]:
    sim, cl = _cluster(1, _q(1e-3, servers=4), db, size=1)
    r = ClosedLoop(sim, cl.image("p", "img"), qd=1, rw="randwrite", n_ios=300, seed=1).run()
    return cl.osds[0].bs.stats()["kv_commit_s"], r.pct(50)


def test_plp_commits_from_dram_non_plp_programs_nand() -> None:
    plp_kv, plp_p50 = _commit_latency(PLP)
    nop_kv, nop_p50 = _commit_latency(NOPLP)
    # PLP: WAL write into protected DRAM (S3700 write path ~0.14 ms) + a cheap FLUSH
    assert plp_kv < 0.3e-3
    # no PLP: the FLUSH programs the open page and commits the mapping journal (1.81 ms alone)
    assert nop_kv > 1.81e-3
    assert nop_p50 - plp_p50 == pytest.approx(nop_kv - plp_kv, rel=0.25)


# ----------------------------------------------------------------------------- fan-out
def test_fan_out_iops_grow_with_osds_and_so_does_ssd_load() -> None:
    rows = []
    for n in (1, 2, 3, 4, 6):
        data = {**_q(4e-3), "block_layer": WT}
        sim, cl = _cluster(n, data, NOPLP, size=min(3, n), pg_num=16 * n, balancer={"mode": "upmap", "max_deviation": 0})
        r = _run(sim, cl, qd=8 * n, ramp=2.0, runtime=4.0)
        db = cl.hosts[0].db_devices[0].stats()
        rows.append((n, r.iops, db["utilisation"]))
    iops = np.array([x[1] for x in rows])
    util = np.array([x[2] for x in rows])
    # the data devices apply 250 writes/s each: at most N x 250 / size client writes/s; a closed loop
    # loses a little of it when ops queue behind one OSD's full throttle while another idles
    expect = np.array([n * 250 / min(3, n) for n, _, _ in rows])
    assert np.all(iops <= 1.02 * expect)
    assert np.all(iops >= 0.85 * expect)
    assert np.all(np.diff(iops) > -0.05 * iops[:-1])
    assert np.all(np.diff(util) > 0)
