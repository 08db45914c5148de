"""Simulating a shape: analytic bounds, the simulated slice, probes and the SLO search.

The slice
---------
A candidate cluster of H hosts is simulated as a *slice* of ``S`` of its hosts (S = the
simulation's ``hosts``, at least the pool's width) carrying the S/H share of the load: the same
per-host and per-OSD load, the same PG density (pg_num rounded to a power of two), the same
per-OSD data, and the clients' share (at least one client per group). CRUSH spreads PGs evenly, so
what decides an IO's latency - the queues at its OSDs, their drives, CPU and NIC - is the same in
the slice as in the whole cluster; what the slice cannot show is the cluster-wide tail of the
slowest of many more OSDs. The search variable is therefore the offered load *per host*; a
candidate of H hosts sustains H x (per-host result). One search per shape answers every host count.

Time is scaled too: each probe warms up for ``ramp`` and measures ``ios_per_probe`` IOs (within
``[runtime_min, runtime_max]``) instead of minutes; the percentile's batch-means CI says what that
costs in precision, and a probe whose busiest resource is saturated (utilisation >= 0.97) or that
completes less than 97 % of the offered IOs fails whatever its percentile (its backlog would grow
in a longer run).

Data is scaled when it would be too large to simulate (memory): see :func:`slice_layout`. When the
catalogue's drive is larger than the simulated device (a smaller sibling stands in), the data
fills the simulated device to the same fraction, at most ``max_data_per_osd``.
"""

from __future__ import annotations

import math
import time
from typing import Any

from simulator.plan.candidates import Shape
from simulator.plan.spec import PlanSpec
from simulator.search import Probe, SearchResult, highest_load

__all__ = ["SATURATED", "analytic_bounds", "characterise", "run_unit", "slice_experiment", "slice_layout"]

EC_DATA_POOL = "rbd_data"  # the erasure-coded data pool of an EC candidate's images
SATURATED = 0.97  # utilisation (or completed/offered share) beyond which a probe counts as unsustainable
MARGIN = 3.0  # pruning bounds use MARGIN x a drive's own saturated rate: optimistic on purpose


def _pow2(x: float) -> int:
    return max(1, 1 << max(0, round(math.log2(max(1.0, x)))))


# ----------------------------------------------------------------------------------- drive ceilings
def characterise(profile: str, params: dict[str, Any], rw: str, bs: int, iodepth: int = 32, ios: int = 4000) -> dict[str, float]:
    """The drive alone, saturated (closed loop at ``iodepth``): IOPS and bytes/s for one pattern."""
    from simulator.experiment.execute import execute_task

    raw = {
        "name": "characterise", "seed": 1,
        "system": {"devices": [{"name": "d", "profile": profile, "params": params}]},
        "workload": {"global": {"ioengine": "libaio", "sim_slat": 0, "rw": rw, "bs": int(bs), "iodepth": iodepth,
                                "number_ios": ios, "filename": "d", "norandommap": 1}, "jobs": [{"name": "c"}]},
    }
    (o,) = execute_task({"source": "planner characterisation", "points": [(0, {}, raw)], "replication": 0, "seed": 1})
    _release_run()
    iops = sum(o.summary.get(f"{d}.iops", 0.0) or 0.0 for d in ("read", "write"))
    return {"iops": float(iops), "bw": float(iops * bs)}


