"""The HDD device: one mechanism (head stack) with its drive queue, scheduler, write cache and
read look-ahead; and the dual-actuator drive (Seagate MACH.2) built from two of them.

Per IO the hot path is: ``submit`` -> admit (one numba call writes the command into the candidate
set) -> when the mechanism is free, one numba call chooses the next command (SPTF or FIFO, aging
guard) *and* computes its whole service (overhead, seek, rotational delay from the platter's real
angle, media transfer with head/cylinder switches) -> one scheduled completion event. Background
destage of cached writes uses the same scheduler and mechanism, one scheduled callback per extent.

Timing of one media command (absolute times)::

    arrival ─ overhead ─▶ t_ready ─ seek (and host data for a write) ─▶ rotational delay ─▶ xs
      xs ─ media transfer (track/cylinder switches with skew) ─▶ t_end ; reads stream over the
      link while the media read runs: completion = max(t_end, link end)

A queued command's overhead overlaps the mechanism's work on earlier commands (its t_ready is
arrival + overhead); at QD1 it is serial.
"""

from __future__ import annotations

import math
import weakref
from collections import deque
from typing import Any

import numpy as np
import simpy
from simpy.core import NORMAL

from simulator.devices.base import Device, Op, Request
from simulator.engine import Component, succeed_at, succeed_now

from . import kernels as K
from . import wcache_kernels as W
from .config import HDDConfig, derive

__all__ = ["HDD", "DualActuatorHDD", "Link", "build_hdd"]

_admit_read = K.admit_read
# the write cache's mode rules: the kernels' own source, called as plain Python here (a numba
# dispatch per IO costs more than the rule; the compiled core inlines the same functions)
_write_rule = W.wc_write_rule.py_func
_flush_waits = W.wc_flush_waits.py_func
_destage_mode = W.wc_destage_mode.py_func
_append_due = W.mc_append_due.py_func
_clean_hold = W.mc_clean_hold.py_func
_dispatch_k = K.dispatch
_READ = int(Op.READ)
_WRITE = int(Op.WRITE)
_TRIM = int(Op.TRIM)
_FLUSH = int(Op.FLUSH)


def _seek_table(d: Any, bins: int) -> np.ndarray:
    """The firmware's coarse seek table: ``bins`` cylinder-distance bins with geometric upper edges
    from 1 cylinder to the full stroke; each bin's estimate is the seek at its upper edge.

    Rows 0-2: upper edges, read and write estimates (``nb`` bins; beyond them the edge is +inf and
    the estimates repeat the last bin's). Row 3 finds a distance's bin without a search:
    ``et[3, 0]`` is a shift s, ``et[3, 1 + (d >> s)]`` the first bin whose edge is >= the first
    distance of d's bucket (at most 2048 buckets), so the bin is at most a few steps on."""
    dmax = max(2.0, float(d.ncyl - 1))
    edges = np.unique(np.ceil(np.geomspace(1.0, dmax, bins)))
    nb = len(edges)
    shift = max(0, math.ceil(math.log2((int(dmax) + 1) / 2048)))
    nbk = (int(dmax) >> shift) + 1
    et = np.zeros((4, max(nb, nbk) + 1))
    et[0, :nb] = edges
    et[0, nb:] = math.inf
    et[1, :nb] = K.seek_curve(edges, 0, d.sk, d.tt)
    et[2, :nb] = K.seek_curve(edges, 1, d.sk, d.tt)
    et[1:3, nb:] = et[1:3, nb - 1 : nb]
    et[3, 0] = shift
    et[3, 1 : nbk + 1] = np.searchsorted(edges, (np.arange(nbk) << shift).astype(float), side="left")
    return et


#: derive / _seek_table of each (config object, actuators) already built: a cluster builds hundreds of
#: drives from one validated config, and both are pure functions of it (the config is frozen, the
#: tables are only read). Keyed by the config's id while it lives (a weak reference checks it).
_GEOMETRY: dict[tuple[int, int], tuple[weakref.ref, Any, np.ndarray]] = {}


def _geometry(cfg: HDDConfig, n_act: int) -> tuple[Any, np.ndarray]:
    """(derive(cfg, n_act), its firmware seek table), computed once per config object and actuator count."""
    key = (id(cfg), n_act)
    hit = _GEOMETRY.get(key)
    if hit is not None and hit[0]() is cfg:
        return hit[1], hit[2]
    d = derive(cfg, n_act)
    et = _seek_table(d, cfg.queue.estimate_bins)
    _GEOMETRY[key] = (weakref.ref(cfg, lambda _r, key=key: _GEOMETRY.pop(key, None)), d, et)
    return d, et


class Link:
    """The host link of one drive (shared by its actuators).

    Transfers reserve intervals; a transfer takes the first gap at or after its desired start that
    is long enough (the list holds only a few future intervals, pruned as time passes).
    """

    __slots__ = ("_iv", "busy", "rate")

    def __init__(self, rate: float):
        self.rate = float(rate)
        self._iv: list[tuple[float, float]] = []
        self.busy = 0.0

    def reserve(self, t: float, dur: float, now: float) -> float:
        """Reserve ``dur`` seconds starting at the earliest free time >= t; return the start."""
        if dur <= 0.0:
            return t
        iv = self._iv
        while iv and iv[0][1] <= now:
            iv.pop(0)
        self.busy += dur
        if not iv or t >= iv[-1][1]:
            iv.append((t, t + dur))
            return t
        cur = t
        pos = len(iv)
        for k, (s, e) in enumerate(iv):
            if cur + dur <= s:
                pos = k
                break
            if e > cur:
                cur = e
        iv.insert(pos, (cur, cur + dur))
        return cur


