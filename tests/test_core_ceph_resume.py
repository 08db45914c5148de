"""Issue 13, "the drain rule": a persist_state chain of compiled Ceph runs gives the Python chain's
results point by point.

A compiled run stops at its last completion, as the Python runner's ``sim.run(until=done)`` does:
the events queued before the done event (``EV_STOP``) are processed, the background work after it
(kv cycles, deferred writes, the drives' destage of a persistent cache) stays pending in the
compiled heaps. The state stays held (``ceph_fio.Held``) and the next compiled run on the image
resumes it, so its IOs interleave with that work as the Python model's do; the Python objects get
the figures for reporting. A Python run (``Workload.start``) or a fresh build hands the state over
first (drain, write back).

Mutation checked: draining at the end of every compiled run again (``run_workload_ceph(keep=False)``,
the behaviour before held states) fails ``test_the_flagship_chain_equals_the_python_chain`` and
``test_mutation_the_drain_changes_the_chain``.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from simulator.experiment.execute import execute_task
from simulator.experiment.load import load_experiment, parse_sets
from simulator.experiment.runner import plan_tasks

ROOT = Path(__file__).resolve().parents[1]


def _chain(runtime: str, qds: tuple[int, ...], pool: str = "mach2", sets: tuple[str, ...] = ()) -> dict:
    """The flagship's random chain on ``pool`` (croit's order: randread, randwrite per QD), fitted
    profile, short runs; ``sets``: more --set overrides."""
    exp = load_experiment(ROOT / "experiments" / "mach2_vs_single.yaml",
                          parse_sets([f"workload.global.runtime={runtime}", *sets]))
    task = next(t for t in plan_tasks(exp)
                if t["points"][0][1]["mode"] == "random" and t["points"][0][1]["pool"] == pool)
    return {**task, "points": [p for p in task["points"] if p[1]["qd"] in qds]}


def _doc(o) -> str:
    return json.dumps(o.doc, sort_keys=True, default=str)


@pytest.fixture(scope="module")
def python_chain():
    task = _chain("0.5s", (1, 4, 16))
    return task, execute_task({**task, "engine": "python"})


def test_the_flagship_chain_equals_the_python_chain(python_chain):
    """Every point of the MACH.2 random chain (persistent AWC caches that hold dirty data at the end
    of each write run, kv cycles and deferred writes pending) runs compiled, and each point's whole
    fio document (jobs, latency percentiles, the cluster's and every device's statistics) and
    simulated time equal the Python chain's."""
    task, py = python_chain
    auto = execute_task({**task, "engine": "auto"})
    assert [o.extra["engine"] for o in auto] == ["compiled"] * len(auto), [o.extra.get("why") for o in auto]
    for a, b in zip(py, auto, strict=True):
        assert a.sim_s == b.sim_s, a.labels
        assert a.doc["jobs"] == b.doc["jobs"], a.labels
        assert _doc(a) == _doc(b), a.labels


def test_mutation_the_drain_changes_the_chain(python_chain, monkeypatch):
    """The old rule (drain at the end of every compiled run) is what made the chain differ: with it
    reinstated the same chain leaves the Python chain's results (the pending destage of the
    persistent caches and the deferred writes are done before the next run's IOs start)."""
    from simulator.core import ceph_fio

    task, py = python_chain
    monkeypatch.setattr(ceph_fio, "run_workload_ceph", functools.partial(ceph_fio.run_workload_ceph, keep=False))
    drained = execute_task({**task, "engine": "auto"})
    assert [o.extra["engine"] for o in drained] == ["compiled"] * len(drained)
    assert any(_doc(a) != _doc(b) for a, b in zip(py, drained, strict=True))


def _per_point(monkeypatch, plan: dict[tuple[str, int], str]) -> None:
    """Run each point of a chain with the engine ``plan`` names for its (rw, iodepth) (a replay's
    explicit Python runs stay Python)."""
    from simulator.experiment import execute

    orig = execute.run_jobs_on

    def run(sim, system, jobs, progress=None, engine="auto", used=None, **kw):
        if engine != "python":
            engine = plan[(jobs[0].rw, jobs[0].iodepth)]
        return orig(sim, system, jobs, progress, engine=engine, used=used, **kw)

    monkeypatch.setattr(execute, "run_jobs_on", run)


