"""``simrun validate``: the report generator, on the sections that are quick to simulate."""

from __future__ import annotations

import pytest
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
    # the SSD section re-simulates the committed profiles: the fresh 1-job figures match the published ones
    fresh = [line for line in text.splitlines() if line.startswith("| ") and line.count("|") == 6 and "%" in line.split("|")[5]]
    assert fresh
    assert "Where it misses" in text


def test_unknown_section_is_an_error(tmp_path):
    with pytest.raises(ConfigError):
        run_validation(quick=True, out=tmp_path / "v.md", sections=("nope",))


def test_validate_cli_help():
    r = CliRunner().invoke(app, ["validate", "--help"])
    assert r.exit_code == 0 and "--quick" in r.output
