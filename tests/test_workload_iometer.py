"""Iometer access specifications (YAML) and fio's percentage_random, through the one IO driver."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys

import numpy as np
import pytest
from test_workload_support import new_sim, recording_devices, run_jobs

from simulator.devices.base import Op
from simulator.errors import ConfigError
from simulator.workloads.iometer import iometer_jobs, load_iometer
from simulator.workloads.options import resolve_jobs

KB = 1024
Z = 4.0


def binomial_ok(count: int, n: int, p: float) -> bool:
    return abs(count - n * p) <= Z * math.sqrt(n * p * (1 - p)) + 1e-9


SPEC = """\
iometer:
  run_time: 2s
  ramp_up_time: 0.1s
  workers: 2
  outstanding_ios: 4
  targets: [d0, d1]
  max_disk_size: 131072     # sectors: 64 MiB
  starting_sector: 2048     # 1 MiB
  access_specification:
    name: mixed
    lines:
      - {size: 4k, percent_of_spec: 60, percent_read: 75, percent_random: 100, align: 512}
      - {size: 64k, percent_of_spec: 40, percent_read: 0, percent_random: 0}
"""


def _write(tmp_path, text, name="spec.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_iometer_spec_maps_onto_workers_targets_and_lines(tmp_path):
    spec = load_iometer(_write(tmp_path, SPEC))
    glob, jobs = iometer_jobs(spec)
    assert [j["filename"] for j in jobs] == ["d0", "d1"]
    assert glob["numjobs"] == 2 and glob["iodepth"] == 4 and glob["time_based"] == 1
    sim = new_sim(2)
    devs = recording_devices(sim, [1e-4, 1e-4], servers=8)
    wl, res = run_jobs(glob, jobs, devs, sim)
    assert len(wl.threads) == 4  # 2 workers x 2 targets
    for name in ("d0", "d1"):
        log = [r for _, r in devs[name].log]
        n = len(log)
        small = [r for r in log if r.size == 4 * KB]
        big = [r for r in log if r.size == 64 * KB]
        assert len(small) + len(big) == n
        assert binomial_ok(len(small), n, 0.6)
        assert binomial_ok(sum(r.op == Op.READ for r in small), len(small), 0.75)
        assert all(r.op == Op.WRITE for r in big)
        offs = np.array([r.offset for r in log])
        ends = offs + np.array([r.size for r in log])
        assert offs.min() >= 2**20 and ends.max() <= 2**20 + 64 * 2**20
        assert np.all(np.array([r.offset for r in small]) % 512 == 0)
        assert np.mean(np.array([r.offset for r in small]) % (4 * KB) != 0) > 0.5  # 512-byte grid, not 4k
    # group_reporting: one result over every worker and target (Iometer's "All Managers" line)
    assert [r.jobs for r in res] == [4]


def test_iometer_sequential_line_continues_per_worker(tmp_path):
    text = SPEC.replace("workers: 2", "workers: 1").replace("outstanding_ios: 4", "outstanding_ios: 1")
    text = text.replace("percent_of_spec: 60", "percent_of_spec: 1").replace("percent_of_spec: 40", "percent_of_spec: 99")
    glob, jobs = iometer_jobs(load_iometer(_write(tmp_path, text)))
    sim = new_sim(3)
    devs = recording_devices(sim, [1e-4, 1e-4])
    run_jobs(glob, jobs[:1], devs, sim)
    big = [r.offset for _, r in devs["d0"].log if r.size == 64 * KB]
    steps = [b - a for a, b in itertools.pairwise(big)]
    wraps = len(big) * 64 * KB // (64 * 2**20) + 1  # the 64 MiB region is passed this many times
    assert sum(s != 64 * KB for s in steps) <= wraps  # contiguous but for the wraps


def test_iometer_delay_and_burst_become_thinktime(tmp_path):
    text = """\
iometer:
  run_time: 1s
  outstanding_ios: 1
  targets: [d0]
  access_specification:
    lines:
      - {size: 4k, percent_random: 100, delay: 9ms, burst: 2}
"""
    glob, jobs = iometer_jobs(load_iometer(_write(tmp_path, text)))
    assert (glob["thinktime_blocks"], glob["thinktime_blocks_type"]) == (2, "issue")
    glob = {**glob, "sim_slat": 0}
    sim = new_sim()
    devs = recording_devices(sim, [1e-3])
    run_jobs(glob, jobs, devs, sim)
    t = np.array([ts for ts, _ in devs["d0"].log])
    # a burst of 2 IOs (1 ms each), then 9 ms: 2 IOs per 11 ms
    assert np.allclose(t[2::2][:50] - t[:-2:2][:50], 11e-3, atol=1e-9)


@pytest.mark.parametrize(
    "edit, field, words",
    [
        ("percent_of_spec: 40", "iometer.access_specification", "add up to 99"),
        ("percent_read: 75", "iometer.access_specification.lines.0.percent_read", "less than or equal to 100"),
        ("outstanding_ios: 4", "iometer.outstanding_ios", "greater than or equal to 1"),
        ("size: 64k", "iometer.access_specification.lines.1.size", "cannot read"),
    ],
)
def test_iometer_errors_name_the_field(tmp_path, edit, field, words):
    repl = {
        "percent_of_spec: 40": "percent_of_spec: 39",
        "percent_read: 75": "percent_read: 175",
        "outstanding_ios: 4": "outstanding_ios: 0",
        "size: 64k": "size: lots",
    }[edit]
    p = _write(tmp_path, SPEC.replace(edit, repl))
    with pytest.raises(ConfigError) as ei:
        load_iometer(p)
    assert ei.value.source == str(p)
    assert (ei.value.field or "").startswith(field), str(ei.value)
    assert words in str(ei.value)


def test_simrun_fio_runs_an_iometer_file(tmp_path):
    text = SPEC.replace("  targets: [d0, d1]\n", "").replace("run_time: 2s", "run_time: 0.2s")
    p = _write(tmp_path, text)
    out = subprocess.run(
        [sys.executable, "-m", "simulator.cli", "fio", str(p), "--device", "models/hdd/seagate_exos_15e900.yaml"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "mixed@dev" in out.stdout and "write: IOPS=" in out.stdout
    bad = _write(tmp_path, SPEC.replace("percent_read: 75", "percent_read: 175"), "bad.yaml")
    out = subprocess.run(
        [sys.executable, "-m", "simulator.cli", "fio", str(bad), "--device", "models/hdd/seagate_exos_15e900.yaml"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr and "percent_read" in out.stderr


def test_percentage_random_mixes_sequential_continuations():
    sim = new_sim(9)
    devs = recording_devices(sim, [1e-5], capacity="64MiB")
    n = 20000
    run_jobs({}, [{"rw": "randread", "number_ios": n, "io_size": "1g", "percentage_random": 70}], devs, sim)
    log = [r for _, r in devs["d0"].log]
    seq = sum(b.offset == a.offset + a.size for a, b in itertools.pairwise(log))
    # a continuation is sequential with probability 0.3 (plus the rare random draw that lands there)
    assert binomial_ok(seq, n - 1, 0.3) or abs(seq / (n - 1) - 0.3) < 0.3 / 16384 + Z * math.sqrt(0.21 / n)
    (j,) = resolve_jobs({}, [{"rw": "randrw", "percentage_sequential": "10,40"}])
    assert j.percentage_random == (90, 60, 60)
    with pytest.raises(ConfigError) as ei:
        resolve_jobs({}, [{"percentage_random": 20, "percentage_sequential": 80}], "x.fio")
    assert "not both" in ei.value.message
