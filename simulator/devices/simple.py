"""A plain queueing device: ``servers`` identical servers, FCFS, service times from a distribution.

It is the queueing-theory oracle of the test suite (M/M/1, M/D/1, M/M/c) and a useful stand-in for
any device whose internals do not matter to a question ("a 100 µs NVMe namespace").
"""

from __future__ import annotations

from collections import deque

from pydantic import Field

from simulator.config.base import ConfigModel
from simulator.devices.base import Device, Op, Request
from simulator.distributions import Deterministic, Distribution
from simulator.engine import Component
from simulator.units import Bytes, BytesPerSecond


class QueueDeviceConfig(ConfigModel):
    """A FCFS multi-server queue; service = draw from ``service`` + size / ``bandwidth``."""

    capacity: Bytes = Field("1TiB", gt=0, le=2**60, description="addressable size, bytes (default 1TiB)")
    servers: int = Field(1, ge=1, le=65536, description="number of requests served in parallel (default 1)")
    service: Distribution = Field(
        default_factory=lambda: Deterministic(value=1e-4),
        description="per-request service time distribution (default deterministic 100us)",
    )
    bandwidth: BytesPerSecond | None = Field(
        None, gt=0, le=1e12, description="transfer rate added as size/bandwidth, bytes/s, at most 1 TB/s (default none)"
    )
    flush_time: float = Field(0.0, ge=0, le=3600.0, description="service time of a FLUSH, seconds, at most 1 h (default 0)")


class QueueDevice(Device):
    def __init__(self, cfg: QueueDeviceConfig, name: str, parent: Component):
        super().__init__(name, parent, capacity=cfg.capacity)
        self.cfg = cfg
        self._free = cfg.servers
        self._queue: deque[Request] = deque()
        self._dist = cfg.service
        self._bw = cfg.bandwidth

    def _start(self, req: Request) -> None:
        if self._free > 0:
            self._free -= 1
            self._dispatch(req)
        else:
            self._queue.append(req)

    def _dispatch(self, req: Request) -> None:
        if req.op == Op.FLUSH:
            s = self.cfg.flush_time
        else:
            s = self._dist.sample(self.rand)
            if self._bw:
                s += req.size / self._bw
        req.t_start = self.env.now
        req.service = s
        self._busy_acc += s  # server-seconds; utilisation is per server below
        self._complete_after(req, s)

    def _finish(self, req: Request) -> None:
        super()._finish(req)
        if self._queue:
            self._dispatch(self._queue.popleft())
        else:
            self._free += 1

    def busy_time(self) -> float:
        return self._busy_acc / self.cfg.servers

