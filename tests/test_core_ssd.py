"""SSDs in the compiled device core: differential tests against the Python engine, an oracle, and
mutation checks that show the differential tests can fail.

Both engines run the same kernels (simulator.devices.ssd.kernels) on the same arrays; what differs is
the plumbing around them (request naming, event order, the heap versus SimPy, statistics windows,
preconditioned state handed to the core). The tests require *identical* fio documents, device
statistics (FTL counters, WAF, forced flushes, die utilisation, queue depth) and end times.
"""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from resident import resident_bytes

from simulator.core import run_fio_compiled, unsupported
from simulator.devices.blocklayer import BlockLayer, BlockLayerConfig
from simulator.devices.registry import build_device
from simulator.devices.ssd import kernels as SK
from simulator.engine import Simulation
from simulator.fio.writer import to_fio_json
from simulator.workloads.options import resolve_jobs
from simulator.workloads.runner import Workload, run_fio

_BASE = {"name": "j", "bs": "4k", "ioengine": "libaio", "sim_slat": 0, "randseed": 5, "size": "1GiB"}
#: a small drive of each profile (capacity and block size scaled down, a common spare area, so that
#: GC runs within a fraction of a second; 768 KiB holds a multiple of 3 pages for TLC)
_SMALL = {"capacity": "2GiB", "flash": {"block_size": "768KiB"}, "ftl": {"over_provisioning": 0.3}}


def _spec(profile: str, state: str = "fresh", **over) -> dict:
    params = {**_SMALL, "precondition": {"state": state, "overwrite": 0.5}}
    for k, v in over.items():  # "controller.plp": value
        sect, key = k.split("__") if "__" in k else (None, k)
        if sect:
            params[sect] = {**params.get(sect, {}), key: v}
        else:
            params[key] = v
    return {"profile": profile, "params": params}


def _run(spec: dict, job: dict, runner, seed: int, blk: dict | None = None):
    sim = Simulation(seed)
    dev = build_device(spec, "dev", sim.root)
    tgt = BlockLayer("blk", dev, dev, BlockLayerConfig(**blk)) if blk is not None else dev
    res = runner(sim, [tgt], {**_BASE, **job})
    doc = to_fio_json(res, {}, time_str="t", sim_meta={}, timestamp=0)
    return doc, dev.stats(), (tgt.stats() if blk is not None else None), sim.now


def _assert_identical(spec: dict, job: dict, seed: int = 3, blk: dict | None = None) -> tuple:
    py = _run(spec, job, run_fio, seed, blk)
    co = _run(spec, job, run_fio_compiled, seed, blk)
    assert co[0] == py[0]
    assert co[1] == py[1]
    assert co[2] == py[2]
    assert co[3] == py[3]
    return py


_T = {"time_based": 1, "runtime": "0.25s"}
#: the profile families of models/ssd (class defaults, and datasheet drives with what the classes
#: lack: a write-log group commit, an SLC cache on TLC, a controller back-end bandwidth), and the
#: calibrated virtio stand-in of the Ceph lab
_PROFILES = [
    "ssd/class/consumer_sata",  # no PLP, SATA (FLUSH not queued), MLC
    "ssd/class/consumer_nvme",  # no PLP, NVMe
    "ssd/class/enterprise_plp_sata",
    "ssd/class/enterprise_plp_sas",
    "ssd/class/enterprise_plp_nvme",
    "ssd/datasheet/intel_dc_s3700_400gb",  # controller.ack_commit (group commit of the write log)
    "ssd/datasheet/samsung_840_evo_250gb",  # TLC with an SLC cache
    "ssd/example/dc_s3710_200gb",  # controller.write_bandwidth
    "local/dev_vm_virtio",
]
_JOBS = [
    ({"rw": "randwrite", "iodepth": 32, **_T}, "steady"),
    ({"rw": "randread", "iodepth": 1, **_T}, "steady"),
    ({"rw": "randrw", "iodepth": 4, "rwmixread": 70, "numjobs": 2, **_T}, "full"),
    ({"rw": "randwrite", "iodepth": 1, "ioengine": "psync", "sync": 1, "numjobs": 4, **_T}, "fresh"),
    # fresh: on the small drives a steady state's first GC victims keep most of their pages, and a
    # forced flush waits behind their copyback for most of a short run (the same in both engines)
    ({"rw": "randwrite", "iodepth": 8, "fsync": 4, **_T}, "fresh"),
]


