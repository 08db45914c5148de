"""Calibration layer: workload reconstruction, compare, CSV targets, spec validation, CLI end to end."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from simulator.calibration.problem import Problem
from simulator.calibration.spec import load_spec, metric_kind, quantity
from simulator.calibration.trace import jobs_of_run, run_workload, simulate_trace
from simulator.cli import app
from simulator.errors import ConfigError
from simulator.fio.reader import read_fio
from simulator.metrics.compare import compare
from simulator.metrics.fiojson import to_fio_json

ROOT = Path(__file__).resolve().parents[1]
LOCAL = ROOT / "calibration" / "local-disk" / "runs" / "dev-vm-20261122"
QUEUE = {"devices": [{"name": "q", "kind": "queue", "params": {"servers": 2, "service": {"dist": "lognormal", "mean": "1ms", "cv": 0.7}}}]}
runner = CliRunner()


def _simulated_json(path: Path, opts: dict, seed: int = 3, system: dict = QUEUE, keep_sim: bool = False) -> Path:
    job = run_workload(system, {}, [{"filename": "q", **opts}], seed=seed)
    doc = to_fio_json([job], {}, time_str="now", sim_meta=None)
    if not keep_sim:
        doc.pop("sim", None)
    path.write_text(json.dumps(doc, default=float))
    return path


# ------------------------------------------------------------------------------------ reconstruction
def test_simulated_run_replayed_compares_to_itself(tmp_path):
    """A run written by the simulator, reconstructed from its fio options and simulated again with the
    same system and seed, is the same run: compare() gives ~0 error and ~0 demerit."""
    f = _simulated_json(tmp_path / "r.json", {"name": "r", "rw": "randread", "bs": "4k", "iodepth": 4, "ioengine": "libaio",
                                              "time_based": 1, "runtime": "2s", "direct": 1}, seed=3)
    run = read_fio(f)
    sim = simulate_trace(run, QUEUE, seed=3)
    c = compare(sim.read, run.merged().read)
    assert abs(c["iops_err_pct"]) < 0.01
    for k in ("mean_log_ratio", "p50_log_ratio", "p99_log_ratio", "p99.9_log_ratio"):
        assert abs(c[k]) < 2e-3, (k, c[k])  # fio's JSON rounds latencies to ns and percentiles to HDR buckets
    assert c["demerit_pct"] < 0.5
    # and a different seed is a different sample of the same system: small but non-zero differences
    other = compare(simulate_trace(run, QUEUE, seed=4).read, run.merged().read)
    assert 0 < abs(other["iops_err_pct"]) < 10


def test_reconstruction_rules_on_a_real_fio_run():
    run = read_fio(LOCAL / "syncwrite-j4.json")
    _, jobs = jobs_of_run(run, device="vda", runtime=0.5)
    (j,) = jobs
    assert j["filename"] == "vda"  # the measured file maps to the one device
    assert j["time_based"] == "1"  # fio's JSON omits the flag; the run lasted its runtime
    assert j["group_reporting"] == "1" and j["numjobs"] == "4"
    assert j["runtime"] == "0.5s"
    assert float(j["ramp_time"].removesuffix("s")) == pytest.approx(2 * 0.5 / 10)  # ramp shortened alike
    # never longer than measured
    _, jobs = jobs_of_run(run, device="vda", runtime=100.0)
    assert jobs[0]["runtime"] == "10"
    with pytest.raises(ConfigError) as e:
        jobs_of_run(run, device=None)
    assert e.value.source.endswith("syncwrite-j4.json") and e.value.field == "filename"


def test_rbd_run_needs_a_cluster_and_unsupported_options_are_errors(tmp_path):
    doc = json.loads((LOCAL / "randread-qd1.json").read_text())
    doc["jobs"][0]["job options"].update({"ioengine": "rbd", "pool": "p", "rbdname": "img", "clustername": "ceph"})
    f = tmp_path / "rbd.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as e:
        jobs_of_run(read_fio(f), device="vda")
    assert "Ceph cluster" in e.value.message and e.value.field == "ioengine"
    _, jobs = jobs_of_run(read_fio(f), has_cluster=True)
    assert "filename" not in jobs[0] and "clustername" not in jobs[0]  # dropped: one cluster is simulated
    doc["jobs"][0]["job options"].update({"ioengine": "libaio", "rate_min": "10"})  # still unsupported
    f.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as e:
        jobs_of_run(read_fio(f), device="vda")
    assert e.value.field == "rate_min" and str(f) == e.value.source


# ------------------------------------------------------------------------------------ spec
def _write(tmp: Path, spec: dict, name: str = "spec.yaml") -> Path:
    p = tmp / name
    p.write_text(yaml.safe_dump(spec, sort_keys=False))
    return p


def _tiny(tmp: Path, **over) -> dict:
    (tmp / "t.csv").write_text("# a published table\nqd,read.iops,read.lat_mean_ms,read.p99_ms\n1,900,1.1,\n4,1700,2.3,9.0\n8,,,\n")
    spec = {
        "name": "tiny",
        "system": QUEUE,
        "free": [{"key": "devices.0.params.service.mean", "bounds": ["0.3ms", "3ms"], "scale": "log"}],
        "targets": [{"csv": "t.csv", "options": {"rw": "randread", "bs": "4k", "iodepth": "{qd}", "ioengine": "libaio"}}],
        "loss": {"metrics": {"iops": 1.0, "lat_mean": 1.0, "p99": 0.5}},
        "optimizer": {"global": {"method": "sobol", "n": 4}, "local": {"method": "nelder-mead"}},
        "budget": {"max_evals": 12},
        "runtime": "1s",
        "workers": 1,
        "output": {"profile": str(tmp / "prof.yaml"), "report": str(tmp / "rep")},
    }
    spec.update(over)
    return spec


def test_csv_target_adapter(tmp_path):
    prob = Problem(load_spec(_write(tmp_path, _tiny(tmp_path))))
    assert [it.label for it in prob.items] == ["t:qd=1", "t:qd=4"]  # the empty row (kept aside) is not a target
    a, b = prob.items
    assert a.options["iodepth"] == "1" and b.options["iodepth"] == "4"
    assert a.options["runtime"] == "1s" and a.options["time_based"] == 1
    assert a.measured == {"read.iops": 900.0, "read.lat_mean_ms": 1.1}  # empty p99 cell is not fitted
    assert b.measured["read.p99_ms"] == 9.0
    # scoring: log ratios, clipped, weighted
    res = prob.score(prob.mid_values(), {0: {"read.iops": 900.0, "read.lat_mean_ms": 1.1 * math.e}, 1: {}})
    lr = {(r["item"], r["metric"]): r["log_ratio"] for r in res.residuals}
    assert lr[("t:qd=1", "read.iops")] == 0.0 and lr[("t:qd=1", "read.lat_mean_ms")] == pytest.approx(1.0)
    assert math.isnan(lr[("t:qd=4", "read.iops")])  # missing simulated figure: clipped penalty
    expected = 0.5 * (1.0 / 0.1) ** 2 + 0.5 * (2 * 3.0**2 + 0.5 * 3.0**2) / 0.1**2
    assert res.data == pytest.approx(expected)
    # filter and metrics mapping, and a column that does not exist
    spec = _tiny(tmp_path, targets=[{"csv": "t.csv", "filter": {"qd": 4}, "metrics": {"read.p99_ms": "read.p99_ms"},
                                     "options": {"rw": "randread", "iodepth": "{qd}"}}])
    spec["loss"] = {"metrics": {"p99": 1.0}}
    prob = Problem(load_spec(_write(tmp_path, spec)))
    assert len(prob.items) == 1 and prob.items[0].measured == {"read.p99_ms": 9.0}
    spec["targets"][0]["filter"] = {"nope": 1}
    with pytest.raises(ConfigError) as e:
        Problem(load_spec(_write(tmp_path, spec)))
    assert "nope" in e.value.message and e.value.field == "targets.0"
    spec["targets"][0]["filter"] = {}
    spec["targets"][0]["options"] = {"rw": "randread", "iodepth": "{depth}"}
    with pytest.raises(ConfigError) as e:
        Problem(load_spec(_write(tmp_path, spec)))
    assert "depth" in e.value.message and e.value.field == "targets.0.options.iodepth"


def test_csv_target_on_an_experiment_matches_sweep_points(tmp_path):
    exp = {
        "name": "e", "system": QUEUE,
        "workload": {"global": {"rw": "randread", "bs": "4k", "ioengine": "libaio", "time_based": 1, "runtime": "1s", "filename": "q"},
                     "jobs": [{"name": "j"}]},
        "sweep": {"persist_state": True, "axes": {"qd": {"key": "workload.global.iodepth", "values": [1, 2, 4]}}},
    }
    _write(tmp_path, exp, "exp.yaml")
    (tmp_path / "m.csv").write_text("qd,read.iops,read.p50_ms,read.p1_ms,read.p90_ms\n1,800,1.2,0.2,2.5\n4,1500,2.2,0.3,6\n")
    spec = {"name": "s", "experiment": "exp.yaml", "free": [{"key": "devices.0.params.service.mean", "bounds": ["0.3ms", "3ms"]}],
            "targets": [{"csv": "m.csv", "match": {"qd": "qd"}}], "workers": 1,
            "loss": {"metrics": {"iops": 1.0, "p50": 1.0}}}
    prob = Problem(load_spec(_write(tmp_path, spec)))
    assert [it.labels for it in prob.items] == [{"qd": "1"}, {"qd": "4"}]
    assert set(prob.items[0].measured) == {"read.iops", "read.p50_ms", "read.p90_ms"}  # p1 is no loss metric
    assert prob.items[0].percentiles("read") == {"1.000000": 0.2e6, "50.000000": 1.2e6, "90.000000": 2.5e6}
    units = prob.units(prob.mid_values())
    assert len(units) == 1 and len(units[0]["task"]["points"]) == 3  # one persistent sequence
    from simulator.calibration.problem import make_runner

    res = prob.evaluate_many([prob.mid_values()], make_runner(None))[0]
    assert res.failed is None and math.isfinite(res.loss) and set(res.rows) == {0, 1}
    (tmp_path / "m.csv").write_text("qd,read.iops\n3,800\n")
    with pytest.raises(ConfigError) as e:
        Problem(load_spec(_write(tmp_path, spec)))
    assert "matches 0 points" in e.value.message and e.value.field == "targets.0.match"


@pytest.mark.parametrize(
    ("mutate", "field", "text"),
    [
        (lambda s: s.update(bogus=1), "bogus", "unknown key"),
        (lambda s: s["free"][0].update(bounds=["3ms", "0.3ms"]), "free.0.bounds", "reversed"),
        (lambda s: s["free"][0].update(bounds=["1ms", "4KiB"]), "free.0.bounds", "units"),
        (lambda s: s["free"][0].update(choices=[1, 2]), "free.0", "either bounds"),
        (lambda s: s["free"][0].update(key="service.mean"), "free.0.key", "devices"),
        (lambda s: s["free"][0].update(scale="log", bounds=[0, 1]), "free.0", "lo > 0"),
        (lambda s: s.update(loss={"metrics": {"p42": 1.0}}), "loss.metrics", "unknown loss metric"),
        (lambda s: s.update(experiment="x.yaml"), None, "either system"),
        (lambda s: s["targets"][0].update(files="*.json"), "targets.0", "either files"),
    ],
)
def test_spec_errors_name_file_and_field(tmp_path, mutate, field, text):
    spec = _tiny(tmp_path)
    mutate(spec)
    p = _write(tmp_path, spec)
    with pytest.raises(ConfigError) as e:
        Problem(load_spec(p))
    assert e.value.source == str(p)
    if field:
        assert e.value.field == field, e.value
    assert text in e.value.message


def test_deep_spec_errors(tmp_path):
    spec = _tiny(tmp_path)
    spec["free"][0]["key"] = "devices.0.params.servers"
    spec["free"][0]["bounds"] = [-3, -1]
    spec["free"][0]["scale"] = "linear"
    with pytest.raises(ConfigError) as e:  # the mid point is validated by the device kind before anything runs
        Problem(load_spec(_write(tmp_path, spec)))
    assert "servers" in str(e.value)
    spec = _tiny(tmp_path, targets=[{"files": "nothing-*.json"}])
    with pytest.raises(ConfigError) as e:
        Problem(load_spec(_write(tmp_path, spec)))
    assert e.value.field == "targets.0.files"
    spec = _tiny(tmp_path)
    spec["loss"] = {"metrics": {"p50": 1.0}}  # the table has no p50
    with pytest.raises(ConfigError) as e:
        Problem(load_spec(_write(tmp_path, spec)))
    assert "none of the loss metrics" in e.value.message


def test_quantities_and_metric_names():
    assert quantity("50us") == (pytest.approx(50e-6), "time")
    assert quantity("1m")[1] == "time" and quantity("64MiB") == (64 * 2**20, "size")
    assert quantity("10Gbit/s")[1] == "rate" and quantity(3) == (3.0, "number")
    assert metric_kind("read.p99.9_ms") == "p99.9" and metric_kind("write.lat_mean_ms") == "lat_mean"
    assert metric_kind("read.iops") == "iops" and metric_kind("qd") is None


# ------------------------------------------------------------------------------------ CLI
def test_calibrate_cli_end_to_end(tmp_path):
    p = _write(tmp_path, _tiny(tmp_path))
    r = runner.invoke(app, ["calibrate", str(p), "--quiet"])
    assert r.exit_code == 0, r.output
    prof = yaml.safe_load((tmp_path / "prof.yaml").read_text())
    assert prof["kind"] == "queue" and "extends" not in prof
    src = prof["sources"]["service.mean"]
    assert src.startswith("fitted by ") and "t.csv" in src and "loss" in src and "simulator" in src
    assert prof["provenance"]["evaluations"] <= 12 and prof["provenance"]["loss"] <= prof["provenance"]["start_loss"]
    from simulator.devices.registry import load_profile, resolve_params

    resolve_params({"profile": str(tmp_path / "prof.yaml")})
    assert load_profile(str(tmp_path / "prof.yaml"))["kind"] == "queue"
    rep = tmp_path / "rep"
    assert "service.mean" in (rep / "report.md").read_text()
    # the report's tables hold what was fitted, not just files that exist
    import csv

    def table(name: str) -> list[dict[str, str]]:
        with (rep / name).open(newline="") as f:
            return list(csv.DictReader(f))

    history = table("history.csv")
    assert len(history) == prof["provenance"]["evaluations"]
    assert float(history[0]["loss"]) == pytest.approx(prof["provenance"]["start_loss"], rel=1e-3)
    assert min(float(h["loss"]) for h in history) == pytest.approx(prof["provenance"]["loss"], rel=1e-3)
    params = table("params.csv")
    assert [p["key"] for p in params] == ["devices.0.params.service.mean"]
    fitted_s = float(params[0]["fitted"])
    assert 0.3e-3 <= fitted_s <= 3e-3  # inside its bounds
    assert fitted_s == pytest.approx(float(prof["params"]["service"]["mean"].removesuffix("ms")) / 1000, rel=1e-3)
    fit = table("fit.csv")
    assert {r["metric"] for r in fit} >= {"read.iops", "read.lat_mean_ms"}
    for r in fit:
        if r["measured"] and r["simulated"]:
            assert float(r["err_pct"]) == pytest.approx(100 * (float(r["simulated"]) / float(r["measured"]) - 1), abs=0.01)
    assert len(table("points.csv")) == 2  # the two rows of t.csv
    png = (rep / "residuals.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_calibrate_profile_extends_base_profile(tmp_path, monkeypatch):
    models = tmp_path / "models"
    shutil.copytree(ROOT / "models" / "hdd", models / "hdd")
    monkeypatch.setenv("SIMRUN_MODELS", str(models))
    (tmp_path / "t.csv").write_text("ws,read.lat_mean_ms\n1,5.5\n")
    spec = {"name": "hdd-tiny", "system": {"devices": [{"name": "sda", "profile": "hdd/seagate_st91000640ns",
                                                         "params": {"queue": {"depth": 4}}}]},
            "free": [{"key": "devices.0.params.interface.read_overhead", "bounds": ["0.1ms", "1ms"]}],
            "targets": [{"csv": "t.csv", "options": {"rw": "randread", "bs": "8k", "size": "{ws}GB", "runtime": "2s"}}],
            "loss": {"metrics": {"lat_mean": 1.0}}, "optimizer": {"global": {"method": "none"}, "local": {"method": "nelder-mead"}},
            "budget": {"max_evals": 5}, "workers": 1,
            "output": {"profile": "hdd/tiny_fitted", "report": "rep", "sources": {"queue.depth": "because"}}}
    p = _write(tmp_path, spec)
    r = runner.invoke(app, ["calibrate", str(p), "--quiet"])
    assert r.exit_code == 0, r.output
    prof = yaml.safe_load((models / "hdd" / "tiny_fitted.yaml").read_text())
    assert prof["extends"] == "hdd/seagate_st91000640ns"
    assert set(prof["params"]) == {"interface", "queue"}  # only what differs from the base
    assert prof["sources"]["queue.depth"] == "because"
    assert prof["params"]["interface"]["read_overhead"].endswith("us")


def test_bad_spec_exit_2_and_nothing_written(tmp_path):
    spec = _tiny(tmp_path)
    spec["free"][0]["bounds"] = ["3ms", "0.3ms"]
    p = _write(tmp_path, spec)
    r = runner.invoke(app, ["calibrate", str(p), "--quiet"])
    assert r.exit_code == 2
    assert "free.0.bounds" in r.output and str(p) in r.output
    assert not (tmp_path / "rep").exists() and not (tmp_path / "prof.yaml").exists()
    r = runner.invoke(app, ["calibrate", str(tmp_path / "missing.yaml")])
    assert r.exit_code == 2 and "not found" in r.output


def test_compare_cli(tmp_path):
    f1 = _simulated_json(tmp_path / "qd1.json", {"name": "a", "rw": "randread", "bs": "4k", "iodepth": 1, "ioengine": "libaio",
                                                 "time_based": 1, "runtime": "1s"})
    _simulated_json(tmp_path / "qd4.json", {"name": "b", "rw": "randread", "bs": "4k", "iodepth": 4, "ioengine": "libaio",
                                            "time_based": 1, "runtime": "1s"})
    exp = {"name": "e", "system": QUEUE, "workload": {"jobs": [{"name": "j"}]}}
    e = _write(tmp_path, exp, "exp.yaml")
    out = tmp_path / "cmp"
    r = runner.invoke(app, ["compare", str(e), str(f1), str(tmp_path / "qd4.json"), "--out", str(out), "--workers", "1"])
    assert r.exit_code == 0, r.output
    rows = (out / "compare.csv").read_text().splitlines()
    assert len(rows) == 3 and "demerit_pct" in rows[0]
    for png in [out / "hdr_qd1_read.png", *out.glob("iops_vs_qd_*.png")]:
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, png  # a real, non-empty image
    assert len(list(out.glob("iops_vs_qd_*.png"))) >= 1
    r = runner.invoke(app, ["compare", "hdd/nope", str(f1)])
    assert r.exit_code == 2 and "nope" in r.output
    r = runner.invoke(app, ["compare", str(e), str(tmp_path / "none-*.json")])
    assert r.exit_code == 2 and "no files match" in r.output


def test_measure_without_fio_exits_2(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    r = runner.invoke(app, ["measure", "--out", str(tmp_path / "m")])
    assert r.exit_code == 2 and "fio not found" in r.output
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(("glob", "local"), [("de", "powell"), ("lhs", "nelder-mead"), ("none", "none")])
def test_optimizer_stages_and_budget(tmp_path, glob, local):
    from simulator.calibration.optimize import Optimizer
    from simulator.calibration.problem import make_runner

    spec = _tiny(tmp_path, optimizer={"global": {"method": glob, "n": 3, "maxiter": 1}, "local": {"method": local}},
                 budget={"max_evals": 9})
    spec["free"].append({"key": "devices.0.params.servers", "choices": [1, 2, 4]})
    prob = Problem(load_spec(_write(tmp_path, spec)))
    seen = []
    fit = Optimizer(prob, make_runner(None), seen.append).run()
    assert 1 <= fit.evals <= 9 and len(seen) == fit.evals
    assert fit.history[0]["stage"] == "start" and fit.start_values["devices.0.params.servers"] == 2  # the base value
    assert fit.result.loss == min(h["loss"] for h in fit.history)
    if glob == "none" and local == "none":
        assert fit.evals == 1
    else:
        assert {h["stage"] for h in fit.history} >= {"start", glob if glob != "none" else "local"}
