"""The compiled core (simulator.core): queueing theory, and differential tests against the Python
engine, which stays the reference model.

The differential tests require *identical* results: both paths build the same Workload and
devices and draw the same random numbers in the same order (fio's offset streams, the queue
device's service stream, the open-loop arrival stream, the HDD's phase and start cylinder), and
the core schedules its events in SimPy's order. So any drift between a Python mechanism and its
compiled counterpart shows as a difference here, not as a tolerance quietly absorbing it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.core import Unsupported, run_fio_compiled, unsupported
from simulator.devices.registry import build_device
from simulator.engine import Simulation
from simulator.fio.writer import to_fio_json
from simulator.workloads.options import resolve_jobs
from simulator.workloads.runner import Workload, run_fio

ROOT = Path(__file__).resolve().parents[1]
HDD = {"profile": "hdd/seagate_st91000640ns"}
_BASE = {"name": "j", "bs": "4k", "ioengine": "libaio", "sim_slat": 0}


def _queue(dist: dict, servers: int = 1) -> dict:
    return {"kind": "queue", "params": {"servers": servers, "service": dist}}


def _both(spec: dict, job: dict, seed: int = 1):
    """(document, device stats) from the Python engine and from the compiled core."""
    out = []
    for runner in (run_fio, run_fio_compiled):
        sim = Simulation(seed)
        dev = build_device(spec, "dev", sim.root)
        res = runner(sim, [dev], job)
        doc = to_fio_json(res, {}, time_str="t", sim_meta={}, timestamp=0)
        out.append((doc, dev.stats(), sim.now))
    return out


def _assert_identical(spec: dict, job: dict, seed: int = 1) -> dict:
    (dp, sp, tp), (dc, sc, tc) = _both(spec, job, seed)
    assert dc == dp
    assert sc == sp
    assert tc == tp
    return dp


# ------------------------------------------------------------------------------------ theory
def _open_loop(dist: dict, rate: float, runtime: str, seed: int = 7):
    sim = Simulation(seed)
    dev = build_device(_queue(dist), "dev", sim.root)
    job = {**_BASE, "rw": "randread", "iodepth": 512, "rate_iops": rate, "rate_process": "poisson",
           "runtime": runtime, "ramp_time": "5s", "randseed": seed}  # fmt: skip
    (res,) = run_fio_compiled(sim, [dev], job)
    return res.read, dev.stats()


def _within(ci, value: float) -> None:
    # 3 half-widths of the run's 95 % batch-means interval (about a 99.99 % level under normality)
    half = (ci.hi - ci.lo) / 2
    assert abs(ci.estimate - value) <= 3 * half, (ci, value)
    assert half < 0.1 * value  # the run is long enough for the check to mean something


def test_mm1_mean_sojourn_time_matches_theory():
    """M/M/1, rho = 0.6: W = S / (1 - rho); utilisation = rho."""
    s, lam = 1e-3, 600.0
    r, st = _open_loop({"dist": "exponential", "mean": "1ms"}, lam, "150s")
    rho = lam * s
    _within(r.clat.mean_ci, s / (1 - rho) * 1e9)
    _within(r.iops_ci, lam)
    assert st["utilisation"] == pytest.approx(rho, abs=3 * (r.iops_ci.hi - r.iops_ci.lo) / 2 * s)


def test_md1_mean_sojourn_time_matches_theory():
    """M/D/1 (Pollaczek-Khinchine), rho = 0.7: W = S + rho S / (2 (1 - rho)); every latency >= S."""
    s, lam = 1e-3, 700.0
    r, _ = _open_loop({"dist": "deterministic", "value": "1ms"}, lam, "150s")
    rho = lam * s
    _within(r.clat.mean_ci, (s + rho * s / (2 * (1 - rho))) * 1e9)
    assert r.clat.min_ns >= s * 1e9 - 1  # latency >= service (ns rounding)


def test_closed_loop_exactly_once_and_littles_law():
    """number_ios IOs complete exactly once; a closed loop of N on one exponential server: X = 1/S,
    and Little's law N = X * R within the run's interval."""
    sim = Simulation(3)
    dev = build_device(_queue({"dist": "exponential", "mean": "100us"}), "dev", sim.root)
    (res,) = run_fio_compiled(sim, [dev], {**_BASE, "rw": "randread", "iodepth": 8, "number_ios": 200_000})
    r = res.read
    assert r.total_ios == 200_000
    assert dev.completed[0] == 200_000
    _within(r.iops_ci, 1e4)
    n = r.iops * r.lat.mean_ns * 1e-9
    assert n == pytest.approx(8, rel=0.01)


# ------------------------------------------------------------------------------------ differential
@pytest.mark.parametrize(
    "dist",
    [
        {"dist": "exponential", "mean": "200us"},
        {"dist": "lognormal", "mean": "200us", "cv": 0.8},
        {"dist": "erlang", "mean": "200us", "k": 3},
        {"dist": "uniform", "low": "50us", "high": "300us"},
    ],
)
def test_queue_device_identical_to_python(dist):
    job = {**_BASE, "rw": "randwrite", "iodepth": 4, "numjobs": 2, "time_based": 1, "runtime": "3s",
           "ramp_time": "0.5s", "sim_slat": "3us"}  # fmt: skip
    doc = _assert_identical(_queue(dist, servers=2), job)
    assert doc["jobs"][0]["write"]["total_ios"] > 1000


def test_open_loop_identical_to_python():
    for proc in ("poisson", "linear"):
        job = {**_BASE, "rw": "randread", "iodepth": 16, "rate_iops": 3000, "rate_process": proc,
               "runtime": "2s", "ramp_time": "0.2s"}  # fmt: skip
        _assert_identical(_queue({"dist": "exponential", "mean": "250us"}), job)


@pytest.mark.parametrize("qd", [1, 4, 32])
def test_hdd_sptf_randread_identical_to_python(qd):
    job = {**_BASE, "rw": "randread", "iodepth": qd, "number_ios": 3000, "norandommap": 1}
    doc = _assert_identical(HDD, job)
    assert doc["jobs"][0]["read"]["total_ios"] == 3000


@pytest.mark.parametrize(
    "params,job",
    [
        ({"cache": {"write_cache": "volatile"}}, {"rw": "randwrite", "iodepth": 4}),
        ({"cache": {"write_cache": "off"}}, {"rw": "randwrite", "iodepth": 32}),
        ({"queue": {"policy": "fifo"}}, {"rw": "randread", "iodepth": 8}),
        ({}, {"rw": "read", "iodepth": 4, "bs": "64k"}),  # sequential: read look-ahead, stream hits
        ({}, {"rw": "write", "iodepth": 16}),  # sequential writes merge in the write cache
    ],
)
def test_hdd_modes_identical_to_python(params, job):
    spec = {**HDD, "params": params}
    job = {**_BASE, "number_ios": 3000, "ramp_time": "0.2s", **job}
    _assert_identical(spec, job)


# the volatile write cache (the default of most HDD profiles): the core keeps it as arrays
# (devices/hdd/wcache_kernels.py), the Python drive as lists and dicts; these runs pin the two
# together. Small spans with offsets drawn with replacement make writes overwrite and adjoin cached
# extents (also in the destage window) and reads find dirty data; the counters below show each
# mechanism ran, so an identical result is not an identical absence of it.
_WC_SPAN = {"size": "512k", "io_size": "1g", "norandommap": 1}
_WC_CASES = [
    # (drive params, job, counters of Device.stats()["hdd"] that must be > 0 in the run)
    ({}, {"rw": "randwrite", "iodepth": 8, **_WC_SPAN}, ("write_overwrites", "write_coalesced")),
    ({}, {"rw": "randrw", "rwmixread": 50, "iodepth": 16, **_WC_SPAN}, ("dirty_read_hits", "write_coalesced")),
    ({}, {"rw": "randrw", "rwmixread": 30, "iodepth": 1, "fsync": 3, **_WC_SPAN}, ("dirty_read_hits",)),
    ({}, {"rw": "randrw", "rwmixread": 70, "iodepth": 32, "fdatasync": 5, "end_fsync": 1, "bs": "16k"}, ()),
    ({}, {"rw": "randwrite", "iodepth": 32}, ("destaged_extents",)),  # cache full: blocked writes
    ({}, {"rw": "write", "iodepth": 4, "bs": "512"}, ("write_coalesced",)),  # sequential: appends
    ({"cache": {"fua_supported": False}}, {"rw": "randrw", "iodepth": 4, "sync": 1, **_WC_SPAN}, ("write_coalesced",)),
    ({}, {"rw": "randwrite", "iodepth": 4, "sync": 1}, ()),  # FUA honoured: written through
    ({"cache": {"dirty_segments": 0, "write_cache_size": "16k"}},  # bounded by bytes only
     {"rw": "randrw", "iodepth": 8, "bs": "512", "fsync": 3, "end_fsync": 1, "size": "64k", "io_size": "1g",
      "norandommap": 1}, ("write_overwrites",)),
    ({"cache": {"destage": "mixed", "destage_window": 4}},
     {"rw": "randwrite", "iodepth": 32, "bssplit": "512/30:4k/40:64k/30", "size": "1m", "io_size": "1g",
      "norandommap": 1}, ("write_coalesced",)),
]  # fmt: skip


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("case", range(len(_WC_CASES)))
def test_hdd_volatile_write_cache_identical_to_python(case, seed):
    params, job, counters = _WC_CASES[case]
    spec = {**HDD, "params": params}
    (dp, sp, tp), (dc, sc, tc) = _both(spec, {**_BASE, "number_ios": 2500, **job}, seed)
    assert dc == dp
    assert sc == sp
    assert tc == tp
    assert sp["hdd"]["destaged_extents"] > 0  # writes went through the cache
    for c in counters:
        assert sp["hdd"][c] > 0, c
    j = dp["jobs"][0]
    every = job.get("fsync") or job.get("fdatasync")
    if every:  # one flush per N writes; flushes waited for destages, not only the flush overhead
        assert j["sync"]["total_ios"] == pytest.approx(j["write"]["total_ios"] / every, abs=2)
        assert j["sync"]["lat_ns"]["max"] > j["sync"]["lat_ns"]["min"]


_WC_OFF = {**HDD, "params": {"cache": {"write_cache": "off"}}}


@pytest.mark.parametrize(
    "job",
    [
        {"rw": "randrw", "rwmixread": 70, "iodepth": 4, "number_ios": 4000},
        {"rw": "rw", "rwmixread": 30, "iodepth": 4, "number_ios": 4000, "bs": "16k"},  # a position per direction
        {"rw": "randwrite", "fsync": 4, "iodepth": 8, "number_ios": 3000},
        {"rw": "randrw", "fdatasync": 3, "end_fsync": 1, "ioengine": "psync", "number_ios": 3000, "ramp_time": "0.1s"},
        {"rw": "randwrite", "end_fsync": 1, "sync": 1, "iodepth": 4, "time_based": 1, "runtime": "1s", "sim_slat": "5us"},
    ],
)
def test_mixed_rw_and_flushes_identical_to_python(job):
    doc = _assert_identical(_queue({"dist": "exponential", "mean": "200us"}, servers=2), {**_BASE, **job})
    j = doc["jobs"][0]
    if job["rw"].endswith("rw"):  # both directions ran, in about the asked proportion
        n = j["read"]["total_ios"] + j["write"]["total_ios"]
        assert abs(j["read"]["total_ios"] / n - job.get("rwmixread", 50) / 100) < 0.05
    if job.get("fsync") or job.get("fdatasync"):  # one flush per N writes
        every = job.get("fsync") or job.get("fdatasync")
        assert j["sync"]["total_ios"] == pytest.approx(j["write"]["total_ios"] / every, abs=1)


def test_hdd_mixed_rw_with_flushes_identical_to_python():
    job = {**_BASE, "rw": "randrw", "rwmixread": 50, "fsync": 8, "end_fsync": 1, "iodepth": 8, "number_ios": 2000}
    doc = _assert_identical(_WC_OFF, job)
    # write cache off: a flush has nothing to wait for, its latency is the drive's flush overhead
    sync = doc["jobs"][0]["sync"]
    assert sync["total_ios"] == pytest.approx(doc["jobs"][0]["write"]["total_ios"] / 8, abs=1)
    assert sync["lat_ns"]["min"] == sync["lat_ns"]["max"]


@pytest.mark.parametrize(
    "spec,job",
    [
        (_WC_OFF, {"rw": "randread", "bssplit": "4k/50:16k/30:64k/20", "iodepth": 8}),
        (_WC_OFF, {"rw": "write", "bsrange": "4k-32k", "iodepth": 4}),  # sequential: offsets follow the sizes
        (_queue({"dist": "exponential", "mean": "100us"}), {"rw": "randwrite", "bssplit": "8k/10:4k/90", "fsync": 5}),
    ],
)
def test_variable_block_sizes_identical_to_python(spec, job):
    doc = _assert_identical(spec, {**_BASE, "number_ios": 3000, **job})
    j = doc["jobs"][0]
    side = j["read"] if job["rw"].endswith("read") else j["write"]
    assert side["total_ios"] == 3000
    # sizes vary: the bytes are not a whole multiple of the smallest size times the IO count
    assert side["io_bytes"] != 3000 * 4096


def test_hotband_writes_identical_to_python():
    """vdbench's hot band: a write lands 1 % of the band further on than a read would, so the
    generator is asked per IO with the direction (its raw block of offsets is not the write's)."""
    job = {**_BASE, "rw": "randwrite", "random_distribution": "sim_hotband", "iodepth": 4, "number_ios": 2000}
    _assert_identical(_WC_OFF, job)


@pytest.mark.parametrize("spec", [_queue({"dist": "exponential", "mean": "200us"}), _WC_OFF])
def test_stonewall_groups_identical_to_python(spec):
    """Stonewalled groups run one after another (the next starts when the last thread of the group
    before finishes), with their own windows and device statistics."""
    jobs = [
        {**_BASE, "name": "a", "rw": "randread", "iodepth": 4, "number_ios": 1500, "numjobs": 2},
        {**_BASE, "name": "b", "rw": "randwrite", "iodepth": 2, "time_based": 1, "runtime": "0.5s", "stonewall": 1,
         "ramp_time": "0.1s"},
        {**_BASE, "name": "c", "rw": "read", "iodepth": 1, "number_ios": 800, "stonewall": 1, "startdelay": "0.05s"},
        {**_BASE, "name": "d", "rw": "randread", "iodepth": 2, "number_ios": 300, "startdelay": "0.01s-0.2s",
         "numjobs": 2},  # a range: a draw per thread
    ]  # fmt: skip
    outs = []
    for runner in (run_fio, run_fio_compiled):
        sim = Simulation(4)
        dev = build_device(spec, "dev", sim.root)
        res = runner(sim, [dev], jobs)
        outs.append((to_fio_json(res, {}, time_str="t", sim_meta={}, timestamp=0), dev.stats(), sim.now))
    assert outs[0] == outs[1]
    docs = outs[0][0]["jobs"]
    assert [j["read"]["total_ios"] for j in docs] == [1500, 1500, 0, 800, 300, 300]
    assert docs[2]["write"]["total_ios"] > 20
    # in sequence: the device's statistics are those of the last group alone
    assert outs[0][1]["completed"]["read"] == 1400 and outs[0][1]["completed"]["write"] == 0


def test_numjobs_on_two_hdds_identical_to_python():
    sims = []
    for runner in (run_fio, run_fio_compiled):
        sim = Simulation(5)
        devs = [build_device(HDD, f"d{i}", sim.root) for i in range(2)]
        jobs = [{**_BASE, "name": f"j{i}", "rw": "randread", "iodepth": 8, "numjobs": 2, "number_ios": 1500,
                 "group_reporting": 1} for i in range(2)]  # fmt: skip
        res = runner(sim, lambda job, devs=devs: [devs[int(job.name[1])]], jobs)
        sims.append((to_fio_json(res, {}, time_str="t", sim_meta={}, timestamp=0), [d.stats() for d in devs]))
    assert sims[0] == sims[1]


# the block layer (devices/blocklayer.py: tags, mq-deadline/bfq/none, flush merging and skipping)
# in front of a drive or a queue device: fio JSON, the layer's and the device's statistics identical
_Q2 = _queue({"dist": "exponential", "mean": "200us"}, servers=2)
_BLK_CASES = [
    # (device, block layer config, job, block-layer counters that must be > 0)
    (HDD, {}, {"rw": "randread", "iodepth": 32}, ("mean_read_wait_s",)),
    (HDD, {}, {"rw": "randread", "iodepth": 128}, ("tag_waits",)),  # more in flight than nr_requests
    (HDD, {}, {"rw": "randrw", "iodepth": 32, "fsync": 4, "numjobs": 3}, ("flushes_merged", "device_flushes")),
    (HDD, {}, {"rw": "randrw", "iodepth": 16, "fsync": 2, "numjobs": 4, **_WC_SPAN}, ("flushes_merged",)),
    (_WC_OFF, {}, {"rw": "randrw", "iodepth": 64, "fsync": 8}, ("flushes_skipped",)),  # no write cache: skipped
    (HDD, {"scheduler": "none"}, {"rw": "randrw", "iodepth": 64, "fsync": 8}, ("device_flushes",)),
    (HDD, {"scheduler": "bfq"}, {"rw": "randrw", "iodepth": 48, "rwmixread": 70, "numjobs": 2}, ("mean_read_wait_s",)),
    (HDD, {"queue_depth": 4, "nr_requests": 8}, {"rw": "write", "iodepth": 32, "bs": "64k", "numjobs": 2},
     ("tag_waits",)),
    (_Q2, {}, {"rw": "randrw", "iodepth": 8, "fsync": 1, "numjobs": 6, "ioengine": "psync"}, ("flushes_merged",)),
    (_Q2, {"queue_depth": 2, "writes_starved": 0, "fifo_batch": 3, "read_expire": "1ms"},
     {"rw": "randrw", "iodepth": 16, "numjobs": 2}, ("mean_read_wait_s",)),  # deadlines expire, short batches
    # ramp_time: the layer's statistics restart at the ramp's end (BlockLayer.reset_stats), the drive's do not
    (HDD, {}, {"rw": "randrw", "iodepth": 48, "fsync": 4, "numjobs": 2, "ramp_time": "0.3s"}, ("flushes_merged",)),
    (HDD, {}, {"rw": "randwrite", "iodepth": 8, "time_based": 1, "runtime": "1s", "ramp_time": "0.2s",
               "end_fsync": 1}, ("device_flushes",)),
]  # fmt: skip


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("case", range(len(_BLK_CASES)))
def test_block_layer_identical_to_python(case, seed):
    from simulator.devices.blocklayer import BlockLayer, BlockLayerConfig

    spec, blk, job, counters = _BLK_CASES[case]
    job = {**_BASE, "number_ios": 2000, **job}
    out = []
    for runner in (run_fio, run_fio_compiled):
        sim = Simulation(seed)
        dev = build_device(spec, "dev", sim.root)
        bl = BlockLayer("blk", dev, dev, BlockLayerConfig(**blk))
        res = runner(sim, [bl], job)
        out.append((to_fio_json(res, {}, time_str="t", sim_meta={}, timestamp=0), bl.stats(), dev.stats(), sim.now))
    assert out[1] == out[0]
    b = out[0][1]["blocklayer"]
    for c in counters:  # the mechanism the case is about ran
        assert b[c] > 0, c
    if "ramp_time" in job:
        return
    # exactly once: every IO the layer completed went through the device once; flushes only those sent
    for op in ("read", "write"):
        assert out[0][1]["completed"][op] == out[0][2]["completed"][op]
    assert out[0][2]["completed"]["flush"] == b["device_flushes"]


# the dual-actuator drive (devices/hdd/drive.py DualActuatorHDD): two HDD mechanisms sharing one
# host link; a request splits at the half of the LBAs, a FLUSH goes to both. The shipped MACH.2
# profile has a media cache (not covered), so these runs set its cache to volatile or off.
_DUAL = {"profile": "hdd/seagate_exos_2x14", "params": {"cache": {"write_cache": "volatile"}}}
_DUAL_OFF = {"profile": "hdd/seagate_exos_2x14", "params": {"cache": {"write_cache": "off"}}}
_HALF = 7_000_000_000_000  # bytes per actuator of the 2X14 (checked in the test)
_DUAL_CASES = [
    # (drive, target: "dev" / actuator index, block layer in front, job)
    (_DUAL, "dev", False, {"rw": "randrw", "iodepth": 16, "fsync": 4, "bs": "64k"}),
    (_DUAL, "dev", True, {"rw": "randrw", "iodepth": 32, "fsync": 8}),
    (_DUAL, 0, False, {"rw": "randwrite", "iodepth": 8, **_WC_SPAN}),  # one LUN alone (SAS exposure)
    (_DUAL, 1, True, {"rw": "randrw", "iodepth": 8, "fdatasync": 2}),
    (_DUAL_OFF, "dev", False, {"rw": "randrw", "iodepth": 16, "numjobs": 2, "bs": "256k", "ramp_time": "0.1s"}),
    # sequential across the middle: 1 MiB requests straddle the two actuators (two parts each)
    (_DUAL_OFF, "dev", False, {"rw": "rw", "iodepth": 8, "bs": "1m", "offset": _HALF - 3 * 2**19, "size": "64m"}),
    (_DUAL, "dev", True, {"rw": "write", "iodepth": 4, "bs": "768k", "offset": _HALF - 2**20, "size": "32m",
                          "end_fsync": 1}),
    # SATA MACH.2: one device, the first half of the LBAs on one actuator, the second on the other
    ({**_DUAL, "params": {**_DUAL["params"], "actuators": {"exposure": "lba_halves"}}}, "dev", True,
     {"rw": "randrw", "iodepth": 16, "fsync": 16}),
]  # fmt: skip


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("case", range(len(_DUAL_CASES)))
def test_dual_actuator_identical_to_python(case, seed):
    from simulator.devices.blocklayer import BlockLayer

    spec, target, blk, job = _DUAL_CASES[case]
    job = {**_BASE, "number_ios": 1500, **job}
    out = []
    for runner in (run_fio, run_fio_compiled):
        sim = Simulation(seed)
        dev = build_device(spec, "dev", sim.root)
        assert dev._half == _HALF
        tgt = dev if target == "dev" else dev.actuators[target]
        if blk:
            tgt = BlockLayer("blk", tgt, tgt)
        res = runner(sim, [tgt], job)
        out.append((to_fio_json(res, {}, time_str="t", sim_meta={}, timestamp=0), tgt.stats(), dev.stats(), sim.now))
    assert out[1] == out[0]
    drive = out[0][2]
    acts = [a["completed"] for a in drive["actuators"]]
    if target == "dev" and "ramp_time" not in job:
        # every request reached the actuator(s) its LBAs are on; a FLUSH reached both
        assert acts[0]["flush"] == acts[1]["flush"] == drive["completed"]["flush"]
        if "offset" in job:  # straddling requests: more parts than requests
            assert acts[0]["write"] + acts[1]["write"] > drive["completed"]["write"] > 0
        else:
            assert acts[0]["write"] + acts[1]["write"] == drive["completed"]["write"]
            assert min(acts[0]["read"] + acts[0]["write"], acts[1]["read"] + acts[1]["write"]) > 0
    elif target != "dev":
        assert acts[1 - target]["write"] == acts[1 - target]["read"] == 0  # the other LUN idles


@pytest.mark.parametrize(
    "spec,blk,job",
    [
        (HDD, False, {"rw": "randtrim", "iodepth": 8}),  # libaio: the thread waits for each trim (fio)
        (HDD, True, {"rw": "trim", "iodepth": 4, "bs": "64k"}),
        (_Q2, True, {"rw": "randtrim", "iodepth": 8, "ioengine": "psync", "numjobs": 2}),
    ],
)
def test_trim_jobs_identical_to_python(spec, blk, job):
    from simulator.devices.blocklayer import BlockLayer

    out = []
    for runner in (run_fio, run_fio_compiled):
        sim = Simulation(3)
        dev = build_device(spec, "dev", sim.root)
        tgt = BlockLayer("blk", dev, dev) if blk else dev
        res = runner(sim, [tgt], {**_BASE, "number_ios": 1500, **job})
        out.append((to_fio_json(res, {}, time_str="t", sim_meta={}, timestamp=0), tgt.stats(), dev.stats(), sim.now))
    assert out[1] == out[0]
    j = out[0][0]["jobs"][0]
    assert j["trim"]["total_ios"] == 1500 and j["read"]["total_ios"] == j["write"]["total_ios"] == 0
    if job.get("ioengine", "libaio") == "libaio" and not blk:
        # one trim at a time whatever the iodepth: the device never held two
        assert out[0][2]["mean_queue_depth"] <= 1.0 + 1e-9


# ------------------------------------------------------------------------------------ coverage
@pytest.mark.parametrize(
    "spec,job,needle",
    [
        (HDD, {"rw": "randread", "thinktime": "1ms"}, "thinktime"),
        (_queue({"dist": "exponential", "mean": "1ms"}), {"rw": "randrw", "rate_iops": 100}, "rate_iops with rw=randrw"),
        (_queue({"dist": "exponential", "mean": "1ms"}), {"rw": "randwrite", "rate_iops": 100, "fsync": 2}, "rate_iops"),
        (_queue({"dist": "exponential", "mean": "1ms"}), {"rw": "randrw", "bssplit": "4k/50:8k/50"}, "bssplit"),
        (_queue({"dist": "exponential", "mean": "1ms"}), {"rw": "randrw", "random_distribution": "sim_hotband"},
         "HotbandOffsets"),
        ({"kind": "raid", "params": {"level": 0, "members": {"count": 2, "device": _queue({"dist": "exponential", "mean": "1ms"})}}},
         {"rw": "randread"}, "device kind"),
    ],
)
def test_unsupported_features_are_named(spec, job, needle):
    sim = Simulation(1)
    dev = build_device(spec, "dev", sim.root)
    wl = Workload(sim, resolve_jobs({}, [{**_BASE, "number_ios": 10, **job}], "t"), lambda j: [dev])
    why = unsupported(sim, wl)
    assert why is not None and needle in why
    with pytest.raises(Unsupported, match=re.escape(needle)):
        run_fio_compiled(sim, [dev], {**_BASE, "number_ios": 10, **job})


def _cli(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, "-m", "simulator.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=600)  # fmt: skip


def test_cli_engine_compiled_gives_the_same_json(tmp_path):
    jf = tmp_path / "job.fio"
    jf.write_text("[global]\nioengine=libaio\ndirect=1\nbs=4k\niodepth=16\nruntime=2\nramp_time=0.5\ntime_based=1\n[rr]\nrw=randread\n")
    base = ["fio", jf, "-d", "hdd/seagate_st91000640ns", "--no-block-layer", "--output-format", "json"]
    py = _cli(*base)
    co = _cli(*base, "--engine", "compiled")
    assert py.returncode == 0 and co.returncode == 0, co.stderr
    assert co.stdout == py.stdout
    assert json.loads(co.stdout)["jobs"][0]["read"]["total_ios"] > 100
    assert co.stderr == py.stderr  # no fallback message; the same notes (if any) as the Python engine
    # the default: the block layer in front of the drive (covered too)
    blk = ["fio", jf, "-d", "hdd/seagate_st91000640ns", "--output-format", "json"]
    py, co = _cli(*blk), _cli(*blk, "--engine", "compiled")
    assert co.returncode == 0 and co.stdout == py.stdout and co.stderr == py.stderr, co.stderr
    # an SSD (covered too)
    ssd = ["fio", jf, "-d", "ssd/intel_520_60gb", "--output-format", "json"]
    py, co = _cli(*ssd), _cli(*ssd, "--engine", "compiled")
    assert co.returncode == 0 and co.stdout == py.stdout and co.stderr == py.stderr, co.stderr
    # not covered (thinktime): the Python engine runs, and says so
    tf = tmp_path / "think.fio"
    tf.write_text(jf.read_text() + "thinktime=100us\n")
    fb = _cli("fio", tf, "-d", "ssd/intel_520_60gb", "--output-format", "json", "--engine", "compiled")
    assert fb.returncode == 0
    assert "compiled engine does not cover" in fb.stderr and "thinktime" in fb.stderr
    bad = _cli(*base, "--engine", "fast")
    assert bad.returncode == 2 and "--engine" in bad.stderr


def test_run_until_control_points_do_not_change_the_run():
    """Stopping at control points (run_until t) and going on gives the run an uninterrupted call gives;
    each stop is at or before its time, with no event of a later time processed."""
    from simulator.core import CompiledRun

    job = {**_BASE, "rw": "randread", "iodepth": 8, "time_based": 1, "runtime": "2s", "ramp_time": "0.3s"}
    docs = []
    for stops in ((), (0.1, 0.3, 0.30001, 1.0, 1.7)):
        sim = Simulation(2)
        dev = build_device(HDD, "dev", sim.root)
        wl = Workload(sim, resolve_jobs({}, [job], "t"), lambda j, dev=dev: [dev])
        run = CompiledRun(sim, wl)
        for t in stops:
            run.run(until=t)
            assert run.st.gf[0] <= t < run.st.ht[0]  # now <= t < the next event's time
        run.run()
        run.finish()
        docs.append(to_fio_json(wl.results(), {}, time_str="t", sim_meta={}, timestamp=0))
    assert docs[0] == docs[1]
    assert docs[0]["jobs"][0]["read"]["total_ios"] > 50


@pytest.mark.parametrize("bins", [2, 7, 32, 4096])
def test_firmware_seek_estimate_is_the_first_bin_at_or_above_the_distance(bins):
    """The seek-table estimate the SPTF choice scores (found through a bucket index, no search) is
    the estimate of the first bin whose edge is >= the distance, for every distance of the stroke."""
    import numpy as np
    from numba import njit

    from simulator.devices.hdd import kernels as K

    spec = {**HDD, "params": {"queue": {"position_estimate": "table", "estimate_bins": bins}}}
    dev = build_device(spec, "dev", Simulation(1).root)
    et = dev._et
    nb = int(np.isfinite(et[0]).sum())
    edges = et[0, :nb]

    @njit
    def est(ds, w, par, et):
        out = np.empty(ds.shape[0])
        for i in range(ds.shape[0]):
            out[i] = K.est_move(0.0, 0.0, ds[i], 1.0, w, par, et)
        return out

    ds = np.arange(1, dev.geo.ncyl, dtype=float)
    for w in (0, 1):
        want = et[1 + w, np.minimum(np.searchsorted(edges, ds, side="left"), nb - 1)]
        assert np.array_equal(est(ds, w, dev._par, et), want)
    assert est(np.zeros(1), 0, dev._par, et)[0] == dev._par[K.P_HSR]  # same cylinder, other head


def test_window_seq_is_the_kth_oldest_host_command():
    """The HDD kernel the core calls (reorder window) selects without allocating; it must still
    return the k-th smallest arrival number among host rows (destage rows excluded)."""
    import numpy as np

    from simulator.devices.hdd import kernels as K

    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(1, 50))
        cq = np.zeros((n, K.NCOL))
        cq[:, K.C_SEQ] = rng.permutation(1000)[:n]
        cq[:, K.C_KIND] = rng.random(n) < 0.3
        win, mode = float(rng.integers(0, 20)), int(rng.integers(0, 3))
        host = np.sort(cq[cq[:, K.C_KIND] == 0, K.C_SEQ])
        want = 1e300 if (win <= 0 or mode == 2 or len(host) <= int(win)) else host[int(win) - 1]
        assert K._window_seq(n, cq, win, mode) == want


def test_a_drive_left_with_dirty_data_is_not_run_again():
    """A compiled run leaves the drive's queue and cache in its arrays: a second run on the same drive
    (persist_state) is refused by name rather than started on a drive that looks empty."""
    sim = Simulation(1)
    dev = build_device(HDD, "dev", sim.root)
    run_fio_compiled(sim, [dev], {**_BASE, "rw": "randwrite", "iodepth": 8, "number_ios": 500})
    assert dev.stats()["hdd"]["dirty_bytes"] > 0  # jobs end with writes still cached
    from simulator.core.run import _dev_kind

    kind, why = _dev_kind(dev)
    assert kind < 0 and "holds state from an earlier run" in why
    fresh = build_device(HDD, "dev2", sim.root)
    assert _dev_kind(fresh) == (1, None)  # the same profile, untouched: covered
