"""Running fio jobs against devices: closed loop (``iodepth``) and open loop (``rate_iops``).

A :class:`Workload` is a component (``workload``) with one child per job (``workload.<jobname>``)
and one :class:`JobThread` per clone (``workload.<jobname>.<k>``, ``numjobs`` of them), like fio's
threads. Each thread has its own random streams and its own statistics (``JobStats`` of the
metrics layer).

The IO path uses no SimPy process: a thread submits a :class:`~simulator.devices.base.Request` and
appends its completion callback to the request's event; the callback records the IO and issues
the next one. One IO through one device is one SimPy event (two with a submission latency, three
in open loop counting the arrival).

fio semantics reproduced (see also :mod:`simulator.workloads.options`):

* **Closed loop**: ``iodepth`` IOs in flight per thread; each completion issues the next IO
  immediately. Synchronous engines (psync, sync, ...) run at depth 1 whatever ``iodepth`` says.
  Several files in one job share the job's ``iodepth``; files are chosen by
  ``file_service_type`` (round robin by default), so the slowest device paces the job and the
  queue depths self-balance -- versus one job per device, each with its own depth.
* **Open loop** (``rate_iops``): arrivals per data direction, at fixed gaps (``rate_process=linear``)
  or exponential gaps (``poisson``), on an absolute schedule starting at the job's start, each
  direction its own stream (so, as in fio, a mixed job with a per-direction rate runs each
  direction at its rate and ``rwmixread`` does not apply). An arrival finding all ``iodepth`` slots
  busy waits (FIFO) for a free slot; its latency is counted from submission, as fio does.
  Choose ``iodepth`` large enough for an open-loop experiment.
* **Mixed jobs** (rw/randrw, closed loop): the direction of each IO follows fio's ``get_rw_ddir``
  (a fresh draw ``1..100 <= rwmixread`` whenever the current direction has issued its share), from
  a stream separate from the offsets.
* ``sync=1``: writes are issued with FUA (the device implements FUA or write+flush).
  ``fsync=N`` / ``fdatasync=N``: after every N-th write issue the next slot issues a FLUSH to the
  file chosen for it (fio counts writes per thread); the FLUSH holds its slot until it completes;
  its latency goes to the sync statistics; ``end_fsync=1`` (or ``fsync_on_close=1``) flushes each
  file once after the last IO of a job that writes. With ``ioengine=libaio`` fio performs fsync (and trim)
  synchronously: the thread issues nothing else until it returns (in-flight IOs continue).
* ``ramp_time``: IOs completing before the ramp ends are not recorded; at the ramp's end the
  thread's counters restart (``size``/``number_ios`` count from there; IOs in flight at that
  moment count towards them), ``device.reset_stats()`` is called on the job's devices so their
  utilisation covers the same window (without a ramp, only by the first job of a stonewall phase to
  start on a device: a later ``startdelay`` does not erase what earlier jobs did there), and ``runtime`` starts (fio: "ramp_time ... will increase
  the total runtime"). The statistics window is ``[ramp end, last completion]``.
* Stop conditions: ``time_based``: issue until ``runtime`` then drain (in-flight IOs count);
  otherwise until ``size`` bytes (or ``io_size``, times ``loops``) have been issued, or ``runtime``
  if shorter; ``number_ios`` stops after that many IOs (exactly that many are recorded).
* Submission latency (``slat``): a per-engine constant (``sim_slat`` overrides) spent by the
  thread before the IO reaches the device, serialised per thread (a thread can submit at most
  1/slat IOs per second). ``clat`` = device completion - device submission; ``lat`` = slat + clat.
* ``stonewall`` waits for all previous jobs; ``stonewall``/``new_group`` start a new reporting
  group; ``group_reporting`` merges a thread into the previous entry when both are in the same
  group (fio's rule), using the metrics layer's ``merge``.
* ``randrepeat=1`` (default): every random stream of a thread is seeded from ``randseed`` (fio's
  0xb1899bed by default) and the thread number (1-based over the whole workload, clones included,
  as fio numbers threads), not from the experiment seed; so runs with different seeds, and
  successive Workloads on one Simulation (a sweep keeping device state), replay the same offsets.
  With ``randrepeat=0`` the streams come from the component path and the experiment seed.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import simpy

from simulator.devices.base import Device, Op, Request
from simulator.engine import Component, Simulation, succeed_at, succeed_now
from simulator.engine.core import gc_quiet
from simulator.errors import ConfigError
from simulator.workloads.offsets import OffsetGenerator, SeqRandOffsets, make_offsets
from simulator.workloads.options import FioJob

__all__ = ["FioRequest", "JobThread", "RequestLog", "Workload", "run_fio"]

_INF = math.inf
_FLUSH = int(Op.FLUSH)
_TRIM = int(Op.TRIM)

# purposes of a thread's repeatable random streams (spawn keys under randseed)
_S_OFFSETS, _S_RWMIX, _S_FILES, _S_RATE, _S_BS, _S_DELAY, _S_MIX, _S_MIXPICK, _S_SEQRAND = 0, 1, 2, 4, 7, 8, 9, 10, 11


class FioRequest(Request):
    """A request issued by a job thread: also carries the time the thread issued it (before the
    submission latency), so ``slat`` = device submission - issue. ``tag`` stays free for devices."""

    __slots__ = ("t_issue",)


class _Stream:
    """One stream of a sim_mix job: weight, direction (-1: mixed, read with probability ``pread``),
    fixed/variable block sizes per direction, one offset generator per file."""

    __slots__ = ("ddir", "draw", "fixed", "gens", "pread", "weight")

    def __init__(self, weight, ddir, pread, fixed, draw, gens):
        self.weight = float(weight)
        self.ddir = ddir
        self.pread = pread
        self.fixed = fixed
        self.draw = draw
        self.gens = gens


class _File:
    """One target of one thread: device, region, offset generator."""

    __slots__ = ("dev", "gen", "index", "issued", "name", "span", "start", "submit")

    def __init__(self, index: int, name: str, dev: Device, start: int, span: int, gen: OffsetGenerator):
        self.index = index
        self.name = name
        self.dev = dev
        self.submit = dev.submit
        self.start = start
        self.span = span
        self.gen = gen
        self.issued = 0  # bytes issued in the current pass (file_service_type=sequential)


def _pct(v: Any) -> float | None:
    return float(v[:-1]) if isinstance(v, str) and v.endswith("%") else None


class JobThread(Component):
    """One fio thread (a job clone): issues IOs to its files and records them in its JobStats."""

    def __init__(
        self,
        parent: Component,
        clone: int,
        job: FioJob,
        targets: Sequence[Device],
        thread_number: int,
        groupid: int,
        stats_factory: Callable[..., Any],
        workload: Workload,
    ):
        super().__init__(str(clone), parent)
        self.job = job
        self.clone = clone
        self.thread_number = thread_number
        self.groupid = groupid
        self.workload = workload
        self.stats = stats_factory(job.name, job.fio_options(), groupid=groupid, jobs=1)
        self._add = self.stats.add
        self._add_sync = self.stats.add_sync
        self.files = self._make_files(targets)
        self._nfiles = len(self.files)
        self._streams = self._make_streams()
        if self._streams is not None:
            w = np.cumsum([st.weight for st in self._streams])
            self._mix_cum = (w / w[-1]).tolist()
            self._mix_cum[-1] = 1.0
            self._mix_rand = self._stream(_S_MIXPICK, "mix")
        self._file0 = self.files[0]
        self._env = self.env

        # limits
        if job.time_based or (job.sim_mix is not None and not job.io_size):
            self._bytes_limit = _INF  # a mixed job's streams have their own regions: number_ios or time
        else:
            regions = sum(f.span for f in self.files)
            if job.io_size:
                total = job.io_size
            elif isinstance(job.size, int):
                total = min(job.size, regions)  # fio clamps size to what the devices hold
            elif job.filesize:
                total = job.filesize * self._nfiles
            else:
                total = regions
            self._bytes_limit = total * job.loops
        self._ios_limit = job.number_ios if job.number_ios else _INF
        self._runtime = job.runtime if job.runtime else _INF

        # per-IO constants
        self._depth = job.effective_iodepth
        spec = job.bs_spec
        self._bs = tuple(sp[1] if sp[0] == "fixed" else job.min_bs[d] for d, sp in enumerate(spec))
        bs_rand = None
        if any(spec[d][0] != "fixed" for d in job.ddirs):
            bs_rand = self._stream(_S_BS, "bs")
        self._bs_rand = bs_rand  # the sizes' stream (the compiled Ceph core draws ahead of issue: ceph_fio._Mix)
        self._bsvar = tuple(_size_drawer(sp, bs_rand) for sp in spec)
        self._varbs = any(self._bsvar[d] is not None for d in job.ddirs)
        self._ddirs = job.ddirs
        self._ddir0 = job.ddirs[0]
        self._mixed = job.is_mixed and job.rate_iops is None
        self._mix_read = job.rwmixread
        self._fua = bool(job.sync)
        self._fsync_n = job.fsync
        self._fdsync_n = job.fdatasync
        self._slat = float(job.slat)
        self._blocking = job.blocking_flush
        fs_kind, fs_nr = job.file_service
        self._fs_kind = fs_kind
        self._fs_nr = fs_nr
        self._rate = job.open_loop_iops
        self._poisson = job.rate_process == "poisson"
        # linear arrivals paced by bytes (fio's usec_for_io): rate=, or rate_iops with bsrange
        if job.rate is not None:
            self._rate_bps = tuple(float(x) for x in job.rate)
        elif job.rate_iops is not None:
            self._rate_bps = tuple(
                float(job.rate_iops[d] * job.min_bs[d]) if spec[d][0] == "range" else 0.0 for d in range(3)
            )
        else:
            self._rate_bps = (0.0, 0.0, 0.0)
        # thinktime (fio's handle_thinktime)
        self._tt = max(job.thinktime, job.thinktime_spin) if job.thinktime > 0 else 0.0
        self._tt_blocks = job.thinktime_blocks
        self._tt_on_issue = job.thinktime_blocks_type == "issue"
        self._tt_iotime = job.thinktime_iotime
        self._tt_use_blocks = not job.thinktime_iotime or "thinktime_blocks" in job.model_fields_set

        self._rw_rand = self._stream(_S_RWMIX, "rwmix") if self._mixed else None
        self._file_rand = (
            self._stream(_S_FILES, "files") if fs_kind == "random" and self._nfiles > 1 else None
        )
        self._rate_rand = (
            [self._stream(_S_RATE + d, f"rate{d}") for d in range(3)] if self._rate is not None else None
        )
        # an application IO source (simulator.workloads.apps) decides file, direction, offset, size, FUA
        self._app = workload.io_source(self) if workload.io_source is not None else None
        self._cb = self._on_done
        self._submit_cb = self._on_slat
        self._refill = self._fill if self._rate is None else self._pump
        self._reset_run_state()

    # ------------------------------------------------------------------ setup
    def _seed_seq(self, purpose: int, sub: int = 0) -> np.random.SeedSequence:
        return np.random.SeedSequence(self.job.seed, spawn_key=(self.thread_number, purpose, sub))

    def _gen(self, purpose: int, name: str, sub: int = 0) -> np.random.Generator:
        if self.job.repeatable:
            return np.random.Generator(np.random.PCG64(self._seed_seq(purpose, sub)))
        return self.substream(name)

    def _stream(self, purpose: int, name: str) -> _Uniforms:
        return _Uniforms(self._gen(purpose, name))

    def _make_files(self, targets: Sequence[Device]) -> list[_File]:
        job = self.job
        names = job.filenames or [getattr(t, "path", str(i)) for i, t in enumerate(targets)]
        if len(names) != len(targets):
            names = [getattr(t, "path", str(i)) for i, t in enumerate(targets)]
        nfiles = len(targets)
        files = []
        for i, dev in enumerate(targets):
            if job.sim_mix is None:
                start, span, og = self._region(job, dev, i, names[i], nfiles, "", (_S_OFFSETS, f"offsets{i}", i))
            else:
                # a mixed job: the file's region is the device from the job's offset; each stream
                # has its own region and offsets inside the device (see _make_streams)
                start, span, og = self._region(job, dev, i, names[i], nfiles, "", None)
            files.append(_File(i, names[i], dev, start, span, og))
        return files

    def _region(
        self, sj: FioJob, dev: Device, i: int, name: str, nfiles: int, where: str, seed: tuple | None
    ) -> tuple[int, int, OffsetGenerator | None]:
        """(start, span, offsets) of ``sj`` (the job, or a stream of its sim_mix) on device ``dev``:
        fio's offset/size/filesize/offset_increment rules. Errors name the job's option (``where``
        says which stream)."""
        job = self.job
        opt_of = (lambda o: "sim_mix") if where else (lambda o: o)
        spec = sj.bs_spec
        sizes = sorted({b for d in sj.ddirs for b in _spec_sizes(spec[d])})
        min_bs, max_bs = min(sj.min_bs[d] for d in sj.ddirs), max(sj.max_bs[d] for d in sj.ddirs)
        align = min(sj.blockalign[d] for d in sj.ddirs) if sj.blockalign is not None else None
        cap = int(dev.capacity)
        pct = _pct(sj.offset)
        base = int(cap * pct / 100.0) // min_bs * min_bs if pct is not None else int(sj.offset)
        start = base + self.clone * job.offset_increment
        if start >= cap:
            opt = "offset_increment" if base < cap else "offset"
            raise job.config_error(
                opt_of(opt), f"{where}offset {start} bytes is beyond the end of {name!r} ({cap} bytes)"
            )
        spct = _pct(sj.size)
        if sj.filesize:
            span = sj.filesize
        elif spct is not None:
            span = int(cap * spct / 100.0)
        elif sj.size is not None:
            span = int(sj.size) // nfiles
        else:
            span = cap - start
        span = min(span, cap - start)  # a block device cannot grow (fio's bdev_size)
        if max_bs > span:
            raise job.config_error(
                opt_of("bs"),
                f"{where}block size {max_bs} bytes is larger than the region of {name!r} ({span} bytes"
                f" from offset {start})",
            )
        if job.direct:
            ss = int(getattr(dev, "sector_size", 512) or 512)
            bad = [b for b in sizes if b % ss]
            if bad:
                opt = "bssplit" if sj.bssplit else ("bsrange" if sj.bsrange else "bs")
                raise job.config_error(
                    opt_of(opt),
                    f"{where}direct IO needs block sizes that are multiples of the {ss}-byte sectors of {name!r}",
                )
            if align is not None and align % ss:
                raise job.config_error(
                    opt_of("blockalign"),
                    f"{where}direct IO needs an alignment that is a multiple of the {ss}-byte sectors of {name!r}",
                )
            if start % ss:
                raise job.config_error(
                    opt_of("offset"), f"{where}direct IO needs an offset aligned to the {ss}-byte sectors of {name!r}"
                )
        if seed is None:
            return start, span, None
        gen = self._gen(*seed) if sj.is_random else None
        try:
            og = make_offsets(
                sj.is_random,
                start,
                span,
                sj.min_bs,
                sj.ddirs,
                sj.distribution,
                gen,
                # fio: blockalign "is mutually exclusive with using a random map"
                randommap=not sj.norandommap and align is None,
                max_bs=sj.max_bs,
                align=align,
            )
        except ValueError as e:
            opt = "random_distribution" if "zone" in str(e) else "bs"
            raise job.config_error(opt_of(opt), f"{where}{e}") from None
        if sj.is_random and any(sj.percentage_random[d] < 100 for d in sj.ddirs):
            u = _Uniforms(self._gen(_S_SEQRAND, f"seqrand.{seed[1]}", seed[2]))
            og = SeqRandOffsets(og, sj.percentage_random, u.random)
        return start, span, og

    def _make_streams(self) -> list[_Stream] | None:
        """The streams of a sim_mix job: per stream its weight, direction mix, size drawers and one
        offset generator per file."""
        job = self.job
        if job.sim_mix is None:
            return None
        bs_rand = self._stream(_S_BS, "bs")
        out = []
        for k, ms in enumerate(job.sim_mix):
            sj = ms.job
            gens = []
            for f in self.files:
                _, _, og = self._region(
                    sj, f.dev, f.index, f.name, self._nfiles, f"stream {k}: ", (_S_MIX, f"mix{k}.offsets{f.index}", k * 4096 + f.index)
                )
                gens.append(og)
            spec = sj.bs_spec
            fixed = tuple(sp[1] if sp[0] == "fixed" else sj.min_bs[d] for d, sp in enumerate(spec))
            draw = tuple(_size_drawer(sp, bs_rand) for sp in spec)
            ddirs = sj.ddirs
            pread = sj.rwmixread / 100.0 if sj.is_mixed else (1.0 if ddirs[0] == 0 else 0.0)
            out.append(_Stream(ms.weight, ddirs[0] if not sj.is_mixed else -1, pread, fixed, draw, gens))
        return out

    def _reset_run_state(self) -> None:
        self._inflight = 0
        self._fl_inflight = 0
        self._if_bytes = 0
        self._c_ios = 0
        self._c_bytes = 0
        self._issues = [0, 0, 0]
        self._w_issues = 0
        self._sync_due = False
        self._rwmix_ddir = 0
        self._rwmix_issues = 0
        self._next_file = 0
        self._fs_left = 0
        self._cur_file = self._file0
        self._cpu_free = 0.0
        self._blocker: Request | None = None
        self._issuing = False
        self._limits_on = False
        self._t0 = _INF
        self._t_rec = _INF
        self._t_stop = _INF
        self._t_end: float | None = None
        self._backlog: deque[int] = deque()
        self._backlog_bs: deque[int] = deque()
        self._arrivals = [0, 0, 0]
        self._arr_bytes = [0, 0, 0]
        self._stall = False  # thinktime: no new IO (waiting for in-flight IOs, then thinking)
        self._thinking = False
        self._tt_count = 0
        self._tt_last = 0.0
        self._stop_scheduled = False
        self._end_syncs: list[_File] = []
        self.done = False

    # ------------------------------------------------------------------ control
    def draw_start_delay(self) -> float:
        """The thread's ``startdelay`` (a range: a uniform draw from the thread's own stream), kept in ``start_delay``."""
        lo, hi = self.job.startdelay
        d = lo
        if hi > lo:
            d = lo + (hi - lo) * float(self._gen(_S_DELAY, "startdelay").random())
        self.start_delay = d
        return d

    def start(self) -> None:
        """Begin (after ``startdelay``). Called by the Workload."""
        d = self.draw_start_delay()
        if d > 0:
            self._timer(d, self._begin)
        else:
            self._begin(None)

    def _timer(self, delay: float, cb: Callable[[Any], None], value: Any = None) -> None:
        ev = simpy.Event(self._env)
        ev.callbacks.append(cb)
        succeed_at(self._env, ev, delay, value)

    def _begin(self, _ev: Any) -> None:
        now = self._env.now
        self._t0 = now
        self._tt_last = now  # fio: last_thinktime starts at the job's epoch
        ramp = self.job.ramp_time
        self._t_rec = now + ramp
        self._t_stop = self._t_rec + self._runtime
        self._cpu_free = now
        self._issuing = True
        if self.job.time_based:
            # the expected window, so that the metrics layer's batches tile it (set again at the end)
            self.stats.set_window(self._t_rec, self._t_stop)
        if ramp > 0:
            self._timer(ramp, self._ramp_end)
        else:
            self._ramp_end(None)
        if self._rate is None:
            self._fill()
        else:
            for d in self._ddirs:
                if self._rate[d] > 0:
                    self._arrive(d, now)
            self._pump()
        if not self._issuing and self._inflight == 0 and not self.done:
            self._wind_up()

    def _ramp_end(self, _ev: Any) -> None:
        if self.done:
            return
        self._limits_on = True
        # fio's reset_all_stats: issue counters restart (rwmix, fsync cadence)
        self._issues = [0, 0, 0]
        self._w_issues = 0
        self._rwmix_issues = 0
        # without a ramp this is the job's start: a device another job of this phase already uses
        # keeps its counters (a later start must not erase an earlier job's share of the window)
        fresh = self.job.ramp_time > 0
        started = self.workload._phase_devs
        seen = set()
        for f in self.files:
            k = id(f.dev)
            if k not in seen:
                seen.add(k)
                if fresh or k not in started:
                    f.dev.reset_stats()
                started.add(k)

    def _stop(self) -> None:
        if self._issuing and self.job.end_fsync and 1 in self._ddirs:
            self._end_syncs = list(self.files)  # fio's end_fsync: one flush per file at the end
        self._issuing = False
        self._backlog.clear()
        self._backlog_bs.clear()

    def _wind_up(self) -> None:
        """Nothing in flight and no more IO: the end flushes (end_fsync), one file after another,
        then the end of the job."""
        if self._end_syncs:
            f = self._end_syncs.pop(0)
            now = self._env.now
            self._inflight += 1
            self._fl_inflight += 1
            req = FioRequest(_FLUSH, 0, 0)
            req.t_issue = now
            self._submit(req, f, now)
            return
        self._finish()

    def _finish(self) -> None:
        self.done = True
        now = self._env.now
        self._t_end = now
        self.stats.set_window(self._t_rec, max(now, self._t_rec))
        self.workload._thread_done(self)

    # ------------------------------------------------------------------ issuing
    def _fill(self) -> None:
        """Closed loop: top the thread up to its depth."""
        while self._inflight < self._depth and self._blocker is None and not self._stall:
            if not self._issue(-1):
                return

    def _pump(self) -> None:
        """Open loop: issue waiting arrivals while slots are free."""
        backlog = self._backlog
        sizes = self._backlog_bs
        while backlog and self._inflight < self._depth and self._blocker is None and not self._stall:
            if not self._issue(backlog[0], sizes[0]):
                return
            backlog.popleft()
            sizes.popleft()

    def _arrive(self, ddir: int, t: float) -> None:
        """Schedule the arrival of direction ``ddir`` at absolute time ``t`` (or the stop)."""
        if t >= self._t_stop:
            if not self._stop_scheduled:
                self._stop_scheduled = True
                self._timer(self._t_stop - self._env.now, self._on_time_stop)
            return
        now = self._env.now
        if t <= now:
            self._on_arrival_now(ddir, t)
        else:
            self._timer(t - now, self._on_arrival, (ddir, t))

    def _on_arrival(self, ev: Any) -> None:
        ddir, t = ev._value
        if self.done or not self._issuing:
            return
        self._on_arrival_now(ddir, t)
        self._pump()
        if not self._issuing and self._inflight == 0:
            self._wind_up()

    def _on_arrival_now(self, ddir: int, t: float) -> None:
        size = self._arrival_size(ddir)
        self._backlog.append(ddir)
        self._backlog_bs.append(size)
        self._arrive(ddir, self._next_arrival(ddir, t, size))

    def _arrival_size(self, ddir: int) -> int:
        """The size of an arrival of direction ``ddir`` (drawn when it arrives)."""
        bv = self._bsvar[ddir]
        return bv() if bv is not None else self._bs[ddir]

    def _next_arrival(self, ddir: int, t: float, size: int) -> float:
        """When the arrival after one of direction ``ddir`` at ``t`` of ``size`` bytes is due (the compiled
        Ceph core draws them ahead: ceph_fio._arrivals)."""
        rate = self._rate[ddir]
        if self._poisson:
            return t + self._rate_rand[ddir].exponential(1.0 / rate)
        if self._rate_bps[ddir] > 0.0:
            # fio's linear rate by bandwidth: the next IO is due when the bytes issued so far are
            b = self._arr_bytes[ddir] = self._arr_bytes[ddir] + size
            return self._t0 + b / self._rate_bps[ddir]
        # fio's linear rate: the k-th IO of a direction is due at k/rate (no accumulated rounding)
        k = self._arrivals[ddir] = self._arrivals[ddir] + 1
        return self._t0 + k / rate

    def _on_time_stop(self, _ev: Any) -> None:
        if self.done:
            return
        self._stop()
        if self._inflight == 0:
            self._wind_up()

    def _pick_file(self) -> _File:
        kind = self._fs_kind
        if kind == "sequential":
            f = self._cur_file
            if f.issued >= f.span:
                f.issued = 0
                f = self.files[(f.index + 1) % self._nfiles]
                self._cur_file = f
            return f
        if self._fs_left > 0:
            self._fs_left -= 1
            return self._cur_file
        if kind == "roundrobin":
            i = self._next_file
            self._next_file = i + 1 if i + 1 < self._nfiles else 0
        else:
            i = self._file_rand.integers(self._nfiles)
        f = self._cur_file = self.files[i]
        self._fs_left = self._fs_nr - 1
        return f

    def _next_ddir(self) -> int:
        """fio's get_rw_ddir for rw/randrw (rwmix)."""
        cur = self._rwmix_ddir
        issues = self._issues
        if issues[cur] >= self._rwmix_issues:
            v = 1 + int(self._rw_rand.random() * 100.0)
            ddir = 0 if v <= self._mix_read else 1
            if ddir != cur:
                # fio's set_rwmix_bytes, evaluated with the old direction
                self._rwmix_issues = (
                    issues[cur] * (self._mix_read if cur == 1 else 100 - self._mix_read) // 100
                )
            self._rwmix_ddir = cur = ddir
        return cur

    def _issue(self, ddir: int, size: int = 0) -> bool:
        """Issue one IO (closed loop: ``ddir`` = -1, chosen here; open loop: the arrival's direction
        and size). False when the thread stops."""
        now = self._env.now
        if now >= self._t_stop:
            self._stop()
            return False
        if self._limits_on and (
            self._c_ios + self._inflight - self._fl_inflight >= self._ios_limit
            or self._c_bytes + self._if_bytes >= self._bytes_limit
        ):
            self._stop()
            return False
        f = self._file0 if self._nfiles == 1 else self._pick_file()
        if self._sync_due:
            self._sync_due = False
            req = FioRequest(_FLUSH, 0, 0)
            req.t_issue = now
            self._inflight += 1
            self._fl_inflight += 1
            if self._blocking:
                self._blocker = req
            self._submit(req, f, now)
            # the flush took this slot; the arrival (open loop) is still waiting
            return ddir < 0 or (
                self._inflight < self._depth and self._blocker is None and not self._stall and self._issue(ddir, size)
            )
        fua = self._fua
        if self._app is not None:
            io = self._app.next_io(now)
            if io is None:  # the application is done (e.g. a desktop has booted)
                self._stop()
                return False
            fi, ddir, off, bs, fua = io
            f = self.files[fi]
        elif self._streams is not None:
            # sim_mix: the stream by weight, then its direction, size and offset
            r = self._mix_rand
            st = self._streams[bisect_right(self._mix_cum, r.random())] if len(self._streams) > 1 else self._streams[0]
            ddir = st.ddir if st.ddir >= 0 else (0 if r.random() < st.pread else 1)
            bv = st.draw[ddir]
            bs = bv() if bv is not None else st.fixed[ddir]
            off = st.gens[f.index].next(ddir, bs)
        else:
            if ddir < 0:
                ddir = self._next_ddir() if self._mixed else self._ddir0
            if size:
                bs = size
            elif self._varbs:
                bv = self._bsvar[ddir]
                bs = bv() if bv is not None else self._bs[ddir]
            else:
                bs = self._bs[ddir]
            off = f.gen.next(ddir, bs)
        req = FioRequest(ddir, off, bs, fua and ddir == 1)
        req.t_issue = now
        self._inflight += 1
        self._if_bytes += bs
        self._issues[ddir] += 1
        f.issued += bs
        if ddir == 1:
            self._w_issues = w = self._w_issues + 1
            if (self._fsync_n and w % self._fsync_n == 0) or (self._fdsync_n and w % self._fdsync_n == 0):
                self._sync_due = True
        elif ddir == _TRIM and self._blocking:
            self._blocker = req
        if self._slat > 0.0:
            self._submit(req, f, now)
        else:
            f.submit(req).callbacks.append(self._cb)
        if self._tt > 0.0:
            if self._tt_on_issue:
                self._tt_count += 1
            if not self._stall and self._think_due(now):
                self._stall = True
        return True

    # ------------------------------------------------------------------ thinktime
    def _think_due(self, now: float) -> bool:
        """fio's handle_thinktime test: thinktime_iotime elapsed, or thinktime_blocks counted."""
        if self._tt_iotime > 0.0 and now - self._tt_last >= self._tt_iotime:
            return True
        return self._tt_use_blocks and self._tt_count >= self._tt_blocks

    def _think(self) -> None:
        """Nothing in flight any more (fio's io_u_quiesce): stall for the think time, capped at the
        end of the runtime as fio does."""
        now = self._env.now
        d = min(self._tt, self._t_stop - now)
        self._thinking = True
        if d > 0.0:
            self._timer(d, self._think_end)
        else:
            self._think_end(None)

    def _think_end(self, _ev: Any) -> None:
        self._thinking = False
        self._stall = False
        self._tt_count = 0
        self._tt_last = self._env.now
        if self.done:
            return
        if self._issuing:
            self._refill()
        if self._inflight == 0 and not self._issuing and not self.done:
            self._wind_up()

    def _submit(self, req: Request, f: _File, now: float) -> None:
        slat = self._slat
        if slat > 0.0:
            t = self._cpu_free
            if t < now:
                t = now
            t += slat
            self._cpu_free = t
            self._timer(t - now, self._submit_cb, (req, f))
        else:
            f.submit(req).callbacks.append(self._cb)

    def _on_slat(self, ev: Any) -> None:
        req, f = ev._value
        f.submit(req).callbacks.append(self._cb)

    # ------------------------------------------------------------------ completion
    def _on_done(self, ev: Any) -> None:
        req = ev._value
        req.event = None  # break the request <-> event cycle: freed by reference counting
        now = self._env.now
        self._inflight -= 1
        op = req.op
        if op != _FLUSH:
            size = req.size
            self._if_bytes -= size
            if now >= self._t_rec:
                self._c_ios += 1
                self._c_bytes += size
                ts = req.t_submit
                self._add(op, now, ts - req.t_issue, now - ts, size)
        else:
            self._fl_inflight -= 1
            if now >= self._t_rec:
                self._add_sync(now, now - req.t_submit)
        if self._blocker is req:
            self._blocker = None
        if self._tt > 0.0 and self._issuing:
            if op != _FLUSH and not self._tt_on_issue:
                self._tt_count += 1
            if not self._stall and self._think_due(now):
                self._stall = True
            if self._stall:
                if self._inflight == 0 and not self._thinking:
                    self._think()
                return
        if self._issuing:
            self._refill()
        if self._inflight == 0 and not self._issuing and not self.done:
            self._wind_up()

    # ------------------------------------------------------------------ reporting
    @property
    def window(self) -> tuple[float, float | None]:
        """(start, end) of the statistics window, simulated seconds."""
        return self._t_rec, self._t_end


