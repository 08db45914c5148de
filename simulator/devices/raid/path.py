"""The HBA / expander path in front of a volume's members: a shared SAS link.

``HbaPath`` is ``channels`` independent channels (two = dual-ported drives on two expanders with
multipath), each a wide port of ``lanes`` lanes at ``lane_rate`` x ``efficiency`` bytes/s. One
transfer (one member IO's data) occupies one lane of one channel for ``size / lane bytes/s``: a SAS
connection runs on one lane, a wide port carries as many connections at once as it has lanes.
Multipath policy: ``least_busy`` takes the channel whose earliest-free lane frees first (ties to the
lower channel), ``round_robin`` alternates. Commands and status frames are not charged (they are
small against 4 KiB and larger data frames).

``PathPort`` is the member as the controller sees it. SAS frames cut through the expander, so a
transfer on the path overlaps the drive's own link transfer (which the member models): the path
only adds *waiting* for a lane. A write's data needs a lane from submission: the member starts when
one is free (at once when the path is idle). A read's data crosses the path while the drive sends
it, i.e. during the last ``size / lane rate`` before the member completes; when no lane was free
for that interval, the completion waits for one. So an idle path adds no latency and a busy path
bounds the volume at ``channels x lanes x lane rate``. A port costs one extra event per member IO
only when it has to wait: otherwise it completes inside the member's completion callback.
"""

from __future__ import annotations

from typing import Any

import simpy

from simulator.devices.base import Device, Op, PassThroughBusy, Request
from simulator.devices.blocklayer import fire_now
from simulator.engine import Component, succeed_at

__all__ = ["HbaPath", "PathPort"]


class HbaPath(Component):
    """``channels`` x ``lanes`` lane servers; :meth:`reserve` books one transfer, FCFS per lane."""

    def __init__(self, cfg: Any, name: str, parent: Component):
        super().__init__(name, parent)
        self.cfg = cfg
        self.lane_bps = float(cfg.lane_rate) * float(cfg.efficiency)
        self._flat = [0.0] * (cfg.lanes * cfg.channels)  # lane free times, channel-major
        self._rr = 0
        self.busy = [0.0] * cfg.channels
        self.transfers = [0] * cfg.channels

    def reserve(self, t: float, size: int) -> tuple[float, float]:
        """Book ``size`` bytes on a lane as early as possible from ``t``; return (start, end)."""
        dur = size / self.lane_bps
        nl = self.cfg.lanes
        free = self._flat
        if self.cfg.policy == "round_robin":
            ch = self._rr
            self._rr = (ch + 1) % self.cfg.channels
            lanes = free[ch * nl : (ch + 1) * nl]
            k = ch * nl + lanes.index(min(lanes))
        else:  # the earliest-free lane of all: its channel frees first (ties: lower channel, lower lane)
            k = free.index(min(free))
            ch = k // nl
        start = t if t > free[k] else free[k]
        end = start + dur
        free[k] = end
        self.busy[ch] += dur
        self.transfers[ch] += 1
        return start, end


class PathPort(PassThroughBusy, Device):
    """Member ``dev`` reached through ``path``; requests keep their identity (the member's event is
    a child request's)."""

    def __init__(self, name: str, parent: Component, path: HbaPath, make_member: Any):
        self.path_ = path
        super().__init__(name, parent)
        self.member: Device = make_member(self)
        self.capacity = self.member.capacity
        self.sector_size = self.member.sector_size

    def _start(self, req: Request) -> None:
        now = self.env._now
        if self._inside == 1:
            self._mark_busy(now)
        child = Request(req.op, req.offset, req.size, req.fua, parent=req)
        if req.op == Op.WRITE and req.size:
            start, _ = self.path_.reserve(now, req.size)
            if start > now:  # wait for a free lane
                t = simpy.Event(self.env)
                t.callbacks.append(lambda _e: self._go(child))
                succeed_at(self.env, t, start - now)
                return
        self._go(child)

    def _go(self, child: Request) -> None:
        self.member.submit(child).callbacks.append(self._member_done)

    def _member_done(self, ev: Any) -> None:
        child: Request = ev._value
        req: Request = child.parent  # type: ignore[assignment]
        req.service = child.service
        now = self.env._now
        delay = 0.0
        if req.op == Op.READ and req.size:
            _, end = self.path_.reserve(now - req.size / self.path_.lane_bps, req.size)
            delay = end - now
        if delay > 1e-12:  # (now - d) + d can exceed now by rounding: below a picosecond is no wait
            self._complete_after(req, delay)
        else:  # no lane wait: complete inside the member's completion (no heap entry of its own)
            self._finish(req)
            fire_now(req.event, req)
