"""Shared resources of the Ceph model as callback-driven servers with *booking* (no SimPy processes).

A FCFS server (or c identical servers) whose jobs arrive in time order is fully described by the
times its servers become free: a job arriving at t starts at max(t, earliest free) and the server
is then free at start + service. So a job costs one heap entry (its completion event) and no
queue bookkeeping. Jobs may also be booked for a known *future* arrival time (a message still on
the wire, then decoded by the receiver's CPU): then bookings are made in booking order rather than
strictly in arrival order, an approximation that only matters when a resource is near saturation
and two bookings with different lead times race for it (see docs/ceph-model.md).
"""

from __future__ import annotations

import heapq
import math
from typing import Any

import simpy
from simpy.core import NORMAL

from simulator.engine import Component

__all__ = ["CpuPool", "CpuThread", "Link", "Network", "call_at", "call_later", "then"]


_push = heapq.heappush
_heapreplace = heapq.heapreplace


class _Call:
    """A scheduled callback: the part of a SimPy event that ``Environment.step`` uses (``callbacks``,
    ``_ok``, ``_value``), with slots. Cheaper to make than a ``simpy.Event``, and holding no
    reference to the environment."""

    __slots__ = ("_value", "callbacks")
    _ok = True


_new = object.__new__


def call_later(env: simpy.Environment, delay: float, cb: Any, value: Any) -> None:
    """Call ``cb(event)`` after ``delay`` seconds; ``event._value`` is ``value``. One heap entry.

    Equivalent to ``Event(env)`` + ``succeed_at`` (pushed as ``Environment.schedule`` does; this is
    the hottest function of the model).
    """
    ev = _new(_Call)
    ev.callbacks = [cb]
    ev._value = value
    _push(env._queue, (env._now + delay, NORMAL, next(env._eid), ev))


def call_at(env: simpy.Environment, t: float, cb: Any, value: Any) -> None:
    """Call ``cb(event)`` at absolute time ``t`` (now if ``t`` is in the past)."""
    ev = _new(_Call)
    ev.callbacks = [cb]
    ev._value = value
    now = env._now
    _push(env._queue, (t if t > now else now, NORMAL, next(env._eid), ev))


def _resume(ev: Any) -> None:
    fn, arg, t = ev._value
    fn(arg, t)


def then(pool: CpuPool, t: float, fn: Any, arg: Any) -> None:
    """Continue a chain of bookings at ``t``, the end of the job just booked on ``pool``: ``fn(arg, t)``.

    Normally at once (the next booking is made now for an arrival at ``t``, a short lead). When that job's
    result comes after an off-CPU stall (``pool.stalled``), ``t`` may be milliseconds ahead and a booking
    made now would hold a core idle until then; so ``fn`` is called from an event at ``t`` instead.
    """
    if pool.stalled:
        pool.stalled = False
        call_at(pool.env, t, _resume, (fn, arg, t))
    else:
        fn(arg, t)


class CpuThread:
    """A daemon thread whose jobs a host's :class:`CpuPool` runs, for the per-thread wakeup rule
    (``CpuPool.run``): the thread is *asleep* when a job arrives after ``until`` (the result time of its
    latest job, wake delay included, or the time it was last seen taking queued work) and *awake* until
    then. ``jobs`` / ``wakes`` count its jobs and the ones that woke it. It decides only who pays a
    wakeup: a thread's jobs are serialised no more than the model already does (op shards' workers, the
    kv_sync cycle), they share the pool's cores FCFS.
    ``queued``: the thread sleeps on a queue inside its process (a condition variable: op-shard workers, the
    commit finisher, kv_sync, fio's submit thread) and pays the pool's wake delay when woken; a thread woken
    by a socket (messengers, librbd's receive) does not, its wake is inside the network's loopback latency."""

    __slots__ = ("group", "jobs", "queued", "until", "wakes")

    def __init__(self, group: str, queued: bool = True):
        self.group = group
        self.queued = queued
        self.until = -math.inf
        self.jobs = 0
        self.wakes = 0


