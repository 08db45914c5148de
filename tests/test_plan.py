"""simrun plan: cost and capacity arithmetic, ranking, pruning soundness, bad input, resume, Dask.

The small plans here use a tiny catalogue written by the test (flash OSDs, a few hosts, low loads) so
that every candidate can be simulated in seconds.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from simulator.experiment.load import project_root
from simulator.plan.candidates import Candidate, enumerate_shapes
from simulator.plan.catalog import Catalog
from simulator.plan.solve import load_plan, plan_candidates, rank, run_plan
from simulator.plan.spec import PlanSpec

ROOT = project_root()

CATALOG = {
    "drives.yaml": {
        "drives": [
            {"name": "hdd10", "kind": "hdd", "form_factor": "3.5", "capacity": "10TB", "profile": "hdd/toshiba_mg06sca10te",
             "price": {"usd": 200, "date": "2026-01", "source": "test figure"}},
            {"name": "nvme2", "kind": "ssd", "form_factor": "u.2", "capacity": "1.92TB", "profile": "ssd/samsung_pm9a3_1.92tb",
             "price": {"usd": 300, "illustrative": True}},
        ]
    },
    "hosts.yaml": {
        "hosts": [
            {"name": "box", "bays": {"3.5": 12, "u.2": 4}, "cores": 8, "ram": "96GiB", "nic_slots": 2,
             "price": {"usd": 3000, "illustrative": True}},
            # a host whose CPU is 20x slower than the model's reference: the CPU bound prunes it
            {"name": "slowbox", "bays": {"3.5": 12, "u.2": 4}, "cores": 2, "threads_per_core": 1, "cpu_speed": 0.05,
             "ram": "64GiB", "nic_slots": 2, "price": {"usd": 1000, "illustrative": True}},
        ]
    },
    "network.yaml": {
        "nics": [
            {"name": "nic10g", "bandwidth": "10Gbit/s", "price": {"usd": 100, "illustrative": True}},
            # a very slow link: the network bound prunes it
            {"name": "nic20m", "bandwidth": "20Mbit/s", "price": {"usd": 10, "illustrative": True}},
        ],
        "switch_ports": [
            {"name": "p10g", "bandwidth": "10Gbit/s", "price": {"usd": 50, "illustrative": True}},
            {"name": "p1g", "bandwidth": "1Gbit/s", "price": {"usd": 5, "illustrative": True}},
        ],
    },
}


def small_plan(tmp: Path, **over) -> Path:
    cat = tmp / "catalog"
    cat.mkdir(exist_ok=True)
    for name, doc in CATALOG.items():
        (cat / name).write_text(yaml.safe_dump(doc))
    plan = {
        "name": "small",
        "catalog": "catalog",
        "requirement": {
            "usable_capacity": "1TB",
            "workload": [{"rw": "randwrite", "bs": "4k", "clients": 4, "iodepth": 32}],
            "slo": {"percentile": 99, "latency": "20ms", "target_iops": 1200},
            "failure": {"survive": "none"},
        },
        "space": {"shapes": [{
            "name": "flash", "host": ["box", "slowbox"], "drive": ["nvme2"], "osds_per_host": [2],
            "protection": [{"replicated": 2}], "nic": ["nic10g", "nic20m"], "hosts": {"min": 2, "max": 3},
        }]},
        "simulation": {"hosts": 2, "ramp": "0.3s", "runtime_min": "0.6s", "runtime_max": "1.5s", "ios_per_probe": 1000,
                       "max_probes": 4, "rel_tol": 0.3, "max_data_per_osd": "8GiB"},
    }
    for k, v in over.items():
        plan[k] = v
    path = tmp / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    return path


# ------------------------------------------------------------------------------------ arithmetic
def test_cost_and_capacity_arithmetic(tmp_path):
    spec, catalog, _ = load_plan(small_plan(tmp_path, space={"shapes": [{
        "name": "hdd", "host": ["box"], "drive": ["hdd10"], "osds_per_host": [12], "db_device": ["nvme2"], "db_fanout": [6],
        "protection": [{"replicated": 3}, {"ec": [4, 2]}], "nic": ["nic10g"], "hosts": {"min": 1, "max": 20}}]}))
    rep, ec = enumerate_shapes(spec, catalog)
    # one host: chassis 3000 + 12 x 200 + ceil(12/6)=2 x 300 + NIC 100 + the cheapest port >= 10G (50)
    assert rep.host_cost() == 3000 + 12 * 200 + 2 * 300 + 100 + 50 == 6150
    assert rep.cost(7) == 7 * 6150
    failure = spec.requirement.failure.model_copy(update={"survive": "host"})
    # 7 hosts, one lost: 6 x 12 x 10 TB raw = 720 TB; x 1/3 x 0.8 fill = 192 TB usable
    assert rep.usable(7, failure, 0.8) == pytest.approx(720e12 / 3 * 0.8)
    assert ec.usable(7, failure, 0.8) == pytest.approx(720e12 * 4 / 6 * 0.8)
    # 500 TB at 1/3 and 0.8 per host (96e12/3*0.8 = 32 TB): 16 hosts, +1 for the host failure
    assert rep.min_hosts_capacity(500e12, failure, 0.8) == 17
    assert rep.usable(16, failure, 0.8) < 500e12 <= rep.usable(17, failure, 0.8)
    assert ec.min_hosts_width(failure) == 7 and rep.min_hosts_width(failure) == 4
    osds = failure.model_copy(update={"survive": "osds", "osds": 2})
    assert rep.usable(3, osds, 0.8) == pytest.approx((36 - 2) * 10e12 / 3 * 0.8)
    assert rep.usable(rep.min_hosts_capacity(100e12, osds, 0.8), osds, 0.8) >= 100e12
    assert rep.usable(rep.min_hosts_capacity(100e12, osds, 0.8) - 1, osds, 0.8) < 100e12


def test_structural_limits(tmp_path):
    from simulator.plan.candidates import structural_problem

    spec, catalog, _ = load_plan(small_plan(tmp_path, space={"shapes": [{
        "name": "s", "host": ["box"], "drive": ["hdd10"], "osds_per_host": [12, 13], "db_device": ["none", "nvme2"],
        "db_fanout": [1, 12], "db_size": "200GiB", "nic": ["nic10g"]}]}))
    problems = {(s.osds_per_host, s.db_fanout): structural_problem(s) for s in enumerate_shapes(spec, catalog)}
    assert problems[(12, 12)].startswith("fan-out")  # 12 x 200 GiB > 1.92 TB
    assert problems[(12, 1)].startswith("bays")  # 12 DB devices, 4 U.2 bays
    assert problems[(13, 0)].startswith("bays")  # 13 drives, 12 bays
    assert problems[(12, 0)] is None


def _cand(shape, hosts, status, est):
    c = Candidate(shape, hosts, status)
    c.sustainable = (est * 0.9, est, est * 1.1)
    return c


def test_a_dominated_candidate_is_never_reported_cheapest(tmp_path):
    spec, catalog, _ = load_plan(small_plan(tmp_path))
    shapes = enumerate_shapes(spec, catalog)
    a = next(s for s in shapes if s.host.name == "box" and s.nic.name == "nic10g")
    # two candidates at the same cost: the one sustaining less is dominated
    weak, strong = _cand(a, 3, "meets", 1500.0), _cand(a, 3, "meets", 2500.0)
    dearer = _cand(a, 4, "meets", 9000.0)
    cheap_fail = _cand(a, 2, "fails", 800.0)
    for order in ([weak, strong, dearer, cheap_fail], [strong, weak, cheap_fail, dearer], [dearer, cheap_fail, weak, strong]):
        ranked = rank(order)
        assert ranked[0] is strong
        assert cheap_fail not in ranked
        assert [c.cost for c in ranked] == sorted(c.cost for c in ranked)
    from simulator.plan.report import pareto_front

    front = pareto_front([weak, strong, dearer, cheap_fail])
    assert weak not in front and strong in front and dearer in front and cheap_fail in front


# ------------------------------------------------------------------------------------ pruning soundness
def test_pruning_never_drops_a_candidate_that_simulation_accepts(tmp_path):
    """Small space, every candidate simulated at the load it would carry: whatever the analytic bounds
    pruned fails in simulation (and something survives and passes, so the check can fail)."""
    from simulator.plan.simulate import probe, slice_layout

    spec, catalog, _ = load_plan(small_plan(tmp_path))
    cands, _units, _ = plan_candidates(spec, catalog)
    pruned = [c for c in cands if c.status == "pruned" and c.reason.startswith("bound")]
    kept = [c for c in cands if c.status == "pending"]
    assert {c.bottleneck for c in pruned} == {"network", "cpu"}
    assert kept
    target = spec.requirement.target_iops
    verdicts = {}
    for c in cands:
        if c.status not in ("pruned", "pending") or not (c.status == "pending" or c.reason.startswith("bound")):
            continue
        layout = slice_layout(c.shape, spec, c.hosts)
        p = probe(c.shape, spec, layout, target / c.hosts)
        verdicts[(c.shape.key, c.hosts)] = p
        if c.status == "pruned":
            assert not p.ok, f"pruned {c.shape.key} x {c.hosts} ({c.reason}) meets the SLO in simulation"
    assert any(verdicts[(c.shape.key, c.hosts)].ok for c in kept)


# ------------------------------------------------------------------------------------ running
def _simrun(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, "-m", "simulator.cli", *args], capture_output=True, text=True, env=env,
                          cwd=cwd or ROOT, timeout=600)


def test_plan_end_to_end_resumes_and_answers(tmp_path):
    plan = small_plan(tmp_path, space={"shapes": [{
        "name": "flash", "host": ["box"], "drive": ["nvme2"], "osds_per_host": [2], "protection": [{"replicated": 2}, {"ec": [2, 1]}],
        "nic": ["nic10g", "nic20m"], "hosts": {"min": 2, "max": 4}}]})
    out = tmp_path / "out"
    r = _simrun("plan", str(plan), "--out", str(out), "--workers", "2", "-q")
    assert r.returncode == 0, r.stderr
    assert "cheapest configurations meeting the SLO" in r.stdout
    rows = {(row["key"], int(row["hosts"])): row for row in _csv(out / "candidates.csv")}
    assert len(rows) == 2 * 2 * 3  # (rep2, ec2+1) x 2 NICs x hosts 2..4
    ec_rows = [row for (k, _), row in rows.items() if ":ec2+1:" in k]
    # erasure-coded candidates are simulated like the others (an EC pool in the slice), none left out
    assert ec_rows and not any(row["status"] == "not-simulated" for row in rows.values())
    assert any(row["status"] in ("meets", "fails") for row in ec_rows)
    doc = json.loads((out / "plan.json").read_text())
    best = doc["cheapest"][0]
    assert best["nic"] == "nic10g" and best["status"] == "meets"
    assert best["hosts"] == min(int(row["hosts"]) for row in rows.values() if row["status"] == "meets")
    assert (out / "pareto.png").stat().st_size > 1000
    first = {f.name: f.read_text() for f in (out / "units").iterdir()}
    assert first
    again = _simrun("plan", str(plan), "--out", str(out))  # with the progress display (it once crashed rendering)
    assert again.returncode == 0, again.stderr
    assert "Traceback" not in again.stderr and "configurations searched" in again.stderr
    assert "0 configurations simulated" in again.stdout and f"{len(first)} reused" in again.stdout
    assert {f.name: f.read_text() for f in (out / "units").iterdir()} == first


def _csv(path: Path) -> list[dict]:
    import csv

    with path.open() as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda p: p["requirement"]["slo"].update({"percentile": 97}), "requirement.slo.percentile"),
        (lambda p: p["space"]["shapes"][0].update({"drive": ["no_such_drive"]}), "space.shapes.0.drive"),
        (lambda p: p["requirement"].update({"usable_capacity": "lots"}), "requirement.usable_capacity"),
        (lambda p: p.update({"colour": "blue"}), "colour"),
    ],
)
def test_bad_plan_exits_2_with_one_message(tmp_path, mutate, field):
    path = small_plan(tmp_path)
    raw = yaml.safe_load(path.read_text())
    mutate(raw)
    path.write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    r = _simrun("plan", str(path), "--out", str(out), "-q")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert r.stderr.count("error:") == 1 and field in r.stderr and "plan.yaml" in r.stderr
    assert not out.exists()


def test_bad_catalogue_price_names_the_file(tmp_path):
    path = small_plan(tmp_path)
    bad = tmp_path / "catalog" / "network.yaml"
    doc = yaml.safe_load(bad.read_text())
    doc["nics"][0]["price"] = {"usd": 100}  # neither dated and sourced nor illustrative
    bad.write_text(yaml.safe_dump(doc))
    r = _simrun("plan", str(path), "--out", str(tmp_path / "out"), "-q")
    assert r.returncode == 2 and "network.yaml" in r.stderr and "illustrative" in r.stderr and "Traceback" not in r.stderr


def test_shipped_plans_and_catalogue_validate():
    plans = sorted((ROOT / "experiments").glob("plan_*.yaml"))
    assert plans
    for p in plans:
        spec, catalog, _ = load_plan(p)
        assert isinstance(spec, PlanSpec) and isinstance(catalog, Catalog)
        for part in catalog.drives + catalog.hosts + catalog.nics + catalog.switch_ports:
            assert part.price.illustrative or (part.price.date and part.price.source)


def test_dask_scheduler_at_an_address_gives_the_process_pool_answer(tmp_path):
    distributed = pytest.importorskip("dask.distributed", reason="dask.distributed is the optional scale-out dependency")
    plan = small_plan(tmp_path, space={"shapes": [{
        "name": "flash", "host": ["box"], "drive": ["nvme2"], "osds_per_host": [2], "protection": [{"replicated": 2}],
        "nic": ["nic10g", "nic20m"], "hosts": {"min": 2, "max": 3}}]})
    local = run_plan(plan, tmp_path / "local", workers=1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        remote = run_plan(plan, tmp_path / "dask", scheduler="dask", address=cluster.scheduler_address)
    assert remote.simulated == local.simulated >= 1
    a = {(c.shape.key, c.hosts): (c.status, c.sustainable) for c in local.candidates}
    b = {(c.shape.key, c.hosts): (c.status, c.sustainable) for c in remote.candidates}
    assert a == b  # same seed, same runs: common random numbers make the answer independent of where it ran
    assert all(math.isfinite(c.cost) for c in remote.candidates)


def test_slice_keeps_per_osd_data_fill_and_cache_ratio(tmp_path):
    from simulator.ceph.config import ClusterConfig
    from simulator.plan.simulate import _cluster_params, slice_layout

    spec, catalog, _ = load_plan(small_plan(tmp_path, requirement={
        "usable_capacity": "100TB", "workload": [{"rw": "randwrite", "bs": "4k", "clients": 40}],
        "slo": {"percentile": 99, "latency": "50ms", "target_iops": 5000}, "failure": {"survive": "none"}},
        space={"shapes": [{"name": "h", "host": ["box"], "drive": ["hdd10"], "osds_per_host": [12],
                           "protection": [{"replicated": 3}], "nic": ["nic10g"]}]}))
    (shape,) = enumerate_shapes(spec, catalog)
    lay = slice_layout(shape, spec, h_ref=10)
    assert lay["hosts"] == 3 and lay["clients"] == [12]  # 40 clients x 3/10
    # full cluster: 100 TB x 3 copies over 120 OSDs = 2.5 TB per OSD = 25 % of a 10 TB drive
    assert lay["fill"] == pytest.approx(0.25)
    scale = lay["data_scale"]
    assert lay["data_per_osd"] == pytest.approx(8 * 2**30)  # max_data_per_osd of the small plan
    assert scale == pytest.approx(8 * 2**30 / 2.5e12)
    # the simulated HDD shrinks with the data: the data still covers 25 % of its stroke
    assert lay["drive_capacity"] == pytest.approx(8 * 2**30 / 0.25, rel=1e-3)
    # the slice's images hold the slice's share of the scaled data
    assert sum(lay["clients"]) * lay["image_size"] == pytest.approx(100e12 * 3 / 10 * scale, rel=0.01)
    base = ClusterConfig.model_validate(_cluster_params(shape, 1, 1, 1, spec, []))
    assert lay["bluestore"]["onode_cache_size"] == round(base.bluestore.onode_cache_size * scale) > 1


# ------------------------------------------------------------------------------------ erasure coding, recovery
def _one_shape(tmp_path, protection, failure, drive="nvme2", latency="20ms", db="none", **sim):
    spec, catalog, _ = load_plan(small_plan(tmp_path, requirement={
        "usable_capacity": "1TB", "workload": [{"rw": "randwrite", "bs": "4k", "clients": 4, "iodepth": 32}],
        "slo": {"percentile": 99, "latency": latency, "target_iops": 1200}, "failure": failure},
        space={"shapes": [{"name": "one", "host": ["box"], "drive": [drive], "osds_per_host": [2], "protection": [protection],
                           "db_device": [db], "db_fanout": [2], "nic": ["nic10g"], "hosts": {"min": 2, "max": 8}}]},
        simulation={"hosts": 2, "ramp": "0.3s", "runtime_min": "0.6s", "runtime_max": "1.5s", "ios_per_probe": 1000,
                    "max_probes": 4, "rel_tol": 0.3, "max_data_per_osd": "8GiB", **sim}))
    (s,) = enumerate_shapes(spec, catalog)
    return spec, s


def test_ec_candidates_are_simulated_with_an_ec_pool_and_its_overhead(tmp_path):
    """EC k+m: capacity k/(k+m), data per OSD (k+m)/k per client byte, an erasure-coded data pool in the
    slice that every client write reaches as k+m shard writes (4 KiB writes on a 4 KiB stripe unit)."""
    from simulator.experiment.execute import execute_task
    from simulator.plan.simulate import slice_experiment, slice_layout

    spec_r, rep = _one_shape(tmp_path, {"replicated": 2}, {"survive": "none"})
    spec_e, ec = _one_shape(tmp_path, {"ec": [2, 1]}, {"survive": "none"})
    none = spec_e.requirement.failure
    # 3 hosts x 2 x 1.92 TB = 11.52 TB raw; usable x 2/3 (EC 2+1) vs x 1/2 (size 2), x 0.8 fill
    assert ec.usable(3, none, 0.8) == pytest.approx(11.52e12 * 2 / 3 * 0.8)
    assert rep.usable(3, none, 0.8) == pytest.approx(11.52e12 / 2 * 0.8)
    assert ec.min_hosts_width(none) == 3 and ec.min_hosts_width(none.model_copy(update={"survive": "host"})) == 4
    lr, le = slice_layout(rep, spec_r, 3), slice_layout(ec, spec_e, 3)
    # the same client data per slice host: fill per OSD in the ratio of the raw bytes per client byte, 1.5 : 2
    assert le["fill"] / lr["fill"] == pytest.approx(1.5 / 2)
    assert le["fill"] == pytest.approx(1e12 * 1.5 / 6 / 1.92e12)
    raw, offered, _ = slice_experiment(ec, spec_e, le, 200.0)
    pools = {p["name"]: p for p in raw["system"]["cluster"]["params"]["pools"]}
    assert pools["rbd_data"]["type"] == "erasure" and pools["rbd_data"]["erasure"]["k"] == 2
    assert pools["rbd_data"]["rule"]["failure_domain"] == "host"
    assert all(im["data_pool"] == "rbd_data" for im in raw["system"]["cluster"]["params"]["images"])
    (o,) = execute_task({"source": "test", "points": [(0, {}, raw)], "replication": 0, "seed": 1})
    st = o.doc["sim"]["cluster"]["pools"]["rbd_data"]["ec"]
    assert st["client_writes"] >= 0.9 * offered * float(raw["workload"]["global"]["runtime"])
    assert st["shard_writes"] == 3 * st["client_writes"]  # every 4 KiB write rewrites its stripe's k+m = 3 chunks
    assert o.doc["sim"]["cluster"]["pools"]["rbd"]["size"] == 3  # the metadata pool stays replicated


def test_recovery_slice_fails_a_host_and_loads_the_survivors(tmp_path):
    """With slo_during_recovery the slice has width + 1 hosts, loses its last host at the end of the ramp,
    measures from recovery_settle later, and its survivors carry the slice's whole healthy load."""
    from simulator.plan.simulate import slice_experiment, slice_layout

    spec, s = _one_shape(tmp_path, {"replicated": 2}, {"survive": "host", "slo_during_recovery": True})
    lay = slice_layout(s, spec, h_ref=6)
    assert lay["hosts"] == 3 and lay["failure"] == {"host": "node2"}
    # 3 hosts' load on the 2 survivors: x 3/2 client ops each (a 6-host cluster's survivors: x 6/5), and the
    # copies a survivor writes stay 2 x 100/s per host (2/3 of the PGs write 1 copy while degraded), as in the cluster
    raw, offered, _ = slice_experiment(s, spec, lay, 100.0)
    assert offered == pytest.approx(100.0 * 3, rel=0.02)
    params = raw["system"]["cluster"]["params"]
    assert params["events"] == [{"at": float(spec.simulation.ramp), "action": "out", "host": "node2"}]
    assert raw["workload"]["global"]["ramp_time"] == pytest.approx(float(spec.simulation.ramp) + 2.0)
    # N OSDs: the first N ids fail; survivors per OSD as in a cluster of h_ref hosts
    spec2, s2 = _one_shape(tmp_path, {"replicated": 2}, {"survive": "osds", "osds": 1, "slo_during_recovery": True})
    lay2 = slice_layout(s2, spec2, h_ref=6)
    assert lay2["failure"] == {"osds": [0]} and lay2["hosts"] == 2
    with pytest.raises(Exception, match="slo_during_recovery needs a failure"):
        _one_shape(tmp_path, {"replicated": 2}, {"survive": "none", "slo_during_recovery": True})


