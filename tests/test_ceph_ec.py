"""Erasure-coded pools: shard IO counts of full- and partial-stripe writes, reads from k shards
(healthy and degraded), CRUSH placement across failure domains, RBD with an EC data pool."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simulator.ceph  # noqa: F401
from simulator.ceph.cluster import Cluster
from simulator.ceph.placement import NONE, CrushMap, CrushOsd, map_pool
from simulator.devices.base import Op, Request
from simulator.devices.registry import resolve_params
from simulator.engine import Simulation
from simulator.errors import ConfigError

K, M, SU = 4, 2, 4096


def _q(mean: str = "1ms") -> dict:
    return {"kind": "queue", "params": {"capacity": "64GiB", "servers": 1, "service": {"dist": "deterministic", "value": mean}}}


def _params(pw: str = "full_stripe", pr: bool = False, hosts: int = 7, **ec) -> dict:
    return {
        "hosts": [{"name": "h", "count": hosts, "cpu": {"cores": 8}, "drives": [{"count": 2, "device": _q()}]}],
        "pools": [
            {"name": "meta", "size": 3, "pg_num": 8},
            {"name": "ec", "type": "erasure", "pg_num": 32,
             "erasure": {"k": K, "m": M, "stripe_unit": SU, "partial_writes": pw, "partial_reads": pr, **ec}},
        ],
        "images": [{"pool": "meta", "name": "img", "size": "1GiB", "data_pool": "ec"}],
    }


def _cluster(params: dict, seed: int = 1) -> tuple[Simulation, Cluster]:
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": params})
    sim = Simulation(seed)
    return sim, Cluster(cfg, "cluster", sim.root)


def _one(sim: Simulation, cl: Cluster, op: Op, off: int, size: int) -> list:
    """Submit one request; run until it is done; the completed object ops (tracer) and completions."""
    ops: list = []
    done: list[float] = []
    cl.tracer = lambda o, t: ops.append(o)
    img = cl.image("meta", "img")
    img.submit(Request(op, off, size)).callbacks.append(lambda ev: done.append(sim.env.now))
    sim.run(until=sim.env.now + 5.0)
    assert len(done) == 1  # exactly once
    return ops


@pytest.mark.parametrize(
    ("pw", "off", "size", "reads", "writes"),
    [
        # full stripe (16 KiB aligned): no read, all k+m shards written one chunk each
        ("full_stripe", 0, 16384, [], [(p, 0, SU) for p in range(6)]),
        ("touched_chunks", 16384, 16384, [], [(p, SU, SU) for p in range(6)]),
        # 4 KiB overwrite of chunk 1 of stripe 2: ECBackend reads the whole stripe (k data chunks)
        # and writes every shard of it
        ("full_stripe", 2 * 16384 + SU, 4096, [(p, 2 * SU, SU) for p in range(4)], [(p, 2 * SU, SU) for p in range(6)]),
        # touched chunks: read the 3 other data chunks, write the touched one + 2 coding chunks
        ("touched_chunks", 2 * 16384 + SU, 4096, [(0, 2 * SU, SU), (2, 2 * SU, SU), (3, 2 * SU, SU)],
         [(1, 2 * SU, SU), (4, 2 * SU, SU), (5, 2 * SU, SU)]),
        # 16 KiB across two partial stripes (chunks 2,3 of stripe 0 and 0,1 of stripe 1)
        ("full_stripe", 8192, 16384, [(p, 0, SU) for p in range(4)] + [(p, SU, SU) for p in range(4)],
         [(p, 0, 2 * SU) for p in range(6)]),
        ("touched_chunks", 8192, 16384, [(0, 0, SU), (1, 0, SU), (2, SU, SU), (3, SU, SU)],
         [(0, SU, SU), (1, SU, SU), (2, 0, SU), (3, 0, SU), (4, 0, 2 * SU), (5, 0, 2 * SU)]),
    ],
)
def test_ec_write_shard_io_counts(pw: str, off: int, size: int, reads: list, writes: list) -> None:
    sim, cl = _cluster(_params(pw))
    subops0 = sum(o.subops for o in cl.osds)
    (op,) = _one(sim, cl, Op.WRITE, off, size)
    assert sorted(op.plan["reads"]) == sorted(reads)
    assert sorted(op.plan["writes"]) == sorted(writes)
    # every shard write but the primary's own went to another OSD as a repop, and each committed
    prim = op.osd
    remote = [w for w in writes if op.pg.acting[w[0]] is not prim]
    assert sum(o.subops for o in cl.osds) - subops0 == len(remote)
    assert len(op.commits) == len(writes)
    ec = cl.stats()["pools"]["ec"]["ec"]
    assert ec["subreads"] == len(reads) and ec["shard_writes"] == len(writes)
    assert ec["rmw_writes"] == (1 if reads else 0)
    assert ec["encode_bytes"] == (op.stripes[1] - op.stripes[0] + 1) * K * SU


@pytest.mark.parametrize(("pr", "n_reads"), [(False, K), (True, 1)])
def test_ec_healthy_read_reads_data_shards(pr: bool, n_reads: int) -> None:
    sim, cl = _cluster(_params(pr=pr))
    off = 3 * 16384 + 2 * SU  # chunk 2 of stripe 3
    (op,) = _one(sim, cl, Op.READ, off, 4096)
    reads = op.plan["reads"]
    assert len(reads) == n_reads
    assert all(p < K for p, _, _ in reads)  # data shards only, no decode
    if pr:
        assert reads == [(2, 3 * SU, SU)]
    assert op.decode == 0


@pytest.mark.parametrize("pr", [False, True])
def test_degraded_read_reads_k_surviving_shards_and_decodes(pr: bool) -> None:
    sim, cl = _cluster(_params(pr=pr))
    img = cl.image("meta", "img")
    off = 5 * 16384 + 1 * SU  # chunk 1 of stripe 5 of object 0
    pg = img.pg_of(off)
    down = pg.acting[1]
    cl.mark_down(down.id)
    (op,) = _one(sim, cl, Op.READ, off, 4096)
    reads = op.plan["reads"]
    assert len(reads) == K  # k shards, none of them the lost one
    assert len({p for p, _, _ in reads}) == K
    assert all(pg.acting[p].up for p, _, _ in reads) and 1 not in {p for p, _, _ in reads}
    assert all((o, n) == (5 * SU, SU) for _, o, n in reads)  # the whole stripe, to decode
    assert op.decode == K * SU
    assert cl.stats()["pools"]["ec"]["ec"]["degraded_reads"] == 1


def test_degraded_write_skips_the_down_shard() -> None:
    sim, cl = _cluster(_params())
    img = cl.image("meta", "img")
    pg = img.pg_of(0)
    cl.mark_down(pg.acting[5].id)  # a coding shard
    (op,) = _one(sim, cl, Op.WRITE, 0, 16384)
    assert sorted(p for p, _, _ in op.plan["writes"]) == [0, 1, 2, 3, 4]
    assert len(op.commits) == 5


def test_ec_latency_exceeds_replicated_for_small_writes_and_io_completes_once() -> None:
    """A 4 KiB EC overwrite is a read then a write round (two device service times at least); the
    replicated pool needs one. Every request completes once."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from fio_drive import ClosedLoop

    p = _params()
    p["images"].append({"pool": "meta", "name": "rep", "size": "1GiB"})
    lat = {}
    for name in ("img", "rep"):
        sim, cl = _cluster(p)
        r = ClosedLoop(sim, cl.image("meta", name), qd=1, rw="randwrite", n_ios=300, seed=4).run()
        assert r.completions_total == r.submitted
        lat[name] = r.lat
    # the devices are deterministic 1 ms queues: a replicated write >= one service time, an EC RMW
    # write >= a read and a write (deferred writes commit through the WAL append: one device IO)
    assert lat["rep"].min() >= 1e-3
    assert lat["img"].min() >= 2e-3
    assert lat["img"].mean() > lat["rep"].mean() + 0.9e-3


