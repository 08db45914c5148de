"""Application studies: several workloads x several drive configurations in one file.

An experiment file with a top-level ``study: app_study`` key (experiments/exos15e900_cache.yaml) is
run by this module instead of the fio sweep of :mod:`simulator.experiment.lifecycle`: each
workload section has its own volume layout (RAID parameters whose ``members.device`` is filled in
with the drive of each configuration), its own load sweep and its own metrics:

* ``iometer`` -- 4 KiB random IO at several read shares and queue depths on one volume (fio jobs,
  Iometer's semantics: one worker, ``qd`` outstanding IOs);
* ``hotband`` -- a list of fio jobs (the SNIA Emerald hot band) swept over worker threads; metric:
  the highest IOPS whose mean latency stays within ``target_latency_ms`` (linear interpolation
  between the two sweep points around the target);
* ``webserver`` / ``oltp`` / ``vdi`` -- the applications of :mod:`simulator.workloads.apps`.

Preconditioning (``precondition`` of a workload): before the timed runs, the workload's own access
stream (``requests`` IOs drawn from its generator) is replayed *functionally* -- no simulated time,
through the volume's address mapping into every flash read cache below it (:func:`warm_tree`),
the stand-in for the study's hours of pre-running. The OLTP warm-up timeline alternates functional
replay and short timed samples: at checkpoint ``t`` the caches have seen the IOs the database issued
until ``t`` (IOPS of the previous sample x elapsed time), then ``sample_s`` seconds are timed.

Runs are independent tasks on ``workers`` processes (the OLTP load is chosen on the baseline first).
Outputs: the key-findings table (simulated vs published, errors), ``results.json``,
``key_findings.csv`` and PNG plots in the output directory.
"""

from __future__ import annotations

import copy
import csv
import json
import math
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from simulator.config.base import ConfigModel, load_yaml, validate
from simulator.errors import ConfigError

__all__ = ["StudySpec", "is_study", "load_study", "run_study", "warm_tree"]


# --------------------------------------------------------------------------- spec
class PreconditionSpec(ConfigModel):
    """Functional preconditioning: replay the workload's own IOs into the flash caches."""

    requests: int = Field(0, ge=0, le=10**9, description="IOs (web server: files) replayed before the timed runs (default 0 = none)")


class IometerSpec(ConfigModel):
    volume: dict[str, Any] = Field(description="raid parameters (members.device is the configuration's drive)")
    mixes: dict[str, int] = Field(description="label -> percent reads (100 = all reads, 0 = all writes)")
    qd: list[int] = Field(description="outstanding IOs (Iometer queue depth)")
    bs: str = Field("4k", description="transfer size (default 4k)")
    runtime: float = Field(2.0, gt=0, le=3600, description="measured seconds per point (default 2)")
    ramp: float = Field(0.5, ge=0, le=3600, description="seconds before measuring (default 0.5)")
    write_ramp: float | None = Field(None, ge=0, le=3600, description="ramp of mixes with writes (default ramp)")


class HotbandSpec(ConfigModel):
    volume: dict[str, Any] = Field(description="raid parameters")
    jobs: list[dict[str, Any]] = Field(
        default_factory=list,
        description="fio jobs of one worker set, numjobs multiplied by the threads swept; default none = the SNIA "
        "Emerald hot band of simulator.workloads.hotband at iodepth = threads",
    )
    region: tuple[float, float] = Field((0.0, 100.0), description="(start %, end %) of the volume the hot band covers")
    threads: list[int] = Field(description="worker threads swept (numjobs multiplier, or the hot band's outstanding IOs)")
    target_latency_ms: float = Field(5.0, gt=0, le=1000, description="mean latency target, ms (default 5)")
    runtime: float = Field(2.0, gt=0, le=3600, description="measured seconds per point")
    ramp: float = Field(0.5, ge=0, le=3600, description="seconds before measuring")
    precondition: PreconditionSpec = Field(default_factory=PreconditionSpec, description="functional warm-up")


class WebSpec(ConfigModel):
    volume: dict[str, Any] = Field(description="raid parameters (with the web volume in volumes)")
    target: str = Field("web", description="name of the web volume inside the RAID")
    app: dict[str, Any] = Field(default_factory=dict, description="WebServerConfig fields except users/target")
    users: list[int] = Field(description="closed-loop users swept")
    runtime: float = Field(3.0, gt=0, le=3600, description="measured seconds per point")
    ramp: float = Field(0.5, ge=0, le=3600, description="seconds before measuring")
    precondition: PreconditionSpec = Field(default_factory=PreconditionSpec, description="functional warm-up (requests = file reads)")


