"""The one small interface every device implements: ``submit(request) -> event``.

A :class:`Request` goes in; a SimPy event comes out that fires (value = the request) when the
device has completed it with the semantics of its ``op`` and ``fua`` flag:

* ``READ``  — data returned to the host.
* ``WRITE`` — acknowledged. Without ``fua`` a device with a volatile write cache may acknowledge
  before the data is durable; with ``fua`` it acknowledges only once the data is durable.
* ``FLUSH`` — every write acknowledged before the flush was submitted is durable.
* ``TRIM``  — discard; may be a no-op.

Devices nest: a RAID volume, a cache, an OSD submit child requests to the devices below them and
complete the parent when the children say so. Every device keeps the same accounting (utilisation,
time-averaged number of requests inside, completions and bytes per op) so any level of a tree can
be reported alike.
"""

from __future__ import annotations

import math
from enum import IntEnum
from typing import Any

import simpy

from simulator.engine import Component, succeed_at

__all__ = ["Device", "Op", "Request"]


class Op(IntEnum):
    """Request types. READ/WRITE/TRIM follow fio's data-direction order."""

    READ = 0
    WRITE = 1
    TRIM = 2
    FLUSH = 3


class Request:
    """One IO request as seen by one device. Child requests are separate objects (``parent`` link).

    Times are simulated seconds; ``service`` is the pure service time the device spent on this
    request (mechanics, transfer, program...), excluding waiting, so tests can check latency >=
    service.
    """

    __slots__ = ("event", "fua", "offset", "op", "parent", "service", "size", "t_start", "t_submit", "tag")

    def __init__(
        self,
        op: int,
        offset: int = 0,
        size: int = 0,
        fua: bool = False,
        parent: Request | None = None,
        tag: Any = None,
    ):
        self.op = op
        self.offset = offset
        self.size = size
        self.fua = fua
        self.parent = parent
        self.tag = tag
        self.t_submit = 0.0
        self.t_start = 0.0
        self.service = 0.0
        self.event: simpy.Event | None = None

    @property
    def end(self) -> int:
        return self.offset + self.size

    def __repr__(self) -> str:
        return f"Request({Op(self.op).name}, off={self.offset}, size={self.size}{', fua' if self.fua else ''})"


