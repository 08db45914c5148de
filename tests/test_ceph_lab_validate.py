"""``simrun validate``'s Ceph lab section (quick mode: the committed tables, no fresh replay) shows the model of
record (ceph_lab_quiet_kernel_fitted), its within-bound counts as the committed prediction table gives them, its
counters and the measured CPU per kv commit outside the daemons."""

from __future__ import annotations

import csv
from pathlib import Path

from simulator.calibration.validation import LAB_RECORD_PROFILE, LAB_RECORD_TAG, run_validation

QUIET = Path(__file__).resolve().parent.parent / "calibration" / "ceph-lab" / "data" / "quiet"


def _rows(p: Path) -> list[dict[str, str]]:
    with p.open(newline="") as f:
        return list(csv.DictReader(ln for ln in f if not ln.startswith("#")))


def test_lab_section_reports_the_model_of_record(tmp_path):
    text = run_validation(quick=True, out=tmp_path / "v.md", workers=1, sections=("ceph-lab",)).read_text()
    assert "## Ceph lab" in text
    assert LAB_RECORD_PROFILE.split("/")[-1] in text
    pred = [r for r in _rows(QUIET / f"prediction_{LAB_RECORD_TAG}.csv") if r["set"] == "prediction"]
    assert len(pred) == 16
    for m, label, bound in (("iops", "IOPS", "±25 %"), ("p50_ms", "p50", "±35 %"), ("p99_ms", "p99", "±35 %")):
        ok = sum(r[f"{m}_ok"] == "True" for r in pred)
        assert f"{label} within {bound} at {ok} of 16 predicted points" in text
    # the counters table of the model of record and the commit-path table (9 write points)
    assert "kv commit = Ceph's `kv_commit_lat`" in text
    i = text.index("| sequence | QD | txcs/kv commit | other CPU µs per kv commit | per write |")
    body = text[i:].split("\n\n")[0].splitlines()[2:]
    assert len(body) == 9
    assert "`bluestore.kv_commit_cost` = 237 µs" in text
