"""The compiled Ceph core reached from the normal run path (simulator.core.choose / run_with, used by
run_fio(engine=...), ``simrun fio`` and the experiment runner), against the Python model.

Differential tests in the style of tests/test_core_ceph.py: two clusters from the same config and
seed, one run by the Python model, one by the compiled core through the run path; the fio results
must be identical (repr of the JobStats result: IO counts, IOPS, bandwidth, latency means and
percentiles), and so must the cluster's counters the compiled core keeps.
"""

from __future__ import annotations

import pytest

import simulator.ceph  # noqa: F401
from simulator.ceph.cluster import Cluster
from simulator.devices.registry import resolve_params
from simulator.engine import Simulation
from simulator.workloads.runner import run_fio

US = 1e-6
_CACHELESS = {"cache": {"buffered_read": False, "buffered_write": False}}


def _params(bluestore: dict | None = None, cpu: dict | None = None) -> dict:
    dev = {"kind": "queue", "params": {"capacity": "64GiB", "servers": 1,
                                       "service": {"dist": "exponential", "mean": 300 * US}}}
    return {
        "hosts": [{"name": "h", "count": 3, "cpu": {"cores": 2, "stall_share": 0.05, "stall_mean": 100 * US, **(cpu or {})},
                   "drives": [{"count": 2, "device": dev}]}],
        "pools": [{"name": "p", "size": 3, "min_size": 2, "pg_num": 16}],
        "images": [{"pool": "p", "name": "img", "size": "1GiB"}],
        "osd": {"cost_cv": 0.4},
        "block_layer": {"enabled": False},
        **({"bluestore": bluestore} if bluestore else {}),
    }


def _cluster(params: dict, seed: int) -> tuple[Simulation, Cluster]:
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": params})
    sim = Simulation(seed)
    return sim, Cluster(cfg, "cluster", sim.root)


def _job(**kw) -> dict:
    return {"name": "j", "ioengine": "libaio", "sim_slat": 0, "norandommap": 1, "bs": 4096, "randseed": 5, **kw}


def _counters(cl: Cluster) -> dict:
    """What the compiled core writes back and the run's statistics window reports."""
    return {
        "osd_ops": [(o.ops, o.subops, o.replies) for o in cl.osds],
        "cpu": [(h.cpu.jobs, h.cpu.stalls, h.cpu._busy) for h in cl.hosts],
        "links": [(h.tx.bytes, h.tx._busy, h.rx.bytes, h.rx._busy) for h in cl.hosts],
        "bluestore": [(o.bs.kv_batches, o.bs.kv_txcs, o.bs.deferred_ops, o.bs.direct_writes, o.bs.throttled)
                      for o in cl.osds],
        "image": [(img.completed, img.bytes, img._t0, img._tq, img._qarea, img._inside) for img in cl.images.values()],
        "device_busy": [(o.bs.dev._busy_acc, o.bs.wal_dev._busy_acc) for o in cl.osds],
    }


def _both(params: dict, job: dict, seed: int = 5, engine: str = "auto"):
    sim_py, py = _cluster(params, seed)
    ref = run_fio(sim_py, [py.image("p", "img")], job)
    sim_cc, cc = _cluster(params, seed)
    from simulator.core import choose
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload

    wl = Workload(sim_cc, resolve_jobs({}, [job], "test"), lambda _j: [cc.image("p", "img")])
    assert choose(sim_cc, wl, engine) is None  # the compiled core covers it: no silent Python run
    out = run_fio(sim_cc, [cc.image("p", "img")], job, engine=engine)
    return (sim_py, py, ref), (sim_cc, cc, out)


@pytest.mark.parametrize("engine", ["auto", "compiled"])
def test_run_fio_engine_routes_rbd_to_the_ceph_core(engine):
    """run_fio(engine=auto|compiled) on an RBD image runs the compiled Ceph core (the core's event
    count moves) with the Python model's results."""
    job = _job(rw="randwrite", iodepth=16, number_ios=2000)
    (_, py, ref), (_, cc, out) = _both(_params(), job, engine=engine)
    assert repr(out[0]) == repr(ref[0])
    assert _counters(cc) == _counters(py)


