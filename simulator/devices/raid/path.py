"""The HBA / expander path in front of a volume's members: a shared SAS link.

``HbaPath`` is ``channels`` independent channels (two = dual-ported drives on two expanders with
multipath), each a wide port of ``lanes`` lanes at ``lane_rate`` x ``efficiency`` bytes/s. One
transfer (one member IO's data) occupies one lane of one channel for ``size / lane bytes/s``: a SAS
connection runs on one lane, a wide port carries as many connections at once as it has lanes.
Multipath policy: ``least_busy`` takes the channel whose earliest-free lane frees first (ties to the
lower channel), ``round_robin`` alternates. Commands and status frames are not charged (they are
small against 4 KiB and larger data frames).

``PathPort`` is the member as the controller sees it: a device whose submit sends write data over
the path before the member starts and read data over the path after the member completes, so the
link is shared by all members of the volume (and by several volumes when given the same path). A
port costs one extra event per member IO (the transfer's end).
"""

from __future__ import annotations

from typing import Any

import simpy

from simulator.devices.base import Device, Op, Request
from simulator.engine import Component, succeed_at

__all__ = ["HbaPath", "PathPort"]


class HbaPath(Component):
    """``channels`` x ``lanes`` lane servers; :meth:`reserve` books one transfer, FCFS per lane."""

    def __init__(self, cfg: Any, name: str, parent: Component):
        super().__init__(name, parent)
        self.cfg = cfg
        self.lane_bps = float(cfg.lane_rate) * float(cfg.efficiency)
        self._free = [[0.0] * cfg.lanes for _ in range(cfg.channels)]
        self._rr = 0
        self.busy = [0.0] * cfg.channels
        self.transfers = [0] * cfg.channels

    def reserve(self, now: float, size: int) -> float:
        """Book ``size`` bytes as early as possible from ``now``; return the transfer's end time."""
        dur = size / self.lane_bps
        if self.cfg.policy == "round_robin":
            ch = self._rr
            self._rr = (ch + 1) % len(self._free)
        else:
            ch = min(range(len(self._free)), key=lambda c: min(self._free[c]))
        lanes = self._free[ch]
        i = lanes.index(min(lanes))
        end = max(now, lanes[i]) + dur
        lanes[i] = end
        self.busy[ch] += dur
        self.transfers[ch] += 1
        return end


class PathPort(Device):
    """Member ``dev`` reached through ``path``; requests keep their identity (the member's event is
    a child request's)."""

    def __init__(self, name: str, parent: Component, path: HbaPath, make_member: Any):
        self.path_ = path
        self._busy_since = 0.0
        super().__init__(name, parent)
        self.member: Device = make_member(self)
        self.capacity = self.member.capacity
        self.sector_size = self.member.sector_size

    def _start(self, req: Request) -> None:
        now = self.env._now
        if self._inside == 1:
            self._busy_since = now
        child = Request(req.op, req.offset, req.size, req.fua, parent=req)
        if req.op == Op.WRITE and req.size:
            end = self.path_.reserve(now, req.size)
            t = simpy.Event(self.env)
            t.callbacks.append(lambda _e: self._go(child))
            succeed_at(self.env, t, end - now)
        else:
            self._go(child)

    def _go(self, child: Request) -> None:
        self.member.submit(child).callbacks.append(self._member_done)

    def _member_done(self, ev: Any) -> None:
        child: Request = ev._value
        req: Request = child.parent  # type: ignore[assignment]
        req.service = child.service + (req.size / self.path_.lane_bps if req.op in (Op.READ, Op.WRITE) else 0.0)
        now = self.env._now
        delay = 0.0
        if req.op == Op.READ and req.size:
            delay = self.path_.reserve(now, req.size) - now
        self._complete_after(req, delay)

    def _finish(self, req: Request) -> None:
        super()._finish(req)
        if self._inside == 0:
            self._busy_acc += self.env._now - self._busy_since

    def reset_stats(self) -> None:
        super().reset_stats()
        self._busy_since = self.env.now

    def busy_time(self) -> float:
        extra = self.env.now - self._busy_since if self._inside > 0 else 0.0
        return self._busy_acc + extra
