"""``simrun calibrate --identify``: the loss around an installed fit, one parameter at a time
(simulator/calibration/identify.py). Oracle: for a 2-server queue at QD1 the mean latency is the service mean and
IOPS its inverse, so with the service mean on a log scale the loss ½ Σ w (ln ratio / σ)² has the exact curvature
(w_iops + w_lat) · ln(hi/lo)² / σ² in the unit coordinate, whatever the data; the service-time CV does not move a
QD1 mean (only the sample), and neither does the number of servers (one IO at a time)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import yaml
from typer.testing import CliRunner

from simulator.cli import app

runner = CliRunner()
SIGMA = 0.1


def _setup(tmp: Path, with_profile: bool = True) -> Path:
    (tmp / "t.csv").write_text("qd,read.iops,read.lat_mean_ms\n1,1000,1.0\n")
    spec = {
        "name": "ident",
        "system": {"devices": [{"name": "q", "kind": "queue",
                                "params": {"servers": 2, "service": {"dist": "lognormal", "mean": "1ms", "cv": 0.5}}}]},
        "free": [{"key": "devices.0.params.service.mean", "bounds": ["0.3ms", "3ms"], "scale": "log", "label": "mean"},
                 {"key": "devices.0.params.service.cv", "bounds": [0.2, 1.0], "label": "cv"},
                 {"key": "devices.0.params.servers", "choices": [2, 1], "label": "servers"}],
        "targets": [{"csv": "t.csv", "options": {"rw": "randread", "bs": "4k", "iodepth": "{qd}", "ioengine": "libaio"}}],
        "loss": {"metrics": {"iops": 1.0, "lat_mean": 1.0}, "sigma": SIGMA},
        "optimizer": {"global": {"method": "none"}, "local": {"method": "nelder-mead"}},
        "budget": {"max_evals": 3},
        "runtime": "2s",
        "workers": 1,
        "output": {"profile": str(tmp / "prof.yaml"), "report": str(tmp / "rep")},
    }
    p = tmp / "spec.yaml"
    p.write_text(yaml.safe_dump(spec, sort_keys=False))
    if with_profile:  # the installed fit: the true values
        (tmp / "prof.yaml").write_text(yaml.safe_dump({"kind": "queue", "name": "fitted", "params": {
            "servers": 2, "service": {"dist": "lognormal", "mean": "1ms", "cv": 0.5}}}))
    return p


def test_identify_recovers_the_analytic_curvature_and_flags_what_cannot_matter(tmp_path):
    spec = _setup(tmp_path)
    r = runner.invoke(app, ["calibrate", str(spec), "--identify", "--step", "0.05"])
    assert r.exit_code == 0, r.output
    assert "6/6 evaluations" in r.output  # progress of the batch (1 + 2 x 2 continuous + 1 other choice)
    rows = {row["name"]: row for row in csv.DictReader((tmp_path / "rep" / "identify.csv").open())}
    assert set(rows) == {"mean", "cv", "servers"}
    exact = 2 * math.log(10.0) ** 2 / SIGMA**2  # iops and lat_mean, weight 1 each
    c = float(rows["mean"]["curvature"])
    assert abs(c / exact - 1) < 0.1, (c, exact)
    assert rows["mean"]["verdict"] == "identified"
    assert rows["mean"]["interval_lo"].endswith(("us", "ms")) and rows["mean"]["interval_hi"].endswith(("us", "ms"))
    assert rows["cv"]["verdict"].startswith("not identified")  # a QD1 mean does not depend on the CV (interval > the range)
    alt = dict(a.split("=") for a in rows["servers"]["alternatives"].split("; "))
    loss0 = float(rows["servers"]["loss_fitted"])
    assert abs(float(alt["1"]) - loss0) <= 1e-9 + 1e-6 * abs(loss0)  # one IO at a time: 1 or 2 servers alike
    md = (tmp_path / "rep" / "identify.md").read_text()
    assert "| `mean` |" in md and "**identified**" in md and "servers" in md
    assert not (tmp_path / "rep.work").exists()  # no journal: nothing was fitted


def test_identify_interval_width_matches_the_curvature(tmp_path):
    from simulator.calibration.calibrate import identify_all

    spec = _setup(tmp_path)
    ((ident, prob, _),) = identify_all(spec, workers=1, step=0.05)
    p = next(x for x in ident.params if x.name == "mean")
    f = next(x for x in prob.params if x.label == "mean")
    assert ident.rms0 < SIGMA  # the data are the model at the fit: no inflation
    su = 1 / math.sqrt(p.curvature)
    assert abs(p.sigma_u - su) < 1e-12
    u0 = f.to_unit(1e-3)
    assert abs(f.to_unit(p.interval[0]) - (u0 - su)) < 1e-9 and abs(f.to_unit(p.interval[1]) - (u0 + su)) < 1e-9


def test_identify_refuses_without_a_fitted_profile_or_with_a_bad_step(tmp_path):
    spec = _setup(tmp_path, with_profile=False)
    r = runner.invoke(app, ["calibrate", str(spec), "--identify"])
    assert r.exit_code == 2 and "output.profile" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "rep").exists()
    (tmp_path / "prof.yaml").write_text("kind: queue\nname: x\nparams: {servers: 2}\n")
    r = runner.invoke(app, ["calibrate", str(spec), "--identify"])
    assert r.exit_code == 2 and "no value for devices.0.params.service.mean" in r.output
    r = runner.invoke(app, ["calibrate", str(spec), "--identify", "--step", "0.5"])
    assert r.exit_code == 2 and "--step" in r.output
    assert not (tmp_path / "rep").exists()


def test_neighbours_stay_in_the_search_range():
    from simulator.calibration.identify import _curvature, _neighbours

    assert _neighbours(0.5, 0.1) == (0.4, 0.6)
    a, b = _neighbours(0.02, 0.05)
    assert abs(a - 0.07) < 1e-12 and abs(b - 0.12) < 1e-12  # one-sided, away from the bound
    a, b = _neighbours(1.0, 0.05)
    assert abs(a - 0.95) < 1e-12 and abs(b - 0.9) < 1e-12
    # the parabola through three points: L = 3 (u - 0.3)^2 + 1 has curvature 6 from any three points
    f = lambda u: 3 * (u - 0.3) ** 2 + 1  # noqa: E731
    assert abs(_curvature([(0.1, f(0.1)), (0.5, f(0.5)), (0.2, f(0.2))]) - 6) < 1e-9


def test_ctrl_c_during_identify_exits_130_and_writes_nothing(tmp_path, monkeypatch):
    import simulator.calibration.problem as problem

    spec = _setup(tmp_path)

    def interrupted(unit):
        raise KeyboardInterrupt

    monkeypatch.setattr(problem, "run_unit", interrupted)
    r = runner.invoke(app, ["calibrate", str(spec), "--identify", "--workers", "1", "--quiet"])
    assert r.exit_code == 130 and "wrote nothing" in r.output
    assert not (tmp_path / "rep").exists()


def test_verdict_notes_a_fit_that_is_no_minimum_and_a_threshold():
    """The croit fit's CPU speed (a neighbour with a lower loss) and its cache sizes (one side rising 16-19x the other)
    get a note; a smooth, symmetric minimum gets none."""
    from simulator.calibration.identify import _verdict

    v, su = _verdict([(0.7055, 825.4), (0.6555, 800.7), (0.7555, 845.5)], 5.04)
    assert v.startswith("not identified") and "not at a minimum: loss 800.7 at u 0.65" in v and su is None
    v, su = _verdict([(0.4487, 825.4), (0.3987, 1233.5), (0.4987, 850.0)], 5.04)
    assert v.startswith("identified") and "threshold" in v and su is not None
    v, su = _verdict([(0.5, 10.0), (0.45, 12.0), (0.55, 12.5)], 1.0)
    assert v == "identified" and abs(su - 1 / math.sqrt(_c([(0.5, 10.0), (0.45, 12.0), (0.55, 12.5)]))) < 1e-12


def _c(pts):
    from simulator.calibration.identify import _curvature

    return _curvature(pts)
