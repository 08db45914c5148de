"""fio JSON writer: fio 3.x layout and units, and an exact round trip through the fio reader."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from simulator.fio import parse_fio_json, read_fio
from simulator.metrics.fiojson import to_fio_json
from simulator.metrics.stats import JobStats, merge


def _result(seed: int, name: str = "sim", options=None, n: int = 20000, syncs: int = 0):
    rng = np.random.default_rng(seed)
    js = JobStats(name, options or {"rw": "randrw", "iodepth": "8", "bs": "4k"})
    js.set_window(2.0, 12.0)
    t = np.sort(rng.uniform(2.0, 12.0, n))
    d = rng.integers(0, 2, n)
    c = rng.lognormal(math.log(3e-3), 0.8, n)
    for row in zip(d.tolist(), t.tolist(), (c * 0.01).tolist(), c.tolist(), strict=True):
        js.add(row[0], row[1], row[2], row[3], 4096)
    for i in range(syncs):
        js.add_sync(2.0 + i * 0.01, 1e-3 + 1e-6 * i)
    return js.result()


def _round_trip(results, **kw):
    doc = to_fio_json(
        results,
        {"ioengine": "sim", "bs": "4k"},
        time_str="Mon Jan  6 00:14:25 2020",
        sim_meta={"seed": 7},
        **kw,
    )
    text = json.dumps(doc, allow_nan=False)  # strict JSON
    return doc, parse_fio_json(json.loads(text), "mem")


@pytest.mark.parametrize("plus", [False, True])
def test_round_trip_equal(plus):
    results = [_result(1, "a", syncs=50), _result(2, "b")]
    doc, run = _round_trip(results, plus=plus)
    assert run.jobs == results  # every field: counts, latencies, percentiles, CIs, histograms...
    assert run.sim["seed"] == 7 and "version" in run.sim
    assert run.global_options == {"ioengine": "sim", "bs": "4k"}
    assert run.time == "Mon Jan  6 00:14:25 2020"
    if plus:
        assert sum(doc["jobs"][0]["read"]["clat_ns"]["bins"].values()) == results[0].read.total_ios


def test_round_trip_of_merged_group():
    m = merge([_result(3), _result(4)])
    _doc, run = _round_trip([m])
    assert run.jobs[0] == m
    assert run.jobs[0].jobs == 2


def test_fio_units_and_layout(fixtures_dir):
    r = _result(5)
    doc = to_fio_json([r], {}, time_str="Mon Jan  6 00:14:25 2020", sim_meta={})
    j = doc["jobs"][0]
    rd = j["read"]
    assert rd["io_kbytes"] == r.read.io_bytes >> 10
    assert rd["bw"] == rd["bw_bytes"] >> 10
    assert rd["runtime"] == 10000
    assert rd["iops"] == r.read.iops
    assert rd["clat_ns"]["percentile"]["99.000000"] == r.read.clat.percentiles["99.000000"]
    assert "percentile" not in rd["lat_ns"] and "percentile" not in rd["slat_ns"]
    assert j["trim"]["total_ios"] == 0 and j["trim"]["clat_ns"]["percentile"]["50.000000"] == 0
    assert j["job_runtime"] == 10000 and j["elapsed"] == 10
    assert j["latency_depth"] == 8
    assert sum(j["latency_ms"].values()) + sum(j["latency_us"].values()) == pytest.approx(100.0, abs=0.1)
    assert rd["bw_agg"] + j["write"]["bw_agg"] == pytest.approx(100.0)
    # without an explicit timestamp it is the "time" string read as local time: 2020-01-06 00:14:25 is
    # epoch 1578269665 in UTC, within 14 hours of it in any time zone
    assert abs(doc["timestamp"] - 1578269665) <= 14 * 3600 and doc["fio version"].startswith("fio-3.")
    # same keys as a real fio 3.12 file (plus "N" in the latency objects, as newer fio prints); the
    # committed layout is derived from a croit fio 3.12 file (tests/fixtures/fio/make_fixtures.py)
    real = json.loads((fixtures_dir / "fio" / "fio-3.12-layout.json").read_text())
    assert set(real) <= set(doc)
    rj = real["jobs"][0]
    missing = set(rj) - set(j)
    assert missing <= {
        "usr_cpu",
        "sys_cpu",
        "ctx",
        "majf",
        "minf",
        "iodepth_level",
        "iodepth_submit",
        "iodepth_complete",
    }
    for ddir in ("read", "write", "trim"):
        assert set(rj[ddir]) == set(j[ddir])
        for kind in ("slat_ns", "clat_ns", "lat_ns"):
            assert set(rj[ddir][kind]) | {"N"} == set(j[ddir][kind])
    assert set(rj["sync"]) == set(j["sync"])
    for name in ("latency_ns", "latency_us", "latency_ms"):
        assert list(rj[name]) == list(j[name])


@pytest.mark.parametrize("source", ["fixture", "croit"])
def test_measured_file_round_trips_through_writer(source, fixtures_dir, request, tmp_path):
    """A fio 3.12 run written back out and read again keeps its numbers (cpu etc. pass through): the
    synthetic fixture always, a measured croit file when ../shared is present."""
    if source == "croit":
        path = os.path.join(request.getfixturevalue("shared_dir"), "data/croit-mach2/write-normal-64.json")
    else:
        path = fixtures_dir / "fio" / "sim-randwrite-qd16.json"
    run = read_fio(path)
    with open(path) as f:
        usr_cpu = json.load(f)["jobs"][0]["usr_cpu"]
    assert usr_cpu > 0 and run.jobs[0].extra["usr_cpu"] == usr_cpu  # a pass-through field, read as written
    doc = to_fio_json(run.jobs, run.global_options, time_str=run.time, sim_meta={"source": "measured"})
    p = tmp_path / "again.json"
    p.write_text(json.dumps(doc))
    again = read_fio(p)
    assert again.jobs == run.jobs
    assert again.timestamp == doc["timestamp"]


def test_sim_meta_with_numpy_values_is_serialisable():
    r = _result(6, n=2000)
    doc = to_fio_json(
        [r], {}, time_str="x", sim_meta={"util": np.float64(0.5), "qd": np.arange(3), "bad": float("nan")}
    )
    text = json.dumps(doc, allow_nan=False)
    assert json.loads(text)["sim"]["qd"] == [0, 1, 2]
    assert doc["sim"]["bad"] is None and doc["timestamp"] == 0


def test_layout_fixture_matches_the_real_file(fixtures_dir, shared_dir):
    """The committed key layout is still the layout of the croit fio 3.12 file it was derived from."""
    with open(os.path.join(shared_dir, "data/croit-mach2/read-mach2-16.json")) as f:
        real = json.load(f)
    layout = json.loads((fixtures_dir / "fio" / "fio-3.12-layout.json").read_text())

    def keys(x):
        if isinstance(x, dict):
            return {k: keys(v) for k, v in x.items()}
        if isinstance(x, list):
            return [keys(v) for v in x[:1]]
        return None

    assert keys(real) == keys(layout)
