"""--set with list indices (experiments, simrun fio, simrun compare), persist_state chains per
system, component-path clashes as config errors, and the Python API ``simulator.simulate``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml

import simulator
from simulator.errors import ConfigError
from simulator.experiment.execute import execute_task
from simulator.experiment.load import load_experiment
from simulator.experiment.runner import plan_tasks

ROOT = Path(__file__).resolve().parents[1]


def queue(mean: str = "1ms") -> dict:
    return {"name": "d", "kind": "queue", "params": {"capacity": "1GiB", "service": {"dist": "exponential", "mean": mean}}}


BASE = {
    "name": "api",
    "seed": 5,
    "system": {"devices": [queue()]},
    "workload": {"global": {"rw": "randread", "bs": "4k", "iodepth": 1, "ioengine": "libaio", "number_ios": 400, "filename": "d"},
                 "jobs": [{"name": "j"}]},
    "sweep": {"axes": {"qd": {"key": "workload.global.iodepth", "values": [1, 4]}}},
}

CLUSTER = {
    "name": "c",
    "system": {"cluster": {"profile": "clusters/croit_mach2", "params": {"state_scale": 0.01}}},
    "workload": {"global": {"ioengine": "rbd", "pool": "test-mach2", "rbdname": "test", "rw": "randread", "bs": "4k", "number_ios": 10},
                 "jobs": [{"name": "j"}]},
}


def simrun(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "simulator.cli", *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


# ------------------------------------------------------------------------------------ --set
def test_set_indexes_into_a_profiles_lists():
    exp = load_experiment(CLUSTER, [("system.cluster.params.hosts.0.drives.0.count", 4)])
    params = exp.points[0].raw["system"]["cluster"]["params"]
    assert params["hosts"][0]["drives"][0]["count"] == 4
    assert params["state_scale"] == 0.01  # the experiment's own params are kept
    # the rest of the profile's host list is untouched (a merge, not a replacement)
    from simulator.devices.registry import load_profile

    prof = load_profile("clusters/croit_mach2")["params"]
    assert len(params["hosts"]) == len(prof["hosts"])
    assert params["hosts"][0]["drives"][1:] == prof["hosts"][0]["drives"][1:]


def test_set_index_out_of_range_names_the_key():
    with pytest.raises(ConfigError) as e:
        load_experiment(CLUSTER, [("system.cluster.params.hosts.7.name", "x")])
    assert e.value.field == "system.cluster.params.hosts.7.name"


def test_host_named_like_a_component_is_a_config_error():
    with pytest.raises(ConfigError) as e:
        load_experiment(CLUSTER, [("system.cluster.params.hosts.0.name", "osd0")])  # the cluster's first OSD is osd0
    assert "system.ceph.osd0" in e.value.message and e.value.field == "system"


def test_fio_and_compare_take_set(tmp_path):
    jf = tmp_path / "j.fio"
    jf.write_text("[global]\nioengine=libaio\ndirect=1\nbs=4k\nrw=randread\nnumber_ios=400\n[qd8]\niodepth=8\nfilename=/dev/sdb\n")
    prof = "hdd/seagate_st91000640ns"
    base = simrun("fio", jf, "--device", prof, "--output-format", "json")
    again = simrun("fio", jf, "--device", prof, "--output-format", "json")
    assert base.returncode == 0, base.stderr
    assert base.stdout == again.stdout  # no wall clock in the document
    fifo = simrun("fio", jf, "--device", prof, "--output-format", "json", "--set", "system.devices.0.params.queue.policy=fifo")
    assert fifo.returncode == 0, fifo.stderr
    iops = {k: json.loads(r.stdout)["jobs"][0]["read"]["iops"] for k, r in (("sptf", base), ("fifo", fifo))}
    assert iops["fifo"] < iops["sptf"]  # the profile's reordering queue beats FIFO at QD8 (drive physics)
    bad = simrun("fio", jf, "--device", prof, "--set", "sweep.x=1")
    assert bad.returncode == 2 and "--set" in bad.stderr and "Traceback" not in bad.stderr
    # compare: the simulated run of a measured file follows the override
    measured = tmp_path / "m.json"
    measured.write_text(base.stdout)
    a = simrun("compare", prof, measured, "--out", tmp_path / "ca")
    b = simrun("compare", prof, measured, "--out", tmp_path / "cb", "--set", "system.devices.0.params.queue.policy=fifo")
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert (tmp_path / "ca" / "compare.csv").read_text() != (tmp_path / "cb" / "compare.csv").read_text()


# ------------------------------------------------------------------------------------ persist_state
def test_persist_state_chain_per_system():
    """An axis that changes the system under persist_state: one state chain per system, each the
    same as that system's chain run on its own."""
    doc = {**BASE, "sweep": {"persist_state": True, "axes": {
        "service": {"values": {"fast": {"system.devices.0.params.service.mean": "1ms"},
                               "slow": {"system.devices.0.params.service.mean": "3ms"}}},
        "qd": {"key": "workload.global.iodepth", "values": [1, 4]}}}}
    exp = load_experiment(doc)
    tasks = plan_tasks(exp)
    assert [[p[0] for p in t["points"]] for t in tasks] == [[0, 1], [2, 3]]
    both = {o.point: o.summary for t in tasks for o in execute_task(t)}
    for label, idx in (("fast", (0, 1)), ("slow", (2, 3))):
        alone = load_experiment({**doc, "sweep": {**doc["sweep"], "axes": {
            "service": {"values": {label: doc["sweep"]["axes"]["service"]["values"][label]}},
            "qd": doc["sweep"]["axes"]["qd"]}}})
        (t,) = plan_tasks(alone)
        for i, o in zip(idx, execute_task(t), strict=True):
            assert both[i] == o.summary


