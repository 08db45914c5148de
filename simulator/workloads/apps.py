"""Application workloads: a web server, an OLTP database and a VDI boot storm.

Each application is a frozen config model (its shape: file population, mix, hot sets, boot profile)
and an *IO source* per job thread: an object whose ``next_io(now)`` returns the next IO as
``(file index, op, offset, size, fua)`` or None when the application has nothing more to do. The
IOs are issued by the one IO driver, :class:`simulator.workloads.runner.Workload` (its ``io_source``
hook): the application decides *what* is read or written, the runner keeps the closed loop, the
start delays, the ramp and the stop conditions of fio. :func:`run_app` builds the fio jobs of an
application, runs them against named devices and returns an :class:`AppResult` (IOPS, latency,
time series, per-thread end times).

* **Web server** (:class:`WebServerConfig`): ``files`` files with sizes uniform in
  [``min_file``, ``max_file``] (mean 2 MiB for 15 KiB..4 MiB), laid out one after the other on the
  volume (4 KiB aligned). A random subset of files totalling ``hot_bytes`` receives ``hot_share`` of
  the requests, the others the rest, uniformly per file. Each of ``users`` closed-loop users reads a
  whole file, split into IOs of at most ``max_io`` bytes (the volume's maximum transfer), then the
  next file, with no think time. The data then crosses the server's network link (a 10 GbE link
  modelled as a one-lane :class:`~simulator.devices.raid.path.HbaPath` in front of the volume).
* **OLTP** (:class:`OltpConfig`): ``threads`` outstanding IOs (one per database worker thread);
  each data IO is ``io_size`` on one of the data volumes (chosen uniformly), a read with probability
  r/(r+1) for reads:writes = r; ``hot_access`` of the IOs go to ``hot_data`` of each volume's pages
  (``hot_bands`` contiguous bands spread evenly over the volume: tables and indexes whose hot rows
  sit together, not one block at the start), uniformly inside; the rest to the other pages. After every ``1 / log_per_write`` data writes the thread issues a log write: sequential
  on the log volume (one log shared by every thread), ``log_io_size`` bytes, FUA (write-through to
  durable media, as SQL Server's log writes).
* **VDI boot storm** (:class:`VdiBootConfig`): ``desktops`` desktops powered on ``interval`` seconds
  apart (fio ``startdelay``), each replaying one boot IO profile at ``queue_depth`` outstanding IOs:
  reads of the shared OS image (linked clones: every desktop reads the same replica, at the same
  offsets), writes to the desktop's own delta disk. The profile has ``read_bytes`` of reads in
  sequential runs (``read_run`` IOs on average) from random places of the image and
  ``write_share`` of the IOs as writes; IO sizes from ``read_sizes`` / ``write_sizes`` (bssplit
  style). A desktop has booted when its last IO completes.

Time series: :class:`Meter` in front of each target bins completions per ``bin`` seconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, model_validator

from simulator.config.base import ConfigModel
from simulator.devices.base import Device, Op, Request
from simulator.engine import Component, Simulation
from simulator.engine.core import gc_quiet
from simulator.units import Bytes, BytesPerSecond, Seconds
from simulator.workloads.runner import DeviceTap, NullStats

__all__ = [
    "AppResult",
    "Meter",
    "OltpConfig",
    "VdiBootConfig",
    "WebServerConfig",
    "app_config",
    "boot_profile",
    "run_app",
    "web_files",
]

_READ, _WRITE = int(Op.READ), int(Op.WRITE)
_ALIGN = 4096


# --------------------------------------------------------------------------- configs
class WebServerConfig(ConfigModel):
    """A read-only web server over a file population on one volume."""

    app: Literal["webserver"] = Field("webserver", description="application kind")
    target: str = Field("web", description="device name of the volume holding the files (default web)")
    files: int = Field(600_000, ge=1, le=100_000_000, description="number of files (default 600000)")
    min_file: Bytes = Field("15KiB", ge=512, le=2**40, description="smallest file, bytes (default 15KiB)")
    max_file: Bytes = Field("4MiB", ge=512, le=2**40, description="largest file, bytes (default 4MiB; uniform sizes, mean ~2MiB)")
    hot_bytes: Bytes = Field("180GB", ge=0, le=2**60, description="bytes of files in the hot set (default 180GB)")
    hot_share: float = Field(0.8, ge=0, le=1, description="share of requests to the hot set, 0..1 (default 0.8)")
    users: int = Field(5, ge=1, le=100_000, description="closed-loop users, each reading one file at a time (default 5)")
    max_io: Bytes = Field("256KiB", ge=4096, le=2**30, description="largest IO the volume takes: files are read in IOs of at most this, bytes (default 256KiB)")
    link_rate: BytesPerSecond | None = Field(
        "10Gb/s", gt=0, le=1e13, description="network link the data is served through, bytes/s (default 10Gb/s; none = no link)"
    )
    link_efficiency: float = Field(
        0.94, gt=0, le=1, description="payload share of the link rate (Ethernet+IP+TCP headers at 1500 MTU ~ 0.94), default 0.94"
    )

    @model_validator(mode="after")
    def _check(self) -> WebServerConfig:
        if self.min_file > self.max_file:
            raise ValueError("min_file must not exceed max_file")
        return self


class OltpConfig(ConfigModel):
    """An OLTP database: random data IO on data volumes, sequential FUA log writes."""

    app: Literal["oltp"] = Field("oltp", description="application kind")
    data: list[str] = Field(min_length=1, max_length=64, description="device names of the data volumes")
    log: str | None = Field(None, description="device name of the log volume (default none: no log writes)")
    threads: int = Field(32, ge=1, le=100_000, description="outstanding IOs (database worker threads), default 32")
    io_size: Bytes = Field("8KiB", ge=512, le=2**24, description="data IO size, bytes (default 8KiB, a SQL Server page)")
    read_write_ratio: float = Field(9.7, gt=0, le=1e6, description="data reads per data write (default 9.7)")
    hot_data: float = Field(0.2, gt=0, le=1, description="share of each volume's pages that is hot, 0..1 (default 0.2)")
    hot_access: float = Field(0.8, ge=0, le=1, description="share of data IOs to the hot pages, 0..1 (default 0.8)")
    hot_bands: int = Field(
        10, ge=1, le=10_000, description="the hot pages form this many equal contiguous bands spread evenly over each volume (default 10)"
    )
    log_io_size: Bytes = Field("8KiB", ge=512, le=2**24, description="log write size, bytes (default 8KiB)")
    log_per_write: float = Field(1.0, ge=0, le=64, description="log writes per data write (default 1)")


class VdiBootConfig(ConfigModel):
    """A boot storm: desktops powered on one after the other, each replaying a boot IO profile."""

    app: Literal["vdi_boot"] = Field("vdi_boot", description="application kind")
    target: str = Field("datastore", description="device name of the datastore volume (default datastore)")
    desktops: int = Field(60, ge=1, le=10_000, description="desktops (default 60)")
    interval: Seconds = Field(3.0, ge=0, le=3600, description="seconds between power-ons (default 3)")
    queue_depth: int = Field(4, ge=1, le=256, description="outstanding IOs of one booting desktop (default 4)")
    image_size: Bytes = Field("32GiB", ge=2**20, le=2**50, description="shared OS image (replica) size, bytes (default 32GiB)")
    delta_size: Bytes = Field("4GiB", ge=2**20, le=2**50, description="each desktop's delta disk, bytes (default 4GiB)")
    read_bytes: Bytes = Field("560MB", ge=4096, le=2**40, description="bytes read per boot (default 560MB)")
    write_share: float = Field(0.16, ge=0, lt=1, description="share of the boot's IOs that are writes (default 0.16)")
    read_run: float = Field(4.0, ge=1, le=10_000, description="mean length of a sequential run of reads, IOs (default 4)")
    read_sizes: dict[str, Annotated[float, Field(le=1e6)]] = Field(
        default_factory=lambda: {"4KiB": 20, "16KiB": 20, "32KiB": 20, "64KiB": 20, "256KiB": 20},
        description="read size -> weight (bssplit style), each weight at most 1e6, default 4/16/32/64/256 KiB at 20 each",
    )
    write_sizes: dict[str, Annotated[float, Field(le=1e6)]] = Field(
        default_factory=lambda: {"4KiB": 50, "32KiB": 50},
        description="write size -> weight, each at most 1e6, default 4 KiB and 32 KiB at 50 each",
    )
    seed: int = Field(1, ge=0, le=2**32, description="seed of the boot profile (one profile replayed by every desktop), default 1")


AppConfig = WebServerConfig | OltpConfig | VdiBootConfig
_APPS: dict[str, type[ConfigModel]] = {"webserver": WebServerConfig, "oltp": OltpConfig, "vdi_boot": VdiBootConfig}


def app_config(data: dict[str, Any], source: str | None = None, prefix: str = "") -> AppConfig:
    """Validate an application mapping ({app: webserver|oltp|vdi_boot, ...})."""
    from simulator.config.base import validate
    from simulator.errors import ConfigError

    kind = data.get("app") if isinstance(data, dict) else None
    if kind not in _APPS:
        raise ConfigError(f"unknown application (known: {', '.join(sorted(_APPS))})", source=source, field=f"{prefix}app" if prefix else "app")
    return validate(_APPS[kind], data, source=source, prefix=prefix.rstrip("."))  # type: ignore[return-value]


# --------------------------------------------------------------------------- metering
class Meter(DeviceTap):
    """A device seen through a meter: bins completions (count, bytes, latency sum) per ``bin``
    seconds, per op; also totals over a window [``t0``, inf)."""

    def __init__(self, dev: Device, bin_s: float = 1.0):
        super().__init__(dev)
        self.bin = float(bin_s)
        self.t0 = 0.0
        self.bins: dict[int, list[float]] = {}  # bin -> [reads, writes, bytes, latency sum]
        self.n = [0, 0, 0, 0]
        self.lat_sum = 0.0
        self.nbytes = 0

    def start_window(self, t: float) -> None:
        self.t0 = t
        self.n = [0, 0, 0, 0]
        self.lat_sum = 0.0
        self.nbytes = 0

    def _observe(self, r: Request, now: float) -> None:
        lat = now - r.t_submit
        b = int(now / self.bin)
        row = self.bins.get(b)
        if row is None:
            row = self.bins[b] = [0, 0, 0, 0.0]
        op = r.op
        if op <= 1:
            row[op] += 1
        row[2] += r.size
        row[3] += lat
        if now >= self.t0:
            self.n[op] += 1
            self.lat_sum += lat
            self.nbytes += r.size


# --------------------------------------------------------------------------- web server
def web_files(cfg: WebServerConfig, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(offsets, sizes, hot file indices, cold file indices) of the file population."""
    lo = int(cfg.min_file) // 512
    hi = int(cfg.max_file) // 512
    sizes = rng.integers(lo, hi + 1, size=cfg.files, dtype=np.int64) * 512
    alloc = (sizes + _ALIGN - 1) // _ALIGN * _ALIGN
    offsets = np.concatenate(([0], np.cumsum(alloc)[:-1])).astype(np.int64)
    order = rng.permutation(cfg.files)
    cum = np.cumsum(sizes[order])
    # the hot set: files in random order until their bytes reach hot_bytes (that file included)
    nhot = int(np.searchsorted(cum, int(cfg.hot_bytes), side="left")) + 1 if cfg.hot_bytes > 0 else 0
    nhot = min(nhot, cfg.files)
    return offsets, sizes, np.sort(order[:nhot]), np.sort(order[nhot:])


