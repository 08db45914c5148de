"""Bench drivers of the compiled Ceph core (``simrun bench`` cases ``ceph-book*``, ``ceph-newread*``,
``ceph-qd64write*``): the same work through the Python model and through the compiled kernels."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from simulator.engine import Simulation

__all__ = ["bench_book", "bench_ec_randwrite", "bench_fio_qd64read", "bench_fio_qd64write", "bench_newread", "bench_qd64read_cached", "bench_qd64read_hdd", "bench_qd64write", "bench_qd64write_hdd",
           "py_closed", "scale_writes"]


def _croit(seed: int = 1, prefilled: bool = True) -> tuple[Simulation, Any]:
    from simulator.ceph.bench import build_cluster_from_profile

    sim = Simulation(seed=seed)
    ov = None if prefilled else {"images.0.prefilled": False, "images.1.prefilled": False}
    return sim, build_cluster_from_profile(sim, stand_in=True, overrides=ov)


def bench_book(n: int, compiled: bool) -> float:
    """CpuPool.book calls per wall second on the croit OSD host's pool (arrivals 20 us apart,
    exponential costs of mean 100 us: the pool queues)."""
    from simulator.core import ceph_loop as K
    from simulator.core.ceph_build import build_state, run_kernel

    _, cl = _croit()
    rng = np.random.default_rng(1)
    ts = np.cumsum(rng.exponential(20e-6, n))
    costs = rng.exponential(100e-6, n)
    cpu = cl.hosts[0].cpu
    if not compiled:
        book = cpu.book
        tl, cl_ = ts.tolist(), costs.tolist()
        t0 = time.perf_counter()
        for t, c in zip(tl, cl_, strict=True):
            book(t, c)
        return n / (time.perf_counter() - t0)
    st, meta = build_state(cl)
    out = np.zeros(n)
    t0 = time.perf_counter()
    run_kernel(K.book_many, st, meta, n, 0, ts, costs, out)
    return n / (time.perf_counter() - t0)


def _py_open(sim: Simulation, img: Any, times: np.ndarray, kinds: np.ndarray, offs: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The Python model driven as ``ceph_build.run_open`` drives the compiled one (each arrival
    schedules the next, then submits)."""
    from simulator.ceph.resources import call_at
    from simulator.devices.base import Request

    env = sim.env
    n = len(times)
    done = np.full(n, np.nan)
    tl, kl, ol, sl = times.tolist(), kinds.tolist(), offs.tolist(), sizes.tolist()

    def arrive(ev: Any) -> None:
        i = ev._value
        if i + 1 < n:
            call_at(env, tl[i + 1], arrive, i + 1)
        img.submit(Request(kl[i], ol[i], sl[i])).callbacks.append(lambda e, i=i: done.__setitem__(i, env.now))

    call_at(env, tl[0], arrive, 0)
    env.run()
    return done


