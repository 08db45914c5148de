"""The "Add your SSD" workflow of docs/user-guide.md, run end to end as a user would.

calibration/ssd-scaling/example: a datasheet profile (models/ssd/example/dc_s3710_200gb.yaml), ONE published
figure (1 job, O_DSYNC), `simrun calibrate` with the class prior (one FTL core holding 0.69 of the write path),
then the 5/10/16-job curve predicted. Expected values are analytic: the fit reproduces its one figure; with
N closed-loop jobs the fitted pipeline runs at min(N x 1-job rate, 1 / ftl_update) (SSDConfig.write_bound).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_ssd import make, run_jobs

from simulator.devices.registry import load_profile

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "calibration" / "ssd-scaling" / "example"
SLAT = 6e-6  # fixed in the example spec (workload.sim_slat)
MIB = 2**20


def _check_curve(params: dict) -> None:
    """The fitted example profile reproduces its one figure and predicts the analytic 5/10/16-job curve."""
    cfg = make(base=params).cfg
    ctl = cfg.controller
    # the tied class prior: FTL stage = 0.69 of the write path, the buffer stage the rest; one FTL core
    assert ctl.ftl_update / (ctl.ftl_update + ctl.write_latency) == pytest.approx(0.69, abs=0.005)
    assert ctl.ftl_cores == 1
    published = float((EX / "figures.csv").read_text().splitlines()[-1].split(",")[1])  # 1-job MiB/s
    bound, stage = cfg.write_bound(4096)
    assert stage == "ftl" and bound == pytest.approx(1 / ctl.ftl_update)
    curve = {n: run_jobs(make(base=params), n, 0.2, warmup=0.02, host_overhead=SLAT) for n in (1, 5, 10, 16)}
    one = curve[1].iops
    # the fit: the one published figure (the loss's sigma is 1 %)
    assert curve[1].mib_s == pytest.approx(published, rel=0.02)
    for n, run in curve.items():
        assert run.iops <= min(n * one, bound) * 1.01, n
    # the prediction: saturated at the FTL stage from 5 jobs on; latency = N / rate (Little's law, closed loop)
    for n in (5, 10, 16):
        assert curve[n].iops == pytest.approx(bound, rel=0.01), n
        assert curve[n].mean_lat == pytest.approx(n / curve[n].iops, rel=0.02), n


def test_committed_example_profile_reproduces_its_figure_and_predicts_the_curve():
    _check_curve(load_profile("ssd/example/dc_s3710_200gb_fitted")["params"])


@pytest.mark.heavy
def test_add_your_ssd_example_calibrates_on_one_figure_and_predicts_the_curve(tmp_path):
    fitted = tmp_path / "fitted.yaml"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    r = subprocess.run([sys.executable, "-m", "simulator.cli", "calibrate", str(EX / "calibrate.yaml"), "--profile",
                        str(fitted), "--out", str(tmp_path / "report"), "--workers", "1", "-q"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    _check_curve(load_profile(str(fitted))["params"])
