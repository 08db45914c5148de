"""HDD firmware as drives do it (issue 10): bounded rotational position ordering, write-cache modes
(volatile with dirty segments, media cache), the block layer in front of a plain device, and the
MSER steady-state verdict. Every run goes through the one IO driver, simulator.workloads.runner."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from simulator.devices.base import Op
from simulator.devices.blocklayer import BlockLayer, BlockLayerConfig
from simulator.devices.hdd.sweep import run_job
from simulator.devices.registry import build_device
from simulator.engine import Simulation
from simulator.metrics.steady import detect, detect_series
from simulator.workloads.options import resolve_jobs
from simulator.workloads.runner import Workload

SATA = "hdd/seagate_st91000640ns"
MACH2 = "hdd/seagate_exos_2x14"
#: the settings under which the drive behaves as before issue 10 (ideal SPTF, byte-bounded cache)
IDEAL = {"queue": {"reorder_window": 0, "position_estimate": "exact", "decision_overhead": "0s"},
         "cache": {"dirty_segments": 0, "destage_window": 64}}


def merged(*parts: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in parts:
        for k, v in p.items():
            out.setdefault(k, {}).update(v)
    return out


def iops(rw: str, qd: int, params: dict[str, Any], runtime: str = "20s", ramp: str = "2s", **job: Any) -> tuple[float, float]:
    """(IOPS, 95 % half-width from the run's batch means)."""
    r = run_job(SATA, {"rw": rw, "iodepth": qd, "runtime": runtime, "ramp_time": ramp, **job}, params=params, seed=3)
    d = r.dir(rw)
    return d.iops, d.iops_ci.half_width


def _run_raw(job: dict[str, Any], params: dict[str, Any]) -> list[tuple[int, float]]:
    sim = Simulation(7)
    dev = build_device({"profile": SATA, "params": merged(params, IDEAL)}, "hdd", sim.root)
    jobs = resolve_jobs({}, [{"name": "j", "bs": "4k", "ioengine": "libaio", "direct": 1, "time_based": None, **job}], "t")
    wl = Workload(sim, jobs, lambda _j: [dev])
    sim.run(until=wl.start())
    r = wl.results()[0]
    return [(d.total_ios, round(d.lat.mean_ns, 3)) for d in r.dirs[:2]]


def test_ideal_settings_reproduce_the_model_before_firmware_limits():
    """Regression: with the ideal settings the drive gives exactly what the model gave before the
    firmware limits existed (figures from commit 668dcfc, same seed, same jobs)."""
    assert _run_raw({"rw": "randread", "iodepth": 32, "runtime": "10s"}, {}) == [(2395, 134457708.73), (0, 0.0)]
    assert _run_raw({"rw": "randrw", "rwmixread": 70, "iodepth": 8, "runtime": "10s"},
                    {"cache": {"write_cache": "volatile"}}) == [(1560, 51336271.187), (632, 209053.832)]
    assert _run_raw({"rw": "randwrite", "iodepth": 4, "runtime": "10s"},
                    {"cache": {"write_cache": "off"}}) == [(0, 0.0), (1082, 37037257.28)]


def test_rpo_beats_fifo_and_grows_with_the_reorder_window():
    """Random reads at QD32: throughput never falls as the firmware scores more commands (within the
    runs' CIs), and full-window RPO beats FIFO by more than both CIs."""
    res = {}
    for w in (1, 2, 8, 0):  # 0 = every queued command
        res[w] = iops("randread", 32, {"queue": {"reorder_window": w}})
    fifo = iops("randread", 32, {"queue": {"policy": "fifo"}})
    order = [1, 2, 8, 0]
    for a, b in itertools.pairwise(order):
        (ma, ha), (mb, hb) = res[a], res[b]
        assert mb >= ma - (ha + hb), (a, b, res)
    assert res[0][0] > fifo[0] + res[0][1] + fifo[1]
    assert res[0][0] > 1.5 * res[1][0]  # scoring 31 commands instead of 1 is worth far more than noise
    # a window of one command is FIFO in all but name
    assert abs(res[1][0] - fifo[0]) <= 3 * (res[1][1] + fifo[1])


def test_coarse_estimate_and_decision_time_cost_throughput():
    """The firmware's table estimate (with guard band) and decision time never beat exact SPTF."""
    ideal = iops("randread", 16, IDEAL)
    fw = iops("randread", 16, merged(IDEAL, {"queue": {"position_estimate": "table", "estimate_margin": "0.4ms",
                                                        "decision_overhead": "0.1ms"}}))
    assert fw[0] < ideal[0] - (ideal[1] + fw[1])


def test_seek_profile_estimate_follows_the_curve_and_never_exceeds_the_rounded_up_table():
    """The firmware's seek profile (position_estimate: profile) reads the sampled table by linear
    interpolation: at every distance it is at most the rounded-up band value (table) and within 1 %
    of the drive's own seek curve (chord of a concave curve, 32 geometric bands); the rounded-up
    table overstates mid-band seeks by far more (the cause of the 7.2K QD16-32 read deficit)."""
    import numpy as np

    from simulator.devices.hdd import kernels as K

    sim = Simulation(1)
    dev = build_device({"profile": SATA}, "hdd", sim.root)
    par = dev._par.copy()
    et = dev._et
    dmax = float(et[0][np.isfinite(et[0])].max())  # the full stroke (edges beyond the table are +inf)
    ds = np.unique(np.geomspace(2.0, dmax, 400).round())
    exact = K.seek_curve(ds, 0, dev._sk, dev._tt)
    got = {}
    for mode in (1.0, 2.0):
        par[K.P_EST] = mode
        got[mode] = np.array([K.est_move(0.0, 0.0, d, 0.0, 0, par, et) for d in ds])
    assert np.all(got[2.0] <= got[1.0] + 1e-12)
    assert np.max(np.abs(got[2.0] / exact - 1)) < 0.01
    assert np.max(got[1.0] / exact - 1) > 0.05  # the rounded-up table is coarse by construction


def test_estimate_quality_orders_throughput():
    """Random reads at QD16 with the same guard band: the interpolated profile gives more IOPS than
    the rounded-up table and no more than exact estimates (within the runs' CIs)."""
    q = {"estimate_margin": "0.4ms", "decision_overhead": "0.05ms"}
    res = {m: iops("randread", 16, merged(IDEAL, {"queue": {**q, "position_estimate": m}})) for m in ("table", "profile")}
    ex = iops("randread", 16, merged(IDEAL, {"queue": {"position_estimate": "exact", "decision_overhead": "0.05ms"}}))
    (mt, ht), (mp, hp) = res["table"], res["profile"]
    assert mp > mt + ht + hp, res
    assert mp <= ex[0] + ex[1] + hp, (res, ex)


def test_write_verify_adds_one_revolution_per_media_write_and_none_to_reads():
    """geometry.write_verify_revolutions: the same dispatch (same head position, angle, command) ends
    exactly k revolutions later for a write, and unchanged for a read."""
    import numpy as np

    from simulator.devices.hdd import kernels as K

    sim = Simulation(1)
    dev = build_device({"profile": SATA, "params": {"geometry": {"write_verify_revolutions": 1}}}, "hdd", sim.root)
    assert dev._par[K.P_WV] == 1.0
    ends = {}
    for w in (0.0, 1.0):
        for wv in (0.0, 1.0, 2.0):
            par = dev._par.copy()
            par[K.P_WV] = wv
            cq = np.zeros((4, K.NCOL))
            seg = np.full((4, 3), -1.0)
            K.enqueue(cq, 0, 123456.0, 8.0, w, 0.0, 1.0, 0.0, 0.0, 0.0, dev._zt, par)
            _i, _k, _t0, _xs, tend = K.dispatch(0.0, 1, cq, dev._zt, par, dev._sk, dev._tt, seg, 0, dev._et)
            ends[w, wv] = tend
    T = dev.rev_time
    assert ends[1.0, 1.0] - ends[1.0, 0.0] == pytest.approx(T, rel=1e-9)
    assert ends[1.0, 2.0] - ends[1.0, 0.0] == pytest.approx(2 * T, rel=1e-9)
    assert ends[0.0, 2.0] == ends[0.0, 0.0]


def test_sustained_cached_write_rate_is_bounded_by_destage_capacity():
    """Write cache on, cache full after the ramp: host writes cannot go faster than the mechanism
    destages them; with 16 dirty segments that is at most the rate of random writes with 16
    candidates in the drive queue and the cache off (the same reordering problem without a cache)."""
    c = {"cache": {"write_cache": "volatile", "dirty_segments": 16, "destage_window": 16}}
    wce, hw = iops("randwrite", 4, c, runtime="30s", ramp="5s")
    off, ho = iops("randwrite", 16, {"cache": {"write_cache": "off"}}, runtime="30s", ramp="5s")
    assert wce <= off + hw + ho
    # and the queue depth above the cache does not change the sustained rate (flat over QD)
    wce32, h32 = iops("randwrite", 32, c, runtime="30s", ramp="5s")
    assert abs(wce32 - wce) <= 3 * (hw + h32)


def test_media_cache_absorbs_writes_until_full_then_cleaning_sets_the_rate():
    """Media cache: writes are appended (fast) until the region is full; then the sustained rate is
    the cleaning rate, at most the destage capacity with the cleaning window."""
    mc = {"cache": {"write_cache": "media_cache", "media_cache_size": "6MiB", "dirty_segments": 16,
                    "destage_window": 16, "cleaning_watermark": 0.5}}
    r = run_job(SATA, {"rw": "randwrite", "iodepth": 4, "runtime": "40s"}, params=mc, seed=3)
    d = r.dir("randwrite")
    per_s = d.series.n / d.series.period
    early, late = per_s[:2].mean(), per_s[-20:].mean()
    assert early > 5 * late  # appends are sequential: far faster than cleaning home
    off, ho = iops("randwrite", 16, {"cache": {"write_cache": "off"}}, runtime="30s", ramp="5s")
    assert late <= off + ho + 0.1 * off
    st = r.device.stats()["hdd"]
    assert st["media_cache_appends"] > 0 and st["destaged_extents"] > 0
    assert st["media_cache_bytes"] <= 6 * 2**20 and st["dirty_bytes"] <= 64 * 2**20


def test_media_cache_flush_waits_only_for_the_append():
    """FLUSH after cached writes: with a media cache it waits for the append (a short sequential
    write), with a plain volatile cache for the destage home (random writes)."""
    def flush_lat(mode: dict[str, Any]) -> float:
        r = run_job(SATA, {"rw": "randwrite", "iodepth": 1, "runtime": "10s", "fsync": 8}, params=mode, seed=3)
        return r.result.sync.mean_ns / 1e6
    vol = flush_lat({"cache": {"write_cache": "volatile", "dirty_segments": 16}})
    mc = flush_lat({"cache": {"write_cache": "media_cache", "media_cache_size": "1GiB", "dirty_segments": 16}})
    assert mc < 0.5 * vol


class _Probe:
    """Wraps a device's submit: the most requests outstanding at it, and completions per request."""

    def __init__(self, dev: Any):
        self.dev = dev
        self.inner = dev.submit
        self.now = 0
        self.max = 0
        self.fired: dict[int, int] = {}
        self.submitted = 0
        dev.submit = self.submit

    def submit(self, req: Any) -> Any:
        ev = self.inner(req)
        self.now += 1
        self.submitted += 1
        self.max = max(self.max, self.now)
        key = id(req)
        self.fired[key] = 0

        def done(_ev: Any, key: int = key) -> None:
            self.fired[key] += 1
            self.now -= 1

        ev.callbacks.append(done)
        return ev


@pytest.mark.parametrize("scheduler,qdepth", [("mq-deadline", 4), ("none", 1), ("bfq", 31)])
def test_block_layer_never_exceeds_queue_depth_and_every_io_completes_once(scheduler, qdepth):
    sim = Simulation(5)
    dev = build_device({"profile": SATA, "params": {"cache": {"write_cache": "volatile"}}}, "hdd", sim.root)
    probe = _Probe(dev)
    blk = BlockLayer("blk", dev, dev, BlockLayerConfig(scheduler=scheduler, queue_depth=qdepth))
    jobs = resolve_jobs({}, [{"name": "j", "rw": "randrw", "bs": "4k", "iodepth": 64, "ioengine": "libaio", "direct": 1,
                              "time_based": None, "runtime": "5s", "fsync": 16}], "t")
    wl = Workload(sim, jobs, lambda _j: [blk])
    sim.run(until=wl.start())
    sim.run(until=sim.env.now + 30.0)  # drain: every request submitted has completed
    assert probe.submitted > 200
    assert probe.max <= qdepth
    assert set(probe.fired.values()) == {1}
    res = wl.results()[0]
    done = dev.completed[Op.READ] + dev.completed[Op.WRITE]
    assert done + dev.completed[Op.FLUSH] == probe.submitted
    assert done >= res.dirs[0].total_ios + res.dirs[1].total_ios  # the measured ones, plus any in the ramp/tail
    assert blk.stats()["blocklayer"]["queue_depth"] == qdepth


def test_every_io_completes_exactly_once_with_a_media_cache_on_a_dual_actuator():
    sim = Simulation(9)
    dev = build_device({"profile": MACH2}, "mach2", sim.root)
    probes = [_Probe(a) for a in dev.actuators]
    jobs = resolve_jobs({}, [{"name": "j", "rw": "randrw", "bs": "16k", "iodepth": 16, "ioengine": "libaio", "direct": 1,
                              "time_based": None, "runtime": "4s", "fsync": 4}], "t")
    wl = Workload(sim, jobs, lambda _j: [dev])
    sim.run(until=wl.start())
    sim.run(until=sim.env.now + 60.0)
    for p in probes:
        assert p.submitted > 50
        assert set(p.fired.values()) == {1}


def test_default_block_layer_matches_linux_on_ahci():
    """Kernel defaults: a SATA drive shows queue_depth 31 (libata), nr_requests 64 with mq-deadline
    (2 x the tag set of 32), 32 with none; setting queue_depth 1 keeps nr_requests."""
    sim = Simulation(1)
    dev = build_device({"profile": SATA}, "hdd", sim.root)
    b = BlockLayer("blk", dev, dev, BlockLayerConfig())
    assert (b.qdepth, b.nr_requests) == (31, 64)
    b1 = BlockLayer("blk1", dev, dev, BlockLayerConfig(queue_depth=1))
    assert (b1.qdepth, b1.nr_requests) == (1, 64)
    bn = BlockLayer("blkn", dev, dev, BlockLayerConfig(scheduler="none"))
    assert bn.nr_requests == 32


def test_steady_state_flags_a_cache_filling_run_and_accepts_a_stationary_one():
    fill = run_job(SATA, {"rw": "randwrite", "iodepth": 4, "runtime": "30s"},
                   params={"cache": {"write_cache": "volatile", "buffer_size": "256MiB", "dirty_segments": 0}}, seed=3)
    d = fill.dir("randwrite")
    st = detect_series(d.series, d.series.t0 + d.runtime_s)
    assert st is not None and st.steady is False
    assert st.mean_all > 2 * st.mean_after and st.warmup_s > 0
    still = run_job(SATA, {"rw": "randread", "iodepth": 4, "runtime": "30s", "ramp_time": "2s"}, seed=3)
    d = still.dir("randread")
    st = detect_series(d.series, d.series.t0 + d.runtime_s)
    assert st is not None and st.steady is True and abs(st.bias) < 0.05


def test_mser_oracles():
    """Synthetic series: a step down at 70 % of the run is not steady; white noise is; too short is
    no verdict."""
    import numpy as np

    rng = np.random.default_rng(1)
    noise = 100 + rng.normal(0, 5, 200)
    assert detect(noise, 0.5).steady is True
    late = np.concatenate([np.full(140, 400.0), np.full(60, 100.0)]) + rng.normal(0, 5, 200)
    assert detect(late, 0.5).steady is False
    early = np.concatenate([np.full(10, 400.0), np.full(190, 100.0)]) + rng.normal(0, 5, 200)
    v = detect(early, 0.5)
    # the transient lasts 5 s (10 samples): MSER must cut at least that, and not much more
    assert 5.0 <= v.warmup_s <= 12.5 and v.mean_after == pytest.approx(100, rel=0.05)
    assert v.steady is False  # the reported mean over the whole window is biased by the warm-up
    assert detect(noise[:20], 0.5).steady is None


def test_experiment_reports_a_cache_filling_run_as_not_steady(tmp_path):
    """The verdict reaches summary.csv, the run's JSON, the terminal and a time-series plot."""
    import csv
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    exp = tmp_path / "fill.yaml"
    exp.write_text(
        "name: fill\ndescription: a write cache filling during a short run\nsystem:\n  devices:\n"
        "    - {name: sda, profile: hdd/seagate_st91000640ns, params: {cache: {buffer_size: 256MiB, dirty_segments: 0}},"
        " block_layer: {}}\n"
        "workload:\n  global: {rw: randwrite, bs: 4k, iodepth: 4, time_based: 1, runtime: 30s, filename: sda,"
        " ioengine: libaio, direct: 1}\n  jobs:\n    - {name: w}\n"
    )
    out = tmp_path / "out"
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "MPLBACKEND": "Agg"}
    r = subprocess.run([sys.executable, "-m", "simulator.cli", "run", str(exp), "--out", str(out)],
                       capture_output=True, text=True, env=env, cwd=root, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "has not reached steady state" in r.stdout + r.stderr
    row = next(csv.DictReader((out / "summary.csv").open()))
    assert float(row["write.steady"]) == 0.0 and float(row["write.warmup_s"]) > 0
    doc = json.loads(next((out / "runs").glob("p000_r00.json")).read_text())
    assert doc["sim"]["steady_state"]["write"]["steady"] is False
    png = (out / "warmup_p000_write.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000  # a drawn figure, not an empty file


def test_simrun_fio_block_layer_options(tmp_path):
    """`simrun fio` puts the block layer in front by default; --queue-depth 1 --scheduler none takes
    the drive's tagged queueing away (QD32 then runs at the QD1 rate); a bad scheduler is exit 2."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    job = tmp_path / "qd.fio"
    job.write_text("[global]\nioengine=libaio\ndirect=1\nbs=4k\nrw=randread\ntime_based=1\nruntime=20\n"
                   "filename=/dev/sdb\n[j]\niodepth=32\n")
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "MPLBACKEND": "Agg"}

    def fio(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "simulator.cli", "fio", str(job), "-d", SATA,
                               "--output-format", "json", *extra], capture_output=True, text=True, env=env, cwd=root,
                              timeout=600)

    def iops_of(r: subprocess.CompletedProcess) -> tuple[float, dict]:
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        return doc["jobs"][0]["read"]["iops"], doc["sim"]["devices"][0]

    tagged, dev = iops_of(fio())
    assert dev["blocklayer"]["queue_depth"] == 31 and dev["blocklayer"]["nr_requests"] == 64
    untagged, dev1 = iops_of(fio("--queue-depth", "1", "--scheduler", "none"))
    assert dev1["blocklayer"]["queue_depth"] == 1
    assert tagged > 1.5 * untagged
    one = run_job(SATA, {"rw": "randread", "iodepth": 1, "runtime": "20s"}, seed=1).dir("randread").iops
    assert untagged == pytest.approx(one, rel=0.1)  # FIFO at the drive: the QD1 rate
    bad = fio("--scheduler", "cfq")
    assert bad.returncode == 2 and "--scheduler" in bad.stderr and "Traceback" not in bad.stderr
