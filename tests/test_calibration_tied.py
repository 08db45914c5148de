"""simrun calibrate: tied (derived) parameters, bandwidth metrics, multi-case specs, relative paths."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
import yaml

from simulator.calibration.expr import ExprError, check_expr, eval_expr
from simulator.calibration.spec import load_cases, metric_kind
from simulator.errors import ConfigError

DEV = {"capacity": "1GiB", "flash": {"channels": 4, "chips_per_channel": 2, "block_size": "1MiB"},
       "ftl": {"over_provisioning": 0.28}, "controller": {"plp": True, "ftl_cores": 2}}
JOB = {"ioengine": "psync", "direct": 1, "sync": 1, "rw": "write", "bs": "4k", "iodepth": 1, "numjobs": "{numjobs}",
       "time_based": 0, "number_ios": 400, "runtime": "10s"}


def _truth(ftl_update: float, write_latency: float, numjobs: int) -> dict:
    from simulator.calibration.trace import simulate_options
    from simulator.devices.registry import deep_merge
    from simulator.metrics.summary import summary_row

    params = deep_merge(DEV, {"controller": {"ftl_update": ftl_update, "write_latency": write_latency}})
    system = {"devices": [{"name": "ssd", "kind": "ssd", "params": params}]}
    opts = {**JOB, "numjobs": numjobs}
    return summary_row(simulate_options(system, opts, seed=1))


def _spec(tmp: Path, **extra) -> Path:
    doc = {
        "name": "tied-test",
        "system": {"devices": [{"name": "ssd", "kind": "ssd", "params": DEV}]},
        "free": [{"key": "devices.0.params.controller.ftl_update", "bounds": ["5us", "400us"], "scale": "log"}],
        "tied": [{"key": "devices.0.params.controller.write_latency", "expr": "0.5 * ftl_update"}],
        "targets": [{"csv": "measured.csv", "options": JOB, "metrics": {"MiBps": "write.bw_MiBps", "MBps": "write.bw_MBps"}}],
        "loss": {"metrics": {"bw": 1}, "sigma": 0.01},
        "optimizer": {"global": {"method": "none"}, "local": {"method": "nelder-mead", "step": 0.2, "xatol": 0.0002, "fatol": 1e-7}},
        "budget": {"max_evals": 40},
        "workers": 1,
        "output": {"profile": "out/fitted.yaml", "component": "devices.0", "report": "report"},
        **extra,
    }
    p = tmp / "spec.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


def _measured(tmp: Path, true_ftl: float) -> None:
    with (tmp / "measured.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["numjobs", "MiBps", "MBps"])
        for n in (1, 4):
            row = _truth(true_ftl, 0.5 * true_ftl, n)
            w.writerow([n, f"{row['write.bw_MiBps']:.6g}", f"{row['write.bw_MBps']:.6g}"])


def test_expression_evaluator_is_arithmetic_only():
    assert eval_expr("0.25 * W + max(1, 2) ** 2", {"W": 8.0}) == pytest.approx(6.0)
    assert eval_expr("round(c / 2)", {"c": 5.0}) == 2.0
    check_expr("a * b", {"a", "b"})
    for bad in ("__import__('os').system('x')", "W.real", "W[0]", "lambda: 1", "'a'", "[W]", "W if W else 1",
                "open('f')", "min(W, key=1)", "x == 1"):
        with pytest.raises(ExprError):
            check_expr(bad, {"W"})
    with pytest.raises(ExprError, match="unknown name 'V'"):
        check_expr("V * 2", {"W"})
    with pytest.raises(ExprError):
        eval_expr("W ** 1000", {"W": 10.0})
    with pytest.raises(ExprError):
        eval_expr("1 / (W - W)", {"W": 1.0})


def test_bandwidth_metrics_have_a_kind():
    assert metric_kind("write.bw_MiBps") == "bw"
    assert metric_kind("read.bw_MBps") == "bw"
    assert metric_kind("write.lat_mean_ms") == "lat_mean"
    assert metric_kind("sync.p99_ms") == "p99"
    assert metric_kind("write.bw_GBps") is None
    assert metric_kind("disk.iops") is None


def test_tied_parameter_and_bandwidth_targets_recover_the_truth(tmp_path):
    from simulator.calibration.calibrate import calibrate
    from simulator.calibration.problem import Problem
    from simulator.calibration.spec import load_spec
    from simulator.config.base import get_dotted

    true_ftl = 40e-6
    _measured(tmp_path, true_ftl)
    spec = _spec(tmp_path)
    doc = yaml.safe_load(spec.read_text())
    doc["output"]["exclude"] = ["ftl.over_provisioning"]  # a condition of the measurement, not the device
    spec.write_text(yaml.safe_dump(doc, sort_keys=False))
    prob = Problem(load_spec(spec))
    sysd = prob.system_for({"devices.0.params.controller.ftl_update": 30e-6})
    assert get_dotted(sysd, "devices.0.params.controller.write_latency") == pytest.approx(15e-6)
    o = calibrate(spec, progress=False, date="2026-01-01")
    fitted = o.fit.values["devices.0.params.controller.ftl_update"]
    assert fitted == pytest.approx(true_ftl, rel=0.01)
    # both MiB/s and MB/s columns were in the loss and are matched
    rows = [r for r in o.rows if r["set"] == "fit"]
    assert {r["metric"] for r in rows} == {"write.bw_MiBps", "write.bw_MBps"}
    assert all(abs(r["err_pct"]) < 1.0 for r in rows)
    prof = yaml.safe_load((tmp_path / "out" / "fitted.yaml").read_text())
    wl = prof["params"]["controller"]["write_latency"]
    fu = prof["params"]["controller"]["ftl_update"]
    assert wl.endswith("us") and fu.endswith("us")
    assert float(wl[:-2]) == pytest.approx(0.5 * float(fu[:-2]), rel=1e-3)
    assert "tied" in prof["sources"]["controller.write_latency"]
    assert "over_provisioning" not in prof["params"].get("ftl", {}) and "ftl.over_provisioning" not in prof["sources"]
    assert prof["params"]["flash"]["channels"] == 4  # the rest of the system's parameters are kept
    # paths written into the profile and the report are relative to where those files live
    text = (tmp_path / "out" / "fitted.yaml").read_text() + (tmp_path / "report" / "report.md").read_text()
    assert str(tmp_path) not in text
    assert prof["provenance"]["spec"] == "../spec.yaml"


def test_tied_expression_errors_name_the_field(tmp_path):
    _measured(tmp_path, 40e-6)
    for expr, words in (("0.5 * nosuch", "unknown name 'nosuch'"), ("ftl_update.__class__", "Attribute is not allowed")):
        spec = _spec(tmp_path, tied=[{"key": "devices.0.params.controller.write_latency", "expr": expr}])
        with pytest.raises(ConfigError) as e:
            load_cases(spec)
        assert "tied" in str(e.value) and words in str(e.value) and "spec.yaml" in str(e.value)


def test_cases_fit_separately_and_sum_up(tmp_path):
    from simulator.calibration.calibrate import calibrate_all

    _measured(tmp_path, 40e-6)
    with (tmp_path / "slow.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["numjobs", "MiBps"])
        w.writerow([1, f"{_truth(120e-6, 60e-6, 1)['write.bw_MiBps']:.6g}"])
    spec = _spec(tmp_path, cases=[
        {"name": "fast", "vars": {"table": "measured.csv"}},
        {"name": "slow", "vars": {"table": "slow.csv"}, "set": {"targets.0.metrics": {"MiBps": "write.bw_MiBps"}}},
    ])
    doc = yaml.safe_load(spec.read_text())
    doc["targets"][0]["csv"] = "${table}"
    doc["output"]["profile"] = "out/${table}.yaml"
    spec.write_text(yaml.safe_dump(doc, sort_keys=False))
    outs = calibrate_all(spec, progress=False, date="2026-01-01")
    got = {o.problem.loaded.case: o.fit.values["devices.0.params.controller.ftl_update"] for o in outs}
    assert got["fast"] == pytest.approx(40e-6, rel=0.01)
    assert got["slow"] == pytest.approx(120e-6, rel=0.01)
    assert (tmp_path / "out" / "measured.csv.yaml").is_file() and (tmp_path / "out" / "slow.csv.yaml").is_file()
    summary = (tmp_path / "report" / "report.md").read_text()
    assert "| fast |" in summary and "| slow |" in summary
    assert (tmp_path / "report" / "fast" / "report.md").is_file()
    with pytest.raises(ConfigError, match="no case 'nope'"):
        calibrate_all(spec, cases=["nope"], progress=False)
    # a case variable that does not exist is named
    doc["targets"][0]["csv"] = "${tabel}"
    spec.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ConfigError, match=r"\$\{tabel\}"):
        load_cases(spec)
    assert math.isfinite(got["fast"])


def test_local_stage_per_discrete_choice_finds_the_core_count(tmp_path):
    """Figures from a drive with 2 FTL cores: the local stage refines both core counts and keeps the true one."""
    from simulator.calibration.calibrate import calibrate

    true_ftl = 60e-6
    with (tmp_path / "measured.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["numjobs", "MiBps"])
        for n in (1, 8):
            w.writerow([n, f"{_truth(true_ftl, 0.5 * true_ftl, n)['write.bw_MiBps']:.6g}"])
    spec = _spec(tmp_path, free=[
        {"key": "devices.0.params.controller.ftl_update", "bounds": ["5us", "400us"], "scale": "log"},
        {"key": "devices.0.params.controller.ftl_cores", "choices": [1, 2]},
    ], optimizer={"global": {"method": "sobol", "n": 2}, "local": {"method": "nelder-mead", "step": 0.2, "xatol": 0.0002,
                                                                   "fatol": 1e-7, "per_choice": True}},
        budget={"max_evals": 60})
    doc = yaml.safe_load(spec.read_text())
    doc["targets"][0]["metrics"] = {"MiBps": "write.bw_MiBps"}
    spec.write_text(yaml.safe_dump(doc, sort_keys=False))
    o = calibrate(spec, progress=False, date="2026-01-01")
    assert o.fit.values["devices.0.params.controller.ftl_cores"] == 2
    assert o.fit.values["devices.0.params.controller.ftl_update"] == pytest.approx(true_ftl, rel=0.01)
    local = [h for h in o.fit.history if h["stage"] == "local"]
    assert {h["controller.ftl_cores"] for h in local} == {1, 2}  # both core counts were refined


def test_free_variables_only_feed_tied_expressions(tmp_path):
    from simulator.calibration.problem import Problem
    from simulator.calibration.spec import load_spec
    from simulator.config.base import get_dotted

    _measured(tmp_path, 40e-6)
    spec = _spec(tmp_path, free=[{"key": "var.W", "bounds": ["10us", "1ms"], "scale": "log"},
                                 {"key": "var.s", "bounds": [0.1, 1.0]}],
                 tied=[{"key": "devices.0.params.controller.ftl_update", "expr": "s * W"},
                       {"key": "devices.0.params.controller.write_latency", "expr": "(1 - s) * W"}])
    prob = Problem(load_spec(spec))
    sysd = prob.system_for({"var.W": 100e-6, "var.s": 0.25})
    assert get_dotted(sysd, "devices.0.params.controller.ftl_update") == pytest.approx(25e-6)
    assert get_dotted(sysd, "devices.0.params.controller.write_latency") == pytest.approx(75e-6)
    assert "var" not in sysd and prob.component_of_profile() == "devices.0"
    bad = _spec(tmp_path, tied=[{"key": "var.x", "expr": "2 * ftl_update"}])
    with pytest.raises(ConfigError, match="var"):
        load_cases(bad)
