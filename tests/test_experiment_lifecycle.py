"""The experiment layer's run lifecycle: resume trusts only this experiment's own run files, one
simrun per output directory, everything validated before anything runs, clean interrupts, write
errors as one message, persist_state chains per system, list indexing in --set, the Python API."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from simulator.errors import ConfigError
from simulator.experiment import lifecycle
from simulator.experiment.load import load_experiment
from simulator.experiment.runner import OutputLock

ROOT = Path(__file__).resolve().parents[1]

QUEUE = {"name": "d", "kind": "queue", "params": {"capacity": "1GiB", "service": {"dist": "exponential", "mean": "1ms"}}}
BASE = {
    "name": "life",
    "seed": 3,
    "system": {"devices": [QUEUE]},
    "workload": {"global": {"rw": "randread", "bs": "4k", "iodepth": 1, "ioengine": "libaio", "number_ios": 300, "filename": "d"},
                 "jobs": [{"name": "j"}]},
    "sweep": {"axes": {"qd": {"key": "workload.global.iodepth", "values": [1, 2, 4]}}},
}


def simrun(*args, cwd=None, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "simulator.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


def write(tmp_path, doc, name="exp.yaml"):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(doc))
    return p


def run_files(out: Path) -> list[Path]:
    return sorted(f for f in (out / "runs").glob("p*_r*.json") if not f.name.endswith(".timing.json"))


# ------------------------------------------------------------------------------------ resume
def test_resume_reruns_a_damaged_run_file(tmp_path):
    p = write(tmp_path, BASE)
    out = tmp_path / "o"
    first = lifecycle.run(p, out=out, workers=1)
    assert first.run.resumed == 0 and len(run_files(out)) == 3
    good = (out / "runs" / "p001_r00.json").read_bytes()
    summary = (out / "summary.csv").read_text()
    (out / "runs" / "p001_r00.json").write_bytes(good[: len(good) // 2])  # truncated
    again = lifecycle.run(p, out=out, workers=1)
    assert again.run.resumed == 2  # the two intact runs are reused, the damaged one runs again
    assert (out / "runs" / "p001_r00.json").read_bytes() == good  # same seed, same bytes
    assert (out / "summary.csv").read_text() == summary


def test_changed_experiment_removes_stale_runs(tmp_path):
    p = write(tmp_path, BASE)
    out = tmp_path / "o"
    lifecycle.run(p, out=out, workers=1)
    changed = lifecycle.run(p, {"seed": 4, "sweep.axes.qd.values": [1, 2]}, out=out, workers=1)
    assert changed.run.resumed == 0 and changed.run.removed == 3
    files = run_files(out)
    assert [f.name for f in files] == ["p000_r00.json", "p001_r00.json"]  # the old p002 is gone
    digest = changed.experiment.digest()
    assert {json.loads(f.read_text())["sim"]["experiment_digest"] for f in files} == {digest}


def test_another_experiments_run_file_is_not_trusted(tmp_path):
    """Two experiments into one --out: the second must not report the first one's runs."""
    a, b = write(tmp_path, BASE, "a.yaml"), write(tmp_path, {**BASE, "name": "other", "seed": 9}, "b.yaml")
    out = tmp_path / "o"
    ra = lifecycle.run(a, out=out, workers=1)
    rb = lifecycle.run(b, out=out, workers=1)
    assert rb.run.resumed == 0
    assert rb.summary_rows() != ra.summary_rows()
    for f in run_files(out):
        sim = json.loads(f.read_text())["sim"]
        assert sim["experiment"] == "other" and sim["experiment_digest"] == rb.experiment.digest()


def test_fresh_replaces_only_this_experiments_run_files(tmp_path):
    p = write(tmp_path, BASE)
    out = tmp_path / "o"
    lifecycle.run(p, out=out, workers=1)
    (out / "runs" / "notes.txt").write_text("mine")
    (out / "keep.csv").write_text("mine")
    r = lifecycle.run(p, out=out, workers=1, resume=False)
    assert r.run.resumed == 0 and len(run_files(out)) == 3
    assert (out / "runs" / "notes.txt").read_text() == "mine" and (out / "keep.csv").read_text() == "mine"


def test_second_simrun_on_the_same_out_is_refused(tmp_path):
    p = write(tmp_path, BASE)
    out = tmp_path / "o"
    with OutputLock(out):
        r = simrun("run", p, "--out", out, "-q")
    assert r.returncode == 2, r.stderr
    assert "in use by another simrun" in r.stderr and "Traceback" not in r.stderr
    assert not (out / "runs").exists()
    assert simrun("run", p, "--out", out, "-q").returncode == 0  # released: runs now


def test_unwritable_output_directory_is_one_message(tmp_path):
    p = write(tmp_path, BASE)
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    r = simrun("run", p, "--out", blocker / "sub", "-q")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "cannot write" in r.stderr and "--out" in r.stderr