def bench_newread(n: int, compiled: bool) -> tuple[float, str]:
    """Open-loop 4 KiB reads at 20,000/s of objects never written (zeros, no device IO) on the croit
    cluster (MACH.2 pool, images not pre-filled): client reads per wall second; note: events per read."""
    from simulator.core.ceph_build import run_open

    sim, cl = _croit(prefilled=False)
    img = cl.image("test-mach2", "test")
    rng = np.random.default_rng(1)
    times = np.cumsum(rng.exponential(1 / 20000.0, n))
    offs = rng.integers(0, img.capacity // 4096, n) * 4096
    kinds = np.zeros(n, np.int64)
    sizes = np.full(n, 4096, np.int64)
    if not compiled:
        t0 = time.perf_counter()
        _py_open(sim, img, times, kinds, offs, sizes)
        return n / (time.perf_counter() - t0), ""
    _, info = run_open(cl, img, times, kinds, offs, sizes)
    return n / info["wall_s"], f"{info['events'] / n:.2f} events/read"


def _croit_writes(seed: int = 1) -> tuple[Simulation, Any]:
    """The croit cluster with stand-in queue devices and without the block layer (what the compiled
    write path covers)."""
    from simulator.ceph.bench import build_cluster_from_profile

    sim = Simulation(seed=seed)
    return sim, build_cluster_from_profile(sim, stand_in=True, overrides={"block_layer.enabled": False})


def py_closed(sim: Simulation, img: Any, kinds: np.ndarray, offs: np.ndarray, sizes: np.ndarray,
              depth: int) -> tuple[np.ndarray, np.ndarray]:
    """The Python model driven as ``ceph_build.run_closed`` drives the compiled one: ``depth``
    requests issued now in order, each completion issues the next. Returns (issue times,
    completion times), the reference the identity tests compare run_closed's with."""
    from simulator.devices.base import Request

    env = sim.env
    n = len(kinds)
    t_issue = np.full(n, np.nan)
    done = np.full(n, np.nan)
    kl, ol, sl = kinds.tolist(), offs.tolist(), sizes.tolist()
    nxt = [min(depth, n)]

    def submit(i: int) -> None:
        t_issue[i] = env.now
        img.submit(Request(kl[i], ol[i], sl[i])).callbacks.append(lambda e, i=i: on_done(i))

    def on_done(i: int) -> None:
        done[i] = env.now
        if nxt[0] < n:
            nxt[0] += 1
            submit(nxt[0] - 1)

    for i in range(min(depth, n)):
        submit(i)
    env.run()
    return t_issue, done


def bench_qd64write(n: int, compiled: bool) -> tuple[float, str]:
    """croit MACH.2 pool (stand-in queue devices, no block layer), 4 KiB random writes, closed loop
    QD64: client writes per wall second; note: simulated IOPS and events per write."""
    from simulator.core.ceph_build import run_closed

    sim, cl = _croit_writes()
    img = cl.image("test-mach2", "test")
    rng = np.random.default_rng(1)
    offs = rng.integers(0, img.capacity // 4096, n) * 4096
    kinds = np.ones(n, np.int64)
    sizes = np.full(n, 4096, np.int64)
    if not compiled:
        t0 = time.perf_counter()
        _, done = py_closed(sim, img, kinds, offs, sizes, 64)
        wall = time.perf_counter() - t0
        return n / wall, f"{n / done.max():,.0f} simulated IOPS"
    _, done, info = run_closed(cl, img, kinds, offs, sizes, 64)
    return n / info["wall_s"], f"{n / done.max():,.0f} simulated IOPS, {info['events'] / n:.2f} events/write"


def scale_writes(hosts: int, n: int, seed: int = 1) -> dict[str, float]:
    """The croit host layout repeated ``hosts`` times (simulator.ceph.scale: croit's PGs and data
    per OSD), stand-in queue devices, no block layer; 4 KiB random writes to the MACH.2 pool's image
    at QD64 per host through the compiled core. Returns build seconds (Python cluster, then the
    state arrays), loop CPU seconds per client write, events per write and peak RSS (MB)."""
    from simulator.ceph.bench import build_cluster_from_profile
    from simulator.ceph.scale import _peak_rss_mb, scale_overrides
    from simulator.core.ceph_build import run_closed

    sim = Simulation(seed=seed)
    t0 = time.perf_counter()
    ov = {**(scale_overrides(hosts) if hosts != 1 else {}), "block_layer.enabled": False}
    cl = build_cluster_from_profile(sim, stand_in=True, overrides=ov)
    t_build = time.perf_counter() - t0
    img = cl.image("test-mach2", "test")
    rng = np.random.default_rng(seed)
    offs = rng.integers(0, img.capacity // 4096, n) * 4096
    t1 = time.perf_counter()
    _, done, info = run_closed(cl, img, np.ones(n, np.int64), offs, np.full(n, 4096, np.int64), 64 * hosts)
    t_run = time.perf_counter() - t1
    return {"osds": len(cl.osds), "build_s": t_build, "state_and_run_s": t_run, "loop_wall_s": info["wall_s"],
            "cpu_us_per_write": 1e6 * info["cpu_s"] / n, "events_per_write": info["events"] / n,
            "sim_iops": n / float(done.max()), "peak_rss_mb": _peak_rss_mb()}


def bench_fio_qd64write(n: int, compiled: bool) -> tuple[float, str]:
    """The fio path: croit MACH.2 pool (stand-in queue devices, no block layer), fio job 4 KiB
    randwrite QD64 (libaio), through run_fio on the Python model or run_fio_ceph on the compiled
    core (the same results); client writes per wall second; note: fio's IOPS."""
    from simulator.core.ceph_fio import run_fio_ceph
    from simulator.workloads.runner import run_fio

    sim, cl = _croit_writes()
    img = cl.image("test-mach2", "test")
    job = {"name": "bench", "ioengine": "libaio", "sim_slat": 0, "rw": "randwrite", "bs": 4096, "iodepth": 64,
           "number_ios": n, "norandommap": 1, "randseed": 1}
    t0 = time.perf_counter()
    res = (run_fio_ceph if compiled else run_fio)(sim, img if compiled else [img], job)
    wall = time.perf_counter() - t0
    return n / wall, f"fio: {res[0].write.iops:,.0f} IOPS" if hasattr(res[0], "write") else ""


def bench_fio_qd64read(n: int, compiled: bool) -> tuple[float, str]:
    """The fio path: croit MACH.2 pool (stand-in queue devices, no block layer, BlueStore without a
    data cache), fio job 4 KiB randread QD64 through run_fio or run_fio_ceph (the same results);
    client reads per wall second; note: fio's IOPS."""
    from simulator.ceph.bench import build_cluster_from_profile
    from simulator.core.ceph_fio import run_fio_ceph
    from simulator.workloads.runner import run_fio

    sim = Simulation(seed=1)
    cl = build_cluster_from_profile(sim, stand_in=True, overrides={
        "block_layer.enabled": False, "bluestore.cache.buffered_read": False})
    img = cl.image("test-mach2", "test")
    job = {"name": "bench", "ioengine": "libaio", "sim_slat": 0, "rw": "randread", "bs": 4096, "iodepth": 64,
           "number_ios": n, "norandommap": 1, "randseed": 1}
    t0 = time.perf_counter()
    res = (run_fio_ceph if compiled else run_fio)(sim, img if compiled else [img], job)
    wall = time.perf_counter() - t0
    return n / wall, f"fio: {res[0].read.iops:,.0f} IOPS"


def bench_fio_open(n: int, compiled: bool) -> tuple[float, str]:
    """An open loop as simrun plan's probes run it: croit MACH.2 pool (stand-in queue devices, no block layer),
    four fio threads of 4 KiB randrw at 35 reads and 15 writes per second each (poisson arrivals, iodepth 16, time-based for ``n``
    IOs), through run_fio on the Python model or the compiled Ceph core (engine auto: the same results); client
    IOs per wall second; note: fio's IOPS."""
    from simulator.workloads.runner import run_fio

    sim, cl = _croit_writes()
    img = cl.image("test-mach2", "test")
    job = {"name": "bench", "ioengine": "libaio", "sim_slat": 0, "rw": "randrw", "rwmixread": 70, "bs": 4096,
           "iodepth": 16, "numjobs": 4, "rate_iops": "35,15", "rate_process": "poisson", "time_based": 1,
           "runtime": f"{n / 200:.6f}s", "norandommap": 1, "randseed": 1, "group_reporting": 1}
    t0 = time.perf_counter()
    res = run_fio(sim, [img], job, engine="auto" if compiled else "python")
    wall = time.perf_counter() - t0
    done = res[0].read.total_ios + res[0].write.total_ios
    return done / wall, f"fio: {res[0].read.iops + res[0].write.iops:,.0f} IOPS"


#: the croit drives with the MACH.2 LUNs' write cache volatile. (Written when the profile's 14 GB media
#: cache was refused under BlueStore; it is compiled since its extent table grows in place, 2026-11-28,
#: but the case keeps its drives so its figures stay comparable. The fitted profile's persistent cache:
#: ``bench_fitted_qd64write``.)
CROIT_HDD_OVERRIDES = {"hosts.0.drives.0.device.params.cache.write_cache": "volatile"}


def _bench_hdd(n: int, compiled: bool, kind: int, overrides: dict[str, Any],
               ref: str = "clusters/croit_mach2") -> tuple[float, str]:
    """croit (cluster profile ``ref``) on its real drives (``overrides``), closed loop QD64 of 4 KiB
    random IOs of ``kind`` (0 read, 1 write) on the MACH.2 pool's image: client IOs per CPU second of
    the run (the Python model's whole run, the compiled loop's); note: simulated IOPS, events per IO."""
    from simulator.ceph.bench import build_cluster_from_profile
    from simulator.core.ceph_build import run_closed

    sim = Simulation(seed=1)
    cl = build_cluster_from_profile(sim, ref, overrides=overrides)
    img = cl.image("test-mach2", "test")
    rng = np.random.default_rng(1)
    offs = rng.integers(0, img.capacity // 4096, n) * 4096
    kinds = np.full(n, kind, np.int64)
    sizes = np.full(n, 4096, np.int64)
    if not compiled:
        c0 = time.process_time()
        _, done = py_closed(sim, img, kinds, offs, sizes, 64)
        return n / (time.process_time() - c0), f"{n / done.max():,.0f} simulated IOPS"
    _, done, info = run_closed(cl, img, kinds, offs, sizes, 64)
    return n / info["cpu_s"], f"{n / done.max():,.0f} simulated IOPS, {info['events'] / n:.2f} events/IO"


def bench_qd64write_hdd(n: int, compiled: bool) -> tuple[float, str]:
    """croit MACH.2 pool on its real drives (HDD profiles, block layer mq-deadline; the MACH.2 LUNs'
    write cache volatile instead of the profile's media cache), 4 KiB random writes, closed loop QD64.
    Python and compiled give identical completion times (tests/test_core_ceph_devices.py)."""
    return _bench_hdd(n, compiled, 1, CROIT_HDD_OVERRIDES)


def bench_qd64read_hdd(n: int, compiled: bool) -> tuple[float, str]:
    """The same croit MACH.2 pool on its drives, BlueStore without a data cache (buffered reads off),
    4 KiB random reads of the pre-filled image, closed loop QD64 (identical in both engines)."""
    return _bench_hdd(n, compiled, 0, {**CROIT_HDD_OVERRIDES, "bluestore.cache.buffered_read": False})


def bench_fitted_qd64write(n: int, compiled: bool) -> tuple[float, str]:
    """The flagship's fitted croit profile (clusters/croit_mach2_fitted) as it is: the MACH.2 LUNs'
    fitted persistent write cache, onode misses, BlueStore's data cache; 4 KiB random writes, closed
    loop QD64 on the MACH.2 pool (issue 13's target case; identical in both engines:
    tests/test_core_hdd_wcache.py, test_core_ceph_onode.py, test_core_ceph_dcache.py)."""
    return _bench_hdd(n, compiled, 1, {}, "clusters/croit_mach2_fitted")


def bench_qd64read_cached(n: int, compiled: bool) -> tuple[float, str]:
    """croit MACH.2 pool on its drives (as ``_bench_hdd``), BlueStore's 2Q data cache (8 MiB per OSD)
    and a working set of twice the pool's cache: 4 KiB random reads at QD64 after a compiled warm-up
    of as many reads (its state handed to the timed run), part of them hits; client IOs per CPU second
    of the timed run; note: hit ratio, simulated IOPS. Identical in both engines
    (tests/test_core_ceph_dcache.py)."""
    from simulator.ceph.bench import build_cluster_from_profile
    from simulator.core.ceph_build import run_closed

    sim = Simulation(seed=1)
    cl = build_cluster_from_profile(sim, overrides={**CROIT_HDD_OVERRIDES, "bluestore.cache.size": "8MiB"})
    img = cl.image("test-mach2", "test")
    osds = sorted({a.id for pg in img.pool.pgs for a in pg.acting})
    ws = 2 * len(osds) * 8 * 2**20
    rng = np.random.default_rng(1)
    kinds = np.zeros(n, np.int64)
    sizes = np.full(n, 4096, np.int64)
    run_closed(cl, img, kinds, rng.integers(0, ws // 4096, n) * 4096, sizes, 64)
    caches = [cl.osds[j].bs.cache for j in osds]
    for c in caches:
        c.hits = c.misses = 0
    offs = rng.integers(0, ws // 4096, n) * 4096
    if not compiled:
        c0 = time.process_time()
        t_is, done = py_closed(sim, img, kinds, offs, sizes, 64)
        cpu = time.process_time() - c0
        note = ""
    else:
        t_is, done, info = run_closed(cl, img, kinds, offs, sizes, 64)
        cpu = info["cpu_s"]
        note = f", {info['events'] / n:.2f} events/IO"
    hits = sum(c.hits for c in caches)
    return n / cpu, f"hit ratio {hits / n:.3f}, {n / (done.max() - t_is.min()):,.0f} simulated IOPS{note}"


def bench_ec_randwrite(n: int, compiled: bool) -> tuple[float, str]:
    """An erasure-coded 4+2 data pool (7 hosts of 2 stand-in queue devices, 4 KiB stripe unit, overwrites
    allowed, image pre-filled), fio 4 KiB randwrite QD32: every write is a read-modify-write (sub-reads of the
    partial stripe, encode, 6 shard writes) through run_fio, engine python or auto (the compiled core, the
    same results); client writes per wall second; note: fio's IOPS and events per write."""
    from simulator.ceph.cluster import Cluster
    from simulator.devices.registry import resolve_params
    from simulator.workloads.runner import run_fio

    dev = {"kind": "queue", "params": {"capacity": "64GiB", "servers": 1, "service": {"dist": "exponential", "mean": "0.2ms"}}}
    params = {
        "hosts": [{"name": "h", "count": 7, "cpu": {"cores": 8}, "drives": [{"count": 2, "device": dev}]}],
        "pools": [{"name": "meta", "size": 3, "pg_num": 8},
                  {"name": "ec", "type": "erasure", "pg_num": 64, "erasure": {"k": 4, "m": 2}}],
        "images": [{"pool": "meta", "name": "img", "size": "2GiB", "data_pool": "ec"}],
        "block_layer": {"enabled": False},
    }
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": params})
    sim = Simulation(seed=1)
    cl = Cluster(cfg, "cluster", sim.root)
    img = cl.image("meta", "img")
    job = {"name": "bench", "ioengine": "libaio", "sim_slat": 0, "rw": "randwrite", "bs": 4096, "iodepth": 32,
           "number_ios": n, "norandommap": 1, "randseed": 1}
    t0 = time.perf_counter()
    res = run_fio(sim, [img], job, engine="auto" if compiled else "python")
    wall = time.perf_counter() - t0
    return n / wall, f"fio: {res[0].write.iops:,.0f} IOPS; {cl.stats()['pools']['ec']['ec']['rmw_writes']:,} RMW writes"
