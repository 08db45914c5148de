"""Application studies (simulator.experiment.appstudy): the shipped study file validates, the
functional warm-up maps IOs onto members exactly as the RAID does, the load search and the
latency-target interpolation, and a miniature study runs end to end (queue-device drives)."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.devices.raid.layout import plan_read, plan_write
from simulator.engine import Simulation
from simulator.errors import ConfigError
from simulator.experiment import appstudy as A
from simulator.experiment.load import project_root

STUDY = project_root() / "experiments" / "exos15e900_cache.yaml"


def test_shipped_study_validates():
    spec = A.load_study(STUDY)
    assert list(spec.configs) == ["512n", "512n+AWC", "512e+AWC+TurboBoost"]
    assert A.is_study(STUDY)
    assert not A.is_study(project_root() / "experiments" / "raid_levels.yaml")


def test_bad_study_is_one_clear_error(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text(STUDY.read_text().replace("baseline: 512n", "baseline: 512x"))
    with pytest.raises(ConfigError) as e:
        A.load_study(p)
    assert "oltp.baseline" in str(e.value) and str(p) in str(e.value)


class _Rec:
    """A member stand-in recording what the warm-up hands it."""

    def __init__(self):
        self.got = []


@pytest.mark.parametrize("level", ["5", "10", "0"])
def test_warm_mapping_matches_the_raid_plans(level):
    from simulator.devices.raid import RaidConfig, RaidVolume

    sim = Simulation(1)
    cfg = RaidConfig.model_validate(
        {"level": level, "chunk": "64KiB", "members": {"count": 6, "device": {"kind": "queue", "params": {"capacity": "1GiB"}}}}
    )
    vol = RaidVolume(cfg, "v", sim.root)
    rng = np.random.default_rng(3)
    n = 400
    sizes = rng.integers(1, 64, n) * 4096
    offs = rng.integers(0, (vol.capacity - sizes) // 4096) * 4096
    ops = rng.integers(0, 2, n)
    mo, mm, moff, msz = A._map_raid(vol, ops, offs, sizes)
    got = sorted(zip(mo.tolist(), mm.tolist(), moff.tolist(), msz.tolist(), strict=True))
    want = []
    for op, off, sz in zip(ops.tolist(), offs.tolist(), sizes.tolist(), strict=True):
        if op == 0:
            plan = plan_read(vol.layout, off, sz, frozenset(), lambda m: 0)
            if level == "10":  # the warm-up alternates the copy by row: compare the mirror set only
                plan = [type(o)(o.phase, o.member // 2 * 2, o.op, o.offset, o.size) for o in plan]
        else:
            plan = [o for o in plan_write(vol.layout, off, sz, frozenset(), "rmw")[0] if o.op == 1]
        for o in plan:
            want.append((o.op, o.member, o.offset, o.size))
    if level == "10":
        got = sorted((o, m // 2 * 2 if o == 0 else m, a, s) for o, m, a, s in got)
    # the warm-up keeps one piece per chunk (and a parity piece per data piece); the plans merge
    # pieces: compare the 4 KiB blocks each member sees read, and written (invalidated)
    def blocks(rows):
        return {(o, m, b) for o, m, a, s in rows for b in range(a // 4096, (a + s) // 4096)}

    g, w = blocks(got), blocks(want)
    assert {x for x in g if x[0] == 0} == {x for x in w if x[0] == 0}
    # every block the warm-up invalidates is one the RAID writes (the plan's parity range may be the
    # hull of a row's pieces: it writes a little more)
    assert {x for x in g if x[0] == 1} <= {x for x in w if x[0] == 1}
    assert len({x for x in g if x[0] == 1}) >= 0.9 * len({x for x in w if x[0] == 1})
    reads = [r for r in got if r[0] == 0]
    assert sum(r[3] for r in reads) == int(sizes[ops == 0].sum())  # every byte read exactly once


def test_warm_tree_reaches_the_flash_caches_of_a_raid():
    from simulator.devices.registry import build_device

    sim = Simulation(2)
    drive = {"kind": "flash_read_cache", "params": {"backing": {"kind": "queue", "params": {"capacity": "2GiB"}}, "size": "64MiB", "admission": "on_miss"}}
    raid = build_device(A._raid_spec({"level": 5, "chunk": "64KiB", "members": {"count": 4}, "volumes": [{"name": "a", "size": "1GiB"}]}, drive), "r", sim.root)
    vol = raid.volumes["a"]
    offs = np.arange(0, 32) * 65536 * 3
    A.warm_tree(vol, np.zeros(32, np.int64), offs, np.full(32, 65536))
    assert sum(m.valid_bytes for m in raid.members) == 32 * 65536  # every chunk read landed in one member cache


def test_interpolation_at_the_latency_target():
    pts = [{"threads": 1, "iops": 100, "lat_mean_ms": 2}, {"threads": 2, "iops": 200, "lat_mean_ms": 4}, {"threads": 4, "iops": 300, "lat_mean_ms": 8}]
    assert A._interp_at_target(pts, 5.0) == pytest.approx(225.0)
    assert A._interp_at_target(pts, 1.0) is None
    assert A._interp_at_target(pts, 9.0) == 300
    assert A._pick_load([{"threads": 8, "lat_mean_ms": 5}, {"threads": 16, "lat_mean_ms": 9}], 8.0) == 16


def test_miniature_study_runs_end_to_end(tmp_path):
    q = {"kind": "queue", "params": {"capacity": "200GB", "servers": 4, "service": {"dist": "exponential", "mean": 0.004}}}
    cached = {"kind": "flash_read_cache", "params": {"backing": q, "size": "1GB"}}
    r5 = {"level": 5, "chunk": "64KiB", "members": {"count": 4}}
    raw = {
        "study": "app_study",
        "name": "mini",
        "workers": 1,
        "configs": {"plain": q, "cached": cached},
        "iometer": {"volume": {"level": 10, "members": {"count": 4}}, "mixes": {"write": 0, "read": 100}, "qd": [1, 4], "runtime": 0.3, "ramp": 0.05},
        "webserver": {"volume": {**r5, "volumes": [{"name": "web", "size": "50GB"}]}, "app": {"files": 2000, "hot_bytes": "1GB"}, "users": [2], "runtime": 0.5, "ramp": 0.1, "precondition": {"requests": 500}},
        "oltp": {"data_volume": {**r5, "volumes": [{"name": "a", "size": "10GB"}, {"name": "b", "size": "10GB"}]}, "log_volume": {"level": 10, "members": {"count": 2}},
                 "baseline": "plain", "threads": [2, 8], "checkpoints_min": [0, 0.05], "sample_s": 0.3, "ramp": 0.05},
        "vdi": {"volume": {**r5, "volumes": [{"name": "datastore", "size": "100GB"}]}, "app": {"desktops": 3, "interval": 0.5, "read_bytes": "4MB", "image_size": "4GiB", "delta_size": "1GiB"}},
    }
    spec = A.StudySpec.model_validate(raw)
    doc = A.run_study(spec, tmp_path, workers=1, log=lambda s: None)
    f = doc["findings"]
    for m, _ in A.METRICS:
        if m != "hotband_iops_at_target":
            assert all(f[m][lb] is not None for lb in ("plain", "cached")), m
    assert f["oltp_iops"]["cached"] > 0 and doc["oltp_threads"] in (2, 8)
    ol = [r for r in doc["results"] if r["workload"] == "oltp"]
    assert all(len(r["timeline"]) == 2 for r in ol)
    # the cached configuration replayed the OLTP stream into its caches between the checkpoints
    assert next(r for r in ol if r["config"] == "cached")["replayed_ios"] > 0
    assert next(r for r in ol if r["config"] == "plain")["replayed_ios"] == 0
    assert (tmp_path / "results.json").is_file() and (tmp_path / "oltp_over_time.png").is_file()
    rows = A.findings_rows(spec, f, {"oltp_iops": {"plain": 2 * f["oltp_iops"]["plain"]}})
    r = next(x for x in rows if x["metric"] == "oltp_iops" and x["config"] == "plain")
    assert r["error"] == pytest.approx(-0.5) and r["kind"] == "given, predicted"
    # a figure named under reference.fitted is reported as fit; the report keeps the table simrun validate reads
    spec2 = A.StudySpec.model_validate({**raw, "reference": {"table": "x.csv", "columns": {"plain": "p"}, "metrics": {},
                                                             "fitted": {"oltp_iops": ["plain"]}, "fit_note": "note."}})
    rows2 = A.findings_rows(spec2, f, {"oltp_iops": {"plain": 2 * f["oltp_iops"]["plain"]}})
    assert next(x for x in rows2 if x["metric"] == "oltp_iops" and x["config"] == "plain")["kind"] == "fit"
    md = A.report_markdown(spec2, {**doc, "rows": rows2}, "simrun mini.yaml")
    table = [ln for ln in md.splitlines() if ln.startswith("| ") and len(ln.strip().strip("|").split("|")) == 7]
    assert len(table) == 1 + len(A.METRICS)  # header + one row per metric, 1 + 3 cells per configuration
    assert "**Fitted**: OLTP IOPS (end of the timeline) (plain). note." in md
    assert "± " in md  # the run-length table carries CIs


def test_iometer_points_are_iometer_access_specifications():
    """A study mix becomes an Iometer access specification run through simulator.workloads.iometer:
    one worker, qd outstanding IOs, the mix's read share, 100 % random, no random map (Iometer has none)."""
    io = A.IometerSpec.model_validate({"volume": {}, "mixes": {"70:30": 70, "write": 0}, "qd": [4], "bs": "4k", "runtime": 2, "ramp": 0.5})
    glob, jobs = A.iometer_point(io, "70:30", 16)
    assert glob["iodepth"] == 16 and glob["numjobs"] == 1 and glob["runtime"] == 2 and glob["ramp_time"] == 0.5
    (job,) = jobs
    (line,) = job["sim_mix"]
    assert job["filename"] == "vol"
    assert line["options"] == {"rw": "randrw", "bs": 4096, "norandommap": 1, "rwmixread": 70}
    _, (wjob,) = A.iometer_point(io, "write", 1)
    assert wjob["sim_mix"][0]["options"]["rw"] == "randwrite"