@pytest.mark.parametrize("job,state", _JOBS)
@pytest.mark.parametrize("profile", _PROFILES)
def test_profiles_identical_to_python(profile, job, state):
    doc, st, _, _ = _assert_identical(_spec(profile, state), job)
    ios = sum(j[d]["total_ios"] for j in doc["jobs"] for d in ("read", "write"))
    assert ios > 50  # the run did something
    if state == "steady" and job["rw"] == "randwrite" and "fsync" not in job:
        assert st["ssd"]["gc_runs"] > 0  # garbage collection ran inside the timed run


_FEATURES = [
    # (spec overrides, job): one mechanism each
    ({"flash__nop": 2}, {"rw": "randwrite", "iodepth": 4, "fsync": 3, **_T}),  # partial programs of open pages
    ({"controller__write_cache": False}, {"rw": "randwrite", "iodepth": 8, **_T}),  # write-through (hdparm -W0)
    ({"controller__honours_flush": False}, {"rw": "randwrite", "iodepth": 2, "fsync": 1, **_T}),
    ({"interface__hil_cores": 2, "controller__ftl_cores": 3}, {"rw": "randrw", "iodepth": 32, "numjobs": 2, **_T}),
    ({"controller__buffer_size": "128KiB"}, {"rw": "write", "iodepth": 16, "bs": "64k", **_T}),  # buffer stalls
    ({}, {"rw": "randread", "iodepth": 8, "bs": "1m", **_T}),  # reads spanning many pages and dies
    ({}, {"rw": "randtrim", "iodepth": 8, "number_ios": 3000}),
    ({}, {"rw": "randwrite", "iodepth": 16, "fsync": 2, "numjobs": 3, "ramp_time": "0.05s", **_T}),  # SATA flush barrier
    ({}, {"rw": "randwrite", "iodepth": 4, "end_fsync": 1, "number_ios": 4000}),
    ({}, {"rw": "randwrite", "iodepth": 64, "rate_iops": 20000, "rate_process": "poisson", **_T}),  # open loop
]


@pytest.mark.parametrize("over,job", _FEATURES)
def test_mechanisms_identical_to_python(over, job):
    _assert_identical(_spec("ssd/class/consumer_sata", "steady", **over), job)


@pytest.mark.parametrize("blk", [{}, {"scheduler": "none"}])
def test_block_layer_over_ssd_identical_to_python(blk):
    _assert_identical(_spec("ssd/class/consumer_nvme", "full"), {"rw": "randrw", "iodepth": 48, "fsync": 8, **_T},
                      blk=blk)


@pytest.mark.parametrize("seed", [1, 2, 7])
def test_seeds_identical_to_python(seed):
    _assert_identical(_spec("ssd/class/enterprise_plp_sata", "steady"), {"rw": "randrw", "iodepth": 16, **_T}, seed)


