"""OSD failures during a run, peering, recovery/backfill, and the client latency timeline around them.

Events (``ClusterConfig.events``, simulated seconds since the cluster was built):

* ``down``: the OSD(s) stop serving. Every PG with a shard there re-peers (no client IO for
  ``recovery.peering_time``) and then runs degraded on the others: replicated writes skip the down
  replica, erasure-coded reads of a lost shard read k others and decode. The PG log of each such PG
  records the objects written while the OSD is away. After ``down_out_interval``
  (mon_osd_down_out_interval, 600 s) an OSD still down is marked out automatically.
* ``out``: also down, and reweight 0: CRUSH maps each PG again (``Cluster.map_pool``). A PG whose
  acting set changes re-peers and is backfilled: every existing object of the PG is copied to each
  OSD new in its acting set (replicated: read from the acting primary, a survivor; erasure-coded: the
  lost shard is rebuilt from k surviving shards read by the primary and decoded), then the PG switches
  to the new acting set (another peering). Client IO goes on meanwhile on the survivors, and a client
  write to an object the backfill has already copied goes to the backfill targets too (Ceph sends
  writes below last_backfill to the backfill peers), so the client waits for their commit as well.
* ``up``: the OSD runs again. Each PG it is still in re-peers with it; the objects written while it
  was down are pushed to it -- log-based recovery when the PG log still covers its absence
  (``max_pg_log_entries`` while the PG stayed degraded, ``min_pg_log_entries`` once it was clean
  again -- from Octopus the primary's budget ``target_pg_log_entries_per_osd`` / its PGs, within
  [min, max]), else backfill, which compares object versions and so also copies only what changed. The
  OSD serves client IO at once (its missing objects are pushed meanwhile). An OSD that comes up while
  out loses its stray PG copies (the PGs are clean elsewhere).
* ``in``: up and reweight 1 again: CRUSH maps the PGs back; each moves back by recovery (its log
  covers the OSD's absence: the OSD joins the acting set at once) or backfill (it joins at the end);
  an OSD that kept its old copies (it stayed down while out) receives only the objects changed since.
  While an OSD recovers in place, a client op on an object it still misses (a write; a read if it is
  the primary) waits for that object, whose recovery starts at once at client priority
  (wait_for_degraded_object / maybe_kick_recovery).

Client ops in flight when a PG re-peers (new interval) are resent by the client to the PG's new
primary once peering ends (Objecter resends on a new interval); the copy already at the OSDs runs on
but its reply is discarded, so every op completes exactly once and its latency includes the wait.

Throttles, as the OSD applies them: a recovering or backfilling PG holds a local reservation on its
primary and a remote one on each target (``max_backfills`` each; log recovery is granted before
backfill, as OSD_RECOVERY_PRIORITY_BASE 180 > OSD_BACKFILL_PRIORITY_BASE 100); a primary runs at most
``recovery_max_active`` object pushes at a time. Recovery work goes through the OSDs' op queues: the
object read at the primary (a work item of priority osd_recovery_priority 5 and cost osd_recovery_cost
20 MiB), erasure-coded sub-reads and the push at each target (osd_recovery_op_priority 3, cost = bytes)
hold an op-queue worker and the PG like client ops do. While recovery ops wait in a shard the scheduler
picks the next op: ``wpq`` as Ceph's WeightedPriorityQueue (src/common/WeightedPriorityQueue.h: a
priority class drawn with probability proportional to its priority, then admitted with probability
(max_cost - 0.9 cost) / max_cost; client ops have osd_client_op_priority 63 and cost = data bytes),
``mclock_scheduler`` by the profile's client:recovery weights (high_client_ops 2:1, balanced 1:1,
high_recovery_ops 1:2). The pace: under ``wpq`` an OSD's next push starts ``recovery_sleep`` after its
previous one (osd_recovery_sleep_hdd 0.1 s: at most 10 pushes/s per OSD); under ``mclock_scheduler``
pushes are paced so that their cost (max(bytes, bandwidth/iops) as mClock's calc_scaled_cost) stays
within the profile's background-recovery reservation of the OSD's bandwidth (high_client_ops 40 %,
balanced 50 %, high_recovery_ops 70 %). Recovery reads and writes then compete with client IO in
BlueStore (throttles, kv_sync) and at the block layer and device.

Backfill walks the PG's objects in hash order (hobject_t's sort key, the bit-reversed name hash) in
batches of ``backfill_scan_max`` (osd_backfill_scan_max 512): before a batch's objects are pushed, the
primary lists them (scan_range) and each target lists what it holds of that range (MOSDPGScan), each as
a work item in its OSD's op queue costing ``backfill_scan_cost`` CPU per object plus the onodes not in
cache (BlueStore: one contiguous DB read of them, as RocksDB iterates the PG's key range; FileStore: an
inode read each). Log-based recovery of a replicated pool with ``partial_recovery`` (Octopus+) pushes
only the extents written while the target was away (ObjectCleanRegion, at most
``clean_region_max_intervals`` extents per object); objects it had no copy of, EC pools and backfill
push whole objects. A PG remapped again while it backfills (a second out/in) cancels the backfill and
starts one toward the new acting set: a target kept in it goes on from the objects it already has
(last_backfill), pushes still in flight for the old interval are dropped at their target and not
counted. ``pgs_backfilled`` / ``pgs_recovered`` count the PGs whose job copied objects;
``pgs_nothing_to_copy`` the others (peering and scans only).

Simplifications: a PG remapped while it recovers in place (log recovery) finishes that first; a write
to the object a backfill is copying at that moment does not wait for it; the resent op's first copy
still does its work at the surviving OSDs (Ceph would requeue it and answer the resend from the PG
log's dup entries); scans are not paced by the recovery sleep; a dropped push's device IO still
happens (as in Ceph, where the target discards it only after receiving it).

``Timeline`` records every client object op's latency at completion; ``phases()`` splits it at the
first event and at the end of recovery into before / during / after (n, IOPS, mean, p50, p99), and
``bins()`` gives per-second figures for the latency-over-time plot (``python -m
simulator.ceph.recovery_plot OUT_DIR`` writes ``recovery_timeline.png`` for an experiment's runs).
"""

from __future__ import annotations

from array import array
from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from simulator.ceph.hashing import rbd_object_hashes
from simulator.ceph.osd import EXT_ROLES, ObjOp
from simulator.ceph.resources import call_at, then
from simulator.devices.base import Op, Request
from simulator.errors import ConfigError

if TYPE_CHECKING:
    from simulator.ceph.cluster import Cluster
    from simulator.ceph.osd import PG, Osd

__all__ = ["MCLOCK_RECOVERY_SHARE", "MCLOCK_WEIGHTS", "Recovery", "Timeline"]

_READ = int(Op.READ)
_WRITE = int(Op.WRITE)
RECOVERY_PUSH = 6  # op role of a recovery read at its source or push at its target (simulator.ceph.osd.EXT_ROLES)
MIRROR = 7  # op role of a client write's copy at a backfill target
BACKFILL_SCAN = 8  # op role of a backfill scan (listing a batch of a PG's objects) at the primary or a target

#: background-recovery reservation of the mClock profiles (src/osd/scheduler/mClockScheduler.cc,
#: high_client_ops {.6, 2, 0}/{.4, 1, 0}; balanced {.5, 1, 0}/{.5, 1, 0}; high_recovery_ops {.3, 1, 0}/{.7, 2, 0})
MCLOCK_RECOVERY_SHARE = {"high_client_ops": 0.4, "balanced": 0.5, "high_recovery_ops": 0.7}
#: client : background-recovery weights of the same profiles (who is served when both have ops queued)
MCLOCK_WEIGHTS = {"high_client_ops": (2.0, 1.0), "balanced": (1.0, 1.0), "high_recovery_ops": (1.0, 2.0)}