class OltpSpec(ConfigModel):
    data_volume: dict[str, Any] = Field(description="raid parameters of the data RAID (volumes = the data volumes)")
    log_volume: dict[str, Any] = Field(description="raid parameters of the log RAID")
    app: dict[str, Any] = Field(default_factory=dict, description="OltpConfig fields except data/log/threads")
    baseline: str = Field(description="configuration whose mean latency sets the load")
    target_latency_ms: float = Field(8.0, gt=0, le=1000, description="baseline mean latency the load is chosen for, ms")
    threads: list[int] = Field(description="candidate loads (outstanding IOs), ascending; the one closest to the target is kept")
    checkpoints_min: list[float] = Field(description="minutes after the start at which the timeline is sampled")
    sample_s: float = Field(1.5, gt=0, le=3600, description="timed seconds per checkpoint")
    ramp: float = Field(0.3, ge=0, le=3600, description="seconds before each sample is measured")


class VdiSpec(ConfigModel):
    volume: dict[str, Any] = Field(description="raid parameters (with the datastore volume)")
    target: str = Field("datastore", description="name of the datastore volume inside the RAID")
    app: dict[str, Any] = Field(default_factory=dict, description="VdiBootConfig fields except target")
    bin_s: float = Field(1.0, gt=0, le=60, description="IOPS time-series bin, seconds (peak IOPS = the highest bin)")


class StudyReference(ConfigModel):
    table: str = Field(description="CSV (metric, workload, unit, one column per configuration); relative to the project or the file")
    label: str = Field("published", description="name shown in the table")
    source: str = Field("", description="where the figures come from")
    columns: dict[str, str] = Field(description="configuration label -> CSV column")
    metrics: dict[str, str] = Field(description="CSV metric name -> study metric")


class StudySpec(ConfigModel):
    study: Literal["app_study"] = Field(description="marks an application study file")
    name: str = Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.+\-]{0,99}$", description="output directory out/<name>")
    description: str = Field("", description="what the study shows")
    seed: int = Field(1, ge=0, le=2**32, description="seed of every run")
    workers: int = Field(2, ge=1, le=64, description="worker processes (default 2)")
    configs: dict[str, dict[str, Any]] = Field(min_length=1, description="configuration label -> drive device spec ({profile, params})")
    iometer: IometerSpec | None = None
    hotband: HotbandSpec | None = None
    webserver: WebSpec | None = None
    oltp: OltpSpec | None = None
    vdi: VdiSpec | None = None
    reference: StudyReference | None = None
    notes: list[str] = Field(default_factory=list, description="limitations and assumptions printed with the table")


METRICS: list[tuple[str, str]] = [
    ("random_write_iops", "Iometer 4K random write IOPS (highest QD)"),
    ("hotband_iops_at_target", "Hot band IOPS at the latency target"),
    ("webserver_iops", "Web server IOPS (most users)"),
    ("oltp_iops", "OLTP IOPS (end of the timeline)"),
    ("oltp_latency_ms", "OLTP mean response time, ms (end of the timeline)"),
    ("vdi_peak_iops", "Boot storm peak IOPS"),
    ("vdi_boot_span_s", "Boot storm: first to last desktop booted, s"),
]


def is_study(path: str | Path) -> bool:
    """True when ``path`` is a YAML mapping with a top-level ``study`` key."""
    try:
        data = load_yaml(path)
    except (ConfigError, OSError):
        return False
    return isinstance(data, dict) and "study" in data


def load_study(path: str | Path, sets: list[tuple[str, Any]] | None = None) -> StudySpec:
    from simulator.config.base import set_dotted

    raw = load_yaml(path)
    for k, v in sets or []:
        raw = set_dotted(raw, k, v)
    spec = validate(StudySpec, raw, str(path))
    _check_refs(spec, str(path))
    return spec


def _check_refs(spec: StudySpec, source: str) -> None:
    from simulator.devices.registry import resolve_params
    from simulator.workloads.apps import app_config

    for label, drive in spec.configs.items():
        resolve_params(drive, source, f"configs.{label}")
    for wname in ("iometer", "hotband", "webserver", "vdi"):
        w = getattr(spec, wname)
        if w is not None:
            resolve_params(_raid_spec(w.volume, next(iter(spec.configs.values()))), source, f"{wname}.volume")
    if spec.oltp is not None:
        o = spec.oltp
        d0 = next(iter(spec.configs.values()))
        resolve_params(_raid_spec(o.data_volume, d0), source, "oltp.data_volume")
        resolve_params(_raid_spec(o.log_volume, d0), source, "oltp.log_volume")
        if o.baseline not in spec.configs:
            raise ConfigError(f"baseline {o.baseline!r} is not a configuration ({', '.join(spec.configs)})", source=source, field="oltp.baseline")
        names = [v["name"] for v in o.data_volume.get("volumes", [])]
        app_config({"app": "oltp", **o.app, "data": names or ["x"], "log": "log"}, source, "oltp.app.")
    if spec.webserver is not None:
        app_config({"app": "webserver", **spec.webserver.app}, source, "webserver.app.")
    if spec.vdi is not None:
        app_config({"app": "vdi_boot", **spec.vdi.app}, source, "vdi.app.")
    if spec.hotband is not None and spec.hotband.jobs:
        from simulator.workloads.options import resolve_jobs

        resolve_jobs({}, [dict(j, filename="vol") for j in spec.hotband.jobs], source, prefix="hotband.jobs.")


