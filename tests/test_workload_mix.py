"""Mixed workloads (sim_mix), vdbench's hotband curve and the SNIA Emerald hot band with its
"IOPS at 5 ms mean latency" search. Tolerances: binomial bounds for proportions, Little's law for
the closed loop (mean latency = threads / throughput on one busy server)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from test_workload_support import new_sim, queue_devices, recording_devices, run_jobs

from simulator.devices.base import Op
from simulator.errors import ConfigError
from simulator.workloads.hotband import (
    HOTBAND_STREAMS,
    HOTBAND_XFERSIZES,
    hotband_job,
    iops_at_latency,
    run_hotband,
)
from simulator.workloads.offsets import HOTBAND_CURVE, make_offsets
from simulator.workloads.options import resolve_jobs

AIO = {"ioengine": "libaio", "sim_slat": 0}
KB, MB = 1024, 2**20
Z = 4.0


def binomial_ok(count: int, n: int, p: float) -> bool:
    return abs(count - n * p) <= Z * math.sqrt(n * p * (1 - p)) + 1e-9


MIX = [
    {"weight": 3, "name": "seqw", "options": {"rw": "write", "offset": "50%", "size": "10%", "bs": "64k"}},
    {"weight": 1, "name": "hot", "options": {"rw": "randrw", "rwmixread": 70, "bssplit": "4k/50:8k/50", "size": "25%"}},
]


def test_mix_streams_by_weight_with_their_own_direction_size_and_region():
    sim = new_sim(3)
    devs = recording_devices(sim, [1e-5], capacity="64MiB")
    n = 20000
    run_jobs(AIO, [{"iodepth": 4, "number_ios": n, "sim_mix": MIX}], devs, sim)
    log = [r for _, r in devs["d0"].log]
    assert len(log) == n
    seq = [r for r in log if r.size == 64 * KB]
    hot = [r for r in log if r.size != 64 * KB]
    assert binomial_ok(len(seq), n, 0.75)
    assert all(r.op == Op.WRITE and r.offset >= 32 * MB and r.offset + r.size <= 32 * MB + 6.4 * MB for r in seq)
    # the sequential stream is contiguous within its region (wrapping at its end)
    offs = [r.offset for r in seq]
    assert all(b == a + 64 * KB or b == 32 * MB for a, b in itertools.pairwise(offs))
    reads = sum(r.op == Op.READ for r in hot)
    assert binomial_ok(reads, len(hot), 0.7)
    assert all(r.offset + r.size <= 16 * MB for r in hot)
    assert binomial_ok(sum(r.size == 4 * KB for r in hot), len(hot), 0.5)


def test_mix_options_are_validated_per_stream():
    with pytest.raises(ConfigError) as ei:
        resolve_jobs({}, [{"number_ios": 10, "sim_mix": [{"weight": 1, "options": {"iodepth": 4}}]}], "x.yaml")
    assert ei.value.field == "jobs.0.sim_mix" and "cannot be set per stream" in ei.value.message
    with pytest.raises(ConfigError) as ei:
        resolve_jobs({}, [{"number_ios": 10, "sim_mix": [{"weight": 0, "options": {}}]}], "x.yaml")
    assert "greater than 0" in ei.value.message
    with pytest.raises(ConfigError) as ei:
        resolve_jobs({}, [{"sim_mix": [{"weight": 1, "options": {}}]}], "x.yaml")
    assert "time_based" in ei.value.message
    with pytest.raises(ConfigError) as ei:
        resolve_jobs({}, [{"number_ios": 9, "sim_mix": [{"weight": 1, "options": {"bssplit": "4k/70:8k/40"}}]}], "x.yaml")
    assert "stream 0" in ei.value.message and "more than 100%" in ei.value.message


def test_hotband_curve_and_write_offset():
    """Offsets within a band follow vdbench's access curve (piecewise-uniform between its points,
    modulo the band) and writes land 1 % of the band further on."""
    span = 1000 * 10**6 * 4  # 4000 "MB" of 10^6 bytes: no wrap below 2048 MB
    g = make_offsets(True, 0, span, (4096,) * 3, (0, 1), ("sim_hotband",), np.random.default_rng(5))
    n = 40000
    o = np.array([g.next(0) for _ in range(n)])
    mb, cdf = HOTBAND_CURVE
    xs = np.array(mb, dtype=float) * 1e6

    def expected_below(x):  # P(raw mod span < x) for the piecewise-linear CDF of the raw offset
        k = np.arange(0, int(xs[-1] // span) + 2) * float(span)
        return float(np.sum(np.interp(k + x, xs, cdf) - np.interp(k, xs, cdf)))

    for x in (16e6, 128e6, 1024e6, 3000e6):
        count = int(np.sum(o < x))
        assert binomial_ok(count, n, expected_below(x)), (x, count / n, expected_below(x))
    assert expected_below(16e6) > cdf[1]  # the wrapped tail adds to the curve's own share
    w = make_offsets(True, 0, span, (4096,) * 3, (0, 1), ("sim_hotband",), np.random.default_rng(5))
    ow = np.array([w.next(1) for _ in range(200)])
    nb = (span - 0) // 4096
    assert np.array_equal((ow // 4096 - o[:200] // 4096) % nb, np.full(200, nb // 100))


def test_hotband_definition_adds_up():
    assert sum(s.skew for s in HOTBAND_STREAMS) == pytest.approx(100.0)
    assert sum(p for _, p in HOTBAND_XFERSIZES) == 100
    reads = sum(s.skew * s.rdpct / 100 for s in HOTBAND_STREAMS)
    seq_writes = sum(s.skew for s in HOTBAND_STREAMS if s.access == "seq" and s.rdpct == 0)
    assert reads == pytest.approx(65.8) and seq_writes == pytest.approx(15.0)
    (j,) = resolve_jobs({}, [hotband_job(8, runtime=1.0, region=(0, 50))])
    # sequential streams: one entry each; random ones: one entry per transfer size, aligned to it
    nseq = sum(s.access == "seq" for s in HOTBAND_STREAMS)
    assert j.iodepth == 8 and len(j.sim_mix) == nseq + (len(HOTBAND_STREAMS) - nseq) * len(HOTBAND_XFERSIZES)
    hot1 = next(m for m in j.sim_mix if m.name == "hot1_65536")
    assert (hot1.job.offset, hot1.job.size) == ("5%", "4%")  # (10..18 %) of the first half
    assert hot1.weight == pytest.approx(28 * 20 / 100)


def test_hotband_run_mix_on_a_queue():
    sim_devs = {}

    def make(sim):
        sim_devs["d"] = recording_devices(sim, [1e-4], capacity="8GiB", servers=8)["d0"]
        return [sim_devs["d"]]

    p = run_hotband(make, 8, runtime=2.0, ramp_time=0.0)
    log = [r for _, r in sim_devs["d"].log]
    n = len(log)
    assert n > 20000
    assert binomial_ok(sum(r.op == Op.READ for r in log), n, 0.658)
    assert binomial_ok(sum(r.size == 8 * KB for r in log), n, 0.31)
    assert abs(p.read_fraction - 0.658) < Z * math.sqrt(0.658 * 0.342 / p.ios)
    # the first hot band (10..18 %) holds its stream's 28 %, plus the uniform stream's 8 % of 6 %
    # and the part of the second sequential write stream (12.5..25 %) that overlaps it (3 of 12.5 %)
    cap = 8 * 2**30
    inband = sum(0.10 * cap <= r.offset < 0.18 * cap for r in log)
    assert inband / n > 0.28


def test_iops_at_latency_finds_littles_law_threads():
    """One exponential server (mean 1.1 ms) kept busy by N outstanding IOs: X = 1/S and the mean
    latency is N S (Little's law), so the highest N with mean <= 5 ms is 4 and its IOPS 1/S."""
    s = 1.1e-3

    def make(sim):
        return list(queue_devices(sim, [s], dist="exponential", capacity="8GiB").values())

    r = iops_at_latency(make, target=5e-3, lo=1, hi=16, runtime=40.0, ramp_time=1.0)
    assert r.threads == 4
    p4 = r.points[4]
    assert p4.iops_ci[0] <= 1 / s <= p4.iops_ci[1]
    assert p4.lat_ci[0] <= 4 * s <= p4.lat_ci[1]
    assert r.points[5].mean_lat > 5e-3
