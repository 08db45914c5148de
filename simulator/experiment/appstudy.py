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
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from simulator.config.base import ConfigModel, load_yaml, validate
from simulator.errors import ConfigError
from simulator.units import Bytes

__all__ = ["StudySpec", "is_study", "load_study", "run_study", "warm_tree"]


# --------------------------------------------------------------------------- spec
class PreconditionSpec(ConfigModel):
    """Preconditioning before the timed runs: functional replay into the flash read caches and/or a
    compressed fill of the drives' non-volatile write cache (see the module docstring)."""

    requests: int = Field(0, ge=0, le=10**9, description="IOs (web server: files) replayed before the timed runs, at most (default 0 = none)")
    chunk: int = Field(
        0, ge=0, le=10**9, description="hot band: replay in chunks of this many IOs and stop once the flash read-hit "
        "ratio of a chunk is within hit_tolerance of the previous chunk's (default 0 = one chunk, no criterion)",
    )
    hit_tolerance: float = Field(0.01, gt=0, le=1, description="steady-state criterion of the chunked replay, absolute hit ratio (default 0.01)")
    nv_cache: Bytes | None = Field(
        None,
        ge=2**20,
        le=2**40,
        description="compressed write-cache preconditioning: the non-volatile (AWC) write cache of every drive is "
        "scaled to this many bytes for the run, so that it fills within the ramp and the run measures the "
        "destage-limited steady state (the sustained rate does not depend on the capacity once it is much larger "
        "than the destage window, tests/test_hdd_awc.py); default none = the profile's size",
    )


class IometerSpec(ConfigModel):
    """Iometer points: one access specification per mix (one line: ``bs``, the mix's % read,
    ``percent_random`` % random) at each queue depth, run through :mod:`simulator.workloads.iometer`."""

    volume: dict[str, Any] = Field(description="raid parameters (members.device is the configuration's drive)")
    mixes: dict[str, Annotated[int, Field(ge=0, le=100)]] = Field(
        description="label -> percent reads (100 = all reads, 0 = all writes), 0-100"
    )
    qd: list[Annotated[int, Field(ge=1, le=65536)]] = Field(description="outstanding IOs (Iometer queue depth), each 1-65536")
    bs: str = Field("4k", description="transfer size (default 4k)")
    percent_random: int = Field(100, ge=0, le=100, description="Iometer % random of every mix (default 100)")
    workers: int = Field(1, ge=1, le=64, description="Iometer disk workers, each with qd outstanding IOs (default 1)")
    runtime: float = Field(2.0, gt=0, le=3600, description="measured seconds per point (default 2)")
    ramp: float = Field(0.5, ge=0, le=3600, description="Iometer ramp-up seconds before measuring (default 0.5)")
    write_ramp: float | None = Field(
        None, ge=0, le=3600, description="ramp-up of the mixes with writes, seconds (time for the AWC cache to reach its "
        "steady fill; default ramp)",
    )
    precondition: PreconditionSpec = Field(
        default_factory=PreconditionSpec, description="preconditioning of the points (nv_cache: compressed AWC fill)"
    )


class HotbandSpec(ConfigModel):
    volume: dict[str, Any] = Field(description="raid parameters")
    jobs: list[dict[str, Any]] = Field(
        default_factory=list,
        description="fio jobs of one worker set, numjobs multiplied by the threads swept; default none = the SNIA "
        "Emerald hot band of simulator.workloads.hotband at iodepth = threads",
    )
    region: tuple[Annotated[float, Field(ge=0, le=100)], Annotated[float, Field(ge=0, le=100)]] = Field(
        (0.0, 100.0), description="(start %, end %) of the volume the hot band covers, each 0-100"
    )
    threads: list[Annotated[int, Field(ge=1, le=65536)]] = Field(
        description="worker threads swept (numjobs multiplier, or the hot band's outstanding IOs), each 1-65536"
    )
    target_latency_ms: float = Field(5.0, gt=0, le=1000, description="mean latency target, ms (default 5)")
    runtime: float = Field(2.0, gt=0, le=3600, description="measured seconds per point")
    ramp: float = Field(0.5, ge=0, le=3600, description="seconds before measuring")
    precondition: PreconditionSpec = Field(default_factory=PreconditionSpec, description="functional warm-up")


class WebSpec(ConfigModel):
    volume: dict[str, Any] = Field(description="raid parameters (with the web volume in volumes)")
    target: str = Field("web", description="name of the web volume inside the RAID")
    app: dict[str, Any] = Field(default_factory=dict, description="WebServerConfig fields except users/target")
    users: list[Annotated[int, Field(ge=1, le=100_000)]] = Field(description="closed-loop users swept, each 1-100000")
    runtime: float = Field(3.0, gt=0, le=3600, description="measured seconds per point")
    ramp: float = Field(0.5, ge=0, le=3600, description="seconds before measuring")
    precondition: PreconditionSpec = Field(default_factory=PreconditionSpec, description="functional warm-up (requests = file reads)")


