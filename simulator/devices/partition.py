"""A partition / LVM logical volume: the window [start, start + size) of a parent device.

Requests are shifted by ``start`` and passed to the parent (the *base* device), so several
partitions of one drive share its actuator, queue and cache: two Ceph OSDs on two LVs of one
single-actuator disk compete for the same heads. A FLUSH is passed on unchanged (a cache flush is
a whole-device operation).

No SimPy event of its own: the request itself goes to the base with its offset shifted (the base's
completion event is the request's event), and the partition's completion callback, which runs
before the submitter's, shifts it back and does the accounting. ``submit_batch`` passes a batch on
to a base that has one (a block layer: one thread submitting many requests).
"""

from __future__ import annotations

from typing import Any

import simpy

from simulator.devices.base import Device, Op, PassThroughBusy, Request
from simulator.engine import Component

__all__ = ["Partition"]

_FLUSH = int(Op.FLUSH)


class Partition(PassThroughBusy, Device):
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
        super().__init__(name, parent, capacity=size, sector_size=base.sector_size)

    def _enter(self, req: Request) -> None:
        """Device.submit's bookkeeping; the request's offset moves into the base's space."""
        if req.op != _FLUSH:
            self.check_range(req)
            req.offset += self.start
        self._enter_inside(self.env._now)

    def submit(self, req: Request) -> simpy.Event:
        self._enter(req)
        ev = self.base.submit(req)
        ev.callbacks.append(self._done)
        return ev

    def submit_batch(self, reqs: list[Request]) -> list[Any]:
        """Submit ``reqs`` together (one thread's io_submit) when the base device supports it."""
        sb = getattr(self.base, "submit_batch", None)
        if sb is None:
            return [self.submit(r) for r in reqs]
        for req in reqs:
            self._enter(req)
        evs = sb(reqs)
        done = self._done
        for ev in evs:
            ev.callbacks.append(done)
        return evs

    def _start(self, req: Request) -> None:  # pragma: no cover - submit() is overridden
        raise NotImplementedError

    def _done(self, ev: Any) -> None:
        req: Request = ev._value
        if req.op != _FLUSH:
            req.offset -= self.start
        self._finish(req)
