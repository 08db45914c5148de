"""randrw jobs (rwmixread) and variable block sizes (bssplit, bsrange) in the compiled Ceph core (issue 13): the
directions and sizes are decided in issue order by the thread's own rules, ahead of the run, and decided again
from the ramp's end, where fio restarts its issue counters; a chain of mixed and one-direction jobs gives the
Python model's results byte for byte."""

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
    {"rw": "randread", "bssplit": "4k/50:16k/30:64k/20", "iodepth": 8, "time_based": 1, "runtime": "0.1s"},
    {"rw": "randrw", "rwmixread": 60, "bssplit": "4k/70:1m/30,8k", "iodepth": 8, "time_based": 1, "runtime": "0.2s",
     "ramp_time": "0.05s"},
    {"rw": "randwrite", "bsrange": "4k-32k", "iodepth": 4, "number_ios": 800},
    {"rw": "randrw", "bssplit": "4k/50:64k/50", "iodepth": 8, "size": "24MiB"},  # a byte limit: sizes decide the count
    {"rw": "randwrite", "bssplit": "64k/50:1m/50", "iodepth": 16, "size": "3MiB"},  # reached before the depth is
)


def _chain(engine: str, ec: bool) -> list:
    from simulator.core import choose
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload, run_fio

    sim, cl = _cluster(ec)
    img = cl.image("p", "img")
    out = []
    for n, j in enumerate(_JOBS):
        job = {"name": "j", "ioengine": "libaio", "sim_slat": 0, "randseed": 21 + n, **j}
        if "bssplit" not in j and "bsrange" not in j:
            job["bs"] = 4096
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
    """_Mix.restart undoes the rows not issued yet (their uniforms go back to their streams) and the counters
    restart: deciding them again gives the directions and sizes of a thread whose counters restarted at that row."""
    from simulator.core.ceph_fio import _Mix
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload

    def thread():
        sim, cl = _cluster(False)
        img = cl.image("p", "img")
        job = {"name": "j", "ioengine": "libaio", "bssplit": "4k/50:64k/50,16k", "rw": "randrw", "rwmixread": 60,
               "iodepth": 4, "randseed": 9, "number_ios": 10}
        return Workload(sim, resolve_jobs({}, [job], "t"), lambda _j, _i=img: [_i]).threads[0]

    th = thread()
    mix = _Mix(th)
    head = mix.decide(37)
    assert mix.restart(37) == 0
    mix.decide(500)
    assert mix.restart(37) == 500
    again = mix.decide(500)
    ref_th = thread()  # the thread's own rules, as JobThread._issue applies them: 37 issues, fio's reset, 500 more
    ref, ref_bs = [], []
    for k in range(537):
        if k == 37:
            ref_th._issues = [0, 0, 0]
            ref_th._rwmix_issues = 0
        d = ref_th._next_ddir()
        ref_th._issues[d] += 1
        bv = ref_th._bsvar[d]
        ref.append(d)
        ref_bs.append(bv() if bv is not None else ref_th._bs[d])
    np.testing.assert_array_equal(np.concatenate([head[0], again[0]]), ref)
    np.testing.assert_array_equal(np.concatenate([head[1], again[1]]), ref_bs)
    assert 0.5 < np.mean(np.asarray(ref) == 0) < 0.7
    assert set(ref_bs) == {4096, 65536, 16384}