class OltpSpec(ConfigModel):
    data_volume: dict[str, Any] = Field(description="raid parameters of the data RAID (volumes = the data volumes)")
    log_volume: dict[str, Any] = Field(description="raid parameters of the log RAID")
    app: dict[str, Any] = Field(default_factory=dict, description="OltpConfig fields except data/log/threads")
    baseline: str = Field(description="configuration whose mean latency sets the load")
    target_latency_ms: float = Field(8.0, gt=0, le=1000, description="baseline mean latency the load is chosen for, ms")
    threads: list[Annotated[int, Field(ge=1, le=100_000)]] = Field(
        description="candidate loads (outstanding IOs), ascending, each 1-100000; the one closest to the target is kept"
    )
    checkpoints_min: list[Annotated[float, Field(ge=0, le=43200)]] = Field(
        description="minutes after the start at which the timeline is sampled, each 0-43200 (30 days)"
    )
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
    fit_note: str = Field("", description="how the fitted figures entered the calibration (printed with the report)")
    fitted: dict[str, list[str]] = Field(
        default_factory=dict,
        description="study metric -> configurations whose published figure entered a calibration (reported as fit; "
        "the other published figures are predictions compared with the publication); default none",
    )


class StudySpec(ConfigModel):
    study: Literal["app_study"] = Field(description="marks an application study file")
    name: str = Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.+\-]{0,99}$", description="output directory out/<name>")
    title: str = Field("", description="heading of the report (default the name)")
    description: str = Field("", description="what the study shows")
    seed: int = Field(1, ge=0, le=2**32, description="seed of every run")
    workers: int = Field(2, ge=1, le=64, description="worker processes (default 2)")
    configs: dict[str, dict[str, Any]] = Field(min_length=1, description="configuration label -> drive device spec ({profile, params})")
    awc: dict[str, Any] = Field(
        default_factory=dict,
        description="hdd cache fields set on every drive whose write cache is the non-volatile (AWC) mode, e.g. a "
        "fitted destage_window (calibration/demartek/calibrate_awc.py); default none",
    )
    iometer: IometerSpec | None = None
    hotband: HotbandSpec | None = None
    webserver: WebSpec | None = None
    oltp: OltpSpec | None = None
    vdi: VdiSpec | None = None
    reference: StudyReference | None = None
    notes: list[str] = Field(default_factory=list, description="limitations and assumptions printed with the table")
    methods: list[str] = Field(default_factory=list, description="how each figure is produced (Markdown bullets of the report)")


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

    for label in spec.configs:
        resolve_params(study_drive(spec, label), source, f"configs.{label}")
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


def with_awc(drive: dict[str, Any], cache: dict[str, Any]) -> dict[str, Any]:
    """``drive`` with ``cache`` fields set on every HDD in it whose write cache is the non-volatile
    (persistent / AWC) mode; unchanged when ``cache`` is empty or the drive has no such cache."""
    if not cache:
        return drive
    out = _inline(drive)

    def walk(d: dict[str, Any]) -> None:
        p = d.get("params") or {}
        c = p.get("cache") if d.get("kind") == "hdd" else None
        if isinstance(c, dict) and str(c.get("write_cache", "")).strip().lower() in ("persistent", "awc"):
            c.update(cache)
        if isinstance(p.get("backing"), dict):
            walk(p["backing"])
        if isinstance(p.get("members"), dict) and isinstance(p["members"].get("device"), dict):
            walk(p["members"]["device"])

    walk(out)
    return out


def study_drive(s: StudySpec, label: str, nv_cache: int | None = None) -> dict[str, Any]:
    """The drive of configuration ``label``: the study's ``awc`` fields on its AWC caches and, for a
    compressed preconditioning, the non-volatile cache scaled to ``nv_cache`` bytes."""
    cache = dict(s.awc)
    if nv_cache is not None:
        cache["persistent_size"] = int(nv_cache)
        cache.pop("write_cache_size", None)
    return with_awc(s.configs[label], cache)


def _build(sim: Any, volume: dict[str, Any], drive: dict[str, Any], name: str) -> Any:
    from simulator.devices.registry import build_device

    return build_device(_raid_spec(volume, drive), name, sim.root)