def test_time_based_with_ramp_identical():
    """time_based runtime with ramp_time, 4 KiB randwrite QD32: the statistics restart at the ramp's
    end (the cluster's counters too), the job stops issuing at the runtime's end and drains; the
    compiled run gives the same results, counters and clock as the Python model."""
    job = _job(rw="randwrite", iodepth=32, time_based=1, runtime="0.4s", ramp_time="0.1s")
    (sim_py, py, ref), (sim_cc, cc, out) = _both(_params(), job)
    assert repr(out[0]) == repr(ref[0])
    assert _counters(cc) == _counters(py)
    assert sim_cc.env.now == sim_py.env.now
    assert out[0].write.total_ios > 500


def test_more_rows_than_one_block(monkeypatch):
    """A time-limited job issues more IOs than one block of request rows: the loop stops when the
    last row is out and Python adds as many again (here 300, 600, 1,200...) without a lost slot."""
    from simulator.core import ceph_fio

    monkeypatch.setattr(ceph_fio, "ROWS", 300)
    job = _job(rw="randwrite", iodepth=8, runtime="1.2s")
    (_, _py, ref), (_, _cc, out) = _both(_params(), job)
    assert repr(out[0]) == repr(ref[0])
    assert out[0].write.total_ios > 4 * 300


def test_reads_time_based_identical():
    """randread on pre-filled objects, BlueStore without a data cache, time_based with a ramp."""
    job = _job(rw="randread", iodepth=16, time_based=1, runtime="0.2s", ramp_time="0.05s", randseed=7)
    (_, py, ref), (_, cc, out) = _both(_params(bluestore=_CACHELESS), job, seed=7)
    assert repr(out[0]) == repr(ref[0])
    assert _counters(cc) == _counters(py)


def test_the_decision_names_why_python_runs():
    """choose() is the one decision: the Python model runs, with the reason, what the compiled Ceph
    core does not cover; engine=python and device targets under auto never reach it."""
    from simulator.core import choose
    from simulator.devices.simple import QueueDevice  # noqa: F401
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload

    sim, cl = _cluster(_params(), 1)
    img = cl.image("p", "img")

    def why(engine="auto", **kw):
        return choose(sim, Workload(sim, resolve_jobs({}, [_job(**kw)], "t"), lambda _j: [img]), engine)

    assert why(rw="randwrite", number_ios=10) is None
    assert why(rw="randwrite", number_ios=10, numjobs=2) is None  # several threads: test_core_ceph_threads.py
    two = [_job(rw="randwrite", number_ios=10), {**_job(rw="randread", number_ios=10), "name": "b", "stonewall": 1}]
    assert choose(sim, Workload(sim, resolve_jobs({}, two, "t"), lambda _j: [img]), "auto") is None  # phases: threads tests
    two[1]["startdelay"] = "1s"  # nor threads of a phase that differ in their start
    two.append({**two[1], "name": "c", "stonewall": 0, "startdelay": 0})
    assert choose(sim, Workload(sim, resolve_jobs({}, two, "t"), lambda _j: [img]), "auto") is None
    assert why(rw="randrw", number_ios=10) is None  # covered since 2026-11-29 (test_core_ceph_mixed.py)
    assert why(rw="rw", number_ios=10) is None  # a sequential mix (test_core_ceph_threads.py), with a ramp too,
    assert why(rw="rw", time_based=1, runtime="1s", ramp_time="0.1s") is None  # but not part-random offsets:
    assert "with ramp_time" in why(rw="randrw", percentage_random=50, time_based=1, runtime="1s", ramp_time="0.1s")
    assert why(rw="randwrite", number_ios=10, thinktime="1ms") is None  # covered: test_core_ceph_threads.py
    assert why(rw="randwrite", time_based=1, runtime="1s", rate_iops=100, thinktime="1ms") is None  # open loops too
    assert "ramp_time with an IO limit" in why(rw="randwrite", number_ios=10, ramp_time="1s")
    assert why("python", rw="randwrite", number_ios=10) == "engine=python was asked for"
    sim_b, cl_b = _cluster({**_params(), "block_layer": {"enabled": True}}, 1)
    wl = Workload(sim_b, resolve_jobs({}, [_job(rw="randwrite", number_ios=10)], "t"), lambda _j: [cl_b.image("p", "img")])
    assert "BlockLayer" in choose(sim_b, wl, "auto")


