"""Running simulations: build the system, run the fio jobs, return fio-shaped documents.

A run is self-contained (own Simulation, own seed) so runs can go to worker processes. Replication
``r`` of every sweep point uses the same seed (common random numbers across the sweep: differences
between points are not drowned in seed noise). With ``persist_state`` the points of one replication
run back to back on one system.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from simulator.config.base import validate
from simulator.engine import Simulation
from simulator.experiment.model import ExperimentSpec
from simulator.experiment.system import System

__all__ = ["RunOutput", "System", "execute_task", "point_digest", "prepare_point", "replication_seed", "run_jobs_on"]

ProgressFn = Callable[[int, float], None]


def replication_seed(seed: int, replication: int) -> int:
    """Seed of replication ``r``: independent streams per replication, identical across points."""
    if replication == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(replication)]).generate_state(1, dtype=np.uint32)[0])


def point_digest(raw: dict[str, Any]) -> str:
    """Hash of one point's resolved configuration: ties a run file to the point it was run for."""
    return hashlib.sha256(json.dumps(raw, sort_keys=True, default=str).encode()).hexdigest()[:16]


def prepare_point(raw: dict[str, Any], source: str, exp_dir: Path) -> tuple[ExperimentSpec, list[Any]]:
    """Validate one point's configuration: the experiment model and its fio jobs (FioJob list)."""
    from simulator.workloads.options import resolve_jobs

    spec = validate(ExperimentSpec, raw, source)
    wl = spec.workload
    if wl.jobfile:
        from simulator.workloads.jobfile import parse_jobfile

        jf = Path(wl.jobfile)
        if not jf.is_absolute():
            jf = exp_dir / jf
        gopts, jobs = parse_jobfile(jf)
        gopts = {**gopts, **raw["workload"].get("global", {})}
        return spec, resolve_jobs(gopts, jobs, str(jf))
    return spec, resolve_jobs(dict(raw["workload"].get("global") or {}), list(raw["workload"]["jobs"]), source, prefix="workload.")


@dataclass
class RunOutput:
    point: int
    replication: int
    seed: int
    labels: dict[str, Any]
    doc: dict[str, Any]
    summary: dict[str, Any]
    wall_s: float
    sim_s: float
    ios: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def _planned_duration(jobs: list[Any]) -> float | None:
    best = 0.0
    for j in jobs:
        rt = getattr(j, "runtime", None)
        if not rt:
            return None
        best = max(best, float(rt) + float(getattr(j, "ramp_time", 0) or 0))
    return best or None


def _ticker(sim: Simulation, horizon: float, done: Any, report: Callable[[float], None]):
    """A control process (not on the IO path) reporting progress ~100 times per run, at most 10/s."""
    step = horizon / 100.0
    last = [0.0]

    def gen():
        while not done.triggered:
            yield sim.env.timeout(step)
            now_wall = time.perf_counter()
            if now_wall - last[0] > 0.1:
                last[0] = now_wall
                report(min(1.0, sim.env.now / horizon))

    return sim.env.process(gen())


