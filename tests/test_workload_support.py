"""Shared helpers of the workload tests: a recording stand-in for the metrics layer's JobStats.

It implements the JobStats contract the runner codes against (add, add_sync, set_window, result)
and keeps every sample, so tests can compute exact means and counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simulator.devices.simple import QueueDevice, QueueDeviceConfig
from simulator.engine import Simulation
from simulator.workloads.options import resolve_jobs
from simulator.workloads.runner import Workload


@dataclass
class FakeResult:
    name: str
    options: dict
    groupid: int
    jobs: int
    t_done: np.ndarray
    ddir: np.ndarray
    slat: np.ndarray
    clat: np.ndarray
    nbytes: np.ndarray
    sync_lat: np.ndarray
    window: tuple = (0.0, 0.0)
    members: list = field(default_factory=list)

    @property
    def lat(self) -> np.ndarray:
        return self.slat + self.clat

    @property
    def n(self) -> int:
        return len(self.clat)

    @property
    def runtime(self) -> float:
        return self.window[1] - self.window[0]

    def iops(self) -> float:
        return self.n / self.runtime


class FakeStats:
    def __init__(self, name, options, groupid=0, jobs=1):
        self.name, self.options, self.groupid, self.jobs = name, options, groupid, jobs
        self._rows = []
        self._sync = []
        self.window = None

    def add(self, ddir, t_done, slat, clat, nbytes):
        self._rows.append((ddir, t_done, slat, clat, nbytes))

    def add_sync(self, t_done, lat):
        self._sync.append(lat)

    def set_window(self, t_start, t_end):
        self.window = (t_start, t_end)

    def result(self):
        a = np.array(self._rows, dtype=float).reshape(-1, 5)
        return FakeResult(
            self.name,
            self.options,
            self.groupid,
            self.jobs,
            a[:, 1],
            a[:, 0].astype(int),
            a[:, 2],
            a[:, 3],
            a[:, 4].astype(np.int64),
            np.array(self._sync),
            self.window,
        )


def fake_merge(results):
    cat = lambda k: np.concatenate([getattr(r, k) for r in results])  # noqa: E731
    w = (min(r.window[0] for r in results), max(r.window[1] for r in results))
    return FakeResult(
        results[0].name,
        results[0].options,
        results[0].groupid,
        sum(r.jobs for r in results),
        cat("t_done"),
        cat("ddir"),
        cat("slat"),
        cat("clat"),
        cat("nbytes"),
        cat("sync_lat"),
        w,
        list(results),
    )


def queue_devices(sim, services, capacity="1GiB", dist="deterministic", prefix="d", **extra):
    """QueueDevices with the given mean service times (seconds)."""
    devs = {}
    for i, s in enumerate(services):
        svc = {"dist": "deterministic", "value": s} if dist == "deterministic" else {"dist": dist, "mean": s}
        cfg = QueueDeviceConfig.model_validate({"capacity": capacity, "service": svc, **extra})
        devs[f"{prefix}{i}"] = QueueDevice(cfg, f"{prefix}{i}", sim.root)
    return devs


def run_jobs(global_opts, jobs, devices, sim, **kw):
    """Resolve, run to completion, return (workload, results)."""
    fj = resolve_jobs(global_opts, jobs, "test.fio")

    def resolve(job):
        return [devices[n] for n in job.filenames] if job.filenames else list(devices.values())[:1]

    wl = Workload(sim, fj, resolve, stats_factory=FakeStats, merge=fake_merge, **kw)
    done = wl.start()
    sim.run(until=done)
    return wl, wl.results()


def new_sim(seed=1):
    return Simulation(seed)


class RecordingQueue(QueueDevice):
    """A QueueDevice that keeps every request it was given and counts completions per request."""

    def __init__(self, cfg, name, parent):
        super().__init__(cfg, name, parent)
        self.log: list = []  # (t_submit, request)
        self.done_count: dict[int, int] = {}
        self.done_time: dict[int, float] = {}

    def submit(self, req):
        ev = super().submit(req)
        self.log.append((self.env.now, req))
        ev.callbacks.append(self._seen)
        return ev

    def _seen(self, ev):
        r = ev.value
        self.done_count[id(r)] = self.done_count.get(id(r), 0) + 1
        self.done_time[id(r)] = self.env.now


def recording_devices(sim, services, capacity="1GiB", dist="deterministic", prefix="d", **extra):
    devs = {}
    for i, s in enumerate(services):
        svc = {"dist": "deterministic", "value": s} if dist == "deterministic" else {"dist": dist, "mean": s}
        cfg = QueueDeviceConfig.model_validate({"capacity": capacity, "service": svc, **extra})
        devs[f"{prefix}{i}"] = RecordingQueue(cfg, f"{prefix}{i}", sim.root)
    return devs