def test_experiment_point_runs_compiled_with_python_results():
    """An experiment point on a covered cluster: the experiment runner (execute_task) takes the
    compiled Ceph core by itself (engine auto) and the fio document's jobs equal the Python run's."""
    from simulator.experiment.execute import engine_usage, execute_task

    raw = {
        "name": "wire", "seed": 3,
        "system": {"cluster": {"params": _params()}},
        "workload": {"global": {"ioengine": "rbd", "pool": "p", "rbdname": "img", "rw": "randwrite", "bs": "4k",
                                "iodepth": 16, "time_based": 1, "runtime": "0.2s", "ramp_time": "0.05s"},
                     "jobs": [{"name": "t"}]},
    }
    outs = {}
    for engine in ("python", "auto"):
        task = {"source": "test", "points": [(0, {}, raw)], "replication": 0, "seed": 3, "engine": engine}
        (o,) = execute_task(task)
        outs[engine] = o
    assert outs["auto"].extra["engine"] == "compiled" and outs["python"].extra["engine"] == "python"
    assert outs["auto"].doc["jobs"] == outs["python"].doc["jobs"]
    assert outs["auto"].sim_s == outs["python"].sim_s
    assert "compiled core: 1 of 2 runs" in engine_usage(list(outs.values()))


@pytest.mark.parametrize("first_engine", ["auto", "python"])
def test_a_second_run_equals_the_python_models(first_engine):
    """Two runs back to back on one cluster (persist_state): after a compiled or a Python first run,
    a second run gives the same results in the compiled core as in the Python model (the hand-over
    is complete both ways; a Python run leaves only its inert end event queued); an event that still
    has work to do keeps the second run in Python, with that reason."""
    from simulator.core import choose
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload

    first = _job(rw="randwrite", iodepth=16, time_based=1, runtime="0.15s")
    second = _job(rw="randwrite", iodepth=4, time_based=1, runtime="0.15s", ramp_time="0.02s", randseed=9)
    out = {}
    for engine in ("python", "auto"):
        sim, cl = _cluster(_params(), 4)
        img = cl.image("p", "img")
        run_fio(sim, [img], first, engine=first_engine)
        wl = Workload(sim, resolve_jobs({}, [second], "t"), lambda _j, _i=img: [_i])
        assert choose(sim, wl, "auto") is None  # the first run left nothing to do
        out[engine] = run_fio(sim, [img], second, engine=engine)
        # the data devices' busy time is left out: where the second run ends with a device request in
        # service, the compiled run drains it into this window, the Python model into the next
        out[engine + "_counters"] = {k: v for k, v in _counters(cl).items() if k != "device_busy"}
    assert repr(out["auto"][0]) == repr(out["python"][0])
    assert out["auto_counters"] == out["python_counters"]
    sim, cl = _cluster(_params(), 4)
    img = cl.image("p", "img")
    run_fio(sim, [img], first)
    sim.env.timeout(0.5).callbacks.append(lambda _ev: None)  # a control process's timer, say
    wl = Workload(sim, resolve_jobs({}, [second], "t"), lambda _j: [img])
    assert "pending" in choose(sim, wl, "auto")


def test_onode_misses_that_cost_cpu_run_compiled():
    """An onode cache smaller than the objects: a miss costs decode CPU even without a DB read
    (onode_miss_read 0); the compiled loop models it (simulator.core.ceph_onode; it refused the run
    before, which had been taken with different results: 6,880 vs 6,589 IOPS): identical."""
    bsx = {**_CACHELESS, "onode_cache_size": 20, "onode_miss_read": 0}
    job = _job(rw="randread", iodepth=8, number_ios=800, randseed=7)
    (_, py, ref), (_, cc, out) = _both(_params(bluestore=bsx), job, seed=7)
    assert repr(out[0]) == repr(ref[0])
    assert _counters(cc) == _counters(py)
    assert [(o.bs.onodes.hits, o.bs.onodes.misses) for o in cc.osds] == [(o.bs.onodes.hits, o.bs.onodes.misses) for o in py.osds]