class HandOver(Exception):
    """A run that would take the system out of a held compiled state (a Python run, or a compiled run
    of another image) in a persist_state chain: :func:`execute_task` replays the chain's earlier points
    in Python on a new system instead, so that the run starts from the state the Python model leaves
    (a hand-over drains the held state's pending work, which the Python model would interleave with
    the run's IOs). ``why``: the reason the run is not a resumption."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


def run_jobs_on(sim: Simulation, system: System, jobs: list[Any], progress: Callable[[float], None] | None = None,
                engine: str = "auto", used: dict[str, Any] | None = None,
                strict_hand_over: bool = False) -> tuple[list[Any], float]:
    """Run one fio workload to completion on ``system``; returns (job results, simulated seconds).
    ``engine`` (simulator.core.ENGINES): "auto" runs RBD workloads the compiled Ceph core covers in
    it; ``used`` (if given) receives {"engine": "compiled" or "python", "why": the reason for python}.
    ``strict_hand_over``: raise :class:`HandOver` (before anything runs) instead of running from a
    drained hand-over of a held compiled state (ceph_fio.Held)."""
    import gc

    from simulator.core import choose, run_workload
    from simulator.core.ceph_fio import held_states, rbd_targets
    from simulator.engine.core import gc_quiet
    from simulator.workloads.runner import Workload

    # earlier points' dead systems: the event loop freezes what exists at a run's start (gc_quiet), so a
    # worker running point after point would keep them for its whole life; one full pass when a system runs
    # for the first time (the next runs of a persist_state chain reuse it: no dead system to free, and a full
    # pass over a full-size cluster cost ~7 % of a full-length croit worker)
    if not system.gc_collected:
        gc.collect()
        system.gc_collected = True
    system.reset_stats()
    t0 = sim.env.now
    wl = Workload(sim, jobs, system.resolve_target)
    why = choose(sim, wl, engine)
    if strict_hand_over and why is not None and held_states(sim):
        raise HandOver(why)
    if why is None:
        run_workload(sim, wl)
    if used is not None:
        used["engine"] = "python" if why else "compiled"
        used["why"] = why
        used["rbd"] = rbd_targets(wl)
    if why is None:
        return wl.results(), sim.env.now - t0
    with gc_quiet():  # the first fill (start issues every job's iodepth requests) with the collector quietened too
        done = wl.start()
    horizon = _planned_duration(jobs)
    tick = None
    if progress is not None and horizon:
        # fraction of planned simulated time, offset to this workload's start
        def rep(f: float, _t0=t0, _h=horizon) -> None:
            progress(min(1.0, (sim.env.now - _t0) / _h))

        tick = _ticker(sim, horizon, done, rep)
    sim.run(until=done)  # with the collector quietened (engine.gc_quiet)
    if tick is not None and tick.is_alive:
        # its next wake would only find the run done: stop it now, so the run leaves no event with work
        # to do (a next run on this system can then go to the compiled core)
        tick._target.callbacks.remove(tick._resume)
    return wl.results(), sim.env.now - t0


#: percentiles of the dense latency curves kept for HDR plots (HdrHistogram's usual ticks)
DENSE_PERCENTILES = (
    0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 55.0, 60.0, 65.0, 70.0, 75.0, 77.5, 80.0, 82.5, 85.0, 87.5, 88.75, 90.0,
    91.25, 92.5, 93.75, 94.375, 95.0, 95.625, 96.25, 96.875, 97.1875, 97.5, 97.8125, 98.125, 98.4375,
    98.59375, 98.75, 98.90625, 99.0, 99.2, 99.4, 99.5, 99.6, 99.7, 99.8, 99.85, 99.9, 99.925, 99.95,
    99.97, 99.98, 99.99, 99.995, 99.999,
)


def _dense_percentiles(results: list[Any]) -> dict[str, dict[str, float]]:
    """Completion-latency percentiles (ns) of the merged jobs, densely, for HDR plots."""
    from simulator.metrics.stats import merge, percentile_key

    job = merge(list(results)) if len(results) > 1 else results[0]
    out: dict[str, dict[str, float]] = {}
    for d in job.present_dirs():
        h = d.clat.hist
        if h is not None and h.total_count:
            out[d.name] = {percentile_key(p): float(h.value_at_percentile(p)) for p in DENSE_PERCENTILES}
    return out


def _steady(results: list[Any]) -> dict[str, Any]:
    """MSER steady-state verdict per direction of the merged jobs (simulator.metrics.steady)."""
    from simulator.metrics.stats import merge
    from simulator.metrics.steady import detect_series

    job = merge(list(results)) if len(results) > 1 else results[0]
    out: dict[str, Any] = {}
    for d in job.present_dirs():
        st = detect_series(d.series, d.series.t0 + d.runtime_s) if d.series is not None else None
        if st is not None:
            k = int((d.runtime_s + 1e-9) // d.series.period)
            samples = [round(float(x) / d.series.period, 3) for x in d.series.n[:k]]
            out[d.name] = {**st.as_dict(), "message": st.message(), "period_s": d.series.period, "iops_samples": samples}
    return out


#: fio's "time" field of simulated runs: fixed, so the same seed gives byte-identical documents
SIM_TIME_STR = "Thu Jan  1 00:00:00 1970"


def _document(results: list[Any], jobs: list[Any], spec: ExperimentSpec, seed: int, labels: dict[str, Any], system: System, sim_s: float) -> tuple[dict, dict]:
    from simulator import __version__
    from simulator.metrics.fiojson import to_fio_json
    from simulator.metrics.summary import summary_row

    gopts = {k: str(v) for k, v in (spec.workload.global_ or {}).items()}
    meta = {
        "simulator_version": __version__,
        "experiment": spec.name,
        "seed": seed,
        "labels": labels,
        "simulated_seconds": sim_s,
        **system.stats(),
    }
    meta["hdr_percentiles"] = _dense_percentiles(results)
    meta["steady_state"] = _steady(results)
    doc = to_fio_json(results, gopts, time_str=SIM_TIME_STR, sim_meta=meta, timestamp=0)
    row = summary_row(results)
    for k, v in ((meta.get("cluster") or {}).get("summary") or {}).items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            row[f"ceph.{k}"] = v
    for name, st in ((d["path"], d) for d in meta.get("devices", [])):
        if name.count(".") > 2:
            continue  # top-level devices and their LUNs only
        short = name.removeprefix("system.")
        w = st.get("window_s") or 0.0
        if w > 0:
            row[f"dev.{short}.iops"] = sum(st["completed"].get(k, 0) for k in ("read", "write", "trim")) / w
            row[f"dev.{short}.util"] = st.get("utilisation")
            row[f"dev.{short}.qd"] = st.get("mean_queue_depth")
    return doc, row


def _vary_offsets(jobs: list[Any], replication: int) -> list[Any]:
    """Replication 0 replays fio's offset sequence (randseed as given or fio's default); replication
    r > 0 uses another randseed, as independent fio runs with a different randseed would. Without
    this, replications would share the offsets and their CI would understate the uncertainty."""
    if replication == 0:
        return jobs
    out = []
    for j in jobs:
        base = j.seed
        derived = int(np.random.SeedSequence([base, replication]).generate_state(1, dtype=np.uint32)[0])
        out.append(j.model_copy(update={"randseed": derived}))
    return out


def execute_task(task: dict[str, Any], progress: ProgressFn | None = None) -> list[RunOutput]:
    """Run one task: a single (point, replication), or all points of a replication (persist_state).

    ``task`` is picklable: {"source", "points": [(index, labels, raw)], "replication", "seed"} and
    optionally "checked": {point_digest: (spec, jobs)}, the points as validated when the experiment
    was loaded (a point whose raw configuration was changed since, e.g. by a calibration, is
    validated here instead).
    """
    source = task["source"]
    exp_dir = Path(task.get("exp_dir") or ".")
    seed = replication_seed(task["seed"], task["replication"])
    outputs: list[RunOutput] = []
    sim = Simulation(seed)
    system: System | None = None
    checked = task.get("checked") or {}

    earlier: list[list[Any]] = []  # the chain's points run so far on this system (their jobs)
    for index, labels, raw in task["points"]:
        t_cpu = time.process_time()  # the point's CPU, building its system included
        prepared = checked.get(point_digest(raw)) if checked else None
        spec, jobs = prepared if prepared is not None else prepare_point(raw, source, exp_dir)
        jobs = _vary_offsets(jobs, task["replication"])
        if system is None or not task.get("persist"):
            if system is not None:
                sim = Simulation(seed)
            system = System(sim, spec.system, source)
            system_spec = spec.system
            earlier = []
        t_wall = time.perf_counter()
        cb = (lambda f, _i=index: progress(_i, f)) if progress else None
        used: dict[str, Any] = {}
        engine = task.get("engine", "auto")
        try:
            results, sim_s = run_jobs_on(sim, system, jobs, cb, engine=engine, used=used, strict_hand_over=True)
        except HandOver:
            # leaving a held compiled state: the chain so far again in Python on a new system (the
            # compiled points gave the Python model's results; its state is what this point needs)
            sim = Simulation(seed)
            system = System(sim, system_spec, source)
            for prev in earlier:
                run_jobs_on(sim, system, prev, None, engine="python")
            used = {"replayed": len(earlier)}
            results, sim_s = run_jobs_on(sim, system, jobs, cb, engine=engine, used=used)
        earlier.append(jobs)
        wall = time.perf_counter() - t_wall
        cpu = time.process_time() - t_cpu
        doc, row = _document(results, jobs, spec, seed, labels, system, sim_s)
        ios = int(sum(row.get(f"{d}.total_ios", 0) or 0 for d in ("read", "write", "trim")))
        extra = {"cpu_s": cpu, "chain": (task["replication"], task["points"][0][0], len(task["points"])), **used}
        outputs.append(RunOutput(index, task["replication"], seed, labels, doc, row, wall, sim_s, ios, extra))
        if progress:
            progress(index, 1.0)
    return outputs


def core_usage(outputs: list[RunOutput], wall_s: float, workers: int, cores: int) -> str | None:
    """One line for the terminal: how many cores the runs of this invocation kept busy (their CPU
    seconds over the invocation's wall seconds) and, when a ``persist_state`` chain (the points of
    one replication run in order on one simulated system) was the longest task, that critical chain.
    None when no run was executed here (all reused)."""
    ran = [o for o in outputs if "cpu_s" in o.extra]
    if not ran or wall_s <= 0:
        return None
    cpu = sum(o.extra["cpu_s"] for o in ran)
    chains: dict[tuple, list[RunOutput]] = {}
    for o in ran:
        chains.setdefault(tuple(o.extra["chain"]), []).append(o)
    line = (f"cores used: {cpu / wall_s:.2f} of {min(workers, cores)} available to {workers} worker"
            f"{'s' if workers != 1 else ''} ({cpu:.1f} CPU s in {wall_s:.1f} s wall, {cores} cores on the machine)")
    key, runs = max(chains.items(), key=lambda kv: sum(o.wall_s for o in kv[1]))
    if key[2] > 1:
        w = sum(o.wall_s for o in runs)
        line += (f"; critical chain: replication {key[0]}, {len(runs)} points in order on one system (persist_state)"
                 f" {w:.1f} s = {100 * w / wall_s:.0f} % of the wall")
        if workers > 1 and len(chains) < workers:
            line += f"; only {len(chains)} chain{'s' if len(chains) != 1 else ''} to spread over {workers} workers"
    line += engine_usage(ran)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    if load is not None and load > cores:
        line += f"; the machine was busy (load average {load:.1f} on {cores} cores): wall times include waiting"
    return line


def engine_usage(outputs: list[RunOutput]) -> str:
    """The part of :func:`core_usage`'s line that says how many runs the compiled core ran and, for the
    others on RBD images, why not (the three most frequent reasons with their counts); "" when no run
    used or could use it."""
    eng = [o for o in outputs if "engine" in o.extra]
    comp = sum(1 for o in eng if o.extra["engine"] == "compiled")
    whys: dict[str, int] = {}
    for o in eng:
        w = o.extra.get("why")
        if o.extra["engine"] == "python" and w and o.extra.get("rbd") and w != "engine=python was asked for":
            whys[w] = whys.get(w, 0) + 1
    if not comp and not whys:
        return ""
    out = f"; compiled core: {comp} of {len(eng)} runs"
    if whys:
        top = sorted(whys.items(), key=lambda kv: -kv[1])
        out += f"; the Python model ran {sum(whys.values())} RBD runs: " + "; ".join(f"{k}x {w}" for w, k in top[:3])
        if len(top) > 3:
            out += f"; {len(top) - 3} other reasons"
    return out
