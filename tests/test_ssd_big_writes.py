"""Writes as large as an SSD's write buffer, or larger, complete (regression: they stopped both engines).

A consumer SATA SSD (ssd/class/consumer_sata: no PLP, a 4 MiB DRAM write buffer, multi-plane
programs) below BlueStore, 4 MiB random RBD writes at QD32: both engines stopped with "no event
left while requests are outstanding". Cause (devices/ssd/kernels.py): a write was admitted only when
its whole size was free in the buffer; a 4 MiB write then waited for the buffer to drain completely,
but the units of the open (partly filled) NAND page and the full pages held for a multi-plane
partner are only programmed when more host data arrives, and no host data passes a waiting write
(FIFO): a lost wakeup. A write larger than the buffer stopped the drive with ERR_BIGWRITE (which
the compiled cores did not report). Fix: a waiting write streams into the buffer as programs free
space (its units that fit, first come first served), as a drive takes a command's data; and when the
buffer holds only data no program in flight will free, the firmware programs the open page and the
held pages then (``kernels._make_room``).

Oracles: every request completes exactly once; Little's law on the closed loop (iodepth requests in
flight until the last issue: IOPS x mean latency = the mean number in flight, between
``iodepth * (1 - iodepth / n)`` and ``iodepth``); the bandwidth below the drive's write pipeline
bound (``SSDConfig.write_stage_rates``: link and NAND) and, with the data streaming, at least half
of it (whole-buffer admission, which serialises the link transfer and the NAND programs, gave 43 % of
the link rate in the Ceph case); both engines' fio documents identical.
"""

from __future__ import annotations

import pytest

from simulator.core import run_fio_compiled
from simulator.devices.registry import build_device
from simulator.engine import Simulation
from simulator.fio.writer import to_fio_json
from simulator.workloads.runner import run_fio

_MiB = 1 << 20
_JOB = {"name": "j", "ioengine": "libaio", "sim_slat": 0, "randseed": 5, "size": "1GiB", "rw": "randwrite"}


def _dev_spec(**controller) -> dict:
    return {"profile": "ssd/class/consumer_sata",
            "params": {"capacity": "8GiB", "flash": {"block_size": "1MiB"}, "precondition": {"state": "full"},
                       **({"controller": controller} if controller else {})}}


def _little(res, depth: int, n: int) -> float:
    """IOPS x mean completion latency of fio's result: the mean number in flight over the run."""
    w = res.write
    assert w.total_ios == n  # every request completed, exactly once (fio counts completions)
    occ = w.iops * w.clat.mean_ns * 1e-9
    assert depth * (1 - depth / n) <= occ <= depth * (1 + 1e-9), occ
    return occ


def _device_run(runner, spec: dict, bs: int, depth: int, n: int):
    sim = Simulation(3)
    dev = build_device(spec, "dev", sim.root)
    (res,) = runner(sim, [dev], {**_JOB, "bs": bs, "iodepth": depth, "number_ios": n})
    return res, to_fio_json([res], {}, time_str="t", sim_meta={}, timestamp=0), dev


@pytest.mark.parametrize("bs", [1 * _MiB, 4 * _MiB, 6 * _MiB])
def test_writes_up_to_and_beyond_the_buffer_complete_in_both_engines(bs):
    """Random writes of 1 MiB, 4 MiB (= the 4 MiB buffer) and 6 MiB (beyond it) at QD32 on the consumer
    SATA drive: both engines complete every request once, with identical fio documents and device
    statistics; Little's law holds; the bandwidth lies between half the pipeline bound and the bound."""
    spec = _dev_spec()
    n, depth = 160, 32
    py, py_doc, py_dev = _device_run(run_fio, spec, bs, depth, n)
    _co, co_doc, co_dev = _device_run(run_fio_compiled, spec, bs, depth, n)
    assert co_doc == py_doc
    assert co_dev.stats() == py_dev.stats()
    _little(py, depth, n)
    cfg = py_dev.cfg
    assert bs >= cfg.controller.buffer_size // 4
    bound = min(cfg.write_stage_rates(bs).values()) * bs  # bytes/s
    assert 0.5 * bound <= py.write.bw_bytes <= bound * (1 + 1e-9), (py.write.bw_bytes, bound)


