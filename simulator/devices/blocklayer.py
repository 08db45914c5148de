"""The host's block layer in front of one device: a bounded request queue (Linux ``nr_requests``), an
I/O scheduler (``mq-deadline`` or ``none``), the device's command-queue limit, and the flush machinery.

Why it exists: a device model's own host-side queue is an unbounded FIFO, so a daemon that submits
thousands of asynchronous writes (BlueStore's deferred apply) puts every later read, WAL write and
FLUSH behind all of them. Linux does not: a request needs a *tag* from a pool of ``nr_requests``
(blk-mq with a scheduler: ``2 x min(device queue depth, 128)``), a submitter that finds none sleeps
until one is freed, and the scheduler decides what the device gets next.

Model (``BlockLayer(name, parent, device, cfg)`` is itself a :class:`Device`):

* **Tags.** A request holds a tag from submission to completion (queued in the scheduler or at the
  device). Without a free tag the submitting thread sleeps; sleeping threads are woken in FIFO order,
  one per freed tag. :meth:`submit_batch` models one thread submitting many requests (``io_submit``
  of an iocb array): after each tag it gets, the thread goes to the back of the wait queue, so a
  reader that arrives while a large batch is being submitted waits for about one freed tag, not for
  the whole batch.
* **Dispatch.** The device gets at most ``queue_depth`` requests at once (its NCQ/TCQ depth, by
  default the device's own: HDD ``queue.depth``, at most 31 for a SATA drive as libata exposes it on
  AHCI, SSD command slots). ``mq-deadline``: reads and
  writes in separate sector-sorted lists and FIFOs; batches of up to ``fifo_batch`` requests in one
  direction in sector order; reads are preferred, but after ``writes_starved`` read batches with
  writes waiting a write batch goes; a batch starts at the oldest request of its direction when that
  one has passed its deadline (``read_expire`` / ``write_expire``). ``none``: submission order.
* **FLUSH.** Bypasses the scheduler (Linux inserts flushes at the head of the dispatch list). A device
  whose write cache is off gets no FLUSH at all: the block layer completes it at once, as Linux
  does for a queue without a volatile write cache (``skip_flush_without_write_cache``). Flushes
  that arrive while one is at the device are merged into the next one (blk-flush's pending/running
  lists, ``merge_flushes``): one device FLUSH completes them all.

Events: a request that finds a tag, an empty scheduler and a free device slot goes to the device as
it is (the device's completion event is the only event). A queued request costs one more object but
no extra event: its own event is fired inline when the device completes it. Each device FLUSH is
one event.
"""

from __future__ import annotations

import bisect
from collections import deque
from typing import Any, Literal

import simpy
from pydantic import Field

from simulator.config.base import ConfigModel
from simulator.devices.base import Device, Op, Request
from simulator.engine import Component, succeed_now
from simulator.units import Seconds

__all__ = ["BlockLayer", "BlockLayerConfig", "device_queue_depth", "fire_now", "has_write_cache"]

_READ = int(Op.READ)
_WRITE = int(Op.WRITE)
_TRIM = int(Op.TRIM)
_FLUSH = int(Op.FLUSH)

_new = object.__new__
_Event = simpy.Event


def fire_now(ev: simpy.Event, value: Any) -> None:
    """Trigger ``ev`` with ``value`` and run its callbacks right away, inside the current callback
    (what processing it as a separate heap entry at the same time would do, without the entry)."""
    ev._ok = True
    ev._value = value
    cbs = ev.callbacks
    ev.callbacks = None
    for cb in cbs:
        cb(ev)


def has_write_cache(dev: Device) -> bool:
    """True if the host sees a volatile write cache on ``dev`` (Linux: the queue has
    QUEUE_FLAG_WC, so FLUSH reaches the device). Unknown devices: True (flushes pass)."""
    base = getattr(dev, "base", None)
    if base is not None and base is not dev:
        return has_write_cache(base)
    cfg = getattr(dev, "cfg", None)
    cache = getattr(cfg, "cache", None)
    if cache is not None and hasattr(cache, "write_cache"):
        if cache.write_cache == "media_cache":
            return bool(getattr(cache, "media_cache_wce", True))
        return cache.write_cache != "off"  # HDD: volatile or persistent -> WCE=1
    ctl = getattr(cfg, "controller", None)
    if ctl is not None and hasattr(ctl, "write_cache"):
        return bool(ctl.write_cache)  # SSD (PLP drives report a write cache too; their FLUSH is cheap)
    return True