def _spec_sizes(sp: tuple) -> tuple[int, ...]:
    """Every block size a direction's spec can produce."""
    if sp[0] == "fixed":
        return (sp[1],)
    if sp[0] == "split":
        return tuple(sp[1])
    lo, hi = sp[1], sp[2]
    return tuple(range(lo, hi + 1, lo)) if hi // lo <= 4096 else (lo, hi)


def _size_drawer(sp: tuple, rand: _Uniforms | None) -> Callable[[], int] | None:
    """Per-IO block size of a direction (None: fixed). fio's get_next_buflen:

    * bssplit: a uniform draw against the cumulative percentages, in the order of
      :func:`simulator.workloads.options._bssplit_ddir`;
    * bsrange lo-hi: ``lo + floor(U * hi)`` rounded down to a multiple of lo, capped at hi (so for
      power-of-two ranges every multiple of lo in [lo, hi] is equally likely).
    """
    if sp[0] == "fixed" or rand is None:
        return None
    if sp[0] == "split":
        sizes = list(sp[1])
        cum = []
        c = 0.0
        for p in sp[2]:
            c += p
            cum.append(c)
        cum[-1] = 1.0
        last = len(sizes) - 1
        r = rand.random

        def draw_split() -> int:
            i = bisect_right(cum, r())
            return sizes[i if i < last else last]

        return draw_split
    lo, hi = sp[1], sp[2]
    r = rand.random

    def draw_range() -> int:
        b = lo + int(hi * r())
        b -= b % lo
        return b if b < hi else hi

    return draw_range