def analytic_bounds(shape: Shape, spec: PlanSpec, ceilings: dict[str, dict[str, float]]) -> dict[str, float]:
    """Optimistic per-host client IOPS each resource could carry (no queueing, no overheads).

    * drives: every client write puts at least one IO on a data drive per copy (size, or m+1 chunks
      of a small EC write), every read one; the drive's saturated IOPS for the pattern x MARGIN
    * DB/WAL: every written byte goes through the WAL once per copy; sequential-write bandwidth x MARGIN
    * network: a host receives its share of every copy (writes) and sends its share of reads
    * CPU: the OSD model's CPU per client IO (primary + replica op costs only) on the host's servers
    """
    from simulator.ceph.config import ClusterConfig

    r = spec.requirement
    wf = r.write_fraction
    bs = r.mean_bs
    prot = shape.protection
    copies_io = prot.replicated if prot.replicated else prot.ec[1] + 1
    copies_bytes = prot.write_copies
    out: dict[str, float] = {}
    d = ceilings[f"data:{shape.drive.name}"]
    per_io = wf * copies_io + (1 - wf)
    out["drive"] = shape.osds_per_host * d["iops"] * MARGIN / per_io
    if shape.db and wf > 0:
        db = ceilings[f"db:{shape.db.name}"]
        out["db_wal"] = shape.db_per_host * db["bw"] * MARGIN / (wf * bs * copies_bytes)
    nic = float(shape.nic.bandwidth)
    out["network"] = nic / (bs * (wf * copies_bytes + (1 - wf)))
    cfg = ClusterConfig.model_validate(_cluster_params(shape, 1, 1, 1, spec, []))
    osd = cfg.osd
    cpu_io = wf * (osd.write_cost + (copies_io - 1) * osd.subop_cost) + (1 - wf) * osd.read_cost
    servers = cfg.hosts[0].cpu.servers * cfg.hosts[0].cpu.speed
    if cpu_io > 0:
        out["cpu"] = servers / cpu_io
    return out


# ----------------------------------------------------------------------------------- the slice
def slice_layout(shape: Shape, spec: PlanSpec, h_ref: int) -> dict[str, Any]:
    """Hosts, clients and data of the simulated slice standing for clusters of ``h_ref`` hosts and more.

    Data scaling: the slice's OSDs hold the data they would hold in the full cluster, unless that is
    more than ``simulation.max_data_per_osd`` (memory); then the data set is scaled by ``data_scale``
    and with it what decides how it behaves: the BlueStore onode and data caches (same hit ratios),
    and an HDD's capacity (the data fills the same fraction of the stroke, so seeks are as long).
    """
    from simulator.ceph.config import ClusterConfig

    r = spec.requirement
    s = min(max(spec.simulation.hosts, shape.protection.width), max(h_ref, shape.protection.width))
    fail = failure_plan(shape, spec, s) if r.failure.slo_during_recovery else None
    if fail is not None:
        s = fail["hosts"]
    clients = [max(1, round(g.clients * s / max(h_ref, s))) for g in r.workload]
    n_img = sum(clients)
    data = float(r.usable_capacity) * s / max(h_ref, s)  # client data the slice holds in the full cluster
    per_osd = data * shape.protection.write_copies / (s * shape.osds_per_host)
    fill = per_osd / float(shape.drive.capacity)
    sim_cap = _simulated_capacity(shape)
    want = min(fill * sim_cap, float(spec.simulation.max_data_per_osd))
    scale = min(1.0, want / per_osd) if per_osd > 0 else 1.0
    img = max(64 << 20, int(data * scale / n_img) >> 22 << 22)
    cfg = ClusterConfig.model_validate(_cluster_params(shape, 1, 1, 1, spec, []))
    out: dict[str, Any] = {
        "hosts": s, "clients": clients, "image_size": img, "data_scale": scale, "h_ref": h_ref,
        "fill": fill, "data_per_osd": per_osd * scale,
    }
    if fail is not None:
        out["failure"] = fail["failure"]
    if scale < 1.0:
        out["bluestore"] = {"onode_cache_size": max(1, round(cfg.bluestore.onode_cache_size * scale)),
                            "cache": {"size": max(1 << 20, int(cfg.bluestore.cache.size * scale))}}
        if shape.drive.kind == "hdd":
            out["drive_capacity"] = int(max(want / max(fill, 1e-9), 16 << 30)) >> 20 << 20  # whole MiB (sector multiple)
    return out