# ------------------------------------------------------------------------------------ API
def test_simulate_returns_the_cli_summary_and_the_run_documents(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # no pandas: a list of dicts
    p = tmp_path / "e.yaml"
    p.write_text(yaml.safe_dump(BASE))
    summary, runs = simulator.simulate(p, set={"replications": 2}, workers=1)
    assert isinstance(summary, list) and [r["qd"] for r in summary] == [1, 4]
    assert all(r["replications"] == 2 for r in summary)
    assert len(runs) == 4 and {(d["sim"]["point"], d["sim"]["replication"]) for d in runs} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    # the same path as `simrun run`: the same numbers as its summary.csv
    r = simrun("run", p, "--set", "replications=2", "--out", tmp_path / "o", "-q")
    assert r.returncode == 0, r.stderr
    import csv

    rows = list(csv.DictReader((tmp_path / "o" / "summary.csv").open()))
    for mine, cli in zip(summary, rows, strict=True):
        assert float(cli["read.iops"]) == pytest.approx(mine["read.iops"], rel=1e-12)
        assert float(cli["read.lat_mean_ms"]) == pytest.approx(mine["read.lat_mean_ms"], rel=1e-12)
    # M/M/1-like sanity of what the API returns: at QD1 mean latency ~ the 1 ms mean service
    # (400 exponential samples: 95% of means within ±10%)
    assert summary[0]["read.lat_mean_ms"] == pytest.approx(1.0, rel=0.1)


def test_simulate_gives_a_dataframe_when_pandas_is_installed(monkeypatch):
    made = {}

    class FakeFrame:
        def __init__(self, rows):
            made["rows"] = rows

    monkeypatch.setitem(sys.modules, "pandas", types.SimpleNamespace(DataFrame=FakeFrame))
    res = simulator.simulate(BASE, set={"sweep.axes.qd.values": [2]}, workers=1)
    assert isinstance(res.summary, FakeFrame) and [r["qd"] for r in made["rows"]] == [2]
    assert res.result.out_dir is None and res.result.written == []  # out=None writes nothing


def test_simulate_bad_input_raises_config_error():
    with pytest.raises(ConfigError) as e:
        simulator.simulate(BASE, set={"workload.global.bs": "banana"})
    assert "bs" in str(e.value) and e.value.source == "<experiment>"