# --------------------------------------------------------------------------- functional warm-up
def warm_tree(dev: Any, ops: np.ndarray, offs: np.ndarray, sizes: np.ndarray) -> tuple[int, int]:
    """Replay accesses (arrays of op, offset, size) without simulated time into every flash read
    cache below ``dev``: through RAID address mapping (reads to one copy, alternating by row; writes
    invalidate data and parity/mirror copies), partitions and ports. Returns (read hits, reads)
    summed over the flash caches reached (the replay's own hit ratio)."""
    from simulator.devices.flashcache import FlashReadCache
    from simulator.devices.partition import Partition
    from simulator.devices.raid.path import PathPort
    from simulator.devices.raid.volume import RaidVolume

    if len(ops) == 0:
        return 0, 0
    if isinstance(dev, FlashReadCache):
        return int(dev.warm(ops, offs, sizes)), int(np.count_nonzero(np.asarray(ops) == 0))
    if isinstance(dev, Partition):
        return warm_tree(dev.base, ops, offs + dev.start, sizes)
    if isinstance(dev, PathPort):
        return warm_tree(dev.member, ops, offs, sizes)
    if hasattr(dev, "dev") and not isinstance(dev, RaidVolume):  # a meter
        return warm_tree(dev.dev, ops, offs, sizes)
    hits = reads = 0
    if isinstance(dev, RaidVolume):
        if not _has_flash(dev):
            return 0, 0
        m_ops, m_mem, m_off, m_size = _map_raid(dev, ops, offs, sizes)
        order = np.argsort(m_mem, kind="stable")
        m_ops, m_mem, m_off, m_size = m_ops[order], m_mem[order], m_off[order], m_size[order]
        bounds = np.searchsorted(m_mem, np.arange(dev.layout.n + 1))
        for i, member in enumerate(dev.members):
            a, b = bounds[i], bounds[i + 1]
            if b > a:
                h, r = warm_tree(member, m_ops[a:b], m_off[a:b], m_size[a:b])
                hits += h
                reads += r
    return hits, reads


def warm_until_steady(dev: Any, chunks: Callable[[int], tuple[np.ndarray, np.ndarray, np.ndarray]], requests: int,
                      chunk: int, tol: float) -> dict[str, Any]:
    """Preconditioning with a steady-state criterion: replay chunks of ``chunk`` IOs
    (``chunks(n)`` -> the next n IOs of the workload's stream as op/offset/size arrays) until the read hit
    ratio of a chunk differs from the previous chunk's by at most ``tol`` (absolute), or
    ``requests`` IOs were replayed. Returns what it did (IOs, hit ratio per chunk, steady or not)."""
    done = 0
    ratios: list[float] = []
    steady = False
    while done < requests:
        n = min(chunk, requests - done)
        ops, offs, sizes = chunks(n)
        h, r = warm_tree(dev, ops, offs, sizes)
        done += n
        ratios.append(h / r if r else 0.0)
        if len(ratios) >= 2 and abs(ratios[-1] - ratios[-2]) <= tol:
            steady = True
            break
    return {"ios": done, "hit_ratio_per_chunk": ratios, "steady": steady, "chunk": chunk, "tol": tol}


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
               glob: dict[str, Any] | None = None) -> dict[str, Any]:
    """One timed fio point on a fresh system (see :func:`_fio_run`)."""
    from simulator.engine import Simulation

    sim = Simulation(seed)
    vol = _build(sim, volume, drive, "vol")
    return _fio_run(sim, vol, jobs, runtime, ramp, glob)


