"""HDD profiles in models/hdd: they load, validate and build; every parameter they set has a
source; and the Nutanix working-set study (reference experiment 2) comes out as published
(SATA drive, given figures) and as the study argues (10K SAS drive, kept-aside figures)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fio_drive import closed_loop

from simulator.devices.hdd import HDD, DualActuatorHDD
from simulator.devices.hdd.bench import make_hdd
from simulator.devices.registry import load_profile, models_dir

# the drives themselves; a profile in models/hdd of another kind (the TurboBoost drive is a
# flash_read_cache wrapping an HDD) is checked by tests/test_flashcache.py and tests/test_profiles.py
PROFILES = sorted(p.stem for p in (models_dir() / "hdd").glob("*.yaml") if load_profile(f"hdd/{p.stem}")["kind"] == "hdd")
WRAPPED = sorted(set(p.stem for p in (models_dir() / "hdd").glob("*.yaml")) - set(PROFILES))


def _leaves(d, prefix=""):
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            yield from _leaves(v, key + ".")
        else:
            yield key


def test_drive_wrappers_in_models_hdd_are_flash_read_caches_over_an_hdd():
    assert WRAPPED, "the TurboBoost drive profile is expected in models/hdd"
    for name in WRAPPED:
        prof = load_profile(f"hdd/{name}")
        assert prof["kind"] == "flash_read_cache", name
        assert load_profile(prof["params"]["backing"]["profile"])["kind"] == "hdd", name


def test_the_five_drives_are_there():
    for name in (
        "seagate_st91000640ns",
        "toshiba_al13seb900",
        "seagate_exos_2x14",
        "toshiba_mg06sca10te",
        "seagate_exos_15e900",
    ):
        assert name in PROFILES


@pytest.mark.parametrize("name", PROFILES)
def test_profile_builds_and_every_parameter_has_a_source(name):
    prof = load_profile(f"hdd/{name}")
    assert prof["kind"] == "hdd"
    raw = __import__("yaml").safe_load(Path(prof["file"]).read_text())
    own = set(_leaves(raw.get("params") or {}))
    sources = raw.get("sources") or {}
    missing = own - set(sources)
    assert not missing, f"{name}: parameters without a source: {sorted(missing)}"
    stray = set(sources) - own
    assert not stray, f"{name}: sources for parameters the profile does not set: {sorted(stray)}"
    for k, v in sources.items():
        assert isinstance(v, str) and len(v) > 10, k
    sim, dev = make_hdd(f"hdd/{name}")
    assert isinstance(dev, HDD | DualActuatorHDD)
    cap = prof["params"]["geometry"]["capacity"]
    from simulator.units import parse_size

    assert dev.capacity == parse_size(cap)
    r = closed_loop(sim, dev.actuators[0] if isinstance(dev, DualActuatorHDD) else dev, n_ios=200, qd=4)
    assert r.completed == 200


def _nutanix(profile: str, span_gb: float, n: int = 6000) -> tuple[float, float]:
    sim, dev = make_hdd(profile, seed=3)
    span = min(int(span_gb * 1e9), dev.capacity) // 8192 * 8192
    r = closed_loop(sim, dev, n_ios=n, qd=1, bs=8192, span=span, seed=5, warmup=100)
    return r.mean_ci()


PUBLISHED_SATA = {1: 5.5e-3, 100: 7.5e-3, 1000: 12.5e-3}  # nutanix_working_set.csv


def test_nutanix_sata_rows_are_reproduced():
    """8 KiB random reads at QD1, LBA span 1/100/1000 GB, ST91000640NS (datasheet figures only).

    The model predicts 5.1 / 6.7 / 11.8 ms against 5.5 / 7.5 / 12.5 ms published: 7 %, 10.5 % and
    6 % low — a rather constant ~0.5 ms the drive model does not contain (host IO stack, SATA
    command path). The band below is the agreement the report states, so a change to the model
    that moves these numbers is noticed."""
    for gb, pub in PUBLISHED_SATA.items():
        mean, _half = _nutanix("hdd/seagate_st91000640ns", gb)
        assert abs(mean - pub) / pub < 0.12, (gb, mean, pub)
        assert mean < pub  # the residual is host-side time, never negative


def test_nutanix_sas_prediction_has_the_studys_shape():
    """The kept-aside SAS rows are predicted, not fitted: the 10K drive is faster at every span,
    the advantage at a tiny span is rotation (~1.3 ms) and it widens as seeks grow."""
    gaps = []
    for gb in (1, 100, 1000):
        sata, hs = _nutanix("hdd/seagate_st91000640ns", gb, n=3000)
        sas, ha = _nutanix("hdd/toshiba_al13seb900", gb, n=3000)
        assert sas + ha < sata - hs
        gaps.append(sata - sas)
    assert gaps[0] == pytest.approx((60 / 7200 - 60 / 10500) / 2, abs=0.4e-3)
    assert np.all(np.diff(gaps) > 0)
