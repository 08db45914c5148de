"""``run_env`` (the engine's event loop: SimPy's ``Environment.step`` inlined) behaves as
``Environment.run``: the same trace of callbacks, the same stop points and the same errors."""

from __future__ import annotations

import pytest
import simpy

from simulator.engine.core import run_env, succeed_at


def _scenario(env: simpy.Environment, trace: list) -> simpy.Event:
    def proc(name: str, dt: float, n: int):
        for i in range(n):
            yield env.timeout(dt)
            trace.append((env.now, name, i))
        return name

    a = env.process(proc("a", 0.3, 5))
    env.process(proc("b", 0.5, 4))
    ev = simpy.Event(env)
    ev.callbacks.append(lambda e: trace.append((env.now, "ev", e.value)))
    succeed_at(env, ev, 0.7, "x")
    return a


@pytest.mark.parametrize("until", [None, 1.0, "event"])
def test_same_trace_as_simpy(until) -> None:
    traces, results, nows = [], [], []
    for runner in (lambda env, u: env.run(until=u), run_env):
        env = simpy.Environment()
        trace: list = []
        a = _scenario(env, trace)
        u = a if until == "event" else until
        results.append(runner(env, u))
        nows.append(env.now)
        # the run resumes where it stopped
        runner(env, None)
        traces.append(trace)
    assert traces[0] == traces[1] and len(traces[0]) == 10
    assert results[0] == results[1] and nows[0] == nows[1]
    if until == "event":
        assert results[1] == "a"


def test_same_errors_as_simpy() -> None:
    for runner in (lambda env, u: env.run(until=u), run_env):
        env = simpy.Environment()
        ev = simpy.Event(env)
        ev.fail(KeyError("boom"))
        with pytest.raises(KeyError, match="boom"):
            runner(env, None)
        env = simpy.Environment()
        with pytest.raises(RuntimeError, match="until"):
            runner(env, simpy.Event(env))
        env = simpy.Environment()
        env.timeout(2.0)
        runner(env, 1.0)
        with pytest.raises(ValueError, match="must be greater"):
            runner(env, 0.5)