@pytest.mark.parametrize("buf,bs,depth", [("16KiB", 4096, 4), ("32KiB", 20480, 8), ("64KiB", 61440, 16)])
def test_writes_behind_open_and_held_pages_complete(buf, bs, depth):
    """Buffers of one, two and four NAND pages on the 2-plane drive: a full page waits in the buffer for
    its multi-plane partner, and the open page keeps its units until more data fills it. With a one-page
    buffer the held page is the whole buffer (no program in flight: ``_make_room`` programs it alone);
    with 60 KiB writes into 64 KiB the open and held pages outlast the programs in flight (the waiting
    write streams into what they free). Each of these stopped with "no event left" before; now both
    engines complete every request once, identically, and Little's law holds."""
    spec = _dev_spec(buffer_size=buf)
    n = 400
    py, py_doc, py_dev = _device_run(run_fio, spec, bs, depth, n)
    _co, co_doc, co_dev = _device_run(run_fio_compiled, spec, bs, depth, n)
    assert co_doc == py_doc
    assert co_dev.stats() == py_dev.stats()
    _little(py, depth, n)


# ------------------------------------------------------------------------------------------------ under Ceph
def _ceph(engine: str, depth: int, n: int):
    """Three hosts, one consumer SATA SSD each (the whole drive one BlueStore OSD, mq-deadline's 64
    tags), pool size 3, a prefilled 1 GiB image: ``n`` random 4 MiB RBD writes at ``depth``."""
    from simulator.ceph.cluster import Cluster
    from simulator.devices.registry import resolve_params

    params = {
        "hosts": [{"name": "h", "count": 3, "cpu": {"cores": 2},
                   "drives": [{"count": 1, "device": {"kind": "ssd", **_dev_spec()}, "split": 1}]}],
        "pools": [{"name": "p", "size": 3, "min_size": 2, "pg_num": 16}],
        "images": [{"pool": "p", "name": "img", "size": "1GiB", "prefilled": True}],
        "osd": {"cost_cv": 0.3},
        "bluestore": {"deferred_batch_ops": 16},
        "block_layer": {"enabled": True},
    }
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": params})
    sim = Simulation(3)
    cl = Cluster(cfg, "cluster", sim.root)
    img = cl.image("p", "img")
    job = {**_JOB, "ioengine": "rbd", "pool": "p", "rbdname": "img", "bs": 4 * _MiB, "iodepth": depth,
           "number_ios": n}
    del job["size"]
    (res,) = run_fio(sim, [img], job, engine=engine)
    return res, cl, sim


def test_ceph_4mib_writes_on_a_consumer_sata_ssd_complete_in_both_engines():
    """The reported case: 4 MiB random RBD writes at QD32 on BlueStore over consumer SATA SSDs run to
    the end in the Python model and in the compiled core, with identical results; every request
    completes once; Little's law; each drive's bandwidth (3 replicas of every write) below its link."""
    n, depth = 120, 32
    py, cl_py, sim_py = _ceph("python", depth, n)
    co, _cl_co, sim_co = _ceph("compiled", depth, n)
    assert repr(co) == repr(py)
    assert sim_co.env.now == sim_py.env.now
    _little(py, depth, n)
    for o in cl_py.osds:
        d = o.bs.dev
        while not hasattr(d, "cfg") or not hasattr(d.cfg, "controller"):
            d = d.base
        wbytes = d.bytes[1]  # Op.WRITE
        assert wbytes >= n * 4 * _MiB  # every replica of every write reached the drive
        assert wbytes / sim_py.env.now <= d.cfg.interface.link_rate