# --------------------------------------------------------------------------- building
def _raid_spec(volume: dict[str, Any], drive: dict[str, Any]) -> dict[str, Any]:
    p = copy.deepcopy(volume)
    p.setdefault("members", {})
    p["members"]["device"] = _inline(drive)
    return {"kind": "raid", "params": p}


_INLINE: dict[str, dict[str, Any]] = {}


def _inline(spec: dict[str, Any]) -> dict[str, Any]:
    """A device spec with its profiles resolved once ({kind, params}), so that the members of a
    RAID do not each read and parse the same profile files again."""
    key = json.dumps(spec, sort_keys=True, default=str)
    hit = _INLINE.get(key)
    if hit is not None:
        return copy.deepcopy(hit)
    from simulator.devices.registry import deep_merge, load_profile

    out = copy.deepcopy(spec)
    if out.get("profile"):
        prof = load_profile(str(out.pop("profile")))
        out["kind"] = prof["kind"]
        out["params"] = deep_merge(prof["params"], out.get("params") or {})
    params = out.get("params") or {}
    for k in ("backing",):
        if isinstance(params.get(k), dict):
            params[k] = _inline(params[k])
    if isinstance(params.get("members"), dict) and isinstance(params["members"].get("device"), dict):
        params["members"]["device"] = _inline(params["members"]["device"])
    _INLINE[key] = out
    return copy.deepcopy(out)


def _build(sim: Any, volume: dict[str, Any], drive: dict[str, Any], name: str) -> Any:
    from simulator.devices.registry import build_device

    return build_device(_raid_spec(volume, drive), name, sim.root)


# --------------------------------------------------------------------------- functional warm-up
def warm_tree(dev: Any, ops: np.ndarray, offs: np.ndarray, sizes: np.ndarray) -> None:
    """Replay accesses (arrays of op, offset, size) without simulated time into every flash read
    cache below ``dev``: through RAID address mapping (reads to one copy, alternating by row; writes
    invalidate data and parity/mirror copies), partitions and ports."""
    from simulator.devices.flashcache import FlashReadCache
    from simulator.devices.partition import Partition
    from simulator.devices.raid.path import PathPort
    from simulator.devices.raid.volume import RaidVolume

    if len(ops) == 0:
        return
    if isinstance(dev, FlashReadCache):
        dev.warm(ops, offs, sizes)
        return
    if isinstance(dev, Partition):
        warm_tree(dev.base, ops, offs + dev.start, sizes)
        return
    if isinstance(dev, PathPort):
        warm_tree(dev.member, ops, offs, sizes)
        return
    if hasattr(dev, "dev") and not isinstance(dev, RaidVolume):  # a meter
        warm_tree(dev.dev, ops, offs, sizes)
        return
    if isinstance(dev, RaidVolume):
        if not _has_flash(dev):
            return
        m_ops, m_mem, m_off, m_size = _map_raid(dev, ops, offs, sizes)
        order = np.argsort(m_mem, kind="stable")
        m_ops, m_mem, m_off, m_size = m_ops[order], m_mem[order], m_off[order], m_size[order]
        bounds = np.searchsorted(m_mem, np.arange(dev.layout.n + 1))
        for i, member in enumerate(dev.members):
            a, b = bounds[i], bounds[i + 1]
            if b > a:
                warm_tree(member, m_ops[a:b], m_off[a:b], m_size[a:b])


def _has_flash(dev: Any) -> bool:
    from simulator.devices.flashcache import FlashReadCache

    return any(isinstance(c, FlashReadCache) for c in dev.walk())


def _map_raid(vol: Any, ops: np.ndarray, offs: np.ndarray, sizes: np.ndarray):
    from simulator.devices.raid.layout import parity_members, stripe_data_member

    lay = vol.layout
    ch = lay.chunk
    c0 = offs // ch
    c1 = (offs + sizes - 1) // ch
    k = c1 - c0 + 1
    idx = np.repeat(np.arange(len(offs)), k)
    starts = np.cumsum(k) - k
    c = np.repeat(c0, k) + (np.arange(len(idx)) - np.repeat(starts, k))
    lo = np.maximum(offs[idx], c * ch)
    hi = np.minimum(offs[idx] + sizes[idx], (c + 1) * ch)
    op = ops[idx]
    row, dj = np.divmod(c, lay.data_chunks)
    moff = row * ch + (lo - c * ch)
    msz = hi - lo
    lv = lay.level
    if lv in ("5", "6"):
        mem = np.asarray(stripe_data_member(lay.n, lv, row, dj), dtype=np.int64)
        w = op != 0
        p, q = parity_members(lay.n, lv, row[w])
        extra_m = [np.asarray(p, dtype=np.int64)]
        if lv == "6":
            extra_m.append(np.asarray(q, dtype=np.int64))
        xs = [(op[w], em, moff[w], msz[w]) for em in extra_m]
    elif lv == "10":
        cp = lay.copies
        mem = dj * cp + row % cp
        w = op != 0
        xs = [(op[w], dj[w] * cp + (row[w] + j) % cp, moff[w], msz[w]) for j in range(1, cp)]
    elif lv == "0":
        mem = dj
        xs = []
    else:  # jbod / 1: not modelled for warm-up
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    all_ops = np.concatenate([op, *[x[0] for x in xs]])
    all_mem = np.concatenate([mem, *[x[1] for x in xs]])
    all_off = np.concatenate([moff, *[x[2] for x in xs]])
    all_sz = np.concatenate([msz, *[x[3] for x in xs]])
    return all_ops.astype(np.int64), all_mem.astype(np.int64), all_off.astype(np.int64), all_sz.astype(np.int64)