def test_reads_after_writes_to_an_image_not_pre_filled():
    """An image not pre-filled, onode misses without a DB read (onode_miss_read 0): writes (a write's
    miss costs nothing then and loads no onode, in either engine) and reads of the objects written
    (each first read misses and pays the decode CPU) run compiled, and the chain's results equal the
    Python model's."""
    from simulator.core import choose
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload

    p = _params(bluestore={**_CACHELESS, "onode_miss_read": 0, "prefer_deferred_size": 0})  # direct writes
    p["images"] = [{"pool": "p", "name": "img", "size": "64MiB", "prefilled": False}]
    write = _job(rw="randwrite", iodepth=8, number_ios=1500)
    read = _job(rw="randread", iodepth=8, number_ios=1500, randseed=11)
    out = {}
    for engine in ("python", "auto"):
        sim, cl = _cluster(p, 6)
        img = cl.image("p", "img")
        wl = Workload(sim, resolve_jobs({}, [write], "t"), lambda _j, _i=img: [_i])
        assert choose(sim, wl, "auto") is None
        w = run_fio(sim, [img], write, engine=engine)
        wl = Workload(sim, resolve_jobs({}, [read], "t"), lambda _j, _i=img: [_i])
        assert choose(sim, wl, "auto") is None
        r = run_fio(sim, [img], read, engine=engine)
        out[engine] = (repr(w[0]), repr(r[0]), _counters(cl))
    assert out["auto"] == out["python"]


def _random_case(seed: int) -> tuple[dict, dict, bool]:
    """A cluster (queue devices, CPU options, placement, BlueStore sizes) and a fio job (direction,
    size up to 4 MiB objects spanned, depth, limits, ramp, startdelay) drawn from ``seed``, and
    whether a first run precedes it."""
    import random

    r = random.Random(seed)
    dist = r.choice([{"dist": "exponential", "mean": r.choice([100, 300, 2000]) * US},
                     {"dist": "deterministic", "value": r.choice([50, 300]) * US}])
    dev = {"kind": "queue", "params": {"capacity": "64GiB", "servers": r.choice([1, 2, 4]), "service": dist}}
    if r.random() < 0.3:
        dev["params"]["bandwidth"] = "200MB/s"
    cpu = {"cores": r.choice([1, 2, 4])}
    if r.random() < 0.4:
        cpu.update({"stall_share": 0.1, "stall_mean": 100 * US})
    if r.random() < 0.3:
        cpu["wakeup_cost"] = 10 * US
    p = {"hosts": [{"name": "h", "count": r.choice([3, 4]), "cpu": cpu, "drives": [{"count": r.choice([1, 2]), "device": dev}]}],
         "pools": [{"name": "p", "size": 3, "min_size": 2, "pg_num": r.choice([8, 16, 32]), "rule": {"failure_domain": "osd"}}],
         "images": [{"pool": "p", "name": "img", "size": r.choice(["64MiB", "1GiB"])}],
         "osd": {"cost_cv": r.choice([0.0, 0.4, 1.0])}, "block_layer": {"enabled": False},
         "bluestore": {**_CACHELESS, "prefer_deferred_size": r.choice([0, 32768, 65536])}}
    job = {"name": "j", "ioengine": "libaio", "sim_slat": 0, "rw": r.choice(["randwrite", "write", "randread", "read"]),
           "bs": r.choice([4096, 65536, 1 << 20, 4 << 20]), "iodepth": r.choice([1, 4, 16, 64]), "randseed": r.randrange(100)}
    if r.random() < 0.5:
        job["norandommap"] = 1
    k = r.random()
    if k < 0.4:
        job.update(time_based=1, runtime=f"{r.choice([0.05, 0.2])}s")
        if r.random() < 0.5:
            job["ramp_time"] = "0.03s"
    elif k < 0.7:
        job["number_ios"] = r.choice([50, 500])
    else:
        job["runtime"] = "0.1s"
    if r.random() < 0.2:
        job["startdelay"] = "0.01s"
    return p, job, r.random() < 0.3


