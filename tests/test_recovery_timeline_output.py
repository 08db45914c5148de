"""``simrun run`` writes the recovery timeline (client latency per second around the failure events) beside
the summary of an experiment whose cluster has failure events, and no such plot for one without events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.ceph.recovery_plot import run_series, write_timeline
from simulator.cli import app

ROOT = Path(__file__).resolve().parents[1]
PNG = b"\x89PNG\r\n\x1a\n"


def _rec(events: list[tuple[float, str]]) -> dict:
    return {"timeline": [[0.0, 10, 1.0, 2.0], [1.0, 12, 1.5, 9.0]],
            "history": [{"t": t, "action": a, "osds": [1]} for t, a in events],
            "episodes": [{"t": 1.0, "t_done": 1.5}]}


def test_write_timeline_plots_only_runs_with_recovery_statistics(tmp_path: Path) -> None:
    plain = ("p000_r00", {"sim": {"labels": {"pool": "plain"}, "cluster": {}}})
    failed = ("p001_r00", {"sim": {"labels": {"pool": "x"}, "cluster": {"recovery": _rec([(0.5, "out")])}}})
    assert write_timeline(tmp_path, [plain]) == []  # no run with events: no plot
    assert not (tmp_path / "recovery_timeline.png").exists()
    [png] = write_timeline(tmp_path, [plain, failed])
    assert png == tmp_path / "recovery_timeline.png" and png.read_bytes()[:8] == PNG
    # the same documents on disk (python -m simulator.ceph.recovery_plot OUT_DIR reads them)
    runs = tmp_path / "runs"
    runs.mkdir()
    for name, doc in (plain, failed):
        (runs / f"{name}.json").write_text(json.dumps(doc))
    (runs / "p001_r00.timing.json").write_text("{}")  # the runner's timing files are not run documents
    series = run_series(tmp_path)
    assert [s[0] for s in series] == ["x"]
    assert series[0][2] == [(0.5, "out"), (1.5, None)]  # the event, then the end of its recovery
    (runs / "p002_r00.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"p002_r00\.json: not a run document"):
        run_series(tmp_path)


def test_simrun_run_writes_the_timeline_of_a_failure_experiment(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, [
        "run", str(ROOT / "experiments/ceph_host_failure.yaml"), "--out", str(tmp_path / "hf"), "--workers", "1", "-q",
        "--set", "workload.global.runtime=12s", "--set", "system.cluster.params.events=[{at: 3s, action: out, host: osdhost3}]",
        "--set", "sweep.axes.pool.values={replicated: {}}",
    ])
    assert res.exit_code == 0, res.output
    png = tmp_path / "hf" / "recovery_timeline.png"
    assert png.read_bytes()[:8] == PNG
    [(label, bins, marks)] = run_series(tmp_path / "hf")
    assert label == "replicated" and len(bins) >= 10
    assert marks[0] == (3.0, "out")
    # the same experiment without events: no timeline
    res = CliRunner().invoke(app, [
        "run", str(ROOT / "experiments/ceph_host_failure.yaml"), "--out", str(tmp_path / "plain"), "--workers", "1", "-q",
        "--set", "workload.global.runtime=2s", "--set", "system.cluster.params.events=[]",
        "--set", "sweep.axes.pool.values={replicated: {}}",
    ])
    assert res.exit_code == 0, res.output
    assert not (tmp_path / "plain" / "recovery_timeline.png").exists()
