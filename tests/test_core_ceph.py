"""The compiled Ceph core (simulator.core.ceph_*) against the Python model, the reference.

Differential tests: two clusters built from the same config and seed, one driven by the Python
methods, one by the compiled kernels on the same inputs; the results must be identical (the
compiled core consumes the same random streams in the same order) or, where the streams cannot be
the same, statistically equivalent. Each test was checked to fail against a deliberately wrong
kernel (see the mutation notes in the docstrings).
"""

from __future__ import annotations

import numpy as np
import pytest

import simulator.ceph  # noqa: F401
from simulator.ceph.cluster import Cluster
from simulator.core import ceph_arith as A
from simulator.core import ceph_layout as L
from simulator.core import ceph_loop as K
from simulator.core.ceph_bench import py_closed
from simulator.core.ceph_build import build_state, run_kernel, unsupported, write_back
from simulator.devices.registry import resolve_params
from simulator.engine import Simulation

US = 1e-6


def _params(cpu: dict | None = None, cv: float = 0.0, hosts: int = 3, drives: int = 2, pg_num: int = 16,
            extra: dict | None = None, dev: dict | None = None) -> dict:
    dev = {"kind": "queue", "params": {"capacity": "64GiB", "servers": 1,
                                       "service": {"dist": "exponential", "mean": 300 * US}, **(dev or {})}}
    p = {
        "hosts": [{"name": "h", "count": hosts, "cpu": {"cores": 4, **(cpu or {})}, "drives": [{"count": drives, "device": dev}]}],
        "pools": [{"name": "p", "size": 3, "min_size": 2, "pg_num": pg_num}],
        "images": [{"pool": "p", "name": "img", "size": "1GiB"}],
        "osd": {"cost_cv": cv},
    }
    if extra:
        p.update(extra)
    return p


def _cluster(params: dict, seed: int = 1) -> tuple[Simulation, Cluster]:
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": params})
    sim = Simulation(seed)
    return sim, Cluster(cfg, "cluster", sim.root)


_CPU_VARIANTS = {
    "plain": {},
    "wakeup": {"wakeup_cost": 15 * US},
    "stalls": {"stall_share": 0.2, "stall_mean": 300 * US},
    "background": {"background_share": 0.3},
    "foreign": {"foreign_cores": 1.5, "foreign_slice": 200 * US},
    "all": {"wakeup_cost": 10 * US, "stall_share": 0.1, "stall_mean": 200 * US, "background_share": 0.2,
            "foreign_cores": 0.5, "foreign_slice": 100 * US},
}


# ------------------------------------------------------------------------------------------ arithmetic
def test_arith_python_and_compiled_agree():
    """Each shared function gives the same result in Python and compiled (one source, two forms)."""
    rng = np.random.default_rng(3)
    for _ in range(500):
        a = int(rng.choice([4096, 65536]))
        cap = int(rng.integers(1 << 20, 1 << 30))
        bfs = int(rng.integers(-1, cap)) if rng.random() < 0.7 else -1
        bfe = bfs + int(rng.integers(1, 1 << 22)) if bfs >= 0 else -1
        cur = int(rng.integers(8192, cap))
        n = A.align_up(int(rng.integers(1, 1 << 22)), a)
        assert A.alloc_offset(cur, n, a, cap, 8192, bfs, bfe) == A.alloc_offset_nb(cur, n, a, cap, 8192, bfs, bfe)
        k, ln = int(rng.integers(0, 3)), int(rng.integers(0, 1 << 17))
        assert A.txc_cost(k, ln, 32768, 670000) == A.txc_cost_nb(k, ln, 32768, 670000)
        m, cu, c = (int(x) for x in rng.integers(0, 1 << 20, 3))
        assert A.throttle_should_wait(m, cu, c) == A.throttle_should_wait_nb(m, cu, c)
        pos, nb = int(rng.integers(0, 1 << 30)), int(rng.integers(1, 1 << 16))
        for tail in (True, False):
            assert A.wal_extent(pos, nb, 4096, 1 << 28, tail) == A.wal_extent_nb(pos, nb, 4096, 1 << 28, tail)
        u1, u2 = rng.random(2)
        assert A.lognormal_cost(1e-3, -0.1, 0.45, u1, u2) == A.lognormal_cost_nb(1e-3, -0.1, 0.45, u1, u2)


def test_alloc_offset_skips_bluefs_and_wraps():
    """BlueStore's allocation rule: past the BlueFS extent, wrapping at capacity (hand-computed cases)."""
    a = 65536
    assert A.alloc_offset(65536, a, a, 1 << 30, 65536, -1, -1) == 65536
    # overlapping the BlueFS extent [1 MiB, 2 MiB): moved past it, aligned up
    assert A.alloc_offset((1 << 20) - 4096, a, a, 1 << 30, 65536, 1 << 20, (2 << 20) + 1) == (2 << 20) + a
    # past capacity: wraps to data_start
    assert A.alloc_offset((1 << 30) - 4096, a, a, 1 << 30, 65536, -1, -1) == 65536


