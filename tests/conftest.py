import os
import subprocess
import sys
import time
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


#: test files that drive a numba-compiled core, with the warm-up groups (tests/numba_warmup.py) they
#: wait for under xdist: they run last, after the controller's warm-up has filled numba's cache (see
#: pytest_configure); the device-core files first (their group compiles in about a minute)
COMPILED_CORE_FILES = {
    "test_core.py": ("devices",),
    "test_core_random.py": ("devices",),
    "test_hdd_queued_writes.py": ("devices",),
    "test_core_ceph.py": ("ceph",),
    "test_core_ceph_wire.py": ("ceph",),
    "test_core_ceph_devices.py": ("ceph",),
    "test_core_hdd_wcache.py": ("devices", "ceph"),
    "test_core_ceph_onode.py": ("ceph",),
    "test_core_ceph_dcache.py": ("ceph",),
    "test_core_ceph_resume.py": ("ceph",),
    "test_ceph_wakeup_rule.py": ("ceph",),
    "test_ceph_lab_kv_counter.py": ("ceph",),
    "test_ceph_speed_placement.py": ("ceph",),
    "test_core_ssd.py": ("devices",),
    "test_ceph_scale_compiled.py": ("ceph",),
    "test_core_ceph_ssd.py": ("ceph",),
}
#: environment variable naming the file tests/numba_warmup.py writes when it is done (set by the
#: controller for its workers; absent: no warm-up in this run)
WARMUP_ENV = "SIMRUN_TEST_NUMBA_WARMUP"
#: how long a worker waits for the warm-up before compiling itself (seconds; a cold compile of the
#: Ceph core is ~6 CPU minutes)
WARMUP_WAIT_S = 1800.0


def _xdist_workers(config) -> int:
    """How many xdist workers this run starts (0 without xdist, with ``-n 0``, or inside a worker)."""
    if hasattr(config, "workerinput"):
        return 0
    n = getattr(config.option, "numprocesses", None)
    if n in ("auto", "logical"):
        return os.cpu_count() or 1
    try:
        return int(n or 0)
    except (TypeError, ValueError):
        return 0


def _selects_compiled_core(config) -> bool:
    """Whether the command line may select a test of COMPILED_CORE_FILES (any directory argument does)."""
    for arg in config.args or [str(Path(__file__).parent)]:
        path = Path(arg.split("::")[0])
        if not path.is_file() or path.name in COMPILED_CORE_FILES:
            return True
    return False


def pytest_configure(config):
    """Under pytest-xdist (2 workers or more), start compiling the numba kernels into numba's on-disk
    cache in the background, once, in the controller (tests/numba_warmup.py, its two groups as two
    processes), while the workers run the tests that do not need them; the tests of
    COMPILED_CORE_FILES run last and wait for it (pytest_collection_modifyitems, _numba_warm).
    Otherwise every worker compiles the same functions at once: ~6 CPU minutes each for the Ceph
    core on a fresh clone or after any change to simulator/core. A warm cache is only loaded (seconds)."""
    if _xdist_workers(config) < 2 or not _selects_compiled_core(config):
        return
    import tempfile

    root = Path(__file__).resolve().parent.parent
    done_dir = Path(tempfile.mkdtemp(prefix="simrun-numba-warmup-"))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    script = str(Path(__file__).with_name("numba_warmup.py"))
    for group in ("ceph", "devices"):
        subprocess.Popen(
            [sys.executable, script, group, str(done_dir / group)],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    os.environ[WARMUP_ENV] = str(done_dir)  # inherited by the xdist workers, started after this hook


def pytest_unconfigure(config):
    """The controller removes the warm-up's done files (its compiled code stays in numba's cache)."""
    done_dir = os.environ.get(WARMUP_ENV)
    if done_dir and not hasattr(config, "workerinput"):
        import shutil

        shutil.rmtree(done_dir, ignore_errors=True)
        del os.environ[WARMUP_ENV]


def pytest_collection_modifyitems(session, config, items):
    """While a warm-up runs (see pytest_configure), the tests of COMPILED_CORE_FILES go last (same
    order in every worker, as xdist requires), so the workers do not wait idle for the compiler."""
    if os.environ.get(WARMUP_ENV):
        order = {"devices": 1, "ceph": 2}
        # stable: the relative order within each class is kept
        items.sort(
            key=lambda item: max((order[g] for g in COMPILED_CORE_FILES.get(item.path.name, ())), default=0)
        )


@pytest.fixture(autouse=True)
def _numba_warm(request):
    """Before a test of COMPILED_CORE_FILES, under a warm-up: wait for the groups it needs to finish (then the
    compiled code loads from the cache). A failed warm-up is reported by the test that then compiles
    (and fails, if it does) by itself; a warm-up still running after WARMUP_WAIT_S is not waited for."""
    done_dir = os.environ.get(WARMUP_ENV)
    groups = COMPILED_CORE_FILES.get(request.node.path.name, ())
    if done_dir and groups:
        deadline = time.monotonic() + WARMUP_WAIT_S
        while time.monotonic() < deadline and not all((Path(done_dir) / g).exists() for g in groups):
            time.sleep(0.5)
    yield