class Device(Component):
    """Base class of all devices.

    Subclasses implement :meth:`_start` (called by :meth:`submit` after accounting). They complete
    a request with :meth:`_complete_after` (known completion time, one event) or by calling
    :meth:`_finish` from their own callback and triggering ``req.event`` themselves.
    """

    #: capacity in bytes (the addressable LBA range)
    capacity: int = 0
    #: logical sector size in bytes
    sector_size: int = 512

    def __init__(self, name: str, parent: Component | None, capacity: int = 0, sector_size: int = 512):
        super().__init__(name, parent)
        self.capacity = int(capacity)
        self.sector_size = int(sector_size)
        self.reset_stats()

    # -------------------------------------------------------------- the interface
    def submit(self, req: Request) -> simpy.Event:
        """Accept ``req``; return the event that fires with ``req`` as value when it completes."""
        env = self.env
        req.t_submit = env.now
        ev = req.event = simpy.Event(env)
        # queue-depth accounting (time integral of requests inside the device)
        now = env.now
        self._qarea += self._inside * (now - self._tq)
        self._tq = now
        self._inside += 1
        self._start(req)
        return ev

    def _start(self, req: Request) -> None:
        raise NotImplementedError

    # -------------------------------------------------------------- completion helpers
    def _complete_after(self, req: Request, delay: float) -> simpy.Event:
        """Complete ``req`` ``delay`` seconds from now; the device's own bookkeeping runs first."""
        ev = req.event
        ev.callbacks.insert(0, self._on_complete)
        return succeed_at(self.env, ev, delay, req)

    def _on_complete(self, ev: simpy.Event) -> None:
        self._finish(ev._value)

    def _finish(self, req: Request) -> None:
        """Accounting for a completed request (called exactly once per request)."""
        now = self.env.now
        self._qarea += self._inside * (now - self._tq)
        self._tq = now
        self._inside -= 1
        op = req.op
        self.completed[op] += 1
        self.bytes[op] += req.size

    # -------------------------------------------------------------- accounting
    def reset_stats(self) -> None:
        """Start a new statistics window (e.g. at the end of fio's ramp_time)."""
        now = self.env.now
        self._t0 = now
        self._tq = now
        self._qarea = 0.0
        if not hasattr(self, "_inside"):
            self._inside = 0
        self._busy_acc = 0.0
        self.completed = [0, 0, 0, 0]
        self.bytes = [0, 0, 0, 0]
        self.counts_untracked = False  # set by a compiled Ceph run (simulator.core.ceph_fio)

    def busy_time(self) -> float:
        """Seconds the device was busy in the current window. Subclasses with a server track it."""
        return self._busy_acc

    def stats(self) -> dict[str, Any]:
        now = self.env.now
        span = max(now - self._t0, 1e-300)
        qarea = self._qarea + self._inside * (now - self._tq)
        return {
            "path": self.path,
            "kind": type(self).__name__,
            "window_s": now - self._t0,
            "utilisation": min(1.0, self.busy_time() / span) if now > self._t0 else 0.0,
            "mean_queue_depth": qarea / span if now > self._t0 else 0.0,
            "completed": {Op(i).name.lower(): c for i, c in enumerate(self.completed)},
            "bytes": {Op(i).name.lower(): b for i, b in enumerate(self.bytes)},
        } if not self.counts_untracked else {
            # after a compiled Ceph run on a queue device: its loop keeps the busy time, not yet the
            # completions, bytes and queue-depth area (NaN, not a 0 that looks measured)
            "path": self.path, "kind": type(self).__name__, "window_s": now - self._t0,
            "utilisation": min(1.0, self.busy_time() / span) if now > self._t0 else 0.0,
            "mean_queue_depth": math.nan,
            "completed": {Op(i).name.lower(): math.nan for i in range(len(self.completed))},
            "bytes": {Op(i).name.lower(): math.nan for i in range(len(self.bytes))},
        }

    def check_range(self, req: Request) -> None:
        if req.op in (Op.READ, Op.WRITE, Op.TRIM) and (req.offset < 0 or req.offset + req.size > self.capacity):
            raise ValueError(
                f"{self.path}: request {req!r} outside the device (capacity {self.capacity} bytes)"
            )


class PassThroughBusy:
    """Utilisation of a pass-through device (a partition, a port in front of a member): busy while at
    least one of its requests is inside. Mix in before :class:`Device`; call :meth:`_mark_busy` when a
    request enters (before ``_inside`` is raised for the first request, or right after it became 1)."""

    _busy_since = 0.0

    def _mark_busy(self, now: float) -> None:
        self._busy_since = now

    def _enter_inside(self, now: float) -> None:
        """Device.submit's queue-depth accounting for a request entering a pass-through device."""
        self._qarea += self._inside * (now - self._tq)  # type: ignore[attr-defined]
        self._tq = now
        if self._inside == 0:  # type: ignore[attr-defined]
            self._mark_busy(now)
        self._inside += 1  # type: ignore[attr-defined]

    def _finish(self, req: Request) -> None:
        super()._finish(req)  # type: ignore[misc]
        if self._inside == 0:  # type: ignore[attr-defined]
            self._busy_acc += self.env._now - self._busy_since  # type: ignore[attr-defined]

    def reset_stats(self) -> None:
        super().reset_stats()  # type: ignore[misc]
        self._busy_since = self.env.now  # type: ignore[attr-defined]

    def busy_time(self) -> float:
        """Time with at least one request inside."""
        extra = self.env.now - self._busy_since if self._inside > 0 else 0.0  # type: ignore[attr-defined]
        return self._busy_acc + extra  # type: ignore[attr-defined]
