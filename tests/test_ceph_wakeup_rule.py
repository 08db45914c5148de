"""The per-thread wakeup rule (simulator.ceph.resources.CpuPool.run; hosts.N.cpu.thread_wakeup_cost /
thread_wake_delay; docs/ceph-model.md "Quiet campaign: per-thread wakeup rule").

Physics checked: a job that reaches a busy thread pays neither the wakeup CPU nor the wake delay, one that
reaches an asleep thread pays both (the delay only on queue-woken threads) and the core stays free during the
delay; under Poisson arrivals the CPU per job of one thread does not increase with the arrival rate and
equals base + W x (the share of jobs that found the thread asleep) exactly; on the lab's profile the CPU per
read and the wakeups per read do not increase with QD, every submitted IO completes exactly once, the QD1 CPU
per IO is ceph_lab_kernel's (the re-split), and the rule off (the default) books exactly what it did; the
compiled core runs the rule as the Python model does; the measured parameters are what thread_wakeups.py computes.
"""

from __future__ import annotations

import csv
import importlib.util
import itertools
import math
import random
from pathlib import Path

import pytest
from fio_drive import ClosedLoop
from pydantic import ValidationError

import simulator.ceph  # noqa: F401
from simulator.ceph.cluster import Cluster
from simulator.ceph.config import CpuConfig
from simulator.ceph.resources import CpuPool
from simulator.core import ceph_build
from simulator.devices.registry import resolve_params
from simulator.engine import Simulation

ROOT = Path(__file__).resolve().parent.parent
LAB = ROOT / "calibration" / "ceph-lab"
QUIET = LAB / "data" / "quiet"
US = 1e-6
PROFILE = "clusters/ceph_lab_quiet_kernel_thread"


def _pool(servers: int = 2, w: float = 30 * US, d: float = 20 * US, speed: float = 1.0) -> CpuPool:
    sim = Simulation(1)
    return CpuPool("cpu", sim.root, servers, speed, thread_wakeup_cost=w, thread_wake_delay=d)


def test_busy_thread_pays_no_wakeup_asleep_thread_pays_both():
    p = _pool()
    th = p.thread("t")
    # asleep (never ran): 10 us of work + 30 us wakeup, result 20 us later, off-CPU
    end = p.run(th, 0.0, 10 * US)
    assert end == pytest.approx(60 * US) and p.stalled
    assert p._busy == pytest.approx(40 * US)
    # reaches the thread while it is busy (before its result): no wakeup, no delay
    end2 = p.run(th, 50 * US, 10 * US)
    assert end2 == pytest.approx(60 * US) and not p.stalled  # a second core is idle: runs at 50 us
    assert p._busy == pytest.approx(50 * US)
    assert (th.jobs, th.wakes) == (2, 1)
    # after the thread's last result: asleep again
    p.run(th, 61 * US, 10 * US)
    assert th.wakes == 2 and p.stalled


def test_the_core_is_free_during_the_wake_delay():
    """One core: a job of another thread that arrives while the first waits off-CPU for its wake runs then."""
    p = _pool(servers=1, w=0.0, d=100 * US)
    a, b = p.thread("a"), p.thread("b", queued=False)
    assert p.run(a, 0.0, 10 * US) == pytest.approx(110 * US)  # 10 us on the core, result after the wake delay
    assert p.run(b, 20 * US, 10 * US) == pytest.approx(30 * US)  # socket-woken: no delay, core free at 10 us
    assert not p.stalled


def test_socket_woken_thread_pays_the_cpu_not_the_delay():
    p = _pool(w=30 * US, d=20 * US, speed=2.0)
    th = p.thread("msgr", queued=False)
    assert p.run(th, 0.0, 10 * US) == pytest.approx(20 * US)  # (10 + 30) / speed, no delay
    assert not p.stalled


def test_none_thread_and_rule_off_book_as_before():
    p = _pool()
    assert p.run(None, 0.0, 10 * US) == pytest.approx(10 * US)
    q = _pool(w=0.0, d=0.0)
    assert not q.threaded and q.run(q.thread("t"), 0.0, 10 * US) == pytest.approx(10 * US)


@pytest.mark.parametrize("seed", [1, 2])
def test_cpu_per_job_non_increasing_with_load_and_equal_to_the_wake_share(seed):
    """One thread, Poisson arrivals at rising rates: the share of jobs that find it asleep falls, so the CPU
    per job (base + W x share, exactly) does not rise; at a low rate nearly every job wakes it."""
    base, w, d = 20 * US, 30 * US, 20 * US
    per_job = []
    for rate in (200.0, 2000.0, 8000.0, 15000.0):
        p = _pool(servers=2, w=w, d=d)
        th = p.thread("t")
        r = random.Random(seed)
        t, n = 0.0, 20000
        for _ in range(n):
            t += r.expovariate(rate)
            p.run(th, t, base)
        share = th.wakes / th.jobs
        assert p._busy / n == pytest.approx(base + w * share, rel=1e-9)
        per_job.append((p._busy / n, share))
    assert per_job[0][1] > 0.95
    for (c0, _), (c1, _) in itertools.pairwise(per_job):
        assert c1 <= c0 + 1e-12
    assert per_job[-1][0] < per_job[0][0] - 0.3 * w


