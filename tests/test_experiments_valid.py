"""Every shipped experiment validates: each sweep point resolves and each system builds (what
`simrun check` does), so a model or config change cannot silently break a reproduction or what-if."""

from __future__ import annotations

import pytest

from simulator.experiment.load import load_experiment, project_root

EXPERIMENTS = sorted((project_root() / "experiments").glob("*.yaml"))


def test_there_are_experiments() -> None:
    assert any(p.stem == "mach2_vs_single" for p in EXPERIMENTS)


@pytest.mark.parametrize("path", EXPERIMENTS, ids=[p.stem for p in EXPERIMENTS])
def test_experiment_validates(path) -> None:
    exp = load_experiment(path)
    assert exp.points
    assert len({tuple(sorted(p.labels.items())) for p in exp.points}) == len(exp.points)
