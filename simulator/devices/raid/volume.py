"""The RAID volume device: member IO plans (``layout``) executed through the members' submit.

A host request becomes a *job*: its member IOs in at most two phases (the reads of a
read-modify-write or reconstruct-write, then the writes). A phase's member requests are submitted
together; a counter in the job counts their completions and starts the next phase or completes the
host request -- no SimPy process, one event per member IO plus the host request's own. The host
request's ``service`` is the sum over phases of the slowest member's service, so its latency is at
least that.

Member ``m``'s outstanding count (this volume's IOs inside it) picks the less busy mirror copy.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import deque
from collections.abc import Callable
from typing import Any

from simulator.devices.base import Device, Op, Request
from simulator.devices.partition import Partition
from simulator.devices.raid.config import RaidConfig
from simulator.devices.raid.layout import (
    Layout,
    MemberOp,
    merge_ops,
    plan_read,
    plan_stripe_write,
    plan_write,
    split_chunks,
)
from simulator.devices.raid.path import HbaPath, PathPort
from simulator.engine import Component
from simulator.errors import ConfigError

__all__ = ["RaidVolume", "build_raid"]

_READ, _WRITE, _TRIM, _FLUSH = int(Op.READ), int(Op.WRITE), int(Op.TRIM), int(Op.FLUSH)


class _Job:
    __slots__ = ("done", "later", "left", "phase_max", "req", "service", "value")

    def __init__(self, req: Request | None, later: list[MemberOp], done: Any, value: Any = None):
        self.req = req
        self.later = later
        self.done = done
        self.left = 0
        self.service = 0.0
        self.phase_max = 0.0
        self.value = value


class RaidVolume(Device):
    """A RAID volume over ``cfg.members.count`` members built from one device spec."""

    def __init__(
        self,
        cfg: RaidConfig,
        name: str,
        parent: Component | None,
        *,
        path: HbaPath | None = None,
        make_member: Callable[[int, str, Component], Device] | None = None,
    ):
        """``path``: an HBA path shared with other volumes (default: one of its own when ``cfg.path``
        is set). ``make_member(i, name, parent)`` builds member ``i`` instead of the registry (Python
        API: members of different kinds, instrumented members in tests)."""
        from simulator.devices.registry import resolve_params

        super().__init__(name, parent)
        self.cfg = cfg
        n = cfg.members.count
        if make_member is None:
            # the member spec is resolved (profile read, validated) once for all members
            kind, mcfg, _ = resolve_params(cfg.members.device, field="members.device")

            def make_member(i: int, nm: str, par: Component) -> Device:
                return kind.build(mcfg, nm, par)

        if path is None and cfg.path is not None:
            path = HbaPath(cfg.path, "hba", self)
        self.hba = path
        self.members: list[Device] = []
        for i in range(n):
            if path is not None:
                dev = PathPort(f"d{i}", self, path, lambda port, i=i: make_member(i, "disk", port))
            else:
                dev = make_member(i, f"d{i}", self)
            self.members.append(dev)
        cap = min(m.capacity for m in self.members)
        chunk = int(cfg.chunk)
        member_bytes = cap // chunk * chunk
        if member_bytes <= 0:
            raise ValueError(f"{self.path}: members ({cap} bytes) are smaller than one chunk ({chunk} bytes)")
        self.layout = Layout(cfg.level, n, chunk, member_bytes, cfg.copies)
        self.capacity = self.layout.capacity
        self.sector_size = max(m.sector_size for m in self.members)
        self.failed = frozenset(cfg.failed)
        self._policy = cfg.write_policy
        self._ovh = float(cfg.controller_overhead)
        self._out = [0] * n
        self._busy_since = 0.0
        self.methods: dict[str, int] = {}
        self.member_ios = [0, 0, 0, 0]
        # write-back cache
        wc = cfg.write_cache
        self._wb = wc.mode == "write_back"
        self._wc = wc
        self._ack = float(wc.ack_latency)
        self._dirty: dict[int, list[list[int]]] = {}
        self._rows: list[int] = []
        self._full: set[int] = set()
        self.dirty_bytes = 0
        self.destaging_bytes = 0
        self._wait: deque[Request] = deque()
        self._draining = False
        self._inflight = 0
        self._cursor = 0
        self.cache_hits = 0
        # read-ahead
        ra = cfg.read_ahead
        self._ra = ra.enabled
        self._ra_size = int(ra.size)
        self._ra_trigger = ra.trigger
        self._ra_next = -1
        self._ra_run = 0
        self._ra_lo = self._ra_hi = 0
        self._pf: tuple[int, int] | None = None
        self._pf_wait: list[Request] = []
        self.readahead_hits = 0
        # virtual drives: partitions of the volume, sharing its members and cache
        self.volumes: dict[str, Partition] = {}
        start = 0
        ss = self.sector_size
        for vc in cfg.volumes:
            size = int(vc.size) // ss * ss
            if size <= 0 or start + size > self.capacity:
                raise ConfigError(
                    f"volume {vc.name!r} ({size:,} bytes from {start:,}) does not fit in the RAID ({self.capacity:,} bytes)",
                    field="volumes",
                )
            self.volumes[vc.name] = Partition(vc.name, self, self, start, size)
            start += size

    # ------------------------------------------------------------------ host requests
    def _start(self, req: Request) -> None:
        if self._inside == 1:
            self._busy_since = self.env._now
        op = req.op
        if op == _FLUSH:
            if self._wb:  # non-volatile cache: everything acknowledged is already durable
                self._complete_after(req, self._ovh)
            else:
                ops = [MemberOp(1, m, _FLUSH, 0, 0) for m in range(self.layout.n) if m not in self.failed]
                self._run(req, ops, self._host_done)
            return
        self.check_range(req)
        if op == _TRIM or req.size == 0:
            self._complete_after(req, self._ovh)
            return
        if op == _READ:
            self._read(req)
        else:
            self._write(req)

    def _read(self, req: Request) -> None:
        if self._wb and self._dirty and self._cached(req.offset, req.size):
            self.cache_hits += 1
            self._complete_after(req, self._ovh + self._ack)
            return
        if self._ra:
            off, end = req.offset, req.end
            self._ra_run = self._ra_run + 1 if off == self._ra_next else 1
            self._ra_next = end
            pf = self._pf
            if self._ra_lo <= off and end <= self._ra_hi:
                self.readahead_hits += 1
                self._complete_after(req, self._ovh + self._ack)
                self._prefetch(end)
                return
            if pf is not None and pf[0] <= off and end <= pf[1]:
                self.readahead_hits += 1
                self._pf_wait.append(req)
                return
            self._prefetch(end)
        self._run(req, plan_read(self.layout, req.offset, req.size, self.failed, self._out.__getitem__), self._host_done)

    def _write(self, req: Request) -> None:
        if self._ra and req.offset < self._ra_hi and req.end > self._ra_lo:
            self._ra_lo = self._ra_hi = 0
        if self._wb and req.size <= self._wc.size:
            if self._wait or self.dirty_bytes + self.destaging_bytes + req.size > self._wc.size:
                self._wait.append(req)
            else:
                self._insert(req.offset, req.size)
                self._complete_after(req, self._ovh + self._ack)
            self._kick()
            return
        ops, methods = plan_write(self.layout, req.offset, req.size, self.failed, self._policy)
        self._count(methods)
        self._run(req, ops, self._host_done)

    def _count(self, methods: list[str]) -> None:
        d = self.methods
        for m in methods:
            d[m] = d.get(m, 0) + 1

    # ------------------------------------------------------------------ jobs
    def _run(self, req: Request | None, ops: list[MemberOp], done: Any, value: Any = None) -> None:
        first = [o for o in ops if o.phase == 0]
        later = [o for o in ops if o.phase != 0]
        job = _Job(req, later if first else [], done, value)
        self._submit_phase(job, first or later)

    def _submit_phase(self, job: _Job, ops: list[MemberOp]) -> None:
        job.left = len(ops)
        job.phase_max = 0.0
        fua = job.req.fua if job.req is not None else False
        members = self.members
        out = self._out
        cb = self._child_done
        mio = self.member_ios
        for o in ops:
            m = o.member
            child = Request(o.op, o.offset, o.size, fua and o.op == _WRITE, parent=job.req, tag=(job, m))
            out[m] += 1
            mio[o.op] += 1
            members[m].submit(child).callbacks.append(cb)

    def _child_done(self, ev: Any) -> None:
        child: Request = ev._value
        job, m = child.tag
        self._out[m] -= 1
        lat = child.service
        if lat > job.phase_max:
            job.phase_max = lat
        job.left -= 1
        if job.left == 0:
            job.service += job.phase_max
            if job.later:
                nxt, job.later = job.later, []
                self._submit_phase(job, nxt)
            else:
                job.done(job)

    def _host_done(self, job: _Job) -> None:
        req = job.req
        req.service = job.service  # type: ignore[union-attr]
        self._complete_after(req, self._ovh)  # type: ignore[arg-type]

    def _finish(self, req: Request) -> None:
        super()._finish(req)
        if self._inside == 0:
            self._busy_acc += self.env._now - self._busy_since
            if self._wb and self._dirty:
                self._kick()

    # ------------------------------------------------------------------ write-back cache
    def _segments(self, off: int, size: int):
        rb = self.layout.row_bytes if self.layout.level != "jbod" else self.layout.member_bytes
        end = off + size
        while off < end:
            row = off // rb
            e = min(end, (row + 1) * rb)
            yield row, off, e
            off = e

    def _cached(self, off: int, size: int) -> bool:
        for row, a, b in self._segments(off, size):
            iv = self._dirty.get(row)
            if iv is None or not any(lo <= a and b <= hi for lo, hi in iv):
                return False
        return True

    def _insert(self, off: int, size: int) -> None:
        rb = self.layout.row_bytes if self.layout.level != "jbod" else self.layout.member_bytes
        for row, a, b in self._segments(off, size):
            iv = self._dirty.get(row)
            if iv is None:
                self._dirty[row] = [[a, b]]
                insort(self._rows, row)
                self.dirty_bytes += b - a
                new = [[a, b]]
            else:
                before = sum(h - lo for lo, h in iv)
                new = []
                for lo, h in sorted([*iv, [a, b]]):
                    if new and lo <= new[-1][1]:
                        new[-1][1] = max(new[-1][1], h)
                    else:
                        new.append([lo, h])
                self._dirty[row] = new
                self.dirty_bytes += sum(h - lo for lo, h in new) - before
            if len(new) == 1 and new[0][0] == row * rb and new[0][1] == (row + 1) * rb:
                self._full.add(row)

    def _kick(self) -> None:
        wc = self._wc
        size = wc.size
        if self._wait or self.dirty_bytes + self.destaging_bytes >= wc.high_watermark * size:
            self._draining = True
        depth = wc.destage_depth
        while self._inflight < depth and self._dirty:
            if self._draining and not self._wait and self.dirty_bytes <= wc.low_watermark * size:
                self._draining = False
            if not (self._draining or self._inside == 0):
                break
            self._destage(self._pick())

    def _pick(self) -> int:
        if self._full:
            row = min(self._full)
        else:
            rows = self._rows
            i = bisect_left(rows, self._cursor)
            row = rows[i if i < len(rows) else 0]
        return row

    def _destage(self, row: int) -> None:
        iv = self._dirty.pop(row)
        self._rows.pop(bisect_left(self._rows, row))
        self._full.discard(row)
        self._cursor = row + 1
        nbytes = sum(h - lo for lo, h in iv)
        self.dirty_bytes -= nbytes
        self.destaging_bytes += nbytes
        lay = self.layout
        if lay.level in ("5", "6"):
            pieces = [(j, o, ln) for lo, h in iv for _, j, o, ln in split_chunks(lay, lo, h - lo)]
            ops, method = plan_stripe_write(lay, row, pieces, self.failed, self._policy)
            self._count([method])
        else:
            ops = []
            for lo, h in iv:
                o2, _methods = plan_write(lay, lo, h - lo, self.failed, self._policy)
                ops += o2
            ops = merge_ops(ops)
        self._inflight += 1
        self._run(None, ops, self._destaged, nbytes)

    def _destaged(self, job: _Job) -> None:
        self._inflight -= 1
        self.destaging_bytes -= job.value
        wait = self._wait
        size = self._wc.size
        while wait and self.dirty_bytes + self.destaging_bytes + wait[0].size <= size:
            req = wait.popleft()
            self._insert(req.offset, req.size)
            self._complete_after(req, self._ovh + self._ack)
        self._kick()

    # ------------------------------------------------------------------ read-ahead
    def _prefetch(self, pos: int) -> None:
        if self._pf is not None or self._ra_run < self._ra_trigger:
            return
        size = self._ra_size
        if self._ra_hi - pos >= size // 2 and self._ra_lo <= pos:
            return
        lo = self._ra_hi if self._ra_lo <= pos <= self._ra_hi else pos
        hi = min(lo + size, self.capacity)
        if hi <= lo:
            return
        self._pf = (lo, hi)
        self._run(None, plan_read(self.layout, lo, hi - lo, self.failed, self._out.__getitem__), self._prefetched)

    def _prefetched(self, job: _Job) -> None:
        lo, hi = self._pf  # type: ignore[misc]
        self._pf = None
        if lo == self._ra_hi and self._ra_lo < self._ra_hi:
            self._ra_lo = max(self._ra_lo, hi - 2 * self._ra_size)
        else:
            self._ra_lo = lo
        self._ra_hi = hi
        waiting, self._pf_wait = self._pf_wait, []
        for req in waiting:
            self._complete_after(req, self._ovh + self._ack)
        self._prefetch(self._ra_next)

    # ------------------------------------------------------------------ accounting
    def reset_stats(self) -> None:
        super().reset_stats()
        self._busy_since = self.env.now
        self.methods = {}
        self.member_ios = [0, 0, 0, 0]
        self.cache_hits = 0
        self.readahead_hits = 0

    def busy_time(self) -> float:
        extra = self.env.now - self._busy_since if self._inside > 0 else 0.0
        return self._busy_acc + extra

    def stats(self) -> dict[str, Any]:
        s = super().stats()
        s["raid"] = {
            "level": self.layout.level,
            "members": self.layout.n,
            "failed": sorted(self.failed),
            "write_methods": dict(sorted(self.methods.items())),
            "member_ios": {Op(i).name.lower(): c for i, c in enumerate(self.member_ios)},
            "cache_hits": self.cache_hits,
            "readahead_hits": self.readahead_hits,
            "dirty_bytes": self.dirty_bytes + self.destaging_bytes,
        }
        return s


def build_raid(cfg: RaidConfig, name: str, parent: Component) -> RaidVolume:
    return RaidVolume(cfg, name, parent)