def test_config_fields_default_off_and_refuse_two_rules():
    c = CpuConfig()
    assert c.thread_wakeup_cost == 0.0 and c.thread_wake_delay == 0.0
    with pytest.raises(ValidationError, match="two rules"):
        CpuConfig(wakeup_cost="20us", thread_wakeup_cost="20us")
    with pytest.raises(ValidationError):
        CpuConfig(thread_wakeup_cost="2ms")  # above the 1 ms bound
    with pytest.raises(ValidationError):
        CpuConfig(thread_wakeup_cost="10us", bogus=1)  # extra="forbid"


def _cluster(profile: str, **params) -> tuple[Simulation, Cluster]:
    _, cfg, _ = resolve_params({"profile": profile, "params": {"osd": {"cost_cv": 0.0}, **params}})
    sim = Simulation(1)
    return sim, Cluster(cfg, "cluster", sim.root)


def _fio_chain(engine: str, params: dict) -> tuple:
    """A write run then a read run (reads of written objects, a ramp) on the lab profile with ``params``
    through ``run_fio``; what each run and the cluster's CPU and threads report."""
    from simulator.core import choose
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload, run_fio

    sim, cl = _cluster(PROFILE, **params)
    img = cl.image("rbd", "img")
    out = []
    for rw, qd in (("randwrite", 16), ("randread", 4), ("randwrite", 1)):
        job = {"name": "j", "ioengine": "libaio", "sim_slat": 0, "bs": 4096, "randseed": 3, "rw": rw, "iodepth": qd,
               "time_based": 1, "runtime": "0.15s", "ramp_time": "0.05s"}
        assert choose(sim, Workload(sim, resolve_jobs({}, [job], "t"), lambda _j: [img]), "auto") is None
        res = run_fio(sim, [img], job, engine=engine)
        cpus = [(h.cpu.stats(), h.cpu._busy, sorted(h.cpu._free)) for h in cl.hosts]
        ths = [(th.group, th.jobs, th.wakes, th.until) for h in cl.hosts for th in h.cpu.threads]
        out.append((repr(res[0]), cpus, ths, sim.env.now))
    return out


@pytest.mark.parametrize("stalls", [False, True])
def test_compiled_core_runs_the_rule_as_the_python_model(stalls):
    """The compiled Ceph core covers the rule (issue 13): a write, read and QD1 write chain on the lab's
    profile gives the Python model's results, CPU figures and per-thread jobs, wakes and wake times, byte for
    byte; also with stalls on (the rule then leaves ``stalled`` to the stall draw)."""
    _, cl = _cluster(PROFILE)
    assert cl.hosts[0].cpu.threaded and ceph_build.unsupported(cl) is None
    params = {}
    if stalls:
        h = resolve_params({"profile": PROFILE})[1].hosts[0].model_dump()
        h["cpu"].update(stall_share=0.05, stall_mean=50 * US)
        params = {"hosts": [h]}
    py = _fio_chain("python", params)
    cc = _fio_chain("auto", params)
    assert cc == py
    wakes = py[0][1][0][0]["thread_wakes"]
    assert sum(wakes.values()) > 0 and wakes["osd.op_worker"] > 0 and wakes["bluestore.kv_sync"] > 0


def _run(profile: str, rw: str, qd: int, runtime: float = 0.6):
    sim, cl = _cluster(profile)
    img = cl.image("rbd", "img")
    ClosedLoop(sim, img, qd=qd, bs=4096, rw=rw, runtime=0.2, seed=1).run()
    cl.reset_stats()
    cpu = cl.hosts[0].cpu
    log = ClosedLoop(sim, img, qd=qd, bs=4096, rw=rw, runtime=runtime, seed=2).run()
    st = cpu.stats()
    return cpu, log, st