# ------------------------------------------------------------------------------------------ CPU pools
@pytest.mark.parametrize("variant", sorted(_CPU_VARIANTS))
def test_book_identical(variant):
    """CpuPool.book, every option: the compiled kernel returns the same times, leaves the same
    state and consumes the same uniforms (mutation: dropping the wakeup in the idle branch, or
    drawing the stall length before the stall test, fails this)."""
    p = _params(cpu=_CPU_VARIANTS[variant])
    _, py = _cluster(p)
    _, cc = _cluster(p)
    rng = np.random.default_rng(7)
    n = 3000
    ts = np.cumsum(rng.exponential(40 * US, n))
    ts[::7] -= 500 * US  # bookings for earlier arrivals (messages booked ahead), and ties
    costs = rng.exponential(150 * US, n)
    costs[::11] = 0.0
    cpu = py.hosts[1].cpu
    ref = np.array([cpu.book(float(t), float(c)) for t, c in zip(ts, costs, strict=True)])
    st, meta = build_state(cc)
    out = np.zeros(n)
    run_kernel(K.book_many, st, meta, n, 1, ts, costs, out)
    write_back(st, meta, set_now=False)
    assert np.array_equal(out, ref)
    c2 = cc.hosts[1].cpu
    assert c2._free == sorted(cpu._free)
    assert (c2.jobs, c2.stalls, c2.stalled, c2._busy, c2.foreign_busy, c2._fg_next) == (
        cpu.jobs, cpu.stalls, cpu.stalled, cpu._busy, cpu.foreign_busy, cpu._fg_next)
    # the random stream continues where the Python one does
    assert [c2.rand.random() for _ in range(5)] == [cpu.rand.random() for _ in range(5)]


# ------------------------------------------------------------------------------------------ network, costs, placement
def test_network_arrival_identical():
    """Network.arrival (loopback, store and forward over both links): same times, same link state
    (mutation: booking the rx link before the latency fails this)."""
    p = _params()
    _, py = _cluster(p)
    _, cc = _cluster(p)
    hosts = [*py.hosts, py.client]
    rng = np.random.default_rng(5)
    n = 2000
    src = rng.integers(0, len(hosts), n)
    dst = rng.integers(0, len(hosts), n)
    ts = np.cumsum(rng.exponential(2 * US, n))
    pay = rng.choice([0, 4096, 65536, 4 << 20], n)
    ref = np.array([py.net.arrival(hosts[s], hosts[d], float(t), int(b)) for s, d, t, b in zip(src, dst, ts, pay, strict=True)])
    st, meta = build_state(cc)
    assert [h.name for h in meta["hosts"]] == [h.name for h in hosts]
    out = np.zeros(n)
    run_kernel(K.arrival_many, st, meta, n, src, dst, ts, pay, out)
    write_back(st, meta, set_now=False)
    assert np.array_equal(out, ref)
    for a, b in zip(hosts, [*cc.hosts, cc.client], strict=True):
        assert (a.tx._free, a.tx._busy, a.tx.bytes, a.rx._free, a.rx.bytes) == (b.tx._free, b.tx._busy, b.tx.bytes, b.rx._free, b.rx.bytes)


@pytest.mark.parametrize("cv", [0.0, 0.6])
def test_osd_cost_identical(cv):
    """Osd._cost, constant and log-normal: same values from the same OSD streams."""
    p = _params(cv=cv)
    _, py = _cluster(p)
    _, cc = _cluster(p)
    rng = np.random.default_rng(9)
    n = 2000
    o = rng.integers(0, len(py.osds), n)
    means = rng.choice([0.0, 50 * US, 650 * US], n)
    ref = np.array([py.osds[k]._cost(float(m)) for k, m in zip(o, means, strict=True)])
    st, meta = build_state(cc)
    out = np.zeros(n)
    run_kernel(K.cost_many, st, meta, n, o, means, out)
    write_back(st, meta, set_now=False)
    assert np.array_equal(out, ref)
    if cv:
        assert out.std() > 0
        assert [cc.osds[2].rand.random() for _ in range(3)] == [py.osds[2].rand.random() for _ in range(3)]


def test_pg_of_and_acting_sets_identical():
    """Object -> PG (RbdImage.pg_of) and the PG's acting set and primary, for every object."""
    _, cl = _cluster(_params(pg_num=32))
    st, _meta = build_state(cl)
    img = cl.image("p", "img")
    objnos = np.arange(img.n_objects, dtype=np.int64)
    out = np.zeros(img.n_objects, np.int64)
    run_kernel(K.pg_many, st, _meta, img.n_objects, 0, objnos, out)
    for objno in range(img.n_objects):
        pg = img.pg_of(objno << img.order)
        r = int(out[objno])
        assert st.pgi[r, L.PGI_PS] == pg.ps
        assert list(st.pga[r, : st.pgi[r, L.PGI_NACT]]) == [o.id for o in pg.acting]
        assert st.pgi[r, L.PGI_PPOS] == pg.ppos


