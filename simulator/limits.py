"""How big a run is, estimated before anything is built -- and refusing what cannot fit.

A few bytes of YAML can ask for a hundred million devices (``count: 100000000``), a hundred million
job threads (``numjobs``), a billion IOs in flight (``iodepth``) or an arrival stream no simulation
finishes (``rate_iops`` x ``runtime``). Building such a system would eat the machine long before an
error appeared, even in ``simrun check``. :func:`check_run_size` estimates, from the validated
configuration alone,

* components: standalone devices (``count``) and the drives of a Ceph cluster
  (hosts x ``count`` x drive groups x ``count``);
* job threads (sum of ``numjobs``) and IOs in flight (sum of ``numjobs`` x effective ``iodepth``);
* memory: a fixed cost per device and per IO in flight, plus each SSD's per-erase-block tables;
* simulated time (``startdelay`` + ``ramp_time`` + ``runtime``) and, where the workload bounds it,
  the number of IOs (open-loop arrivals ``rate_iops`` x duration, ``number_ios``, ``size``/``bs`` x
  ``loops``);

and raises one :class:`~simulator.errors.ConfigError` naming the field that drives the excess and
why. The limits are sized for the machine the project targets (24 GB of memory, 2 cores) with
headroom for one run per worker process; they are far above every shipped experiment (the largest
shipped runs use < 1 % of each).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulator.errors import ConfigError

__all__ = [
    "MAX_ARRIVALS",
    "MAX_DEVICES",
    "MAX_IOS",
    "MAX_JOB_THREADS",
    "MAX_MEMORY",
    "MAX_OUTSTANDING",
    "MAX_SIM_SECONDS",
    "RunSize",
    "check_run_size",
    "estimate_devices",
]

#: fio's own limit on job threads in one run (REAL_MAX_JOBS in fio.h)
MAX_JOB_THREADS = 4096
#: IOs in flight in one run (sum over jobs of numjobs x effective iodepth)
MAX_OUTSTANDING = 1 << 20
#: simulated devices in one run (standalone devices and a cluster's drives)
MAX_DEVICES = 10_000
#: estimated memory of one run, bytes (one run per worker; two workers on a 24 GB machine)
MAX_MEMORY = 8 * 2**30
#: simulated seconds of one job (startdelay + ramp_time + runtime): 116 days
MAX_SIM_SECONDS = 1e7
#: open-loop arrivals of one run: an arrival that finds every iodepth slot busy waits in a
#: backlog, so arrivals beyond what the devices serve cost memory
MAX_ARRIVALS = 200_000_000
#: IOs of one run where the workload bounds them (at ~1e5 simulated IOs per wall second: ~1 day)
MAX_IOS = 10_000_000_000

#: memory estimates, bytes, rounded up from tracemalloc measurements (2026-11-23): 0.30 MB per HDD
#: model and 3.4 MB per 400 GB SSD model (100 of each built), 2.2 KB per IO in flight (a queue
#: device at iodepth 20000)
BYTES_PER_DEVICE = 512 * 1024
BYTES_PER_OUTSTANDING_IO = 2048
BYTES_PER_JOB_THREAD = 256 * 1024
BYTES_PER_SSD_BLOCK = 32


@dataclass
class RunSize:
    """The estimate (for messages and tests)."""

    devices: int = 0
    job_threads: int = 0
    outstanding: int = 0
    memory: float = 0.0
    sim_seconds: float = 0.0
    ios: float | None = None
    arrivals: float = 0.0
    why: dict[str, str] = field(default_factory=dict)


def _gib(b: float) -> str:
    return f"{b / 2**30:.1f} GiB"


def _ssd_blocks(cfg: Any) -> float:
    """Erase blocks an SSD model allocates tables for (physical capacity / block size)."""
    try:
        cap = float(cfg.capacity)
        op = float(getattr(getattr(cfg, "ftl", None), "over_provisioning", 0.0) or 0.0)
        bsize = float(cfg.flash.block_size)
    except (AttributeError, TypeError, ValueError):
        return 0.0
    return cap * (1.0 + op) / max(bsize, 1.0)


def _device_memory(kind: str, cfg: Any) -> float:
    mem = float(BYTES_PER_DEVICE)
    if kind == "ssd":
        mem += _ssd_blocks(cfg) * BYTES_PER_SSD_BLOCK
    elif kind == "raid":  # a RAID volume builds its members (any kind, RAID included)
        mk, mcfg = _raid_member(cfg)
        mem += cfg.members.count * _device_memory(mk, mcfg)
    return mem


def _raid_member(cfg: Any) -> tuple[str, Any]:
    from simulator.devices.registry import resolve_params

    dk, mcfg, _ = resolve_params(cfg.members.device, field="members.device")
    return dk.kind, mcfg


def _device_count(kind: str, cfg: Any) -> int:
    """Devices one device of ``kind`` builds: 1, or a RAID volume and all its members."""
    if kind != "raid":
        return 1
    mk, mcfg = _raid_member(cfg)
    return 1 + cfg.members.count * _device_count(mk, mcfg)


def _cluster_devices(cfg: Any) -> list[tuple[int, str, Any, str]]:
    """(count, kind, config, field) per drive group of a validated ClusterConfig."""
    from simulator.devices.registry import resolve_params

    out = []
    for hi, host in enumerate(getattr(cfg, "hosts", []) or []):
        hcount = int(getattr(host, "count", 1) or 1)
        for di, dg in enumerate(getattr(host, "drives", []) or []):
            dcount = int(getattr(dg, "count", 1) or 1)
            fld = f"system.cluster.params.hosts.{hi}.drives.{di}.count"
            kind, dcfg = "", None
            dev = getattr(dg, "device", None)
            if isinstance(dev, dict):
                try:
                    dk, dcfg, _ = resolve_params(dev)
                    kind = dk.kind
                except ConfigError:
                    kind = ""
            out.append((hcount * dcount, kind, dcfg, fld if hcount == 1 else f"system.cluster.params.hosts.{hi}.count"))
        db = getattr(host, "db_devices", None)
        if db is not None:
            kind, dcfg = "", None
            try:
                dk, dcfg, _ = resolve_params(db.device)
                kind = dk.kind
            except (ConfigError, AttributeError):
                pass
            fld = f"system.cluster.params.hosts.{hi}.db_devices.count" if hcount == 1 else f"system.cluster.params.hosts.{hi}.count"
            out.append((hcount * int(getattr(db, "count", 1) or 1), kind, dcfg, fld))
    return out


def estimate_devices(system: Any, source: str | None = None) -> tuple[int, float, str | None]:
    """(devices, memory bytes, the field with the most devices) of a validated SystemSpec.

    Counts are checked before any profile is resolved, so a huge ``count`` is refused at once."""
    from simulator.devices.registry import resolve_params

    total = 0
    mem = 0.0
    worst: tuple[int, str | None] = (0, None)
    for i, d in enumerate(getattr(system, "devices", []) or []):
        n = int(d.count)
        fld = f"system.devices.{i}.count"
        total += n
        if n > worst[0]:
            worst = (n, fld)
        if total > MAX_DEVICES:
            raise ConfigError(
                f"{total:,} devices in one run; the simulator builds at most {MAX_DEVICES:,} "
                "(each is a full model with its own queues and state)",
                source=source,
                field=fld,
            )
        dk, cfg, _ = resolve_params(d.model_dump(exclude={"name", "count"}), source=source, field=f"system.devices.{i}")
        if dk.kind == "raid":
            total += n * (_device_count(dk.kind, cfg) - 1)
            if total > MAX_DEVICES:
                raise ConfigError(
                    f"{total:,} devices in one run (with the RAID volumes' members); the simulator builds at most {MAX_DEVICES:,}",
                    source=source,
                    field=f"system.devices.{i}.params.members.count",
                )
        mem += n * _device_memory(dk.kind, cfg)
        if mem > MAX_MEMORY:
            raise ConfigError(
                f"the devices alone need about {_gib(mem)} of memory (limit {_gib(MAX_MEMORY)} per run)"
                + (" -- each SSD keeps tables per erase block of its capacity" if dk.kind == "ssd" else ""),
                source=source,
                field=fld if n > 1 else f"system.devices.{i}.params",
            )
    c = getattr(system, "cluster", None)
    if c is not None:
        try:
            _, ccfg, _ = resolve_params(
                {"profile": c.profile, "kind": c.kind or (None if c.profile else "ceph_cluster"), "params": c.params},
                source=source,
                field="system.cluster",
            )
        except ConfigError:
            raise
        for n, kind, dcfg, fld in _cluster_devices(ccfg):
            total += n
            if n > worst[0]:
                worst = (n, fld)
            if total > MAX_DEVICES:
                raise ConfigError(
                    f"{total:,} devices in one run (with the cluster's drives); the simulator builds at "
                    f"most {MAX_DEVICES:,}",
                    source=source,
                    field=fld,
                )
            mem += n * _device_memory(kind, dcfg)
            if mem > MAX_MEMORY:
                raise ConfigError(
                    f"the cluster's drives need about {_gib(mem)} of memory (limit {_gib(MAX_MEMORY)} per run)",
                    source=source,
                    field=fld,
                )
    return total, mem, worst[1]


def _duration(job: Any) -> float | None:
    if job.runtime:
        return float(job.ramp_time) + float(job.runtime)
    return None


def _job_ios(job: Any) -> tuple[float | None, float]:
    """(IOs bound or None when only the device bounds it, open-loop arrivals) per job thread."""
    bounds: list[float] = []
    arrivals = 0.0
    dur = _duration(job)
    if job.number_ios:
        bounds.append(float(job.number_ios))
    if not job.time_based:
        nbytes = job.io_size if job.io_size else (job.size if isinstance(job.size, int) and job.size > 0 else None)
        if nbytes:
            bs = min(job.min_bs[d] for d in job.ddirs) or 1
            bounds.append(float(nbytes) / bs * max(int(job.loops), 1))
    if job.open_loop_iops is not None:
        rate = float(sum(job.open_loop_iops[d] for d in job.ddirs))
        if dur is not None:
            arrivals = rate * dur
            bounds.append(arrivals)
        elif bounds:
            arrivals = min(bounds)
    ios = min(bounds) if bounds else None
    if job.open_loop_iops is not None and dur is None and not bounds:
        arrivals = float("inf")
    return ios, arrivals


def check_run_size(jobs: list[Any], system: Any = None, source: str | None = None, *, devices: int | None = None) -> RunSize:
    """Estimate a run (validated ``jobs``: FioJob list; ``system``: SystemSpec or None) and raise a
    ConfigError naming the responsible field when it cannot fit. ``devices`` gives the device count
    when there is no SystemSpec (``simrun fio``)."""
    rs = RunSize()
    mem = 0.0
    if system is not None:
        rs.devices, mem, _ = estimate_devices(system, source)
    elif devices is not None:
        rs.devices = devices
        mem = devices * float(BYTES_PER_DEVICE)

    def fail(job: Any, option: str, message: str) -> None:
        raise ConfigError(message, source=getattr(job, "source", None) or source, field=job.label(option))

    total_ios = 0.0
    ios_known = True
    for job in jobs:
        nj = int(job.numjobs)
        rs.job_threads += nj
        if rs.job_threads > MAX_JOB_THREADS:
            fail(job, "numjobs", f"{rs.job_threads:,} job threads in one run; fio runs at most {MAX_JOB_THREADS:,} (REAL_MAX_JOBS)")
        depth = int(job.effective_iodepth)
        rs.outstanding += nj * depth
        if rs.outstanding > MAX_OUTSTANDING:
            opt = "iodepth" if depth >= nj else "numjobs"
            fail(
                job,
                opt,
                f"{rs.outstanding:,} IOs in flight (numjobs x iodepth summed over jobs); at most "
                f"{MAX_OUTSTANDING:,} fit in memory",
            )
        t = float(job.startdelay_max) + float(job.ramp_time) + float(job.runtime or 0.0)
        rs.sim_seconds = max(rs.sim_seconds, t)
        if t > MAX_SIM_SECONDS:
            fail(
                job,
                "runtime" if job.runtime else "ramp_time",
                f"{t:.3g} simulated seconds per job (startdelay + ramp_time + runtime); at most "
                f"{MAX_SIM_SECONDS:.0e} s (116 days)",
            )
        ios, arr = _job_ios(job)
        arr *= nj
        rs.arrivals += arr
        if rs.arrivals > MAX_ARRIVALS:
            opt = "rate_iops"
            fail(
                job,
                opt,
                f"about {rs.arrivals:.3g} open-loop arrivals (rate_iops x (ramp_time + runtime) x numjobs); at most "
                f"{MAX_ARRIVALS:.0e} fit in memory when the devices fall behind"
                + ("; give a runtime" if arr == float("inf") else ""),
            )
        if ios is None:
            ios_known = False
        else:
            total_ios += ios * nj
            if total_ios > MAX_IOS:
                opt = "number_ios" if job.number_ios else ("rate_iops" if job.rate_iops is not None else "size")
                if opt == "size" and job.loops > 1:
                    opt = "loops"
                fail(
                    job,
                    opt,
                    f"about {total_ios:.3g} IOs in one run; at most {MAX_IOS:.0e} finish in reasonable time "
                    "(about 1e5 simulated IOs per wall second)",
                )
    rs.ios = total_ios if ios_known else None
    mem += rs.job_threads * BYTES_PER_JOB_THREAD + rs.outstanding * BYTES_PER_OUTSTANDING_IO
    rs.memory = mem
    if mem > MAX_MEMORY and jobs:
        job = max(jobs, key=lambda j: int(j.numjobs) * int(j.effective_iodepth))
        fail(job, "iodepth", f"the run needs about {_gib(mem)} of memory (limit {_gib(MAX_MEMORY)} per run)")
    return rs


#: sweep points of one experiment
MAX_POINTS = 100_000
#: runs of one experiment (points x replications)
MAX_RUNS = 1_000_000


def check_sweep_size(spec: Any, source: str | None = None) -> int:
    """Number of sweep points of a validated ExperimentSpec (before they are expanded); refuses a
    grid whose product of axis lengths, or points x replications, is beyond what can be run."""
    sweep = getattr(spec, "sweep", None)
    n = 1
    worst = None
    if sweep is not None:
        for name, axis in sweep.axes.items():
            k = len(axis.values)
            if sweep.mode == "zip":
                n = k
            else:
                n *= k
            if worst is None or k > len(sweep.axes[worst].values):
                worst = name
            if n > MAX_POINTS:
                raise ConfigError(
                    f"the sweep has {n:,} or more points (product of the axes' lengths); at most {MAX_POINTS:,}",
                    source=source,
                    field=f"sweep.axes.{name}",
                )
    if sweep is not None:
        n += len(sweep.reruns)
    runs = n * int(getattr(spec, "replications", 1))
    if runs > MAX_RUNS:
        raise ConfigError(
            f"{runs:,} runs (points x replications); at most {MAX_RUNS:,}", source=source, field="replications"
        )
    return n