class CpuPool(Component):
    """``servers`` identical processors, FCFS; costs are divided by ``speed``."""

    def __init__(
        self,
        name: str,
        parent: Component,
        servers: int,
        speed: float = 1.0,
        wakeup_cost: float = 0.0,
        stall_share: float = 0.0,
        stall_mean: float = 0.0,
        background_share: float = 0.0,
        foreign_cores: float = 0.0,
        foreign_slice: float = 0.0,
        thread_wakeup_cost: float = 0.0,
        thread_wake_delay: float = 0.0,
    ):
        super().__init__(name, parent)
        self.servers = int(servers)
        self.speed = float(speed)
        self._inv = 1.0 / self.speed
        #: extra cost of a job that finds a server idle (thread wakeup), already divided by speed
        self._wake = float(wakeup_cost) / self.speed
        #: share of jobs whose result is delayed off-CPU (the thread waits for a time slice while
        #: other work of the machine runs), exponential with mean ``stall_mean``; the server is free
        self._stall_p = float(stall_share) if stall_mean > 0.0 else 0.0
        self._stall_mean = float(stall_mean)
        #: share of every job's CPU that its thread (or a helper thread) runs after the job's result is out
        #: (op history, stats, deferred-apply bookkeeping): it keeps the core busy, but nothing waits for it
        self._bg = float(background_share)
        #: foreign work (other processes of the machine): Poisson arrivals of jobs, exponential with mean
        #: ``foreign_slice``, at the rate that keeps ``foreign_cores`` busy on average; booked lazily (when a
        #: modelled job arrives after them), FCFS with the modelled jobs; no events
        self._fg_slice = float(foreign_slice)
        self._fg_gap = self._fg_slice / float(foreign_cores) if foreign_cores > 0.0 and foreign_slice > 0.0 else 0.0
        self._fg_next = 0.0
        #: the last booked job's result comes after a stall (set by every booking while stalls are on);
        #: a caller that chains a follow-up booking to that job's end uses ``then``
        self.stalled = False
        #: per-thread wakeup rule (``run``): extra cost (reference CPU seconds, divided by speed when booked) and
        #: off-CPU delay of a job that finds its thread asleep; ``threads``: every CpuThread made by ``thread``
        self._tw_cost = float(thread_wakeup_cost)
        self._tw_delay = float(thread_wake_delay)
        self.threads: list[CpuThread] = []
        self._free = [0.0] * self.servers
        self.reset_stats()
        if self._wake == 0.0 and self._stall_p == 0.0 and self._bg == 0.0 and self._fg_gap == 0.0:
            self.book = self._book_plain  # type: ignore[method-assign]  # the same bookings, fewer tests per job
        #: the per-thread wakeup rule is on (``run`` is ``_run_threads``)
        self.threaded = self._tw_cost > 0.0 or self._tw_delay > 0.0
        if self.threaded:
            self.run = self._run_threads  # type: ignore[method-assign]

    def thread(self, group: str, queued: bool = True) -> CpuThread:
        """A new daemon thread of ``group`` (e.g. ``osd.msgr``) whose jobs this pool runs (see :meth:`run`);
        ``queued``: it pays the wake delay (see :class:`CpuThread`)."""
        th = CpuThread(group, queued)
        self.threads.append(th)
        return th

    def run(self, th: CpuThread | None, t: float, cost: float) -> float:
        """:meth:`book` a job of thread ``th`` (None: no thread). Without the per-thread wakeup rule exactly
        :meth:`book`; with it see :meth:`_run_threads`."""
        return self.book(t, cost)

    def _run_threads(self, th: CpuThread | None, t: float, cost: float) -> float:
        """:meth:`run` under the per-thread wakeup rule. A job arriving at ``t`` for a thread that is asleep
        (``t > th.until``) costs ``thread_wakeup_cost`` more CPU and, if the thread sleeps on a queue
        (``th.queued``), its result comes ``thread_wake_delay`` later, off-CPU (the core is free meanwhile;
        ``stalled`` is set so that a chained booking waits for the result, see :func:`then`); a job for a
        thread still busy (its previous result not out yet) runs with neither. The thread is then busy until this job's result. ``th`` None: a plain :meth:`book`."""
        if th is None:
            end = self.book(t, cost)
            if not self._stall_p:
                self.stalled = False
            return end
        th.jobs += 1
        if t > th.until:
            th.wakes += 1
            end = self.book(t, cost + self._tw_cost)
            if self._tw_delay > 0.0 and th.queued:
                end += self._tw_delay
                self.stalled = True
            elif not self._stall_p:
                self.stalled = False
        else:
            end = self.book(t, cost)
            if not self._stall_p:
                self.stalled = False
        if end > th.until:
            th.until = end
        return end

    def _book_plain(self, t: float, cost: float) -> float:
        """:meth:`book` of a pool without wakeups, stalls, background share or foreign work (the
        common case: one job is ``cost / speed`` on the earliest free server)."""
        if cost <= 0.0:
            return t
        cost *= self._inv
        free = self._free
        f = free[0]
        end = (t if t >= f else f) + cost
        _heapreplace(free, end)
        self._busy += cost
        self.jobs += 1
        return end

    def book(self, t: float, cost: float) -> float:
        """Run a job of ``cost`` (reference-CPU seconds) arriving at ``t``; return the time its result is out
        (its end, less its background part, plus a stall if it stalls)."""
        if cost <= 0.0 and self._wake == 0.0:
            self.stalled = False
            return t
        if self._fg_gap and self._fg_next <= t:
            self._foreign(t)
        cost *= self._inv
        bg = cost * self._bg
        free = self._free
        f = free[0]
        if t >= f:  # a server is idle: the job wakes it
            cost += self._wake
            end = t + cost
        else:  # queued behind another job: runs back to back
            end = f + cost
        _heapreplace(free, end)
        self._busy += cost
        self.jobs += 1
        end -= bg  # the result is out before the job's background part (0 unless background_share)
        if self._stall_p:
            if self.rand.random() < self._stall_p:
                self.stalls += 1
                self.stalled = True
                return end - self._stall_mean * math.log(1.0 - self.rand.random())
            self.stalled = False
        return end

    def idle(self, t: float) -> bool:
        """A server is idle at ``t`` (free from ``t`` on, counting the jobs booked so far)."""
        return self._free[0] <= t

    def _foreign(self, t: float) -> None:
        """Book the foreign jobs that arrived up to ``t`` (in arrival order, before the modelled job at ``t``)."""
        free = self._free
        r = self.rand
        ta = self._fg_next
        while ta <= t:
            size = -self._fg_slice * math.log(1.0 - r.random())
            f = free[0]
            _heapreplace(free, (ta if ta > f else f) + size)
            self.foreign_busy += size
            ta -= self._fg_gap * math.log(1.0 - r.random())
        self._fg_next = ta

    def reset_stats(self) -> None:
        self._t0 = self.env.now
        self._busy = 0.0
        self.foreign_busy = 0.0
        self.jobs = 0
        self.stalls = 0
        for th in self.threads:
            th.jobs = th.wakes = 0

    def utilisation(self) -> float:
        span = self.env.now - self._t0
        return min(1.0, self._busy / (span * self.servers)) if span > 0 else 0.0

    def stats(self) -> dict[str, Any]:
        st = {"servers": self.servers, "utilisation": self.utilisation(), "jobs": self.jobs, "stalls": self.stalls}
        if self._fg_gap:
            span = self.env.now - self._t0
            st["foreign_cores"] = self.foreign_busy / span if span > 0 else 0.0
        if self.threaded:
            groups: dict[str, list[int]] = {}
            for th in self.threads:
                g = groups.setdefault(th.group, [0, 0])
                g[0] += th.jobs
                g[1] += th.wakes
            st["thread_jobs"] = {k: v[0] for k, v in sorted(groups.items())}
            st["thread_wakes"] = {k: v[1] for k, v in sorted(groups.items())}
        return st


