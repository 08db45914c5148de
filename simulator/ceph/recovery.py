"""OSD failures during a run, peering, recovery/backfill, and the client latency timeline around them.

Events (``ClusterConfig.events``, simulated seconds since the cluster was built):

* ``down``: the OSD(s) stop serving. Every PG with a shard there re-peers (no client IO for
  ``recovery.peering_time``) and then runs degraded on the others: replicated writes skip the down
  replica, erasure-coded reads of a lost shard read k others and decode. Ops already at the OSDs
  when it fails complete (as if the failure came right after them); Ceph would resend them after peering.
* ``out``: also down, and reweight 0: CRUSH maps each PG again (``Cluster.map_pool``). A PG whose
  acting set changes re-peers and is backfilled: every existing object of the PG is copied to each
  OSD new in its acting set (replicated: read from the acting primary, a survivor; erasure-coded: the
  lost shard is rebuilt from k surviving shards read by the primary and decoded), then the PG switches
  to the new acting set (another peering). Client IO goes on meanwhile on the survivors.

Throttles, as the OSD applies them: a backfilling PG holds a local reservation on its primary and a
remote one on each target (``max_backfills`` each); a primary runs at most ``recovery_max_active``
object pushes at a time. The op-queue scheduler decides the pace: ``wpq`` starts an OSD's next push
``recovery_sleep`` after its previous one (osd_recovery_sleep_hdd 0.1 s: at most 10 pushes/s per OSD);
``mclock_scheduler`` paces pushes so that their cost (max(bytes, bandwidth/iops) as mClock's
calc_scaled_cost) stays within the profile's background-recovery reservation of the OSD's bandwidth
(high_client_ops 40 %, balanced 50 %, high_recovery_ops 70 %) -- the share recovery gets while clients
use the rest (the model does not hand recovery the idle client share). Recovery reads and writes
compete with client IO in BlueStore (throttles, kv_sync) and at the block layer and device.

Simplifications: client writes during backfill are not sent to the backfill targets (the copy moves
exactly the data the PG held when it was remapped); a PG remapped twice finishes its first backfill
before the next.

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

from simulator.ceph.osd import EXT_ROLES, ObjOp
from simulator.ceph.resources import call_at
from simulator.devices.base import Op
from simulator.errors import ConfigError

if TYPE_CHECKING:
    from simulator.ceph.cluster import Cluster
    from simulator.ceph.osd import PG, Osd

__all__ = ["MCLOCK_RECOVERY_SHARE", "Recovery", "Timeline"]

_READ = int(Op.READ)
_WRITE = int(Op.WRITE)
RECOVERY_PUSH = 6  # op role of a recovery push at its target (simulator.ceph.osd.EXT_ROLES)

#: background-recovery reservation of the mClock profiles (src/osd/scheduler/mClockScheduler.cc,
#: high_client_ops {.6, 2, 0}/{.4, 1, 0}; balanced {.5, 1, 0}/{.5, 1, 0}; high_recovery_ops {.3, 1, 0}/{.7, 2, 0})
MCLOCK_RECOVERY_SHARE = {"high_client_ops": 0.4, "balanced": 0.5, "high_recovery_ops": 0.7}


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
    BlueStore put the object)."""

    __slots__ = ("item", "job", "new_base", "targets")

    def relocate(self, new_base: int) -> None:
        self.new_base = new_base


class _Job:
    """The backfill of one PG to its new acting set."""

    __slots__ = ("active", "bases", "new_acting", "objects", "pg", "primary", "pushed", "t_start", "targets")

    def __init__(self, pg: PG, new_acting: list[Osd], targets: list[int], objects: list[tuple[Any, int]]):
        self.pg = pg
        self.new_acting = new_acting
        self.targets = targets  # positions (in new_acting) whose OSD needs the data
        self.objects = deque(objects)  # (image, objno)
        self.primary: Osd | None = None
        self.active = 0
        self.pushed = 0
        self.bases: dict[tuple[int, int, int], int] = {}  # (image index, objno, position) -> base on the target
        self.t_start = -1.0


