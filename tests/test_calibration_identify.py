"""Identifiability: data simulated at known parameters (with the sampling noise of an independent
seed) are calibrated from a distant start, and the parameters come back within stated tolerances.

Fast case: a 2-server FCFS queue with lognormal service times, free = service mean and CV, data =
fio-shaped JSON of 4 KiB randread at QD 1, 2, 4 (3 simulated seconds each, seed 7); calibration
runs with seed 1 (common random numbers across evaluations, independent of the data's noise).

Tolerances: at QD1 one run has ~3000 IOs, so the mean's relative standard error is about
cv/sqrt(n) = 0.6/55 ~ 1 % in the data and again in the simulation: 5 % is > 3 sigma. The CV is
seen through p90/p99 and the queueing at QD 2-4; a p99 from ~3000 samples has a relative error of
~5-8 %, so the CV is asked back within 25 %.

Heavy case: a 7.2K HDD profile with two free parameters (command overhead and average seek) from
working-set means at QD 1 and 4, recovered within 15 % and 0.3 ms.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from simulator.calibration.calibrate import calibrate
from simulator.calibration.trace import run_workload
from simulator.metrics.fiojson import to_fio_json

TRUE_MEAN = 1.0e-3
TRUE_CV = 0.6


def _queue_system(mean: float, cv: float) -> dict:
    return {"devices": [{"name": "q", "kind": "queue",
                         "params": {"servers": 2, "service": {"dist": "lognormal", "mean": mean, "cv": cv}}}]}


def _write_run(path: Path, system: dict, opts: dict, seed: int) -> None:
    job = run_workload(system, {}, [{**opts, "filename": "q"}], seed=seed)
    doc = to_fio_json([job], {}, time_str="now", sim_meta=None)
    doc.pop("sim", None)  # what a real fio run would give: fio's fields only
    path.write_text(json.dumps(doc, default=float))


def _spec(tmp: Path, files: list[str], **extra) -> Path:
    spec = {
        "name": "identify-queue",
        "system": _queue_system(0.3e-3, 1.5),
        "free": [
            {"key": "devices.0.params.service.mean", "bounds": ["0.1ms", "10ms"], "scale": "log"},
            {"key": "devices.0.params.service.cv", "bounds": [0.1, 3.0], "scale": "log"},
        ],
        "targets": [{"files": files}],
        "loss": {"metrics": {"iops": 1.0, "p50": 1.0, "p90": 1.0, "p99": 0.5}},
        "optimizer": {"global": {"method": "sobol", "n": 8}, "local": {"method": "nelder-mead", "step": 0.1, "xatol": 0.003, "fatol": 0.003}},
        "budget": {"max_evals": 50, "max_wall": "5m"},
        "seed": 1,
        "workers": 1,
        "output": {"profile": str(tmp / "fitted.yaml"), "report": str(tmp / "report")},
        **extra,
    }
    p = tmp / "spec.yaml"
    p.write_text(yaml.safe_dump(spec, sort_keys=False))
    return p


def test_queue_parameters_are_recovered(tmp_path):
    truth = _queue_system(TRUE_MEAN, TRUE_CV)
    files = []
    for qd in (1, 2, 4):
        f = tmp_path / f"randread-qd{qd}.json"
        _write_run(f, truth, {"name": f"qd{qd}", "rw": "randread", "bs": "4k", "iodepth": qd, "ioengine": "libaio",
                              "time_based": 1, "runtime": "3s", "direct": 1}, seed=7)
        files.append(f.name)
    out = calibrate(_spec(tmp_path, files), progress=False, date="2000-01-01")
    mean = out.fit.values["devices.0.params.service.mean"]
    cv = out.fit.values["devices.0.params.service.cv"]
    assert abs(mean / TRUE_MEAN - 1.0) < 0.05, mean
    assert abs(cv / TRUE_CV - 1.0) < 0.25, cv
    # started far away and got much better
    assert out.fit.start_result.loss > 20 * out.fit.result.loss
    assert out.fit.result.rms < 0.08
    prof = yaml.safe_load((tmp_path / "fitted.yaml").read_text())
    assert prof["kind"] == "queue"
    assert "fitted by" in prof["sources"]["service.mean"]
    report = (tmp_path / "report" / "report.md").read_text()
    assert "devices.0.params.service.mean" in report and "devices.0.params.service.cv" in report


@pytest.mark.heavy
def test_hdd_overhead_and_settle_are_recovered(tmp_path):
    from simulator.calibration.trace import simulate_options

    base = "hdd/seagate_st91000640ns"
    truth = {"devices": [{"name": "sda", "profile": base,
                          "params": {"interface": {"read_overhead": "0.6ms"}, "seek": {"average": "8.0ms"}}}]}
    rows = ["working_set_GB,iodepth,read.lat_mean_ms"]
    for ws in (1, 10, 100, 1000):
        for qd in (1, 4):
            j = simulate_options(truth, {"rw": "randread", "bs": "8k", "iodepth": qd, "size": f"{ws}GB", "ioengine": "libaio",
                                         "time_based": 1, "runtime": "60s"}, seed=7)
            rows.append(f"{ws},{qd},{j.read.clat.mean_ns / 1e6:.5f}")
    (tmp_path / "t.csv").write_text("\n".join(rows) + "\n")
    spec = {
        "name": "identify-hdd",
        "system": {"devices": [{"name": "sda", "profile": base}]},
        "free": [
            {"key": "devices.0.params.interface.read_overhead", "bounds": ["0.05ms", "2ms"], "scale": "log"},
            {"key": "devices.0.params.seek.average", "bounds": ["6.5ms", "9ms"]},
        ],
        "targets": [{"csv": "t.csv", "options": {"rw": "randread", "bs": "8k", "iodepth": "{iodepth}", "size": "{working_set_GB}GB",
                                                 "ioengine": "libaio", "runtime": "60s"}}],
        "loss": {"metrics": {"lat_mean": 1.0}, "sigma": 0.02},
        "optimizer": {"global": {"method": "sobol", "n": 8}, "local": {"method": "nelder-mead", "xatol": 0.002, "fatol": 0.002}},
        "budget": {"max_evals": 80},
        "workers": 2,
        "output": {"report": str(tmp_path / "rep")},
    }
    p = tmp_path / "spec.yaml"
    p.write_text(yaml.safe_dump(spec))
    out = calibrate(p, progress=False, write_profile_file=False)
    assert abs(out.fit.values["devices.0.params.interface.read_overhead"] / 0.6e-3 - 1) < 0.15
    assert abs(out.fit.values["devices.0.params.seek.average"] - 8.0e-3) < 0.3e-3