class Timeline:
    """Completion time and latency of every client object op since the last ``reset``."""

    def __init__(self) -> None:
        self.t = array("d")
        self.lat = array("d")

    def add(self, op: Any, t: float) -> None:
        self.t.append(t)
        self.lat.append(t - op.t0)

    def reset(self) -> None:
        self.t = array("d")
        self.lat = array("d")

    @staticmethod
    def _fig(lat: np.ndarray, span: float) -> dict[str, float]:
        if lat.size == 0:
            return {"n": 0, "iops": 0.0, "mean_ms": float("nan"), "p50_ms": float("nan"), "p99_ms": float("nan")}
        return {
            "n": int(lat.size),
            "iops": lat.size / span if span > 0 else float("nan"),
            "mean_ms": 1e3 * float(lat.mean()),
            "p50_ms": 1e3 * float(np.percentile(lat, 50)),
            "p99_ms": 1e3 * float(np.percentile(lat, 99)),
        }

    def phases(self, t_start: float, t_event: float | None, t_end: float | None, t_now: float) -> dict[str, dict[str, float]]:
        t = np.frombuffer(self.t, dtype=np.float64)
        lat = np.frombuffer(self.lat, dtype=np.float64)
        if t_event is None:
            return {"before": self._fig(lat, t_now - t_start)}
        a = max(t_start, min(t_event, t_now))
        b = t_now if t_end is None else max(a, min(t_end, t_now))
        out = {
            "before": self._fig(lat[t < a], a - t_start),
            "during": self._fig(lat[(t >= a) & (t < b)], b - a),
        }
        if t_end is not None:
            out["after"] = self._fig(lat[t >= b], t_now - b)
        return out

    def window(self, a: float, b: float) -> dict[str, float]:
        """Figures of the ops completed in [a, b)."""
        t = np.frombuffer(self.t, dtype=np.float64)
        lat = np.frombuffer(self.lat, dtype=np.float64)
        return self._fig(lat[(t >= a) & (t < b)], b - a)

    def bins(self, width: float = 1.0) -> list[list[float]]:
        """[bin start, ops, mean ms, p99 ms] per ``width`` seconds (bins with completions only)."""
        t = np.frombuffer(self.t, dtype=np.float64)
        lat = np.frombuffer(self.lat, dtype=np.float64)
        if t.size == 0:
            return []
        idx = np.floor(t / width).astype(np.int64)
        order = np.argsort(idx, kind="stable")
        idx, lat = idx[order], lat[order]
        cuts = np.flatnonzero(np.diff(idx)) + 1
        out = []
        for seg_i, seg_l in zip(np.split(idx, cuts), np.split(lat, cuts), strict=True):
            out.append([float(seg_i[0] * width), int(seg_l.size), round(1e3 * float(seg_l.mean()), 4),
                        round(1e3 * float(np.percentile(seg_l, 99)), 4)])
        return out


class _RecOp(ObjOp):
    """A recovery read at a source or push write at a target (``job``; ``new_base``: where the target's
    BlueStore put the object; ``prio``/``wcost``: its op-queue priority and cost)."""

    __slots__ = ("item", "job", "new_base", "prio", "wcost")
    background = True

    def relocate(self, new_base: int) -> None:
        self.new_base = new_base


class _Mirror(ObjOp):
    """A client write's copy sent to a backfill target (a sub-op that commits into the backfilled object)."""

    __slots__ = ("job", "key")

    def relocate(self, new_base: int) -> None:
        job = self.job
        if job.finished:
            self.image.set_base(self.objno, self.pos, new_base)
        else:
            job.bases[self.key] = new_base


class _ScanOp(_RecOp):
    """A backfill scan at one OSD: list the objects ``item`` (image, objno) it holds in the batch's hash range
    (scan_range at the primary, MOSDPGScan at a target); ``job``: the backfill."""

    __slots__ = ("miss",)


def _add_extent(ext: list[list[int]], a: int, b: int, cap: int) -> None:
    """Add [a, b) to the sorted disjoint extents ``ext`` (merging); beyond ``cap`` extents, merge across the
    shortest clean gap (ObjectCleanRegion trims its shortest clean interval)."""
    out: list[list[int]] = []
    placed = False
    for x, y in ext:
        if y < a:
            out.append([x, y])
        elif b < x:
            if not placed:
                out.append([a, b])
                placed = True
            out.append([x, y])
        else:
            a, b = min(a, x), max(b, y)
    if not placed:
        out.append([a, b])
    while len(out) > cap:
        i = min(range(len(out) - 1), key=lambda j: out[j + 1][0] - out[j][1])
        out[i][1] = out[i + 1][1]
        del out[i + 1]
    ext[:] = out


class _Absent:
    """What an OSD holding a copy of a PG misses while it is down or out: the PG log entries written
    since (``entries``), the objects they touched (``missing``: key -> the written extents [[a, b), ...] for
    partial recovery, or None: the whole object), its old object locations once the PG
    has left it (``bases``: image id -> {objno: base}; None while it is still in the acting set), and
    whether the PG was clean meanwhile (its log then trimmed to min_pg_log_entries)."""

    __slots__ = ("bases", "entries", "missing", "trimmed")

    def __init__(self) -> None:
        self.entries = 0
        self.missing: dict[tuple[int, int], list[list[int]] | None] = {}
        self.bases: dict[int, dict[int, int]] | None = None
        self.trimmed = False


class _Job:
    """The recovery or backfill of one PG to the OSDs at ``targets`` (positions in ``new_acting``).
    ``switch``: the PG moves to ``new_acting`` when the job ends (backfill of a remapped PG); otherwise
    the targets are in the acting set already and pushes land in place."""

    __slots__ = ("active", "bases", "batches", "cancelled", "episode", "finished", "kind", "missing", "new_acting", "objects",
                 "partial", "pg", "primary", "pushed", "ready", "scan_pending", "scan_push", "switch", "t_start", "targets",
                 "waiters")

    def __init__(self, pg: PG, new_acting: list[Osd], targets: list[int], objects: deque, kind: str, switch: bool,
                 episode: dict[str, Any]):
        self.pg = pg
        self.new_acting = new_acting
        self.targets = targets
        self.objects = objects  # (image, objno, target positions)
        self.kind = kind  # "recovery" (log-based) or "backfill"
        self.switch = switch
        self.episode = episode
        self.primary: Osd | None = None
        self.active = 0
        self.pushed = 0
        self.bases: dict[tuple[int, int, int], int] = {}  # (image id, objno, position) -> base on the target
        self.t_start = -1.0
        self.finished = False
        #: objects not yet recovered (image id, objno) -> target positions, and client ops waiting for them
        self.missing: dict[tuple[int, int], tuple[int, ...]] = {(id(i), o): tp for i, o, tp in objects}
        self.waiters: dict[tuple[int, int], list[tuple[ObjOp, float]]] = {}
        #: backfill scans still to run: (objects listed at the primary, pushes the batch releases, {target
        #: position: objects it lists}) per batch of backfill_scan_max objects in hash order; ``ready``: objects at
        #: the front of ``objects`` whose batch is scanned (log recovery: all of them, no scans)
        self.batches: deque = deque()
        self.ready = len(objects)
        self.scan_pending = 0  # OSDs still listing the current batch (0: no scan running)
        self.scan_push = 0
        self.cancelled = False  # the PG was remapped again mid-backfill: this job's pushes still in flight are dropped
        #: (image id, objno, position) -> (offset, bytes) of a partial push (partial object recovery)
        self.partial: dict[tuple[int, int, int], tuple[int, int]] = {}