@pytest.mark.parametrize("seed", [2, 4, 5, 6, 7, 24])
def test_random_covered_runs_identical(seed):
    """Random clusters and jobs the decision covers (reads of written objects without a data cache,
    spanning objects, deferred or direct writes, ramp, startdelay, a first run to hand over):
    results, counters and clock equal the Python model's."""
    from simulator.core import choose
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload

    p, job, first = _random_case(seed)
    warm = _job(rw="randwrite", iodepth=8, number_ios=200)
    outs = []
    for engine in ("python", "auto"):
        sim, cl = _cluster(p, seed)
        img = cl.image("p", "img")
        if first:
            run_fio(sim, [img], warm, engine="auto")
        wl = Workload(sim, resolve_jobs({}, [job], "t"), lambda _j, _i=img: [_i])
        assert choose(sim, wl, "auto") is None, job
        res = run_fio(sim, [img], job, engine=engine)
        outs.append((repr(res[0]), _counters(cl), sim.env.now))
    assert outs[0] == outs[1], (p, job)


def test_a_persist_state_chain_runs_compiled_with_the_python_models_documents():
    """croit's sequence on a covered cluster (cacheless, direct writes): randread and randwrite at
    QD 1 and 16, then 4 MiB read and write, one system kept across the points (persist_state). With
    engine auto every point runs compiled, and every fio document and simulated time equals the
    Python chain's."""
    import copy

    from simulator.experiment.execute import execute_task

    base = {"name": "chain", "seed": 3,
            "system": {"cluster": {"params": _params(bluestore={**_CACHELESS, "prefer_deferred_size": 0})}},
            "workload": {"global": {"ioengine": "rbd", "pool": "p", "rbdname": "img", "bs": "4k", "time_based": 1,
                                    "runtime": "0.2s", "ramp_time": "0.05s"}, "jobs": [{"name": "t"}]}}
    points = []
    for i, (rw, qd) in enumerate([("randread", 1), ("randwrite", 1), ("randread", 16), ("randwrite", 16),
                                  ("read", 4), ("write", 4)]):
        raw = copy.deepcopy(base)
        raw["workload"]["global"].update(rw=rw, iodepth=qd, **({"bs": "4M"} if rw in ("read", "write") else {}))
        points.append((i, {"rw": rw, "qd": qd}, raw))
    res = {e: execute_task({"source": "t", "points": points, "replication": 0, "seed": 3, "persist": True, "engine": e})
           for e in ("python", "auto")}
    assert [o.extra["engine"] for o in res["auto"]] == ["compiled"] * 6
    for a, b in zip(res["python"], res["auto"], strict=True):
        assert a.doc["jobs"] == b.doc["jobs"], a.labels
        assert a.sim_s == b.sim_s


def test_what_the_loop_does_not_count_reads_nan_not_zero():
    """After a compiled run the figures its loop does not keep yet (a queue device's completions,
    bytes and queue-depth area) read NaN in that statistics window, not a 0 that looks measured; the
    busy time is kept; the next window (reset_stats) counts again. BlueStore's onode lookups are
    counted (simulator.core.ceph_onode): its hit ratio is the Python model's."""
    import math

    job = _job(rw="randwrite", iodepth=8, number_ios=300)
    (_, py, _), (_, cc, _) = _both(_params(), job)
    bs_py, bs_cc = py.osds[0].bs.stats(), cc.osds[0].bs.stats()
    assert bs_py["onode_hit_ratio"] > 0 and bs_cc["onode_hit_ratio"] == bs_py["onode_hit_ratio"]
    dev_py, dev_cc = py.osds[0].bs.dev, cc.osds[0].bs.dev
    s_py, s_cc = dev_py.stats(), dev_cc.stats()
    assert s_py["completed"]["write"] > 0 and math.isnan(s_cc["completed"]["write"])
    assert math.isnan(s_cc["mean_queue_depth"])
    assert s_cc["utilisation"] == pytest.approx(s_py["utilisation"], rel=1e-6)
    cc.reset_stats()
    assert cc.osds[0].bs.stats()["onode_hit_ratio"] == 0.0
    assert dev_cc.stats()["completed"]["write"] == 0