def _fio_run(sim: Any, vol: Any, jobs: list[dict], runtime: float, ramp: float, glob: dict[str, Any] | None = None) -> dict[str, Any]:
    """One timed fio run on ``vol``: IOPS and mean latency with their batch-means 95 % CI half-widths,
    the IOs counted, the MSER steady-state verdict over ~50 IOPS samples of the measured window."""
    from simulator.experiment.execute import _steady
    from simulator.metrics.stats import merge
    from simulator.workloads.runner import run_fio

    g = {"ioengine": "libaio", "direct": 1, "time_based": 1, "runtime": runtime, "ramp_time": ramp, "filename": "vol",
         "group_reporting": 1, **(glob or {})}
    g["iops_avg_time"] = max(1, int(1000 * float(g["runtime"]) / 50))  # ms: ~50 samples for the MSER verdict
    fill0: list[float | None] = []
    if _nv_fill(vol) is not None:
        mark = sim.env.timeout(float(g.get("ramp_time") or 0.0))
        mark.callbacks.append(lambda _ev: fill0.append(_nv_fill(vol)))
    res = run_fio(sim, [vol], jobs, g)
    job = merge(list(res)) if len(res) > 1 else res[0]
    out: dict[str, Any] = {"iops": 0.0, "lat_mean_ms": 0.0}
    n = 0
    lat = 0.0
    iops_hw2 = lat_hw2 = 0.0
    dirs = list(job.present_dirs())
    for d in dirs:
        out[f"{d.name}_iops"] = d.iops
        out["iops"] += d.iops
        cnt = d.total_ios
        n += cnt
        lat += d.lat.mean_ns / 1e6 * cnt
        if d.iops_ci is not None:
            iops_hw2 += ((d.iops_ci.hi - d.iops_ci.lo) / 2.0) ** 2
    out["lat_mean_ms"] = lat / n if n else 0.0
    for d in dirs:
        ci = d.lat.mean_ci
        if ci is not None and n:
            lat_hw2 += (d.total_ios / n * (ci.hi - ci.lo) / 2.0 / 1e6) ** 2
    out["iops_ci"] = math.sqrt(iops_hw2)
    out["lat_ci_ms"] = math.sqrt(lat_hw2)
    out["ios"] = n
    out["runtime_s"] = float(g["runtime"])
    out["ramp_s"] = float(g.get("ramp_time") or 0.0)
    st = _steady(list(res))
    out["steady"] = {k: {"steady": v["steady"], "warmup_s": v["warmup_s"], "bias": v["bias"], "message": v["message"]} for k, v in st.items()}
    out["flash"] = _flash_stats(vol)
    out["nv_fill"] = f1 = _nv_fill(vol)
    if f1 is not None and fill0:
        # the AWC caches' own steady state: their fill no longer climbs (destage keeps up) or it has
        # reached the high watermark (destage competes with host IO there)
        hw = min(c.cfg.cache.high_watermark for c in _awc_drives(vol))
        out["nv_fill_ramp_end"] = fill0[0]
        out["nv_steady"] = bool(f1 - fill0[0] <= 0.05 or f1 >= 0.9 * hw)
    return out


def _awc_drives(vol: Any) -> list[Any]:
    from simulator.devices.hdd import HDD

    return [c for c in vol.walk() if isinstance(c, HDD) and c.cfg.cache.write_cache == "persistent"]


def _nv_fill(vol: Any) -> float | None:
    """Mean fill of the drives' non-volatile write caches now (None without one)."""
    fills = [c.stats()["hdd"]["dirty_bytes"] / c.cfg.cache.write_cache_bytes() for c in _awc_drives(vol)]
    return float(np.mean(fills)) if fills else None


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