# --------------------------------------------------------------------------- tasks (worker side)
def _fio_point(volume: dict, drive: dict, jobs: list[dict], runtime: float, ramp: float, seed: int,
               precondition: Callable[[Any], None] | None = None) -> dict[str, Any]:
    from simulator.engine import Simulation
    from simulator.metrics.stats import merge
    from simulator.workloads.runner import run_fio

    sim = Simulation(seed)
    vol = _build(sim, volume, drive, "vol")
    if precondition is not None:
        precondition(vol)
    g = {"ioengine": "libaio", "direct": 1, "time_based": 1, "runtime": runtime, "ramp_time": ramp, "filename": "vol", "group_reporting": 1}
    res = run_fio(sim, [vol], jobs, g)
    job = merge(list(res)) if len(res) > 1 else res[0]
    out: dict[str, Any] = {"iops": 0.0, "lat_mean_ms": 0.0}
    n = 0
    lat = 0.0
    for d in job.present_dirs():
        out[f"{d.name}_iops"] = d.iops
        out["iops"] += d.iops
        cnt = d.total_ios
        n += cnt
        lat += d.lat.mean_ns / 1e6 * cnt
    out["lat_mean_ms"] = lat / n if n else 0.0
    out["flash"] = _flash_stats(vol)
    return out


def _flash_stats(vol: Any) -> dict[str, float]:
    from simulator.devices.flashcache import FlashReadCache

    h = m = 0
    valid = 0
    for c in vol.walk():
        if isinstance(c, FlashReadCache):
            h += c.hits
            m += c.misses
            valid += c.valid_bytes
    return {"hit_ratio": h / (h + m) if h + m else 0.0, "valid_GB": valid / 1e9}


def task_iometer(spec: dict, label: str, mix: str, qd: int) -> dict[str, Any]:
    s = StudySpec.model_validate(spec)
    io = s.iometer
    pct = io.mixes[mix]
    rw = "randread" if pct >= 100 else "randwrite" if pct <= 0 else "randrw"
    job = {"name": f"iometer_{mix}", "rw": rw, "rwmixread": pct, "bs": io.bs, "iodepth": qd}
    ramp = io.ramp if pct >= 100 or io.write_ramp is None else io.write_ramp
    r = _fio_point(io.volume, s.configs[label], [job], io.runtime, ramp, s.seed)
    return {"workload": "iometer", "config": label, "mix": mix, "qd": qd, **r}


def hotband_jobs(hb: HotbandSpec, threads: int) -> list[dict[str, Any]]:
    """The fio jobs of one hot-band point (raises ImportError while the SNIA hot band is missing)."""
    if hb.jobs:
        return [dict(j, numjobs=int(j.get("numjobs", 1)) * threads) for j in hb.jobs]
    from simulator.workloads.hotband import hotband_job

    job = hotband_job(threads, runtime=hb.runtime, ramp_time=hb.ramp, region=tuple(hb.region))
    return [job]


def task_hotband(spec: dict, label: str, threads: int) -> dict[str, Any]:
    s = StudySpec.model_validate(spec)
    hb = s.hotband
    try:
        jobs = hotband_jobs(hb, threads)
    except ImportError as e:
        return {"workload": "hotband", "config": label, "threads": threads, "missing": f"SNIA hot band not available: {e}"}

    def pre(vol: Any) -> None:
        n = hb.precondition.requests
        if n and _has_flash(vol):
            ops, offs, sizes = _fio_stream(jobs, vol, n, s.seed)
            warm_tree(vol, ops, offs, sizes)

    r = _fio_point(hb.volume, s.configs[label], jobs, hb.runtime, hb.ramp, s.seed, pre)
    return {"workload": "hotband", "config": label, "threads": threads, **r}