def test_awc_fields_reach_only_non_volatile_write_caches():
    tb = {"profile": "hdd/seagate_exos_15e900_512e_awc_turboboost"}
    out = A.with_awc(tb, {"destage_window": 7, "persistent_size": 2**24})
    c = out["params"]["backing"]["params"]["cache"]
    assert c["destage_window"] == 7 and c["persistent_size"] == 2**24
    assert A.with_awc({"profile": "hdd/seagate_exos_15e900"}, {"destage_window": 7})["params"]["cache"]["destage_window"] == 16
    spec = A.load_study(STUDY)
    d = A.study_drive(spec, "512n+AWC", 2**24)["params"]["cache"]
    assert d["persistent_size"] == 2**24 and d["destage_window"] == spec.awc["destage_window"]


def test_compressed_awc_fill_measures_the_destage_limited_rate():
    """Iometer random writes on a RAID 10 of two AWC drives whose non-volatile cache is scaled to
    1 MiB: the cache is full at the end (the run measured the sustained state, not the burst), the
    MSER verdict is not 'drifting', and the host rate matches the drives' destage capacity: the same
    drives with WCE=0 and destage_window commands queued each (SPTF over the same candidates),
    within the two runs' CIs."""
    awc = {"profile": "hdd/seagate_exos_15e900_awc", "params": {"cache": {"destage_window": 16}}}
    off = {"profile": "hdd/seagate_exos_15e900"}
    raw = {"study": "app_study", "name": "awc", "configs": {"awc": awc, "off": off},
           "iometer": {"volume": {"level": 10, "chunk": "64KiB", "members": {"count": 2}}, "mixes": {"write": 0},
                       "qd": [8], "runtime": 3.0, "ramp": 0.5, "precondition": {"nv_cache": "1MiB"}}}
    spec = A.StudySpec.model_validate(raw)
    r = A.task_iometer(spec.model_dump(mode="json"), "awc", "write", 8)
    assert r["nv_fill"] > 0.9
    assert r["steady"]["write"]["steady"] is not False
    # WCE=0 with 16 commands queued per drive: one host IO is two drive writes (mirror), so QD 16
    ref = A.task_iometer(spec.model_dump(mode="json"), "off", "write", 16)
    assert abs(r["iops"] - ref["iops"]) <= 3 * (r["iops_ci"] + ref["iops_ci"]), (r["iops"], r["iops_ci"], ref["iops"], ref["iops_ci"])
    # ... and far below the burst rate the cache acknowledges at (ack in ~0.2 ms at QD 8: > 20,000 IOPS)
    assert r["iops"] < 0.1 * 8 / 0.2e-3


