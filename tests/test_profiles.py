"""The hardware library: every profile loads, validates against its kind, and names a source for
every parameter it sets (datasheet figure, assumption, or the calibration run that fitted it)."""

from pathlib import Path

import pytest
import yaml

from simulator.calibration.profile import param_leaves
from simulator.config.base import get_dotted
from simulator.devices.registry import device_kinds, load_profile, models_dir, resolve_params

# models/catalog holds the planner's parts catalogue (simulator.plan.catalog), not device profiles
PROFILES = sorted(p for p in models_dir().rglob("*.yaml") if p.relative_to(models_dir()).parts[0] != "catalog")


def _get(d, dotted):
    return get_dotted(d, dotted, _MISSING)


_MISSING = object()


def _ref(path: Path) -> str:
    return str(path.relative_to(models_dir()).with_suffix(""))


def test_library_not_empty():
    kinds = {load_profile(_ref(p))["kind"] for p in PROFILES}
    assert {"hdd", "ssd", "ceph_cluster"} <= kinds


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: _ref(p))
def test_profile_validates_and_sources_every_parameter(path):
    import simulator.ceph  # noqa: F401  (registers ceph_cluster)

    ref = _ref(path)
    prof = load_profile(ref)
    assert prof["kind"] in device_kinds()
    resolve_params({"profile": ref})  # validates against the kind's model
    own = yaml.safe_load(path.read_text())
    sources = own.get("sources") or {}
    # a parameter repeated unchanged from the profile it extends keeps that profile's source
    base = load_profile(own["extends"])["params"] if own.get("extends") else {}
    params = own.get("params") or {}
    missing = [
        leaf
        for leaf in param_leaves(params)
        if not any(leaf == s or leaf.startswith(s + ".") or s.startswith(leaf + ".") for s in sources)
        and _get(base, leaf) != _get(params, leaf)
    ]
    assert not missing, f"{ref}: parameters without a source: {missing}"
    assert all(isinstance(v, str) and v.strip() for v in sources.values())


def test_param_leaves_walks_lists_of_dicts_by_index():
    """The calibration's profile writer and the sources check above share one walk: a fixed key inside a list
    (hosts.0.drives.1...) is a leaf of its own and needs its own source; a list of plain numbers is one leaf."""
    params = {"hosts": [{"name": "h", "drives": [{"count": 6}, {"device": {"params": {"cache": {"write_cache": "volatile"}}}}]}],
              "seek": {"table": [1, 2, 3]}, "pools": []}
    assert param_leaves(params) == ["hosts.0.name", "hosts.0.drives.0.count",
                                    "hosts.0.drives.1.device.params.cache.write_cache", "seek.table", "pools"]
