"""Ceph cluster behaviour on oracle (queue) devices: latency floor, fork-join, ordering, CPU
saturation, min_size, state across runs, partitions."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from fio_drive import ClosedLoop

import simulator.ceph  # noqa: F401
from simulator.ceph.cluster import Cluster
from simulator.devices.base import Op, Request
from simulator.devices.partition import Partition
from simulator.devices.registry import build_device, resolve_params
from simulator.engine import Simulation


def _q(mean: str | None = None, servers: int = 1, cap: str = "200GiB", dist: str = "exponential") -> dict:
    if mean is None:
        svc = {"dist": "deterministic", "value": 0}
    elif dist == "exponential":
        svc = {"dist": "exponential", "mean": mean}
    else:
        svc = {"dist": "deterministic", "value": mean}
    return {"kind": "queue", "params": {"capacity": cap, "servers": servers, "service": svc}}


def _cluster(params: dict, seed: int = 1) -> tuple[Simulation, Cluster]:
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": params})
    sim = Simulation(seed)
    return sim, Cluster(cfg, "cluster", sim.root)


def _one_host(drives: list[dict], pg_num: int = 32, size: int = 3, **extra) -> dict:
    p = {
        "hosts": [{"name": "h", "cpu": {"cores": 16}, "drives": drives}],
        "pools": [{"name": "p", "size": size, "pg_num": pg_num, "rule": {"failure_domain": "osd"}}],
        "images": [{"pool": "p", "name": "img", "size": "4GiB"}],
    }
    p.update(extra)
    return p


# ----------------------------------------------------------------------------- latency floor
FLOOR = {
    "client": {"submit_cost": "17us", "complete_cost": "9us", "nic": {"bandwidth": "10Gbit/s"}, "cpu": {"cores": 8}},
    "network": {"latency": "23us", "loopback_latency": "7us", "message_overhead": 300},
    "osd": {
        "msgr_recv_cost": "31us", "msgr_send_cost": "13us", "read_cost": "211us", "write_cost": "503us",
        "subop_cost": "401us", "reply_cost": "41us", "commit_cost": "19us",
    },
}


def _floor_cluster() -> tuple[Simulation, Cluster]:
    p = _one_host([{"count": 3, "device": _q(None)}], pg_num=8, **FLOOR)
    p["hosts"][0]["nic"] = {"bandwidth": "25Gbit/s"}
    return _cluster(p)


def test_write_latency_floor_equals_network_plus_cpu_path() -> None:
    sim, cl = _floor_cluster()
    img = cl.image("p", "img")
    r = ClosedLoop(sim, img, qd=1, rw="randwrite", n_ios=300, seed=5).run()
    Bc, Bh = 10e9 / 8, 25e9 / 8
    H, D, L, lo = 300, 4096, 23e-6, 7e-6
    rcv, snd, w, u, p, k = 31e-6, 13e-6, 503e-6, 401e-6, 41e-6, 19e-6
    t = 17e-6 + (D + H) / Bc + L + (D + H) / Bh + rcv + w  # client -> primary, op processed
    # both repops in parallel: send, loopback, receive, subop CPU, commit (devices take 0 s),
    # commit callback + reply send, loopback, receive at the primary; the two replies then pass
    # one after the other through the PG's shard at the primary (reply_cost each)
    t += snd + lo + rcv + u + k + snd + lo + rcv + 2 * p
    t += snd + H / Bh + L + H / Bc + 9e-6  # reply to the client, librbd completion
    assert r.lat.min() == pytest.approx(t, rel=1e-9)
    assert r.lat.max() == pytest.approx(t, rel=1e-9)


def test_read_latency_floor_equals_network_plus_cpu_path() -> None:
    sim, cl = _floor_cluster()
    img = cl.image("p", "img")
    r = ClosedLoop(sim, img, qd=1, rw="randread", n_ios=200, seed=6).run()
    Bc, Bh = 10e9 / 8, 25e9 / 8
    H, D, L = 300, 4096, 23e-6
    t = 17e-6 + H / Bc + L + H / Bh + 31e-6 + 211e-6  # request, decode, read op (onode cached)
    t += 13e-6 + (D + H) / Bh + L + (D + H) / Bc + 9e-6  # reply carries the data
    assert r.lat.min() == pytest.approx(t, rel=1e-9)
    assert r.lat.max() == pytest.approx(t, rel=1e-9)


# ----------------------------------------------------------------------------- fork-join
def test_write_waits_for_slowest_replica() -> None:
    drives = [
        {"count": 1, "device": _q("1ms")},
        {"count": 1, "device": _q("3ms")},
        {"count": 1, "device": _q("6ms")},
    ]
    sim, cl = _cluster(_one_host(drives, pg_num=16))
    records: list[tuple[float, float, list]] = []
    cl.tracer = lambda op, t: records.append((op.t0, t, list(op.commits)))
    ClosedLoop(sim, cl.image("p", "img"), qd=1, rw="randwrite", n_ios=1500, seed=2).run()
    assert len(records) >= 1500
    per_osd: dict[int, list[float]] = {0: [], 1: [], 2: []}
    lat = []
    for t0, t_done, commits in records:
        assert len(commits) == 3
        assert t_done >= max(c for _, c in commits)  # acked only after every replica committed
        for osd, c in commits:
            per_osd[osd].append(c - t0)
        lat.append(t_done - t0)
    means = {o: np.mean(v) for o, v in per_osd.items()}
    assert np.mean(lat) >= max(means.values())  # E[max] >= max E
    # and strictly: the slowest-of-three is noticeably slower than the slowest disk's mean
    slowest = np.mean([max(c for _, c in commits) - t0 for t0, _, commits in records])
    assert slowest > max(means.values()) * 1.02


def test_min_size_blocks_io_until_enough_replicas_are_up() -> None:
    sim, cl = _cluster(_one_host([{"count": 3, "device": _q("1ms", dist="d")}], pg_num=8))
    img = cl.image("p", "img")
    cl.mark_down(1)
    cl.mark_down(2)  # size 3, min_size 2: only one replica up -> every PG inactive
    done = []
    req = Request(Op.WRITE, 0, 4096)
    img.submit(req).callbacks.append(lambda ev: done.append(sim.env.now))
    sim.run(until=1.0)
    assert done == []
    assert cl.stats()["pools"]["p"]["inactive_pgs"] == 8
    cl.mark_up(2)  # two up: PGs active (degraded); the write completes with 2 commits
    sim.run(until=2.0)
    assert len(done) == 1 and done[0] > 1.0


# ----------------------------------------------------------------------------- ordering
@pytest.mark.parametrize("rw", ["randwrite", "randread"])
def test_ops_of_one_pg_complete_in_order(rw: str) -> None:
    # one PG, devices with 4 servers and exponential service (they reorder freely), mixed sizes:
    # small (deferred) and large (direct) writes
    p = _one_host([{"count": 3, "device": _q("2ms", servers=4)}], pg_num=1)
    sim, cl = _cluster(p)
    img = cl.image("p", "img")
    order: list[float] = []
    cl.tracer = lambda op, t: order.append((op.t0, t))
    rng = np.random.default_rng(3)
    sizes = [4096, 131072]
    state = {"n": 0}

    def submit():
        size = sizes[int(rng.integers(0, 2))]
        off = int(rng.integers(0, img.capacity // size)) * size
        req = Request(Op.WRITE if rw == "randwrite" else Op.READ, off, size)
        img.submit(req).callbacks.append(done)

    def done(ev):
        state["n"] += 1
        if state["n"] < 600:
            submit()

    for _ in range(16):
        submit()
    sim.run()
    assert len(order) >= 600
    t0s = [a for a, _ in order]
    dones = [b for _, b in order]
    # completion times follow submission order
    by_submit = [d for _, d in sorted(zip(t0s, dones, strict=True))]
    assert all(b >= a for a, b in itertools.pairwise(by_submit))


# ----------------------------------------------------------------------------- CPU saturation
@pytest.mark.parametrize(("cores", "tpc", "gain", "servers"), [(1, 1, 0.0, 1), (2, 1, 0.0, 2), (2, 2, 0.5, 3)])
def test_cpu_bound_regime_saturates_at_servers_over_cost(cores, tpc, gain, servers) -> None:
    p = _one_host([{"count": 4, "device": _q(None)}], pg_num=64, size=1)
    p["hosts"][0]["cpu"] = {"cores": cores, "threads_per_core": tpc, "smt_gain": gain}
    p["client"] = {"cpu": {"cores": 32}, "submit_cost": "1us", "complete_cost": "1us"}
    p["osd"] = {"read_cost": "900us", "msgr_recv_cost": "60us", "msgr_send_cost": "40us"}
    sim, cl = _cluster(p)
    img = cl.image("p", "img")
    ClosedLoop(sim, img, qd=64, rw="randread", n_ios=500, seed=1).run()
    cl.reset_stats()
    r = ClosedLoop(sim, img, qd=64, rw="randread", n_ios=6000, seed=2).run()
    expect = servers / 1.0e-3  # every read: 60 + 900 + 40 us of OSD-host CPU
    assert r.iops == pytest.approx(expect, rel=0.02)
    assert cl.stats()["hosts"]["h"]["cpu_utilisation"] > 0.97


# ----------------------------------------------------------------------------- state across runs
def test_cache_persists_across_runs_and_reset_keeps_state() -> None:
    p = _one_host([{"count": 3, "device": _q("5ms", dist="d")}], pg_num=16)
    sim, cl = _cluster(p)
    img = cl.image("p", "img")
    r1 = ClosedLoop(sim, img, qd=4, rw="randread", n_ios=800, seed=11).run()
    cl.reset_stats()
    st = cl.stats()
    assert all(o["client_ops"]["read"] == 0 for o in st["osds"])
    assert all(o["bluestore"]["cache_buffers"] > 0 for o in st["osds"] if o["primary_pgs"])
    # the same offsets again (fio randrepeat=1): served from the BlueStore cache
    r2 = ClosedLoop(sim, img, qd=4, rw="randread", n_ios=800, seed=11).run()
    assert r1.pct(50) > 5e-3
    assert r2.pct(99) < 2e-3
    ratio = np.mean([o["bluestore"]["cache_hit_ratio"] for o in cl.stats()["osds"] if o["client_ops"]["read"]])
    assert ratio > 0.99
    # writes drop the written range from the cache (bluestore_default_buffered_write = false)
    ClosedLoop(sim, img, qd=4, rw="randwrite", n_ios=800, seed=11).run()
    r3 = ClosedLoop(sim, img, qd=4, rw="randread", n_ios=800, seed=11).run()
    assert r3.pct(50) > 5e-3


def test_deferred_writes_are_applied_in_batches_and_group_commit_grows_with_qd() -> None:
    p = _one_host([{"count": 3, "device": _q("4ms")}], pg_num=32)
    sim, cl = _cluster(p)
    img = cl.image("p", "img")
    ClosedLoop(sim, img, qd=1, rw="randwrite", n_ios=400, seed=1).run()
    s1 = cl.stats()["osds"]
    cl.reset_stats()
    ClosedLoop(sim, img, qd=32, rw="randwrite", n_ios=3000, seed=2).run()
    s32 = cl.stats()["osds"]
    b1 = np.mean([o["bluestore"]["kv_txcs_per_batch"] for o in s1])
    b32 = np.mean([o["bluestore"]["kv_txcs_per_batch"] for o in s32])
    assert b1 < 1.3 < 3 < b32
    for o in s32:
        bs = o["bluestore"]
        assert bs["deferred_ops"] >= 64 * (bs["deferred_batches"] - 1)
        assert bs["direct_writes"] == 0


# ----------------------------------------------------------------------------- partitions
def test_partitions_share_the_base_device() -> None:
    sim = Simulation(1)
    base = build_device(_q("2ms", dist="d", cap="10GiB"), "disk", sim.root)
    a = Partition("a", sim.root, base, 0, 5 << 30)
    b = Partition("b", sim.root, base, 5 << 30, 5 << 30)
    seen = []
    base.submit  # noqa: B018
    for dev in (a, b):
        for i in range(10):
            req = Request(Op.READ, i * 4096, 4096)
            dev.submit(req).callbacks.append(lambda ev, d=dev: seen.append((d.name, sim.env.now, ev.value.offset)))
    sim.run()
    # one server: 20 requests take 40 ms in all, interleaved across the two partitions
    assert max(t for _, t, _ in seen) == pytest.approx(0.040)
    assert base.completed[Op.READ] == 20 and a.completed[Op.READ] == 10
    assert all(off < 5 << 30 for _, _, off in seen)  # offsets reported in the partition's space
    assert a.stats()["utilisation"] > 0.4
    with pytest.raises(ValueError):
        a.submit(Request(Op.READ, (5 << 30) - 512, 4096))
    with pytest.raises(ValueError):
        Partition("c", sim.root, base, 6 << 30, 5 << 30)


def test_two_osds_on_one_actuator_are_slower_than_on_two() -> None:
    def run(split: int) -> float:
        drives = [{"count": 6 // split, "device": _q("5ms", cap="400GiB"), "split": split}]
        sim, cl = _cluster(_one_host(drives, pg_num=64))
        r = ClosedLoop(sim, cl.image("p", "img"), qd=16, rw="randread", n_ios=1500, seed=4).run()
        return r.iops

    assert run(2) < 0.7 * run(1)


# ----------------------------------------------------------------------------- BlueStore paths
def test_large_writes_go_to_new_space_and_flush_before_commit() -> None:
    p = _one_host([{"count": 3, "device": _q("1ms", dist="d")}], pg_num=8)
    sim, cl = _cluster(p)
    img = cl.image("p", "img")
    r = ClosedLoop(sim, img, qd=1, bs=131072, rw="randwrite", n_ios=60, seed=1).run()
    st = cl.stats()["osds"]
    assert sum(o["bluestore"]["direct_writes"] for o in st) == 3 * 60  # size 3
    assert all(o["bluestore"]["deferred_ops"] == 0 for o in st)
    # per replica: data write (1 ms), FLUSH (0), WAL write (1 ms), FLUSH (0): >= 2 ms of device time
    assert r.lat.min() > 2e-3
    for osd in cl.osds:
        dev = osd.device
        assert dev.completed[Op.FLUSH] >= dev.completed[Op.WRITE] // 2


def test_shared_db_device_takes_the_wal() -> None:
    p = _one_host([{"count": 4, "device": _q("5ms", dist="d")}], pg_num=16)
    p["hosts"][0]["db_devices"] = {"count": 1, "device": _q("50us", dist="d", cap="400GiB"), "db_size": "20GiB"}
    sim, cl = _cluster(p)
    img = cl.image("p", "img")
    r = ClosedLoop(sim, img, qd=1, rw="randwrite", n_ios=50, seed=3).run()
    db = next(d for d in cl.hosts[0].drives if d.name == "db0")
    # every WAL commit of the four OSDs lands on db0: one append + one flush per kv_sync batch; at QD1
    # nothing shares a batch, so that is one per replica write (50 client writes x size 3)
    batches = sum(osd.bs.kv_batches for osd in cl.osds)
    assert db.completed[Op.WRITE] == db.completed[Op.FLUSH] == batches == 50 * 3
    assert db.completed[Op.READ] == 0
    # WAL commits on the fast device: a write waits for no 5 ms data-disk write
    assert r.pct(50) < 5e-3
    for osd in cl.osds:
        assert osd.device.completed[Op.FLUSH] == 0 or osd.bs.wal_dev is not osd.device


def test_deferred_throttle_blocks_writes() -> None:
    # txc cost of a 4 KiB deferred write = cost_per_io + 4096 = 104096; the deferred limit is
    # throttle_bytes + throttle_deferred_bytes = 624000: five such txcs (the kv throttle admits 3)
    p = _one_host([{"count": 3, "device": _q("3ms", dist="d")}], pg_num=8)
    p["bluestore"] = {"throttle_bytes": 400000, "throttle_deferred_bytes": 224000, "throttle_cost_per_io": 100000,
                      "deferred_batch_ops": 64}
    sim, cl = _cluster(p)
    img = cl.image("p", "img")
    ClosedLoop(sim, img, qd=16, rw="randwrite", n_ios=400, seed=3).run()
    st = cl.stats()["osds"]
    assert sum(o["bluestore"]["throttled_writes"] for o in st) > 0
    for o in st:
        bs = o["bluestore"]
        assert bs["deferred_cost_peak"] <= 624000
        assert bs["deferred_txcs_peak"] == 5
    # throttling submits deferred writes early (deferred_aggressive), in batches far below 64
    assert max(o["bluestore"]["deferred_batches"] for o in st) > 400 * 3 / 3 / 64 * 2


def test_request_spanning_objects_is_split_and_completes_once() -> None:
    sim, cl = _cluster(_one_host([{"count": 3, "device": _q("1ms", dist="d")}], pg_num=8))
    img = cl.image("p", "img")
    ops = []
    cl.tracer = lambda op, t: ops.append(op)
    done = []
    req = Request(Op.READ, (4 << 20) - 8192, 3 << 20)  # 8 KiB of object 0 and 3 MiB - 8 KiB of object 1
    img.submit(req).callbacks.append(lambda ev: done.append(ev.value))
    sim.run()
    assert done == [req]
    assert sorted((o.objno, o.off, o.length) for o in ops) == [(0, (4 << 20) - 8192, 8192), (1, 0, (3 << 20) - 8192)]
    assert img.completed[Op.READ] == 1 and img.bytes[Op.READ] == 3 << 20


def test_same_seed_same_results() -> None:
    def run(seed):
        p = _one_host([{"count": 3, "device": _q("4ms")}], pg_num=16)
        sim, cl = _cluster(p, seed=seed)
        r = ClosedLoop(sim, cl.image("p", "img"), qd=8, rw="randrw", n_ios=500, seed=1).run()
        return r.lat

    assert np.array_equal(run(5), run(5))
    assert not np.array_equal(run(5), run(6))


@pytest.mark.parametrize("rewrite", [True, False])
def test_wal_appends_are_sequential_and_rewrite_the_partial_tail(rewrite: bool) -> None:
    p = _one_host([{"count": 3, "device": _q("1ms", dist="d", cap="100GiB")}], pg_num=8)
    p["bluestore"] = {"wal_rewrite_tail": rewrite, "kv_txc_bytes": 1000}
    sim, cl = _cluster(p)
    osd = cl.osds[0]
    writes: list[tuple[int, int]] = []
    orig = osd.device.submit

    def spy(req):
        if req.op == Op.WRITE and osd.bs.wal_base <= req.offset < osd.bs.wal_base + osd.bs.wal_ring:
            writes.append((req.offset, req.size))
        return orig(req)

    osd.device.submit = spy
    ClosedLoop(sim, cl.image("p", "img"), qd=1, rw="randwrite", n_ios=40, seed=2).run()
    assert len(writes) > 10
    # the WAL sits in the middle of the device (BlueFS extent)
    assert 0.4 < writes[0][0] / osd.device.capacity < 0.6
    for (o1, s1), (o2, _) in itertools.pairwise(writes):
        if rewrite:
            assert o2 == o1 + s1 - 4096 or o2 == o1 + s1  # starts in the previous append's last block
        else:
            assert o2 == o1 + s1
    if rewrite:
        assert any(o2 == o1 + s1 - 4096 for (o1, s1), (o2, _) in itertools.pairwise(writes))


def test_cost_jitter_keeps_the_mean() -> None:
    p = _one_host([{"count": 3, "device": _q(None)}], pg_num=8, **FLOOR)
    p["osd"] = dict(FLOOR["osd"], cost_cv=0.5)
    sim, cl = _cluster(p)
    r = ClosedLoop(sim, cl.image("p", "img"), qd=1, rw="randread", n_ios=4000, seed=6).run()
    sim0, cl0 = _floor_cluster()
    r0 = ClosedLoop(sim0, cl0.image("p", "img"), qd=1, rw="randread", n_ios=10, seed=6).run()
    # only the 211 us read cost varies: mean unchanged, sd = 0.5 x 211 us
    se = 0.5 * 211e-6 / np.sqrt(4000)
    assert abs(r.lat.mean() - r0.lat.mean()) < 4 * se
    assert r.lat.std() == pytest.approx(0.5 * 211e-6, rel=0.1)


def test_deferred_data_is_readable_from_writing_buffers_until_applied() -> None:
    p = _one_host([{"count": 3, "device": _q("5ms", dist="d")}], pg_num=8)
    sim, cl = _cluster(p)
    img = cl.image("p", "img")
    # 20 writes: far below the 64-op deferred batch, so none is applied yet
    w = ClosedLoop(sim, img, qd=1, rw="randwrite", n_ios=20, seed=9).run()
    assert all(o.bs.deferred_ops == 0 for o in cl.osds)
    # the same randseed replays the same offsets (fio's randrepeat): the reads hit what was written
    r = ClosedLoop(sim, img, qd=1, rw="randread", n_ios=20, seed=9).run()
    assert sorted(r.offsets) == sorted(w.offsets)
    assert r.lat.max() < 2e-3  # served from memory, no 5 ms device read
    # after the deferred apply (force it with more writes elsewhere) the same reads go to disk
    ClosedLoop(sim, img, qd=8, rw="randwrite", n_ios=2000, seed=10).run()
    sim.run(until=sim.env.now + 5.0)
    r2 = ClosedLoop(sim, img, qd=1, rw="randread", n_ios=20, seed=9).run()
    assert sorted(r2.offsets) == sorted(w.offsets)
    assert np.median(r2.lat) > 5e-3


def test_onode_misses_cost_a_db_read_for_reads_and_writes() -> None:
    def run(onodes: int, rw: str) -> float:
        p = _one_host([{"count": 3, "device": _q("4ms", dist="d")}], pg_num=8)
        p["bluestore"] = {"onode_cache_size": onodes, "onode_miss_cost": "0us"}
        sim, cl = _cluster(p)
        r = ClosedLoop(sim, cl.image("p", "img"), qd=1, rw=rw, n_ios=200, seed=4).run()
        return float(np.median(r.lat))

    # a 4 GiB image has 1024 objects: 1 cached onode = (almost) always a miss, 100000 = never
    assert run(1, "randread") - run(100000, "randread") == pytest.approx(4e-3, rel=0.05)
    # a write: the primary loads the onode before it sends the repops, then the replicas load theirs
    # (in parallel): two DB reads in series
    assert run(1, "randwrite") - run(100000, "randwrite") == pytest.approx(8e-3, rel=0.05)


def test_per_byte_cpu_costs_add_on_the_data_path() -> None:
    def lat(rw: str, c: float, m: float) -> float:
        p = _one_host([{"count": 3, "device": _q(None)}], pg_num=8, **FLOOR)
        p["hosts"][0]["nic"] = {"bandwidth": "25Gbit/s"}
        p["client"] = dict(FLOOR["client"], cost_per_byte=c)
        p["osd"] = dict(FLOOR["osd"], msgr_cost_per_byte=m)
        sim, cl = _cluster(p)
        return float(ClosedLoop(sim, cl.image("p", "img"), qd=1, rw=rw, n_ios=20, seed=5).run().lat.mean())

    c, m, d = 2e-9, 3e-9, 4096
    # read: data leaves the primary (messenger) and enters the client
    assert lat("randread", c, m) - lat("randread", 0, 0) == pytest.approx((c + m) * d, rel=1e-6)
    # write: client send, primary receive, then repop send + replica receive in series
    assert lat("randwrite", c, m) - lat("randwrite", 0, 0) == pytest.approx((c + 3 * m) * d, rel=1e-6)


def test_state_scale_scales_explicit_drive_write_caches():
    """Time-compressed replays scale drive write caches that a profile sets explicitly (as the BlueStore cache)."""
    from simulator.ceph.cluster import _scaled_drive

    spec = {"profile": "hdd/seagate_exos_2x14", "params": {"cache": {"write_cache": "persistent", "write_cache_size": "100MiB"}}}
    scaled = _scaled_drive(spec, 0.1)
    assert scaled["params"]["cache"]["write_cache_size"] == int(100 * 2**20 * 0.1)
    assert scaled["params"]["cache"]["write_cache"] == "persistent"
    assert spec["params"]["cache"]["write_cache_size"] == "100MiB"  # input untouched
    assert _scaled_drive(spec, 1.0) is spec
    plain = {"profile": "hdd/toshiba_mg06sca10te"}
    assert _scaled_drive(plain, 0.1) is plain


@pytest.mark.parametrize("ring", ["8KiB", "16MiB"])
def test_bluefs_log_write_adds_one_log_block_and_one_flush_per_commit(ring: str) -> None:
    """bluefs_log_write: every kv commit writes one block to BlueFS's log ring (after the WAL append's flush) and
    flushes again; the log appends are sequential and wrap at bluefs_log_size; a commit waits for both rounds, so
    on a 1 ms deterministic device a QD1 write takes at least one more device service than without it.
    (Checked to fail when the log block is written before the WAL flush, or when the second flush is skipped.)"""
    lat = {}
    for on in (False, True):
        p = _one_host([{"count": 3, "device": _q("1ms", dist="d", cap="100GiB")}], pg_num=8)
        p["bluestore"] = {"bluefs_log_write": on, "bluefs_log_size": ring}
        sim, cl = _cluster(p)
        osd = cl.osds[0]
        bs = osd.bs
        seq: list[str] = []
        logs: list[int] = []
        orig = osd.device.submit

        def spy(req, bs=bs, seq=seq, logs=logs, orig=orig):
            if req.op == Op.FLUSH:
                seq.append("F")
            elif req.op == Op.WRITE and bs.wal_base <= req.offset < bs.wal_base + bs.wal_ring:
                seq.append("W")
            elif req.op == Op.WRITE and bs.log_base <= req.offset < bs.log_base + bs.log_ring:
                seq.append("L")
                logs.append(req.offset)
                assert req.size == bs.block
            return orig(req)

        osd.device.submit = spy
        r = ClosedLoop(sim, cl.image("p", "img"), qd=1, rw="randwrite", n_ios=40, seed=2).run()
        lat[on] = float(np.mean(r.lat))
        commits = bs.kv_batches
        assert commits > 10
        if not on:
            assert not logs
            continue
        assert len(logs) == commits
        # every log block follows the WAL append's flush and is followed by its own flush
        text = "".join(seq)
        assert text.count("WFL") + text.count("WFFL") >= commits - 1 and text.count("LF") == commits
        for a, b in itertools.pairwise(logs):
            assert b == a + bs.block or (b == bs.log_base and a == bs.log_base + bs.log_ring - bs.block)
        assert bs.log_pos == (commits * bs.block) % bs.log_ring
    assert lat[True] >= lat[False] + 1e-3 - 1e-9  # the log block's service (this stand-in's FLUSH is free)
