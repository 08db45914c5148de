"""An OSD that comes back: ``up`` after ``down`` (log-based recovery of exactly the objects written
while it was away), ``out`` then ``in`` (the PGs map back and move back: log recovery when the PG log
covers the absence, else backfill; only changed objects when the OSD kept its old copies, everything
when its stray copies were deleted), and the automatic out after mon_osd_down_out_interval."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import simulator.ceph  # noqa: F401
from simulator.devices.base import Op

sys.path.insert(0, str(Path(__file__).parent))
from fio_drive import ClosedLoop
from test_ceph_recovery import _cluster, _params

OSD = 2
OBJ = 4 << 20


def _run(events: list, recovery: dict | None = None, runtime: float = 14.0, qd: int = 1, seed: int = 1):
    rec = {"recovery_sleep": "0.01s", **(recovery or {})}
    p = _params(events, hosts=6, per_host=1, recovery=rec)
    p["images"][0].update(prefilled=True, size="2GiB")
    p["hosts"][0]["drives"][0]["device"]["params"]["service"]["value"] = "2ms"
    sim, cl = _cluster(p, seed=seed)
    orig = [[o.id for o in pg.acting] for pg in cl.pools["rbd"].pgs]
    writes: list[tuple[float, int, int]] = []  # (processing time, ps, objno) of every completed client write

    def tracer(op, t):
        if op.kind != int(Op.READ):
            writes.append((sim.env.now, op.pg.ps, op.objno))

    cl.tracer = tracer
    res = ClosedLoop(sim, cl.image("rbd", "img"), qd=qd, rw="randrw", runtime=runtime, seed=2).run()
    assert res.completions_total == res.submitted
    return sim, cl, orig, writes


def _changed(orig: list, writes: list, t0: float, t1: float) -> set[int]:
    """Objects of the PGs OSD held that were written in [t0, t1)."""
    mine = {ps for ps, a in enumerate(orig) if OSD in a}
    return {objno for t, ps, objno in writes if t0 <= t < t1 and ps in mine}


def test_down_then_up_recovers_exactly_the_objects_written_meanwhile_from_the_log() -> None:
    _sim, cl, orig, writes = _run([{"at": "1s", "action": "down", "osd": OSD}, {"at": "4s", "action": "up", "osd": OSD}],
                                 runtime=8.0)
    r = cl.stats()["recovery"]
    want = _changed(orig, writes, 1.0, 4.0)
    img = cl.image("rbd", "img")
    n_all = int(sum((img.obj_ps_array == ps).sum() for ps, a in enumerate(orig) if OSD in a))
    assert 0 < len(want) < n_all  # some, not all, of its objects changed: the test can tell the two apart
    assert r["pgs_remapped"] == 0 and r["pgs_backfilled"] == 0 and r["pgs_backfilling"] == 0
    assert r["recovered_objects"] == r["log_recovered_objects"] == len(want)
    assert r["recovered_bytes"] == len(want) * OBJ
    assert [[o.id for o in pg.acting] for pg in cl.pools["rbd"].pgs] == orig
    ep = r["episodes"][0]
    assert ep["action"] == "up" and ep["t"] == 4.0 and ep["t_done"] > 4.0


def test_out_then_in_moves_back_only_the_changed_objects() -> None:
    ev = [{"at": "1s", "action": "out", "osd": OSD}, {"at": "7s", "action": "in", "osd": OSD}]
    _sim, cl, orig, writes = _run(ev)
    r = cl.stats()["recovery"]
    ep_out, ep_in = r["episodes"]
    img = cl.image("rbd", "img")
    held = int(sum((img.obj_ps_array == ps).sum() for ps, a in enumerate(orig) if OSD in a))
    assert ep_out["objects"] == held and ep_out["bytes"] == held * OBJ  # backfill away: everything
    want = _changed(orig, writes, 1.0, 7.0)
    assert 0 < len(want) < held
    assert ep_in["objects"] == ep_in["log_objects"] == len(want)  # back: the log covers it
    assert ep_in["bytes"] == len(want) * OBJ
    assert r["pgs_backfilling"] == 0
    # every PG is back on its original OSDs, each object complete on each of them
    assert [[o.id for o in pg.acting] for pg in cl.pools["rbd"].pgs] == orig
    assert (img.bases() >= 0).all()


def test_a_log_too_short_for_the_absence_turns_recovery_into_backfill() -> None:
    ev = [{"at": "1s", "action": "out", "osd": OSD}, {"at": "7s", "action": "in", "osd": OSD}]
    _sim, cl, orig, writes = _run(ev, recovery={"min_pg_log_entries": 1})
    r = cl.stats()["recovery"]
    ep_in = r["episodes"][1]
    want = _changed(orig, writes, 1.0, 7.0)
    # backfill compares object versions: the same changed objects, but no log recovery and the PGs
    # switch back only when each backfill ends
    assert ep_in["objects"] == len(want) and ep_in["log_objects"] == 0
    # remapped away, and back, each by backfill (a PG not written meanwhile has nothing to copy back)
    assert r["pgs_backfilled"] + r["pgs_nothing_to_copy"] == r["pgs_remapped"] and r["pgs_recovered"] == 0
    assert [[o.id for o in pg.acting] for pg in cl.pools["rbd"].pgs] == orig


def test_an_osd_that_came_up_while_out_lost_its_copies_and_gets_everything() -> None:
    ev = [{"at": "1s", "action": "out", "osd": OSD}, {"at": "4s", "action": "up", "osd": OSD},
          {"at": "6s", "action": "in", "osd": OSD}]
    _sim, cl, orig, _writes = _run(ev, runtime=10.0)
    r = cl.stats()["recovery"]
    eps = r["episodes"]
    assert [e["action"] for e in eps] == ["out", "in"]  # coming up while out moves nothing
    img = cl.image("rbd", "img")
    held = int(sum((img.obj_ps_array == ps).sum() for ps, a in enumerate(orig) if OSD in a))
    assert eps[1]["objects"] == held and eps[1]["log_objects"] == 0
    assert [[o.id for o in pg.acting] for pg in cl.pools["rbd"].pgs] == orig


def test_down_out_interval_marks_a_down_osd_out() -> None:
    ev = [{"at": "1s", "action": "down", "osd": OSD}]
    _sim, cl, _orig, _writes = _run(ev, recovery={"down_out_interval": "2s"}, runtime=6.0)
    r = cl.stats()["recovery"]
    assert [(h["t"], h["action"]) for h in r["history"]] == [(1.0, "down"), (3.0, "out (auto)")]
    assert r["episodes"][0]["t"] == 3.0 and r["pgs_backfilling"] == 0
    assert all(OSD not in [o.id for o in pg.acting] for pg in cl.pools["rbd"].pgs)
    # the default (600 s) leaves it down and in over a short run
    _sim, cl, _orig, _writes = _run(ev, runtime=3.0)
    r = cl.stats()["recovery"]
    assert [h["action"] for h in r["history"]] == ["down"] and r["recovered_objects"] == 0
    assert np.isnan(r["recovery_s"])


def test_recovery_plot_marks_every_event(tmp_path) -> None:
    import json

    from simulator.ceph.recovery_plot import _main

    assert _main([str(tmp_path)]) == 2  # no runs: a message, exit 2
    rec = {"timeline": [[0.0, 10, 1.0, 2.0], [1.0, 12, 1.5, 9.0], [2.0, 11, 1.1, 2.5]],
           "history": [{"t": 0.5, "action": "down", "osds": [1]}, {"t": 1.2, "action": "in", "osds": [1]}],
           "episodes": [{"t": 1.2, "t_done": 1.8}], "t_first_event": 0.5, "t_recovered": 1.8}
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "p0_r0.json").write_text(json.dumps({"sim": {"labels": {"pool": "x"}, "cluster": {"recovery": rec}}}))
    assert _main([str(tmp_path)]) == 0
    png = tmp_path / "recovery_timeline.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_client_ops_on_objects_still_missing_wait_for_their_recovery() -> None:
    """During log recovery a write to an object the returning OSD misses waits until that object is
    pushed (kicked ahead of its turn), then completes; ops on other objects do not wait."""
    ev = [{"at": "1s", "action": "down", "osd": OSD}, {"at": "4s", "action": "up", "osd": OSD}]
    rec = {"recovery_sleep": "0.2s", "max_backfills": 1}
    p = _params(ev, hosts=6, per_host=1, recovery=rec)
    p["images"][0].update(prefilled=True, size="2GiB")
    p["hosts"][0]["drives"][0]["device"]["params"]["service"]["value"] = "2ms"
    sim, cl = _cluster(p)
    r = cl.recovery
    held: list[tuple[object, tuple[int, int]]] = []
    recovered: dict[tuple[int, int], float] = {}
    hold, acked = r.hold, r._acked

    def spy_hold(op, t):
        ok = hold(op, t)
        if ok:
            held.append((op, (id(op.image), op.objno)))
        return ok

    def spy_acked(ev):
        wop = ev._value
        acked(ev)
        if wop.item[0] == 0:
            recovered.setdefault((id(wop.image), wop.objno), sim.env.now)

    r.hold, r._acked = spy_hold, spy_acked
    ends: dict[object, float] = {}
    cl.tracer = lambda op, t: ends.__setitem__(op, t)
    res = ClosedLoop(sim, cl.image("rbd", "img"), qd=4, rw="randrw", runtime=10.0, seed=2).run()
    assert res.completions_total == res.submitted
    sim.run(until=sim.env.now + 60.0)  # recovery goes on after the clients stop, and ends
    s = cl.stats()["recovery"]
    assert s["pgs_backfilling"] == 0
    assert len(held) == s["ops_waited_for_recovery"] > 5 and 0 < s["objects_kicked"] <= len(held)
    for op, key in held:
        assert ends[op] >= recovered[key]  # answered only after its object was recovered
    assert all(op.kind != int(Op.READ) or op.pg.acting[op.pos].id == OSD for op, _ in held)