class Recovery:
    """Failure events, peering pauses, recovery/backfill jobs and their throttles for one cluster."""

    def __init__(self, cluster: Cluster):
        self.cl = cluster
        cfg = cluster.cfg
        self.cfg = rc = cfg.recovery
        self.env = cluster.env
        hosts = {h.name: h for h in cluster.hosts}
        self.events: list[tuple[float, str, list[int]]] = []
        for i, ev in enumerate(cfg.events):
            if ev.host is not None:
                if ev.host not in hosts:
                    raise ConfigError(f"no host named {ev.host!r} (hosts: {', '.join(hosts)})", field=f"params.events.{i}.host")
                ids = [o.id for o in hosts[ev.host].osds]
            else:
                if ev.osd >= len(cluster.osds):
                    raise ConfigError(f"no osd.{ev.osd} (the cluster has {len(cluster.osds)} OSDs)", field=f"params.events.{i}.osd")
                ids = [ev.osd]
            self.events.append((float(ev.at), ev.action, ids))
        mclock = rc.op_queue == "mclock_scheduler"
        rot = cfg.rotational
        if mclock:
            self.sleep = 0.0
        elif rc.recovery_sleep is not None:
            self.sleep = float(rc.recovery_sleep)
        elif not rot:
            self.sleep = 0.0
        else:
            hybrid = any(h.db_devices for h in cluster.hosts)
            self.sleep = 0.025 if hybrid else 0.1
        self.mclock = mclock
        bw = rc.mclock_max_sequential_bandwidth or (150e6 if rot else 1200e6)
        iops = rc.mclock_max_capacity_iops or (315.0 if rot else 21500.0)
        self.mclock_rate = MCLOCK_RECOVERY_SHARE[rc.mclock_profile] * bw  # bytes/s of cost per OSD
        self.mclock_min_cost = bw / iops
        wc, wr = MCLOCK_WEIGHTS[rc.mclock_profile]
        self.mclock_p_rec = wr / (wc + wr)
        self.out: set[int] = set()
        self.jobs: dict[PG, _Job] = {}
        self.want: dict[PG, tuple[list[int], dict[str, Any]]] = {}  # PGs remapped again while backfilling: the acting set CRUSH wants
        self.absent: dict[PG, dict[int, _Absent]] = {}
        self.down_since: dict[int, float] = {}
        self.live: dict[ObjOp, None] = {}  # client ops at the OSDs, not yet answered
        self.waiting: deque[_Job] = deque()
        self.running: dict[int, list[_Job]] = {}  # primary OSD id -> its running jobs
        self.local_res: dict[int, int] = {}
        self.remote_res: dict[int, int] = {}
        self.next_start: dict[int, float] = {}
        self.pump_armed: set[int] = set()
        self.reserving = False
        self.reserve_again = False
        self.history: list[tuple[float, str, list[int]]] = []  # events as applied (with automatic outs)
        self.episodes: list[dict[str, Any]] = []
        self.t_first: float | None = None
        self.t_out: float | None = None
        self.t_done: float | None = None
        self.recovered_bytes = 0
        self.recovered_objects = 0
        self.log_recovered_objects = 0
        self.pgs_remapped = 0
        self.pgs_backfilled = 0  # PGs whose backfill copied objects
        self.pgs_recovered = 0  # PGs whose log recovery pushed objects
        self.pgs_clean_empty = 0  # recovery/backfill jobs that had nothing to copy (peering and scans only)
        self.backfills_cancelled = 0  # backfills cancelled by a remap mid-way (restarted toward the new acting set)
        self.pushes_discarded = 0  # pushes of a cancelled backfill still in flight: dropped at the target, not counted
        self.scans = 0  # backfill scans (per OSD listing a batch)
        self.scanned_objects = 0
        self.partial_pushes = 0  # pushes of only the extents written while the target was away
        self._hashes: dict[int, np.ndarray] = {}  # image id -> bit-reversed object hashes (hobject sort key)
        self._pg_count: dict[int, int] | None = None  # OSD id -> PGs it is in (the pg-log budget's divisor)
        self.peering_blocks = 0
        self.resent_ops = 0
        self.mirrored_writes = 0
        self.degraded_waits = 0  # client ops that waited for their object's recovery
        self.kicked = 0  # objects recovered ahead of their turn because a client op needed them
        self.mirrored_bytes = 0
        self.peak_local = 0  # most reservations one OSD held as primary / as target
        self.peak_remote = 0
        self.peak_active = 0  # most pushes one primary had in flight
        self.queue_picks = [0, 0]  # op-queue choices between a waiting client op and recovery op: [client, recovery]
        for ev in self.events:
            call_at(self.env, max(ev[0], self.env.now), self._event, ev)

    # ------------------------------------------------------------------ events and peering
    def _event(self, ev: Any) -> None:
        _at, action, ids = ev._value
        self._apply(action, ids, action)

    def _auto_out(self, ev: Any) -> None:
        now = self.env._now
        ivl = float(self.cfg.down_out_interval)
        ids = [i for i in ev._value if not self.cl.osds[i].up and i not in self.out
               and self.down_since.get(i, now) + ivl <= now + 1e-9]  # down all along since the timer started
        if ids:
            self._apply("out", ids, "out (auto)")

    def _apply(self, action: str, ids: list[int], label: str) -> None:
        now = self.env._now
        if self.t_first is None:
            self.t_first = now
        self._pg_count = None
        self.history.append((now, label, list(ids)))
        cl = self.cl
        pgs_all = [pg for pool in cl.pools.values() for pg in pool.pgs]
        if action == "down":
            ids = [i for i in ids if cl.osds[i].up]  # an OSD already down changes nothing
        elif action == "up":
            ids = [i for i in ids if not cl.osds[i].up]
        elif action == "in":
            ids = [i for i in ids if not cl.osds[i].up or i in self.out]
        changed = set(ids)
        ep = {"event": len(self.history) - 1, "action": label, "t": now, "t_done": None, "pgs": 0, "objects": 0,
              "bytes": 0, "log_objects": 0}
        self.episodes.append(ep)
        peer: list[PG] = []
        if action in ("down", "out"):
            for i in ids:
                if cl.osds[i].up:
                    cl.osds[i].up = False
                    self.down_since[i] = now
                    for pg in pgs_all:
                        if any(o.id == i for o in pg.acting):
                            self.absent.setdefault(pg, {}).setdefault(i, _Absent())
            if action == "out":
                if self.t_out is None:
                    self.t_out = now
                self.out |= changed
                self._remap(ep, peer)
            elif self.cfg.down_out_interval is not None:
                call_at(self.env, now + float(self.cfg.down_out_interval), self._auto_out, list(ids))
            peer += [pg for pg in pgs_all if any(o.id in changed for o in pg.acting)]
        else:  # up / in
            for i in ids:
                cl.osds[i].up = True
            if action == "in":
                self.out -= changed
            for i in ids:
                if i in self.out:  # up but out: the PGs are clean elsewhere and delete its stray copies
                    for pg, ab in self.absent.items():
                        if i in ab and all(o.id != i for o in pg.acting):
                            del ab[i]
            back = [pg for pg in pgs_all if any(o.id in changed for o in pg.acting)]
            objs = {pool.id: self._objects_by_pg(pool) for pool in cl.pools.values()}
            for pg in back:
                if pg in self.jobs:
                    continue
                targets = [p for p, o in enumerate(pg.acting) if o.id in changed and o.id in self.absent.get(pg, {})]
                if targets:
                    self._plan(pg, list(pg.acting), targets, objs[pg.pool.id].get(pg.ps, []), ep)
            peer += back
            if action == "in":
                self._remap(ep, peer)
        seen: set[PG] = set()
        self._peer([pg for pg in peer if not (pg in seen or seen.add(pg))])
        self._reserve()
        if ep["pgs"] == 0:
            ep["t_done"] = now
            if action != "out":
                self.episodes.remove(ep)  # nothing to recover: not an episode
        if not self.jobs and any(e is ep for e in self.episodes):
            self.t_done = now

    def _peer(self, pgs: list[PG]) -> None:
        """PGs whose acting set changed serve no IO for ``peering_time``; the ops the client had sent
        to them are resent to the new primary."""
        if not pgs:
            return
        if self.cfg.peering_time <= 0:
            self._activate(pgs)
            self._resend(pgs)
            return
        for pg in pgs:
            pg.ppos = -1
        self._resend(pgs)
        call_at(self.env, self.env._now + self.cfg.peering_time, self._peered, pgs)

    def _resend(self, pgs: list[PG]) -> None:
        pgset = set(pgs)
        stale = [op for op in self.live if op.pg in pgset]
        if not stale:
            return
        now = self.env._now
        for op in stale:
            del self.live[op]
            img = op.image
            new = img.op_class(op.kind, img.client_role, op.pg, img, op.objno, op.off, op.length)
            new.req = op.req
            new.group = op.group
            new.t0 = op.t0
            if op.commits is not None:
                new.commits = []
            self.resent_ops += 1
            cpu = img.client.cpu
            then(cpu, cpu.book(now, img.client_cfg.submit_cost), self.cl.send_client_op, new)

    def _peered(self, ev: Any) -> None:
        self._activate(ev._value)

    def _activate(self, pgs: list[PG]) -> None:
        now = self.env._now
        for pg in pgs:
            pg.ppos = pg.primary_pos()
            if pg.ppos >= 0 and pg.blocked:
                blocked, pg.blocked = pg.blocked, []
                self.peering_blocks += len(blocked)
                for op, t in blocked:
                    self.cl.send_client_op(op, max(t, now))

    # ------------------------------------------------------------------ client ops (called by the cluster)
    def completed(self, op: ObjOp, t: float) -> bool:
        """A client op's reply: False for a copy the client had resent elsewhere (discarded). Records the
        latency and, for a write, the PG log entry that the PG's absent OSDs miss."""
        if self.live.pop(op, 0) is not None:
            return False
        # (the cluster checks liveness before the reply's network and CPU bookings)
        tl = self.cl.timeline
        if tl is not None:
            tl.add(op, t)
        if op.kind != _READ:
            ab = self.absent.get(op.pg)
            if ab:
                img = op.image
                key = (id(img), op.objno)
                part = self.cfg.partial_recovery and op.pg.pool.ec is None
                cap = self.cfg.clean_region_max_intervals
                for oid, a in ab.items():
                    a.entries += 1
                    if not part:
                        a.missing[key] = None
                        continue
                    if key in a.missing:
                        ext = a.missing[key]
                    else:  # first write since it left: partial only if the OSD holds an old copy of the object
                        ext = [] if self._old_base(op.pg, img, op.objno, oid, a) >= 0 else None
                        a.missing[key] = ext
                    if ext is not None:
                        _add_extent(ext, op.off, op.off + op.length, cap)
        return True

    def _old_base(self, pg: PG, img: Any, objno: int, oid: int, a: _Absent) -> int:
        """Where the absent OSD ``oid`` holds its old copy of the object (-1: none)."""
        if a.bases is not None:
            return a.bases.get(id(img), {}).get(objno, -1)
        for i, o in enumerate(pg.acting):
            if o.id == oid:
                return img.base_of(objno, i)
        return -1

    def mirror(self, prim: Osd, op: ObjOp, shard_writes: list[tuple[int, int, int]] | None, t: float) -> int:
        """Send ``op``'s write to the backfill targets that already hold the object; returns how many."""
        job = self.jobs.get(op.pg)
        if job is None or not job.switch:
            return 0
        img = op.image
        iid = id(img)
        if shard_writes is None:
            items = [(p, op.off, op.length) for p in job.targets]
        else:
            items = [w for w in shard_writes if w[0] in job.targets]
        cfg = prim.cfg
        n = 0
        for p, o, ln in items:
            key = (iid, op.objno, p)
            if key not in job.bases:
                continue  # not copied yet: the backfill will bring the object with this write
            tgt = job.new_acting[p]
            if not tgt.up:
                continue
            m = _Mirror(op.kind, MIRROR, op.pg, img, op.objno, o, ln)
            m.obj_size = img.shard_size
            m.pos = p
            m.primary_op = op
            m.osd = tgt
            m.job = job
            m.key = key
            per_byte = cfg.msgr_cost_per_byte * ln
            then(prim.cpu, prim.cpu.book(t, cfg.msgr_send_cost + per_byte), self._mirror_out, m)
            n += 1
            self.mirrored_bytes += ln
        self.mirrored_writes += n
        return n

    def _mirror_out(self, m: _Mirror, t: float) -> None:
        prim = m.primary_op.osd
        tgt = m.osd
        cfg = prim.cfg
        ln = m.length
        ts = self.cl.net.arrival(prim.host, tgt.host, t, ln)
        tgt.post(tgt.cpu.book(ts, cfg.msgr_recv_cost + cfg.msgr_cost_per_byte * ln), m)

    def hold(self, op: ObjOp, t: float) -> bool:
        """A client op on an object a recovering OSD of its PG still misses waits for that object
        (a write: missing anywhere in the acting set; a read: missing at the primary), and the object is
        recovered at once at client priority (Ceph's wait_for_degraded_object / wait_for_unreadable_object
        and maybe_kick_recovery). True if ``op`` was held."""
        job = self.jobs.get(op.pg)
        if job is None or job.switch:
            return False
        key = (id(op.image), op.objno)
        tpos = job.missing.get(key)
        if tpos is None:
            return False
        pg = op.pg
        if op.kind == _READ and pg.ppos not in tpos:
            return False
        waiting = job.waiters.get(key)
        if waiting is None:
            waiting = job.waiters[key] = []
            objs = job.objects
            for i, (img, objno, tp) in enumerate(objs):
                if img is op.image and objno == op.objno:  # not started yet: kick it now
                    tids = {job.new_acting[p].id for p in job.targets}
                    prim = job.primary or next((o for o in pg.acting if o.up and o.id not in tids), None)
                    if prim is None:
                        break
                    del objs[i]
                    self._unqueued(job, i)
                    job.active += 1
                    self.kicked += 1
                    self._push(job, img, objno, tp, prim, self.cfg.client_op_priority)
                    break
        waiting.append((op, t))
        self.degraded_waits += 1
        return True

    @staticmethod
    def _unqueued(job: _Job, i: int) -> None:
        """Object ``i`` of ``job.objects`` was taken out of turn: the scanned count or its batch's count drops."""
        if i < job.ready:
            job.ready -= 1
            return
        i -= job.ready
        if job.scan_pending:
            if i < job.scan_push:
                job.scan_push -= 1
                return
            i -= job.scan_push
        for b in job.batches:
            if i < b[1]:
                b[1] -= 1
                return
            i -= b[1]

    # ------------------------------------------------------------------ the op-queue scheduler
    def serve(self, osd: Osd, sh: Any) -> None:
        """Dispatch waiting ops of a shard while workers are free, choosing between the first
        dispatchable client op and recovery op as wpq / mClock do."""
        q, rq = sh.q, sh.rq
        busy = osd.busy_pgs
        while sh.free > 0 and (q or rq):
            ci = next((i for i, o in enumerate(q) if o.pg not in busy), -1)
            ri = next((i for i, o in enumerate(rq) if o.pg not in busy), -1)
            if ci < 0 and ri < 0:
                return
            if ri < 0:
                take_rec = False
            elif ci < 0:
                take_rec = True
            else:
                take_rec = self._pick(osd, q[ci], rq[ri])
                self.queue_picks[take_rec] += 1
            if take_rec:
                op = rq[ri]
                del rq[ri]
            else:
                op = q[ci]
                del q[ci]
            osd._dispatch(sh, op)

    def _pick(self, osd: Osd, c: ObjOp, r: _RecOp) -> bool:
        """True to serve the recovery op ``r`` before the client op ``c``."""
        rnd = osd.rand
        if self.mclock:
            return rnd.random() < self.mclock_p_rec
        pc = self.cfg.client_op_priority
        pr = r.prio
        cc = c.length if c.kind != _READ else 0
        cr = r.wcost
        mx = max(cc, cr)
        while True:  # WeightedPriorityQueue::pop: a class by priority, then a cost coin flip
            rec = rnd.random() * (pc + pr) < pr
            cost = cr if rec else cc
            if mx == 0 or rnd.random() * mx <= mx - 0.9 * cost:
                return rec

    # ------------------------------------------------------------------ planning
    def _remap(self, ep: dict[str, Any], peer: list[PG]) -> None:
        cl = self.cl
        by_id = {o.id: o for o in cl.osds}
        for pool in cl.pools.values():
            new = cl.map_pool(pool, out=self.out)
            objs = self._objects_by_pg(pool)
            for pg, a in zip(pool.pgs, new, strict=True):
                job = self.jobs.get(pg)
                progress = None
                if job is not None:
                    if job.switch:  # a backfill toward an acting set not yet installed
                        if a == [o.id for o in job.new_acting]:
                            continue  # its target is unchanged: it goes on
                        progress = self._cancel(job)
                    else:
                        self.want[pg] = (a, ep)  # planned when the running recovery ends (one job per PG at a time)
                        continue
                if self._plan_remap(pg, a, by_id, objs.get(pg.ps, []), ep, progress):
                    peer.append(pg)

    def _cancel(self, job: _Job) -> dict[int, dict[tuple[int, int], int]]:
        """Cancel the backfill ``job`` of a PG remapped again (a new interval: Ceph cancels the backfill and
        starts toward the new acting set). Returns, per target OSD id, the objects it already holds -- a target
        keeps its last_backfill, so a new backfill to it goes on from there. Its pushes in flight are dropped."""
        pg = job.pg
        job.cancelled = True
        self.backfills_cancelled += 1
        if job.primary is not None:
            self.local_res[job.primary.id] -= 1
            for i in job.targets:
                self.remote_res[job.new_acting[i].id] -= 1
            self.running[job.primary.id].remove(job)
        # (a waiting job stays in ``waiting`` and is skipped there)
        del self.jobs[pg]
        self.want.pop(pg, None)
        ep = job.episode
        ep["pgs"] -= 1
        if ep["pgs"] == 0:
            ep["t_done"] = self.env._now
        progress: dict[int, dict[tuple[int, int], int]] = {}
        for (iid, objno, pos), b in job.bases.items():
            if b >= 0:
                progress.setdefault(job.new_acting[pos].id, {})[(iid, objno)] = (pos, b)
        return progress

    def _plan_remap(self, pg: PG, a: list[int], by_id: dict[int, Osd], objs: list[tuple[Any, int]], ep: dict[str, Any],
                    progress: dict[int, dict[tuple[int, int], tuple[int, int]]] | None = None) -> bool:
        cur = [o.id for o in pg.acting]
        if a == cur:
            return False
        new_acting = [by_id[x] for x in a if x in by_id]
        if len(new_acting) != len(a):
            return False  # an unfillable EC slot: the PG stays degraded
        if pg.pool.ec is not None:
            targets = [i for i, (x, y) in enumerate(zip(cur, a, strict=True)) if x != y]
        else:
            targets = [i for i, x in enumerate(a) if x not in cur]
        self.pgs_remapped += 1
        if not targets:  # only the order changed: no data to move
            self._relayout(pg, new_acting, [], {})
            return True
        self._plan(pg, new_acting, targets, objs, ep, progress)
        return True

    def _log_limit(self, pg: PG, trimmed: bool) -> int:
        """PG log entries the PG keeps: osd_max_pg_log_entries while degraded; once clean, osd_min_pg_log_entries
        or (Octopus+) the primary OSD's budget osd_target_pg_log_entries_per_osd / its PGs, within [min, max]."""
        rc = self.cfg
        if not trimmed:
            return rc.max_pg_log_entries
        if rc.target_pg_log_entries_per_osd is None:
            return rc.min_pg_log_entries
        if self._pg_count is None:  # PGs per OSD, counted once per event
            cnt: dict[int, int] = {}
            for pool in self.cl.pools.values():
                for q in pool.pgs:
                    for o in q.acting:
                        cnt[o.id] = cnt.get(o.id, 0) + 1
            self._pg_count = cnt
        n = self._pg_count.get(pg.acting[0].id, 0)
        return max(rc.min_pg_log_entries, min(rc.max_pg_log_entries, rc.target_pg_log_entries_per_osd // max(n, 1)))

    def _plan(self, pg: PG, new_acting: list[Osd], targets: list[int], objs: list[tuple[Any, int]], ep: dict[str, Any],
              progress: dict[int, dict[tuple[int, int], tuple[int, int]]] | None = None) -> None:
        """A job bringing the OSDs at ``targets`` of ``new_acting`` up to date: everything for an OSD
        without a copy of the PG, the objects changed since it left for one with an old copy, the objects
        not yet copied for one a cancelled backfill of this PG had started (``progress``: OSD id ->
        {(image id, objno): (its position then, base)}; EC: only at the same position)."""
        ab = self.absent.get(pg, {})
        rc = self.cfg
        in_place = new_acting == pg.acting
        ec = pg.pool.ec is not None
        kind = "recovery"
        per_target: dict[int, dict | None] = {}
        have: dict[int, dict[tuple[int, int], int]] = {}  # target position -> objects it holds from a cancelled backfill
        old: dict[int, _Absent] = {}
        for p in targets:
            oid = new_acting[p].id
            a = ab.pop(oid, None)
            if a is None or (a.bases is None and not in_place and new_acting[p] not in pg.acting):
                kind = "backfill"
                per_target[p] = None
                got = (progress or {}).get(oid)
                if got:
                    have[p] = {k: b for k, (q, b) in got.items() if q == p or not ec}
                continue
            old[p] = a
            if a.entries > self._log_limit(pg, a.trimmed):
                kind = "backfill"  # the log no longer covers it; backfill's version compare copies the same objects
            per_target[p] = a.missing
        partial = kind == "recovery" and rc.partial_recovery and not ec
        objects: deque = deque()
        batches: deque = deque()
        scan = kind == "backfill" and bool(self.cl.images)
        smax = rc.backfill_scan_max
        listed: list[tuple[Any, int]] = []
        tlists: dict[int, list[tuple[Any, int]]] = {p: [] for p in targets}
        n_push = 0
        part_map: dict[tuple[int, int, int], tuple[int, int]] = {}
        for img, objno in objs:
            iid = id(img)
            key = (iid, objno)
            tpos = tuple(p for p in targets if (per_target[p] is None and key not in have.get(p, ()))
                         or (per_target[p] is not None and key in per_target[p]))
            if tpos:
                objects.append((img, objno, tpos))
                n_push += 1
            if partial:
                for p in tpos:
                    ext = per_target[p][key]
                    if ext:  # (None: the OSD had no copy of the object: all of it)
                        tot = sum(y - x for x, y in ext)
                        if tot < img.shard_size:
                            part_map[(iid, objno, p)] = (ext[0][0], tot)
            if scan:
                listed.append((img, objno))
                for p in targets:  # what the target lists: the objects it already holds
                    if key in have.get(p, ()) or (p in old and self._old_base(pg, img, objno, new_acting[p].id, old[p]) >= 0):
                        tlists[p].append((img, objno))
                if len(listed) >= smax:
                    batches.append([listed, n_push, tlists])
                    listed, n_push, tlists = [], 0, {p: [] for p in targets}
        if scan and (listed or not batches):
            batches.append([listed, n_push, tlists])
        switch = kind == "backfill" and not in_place
        job = _Job(pg, new_acting, targets, objects, kind, switch, ep)
        job.partial = part_map
        if scan:
            job.batches = batches
            job.ready = 0
        for p, got in have.items():
            for (iid, objno), b in got.items():
                job.bases[(iid, objno, p)] = b
        for p, a in old.items():  # the target's own copies of the objects it does not miss
            if a.bases is None:
                continue
            for img in self.cl.images.values():
                for objno, b in a.bases.get(id(img), {}).items():
                    if b >= 0:
                        job.bases[(id(img), objno, p)] = b
        if not in_place and not switch:  # log recovery: the OSDs join the acting set now
            self._relayout(pg, new_acting, targets, job.bases)
        ep["pgs"] += 1
        self.jobs[pg] = job
        self.waiting.append(job)

    def _objects_by_pg(self, pool: Any) -> dict[int, list[tuple[Any, int]]]:
        """Existing objects of every image in ``pool``, grouped by PG, in hash order (hobject_t's bitwise sort
        key: the object name hash with its bits reversed), the order backfill scans and copies them."""
        out: dict[int, list[tuple[Any, int]]] = {}
        for img in self.cl.images.values():
            if img.pool is not pool:
                continue
            key = self._hashes.get(id(img))
            if key is None:
                h = rbd_object_hashes(img.id, img.n_objects).astype(np.uint32)
                r = np.zeros_like(h)
                for b in range(32):  # reverse the 32 bits
                    r |= ((h >> np.uint32(b)) & np.uint32(1)) << np.uint32(31 - b)
                key = self._hashes[id(img)] = r
            exists = img.allocated()
            objnos = np.flatnonzero(exists)
            ps = img.obj_ps_array[objnos]
            order = np.lexsort((key[objnos], ps))
            objnos, ps = objnos[order], ps[order]
            cuts = np.flatnonzero(np.diff(ps)) + 1
            for seg_o, seg_p in zip(np.split(objnos, cuts), np.split(ps, cuts), strict=True):
                if seg_o.size:
                    out.setdefault(int(seg_p[0]), []).extend((img, int(x)) for x in seg_o.tolist())
        return out

    def _relayout(self, pg: PG, new: list[Osd], targets: list[int], bases: dict[tuple[int, int, int], int]) -> None:
        """Switch ``pg`` to the acting set ``new``: the object-location columns follow their OSDs, the
        targets' columns come from ``bases``; an OSD leaving while down keeps its old copies."""
        old = pg.acting
        ec = pg.pool.ec is not None
        ab = self.absent.get(pg, {})
        for img in self.cl.images.values():
            if img.pool is not pg.pool:
                continue
            rows = np.flatnonzero(img.obj_ps_array == pg.ps)
            if rows.size == 0:
                continue
            cols = img.bases(rows)
            out = np.full_like(cols, -1)
            iid = id(img)
            rl = rows.tolist()
            for j, o in enumerate(new):
                if j in targets:
                    out[:, j] = [bases.get((iid, objno, j), -1) for objno in rl]
                elif ec:
                    out[:, j] = cols[:, j]
                else:
                    out[:, j] = cols[:, old.index(o)]
            for i, o in enumerate(old):
                if (new[i] is not o) if ec else (o not in new):
                    a = ab.get(o.id)
                    if a is not None:
                        if o.up:  # a running OSD deletes the PG copy it no longer serves
                            del ab[o.id]
                        else:
                            if a.bases is None:
                                a.bases = {}
                            a.bases[iid] = dict(zip(rl, cols[:, i].tolist(), strict=True))
            img.set_bases(rows, out)
        pg.acting = new

    def _reserve(self) -> None:
        """Grant local (primary) and remote (target) reservations, log recovery before backfill, FIFO with skipping."""
        if self.reserving:  # called again from a job finished inside the loop: the loop goes round once more
            self.reserve_again = True
            return
        self.reserving = True
        try:
            self.reserve_again = True
            while self.reserve_again:
                self.reserve_again = False
                self._reserve_once()
        finally:
            self.reserving = False

    def _reserve_once(self) -> None:
        mb = self.cfg.max_backfills
        now = self.env._now
        order = [j for j in self.waiting if j.kind == "recovery"] + [j for j in self.waiting if j.kind != "recovery"]
        self.waiting = deque()
        still: deque[_Job] = deque()
        for job in order:
            if job.cancelled:
                continue
            pg = job.pg
            tids = {job.new_acting[i].id for i in job.targets}
            prim = next((o for o in pg.acting if o.up and o.id not in tids), None)  # a complete acting OSD leads
            if prim is None:
                still.append(job)
                continue
            if self.local_res.get(prim.id, 0) >= mb or any(self.remote_res.get(t, 0) >= mb for t in tids):
                still.append(job)
                continue
            self.local_res[prim.id] = self.local_res.get(prim.id, 0) + 1
            self.peak_local = max(self.peak_local, self.local_res[prim.id])
            for t in tids:
                self.remote_res[t] = self.remote_res.get(t, 0) + 1
                self.peak_remote = max(self.peak_remote, self.remote_res[t])
            job.primary = prim
            job.t_start = now
            self.running.setdefault(prim.id, []).append(job)
            if not job.objects and not job.batches:
                if job.active == 0:  # (else the last kicked push finishes it)
                    self._finish(job)
            else:
                self._pump(prim)
        still.extend(self.waiting)  # jobs planned meanwhile (a finished job's PG remapped again)
        self.waiting = still

    # ------------------------------------------------------------------ pushes
    def _pump(self, osd: Osd) -> None:
        """Start pushes of ``osd``'s running jobs while its recovery_max_active and pace allow."""
        jobs = self.running.get(osd.id)
        if not jobs:
            return
        env = self.env
        now = env._now
        limit = self.cfg.recovery_max_active
        while True:
            for j in jobs:  # a backfill whose scanned objects are all started lists its next batch
                if j.ready == 0 and j.batches and j.scan_pending == 0:
                    self._scan(j)
            active = sum(j.active for j in jobs)
            if active >= limit:
                return
            job = next((j for j in jobs if j.ready > 0), None)
            if job is None:
                return
            nxt = self.next_start.get(osd.id, 0.0)
            if nxt > now + 1e-12:
                if osd.id not in self.pump_armed:
                    self.pump_armed.add(osd.id)
                    call_at(env, nxt, self._pump_ev, osd)
                return
            img, objno, tpos = job.objects.popleft()
            job.ready -= 1
            job.active += 1
            self.peak_active = max(self.peak_active, active + 1)
            nbytes = img.shard_size
            if self.mclock:
                cost = max(nbytes, self.mclock_min_cost) * len(tpos)
                self.next_start[osd.id] = max(now, nxt) + cost / self.mclock_rate
            else:
                self.next_start[osd.id] = now + self.sleep
            self._push(job, img, objno, tpos)

    def _pump_ev(self, ev: Any) -> None:
        osd = ev._value
        self.pump_armed.discard(osd.id)
        self._pump(osd)

    def _push(self, job: _Job, img: Any, objno: int, tpos: tuple[int, ...], prim: Osd | None = None, prio: int = 0) -> None:
        """Read the object (replicated: at the primary; EC: k surviving shards), rebuild, send to the
        targets. ``prim``/``prio``: a push a client op kicked (before the job's reservation, at client priority).
        A partial push (partial object recovery) reads and sends only the extents written meanwhile."""
        pg = job.pg
        prim = prim or job.primary
        pool = pg.pool
        rc = self.cfg
        if pool.ec is None:
            sources = [pg.acting.index(prim)]
        else:
            lost = set(job.targets)
            tids = {job.new_acting[i].id for i in job.targets}
            sources = [p for p in range(pool.size) if p not in lost and pg.acting[p].up and pg.acting[p].id not in tids][: pool.ec.k]
        item = [len(sources), img, objno, tpos, prim, prio]
        off, n = 0, img.shard_size
        if job.partial:
            iid = id(img)
            parts = [job.partial.get((iid, objno, p)) for p in tpos]
            if all(parts):  # every target needs only its written extents: read their span's bytes
                off = min(x[0] for x in parts)
                n = max(x[1] for x in parts)
        rops = []
        for pos in sources:
            src = pg.acting[pos]
            rop = _RecOp(_READ, RECOVERY_PUSH, pg, img, objno, off, n)
            rop.pos = pos
            rop.job = job
            rop.item = item
            rop.osd = src
            if src is prim:  # the primary's recovery work item
                rop.prio = prio or rc.recovery_priority
                rop.wcost = rc.recovery_cost
            else:  # a sub-read request to the shard's OSD
                rop.prio = prio or rc.recovery_op_priority
                rop.wcost = n
            rops.append(rop)
        then(prim.cpu, prim.cpu.book(self.env._now, rc.recovery_op_cost), self._send_reads, rops)

    def _send_reads(self, rops: list[_RecOp], t: float) -> None:
        prim = rops[0].item[4]
        for rop in rops:
            if rop.osd is prim:
                prim.post(t, rop)
            else:
                then(prim.cpu, prim.cpu.book(t, prim.cfg.msgr_send_cost), self._read_out, rop)

    def _read_out(self, rop: _RecOp, t: float) -> None:
        prim = rop.item[4]
        src = rop.osd
        ts = self.cl.net.arrival(prim.host, src.host, t, 0)
        src.post(src.cpu.book(ts, prim.cfg.msgr_recv_cost + self.cfg.recovery_op_cost), rop)

    def _source_done(self, rop: _RecOp) -> None:
        """A source read is done; its data goes to the primary (EC) or straight on (replicated)."""
        prim = rop.item[4]
        src = rop.osd
        if src is not prim:
            cfg = src.cfg
            then(src.cpu, src.cpu.book(self.env._now, cfg.msgr_send_cost + cfg.msgr_cost_per_byte * rop.length),
                 self._read_back, rop)
        else:
            call_at(self.env, self.env._now, self._gathered, rop)

    def _read_back(self, rop: _RecOp, t: float) -> None:
        prim = rop.item[4]
        src = rop.osd
        cfg = src.cfg
        t = self.cl.net.arrival(src.host, prim.host, t, rop.length)
        call_at(self.env, prim.cpu.book(t, cfg.msgr_recv_cost + cfg.msgr_cost_per_byte * rop.length), self._gathered, rop)

    def _gathered(self, ev: Any) -> None:
        rop = ev._value
        item = rop.item
        item[0] -= 1
        if item[0] > 0:
            return
        job = rop.job
        prim = item[4]
        pool = job.pg.pool
        img = item[1]
        if pool.ec is not None:
            ec = pool.ec
            pool.ec_stats.decode_bytes += img.shard_size * ec.k
            then(prim.cpu, prim.cpu.book(self.env._now, img.shard_size * ec.k / ec.decode_rate), self._send_pushes, rop)
        else:
            self._send_pushes(rop, self.env._now)

    def _send_pushes(self, rop: _RecOp, t: float) -> None:
        item = rop.item
        job = rop.job
        prim = item[4]
        img, objno, tpos = item[1], item[2], item[3]
        size = img.shard_size
        cfg = prim.cfg
        rc = self.cfg
        iid = id(img)
        for pos in tpos:
            off, n = job.partial.get((iid, objno, pos), (0, size)) if job.partial else (0, size)
            wop = _RecOp(_WRITE, RECOVERY_PUSH, job.pg, img, objno, off, n)
            wop.obj_size = size
            wop.pos = pos
            wop.job = job
            wop.osd = job.new_acting[pos]
            wop.new_base = -1
            wop.item = item
            wop.prio = item[5] or rc.recovery_op_priority
            wop.wcost = n
            item[0] += 1
            then(prim.cpu, prim.cpu.book(t, cfg.msgr_send_cost + cfg.msgr_cost_per_byte * n), self._push_out, wop)

    def _push_out(self, wop: _RecOp, t: float) -> None:
        prim = wop.item[4]
        tgt = wop.osd
        cfg = prim.cfg
        n = wop.length
        ts = self.cl.net.arrival(prim.host, tgt.host, t, n)
        tgt.post(tgt.cpu.book(ts, cfg.msgr_recv_cost + cfg.msgr_cost_per_byte * n + self.cfg.recovery_op_cost), wop)

    def _admitted(self, wop: _RecOp) -> None:
        osd = wop.osd
        bs = osd.bs
        n = wop.length
        if n < wop.obj_size:  # a partial push: the written extents go into the target's old copy
            base = wop.image.base_of(wop.objno, wop.pos)
            if base < 0:
                base = bs.alloc(wop.obj_size)
        elif bs.KIND == "bluestore" and n > bs.cfg.prefer_deferred_size:
            base = 0  # BlueStore writes a large write to new space itself (relocate)
        else:
            base = bs.alloc(n)
        wop.new_base = base
        bs.write(wop, base, ("recovery", wop.pg), self._written)
        osd._release(wop)  # the push's transaction is queued: the worker takes its next op

    def _written(self, wop: _RecOp) -> None:
        job = wop.job
        if job.cancelled:  # a push of the previous interval: the target drops it
            self.pushes_discarded += 1
            return
        if job.switch:
            job.bases[(id(wop.image), wop.objno, wop.pos)] = wop.new_base
        else:
            wop.image.set_base(wop.objno, wop.pos, wop.new_base)
        if wop.length < wop.obj_size:
            self.partial_pushes += 1
        self.recovered_bytes += wop.length
        job.episode["bytes"] += wop.length
        tgt = wop.osd
        then(tgt.cpu, tgt.cpu.book(self.env._now, tgt.cfg.msgr_send_cost), self._ack_out, wop)

    def _ack_out(self, wop: _RecOp, t: float) -> None:
        tgt = wop.osd
        prim = wop.item[4]
        t = self.cl.net.arrival(tgt.host, prim.host, t, 0)
        call_at(self.env, prim.cpu.book(t, tgt.cfg.msgr_recv_cost), self._acked, wop)

    def _acked(self, ev: Any) -> None:
        wop = ev._value
        item = wop.item
        item[0] -= 1
        if item[0] > 0:
            return
        job = wop.job
        job.active -= 1
        job.pushed += 1
        self.recovered_objects += 1
        job.episode["objects"] += 1
        if job.kind == "recovery":
            self.log_recovered_objects += 1
            job.episode["log_objects"] += 1
        key = (id(wop.image), wop.objno)
        job.missing.pop(key, None)
        held = job.waiters.pop(key, None)
        if held:  # the client ops that waited for this object go on
            now = self.env._now
            for op, t in held:
                self.cl.send_client_op(op, max(t, now))
        if job.primary is None or job.cancelled:
            return  # a kicked push of a job still waiting for its reservations, or of a cancelled backfill
        if not job.objects and job.active == 0 and not job.batches and job.scan_pending == 0:
            self._finish(job)
        self._pump(job.primary)

    # ------------------------------------------------------------------ backfill scans
    def _scan(self, job: _Job) -> None:
        """List the next batch of the PG's objects (hash order, backfill_scan_max of them) at the primary
        (scan_range) and at each target (MOSDPGScan: it lists what it holds there); its objects are pushed
        once every listing is back."""
        listed, n_push, tlists = job.batches.popleft()
        job.scan_push = n_push
        prim = job.primary
        rc = self.cfg
        env = self.env
        now = env._now
        parts = [(prim, listed)] + [(job.new_acting[p], tlists[p]) for p in job.targets]
        job.scan_pending = len(parts)
        any_img = listed[0][0] if listed else next(iter(self.cl.images.values()))  # (an image for the op's fields)
        for osd, objs in parts:
            op = _ScanOp(_READ, BACKFILL_SCAN, job.pg, any_img, 0, 0, 0)
            op.item = objs
            op.job = job
            op.osd = osd
            op.miss = 0
            self.scans += 1
            self.scanned_objects += len(objs)
            if osd is prim:  # part of the primary's recovery work item
                op.prio = rc.recovery_priority
                op.wcost = rc.recovery_cost
                osd.post(now, op)
            else:
                op.prio = rc.recovery_op_priority
                op.wcost = 1
                then(prim.cpu, prim.cpu.book(now, prim.cfg.msgr_send_cost), self._scan_out, op)

    def _scan_out(self, op: _ScanOp, t: float) -> None:
        prim = op.job.primary
        ts = self.cl.net.arrival(prim.host, op.osd.host, t, 0)
        op.osd.post(op.osd.cpu.book(ts, prim.cfg.msgr_recv_cost), op)

    def _scan_listed(self, op: _ScanOp) -> None:
        """An OSD has listed its part of the batch: the primary's counts at once, a target's replies."""
        osd = op.osd
        if osd is op.job.primary:
            self._scan_back(op)
            return
        then(osd.cpu, osd.cpu.book(self.env._now, osd.cfg.msgr_send_cost + 64 * len(op.item) * osd.cfg.msgr_cost_per_byte),
             self._scan_reply, op)

    def _scan_reply(self, op: _ScanOp, t: float) -> None:
        osd = op.osd
        prim = op.job.primary
        n = 64 * len(op.item)  # (object id and version per object)
        t = self.cl.net.arrival(osd.host, prim.host, t, n)
        call_at(self.env, prim.cpu.book(t, osd.cfg.msgr_recv_cost), self._scan_back_ev, op)

    def _scan_back_ev(self, ev: Any) -> None:
        self._scan_back(ev._value)

    def _scan_back(self, op: _ScanOp) -> None:
        job = op.job
        if job.cancelled:
            return
        job.scan_pending -= 1
        if job.scan_pending > 0:
            return
        job.ready += job.scan_push
        job.scan_push = 0
        if not job.objects and not job.batches and job.active == 0:
            self._finish(job)
        else:
            self._pump(job.primary)

    # ------------------------------------------------------------------ a PG is recovered / backfilled
    def _finish(self, job: _Job) -> None:
        pg = job.pg
        new = job.new_acting
        if job.switch:
            self._relayout(pg, new, job.targets, job.bases)
        job.finished = True
        if job.pushed == 0:
            self.pgs_clean_empty += 1  # nothing to copy: not a recovered / backfilled PG
        elif job.kind == "recovery":
            self.pgs_recovered += 1
        else:
            self.pgs_backfilled += 1
        prim = job.primary
        self.local_res[prim.id] -= 1
        for i in job.targets:
            self.remote_res[new[i].id] -= 1
        self.running[prim.id].remove(job)
        del self.jobs[pg]
        if len(pg.acting) == pg.pool.size and all(o.up for o in pg.acting):
            for a in self.absent.get(pg, {}).values():
                a.trimmed = True  # the PG is clean: its log is trimmed to min_pg_log_entries
        ep = job.episode
        ep["pgs"] -= 1
        if ep["pgs"] == 0:
            ep["t_done"] = self.env._now
        if job.switch:
            self._peer([pg])
        w = self.want.pop(pg, None)
        if w is not None:
            a, wep = w
            by_id = {o.id: o for o in self.cl.osds}
            objs = self._objects_by_pg(pg.pool).get(pg.ps, [])
            if self._plan_remap(pg, a, by_id, objs, wep):
                self._peer([pg])
            if wep["pgs"] > 0:
                wep["t_done"] = None
        if not self.jobs:
            self.t_done = self.env._now
        self._reserve()

    # ------------------------------------------------------------------ statistics
    def event_figures(self, timeline: Timeline) -> dict[str, float]:
        """Per applied event i: ``ev{i}_{iops,p50_ms,p99_ms}`` of the client ops completed from the event
        to the end of the recovery it started (or to the next event, or now), ``ev{i}_recovery_s`` and
        ``ev{i}_moved_gib`` (NaN / 0 for an event that moved nothing)."""
        now = self.env._now
        eps = {ep["event"]: ep for ep in self.episodes}
        out: dict[str, float] = {}
        for i, (t, _a, _ids) in enumerate(self.history):
            nxt = self.history[i + 1][0] if i + 1 < len(self.history) else now
            ep = eps.get(i)
            end = nxt
            if ep is not None and ep["t_done"] is not None:
                end = min(end, ep["t_done"]) if ep["t_done"] > t else nxt
            f = timeline.window(t, max(end, t))
            out[f"ev{i}_iops"] = f["iops"]
            out[f"ev{i}_p50_ms"] = f["p50_ms"]
            out[f"ev{i}_p99_ms"] = f["p99_ms"]
            done = ep is not None and ep["t_done"] is not None
            out[f"ev{i}_recovery_s"] = (ep["t_done"] - ep["t"]) if done else float("nan")
            out[f"ev{i}_moved_gib"] = (ep["bytes"] / float(1 << 30)) if ep is not None else 0.0
        return out

    def stats(self, timeline: Timeline, t_start: float) -> dict[str, Any]:
        now = self.env._now
        first = self.episodes[0] if self.episodes else None
        t_end = self.t_done if self.t_out is not None or self.episodes else None
        rec_s = float("nan")  # the first episode's: its event to its last PG recovered
        if first is not None and first["t_done"] is not None:
            rec_s = first["t_done"] - first["t"]
        eps = []
        for ep in self.episodes:
            e = dict(ep)
            e["recovery_s"] = (ep["t_done"] - ep["t"]) if ep["t_done"] is not None else float("nan")
            eps.append(e)
        return {
            "events": [{"at": at, "action": a, "osds": ids} for at, a, ids in self.events],
            "history": [{"t": t, "action": a, "osds": ids} for t, a, ids in self.history],
            "op_queue": "mclock_scheduler" if self.mclock else "wpq",
            "recovery_sleep_s": self.sleep,
            "t_first_event": self.t_first,
            "t_recovered": self.t_done,
            "recovery_s": rec_s,
            "recovered_bytes": self.recovered_bytes,
            "recovered_objects": self.recovered_objects,
            "log_recovered_objects": self.log_recovered_objects,
            "pgs_remapped": self.pgs_remapped,
            "pgs_backfilled": self.pgs_backfilled,
            "pgs_recovered": self.pgs_recovered,
            "pgs_nothing_to_copy": self.pgs_clean_empty,
            "backfills_cancelled": self.backfills_cancelled,
            "pushes_discarded": self.pushes_discarded,
            "backfill_scans": self.scans,
            "backfill_scanned_objects": self.scanned_objects,
            "partial_pushes": self.partial_pushes,
            "pgs_backfilling": len(self.jobs),
            "ops_blocked_by_peering": self.peering_blocks,
            "ops_resent": self.resent_ops,
            "mirrored_writes": self.mirrored_writes,
            "mirrored_bytes": self.mirrored_bytes,
            "ops_waited_for_recovery": self.degraded_waits,
            "objects_kicked": self.kicked,
            "queue_picks_client": self.queue_picks[0],
            "queue_picks_recovery": self.queue_picks[1],
            "peak_backfills_local": self.peak_local,
            "peak_backfills_remote": self.peak_remote,
            "peak_pushes_active": self.peak_active,
            "episodes": eps,
            "phases": timeline.phases(t_start, self.t_first, t_end, now),
            "timeline": timeline.bins(1.0),
        }


def _serve_push(osd: Osd, sh: Any, op: _RecOp) -> None:
    """A recovery op took a worker of ``osd``'s op queue: the source read (synchronous in the op
    thread, as build_push_op / handle_sub_read read) or the push's transaction at the target."""
    rec = osd.cluster.recovery
    if op.kind == _READ:
        base = op.image.base_of(op.objno, op.pos)
        if base < 0:
            osd._release(op)
            rec._source_done(op)
            return
        osd.bs.read(op, base, True, _read_done)
    elif osd.bs.admit(op, rec._admitted):
        rec._admitted(op)
    # else: the worker waits in the object store's throttle, as a client write's does


def _read_done(op: _RecOp) -> None:
    osd = op.osd
    osd._release(op)
    osd.cluster.recovery._source_done(op)


def _serve_mirror(osd: Osd, sh: Any, m: _Mirror) -> None:
    osd.subops += 1
    call_at(osd.env, osd.cpu.book(osd.env._now, osd._cost(osd.cfg.subop_cost)), _mirror_prepared, m)


def _mirror_prepared(ev: Any) -> None:
    m = ev._value
    if m.osd.bs.admit(m, _mirror_admitted):
        _mirror_admitted(m)


def _mirror_admitted(m: _Mirror) -> None:
    osd = m.osd
    job = m.job
    if job.finished:
        base = m.image.base_of(m.objno, m.pos)
    else:
        base = job.bases.get(m.key, -1)
    if base < 0:
        base = osd.bs.alloc(m.obj_size)
        m.relocate(base)
    osd.bs.write(m, base, m.pg, osd._subop_committed)
    osd._release(m)


def _serve_scan(osd: Osd, sh: Any, op: _ScanOp) -> None:
    """A backfill scan took a worker: list the objects (CPU per object, and the onodes not cached: BlueStore
    iterates the PG's key range in RocksDB, one contiguous DB read of the missed onodes; FileStore reads each
    object's inode), synchronously in the op thread as scan_range does."""
    rec = osd.cluster.recovery
    rc = rec.cfg
    bs = osd.bs
    miss = []
    for img, objno in op.item:
        k = img.key_base + objno
        if not bs.probe_onode(k):
            bs.onodes.insert(k)
            miss.append((img, objno))
    op.miss = miss
    cost = rc.recovery_op_cost + len(op.item) * rc.backfill_scan_cost + len(miss) * bs.meta_miss_cost
    call_at(osd.env, osd.cpu.book(osd.env._now, cost), _scan_io, op)


def _scan_io(ev: Any) -> None:
    op = ev._value
    bs = op.osd.bs
    if not op.miss or bs.meta_miss_read <= 0:
        _scan_done(op)
    elif bs.KIND == "bluestore":
        n = len(op.miss) * bs.meta_miss_read
        req = Request(_READ, bs._db_offset(), -(-n // bs.block) * bs.block, tag=op)
        req.parent = _scan_done
        bs.wal_dev.submit(req).callbacks.append(bs._onode_only_done)
    else:
        _scan_inodes(op)


def _scan_inodes(op: _ScanOp) -> None:
    """FileStore: read the missed objects' inodes one after another."""
    if not op.miss:
        _scan_done(op)
        return
    img, objno = op.miss.pop()
    op.image = img
    op.objno = objno
    op.objkey = img.key_base + objno
    op.osd.bs.read_onode(op, _scan_inodes)


def _scan_done(op: _ScanOp) -> None:
    op.osd._release(op)
    op.osd.cluster.recovery._scan_listed(op)


EXT_ROLES[RECOVERY_PUSH] = _serve_push
EXT_ROLES[MIRROR] = _serve_mirror
EXT_ROLES[BACKFILL_SCAN] = _serve_scan