class _Uniforms:
    """Blocked uniforms from a numpy Generator (per-draw cost of a list pop)."""

    __slots__ = ("_buf", "_gen")

    def __init__(self, gen: np.random.Generator):
        self._gen = gen
        self._buf: list[float] = []

    def random(self) -> float:
        buf = self._buf
        if not buf:
            buf = self._buf = self._gen.random(4096)[::-1].tolist()
        return buf.pop()

    def peek(self) -> float:
        """The next uniform, not consumed (the buffer holds it afterwards: a draw then takes it without a
        refill; ``_buf.append(u)`` gives back a drawn ``u``)."""
        buf = self._buf
        if not buf:
            buf = self._buf = self._gen.random(4096)[::-1].tolist()
        return buf[-1]

    def integers(self, n: int) -> int:
        return min(int(self.random() * n), n - 1)

    def exponential(self, mean: float) -> float:
        return -mean * math.log1p(-self.random())


def _component_name(text: str) -> str:
    out = "".join(c if (c.isalnum() or c in "-_") else "_" for c in text.strip())
    return out or "job"


class Workload(Component):
    """fio jobs running against devices.

    ``resolve_target(job)`` returns the job's devices, one per file of ``job.filenames`` (an RBD
    image for ``ioengine=rbd``). ``start()`` returns an event that fires when every job has
    finished; ``results()`` then gives one JobStats result per reported job (clones merged under
    ``group_reporting``, as fio). ``stats_factory``/``merge`` default to
    ``simulator.metrics.stats.JobStats``/``merge``.
    """

    def __init__(
        self,
        sim: Simulation,
        jobs: Sequence[FioJob],
        resolve_target: Callable[[FioJob], Sequence[Device]],
        parent: Component | None = None,
        *,
        name: str = "workload",
        stats_factory: Callable[..., Any] | None = None,
        merge: Callable[[list], Any] | None = None,
        io_source: Callable[[JobThread], Any] | None = None,
    ):
        parent = parent if parent is not None else sim.root
        #: ``io_source(thread)`` -> an object with ``next_io(now)`` returning (file index, op, offset,
        #: size, fua) or None (stop), or None for a plain fio thread: application workloads
        #: (:mod:`simulator.workloads.apps`) drive devices through this same runner
        self.io_source = io_source
        taken = {c.name for c in parent.children}
        base = _component_name(name)
        nm, n = base, 1
        while nm in taken:
            n += 1
            nm = f"{base}{n}"
        super().__init__(nm, parent)
        if stats_factory is None:
            try:
                from simulator.metrics.stats import JobStats as stats_factory
            except ImportError as e:  # pragma: no cover - until the metrics layer is present
                raise RuntimeError(
                    "simulator.metrics.stats.JobStats is not available; pass stats_factory"
                ) from e
        self._merge = merge
        self.jobs = list(jobs)
        if not self.jobs:
            raise ConfigError("a workload needs at least one job", field="jobs")
        self.threads: list[JobThread] = []
        self._phases: list[list[JobThread]] = [[]]
        groupid = 0
        prev_group_jobs = 0
        tn = 0
        names: set[str] = set()
        for ji, job in enumerate(self.jobs):
            if not isinstance(job, FioJob):
                raise TypeError(f"jobs[{ji}] is {type(job).__name__}, expected FioJob (see resolve_jobs)")
            targets = list(resolve_target(job))
            if not targets:
                raise job.config_error("filename", f"job {job.name!r} resolved to no device")
            for t in targets:
                if not hasattr(t, "submit") or not hasattr(t, "capacity"):
                    raise job.config_error("filename", f"job {job.name!r}: target {t!r} is not a device")
            if (job.stonewall or job.new_group) and prev_group_jobs:
                groupid += 1
                prev_group_jobs = 0
            if job.stonewall and self._phases[-1]:
                self._phases.append([])
            cname = _component_name(job.name)
            k = 1
            uname = cname
            while uname in names:
                k += 1
                uname = f"{cname}_{k}"
            names.add(uname)
            jc = Component(uname, self)
            for clone in range(job.numjobs):
                tn += 1
                th = JobThread(jc, clone, job, targets, tn, groupid, stats_factory, self)
                self.threads.append(th)
                self._phases[-1].append(th)
            prev_group_jobs += 1
        self._started = False
        self._done_ev: simpy.Event | None = None
        self._phase = 0
        self._phase_devs = set()
        self._remaining = 0

    def start(self) -> simpy.Event:
        """Start every job (stonewalled ones after their predecessors); the event fires when all
        have finished."""
        if self._started:
            raise RuntimeError(f"{self.path} was already started (create a new Workload for another run)")
        self._started = True
        from simulator.core.ceph_fio import release_held

        release_held(self.sim)  # a compiled Ceph run's held state goes back to the Python objects first
        self._done_ev = simpy.Event(self.env)
        self._start_phase(0)
        return self._done_ev

    def _start_phase(self, i: int) -> None:
        self._phase = i
        self._phase_devs: set[int] = set()  # devices whose statistics this phase has restarted
        if i >= len(self._phases):
            succeed_now(self.env, self._done_ev, self)
            return
        phase = self._phases[i]
        self._remaining = len(phase)
        for th in phase:
            th.start()

    def _thread_done(self, th: JobThread) -> None:
        self._remaining -= 1
        if self._remaining == 0:
            self._start_phase(self._phase + 1)

    @property
    def finished(self) -> bool:
        return all(t.done for t in self.threads)

    def results(self) -> list:
        """One result per reported job, in job order: each clone alone, or merged with the
        previous entry when it has ``group_reporting`` and the same reporting group (fio)."""
        if not self.finished:
            raise RuntimeError(
                f"{self.path}: results() before every job finished (run until start()'s event)"
            )
        groups: list[list[JobThread]] = []
        prev: JobThread | None = None
        for th in self.threads:
            if prev is None or not th.job.group_reporting or th.groupid != prev.groupid:
                groups.append([th])
            else:
                groups[-1].append(th)
            prev = th
        merge = self._merge
        out = []
        for g in groups:
            if len(g) == 1:
                out.append(g[0].stats.result())
            else:
                if merge is None:
                    from simulator.metrics.stats import merge as merge_fn

                    merge = merge_fn
                out.append(merge([t.stats.result() for t in g]))
        return out