# ------------------------------------------------------------------------------------ up front
@pytest.mark.parametrize(
    "patch,field",
    [
        ({"reference": [{"table": "no/such/table.csv", "match": {"q": "qd"}, "metrics": {"iops": "read.iops"}}]}, "reference.0.table"),
        ({"reference": [{"table": "REF", "match": {"q": "qd"}, "metrics": {"nope": "read.iops"}}]}, "reference.0"),
        ({"reference": [{"table": "REF", "match": {"q": "depth"}, "metrics": {"iops": "read.iops"}}]}, "reference.0.match"),
        ({"reference": [{"table": "REF", "match": {"q": "qd"}, "metrics": {"word": "read.iops"}}]}, "reference.0.metrics"),
        ({"report": {"plots": [{"kind": "iops_vs_x", "x": "depth"}]}}, "report.plots.0.x"),
        ({"report": {"plots": [{"kind": "hdr", "at": {"depth": [1]}}]}}, "report.plots.0.at"),
        ({"report": {"ratio": {"axis": "depth", "numerator": "1", "denominator": "2"}}}, "report.ratio.axis"),
        ({"report": {"ratio": {"axis": "qd", "numerator": "1", "denominator": "3"}}}, "report.ratio.denominator"),
    ],
)
def test_report_inputs_validated_before_anything_runs(tmp_path, patch, field):
    ref = tmp_path / "ref.csv"
    ref.write_text("# source: made up for the test\nq,iops,word\n1,900,many\n2,1500,lots\n")
    doc = json.loads(json.dumps({**BASE, **patch}).replace('"REF"', '"ref.csv"'))  # beside the experiment
    p = write(tmp_path, doc)
    with pytest.raises(ConfigError) as e:
        load_experiment(p)
    assert e.value.field == field and e.value.source == str(p)
    r = simrun("check", p)  # `check` catches it too
    assert r.returncode == 2 and field in r.stderr and "Traceback" not in r.stderr
    r = simrun("run", p, "--out", tmp_path / "o", "-q")
    assert r.returncode == 2 and not (tmp_path / "o").exists()


# ------------------------------------------------------------------------------------ interrupts
def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return stat[0] != "Z"


def _as_from_a_shell() -> None:
    """The child starts with Ctrl-C as an interactive shell gives it: SIGINT at its default disposition and not
    blocked. Both are inherited through fork and exec, and the test process (an xdist worker, after hundreds of
    other tests and the libraries they load) need not have them so: with SIGINT ignored or blocked the child would
    never see the interrupt this test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


#: points of the long sweep: far more than the two workers finish while the test waits for the first one
#: and signals (a loaded machine can stall the test process for seconds; with 40 points a sweep once
#: finished before its SIGINT landed)
LONG_POINTS = 400


def _start_long_run(tmp_path):
    doc = {**BASE, "workload": {**BASE["workload"], "global": {**BASE["workload"]["global"], "number_ios": 20000}},
           "sweep": {"axes": {"qd": {"key": "workload.global.iodepth", "values": list(range(1, LONG_POINTS + 1))}}}}
    p = write(tmp_path, doc)
    out = tmp_path / "o"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "simulator.cli", "run", str(p), "--out", str(out), "-q", "--workers", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, preexec_fn=_as_from_a_shell)
    deadline = time.time() + 120
    while time.time() < deadline and not ((out / "runs").is_dir() and run_files(out)):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    workers = _children(proc.pid)
    return proc, out, workers, p


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to see worker processes")
def test_ctrl_c_stops_workers_and_keeps_finished_runs(tmp_path):
    disposition, mask = signal.getsignal(signal.SIGINT), signal.pthread_sigmask(signal.SIG_BLOCK, [])
    proc, out, workers, p = _start_long_run(tmp_path)
    assert workers, "the pool should have worker processes"
    proc.send_signal(signal.SIGINT)
    t0 = time.time()
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"no exit 60 s after SIGINT (this process: SIGINT {disposition}, blocked {sorted(mask)})")
    assert proc.returncode == 130, (f"exit {proc.returncode} after {len(run_files(out))} of {LONG_POINTS} runs: {err} "
                                    f"(this process: SIGINT {disposition}, blocked {sorted(mask)})")
    assert time.time() - t0 < 20  # stopped, not after computing every queued point
    assert "interrupted" in err and "kept in" in err and "Traceback" not in err
    kept = len(run_files(out))
    assert 0 < kept < LONG_POINTS
    time.sleep(1.0)
    assert not [w for w in workers if _alive(w)]
    # the finished runs are this experiment's, complete, and would be reused by a resume
    from simulator.experiment.runner import _scan_runs

    exp = load_experiment(p)
    done, removed = _scan_runs(out, exp, exp.digest(), keep=True)
    assert len(done) == kept and removed == 0


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to see worker processes")
def test_killing_the_main_process_leaves_no_workers(tmp_path):
    proc, _out, workers, _p = _start_long_run(tmp_path)
    assert workers
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.time() + 10
    while time.time() < deadline and [w for w in workers if _alive(w)]:
        time.sleep(0.2)
    assert not [w for w in workers if _alive(w)]


# ------------------------------------------------------------------------------------ schedulers
def test_dask_scheduler_gives_the_process_pools_numbers(tmp_path):
    pytest.importorskip("dask.distributed", reason="the dask extra is not installed")
    p = write(tmp_path, BASE)
    pool = lifecycle.run(p, workers=2)
    dask = lifecycle.run(p, workers=2, scheduler="dask")
    assert pool.workers == dask.workers == 2
    assert dask.summary_rows() == pool.summary_rows()


def test_dask_scheduler_without_dask_is_one_message(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # as if the extra were not installed
    p = write(tmp_path, BASE)
    with pytest.raises(ConfigError) as e:
        lifecycle.run(p, workers=2, scheduler="dask")
    assert e.value.field == "--scheduler" and "dask" in e.value.message
    with pytest.raises(ConfigError) as e:
        lifecycle.run(p, workers=2, scheduler="threads")
    assert e.value.field == "--scheduler"
