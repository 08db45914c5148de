"""The SSD write pipeline: stages with their own parallelism, and the numjobs curve they give.

Expected values are analytic (from the parameters): with N closed-loop jobs of depth 1 a
deterministic tandem of stations runs at min(N / cycle, capacity of the slowest stage), where the
cycle is the 1-job latency plus the host's submission latency; see SSDConfig.write_stage_rates.
"""

from __future__ import annotations

import pytest
from test_ssd import make, run_jobs

from simulator.devices.base import Op, Request

BS = 4096
SLAT = 5e-6


def plp(**ctl):
    """A PLP drive whose NAND back end and link are far faster than the controller stages."""
    over = {"controller": {"plp": True, "buffer_size": "8MiB", "write_latency": "20us", "ftl_update": "50us",
                           "ftl_cores": 1, **ctl},
            "interface": {"command_overhead": "2us"},
            "flash": {"program_latency": ["100us"], "channel_rate": "800MB/s"}}
    return over


def cycle(cfg) -> float:
    """1-job latency of a sync 4 KiB write on an idle PLP drive, plus the host's submission latency."""
    ifc, ctl = cfg.interface, cfg.controller
    return ifc.command_overhead + BS / ifc.link_rate + ctl.write_latency + ctl.ftl_update + SLAT


@pytest.mark.parametrize("cores", [1, 3])
def test_numjobs_curve_rises_then_saturates_at_the_slowest_stage(cores):
    over = plp(ftl_cores=cores)
    cfg = make(over).cfg
    bound, stage = cfg.write_bound(BS)
    assert stage == "ftl" and bound == pytest.approx(cores / 50e-6)
    c = cycle(cfg)
    iops = {n: run_jobs(make(over), n, 0.1, warmup=0.01, host_overhead=SLAT).iops for n in (1, 2, 4, 8, 16)}
    for n, x in iops.items():
        expect = min(n / c, bound)
        assert x == pytest.approx(expect, rel=0.01), (n, x, expect)
        assert x <= bound * 1.001
    assert iops[16] == pytest.approx(bound, rel=0.01)


def test_a_stage_with_parallelism_p_gives_p_times_the_throughput_when_it_is_the_bottleneck():
    sat = {}
    for p in (1, 2, 4):
        sat[p] = run_jobs(make(plp(ftl_cores=p)), 24, 0.1, warmup=0.01, host_overhead=SLAT).iops
    assert sat[2] / sat[1] == pytest.approx(2.0, rel=0.01)
    assert sat[4] / sat[1] == pytest.approx(4.0, rel=0.01)
    # the host interface stage: slow command processing on 1 or 2 HIL cores, everything else fast
    hil = {}
    for p in (1, 2):
        over = plp(ftl_update="1us", ftl_cores=8)
        over["interface"] = {"command_overhead": "40us", "hil_cores": p}
        cfg = make(over).cfg
        assert cfg.write_bound(BS) == (pytest.approx(p / 40e-6), "hil")
        hil[p] = run_jobs(make(over), 24, 0.1, warmup=0.01, host_overhead=SLAT).iops
        assert hil[p] == pytest.approx(p / 40e-6, rel=0.01)


def test_link_stage_caps_large_sync_writes():
    over = plp(ftl_update="1us", ftl_cores=8)
    over["interface"] = {"link_rate": "100MB/s"}
    bs = 65536
    cfg = make(over).cfg
    bound, stage = cfg.write_bound(bs)
    assert stage == "link" and bound == pytest.approx(1e8 / bs)
    r = run_jobs(make(over), 8, 0.2, warmup=0.02, bs=bs, host_overhead=SLAT)
    assert r.iops == pytest.approx(bound, rel=0.01)


