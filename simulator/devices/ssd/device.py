"""The ``ssd`` device kind: a NAND SSD with the layers of MQSim and of real firmware.

Data path of a request::

    HIL (command slots; command processing on hil_cores; link)
     └▶ buffer stage (DMA into DRAM, overlapping)  ─▶ FTL stage (mapping update on ftl_cores)
          └▶ DCM (DRAM write buffer) ─▶ FTL (page allocation, greedy GC) ─▶ TSU (per-die queues)
               └▶ PHY (channel bus transfer, tR / tPROG / tBERS on dies and planes)

The write pipeline
------------------
A write passes a tandem of stations, each with its own parallelism, as controller firmware does:
``hil`` (``interface.command_overhead`` on ``interface.hil_cores``), the link (one transfer at a
time per direction), the buffer stage (``controller.write_latency``, hardware DMA: no limit), the
FTL stage (``controller.ftl_update`` on ``controller.ftl_cores``), optionally the group commit of the
write log (``controller.ack_commit``: one commit at a time, of fixed duration, covering every write whose
FTL update ended before it started; computed ahead like the stations), then the acknowledgement: a PLP
drive (or one that does not honour flushes) acknowledges when the FTL stage (or its commit) ends; a write-through or
FUA write of a non-PLP drive waits for the forced flush (data program across channels and dies, then
the metadata commit). A multi-server station is computed ahead with one "free from" time per server
(an arriving command takes the server that frees first, FIFO in arrival order), so the pipeline costs
no events; the completion is one event per IO. With N closed-loop jobs the sync-write rate therefore
grows like N / (1-job cycle) until the slowest stage's capacity
(``SSDConfig.write_bound``: min of hil_cores/command_overhead, link_rate/bs, ftl_cores/ftl_update, the
sustained NAND program rate) and stays there. The group commit never caps the rate by itself (a commit
covers all waiting writes): with a commit time that dominates the 1-job cycle, N jobs split into
groups served by alternating commits and the curve keeps rising, about N / (2 x commit), past the
point where a per-command stage of the same 1-job latency would have saturated, until the FTL
stage's capacity.

Durability semantics (what completes a request)
------------------------------------------------
*Durable point* = the moment data would survive a power loss.

* **PLP** (``controller.plp``): DRAM is protected by capacitors, so data is durable once it is in
  the buffer. WRITE, FUA WRITE and the write cache setting make no difference: every write completes
  when its data is in DRAM; FLUSH costs ``interface.command_overhead + controller.flush_latency``.
  (A PLP drive with its "write cache" disabled by hdparm -W0 keeps using its protected buffer: the
  cache it reports is not volatile.)
* **No PLP, write cache on**: a plain WRITE completes from DRAM (not durable). A FUA WRITE and a
  FLUSH start a *forced flush*: the partially filled page is closed (padded, see below) and every
  buffered page is programmed, then the FTL metadata (mapping journal) is committed
  (``ftl.metadata_commit``). Only then do they complete. A FLUSH that finds no buffered data and no
  uncommitted mapping is cheap (as with PLP).
* **No PLP, write cache off** (hdparm -W0 / WCE=0, as in the DSYNC study): every WRITE is written
  through: it completes only after a forced flush covering it, exactly like a FUA write.
  A later FLUSH then finds nothing to do and is cheap.
* ``controller.honours_flush = false`` models firmware that acknowledges FUA/FLUSH/write-through
  from volatile DRAM (all writes complete like plain buffered writes).

Forced flushes are serialised (one mapping-journal commit at a time) and *group-committed*: a
flush covers every write buffered when it starts; requests that arrive while one is running wait
for the next, which starts as soon as the running one ends and covers them all. This is what makes
sync-write throughput of non-PLP drives grow with numjobs (about N/2 batches) until the pages of a
batch exceed what the dies can program in parallel.

Small writes into large pages
-----------------------------
Host data is buffered per mapping unit (4 KiB) and assembled into NAND pages (16 KiB = 4 units) in
arrival order; a page is programmed when full. A forced flush must program a partially filled
page: with ``flash.nop == 1`` (MLC/TLC allow one program per page) the rest of the page is padding,
the page is sealed and the padding counts in the write amplification; with ``nop > 1`` the partial
page is programmed and stays open so later data fills its remaining units (each partial program
costs a full tPROG). A write to a unit that is still in the open (unprogrammed) page overwrites it in
DRAM. Writes smaller than the mapping unit are treated as whole-unit writes (no read-modify-write).

Back end
--------
Pages are allocated round-robin over planes in channel-first order (channel, chip, die, plane), each
plane keeping a host and a GC write frontier. A die runs one transaction at a time; reads go before
queued programs and GC (TSU read priority). A die takes up to ``planes_per_die`` queued page
programs for distinct planes as one multi-plane program (one tPROG). Program data crosses the die's
channel first (``page_size / channel_rate``), read data after tR. GC is greedy, per plane, when the
plane's free blocks fall below ``ftl.gc_threshold``; each victim becomes one die transaction of
copyback (tR + tPROG per relocated page) plus tBERS, queued behind the die's earlier programs.
The buffer is released when a page's program completes; a write that finds the buffer full (or others
waiting) streams in, first come first served: the units that fit whenever programs free space (its
command processing at its first chunk, the link per chunk, the FTL stage at its last), so GC and
program throughput throttle the host, and a write of any size completes, larger than the buffer too.
If the buffer is full of data no program in flight will free (the open page and full pages waiting
for a multi-plane partner, which only more host data would submit), the firmware programs them then,
as a forced flush does (kernels._make_room).

The mechanism (everything above: stations, page assembly, TSU, forced flushes) is
:mod:`simulator.devices.ssd.kernels`, numba kernels on typed arrays that the compiled device core
(``simulator.core.loop``) calls too; this class is the SimPy shell around them: it names each
request by a row of the kernels' request table and turns the events they ask for into SimPy events.

Events per IO: one per request (``_complete_after``) plus one per die transaction (shared by the 4
units of a page for buffered writes); forced flushes add one event per metadata commit. The command
slot limit (NCQ 32 for SATA, queues × depth for NVMe) holds excess requests in a host-side FIFO.
Multiple NVMe submission queues are served in arrival order. SATA's FLUSH CACHE is not an NCQ
command: it waits for the queue to drain and holds back later commands until it completes.
"""

