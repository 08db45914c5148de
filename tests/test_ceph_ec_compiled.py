"""Erasure-coded pools in the compiled Ceph core (issue 13): a chain of fio runs on an EC data pool gives the
Python model's results byte for byte: sub-reads (whole stripes or partial reads, cache hits and misses,
objects not written yet), full-stripe and read-modify-write writes in both partial-write modes, the
primary's own shard through its throttles, degraded reads and writes with a shard's OSD down, stalls of
the CPU (``then`` resumed from an event), cost jitter, the pool's EcStats counters and every OSD's."""

from __future__ import annotations

import pytest

import simulator.ceph  # noqa: F401
from simulator.ceph.cluster import Cluster
from simulator.devices.registry import resolve_params
from simulator.engine import Simulation

K, M, SU = 4, 2, 4096


def _cluster(pw: str, pr: bool, stall: bool, filled: bool) -> tuple[Simulation, Cluster]:
    dev = {"kind": "queue", "params": {"capacity": "64GiB", "servers": 1,
                                       "service": {"dist": "exponential", "mean": "0.4ms"}}}
    cpu: dict = {"cores": 2}
    if stall:  # off-CPU stalls: continuations resumed from events (resources.then)
        cpu.update({"stall_share": 0.05, "stall_mean": "0.3ms"})
    params = {
        "hosts": [{"name": "h", "count": 7, "cpu": cpu, "drives": [{"count": 2, "device": dev}]}],
        "pools": [
            {"name": "meta", "size": 3, "pg_num": 8},
            {"name": "ec", "type": "erasure", "pg_num": 16,
             "erasure": {"k": K, "m": M, "stripe_unit": SU, "partial_writes": pw, "partial_reads": pr}},
        ],
        "images": [{"pool": "meta", "name": "img", "size": "256MiB", "data_pool": "ec", "prefilled": filled}],
        "osd": {"cost_cv": 0.3},
        "block_layer": {"enabled": False},
        "bluestore": {"cache": {"size": "8MiB"}, "onode_cache_size": 64, "throttle_bytes": 262144},
    }
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": params})
    sim = Simulation(7)
    return sim, Cluster(cfg, "cluster", sim.root)


#: (rw, bs, iodepth, offset_align): partial stripes (4 KiB into 16 KiB stripes), whole stripes, several objects
_STEPS = (("randread", 4096, 8, 0), ("randwrite", 16384, 8, 16384), ("randwrite", 4096, 16, 0),
          ("randread", 4096, 16, 0), ("randwrite", 24576, 4, 4096), ("randread", 65536, 8, 0),
          ("randwrite", 4096, 8, 0), ("randread", 16384, 4, 0))


def _chain(engine: str, pw: str, pr: bool, stall: bool, down: bool, filled: bool) -> list:
    from simulator.core import choose
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload, run_fio

    sim, cl = _cluster(pw, pr, stall, filled)
    img = cl.image("meta", "img")
    out = []
    for n, (rw, bs, qd, align) in enumerate(_STEPS):
        if down and n == 3:  # a data shard's OSD of many PGs goes down: degraded reads and writes from here on
            cl.mark_down(cl.osds[5].id)
        job = {"name": "j", "ioengine": "libaio", "sim_slat": 0, "bs": bs, "randseed": 11 + n, "rw": rw,
               "iodepth": qd, "time_based": 1, "runtime": "0.15s", "ramp_time": "0.02s"}
        if align:
            job["blockalign"] = align
        if engine == "auto":  # no silent Python run
            why = choose(sim, Workload(sim, resolve_jobs({}, [job], "t"), lambda _j, _i=img: [_i]), "auto")
            assert why is None, why
        res = run_fio(sim, [img], job, engine=engine)
        st = cl.stats()
        out.append((repr(res[0]), dict(st["pools"]["ec"]["ec"]), [(tuple(o.ops), o.subops, o.replies) for o in cl.osds],
                    [(o.bs.cache.hits, o.bs.cache.misses) for o in cl.osds], [h.cpu.jobs for h in cl.hosts],
                    sim.env.now))
    return out


@pytest.mark.parametrize(("pw", "pr", "stall", "down", "filled"), [
    ("full_stripe", False, False, False, True),
    ("touched_chunks", True, True, False, False),
    ("touched_chunks", False, False, True, True),
    ("full_stripe", True, True, True, False),
])
def test_compiled_core_runs_ec_pools_as_the_python_model(pw: str, pr: bool, stall: bool, down: bool, filled: bool) -> None:
    py = _chain("python", pw, pr, stall, down, filled)
    cc = _chain("auto", pw, pr, stall, down, filled)
    assert cc == py
    ec = py[-1][1]
    assert ec["rmw_writes"] > 100 and ec["full_stripe_writes"] > 100  # both write plans ran
    assert ec["subreads"] > ec["client_reads"]  # reads of several shards
    assert (ec["degraded_reads"] > 0) == down and (ec["decode_bytes"] > 0) == down
    assert any(h for h, _m in py[-1][3]) and any(m for _h, m in py[-1][3])  # cache hits and misses