def test_plp_acknowledges_after_the_ftl_stage_non_plp_after_nand():
    over = plp(ftl_cores=2)
    lat_plp = run_jobs(make(over), 1, 0.05, host_overhead=SLAT).mean_lat
    cfg = make(over).cfg
    assert lat_plp == pytest.approx(cycle(cfg), rel=0.01)  # the PLP ack: protected DRAM, nothing on NAND
    nonplp = plp(ftl_cores=2)
    nonplp["controller"] = {**nonplp["controller"], "plp": False, "write_cache": False}
    nonplp["ftl"] = {"metadata_commit": "30us"}
    dev = make(nonplp)
    f = dev.cfg.flash
    lat_np = run_jobs(dev, 1, 0.05, host_overhead=SLAT).mean_lat
    # the same pipeline, then a page program (padded page) and the metadata commit
    assert lat_np == pytest.approx(lat_plp + f.page_size / f.channel_rate + f.program_latency[0] + 30e-6, rel=0.01)
    # and the non-PLP curve is not capped by the FTL stage but by group commits on NAND: below the PLP bound
    bound = dev.cfg.write_bound(BS)[0]
    x16 = run_jobs(make(nonplp), 16, 0.1, warmup=0.01, host_overhead=SLAT).iops
    assert 2.0 / (lat_np) < x16 < bound


@pytest.mark.parametrize("over", [
    {"interface": {"hil_cores": 2, "command_overhead": "8us"}, "controller": {"plp": True, "ftl_cores": 3, "ftl_update": "30us"}},
    {"interface": {"hil_cores": 3}, "controller": {"plp": False, "write_cache": False, "ftl_cores": 2, "ftl_update": "20us"}},
    {"interface": {"protocol": "nvme", "queues": 4, "queue_depth": 8, "link_rate": "3.9GB/s", "hil_cores": 4},
     "controller": {"plp": False, "write_cache": True, "ftl_cores": 4}},
])
def test_pipeline_every_io_completes_once_and_latency_covers_service(over):
    import numpy as np

    dev = make({**over, "controller": {**over["controller"], "buffer_size": "1MiB"}})
    env = dev.env
    rng = np.random.default_rng(11)
    seen: dict[int, int] = {}
    bad = []
    reqs = []

    def done(ev):
        r = ev.value
        seen[id(r)] = seen.get(id(r), 0) + 1
        if env.now - r.t_submit < r.service - 1e-12:
            bad.append(r)

    for _ in range(15):
        for _ in range(int(rng.integers(1, 60))):
            u = rng.random()
            off = int(rng.integers(0, dev.capacity // 4096 - 16)) * 4096
            if u < 0.6:
                r = Request(Op.WRITE, off, 4096 * int(rng.integers(1, 4)), fua=bool(rng.random() < 0.5))
            elif u < 0.9:
                r = Request(Op.READ, off, 4096)
            else:
                r = Request(Op.FLUSH)
            reqs.append(r)
            dev.submit(r).callbacks.append(done)
        env.run(until=env.now + float(rng.exponential(1e-3)))
    env.run()
    assert len(reqs) > 300
    assert all(seen.get(id(r)) == 1 for r in reqs)
    assert not bad
    assert sum(dev.completed) == len(reqs)


# ------------------------------------------------------------------ group commit of the write log (ack_commit)
def test_group_commit_one_job_pays_one_commit_many_jobs_share_commits():
    """With a commit time o that dwarfs the rest of a job's cycle, a commit starts as soon as one write
    is ready and the others join the next: in steady state the jobs split into two groups served by
    alternating commits, so N jobs complete N writes every 2 o (deterministic, exact); one job pays
    its whole cycle plus one commit."""
    o = 200e-6
    over = plp(ftl_update="2us", write_latency="1us", ack_commit=f"{o}s")
    cfg = make(over).cfg
    one = run_jobs(make(over), 1, 0.1, warmup=0.01, host_overhead=SLAT)
    assert one.iops == pytest.approx(1 / (cycle(cfg) + o), rel=0.005)
    assert one.mean_lat == pytest.approx(cycle(cfg) + o, rel=0.005)
    for n in (2, 4, 8):
        x = run_jobs(make(over), n, 0.1, warmup=0.01, host_overhead=SLAT).iops
        assert x == pytest.approx(n / (2 * o), rel=0.01), n
    # the commit never caps the rate by itself: the curve keeps rising with N (no knee) ...
    assert run_jobs(make(over), 16, 0.1, warmup=0.01, host_overhead=SLAT).iops > 1.9 * run_jobs(
        make(over), 8, 0.1, warmup=0.01, host_overhead=SLAT).iops
    # ... until the per-command FTL stage does: 1 / ftl_update
    slow = plp(ftl_update="30us", write_latency="1us", ack_commit=f"{o}s")
    x = run_jobs(make(slow), 24, 0.1, warmup=0.01, host_overhead=SLAT).iops
    assert x == pytest.approx(1 / 30e-6, rel=0.01)

