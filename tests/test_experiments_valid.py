"""Every shipped experiment validates: each sweep point resolves and each system builds (what
`simrun check` does), so a model or config change cannot silently break a reproduction or what-if."""

from __future__ import annotations

import itertools
import math

import pytest
import yaml

from simulator.experiment.load import load_experiment, project_root

# plan_*.yaml are capacity-planning files for `simrun plan` (validated in tests/test_plan.py);
# application studies (top-level ``study:``) have their own runner and test (tests/test_apps_study.py)
EXPERIMENTS = sorted(
    p for p in (project_root() / "experiments").glob("*.yaml")
    if not p.stem.startswith("plan_") and "study" not in yaml.safe_load(p.read_text())
) + sorted((project_root() / "calibration").rglob("probe_*.yaml"))  # experiments that back a calibration's argument


def test_there_are_experiments() -> None:
    assert any(p.stem == "mach2_vs_single" for p in EXPERIMENTS)


@pytest.mark.parametrize("path", EXPERIMENTS, ids=[p.stem for p in EXPERIMENTS])
def test_experiment_validates(path) -> None:
    exp = load_experiment(path)
    assert len(exp.points) == _expected_points(path)
    assert len({tuple(sorted(p.labels.items())) for p in exp.points}) == len(exp.points)


def _expected_points(path) -> int:
    """Number of sweep points, counted from the YAML itself: the grid's product (or the zip's length)
    minus the label combinations that an ``exclude`` entry matches, plus the reruns."""
    raw = yaml.safe_load(path.read_text())
    sweep = raw.get("sweep")
    if not sweep:
        return 1
    axes = {name: [str(v) for v in a["values"]] for name, a in sweep["axes"].items()}
    if sweep.get("mode", "grid") == "zip":
        combos = [dict(zip(axes, vals, strict=True)) for vals in zip(*axes.values(), strict=True)]
    else:
        combos = [dict(zip(axes, vals, strict=True)) for vals in itertools.product(*axes.values())]
        assert len(combos) == math.prod(len(v) for v in axes.values())

    def excluded(c: dict[str, str]) -> bool:
        for ex in sweep.get("exclude", []):
            if all(c[a] in ([str(x) for x in v] if isinstance(v, list) else [str(v)]) for a, v in ex.items()):
                return True
        return False

    return sum(1 for c in combos if not excluded(c)) + len(sweep.get("reruns", []))  # each rerun: one more point