from __future__ import annotations

from heapq import heappush
from typing import Any

import numpy as np
import simpy
from simpy.events import NORMAL

from simulator.devices.base import Device, Op, Request
from simulator.devices.ssd import kernels as K
from simulator.devices.ssd.config import SSDConfig
from simulator.devices.ssd.ftl import FTL
from simulator.engine import Component, succeed_at

__all__ = ["SSD", "plane_order"]


def plane_order(cfg: SSDConfig) -> np.ndarray:
    """Page allocation order: dies channel-first (die index d has channel d % channels), the planes of
    a die consecutively so that full pages form multi-plane program units."""
    f = cfg.flash
    C, W, Dc, P = f.channels, f.chips_per_channel, f.dies_per_chip, f.planes_per_die
    order = [(c + C * (w + W * d)) * P + p for d in range(Dc) for w in range(W) for c in range(C) for p in range(P)]
    return np.array(order, dtype=np.int64)


def txn_margin(cfg: SSDConfig) -> int:
    """Free transaction rows kept before each kernel call (programs of a full buffer, GC victims)."""
    return 2 * (cfg.controller.buffer_size // cfg.flash.page_size) + 4096


class SSD(Device):
    """NAND SSD device (see the module docstring for the semantics)."""

    def __init__(self, cfg: SSDConfig, name: str, parent: Component):
        super().__init__(name, parent, capacity=cfg.capacity, sector_size=cfg.sector_size)
        self.cfg = cfg
        f = cfg.flash
        self.ftl = FTL(f.planes, cfg.blocks_per_plane, cfg.slots_per_block, cfg.slots_per_page, cfg.n_lpn,
                       cfg.ftl.gc_threshold)
        self._order = plane_order(cfg)
        rr = self._precondition()
        self._margin = txn_margin(cfg)
        n_req = 64
        self._S = K.make_state(cfg, self.ftl, self._order, rr, n_req, 2 * self._margin, 64)
        self._reqs: list[Request | None] = [None] * n_req
        self._free_ids = list(range(n_req - 1, -1, -1))
        self._rid: dict[int, int] = {}
        self._die_cb = [(lambda _e, d=d: self._die_done(d)) for d in range(f.dies)]

    # ================================================================== preconditioning
    def _precondition(self) -> int:
        pc = self.cfg.precondition
        if pc.state == "fresh":
            return 0
        n_random = int(pc.overwrite * self.cfg.n_lpn) if pc.state == "steady" else 0
        seed = int(self.substream("precondition").integers(0, 2**31 - 1))
        rr = self.ftl.precondition(n_random, seed, self._order, 0)
        self.ftl.reset_counters()
        return rr

    # ================================================================== the shell
    def _drain(self) -> None:
        """Turn the events the kernels asked for into SimPy events, in their order."""
        S = self._S
        if S.si[K.SI_ERR]:
            raise RuntimeError(f"{self.path}: {K.ERROR_TEXT.get(int(S.si[K.SI_ERR]), 'kernel error')}")
        n = int(S.si[K.SI_NEV])
        if not n:
            return
        S.si[K.SI_NEV] = 0
        env = self.env
        for kind, delay, arg in S.ev[:n].tolist():
            if kind == K.EVK_DONE:
                rid = int(arg)
                req = self._reqs[rid]
                req.service = float(S.rqf[rid, K.QF_SERVICE])
                req.t_start = float(S.rqf[rid, K.QF_TSTART])
                self._complete_after(req, delay)
            else:
                ev = simpy.Event(env)
                ev.callbacks.append(self._die_cb[int(arg)] if kind == K.EVK_DIE else self._flush_done)
                succeed_at(env, ev, delay)

    def schedule_pending(self, t: float, die: int) -> None:
        """Take over a NAND event a compiled run left pending (``die`` >= 0: that die's batch ends;
        -1: the forced flush's metadata commit ends) at its absolute time ``t`` (the run's clock is
        at or before it)."""
        env = self.env
        ev = simpy.Event(env)
        ev.callbacks.append(self._die_cb[die] if die >= 0 else self._flush_done)
        ev._ok = True
        ev._value = None
        heappush(env._queue, (t, NORMAL, next(env._eid), ev))  # succeed_at, at an absolute time

    def _room(self, units: int) -> None:
        """Grow the kernels' tables so that the next call cannot run out of rows."""
        S = self._S
        if S.si[K.SI_TX_NFREE] < self._margin + units or units > S.scr.shape[0]:
            self._S = K.grow(S, self.cfg, n_txn=2 * S.tx.shape[0] + units,
                             n_scr=max(S.scr.shape[0], 2 * units))

    def _start(self, req: Request) -> None:
        if req.op != Op.FLUSH:
            self.check_range(req)
        if not self._free_ids:
            n = len(self._reqs)
            self._S = K.grow(self._S, self.cfg, n_req=2 * n)
            self._reqs.extend([None] * n)
            self._free_ids = list(range(2 * n - 1, n - 1, -1))
        rid = self._free_ids.pop()
        self._reqs[rid] = req
        self._rid[id(req)] = rid
        mu = self.cfg.ftl.mapping_unit
        self._room(req.size // mu + 2)
        K.ssd_start(self._S, rid, int(req.op), req.offset, req.size, 1 if req.fua else 0, self.env.now)
        self._drain()

    def _finish(self, req: Request) -> None:
        super()._finish(req)
        rid = self._rid.pop(id(req))
        self._room(0)
        self._busy_acc += K.ssd_finish(self._S, rid, self.env.now, self._t0)
        self._reqs[rid] = None
        self._free_ids.append(rid)
        self._drain()

    def _die_done(self, die: int) -> None:
        self._room(0)
        K.ssd_die_done(self._S, die, self.env.now)
        self._drain()

    def _flush_done(self, _ev: simpy.Event) -> None:
        self._room(0)
        K.ssd_flush_done(self._S, self.env.now)
        self._drain()

    # ================================================================== state, as the model names it
    @property
    def _in_dev(self) -> int:
        return int(self._S.si[K.SI_IN_DEV])

    @property
    def _backlog(self) -> bool:
        return bool(self._S.si[K.SI_BL_HEAD] >= 0)

    @property
    def _buf_wait(self) -> bool:
        return bool(self._S.si[K.SI_BW_HEAD] >= 0)

    @property
    def forced_flushes(self) -> int:
        return int(self._S.si[K.SI_FORCED])

    @property
    def commits(self) -> int:
        return int(self._S.si[K.SI_COMMITS])

    @property
    def die_busy_s(self) -> list[float]:
        return self._S.dief[: self.cfg.flash.dies, K.DF_BUSY_S].tolist()

    def busy_time(self) -> float:
        S = self._S
        b0 = float(S.sf[K.SF_T_BUSY0])
        extra = self.env.now - max(b0, self._t0) if S.si[K.SI_IN_DEV] else 0.0
        return self._busy_acc + extra

    # ================================================================== reporting
    def reset_stats(self) -> None:
        super().reset_stats()
        if hasattr(self, "_S"):
            self._S.dief[:, K.DF_BUSY_S] = 0.0

    def stats(self) -> dict[str, Any]:
        st = super().stats()
        c = self.ftl.counters()
        host = c["host_slots"]
        nand = host + c["gc_slots"] + c["pad_slots"]
        busy = self.die_busy_s
        st["ssd"] = {
            **c,
            "waf": nand / host if host else None,
            "forced_flushes": self.forced_flushes,
            "buffer_used_bytes": self.cfg.controller.buffer_size - int(self._S.si[K.SI_BUF_FREE]),
            "die_utilisation": (sum(busy) / len(busy) / max(self.env.now - self._t0, 1e-300)),
        }
        return st


def build(cfg: SSDConfig, name: str, parent: Component) -> SSD:
    return SSD(cfg, name, parent)