#: libata exposes at most 31 NCQ tags to the SCSI layer (ATA_MAX_QUEUE 32, one tag kept for
#: internal commands): the queue_depth a SATA drive on an AHCI host shows in sysfs
AHCI_QUEUE_DEPTH = 31


def device_queue_depth(dev: Device, default: int = 32) -> int:
    """The device's command-queue depth as the host uses it: HDD ``queue.depth`` (a SATA drive at
    most 31, libata's NCQ limit), SSD command slots."""
    cfg = getattr(dev, "cfg", None)
    q = getattr(cfg, "queue", None)
    if q is not None and hasattr(q, "depth"):
        itf = getattr(cfg, "interface", None)
        if getattr(itf, "protocol", None) == "sata":
            return min(int(q.depth), AHCI_QUEUE_DEPTH)
        return int(q.depth)
    itf = getattr(cfg, "interface", None)
    if itf is not None and hasattr(itf, "slots"):
        return int(itf.slots)
    return default


def _tagset_depth(dev: Device) -> int:
    """Depth of the host tag set the device hangs off: its own command queue (SATA: libata's 32)."""
    q = getattr(getattr(dev, "cfg", None), "queue", None)
    if q is not None and hasattr(q, "depth"):
        return int(q.depth)
    return device_queue_depth(dev)


class BlockLayerConfig(ConfigModel):
    """Linux block layer in front of a device: request tags (nr_requests), I/O scheduler, flushes."""

    enabled: bool = Field(
        True, description="put a block layer in front of the device; false = requests go straight to the device's own queue (default true)"
    )
    scheduler: Literal["mq-deadline", "none", "bfq"] = Field(
        "mq-deadline",
        description="I/O scheduler: mq-deadline (reads preferred, deadlines), none (submission order) or bfq (an "
        "approximation for one process: sector-ordered batches of bfq_batch requests, sync/async deadlines of "
        "125 ms / 250 ms, no idling) (default mq-deadline, the kernel's default for rotational disks)",
    )
    bfq_batch: int = Field(
        64, ge=1, le=4096, description="bfq: requests per sector-ordered batch (its budget), count (default 64)"
    )
    nr_requests: int | None = Field(
        None, ge=1, le=1 << 16,
        description=(
            "requests (tags) the queue holds, queued + at the device; default: 2 x min(tag-set depth, 128) with "
            "mq-deadline or bfq (blk-mq; the tag set is the device's own command queue: 32 on AHCI -> 64), the "
            "tag-set depth with none"
        ),
    )
    queue_depth: int | None = Field(
        None, ge=1, le=1 << 16,
        description="requests at the device at once (SCSI queue_depth / NCQ); default: the device's own command-queue depth",
    )
    read_expire: Seconds = Field("500ms", gt=0, le=3600.0, description="mq-deadline read deadline, seconds, at most 1 h (default 500ms)")
    write_expire: Seconds = Field("5s", gt=0, le=3600.0, description="mq-deadline write deadline, seconds, at most 1 h (default 5s)")
    writes_starved: int = Field(
        2, ge=0, le=1000000, description="mq-deadline: read batches while writes wait before a write batch, count, at most 1e6 (default 2)"
    )
    fifo_batch: int = Field(16, ge=1, le=1000000, description="mq-deadline: requests per batch in one direction, count, at most 1e6 (default 16)")
    write_cache: Literal["auto", "write back", "write through"] = Field(
        "auto",
        description=(
            "what the host assumes about the device's write cache (sysfs queue/write_cache): auto = the device's "
            "own setting (HDD cache mode, SSD write_cache; unknown devices: write back); write through = FLUSH is "
            "not sent (default auto)"
        ),
    )
    skip_flush_without_write_cache: bool = Field(
        True, description="complete a FLUSH at once when the device's write cache is off, as Linux does (default true)"
    )
    merge_flushes: bool = Field(
        True, description="flushes arriving while one is at the device are merged into the next one (blk-flush) (default true)"
    )


class _Batch:
    """A thread submitting several requests (io_submit of an iocb array) that waits for tags."""

    __slots__ = ("i", "reqs")

    def __init__(self, reqs: list[Request], i: int):
        self.reqs = reqs
        self.i = i


