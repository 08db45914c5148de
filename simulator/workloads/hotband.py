"""The SNIA Emerald "hot band" workload and its metric, IOPS at a mean-latency target over threads.

The workload
------------
SNIA's Emerald Power Efficiency Measurement Specification (V2.0.2, 2013, and later versions; the
test is run with the vdbench script SNIA publishes beside it, "Template for a Vdbench Test Script",
SNIA_Emerald_Script_Version_2014_05_14.txt and its 2020 successor) defines an active-state
workload that mixes sequential streams, uniform random IO and four narrow "hot bands" of random
IO, each a vdbench workload definition (WD) with a *skew* (its share of the IOs), a read percentage,
and either ``seekpct=seq``, ``seekpct=rand`` or ``hotband=(lo%,hi%)``. All WDs share the run's
``threads=`` (outstanding IOs on the storage definition) and ``xfersize=`` distribution.

:data:`HOTBAND_STREAMS` is that table as data. Every row says where its numbers come from:

* [V] verified in this session in public material: the uniform WD (skew 6, rdpct 50, random over
  the whole SD) and the first hot band (skew 28, ``hotband=(10,18)``) as quoted from the Emerald
  script in a public vdbench note (GitHub, "Benmark disk / Công cụ vdbench", vdbench WD example
  ``wd=hotwd_uniform,skew=6,...,rdpct=50 wd=hotwd_hot1,...,skew=28,...,hotband=(10,18)``);
  the study's own summary (../shared/docs/reference-experiments.md, study 3): 65:35 read:write,
  about 15 % sequential writes; vdbench's in-band access curve (Vdb/HotBand.java, vdbench 5.04,
  Oracle, 2012-2016), see :data:`simulator.workloads.offsets.HOTBAND_CURVE`.
* [R] recalled from the Emerald specification's hot band table, NOT re-read in this session (the
  specification text could not be retrieved): three sequential write streams and five sequential
  read streams of 5 % each, hot bands 2..4 at 32-40 %, 55-63 %, 80-88 % with skews 14, 7 and 5,
  read percentage 70 in the hot bands, and the transfer-size distribution
  :data:`HOTBAND_XFERSIZES`. The skews add up to 100 and give 65.8:34.2 read:write with 15 %
  sequential writes, consistent with the [V] summary. Check these rows against the specification
  before quoting results as "Emerald hot band".
* [A] assumptions of this model where vdbench leaves the placement to the script: each
  sequential stream runs over its own eighth of the storage region, from its start, wrapping.

How it runs here
----------------
One fio job with the simulator's ``sim_mix`` extension (see
:class:`simulator.workloads.options.MixStream`): ``iodepth`` = vdbench threads (outstanding IOs,
kept constant: each completion issues the next IO), and every IO picks a stream by skew, then its
direction (read with the stream's rdpct), size (``bssplit``) and offset (``rw=read``/``write`` for
sequential streams, ``random_distribution=random`` for the uniform stream, ``sim_hotband`` inside
the band). vdbench assigns streams by skew in the same way under ``iorate=max``. vdbench puts a
random IO on a boundary of its own transfer size (the SD's ``align=`` default, "xfersize
boundaries", Vdbench Users Guide 5.04): each random stream is one ``sim_mix`` entry per transfer
size (weight = skew x size share) with ``blockalign`` = that size, so a 64 KiB IO never straddles a
64 KiB RAID chunk and every IO of 4 KiB or more is aligned to a 512e drive's physical sectors.

The metric
----------
The Demartek study reports "IOPS at 5 ms mean latency", found by sweeping the thread count:
:func:`iops_at_latency` runs :func:`simulator.search.highest_load` over integer thread counts
with a probe per count (mean latency, its batch-means CI, IOPS), and returns the IOPS of the
highest thread count whose mean latency meets the target.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "HOTBAND_STREAMS",
    "HOTBAND_XFERSIZES",
    "HotbandPoint",
    "HotbandResult",
    "HotbandStream",
    "hotband_job",
    "hotband_stream",
    "iops_at_latency",
    "run_hotband",
]


@dataclass(frozen=True)
class HotbandStream:
    """One vdbench WD of the hot band: ``skew`` percent of the IOs, ``rdpct`` percent reads,
    ``access`` "seq" (over ``band``), "rand" (uniform over ``band``) or "hotband" (vdbench's
    hotband curve over ``band``); ``band`` = (start %, end %) of the storage region; ``source``
    "V", "R" or "A" (see the module docstring)."""

    name: str
    skew: float
    rdpct: int
    access: str
    band: tuple[float, float]
    source: str


def _seq(name: str, k: int, rdpct: int) -> HotbandStream:
    return HotbandStream(name, 5.0, rdpct, "seq", (k * 12.5, (k + 1) * 12.5), "R/A")


#: the hot band workload (see the module docstring for the V/R/A source marks)
HOTBAND_STREAMS: tuple[HotbandStream, ...] = (
    *(_seq(f"seq_write{i + 1}", i, 0) for i in range(3)),
    *(_seq(f"seq_read{i + 1}", 3 + i, 100) for i in range(5)),
    HotbandStream("uniform", 6.0, 50, "rand", (0.0, 100.0), "V"),
    HotbandStream("hot1", 28.0, 70, "hotband", (10.0, 18.0), "V (band, skew) / R (rdpct)"),
    HotbandStream("hot2", 14.0, 70, "hotband", (32.0, 40.0), "R"),
    HotbandStream("hot3", 7.0, 70, "hotband", (55.0, 63.0), "R"),
    HotbandStream("hot4", 5.0, 70, "hotband", (80.0, 88.0), "R"),
)

#: vdbench ``xfersize=`` distribution of every hot band WD: (bytes, percent) [R]
HOTBAND_XFERSIZES: tuple[tuple[int, int], ...] = (
    (512, 2), (1024, 2), (4096, 27), (8192, 31), (16384, 5), (32768, 5), (49152, 1), (57344, 1),
    (61440, 2), (65536, 20), (131072, 2), (262144, 2),
)


def _bssplit() -> str:
    return ":".join(f"{b}/{p}" for b, p in HOTBAND_XFERSIZES)


def _pct(x: float) -> str | int:
    return 0 if x <= 0 else f"{x:.6g}%"


def hotband_job(
    threads: int,
    *,
    runtime: float,
    ramp_time: float = 0.0,
    region: tuple[float, float] = (0.0, 100.0),
    filename: str | None = None,
    streams: Sequence[HotbandStream] = HOTBAND_STREAMS,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """fio options (for :func:`simulator.workloads.options.resolve_jobs`, a YAML ``jobs:`` entry or
    :func:`simulator.workloads.runner.run_fio`) of the hot band at ``threads`` outstanding IOs.

    ``region`` = (start %, end %) of the target that vdbench's storage definition covers (the
    Demartek study used a RAID 5 volume over about half the drives' capacity); bands are
    percentages of that region. ``extra`` adds or overrides job options (ioengine, randseed...).
    """
    if int(threads) != threads or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    r0, r1 = region
    if not 0.0 <= r0 < r1 <= 100.0:
        raise ValueError(f"region must be (start %, end %) with 0 <= start < end <= 100, got {region!r}")
    width = r1 - r0
    mix = []
    bss = _bssplit()
    psum = float(sum(p for _, p in HOTBAND_XFERSIZES))
    for st in streams:
        lo, hi = st.band
        opts: dict[str, Any] = {
            "offset": _pct(r0 + width * lo / 100.0),
            "size": _pct(width * (hi - lo) / 100.0),
        }
        if st.access == "seq":
            # a sequential stream continues where its previous IO ended, whatever the size
            opts["rw"] = "read" if st.rdpct == 100 else ("write" if st.rdpct == 0 else "rw")
            opts["bssplit"] = bss
            if opts["rw"] == "rw":
                opts["rwmixread"] = st.rdpct
            mix.append({"weight": st.skew, "name": st.name, "options": opts})
            continue
        # random IO: vdbench puts each IO on a boundary of its own transfer size (SD align=, default
        # "xfersize boundaries", Vdbench Users Guide 5.04): one entry per size with blockalign = size
        opts["rw"] = "randread" if st.rdpct == 100 else ("randwrite" if st.rdpct == 0 else "randrw")
        opts["norandommap"] = 1  # vdbench draws independently
        if st.access == "hotband":
            opts["random_distribution"] = "sim_hotband"
        if opts["rw"] == "randrw":
            opts["rwmixread"] = st.rdpct
        for b, p in HOTBAND_XFERSIZES:
            mix.append({"weight": st.skew * p / psum, "name": f"{st.name}_{b}",
                        "options": {**opts, "bs": b, "blockalign": b}})
    job: dict[str, Any] = {
        "name": f"hotband_t{int(threads)}",
        "ioengine": "libaio",
        "iodepth": int(threads),
        "time_based": 1,
        "runtime": runtime,
        "ramp_time": ramp_time,
        "sim_mix": mix,
    }
    if filename is not None:
        job["filename"] = filename
    job.update(extra or {})
    return job


class HotbandStreamGen:
    """The hot band's IO stream as arrays, without simulated time (preconditioning: the study pre-ran
    the hot band script for hours before measuring). The same streams, skews, read shares, sizes and
    offset generators (:mod:`simulator.workloads.offsets`: ``sim_hotband`` with vdbench's write shift,
    uniform random, sequential continuing per stream and wrapping in its band) as the fio job of
    :func:`hotband_job`; what differs is only that IOs are drawn i.i.d. by skew instead of in the
    order a queue of ``threads`` completes them, and that a random IO is put on a boundary of its own
    size by rounding down the offset drawn at ``align``. Successive :meth:`take` calls continue the
    stream."""

    def __init__(self, capacity: int, *, region: tuple[float, float] = (0.0, 100.0), seed: int = 1,
                 streams: Sequence[HotbandStream] = HOTBAND_STREAMS, align: int = 512):
        import numpy as np

        from simulator.workloads.offsets import HotbandOffsets, RandomOffsets

        self._rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0x4B,)))
        r0, r1 = region
        width = (r1 - r0) / 100.0
        sizes = np.array([b for b, _ in HOTBAND_XFERSIZES], dtype=np.int64)
        self._sizes = sizes
        self._size_p = np.array([p for _, p in HOTBAND_XFERSIZES], dtype=float) / sum(p for _, p in HOTBAND_XFERSIZES)
        self._skew = np.array([st.skew for st in streams], dtype=float) / sum(st.skew for st in streams)
        self._rd = np.array([st.rdpct / 100.0 for st in streams])
        self._streams = list(streams)
        self._gens: list[Any] = []
        self._seq_pos: list[int] = []
        self._bands: list[tuple[int, int]] = []
        for st in streams:
            # band starts on a boundary of the largest transfer size, so that each IO's own-size
            # alignment is also absolute (as fio aligns the offset of a job with blockalign)
            top = int(sizes.max())
            lo = int(capacity * (r0 / 100.0 + width * st.band[0] / 100.0)) // top * top
            span = int(capacity * width * (st.band[1] - st.band[0]) / 100.0) // align * align
            self._bands.append((lo, span))
            self._seq_pos.append(0)
            if st.access == "seq":
                self._gens.append(None)
            else:
                cls = HotbandOffsets if st.access == "hotband" else RandomOffsets
                dist = ("sim_hotband",) if st.access == "hotband" else ("random",)
                g = cls(lo, span, align, int(sizes.max()), dist, np.random.default_rng(self._rng.integers(2**63)), randommap=False)
                self._gens.append(g)

    def take(self, n: int) -> tuple[Any, Any, Any]:
        """The next ``n`` IOs: (op 0 read / 1 write, offset, size) arrays."""
        import numpy as np

        rng = self._rng
        k = rng.choice(len(self._streams), size=n, p=self._skew)
        size = rng.choice(self._sizes, size=n, p=self._size_p)
        op = (rng.random(n) >= self._rd[k]).astype(np.int64)
        off = np.empty(n, dtype=np.int64)
        for j in range(len(self._streams)):
            sel = np.flatnonzero(k == j)
            m = sel.size
            if not m:
                continue
            lo, span = self._bands[j]
            g = self._gens[j]
            if g is None:  # sequential: each IO where the previous one of the stream ended, wrapping
                rel = (self._seq_pos[j] + np.concatenate(([0], np.cumsum(size[sel])[:-1]))) % span
                rel = np.minimum(rel, span - size[sel])
                self._seq_pos[j] = int((rel[-1] + size[sel][-1]) % span)
                off[sel] = lo + rel
                continue
            got = np.empty(m, dtype=np.int64)
            i = 0
            while i < m:
                blk = np.asarray(g._refill()[::-1], dtype=np.int64)
                g._buf = []
                t = min(m - i, blk.size)
                got[i:i + t] = blk[:t]
                i += t
            shift = getattr(g, "_shift", 0)
            if shift:  # vdbench: a write lands 1 % of the band further on (HotbandOffsets.next)
                w = op[sel] == 1
                b = ((got[w] - g.start) // g.align + shift) % g.nblocks
                got[w] = g.start + b * g.align
            # each IO on a boundary of its own size (vdbench's default alignment, as hotband_job)
            sz = size[sel]
            off[sel] = lo + (got - lo) // sz * sz
        return op, off, size


def hotband_stream(capacity: int, n: int, **kw: Any) -> tuple[Any, Any, Any]:
    """``n`` IOs of the hot band over a target of ``capacity`` bytes (see :class:`HotbandStreamGen`)."""
    return HotbandStreamGen(capacity, **kw).take(n)


@dataclass(frozen=True)
class HotbandPoint:
    """One run: threads, IOPS (and its CI), mean latency in seconds (and its CI), read fraction."""

    threads: int
    iops: float
    iops_ci: tuple[float, float] | None
    mean_lat: float
    lat_ci: tuple[float, float] | None
    read_fraction: float
    ios: int


def _combine(result: Any) -> HotbandPoint:
    dirs = [d for d in result.dirs if d.total_ios > 0]
    n = sum(d.total_ios for d in dirs)
    if n == 0:
        return HotbandPoint(0, 0.0, None, math.inf, None, 0.0, 0)
    mean = sum(d.total_ios * d.lat.mean_ns for d in dirs) / n * 1e-9
    hw2 = 0.0
    have_ci = True
    for d in dirs:
        ci = d.lat.mean_ci
        if ci is None:
            have_ci = False
            break
        hw2 += (d.total_ios / n * (ci.hi - ci.lo) / 2.0 * 1e-9) ** 2
    lat_ci = (mean - math.sqrt(hw2), mean + math.sqrt(hw2)) if have_ci else None
    iops = sum(d.iops for d in dirs)
    ihw2 = 0.0
    have_ici = True
    for d in dirs:
        if d.iops_ci is None:
            have_ici = False
            break
        ihw2 += ((d.iops_ci.hi - d.iops_ci.lo) / 2.0) ** 2
    iops_ci = (iops - math.sqrt(ihw2), iops + math.sqrt(ihw2)) if have_ici else None
    reads = result.dirs[0].total_ios
    return HotbandPoint(0, iops, iops_ci, mean, lat_ci, reads / n, n)


def run_hotband(
    make_targets: Callable[[Any], Sequence[Any]],
    threads: int,
    *,
    runtime: float = 30.0,
    ramp_time: float = 5.0,
    seed: int = 1,
    region: tuple[float, float] = (0.0, 100.0),
    extra: dict[str, Any] | None = None,
) -> HotbandPoint:
    """Run the hot band at ``threads`` on a fresh simulation: ``make_targets(sim)`` builds the
    target device(s) (e.g. ``lambda sim: [build_device({"profile": p}, "sda", sim.root)]``)."""
    from simulator.engine import Simulation
    from simulator.workloads.runner import run_fio

    sim = Simulation(seed)
    targets = list(make_targets(sim))
    job = hotband_job(threads, runtime=runtime, ramp_time=ramp_time, region=region, extra=extra)
    (res,) = run_fio(sim, targets, job, source="hotband")
    p = _combine(res)
    return HotbandPoint(int(threads), p.iops, p.iops_ci, p.mean_lat, p.lat_ci, p.read_fraction, p.ios)


@dataclass(frozen=True)
class HotbandResult:
    """Outcome of :func:`iops_at_latency`: ``threads`` (highest thread count meeting the target,
    None if even ``lo`` misses it), ``iops`` at that count, every run in ``points`` (by threads),
    and the search's own result ``search`` (bracket, status, probes)."""

    target: float
    threads: int | None
    iops: float | None
    points: dict[int, HotbandPoint] = field(default_factory=dict)
    search: Any = None


