import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "dev")

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "shared")


@pytest.fixture
def shared_dir():
    """../shared beside the project root (reference material); tests needing it fail loudly without it."""
    path = os.path.abspath(SHARED)
    assert os.path.isdir(path), f"reference material not found at {path} (CI has ../shared beside the clone)"
    return path
