"""Recovery in the OSD op queue and the client's view of a failure: wpq's dequeue between client
and recovery ops (the probability follows WeightedPriorityQueue's priority draw and cost coin flip;
raising osd_recovery_op_priority / osd_recovery_priority shortens recovery and slows clients), client
writes sent to backfill targets (the client waits for their commit), and ops in flight at a failing
OSD resent to the new primary (completed exactly once, their latency including the wait)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import simulator.ceph  # noqa: F401
from simulator.ceph.osd import ObjOp
from simulator.ceph.recovery import RECOVERY_PUSH, Recovery, _RecOp
from simulator.devices.base import Op, Request

sys.path.insert(0, str(Path(__file__).parent))
from fio_drive import ClosedLoop
from test_ceph_recovery import _cluster, _params


def _pick_share(rec: dict, n: int = 20000) -> tuple[float, float]:
    """Measured share of recovery picks between one waiting 4 KiB client write and one recovery op, and
    WeightedPriorityQueue's: class drawn by priority, admitted with probability (max - 0.9 cost) / max."""
    _sim, cl = _cluster(_params([], recovery=rec))
    r = Recovery(cl)  # the scheduler of a cluster without events
    osd = cl.osds[0]
    pg = cl.pools["rbd"].pgs[0]
    img = cl.image("rbd", "img")
    c = ObjOp(int(Op.WRITE), 0, pg, img, 0, 0, 4096)
    ro = _RecOp(int(Op.READ), RECOVERY_PUSH, pg, img, 0, 0, 4 << 20)
    ro.prio = r.cfg.recovery_priority
    ro.wcost = r.cfg.recovery_cost
    k = sum(r._pick(osd, c, ro) for _ in range(n))
    pc, pr, cc, cr = r.cfg.client_op_priority, ro.prio, 4096, ro.wcost
    mx = max(cc, cr)
    a_r, a_c = pr / (pc + pr) * (mx - 0.9 * cr) / mx, pc / (pc + pr) * (mx - 0.9 * cc) / mx
    return k / n, a_r / (a_r + a_c)


@pytest.mark.parametrize("prio", [5, 63])
def test_wpq_pick_follows_priority_and_cost(prio: int) -> None:
    share, theory = _pick_share({"recovery_priority": prio})
    sd = math.sqrt(theory * (1 - theory) / 20000)
    assert abs(share - theory) < 4 * sd + 1e-9
    assert theory < 0.1  # a 20 MiB work item loses most coin flips even at equal priority


def test_mclock_pick_follows_the_profile_weights() -> None:
    share, _ = _pick_share({"op_queue": "mclock_scheduler", "mclock_profile": "high_recovery_ops"})
    assert abs(share - 2 / 3) < 4 * math.sqrt(2 / 9 / 20000)


def _prio_run(prio: int):
    rec = {"recovery_sleep": 0, "recovery_op_priority": prio, "recovery_priority": prio, "max_backfills": 1,
           "recovery_max_active": 3, "peering_time": "0.1s"}
    p = _params([{"at": "2s", "action": "out", "osd": 2}], hosts=6, per_host=1, recovery=rec, osd={"op_num_shards": 1})
    p["hosts"][0]["drives"][0]["device"]["params"]["service"]["value"] = "2ms"
    p["images"][0].update(prefilled=True, size="2GiB")
    sim, cl = _cluster(p)
    ClosedLoop(sim, cl.image("rbd", "img"), qd=24, rw="randread", runtime=10.0, seed=2).run()
    return cl


def test_raising_recovery_priority_shortens_recovery_and_slows_clients() -> None:
    lo, hi = _prio_run(3), _prio_run(63)
    r_lo, r_hi = lo.stats()["recovery"], hi.stats()["recovery"]
    assert r_hi["pgs_backfilling"] == 0 and math.isfinite(r_hi["recovery_s"])
    # at the default priorities recovery gets few turns at a busy op queue: not done when the high-priority run is
    assert r_lo["recovered_objects"] < r_hi["recovered_objects"]
    assert r_lo["queue_picks_recovery"] / r_lo["queue_picks_client"] < r_hi["queue_picks_recovery"] / r_hi["queue_picks_client"]
    # the clients' tail latency over the same window (from the failure to the end of the faster
    # recovery): the recovery reads that now win the queue hold its worker ahead of client reads.
    # Distribution-free 99th-percentile bounds (order statistics, +-3 sd of the binomial rank)
    # (starting once the ops held by peering are through: peering_time + 4 x the p99 before the failure)
    a, b = 2.0 + 0.1 + 4e-3 * r_lo["phases"]["before"]["p99_ms"], 2.0 + r_hi["recovery_s"]
    lo_ci, hi_ci = _p99_bounds(lo.timeline, a, b), _p99_bounds(hi.timeline, a, b)
    assert hi_ci[0] > lo_ci[1]