@pytest.mark.parametrize("first", ["auto", "python"])
def test_a_chain_that_alternates_engines_equals_the_python_chain(python_chain, monkeypatch, first):
    """Engines alternating point by point (auto, python, ... or python, auto, ...): a compiled point
    after a Python one runs only if the Python run left nothing pending (else the reason says so);
    a Python point after a compiled one does not start from a drained hand-over: the runner replays
    the chain's earlier points in Python on a new system (``HandOver``). Every document equals the
    Python chain's. (Checked: running the Python point from the drained hand-over instead, i.e.
    ``strict_hand_over=False``, changes the documents from the QD4 read on:
    test_a_drained_hand_over_is_what_the_replay_avoids.)"""
    task, py = python_chain
    other = "python" if first == "auto" else "auto"
    plan = {}
    for i, (_idx, labels, _raw) in enumerate(task["points"]):
        plan[(labels["rw"], labels["qd"])] = first if i % 2 == 0 else other
    _per_point(monkeypatch, plan)
    alt = execute_task({**task, "engine": "auto"})
    engines = [o.extra["engine"] for o in alt]
    assert "compiled" in engines and "python" in engines
    if first == "python":  # the Python QD4 read after the compiled QD1 write replays the chain so far
        assert alt[1].extra["engine"] == "compiled" and alt[2].extra.get("replayed") == 2
    for a, b in zip(py, alt, strict=True):
        assert _doc(a) == _doc(b), (a.labels, b.extra)


def test_a_drained_hand_over_is_what_the_replay_avoids(python_chain, monkeypatch):
    """Without the replay (a Python point starting from the drained hand-over of the held state) the
    chain leaves the Python chain's results: the replay is needed, not decorative."""
    from simulator.experiment import execute

    task, py = python_chain
    # Python reads, compiled writes: a read after a compiled write hands over the write's pending work
    plan = {(labels["rw"], labels["qd"]): ("python" if i % 2 == 0 else "auto")
            for i, (_x, labels, _r) in enumerate(task["points"])}
    _per_point(monkeypatch, plan)
    orig = execute.run_jobs_on
    monkeypatch.setattr(execute, "run_jobs_on", lambda *a, **kw: orig(*a, **{**kw, "strict_hand_over": False}))
    alt = execute_task({**task, "engine": "auto"})
    assert not any("replayed" in o.extra for o in alt)
    assert alt[1].extra["engine"] == "compiled"
    assert any(_doc(a) != _doc(b) for a, b in zip(py, alt, strict=True))


def test_a_resumed_chain_with_startdelay_and_ramp_equals_the_python_chain():
    """A startdelay (the held state's pending work runs up to the job's start) and a ramp_time (the
    statistics restart at the ramp's end, the devices' windows too) in a resumed chain: every
    document equals the Python chain's. (Checked: restarting the devices' windows at the last event
    before the ramp's end, as the fio driver did before, changes every document's device
    utilisations and windows, e.g. 0.4224 vs 0.4046 s.)"""
    task = _chain("0.4s", (1, 4), sets=("workload.global.startdelay=0.01s", "workload.global.ramp_time=0.05s"))
    py = execute_task({**task, "engine": "python"})
    auto = execute_task({**task, "engine": "auto"})
    assert [o.extra["engine"] for o in auto] == ["compiled"] * len(auto)
    for a, b in zip(py, auto, strict=True):
        assert a.sim_s == b.sim_s and _doc(a) == _doc(b), a.labels


