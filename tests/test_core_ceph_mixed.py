"""randrw jobs (rwmixread) in the compiled Ceph core (issue 13): the directions are decided in issue order as
JobThread._next_ddir decides them, ahead of the run, and decided again from the ramp's end, where fio restarts
its issue counters; a chain of mixed and one-direction jobs gives the Python model's results byte for byte."""

from __future__ import annotations

import numpy as np
import pytest

import simulator.ceph  # noqa: F401
from simulator.ceph.cluster import Cluster
from simulator.devices.registry import resolve_params
from simulator.engine import Simulation


def _cluster(ec: bool) -> tuple[Simulation, Cluster]:
    dev = {"kind": "queue", "params": {"capacity": "32GiB", "servers": 1,
                                       "service": {"dist": "exponential", "mean": "0.4ms"}}}
    pools = [{"name": "p", "size": 3, "pg_num": 32}]
    image = {"pool": "p", "name": "img", "size": "512MiB"}
    if ec:
        pools.append({"name": "ec", "type": "erasure", "pg_num": 16, "erasure": {"k": 2, "m": 1}})
        image["data_pool"] = "ec"
    params = {
        "hosts": [{"name": "h", "count": 4, "cpu": {"cores": 2}, "drives": [{"count": 2, "device": dev}]}],
        "pools": pools, "images": [image], "osd": {"cost_cv": 0.3}, "block_layer": {"enabled": False},
        "bluestore": {"cache": {"size": "4MiB"}},
    }
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": params})
    sim = Simulation(5)
    return sim, Cluster(cfg, "cluster", sim.root)


_JOBS = (
    {"rw": "randrw", "rwmixread": 70, "iodepth": 16, "time_based": 1, "runtime": "0.3s", "ramp_time": "0.05s"},
    {"rw": "randwrite", "iodepth": 8, "time_based": 1, "runtime": "0.1s"},
    {"rw": "randrw", "rwmixread": 30, "iodepth": 4, "number_ios": 3000},
    {"rw": "randrw", "rwmixwrite": 50, "iodepth": 32, "time_based": 1, "runtime": "0.2s", "ramp_time": "0.1s"},
)


def _chain(engine: str, ec: bool) -> list:
    from simulator.core import choose
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload, run_fio

    sim, cl = _cluster(ec)
    img = cl.image("p", "img")
    out = []
    for n, j in enumerate(_JOBS):
        job = {"name": "j", "ioengine": "libaio", "sim_slat": 0, "bs": 4096, "randseed": 21 + n, **j}
        if engine == "auto":  # no silent Python run
            why = choose(sim, Workload(sim, resolve_jobs({}, [job], "t"), lambda _j, _i=img: [_i]), "auto")
            assert why is None, why
        res = run_fio(sim, [img], job, engine=engine)
        out.append((repr(res[0]), [(tuple(o.ops), o.subops) for o in cl.osds], tuple(img.completed), tuple(img.bytes),
                    sim.env.now))
    return out


@pytest.mark.parametrize("ec", [False, True])
def test_compiled_core_runs_randrw_as_the_python_model(ec: bool) -> None:
    py = _chain("python", ec)
    cc = _chain("auto", ec)
    assert cc == py
    first = py[0][0]
    assert "read=DirResult(ddir=0, total_ios=0" not in first and "write=DirResult(ddir=1, total_ios=0" not in first


def test_the_mix_decided_again_from_a_restart_is_the_threads_own() -> None:
    """_Mix.restart undoes the rows not issued yet (their uniforms go back to the stream) and the counters
    restart: deciding them again gives what a thread whose counters restarted at that row decides."""
    from simulator.core.ceph_fio import _Mix
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload

    def thread():
        sim, cl = _cluster(False)
        img = cl.image("p", "img")
        job = {"name": "j", "ioengine": "libaio", "bs": 4096, "rw": "randrw", "rwmixread": 60, "iodepth": 4,
               "randseed": 9, "number_ios": 10}
        return Workload(sim, resolve_jobs({}, [job], "t"), lambda _j, _i=img: [_i]).threads[0]

    th = thread()
    mix = _Mix(th)
    head = mix.decide(37)
    assert mix.restart(37) == 0
    mix.decide(500)
    assert mix.restart(37) == 500
    again = mix.decide(500)
    ref_th = thread()  # the thread's own rule: 37 issues, then fio's counter reset, then 500 more
    ref = []
    for k in range(537):
        if k == 37:
            ref_th._issues = [0, 0, 0]
            ref_th._rwmix_issues = 0
        d = ref_th._next_ddir()
        ref_th._issues[d] += 1
        ref.append(d)
    np.testing.assert_array_equal(np.concatenate([head, again]), ref)
    assert 0.5 < np.mean(np.asarray(ref) == 0) < 0.7