class NullStats:
    """A JobStats stand-in that records nothing: for runs whose figures come from elsewhere (the
    app study meters its devices) and for ``simrun bench``'s device-and-driver cost."""

    records_nothing = True  # the compiled core skips its completion log for it

    def __init__(self, name: str, options: dict[str, str], groupid: int = 0, jobs: int = 1):
        self.name = name

    def add(self, ddir: int, t_done: float, slat: float, clat: float, nbytes: int) -> None:
        pass

    def add_sync(self, t_done: float, lat: float) -> None:
        pass

    def set_window(self, t_start: float, t_end: float) -> None:
        pass

    def result(self) -> None:
        return None


class DeviceTap:
    """A device seen through an observer: forwards every request to ``dev`` unchanged, counts them,
    and hands each completed request to :meth:`_observe`; any other attribute is the device's
    (capacity, sector_size, path, reset_stats, stats...), so the Workload drives it like the device."""

    def __init__(self, dev: Device):
        self.dev = dev
        self.submitted = 0
        self.completed = 0
        self._cb = self._done

    def __getattr__(self, name: str) -> Any:
        return getattr(self.dev, name)

    def submit(self, req: Request) -> simpy.Event:
        self.submitted += 1
        ev = self.dev.submit(req)
        ev.callbacks.append(self._cb)
        return ev

    def _done(self, ev: Any) -> None:
        self.completed += 1
        self._observe(ev._value, ev.env._now)

    def _observe(self, req: Request, now: float) -> None:
        raise NotImplementedError


