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
The buffer is released when a page's program completes; a full buffer stalls new writes, so GC and
program throughput throttle the host.

Events per IO: one per request (``_complete_after``) plus one per die transaction (shared by the 4
units of a page for buffered writes); forced flushes add one event per metadata commit. The command
slot limit (NCQ 32 for SATA, queues × depth for NVMe) holds excess requests in a host-side FIFO.
Multiple NVMe submission queues are served in arrival order. SATA's FLUSH CACHE is not an NCQ
command: it waits for the queue to drain and holds back later commands until it completes.
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Any

import numpy as np
import simpy

from simulator.devices.base import Device, Op, Request
from simulator.devices.ssd.config import BITS_PER_CELL, SSDConfig
from simulator.devices.ssd.ftl import FTL
from simulator.engine import Component, succeed_at

__all__ = ["SSD"]

_READ, _PROG, _GC = 0, 1, 2


class _Page:
    """A NAND page being assembled in the DRAM buffer (the DCM's unit of write-back)."""

    __slots__ = ("base", "die", "filled", "lpns", "nprog", "plane", "prog_time", "ready", "sealed", "submitted")

    def __init__(self, base: int, plane: int, die: int):
        self.base = base
        self.plane = plane
        self.die = die
        self.filled = 0
        self.submitted = 0
        self.nprog = 0
        self.sealed = False
        self.lpns: list[int] = []
        self.ready = 0.0
        self.prog_time = 0.0


class _Station:
    """A FIFO station with ``servers`` identical servers, computed ahead of time: one "free from"
    time per server (a heap); ``serve(t, s)`` takes the server that frees first and returns the end
    of the service of a command arriving at ``t`` needing ``s`` seconds."""

    __slots__ = ("free", "one")

    def __init__(self, servers: int):
        self.one = servers == 1
        self.free = [0.0] * servers

    def serve(self, t: float, s: float) -> float:
        if self.one:
            f = self.free[0]
            e = self.free[0] = (t if t > f else f) + s
            return e
        f = self.free[0]
        e = (t if t > f else f) + s
        heapq.heapreplace(self.free, e)
        return e


class _Txn:
    """One die transaction (TSU queue entry)."""

    __slots__ = ("a", "b", "kind", "page", "plane", "ready", "seq")

    def __init__(self, kind: int, plane: int, ready: float, page: Any = None, a: int = 0, b: int = 0, seq: int = 0):
        self.kind = kind
        self.plane = plane
        self.ready = ready
        self.page = page  # _Page (program) or read context
        self.a = a  # program: first unit index in page; read: page type; gc: relocated units
        self.b = b  # program: number of units
        self.seq = seq


class _ReadCtx:
    __slots__ = ("left", "req", "service", "t_nand")

    def __init__(self, req: Request, left: int):
        self.req = req
        self.left = left
        self.service = 0.0
        self.t_nand = 0.0


