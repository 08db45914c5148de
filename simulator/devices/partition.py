"""A partition / LVM logical volume: the window [start, start + size) of a parent device.

Requests are shifted by ``start`` and passed to the parent (the *base* device), so several
partitions of one drive share its actuator, queue and cache: two Ceph OSDs on two LVs of one
single-actuator disk compete for the same heads. A FLUSH is passed on unchanged (a cache flush is
a whole-device operation). One extra SimPy event per request (the parent request's completion).
"""

from __future__ import annotations

from typing import Any

from simulator.devices.base import Device, Op, Request
from simulator.engine import Component, succeed_now

__all__ = ["Partition"]


class Partition(Device):
    """``Partition(name, parent, base, start, size)``: ``base`` is the device holding the window;
    ``parent`` is the component-tree parent (often the host, so the base device's children stay
    its own)."""

    def __init__(self, name: str, parent: Component, base: Device, start: int, size: int):
        start = int(start)
        size = int(size)
        if start < 0 or size <= 0 or start + size > base.capacity:
            raise ValueError(
                f"partition [{start}, {start + size}) does not fit in {base.path} (capacity {base.capacity} bytes)"
            )
        self.base = base
        self.start = start
        self._busy_since = 0.0
        super().__init__(name, parent, capacity=size, sector_size=base.sector_size)

    def _start(self, req: Request) -> None:
        if req.op != Op.FLUSH:
            self.check_range(req)
        if self._inside == 1:
            self._busy_since = self.env.now
        child = Request(req.op, req.offset + self.start, req.size, req.fua, parent=req, tag=req)
        self.base.submit(child).callbacks.append(self._child_done)

    def _child_done(self, ev: Any) -> None:
        child: Request = ev._value
        req: Request = child.tag
        req.t_start = child.t_start
        req.service = child.service
        self._finish(req)
        succeed_now(self.env, req.event, req)

    def _finish(self, req: Request) -> None:
        super()._finish(req)
        if self._inside == 0:
            self._busy_acc += self.env.now - self._busy_since

    def reset_stats(self) -> None:
        super().reset_stats()
        self._busy_since = self.env.now

    def busy_time(self) -> float:
        """Time with at least one request of this partition inside the base device."""
        extra = self.env.now - self._busy_since if self._inside > 0 else 0.0
        return self._busy_acc + extra
