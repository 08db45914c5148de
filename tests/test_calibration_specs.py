"""Every committed calibration spec loads and checks against its system; the croit refit's second stage
(calibration/croit-mach2/calibrate_local.yaml) starts where its README says: at the screen's best point of
calibrate.yaml, recomputed from that spec's seed, with calibrate.yaml's bounds, scales, step, loss and targets."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.calibration.calibrate import Problem
from simulator.calibration.optimize import Optimizer
from simulator.calibration.spec import load_cases

ROOT = Path(__file__).resolve().parents[1]
SPECS = sorted(p for p in (ROOT / "calibration").rglob("calibrate*.yaml") if ".work" not in p.parent.name)
CROIT = ROOT / "calibration" / "croit-mach2"
SCREEN_BEST = 24  # Sobol point of calibrate.yaml with the screen's lowest loss (README.md: evaluation 25, loss 1260)


def _no_runner(sets):  # pragma: no cover - never called: nothing is simulated here
    raise AssertionError("nothing may be simulated")


@pytest.mark.parametrize("path", SPECS, ids=lambda p: str(p.relative_to(ROOT)))
def test_spec_loads_and_checks(path: Path) -> None:
    for case in load_cases(path):
        Problem(case)


def test_there_are_specs() -> None:
    assert len(SPECS) >= 10


def _opt(path: Path) -> Optimizer:
    return Optimizer(Problem(load_cases(path)[0]), _no_runner)


def test_croit_local_stage_starts_at_the_screens_best_point() -> None:
    screen, local = _opt(CROIT / "calibrate.yaml"), _opt(CROIT / "calibrate_local.yaml")
    g = screen.spec.optimizer.global_
    pts = screen.screen_points(g.method, g.n, screen.spec.seed)
    assert len(pts) == g.n
    best = pts[SCREEN_BEST - 1]
    start = local.start_values()
    # the continuous parameters: the same keys, bounds and scales, started at the screen's point
    assert [f.key for f in local.cont] == [f.key for f in screen.cont]
    for a, b in zip(local.cont, screen.cont, strict=True):
        assert (a.lo_hi(), a.scale, a.integer) == (b.lo_hi(), b.scale, b.integer)
        assert start[a.key] == pytest.approx(best[a.key], rel=1e-12)
    # the screen's discrete parameters are fixed at that point's values
    fixed = local.spec.fixed
    for f in screen.disc:
        assert f.key not in {x.key for x in local.cont + local.disc}
        assert fixed[f.key] == best[f.key], f.key
    # the same objective and local stage
    assert local.spec.loss == screen.spec.loss
    assert local.spec.targets == screen.spec.targets
    assert local.spec.optimizer.local.step == screen.spec.optimizer.local.step
    assert local.spec.optimizer.local.method == screen.spec.optimizer.local.method


def test_screen_points_are_a_function_of_the_seed() -> None:
    screen = _opt(CROIT / "calibrate.yaml")
    a = screen.screen_points("sobol", 8, 1)
    assert a == screen.screen_points("sobol", 8, 1)
    assert a != screen.screen_points("sobol", 8, 2)
    for v in a:
        for f in screen.cont:
            lo, hi = f.lo_hi()
            assert lo <= v[f.key] <= hi
        for f in screen.disc:
            assert v[f.key] in f.choices


def test_croit_local2_restarts_where_the_identifiability_check_found_a_lower_loss():
    """calibrate_local2.yaml starts at calibrate_local.yaml's fit (the best evaluation of its committed journal, the fit
    installed before local2's replaced it) with the CPU speed of report/identify.md's lower neighbour (u0 - step),
    buffered writes fixed on, the MACH.2 destage window at the drive profile's class default and BlueFS's log write
    off (that fit's model), and writes its own report and profile."""
    import csv
    import json

    from simulator.calibration.problem import Problem
    from simulator.calibration.spec import load_spec

    loaded = load_spec(CROIT / "calibrate_local2.yaml")
    prob = Problem(loaded)
    from simulator.devices.registry import load_profile

    new = {"cluster.params.hosts.0.drives.0.device.params.cache.destage_window",
           "cluster.params.bluestore.bluefs_log_write"}
    lines = (CROIT / "journal" / "croit-mach2-local@8ff6fba.jsonl").read_text().splitlines()[1:]
    evals = [e for e in map(json.loads, lines) if e.get("kind") == "eval"]
    installed = min(evals, key=lambda e: e["loss"])["values"]  # calibrate_local.yaml's fit: loss 825.4
    assert min(e["loss"] for e in evals) == pytest.approx(825.37, abs=0.01)
    old_params = [f for f in prob.params if f.key not in new]
    assert prob.base_values["cluster.params.bluestore.bluefs_log_write"] in (None, False)
    ident = {r["key"]: r for r in csv.DictReader((CROIT / "report" / "identify.csv").open())}
    for f in old_params:
        start = f.to_value(f.to_unit(float(f.start)))
        if f.key.endswith("cpu.speed"):
            u_lower = float(ident[f.key]["u_points"].split()[1])
            assert float(ident[f.key]["losses"].split()[1]) < float(ident[f.key]["loss_fitted"])
            assert f.to_unit(start) == pytest.approx(u_lower, abs=1e-4)
        else:
            want = float(installed[f.key])  # the journal keeps an integer parameter's value unrounded
            assert start == pytest.approx(round(want) if f.integer else want, rel=1e-6), f.key
    assert loaded.spec.fixed["cluster.params.bluestore.cache.buffered_write"] is True
    dw = next(f for f in prob.params if f.key.endswith("destage_window"))
    assert float(dw.start) == load_profile("hdd/seagate_exos_2x14")["params"]["cache"]["destage_window"]
    assert loaded.spec.output.report == "report2" and loaded.spec.output.profile != "clusters/croit_mach2_fitted"
