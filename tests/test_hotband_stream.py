"""The hot band as arrays (preconditioning stream, simulator.workloads.hotband.HotbandStreamGen):
the same composition as the fio job of hotband_job -- stream shares by skew, read share per
stream, transfer sizes, offsets inside each stream's band, sequential streams continuing -- with
binomial bounds; and the chunked replay with a steady-state criterion of the app study."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simulator.workloads.hotband import HOTBAND_STREAMS, HOTBAND_XFERSIZES, HotbandStreamGen

Z = 4.0
CAP = 10 * 10**12


def _ok(count: int, n: int, p: float) -> bool:
    return abs(count - n * p) <= Z * math.sqrt(n * p * (1 - p)) + 1e-9


def test_composition_matches_the_hot_band_table():
    n = 200_000
    op, off, size = HotbandStreamGen(CAP, region=(0.0, 50.0), seed=3).take(n)
    assert len(op) == len(off) == len(size) == n
    assert off.min() >= 0 and (off + size).max() <= CAP * 0.5 + 1
    # read share of the whole mix: sum of skew x rdpct
    tot = sum(st.skew for st in HOTBAND_STREAMS)
    p_read = sum(st.skew * st.rdpct / 100 for st in HOTBAND_STREAMS) / tot
    assert _ok(int((op == 0).sum()), n, p_read)
    # transfer sizes
    psum = sum(p for _, p in HOTBAND_XFERSIZES)
    for b, p in HOTBAND_XFERSIZES:
        assert _ok(int((size == b).sum()), n, p / psum), b
    # the last eighth of the region holds sequential-read stream 5 (skew 5) and the uniform stream's
    # share of it (skew 6 x 1/8); no hot band reaches it (hot4 ends at 88 %)
    last = off >= CAP * 0.5 * 0.875
    p_last = (5 + 6 / 8) / tot
    assert _ok(int(last.sum()), n, p_last)
    # ... and its writes are the uniform stream's half
    assert _ok(int((op[last] == 1).sum()), int(last.sum()), (6 / 8 * 0.5) / (5 + 6 / 8))


def test_sequential_streams_continue_across_takes():
    g = HotbandStreamGen(CAP, seed=5, streams=HOTBAND_STREAMS[:1])  # one sequential write stream
    _, o1, s1 = g.take(1000)
    _, o2, _ = g.take(10)
    assert np.all(o1[1:] == o1[:-1] + s1[:-1])  # each IO where the previous one ended
    assert o2[0] == o1[-1] + s1[-1]


def test_hot_bands_concentrate_near_their_start():
    """vdbench's curve: 32.6 % of a hot band's accesses fall within its first 1024 MB (HOTBAND_CURVE)."""
    hot1 = [st for st in HOTBAND_STREAMS if st.name == "hot1"]
    op, off, _ = HotbandStreamGen(CAP, seed=2, streams=hot1).take(100_000)
    lo = CAP * hot1[0].band[0] / 100
    reads = off[op == 0]
    assert _ok(int((reads < lo + 1024e6).sum()), reads.size, 0.32645)


def test_same_seed_same_stream_and_bad_region():
    a = HotbandStreamGen(CAP, seed=9).take(5000)
    b = HotbandStreamGen(CAP, seed=9).take(5000)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    c = HotbandStreamGen(CAP, seed=10).take(5000)
    assert not np.array_equal(a[1], c[1])


def test_chunked_replay_stops_when_the_hit_ratio_is_steady():
    """A repeated working set smaller than the flash cache: the read-hit ratio of the replay's
    chunks climbs to 1 and the replay stops there, long before its limit; a uniform scan over a span
    >> cache is steady at once, near size/span."""
    from simulator.devices.registry import build_device
    from simulator.engine import Simulation
    from simulator.experiment.appstudy import warm_until_steady

    sim = Simulation(1)
    dev = build_device({"kind": "flash_read_cache", "params": {"backing": {"kind": "queue", "params": {"capacity": "100GiB"}},
                                                            "size": "1GiB", "admission": "on_miss"}}, "c", sim.root)
    rng = np.random.default_rng(1)
    ws = rng.integers(0, 2**28 // 4096, 20000) * 4096  # 20,000 4 KiB pages of a 256 MiB working set

    def chunks(n):
        return np.zeros(n, np.int64), rng.choice(ws, n), np.full(n, 4096, np.int64)

    r = warm_until_steady(dev, chunks, 10**7, 50_000, 0.01)
    assert r["steady"] and r["ios"] < 10**7
    assert r["hit_ratio_per_chunk"][-1] == pytest.approx(1.0, abs=0.01)

    dev2 = build_device({"kind": "flash_read_cache", "params": {"backing": {"kind": "queue", "params": {"capacity": "100GiB"}},
                                                             "size": "64MiB", "admission": "on_miss"}}, "c2", sim.root)

    def scan(n):
        return np.zeros(n, np.int64), rng.integers(0, 100 * 2**30 // 4096, n) * 4096, np.full(n, 4096, np.int64)

    r2 = warm_until_steady(dev2, scan, 40_000, 10_000, 0.01)
    assert r2["ios"] == 20_000 and r2["steady"]  # two chunks: the least that can be compared
    assert max(r2["hit_ratio_per_chunk"]) < 0.01  # size/span = 64 MiB / 100 GiB


def test_random_ios_sit_on_boundaries_of_their_own_size():
    """vdbench's default alignment (xfersize boundaries): through the fio job and in the
    preconditioning stream, every IO of a random stream starts at a multiple of its own size
    (relative to its band), so none of 64 KiB straddles a 64 KiB chunk."""
    from test_workload_support import recording_devices

    from simulator.workloads.hotband import run_hotband

    box = {}

    def make(sim):
        box["d"] = recording_devices(sim, [1e-4], capacity="8GiB", servers=8)["d0"]
        return [box["d"]]

    run_hotband(make, 8, runtime=0.5, ramp_time=0.0)
    log = [r for _, r in box["d"].log]
    cap = 8 * 2**30
    # IOs inside the hot bands that no sequential stream reaches in 0.5 s (beyond each eighth's first 64 MiB)
    seq_near = [(k * cap // 8, k * cap // 8 + 64 * 2**20) for k in range(8)]
    rnd = [r for r in log if not any(a <= r.offset < b for a, b in seq_near)]
    assert len(rnd) > 1000
    assert all(r.offset % r.size == 0 for r in rnd if r.size in (4096, 8192, 65536))
    for st in HOTBAND_STREAMS:
        if st.access == "seq":
            continue
        _, off, size = HotbandStreamGen(CAP, seed=4, streams=[st]).take(5000)
        p2 = (size & (size - 1)) == 0  # powers of two: absolute alignment (the band starts on a 256 KiB boundary)
        assert np.all(off[p2] % size[p2] == 0), st.name
