"""The flagship before/after table of the HDD validation section (issue 10): the committed derived CSV agrees with
croit's measured figures and with its own errors, and the renderer counts what it shows."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from simulator.calibration.validation import HDD_FLAGSHIP_CSV, hdd_flagship_table

ROOT = Path(__file__).resolve().parents[1]


def _rows(p: Path) -> list[dict[str, str]]:
    with p.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def test_committed_csv_matches_croit_measured_and_its_errors():
    p = ROOT / HDD_FLAGSHIP_CSV
    rows = _rows(p)
    assert rows, "empty flagship before/after CSV"
    assert "before = " in p.read_text(encoding="utf-8").splitlines()[0]
    meas = {(r["pool"], r["rw"], int(r["qd"])): r for r in _rows(ROOT / "calibration" / "croit-mach2" / "measured.csv")}
    seen = set()
    for r in rows:
        key = (r["pool"], r["rw"], int(r["qd"]))
        d = "read" if r["rw"] == "randread" else "write"
        assert float(r["measured"]) == pytest.approx(float(meas[key][f"{d}.{r['metric']}"]), rel=1e-5)
        for tag in ("before", "after"):
            if r[tag]:
                assert float(r[f"{tag}_err_pct"]) == pytest.approx(100 * (float(r[tag]) / float(r["measured"]) - 1), rel=1e-4, abs=1e-3)  # the CSV keeps 6 significant digits
        seen.add((*key, r["metric"]))
    # every measured random point (2 pools x 2 directions x 5 QDs) and the four metrics
    assert len(seen) == 2 * 2 * 5 * 4


def test_table_renderer_counts(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("# before = a, after = b\n"
                 "pool,rw,qd,metric,measured,before,before_err_pct,after,after_err_pct,before_steady,after_steady\n"
                 "mach2,randread,1,iops,100,150,50,110,10,,1\n"
                 "mach2,randread,4,iops,200,100,-50,190,-5,,0\n", encoding="utf-8")
    md = "\n".join(hdd_flagship_table(p))
    assert "before = a, after = b" in md
    assert "| mach2 | randread | 1 | 100 | 150 (+50%) | 110 (+10%) |" in md
    assert "steady state (after, MSER): 1 of 2 points flagged not steady (mach2 randread QD4)." in md
    assert "steady state (before" not in md  # that revision reported no verdict
    assert "IOPS: before 0 of 2 within ±25 % (median |error| 50 %); after 2 of 2 within ±25 % (median |error| 8 %)." in md