# ------------------------------------------------------------------------------------ oracle
def test_qd1_read_latency_is_the_sum_of_its_stages():
    """A QD1 random read of a fully written PLP drive, nothing else running: the command overhead,
    the controller's read path, tR of the page's type, the page over the channel, the data over the
    link, exactly (fio's clat; no queueing anywhere)."""
    spec = _spec("ssd/class/enterprise_plp_nvme", "full")
    sim = Simulation(1)
    dev = build_device(spec, "dev", sim.root)
    cfg = dev.cfg
    (res,) = run_fio_compiled(sim, [dev], {**_BASE, "rw": "randread", "iodepth": 1, "number_ios": 2000})
    f, ifc, ctl = cfg.flash, cfg.interface, cfg.controller
    trs = f.page_types("read_latency")
    fixed = ifc.command_overhead + ctl.read_latency + f.page_size / f.channel_rate + 4096 / ifc.link_rate
    lo, hi = fixed + min(trs), fixed + max(trs)
    clat = res.read.clat
    assert clat.n == 2000
    assert lo * 1e9 - 1 <= clat.min_ns and clat.max_ns <= hi * 1e9 + 1
    if len(set(trs)) == 1:
        assert abs(clat.mean_ns - lo * 1e9) < 1.0


# ------------------------------------------------------------------------------------ mutations
def test_mutation_statistics_window_is_seen(monkeypatch):
    """The differential test can fail: a Python shell that counts the drive's busy time from 0
    instead of the statistics window's start (fio's ramp_time) no longer matches the compiled core."""
    spec = _spec("ssd/class/consumer_sata", "fresh")
    job = {"rw": "randwrite", "iodepth": 1, "ioengine": "psync", "sync": 1, "ramp_time": "0.05s", "sim_slat": "300us", **_T}
    co = _run(spec, job, run_fio_compiled, 3)
    assert _run(spec, job, run_fio, 3)[1] == co[1]
    orig = SK.ssd_finish

    def ssd_finish_from_zero(S, r, now, t0):
        return orig(S, r, now, 0.0)

    monkeypatch.setattr(SK, "ssd_finish", ssd_finish_from_zero)
    py = _run(spec, job, run_fio, 3)
    assert py[1]["utilisation"] != co[1]["utilisation"]


def test_mutation_state_handed_to_the_core_is_seen():
    """The core runs from the state the Python device built (preconditioned FTL, configuration):
    one nanosecond more FTL update time in that state shows in the results."""
    spec = _spec("ssd/class/enterprise_plp_sata", "steady")
    job = {**_BASE, "rw": "randwrite", "iodepth": 4, **_T}
    out = []
    for bump in (0.0, 1e-9):
        sim = Simulation(3)
        dev = build_device(spec, "dev", sim.root)
        dev._S.sf[SK.SF_FTLUPD] += bump
        res = run_fio_compiled(sim, [dev], job)
        out.append(to_fio_json(res, {}, time_str="t", sim_meta={}, timestamp=0))
    assert out[0] != out[1]


# ------------------------------------------------------------------------------------ hand-over
@pytest.mark.parametrize("first,busy", [
    ({"rw": "randwrite", "iodepth": 32, "number_ios": 3000}, True),  # buffered writes: programs still running
    ({"rw": "randwrite", "iodepth": 8, "fsync": 5, "number_ios": 2000}, False),  # ends with a forced flush
])
def test_python_continues_after_a_compiled_run(first, busy):
    """After a compiled run the SSD gets its state back (FTL in place, tables) and the NAND work
    still pending in the run's heap becomes SimPy events at the same times: a Python run after it
    gives what a Python run after a Python run gives. A second compiled run is refused (events are
    pending), as is a drive whose kernel state says work is in flight."""
    from simulator.core.run import _dev_kind

    spec = _spec("ssd/class/consumer_sata", "steady")
    second = {"rw": "randrw", "iodepth": 4, "fsync": 3, "number_ios": 3000}
    out = []
    for runner in (run_fio, run_fio_compiled):
        sim = Simulation(3)
        dev = build_device(spec, "dev", sim.root)
        runner(sim, [dev], {**_BASE, **first})
        assert SK.in_flight(dev._S) == busy
        if runner is run_fio_compiled and busy:
            assert "holds state" in _dev_kind(dev)[1]
            wl = Workload(sim, resolve_jobs({}, [{**_BASE, **second}], "t"), lambda j, dev=dev: [dev])
            assert "pending" in unsupported(sim, wl)
        res = run_fio(sim, [dev], {**_BASE, **second})
        out.append((to_fio_json(res, {}, time_str="t", sim_meta={}, timestamp=0), dev.stats(), sim.now))
    assert out[1] == out[0]


