"""calibration/ceph-lab/commit_path.py: host CPU outside the Ceph daemons and fio, per kv commit, from the
quiet campaign's committed runs.csv (docs/ceph-model.md, "the commit path").

The committed commit_path.csv must be what the script computes from the committed runs.csv; its arithmetic is
checked on a synthetic campaign with known answers; the finding it supports (a constant CPU per kv commit,
none per IO) is checked on the data; the lab model's bluestore.kv_commit_cost is that measurement.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAB = ROOT / "calibration" / "ceph-lab"
QUIET = LAB / "data" / "quiet"


def _load():
    spec = importlib.util.spec_from_file_location("ceph_lab_commit_path", LAB / "commit_path.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


cp = _load()


def test_committed_table_is_recomputed_from_runs_csv():
    assert cp.render(QUIET) == (QUIET / "commit_path.csv").read_text()


def _synthetic(tmp: Path, a: float, b: float, seed: int = 3) -> list[dict]:
    """A campaign whose other CPU is exactly a x kv commits + b x IOs."""
    rng = random.Random(seed)
    (tmp / "manifest.json").write_text(json.dumps({"invocations": [{"machine": {"nproc": 2}}, {"machine": {"nproc": 2}}]}))
    cols = ["id", "sequence", "rw", "qd", "ios", "runtime_s", "cpu_window_s", "host_busy_share", "cpu_osd_s_per_s",
            "cpu_mon_mgr_s_per_s", "cpu_fio_s_per_s", "kv_commit_count", "txc_per_kv_commit", "kv_commit_mean_ms",
            "loadavg_1m_before"]
    rows = []
    for i, (rw, qd) in enumerate([("randwrite", 1), ("randwrite", 4), ("randwrite", 16), ("randread", 1)] * 3):
        ios = rng.uniform(5e3, 3e4)
        kv = ios * rng.uniform(1.0, 3.0) if rw == "randwrite" else 20.0
        rt, win = 20.0, 20.0 + rng.uniform(0.2, 0.6)
        osd, mm, fio = rng.uniform(0.4, 1.0), 0.005, rng.uniform(0.2, 0.5)
        other = a * kv + b * ios
        busy = ((osd + mm + fio) * rt + other) / (2 * win)
        rows.append({"id": f"s{i:02d}-croit-r{i // 4}-{rw}-qd{qd}", "sequence": "croit", "rw": rw, "qd": qd, "ios": ios,
                     "runtime_s": rt, "cpu_window_s": win, "host_busy_share": busy, "cpu_osd_s_per_s": osd,
                     "cpu_mon_mgr_s_per_s": mm, "cpu_fio_s_per_s": fio, "kv_commit_count": kv,
                     "txc_per_kv_commit": 1.0, "kv_commit_mean_ms": 1.0, "loadavg_1m_before": 1.0})
    with (tmp / "runs.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows({k: repr(v) if isinstance(v, float) else v for k, v in r.items()} for r in rows)
    return rows


def test_arithmetic_on_a_synthetic_campaign(tmp_path: Path):
    a, b = 230e-6, 15e-6
    rows = _synthetic(tmp_path, a, b)
    out = cp.analyse(tmp_path)
    runs = {r["id"]: r for r in out if r["level"] == "run"}
    for r in rows:
        got = runs[r["id"]]
        assert got["other_cpu_s"] == pytest.approx(a * r["kv_commit_count"] + b * r["ios"], rel=1e-9)
        assert got["other_us_per_io"] == pytest.approx(1e6 * got["other_cpu_s"] / r["ios"], rel=1e-12)
    d = {r["id"]: r for r in out if r["level"] == "derived"}
    # the two-regressor least squares recovers the exact split
    assert d["lsq_writes"]["other_us_per_kv_commit"] == pytest.approx(1e6 * a, rel=1e-6)
    assert d["lsq_writes"]["other_us_per_io"] == pytest.approx(1e6 * b, rel=1e-6)
    # kv_commit_cost = mean over the croit randwrite QD1 runs (3 repeats)
    q1 = [runs[r["id"]]["other_us_per_kv_commit"] for r in rows if r["rw"] == "randwrite" and r["qd"] == 1]
    assert d["kv_commit_cost"]["n"] == 3
    assert d["kv_commit_cost"]["other_us_per_kv_commit"] == pytest.approx(sum(q1) / 3, rel=1e-12)


def test_mixed_nproc_and_missing_data_are_refused(tmp_path: Path, capsys):
    _synthetic(tmp_path, 1e-4, 0.0)
    (tmp_path / "manifest.json").write_text(json.dumps({"invocations": [{"machine": {"nproc": 2}}, {"machine": {"nproc": 4}}]}))
    with pytest.raises(SystemExit, match="different nproc"):
        cp.analyse(tmp_path)
    assert cp.main(["--data", str(tmp_path / "nothing")]) == 2
    assert "no runs.csv" in capsys.readouterr().out


def test_quiet_campaign_other_cpu_follows_kv_commits_not_ios():
    """The finding: at every write point (QD 1/4/16, every variant; txcs per commit 1.0 to 2.7) the CPU outside
    the lab's processes per kv commit is within 10 % of the QD1 figure, and the per-IO term of the least squares
    is below a tenth of the per-commit term x commits per IO."""
    out = cp.analyse(QUIET)
    k = next(r for r in out if r["id"] == "kv_commit_cost")["other_us_per_kv_commit"]
    pts = [r for r in out if r["level"] == "point" and r["rw"] == "randwrite"]
    assert len(pts) == 9
    for p in pts:
        assert abs(p["other_us_per_kv_commit"] / k - 1) < 0.10, p["id"]
    ls = next(r for r in out if r["id"] == "lsq_writes")
    assert abs(ls["other_us_per_io"]) < 0.1 * ls["other_us_per_kv_commit"] * 1.0  # >= 1 commit per IO at every point
    # reads: no commits to speak of; the other CPU per read (21-35 us: loopback softirqs, the loop device's
    # reads) is small against a write's (271-772 us per write)
    for p in out:
        if p["level"] == "point" and p["rw"] == "randread":
            assert p["other_us_per_io"] < 0.2 * k


def test_lab_model_books_the_measured_cost_per_kv_commit():
    sys.path.insert(0, str(ROOT))
    from simulator.devices.registry import load_profile
    from simulator.units import parse_time

    prof = load_profile("clusters/ceph_lab_kernel")
    got = parse_time(prof["params"]["bluestore"]["kv_commit_cost"])
    assert got == pytest.approx(1e-6 * round(cp.kv_commit_cost_us(QUIET)), abs=1e-12)