def test_tasks_are_ordered_longest_first():
    """The study's tasks go to the workers longest first: the boot storms, then the flash
    configuration's applications before the same applications without flash, Iometer points last,
    deeper queues first."""
    from simulator.experiment import appstudy as A

    spec = A.load_study(STUDY)
    raw = spec.model_dump(mode="json")
    flash = {lb: A._spec_has_flash(d) for lb, d in spec.configs.items()}
    assert flash == {"512n": False, "512n+AWC": False, "512e+AWC+TurboBoost": True}
    cost = lambda fn, *a: A._cost(fn, (raw, *a), flash)  # noqa: E731
    assert cost(A.task_vdi, "512n") > cost(A.task_oltp_timeline, "512e+AWC+TurboBoost", 48) > cost(A.task_hotband, "512e+AWC+TurboBoost")
    assert cost(A.task_web, "512e+AWC+TurboBoost") > cost(A.task_web, "512n") > cost(A.task_iometer, "512n", "write", 64)
    assert cost(A.task_iometer, "512n", "write", 64) > cost(A.task_iometer, "512n", "write", 1)
    assert cost(A.task_iometer, "512n", "write", 16) > cost(A.task_iometer, "512n", "read", 16)


def test_report_states_the_cpu_split():
    from simulator.experiment import appstudy as A

    doc = {"cpu_user_s": 200.0, "cpu_system_s": 9.0, "cpu_by_workload_s": {"iometer": 30.0, "vdi": 90.0}}
    assert A._cpu_split(doc) == ": 200 s user + 9 s system; tasks by workload: vdi 90 s, iometer 30 s"
    assert A._cpu_split({}) == ""