def _fio_stream(jobs: list[dict], vol: Any, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` IOs of fio jobs, generated by running them against a zero-time stand-in of ``vol``
    (a queue device of the same capacity): the runner's own offset/size/direction logic."""
    from simulator.devices.simple import QueueDevice, QueueDeviceConfig
    from simulator.engine import Simulation
    from simulator.workloads.runner import RequestLog, run_fio

    sim = Simulation(seed)
    q = QueueDevice(QueueDeviceConfig(capacity=vol.capacity, servers=1024, service={"dist": "deterministic", "value": 1e-6}), "vol", sim.root)
    q.sector_size = vol.sector_size
    log = RequestLog(q)
    per = max(1, n // max(1, sum(int(j.get("numjobs", 1)) for j in jobs)))
    g = {"ioengine": "libaio", "direct": 1, "time_based": 1, "runtime": 1e6, "number_ios": per, "filename": "vol", "sim_slat": 0}
    run_fio(sim, [log], jobs, g)
    a = log.arrays()
    order = np.argsort(a["t_submit"], kind="stable")
    return a["op"][order], a["offset"][order], a["size"][order]


def task_web(spec: dict, label: str) -> dict[str, Any]:
    """Every user count of one configuration on one system (warmed once), in the listed order."""
    from simulator.engine import Simulation
    from simulator.workloads.apps import WebServerConfig, run_app, web_files, web_stream

    s = StudySpec.model_validate(spec)
    w = s.webserver
    sim = Simulation(s.seed)
    raid = _build(sim, w.volume, s.configs[label], "web")
    vol = raid.volumes[w.target] if w.target in getattr(raid, "volumes", {}) else raid
    points = []
    warmed = 0
    for users in w.users:
        cfg = WebServerConfig(**{**w.app, "users": users, "target": "web"})
        if not warmed and w.precondition.requests and _has_flash(raid):
            # the run's file population (web_files with the run's seed) and request mix
            ss = np.random.SeedSequence(sim.seed, spawn_key=(0xA99,))
            files = web_files(cfg, np.random.default_rng(ss.spawn(1)[0]))
            offs, sizes = web_stream(files, cfg, np.random.default_rng(np.random.SeedSequence(sim.seed, spawn_key=(0xB0B,))), w.precondition.requests)
            warm_tree(vol, np.zeros(len(offs), np.int64), offs, sizes)
            warmed = len(offs)
        r = run_app(sim, cfg, {"web": vol}, runtime=w.runtime, ramp=w.ramp)
        points.append({"users": users, "iops": r.iops, "lat_mean_ms": r.lat_mean_ms, "mb_s": r.mb_s, "flash": _flash_stats(raid), **r.extra})
    return {"workload": "webserver", "config": label, "points": points, "warm_ios": warmed}


def _oltp_system(sim: Any, s: StudySpec, label: str) -> tuple[dict[str, Any], list[str], Any, Any]:
    o = s.oltp
    data = _build(sim, o.data_volume, s.configs[label], "data")
    log = _build(sim, o.log_volume, s.configs[label], "log")
    names = list(getattr(data, "volumes", {}))
    devs: dict[str, Any] = {n: data.volumes[n] for n in names} if names else {"data": data}
    devs["log"] = log
    return devs, names or ["data"], data, log


def task_oltp_load(spec: dict, threads: int) -> dict[str, Any]:
    """One baseline run at ``threads`` outstanding IOs (the load search)."""
    from simulator.engine import Simulation
    from simulator.workloads.apps import OltpConfig, run_app

    s = StudySpec.model_validate(spec)
    o = s.oltp
    sim = Simulation(s.seed)
    devs, names, _, _ = _oltp_system(sim, s, o.baseline)
    cfg = OltpConfig(**{**o.app, "data": names, "log": "log", "threads": threads})
    r = run_app(sim, cfg, devs, runtime=max(o.sample_s, 2.0), ramp=o.ramp)
    return {"workload": "oltp_load", "config": o.baseline, "threads": threads, "iops": r.iops, "lat_mean_ms": r.lat_mean_ms}


def task_oltp_timeline(spec: dict, label: str, threads: int) -> dict[str, Any]:
    """The warm-up timeline: functional replay up to each checkpoint, then a timed sample."""
    from simulator.engine import Simulation
    from simulator.workloads.apps import OltpConfig, _OltpLog, _OltpThread, run_app

    s = StudySpec.model_validate(spec)
    o = s.oltp
    sim = Simulation(s.seed)
    devs, names, data, log = _oltp_system(sim, s, label)
    cfg = OltpConfig(**{**o.app, "data": names, "log": "log", "threads": threads})
    flash = _has_flash(data)
    gen = _OltpThread(cfg, [devs[n].capacity for n in names], _OltpLog(log.capacity, int(cfg.log_io_size)),
                      np.random.default_rng(np.random.SeedSequence(s.seed, spawn_key=(0x01F,))))
    points = []
    t_prev = 0.0
    iops_prev = 0.0
    replayed = 0
    for cp in o.checkpoints_min:
        t = cp * 60.0
        if flash and t > t_prev and iops_prev > 0:
            # the data IOs the database issued since the last sample (log writes touch only the log RAID)
            n = int(iops_prev * (t - t_prev) * (1.0 - _log_share(cfg)))
            fi, ops, offs = gen.data_block(n)
            sizes = np.full(n, int(cfg.io_size), dtype=np.int64)
            replayed += n
            for i, nm in enumerate(names):
                sel = fi == i
                warm_tree(devs[nm], ops[sel], offs[sel], sizes[sel])
        r = run_app(sim, cfg, devs, runtime=o.sample_s, ramp=o.ramp)
        iops_prev = r.iops
        t_prev = t + o.sample_s + o.ramp
        points.append({"t_min": cp, "iops": r.iops, "lat_mean_ms": r.lat_mean_ms, "flash": _flash_stats(data)})
    last = points[-1]
    return {"workload": "oltp", "config": label, "threads": threads, "timeline": points, "iops": last["iops"],
            "lat_mean_ms": last["lat_mean_ms"], "replayed_ios": replayed}


def _log_share(cfg: Any) -> float:
    """Share of the database's IOs that are log writes."""
    w = 1.0 / (cfg.read_write_ratio + 1.0)
    lw = w * cfg.log_per_write if cfg.log else 0.0
    return lw / (1.0 + lw)


def task_vdi(spec: dict, label: str) -> dict[str, Any]:
    from simulator.engine import Simulation
    from simulator.workloads.apps import VdiBootConfig, run_app

    s = StudySpec.model_validate(spec)
    v = s.vdi
    sim = Simulation(s.seed)
    raid = _build(sim, v.volume, s.configs[label], "vdi")
    vol = raid.volumes[v.target] if v.target in getattr(raid, "volumes", {}) else raid
    cfg = VdiBootConfig(**{**v.app, "target": "datastore"})
    r = run_app(sim, cfg, {"datastore": vol}, bin_s=v.bin_s)
    ends = sorted(r.thread_end)
    return {"workload": "vdi", "config": label, "iops_mean": r.iops, "lat_mean_ms": r.lat_mean_ms,
            "peak_iops": max(x[1] for x in r.series), "boot_span_s": ends[-1] - ends[0],
            "storm_s": ends[-1] - min(r.thread_start), "boot_times_s": [e - st for st, e in zip(r.thread_start, r.thread_end, strict=True)],
            "series": r.series, "flash": _flash_stats(raid), **r.extra}


# --------------------------------------------------------------------------- orchestration
def run_study(spec: StudySpec, out_dir: Path | None, workers: int | None = None, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run every workload of the study; returns {results, findings}; writes outputs to ``out_dir``."""
    t0 = time.perf_counter()
    raw = spec.model_dump(mode="json")
    nw = workers or spec.workers
    results: list[dict[str, Any]] = []
    tasks: list[tuple[Callable, tuple]] = []
    for label in spec.configs:
        if spec.vdi is not None:
            tasks.append((task_vdi, (raw, label)))
        if spec.iometer is not None:
            for mix in spec.iometer.mixes:
                for qd in spec.iometer.qd:
                    tasks.append((task_iometer, (raw, label, mix, qd)))
        if spec.hotband is not None:
            for th in spec.hotband.threads:
                tasks.append((task_hotband, (raw, label, th)))
        if spec.webserver is not None:
            tasks.append((task_web, (raw, label)))
    with ProcessPoolExecutor(max_workers=nw) as pool:
        oltp_load = [pool.submit(_task, task_oltp_load, raw, th) for th in spec.oltp.threads] if spec.oltp is not None else []
        futs = [pool.submit(_task, f, *a) for f, a in tasks]
        threads = None
        if spec.oltp is not None:
            loads = [f.result() for f in oltp_load]
            results += loads
            threads = _pick_load(loads, spec.oltp.target_latency_ms)
            log(f"oltp: load chosen on {spec.oltp.baseline}: {threads} outstanding IOs")
            futs += [pool.submit(_task, task_oltp_timeline, raw, label, threads) for label in spec.configs]
        for f in futs:
            results.append(f.result())
    findings = _findings(spec, results)
    doc = {"name": spec.name, "wall_s": time.perf_counter() - t0, "workers": nw, "results": results, "findings": findings,
           "oltp_threads": threads}
    if out_dir is not None:
        _write(spec, out_dir, doc)
    return doc


def _task(fn: Callable, *args: Any) -> dict[str, Any]:
    """Run one task in a worker; the simulated system is freed before the next task."""
    import gc

    t = time.perf_counter()
    try:
        r = fn(*args)
    except Exception as e:  # one failed task is reported, the others still count
        import traceback

        r = {"workload": fn.__name__.removeprefix("task_"), "config": args[1] if len(args) > 1 else None,
             "missing": f"task {fn.__name__}{args[1:]!r} failed: {type(e).__name__}: {e}", "traceback": traceback.format_exc()}
    finally:
        gc.collect()
    r["wall_s"] = time.perf_counter() - t
    return r


def _pick_load(loads: list[dict[str, Any]], target: float) -> int:
    best = min((r for r in loads if "missing" not in r), key=lambda r: abs(r["lat_mean_ms"] - target))
    return int(best["threads"])


def _interp_at_target(points: list[dict[str, Any]], target: float) -> float | None:
    pts = sorted(points, key=lambda p: p["threads"])
    ok = [p for p in pts if p["lat_mean_ms"] <= target]
    if not ok:
        return None
    best = ok[-1]
    above = [p for p in pts if p["threads"] > best["threads"] and p["lat_mean_ms"] > target]
    if not above:
        return best["iops"]
    a, b = best, above[0]
    f = (target - a["lat_mean_ms"]) / (b["lat_mean_ms"] - a["lat_mean_ms"])
    return a["iops"] + f * (b["iops"] - a["iops"])


def _findings(spec: StudySpec, results: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    out: dict[str, dict[str, float | None]] = {m: {} for m, _ in METRICS}
    for label in spec.configs:
        rs = [r for r in results if r.get("config") == label and "missing" not in r]
        wr = [r for r in rs if r["workload"] == "iometer" and spec.iometer and spec.iometer.mixes[r["mix"]] <= 0]
        out["random_write_iops"][label] = max(wr, key=lambda r: r["qd"])["iops"] if wr else None
        hb = [r for r in rs if r["workload"] == "hotband" and "missing" not in r]
        out["hotband_iops_at_target"][label] = _interp_at_target(hb, spec.hotband.target_latency_ms) if hb else None
        web = [p for r in rs if r["workload"] == "webserver" for p in r["points"]]
        out["webserver_iops"][label] = max(web, key=lambda r: r["users"])["iops"] if web else None
        ol = [r for r in rs if r["workload"] == "oltp"]
        out["oltp_iops"][label] = ol[0]["iops"] if ol else None
        out["oltp_latency_ms"][label] = ol[0]["lat_mean_ms"] if ol else None
        vd = [r for r in rs if r["workload"] == "vdi"]
        out["vdi_peak_iops"][label] = vd[0]["peak_iops"] if vd else None
        out["vdi_boot_span_s"][label] = vd[0]["boot_span_s"] if vd else None
    return out


def published(spec: StudySpec, base: Path) -> dict[str, dict[str, float]]:
    ref = spec.reference
    if ref is None:
        return {}
    p = Path(ref.table)
    cands = [base / p, _project_root() / p]
    path = next((c for c in cands if c.is_file()), None)
    if path is None:
        return {}
    out: dict[str, dict[str, float]] = {}
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            m = ref.metrics.get(row.get("metric", ""))
            if m is None:
                continue
            for label, col in ref.columns.items():
                v = row.get(col, "")
                if v not in ("", None):
                    out.setdefault(m, {})[label] = float(v)
    return out


def _project_root() -> Path:
    return Path(__file__).resolve().parents[2]


def findings_rows(spec: StudySpec, findings: dict, pub: dict) -> list[dict[str, Any]]:
    rows = []
    for m, title in METRICS:
        for label in spec.configs:
            sim = findings.get(m, {}).get(label)
            ref = pub.get(m, {}).get(label)
            err = (sim - ref) / ref if sim is not None and ref else None
            rows.append({"metric": m, "title": title, "config": label, "simulated": sim, "published": ref,
                         "error": err, "kind": "given" if ref is not None else "prediction"})
    return rows


def _write(spec: StudySpec, out_dir: Path, doc: dict[str, Any]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(doc, indent=1, default=float) + "\n")
    rows = doc.get("rows", [])
    if rows:
        with open(out_dir / "key_findings.csv", "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    try:
        _plots(spec, out_dir, doc["results"])
    except Exception as e:  # plots are a by-product; the table and JSON are written
        (out_dir / "plots_error.txt").write_text(f"{type(e).__name__}: {e}\n")


def _plots(spec: StudySpec, out_dir: Path, results: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(spec.configs)
    results = [r for r in results if "missing" not in r]

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        fig.savefig(out_dir / name, dpi=110)
        plt.close(fig)

    io = [r for r in results if r["workload"] == "iometer"]
    if io:
        mixes = list(spec.iometer.mixes)
        for metric, fname, yl in (("iops", "iometer_iops_vs_qd.png", "IOPS"), ("lat_mean_ms", "iometer_latency_vs_qd.png", "mean latency (ms)")):
            fig, axes = plt.subplots(1, len(mixes), figsize=(4 * len(mixes), 3.4), squeeze=False)
            for ax, mix in zip(axes[0], mixes, strict=True):
                for lb in labels:
                    pts = sorted((r["qd"], r[metric]) for r in io if r["config"] == lb and r["mix"] == mix)
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=lb)
                ax.set_xscale("log", base=2)
                ax.set_title(f"Iometer 4K random, {mix}")
                ax.set_xlabel("queue depth")
                ax.set_ylabel(yl)
            axes[0][0].legend(fontsize=7)
            save(fig, fname)
    hb = [r for r in results if r["workload"] == "hotband" and "missing" not in r]
    if hb:
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
        for lb in labels:
            pts = sorted((r["threads"], r["iops"], r["lat_mean_ms"]) for r in hb if r["config"] == lb)
            axes[0].plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=lb)
            axes[1].plot([p[0] for p in pts], [p[2] for p in pts], marker="o", label=lb)
        axes[1].axhline(spec.hotband.target_latency_ms, color="grey", ls="--")
        for ax, yl in zip(axes, ("IOPS", "mean latency (ms)"), strict=True):
            ax.set_xlabel("worker threads")
            ax.set_ylabel(yl)
            ax.set_title("SNIA hot band")
        axes[0].legend(fontsize=7)
        save(fig, "hotband_vs_threads.png")
    web = [dict(p, config=r["config"]) for r in results if r["workload"] == "webserver" for p in r["points"]]
    if web:
        fig, ax = plt.subplots(figsize=(5, 3.4))
        for lb in labels:
            pts = sorted((r["users"], r["iops"]) for r in web if r["config"] == lb)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=lb)
        ax.set_xlabel("users")
        ax.set_ylabel("IOPS")
        ax.set_title("Web server")
        ax.legend(fontsize=7)
        save(fig, "webserver_iops_vs_users.png")
    ol = [r for r in results if r["workload"] == "oltp"]
    if ol:
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
        for r in ol:
            t = [p["t_min"] for p in r["timeline"]]
            axes[0].plot(t, [p["iops"] for p in r["timeline"]], marker="o", label=r["config"])
            axes[1].plot(t, [p["lat_mean_ms"] for p in r["timeline"]], marker="o", label=r["config"])
        for ax, yl in zip(axes, ("IOPS", "mean latency (ms)"), strict=True):
            ax.set_xlabel("minutes")
            ax.set_ylabel(yl)
            ax.set_title("OLTP over time (cache warm-up)")
        axes[0].legend(fontsize=7)
        save(fig, "oltp_over_time.png")
    vd = [r for r in results if r["workload"] == "vdi"]
    if vd:
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
        for r in vd:
            axes[0].plot([x[0] for x in r["series"]], [x[1] for x in r["series"]], label=r["config"])
            axes[1].plot(range(1, len(r["boot_times_s"]) + 1), r["boot_times_s"], marker=".", label=r["config"])
        axes[0].set_xlabel("s")
        axes[0].set_ylabel("IOPS")
        axes[0].set_title("Boot storm IOPS")
        axes[1].set_xlabel("desktop (power-on order)")
        axes[1].set_ylabel("boot time (s)")
        axes[1].set_title("Boot completion")
        axes[0].legend(fontsize=7)
        save(fig, "vdi_boot_storm.png")


# --------------------------------------------------------------------------- command line
def run_study_cli(file: Path, sets: list[tuple[str, Any]], out: Path | None, workers: int | None, console: Any) -> None:
    from rich.table import Table

    spec = load_study(file, sets)
    out_dir = out if out is not None else Path("out") / spec.name
    doc = run_study(spec, out_dir, workers, log=lambda s: console.print(s))
    pub = published(spec, file.parent)
    rows = findings_rows(spec, doc["findings"], pub)
    doc["rows"] = rows
    doc["published"] = pub
    _write(spec, out_dir, doc)
    t = Table(title=f"{spec.name}: key findings (simulated vs published)")
    t.add_column("metric")
    for lb in spec.configs:
        t.add_column(f"{lb}\nsim", justify="right")
        t.add_column("pub", justify="right")
        t.add_column("err", justify="right")

    def f(v: float | None, pct: bool = False) -> str:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "-"
        return f"{100 * v:+.0f}%" if pct else (f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}")

    for m, title in METRICS:
        cells = []
        for lb in spec.configs:
            r = next(x for x in rows if x["metric"] == m and x["config"] == lb)
            cells += [f(r["simulated"]), f(r["published"]), f(r["error"], True)]
        t.add_row(title, *cells)
    console.print(t)
    missing = sorted({r["missing"] for r in doc["results"] if "missing" in r})
    for m in missing:
        console.print(f"missing: {m}")
    for n in spec.notes:
        console.print(f"note: {n}")
    console.print(f"{len(doc['results'])} runs in {doc['wall_s']:.1f} s wall on {doc['workers']} workers; results in {out_dir}/")


def markdown_table(spec: StudySpec, rows: list[dict[str, Any]]) -> str:
    """The key-findings table as Markdown (docs/validation.md)."""

    def f(v: Any, pct: bool = False) -> str:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "–"
        return f"{100 * v:+.0f}%" if pct else (f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}")

    head = "| metric | " + " | ".join(f"{lb} simulated | published | error" for lb in spec.configs) + " |"
    sep = "|---|" + "---|---|---|" * len(spec.configs)
    lines = [head, sep]
    for m, title in METRICS:
        cells = []
        for lb in spec.configs:
            r = next(x for x in rows if x["metric"] == m and x["config"] == lb)
            cells += [f(r["simulated"]), f(r["published"]), f(r["error"], True)]
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
