import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "dev")

#: ../shared beside the project root; SIMRUN_SHARED_DIR points elsewhere (e.g. from a git worktree)
SHARED = os.environ.get("SIMRUN_SHARED_DIR") or os.path.join(os.path.dirname(__file__), "..", "..", "shared")
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def shared_dir():
    """../shared beside the project root (reference material that must not be copied into the repository).

    A fresh clone has no ../shared: tests needing it are skipped, with the reason, when it is absent; the
    figures derived from it that the rest of the suite needs are committed under tests/fixtures/."""
    path = os.path.abspath(SHARED)
    if not os.path.isdir(path):
        pytest.skip(f"reference material ../shared not found at {path} (not part of the repository)")
    return path


@pytest.fixture
def fixtures_dir() -> Path:
    """tests/fixtures: small committed inputs (each names its source in tests/fixtures/README.md)."""
    return FIXTURES
