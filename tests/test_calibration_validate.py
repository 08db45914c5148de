"""``simrun validate``: the report generator, on the sections that are quick to simulate."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from simulator.calibration.validation import run_validation
from simulator.cli import app
from simulator.errors import ConfigError


def test_quick_validation_of_nutanix_and_ssd_sections(tmp_path):
    out = run_validation(quick=True, out=tmp_path / "v.md", workers=1, sections=("nutanix", "ssd"))
    text = out.read_text()
    assert text.startswith("# Validation report")
    assert "**Quick mode**" in text
    assert "## 1. Nutanix" in text and "## 3. SSD DSYNC" in text
    # the published SATA rows appear with an error, the SAS rows as predictions
    assert "Seagate ST91000640NS | uniform | 1 | 5.5 |" in text
    assert "Toshiba AL13SEB900" in text and "prediction" in text
    # the SSD section re-simulates the committed profiles: the fresh 1-job figures match the published
    # ones. The rows are read from the fresh-simulation table itself (its header names a "fresh sim"
    # column), so the test fails when that simulation did not run, failed or was skipped.
    assert "Fresh re-simulation skipped" not in text
    rows = _table_after(text, "fresh sim")
    assert len(rows) == 3, "quick mode re-simulates three drives"
    for r in rows:
        assert "failed" not in r["fresh sim"], r
        published, fresh = float(r["published"]), float(r["fresh sim"])
        # the 1-job figure is fitted by construction; a quick run (~4000 IOs) stays within 10 %
        assert abs(fresh / published - 1) <= 0.10, r
    assert "Where it misses" in text


def _table_after(text: str, column: str) -> list[dict[str, str]]:
    """The rows of the first markdown table whose header has ``column``, as dicts (header -> cell)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and column in cells:
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append(dict(zip(cells, [c.strip() for c in row.strip().strip("|").split("|")], strict=True)))
            return rows
    raise AssertionError(f"no table with a {column!r} column in the report")


def test_unknown_section_is_an_error(tmp_path):
    with pytest.raises(ConfigError):
        run_validation(quick=True, out=tmp_path / "v.md", sections=("nope",))


def test_validate_cli_help():
    r = CliRunner().invoke(app, ["validate", "--help"])
    assert r.exit_code == 0 and "--quick" in r.output


def test_croit_section_names_the_spec_the_installed_fit_came_from(tmp_path):
    """The validation report names the calibration spec in the fitted profile's provenance (the croit fit of record
    is calibrate_local.yaml's, not calibrate.yaml's); a profile without one, or unreadable, falls back to the default."""
    from simulator.calibration.validation import _fit_spec

    root = Path(__file__).resolve().parents[1]
    prof = root / "models" / "clusters" / "croit_mach2_fitted.yaml"
    prov = yaml.safe_load(prof.read_text())["provenance"]["spec"]
    assert _fit_spec(prof, root, "default") == (prof.parent / prov).resolve().relative_to(root).as_posix()
    (tmp_path / "p.yaml").write_text("kind: hdd\nparams: {}\n")
    assert _fit_spec(tmp_path / "p.yaml", tmp_path, "default") == "default"
    (tmp_path / "bad.yaml").write_text("provenance: [unclosed\n")
    assert _fit_spec(tmp_path / "bad.yaml", tmp_path, "default") == "default"
    (tmp_path / "out.yaml").write_text("provenance: {spec: ../../elsewhere.yaml}\n")
    assert _fit_spec(tmp_path / "out.yaml", tmp_path, "default") == "default"  # outside the repository


def test_croit_section_reads_the_report_of_the_spec_the_fit_came_from(tmp_path):
    """The fit table comes from the report directory of the spec the installed profile names (output.report), so a
    fit installed from another campaign (calibrate_local2.yaml writes report2/) is shown with its own points."""
    from simulator.calibration.validation import _spec_report_dir

    root = Path(__file__).resolve().parents[1]
    camp = root / "calibration" / "croit-mach2"
    assert _spec_report_dir(camp / "calibrate_local.yaml") == camp / "report"
    assert _spec_report_dir(camp / "calibrate_local2.yaml") == camp / "report2"
    (tmp_path / "broken.yaml").write_text("name: [")
    assert _spec_report_dir(tmp_path / "broken.yaml") == tmp_path / "report"  # unreadable spec: the default
    assert _spec_report_dir(tmp_path / "missing.yaml") == tmp_path / "report"