def test_slo_during_recovery_is_judged_on_the_backfill(tmp_path):
    """The same load, healthy and while a lost host's data is backfilled (HDD OSDs with an NVMe DB/WAL,
    where backfill is cheap to simulate): the healthy slice meets the bound, the recovering one does not,
    and its window lies inside the backfill (data moved, backfill not finished)."""
    from simulator.plan.simulate import probe, slice_layout

    kw = {"drive": "hdd10", "db": "nvme2", "latency": "5ms", "hosts": 3, "recovery_settle": "0.5s", "runtime_max": "3s"}
    spec_h, s_h = _one_shape(tmp_path, {"replicated": 2}, {"survive": "host"}, **kw)
    spec_r, s_r = _one_shape(tmp_path, {"replicated": 2}, {"survive": "host", "slo_during_recovery": True}, **kw)
    lay_h, lay_r = slice_layout(s_h, spec_h, 3), slice_layout(s_r, spec_r, 3)
    assert lay_h["hosts"] == lay_r["hosts"] == 3 and "failure" not in lay_h
    healthy = probe(s_h, spec_h, lay_h, 60.0)
    during = probe(s_r, spec_r, lay_r, 60.0)
    rec = during.info["recovery"]
    assert rec["window"] == "inside the backfill" and rec["recovery_s"] is None and rec["recovered_gib"] > 0.1
    assert "recovery" not in healthy.info
    # healthy: decided by its 95 % CI, p99 within 5 ms
    assert healthy.ok and healthy.ci is not None and healthy.ci[1] <= 5.0
    # the backfill's reads and writes load the surviving HDDs, and client ops on objects not yet
    # recovered wait for them: the clients' p99 exceeds the bound (its CI is wide: rare long waits)
    assert not during.ok and during.metric > 5.0 and during.ci is not None and during.ci[1] > 5.0
    assert during.info["util"]["drive"] > healthy.info["util"]["drive"] + 0.3


@pytest.mark.heavy
def test_recovery_lowers_the_highest_load_that_meets_the_slo(tmp_path):
    """The planner's load search on one slice, healthy and judged during a host's backfill: the highest
    per-host load meeting p99 <= 5 ms while recovering is below the healthy one's CI-decided lower end."""
    from simulator.plan.simulate import probe, slice_layout
    from simulator.search import highest_load

    kw = {"drive": "hdd10", "db": "nvme2", "latency": "5ms", "hosts": 3, "recovery_settle": "0.5s", "runtime_max": "3s"}
    found = {}
    for during in (False, True):
        spec, s = _one_shape(tmp_path, {"replicated": 2}, {"survive": "host", "slo_during_recovery": during}, **kw)
        lay = slice_layout(s, spec, 3)
        found[during] = highest_load(lambda x, s=s, spec=spec, lay=lay: probe(s, spec, lay, x), 10.0, 320.0,
                                     rel_tol=0.25, max_probes=6, bound=5.0, expand=2.0)
    healthy, recovering = found[False], found[True]
    assert healthy.lower is not None and healthy.lower >= 40.0
    assert recovering.load is None or recovering.load < healthy.lower
