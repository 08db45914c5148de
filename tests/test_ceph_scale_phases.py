"""The scale measurement's memory by phase (``measure(..., compiled=True, phases=True)``): every compiled
phase of both runs is logged with VmRSS / VmHWM on entry and return, in call order, and the peak it
reports is the highest of them."""

from __future__ import annotations

import sys

import pytest


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmRSS / VmHWM are read from Linux's /proc")
def test_measure_logs_the_memory_of_each_compiled_phase():
    from simulator.ceph.scale import measure

    r = measure(1, 600, "randwrite", warm_ios=300, qd=16, compiled=True, phases=True)
    names = [p["phase"] for p in r["phases"]]
    # the warm-up builds the state, the timed run resumes it (held); both write back
    assert names.count("ceph_fio.run_workload_ceph") == 2
    assert names.count("ceph_build.build_state") == 1 and names.count("ceph_onode_build.build") == 1
    assert names.count("ceph_onode_build.write_back") == 2
    assert names.index("ceph_build.build_state") < names.index("ceph_onode_build.build") < names.index(
        "ceph_onode_build.write_back")
    for p in r["phases"]:
        assert 0 < p["rss_in_mb"] <= p["hwm_in_mb"] <= p["hwm_out_mb"] and p["rss_out_mb"] <= p["hwm_out_mb"]
        assert p["cpu_s"] >= 0
    assert r["peak_rss_build_mb"] <= r["phases"][0]["hwm_in_mb"]
    assert max(p["hwm_out_mb"] for p in r["phases"]) <= r["peak_rss_mb"]
    assert r["ios"] == 600 and r["events_per_io"] > 1
