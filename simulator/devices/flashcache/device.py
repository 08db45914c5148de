"""The flash read cache device: a NAND read cache in front of any backing device.

Requests keep their identity through the cache (as through a partition): a read miss, a write, a
trim or a flush is the host's own request handed to the backing device, whose completion event is the
request's event; the cache's callback runs first (accounting, admission). A hit is served by the
cache with one event of its own. So one IO costs one event, and every IO completes exactly once.
The directory (lookup, admission, eviction, invalidation) lives in :mod:`.core` (numba kernels
over arrays), used alike by the timed path and by the functional warm-up.

Mechanisms (parameters in :class:`~simulator.devices.flashcache.config.FlashReadCacheConfig`):

* **Lookup.** The cache allocates whole regions of ``region`` bytes and keeps validity per 4 KiB
  block. A read hits when every block it touches is valid; otherwise the whole read goes to the
  backing device (no partial hits).
* **Admission.** Only reads up to ``max_admit_size`` that do not continue the previous read
  (``skip_sequential``) are eligible. ``on_miss``: an eligible miss promotes the regions it touched.
  ``access_count``: a region not in the cache is promoted on its ``admit_after``-th miss while it is
  remembered in a ghost LRU list of ``ghost_regions`` entries. A region already in the cache (some
  blocks invalidated by writes) is refreshed at once. A promoted region is made wholly valid: the
  part the miss did not read is fetched from the backing device by a background read (it competes
  with host IO there), then the region is programmed into the NAND.
* **Eviction.** ``lru`` or segmented LRU (``slru``): promoted regions enter a probationary segment; a
  hit moves a region to the protected segment (at most ``protected_fraction`` of the regions, its
  LRU demoted back); eviction takes the probationary LRU first.
* **Writes and trims** invalidate the blocks they touch and go to the backing device.
* **Timing.** A hit takes the firmware (``controller_time``, one hit at a time), then a read on the
  die of each region it touches (``read_latency`` per multi-plane page; the die is a FIFO server
  shared with programs), then the transfer over the die's channel. Promotions are programmed
  log-structured, one die after the other, each occupying its die for ``program_latency`` per
  multi-plane page: they compete with hits for the dies. When more than ``max_pending_promotion``
  bytes are being fetched or wait for their program, misses promote nothing (``throttled_misses``;
  they still count for admission). Dies and channels are timelines (the time each becomes
  free): no process and no event per NAND operation.
* **Warm-up** is visible in the hit-ratio series (bins of ``series_interval``); :meth:`warm` replays
  an access sequence through the directory without timing (a preconditioning phase).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import numpy as np
import simpy

from simulator.devices.base import Device, Op, PassThroughBusy, Request
from simulator.devices.flashcache import core
from simulator.devices.flashcache.config import FlashReadCacheConfig
from simulator.engine import Component, succeed_at

__all__ = ["FlashReadCache", "build_flash_read_cache"]

_READ, _WRITE, _TRIM, _FLUSH = int(Op.READ), int(Op.WRITE), int(Op.TRIM), int(Op.FLUSH)


class _Fill(Request):
    """The cache's own background read of a promoted region."""

    __slots__ = ("die",)


