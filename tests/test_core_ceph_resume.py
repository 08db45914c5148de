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


def _chain(runtime: str, qds: tuple[int, ...], pool: str = "mach2") -> dict:
    """The flagship's random chain on ``pool`` (croit's order: randread, randwrite per QD), fitted
    profile, short runs."""
    exp = load_experiment(ROOT / "experiments" / "mach2_vs_single.yaml",
                          parse_sets([f"workload.global.runtime={runtime}"]))
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
