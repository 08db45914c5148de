"""``simrun bench``: simulated IOs per second of wall time on one core, for the reference cases.

Cases
-----
hdd-sptf-qd32       one HDD (7.2K), SPTF, 4 KiB random read, QD32 — device + IO driver, statistics off
hdd-fio-qd32        the same with fio's statistics (the full path of an experiment run; libaio, so QD32)
queue-fio-qd16      the workload layer alone against an ideal queue device
ceph-randwrite-qd64 croit MACH.2 pool, 4 KiB randwrite, QD64 — simulated client IO/s
ceph-randrw-4m      croit MACH.2 pool, 4 MiB randrw, QD16 over 2 GiB (cache range operations), --ios / 100 IOs
jobstats-add        the statistics hot path alone (IOs recorded per second)
hdd-randrw-fsync    HDD, write cache off, 4 KiB randrw 70/30, fsync every 32 writes, QD16 (fio path)
hdd-wc-randwrite    HDD, default profile (volatile write cache on, 16 dirty segments), 4 KiB randwrite QD16
hdd-wc-randrw       the same drive, 4 KiB randrw 50/50 over 64 MiB (overwrites, joins, reads of dirty data),
                    fsync every 64 writes, QD16
hdd-blk-randrw      the same drive behind the Linux block layer (mq-deadline, simrun fio's default), 4 KiB
                    randrw 70/30, fsync every 32 writes, QD64 (tags run out: submitters wait)
ceph-build-N        croit host x4/x12/x42 (N = 96/288/1,008 OSDs, pre-filled): OSDs built per second; notes:
                    build seconds and peak RSS (fresh process)
ceph-run-N          the same clusters, MACH.2 pool 4 KiB randwrite at QD64 per host; notes: CPU per IO,
                    events per IO, peak RSS (fresh process)
ceph-ec-randwrite   an erasure-coded 4+2 pool, 4 KiB randwrite QD32 (every write a read-modify-write)
ceph-chain-compiled four runs on one cluster that keeps its caches (a croit sweep's chain), compiled core
*-compiled          hdd-sptf-qd32, hdd-fio-qd32, queue-fio-qd16, hdd-randrw-fsync, hdd-wc-* and hdd-blk-* through the compiled core
Numba compilation is excluded (each case warms up first). Every case drives its device with the
one IO driver, :func:`simulator.workloads.runner.run_fio`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from simulator.errors import ConfigError

__all__ = ["CASES", "run_bench"]


def _workload_case(
    device_spec: dict[str, Any], job: dict[str, Any], stats: bool = True, compiled: bool = False,
    block_layer: bool = False,
) -> Callable[[int], float]:
    def run(n: int) -> float:
        from simulator.devices.registry import build_device
        from simulator.engine import Simulation
        from simulator.workloads.runner import NullStats, run_fio

        if compiled:
            from simulator.core import run_fio_compiled as run_fio
        sim = Simulation(1)
        dev = build_device(device_spec, "dev", sim.root)
        if block_layer:  # what simrun fio puts in front of each device by default
            from simulator.devices.blocklayer import BlockLayer

            dev = BlockLayer("blk", dev, dev)
        t = time.perf_counter()
        run_fio(sim, [dev], {**job, "number_ios": n}, source="bench", stats_factory=None if stats else NullStats)
        return n / (time.perf_counter() - t)

    return run


def _jobstats_add(n: int) -> float:
    """Recorded IOs per second through JobStats.add (amortised flushes into the HDR histograms)."""
    from simulator.metrics.stats import JobStats

    js = JobStats("bench", {})
    js.set_window(0.0, n * 1e-4 + 1.0)
    add = js.add
    t = 0.0
    t0 = time.perf_counter()
    for i in range(n):
        t += 1e-4
        add(i & 1, t, 1e-6, 1e-3, 4096)
    js.result()
    return n / (time.perf_counter() - t0)


def _ceph(n: int) -> float:
    from simulator.ceph.bench import bench_ceph_randwrite_qd64

    return bench_ceph_randwrite_qd64(n)


def _ceph_4m(n: int) -> float:
    from simulator.ceph.bench import bench_ceph_randrw_4m

    return bench_ceph_randrw_4m(max(1, n // 100))


_RR = {"name": "bench", "rw": "randread", "bs": "4k"}
#: the fio-path cases: libaio, so iodepth is the queue depth (fio's default psync engine runs at depth 1)
_FIO_RR = {**_RR, "ioengine": "libaio"}
_HDD = {"profile": "hdd/seagate_st91000640ns", "params": {"queue": {"policy": "sptf", "depth": 32}}}
#: the device + driver case: libaio without submission latency, offsets uniform with replacement
_HDD_JOB = {**_RR, "iodepth": 32, "ioengine": "libaio", "sim_slat": 0, "norandommap": 1}
#: mixed directions and flushes (the write cache off: a cached write path is not compiled yet)
_HDD_WC_OFF = {"profile": "hdd/seagate_st91000640ns", "params": {"cache": {"write_cache": "off"}}}
_MIXED_JOB = {**_FIO_RR, "rw": "randrw", "rwmixread": 70, "fsync": 32, "iodepth": 16}
#: the default profile as shipped: the volatile write cache on (WCE=1)
_HDD_DEFAULT = {"profile": "hdd/seagate_st91000640ns"}
_WC_WRITE_JOB = {**_FIO_RR, "rw": "randwrite", "iodepth": 16}
#: a small span, offsets with replacement: writes overwrite and adjoin cached data, reads find it
_WC_RW_JOB = {**_FIO_RR, "rw": "randrw", "rwmixread": 50, "iodepth": 16, "fsync": 64, "size": "64m",
              "io_size": "1t", "norandommap": 1}  # fmt: skip
_BLK_JOB = {**_FIO_RR, "rw": "randrw", "rwmixread": 70, "fsync": 32, "iodepth": 64}
CASES: dict[str, tuple[str, Callable[[int], float]]] = {
    "hdd-sptf-qd32": ("HDD 7.2K, SPTF, 4KiB randread QD32 (device + driver, no statistics)", _workload_case(_HDD, _HDD_JOB, stats=False)),
    "hdd-fio-qd32": ("HDD 7.2K, SPTF, 4KiB randread QD32 (full fio path)", _workload_case(_HDD, {**_FIO_RR, "iodepth": 32})),
    "queue-fio-qd16": (
        "ideal queue device, 4KiB randread QD16 (fio path)",
        _workload_case({"kind": "queue", "params": {"servers": 4, "service": {"dist": "deterministic", "value": "100us"}}}, {**_FIO_RR, "iodepth": 16}),
    ),
    # the same cases through the compiled core (simulator.core; identical results, see tests/test_core.py)
    "hdd-sptf-qd32-compiled": (
        "HDD 7.2K, SPTF, 4KiB randread QD32 (compiled core, no statistics)",
        _workload_case(_HDD, _HDD_JOB, stats=False, compiled=True),
    ),
    "hdd-fio-qd32-compiled": (
        "HDD 7.2K, SPTF, 4KiB randread QD32 (compiled core, fio statistics)",
        _workload_case(_HDD, {**_FIO_RR, "iodepth": 32}, compiled=True),
    ),
    "queue-fio-qd16-compiled": (
        "ideal queue device, 4KiB randread QD16 (compiled core, fio statistics)",
        _workload_case(
            {"kind": "queue", "params": {"servers": 4, "service": {"dist": "deterministic", "value": "100us"}}},
            {**_FIO_RR, "iodepth": 16},
            compiled=True,
        ),
    ),
    "hdd-randrw-fsync": (
        "HDD 7.2K, write cache off, 4KiB randrw 70/30, fsync=32, QD16 (full fio path)",
        _workload_case(_HDD_WC_OFF, _MIXED_JOB),
    ),
    "hdd-randrw-fsync-compiled": (
        "HDD 7.2K, write cache off, 4KiB randrw 70/30, fsync=32, QD16 (compiled core, fio statistics)",
        _workload_case(_HDD_WC_OFF, _MIXED_JOB, compiled=True),
    ),
    "hdd-wc-randwrite": (
        "HDD 7.2K default profile (volatile write cache), 4KiB randwrite QD16 (full fio path)",
        _workload_case(_HDD_DEFAULT, _WC_WRITE_JOB),
    ),
    "hdd-wc-randwrite-compiled": (
        "HDD 7.2K default profile (volatile write cache), 4KiB randwrite QD16 (compiled core, fio statistics)",
        _workload_case(_HDD_DEFAULT, _WC_WRITE_JOB, compiled=True),
    ),
    "hdd-wc-randrw": (
        "HDD 7.2K default profile (volatile write cache), 4KiB randrw 50/50 over 64MiB, fsync=64, QD16 (full fio path)",
        _workload_case(_HDD_DEFAULT, _WC_RW_JOB),
    ),
    "hdd-wc-randrw-compiled": (
        "HDD 7.2K default profile (volatile write cache), 4KiB randrw 50/50 over 64MiB, fsync=64, QD16 (compiled core)",
        _workload_case(_HDD_DEFAULT, _WC_RW_JOB, compiled=True),
    ),
    "hdd-blk-randrw": (
        "HDD 7.2K default profile behind the block layer (mq-deadline), 4KiB randrw 70/30, fsync=32, QD64 (full fio path)",
        _workload_case(_HDD_DEFAULT, _BLK_JOB, block_layer=True),
    ),
    "hdd-blk-randrw-compiled": (
        "HDD 7.2K default profile behind the block layer (mq-deadline), 4KiB randrw 70/30, fsync=32, QD64 (compiled core)",
        _workload_case(_HDD_DEFAULT, _BLK_JOB, compiled=True, block_layer=True),
    ),
    "ceph-randwrite-qd64": ("Ceph croit MACH.2 pool, 4KiB randwrite QD64 (client IOs)", _ceph),
    "ceph-randrw-4m": ("Ceph croit MACH.2 pool, 4MiB randrw QD16, 2 GiB (client IOs; --ios / 100 of them)", _ceph_4m),
    "jobstats-add": ("statistics only: JobStats.add + HDR flush per recorded IO", _jobstats_add),
}
from simulator.ceph.scale import SCALE_CASES  # noqa: E402  (light module: builds nothing at import)

CASES.update(SCALE_CASES)


def run_bench(ios: int, cases: list[str] | None, console: Any) -> dict[str, float]:
    from rich.table import Table

    names = cases or list(CASES)
    for c in names:
        if c not in CASES:
            raise ConfigError(f"unknown bench case {c!r} (cases: {', '.join(CASES)})", source="command line", field="--case")
    results: dict[str, float] = {}
    table = Table(title="simulated IOs per wall second (one core)")
    table.add_column("case")
    table.add_column("description")
    table.add_column("IO/s", justify="right")
    table.add_column("notes")
    for c in names:
        desc, fn = CASES[c]
        try:
            if not getattr(fn, "fresh_process", False):
                fn(min(2000, ios))  # warm-up: numba compilation, imports (a fresh-process case has its own)
            # a case returns IO/s, or (IO/s, a note: what else it measured)
            runs = [r if isinstance(r, tuple) else (r, "") for r in (fn(ios) for _ in range(2))]
        except (ImportError, AttributeError) as e:
            table.add_row(c, desc, f"unavailable ({e.__class__.__name__}: {e})", "")
            continue
        best, note = max(runs)
        results[c] = best
        table.add_row(c, desc, f"{best:,.0f}", note)
    console.print(table)
    return results


# ---- the compiled Ceph core (simulator.core.ceph_*; differential tests: tests/test_core_ceph.py)
def _ceph_core_case(name: str, compiled: bool) -> Callable[[int], Any]:
    def run(n: int) -> Any:
        from simulator.core import ceph_bench

        return getattr(ceph_bench, name)(n, compiled)

    return run


CASES.update({
    "ceph-book": ("Ceph CpuPool.book on the croit OSD host (Python; bookings per second)", _ceph_core_case("bench_book", False)),
    "ceph-book-compiled": ("Ceph CpuPool.book, compiled kernel (bookings per second)", _ceph_core_case("bench_book", True)),
    "ceph-newread": ("Ceph croit, open-loop 4KiB reads of never-written objects, 20k/s (Python; client reads)",
                     _ceph_core_case("bench_newread", False)),
    "ceph-newread-compiled": ("Ceph croit, open-loop 4KiB reads of never-written objects, 20k/s (compiled Ceph core)",
                              _ceph_core_case("bench_newread", True)),
})  # fmt: skip
CASES.update({
    "ceph-qd64write": ("Ceph croit MACH.2 pool, stand-in queue devices, no block layer, 4KiB randwrite QD64 (Python; client IOs)",
                       _ceph_core_case("bench_qd64write", False)),
    "ceph-qd64write-compiled": ("the same through the compiled Ceph core (client IOs)", _ceph_core_case("bench_qd64write", True)),
})  # fmt: skip
CASES.update({
    "ceph-fio-qd64write": ("Ceph croit MACH.2 pool, stand-in devices, no block layer, fio 4KiB randwrite QD64 via run_fio (Python)",
                           _ceph_core_case("bench_fio_qd64write", False)),
    "ceph-fio-qd64write-compiled": ("the same fio job via run_fio_ceph (compiled Ceph core, same results)",
                                    _ceph_core_case("bench_fio_qd64write", True)),
})  # fmt: skip
CASES.update({
    "ceph-fio-open": ("Ceph croit MACH.2 pool, stand-in devices, no block layer, 4 fio threads of 4KiB randrw at 35+15 "
                      "IO/s each (poisson, rate_iops: simrun plan's probes) via run_fio (Python)",
                      _ceph_core_case("bench_fio_open", False)),
    "ceph-fio-open-compiled": ("the same jobs via run_fio, engine auto (the compiled Ceph core, same results)",
                               _ceph_core_case("bench_fio_open", True)),
})  # fmt: skip
CASES.update({
    "ceph-fio-qd64read": ("Ceph croit MACH.2 pool, stand-in devices, no block layer, no BlueStore data cache, fio 4KiB "
                          "randread QD64 via run_fio (Python)", _ceph_core_case("bench_fio_qd64read", False)),
    "ceph-fio-qd64read-compiled": ("the same fio job via run_fio_ceph (compiled Ceph core, same results)",
                                   _ceph_core_case("bench_fio_qd64read", True)),
})  # fmt: skip
# the run path into the compiled Ceph core (simulator.core.choose; tests/test_core_ceph_wire.py)
def _ceph_run_case(compiled: bool) -> Callable[[int], Any]:
    def run(n: int) -> Any:
        from simulator.core.ceph_run_bench import bench_exp_qd64write

        return bench_exp_qd64write(n, compiled)

    return run


CASES.update({
    "ceph-exp-qd64write": ("Ceph croit MACH.2 pool, stand-in devices, no block layer, fio rbd 4KiB randwrite QD64, "
                           "ramp + time_based, via the experiment runner (engine python; recorded IOs)", _ceph_run_case(False)),
    "ceph-exp-qd64write-compiled": ("the same point via the experiment runner, engine auto (the compiled Ceph core, "
                                    "same results)", _ceph_run_case(True)),
})

def _ceph_chain_case() -> Callable[[int], Any]:
    def run(n: int) -> Any:
        from simulator.core.ceph_run_bench import bench_exp_chain

        return bench_exp_chain(n)

    return run


CASES["ceph-chain-compiled"] = (
    "Ceph croit MACH.2 pool, stand-in devices, 2Q data cache 1 GiB per OSD with buffered writes: randread, randwrite, "
    "randread, randwrite at QD64 on one cluster (n/4 IOs each), through the experiment runner and the compiled Ceph "
    "core, the caches handed over between runs (client IOs per CPU second)", _ceph_chain_case())

CASES.update({
    "ceph-hdd-qd64write": ("Ceph croit MACH.2 pool on its HDD profiles + block layer (LUN write cache volatile, as "
                           "the bench has always run it), 4KiB randwrite QD64 (Python; client IOs per CPU second)",
                           _ceph_core_case("bench_qd64write_hdd", False)),
    "ceph-hdd-qd64write-compiled": ("the same through the compiled Ceph core driving the device core (identical results)",
                                    _ceph_core_case("bench_qd64write_hdd", True)),
})  # fmt: skip
CASES.update({
    "ceph-hdd-qd64read": ("Ceph croit MACH.2 pool on its HDD profiles + block layer, no BlueStore data cache, 4KiB "
                          "randread QD64 of the pre-filled image (Python; client IOs per CPU second)",
                          _ceph_core_case("bench_qd64read_hdd", False)),
    "ceph-hdd-qd64read-compiled": ("the same through the compiled Ceph core driving the device core (identical results)",
                                   _ceph_core_case("bench_qd64read_hdd", True)),
})  # fmt: skip


# ---- HDD write caches in the device core (tests/test_core_hdd_wcache.py): the non-volatile cache
def _hdd_awc_case(compiled: bool) -> Callable[[int], Any]:
    """Seagate Exos 15E900 with Advanced Write Cache (``persistent``, 128-extent destage window) sized as
    the fitted croit MACH.2 cache (28.8 MB: past ~7,000 IOs the run is in the sustained, destage-paced
    regime), fio 4 KiB randwrite QD32: simulated IOs per CPU second of this process (the machine is
    shared: the note gives its 1-minute load average)."""

    def run(n: int) -> Any:
        import os

        from simulator.devices.registry import build_device
        from simulator.engine import Simulation
        from simulator.workloads.runner import run_fio

        if compiled:
            from simulator.core import run_fio_compiled as run_fio
        sim = Simulation(1)
        dev = build_device({"profile": "hdd/seagate_exos_15e900_awc",
                            "params": {"cache": {"persistent_size": 28828598}}}, "dev", sim.root)
        t = time.process_time()
        run_fio(sim, [dev], {**_FIO_RR, "rw": "randwrite", "iodepth": 32, "number_ios": n}, source="bench")
        cpu = time.process_time() - t
        return n / cpu, f"IO per CPU-s; load {os.getloadavg()[0]:.1f}; destaged {dev.destaged}"

    return run


CASES.update({
    "hdd-awc-randwrite-qd32": ("HDD Exos 15E900 AWC (persistent write cache, 28.8 MB), 4KiB randwrite QD32 (Python; IO per CPU-s)",
                               _hdd_awc_case(False)),
    "hdd-awc-randwrite-qd32-compiled": ("the same through the compiled device core (identical results; IO per CPU-s)",
                                        _hdd_awc_case(True)),
})  # fmt: skip


CASES.update({
    "ceph-hdd-qd64read-2q": ("Ceph croit MACH.2 pool on its HDD profiles + block layer, BlueStore 2Q data cache 8 MiB per "
                             "OSD, 4KiB randread QD64 over twice the pool's cache after a warm-up (Python; client IOs per "
                             "CPU second)", _ceph_core_case("bench_qd64read_cached", False)),
    "ceph-hdd-qd64read-2q-compiled": ("the same through the compiled Ceph core with its data cache (identical results)",
                                      _ceph_core_case("bench_qd64read_cached", True)),
    "ceph-fitted-qd64write": ("Ceph croit MACH.2 pool, the flagship's fitted profile as it is (persistent LUN write "
                              "cache, onode misses, data cache), 4KiB randwrite QD64 (Python; client IOs per CPU second)",
                              _ceph_core_case("bench_fitted_qd64write", False)),
    "ceph-fitted-qd64write-compiled": ("the same through the compiled Ceph core (identical results)",
                                       _ceph_core_case("bench_fitted_qd64write", True)),
})  # fmt: skip


def _ssd_case(compiled: bool) -> Callable[[int], Any]:
    """SSD consumer SATA class at 32 GB in its steady state (random overwrites: GC works), fio 4 KiB
    randwrite QD32: simulated IOs per CPU second of this process (preconditioning, at build, not counted)."""

    def run(n: int) -> Any:
        import os

        from simulator.core import run_fio_compiled
        from simulator.devices.registry import build_device
        from simulator.engine import Simulation
        from simulator.workloads.runner import run_fio

        sim = Simulation(1)
        dev = build_device({"profile": "ssd/class/consumer_sata",
                            "params": {"capacity": "32GB", "precondition": {"state": "steady"}}}, "dev", sim.root)
        t = time.process_time()
        (run_fio_compiled if compiled else run_fio)(
            sim, [dev], {**_FIO_RR, "rw": "randwrite", "iodepth": 32, "number_ios": n}, source="bench")
        cpu = time.process_time() - t
        return n / cpu, f"IO per CPU-s; load {os.getloadavg()[0]:.1f}; waf {dev.stats()['ssd']['waf']:.2f}"

    return run


CASES.update({
    "ceph-ec-randwrite": ("Ceph EC 4+2 pool, stand-in queue devices, fio 4KiB randwrite QD32: read-modify-write (Python; "
                          "client IOs)", _ceph_core_case("bench_ec_randwrite", False)),
    "ceph-ec-randwrite-compiled": ("the same through the compiled Ceph core (identical results)",
                                   _ceph_core_case("bench_ec_randwrite", True)),
})  # fmt: skip
CASES.update({
    "ssd-randwrite-qd32": ("SSD consumer SATA class (at 32 GB, MLC, no PLP, steady state: GC runs), 4KiB randwrite QD32 (Python; IO per CPU-s)",
                           _ssd_case(False)),
    "ssd-randwrite-qd32-compiled": ("the same through the compiled device core (identical results; IO per CPU-s)",
                                    _ssd_case(True)),
})  # fmt: skip