def iometer_point(io: IometerSpec, mix: str, qd: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """fio ``(global, jobs)`` of one Iometer point: the mix as an access specification of
    :mod:`simulator.workloads.iometer` (one line) at ``qd`` outstanding IOs per worker."""
    from simulator.workloads.iometer import IometerSpec as IometerSetup
    from simulator.workloads.iometer import iometer_jobs

    pct = io.mixes[mix]
    ramp = io.ramp if pct >= 100 or io.write_ramp is None else io.write_ramp
    setup = IometerSetup.model_validate({
        "run_time": io.runtime, "ramp_up_time": ramp, "workers": io.workers, "outstanding_ios": qd,
        "targets": ["vol"],
        "access_specification": {"name": f"{io.bs} {pct}% read {io.percent_random}% random",
                                 "lines": [{"size": io.bs, "percent_read": pct, "percent_random": io.percent_random}]},
    })
    return iometer_jobs(setup)


def task_iometer(spec: dict, label: str, mix: str, qd: int) -> dict[str, Any]:
    s = StudySpec.model_validate(spec)
    io = s.iometer
    glob, jobs = iometer_point(io, mix, qd)
    drive = study_drive(s, label, io.precondition.nv_cache)
    r = _fio_point(io.volume, drive, jobs, io.runtime, float(glob["ramp_time"]), s.seed, glob=glob)
    return {"workload": "iometer", "config": label, "mix": mix, "qd": qd, **r}


def hotband_jobs(hb: HotbandSpec, threads: int) -> list[dict[str, Any]]:
    """The fio jobs of one hot-band point (raises ImportError while the SNIA hot band is missing)."""
    if hb.jobs:
        return [dict(j, numjobs=int(j.get("numjobs", 1)) * threads) for j in hb.jobs]
    from simulator.workloads.hotband import hotband_job

    job = hotband_job(threads, runtime=hb.runtime, ramp_time=hb.ramp, region=tuple(hb.region))
    return [job]


def task_hotband(spec: dict, label: str) -> dict[str, Any]:
    """The hot-band sweep of one configuration on one system, threads ascending (as the vdbench
    script runs its thread counts one after the other on the same storage): preconditioned once
    (functional replay of the hot band into the flash caches until their hit ratio is steady; the
    compressed AWC fill of ``precondition.nv_cache``), then one timed point per thread count."""
    from simulator.engine import Simulation

    s = StudySpec.model_validate(spec)
    hb = s.hotband
    threads = sorted(hb.threads)
    try:
        jobs = {th: hotband_jobs(hb, th) for th in threads}
    except ImportError as e:
        return {"workload": "hotband", "config": label, "missing": f"SNIA hot band not available: {e}"}
    sim = Simulation(s.seed)
    vol = _build(sim, hb.volume, study_drive(s, label, hb.precondition.nv_cache), "vol")
    pre: dict[str, Any] = {"ios": 0}
    pc = hb.precondition
    if pc.requests and _has_flash(vol):
        if hb.jobs:
            k = [0]

            def chunks(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
                k[0] += 1  # every chunk its own draws (sequential streams restart at their start)
                return _fio_stream(jobs[threads[0]], vol, n, s.seed + 7919 * k[0])
        else:
            from simulator.workloads.hotband import HotbandStreamGen

            chunks = HotbandStreamGen(vol.capacity, region=tuple(hb.region), seed=s.seed).take

        pre = warm_until_steady(vol, chunks, pc.requests, pc.chunk or pc.requests, pc.hit_tolerance)
    points = []
    for th in threads:
        r = _fio_run(sim, vol, jobs[th], hb.runtime, hb.ramp)
        points.append({"threads": th, **r})
    return {"workload": "hotband", "config": label, "points": points, "precondition": pre}


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
    raid = _build(sim, w.volume, study_drive(s, label), "web")
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
        t0 = sim.env.now + w.ramp
        r = run_app(sim, cfg, {"web": vol}, runtime=w.runtime, ramp=w.ramp, bin_s=w.runtime / 10)
        points.append({"users": users, "iops": r.iops, "iops_ci": _bins_ci(r.series, t0, sim.env.now, w.runtime / 10),
                       "ios": r.ios, "runtime_s": w.runtime, "ramp_s": w.ramp, "lat_mean_ms": r.lat_mean_ms, "mb_s": r.mb_s,
                       "flash": _flash_stats(raid), **r.extra})
    return {"workload": "webserver", "config": label, "points": points, "warm_ios": warmed}


def _oltp_system(sim: Any, s: StudySpec, label: str) -> tuple[dict[str, Any], list[str], Any, Any]:
    o = s.oltp
    data = _build(sim, o.data_volume, study_drive(s, label), "data")
    log = _build(sim, o.log_volume, study_drive(s, label), "log")
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
        t0 = sim.env.now + o.ramp
        r = run_app(sim, cfg, devs, runtime=o.sample_s, ramp=o.ramp, bin_s=o.sample_s / 10)
        iops_prev = r.iops
        t_prev = t + o.sample_s + o.ramp
        points.append({"t_min": cp, "iops": r.iops, "iops_ci": _bins_ci(r.series, t0, sim.env.now, o.sample_s / 10),
                       "ios": r.ios, "lat_mean_ms": r.lat_mean_ms, "flash": _flash_stats(data), "nv_fill": _nv_fill(data)})
    last = points[-1]
    return {"workload": "oltp", "config": label, "threads": threads, "timeline": points, "iops": last["iops"],
            "iops_ci": last["iops_ci"], "ios": last["ios"], "sample_s": o.sample_s, "ramp_s": o.ramp,
            "lat_mean_ms": last["lat_mean_ms"], "replayed_ios": replayed}


def _bins_ci(series: list[tuple[float, float, float]], t0: float, t1: float, bin_s: float) -> float | None:
    """95 % half-width of the mean IOPS by batch means over the time bins of ``series`` (t, IOPS,
    latency) lying wholly inside [t0, t1] (Student t; None with fewer than 3 bins)."""
    from scipy.stats import t as student

    x = np.array([v for b, v, _ in series if b >= t0 - 1e-9 and b + bin_s <= t1 + 1e-9])
    if x.size < 3:
        return None
    return float(student.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))


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
    raid = _build(sim, v.volume, study_drive(s, label), "vdi")
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
    import os
    import resource

    t0 = time.perf_counter()
    load0 = os.getloadavg()
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
            tasks.append((task_hotband, (raw, label)))
        if spec.webserver is not None:
            tasks.append((task_web, (raw, label)))
    # longest first (longest-processing-time scheduling on the workers: the makespan stays close to
    # the total CPU / workers), by the measured cost of each task kind (_cost); the OLTP load search
    # at the front (short); the OLTP timelines join the order once the load is chosen
    first = [(task_oltp_load, (raw, th)) for th in spec.oltp.threads] if spec.oltp is not None else []
    flash = {lb: _spec_has_flash(d) for lb, d in spec.configs.items()}
    tasks.sort(key=lambda t: -_cost(t[0], t[1], flash))
    pending = deque([*first, *tasks])
    threads = None
    loads: list[dict[str, Any]] = []
    with ProcessPoolExecutor(max_workers=nw) as pool:
        running: dict[Any, Callable] = {}
        while pending or running:
            while pending and len(running) < nw:
                fn, args = pending.popleft()
                running[pool.submit(_task, fn, *args)] = fn
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for f in done:
                fn = running.pop(f)
                r = f.result()
                results.append(r)
                if fn is task_oltp_load:
                    loads.append(r)
                    if len(loads) == len(first):
                        threads = _pick_load(loads, spec.oltp.target_latency_ms)
                        log(f"oltp: load chosen on {spec.oltp.baseline}: {threads} outstanding IOs")
                        # the timelines take their place in the longest-first order
                        pending = deque(sorted([*pending, *((task_oltp_timeline, (raw, label, threads)) for label in spec.configs)],
                                               key=lambda t: -_cost(t[0], t[1], flash)))
                else:
                    log(f"{r.get('workload')} {r.get('config')} done in {r.get('wall_s', 0):.1f} s")
    # completion order varies between runs; the document lists the runs in a fixed order
    results.sort(key=lambda r: json.dumps([str(r.get(k)) for k in ("workload", "config", "mix", "qd", "threads")]))
    findings = _findings(spec, results)
    usage = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    user = sum(u.ru_utime for u in usage)
    system = sum(u.ru_stime for u in usage)
    cpu = user + system
    by_kind: dict[str, float] = {}
    for r in results:
        k = str(r.get("workload"))
        by_kind[k] = by_kind.get(k, 0.0) + float(r.get("cpu_s", 0.0))
    doc = {"name": spec.name, "wall_s": time.perf_counter() - t0, "cpu_s": cpu, "cpu_user_s": user, "cpu_system_s": system,
           "cpu_by_workload_s": by_kind, "workers": nw, "load_start": list(load0),
           "load_end": list(os.getloadavg()), "results": results, "findings": findings, "oltp_threads": threads}
    if out_dir is not None:
        _write(spec, out_dir, doc)
    return doc


#: CPU seconds of each task kind on this study's settings (2 GHz-class core, quiet machine; measured
#: 2026-11-23, the flash configuration in parentheses): VDI boot storm 25-30, hot band 2 (12), web
#: server 2 (9), OLTP timeline 3 (15), Iometer point <= 1.5 growing with the queue depth. Only the
#: order of the tasks uses them.
_COST = {"task_vdi": (30.0, 30.0), "task_hotband": (2.5, 12.0), "task_web": (2.0, 9.0), "task_oltp_timeline": (3.0, 15.0)}


def _spec_has_flash(drive: dict[str, Any]) -> bool:
    """True if the drive spec (profiles resolved) contains a flash read cache (TurboBoost)."""
    return '"flash_read_cache"' in json.dumps(_inline(drive))


def _cost(fn: Callable, args: tuple, flash: dict[str, bool]) -> float:
    """Estimated CPU seconds of one task (for longest-first scheduling)."""
    if fn is task_iometer:
        return 0.1 * args[3] ** 0.5 * (2.0 if args[2] != "read" else 1.0)
    c = _COST.get(fn.__name__)
    return c[1 if flash.get(args[1]) else 0] if c else 1.0


def _task(fn: Callable, *args: Any) -> dict[str, Any]:
    """Run one task in a worker; the simulated system is freed before the next task."""
    import gc

    t = time.perf_counter()
    c = time.process_time()
    try:
        r = fn(*args)
    except Exception as e:  # one failed task is reported, the others still count
        import traceback

        r = {"workload": fn.__name__.removeprefix("task_"), "config": args[1] if len(args) > 1 else None,
             "missing": f"task {fn.__name__}{args[1:]!r} failed: {type(e).__name__}: {e}", "traceback": traceback.format_exc()}
    finally:
        gc.collect()
    r["wall_s"] = time.perf_counter() - t
    r["cpu_s"] = time.process_time() - c
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
        hb = [p for r in rs if r["workload"] == "hotband" for p in r["points"]]
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
            fit = spec.reference is not None and label in spec.reference.fitted.get(m, [])
            rows.append({"metric": m, "title": title, "config": label, "simulated": sim, "published": ref,
                         "error": err, "kind": "fit" if fit else ("given, predicted" if ref is not None else "prediction")})
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
    hb = [dict(p, config=r["config"]) for r in results if r["workload"] == "hotband" for p in r["points"]]
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
    console.print(f"{len(doc['results'])} runs in {doc['wall_s']:.1f} s wall ({doc.get('cpu_s', 0):.0f} s CPU) on "
                  f"{doc['workers']} workers; results in {out_dir}/ (key_findings.md: the report)")
    (out_dir / "key_findings.md").write_text(report_markdown(spec, doc, f"simrun {file}" + "".join(f" --set {k}={v}" for k, v in sets)))


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


def _num(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}"


def _pm(v: Any, ci: Any) -> str:
    if ci is None:
        return _num(v)
    return f"{_num(v)} ± {ci:,.0f}" if abs(v) >= 100 else f"{_num(v)} ± {ci:.2f}"


def _steady_word(st: dict[str, Any] | None) -> str:
    if not st:
        return "–"
    bad = [k for k, v in st.items() if v.get("steady") is False]
    unk = [k for k, v in st.items() if v.get("steady") is None]
    return ("not steady: " + ", ".join(bad)) if bad else ("too short to judge" if unk else "steady (MSER)")


def _cpu_split(doc: dict[str, Any]) -> str:
    """", U s user + S s system; per workload: ..." of the run's CPU time (empty for older documents)."""
    if "cpu_user_s" not in doc:
        return ""
    kinds = ", ".join(f"{k} {v:.0f} s" for k, v in sorted(doc.get("cpu_by_workload_s", {}).items(), key=lambda kv: -kv[1]))
    return f": {doc['cpu_user_s']:.0f} s user + {doc['cpu_system_s']:.0f} s system; tasks by workload: {kinds}"


def report_markdown(spec: StudySpec, doc: dict[str, Any], command: str) -> str:
    """calibration/demartek/key_findings.md: the key-findings table (the format `simrun validate`
    reads), which figures were fitted and which predicted, and per figure its run length, IO count,
    95 % CI and steady-state verdict, the preconditioning actually done, the wall/CPU time and load."""
    rows = doc.get("rows") or findings_rows(spec, doc["findings"], doc.get("published") or {})
    res = [r for r in doc["results"] if "missing" not in r]
    labels = list(spec.configs)
    la, lb = doc.get("load_start") or [0, 0, 0], doc.get("load_end") or [0, 0, 0]
    fit = [f"{r['title']} ({r['config']})" for r in rows if r["kind"] == "fit"]
    given = [f"{r['title']} ({r['config']})" for r in rows if r["kind"] == "given, predicted"]
    out = [
        f"## {spec.title or spec.name}",
        "",
        f"Run of `{command}` on {time.strftime('%Y-%m-%d')}: {len(doc['results'])} runs, {doc['wall_s']:.0f} s wall, "
        f"{doc.get('cpu_s', 0):.0f} s CPU (all processes{_cpu_split(doc)}) on {doc['workers']} workers; load average (1 min) "
        f"{la[0]:.1f} at the start, {lb[0]:.1f} at the end (`os.getloadavg`). Published "
        "figures: `calibration/reference/demartek_15e900.csv` (OLTP IOPS, Iometer random-write IOPS, web server "
        "IOPS; Demartek, commissioned by Seagate); the other four metrics are predictions.",
        "",
        "**Fitted**: " + ("; ".join(fit) if fit else "nothing") + (". " + spec.reference.fit_note.strip() if fit and spec.reference else "")
        + " **Given but predicted** (not in any fit, compared with the publication): " + ("; ".join(given) or "none") + ".",
        "",
        markdown_table(spec, rows).rstrip(),
        "",
        "### Run lengths, confidence intervals, steady state",
        "",
        "± = 95 % confidence half-width by batch means (fio's IOPS CI for the Iometer and hot-band points; 10 time "
        "bins of the measured window for the web server and OLTP). The VDI boot storm is one deterministic replay "
        "(no CI; peak = highest 1 s bin).",
        "",
        "| figure | configuration | value | measured | IOs | steady state |",
        "|---|---|---|---|---|---|",
    ]
    io = spec.iometer
    for label in labels:
        wr = [r for r in res if r["workload"] == "iometer" and r["config"] == label and io and io.mixes[r["mix"]] <= 0]
        if wr:
            r = max(wr, key=lambda x: x["qd"])
            out.append(f"| random write IOPS, QD {r['qd']} | {label} | {_pm(r['iops'], r.get('iops_ci'))} | "
                       f"{r.get('runtime_s', 0):g} s after {r.get('ramp_s', 0):g} s ramp | {r.get('ios', 0):,} | "
                       f"{_steady_word(r.get('steady'))}; AWC fill {_num(r.get('nv_fill_ramp_end'))} at ramp end, "
                       f"{_num(r.get('nv_fill'))} at the end{'' if r.get('nv_steady', True) else ' (still filling)'} |")
    for label in labels:
        hb = [p for r in res if r["workload"] == "hotband" and r["config"] == label for p in r["points"]]
        for p in sorted(hb, key=lambda x: x["threads"]):
            out.append(f"| hot band, {p['threads']} threads: IOPS / mean latency ms | {label} | {_pm(p['iops'], p.get('iops_ci'))} / "
                       f"{_pm(p['lat_mean_ms'], p.get('lat_ci_ms'))} | {p.get('runtime_s', 0):g} s after {p.get('ramp_s', 0):g} s | "
                       f"{p.get('ios', 0):,} | {_steady_word(p.get('steady'))} |")
    for label in labels:
        web = [p for r in res if r["workload"] == "webserver" and r["config"] == label for p in r["points"]]
        if web:
            p = max(web, key=lambda x: x["users"])
            out.append(f"| web server IOPS, {p['users']} users | {label} | {_pm(p['iops'], p.get('iops_ci'))} | "
                       f"{p.get('runtime_s', 0):g} s after {p.get('ramp_s', 0):g} s | {p.get('ios', 0):,} | – |")
    for label in labels:
        ol = [r for r in res if r["workload"] == "oltp" and r["config"] == label]
        if ol:
            r = ol[0]
            out.append(f"| OLTP IOPS, {r['timeline'][-1]['t_min']:g} min sample | {label} | {_pm(r['iops'], r.get('iops_ci'))} | "
                       f"{r.get('sample_s', 0):g} s after {r.get('ramp_s', 0):g} s | {r.get('ios', 0):,} | – |")
    for label in labels:
        vd = [r for r in res if r["workload"] == "vdi" and r["config"] == label]
        if vd:
            r = vd[0]
            out.append(f"| boot storm peak IOPS / span s | {label} | {_num(r['peak_iops'])} / {_num(r['boot_span_s'])} | "
                       f"whole storm ({_num(r['storm_s'])} s) | {r.get('submitted', 0):,} | – |")
    out += ["", "### Preconditioning", ""]
    if io is not None and io.precondition.nv_cache:
        wr = io.write_ramp if io.write_ramp is not None else io.ramp
        out.append(f"- Iometer: compressed AWC fill: each AWC drive's non-volatile cache scaled to "
                   f"{io.precondition.nv_cache / 2**20:g} MiB for these points, so that it reaches its steady fill within "
                   f"the {wr:g} s ramp of the mixes with writes; the points measure the destage-limited steady state (the AWC fill at the end "
                   "of each point is in the table above; tests/test_hdd_awc.py shows the sustained rate does not depend on "
                   "the capacity). Iometer mixes run as access specifications of `simulator.workloads.iometer` (one line, "
                   f"{io.bs}, {io.percent_random} % random, {io.workers} worker, QD = outstanding IOs).")
    for r in res:
        if r["workload"] == "hotband" and r.get("precondition", {}).get("ios"):
            pc = r["precondition"]
            hr = ", ".join(f"{h:.3f}" for h in pc["hit_ratio_per_chunk"])
            pts = r["points"]
            rate = max((p["iops"] for p in pts), default=0.0)
            hours = pc["ios"] / rate / 3600 if rate else float("nan")
            out.append(f"- Hot band, {r['config']}: {pc['ios']:,} hot-band IOs replayed functionally into the TurboBoost "
                       f"caches (no simulated time; ≈ {hours:.1f} h of the hot band at the highest simulated rate, "
                       f"{rate:,.0f} IOPS), in chunks of {pc['chunk']:,}; read-hit ratio per chunk {hr}; "
                       + ("stopped: a chunk moved it by ≤ " + f"{pc['tol']:g}" if pc["steady"] else "limit reached before the criterion held")
                       + ". The thread counts then ran in ascending order on the same system (as the vdbench script does).")
        if r["workload"] == "webserver" and r.get("warm_ios"):
            out.append(f"- Web server, {r['config']}: {r['warm_ios']:,} IOs of file reads replayed into the flash caches "
                       "before the timed runs; the user counts then ran in ascending order on the same system.")
        if r["workload"] == "oltp" and r.get("replayed_ios"):
            out.append(f"- OLTP, {r['config']}: between the timeline samples the data IOs the database issued in the "
                       f"elapsed minutes were replayed functionally ({r['replayed_ios']:,} IOs in all).")
    pick = doc.get("oltp_threads")
    if pick is not None:
        out += ["", f"OLTP load chosen on the baseline ({spec.oltp.baseline}): {pick} outstanding IOs (candidate closest "
                f"to {spec.oltp.target_latency_ms:g} ms mean latency), kept for every configuration."]
    miss = sorted({r["missing"] for r in doc["results"] if "missing" in r})
    if miss:
        out += ["", "Missing runs: " + "; ".join(miss)]
    if spec.methods:
        out += ["", "### How each figure is produced", "", *[f"- {m.strip()}" for m in spec.methods]]
    if spec.notes:
        out += ["", "Notes:", "", *[f"- {n}" for n in spec.notes]]
    return "\n".join(out) + "\n"