class FlashReadCache(PassThroughBusy, Device):
    """``FlashReadCache(cfg, name, parent, backing=None)``: ``backing`` (a built device) replaces
    ``cfg.backing`` (Python API, tests)."""

    def __init__(self, cfg: FlashReadCacheConfig, name: str, parent: Component | None, *, backing: Device | None = None):
        super().__init__(name, parent)
        self.cfg = cfg
        if backing is None:
            from simulator.devices.registry import build_device

            backing = build_device(cfg.backing, "disk", self, field="backing")
        self.backing = backing
        self.capacity = backing.capacity
        self.sector_size = backing.sector_size
        self._on = cfg.enabled
        self._region = int(cfg.region)
        ghost = cfg.ghost_regions or max(1, int(cfg.size) // self._region)
        n = cfg.nand
        self._S, self._H, self._G, self._GH, self._M = core.new_state(
            self._region, int(cfg.size), cfg.admit_after, cfg.admission == "access_count", cfg.eviction == "slru",
            cfg.protected_fraction, int(cfg.max_admit_size), cfg.skip_sequential, ghost, n.dies,
        )
        self._ctl = float(cfg.controller_time)
        self._per_ch = n.dies // n.channels
        self._unit = int(n.page_size) * n.planes
        self._tr = float(n.read_latency)
        self._tprog = float(n.program_latency)
        self._ch_rate = float(n.channel_rate)
        self._max_pending = int(cfg.max_pending_promotion)
        self._interval = float(cfg.series_interval)
        self._die_free = [0.0] * n.dies
        self._ch_free = [0.0] * n.channels
        self._ctl_free = 0.0
        self._programs: deque[tuple[float, int]] = deque()
        self._pending_bytes = 0
        self._dies = np.zeros(64, dtype=np.int64)
        self._out = np.zeros((64, 3), dtype=np.int64)
        self.series: dict[int, list[int]] = {}
        self._cb = self._done
        self._hit_cb = self._hit_done
        self._fill_cb = self._filled
        self._zero_counters()

    # ------------------------------------------------------------------ accounting
    def _zero_counters(self) -> None:
        self.hits = 0
        self.misses = 0
        self.hit_bytes = 0
        self.throttled_misses = 0
        self.fills = 0
        self._base = [int(self._M[i]) for i in (core.M_PROMO, core.M_EVICT, core.M_INVAL)]

    def reset_stats(self) -> None:
        super().reset_stats()
        if hasattr(self, "_M"):
            self._zero_counters()

    @property
    def valid_bytes(self) -> int:
        """Bytes of valid data in the cache."""
        return int(self._M[core.M_VALID])

    @property
    def regions(self) -> int:
        return int(self._M[core.M_NP] + self._M[core.M_NR])

    @property
    def promotions(self) -> int:
        return int(self._M[core.M_PROMO]) - self._base[0]

    @property
    def invalidated_bytes(self) -> int:
        return int(self._M[core.M_INVAL]) - self._base[2]

    def stats(self) -> dict[str, Any]:
        s = super().stats()
        looked = self.hits + self.misses
        s["flash_cache"] = {
            "hits": self.hits,
            "misses": self.misses,
            "hit_ratio": self.hits / looked if looked else 0.0,
            "hit_bytes": self.hit_bytes,
            "promotions": self.promotions,
            "promoted_bytes": self.promotions * self._region,
            "fills": self.fills,
            "throttled_misses": self.throttled_misses,
            "invalidated_bytes": self.invalidated_bytes,
            "evicted_regions": int(self._M[core.M_EVICT]) - self._base[1],
            "valid_bytes": self.valid_bytes,
            "regions": self.regions,
        }
        return s

    def hit_ratio_series(self) -> list[tuple[float, float, int]]:
        """[(bin start s, read hit ratio, reads)] per ``series_interval`` bin with reads."""
        out = []
        for b in sorted(self.series):
            h, m = self.series[b]
            out.append((b * self._interval, h / (h + m), h + m))
        return out

    def _count(self, now: float, hit: bool) -> None:
        b = int(now / self._interval)
        row = self.series.get(b)
        if row is None:
            row = self.series[b] = [0, 0]
        row[0 if hit else 1] += 1

    def _room(self, need: int = 8) -> None:
        M = self._M
        if M[core.M_FREE] < 0:
            self._S, self._H = core.grow(self._S, self._H, need, int(M[core.M_USED]))
        if M[core.M_GFREE] < 0:
            self._G, self._GH = core.grow(self._G, self._GH, need, int(M[core.M_GUSED]))

    # ------------------------------------------------------------------ the interface
    def submit(self, req: Request) -> simpy.Event:
        now = self.env._now
        self._enter_inside(now)
        op = req.op
        if self._on and req.size > 0:
            if op == _READ:
                self.check_range(req)
                n = core.read(self._S, self._H, self._M, req.offset, req.size, self._dies)
                if n >= 0:
                    return self._hit(req, now, n)
                self._count(now, False)
                self.misses += 1
            elif op in (_WRITE, _TRIM):
                self.check_range(req)
                core.invalidate(self._S, self._H, self._M, req.offset, req.size)
        ev = self.backing.submit(req)
        ev.callbacks.append(self._cb)
        return ev

    def _start(self, req: Request) -> None:  # pragma: no cover - submit() is overridden
        raise NotImplementedError

    def _done(self, ev: Any) -> None:
        req: Request = ev._value
        if req.op == _READ and self._on and req.size > 0:
            self._admit(req.offset, req.size, self.env._now)
        self._finish(req)

    def _hit_done(self, ev: Any) -> None:
        self._finish(ev._value)

    # ------------------------------------------------------------------ hits
    def _hit(self, req: Request, now: float, n: int) -> simpy.Event:
        self.hits += 1
        self.hit_bytes += req.size
        self._count(now, True)
        t = self._ctl_free
        if t < now:
            t = now
        t += self._ctl
        self._ctl_free = t
        done = t
        worst = 0.0
        df = self._die_free
        cf = self._ch_free
        rg = self._region
        off = req.offset
        end = off + req.size
        dies = self._dies
        for i in range(n):
            b = min(end, (off // rg + 1) * rg)
            nbytes = b - off
            off = b
            d = int(dies[i])
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
        req.t_submit = now
        req.service = self._ctl + worst
        ev = req.event = simpy.Event(self.env)
        ev.callbacks.append(self._hit_cb)
        return succeed_at(self.env, ev, done - now, req)

    # ------------------------------------------------------------------ promotion
    def _admit(self, off: int, size: int, now: float) -> None:
        pend = self._programs
        while pend and pend[0][0] <= now:
            self._pending_bytes -= pend.popleft()[1]
        rg = self._region
        allow = 1 if self._pending_bytes + rg * (size // rg + 2) <= self._max_pending else 0
        self._room()
        k = core.miss(self._S, self._H, self._G, self._GH, self._M, off, size, allow, self._out)
        if not allow:
            self.throttled_misses += 1
        out = self._out
        for i in range(k):
            r, d, fill = int(out[i, 0]), int(out[i, 1]), int(out[i, 2])
            self._pending_bytes += rg
            if fill:
                self.fills += 1
                f = _Fill(_READ, r * rg, min(rg, self.capacity - r * rg))
                f.die = d
                self.backing.submit(f).callbacks.append(self._fill_cb)
            else:
                self._program(d, now)

    def _filled(self, ev: Any) -> None:
        self._program(ev._value.die, self.env._now)

    def _program(self, d: int, now: float) -> None:
        df = self._die_free
        s = df[d]
        if s < now:
            s = now
        df[d] = s + self._tprog * math.ceil(self._region / self._unit)
        self._programs.append((df[d], self._region))

    # ------------------------------------------------------------------ preconditioning
    def warm(self, ops: Any, offsets: Any = None, sizes: Any = None) -> int:
        """Replay accesses through the directory without simulated time (a preconditioning phase):
        either one iterable of ``(op, offset, size)`` or three arrays. Returns the read hits. The
        hit/miss counters of the statistics window are left as they were."""
        if not self._on:
            return 0
        if offsets is None:
            rows = np.asarray(list(ops), dtype=np.int64).reshape(-1, 3)
            ops, offsets, sizes = rows[:, 0].copy(), rows[:, 1].copy(), rows[:, 2].copy()
        ops = np.ascontiguousarray(ops, dtype=np.int64)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        sizes = np.ascontiguousarray(sizes, dtype=np.int64)
        i, hits, n = 0, 0, len(ops)
        while i < n:
            self._room(2 * core.HEADROOM)
            i, h = core.warm(self._S, self._H, self._G, self._GH, self._M, ops, offsets, sizes, i)
            hits += int(h)
        # warm-up promotions/evictions/invalidations are not part of the statistics window
        self._base = [int(self._M[j]) for j in (core.M_PROMO, core.M_EVICT, core.M_INVAL)]
        return hits


def build_flash_read_cache(cfg: FlashReadCacheConfig, name: str, parent: Component) -> FlashReadCache:
    return FlashReadCache(cfg, name, parent)