def pick_files(files: tuple, share: float, rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` file requests: a hot file (uniform over the hot set) with probability ``share``, else a
    cold one; returns file indices (negative: hot, as -1 - index, so callers can count them)."""
    _, _, hot, cold = files
    u = rng.random((2, n))
    is_hot = u[0] < share
    out = np.empty(n, dtype=np.int64)
    if len(hot):
        out[is_hot] = -1 - hot[np.minimum((u[1][is_hot] * len(hot)).astype(np.int64), len(hot) - 1)]
    if len(cold):
        out[~is_hot] = cold[np.minimum((u[1][~is_hot] * len(cold)).astype(np.int64), len(cold) - 1)]
    return out


def web_stream(files: tuple, cfg: WebServerConfig, rng: np.random.Generator, nfiles: int) -> tuple[np.ndarray, np.ndarray]:
    """The IOs (offsets, sizes) of ``nfiles`` whole-file reads, in order (a warm-up stream)."""
    offsets, sizes = files[0], files[1]
    f = pick_files(files, _hot_share(files, cfg), rng, nfiles)
    f = np.where(f < 0, -1 - f, f)
    mx = int(cfg.max_io)
    k = (sizes[f] + mx - 1) // mx
    idx = np.repeat(np.arange(nfiles), k)
    j = np.arange(len(idx)) - np.repeat(np.cumsum(k) - k, k)
    off = offsets[f][idx] + j * mx
    size = np.minimum(mx, sizes[f][idx] - j * mx)
    return off, size


def _hot_share(files: tuple, cfg: WebServerConfig) -> float:
    if not len(files[2]):
        return 0.0
    return cfg.hot_share if len(files[3]) else 1.0


class _WebUser:
    def __init__(self, files: tuple, cfg: WebServerConfig, rng: np.random.Generator):
        self.files = files
        self.offsets, self.sizes = files[0], files[1]
        self.share = _hot_share(files, cfg)
        self.max_io = int(cfg.max_io)
        self.rng = rng
        self._picks: list[int] = []
        self.pos = 0
        self.left = 0
        self.files_read = 0
        self.hot_reads = 0

    def next_io(self, now: float):
        if self.left <= 0:
            if not self._picks:
                self._picks = pick_files(self.files, self.share, self.rng, 1024)[::-1].tolist()
            i = self._picks.pop()
            if i < 0:
                i = -1 - i
                self.hot_reads += 1
            self.pos = int(self.offsets[i])
            self.left = int(self.sizes[i])
            self.files_read += 1
        n = min(self.left, self.max_io)
        off = self.pos
        self.pos += n
        self.left -= n
        return 0, _READ, off, n, False


# --------------------------------------------------------------------------- OLTP
class _OltpLog:
    """The one log of the database: a sequential pointer over the log volume."""

    def __init__(self, capacity: int, size: int):
        self.size = size
        self.end = capacity // size * size
        self.pos = 0

    def next(self) -> int:
        off = self.pos
        self.pos = off + self.size if off + self.size < self.end else 0
        return off


class _OltpThread:
    def __init__(self, cfg: OltpConfig, caps: Sequence[int], log: _OltpLog | None, rng: np.random.Generator):
        self.nvol = len(cfg.data)
        self.size = int(cfg.io_size)
        nb = cfg.hot_bands
        self.stride = np.array([max(1, c // self.size // nb) for c in caps], dtype=np.int64)  # pages per band period
        self.pages = self.stride * nb
        self.band = np.array([max(1, min(s, round(s * cfg.hot_data))) for s in self.stride], dtype=np.int64)
        self.hot = self.band * nb
        self.p_read = cfg.read_write_ratio / (cfg.read_write_ratio + 1.0)
        self.hot_access = cfg.hot_access
        self.log = log
        self.log_every = cfg.log_per_write
        self._credit = 0.0
        self.rng = rng
        self._buf: list[tuple[int, int, int]] = []
        self.counts = [0, 0, 0]  # data reads, data writes, log writes

    def data_block(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``n`` data IOs: (volume, op, offset) arrays (the one generator of the data IOs)."""
        u = self.rng.random((4, n))
        v = np.minimum((u[0] * self.nvol).astype(np.int64), self.nvol - 1)
        npg, h, st, bw = self.pages[v], self.hot[v], self.stride[v], self.band[v]
        hot = (u[1] < self.hot_access) | (h >= npg)
        kh = np.minimum((u[2] * h).astype(np.int64), h - 1)
        cw = np.maximum(st - bw, 1)
        kc = np.minimum((u[2] * np.maximum(npg - h, 1)).astype(np.int64), np.maximum(npg - h - 1, 0))
        page = np.where(hot, (kh // bw) * st + kh % bw, (kc // cw) * st + bw + kc % cw)
        op = np.where(u[3] < self.p_read, _READ, _WRITE)
        return v, op, page * self.size

    def next_io(self, now: float):
        if self.log is not None and self._credit >= 1.0:
            self._credit -= 1.0
            self.counts[2] += 1
            return self.nvol, _WRITE, self.log.next(), self.log.size, True
        if not self._buf:
            v, op, off = self.data_block(4096)
            self._buf = list(zip(v[::-1].tolist(), op[::-1].tolist(), off[::-1].tolist(), strict=True))
        v, op, off = self._buf.pop()
        if op == _READ:
            self.counts[0] += 1
        else:
            self.counts[1] += 1
            self._credit += self.log_every
        return v, op, off, self.size, False


# --------------------------------------------------------------------------- VDI
def _size_table(split: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
    from simulator.units import parse_size

    sizes = np.array([parse_size(k) for k in split], dtype=np.int64)
    w = np.array([float(v) for v in split.values()], dtype=float)
    if np.any(sizes <= 0) or np.any(sizes % 512) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError("sizes must be positive multiples of 512 bytes with non-negative weights")
    return sizes, w / w.sum()


def boot_profile(cfg: VdiBootConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The boot IO profile replayed by every desktop: arrays (op, offset, size) in issue order;
    read offsets inside the image, write offsets inside a delta disk (relative to its start)."""
    rng = np.random.default_rng(np.random.SeedSequence(cfg.seed, spawn_key=(0x7D1,)))
    rs, rw = _size_table(cfg.read_sizes)
    ws, ww = _size_table(cfg.write_sizes)
    img = int(cfg.image_size)
    delta = int(cfg.delta_size)
    ops: list[int] = []
    offs: list[int] = []
    sizes: list[int] = []
    read = 0
    pos = img  # start a new run first
    wpos = 0
    p_run_end = 1.0 / cfg.read_run
    while read < int(cfg.read_bytes):
        if rng.random() < cfg.write_share:
            s = int(rng.choice(ws, p=ww))
            if wpos + s > delta:
                wpos = 0
            ops.append(_WRITE)
            offs.append(wpos)
            sizes.append(s)
            wpos += s
            continue
        s = int(rng.choice(rs, p=rw))
        if pos + s > img or rng.random() < p_run_end:
            pos = int(rng.integers(0, (img - s) // _ALIGN + 1)) * _ALIGN
        ops.append(_READ)
        offs.append(pos)
        sizes.append(s)
        pos += s
        read += s
    return np.array(ops, dtype=np.int64), np.array(offs, dtype=np.int64), np.array(sizes, dtype=np.int64)


class _Desktop:
    def __init__(self, profile: tuple, image_base: int, delta_base: int):
        self.ops, self.offs, self.sizes = (a.tolist() for a in profile)
        self.n = len(self.ops)
        self.i = 0
        self.image_base = image_base
        self.delta_base = delta_base

    def next_io(self, now: float):
        i = self.i
        if i >= self.n:
            return None
        self.i = i + 1
        op = self.ops[i]
        base = self.image_base if op == _READ else self.delta_base
        return 0, op, base + self.offs[i], self.sizes[i], False


# --------------------------------------------------------------------------- running
@dataclass
class AppResult:
    """What an application run measured (window = after the ramp)."""

    app: str
    window_s: float
    ios: int
    reads: int
    writes: int
    iops: float
    lat_mean_ms: float
    mb_s: float
    series: list[tuple[float, float, float]] = field(default_factory=list)  # (t, IOPS, mean latency ms)
    thread_end: list[float] = field(default_factory=list)
    thread_start: list[float] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _jobs(cfg: AppConfig, runtime: float | None, ramp: float) -> list[dict[str, Any]]:
    base = {"ioengine": "libaio", "direct": 1, "bs": "4k", "sim_slat": 0, "iodepth": 1}
    timed = {"time_based": 1, "runtime": runtime, "ramp_time": ramp} if runtime else {}
    if isinstance(cfg, WebServerConfig):
        return [{**base, **timed, "name": "web", "numjobs": cfg.users, "filename": cfg.target}]
    if isinstance(cfg, OltpConfig):
        names = [*cfg.data, *([cfg.log] if cfg.log else [])]
        return [{**base, **timed, "name": "oltp", "numjobs": cfg.threads, "filename": ":".join(names)}]
    return [
        {**base, "name": f"desktop{i}", "iodepth": cfg.queue_depth, "startdelay": i * float(cfg.interval), "filename": cfg.target}
        for i in range(cfg.desktops)
    ]


def run_app(
    sim: Simulation,
    cfg: AppConfig,
    devices: dict[str, Device],
    *,
    runtime: float | None = None,
    ramp: float = 0.0,
    bin_s: float = 1.0,
    parent: Component | None = None,
) -> AppResult:
    """Run application ``cfg`` against ``devices`` (name -> device) to completion: ``runtime``
    seconds after ``ramp`` (web server, OLTP) or until every desktop has booted (VDI)."""
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload

    if not isinstance(cfg, VdiBootConfig) and not runtime:
        raise ValueError(f"{cfg.app}: a runtime is needed")
    names = {
        WebServerConfig: lambda c: [c.target],
        OltpConfig: lambda c: [*c.data, *([c.log] if c.log else [])],
        VdiBootConfig: lambda c: [c.target],
    }[type(cfg)](cfg)
    for n in names:
        if n not in devices:
            from simulator.errors import ConfigError

            raise ConfigError(f"{cfg.app}: no device {n!r} (devices: {', '.join(sorted(devices))})", field="app")
    link = None
    targets: dict[str, Any] = {}
    meters: list[Meter] = []
    for n in names:
        dev = devices[n]
        if isinstance(cfg, WebServerConfig) and cfg.link_rate is not None:
            link = _network_link(sim, dev, cfg, parent)
            dev = link
        m = Meter(dev, bin_s)
        targets[n] = m
        meters.append(m)
    fjobs = resolve_jobs({}, _jobs(cfg, runtime, ramp), f"app:{cfg.app}")
    rng_root = np.random.SeedSequence(sim.seed if hasattr(sim, "seed") else 1, spawn_key=(0xA99,))
    sources: list[Any] = []

    if isinstance(cfg, WebServerConfig):
        cap = targets[cfg.target].capacity
        files = web_files(cfg, np.random.default_rng(rng_root.spawn(1)[0]))
        end = int(files[0][-1] + files[1][-1])
        if end > cap:
            raise ValueError(f"webserver: the files ({end:,} bytes) do not fit on {cfg.target!r} ({cap:,} bytes)")

        def factory(th: Any) -> Any:
            s = _WebUser(files, cfg, np.random.default_rng(np.random.SeedSequence(rng_root.entropy, spawn_key=(1, th.thread_number))))
            sources.append(s)
            return s

    elif isinstance(cfg, OltpConfig):
        caps = [targets[n].capacity for n in cfg.data]
        log = _OltpLog(targets[cfg.log].capacity, int(cfg.log_io_size)) if cfg.log else None

        def factory(th: Any) -> Any:
            s = _OltpThread(cfg, caps, log, np.random.default_rng(np.random.SeedSequence(rng_root.entropy, spawn_key=(2, th.thread_number))))
            sources.append(s)
            return s

    else:
        prof = boot_profile(cfg)
        cap = targets[cfg.target].capacity
        img = int(cfg.image_size)
        need = img + cfg.desktops * int(cfg.delta_size)
        if need > cap:
            raise ValueError(f"vdi_boot: image + deltas ({need:,} bytes) do not fit on {cfg.target!r} ({cap:,} bytes)")

        def factory(th: Any) -> Any:
            k = th.thread_number - 1
            s = _Desktop(prof, 0, img + k * int(cfg.delta_size))
            sources.append(s)
            return s

    resolve = lambda job: [targets[n] for n in job.filenames]  # noqa: E731
    wl = Workload(sim, fjobs, resolve, parent=parent, name=f"app_{cfg.app}", stats_factory=NullStats, io_source=factory)
    t_begin = sim.env.now
    for m in meters:
        m.start_window(t_begin + ramp)
    with gc_quiet():  # the first fill with the collector quietened too, as run_fio
        done = wl.start()
    sim.run(until=done)  # the engine's run loop (inlined step, gc_quiet), as run_fio
    t_end = sim.env.now
    t0 = t_begin + ramp
    win = max(t_end - t0, 1e-12)
    n = [sum(m.n[i] for m in meters) for i in range(4)]
    ios = n[0] + n[1]
    lat = sum(m.lat_sum for m in meters)
    nbytes = sum(m.nbytes for m in meters)
    bins: dict[int, list[float]] = {}
    for m in meters:
        for b, row in m.bins.items():
            acc = bins.setdefault(b, [0, 0, 0, 0.0])
            for i in range(4):
                acc[i] += row[i]
    series = []
    for b in sorted(bins):
        r = bins[b]
        cnt = r[0] + r[1]
        series.append((b * bin_s, cnt / bin_s, 1e3 * r[3] / cnt if cnt else 0.0))
    res = AppResult(
        app=cfg.app,
        window_s=win,
        ios=ios,
        reads=n[0],
        writes=n[1],
        iops=ios / win,
        lat_mean_ms=1e3 * lat / ios if ios else 0.0,
        mb_s=nbytes / win / 1e6,
        series=series,
        thread_end=[th.window[1] if th.window[1] is not None else math.nan for th in wl.threads],
        thread_start=[th._t0 for th in wl.threads],
    )
    if isinstance(cfg, WebServerConfig):
        res.extra = {
            "files_read": sum(s.files_read for s in sources),
            "hot_file_reads": sum(s.hot_reads for s in sources),
        }
    elif isinstance(cfg, OltpConfig):
        res.extra = {"data_reads": sum(s.counts[0] for s in sources), "data_writes": sum(s.counts[1] for s in sources), "log_writes": sum(s.counts[2] for s in sources)}
    else:
        res.extra = {"profile_ios": len(prof[0]), "profile_writes": int((prof[0] == _WRITE).sum()), "profile_read_bytes": int(prof[2][prof[0] == _READ].sum()), "profile_write_bytes": int(prof[2][prof[0] == _WRITE].sum())}
    res.extra["submitted"] = sum(m.submitted for m in meters)
    res.extra["completed"] = sum(m.completed for m in meters)
    return res


def _network_link(sim: Simulation, dev: Device, cfg: WebServerConfig, parent: Component | None) -> Device:
    """The server's network link in front of ``dev``: one lane at the link's payload rate (the
    HBA path mechanism of the RAID package: a read's data occupies the lane while it is sent)."""
    from simulator.devices.raid.config import HbaPathConfig
    from simulator.devices.raid.path import HbaPath, PathPort

    pc = HbaPathConfig(channels=1, lanes=1, lane_rate=float(cfg.link_rate), efficiency=cfg.link_efficiency)
    par = parent if parent is not None else sim.root
    taken = {c.name for c in par.children}
    nm, k = "webhost", 1
    while nm in taken:  # one link per run: successive runs on one system get their own
        k += 1
        nm = f"webhost{k}"
    host = Component(nm, par)
    path = HbaPath(pc, "nic", host)
    return PathPort("link", host, path, lambda port: dev)
