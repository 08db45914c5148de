"""The hardware library: every profile loads, validates against its kind, and names a source for
every parameter it sets (datasheet figure, assumption, or the calibration run that fitted it)."""

from pathlib import Path

import pytest
import yaml

from simulator.devices.registry import device_kinds, load_profile, models_dir, resolve_params

# models/catalog holds the planner's parts catalogue (simulator.plan.catalog), not device profiles
PROFILES = sorted(p for p in models_dir().rglob("*.yaml") if p.relative_to(models_dir()).parts[0] != "catalog")


def _leaves(d, pre=""):
    if isinstance(d, dict):
        for k, v in d.items():
            yield from _leaves(v, f"{pre}.{k}" if pre else str(k))
    elif isinstance(d, list) and d and all(isinstance(x, (dict, list)) for x in d):
        for i, v in enumerate(d):
            yield from _leaves(v, f"{pre}.{i}")
    else:
        yield pre


def _get(d, dotted):
    cur = d
    for part in dotted.split("."):
        if isinstance(cur, list):
            try:
                cur = cur[int(part)]
            except (ValueError, IndexError):
                return _MISSING
        elif isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return _MISSING
    return cur


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
        for leaf in _leaves(params)
        if not any(leaf == s or leaf.startswith(s + ".") or s.startswith(leaf + ".") for s in sources)
        and _get(base, leaf) != _get(params, leaf)
    ]
    assert not missing, f"{ref}: parameters without a source: {missing}"
    assert all(isinstance(v, str) and v.strip() for v in sources.values())