class Link:
    """One direction of a NIC: a FIFO server serialising bytes at ``bandwidth``."""

    __slots__ = ("_busy", "_free", "_t0", "bandwidth", "bytes", "env")

    def __init__(self, env: simpy.Environment, bandwidth: float):
        self.env = env
        self.bandwidth = float(bandwidth)
        self._free = 0.0
        self.reset_stats()

    def book(self, t: float, nbytes: int) -> float:
        s = nbytes / self.bandwidth
        f = self._free
        end = (t if t > f else f) + s
        self._free = end
        self._busy += s
        self.bytes += nbytes
        return end

    def reset_stats(self) -> None:
        self._t0 = self.env.now
        self._busy = 0.0
        self.bytes = 0

    def utilisation(self) -> float:
        span = self.env.now - self._t0
        return min(1.0, self._busy / span) if span > 0 else 0.0


class Network:
    """A single switch: host -> host = sender's tx link, latency, receiver's rx link (store and
    forward); host -> itself = loopback latency only."""

    def __init__(self, latency: float, loopback_latency: float, overhead: int):
        self.latency = float(latency)
        self.loopback = float(loopback_latency)
        self.overhead = int(overhead)

    def arrival(self, src: Any, dst: Any, t: float, payload: int) -> float:
        """Time at which a message sent at ``t`` from host ``src`` is fully received by ``dst``."""
        if src is dst:
            return t + self.loopback
        n = payload + self.overhead
        t = src.tx.book(t, n) + self.latency
        return dst.rx.book(t, n)
