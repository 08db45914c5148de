"""The flash read cache device: a NAND read cache in front of any backing device.

Requests keep their identity through the cache (as through a partition): a read miss, a write, a
trim or a flush is the host's own request handed to the backing device, whose completion event is the
request's event; the cache's callback runs first (accounting, admission). A hit is served by the
cache with one event of its own. So one IO costs one event, and every IO completes exactly once.

Mechanisms (parameters in :class:`~simulator.devices.flashcache.config.FlashReadCacheConfig`):

* **Lookup.** Validity is kept per 4 KiB block inside regions of ``region`` bytes. A read hits when
  every block it touches is valid; otherwise the whole read goes to the backing device (no partial
  hits).
* **Admission.** Only reads up to ``max_admit_size`` that do not continue the previous read
  (``skip_sequential``) are eligible. ``on_miss``: an eligible miss promotes the blocks it read
  completely. ``access_count``: a region not in the cache is promoted on its ``admit_after``-th miss
  while it is remembered in a ghost LRU list of ``ghost_regions`` entries; a region already in the
  cache takes its newly read blocks at once. Promotion happens when the miss completes (the data is
  in the drive's buffer), costs no backing IO and costs NAND program time.
* **Eviction.** ``lru`` or segmented LRU (``slru``): promoted regions enter a probationary segment; a
  hit moves a region to the protected segment (at most ``protected_fraction`` x ``size`` bytes, its
  LRU demoted back); eviction takes the probationary LRU first. Capacity counts valid bytes.
* **Writes and trims** invalidate the blocks they touch (whole blocks) and go to the backing device.
* **Timing.** A hit takes the firmware (``controller_time``, one hit at a time), then a read of the
  region's die (``read_latency`` per multi-plane page; the die is a FIFO server shared with
  programs), then the transfer over the die's channel. Promotions are written log-structured, one
  die after the other, each occupying its die for ``program_latency`` per multi-plane page: they
  compete with hits for the dies. When more than ``max_pending_promotion`` bytes wait for programs,
  new promotions are dropped (counted). No process and no event per NAND operation: the dies and
  channels are timelines (time at which each becomes free).
* **Warm-up** is visible in the hit-ratio series (bins of ``series_interval``); :meth:`warm` replays
  an access sequence through lookup/admission/eviction without timing (a preconditioning phase).
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from collections.abc import Iterable
from typing import Any

import simpy

from simulator.devices.base import Device, Op, PassThroughBusy, Request
from simulator.devices.flashcache.config import FlashReadCacheConfig
from simulator.engine import Component, succeed_at

__all__ = ["FlashReadCache", "build_flash_read_cache"]

_READ, _WRITE, _TRIM, _FLUSH = int(Op.READ), int(Op.WRITE), int(Op.TRIM), int(Op.FLUSH)
_BLK = 4096


class FlashReadCache(PassThroughBusy, Device):
    """``FlashReadCache(cfg, name, parent, backing=None)``: ``backing`` (a built device whose
    component parent is this cache) replaces ``cfg.backing`` (Python API, tests)."""

    def __init__(
        self,
        cfg: FlashReadCacheConfig,
        name: str,
        parent: Component | None,
        *,
        backing: Device | None = None,
        make_backing: Any = None,
    ):
        super().__init__(name, parent)
        self.cfg = cfg
        if make_backing is not None:
            backing = make_backing(self)
        if backing is None:
            from simulator.devices.registry import build_device

            backing = build_device(cfg.backing, "disk", self, field="backing")
        self.backing = backing
        self.capacity = backing.capacity
        self.sector_size = backing.sector_size
        self._on = cfg.enabled
        self._size = int(cfg.size)
        self._region = int(cfg.region)
        self._rblocks = self._region // _BLK
        self._count_mode = cfg.admission == "access_count"
        self._admit_after = cfg.admit_after
        self._ghost_max = cfg.ghost_regions or max(1, self._size // self._region)
        self._slru = cfg.eviction == "slru"
        self._prot_max = int(cfg.protected_fraction * self._size)
        self._max_admit = int(cfg.max_admit_size)
        self._skip_seq = cfg.skip_sequential
        self._ctl = float(cfg.controller_time)
        n = cfg.nand
        self._dies = n.dies
        self._per_ch = n.dies // n.channels
        self._unit = int(n.page_size) * n.planes
        self._tr = float(n.read_latency)
        self._tprog = float(n.program_latency)
        self._ch_rate = float(n.channel_rate)
        self._max_pending = int(cfg.max_pending_promotion)
        self._interval = float(cfg.series_interval)
        # state
        self._prob: OrderedDict[int, list[int]] = OrderedDict()  # region -> [mask, die]
        self._prot: OrderedDict[int, list[int]] = OrderedDict()
        self._ghost: OrderedDict[int, int] = OrderedDict()
        self.valid_bytes = 0
        self._prot_bytes = 0
        self._die_free = [0.0] * n.dies
        self._ch_free = [0.0] * n.channels
        self._ctl_free = 0.0
        self._rr = 0
        self._pending: deque[tuple[float, int]] = deque()
        self._pending_bytes = 0
        self._last_end = -1
        self.series: dict[int, list[int]] = {}
        self._cb = self._done
        self._hit_cb = self._hit_done
        self._zero_counters()

    # ------------------------------------------------------------------ accounting
    def _zero_counters(self) -> None:
        self.hits = 0
        self.misses = 0
        self.hit_bytes = 0
        self.promotions = 0
        self.promoted_bytes = 0
        self.dropped_promotions = 0
        self.invalidated_bytes = 0
        self.evicted_bytes = 0

    def reset_stats(self) -> None:
        super().reset_stats()
        if hasattr(self, "_prob"):
            self._zero_counters()

    def stats(self) -> dict[str, Any]:
        s = super().stats()
        looked = self.hits + self.misses
        s["flash_cache"] = {
            "hits": self.hits,
            "misses": self.misses,
            "hit_ratio": self.hits / looked if looked else 0.0,
            "hit_bytes": self.hit_bytes,
            "promotions": self.promotions,
            "promoted_bytes": self.promoted_bytes,
            "dropped_promotions": self.dropped_promotions,
            "invalidated_bytes": self.invalidated_bytes,
            "evicted_bytes": self.evicted_bytes,
            "valid_bytes": self.valid_bytes,
            "regions": len(self._prob) + len(self._prot),
        }
        return s

    def hit_ratio_series(self) -> list[tuple[float, float, int]]:
        """[(bin start s, read hit ratio, reads)] per ``series_interval`` bin with reads."""
        out = []
        for b in sorted(self.series):
            h, m = self.series[b]
            out.append((b * self._interval, h / (h + m), h + m))
        return out

    # ------------------------------------------------------------------ the interface
    def submit(self, req: Request) -> simpy.Event:
        env = self.env
        now = env._now
        self._qarea += self._inside * (now - self._tq)
        self._tq = now
        if self._inside == 0:
            self._mark_busy(now)
        self._inside += 1
        op = req.op
        if op == _READ and self._on and req.size > 0:
            self.check_range(req)
            if self._lookup(req.offset, req.size):
                return self._hit(req, now)
            self._count(now, False)
            self.misses += 1
        elif op in (_WRITE, _TRIM) and self._on:
            self.check_range(req)
            self._invalidate(req.offset, req.size)
        ev = self.backing.submit(req)
        ev.callbacks.append(self._cb)
        return ev

    def _start(self, req: Request) -> None:  # pragma: no cover - submit() is overridden
        raise NotImplementedError

    def _done(self, ev: Any) -> None:
        req: Request = ev._value
        if req.op == _READ and self._on and req.size > 0:
            self._miss_done(req.offset, req.size, self.env._now)
        self._finish(req)

    def _hit_done(self, ev: Any) -> None:
        self._finish(ev._value)

    # ------------------------------------------------------------------ hits
    def _hit(self, req: Request, now: float) -> simpy.Event:
        self.hits += 1
        self.hit_bytes += req.size
        self._count(now, True)
        self._last_end = req.offset + req.size
        t = self._ctl_free
        if t < now:
            t = now
        t += self._ctl
        self._ctl_free = t
        done = t
        worst = 0.0
        df = self._die_free
        cf = self._ch_free
        for r, a, b in self._pieces(req.offset, req.size):
            ent = self._touch(r)
            d = ent[1]
            nbytes = b - a
            tread = self._tr * math.ceil(nbytes / self._unit)
            xfer = nbytes / self._ch_rate
            s = df[d]
            if s < t:
                s = t
            df[d] = s + tread
            c = d // self._per_ch
            x = cf[c]
            if x < s + tread:
                x = s + tread
            x += xfer
            cf[c] = x
            if x > done:
                done = x
            if tread + xfer > worst:
                worst = tread + xfer
        req.t_start = now
        req.service = self._ctl + worst
        ev = req.event = simpy.Event(self.env)
        req.t_submit = now
        ev.callbacks.append(self._hit_cb)
        return succeed_at(self.env, ev, done - now, req)

    def _count(self, now: float, hit: bool) -> None:
        b = int(now / self._interval)
        row = self.series.get(b)
        if row is None:
            row = self.series[b] = [0, 0]
        row[0 if hit else 1] += 1

    # ------------------------------------------------------------------ cache state
    def _pieces(self, off: int, size: int):
        """(region, start, end) of the read, cut at region boundaries."""
        rg = self._region
        end = off + size
        while off < end:
            r = off // rg
            e = min(end, (r + 1) * rg)
            yield r, off, e
            off = e

    def _mask(self, r: int, a: int, b: int, whole: bool) -> int:
        """Blocks of region ``r`` touched by [a, b) (``whole``: only blocks covered completely)."""
        base = r * self._region
        if whole:
            lo = -(-(a - base) // _BLK)
            hi = (b - base) // _BLK
        else:
            lo = (a - base) // _BLK
            hi = -(-(b - base) // _BLK)
        if hi <= lo:
            return 0
        return ((1 << (hi - lo)) - 1) << lo

    def _entry(self, r: int) -> list[int] | None:
        ent = self._prob.get(r)
        if ent is None:
            ent = self._prot.get(r)
        return ent

    def _lookup(self, off: int, size: int) -> bool:
        for r, a, b in self._pieces(off, size):
            ent = self._entry(r)
            if ent is None:
                return False
            m = self._mask(r, a, b, False)
            if ent[0] & m != m:
                return False
        return True

    def _touch(self, r: int) -> list[int]:
        """A hit on region ``r``: recency (and promotion to the protected segment)."""
        prob = self._prob
        ent = prob.get(r)
        if ent is None:
            self._prot.move_to_end(r)
            return self._prot[r]
        if not self._slru:
            prob.move_to_end(r)
            return ent
        del prob[r]
        self._prot[r] = ent
        nb = ent[0].bit_count() * _BLK
        self._prot_bytes += nb
        while self._prot_bytes > self._prot_max and len(self._prot) > 1:
            rr, e2 = self._prot.popitem(last=False)
            self._prot_bytes -= e2[0].bit_count() * _BLK
            prob[rr] = e2
        return ent

    def _invalidate(self, off: int, size: int) -> None:
        if not (self._prob or self._prot) or size <= 0:
            return
        for r, a, b in self._pieces(off, size):
            ent = self._entry(r)
            if ent is None:
                continue
            m = self._mask(r, a, b, False) & ent[0]
            if not m:
                continue
            nb = m.bit_count() * _BLK
            ent[0] &= ~m
            self.valid_bytes -= nb
            self.invalidated_bytes += nb
            if r in self._prot:
                self._prot_bytes -= nb
                if not ent[0]:
                    del self._prot[r]
            elif not ent[0]:
                del self._prob[r]

    def _miss_done(self, off: int, size: int, now: float | None) -> None:
        """Admission after a read miss (``now`` None: functional warm-up, no NAND timing)."""
        eligible = size <= self._max_admit and not (self._skip_seq and off == self._last_end)
        self._last_end = off + size
        if not eligible:
            return
        for r, a, b in self._pieces(off, size):
            m = self._mask(r, a, b, True)
            if not m:
                continue
            ent = self._entry(r)
            if ent is None and self._count_mode:
                g = self._ghost
                c = g.pop(r, 0) + 1
                if c < self._admit_after:
                    g[r] = c
                    if len(g) > self._ghost_max:
                        g.popitem(last=False)
                    continue
            self._promote(r, m, ent, now)

    def _promote(self, r: int, m: int, ent: list[int] | None, now: float | None) -> None:
        if ent is not None:
            m &= ~ent[0]
            if not m:
                return
        nb = m.bit_count() * _BLK
        die = self._rr
        if now is not None:
            pend = self._pending
            while pend and pend[0][0] <= now:
                self._pending_bytes -= pend.popleft()[1]
            if self._pending_bytes + nb > self._max_pending:
                self.dropped_promotions += 1
                return
            df = self._die_free
            s = df[die]
            if s < now:
                s = now
            df[die] = s + self._tprog * math.ceil(nb / self._unit)
            pend.append((df[die], nb))
            self._pending_bytes += nb
        self._rr = (die + 1) % self._dies
        self.promotions += 1
        self.promoted_bytes += nb
        if ent is None:
            self._prob[r] = [m, die]
        else:
            ent[0] |= m
            ent[1] = die
            if r in self._prot:
                self._prot_bytes += nb
        self.valid_bytes += nb
        self._evict()

    def _evict(self) -> None:
        while self.valid_bytes > self._size:
            if self._prob:
                _, ent = self._prob.popitem(last=False)
            else:
                _, ent = self._prot.popitem(last=False)
                self._prot_bytes -= ent[0].bit_count() * _BLK
            nb = ent[0].bit_count() * _BLK
            self.valid_bytes -= nb
            self.evicted_bytes += nb

    # ------------------------------------------------------------------ preconditioning
    def warm(self, ops: Iterable[tuple[int, int, int]]) -> int:
        """Replay ``(op, offset, size)`` accesses through lookup, admission, eviction and invalidation
        without simulated time (a preconditioning phase); returns the number of read hits. The
        statistics counters are left as they were."""
        if not self._on:
            return 0
        hits = 0
        saved = (self.promotions, self.promoted_bytes, self.invalidated_bytes, self.evicted_bytes)
        for op, off, size in ops:
            if op == _READ:
                if self._lookup(off, size):
                    hits += 1
                    for r, _a, _b in self._pieces(off, size):
                        self._touch(r)
                    self._last_end = off + size
                else:
                    self._miss_done(off, size, None)
            elif op in (_WRITE, _TRIM):
                self._invalidate(off, size)
        self.promotions, self.promoted_bytes, self.invalidated_bytes, self.evicted_bytes = saved
        return hits


def build_flash_read_cache(cfg: FlashReadCacheConfig, name: str, parent: Component) -> FlashReadCache:
    return FlashReadCache(cfg, name, parent)