def test_mutation_no_hand_over_is_seen(monkeypatch):
    """Without the hand-over of the pending NAND events the Python run after a compiled one stalls
    (the dies stay busy for ever) and the comparison above fails."""
    import simulator.core.run as R

    monkeypatch.setattr(R, "ssd_hand_over", lambda st, devs: None)
    with pytest.raises((AssertionError, RuntimeError)):
        test_python_continues_after_a_compiled_run({"rw": "randwrite", "iodepth": 32, "number_ios": 3000}, True)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="page residency is read from Linux's pagemap")
def test_terabyte_drive_costs_memory_only_where_written():
    """A fresh 1.92 TB drive's FTL tables (l2p, p2l, dirty: ~6 GB of address space) stay unmapped through a compiled run
    and its write-back: the build and the write-back copy only the pieces in use. (The tables used to be shared
    mappings, where the copy's read of every piece took ~4 GB of memory per drive: six drives of a plan probe, 24 GB.)
    The run's writes reach the drive's own tables."""
    sim = Simulation(3)
    dev = build_device({"profile": "ssd/samsung_pm9a3_1.92tb"}, "dev", sim.root)
    res = run_fio_compiled(sim, [dev], {**_BASE, "rw": "randwrite", "iodepth": 8, "size": "64GiB", "number_ios": 2000})
    assert res[0].write.total_ios == 2000
    mapped = int((dev.ftl.l2p[: 64 * 2**30 // 4096] != 0).sum())  # reads only the written 64 GiB's 64 MB of l2p
    assert mapped == 2000  # distinct 4 KiB LBAs of the run (fio's randommap: no repeats)
    for name, a in (("l2p", dev.ftl.l2p), ("p2l", dev.ftl.p2l), ("dirty", dev._S.dirty)):
        assert a.nbytes > 1.8e9
        assert resident_bytes(a) < 200 * 2**20, (name, resident_bytes(a))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["new", "free", "grow"]), st.integers(0, 10**6)), max_size=120))
def test_free_stacks_pop_as_an_explicit_chain(ops):
    """The page and transaction tables' free stacks (linked implicitly, kernels._link_free) hand out rows in the
    order of the explicit chain they replaced: rows 0, 1, 2 ... at first, a freed row first, a grown table's new
    rows on top in order. The reference is that chain as a list."""
    sim = Simulation(1)
    dev = build_device(_spec("ssd/class/enterprise_plp_nvme"), "dev", sim.root)
    S = dev._S
    ref = list(range(S.tx.shape[0]))  # the free rows, top first
    held = []
    for op, k in ops:
        if op == "new" and ref:
            x = SK._txn_new(S, 0, 0, 0.0, -1, 0, 0, 0)
            assert x == ref.pop(0)
            held.append(x)
        elif op == "free" and held:
            x = held.pop(k % len(held))
            SK._txn_free(S, x)
            ref.insert(0, x)
        elif op == "grow":
            n0 = S.tx.shape[0]
            S = SK.grow(S, dev.cfg, n_txn=n0 + 1 + k % 50)
            ref[:0] = range(n0, S.tx.shape[0])
        assert int(S.si[SK.SI_TX_NFREE]) == len(ref)
    while ref:  # the rest, to the end of the stack
        assert SK._txn_new(S, 0, 0, 0.0, -1, 0, 0, 0) == ref.pop(0)
    assert SK._txn_new(S, 0, 0, 0.0, -1, 0, 0, 0) == -1 and S.si[SK.SI_ERR] == SK.ERR_TXNS
