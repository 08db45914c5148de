"""The croit cluster profile: complete sources, croit's structure, names as in the fio JSON."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml
from fio_drive import ClosedLoop

import simulator.ceph  # noqa: F401
from simulator.ceph.bench import build_cluster_from_profile
from simulator.devices.registry import device_kinds, models_dir, resolve_params
from simulator.engine import Simulation

#: hand-written cluster profiles; fitted ones (*_fitted.yaml, written by simrun calibrate) are checked by
#: tests/test_profiles.py
PROFILES = sorted(p for p in (models_dir() / "clusters").glob("*.yaml") if not p.stem.endswith("_fitted"))


def _leaves(x, pre=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _leaves(v, f"{pre}.{k}" if pre else k)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _leaves(v, f"{pre}.{i}")
    else:
        yield pre


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.stem)
def test_every_parameter_has_a_source(path: Path) -> None:
    d = yaml.safe_load(path.read_text())
    assert d["kind"] == "ceph_cluster"
    leaves = set(_leaves(d["params"]))
    sources = set(d["sources"])
    # a source names a parameter or a subtree of them (e.g. a restated list)
    assert {x for x in leaves if not any(x == s or x.startswith(s + ".") for s in sources)} == set(), "parameters without a source"
    assert {s for s in sources if not any(x == s or x.startswith(s + ".") for x in leaves)} == set(), "sources of parameters that are not set"
    resolve_params({"profile": f"clusters/{path.stem}"})  # validates


def test_croit_cluster_structure() -> None:
    # the real drive profiles are part of the repository: a missing one is a failure, never a reason to
    # fall back to stand-in drives and skip the per-drive assertions below
    assert "hdd" in device_kinds()
    for ref in ("hdd/seagate_exos_2x14", "hdd/toshiba_mg06sca10te"):
        assert (models_dir() / f"{ref}.yaml").is_file(), f"drive profile {ref} missing"
    sim = Simulation(1)
    cl = build_cluster_from_profile(sim, "clusters/croit_mach2", stand_in=False)
    assert len(cl.hosts) == 1 and len(cl.osds) == 24
    classes = Counter(o.device_class for o in cl.osds)
    assert classes == {"mach2": 12, "hdd": 12}
    st = cl.stats()
    assert {o["pgs"] for o in st["osds"]} == {64}  # croit: 64 PGs on every OSD after balancing
    for name, pool in cl.pools.items():
        cls = "mach2" if name == "test-mach2" else "hdd"
        assert pool.pg_num == 256 and pool.size == 3
        assert all(len({o.id for o in pg.acting}) == 3 and all(o.device_class == cls for o in pg.acting) for pg in pool.pgs)
    # one OSD per MACH.2 LUN; two OSDs (LVs) per MG06 drive sharing its actuator
    mach = [o.device for o in cl.osds if o.device_class == "mach2"]
    assert all(d.name in ("lun0", "lun1") for d in mach)
    lvs = [o.device for o in cl.osds if o.device_class == "hdd"]
    assert len({d.base.path for d in lvs}) == 6
    # a short run on each image
    for pool in cl.pools:
        r = ClosedLoop(sim, cl.image(pool, "test"), qd=4, rw="randwrite", n_ios=40, seed=1).run()
        assert r.ios == 40


def test_profile_names_match_the_croit_fio_jobs(shared_dir: str) -> None:
    d = yaml.safe_load((models_dir() / "clusters" / "croit_mach2.yaml").read_text())
    images = {(i["pool"], i["name"]) for i in d["params"]["images"]}
    files = sorted(Path(shared_dir, "data", "croit-mach2").glob("*.json"))
    assert files
    for f in files:
        g = json.loads(f.read_text())["global options"]
        assert g["ioengine"] == "rbd"
        assert (g["pool"], g["rbdname"]) in images, f.name


def test_bench_case_runs() -> None:
    from simulator.ceph.bench import bench_ceph_randwrite_qd64

    assert bench_ceph_randwrite_qd64(300, stand_in=True) > 0


def test_croit_sweep_runs_in_croits_order_on_the_experiment_layer() -> None:
    """The croit study is experiments/mach2_vs_single.yaml: with persist_state each pool's points
    run back to back on one cluster in croit's order (QD outermost; read, write per QD), and a
    short chain gives ordered percentiles."""
    from simulator.experiment.execute import execute_task
    from simulator.experiment.load import load_experiment, project_root
    from simulator.experiment.runner import plan_tasks

    exp = load_experiment(project_root() / "experiments" / "mach2_vs_single.yaml", [
        ("workload.global.runtime", "0.05s"), ("sweep.axes.qd.values", [1, 2, 4]),
        ("sweep.axes.mode.values", {"random": {}}), ("system.cluster.params.state_scale", 0.0005),
    ])
    chains = {t["points"][0][1]["pool"]: [(p[1]["qd"], p[1]["rw"], p[1]["pass"]) for p in t["points"]] for t in plan_tasks(exp)}
    grid = [(qd, rw, 1) for qd in (1, 2, 4) for rw in ("randread", "randwrite")]
    # croit's next-morning reruns close each pool's sequence (PROVENANCE.md): MACH.2 QD2 read; single QD2, QD4 read
    assert chains == {"mach2": [*grid, (2, "randread", 2)], "normal": [*grid, (2, "randread", 2), (4, "randread", 2)]}
    (task,) = [t for t in plan_tasks(exp) if t["points"][0][1]["pool"] == "mach2"]
    outs = execute_task(task)
    assert [o.labels["qd"] for o in outs] == [1, 1, 2, 2, 4, 4, 2]
    rerun = outs[-1].summary  # the 10 s rerun after ~6 h idle (startdelay, not counted in fio's runtime)
    assert rerun["read.total_ios"] / rerun["read.iops"] == pytest.approx(10.0, rel=0.01)
    for o in outs:
        d = "read" if o.labels["rw"] == "randread" else "write"
        assert o.summary[f"{d}.total_ios"] >= 1
        assert o.summary[f"{d}.p99_ms"] >= o.summary[f"{d}.p50_ms"]


def test_croit_measured_table_matches_the_shared_fio_json(shared_dir: str) -> None:
    """The experiment's reference table (calibration/croit-mach2/measured.csv) carries croit's
    figures: QD1 write on the MACH.2 pool as in croit's fio JSON."""
    from simulator.experiment.load import project_root
    from simulator.experiment.references import read_table

    rows = read_table(project_root() / "calibration" / "croit-mach2" / "measured.csv")
    (row,) = [r for r in rows if (r["pool"], r["rw"], r["qd"]) == ("mach2", "randwrite", "1")]
    fio = json.loads(Path(shared_dir, "data", "croit-mach2", "write-mach2-1.json").read_text())["jobs"][0]["write"]
    assert float(row["write.iops"]) == pytest.approx(fio["iops"], rel=1e-6)
    assert 200 < float(row["write.iops"]) < 300 and 2.0 < float(row["write.p50_ms"]) < 3.0
    assert not [r for r in rows if r["qd"] == "2"]  # QD2 is kept aside: not in the table