def iops_at_latency(
    make_targets: Callable[[Any], Sequence[Any]],
    *,
    target: float = 5e-3,
    lo: int = 1,
    hi: int = 64,
    runtime: float = 30.0,
    ramp_time: float = 5.0,
    seed: int = 1,
    region: tuple[float, float] = (0.0, 100.0),
    extra: dict[str, Any] | None = None,
    max_probes: int = 12,
) -> HotbandResult:
    """The study's metric: the IOPS at the highest thread count whose mean latency is at most
    ``target`` seconds (5 ms), by :func:`simulator.search.highest_load` over threads in
    ``[lo, hi]``. Each probe is one :func:`run_hotband`; its mean-latency CI (batch means) lets the
    search report thread counts it cannot decide."""
    from simulator.search import Probe, highest_load

    points: dict[int, HotbandPoint] = {}

    def evaluate(load: float) -> Any:
        t = int(round(load))
        p = points.get(t)
        if p is None:
            p = points[t] = run_hotband(
                make_targets, t, runtime=runtime, ramp_time=ramp_time, seed=seed, region=region, extra=extra
            )
        return Probe(float(t), p.mean_lat <= target, p.mean_lat, p.lat_ci, {"iops": p.iops})

    res = highest_load(evaluate, lo, hi, integer=True, max_probes=max_probes, bound=target)
    best = None if res.load is None else int(round(res.load))
    return HotbandResult(target, best, None if best is None else points[best].iops, dict(sorted(points.items())), res)
