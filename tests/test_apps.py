"""Application workloads (simulator.workloads.apps) driven through the runner.

Oracles: the generators' proportions (hot/cold request shares, reads:writes, log writes per data
write, boot-profile write share) within the binomial confidence interval of the run (4 standard
errors); whole-file reads add up to the file sizes and never exceed the maximum IO size; desktops
start ``interval`` apart and issue exactly their profile; every IO completes exactly once; the
network link bounds the web server's throughput; same seed, same result."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simulator.devices.base import Op
from simulator.devices.registry import build_device
from simulator.engine import Simulation
from simulator.errors import ConfigError
from simulator.workloads.apps import (
    OltpConfig,
    VdiBootConfig,
    WebServerConfig,
    _OltpThread,
    _WebUser,
    app_config,
    boot_profile,
    run_app,
    web_files,
)


def queue(sim, name, cap, mean=5e-3, servers=8, dist="exponential"):
    svc = {"dist": dist, "mean": mean} if dist == "exponential" else {"dist": dist, "value": mean}
    return build_device({"kind": "queue", "params": {"capacity": cap, "servers": servers, "service": svc}}, name, sim.root)


def within(k, n, p, z=4.0):
    return abs(k / n - p) <= z * math.sqrt(p * (1 - p) / n)


def test_web_file_population_sizes_and_hot_set():
    cfg = WebServerConfig(files=20000, hot_bytes="7GB")
    offs, sizes, hot, cold = web_files(cfg, np.random.default_rng(1))
    assert sizes.min() >= 15 * 1024 and sizes.max() <= 4 * 2**20
    mean = (15 * 1024 + 4 * 2**20) / 2
    sd = (4 * 2**20 - 15 * 1024) / math.sqrt(12)
    assert abs(sizes.mean() - mean) < 4 * sd / math.sqrt(len(sizes))
    hot_bytes = sizes[hot].sum()
    assert 7e9 <= hot_bytes < 7e9 + 4 * 2**20  # the hot set stops at the first file reaching 7 GB
    assert len(np.intersect1d(hot, cold)) == 0 and len(hot) + len(cold) == 20000
    assert np.all(offs % 4096 == 0) and np.all(np.diff(offs) >= sizes[:-1])


def test_web_user_reads_whole_files_in_max_io_pieces_and_hot_share():
    cfg = WebServerConfig(files=5000, hot_bytes="1GB", max_io="256KiB")
    files = web_files(cfg, np.random.default_rng(2))
    u = _WebUser(files, cfg, np.random.default_rng(3))
    offs, sizes = files[0], files[1]
    start = {int(o): i for i, o in enumerate(offs)}
    got = []
    cur = None
    for _ in range(200_000):
        fi, op, off, n, fua = u.next_io(0.0)
        assert fi == 0 and op == Op.READ and not fua and 0 < n <= 256 * 1024
        if off in start and (cur is None or cur[2] == 0):
            cur = [start[off], off, int(sizes[start[off]])]
            got.append(cur[0])
        assert off == cur[1]
        cur[1] += n
        cur[2] -= n
    hot = set(files[2].tolist())
    k = sum(1 for i in got[:-1] if i in hot)
    assert u.files_read == len(got)
    assert within(k, len(got) - 1, 0.8)


def test_web_server_runs_through_the_runner_and_the_link_bounds_it():
    sim = Simulation(3)
    dev = queue(sim, "web", "2TB", mean=1e-5, servers=64, dist="deterministic")  # a very fast volume
    cfg = WebServerConfig(users=20, link_rate="1Gb/s", link_efficiency=1.0)
    r = run_app(sim, cfg, {"web": dev}, runtime=4, ramp=0.5)
    bound = 1e9 / 8  # bytes/s on the link
    assert r.mb_s * 1e6 <= bound * 1.01
    assert r.mb_s * 1e6 >= bound * 0.9  # the link is the bottleneck
    assert r.reads == r.ios and r.writes == 0


def test_oltp_mix_hot_share_and_log():
    cfg = OltpConfig(data=["a", "b", "c"], log="l")
    caps = [300 * 10**9] * 3

    class Log:
        size = 8192
        pos = 0

        def next(self):
            self.pos += 8192
            return self.pos - 8192

    th = _OltpThread(cfg, caps, Log(), np.random.default_rng(5))
    n = 200_000
    ios = [th.next_io(0.0) for _ in range(n)]
    data = [x for x in ios if x[0] < 3]
    log = [x for x in ios if x[0] == 3]
    reads = sum(1 for x in data if x[1] == Op.READ)
    writes = len(data) - reads
    assert within(reads, len(data), 9.7 / 10.7)
    assert abs(len(log) - writes) <= 1  # one log write per data write
    assert all(x[1] == Op.WRITE and x[4] for x in log)  # FUA
    assert [x[2] for x in log] == [8192 * i for i in range(len(log))]  # sequential
    assert all(x[3] == 8192 and x[2] % 8192 == 0 for x in data)
    vols = np.bincount([x[0] for x in data], minlength=3)
    assert all(within(v, len(data), 1 / 3) for v in vols)
    # hot share: a page is hot when it lies in the first part of its band period
    st, bw = th.stride[0], th.band[0]
    assert bw == round(st * 0.2)
    hot = sum(1 for x in data if x[0] == 0 and (x[2] // 8192) % st < bw)
    assert within(hot, int(vols[0]), 0.8)
    assert max(x[2] for x in data) < 300 * 10**9


def test_oltp_through_the_runner_exactly_once():
    sim = Simulation(4)
    devs = {f"v{i}": queue(sim, f"v{i}", "300GB") for i in range(3)}
    devs["log"] = queue(sim, "log", "100GB", mean=2e-4, servers=1)
    cfg = OltpConfig(data=["v0", "v1", "v2"], log="log", threads=16)
    r = run_app(sim, cfg, devs, runtime=5, ramp=1)
    e = r.extra
    assert abs(e["log_writes"] - e["data_writes"]) <= cfg.threads
    assert within(e["data_reads"], e["data_reads"] + e["data_writes"], 9.7 / 10.7)
    issued = e["data_reads"] + e["data_writes"] + e["log_writes"]
    assert e["submitted"] == e["completed"] == issued  # every issued IO completed, once
    # closed loop: Little's law over the window, N = X * R
    assert r.iops * r.lat_mean_ms / 1e3 == pytest.approx(16, rel=0.05)


def test_vdi_profile_composition():
    cfg = VdiBootConfig()
    ops, offs, sizes = boot_profile(cfg)
    w = ops == Op.WRITE
    assert within(int(w.sum()), len(ops), 0.16)
    rb = int(sizes[~w].sum())
    assert 560e6 <= rb < 560e6 + 256 * 1024
    assert np.all(offs[~w] + sizes[~w] <= cfg.image_size) and np.all(offs[w] + sizes[w] <= cfg.delta_size)
    assert 15e6 < sizes[w].sum() < 35e6  # 20-30 MB written per boot (ThinScale) at the default sizes


def test_vdi_boot_storm_desktops_start_apart_and_replay_the_profile():
    sim = Simulation(5)
    dev = queue(sim, "ds", "20TB", servers=24)
    cfg = VdiBootConfig(desktops=6, interval=2.0, read_bytes="20MB")
    r = run_app(sim, cfg, {"datastore": dev})
    prof = boot_profile(cfg)
    assert r.ios == 6 * len(prof[0]) and r.writes == 6 * int((prof[0] == Op.WRITE).sum())
    assert r.thread_start == pytest.approx([2.0 * i for i in range(6)])
    assert all(e > s for s, e in zip(r.thread_start, r.thread_end, strict=True))
    assert r.extra["submitted"] == r.extra["completed"] == r.ios
    assert r.mb_s * 1e6 * r.window_s == pytest.approx(6 * int(prof[2].sum()))


def test_same_seed_same_result():
    def once():
        sim = Simulation(6)
        dev = queue(sim, "ds", "20TB", servers=24)
        r = run_app(sim, VdiBootConfig(desktops=3, read_bytes="10MB"), {"datastore": dev})
        return r.thread_end, r.lat_mean_ms

    assert once() == once()


def test_bad_app_is_one_clear_error():
    with pytest.raises(ConfigError) as e:
        app_config({"app": "mail"}, source="x.yaml")
    assert "unknown application" in str(e.value)
    with pytest.raises(ConfigError) as e:
        app_config({"app": "oltp", "data": ["a"], "read_write_ratio": -1}, source="x.yaml")
    assert "read_write_ratio" in str(e.value)


def test_successive_web_runs_on_one_system():
    """Each run puts its own network link in front of the volume (a sweep over users keeps the system)."""
    sim = Simulation(7)
    dev = queue(sim, "web", "2TB", mean=1e-3, servers=16)
    cfg = WebServerConfig(files=1000, hot_bytes="200MB")
    a = run_app(sim, cfg.model_copy(update={"users": 2}), {"web": dev}, runtime=0.5)
    b = run_app(sim, cfg.model_copy(update={"users": 8}), {"web": dev}, runtime=0.5)
    assert a.extra["completed"] == a.extra["submitted"] and b.extra["completed"] == b.extra["submitted"]
    assert b.iops > a.iops  # more users, more IO from the same 16-server volume


def test_run_app_runs_in_the_engine_loop():
    """run_app drives the simulation through Simulation.run (the engine's loop, garbage collector
    quietened as for run_fio): inside the run gc_quiet is active, after it the collector is restored."""
    import gc

    from simulator.engine.core import gc_quiet

    sim = Simulation(7)
    dev = queue(sim, "web", "2TB", mean=1e-3, servers=16)
    seen = []
    tick = sim.env.timeout(0.1)
    tick.callbacks.append(lambda _ev: seen.append((gc_quiet._depth, gc.get_threshold()[0])))
    before = gc.get_threshold()
    r = run_app(sim, WebServerConfig(files=1000, hot_bytes="200MB", users=2), {"web": dev}, runtime=0.5)
    assert r.extra["completed"] == r.extra["submitted"]
    if gc.isenabled():
        assert seen == [(1, max(before[0], 50_000))]
    assert gc.get_threshold() == before and gc_quiet._depth == 0