class RequestLog(DeviceTap):
    """A recorder: keeps, per completed request, its op, offset, size, submit/start/completion
    times and service time (arrays in completion order). For tests and analyses that need per-IO
    figures fio does not report. ``recording`` can be switched off (e.g. during a warm-up)."""

    def __init__(self, dev: Device):
        super().__init__(dev)
        self.recording = True
        self.rows: list[tuple[int, int, int, float, float, float, float]] = []

    def _observe(self, r: Request, now: float) -> None:
        if self.recording:
            self.rows.append((int(r.op), int(r.offset), int(r.size), r.t_submit, r.t_start, now, r.service))

    def arrays(self) -> dict[str, np.ndarray]:
        """op, offset, size, t_submit, t_start, t_done, service, latency (= t_done - t_submit)."""
        a = np.array(self.rows, dtype=np.float64).reshape(-1, 7)
        out = {k: a[:, i] for i, k in enumerate(("op", "offset", "size", "t_submit", "t_start", "t_done", "service"))}
        for k in ("op", "offset", "size"):
            out[k] = out[k].astype(np.int64)
        out["latency"] = out["t_done"] - out["t_submit"]
        return out


def run_fio(
    sim: Simulation,
    targets: Sequence[Device] | Callable[[FioJob], Sequence[Device]],
    jobs: Sequence[dict[str, Any]] | dict[str, Any],
    global_options: dict[str, Any] | None = None,
    *,
    source: str = "run_fio",
    stats_factory: Callable[..., Any] | None = None,
    engine: str = "python",
) -> list[Any]:
    """Run fio jobs (option mappings, fio names) to completion on ``sim`` against ``targets`` (the
    devices of every job, or a function job -> devices); returns one result per reported job.

    The one IO driver for code that is not an experiment (tests, ``simrun bench``, calibration):
    the same :class:`Workload` an experiment runs, without the experiment around it. ``engine``:
    "python" (the reference model, default), "auto" or "compiled" (simulator.core.choose: the
    compiled core where it covers the run, the Python model otherwise).
    """
    from simulator.workloads.options import resolve_jobs

    fjobs = resolve_jobs(dict(global_options or {}), [jobs] if isinstance(jobs, dict) else list(jobs), source)
    resolve = targets if callable(targets) else (lambda _job, _t=list(targets): _t)
    wl = Workload(sim, fjobs, resolve, stats_factory=stats_factory)
    if engine != "python":
        from simulator.core import run_with

        if run_with(sim, wl, engine) is None:
            return wl.results()
    with gc_quiet():  # the first fill (start issues iodepth requests per job) with the collector quietened too
        done = wl.start()
    sim.run(until=done)
    return wl.results()