class BlockLayer(Device):
    """``BlockLayer(name, parent, device, cfg)``: see the module docstring."""

    def __init__(self, name: str, parent: Component, device: Device, cfg: BlockLayerConfig | None = None):
        cfg = cfg or BlockLayerConfig()
        self.dev = device
        self.base = device
        self.cfg = cfg
        qd = cfg.queue_depth or device_queue_depth(device)
        self.qdepth = int(qd)
        self.deadline = cfg.scheduler in ("mq-deadline", "bfq")
        bfq = cfg.scheduler == "bfq"
        self._fifo_batch = cfg.bfq_batch if bfq else cfg.fifo_batch
        if cfg.nr_requests is not None:
            nr = cfg.nr_requests
        else:
            # blk-mq sizes the pool from the host's tag set (AHCI: 32 per port), not from a
            # queue_depth lowered later (echo 1 > device/queue_depth keeps nr_requests)
            tagset = max(self.qdepth, _tagset_depth(device))
            nr = 2 * min(tagset, 128) if self.deadline else tagset
        self.nr_requests = int(max(nr, 1))
        self._wc = has_write_cache(device) if cfg.write_cache == "auto" else cfg.write_cache == "write back"
        self._skip_flush = cfg.skip_flush_without_write_cache and not self._wc
        self._tags = self.nr_requests
        self._waiters: deque[Any] = deque()  # Request (one thread, one request) or _Batch
        self._at_dev = 0  # requests (incl. device flushes) at the device
        self._outer: dict[Request, tuple[simpy.Event, float]] = {}
        self._seq = 0
        # scheduler
        self._n_sched = 0
        self._fifo: list[deque[list]] = [deque(), deque()]  # [deadline, seq, req, alive]
        self._sorted: list[list[tuple[int, int, list]]] = [[], []]  # (offset, seq, entry)
        self._last: tuple[int, int] | None = None  # sort key of the last dispatched request
        self._bdir = -1  # direction of the current batch
        self._batching = 0
        self._starved = 0
        self._expire = (0.125, 0.25) if bfq else (float(cfg.read_expire), float(cfg.write_expire))
        self._fifo_q: deque[Request] = deque()  # scheduler none
        # flush machinery
        self._flush_wait: deque[Request] = deque()  # flushes holding a tag, waiting for a device slot
        self._flush_running: Any = None  # the flush request at the device, or the list a merged one covers
        self._flush_pending: list[Request] = []
        self._busy_since = 0.0
        super().__init__(name, parent, capacity=device.capacity, sector_size=device.sector_size)

    # ------------------------------------------------------------------ statistics
    def reset_stats(self) -> None:
        super().reset_stats()
        self._busy_since = self.env.now
        self.tag_waits = 0
        self.max_waiting = len(getattr(self, "_waiters", ()))
        self.max_queued = 0
        self.flushes_skipped = 0
        self.flushes_merged = 0
        self.device_flushes = 0
        self.direct = 0
        self.read_wait = 0.0  # seconds reads spent in the block layer before reaching the device
        self.reads_queued = 0

    def busy_time(self) -> float:
        extra = self.env.now - self._busy_since if self._inside > 0 else 0.0
        return self._busy_acc + extra

    def stats(self) -> dict[str, Any]:
        s = super().stats()
        s["blocklayer"] = {
            "scheduler": self.cfg.scheduler,
            "nr_requests": self.nr_requests,
            "queue_depth": self.qdepth,
            "tags_in_use": self.nr_requests - self._tags,
            "waiting_for_tag": self.waiting(),
            "max_waiting_for_tag": self.max_waiting,
            "tag_waits": self.tag_waits,
            "scheduled": self._n_sched,
            "max_scheduled": self.max_queued,
            "at_device": self._at_dev,
            "direct": self.direct,
            "device_flushes": self.device_flushes,
            "flushes_merged": self.flushes_merged,
            "flushes_skipped": self.flushes_skipped,
            "mean_read_wait_s": self.read_wait / self.reads_queued if self.reads_queued else 0.0,
        }
        return s

    def waiting(self) -> int:
        n = 0
        for w in self._waiters:
            n += (len(w.reqs) - w.i) if type(w) is _Batch else 1
        return n

    # ------------------------------------------------------------------ interface
    def _enter(self, req: Request) -> None:
        now = self.env._now
        req.t_submit = now
        self._qarea += self._inside * (now - self._tq)
        self._tq = now
        if self._inside == 0:
            self._busy_since = now
        self._inside += 1

    def _finish(self, req: Request) -> None:
        now = self.env._now
        self._qarea += self._inside * (now - self._tq)
        self._tq = now
        self._inside -= 1
        op = req.op
        self.completed[op] += 1
        self.bytes[op] += req.size
        if self._inside == 0:
            b = self._busy_since
            self._busy_acc += now - (b if b > self._t0 else self._t0)

    def submit(self, req: Request) -> simpy.Event:
        op = req.op
        now = self.env._now
        req.t_submit = now
        # accounting (Device.submit's)
        self._qarea += self._inside * (now - self._tq)
        self._tq = now
        if self._inside == 0:
            self._busy_since = now
        self._inside += 1
        if op == _FLUSH and self._skip_flush:
            self.flushes_skipped += 1
            ev = req.event = _Event(self.env)
            req.t_start = self.env._now
            req.service = 0.0
            ev.callbacks.append(self._on_complete)
            return succeed_now(self.env, ev, req)
        if self._tags > 0 and not self._waiters:
            self._tags -= 1
            if self._at_dev < self.qdepth and self._n_sched == 0 and not self._flush_wait:
                if op != _FLUSH:
                    # straight to the device (which checks the range): its completion event is the request's
                    self._at_dev += 1
                    self.direct += 1
                    ev = self.dev.submit(req)
                    ev.callbacks.append(self._done_direct)
                    return ev
                if self._flush_running is None:
                    # no flush at the device: this one goes as it is; later ones merge behind it
                    self._at_dev += 1
                    self.device_flushes += 1
                    self._flush_running = req
                    ev = self.dev.submit(req)
                    ev.callbacks.append(self._flush_direct_done)
                    return ev
            if op != _FLUSH:
                self.check_range(req)
            ev = req.event = _Event(self.env)
            self._insert(req)
            self._dispatch()
            return ev
        if op != _FLUSH:
            self.check_range(req)
        ev = req.event = _Event(self.env)
        self.tag_waits += 1
        self._waiters.append(req)
        if len(self._waiters) > self.max_waiting:
            self.max_waiting = len(self._waiters)
        return ev

    def submit_batch(self, reqs: list[Request]) -> list[simpy.Event]:
        """Submit ``reqs`` as one thread does with io_submit: in order, sleeping for a tag whenever
        none is free (then at the back of the wait queue after each tag it gets)."""
        evs = []
        i = 0
        n = len(reqs)
        while i < n and self._tags > 0 and not self._waiters:
            evs.append(self.submit(reqs[i]))
            i += 1
        if i < n:
            env = self.env
            for r in reqs[i:]:
                if r.op != _FLUSH:
                    self.check_range(r)
                self._enter(r)
                evs.append(_Event(env))
                r.event = evs[-1]
            self.tag_waits += 1
            self._waiters.append(_Batch(reqs, i))
            w = self.waiting()
            if w > self.max_waiting:
                self.max_waiting = w
        return evs

    # ------------------------------------------------------------------ scheduler
    def _insert(self, req: Request) -> None:
        """``req`` holds a tag: into the scheduler (or the flush machinery)."""
        if req.op == _FLUSH:
            self._flush_wait.append(req)
            return
        self._n_sched += 1
        if self._n_sched > self.max_queued:
            self.max_queued = self._n_sched
        if not self.deadline:
            self._fifo_q.append(req)
            return
        d = 0 if req.op == _READ else 1
        self._seq += 1
        entry = [self.env._now + self._expire[d], self._seq, req, True]
        self._fifo[d].append(entry)
        bisect.insort(self._sorted[d], (req.offset, self._seq, entry))

    def _remove(self, d: int, entry: list) -> None:
        entry[3] = False
        lst = self._sorted[d]
        i = bisect.bisect_left(lst, (entry[2].offset, entry[1]))
        del lst[i]
        f = self._fifo[d]
        while f and not f[0][3]:
            f.popleft()

    def _after(self, d: int) -> list | None:
        """The next request of direction ``d`` in sort order after the last dispatched one."""
        lst = self._sorted[d]
        if not lst or self._last is None:
            return None
        i = bisect.bisect_left(lst, self._last)  # (offset, seq) sorts before (offset, seq, entry)
        return lst[i][2] if i < len(lst) else None

    def _pick(self) -> Request | None:
        if not self.deadline:
            if self._fifo_q:
                self._n_sched -= 1
                return self._fifo_q.popleft()
            return None
        fifo = self._fifo
        # continue the current batch
        if self._bdir >= 0 and self._batching < self._fifo_batch:
            e = self._after(self._bdir)
            if e is not None:
                return self._take(self._bdir, e)
        reads = bool(fifo[0])
        writes = bool(fifo[1])
        if reads:
            d = 0
            if writes:
                s = self._starved
                self._starved = s + 1
                if s >= self.cfg.writes_starved:
                    d = 1
                    self._starved = 0
        elif writes:
            d = 1
            self._starved = 0
        else:
            return None
        nxt = self._after(d) if self._bdir == d else None
        head = fifo[d][0]
        e = head if (nxt is None or head[0] <= self.env._now) else nxt
        self._bdir = d
        self._batching = 0
        return self._take(d, e)

    def _take(self, d: int, entry: list) -> Request:
        self._batching += 1
        req = entry[2]
        self._last = (req.offset, entry[1])
        self._remove(d, entry)
        self._n_sched -= 1
        return req

    def _dispatch(self) -> None:
        """Give the device what it can take: flushes first, then the scheduler's choice."""
        dev = self.dev
        while self._at_dev < self.qdepth:
            if self._flush_wait:
                self._start_flush(self._flush_wait.popleft())
                continue
            req = self._pick()
            if req is None:
                return
            outer = req.event
            t_sub = req.t_submit
            if req.op == _READ:
                self.reads_queued += 1
                self.read_wait += self.env._now - t_sub
            self._outer[req] = (outer, t_sub)
            self._at_dev += 1
            dev.submit(req).callbacks.append(self._done_queued)

    # ------------------------------------------------------------------ flushes
    def _start_flush(self, req: Request) -> None:
        if self.cfg.merge_flushes and self._flush_running is not None:
            self.flushes_merged += 1
            self._flush_pending.append(req)
            return
        self._flush_running = [req]
        self._issue_flush()

    def _issue_flush(self) -> None:
        self._at_dev += 1
        self.device_flushes += 1
        child = Request(_FLUSH, 0, 0, tag=self._flush_running)
        self.dev.submit(child).callbacks.append(self._flush_done)

    def _flush_direct_done(self, ev: Any) -> None:
        req = ev._value
        self._at_dev -= 1
        self._flush_running = None
        if self._flush_pending:
            self._flush_running = self._flush_pending
            self._flush_pending = []
            self._issue_flush()
        self._finish(req)
        self._tags += 1
        if self._waiters or self._n_sched or self._flush_wait:
            self._refill()

    def _flush_done(self, ev: Any) -> None:
        child = ev._value
        self._at_dev -= 1
        running = child.tag
        self._flush_running = None
        if self._flush_pending:
            self._flush_running = self._flush_pending
            self._flush_pending = []
            self._issue_flush()
        for r in running:
            r.t_start = child.t_start
            r.service = child.service
            self._finish(r)
            self._tags += 1
        self._refill()
        for r in running:
            fire_now(r.event, r)

    # ------------------------------------------------------------------ completions
    def _done_direct(self, ev: Any) -> None:
        req = ev._value
        # self._finish(req), inlined (hot path)
        now = self.env._now
        inside = self._inside
        self._qarea += inside * (now - self._tq)
        self._tq = now
        self._inside = inside = inside - 1
        op = req.op
        self.completed[op] += 1
        self.bytes[op] += req.size
        if inside == 0:
            b = self._busy_since
            self._busy_acc += now - (b if b > self._t0 else self._t0)
        self._at_dev -= 1
        self._tags += 1
        if self._waiters or self._n_sched or self._flush_wait:
            self._refill()

    def _done_queued(self, ev: Any) -> None:
        req = ev._value
        outer, t_sub = self._outer.pop(req)
        req.event = outer
        req.t_submit = t_sub
        self._finish(req)
        self._at_dev -= 1
        self._tags += 1
        self._refill()
        fire_now(outer, req)

    def _refill(self) -> None:
        """Tags freed: wake sleeping submitters (FIFO, one tag each), then dispatch."""
        w = self._waiters
        while self._tags > 0 and w:
            x = w.popleft()
            self._tags -= 1
            if type(x) is _Batch:
                req = x.reqs[x.i]
                x.i += 1
                if x.i < len(x.reqs):
                    w.append(x)
            else:
                req = x
            self._insert(req)
        self._dispatch()
