"""End-to-end CLI behaviour: bad input gives one clear message naming file and field, exit code 2,
no traceback and no output directory; same seed gives byte-identical run documents."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]

BASE = {
    "name": "t",
    "seed": 3,
    "system": {"devices": [{"name": "d", "kind": "queue", "params": {"capacity": "1GiB", "service": {"dist": "exponential", "mean": "1ms"}}}]},
    "workload": {"global": {"rw": "randread", "bs": "4k", "iodepth": 4, "ioengine": "libaio", "number_ios": 2000, "filename": "d"}, "jobs": [{"name": "j"}]},
}


def simrun(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "simulator.cli", *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def write(tmp_path, doc, name="exp.yaml"):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(doc) if not isinstance(doc, str) else doc)
    return p


def mutate(path, value):
    doc = json.loads(json.dumps(BASE))
    cur = doc
    keys = path.split(".")
    for k in keys[:-1]:
        cur = cur[int(k)] if isinstance(cur, list) else cur[k]
    last = keys[-1]
    if isinstance(cur, list):
        cur[int(last)] = value
    else:
        cur[last] = value
    return doc


@pytest.mark.parametrize(
    "path,value,field",
    [
        ("workload.global.bogus_option", 1, "bogus_option"),  # unknown fio option
        ("system.devices.0.params.service.mean", "5 parsecs", "service"),  # wrong unit
        ("workload.global.size", "-4k", "size"),  # negative size
        ("workload.global.bs", "2GiB", "bs"),  # bs larger than the span
        ("workload.global.iodepth", 0, "iodepth"),  # iodepth 0
        ("system.devices.0.params.servers", 0, "servers"),
        ("unknown_top_level", 1, "unknown_top_level"),  # unknown key
    ],
)
def test_bad_experiment_exit_2_names_file_and_field(tmp_path, path, value, field):
    p = write(tmp_path, mutate(path, value))
    out = tmp_path / "out"
    r = simrun("run", p, "--out", out, "-q")
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert str(p) in r.stderr and field in r.stderr
    assert len([ln for ln in r.stderr.splitlines() if ln.startswith("error")]) == 1
    assert not out.exists()


def test_bad_yaml_syntax(tmp_path):
    p = write(tmp_path, "name: x\nsystem: [unclosed\n")
    r = simrun(p)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "line" in r.stderr and str(p) in r.stderr


def test_missing_file_and_bad_flag(tmp_path):
    r = simrun("run", tmp_path / "nope.yaml")
    assert r.returncode == 2 and "not found" in r.stderr
    p = write(tmp_path, BASE)
    r = simrun("run", p, "--workers", "0")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    r = simrun("run", p, "--set", "novalue")
    assert r.returncode == 2 and "--set" in r.stderr


def test_malformed_fio_jobfile(tmp_path):
    jf = tmp_path / "bad.fio"
    jf.write_text("[global]\nrw=randread\nthis line has no equals sign but spaces\n[job]\nbs=4k\n")
    r = simrun("fio", jf, "--device", "hdd/seagate_st91000640ns")
    assert r.returncode == 2 and "Traceback" not in r.stderr and str(jf) in r.stderr


def test_fio_jobfile_runs(tmp_path):
    jf = tmp_path / "ok.fio"
    jf.write_text("[global]\nioengine=libaio\ndirect=1\nbs=4k\nrw=randread\nnumber_ios=300\n[qd4]\niodepth=4\nfilename=/dev/sdb\n")
    r = simrun("fio", jf, "--device", "hdd/seagate_st91000640ns", "--output-format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["jobs"][0]["read"]["total_ios"] == 300
    r = simrun("fio", jf, "--device", "hdd/seagate_st91000640ns")
    assert r.returncode == 0 and "IOPS=" in r.stdout


def test_check_and_schema(tmp_path):
    p = write(tmp_path, BASE)
    r = simrun("check", p)
    assert r.returncode == 0 and "OK" in r.stdout
    r = simrun("schema")
    assert r.returncode == 0 and json.loads(r.stdout)["title"] == "ExperimentSpec"
    r = simrun("schema", "--kind", "hdd")
    assert r.returncode == 0 and "properties" in json.loads(r.stdout)
    r = simrun("schema", "--kind", "warp_drive")
    assert r.returncode == 2


def test_same_seed_byte_identical_and_resume(tmp_path):
    p = write(tmp_path, {**BASE, "replications": 2})
    a, b = tmp_path / "a", tmp_path / "b"
    assert simrun("run", p, "--out", a, "-q").returncode == 0
    assert simrun("run", p, "--out", b, "-q", "--workers", "1").returncode == 0
    files = sorted(f.name for f in (a / "runs").glob("p*_r??.json"))
    assert files == ["p000_r00.json", "p000_r01.json"]  # one point x 2 replications, none missing
    for name in files:
        assert (a / "runs" / name).read_bytes() == (b / "runs" / name).read_bytes()
    # the summary says what a saturated single server must: throughput = 1 / mean service = 1000/s
    (row,) = list(csv.DictReader((a / "summary.csv").open()))
    assert abs(float(row["read.iops"]) - 1000.0) <= float(row["read.iops_ci"])
    # a different seed changes the results
    c = tmp_path / "c"
    assert simrun("run", p, "--out", c, "-q", "--set", "seed=4").returncode == 0
    assert (c / "runs" / "p000_r00.json").read_bytes() != (a / "runs" / "p000_r00.json").read_bytes()
    # resume: rerunning into the same directory reuses the finished runs
    r = simrun("run", p, "--out", a)
    assert r.returncode == 0 and "reused" in r.stdout


def test_committed_schemas_are_current():
    """Golden files: docs/schema/*.json must equal what the models generate (run `simrun schema --out docs/schema`)."""
    from simulator.cli import schemas

    for name, sch in schemas().items():
        path = ROOT / "docs" / "schema" / f"{name}.json"
        assert path.exists(), f"{path} missing: run `simrun schema --out docs/schema`"
        assert json.loads(path.read_text()) == json.loads(json.dumps(sch)), f"{path} is stale: run `simrun schema --out docs/schema`"


def test_bad_cluster_description_exit_2(tmp_path):
    """A pool larger than the eligible OSDs: one message naming the file and the field, exit 2."""
    doc = {
        "name": "c",
        "system": {"cluster": {"profile": "clusters/croit_mach2", "params": {"pools": [
            {"name": "test-mach2", "size": 13, "min_size": 2, "pg_num": 64, "rule": {"device_class": "mach2", "failure_domain": "osd"}}]}}},
        "workload": {"global": {"ioengine": "rbd", "pool": "test-mach2", "rbdname": "test", "rw": "randread", "bs": "4k", "number_ios": 10},
                     "jobs": [{"name": "j"}]},
    }
    p = write(tmp_path, doc)
    r = simrun("run", p, "--out", tmp_path / "o", "-q")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert str(p) in r.stderr and "pools" in r.stderr
    assert not (tmp_path / "o").exists()


def test_bench_runs_named_cases_and_rejects_unknown_ones():
    r = simrun("bench", "--ios", "300", "--case", "queue-fio-qd16", "--case", "jobstats-add")
    assert r.returncode == 0, r.stderr
    assert "queue-fio-qd16" in r.stdout and "jobstats-add" in r.stdout and "hdd-fio-qd32" not in r.stdout
    assert "unavailable" not in r.stdout
    r = simrun("bench", "--case", "warp-drive")
    assert r.returncode == 2 and "unknown bench case" in r.stderr and "Traceback" not in r.stderr
    for bad in ("0", "-5"):  # a rate over no IOs (it printed -148,836 IO/s for -5)
        r = simrun("bench", "--ios", bad, "--case", "jobstats-add")
        assert r.returncode == 2 and "--ios" in r.stderr and "Traceback" not in r.stderr and "jobstats-add" not in r.stdout


def test_fio_output_to_an_unwritable_path_is_one_message(tmp_path):
    jf = tmp_path / "ok.fio"
    jf.write_text("[global]\nioengine=libaio\nbs=4k\nrw=randread\nnumber_ios=50\n[j]\nfilename=/dev/sdb\n")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = simrun("fio", jf, "--device", "hdd/seagate_st91000640ns", "--output", blocker / "sub" / "out.txt")
    assert r.returncode == 2 and "--output" in r.stderr and "Traceback" not in r.stderr


def test_negative_seeds_and_runtimes_are_refused_on_the_command_line(tmp_path):
    """`simrun fio --seed -1` ended in a ValueError traceback from the engine (exit 1); seeds, runtimes and
    measurement lengths below their physical bound are flag errors: exit 2, the flag named, no traceback."""
    jf = tmp_path / "ok.fio"
    jf.write_text("[global]\nioengine=libaio\nbs=4k\nrw=randread\nnumber_ios=50\n[j]\nfilename=/dev/sdb\n")
    measured = sorted((ROOT / "calibration" / "local-disk" / "runs").glob("*/*.json"))[0]
    cases = [("fio", jf, "--device", "hdd/seagate_st91000640ns", "--seed", "-1"),
             ("compare", "hdd/seagate_st91000640ns", measured, "--seed", "-2"),
             ("compare", "hdd/seagate_st91000640ns", measured, "--runtime", "-1"),
             ("measure", "--runtime", "-1", "--out", tmp_path / "m")]
    for args in cases:
        r = simrun(*args)
        flag = next(a for a in args if isinstance(a, str) and a.startswith("--") and a not in ("--device", "--out"))
        assert r.returncode == 2 and flag in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
    assert not (tmp_path / "m").exists()