class HDD(Device):
    """One actuator's worth of disk drive (a whole single-actuator drive, or one MACH.2 LUN)."""

    def __init__(
        self,
        cfg: HDDConfig,
        name: str,
        parent: Component | None,
        *,
        actuators: int | None = None,
        link: Link | None = None,
        phase: float | None = None,
    ):
        n_act = actuators if actuators is not None else cfg.actuators.count
        d, et = _geometry(cfg, n_act)
        super().__init__(name, parent, capacity=d.total_sectors * d.sector_size, sector_size=d.sector_size)
        self.cfg = cfg
        self.geo = d
        itf = cfg.interface
        c = cfg.cache
        q = cfg.queue
        self._ss = d.sector_size
        self._ovh_r = float(itf.read_overhead)
        self._ovh_w = float(itf.write_overhead)
        self._ovh_hit = float(
            itf.cache_hit_overhead if itf.cache_hit_overhead is not None else itf.read_overhead
        )
        self._ovh_flush = float(itf.flush_overhead if itf.flush_overhead is not None else itf.write_overhead)
        self.link = link if link is not None else Link(itf.bytes_per_second)
        self._lrate = self.link.rate
        rng = self.rng
        self.phase0 = float(rng.random()) if phase is None else float(phase)
        split = n_act if cfg.actuators.split_cache else 1
        par = np.zeros(K.NPAR)
        par[K.P_HEADS] = d.heads
        par[K.P_T] = d.rev_time
        par[K.P_RPS] = 1.0 / d.rev_time
        par[K.P_PHASE] = self.phase0
        par[K.P_TSKEW] = d.track_skew
        par[K.P_CSKEW] = d.cylinder_skew
        par[K.P_HSR] = d.head_switch_read
        par[K.P_HSW] = d.head_switch_write
        par[K.P_NCYL] = d.ncyl
        par[K.P_POLICY] = 1.0 if q.policy == "sptf" else 0.0
        par[K.P_MAXAGE] = q.max_age
        par[K.P_MAXSKIP] = q.max_skips
        par[K.P_TOTAL] = d.total_sectors
        par[K.P_LAYOUT] = 1.0 if cfg.geometry.layout == "serpentine" else 0.0
        par[K.ST_CYL] = float(rng.integers(0, d.ncyl))
        par[K.P_RA] = int(c.readahead) // self._ss
        par[K.P_LA] = 1.0 if c.read_lookahead else 0.0
        par[K.P_AGEW] = q.age_weight
        g = cfg.geometry
        par[K.P_PHYS] = (g.physical_sector_size or g.sector_size) / g.sector_size
        par[K.P_RMW] = g.rmw_revolutions
        par[K.P_WV] = g.write_verify_revolutions
        par[K.P_WIN] = q.reorder_window
        par[K.P_EST] = {"exact": 0.0, "table": 1.0, "profile": 2.0}[q.position_estimate]
        par[K.P_MARGIN] = q.estimate_margin
        par[K.P_DCOST] = q.decision_overhead
        self._par = par
        self._et = et
        self._zt = d.zt
        self._sk = d.sk
        self._tt = d.tt
        self._seg = np.full((max(1, c.segments // split), 3), -1.0)
        self._qd = q.depth
        self._window = c.destage_window if c.write_cache != "off" else 0
        self._cq = np.zeros((self._qd + self._window + 1, K.NCOL))
        self._cr: list[Any] = []
        self._n = 0
        self._nhost = 0
        self._win = 0
        self._hostq: deque[Request] = deque()
        self._outstanding = 0
        self._seq = 0
        self._busy = False
        self._mech_end = 0.0
        self._mech_item: Any = None
        self._stream = False
        # write cache (one implementation; the mode says where a destage goes and what FLUSH waits for)
        self._wc = c.write_cache
        self._wcm = W.WC_MODES[c.write_cache]  # the mode as the kernels' number (wc_write_rule ...)
        self._mc = c.write_cache == "media_cache"
        self._mc_wce = c.media_cache_wce
        # segments bound the DRAM stage (volatile, media_cache), not a non-volatile cache
        dram = c.write_cache in ("volatile", "media_cache")
        self._max_seg = max(1, c.dirty_segments // split) if (c.dirty_segments and dram) else 0
        self._dram: deque[int] = deque()  # media_cache: dirty DRAM extents not yet appended
        self._ndram = 0
        self._mc_bytes = 0  # media_cache: data in the media cache not yet cleaned home
        self._mc_size = 0
        self._mc_hw = 0.0
        if self._mc:
            self._mc_size = int(c.media_cache_size) // split
            self._mc_hw = c.cleaning_watermark * self._mc_size
            self._mc_batch = int(c.media_cache_batch)
            self._mc_cyl, self._mc_spt = _region(c.media_cache_location, d)  # its cylinder, sectors per track
            self._mc_sps = self._mc_spt / d.rev_time  # sectors per second there
            self._mc_log = 0  # sectors appended so far: the log's write pointer (its angle)
            ao = c.media_cache_append_overhead
            self._mc_setup = float(itf.write_overhead if ao is None else ao)  # firmware set-up per append
            self._mc_ilv = c.cleaning_interleave  # cleaning writes owed after each append
        self._mc_owe = 0
        # cache.cleaning_idle_delay (media_cache, persistent): idle cleaning / destage waits until no host command has been in the drive
        # for this long (wcache_kernels.mc_clean_hold); _t_host: the last host command's completion
        self._mc_delay = float(c.cleaning_idle_delay) if c.write_cache in ("media_cache", "persistent") else 0.0
        self._t_host = 0.0
        self._mc_wake = False  # an idle-timer wake-up is pending
        self._wc_size = c.write_cache_bytes() // split if c.write_cache != "off" else 0
        self._nv_ack = float(c.persistent_ack) if c.write_cache == "persistent" else 0.0
        if c.write_cache == "persistent" and c.persistent_readback:
            # the non-volatile cache is kept on the platter: a destage reads its data back (kernels.readback)
            par[K.P_RBCYL], par[K.P_RBSPT] = _region(c.media_cache_location, d)
            par[K.P_RBS] = max(1, int(c.persistent_readback) // self._ss)
        self._idle_destage = c.destage == "idle"
        self._hw = c.high_watermark * self._wc_size
        self._merge = int(c.destage_merge)
        self._lim = self._merge // self._ss  # longest extent a join may make, sectors
        self._fua_ok = c.fua_supported
        # the extents: the compiled core's extent table and kernels (wcache_kernels): rows of
        # (first sector, sectors, first seq, in destage window, index flags, place in live); an
        # extent is named by its row. ``_live`` holds the extents in the buffer (DRAM or
        # non-volatile): a cached write that overwrites an indexed one exactly replaces its data in
        # place, one adjacent to it (either side) extends it up to ``destage_merge`` bytes, and a
        # read whose 4 KiB pages each lie inside one of them is served from the buffer. Rows not in
        # use are on the ``_efree`` stack; the table doubles when it runs out (media_cache: extents
        # waiting in the media cache keep their rows until cleaned home)
        nslot = 2 + (min(self._max_seg or 64, 64) if self._wc != "off" else 0)
        self._ext = np.zeros((nslot, W.NE), np.int64)
        self._live = np.zeros(nslot, np.int64)
        self._nlive = 0
        self._efree = list(range(nslot - 1, -1, -1))
        self._pg = max(1, 4096 // d.sector_size)
        self._idx = W.wc_new_index(128, self._pg)  # start/end/page hash maps (doubled by _grow_index)
        self._half = (len(self._idx[0]) - 1) // 2  # entries per map before it doubles
        self._dirty: deque[int] = deque()  # extents not yet in the window (media_cache: to clean)
        self._ndirty = 0  # extents in the deque, the window and in flight
        self._dirty_bytes = 0
        self._blocked: deque[tuple[Request, bool]] = deque()
        # cache.queued_write_candidates (volatile, persistent): queued writes the full cache could not take, still
        # reordering candidates (written home directly if picked), oldest first -> moved into the cache
        # when a segment frees
        self._qwc = c.queued_write_candidates and c.write_cache in ("volatile", "persistent")
        self._qdw: dict[int, Request] = {}
        # FLUSH / FUA records waiting for extents to become durable: the core's record table
        # (wcache_kernels FL_* columns, arrival order); FL_REQ is a key of ``_flreq``
        self._fl = np.zeros((self._qd + 1, W.NFL))
        self._nfl = 0
        self._flreq: dict[int, Request] = {}
        self._flkey = 0
        self._oncomp = self._on_complete  # bound once (hot path)
        #: set to a list to record every media operation as (t_dispatch, kind, seek, rotation,
        #: media transfer, t_end) — for tests and analysis; None (default) costs nothing
        self.trace: list[tuple[float, int, float, float, float, float]] | None = None
        self._reset_hdd_stats()

    # ------------------------------------------------------------------ accounting
    def _reset_hdd_stats(self) -> None:
        for i in K.A_RESET:
            self._par[i] = 0.0
        self._trace_acc = (0.0, 0.0)
        self.read_hits = 0
        self.destaged = 0
        self.destaged_bytes = 0
        self.appends = 0
        self.overwrites = 0
        self.coalesced = 0
        self.dirty_read_hits = 0
        self.direct_writes = 0

    def reset_stats(self) -> None:
        super().reset_stats()
        if hasattr(self, "_par"):
            self._reset_hdd_stats()
            if self._busy:  # the operation in progress counts from the new window's start on
                self._busy_acc = max(0.0, self._mech_end - self.env.now)

    def busy_time(self) -> float:
        """Mechanism busy seconds in the current window up to now (an operation in progress counts
        up to now, not to its scheduled end)."""
        ahead = self._mech_end - self.env.now if self._busy else 0.0
        return self._busy_acc - max(0.0, ahead)

    @property
    def media_ops(self) -> int:
        return int(self._par[K.A_OPS])

    def stats(self) -> dict[str, Any]:
        s = super().stats()
        p = self._par
        ops = p[K.A_OPS]
        s["hdd"] = {
            "media_ops": int(ops),
            "mean_seek_s": p[K.A_SEEK] / ops if ops else 0.0,
            "mean_rotation_s": p[K.A_ROT] / ops if ops else 0.0,
            "mean_media_transfer_s": p[K.A_XFER] / ops if ops else 0.0,
            "decision_time_s": p[K.A_DEC],
            "readbacks": int(p[K.A_RBN]),
            "readback_time_s": p[K.A_RB],
            "read_cache_hits": self.read_hits,
            "destaged_extents": self.destaged,
            "destaged_bytes": self.destaged_bytes,
            "dirty_bytes": self._dirty_bytes,
            "media_cache_bytes": self._mc_bytes,
            "media_cache_appends": self.appends,
            "write_overwrites": self.overwrites,
            "write_coalesced": self.coalesced,
            "dirty_read_hits": self.dirty_read_hits,
            "queued": self._n,
            "host_fifo": len(self._hostq),
        }
        if self._qwc:
            s["hdd"]["queued_writes_direct"] = self.direct_writes
        return s

    # ------------------------------------------------------------------ interface
    def submit(self, req: Request) -> simpy.Event:
        op = req.op
        if op != _FLUSH and (
            op > _TRIM or op < 0 or req.size < 0 or req.offset < 0 or req.offset + req.size > self.capacity
        ):
            if op not in (_READ, _WRITE, _TRIM):
                raise ValueError(f"{self.path}: unknown op {op!r}")
            if req.size < 0:
                raise ValueError(f"{self.path}: negative size in {req!r}")
            self.check_range(req)
        env = self.env
        now = env.now
        req.t_submit = now
        ev = req.event = simpy.Event(env)
        self._qarea += self._inside * (now - self._tq)
        self._tq = now
        self._inside += 1
        if self._outstanding >= self._qd:
            self._hostq.append(req)
        else:
            self._admit(req)
        return ev

    def _start(self, req: Request) -> None:  # pragma: no cover - submit() is overridden
        if self._outstanding >= self._qd:
            self._hostq.append(req)
        else:
            self._admit(req)

    def _sectors(self, req: Request) -> tuple[int, int]:
        ss = self._ss
        lba = req.offset // ss
        end = -(-(req.offset + req.size) // ss)
        if end <= lba:
            end = lba + 1
        return lba, end

    def _ack(self, req: Request, now: float, delay: float) -> None:
        req.t_start = now
        req.service = delay
        self._complete_after(req, delay)

    def _admit(self, req: Request) -> None:
        self._outstanding += 1
        op = req.op
        now = self.env.now
        if op == _READ:
            ss = self._ss
            off = req.offset
            lba = off // ss
            end = -(-(off + req.size) // ss)
            if end <= lba:
                end = lba + 1
            par = self._par
            if self._nlive and W.wc_dirty_hit(self._idx, lba, end):
                self.dirty_read_hits += 1
                self._read_hit(req, now)
                return
            if not self._busy and par[K.PF_ON] != 0.0:
                if K.seg_hit(now, float(lba), float(end), self._seg, par):
                    self._read_hit(req, now)
                    return
                if par[K.PF_LBA] <= lba < par[K.PF_LIM]:
                    self._stream_hit(req, now, end)
                    return
            self._seq = seq = self._seq + 1
            n = self._n
            if _admit_read(
                self._cq, n, lba, end - lba, now, seq, now + self._ovh_r, self._zt, par, self._seg
            ):
                self._read_hit(req, now)
                return
            self._cr.append(req)
            self._n = n + 1
            self._nhost += 1
            if not self._busy:
                self._dispatch()
        elif op == _WRITE:
            self._admit_write(req, now)
        elif op == _FLUSH:
            nvol = _flush_waits(self._wcm, self._ndirty, self._ndram)
            if nvol > 0:
                self._flush_wait(self._seq, nvol, req, 0.0)
                if not self._busy:
                    self._dispatch()
            else:
                self._ack(req, now, self._ovh_flush)
        else:  # TRIM: a no-op for the mechanism
            lba, end = self._sectors(req)
            K.invalidate(float(lba), float(end), self._seg, self._par)
            self._ack(req, now, self._ovh_w)

    # ------------------------------------------------------------------ reads
    def _read_hit(self, req: Request, now: float) -> None:
        self.read_hits += 1
        dur = req.size / self._lrate
        ls = self.link.reserve(now + self._ovh_hit, dur, now)
        self._ack(req, now, ls + dur - now)

    def _stream_hit(self, req: Request, now: float, end: int) -> None:
        """The read-ahead in progress will reach the end of ``req``: wait for it (no seek)."""
        par = self._par
        self.read_hits += 1
        t_data = par[K.PF_T] + (end - par[K.PF_LBA]) / par[K.PF_RATE]
        dur = req.size / self._lrate
        ls = self.link.reserve(max(now + self._ovh_hit, t_data), dur, now)
        done = ls + dur
        lim = min(float(end + par[K.P_RA]), par[K.P_TOTAL])
        if lim > par[K.PF_LIM]:
            par[K.PF_LIM] = lim
        self._busy = True
        self._stream = True
        self._mech_item = req
        self._busy_acc += done - now
        self._mech_end = done
        self._ack(req, now, done - now)

    # ------------------------------------------------------------------ writes
    def _admit_write(self, req: Request, now: float) -> None:
        lba, end = self._sectors(req)
        K.invalidate(float(lba), float(end), self._seg, self._par)
        nbytes = (end - lba) * self._ss
        rule = _write_rule(self._wcm, bool(req.fua), self._fua_ok, self._mc_wce, nbytes, self._wc_size)
        if rule == W.WR_THROUGH:
            self._enqueue_host(req, now, lba, end - lba, 1, now + self._ovh_w, req.size / self._lrate)
            return
        fua_flush = rule == W.WR_DURABLE
        if self._blocked or not self._fits(lba, nbytes):
            if self._qwc and not fua_flush and not self._overlaps_dirty(lba, end) and not self._overlaps_blocked(lba, end):
                # NCQ/TCQ: the write stays a queued command the drive may pick (and take its data then);
                # writes waiting for cache space keep their order only against the ones they overlap
                self._qdw[id(req)] = req
                self._enqueue_host(req, now, lba, end - lba, 1, now + self._ovh_w, req.size / self._lrate)
                return
            self._blocked.append((req, fua_flush))
            if not self._busy:
                self._dispatch()
            return
        self._accept(req, now, lba, end, fua_flush)

    def _fits(self, lba: int, nbytes: int) -> bool:
        """Room in the DRAM write cache for a write of ``nbytes`` at ``lba`` (bytes and segments)."""
        if self._dirty_bytes + nbytes > self._wc_size:
            return False
        if self._max_seg:
            nseg = self._ndram if self._mc else self._ndirty
            if nseg >= self._max_seg and W.wc_target(self._ext, self._idx, lba, nbytes // self._ss, self._lim)[1] < 0:
                return False
        return True

    def _overlaps_dirty(self, lba: int, end: int) -> bool:
        """Sectors [lba, end) overlap dirty data still to be destaged (queued, in the window or in
        flight: the live extents of a volatile cache)."""
        return bool(self._nlive) and W.wc_overlaps(self._ext, self._live, self._nlive, lba, end)

    def _overlaps_blocked(self, lba: int, end: int) -> bool:
        """Sectors [lba, end) overlap a write waiting for cache space (``_blocked``)."""
        for req, _ff in self._blocked:
            s, t = self._sectors(req)
            if s < end and lba < t:
                return True
        return False

    def _rewindow(self, e: int, now: float) -> None:
        """Extent ``e`` grew while in the destage window: rewrite its candidate row."""
        cr = self._cr
        cq = self._cq
        for i in range(self._n):
            if cq[i, K.C_KIND] != 0.0 and cr[i] == e:
                x = self._ext[e]
                K.enqueue(cq, i, float(x[W.E_LBA]), float(x[W.E_NS]), 1.0, now, float(x[W.E_SEQ]), 1.0, now,
                          0.0, self._zt, self._par)
                return

    def _accept(self, req: Request, now: float, lba: int, end: int, fua_flush: bool) -> None:
        """Take a write into the write cache and acknowledge it after overhead + link transfer."""
        self._seq = seq = self._seq + 1
        ns = end - lba
        fr = self._efree
        if not fr:
            self._grow()
        if self._nlive >= self._half or self._idx[W.M_PAGE, -1, 0] + ns // self._pg + 2 > self._half:
            self._grow_index(ns)
        e, how, self._nlive = W.wc_put(self._ext, self._live, self._nlive, self._idx, lba, ns, self._lim, seq, fr[-1])
        if how == 0:
            # the data replaces cached data not yet destaged: no new dirty bytes, no new extent
            self.overwrites += 1
        else:
            if how > 0:
                self.coalesced += 1
                if self._ext[e, W.E_WIN]:
                    self._rewindow(e, now)
            else:
                fr.pop()
                if self._mc:
                    self._dram.append(e)
                    self._ndram += 1
                else:
                    self._dirty.append(e)
                    self._ndirty += 1
            self._dirty_bytes += ns * self._ss
        K.seg_put(float(lba), float(end), now, self._seg, self._par)  # reads of it hit the buffer
        dur = req.size / self._lrate
        ls = self.link.reserve(now + self._ovh_w, dur, now)
        done = ls + dur + self._nv_ack
        if fua_flush:
            req.t_start = now
            req.service = done - now
            self._flush_wait(seq, _flush_waits(self._wcm, self._ndirty, self._ndram), req, done)
        else:
            self._ack(req, now, done - now)
        if not self._busy:
            self._dispatch()

    def _grow(self) -> None:
        """Double the extent table (its rows keep their numbers)."""
        n = len(self._ext)
        ext = np.zeros((2 * n, W.NE), np.int64)
        ext[:n] = self._ext
        live = np.zeros(2 * n, np.int64)
        live[:n] = self._live
        self._ext = ext
        self._live = live
        self._efree[:0] = range(2 * n - 1, n - 1, -1)

    def _grow_index(self, ns: int) -> None:
        """Double the index until a write of ``ns`` sectors leaves every map at most half full."""
        c = len(self._idx[0]) - 1
        need = max(self._nlive + 1, int(self._idx[W.M_PAGE, -1, 0]) + ns // self._pg + 2)
        while c // 2 < need:
            c *= 2
        idx = W.wc_new_index(c, self._pg)
        W.wc_reindex(self._ext, self._live, self._nlive, idx)
        self._idx = idx
        self._half = c // 2

    def dirty_extents(self) -> list[tuple[int, int, int]]:
        """The extents in the write buffer (DRAM or non-volatile; media_cache: not yet appended to
        the media cache), oldest first: (first sector, sectors, arrival number of the write that
        created it). What a FLUSH of a volatile cache waits for; for tests and tools."""
        x = self._ext
        rows = [(int(x[e, W.E_LBA]), int(x[e, W.E_NS]), int(x[e, W.E_SEQ])) for e in self._live[: self._nlive]]
        return sorted(rows, key=lambda r: (r[2], r[0]))

    def _destage_done(self, ev: simpy.Event) -> None:
        e = ev._value
        now = self.env.now
        self._busy = False
        self._mech_item = None
        self._ndirty -= 1
        nb = int(self._ext[e, W.E_NS]) * self._ss
        self.destaged += 1
        self.destaged_bytes += nb
        if self._mc:  # cleaned from the media cache to its home location
            self._mc_bytes -= nb
            if self._mc_owe > 0:
                self._mc_owe -= 1
            self._efree.append(e)
            self._release(now)
            return
        self._dirty_bytes -= nb
        if self._nfl:
            self._count_flushes(e, now)
        self._nlive = W.wc_live_drop(self._ext, self._live, self._nlive, self._idx, e)
        self._efree.append(e)
        self._release(now)

    @property
    def _flushes(self) -> int:
        """FLUSH / FUA records waiting (``core/run.py`` asks whether any are)."""
        return self._nfl

    def _flush_wait(self, seq: int, left: int, req: Request, ack: float) -> None:
        """``req`` (a FLUSH, or a FUA write acknowledged at ``ack``) waits for the ``left`` extents
        in the cache now (those created up to arrival number ``seq``)."""
        n = self._nfl
        if n == len(self._fl):
            self._fl = np.concatenate([self._fl, np.zeros_like(self._fl)])
        self._flkey = k = self._flkey + 1
        self._flreq[k] = req
        self._fl[n] = (seq, left, k, ack)
        self._nfl = n + 1

    def _count_flushes(self, e: int, now: float) -> None:
        """Extent ``e`` is durable: flushes waiting for it count it; complete those that are done
        (in arrival order)."""
        fl = self._fl
        n = self._nfl
        if not W.wc_flushes_count(fl, n, float(self._ext[e, W.E_SEQ])):
            return
        ovh = self._ovh_flush
        for i in range(n):
            if fl[i, W.FL_LEFT] <= 0.0:
                req = self._flreq.pop(int(fl[i, W.FL_REQ]))
                delay = max(0.0, float(fl[i, W.FL_ACK]) - now) + ovh
                if req.op == _FLUSH:
                    req.t_start = now
                    req.service = ovh
                self._complete_after(req, delay)
        self._nfl = W.wc_flushes_drop(fl, n)

    def _release(self, now: float) -> None:
        """Cache space freed: accept blocked writes that now fit, then go on."""
        bl = self._blocked
        while bl:
            req, ff = bl[0]
            lba, end = self._sectors(req)
            if not self._fits(lba, (end - lba) * self._ss):
                break
            bl.popleft()
            self._accept(req, now, lba, end, ff)
        qd = self._qdw
        while qd and not bl:  # a segment freed: the oldest queued write the cache refused moves in
            req = next(iter(qd.values()))
            lba, end = self._sectors(req)
            if not self._fits(lba, (end - lba) * self._ss):
                break
            del qd[id(req)]
            cr = self._cr
            i = next(j for j in range(self._n) if cr[j] is req)
            K.remove_row(self._cq, self._n, i)
            last = cr.pop()
            if i < self._n - 1:
                cr[i] = last
            self._n -= 1
            self._nhost -= 1
            self._accept(req, now, lba, end, False)
        self._pump()

    # ------------------------------------------------------------------ media cache
    def _append_due(self) -> bool:
        """Append dirty DRAM data to the media cache now? When no host command waits, or something
        waits for it (a FLUSH, a blocked write, DRAM above the high watermark); only with room."""
        return _append_due(self._mc_bytes, self._mc_size, self._nhost, bool(self._nfl or self._blocked),
                               self._dirty_bytes, self._hw)

    def _start_append(self, now: float) -> bool:
        """One media operation: seek to the media cache and append dirty DRAM data (up to
        ``media_cache_batch``) at the next free sectors of its log. The firmware first sets the append
        up (``media_cache_append_overhead``, while the arm moves), then the arm waits until the log's
        write pointer comes under the head: a log append has one place to go, so an append that
        follows another one waits for the pointer to come round (most of a revolution) instead of
        continuing on the next sector. The append takes what is in DRAM when its write begins."""
        if not self._dram or self._mc_bytes + int(self._ext[self._dram[0], W.E_NS]) * self._ss > self._mc_size:
            return False
        pre, rot = W.mc_append_start(now, self._par, self._seg, self._sk, self._tt, self._mc_cyl, self._mc_log,
                                     self._mc_spt, self._mc_setup)
        self.appends += 1
        self._busy = True
        self._mech_item = None
        self._busy_acc += pre + rot
        self._mech_end = now + pre + rot
        ev = simpy.Event(self.env)
        ev.callbacks.append(self._append_write)
        succeed_at(self.env, ev, pre + rot)
        return True

    def _append_write(self, _ev: simpy.Event) -> None:
        """The log pointer is under the head: write what is in DRAM now (in arrival order)."""
        dq = self._dram
        ss = self._ss
        ext = self._ext
        batch = []
        nb = 0
        while dq:
            b = int(ext[dq[0], W.E_NS]) * ss
            if batch and nb + b > self._mc_batch:
                break
            if self._mc_bytes + nb + b > self._mc_size:
                break
            e = dq.popleft()
            W.wc_unindex(ext, self._idx, e)  # in the append: no longer joinable
            batch.append(e)
            nb += b
        xfer = nb / ss / self._mc_sps
        self._mc_log += nb // ss
        self._par[K.A_XFER] += xfer
        self._busy_acc += xfer
        self._mech_end += xfer
        ev = simpy.Event(self.env)
        ev.callbacks.append(self._append_done)
        succeed_at(self.env, ev, xfer, batch)

    def _append_done(self, ev: simpy.Event) -> None:
        batch = ev._value
        now = self.env.now
        self._busy = False
        if batch:
            self._mc_owe = self._mc_ilv
        ss = self._ss
        ext = self._ext
        for e in batch:
            nb = int(ext[e, W.E_NS]) * ss
            self._ndram -= 1
            self._dirty_bytes -= nb
            self._nlive = W.wc_live_drop(ext, self._live, self._nlive, self._idx, e)  # out of the buffer
            self._mc_bytes += nb
            if self._nfl:
                self._count_flushes(e, now)
            self._dirty.append(e)  # to be cleaned home later
            self._ndirty += 1
        self._release(now)

    # ------------------------------------------------------------------ mechanism
    def _enqueue_host(
        self, req: Request, now: float, lba: int, ns: int, w: int, ready: float, linkw: float
    ) -> None:
        self._seq += 1
        K.enqueue(
            self._cq,
            self._n,
            float(lba),
            float(ns),
            float(w),
            now,
            float(self._seq),
            0.0,
            ready,
            linkw,
            self._zt,
            self._par,
        )
        self._cr.append(req)
        self._n += 1
        self._nhost += 1
        if not self._busy:
            self._dispatch()

    def _fill_window(self, now: float) -> None:
        dq = self._dirty
        mc = self._mc
        ext = self._ext
        while dq and self._win < self._window:
            e = dq.popleft()
            x = ext[e]
            if not mc:
                x[W.E_WIN] = 1  # in the destage window: still joinable until dispatched
            K.enqueue(
                self._cq,
                self._n,
                float(x[W.E_LBA]),
                float(x[W.E_NS]),
                1.0,
                now,
                float(x[W.E_SEQ]),
                1.0,
                now,
                0.0,
                self._zt,
                self._par,
            )
            self._cr.append(e)
            self._n += 1
            self._win += 1

    def _dispatch(self) -> None:
        """The mechanism is free: start the next media operation, if any."""
        # cleaning owed since the last append, before the next one (host writes wait in DRAM for it;
        # host reads are not held back by it)
        owe = self._mc_owe > 0 and bool(self._dram) and bool(self._dirty or self._win)
        if not owe and self._mc and self._dram and self._append_due() and self._start_append(self.env.now):
            return
        if self._dirty and self._win < self._window:
            self._fill_window(self.env.now)
        n = self._n
        if n == 0:
            return
        env = self.env
        now = env.now
        hold = _clean_hold(
            now, self._t_host, self._outstanding, self._mc_delay, self._wcm, self._mc_bytes, self._mc_hw,
            self._dirty_bytes, self._hw, bool(self._nfl or self._blocked or self._qdw), owe, self._win,
        ) if self._mc_delay else 0.0  # fmt: skip
        if hold != 0.0:  # idle cleaning waits for the idle timer (cache.cleaning_idle_delay)
            if not self._nhost:
                if hold > 0.0 and not self._mc_wake:
                    self._mc_wake = True
                    wev = simpy.Event(env)
                    wev.callbacks.append(self._idle_wake)
                    succeed_at(env, wev, hold)
                return
            mode = 1  # host commands only
        else:
            # 2: one cleaning write home (the best-placed of the cleaning window); 1: host commands first
            mode = _destage_mode(
                self._wcm, owe, self._win, self._nhost, self._idle_destage, self._mc_bytes, self._mc_hw,
                bool(self._nfl or self._blocked or self._qdw) or self._dirty_bytes >= self._hw,
            )
        i, kind, t0, xs, tend = _dispatch_k(
            now, n, self._cq, self._zt, self._par, self._sk, self._tt, self._seg, mode, self._et
        )
        if i < 0:
            return
        if self.trace is not None:
            self._record(now, kind, xs, tend)
        cr = self._cr
        item = cr[i]
        last = cr.pop()
        if i < n - 1:
            cr[i] = last
        self._n = n - 1
        self._busy = True
        self._mech_item = item
        if kind == 0:
            self._nhost -= 1
            if self._qdw and self._qdw.pop(id(item), None) is not None:
                self.direct_writes += 1
            link = self.link
            dur = item.size / self._lrate
            if item.op == _READ:
                iv = link._iv
                if not iv or (iv[-1][1] <= now and len(iv) == 1):
                    # fast path: the link is idle from now on
                    link._iv = [(xs, xs + dur)]
                    link.busy += dur
                    done = xs + dur
                else:
                    done = link.reserve(xs, dur, now) + dur
                if done < tend:
                    done = tend
            else:
                link.reserve(t0, dur, now)
                done = tend
            delay = done - now
            item.t_start = now
            item.service = delay
            ev = item.event
            ev.callbacks.insert(0, self._oncomp)
            ev._ok = True
            ev._value = item
            env.schedule(ev, NORMAL, delay)
            if done > tend + 1e-12:
                # the host link is the bottleneck: the mechanism goes on at the end of the media
                # transfer (the buffer holds the data) while the link drains
                self._busy_acc += tend - now
                self._mech_end = tend
                self._mech_item = None
                fev = simpy.Event(env)
                fev.callbacks.append(self._mech_free)
                succeed_at(env, fev, tend - now)
            else:
                self._busy_acc += delay
                self._mech_end = done
        else:
            self._win -= 1
            W.wc_unindex(self._ext, self._idx, item)  # in flight: no longer joinable
            self._busy_acc += tend - now
            self._mech_end = tend
            ev = simpy.Event(env)
            ev.callbacks.append(self._destage_done)
            succeed_at(env, ev, tend - now, item)

    def _mech_free(self, ev: simpy.Event) -> None:
        self._busy = False
        self._pump()

    def _idle_wake(self, _ev: simpy.Event) -> None:
        """The idle timer of cache.cleaning_idle_delay may have expired: look again."""
        self._mc_wake = False
        self._pump()

    def _record(self, now: float, kind: int, xs: float, tend: float) -> None:
        p = self._par
        last = getattr(self, "_trace_acc", (0.0, 0.0))
        seek = p[K.A_SEEK] - last[0]
        rot = p[K.A_ROT] - last[1]
        self._trace_acc = (p[K.A_SEEK], p[K.A_ROT])
        self.trace.append((now, kind, seek, rot, tend - xs, tend))  # type: ignore[union-attr]

    def _take_stream(self, i: int, now: float) -> None:
        """Serve queued read i from the read-ahead in progress."""
        K.remove_row(self._cq, self._n, i)
        cr = self._cr
        req = cr[i]
        last = cr.pop()
        if i < self._n - 1:
            cr[i] = last
        self._n -= 1
        self._nhost -= 1
        end = self._sectors(req)[1]
        self._stream_hit(req, now, end)

    def _finish(self, req: Request) -> None:
        # Device._finish's accounting, inlined on the per-IO hot path (keep the two in step)
        now = self.env.now
        self._qarea += self._inside * (now - self._tq)
        self._tq = now
        self._inside -= 1
        op = req.op
        self.completed[op] += 1
        self.bytes[op] += req.size
        self._outstanding -= 1
        self._t_host = now
        if req is self._mech_item:
            self._mech_item = None
            self._busy = False
            if self._stream:
                self._stream = False
                par = self._par
                if self._nhost and par[K.PF_ON] != 0.0:
                    i = K.find_read_in(self._cq, self._n, par[K.PF_LBA], par[K.PF_LIM])
                    if i >= 0:
                        self._take_stream(i, now)
        hq = self._hostq
        while hq and self._outstanding < self._qd:
            self._admit(hq.popleft())
        if not self._busy and (self._n or self._dirty or self._dram):
            self._dispatch()

    def _pump(self) -> None:
        hq = self._hostq
        while hq and self._outstanding < self._qd:
            self._admit(hq.popleft())
        if not self._busy and (self._n or self._dirty or self._dram):
            self._dispatch()

    # ------------------------------------------------------------------ helpers for tests/tools
    def locate(self, offset: int) -> tuple[int, int, int, int, float]:
        """(cylinder, head, sector, sectors per track, angle) of a byte offset."""
        c, h, s, spt, a = K.locate(float(offset // self._ss), self._zt, self._par)
        return int(c), int(h), int(s), int(spt), float(a)

    def seek(self, distance: float, write: bool = False) -> float:
        """Seek time in seconds for a move of ``distance`` cylinders."""
        return float(K.seek_curve(np.array([float(distance)]), 1 if write else 0, self._sk, self._tt)[0])

    @property
    def rev_time(self) -> float:
        return self.geo.rev_time

    def angle_at(self, t: float) -> float:
        a = self.phase0 + t / self.geo.rev_time
        return a - math.floor(a)


class DualActuatorHDD(Device):
    """A dual-actuator drive: two :class:`HDD` mechanisms on one spindle sharing the host link.

    ``exposure: luns`` (SAS MACH.2) -> children ``lun0``/``lun1``; address them as
    ``<name>.lun0``. Submitting to the drive itself treats it as the concatenation of the two (what
    dm-linear over both LUNs would give). ``exposure: lba_halves`` (SATA MACH.2) -> one device whose
    first half of the LBAs is actuator ``act0`` and second half ``act1``.
    """

    def __init__(self, cfg: HDDConfig, name: str, parent: Component | None):
        super().__init__(name, parent, capacity=cfg.geometry.capacity, sector_size=cfg.geometry.sector_size)
        self.cfg = cfg
        self.link = Link(cfg.interface.bytes_per_second)
        phase = float(self.rng.random())
        names = ("lun0", "lun1") if cfg.actuators.exposure == "luns" else ("act0", "act1")
        self.actuators = [HDD(cfg, nm, self, actuators=2, link=self.link, phase=phase) for nm in names]
        self._half = self.actuators[0].capacity
        self.capacity = 2 * self._half

    def _start(self, req: Request) -> None:
        op = req.op
        parts: list[tuple[HDD, int, int]] = []
        if op == _FLUSH:
            parts = [(a, 0, 0) for a in self.actuators]
        else:
            if op not in (_READ, _WRITE, _TRIM):
                raise ValueError(f"{self.path}: unknown op {op!r}")
            off, end, h = req.offset, req.offset + req.size, self._half
            if off < h:
                parts.append((self.actuators[0], off, min(end, h) - off))
            if end > h or (off >= h):
                s = max(off, h)
                parts.append((self.actuators[1], s - h, end - s))
        state = [len(parts), req]
        for act, o, sz in parts:
            child = Request(op, o, sz, fua=req.fua, parent=req, tag=state)
            ev = act.submit(child)
            ev.callbacks.append(self._child_done)
        req.t_start = float("inf")
        req.service = 0.0

    def submit(self, req: Request) -> simpy.Event:
        if req.op != _FLUSH:
            if req.size < 0:
                raise ValueError(f"{self.path}: negative size in {req!r}")
            self.check_range(req)
        return super().submit(req)

    def _child_done(self, ev: simpy.Event) -> None:
        child = ev._value
        state = child.tag
        req = state[1]
        if child.t_start < req.t_start:
            req.t_start = child.t_start
        if child.service > req.service:
            req.service = child.service
        state[0] -= 1
        if state[0] == 0:
            self._finish(req)
            succeed_now(self.env, req.event, req)

    def busy_time(self) -> float:
        """Mean of the two mechanisms' busy time (utilisation of the drive = mean of actuators)."""
        return sum(a.busy_time() for a in self.actuators) / len(self.actuators)

    def reset_stats(self) -> None:
        super().reset_stats()
        for a in getattr(self, "actuators", ()):
            a.reset_stats()

    def stats(self) -> dict[str, Any]:
        s = super().stats()
        s["actuators"] = [a.stats() for a in self.actuators]
        s["link_busy_s"] = self.link.busy
        return s


def _region(location: float, d: Any) -> tuple[float, float]:
    """Cylinder at radial ``location`` (fraction of the stroke from the OD) of geometry ``d`` and its
    zone's sectors per track: where an on-platter cache lives."""
    cyl = float(round(location * (d.ncyl - 1)))
    z = int(np.searchsorted(d.zt[:, 2], cyl, side="right") - 1)
    return cyl, float(d.zt[max(z, 0), 3])


def build_hdd(cfg: HDDConfig, name: str, parent: Component) -> Device:
    """Factory registered as kind ``hdd``."""
    if cfg.actuators.count == 2:
        return DualActuatorHDD(cfg, name, parent)
    return HDD(cfg, name, parent)