@settings(max_examples=30, deadline=None)
@given(
    k=st.integers(1, 4), m=st.integers(1, 3), hosts=st.integers(2, 9), per_host=st.integers(1, 3),
    pg_num=st.sampled_from([8, 16, 32]), pool_id=st.integers(1, 9), out_osd=st.integers(0, 26),
)
def test_ec_placement_keeps_shards_in_distinct_failure_domains(k, m, hosts, per_host, pg_num, pool_id, out_osd) -> None:
    osds = [CrushOsd(h * per_host + i, 1.0 + 0.1 * i, "hdd", h) for h in range(hosts) for i in range(per_host)]
    cm = CrushMap([f"h{i}" for i in range(hosts)], osds)
    size = k + m
    a = map_pool(cm, pool_id, pg_num, size, None, "host", indep=True, tries=100, leaf_tries=5)
    host = {o.id: o.host for o in osds}
    for row in a:
        assert len(row) == size
        placed = [x for x in row if x != NONE]
        assert len({host[x] for x in placed}) == len(placed)  # never two shards on one host
        if size <= hosts:
            assert len(placed) == size
    out = out_osd % len(osds)
    b = map_pool(cm, pool_id, pg_num, size, None, "host", indep=True, tries=100, leaf_tries=5, out={out})
    for ra, rb in zip(a, b, strict=True):
        assert out not in rb
        placed = [x for x in rb if x != NONE]
        assert len({host[x] for x in placed}) == len(placed)
        if out not in ra:
            assert ra == rb  # PGs without the out OSD keep every shard where it was


def test_rbd_image_in_an_ec_pool_needs_a_replicated_metadata_pool() -> None:
    p = _params()
    p["images"] = [{"pool": "ec", "name": "img", "size": "1GiB"}]
    with pytest.raises(ConfigError) as e:
        _cluster(p)
    assert e.value.field == "params.images.0.pool"
    p["images"] = [{"pool": "meta", "name": "img", "size": "1GiB", "data_pool": "nope"}]
    with pytest.raises(ConfigError) as e:
        _cluster(p)
    assert e.value.field == "params.images.0.data_pool"
    p = _params(allow_ec_overwrites=False)
    with pytest.raises(ConfigError) as e:
        _cluster(p)
    assert e.value.field == "params.images.0.data_pool"
    p = _params(hosts=5)  # 4+2 shards need 6 hosts
    with pytest.raises(ConfigError) as e:
        _cluster(p)
    assert e.value.field == "params.pools.1.erasure"


def test_ec_image_takes_k_plus_m_over_k_of_its_size() -> None:
    _sim, cl = _cluster(_params())
    img = cl.image("meta", "img")
    assert img.shard_size == (4 << 20) // K
    assert img.bases().shape == (img.n_objects, K + M)
    allocated = sum(o.bs.allocated for o in cl.osds)
    assert allocated >= img.n_objects * img.shard_size * (K + M)
    assert allocated < img.n_objects * img.shard_size * (K + M) * 1.01 + 64 * (1 << 20)
    assert cl.stats()["pools"]["ec"]["min_size"] == K + 1
