"""Issue 11: the class defaults of the sync-write pipeline, and the workflow items of a user adding an SSD.

The enterprise NVMe PLP class has an ABSOLUTE serial FTL stage time (models/ssd/class/enterprise_plp_nvme.yaml),
derived from four drives' published ceilings; a new drive calibrated on one figure fits only the parallel
buffer/acknowledgement stage, so its ceiling is the class's whatever its 1-job speed. Expected values come from
the committed data and from the closed-loop bound min(N x 1-job rate, 1 / ftl_update) of a deterministic pipeline.
"""

from __future__ import annotations

import csv
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_ssd import make, run_jobs

from simulator.calibration.spec import load_cases
from simulator.devices.registry import load_profile
from simulator.units import parse_time as parse_seconds

ROOT = Path(__file__).resolve().parents[1]
SCALING = ROOT / "calibration" / "ssd-scaling"
DSYNC = ROOT / "calibration" / "ssd-dsync"
FTL = "devices.0.params.controller.ftl_update"


def _ref_iops(drive: str, numjobs: int, iodepth: int, rw: str = "randwrite", host: str | None = None) -> float:
    for r in csv.DictReader((ROOT / "calibration" / "reference" / "ssd_sync_scaling.csv").open(encoding="utf-8")):
        if (r["drive"] == drive and int(r["numjobs"]) == numjobs and int(r["iodepth"]) == iodepth and r["rw"] == rw
                and (host is None or host in r["host"])):
            return float(r["iops"])
    raise AssertionError(f"no row for {drive} {numjobs}x{iodepth}")


def _nvme_class_figures() -> dict[str, float]:
    """The four NVMe PLP figures of the class: per-write FTL time = 1 / sync-write ceiling, seconds."""
    fitted = {}
    for case in ("intel_p3700_400gb", "intel_p3600_800gb"):
        rows = {r["key"]: r["fitted"] for r in csv.DictReader((DSYNC / "report" / case / "params.csv").open())}
        w, s = float(rows["var.W"]), float(rows["var.s"])
        assert rows["devices.0.params.controller.ftl_cores"] in ("1", "1.0"), case
        fitted[case] = w * s
    return {
        **fitted,
        "samsung_pm9a3_1.92tb": 1 / _ref_iops("Samsung PM9A3 1.92TB", 1, 16),      # one-job plateau (upper bound)
        "intel_p4600_2tb": 1 / _ref_iops("Intel DC P4600 2TB", 32, 1, host="XFS"),  # 32 jobs (lower bound of ceiling)
    }


def test_nvme_class_ftl_time_is_the_median_of_four_drives_and_the_spec_predicts_leave_one_out():
    figs = _nvme_class_figures()
    med = statistics.median(figs.values())
    cls = load_profile("ssd/class/enterprise_plp_nvme")["params"]["controller"]
    assert parse_seconds(cls["ftl_update"]) == pytest.approx(med, rel=0.02)  # 4.5 us: the median, rounded
    assert cls["ftl_cores"] == 1
    # the drives of the median that ssd-scaling predicts use the median of the other three
    cases = {c.case: c.spec for c in load_cases(SCALING / "calibrate.yaml")}
    for case, drive in (("samsung_pm9a3_1.92tb", "samsung_pm9a3_1.92tb"), ("asnew_intel_p3700_400gb", "intel_p3700_400gb"),
                        ("asnew_intel_p3600_800gb", "intel_p3600_800gb")):
        others = statistics.median(v for k, v in figs.items() if k != drive)
        spec = cases[case]
        assert parse_seconds(spec.fixed[FTL]) == pytest.approx(others, rel=0.005), case
        # only the parallel buffer/acknowledgement stage is fitted; nothing is tied to it
        assert [f.key for f in spec.free] == ["devices.0.params.controller.write_latency"], case
        assert not spec.tied, case


def test_nvme_route_predicts_the_class_ceiling_whatever_the_one_job_speed():
    """Committed ssd-scaling predictions of the NVMe PLP route sit at 1 / ftl_update (the FTL stage is the slowest
    stage once N x 1-job rate exceeds it), e.g. the PM9A3 at QD16..128."""
    rows = list(csv.DictReader((SCALING / "report" / "cases.csv").open(encoding="utf-8")))
    pm = [r for r in rows if r["case"] == "samsung_pm9a3_1.92tb" and r["set"] == "prediction"]
    assert len(pm) == 4
    prof = load_profile("ssd/samsung_pm9a3_1.92tb")["params"]["controller"]
    bound = 1 / parse_seconds(prof["ftl_update"])
    for r in pm:
        assert float(r["simulated"]) == pytest.approx(bound, rel=0.01), r["item"]