class SSD(Device):
    """NAND SSD device (see the module docstring for the semantics)."""

    def __init__(self, cfg: SSDConfig, name: str, parent: Component):
        super().__init__(name, parent, capacity=cfg.capacity, sector_size=cfg.sector_size)
        self.cfg = cfg
        f, ifc, ctl = cfg.flash, cfg.interface, cfg.controller
        self._mu = cfg.ftl.mapping_unit
        self._sppg = cfg.slots_per_page
        self._spb = cfg.slots_per_block
        self._ppb = f.pages_per_block
        self._bits = BITS_PER_CELL[f.cell]
        self._tr = f.page_types("read_latency")
        self._tprog = f.page_types("program_latency")
        self._tprog_host = [f.slc_program_latency] * self._bits if f.slc_cache else self._tprog
        self._tr_mean = sum(self._tr) / len(self._tr)
        self._tprog_mean = sum(self._tprog) / len(self._tprog)
        self._P = f.planes_per_die
        self._C = f.channels
        self._nop = f.nop
        self.ftl = FTL(f.planes, cfg.blocks_per_plane, self._spb, self._sppg, cfg.n_lpn, cfg.ftl.gc_threshold)
        self._thr = cfg.ftl.gc_threshold
        # allocation order: dies channel-first (die index d has channel d % channels), the planes of
        # a die consecutively so that full pages form multi-plane program units
        C, W, Dc, P = f.channels, f.chips_per_channel, f.dies_per_chip, f.planes_per_die
        order = [(c + C * (w + W * d)) * P + p for d in range(Dc) for w in range(W) for c in range(C) for p in range(P)]
        self._order = np.array(order, dtype=np.int64)
        self._order_list = order
        self._rr = 0
        # durability mode
        self._durable_writes = (not ctl.plp) and ctl.honours_flush and not ctl.write_cache
        self._durable_fua = (not ctl.plp) and ctl.honours_flush
        # HIL
        self._slots_free = ifc.slots
        self._backlog: deque[Request] = deque()
        self._in_dev = 0
        self._barrier: Request | None = None
        self._link_free = [0.0, 0.0]
        self._dir_out = 1 if ifc.duplex else 0
        self._hil = _Station(ifc.hil_cores)
        self._ftl_stage = _Station(ctl.ftl_cores)
        self._commit_start = -1.0  # group commit of the write log (controller.ack_commit)
        self._commit_end = 0.0
        self.commits = 0
        self._be_free = 0.0  # controller back end (write_bandwidth)
        self._be_bw = self.cfg.controller.write_bandwidth
        self._t_busy0 = 0.0
        # TSU / PHY
        nd = f.dies
        self._die_busy = [False] * nd
        self._die_rq: list[deque[_Txn]] = [deque() for _ in range(nd)]
        self._die_wq: list[deque[_Txn]] = [deque() for _ in range(nd)]
        self._chan_free = [0.0] * self._C
        self.die_busy_s = [0.0] * nd
        # DCM
        self._buf_free = ctl.buffer_size
        self._buf_wait: deque[Request] = deque()
        self._open: _Page | None = None
        self._dirty: dict[int, _Page] = {}
        self._mp = f.multiplane and self._P > 1
        self._held: list[list[_Txn]] = [[] for _ in range(nd)]  # full pages waiting for their unit
        self._prog_seq = 0
        self._outstanding = 0
        # forced-flush machinery (group commit)
        self._flushing: list[tuple[Request, _Page | None]] | None = None
        self._flush_waiters: list[tuple[Request, _Page | None]] = []
        self._flush_upto = -1
        self._flush_pending = 0
        self._flush_ready = 0.0
        self._write_seq = 0
        self._meta_clean = 0
        self._flush_cover = 0
        self.forced_flushes = 0
        self._precondition()

    # ================================================================== preconditioning
    def _precondition(self) -> None:
        pc = self.cfg.precondition
        if pc.state == "fresh":
            return
        n_random = int(pc.overwrite * self.cfg.n_lpn) if pc.state == "steady" else 0
        seed = int(self.substream("precondition").integers(0, 2**31 - 1))
        self._rr = self.ftl.precondition(n_random, seed, self._order, self._rr)
        self.ftl.reset_counters()

    # ================================================================== HIL
    def _start(self, req: Request) -> None:
        if req.op != Op.FLUSH:
            self.check_range(req)
        self._backlog.append(req)
        self._pump()

    def _pump(self) -> None:
        bl = self._backlog
        queued_flush = self.cfg.interface.queued_flush
        while bl and self._slots_free > 0 and self._barrier is None:
            req = bl[0]
            if req.op == Op.FLUSH and not queued_flush:
                if self._in_dev:
                    return  # non-NCQ command: wait for the queue to drain
                self._barrier = req
            bl.popleft()
            self._slots_free -= 1
            if self._in_dev == 0:
                self._t_busy0 = self.env.now
            self._in_dev += 1
            req.t_start = self.env.now
            op = req.op
            if op == Op.WRITE:
                self._write(req)
            elif op == Op.READ:
                self._read(req)
            elif op == Op.FLUSH:
                self._flush_cmd(req)
            else:
                self._trim(req)

    def _finish(self, req: Request) -> None:
        super()._finish(req)
        self._slots_free += 1
        self._in_dev -= 1
        if self._in_dev == 0:
            self._busy_acc += self.env.now - max(self._t_busy0, self._t0)
        if self._barrier is req:
            self._barrier = None
        if self._backlog:
            self._pump()

    def busy_time(self) -> float:
        extra = self.env.now - max(self._t_busy0, self._t0) if self._in_dev else 0.0
        return self._busy_acc + extra

    def _link(self, t: float, nbytes: int, direction: int) -> float:
        """Reserve the link from ``t`` for ``nbytes``; returns the end of the transfer."""
        s = max(t, self._link_free[direction])
        e = s + nbytes / self.cfg.interface.link_rate
        self._link_free[direction] = e
        return e

    # ================================================================== writes
    def _units(self, req: Request) -> range:
        mu = self._mu
        return range(req.offset // mu, (req.offset + req.size + mu - 1) // mu) if req.size > 0 else range(0)

    def _write(self, req: Request) -> None:
        need = len(self._units(req)) * self._mu
        if self._buf_wait or need > self._buf_free:
            if need > self.cfg.controller.buffer_size:
                raise ValueError(f"{self.path}: write of {req.size} B larger than the write buffer")
            self._buf_wait.append(req)
            return
        self._write_admitted(req, need)

    def _write_admitted(self, req: Request, need: int) -> None:
        self._buf_free -= need
        now = self.env.now
        ifc, ctl = self.cfg.interface, self.cfg.controller
        t = self._hil.serve(now, ifc.command_overhead)
        t_link = self._link(t, req.size, 0)
        t_buf = self._ftl_stage.serve(t_link + ctl.write_latency, ctl.ftl_update)
        req.service = ifc.command_overhead + req.size / ifc.link_rate + ctl.write_latency + ctl.ftl_update
        if ctl.ack_commit > 0:
            t_buf = self._group_commit(t_buf, ctl.ack_commit)
            req.service += ctl.ack_commit
        page = None
        for lpn in self._units(req):
            page = self._place(lpn, t_buf)
        self._write_seq += 1
        if self._durable_writes or (req.fua and self._durable_fua):
            self._flush_join(req, page, t_buf)
        else:
            self._complete_after(req, t_buf - now)

    def _group_commit(self, t: float, cost: float) -> float:
        """End of the write-log commit covering an FTL update that ended at ``t``: the last commit
        if it had not started by ``t`` (it covers every update ended before its start), else a new
        one starting when both ``t`` and the last commit's end are reached. Computed ahead (no event):
        the cost of a commit does not depend on how many writes it covers."""
        if t <= self._commit_start:
            return self._commit_end
        s = t if t > self._commit_end else self._commit_end
        self._commit_start = s
        self._commit_end = s + cost
        self.commits += 1
        return self._commit_end

    def _place(self, lpn: int, ready: float) -> _Page:
        pg = self._open
        if pg is not None and pg.submitted == 0 and self._dirty.get(lpn) is pg:
            # overwrite of a unit still in the open page: replaced in DRAM
            self._buf_free += self._mu
            if ready > pg.ready:
                pg.ready = ready
            return pg
        if pg is None:
            pg = self._open = self._new_page()
        slot = pg.base + pg.filled
        self.ftl.map_host(lpn, slot)
        pg.lpns.append(lpn)
        pg.filled += 1
        self._dirty[lpn] = pg
        if ready > pg.ready:
            pg.ready = ready
        if pg.filled == self._sppg:
            self._program(pg, seal=True, hold=self._mp)
        return pg

    def _new_page(self) -> _Page:
        order = self._order_list
        plane = order[self._rr % len(order)]
        self._rr += 1
        ftl = self.ftl
        base = ftl.reserve_page(plane)
        if ftl.free_top[plane] < self._thr:
            moved = ftl.collect(plane)
            die = plane // self._P
            for m in moved.tolist():
                self._enqueue(die, _Txn(_GC, plane, self.env.now, a=int(m)))
        return _Page(base, plane, plane // self._P)

    def _program(self, pg: _Page, seal: bool, hold: bool = False) -> None:
        """Submit the not yet programmed units of ``pg`` to its die. With ``hold`` a full page waits
        in DRAM until the die's other planes have a page too (one multi-plane program unit)."""
        n = pg.filled - pg.submitted
        first = pg.submitted
        pg.submitted = pg.filled
        pg.nprog += 1
        if seal or pg.nprog >= self._nop or pg.filled == self._sppg:
            pg.sealed = True
            self.ftl.seal(pg.base, pg.filled)
            if self._open is pg:
                self._open = None
        self._prog_seq += 1
        self._outstanding += 1
        txn = _Txn(_PROG, pg.plane, pg.ready, page=pg, a=first, b=n, seq=self._prog_seq)
        die = pg.die
        if not hold:
            self._enqueue(die, txn)
            return
        held = self._held[die]
        held.append(txn)
        if len(held) >= self._P:
            self._release(die)

    def _release(self, die: int) -> None:
        """Queue the held pages of ``die`` as one multi-plane unit."""
        held = self._held[die]
        self._held[die] = []
        self._die_wq[die].extend(held)
        if not self._die_busy[die]:
            self._die_start(die)

    # ================================================================== forced flush (group commit)
    def _flush_cmd(self, req: Request) -> None:
        ifc, ctl = self.cfg.interface, self.cfg.controller
        req.service = ifc.command_overhead + ctl.flush_latency
        t = self._hil.serve(self.env.now, ifc.command_overhead) + ctl.flush_latency
        dirty = self._open is not None or self._outstanding > 0 or self._write_seq > self._meta_clean
        if self._durable_fua and dirty:
            self._flush_join(req, None, t)
        else:
            self._complete_after(req, t - self.env.now)

    def _flush_join(self, req: Request, page: _Page | None, ready: float) -> None:
        self._flush_waiters.append((req, page))
        if ready > self._flush_ready:
            self._flush_ready = ready
        if self._flushing is None:
            self._flush_start()

    def _flush_start(self) -> None:
        self._flushing = self._flush_waiters
        self._flush_waiters = []
        self.forced_flushes += 1
        self._flush_cover = self._write_seq
        pg = self._open
        if pg is not None and pg.filled > pg.submitted:
            self._program(pg, seal=self._nop == 1)
        if self._mp:
            for die, held in enumerate(self._held):
                if held:
                    self._release(die)
        self._flush_upto = self._prog_seq
        self._flush_pending = self._outstanding
        if self._flush_pending == 0:
            self._flush_meta()

    def _flush_meta(self) -> None:
        t = max(self.env.now, self._flush_ready) + self.cfg.ftl.metadata_commit
        ev = simpy.Event(self.env)
        ev.callbacks.append(self._flush_done)
        succeed_at(self.env, ev, t - self.env.now)

    def _flush_done(self, _ev: simpy.Event) -> None:
        cohort = self._flushing or []
        self._meta_clean = self._flush_cover
        self._flushing = None
        self._flush_ready = 0.0
        mc = self.cfg.ftl.metadata_commit
        for req, pg in cohort:
            req.service += mc + (pg.prog_time if pg is not None else 0.0)
            self._complete_after(req, 0.0)
        if self._flush_waiters:
            self._flush_start()

    # ================================================================== reads / trim
    def _read(self, req: Request) -> None:
        now = self.env.now
        ifc, ctl = self.cfg.interface, self.cfg.controller
        t = self._hil.serve(now, ifc.command_overhead) + ctl.read_latency
        pages: dict[int, int] = {}
        l2p, dirty, sppg = self.ftl.l2p, self._dirty, self._sppg
        for lpn in self._units(req):
            if lpn in dirty:
                continue
            s = int(l2p[lpn])
            if s:
                pages[(s - 1) // sppg] = 1
        front = ifc.command_overhead + ctl.read_latency
        if not pages:
            e = self._link(t, req.size, self._dir_out)
            req.service = front + req.size / ifc.link_rate
            self._complete_after(req, e - now)
            return
        ctx = _ReadCtx(req, len(pages))
        ctx.service = front
        ppp = self.cfg.blocks_per_plane * self._ppb  # pages per plane
        for gp in pages:
            plane = gp // ppp
            ptype = (gp % self._ppb) % self._bits
            self._enqueue(plane // self._P, _Txn(_READ, plane, t, page=ctx, a=ptype))

    def _read_done(self, ctx: _ReadCtx) -> None:
        ctx.left -= 1
        if ctx.left:
            return
        req = ctx.req
        now = self.env.now
        e = self._link(now, req.size, self._dir_out)
        req.service = ctx.service + ctx.t_nand + req.size / self.cfg.interface.link_rate
        self._complete_after(req, e - now)

    def _trim(self, req: Request) -> None:
        mu = self._mu
        first = (req.offset + mu - 1) // mu
        last = (req.offset + req.size) // mu
        for lpn in range(first, last):
            self.ftl.trim(lpn)
            self._dirty.pop(lpn, None)
        ifc = self.cfg.interface
        req.service = ifc.command_overhead + self.cfg.controller.flush_latency
        t = self._hil.serve(self.env.now, ifc.command_overhead) + self.cfg.controller.flush_latency
        self._complete_after(req, t - self.env.now)

    # ================================================================== TSU / PHY
    def _enqueue(self, die: int, txn: _Txn) -> None:
        (self._die_rq if txn.kind == _READ else self._die_wq)[die].append(txn)
        if not self._die_busy[die]:
            self._die_start(die)

    def _die_start(self, die: int) -> None:
        now = self.env.now
        f = self.cfg.flash
        rq, wq = self._die_rq[die], self._die_wq[die]
        ch = die % self._C
        if rq:
            txn = rq.popleft()
            tr = self._tr[txn.a]
            t1 = max(max(now, txn.ready) + tr, self._chan_free[ch])
            x = f.page_size / f.channel_rate
            end = self._chan_free[ch] = t1 + x
            txn.page.t_nand = max(txn.page.t_nand, tr + x)
            batch = [txn]
        elif wq:
            txn = wq.popleft()
            if txn.kind == _GC:
                copies = -(-txn.a // self._sppg)
                end = now + copies * (self._tr_mean + self._tprog_mean) + f.erase_latency
                batch = [txn]
            else:
                batch = [txn]
                if f.multiplane and self._P > 1 and wq:
                    planes = {txn.plane}
                    keep: list[_Txn] = []
                    while wq and len(batch) < self._P:
                        t2 = wq[0]
                        if t2.kind != _PROG:
                            break
                        wq.popleft()
                        if t2.plane in planes:
                            keep.append(t2)
                        else:
                            planes.add(t2.plane)
                            batch.append(t2)
                    wq.extendleft(reversed(keep))
                nbytes = 0
                tprog = 0.0
                ready = now
                for t2 in batch:
                    nbytes += t2.b * self._mu if self._nop > 1 else f.page_size
                    pg = t2.page
                    tp = self._tprog_host[((pg.base % self._spb) // self._sppg) % self._bits]
                    tprog = max(tprog, tp)
                    ready = max(ready, t2.ready)
                x = nbytes / f.channel_rate
                if self._be_bw:  # the controller's back end passes the data first, serially
                    ready = self._be_free = max(ready, self._be_free) + nbytes / self._be_bw
                s = max(ready, self._chan_free[ch])
                self._chan_free[ch] = s + x
                end = s + x + tprog
                for t2 in batch:
                    t2.page.prog_time = x + tprog
        else:
            self._die_busy[die] = False
            return
        self._die_busy[die] = True
        self.die_busy_s[die] += end - now
        ev = simpy.Event(self.env)
        ev.callbacks.append(lambda _e, d=die, b=batch: self._die_done(d, b))
        succeed_at(self.env, ev, end - now)

    def _die_done(self, die: int, batch: list[_Txn]) -> None:
        freed = False
        for txn in batch:
            if txn.kind == _PROG:
                self._prog_done(txn)
                freed = True
            elif txn.kind == _READ:
                self._read_done(txn.page)
        self._die_start(die)
        if freed and self._buf_wait:
            self._admit_waiting()

    def _prog_done(self, txn: _Txn) -> None:
        pg: _Page = txn.page
        dirty = self._dirty
        for lpn in pg.lpns[txn.a : txn.a + txn.b]:
            if dirty.get(lpn) is pg:
                del dirty[lpn]
        self._buf_free += txn.b * self._mu
        self._outstanding -= 1
        if self._flushing is not None and txn.seq <= self._flush_upto:
            self._flush_pending -= 1
            if self._flush_pending == 0:
                self._flush_meta()

    def _admit_waiting(self) -> None:
        bw = self._buf_wait
        while bw:
            req = bw[0]
            need = len(self._units(req)) * self._mu
            if need > self._buf_free:
                return
            bw.popleft()
            self._write_admitted(req, need)

    # ================================================================== reporting
    def reset_stats(self) -> None:
        super().reset_stats()
        if hasattr(self, "die_busy_s"):
            self.die_busy_s = [0.0] * len(self.die_busy_s)

    def stats(self) -> dict[str, Any]:
        st = super().stats()
        c = self.ftl.counters()
        host = c["host_slots"]
        nand = host + c["gc_slots"] + c["pad_slots"]
        st["ssd"] = {
            **c,
            "waf": nand / host if host else None,
            "forced_flushes": self.forced_flushes,
            "buffer_used_bytes": self.cfg.controller.buffer_size - self._buf_free,
            "die_utilisation": (sum(self.die_busy_s) / len(self.die_busy_s) / max(self.env.now - self._t0, 1e-300)),
        }
        return st


def build(cfg: SSDConfig, name: str, parent: Component) -> SSD:
    return SSD(cfg, name, parent)
