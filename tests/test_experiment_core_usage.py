"""The terminal line that says how many cores a run used and which persist_state chain was critical."""

from __future__ import annotations

from simulator.experiment.execute import RunOutput, core_usage


def _out(point: int, rep: int, wall: float, cpu: float, chain: tuple) -> RunOutput:
    return RunOutput(point, rep, 1, {}, {}, {}, wall, 1.0, 10, {"cpu_s": cpu, "chain": chain})


def test_cores_used_is_cpu_over_wall_and_names_the_longest_chain():
    # two chains of a persist_state sweep: replication 0 (3 points, 30 s) and replication 1 (2 points, 12 s)
    outs = [_out(0, 0, 10.0, 9.0, (0, 0, 3)), _out(1, 0, 10.0, 9.0, (0, 0, 3)), _out(2, 0, 10.0, 9.0, (0, 0, 3)),
            _out(0, 1, 6.0, 6.0, (1, 0, 2)), _out(1, 1, 6.0, 6.0, (1, 0, 2))]
    line = core_usage(outs, 30.0, 2, 2)
    assert "cores used: 1.30 of 2" in line  # (27 + 12) CPU s / 30 s wall
    assert "critical chain: replication 0, 3 points" in line and "30.0 s = 100 % of the wall" in line


def test_independent_points_have_no_chain_and_reused_runs_do_not_count():
    outs = [_out(0, 0, 4.0, 4.0, (0, 0, 1)), _out(1, 0, 4.0, 2.0, (0, 1, 1)),
            RunOutput(2, 0, 1, {}, {}, {}, 99.0, 1.0, 10)]  # reused from disk: no CPU figure
    line = core_usage(outs, 4.0, 2, 2)
    assert "cores used: 1.50 of 2" in line and "critical chain" not in line
    assert core_usage([RunOutput(2, 0, 1, {}, {}, {}, 99.0, 1.0, 10)], 4.0, 2, 2) is None