@pytest.mark.parametrize("slow", [20e-6, 80e-6])
def test_slow_drive_extra_time_in_the_parallel_stage_scales_further(slow):
    """Two drives of the absolute-FTL class (P3700 geometry), one slower at one job because its parallel
    (buffer/ack) stage is longer: both saturate at 1 / ftl_update, so the slow one gains more from 1 to 64 jobs
    (its gain = ceiling x its 1-job cycle)."""
    ftl = 4.5e-6
    params = load_profile("ssd/datasheet/intel_p3700_400gb")["params"]
    g = {}
    for name, wl in (("fast", 1e-6), ("slow", slow)):
        over = {"capacity": "16GB", "controller": {"ftl_update": ftl, "ftl_cores": 1, "write_latency": wl}}
        assert make(over, base=params).cfg.write_bound()[1] == "ftl"
        # closed loop, one job: the cycle is the sum of the stages (host, HIL, link, buffer, FTL)
        one = run_jobs(make(over, base=params), 1, 0.05, host_overhead=2.8e-6)
        many = run_jobs(make(over, base=params), 64, 0.05, warmup=0.005, host_overhead=2.8e-6)
        cfg = make(over, base=params).cfg
        cycle = 2.8e-6 + cfg.interface.command_overhead + 4096 / cfg.interface.link_rate + wl + ftl
        assert 1 / one.iops == pytest.approx(cycle, rel=0.01), name
        assert many.iops == pytest.approx(1 / ftl, rel=0.02), name
        g[name] = many.iops / one.iops
    assert g["slow"] > 1.9 * g["fast"]


# ---------------------------------------------------------------- workflow items (issue 11, section 2)
def test_user_guide_add_your_ssd_has_one_command_per_step_on_files_that_exist():
    text = (ROOT / "docs" / "user-guide.md").read_text(encoding="utf-8")
    sec = text[text.index("## Add your SSD"):]
    sec = sec[: sec.index("\n## ", 5)]
    steps = re.findall(r"^\d\. \*\*(.+?)\*\*(.*?)(?=^\d\. \*\*|\Z)", sec, flags=re.S | re.M)
    assert len(steps) == 4, [s[0] for s in steps]
    for title, body in steps:
        cmds = re.findall(r"`(simrun [^`]+)`", body)
        assert len(cmds) <= 1, (title, cmds)
        for path in re.findall(r"`((?:models|calibration)/[^` ]+\.(?:yaml|csv))`", body):
            assert (ROOT / path).is_file(), path
    assert sum(len(re.findall(r"`(simrun [^`]+)`", b)) for _, b in steps) == 3  # check, calibrate, run
    # the spec the guide runs loads, writes its profile inside models/ssd/example and reads its figures beside it
    (spec,) = load_cases(SCALING / "example" / "calibrate.yaml")
    assert spec.profile_out() == ROOT / "models" / "ssd" / "example" / "dc_s3710_200gb_fitted.yaml"


def test_calibrate_spec_yaml_errors_name_line_and_column(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: t\nsystem: [unclosed\n")
    typo = tmp_path / "typo.yaml"
    typo.write_text("name: t\nsystem:\n  devices:\n  - {name: ssd, profile: ssd/datasheet/intel_dc_s3700_400gb}\n"
                    "free:\n- {key: devices.0.params.controller.ftl_update, bounds: [1us, 1ms], scale: logg}\n"
                    "targets: [{csv: x.csv, options: {rw: write}, metrics: {a: write.iops}}]\n")
    for f, where in ((bad, "line 3, column 1"), (typo, "free.0.scale (line 6, column 69)")):
        r = subprocess.run([sys.executable, "-m", "simulator.cli", "calibrate", str(f)], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2, r.stderr
        assert where in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml", "typo.yaml"]  # nothing written


def test_ssd_dsync_uses_the_calibrate_route():
    """calibration/ssd-dsync is a `simrun calibrate` spec (no own fitting script): every case loads, writes
    models/ssd/<profile>.yaml, and every committed fitted profile names that spec as its provenance, with paths
    relative to the profile's own directory."""
    assert not list(DSYNC.glob("*.py"))
    cases = load_cases(DSYNC / "calibrate.yaml")
    assert len(cases) >= 20
    for c in cases:
        out = c.profile_out()
        assert out.parent == ROOT / "models" / "ssd", c.case
        assert out.is_file(), c.case
        prov = yaml.safe_load(out.read_text(encoding="utf-8"))["provenance"]
        assert prov["spec"] == f"../../calibration/ssd-dsync/calibrate.yaml (case {c.case})"
        assert (out.parent / prov["spec"].split(" ")[0]).resolve() == (DSYNC / "calibrate.yaml").resolve()