def test_unsupported_names_the_reason():
    p = _params(extra={"events": [{"at": "1000s", "action": "down", "osd": 0}]})
    _, cl = _cluster(p)
    assert "recovery" in unsupported(cl)
    _, cl = _cluster(_params())
    assert unsupported(cl) is None


# ------------------------------------------------------------------------------------------ the read loop
def _py_open(sim, img, times, kinds, offs, sizes) -> np.ndarray:
    """The Python reference driver of ceph_build.run_open: each arrival schedules the next, then submits."""
    from simulator.ceph.resources import call_at
    from simulator.devices.base import Request

    env = sim.env
    n = len(times)
    done = np.full(n, np.nan)

    def arrive(ev):
        i = ev._value
        if i + 1 < n:
            call_at(env, float(times[i + 1]), arrive, i + 1)
        req = Request(int(kinds[i]), int(offs[i]), int(sizes[i]))
        img.submit(req).callbacks.append(lambda e, i=i: done.__setitem__(i, env.now))

    call_at(env, float(times[0]), arrive, 0)
    env.run()
    return done


def _reads(img, n, rate, rng, size=4096, span_share=0.0):
    times = np.cumsum(rng.exponential(1.0 / rate, n))
    offs = rng.integers(0, (img.capacity - 2 * size) // 4096, n) * 4096
    sizes = np.full(n, size, np.int64)
    if span_share:
        osz = img.obj_size
        k = rng.random(n) < span_share
        offs[k] = (rng.integers(1, img.n_objects - 3, k.sum()) * osz) - 4096  # straddles an object boundary
        sizes[k] = osz + 8192  # three objects
    return times, np.zeros(n, np.int64), offs, sizes


_READ_VARIANTS = {
    "plain": ({}, 0.0, 0.0, {}),
    "jitter": ({}, 0.7, 0.0, {}),
    "stalls": ({"stall_share": 0.15, "stall_mean": 200 * US}, 0.5, 0.0, {}),
    "wakeup-foreign": ({"wakeup_cost": 10 * US, "foreign_cores": 0.7, "foreign_slice": 150 * US}, 0.3, 0.0, {}),
    "spanning": ({}, 0.4, 0.3, {}),
    # several workers per shard: the PG lock holds ops back while other PGs' ops go first
    "pglock": ({}, 0.5, 0.2, {"op_num_shards": 1, "op_num_threads_per_shard": 3}),
}


@pytest.mark.parametrize("variant", sorted(_READ_VARIANTS))
def test_open_loop_new_object_reads_identical(variant):
    """Open-loop reads of objects never written (zeros, no device IO): every request completes at
    the same time in the compiled loop as in the Python model, at a load that queues ops in the
    shards behind busy PGs (few PGs, 2 cores) and leaves lazy workers to wake; the final state written
    back equals the Python one (mutation: releasing a lazy worker's PG at its start, or skipping the
    busy-PG scan in _next, fails this)."""
    from simulator.core.ceph_build import run_open

    cpu, cv, span, osd = _READ_VARIANTS[variant]
    p = _params(cpu={"cores": 2, **cpu}, cv=cv, pg_num=4, extra={"images": [{"pool": "p", "name": "img", "size": "1GiB", "order": 16, "prefilled": False}]})
    p["osd"].update(osd)
    sim_py, py = _cluster(p)
    _sim_cc, cc = _cluster(p)
    rng = np.random.default_rng(11)
    img = py.image("p", "img")
    req = _reads(img, 4000, 9000.0, rng, span_share=span)
    ref = _py_open(sim_py, img, *req)
    out, info = run_open(cc, cc.image("p", "img"), *req)
    assert not np.isnan(ref).any()
    np.testing.assert_array_equal(out, ref)
    lat = ref - req[0]
    assert lat.max() > 5 * lat.min()  # ops did queue
    assert info["events"] >= 3 * len(ref)
    for a, b in zip(py.osds, cc.osds, strict=True):
        assert (a.ops, a.subops, a.replies) == (b.ops, b.subops, b.replies)
        assert [(sh.free, sh.lazy and [(t, pg.pgid) for t, pg in sh.lazy]) for sh in a.shards] == \
               [(sh.free, sh.lazy and [(t, pg.pgid) for t, pg in sh.lazy]) for sh in b.shards]
        assert {pg.pgid for pg in a.busy_pgs} == {pg.pgid for pg in b.busy_pgs}
        assert a.rand.random() == b.rand.random()
    for a, b in zip([*py.hosts, py.client], [*cc.hosts, cc.client], strict=True):
        assert (a.cpu.jobs, a.cpu.stalls, sorted(a.cpu._free), a.cpu._busy) == (b.cpu.jobs, b.cpu.stalls, b.cpu._free, b.cpu._busy)
        assert (a.tx._free, a.rx._free, a.tx.bytes) == (b.tx._free, b.rx._free, b.tx.bytes)
        assert a.cpu.rand.random() == b.cpu.rand.random()
    if "stall_share" in cpu:
        assert sum(h.cpu.stalls for h in cc.hosts) > 100


# ------------------------------------------------------------------------------------------ the write path


def _writes(img, n, rng, size=4096):
    offs = rng.integers(0, (img.capacity - size) // 4096, n) * 4096
    return np.ones(n, np.int64), offs, np.full(n, size, np.int64)


_WRITE_VARIANTS = {
    "plain": ({}, 0.0, {}, 4096),
    "jitter-stalls": ({"stall_share": 0.1, "stall_mean": 200 * US}, 0.5, {}, 4096),
    "kv-cpu": ({"wakeup_cost": 5 * US}, 0.3, {"kv_commit_cost": 40 * US}, 4096),
    "throttled": ({}, 0.3, {"throttle_bytes": 3 * 680000, "throttle_deferred_bytes": 2 * 680000,
                            "deferred_batch_ops": 8}, 4096),
    "direct": ({}, 0.3, {"kv_commit_cost": 20 * US}, 65536),
    "batches": ({}, 0.0, {"deferred_batch_ops": 4, "max_deferred_txc": 2, "deferred_max_interval": 0.002}, 4096),
    "pglock": ({}, 0.4, {"kv_commit_cost": 10 * US}, 4096),  # 3 workers per shard, 1 shard (see below)
}


@pytest.mark.parametrize("variant", sorted(_WRITE_VARIANTS))
def test_closed_loop_writes_identical(variant):
    """Replicated writes, closed loop QD16, on queue devices: every request's issue and completion
    time is identical in the compiled loop and the Python model (dispatch on arrival, repops, commit
    replies, throttles with waiters and deferred_aggressive, deferred batches merged per sequencer,
    direct writes, kv_sync group commit with and without its CPU), and so are the OSD and BlueStore
    counters (mutation: not releasing throttle_bytes when kv_sync writes the WAL, or not merging
    adjacent deferred extents, fails this)."""
    from simulator.core.ceph_build import run_closed, unsupported_writes

    cpu, cv, bs, size = _WRITE_VARIANTS[variant]
    p = _params(cpu={"cores": 2, **cpu}, cv=cv, pg_num=8, extra={"bluestore": bs, "block_layer": {"enabled": False}})
    if variant == "pglock":
        p["osd"].update({"op_num_shards": 1, "op_num_threads_per_shard": 3})
    sim_py, py = _cluster(p)
    _, cc = _cluster(p)
    assert unsupported_writes(cc) is None
    rng = np.random.default_rng(21)
    req = _writes(py.image("p", "img"), 3000, rng, size)
    t_is, ref = py_closed(sim_py, py.image("p", "img"), *req, 16)
    c_is, out, info = run_closed(cc, cc.image("p", "img"), *req, 16)
    assert not np.isnan(ref).any()
    np.testing.assert_array_equal(c_is, t_is)
    np.testing.assert_array_equal(out, ref)
    for a, b in zip(py.osds, cc.osds, strict=True):
        assert (a.ops, a.subops, a.replies) == (b.ops, b.subops, b.replies)
        sa, sb = a.bs, b.bs
        assert (sa.kv_batches, sa.kv_txcs, sa.deferred_ops, sa.deferred_ios, sa.throttled, sa.direct_writes) == \
               (sb.kv_batches, sb.kv_txcs, sb.deferred_ops, sb.deferred_ios, sb.throttled, sb.direct_writes)
        assert (sa.cursor, sa.allocated) == (sb.cursor, sb.allocated)
    bst = info["bluestore"]
    order = py.image("p", "img").order
    n_objops = int((((req[1] + req[2] - 1) >> order) - (req[1] >> order) + 1).sum())
    assert bst["kv_txcs"] == 3 * n_objops  # every object op committed on 3 OSDs
    if variant == "throttled":
        assert bst["throttled"] > 100
    if variant == "direct":  # parts above prefer_deferred_size (32 KiB) go to new allocations
        osz = 1 << order
        first = np.minimum(req[2], osz - req[1] % osz)
        parts = np.concatenate([first, (req[2] - first)[req[2] > first]])
        assert bst["direct_writes"] == 3 * int((parts > 32768).sum()) > 0
    else:
        assert bst["deferred_ops"] > 0


def _batch_rates(t_done: np.ndarray, skip: int, k: int = 12) -> np.ndarray:
    """Completion rate in ``k`` consecutive batches of completions (after ``skip`` warm-up ones)."""
    t = np.sort(t_done)[skip - 1 :]
    edges = np.linspace(0, len(t) - 1, k + 1).astype(int)
    return np.diff(edges) / np.diff(t[edges])


def test_closed_loop_writes_match_the_fio_path_statistically():
    """The compiled closed loop against the Python model driven by fio's own job thread (libaio,
    its own random offsets, so not the same IOs): the same write IOPS and mean latency within their
    confidence intervals (batch means, 3 standard errors)."""
    from fio_drive import ClosedLoop

    from simulator.core.ceph_build import run_closed

    p = _params(cpu={"cores": 2}, cv=0.4, pg_num=16, extra={"block_layer": {"enabled": False}})
    n, ramp, qd = 6000, 600, 16
    sim_py, py = _cluster(p, seed=3)
    res = ClosedLoop(sim_py, py.image("p", "img"), qd=qd, rw="randwrite", n_ios=n, ramp_ios=ramp, seed=3).run()
    _, cc = _cluster(p, seed=4)
    img = cc.image("p", "img")
    req = _writes(img, n + ramp, np.random.default_rng(4))
    t_is, done, _ = run_closed(cc, img, *req, qd)
    # IOPS: batch means of the completion rate after the warm-up
    a = _batch_rates(np.asarray(res.t_submit + res.latency), 1)
    b = _batch_rates(done, ramp)
    se = np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    assert abs(a.mean() - b.mean()) < 3 * se, (a.mean(), b.mean(), se)
    assert se < 0.05 * b.mean()  # the comparison has power: a 15 % difference would fail it
    # mean latency, batch means over completion order
    la = np.array([x.mean() for x in np.array_split(res.latency, 12)])
    lat = (done - t_is)[np.argsort(done)][ramp:]
    lb = np.array([x.mean() for x in np.array_split(lat, 12)])
    se = np.sqrt(la.var(ddof=1) / 12 + lb.var(ddof=1) / 12)
    assert abs(la.mean() - lb.mean()) < 3 * se, (la.mean(), lb.mean(), se)


def test_croit_stand_in_writes_identical():
    """The croit cluster (24 OSDs, both pools, pre-filled images; stand-in queue devices, no block
    layer): 4 KiB random writes at QD64 complete at identical times in the compiled loop and in
    the Python model."""
    from simulator.core.ceph_bench import _croit_writes
    from simulator.core.ceph_build import run_closed

    sim_py, py = _croit_writes()
    _, cc = _croit_writes()
    n = 1500
    rng = np.random.default_rng(2)
    img = py.image("test-mach2", "test")
    req = _writes(img, n, rng)
    _, ref = py_closed(sim_py, img, *req, 64)
    _, out, info = run_closed(cc, cc.image("test-mach2", "test"), *req, 64)
    np.testing.assert_array_equal(out, ref)
    assert info["events"] > 5 * n


def test_tx_rows_hold_every_osds_pending_deferred_batch():
    """A small client queue depth spread over many OSDs leaves each of them holding a partial
    deferred batch (up to deferred_batch_ops txcs) long after its op rows are free: the transaction
    pool is sized for those, not only for the ops in flight (1,008 OSDs at QD64 once ran out of rows
    and stopped with status 4). Here the op pool is the smallest that fits QD1 (16 rows), while the
    MACH.2 pool's 12 OSDs can hold 12 x 64 pending txcs; the run completes identical to Python."""
    from simulator.core.ceph_bench import _croit_writes
    from simulator.core.ceph_build import run_closed

    sim_py, py = _croit_writes()
    _, cc = _croit_writes()
    rng = np.random.default_rng(5)
    img = py.image("test-mach2", "test")
    req = _writes(img, 600, rng)
    _, ref = py_closed(sim_py, img, *req, 1)
    _, out, _ = run_closed(cc, cc.image("test-mach2", "test"), *req, 1, n_ops=16)
    np.testing.assert_array_equal(out, ref)
    held = sum(o.bs.deferred_queue_size for o in cc.osds)
    assert held > 2 * 16, f"the OSDs hold {held} pending txcs, not more than 2 x the op rows: the test does not test"


def test_closed_loop_writes_identical_to_the_fio_job_thread():
    """Given the offsets fio's job thread drew (libaio, QD16, randseed), the compiled closed loop
    issues and completes every write at the same instants as the Python model driven by fio's own
    job thread (run_fio): the drivers agree on when a completion issues the next IO."""
    from simulator.core.ceph_build import run_closed
    from simulator.workloads.runner import DeviceTap, run_fio

    class Tap(DeviceTap):
        def __init__(self, dev):
            super().__init__(dev)
            self.subs: list = []
            self.done: list = []

        def submit(self, req):
            self.subs.append((req.offset, self.dev.env.now))
            return super().submit(req)

        def _observe(self, r, now):
            self.done.append(now)

    p = _params(cpu={"cores": 2, "stall_share": 0.1, "stall_mean": 100 * US}, cv=0.4, pg_num=16,
                extra={"block_layer": {"enabled": False}})
    n, qd = 3000, 16
    sim_py, py = _cluster(p, seed=3)
    tap = Tap(py.image("p", "img"))
    run_fio(sim_py, [tap], {"name": "x", "ioengine": "libaio", "sim_slat": 0, "norandommap": 1, "rw": "randwrite",
                            "bs": 4096, "iodepth": qd, "number_ios": n, "randseed": 3})
    offs = np.array([s[0] for s in tap.subs], np.int64)
    _, cc = _cluster(p, seed=3)
    t_is, done, _ = run_closed(cc, cc.image("p", "img"), np.ones(n, np.int64), offs, np.full(n, 4096, np.int64), qd)
    np.testing.assert_array_equal(t_is, np.array([s[1] for s in tap.subs]))
    np.testing.assert_array_equal(np.sort(done), np.array(tap.done))
    assert sum(h.cpu.stalls for h in cc.hosts) > 100


@pytest.mark.parametrize("rw", ["randwrite", "write"])
def test_run_fio_ceph_equals_run_fio(rw):
    """run_fio_ceph (the compiled Ceph core behind fio's job) returns the same fio results as
    run_fio on the Python model: IO count, IOPS, bandwidth, latency mean and percentiles."""
    from simulator.core.ceph_fio import run_fio_ceph
    from simulator.workloads.runner import run_fio

    p = _params(cpu={"cores": 2, "stall_share": 0.05, "stall_mean": 100 * US}, cv=0.4, pg_num=16,
                extra={"block_layer": {"enabled": False}})
    job = {"name": "j", "ioengine": "libaio", "sim_slat": 0, "norandommap": 1, "rw": rw, "bs": 4096,
           "iodepth": 16, "number_ios": 2500, "randseed": 5}
    sim_py, py = _cluster(p, seed=5)
    ref = run_fio(sim_py, [py.image("p", "img")], job)
    sim_cc, cc = _cluster(p, seed=5)
    out = run_fio_ceph(sim_cc, cc.image("p", "img"), job)
    assert len(ref) == len(out) == 1
    assert repr(out[0]) == repr(ref[0])


def test_run_fio_ceph_refuses_what_it_does_not_cover():
    """One clear message for a job or cluster the compiled Ceph core does not cover."""
    from simulator.core.ceph_fio import run_fio_ceph
    from simulator.errors import ConfigError

    job = {"name": "j", "ioengine": "libaio", "sim_slat": 0, "rw": "randwrite", "bs": 4096, "iodepth": 4, "number_ios": 10}
    sim, cl = _cluster(_params(extra={"block_layer": {"enabled": False}}))
    with pytest.raises(ConfigError, match="rw=randrw with ramp_time"):  # a mix of part-sequential offsets with a ramp
        run_fio_ceph(sim, cl.image("p", "img"), {**job, "rw": "randrw", "percentage_random": 50, "ramp_time": "0.1s"})
    sim, cl = _cluster(_params())  # the block layer in front of the drives
    with pytest.raises(ConfigError, match="BlockLayer"):
        run_fio_ceph(sim, cl.image("p", "img"), job)
    with pytest.raises(ConfigError, match="reads of written objects need BlueStore on queue devices"):
        run_fio_ceph(sim, cl.image("p", "img"), {**job, "rw": "randread"})


def test_open_loop_writes_identical():
    """Open-loop 4 KiB writes (Poisson arrivals near the cluster's capacity, so the throttles and
    deferred batches work): every completion at the same time as in the Python model."""
    from simulator.core.ceph_build import run_open

    p = _params(cpu={"cores": 2}, cv=0.5, pg_num=8,
                extra={"block_layer": {"enabled": False}, "bluestore": {"kv_commit_cost": 20 * US}})
    sim_py, py = _cluster(p)
    _, cc = _cluster(p)
    rng = np.random.default_rng(31)
    img = py.image("p", "img")
    n = 3000
    times = np.cumsum(rng.exponential(1 / 1500.0, n))
    kinds, offs, sizes = _writes(img, n, rng)
    ref = _py_open(sim_py, img, times, kinds, offs, sizes)
    out, _info = run_open(cc, cc.image("p", "img"), times, kinds, offs, sizes)
    np.testing.assert_array_equal(out, ref)
    assert (ref - times).max() > 10 * (ref - times).min()  # queues built up


@pytest.mark.parametrize("variant", ["plain", "throttled"])
def test_python_continues_after_compiled_writes(variant):
    """A compiled write run writes its whole state back (BlueStore's pending deferred batches,
    stable batches awaiting cleanup, sequencers, throttles, WAL position, allocations, streams):
    a second run in the Python model then completes every write at the same time as after a first
    run in the Python model (mutations: dropping the pending deferred batches changes completion
    times; dropping the applied / stable batches changes the WAL position)."""
    from simulator.core.ceph_build import run_closed

    cpu, cv, bs, size = _WRITE_VARIANTS[variant]
    p = _params(cpu={"cores": 2, **cpu}, cv=cv, pg_num=8, extra={"bluestore": bs, "block_layer": {"enabled": False}})
    sim_a, a = _cluster(p)
    sim_b, b = _cluster(p)
    rng = np.random.default_rng(41)
    first = _writes(a.image("p", "img"), 1500, rng, size)
    second = _writes(a.image("p", "img"), 1500, rng, size)
    py_closed(sim_a, a.image("p", "img"), *first, 16)
    run_closed(b, b.image("p", "img"), *first, 16)
    assert sim_b.env.now == sim_a.env.now
    held = sum(len(o.bs._dq) + len(o.bs.deferred_stable) + len(o.bs.deferred_done) for o in b.osds)
    assert held > 0  # there was state to hand over
    _, ra = py_closed(sim_a, a.image("p", "img"), *second, 16)
    _, rb = py_closed(sim_b, b.image("p", "img"), *second, 16)
    np.testing.assert_array_equal(rb, ra)
    for x, y in zip(a.osds, b.osds, strict=True):
        assert (x.bs.kv_batches, x.bs.deferred_ops, x.bs.throttled, x.bs.wal_pos) == \
               (y.bs.kv_batches, y.bs.deferred_ops, y.bs.throttled, y.bs.wal_pos)


@pytest.mark.parametrize("order", ["python-compiled", "compiled-compiled"])
def test_compiled_continues_after_a_run(order):
    """The reverse hand-over: a BlueStore holding transactions between runs (pending deferred
    batches, stable batches awaiting cleanup, sequencers' live counts) is read into the arrays,
    so a second, compiled run completes every write at the same time as a second Python run."""
    from simulator.core.ceph_build import run_closed, unsupported_writes

    cpu, cv, bs, size = _WRITE_VARIANTS["throttled"]
    p = _params(cpu={"cores": 2, **cpu}, cv=cv, pg_num=8, extra={"bluestore": bs, "block_layer": {"enabled": False}})
    sim_a, a = _cluster(p)
    sim_b, b = _cluster(p)
    rng = np.random.default_rng(43)
    first = _writes(a.image("p", "img"), 1500, rng, size)
    second = _writes(a.image("p", "img"), 1500, rng, size)
    py_closed(sim_a, a.image("p", "img"), *first, 16)
    if order == "python-compiled":
        py_closed(sim_b, b.image("p", "img"), *first, 16)
    else:
        run_closed(b, b.image("p", "img"), *first, 16)
    assert sum(len(o.bs._dq) + len(o.bs.deferred_stable) for o in b.osds) > 0
    assert unsupported_writes(b) is None
    _, ra = py_closed(sim_a, a.image("p", "img"), *second, 16)
    _, rb, _ = run_closed(b, b.image("p", "img"), *second, 16)
    np.testing.assert_array_equal(rb, ra)
    for x, y in zip(a.osds, b.osds, strict=True):
        assert (x.bs.kv_batches, x.bs.deferred_ops, x.bs.throttled, x.bs.wal_pos, len(x.bs._dq)) == \
               (y.bs.kv_batches, y.bs.deferred_ops, y.bs.throttled, y.bs.wal_pos, len(y.bs._dq))


@pytest.mark.parametrize("case", ["degraded", "trims"])
def test_closed_loop_degraded_and_trims_identical(case):
    """Writes with one OSD down (PGs run degraded: fewer repops, moved primaries) and a mix of
    writes and trims (a trim's txc has no data and costs one IO): identical completion times."""
    from simulator.core.ceph_build import run_closed

    p = _params(cpu={"cores": 2}, cv=0.3, pg_num=8, extra={"block_layer": {"enabled": False},
                                                             "bluestore": {"kv_commit_cost": 15 * US}})
    sim_py, py = _cluster(p)
    _, cc = _cluster(p)
    if case == "degraded":
        py.mark_down(1)
        cc.mark_down(1)
    rng = np.random.default_rng(51)
    kinds, offs, sizes = _writes(py.image("p", "img"), 2500, rng)
    if case == "trims":
        kinds = np.where(rng.random(len(kinds)) < 0.3, 2, 1).astype(np.int64)
    _, ref = py_closed(sim_py, py.image("p", "img"), kinds, offs, sizes, 16)
    _, out, _ = run_closed(cc, cc.image("p", "img"), kinds, offs, sizes, 16)
    np.testing.assert_array_equal(out, ref)
    if case == "degraded":
        assert cc.osds[1].subops == 0 and cc.osds[1].ops == [0, 0, 0, 0]
        assert sum(o.subops for o in cc.osds) < 2 * len(ref)
    else:
        assert sum(o.ops[2] for o in cc.osds) > 500


def test_a_read_of_an_object_written_in_the_same_run():
    """A read of an object an earlier write of the same run created completes at the Python model's
    instant, with every onode cached and on an image that was not pre-filled (the read misses the
    object's onode: decode CPU; core.ceph_onode), BlueStore's data cache compiled (core.ceph_dcache).
    The loop once stopped at such a read; a mixed run now asks unsupported_reads too."""
    from simulator.core.ceph_build import run_open

    req = (np.array([0.0, 1.0]), np.array([1, 0]), np.array([0, 0]), np.array([4096, 4096]))
    for img in ({}, {"images": [{"pool": "p", "name": "img", "size": "1GiB", "prefilled": False}]}):
        p = _params(extra={"block_layer": {"enabled": False}, "bluestore": {"onode_miss_read": 0}, **img})
        sim_py, py = _cluster(p)
        _, cl = _cluster(p)
        ref = _py_open(sim_py, py.image("p", "img"), *req)
        out, _info = run_open(cl, cl.image("p", "img"), *req)
        np.testing.assert_array_equal(out, ref)


def test_closed_loop_writes_identical_on_devices_with_bandwidth_and_flush_time():
    """Queue devices with a transfer rate (WAL writes and deferred batches take time by size) and a
    FLUSH time, 2 servers, deterministic service: identical completion times."""
    from simulator.core.ceph_build import run_closed

    p = _params(cpu={"cores": 2}, cv=0.3, pg_num=8, extra={"block_layer": {"enabled": False},
                                                             "bluestore": {"deferred_batch_ops": 6}},
                dev={"servers": 2, "service": {"dist": "deterministic", "value": 150 * US}, "bandwidth": "50MB/s",
                     "flush_time": 80 * US})
    sim_py, py = _cluster(p)
    _, cc = _cluster(p)
    rng = np.random.default_rng(61)
    req = _writes(py.image("p", "img"), 2500, rng, 8192)
    _, ref = py_closed(sim_py, py.image("p", "img"), *req, 16)
    _, out, info = run_closed(cc, cc.image("p", "img"), *req, 16)
    np.testing.assert_array_equal(out, ref)
    assert info["bluestore"]["deferred_ios"] < info["bluestore"]["deferred_ops"]  # adjacent extents merged


_CACHELESS = {"cache": {"buffered_read": False, "buffered_write": False}}


@pytest.mark.parametrize("variant", ["plain", "stalls-pglock"])
def test_closed_loop_reads_of_written_objects_identical(variant):
    """Reads of pre-filled objects on BlueStore without a data cache (every read a device read of
    its aligned range, the worker blocked through it): identical completion times, closed loop QD16,
    4 KiB and spanning 96 KiB reads."""
    from simulator.core.ceph_build import run_closed, unsupported_reads

    cpu = {"cores": 2, **({"stall_share": 0.1, "stall_mean": 150 * US} if variant != "plain" else {})}
    p = _params(cpu=cpu, cv=0.4, pg_num=8, extra={"block_layer": {"enabled": False}, "bluestore": _CACHELESS,
                                                  "images": [{"pool": "p", "name": "img", "size": "1GiB", "order": 16}]})
    if variant != "plain":
        p["osd"].update({"op_num_shards": 1, "op_num_threads_per_shard": 3})
    sim_py, py = _cluster(p)
    _, cc = _cluster(p)
    assert unsupported_reads(cc) is None
    rng = np.random.default_rng(71)
    img = py.image("p", "img")
    n = 2500
    sizes = np.where(rng.random(n) < 0.2, 98304, 4096).astype(np.int64)
    offs = rng.integers(0, (img.capacity - 98304) // 4096, n) * 4096
    kinds = np.zeros(n, np.int64)
    _, ref = py_closed(sim_py, img, kinds, offs, sizes, 16)
    _, out, _info = run_closed(cc, cc.image("p", "img"), kinds, offs, sizes, 16)
    np.testing.assert_array_equal(out, ref)
    assert sum(o.ops[0] for o in cc.osds) > n  # spanning reads: several object ops
    for a, b in zip(py.osds, cc.osds, strict=True):
        assert a.ops == b.ops


def test_run_fio_ceph_randread_equals_run_fio():
    """A fio randread job on pre-filled objects, BlueStore without a data cache: run_fio_ceph's
    results equal run_fio's."""
    from simulator.core.ceph_fio import run_fio_ceph
    from simulator.workloads.runner import run_fio

    p = _params(cpu={"cores": 2}, cv=0.4, pg_num=16, extra={"block_layer": {"enabled": False}, "bluestore": _CACHELESS})
    job = {"name": "j", "ioengine": "libaio", "sim_slat": 0, "norandommap": 1, "rw": "randread", "bs": 4096,
           "iodepth": 32, "number_ios": 2500, "randseed": 7}
    sim_py, py = _cluster(p, seed=7)
    ref = run_fio(sim_py, [py.image("p", "img")], job)
    sim_cc, cc = _cluster(p, seed=7)
    out = run_fio_ceph(sim_cc, cc.image("p", "img"), job)
    assert repr(out[0]) == repr(ref[0])
