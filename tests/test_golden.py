"""One golden summary.csv: a tiny fixed-seed experiment (tests/fixtures/golden/tiny.yaml) run through the
command line must reproduce the committed summary.csv byte for byte. Any change of a simulated figure,
a column or its formatting shows up here; when the change is intended, refresh the file deliberately:

    SIMRUN_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py -n 0

and review ``git diff tests/fixtures/golden/summary.csv`` before committing it.
"""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).resolve().parent / "fixtures" / "golden"


def test_golden_summary_csv(tmp_path: Path) -> None:
    out = tmp_path / "golden"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    r = subprocess.run(
        [sys.executable, "-m", "simulator.cli", "run", str(GOLDEN / "tiny.yaml"), "--out", str(out), "--workers", "1", "-q"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600, start_new_session=True,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    got = (out / "summary.csv").read_bytes()
    want_path = GOLDEN / "summary.csv"
    if os.environ.get("SIMRUN_UPDATE_GOLDEN") == "1":
        want_path.write_bytes(got)
        pytest.skip(f"SIMRUN_UPDATE_GOLDEN=1: {want_path} rewritten; review the diff before committing")
    want = want_path.read_bytes()
    if got != want:
        diff = "\n".join(difflib.unified_diff(want.decode().splitlines(), got.decode().splitlines(),
                                              "committed summary.csv", "this run", lineterm="", n=0))
        pytest.fail("summary.csv differs from the golden file (refresh deliberately with SIMRUN_UPDATE_GOLDEN=1):\n"
                    + diff[:4000])
    # the golden file itself is sane: two points, both directions, two replications
    lines = want.decode().splitlines()
    header = lines[0].split(",")
    assert len(lines) == 3 and header[:3] == ["point", "qd", "replications"]
    assert "read.iops" in header and "write.iops" in header