class Recovery:
    """Failure events, peering pauses, backfill jobs and their throttles for one cluster."""

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
        self.out: set[int] = set()
        self.jobs: dict[PG, _Job] = {}
        self.waiting: deque[_Job] = deque()
        self.running: dict[int, list[_Job]] = {}  # primary OSD id -> its running jobs
        self.local_res: dict[int, int] = {}
        self.remote_res: dict[int, int] = {}
        self.next_start: dict[int, float] = {}
        self.pump_armed: set[int] = set()
        self.t_first: float | None = None
        self.t_out: float | None = None
        self.t_done: float | None = None
        self.recovered_bytes = 0
        self.recovered_objects = 0
        self.pgs_remapped = 0
        self.pgs_backfilled = 0
        self.peering_blocks = 0
        self.peak_local = 0  # most backfill reservations one OSD held as primary / as target
        self.peak_remote = 0
        self.peak_active = 0  # most pushes one primary had in flight
        for at, _action, _ids in self.events:
            call_at(self.env, max(at, self.env.now), self._event, (at, _action, _ids))

    # ------------------------------------------------------------------ events and peering
    def _event(self, ev: Any) -> None:
        _at, action, ids = ev._value
        now = self.env._now
        if self.t_first is None:
            self.t_first = now
        changed = set(ids)
        for i in ids:
            self.cl.osds[i].up = False
        if action == "out":
            if self.t_out is None:
                self.t_out = now
            self.out |= changed
            self._remap()
        self._peer([pg for pool in self.cl.pools.values() for pg in pool.pgs
                    if any(o.id in changed for o in pg.acting)])
        if action == "out" and not self.jobs:
            self.t_done = now

    def _peer(self, pgs: list[PG]) -> None:
        """PGs whose acting set changed serve no IO for ``peering_time``."""
        if not pgs:
            return
        if self.cfg.peering_time <= 0:
            self._activate(pgs)
            return
        for pg in pgs:
            pg.ppos = -1
        call_at(self.env, self.env._now + self.cfg.peering_time, self._peered, pgs)

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

    # ------------------------------------------------------------------ remapping -> backfill jobs
    def _remap(self) -> None:
        cl = self.cl
        by_id = {o.id: o for o in cl.osds}
        for pool in cl.pools.values():
            new = cl.map_pool(pool, out=self.out)
            objs = self._objects_by_pg(pool)
            for pg, a in zip(pool.pgs, new, strict=True):
                if pg in self.jobs:
                    continue  # one backfill at a time per PG (see module docstring)
                cur = [o.id for o in pg.acting]
                if a == cur:
                    continue
                new_acting = [by_id[x] for x in a if x in by_id]
                if len(new_acting) != len(a):
                    continue  # an unfillable EC slot: the PG stays degraded
                if pool.ec is not None:
                    targets = [i for i, (x, y) in enumerate(zip(cur, a, strict=True)) if x != y]
                else:
                    targets = [i for i, x in enumerate(a) if x not in cur]
                self.pgs_remapped += 1
                job = _Job(pg, new_acting, targets, objs.get(pg.ps, []))
                self.jobs[pg] = job
                self.waiting.append(job)
        self._reserve()

    def _objects_by_pg(self, pool: Any) -> dict[int, list[tuple[Any, int]]]:
        """Existing objects of every image in ``pool``, grouped by PG, in object order."""
        out: dict[int, list[tuple[Any, int]]] = {}
        for img in self.cl.images.values():
            if img.pool is not pool:
                continue
            exists = img.obj_base.max(axis=1) >= 0
            objnos = np.flatnonzero(exists)
            ps = img.obj_ps_array[objnos]
            order = np.argsort(ps, kind="stable")
            objnos, ps = objnos[order], ps[order]
            cuts = np.flatnonzero(np.diff(ps)) + 1
            for seg_o, seg_p in zip(np.split(objnos, cuts), np.split(ps, cuts), strict=True):
                if seg_o.size:
                    out.setdefault(int(seg_p[0]), []).extend((img, int(x)) for x in seg_o.tolist())
        return out

    def _reserve(self) -> None:
        """Grant local (primary) and remote (target) backfill reservations, FIFO with skipping."""
        mb = self.cfg.max_backfills
        still: deque[_Job] = deque()
        now = self.env._now
        while self.waiting:
            job = self.waiting.popleft()
            pg = job.pg
            prim = next((o for o in pg.acting if o.up), None)  # the acting primary: the first up OSD
            if prim is None:
                still.append(job)
                continue
            tids = {job.new_acting[i].id for i in job.targets}
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
            if not job.objects:
                self._finish(job)
            else:
                self._pump(prim)
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
            active = sum(j.active for j in jobs)
            if active >= limit:
                return
            job = next((j for j in jobs if j.objects), None)
            if job is None:
                return
            nxt = self.next_start.get(osd.id, 0.0)
            if nxt > now + 1e-12:
                if osd.id not in self.pump_armed:
                    self.pump_armed.add(osd.id)
                    call_at(env, nxt, self._pump_ev, osd)
                return
            img, objno = job.objects.popleft()
            job.active += 1
            self.peak_active = max(self.peak_active, active + 1)
            nbytes = img.shard_size
            if self.mclock:
                cost = max(nbytes, self.mclock_min_cost) * len(job.targets)
                self.next_start[osd.id] = max(now, nxt) + cost / self.mclock_rate
            else:
                self.next_start[osd.id] = now + self.sleep
            self._push(job, img, objno)

    def _pump_ev(self, ev: Any) -> None:
        osd = ev._value
        self.pump_armed.discard(osd.id)
        self._pump(osd)

    def _push(self, job: _Job, img: Any, objno: int) -> None:
        """Read the object (replicated: at the primary; EC: k surviving shards), rebuild, send to the targets."""
        pg = job.pg
        prim = job.primary
        pool = pg.pool
        rc = self.cfg
        t = prim.cpu.book(self.env._now, rc.recovery_op_cost)
        if pool.ec is None:
            sources = [pg.acting.index(prim)]
        else:
            lost = set(job.targets)
            sources = [p for p in range(pool.size) if p not in lost and pg.acting[p].up][: pool.ec.k]
        item = [len(sources), img, objno]
        for pos in sources:
            src = pg.acting[pos]
            rop = _RecOp(_READ, RECOVERY_PUSH, pg, img, objno, 0, img.shard_size)
            rop.pos = pos
            rop.job = job
            rop.item = item
            rop.osd = src
            if src is prim:
                call_at(self.env, t, self._read_at_source, rop)
            else:  # a sub-read request to the shard's OSD
                cfg = prim.cfg
                ts = prim.cpu.book(t, cfg.msgr_send_cost)
                ts = self.cl.net.arrival(prim.host, src.host, ts, 0)
                call_at(self.env, src.cpu.book(ts, cfg.msgr_recv_cost + rc.recovery_op_cost), self._read_at_source, rop)

    def _read_at_source(self, ev: Any) -> None:
        rop = ev._value
        src = rop.osd
        base = int(rop.image.obj_base[rop.objno, rop.pos])
        if base < 0:
            self._source_done(rop)
            return
        src.bs.read(rop, base, True, self._source_done)

    def _source_done(self, rop: _RecOp) -> None:
        """A source read is done; its data goes to the primary (EC) or straight on (replicated)."""
        job = rop.job
        prim = job.primary
        src = rop.osd
        env = self.env
        t = env._now
        if src is not prim:
            cfg = src.cfg
            t = src.cpu.book(t, cfg.msgr_send_cost + cfg.msgr_cost_per_byte * rop.length)
            t = self.cl.net.arrival(src.host, prim.host, t, rop.length)
            t = prim.cpu.book(t, cfg.msgr_recv_cost + cfg.msgr_cost_per_byte * rop.length)
        call_at(env, t, self._gathered, rop)

    def _gathered(self, ev: Any) -> None:
        rop = ev._value
        item = rop.item
        item[0] -= 1
        if item[0] > 0:
            return
        job = rop.job
        prim = job.primary
        pool = job.pg.pool
        img, objno = item[1], item[2]
        t = self.env._now
        if pool.ec is not None:
            ec = pool.ec
            pool.ec_stats.decode_bytes += img.shard_size * ec.k
            t = prim.cpu.book(t, img.shard_size * ec.k / ec.decode_rate)
        n = img.shard_size
        cfg = prim.cfg
        rc = self.cfg
        for pos in job.targets:
            tgt = job.new_acting[pos]
            wop = _RecOp(_WRITE, RECOVERY_PUSH, job.pg, img, objno, 0, n)
            wop.obj_size = n
            wop.pos = pos
            wop.job = job
            wop.osd = tgt
            wop.new_base = -1
            wop.item = item
            item[0] += 1
            ts = prim.cpu.book(t, cfg.msgr_send_cost + cfg.msgr_cost_per_byte * n)
            ts = self.cl.net.arrival(prim.host, tgt.host, ts, n)
            call_at(self.env, tgt.cpu.book(ts, cfg.msgr_recv_cost + cfg.msgr_cost_per_byte * n + rc.recovery_op_cost),
                    self._write_at_target, wop)

    def _write_at_target(self, ev: Any) -> None:
        wop = ev._value
        if wop.osd.bs.admit(wop, self._admitted):
            self._admitted(wop)

    def _admitted(self, wop: _RecOp) -> None:
        bs = wop.osd.bs
        n = wop.length
        if bs.KIND == "bluestore" and n > bs.cfg.prefer_deferred_size:
            base = 0  # BlueStore writes a large write to new space itself (relocate)
        else:
            base = bs.alloc(n)
        wop.new_base = base
        bs.write(wop, base, ("recovery", wop.pg), self._written)

    def _written(self, wop: _RecOp) -> None:
        job = wop.job
        job.bases[(id(wop.image), wop.objno, wop.pos)] = wop.new_base
        self.recovered_bytes += wop.length
        tgt = wop.osd
        prim = job.primary
        cfg = tgt.cfg
        t = tgt.cpu.book(self.env._now, cfg.msgr_send_cost)
        t = self.cl.net.arrival(tgt.host, prim.host, t, 0)
        call_at(self.env, prim.cpu.book(t, cfg.msgr_recv_cost), self._acked, wop)

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
        if not job.objects and job.active == 0:
            self._finish(job)
        self._pump(job.primary)

    # ------------------------------------------------------------------ a PG is backfilled
    def _finish(self, job: _Job) -> None:
        pg = job.pg
        old = pg.acting
        new = job.new_acting
        for img in self.cl.images.values():
            if img.pool is not pg.pool:
                continue
            rows = np.flatnonzero(img.obj_ps_array == pg.ps)
            if rows.size == 0:
                continue
            cols = img.obj_base[rows].copy()
            out = np.full_like(cols, -1)
            for j, o in enumerate(new):
                if j in job.targets:
                    for r_i, objno in enumerate(rows.tolist()):
                        out[r_i, j] = job.bases.get((id(img), objno, j), -1)
                elif pg.pool.ec is not None:
                    out[:, j] = cols[:, j]
                else:
                    out[:, j] = cols[:, old.index(o)]
            img.obj_base[rows] = out
        pg.acting = new
        self.pgs_backfilled += 1
        prim = job.primary
        self.local_res[prim.id] -= 1
        for i in job.targets:
            self.remote_res[new[i].id] -= 1
        self.running[prim.id].remove(job)
        del self.jobs[pg]
        self._peer([pg])
        if not self.jobs:
            self.t_done = self.env._now
        self._reserve()

    # ------------------------------------------------------------------ statistics
    def stats(self, timeline: Timeline, t_start: float) -> dict[str, Any]:
        now = self.env._now
        t_end = self.t_done if self.t_out is not None else None
        rec_s = (self.t_done - self.t_out) if (self.t_out is not None and self.t_done is not None) else float("nan")
        return {
            "events": [{"at": at, "action": a, "osds": ids} for at, a, ids in self.events],
            "op_queue": "mclock_scheduler" if self.mclock else "wpq",
            "recovery_sleep_s": self.sleep,
            "t_first_event": self.t_first,
            "t_recovered": self.t_done,
            "recovery_s": rec_s,
            "recovered_bytes": self.recovered_bytes,
            "recovered_objects": self.recovered_objects,
            "pgs_remapped": self.pgs_remapped,
            "pgs_backfilled": self.pgs_backfilled,
            "pgs_backfilling": len(self.jobs),
            "ops_blocked_by_peering": self.peering_blocks,
            "peak_backfills_local": self.peak_local,
            "peak_backfills_remote": self.peak_remote,
            "peak_pushes_active": self.peak_active,
            "phases": timeline.phases(t_start, self.t_first, t_end, now),
            "timeline": timeline.bins(1.0),
        }


def _push_role(osd: Any, sh: Any, op: Any) -> None:  # pragma: no cover - pushes bypass the op queue
    raise AssertionError("recovery pushes are not queued")


EXT_ROLES[RECOVERY_PUSH] = _push_role