def _p99_bounds(tl, a: float, b: float) -> tuple[float, float]:
    t = np.frombuffer(tl.t, dtype=np.float64)
    x = np.sort(np.frombuffer(tl.lat, dtype=np.float64)[(t >= a) & (t < b)])
    n = x.size
    k, sd = 0.99 * n, math.sqrt(n * 0.99 * 0.01)
    return float(x[max(0, int(k - 3 * sd))]), float(x[min(n - 1, int(math.ceil(k + 3 * sd)))])


@pytest.mark.parametrize("ec", [False, True])
def test_client_writes_during_backfill_go_to_the_backfill_targets_and_wait_for_them(ec: bool) -> None:
    rec = {"recovery_sleep": "0.02s", "peering_time": "0.1s"}
    p = _params([{"at": "1s", "action": "out", "osd": 2}], ec=ec, hosts=6, per_host=1, recovery=rec)
    p["images"][0].update(prefilled=True, size="1GiB")
    sim, cl = _cluster(p)
    r = cl.recovery
    sent: list[tuple[ObjOp, list[int]]] = []
    mirror = r.mirror

    def spy(prim, op, writes, t):
        job = r.jobs.get(op.pg)
        n = mirror(prim, op, writes, t)
        if n:
            shards = None if writes is None else {w[0] for w in writes}  # EC: the shards this write touches
            done = [p for p in job.targets if (id(op.image), op.objno, p) in job.bases and (shards is None or p in shards)]
            assert len(done) == n
            sent.append((op, [job.new_acting[p].id for p in done]))
        return n

    r.mirror = spy
    ends: dict[ObjOp, float] = {}
    cl.tracer = lambda op, t: ends.__setitem__(op, t)
    ClosedLoop(sim, cl.image("rbd", "img"), qd=8, rw="randwrite", runtime=6.0, seed=3).run()
    s = cl.stats()["recovery"]
    assert s["pgs_backfilling"] == 0
    assert len(sent) > 20 and s["mirrored_writes"] == sum(len(t) for _, t in sent)
    checked = 0
    for op, tids in sent:
        if op not in ends:
            continue  # resent when its PG switched to the new acting set: the copy that completed is another op
        committed = {o: t for o, t in op.commits}
        assert tids
        for tid in tids:  # the backfill target committed the write, and the client heard after that
            assert tid in committed and ends[op] >= committed[tid]
            checked += 1
    assert checked > 20


@pytest.mark.parametrize("ec", [False, True])
def test_ops_in_flight_at_a_failing_osd_are_resent_and_complete_exactly_once(ec: bool) -> None:
    peering = 0.3
    p = _params([{"at": "1s", "action": "down", "osd": 1}], ec=ec, hosts=6, per_host=1, recovery={"peering_time": f"{peering}s"})
    p["hosts"][0]["drives"][0]["device"]["params"]["service"]["value"] = "3ms"
    sim, cl = _cluster(p)
    img = cl.image("rbd", "img")
    r = cl.recovery
    at_event: dict[int, Request] = {}  # (holding the requests keeps their ids unique)
    resend = r._resend

    def spy(pgs):
        at_event.update((id(op.req), op.req) for op in r.live if op.pg in set(pgs))
        resend(pgs)

    r._resend = spy
    served: list[tuple[int, float, int, float]] = []  # (req id, completion, serving OSD, t0)
    cl.tracer = lambda op, t: served.append((id(op.req), t, op.osd.id, op.t0))
    done: dict[int, int] = {}
    rng = np.random.default_rng(5)

    def gen():
        for i in range(3000):  # open loop at 1500/s over the failure
            off = int(rng.integers(0, img.capacity // 4096)) * 4096
            req = Request(Op.WRITE if i % 2 else Op.READ, off, 4096)
            img.submit(req).callbacks.append(lambda ev, i=i: done.__setitem__(i, done.get(i, 0) + 1))
            yield sim.env.timeout(1 / 1500)

    sim.env.process(gen())
    sim.run(until=10.0)
    assert len(done) == 3000 and set(done.values()) == {1}
    s = cl.stats()["recovery"]
    assert s["ops_resent"] == len(at_event) > 10
    # no reply from the failed OSD after it failed; every resent op waited for peering
    assert all(osd != 1 for _, t, osd, _ in served if t > 1.0 + 1e-3)
    resent = [(t, t0) for rid, t, _, t0 in served if rid in at_event]
    assert len(resent) == len({rid for rid, *_ in served if rid in at_event})  # each once
    assert all(t >= 1.0 + peering for t, _ in resent)
    assert all(t - t0 >= 1.0 + peering - t0 for t, t0 in resent)