def test_direct_callers_hand_the_held_state_over_by_draining(monkeypatch):
    """Outside the experiment runner (run_fio, ``simrun fio``) a Python run after a compiled one on the
    same cluster starts from the drained hand-over: ``Workload.start`` releases the held state, and
    the chain then equals the old drain rule's (compiled first run with ``keep=False``) exactly; a
    fresh build (``build_state``) releases it too. The held state is gone after either."""
    import functools

    from simulator.core import ceph_fio
    from simulator.core.ceph_build import build_state
    from simulator.core.ceph_fio import held_state
    from simulator.workloads.runner import run_fio
    from tests.test_core_ceph_wire import _cluster, _counters, _job, _params

    params = _params(bluestore={"cache": {"buffered_read": False, "buffered_write": False}})
    jobs = [_job(rw="randwrite", iodepth=8, number_ios=600), _job(rw="randread", iodepth=4, number_ios=400)]

    def chain(first_engine: str) -> tuple:
        sim, cl = _cluster(params, 7)
        img = cl.image("p", "img")
        out = [repr(run_fio(sim, [img], jobs[0], engine=first_engine)[0])]
        held = held_state(cl) is not None
        out.append(repr(run_fio(sim, [img], jobs[1], engine="python")[0]))
        assert held_state(cl) is None
        return held, out, _counters(cl), sim.env.now

    kept = chain("auto")
    assert kept[0]  # the compiled run left its state held
    monkeypatch.setattr(ceph_fio, "run_workload_ceph", functools.partial(ceph_fio.run_workload_ceph, keep=False))
    drained = chain("auto")
    assert not drained[0]
    assert kept[1:] == drained[1:]
    monkeypatch.undo()
    sim, cl = _cluster(params, 7)
    run_fio(sim, [cl.image("p", "img")], jobs[0], engine="auto")
    assert held_state(cl) is not None
    build_state(cl, images=[cl.image("p", "img")])
    assert held_state(cl) is None


def _marked_chain(engine: str, size: int, up_again: bool = False) -> tuple[list, list]:
    """Two fio runs on a replicated pool with an OSD marked down between them (Cluster.mark_down; and up
    again before the second run with ``up_again``); the results and whether a compiled state was held
    before and after the mark."""
    from simulator.ceph.cluster import Cluster
    from simulator.core.ceph_fio import held_state
    from simulator.devices.registry import resolve_params
    from simulator.engine import Simulation
    from simulator.workloads.runner import run_fio

    dev = {"kind": "queue", "params": {"capacity": "16GiB", "servers": 1, "service": {"dist": "exponential", "mean": "0.3ms"}}}
    params = {"hosts": [{"name": "h", "count": 3, "cpu": {"cores": 2}, "drives": [{"count": 1, "device": dev}]}],
              "pools": [{"name": "p", "size": size, "min_size": 2, "pg_num": 16}],
              "images": [{"pool": "p", "name": "img", "size": "512MiB"}],
              "osd": {"cost_cv": 0.3}, "block_layer": {"enabled": False}}
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": params})
    sim = Simulation(3)
    cl = Cluster(cfg, "cluster", sim.root)
    img = cl.image("p", "img")
    out, held = [], []
    for n in range(2):
        if n == 1:
            held.append(held_state(cl) is not None)
            cl.mark_down(cl.pools["p"].pgs[0].acting[1].id)
            held.append(held_state(cl) is not None)
            if up_again:
                cl.mark_up(cl.pools["p"].pgs[0].acting[1].id)
        job = {"name": "j", "ioengine": "libaio", "sim_slat": 0, "bs": 4096, "randseed": 3 + n, "rw": "randwrite",
               "iodepth": 8, "time_based": 1, "runtime": "0.2s"}
        res = run_fio(sim, [img], job, engine=engine)
        out.append((repr(res[0]), [(tuple(o.ops), o.subops) for o in cl.osds], sim.env.now))
    return out, held


def test_an_osd_marked_down_between_runs_reaches_the_held_state():
    """Cluster.mark_down between two compiled runs: the held state's OSD and PG rows follow it (before, the
    second run still sent repops to the down OSD), and the chain equals the Python chain."""
    py, _ = _marked_chain("python", 3)
    cc, held = _marked_chain("auto", 3)
    assert held == [True, True]
    assert cc == py
    down = py[1][1]
    assert sum(1 for ops, sub in down if sub == 0 and ops == (0, 0, 0, 0)) == 1  # the down OSD got nothing


def test_an_osd_marked_down_that_blocks_a_pg_hands_the_held_state_over():
    """A PG that would go inactive (size = min_size = 2) cannot stay in the compiled core (blocked IO is Python
    only): the held state is handed over before the OSD goes down (marked up again, the next run is built afresh)."""
    out, held = _marked_chain("auto", 2, up_again=True)
    assert held == [True, False]
    assert out[1][2] > out[0][2]