def failure_plan(shape: Shape, spec: PlanSpec, s: int) -> dict[str, Any]:
    """How a slice of ``s`` hosts stands for a cluster of ``h_ref`` hosts that lost a host (or N OSDs).

    * what fails: the slice's last host (``survive: host``), or its first N OSDs in id order
      (``survive: osds``; host node0 first), marked ``out`` at once, so CRUSH remaps their PG shards
      and backfill rebuilds them on the survivors. The slice gets one host more than the pool width
      for a host failure (somewhere to re-protect to), as the cluster does.
    * the failed share of data: the slice's OSDs hold what they hold in the full cluster (same data
      per OSD, see :func:`slice_layout`), so the lost host holds a host's worth, and every PG with a
      shard on it is backfilled from its survivors. Per surviving OSD the backfill runs at its
      throttled pace (osd_max_backfills, osd_recovery_max_active, sleep / mClock share) in the slice as
      in the cluster, as long as each OSD has a PG to backfill (true until a cluster is so large
      that one host's PGs are fewer than the OSDs: then fewer OSDs backfill at once and the slice is
      pessimistic). The slice's backfill lasts longer than the cluster's (more data per survivor);
      only a window inside it is measured. When the slice's data is scaled down (``data_scale`` < 1)
      each PG's backfill is that much shorter, and the re-peering that ends it that much more
      frequent: the slice's ``recovery.peering_time`` is scaled by ``data_scale`` so that the share of
      PG time blocked in peering stays the cluster's. The peering right after the failure is not
      measured (``simulation.recovery_settle``).
    * the client load: the slice's hosts keep the healthy per-host load and the survivors carry all of it.
      Against a cluster of H >= s hosts that is exact for the drives and conservative for the rest:
      a PG with a shard on the lost host (a share width/H of them) writes one copy (shard) fewer while
      degraded (the model sends no client writes to backfill targets), so the copies written per
      surviving host are x * width whatever H is (x = healthy per-host client IOPS), in the slice as
      in the cluster; the client ops each survivor's primaries take rise by s/(s-1) in the slice,
      >= H/(H-1) in the cluster. (``survive: osds`` likewise, per OSD.)
    """
    f = spec.requirement.failure
    n = shape.osds_per_host
    width = shape.protection.width
    if f.survive == "host":
        s = max(s, width + 1)
        lost = n
        failure = {"host": f"node{s - 1}" if s > 1 else "node"}
    else:
        lost = min(f.osds, n * max(s, width) - 1)
        s = max(s, width + -(-lost // n) if lost >= n else width)
        failure = {"osds": list(range(lost))}
    return {"hosts": s, "failure": failure}


def _simulated_capacity(shape: Shape) -> float:
    from simulator.devices.registry import resolve_params

    _, cfg = resolve_params({"profile": shape.drive.profile, "params": shape.drive.params})[:2]
    cap = getattr(cfg, "capacity", None) or getattr(getattr(cfg, "geometry", None), "capacity", None)
    return float(cap) if cap else float(shape.drive.capacity)


def _cluster_params(shape: Shape, hosts: int, pg_num: int, n_images: int, spec: PlanSpec, images: list[dict],
                    layout: dict[str, Any] | None = None) -> dict[str, Any]:
    h = shape.host
    layout = layout or {}
    drive_params = dict(shape.drive.params)
    if layout.get("drive_capacity"):
        geo = dict(drive_params.get("geometry") or {})
        geo["capacity"] = layout["drive_capacity"]
        drive_params["geometry"] = geo
    host: dict[str, Any] = {
        "name": "node", "count": hosts,
        "cpu": {"cores": h.cores, "threads_per_core": h.threads_per_core, "speed": h.cpu_speed},
        "nic": {"bandwidth": float(shape.nic.bandwidth)},
        "drives": [{"count": shape.osds_per_host, "device": {"profile": shape.drive.profile, "params": drive_params},
                    "device_class": "data"}],
    }
    if shape.db:
        host["db_devices"] = {"count": shape.db_per_host,
                              "device": {"profile": shape.db.profile, "params": dict(shape.db.params)},
                              "db_size": shape.db_size}
    prot = shape.protection
    extra: dict[str, Any] = {"bluestore": layout["bluestore"]} if layout.get("bluestore") else {}
    fd = "host" if hosts >= prot.width else "osd"
    if prot.ec is None:
        pools = [{"name": "rbd", "size": prot.replicated, "pg_num": pg_num, "rule": {"device_class": "data", "failure_domain": fd}}]
    else:
        # RBD on an erasure-coded pool: the image's data objects in the EC pool (rbd create --data-pool),
        # its header/metadata in a small replicated pool (not exercised by data IO)
        pools = [
            {"name": "rbd", "size": min(3, hosts), "pg_num": 8,
             "rule": {"device_class": "data", "failure_domain": "host" if hosts >= 3 else "osd"}},
            {"name": EC_DATA_POOL, "type": "erasure", "pg_num": pg_num,
             "erasure": {"k": prot.ec[0], "m": prot.ec[1], "stripe_unit": int(prot.stripe_unit)},
             "rule": {"device_class": "data", "failure_domain": fd}},
        ]
        images = [dict(im, data_pool=EC_DATA_POOL) for im in images]
    fail = layout.get("failure")
    if fail is not None:
        at = float(spec.simulation.ramp)
        extra["events"] = ([{"at": at, "action": "out", "host": fail["host"]}] if "host" in fail
                           else [{"at": at, "action": "out", "osd": i} for i in fail["osds"]])
        # a PG re-peers when its backfill ends; with the data scaled by data_scale a PG's backfill ends
        # 1/data_scale times sooner than in the cluster, so its peering pause is data_scale times as long:
        # the share of PG time blocked in peering stays the cluster's (see failure_plan)
        from simulator.ceph.config import RecoveryConfig

        extra["recovery"] = {"peering_time": float(RecoveryConfig().peering_time) * float(layout.get("data_scale", 1.0))}
    return {
        **extra,
        "ceph_release": shape.release,
        "rotational": shape.drive.kind == "hdd",
        "hosts": [host],
        # the client host stands for all the clients' machines: enough CPU and network not to be the limit
        "client": {"cpu": {"cores": 256}, "nic": {"bandwidth": "400Gbit/s"}},
        "pools": pools,
        "images": images,
    }


def slice_experiment(shape: Shape, spec: PlanSpec, layout: dict[str, Any], per_host_load: float, level: int = 0) -> tuple[dict, float, float]:
    """The experiment (raw mapping) of one probe; returns (raw, offered IOPS of the slice, window s)."""
    r = spec.requirement
    sim = spec.simulation
    s = layout["hosts"]
    total = per_host_load * s  # with a failure the survivors carry all of it (see failure_plan)
    window = min(sim.runtime_max, max(sim.runtime_min, sim.ios_per_probe / max(total, 1e-9))) * (2**level)
    prot = shape.protection
    pg_num = _pow2(shape.pgs_per_osd * s * shape.osds_per_host / prot.width)
    images, jobs = [], []
    offered = 0.0
    for gi, (g, share, n) in enumerate(zip(r.workload, r.shares(), layout["clients"], strict=True)):
        rate = max(1, round(total * share / n))
        for c in range(n):
            name = f"{g.name}{c}"
            images.append({"pool": "rbd", "name": name, "size": layout["image_size"], "prefilled": True})
            job: dict[str, Any] = {"name": name, "rbdname": name, "rw": g.rw, "iodepth": g.iodepth}
            if g.bssplit:
                job["bssplit"] = g.bssplit
            else:
                job["bs"] = int(g.bs)
            if g.rw in ("randrw", "rw"):
                job["rwmixread"] = g.rwmixread
                wr = max(0, round(rate * (100 - g.rwmixread) / 100))
                rd = max(0, rate - wr)
                job["rate_iops"] = f"{rd},{wr}"
            else:
                job["rate_iops"] = rate
            offered += rate
            jobs.append(job)
        del gi
    raw = {
        "name": "plan_probe", "seed": spec.seed,
        "system": {"cluster": {"kind": "ceph_cluster", "params": _cluster_params(shape, s, pg_num, len(images), spec, images, layout)}},
        "workload": {
            "global": {"ioengine": "rbd", "pool": "rbd", "direct": 1, "rate_process": "poisson", "time_based": 1,
                       "ramp_time": float(sim.ramp) + (float(sim.recovery_settle) if layout.get("failure") else 0.0),
                       "runtime": float(window), "group_reporting": 1, "norandommap": 1},
            "jobs": jobs,
        },
    }
    return raw, offered, window


def _release_run() -> None:
    """Free the finished run's simulated cluster now. It is cyclic garbage (components refer to their
    parents and the simulation), which only a full collection frees; the event loop freezes every
    object alive at its start (``engine.core.gc_quiet``), the dead clusters of earlier probes
    included, so without this a worker kept every probe's cluster until a full collection happened
    to run (4.0 GB peak RSS for experiments/plan_rbd_500tb.yaml, one worker growing probe by probe).
    A full collection costs well under a second here and changes no result."""
    import gc

    gc.collect()


def _bottleneck(util: dict[str, float], throttled: float) -> str:
    """The resource that limits: a throttle that blocks > 10 % of writes, else the busiest resource;
    when nothing is busier than 70 % the latency is the service time itself ("latency floor")."""
    if throttled > 0.1:
        return "throttle"
    if not util:
        return "-"
    top = max(util, key=lambda k: util[k])
    return top if util[top] >= 0.7 else f"latency floor ({top})"


def probe(shape: Shape, spec: PlanSpec, layout: dict[str, Any], per_host_load: float, level: int = 0) -> Probe:
    """One simulated run of the slice at ``per_host_load`` client IOPS per host."""
    from simulator.experiment.execute import execute_task

    raw, offered, window = slice_experiment(shape, spec, layout, per_host_load, level)
    t0 = time.perf_counter()
    (o,) = execute_task({"source": f"plan candidate {shape.key}", "points": [(0, {}, raw)], "replication": 0, "seed": spec.seed})
    _release_run()
    wall = time.perf_counter() - t0
    row = o.summary
    pct = spec.requirement.slo.percentile
    bound_ms = float(spec.requirement.slo.latency) * 1e3
    metric, half = -1.0, 0.0
    done = 0.0
    for d in ("read", "write"):
        v = row.get(f"{d}.p{pct:g}_ms")
        if row.get(f"{d}.total_ios"):
            done += row.get(f"{d}.iops") or 0.0
            if v is None:
                metric, half = math.inf, math.inf
            elif v > metric:
                metric, half = float(v), float(row.get(f"{d}.p{pct:g}_ms_ci") or 0.0)
    if metric < 0:
        metric, half = math.inf, math.inf
    rec: dict[str, Any] = {}
    if layout.get("failure"):
        # judged on the window, which starts recovery_settle after the failure; it must lie inside the
        # backfill: when the backfill ended within it, the client ops completed until then decide
        # (the cluster's during-recovery phase, no CI); when it ended before the window, nothing was measured
        rs = row.get("ceph.recovery_s")
        rec = {"recovery_s": None if rs is None or not math.isfinite(rs) else round(float(rs), 3),
               "recovered_gib": round(float(row.get("ceph.recovered_gib") or 0.0), 3),
               "during_p99_ms": row.get("ceph.during_p99_ms"), "during_iops": row.get("ceph.during_iops")}
        if rec["recovery_s"] is not None:
            dp = row.get(f"ceph.during_p{pct:g}_ms") if pct in (50.0, 99.0) else None
            if not row.get("ceph.during_iops"):
                rec["window"] = "after the backfill (it ended before the window): the window's healthy figure"
            elif dp is not None and math.isfinite(dp):
                rec["window"] = "the backfill ended inside the window: judged on the ops completed until then"
                metric, half = float(dp), math.inf
            else:
                rec["window"] = "the backfill ended inside the window (no phase figure for this percentile: the window's)"
        else:
            rec["window"] = "inside the backfill"
    cl = ((o.doc.get("sim") or {}).get("cluster") or {})
    hosts = cl.get("hosts") or {}
    nic = max([max(h.get("nic_tx_utilisation", 0.0), h.get("nic_rx_utilisation", 0.0)) for h in hosts.values()] or [0.0])
    util = {
        "drive": float(row.get("ceph.data_util_max") or 0.0),
        "db_wal": float(row.get("ceph.db_util_max") or 0.0),
        "cpu": float(row.get("ceph.cpu_util_max") or 0.0),
        "network": float(nic),
    }
    throttled = float(row.get("ceph.throttled_share") or 0.0)
    completed = done / offered if offered else 0.0
    # an open loop above what a resource can serve grows its queue without bound, which a short window's
    # percentile understates: a busy resource fails the probe. During recovery the backfill keeps the drives
    # busy by design (a throttled closed loop that takes what the scheduler gives it), so there only the
    # clients' own completions (>= 97 % of what they offered) tell a sustainable load from an unsustainable one
    saturated = completed < SATURATED or (max(util.values()) >= SATURATED and not layout.get("failure"))
    ok = metric <= bound_ms and not saturated
    ci = None if not math.isfinite(half) else (metric - half, metric + half)
    if saturated and ci is not None:
        ci = (max(ci[0], bound_ms * (1 + 1e-9)), max(ci[1], bound_ms * (1 + 1e-9)))  # a saturated run is decided: it fails
    info = {
        "util": {k: round(v, 4) for k, v in util.items()}, "throttled_share": round(throttled, 4),
        "completed_share": round(completed, 4), "saturated": saturated, "bottleneck": _bottleneck(util, throttled),
        "offered_iops_slice": offered, "window_s": window, "wall_s": round(wall, 3), "ios": o.ios,
        "kv_commit_ms": row.get("ceph.kv_commit_ms"),
        **({"recovery": rec} if rec else {}),
    }
    return Probe(float(per_host_load), ok, metric, ci, info)


def run_unit(unit: dict[str, Any]) -> list[dict[str, Any]]:
    """One shape's SLO search (a picklable task for a process pool or a Dask worker)."""
    spec = PlanSpec.model_validate(unit["spec"])
    from simulator.plan.candidates import enumerate_shapes
    from simulator.plan.catalog import Catalog

    catalog = Catalog.model_validate(unit["catalog"])
    shape = next(s for s in enumerate_shapes(spec, catalog) if s.key == unit["shape"])
    layout = unit["layout"]
    sim = spec.simulation
    bound_ms = float(spec.requirement.slo.latency) * 1e3
    t0 = time.perf_counter()
    c0 = time.process_time()

    memo: dict[float, Probe] = {}

    def ev(x: float) -> Probe:
        if x not in memo:
            memo[x] = probe(shape, spec, layout, x)
        return memo[x]

    def refine(x: float, level: int) -> Probe:
        return probe(shape, spec, layout, x, level)

    # galloping up from the lightest load: a probe far above what the slice sustains is the costliest
    # run there is (an overloaded open loop), so the search approaches the threshold from below
    res: SearchResult = highest_load(ev, unit["lo"], unit["hi"], rel_tol=sim.rel_tol, max_probes=sim.max_probes,
                                     bound=bound_ms, refine=refine if sim.refine else None, max_refine=sim.refine,
                                     expand=2.0)
    if res.status == "infeasible" and sim.pareto_probes >= 2:
        # no host count in range meets the SLO: a short search below it, for the cost/IOPS picture
        lo = unit["lo"]
        low = highest_load(ev, lo / 8, lo, rel_tol=0.25, max_probes=sim.pareto_probes, bound=bound_ms)
        res = SearchResult(low.load, low.lower, low.upper, low.status, tuple(res.probes) + tuple(p for p in low.probes if p.load != lo), bound_ms)
    return [{"shape": shape.key, "digest": unit["digest"], "search": res.to_dict(), "layout": layout,
             "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0, "ios": sum(int(p.info.get("ios", 0)) for p in res.probes)}]