def test_lab_profile_cpu_and_wakes_per_read_fall_with_qd_and_io_completes_once():
    prev = None
    for qd in (1, 4, 16):
        cpu, log, st = _run(PROFILE, "randread", qd)
        n = log.completed
        # exactly once: every measured IO completed once, and every submission was one client job
        assert log.completions_total == log.submitted
        assert st["thread_jobs"]["client.submit"] == st["thread_jobs"]["client.complete"]
        assert abs(st["thread_jobs"]["client.submit"] - n) <= qd
        wakes = sum(st["thread_wakes"].values()) / n
        cur = (cpu._busy / n, wakes)
        if qd == 1:
            assert wakes == pytest.approx(5.0, abs=0.01)  # every job of a read wakes its thread at QD1
        if prev is not None:
            assert cur[0] <= prev[0] * 1.005 and cur[1] <= prev[1] + 0.01
        prev = cur
    assert prev[1] < 4.0


@pytest.mark.parametrize("rw", ["randread", "randwrite"])
def test_resplit_keeps_the_qd1_cpu_per_io(rw):
    """The profile's per-op costs are ceph_lab_kernel's less the wakeups booked at QD1: equal CPU per IO."""
    c0, l0, _ = _run("clusters/ceph_lab_kernel", rw, 1)
    c1, l1, _ = _run(PROFILE, rw, 1)
    assert c1._busy / l1.completed == pytest.approx(c0._busy / l0.completed, rel=0.02)


def test_rule_off_books_exactly_as_book():
    """The rule off (the default): ``run`` ignores the thread and books exactly what ``book`` books (the
    pool's ``run`` against ``book`` itself: identical latencies, byte for byte)."""
    hosts = resolve_params({"profile": PROFILE})[1].hosts
    h = hosts[0].model_dump()
    h["cpu"]["thread_wakeup_cost"] = 0.0
    h["cpu"]["thread_wake_delay"] = 0.0
    lat = []
    for patch in (False, True):
        sim, cl = _cluster(PROFILE, hosts=[h])
        cpu = cl.hosts[0].cpu
        assert not cpu.threaded
        if patch:
            cpu.run = lambda th, t, c, _b=cpu.book: _b(t, c)
        img = cl.image("rbd", "img")
        log = ClosedLoop(sim, img, qd=4, bs=4096, rw="randwrite", runtime=0.2, seed=1).run()
        assert "thread_jobs" not in cpu.stats()
        lat.append(log.latency.tobytes())
    assert lat[0] == lat[1] and len(lat[0]) > 0


def _load():
    spec = importlib.util.spec_from_file_location("ceph_lab_thread_wakeups", LAB / "thread_wakeups.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_profile_books_the_measured_wake_delay_and_wakeup_cost():
    tw = _load()
    rows = list(csv.DictReader(ln for ln in (QUIET / "thread_wakeups.csv").read_text().splitlines()
                                              if not ln.startswith("#")))
    got = {r["group"]: r for r in rows}
    delay = next(r for g, r in got.items() if g.startswith("wake_delay"))
    w = got["pooled thread_wakeup_cost"]
    cpu = resolve_params({"profile": PROFILE})[1].hosts[0].cpu
    assert cpu.thread_wake_delay == pytest.approx(float(delay["value_us"]) * US)
    assert cpu.thread_wakeup_cost == pytest.approx(float(w["value_us"]) * US)
    # the wake delay is recomputed from the committed runs.csv
    runs = tw._rows(QUIET / "runs.csv")
    v = [1000 * float(r["op_queue_wait_mean_ms"]) for r in runs
         if r["sequence"] == "croit" and r["rw"] == "randread" and r["qd"] == "1"]
    assert float(delay["qd1_us"]) == pytest.approx(sum(v) / len(v), rel=1e-3)
    # the pooled cost is the summed falls over the summed wake drops of the group rows
    groups = [r for r in rows if r["level"] == "group"]
    assert float(w["us_per_wakeup"]) == pytest.approx(
        sum(float(r["fall_us"]) for r in groups) / sum(float(r["wake_drop"]) for r in groups), rel=1e-3)
    assert math.isfinite(float(w["fall_se"]))


def test_validate_shows_the_rule_as_a_tested_hypothesis_beside_the_record(tmp_path):
    from simulator.calibration.validation import LAB_RECORD_PROFILE, run_validation

    text = run_validation(quick=True, out=tmp_path / "v.md", workers=1, sections=("ceph-lab",)).read_text()
    assert LAB_RECORD_PROFILE == "clusters/ceph_lab_quiet_kernel_fitted"  # the rule did not win
    i = text.index("### Hypothesis: per-thread wakeup rule")
    rows = [r for r in csv.DictReader(ln for ln in (QUIET / "prediction_quiet_kernel_thread_fitted.csv")
                                      .read_text().splitlines() if not ln.startswith("#")) if r["set"] == "prediction"]
    ok = sum(r["iops_ok"] == "True" for r in rows)
    assert f"| IOPS ±25 % | 14 of 16 / 14 of 15 | {ok} of 16 /" in text[i:]
    assert "| txcs per kv commit | 1.00 / 1.33 / 2.66 |" in text[i:]
