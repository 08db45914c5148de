"""The scale measurement's garbage-collector figures: GcMeter counts every pass of each generation and its
CPU time, and ``measure`` reports them per timed IO (what the bench notes show)."""

from __future__ import annotations

import gc

import pytest

from simulator.ceph.scale import GcMeter, _gc_note, measure


def test_gc_meter_counts_each_generations_passes() -> None:
    junk = [[i] for i in range(20000)]  # something for the passes to traverse
    with GcMeter() as m:
        gc.collect(0)
        gc.collect(0)
        gc.collect(1)
        gc.collect(2)
    assert m.passes == [2, 1, 1]
    assert all(s >= 0 for s in m.seconds) and m.seconds[2] > 0
    gc.collect(2)  # after exit: not counted, and the callback is gone
    assert m.passes == [2, 1, 1] and m._cb not in gc.callbacks
    del junk


def test_measure_reports_gc_per_io() -> None:
    r = measure(1, 400, warm_ios=100)
    assert len(r["gc_passes"]) == len(r["gc_us_per_io"]) == 3
    assert all(p >= 0 for p in r["gc_passes"])
    # the collector's time is part of the measured CPU time
    assert 0 <= sum(r["gc_us_per_io"]) <= r["cpu_us_per_io"]
    assert r["build_gc_s"] <= r["build_cpu_s"] and sum(r["build_gc_passes"]) > 0
    assert _gc_note(r).endswith("passes, gen 0/1/2)")


@pytest.mark.parametrize("args", [["--bogus"], ["--ios", "0"], ["--hosts", "x"], ["--rw", "write"], ["--one", "1", "x", "randread"],
                                  ["--one", "1", "10", "seqread"], ["--one", "1", "-1", "randwrite"], ["--one", "0", "0", "randwrite"]])
def test_scale_command_line_refuses_bad_flags_with_exit_2(args):
    """``python -m simulator.ceph.scale`` with a bad flag: one usage error, exit 2, nothing measured (it used to
    ignore unknown flags and start the whole default measurement)."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "simulator.ceph.scale", *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "error:" in r.stderr and "Traceback" not in r.stderr and "load average" not in r.stdout


def test_scale_one_with_zero_ios_measures_the_build_alone():
    """``--one H 0 RW`` is what ``simrun bench``'s ceph-build-N cases run in a fresh process (the build alone): it
    must be accepted (a usage check refused it, and those bench cases failed, from 2026-11-29 to its fix)."""
    import json
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "simulator.ceph.scale", "--one", "1", "0", "randwrite"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["osds"] == 24 and out["build_wall_s"] > 0 and out["peak_rss_build_mb"] > 0
