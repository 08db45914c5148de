"""RAID volumes (device kind ``raid``): address mapping, write planning, IO counts, mirrors, degraded
mode, nesting, the controller cache and read-ahead, the HBA path, and queueing oracles.

Oracles: exact IO counts (RAID 5 small write = 2 reads + 2 writes, RAID 6 = 3 + 3, full stripe =
no reads), the layout's permutation property, exactly-once completion, latency >= service, and for
throughput the closed product-form network (M identical exponential FCFS queues, N customers routed
uniformly, no think time: each queue's utilisation is N / (N + M - 1), mean value analysis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_workload_support import RecordingQueue, new_sim, queue_devices, run_jobs

from simulator.devices.base import Op, Request
from simulator.devices.raid import RaidConfig, RaidVolume
from simulator.devices.raid.layout import (
    Layout,
    parity_members,
    plan_read,
    plan_stripe_write,
    plan_write,
    split_chunks,
    stripe_data_member,
)
from simulator.devices.registry import load_profile, resolve_params
from simulator.devices.simple import QueueDeviceConfig
from simulator.errors import ConfigError

AIO = {"ioengine": "libaio", "sim_slat": 0}
KIB = 1024
CH = 64 * KIB


def qspec(service=1e-3, dist="deterministic", capacity="1GiB"):
    svc = {"dist": "deterministic", "value": service} if dist == "deterministic" else {"dist": dist, "mean": service}
    return {"kind": "queue", "params": {"capacity": capacity, "service": svc}}


def raid_cfg(level, n, member=None, **kw):
    return RaidConfig.model_validate(
        {"level": level, "chunk": CH, "members": {"count": n, "device": member or qspec()}, "controller_overhead": 0, **kw}
    )


def recording_raid(sim, level, n, service=1e-3, dist="deterministic", name="vol", **kw):
    cfg = raid_cfg(level, n, qspec(service, dist), **kw)
    qcfg = QueueDeviceConfig.model_validate(cfg.members.device["params"])
    return RaidVolume(cfg, name, sim.root, make_member=lambda i, nm, par: RecordingQueue(qcfg, nm, par))


def member_log(vol):
    """[(member index, op)] of every member IO in submission order (through a path port too)."""
    out = []
    for i, m in enumerate(vol.members):
        dev = getattr(m, "member", m)
        out += [(t, i, r.op, r) for t, r in dev.log]
    return [(i, op, r) for _, i, op, r in sorted(out, key=lambda x: x[0])]


def submit_one(sim, vol, op, offset, size):
    ev = vol.submit(Request(op, offset, size))
    sim.run()
    assert ev.processed
    return ev.value


# ---------------------------------------------------------------- address mapping (pure functions)
@given(n=st.integers(3, 24), level=st.sampled_from(["5", "6"]), stripe=st.integers(0, 10**9))
def test_stripe_is_a_permutation_of_the_members_with_left_symmetric_parity(n, level, stripe):
    if level == "6" and n < 4:
        n = 4
    k = n - (2 if level == "6" else 1)
    p, q = parity_members(n, level, stripe)
    data = [stripe_data_member(n, level, stripe, j) for j in range(k)]
    everyone = data + [p] + ([q] if level == "6" else [])
    assert sorted(everyone) == list(range(n))  # data + parity cover the stripe exactly once
    assert p == n - 1 - stripe % n  # left: parity starts on the last member and moves left
    p_next, _ = parity_members(n, level, stripe + 1)
    assert p_next == (p - 1) % n
    # symmetric: the first data chunk follows the parity (Q first for RAID 6), wrapping around
    assert data[0] == (p + (2 if level == "6" else 1)) % n
    if level == "6":
        assert q == (p + 1) % n


@pytest.mark.parametrize("level", ["5", "6"])
def test_parity_visits_every_member_once_per_n_stripes_vectorised(level):
    n = 7
    s = np.arange(10 * n)
    p, q = parity_members(n, level, s)
    for block in p.reshape(-1, n):
        assert sorted(block.tolist()) == list(range(n))
    if level == "6":
        assert np.all(q == (p + 1) % n)


@given(
    level=st.sampled_from(["0", "10", "5", "6"]),
    n=st.integers(4, 12),
    rows=st.integers(1, 6),
)
def test_every_logical_chunk_maps_to_a_distinct_member_position(level, n, rows):
    if level == "10":
        n -= n % 2
    lay = Layout(level, n, CH, rows * CH)
    seen = set()
    for c in range(lay.capacity // CH):
        ops = plan_read(lay, c * CH, CH)
        assert len(ops) == 1 and ops[0].size == CH
        key = (ops[0].member, ops[0].offset)
        assert key not in seen
        seen.add(key)
        if level in ("5", "6"):
            row = c // lay.data_chunks
            assert ops[0].offset == row * CH
            assert ops[0].member not in parity_members(n, level, row)
    # data + parity (+ mirror copies) fill every member position exactly once
    extra = {"5": 1, "6": 2}.get(level, 0) * rows
    copies = 2 if level == "10" else 1
    assert len(seen) * copies + extra == n * rows


@given(off=st.integers(0, 2**30), size=st.integers(1, 3 * 2**20))
def test_split_chunks_covers_the_range_exactly(off, size):
    lay = Layout("5", 6, CH, 2**40)
    pcs = split_chunks(lay, off, size)
    assert sum(p[3] for p in pcs) == size
    pos = off
    for row, j, o, ln in pcs:
        assert row * lay.row_bytes + j * CH + o == pos and 0 < ln <= CH - o
        pos += ln


# ---------------------------------------------------------------- write planning: IO counts
def counts(ops):
    r = sum(1 for o in ops if o.op == Op.READ)
    w = sum(1 for o in ops if o.op == Op.WRITE)
    return r, w


@pytest.mark.parametrize("level, expect", [("5", (2, 2)), ("6", (3, 3))])
@pytest.mark.parametrize("n", [7, 8, 12])  # RAID 6 below 7 members reconstructs for less
def test_small_write_is_read_modify_write(level, n, expect):
    lay = Layout(level, n, CH, 2**30)
    ops, methods = plan_write(lay, 3 * lay.row_bytes + CH + 8 * KIB, 4 * KIB)
    assert methods == ["rmw"]
    assert counts(ops) == expect
    assert len({o.member for o in ops if o.op == Op.WRITE}) == expect[1]  # data + P (+Q) on distinct members
    assert all(o.phase == 0 for o in ops if o.op == Op.READ) and all(o.phase == 1 for o in ops if o.op == Op.WRITE)


@pytest.mark.parametrize("level", ["5", "6"])
def test_full_stripe_write_needs_no_reads(level):
    n = 8
    lay = Layout(level, n, CH, 2**30)
    ops, methods = plan_write(lay, 5 * lay.row_bytes, 2 * lay.row_bytes)
    assert methods == ["full", "full"]
    r, w = counts(ops)
    assert r == 0
    assert w == n  # two stripes per member merge into one contiguous member write
    assert all(o.size == 2 * CH for o in ops)


def test_reconstruct_write_when_it_reads_less():
    lay = Layout("5", 8, CH, 2**30)  # k = 7 data chunks
    # 6 of 7 data chunks: RMW would read 6 + P = 7, reconstruct reads the one chunk left
    ops, methods = plan_write(lay, 2 * lay.row_bytes, 6 * CH)
    assert methods == ["rcw"]
    assert counts(ops) == (1, 7)
    # 2 chunks: RMW reads 2 + P = 3, reconstruct would read 5
    ops, methods = plan_write(lay, 2 * lay.row_bytes, 2 * CH)
    assert methods == ["rmw"] and counts(ops) == (3, 3)
    # policy overrides
    _, m = plan_write(lay, 2 * lay.row_bytes, 6 * CH, policy="rmw")
    assert m == ["rmw"]
    # 4-disk RAID 5: one chunk is a tie (2 reads either way): md's default takes reconstruct
    lay4 = Layout("5", 4, CH, 2**30)
    ops, m = plan_write(lay4, 0, 4 * KIB)
    assert m == ["rcw"] and counts(ops) == (2, 2)


@given(
    level=st.sampled_from(["5", "6"]),
    n=st.integers(4, 10),
    a=st.integers(0, 10 * CH // 4096),
    b=st.integers(1, 10 * CH // 4096),
)
def test_stripe_write_plan_invariants(level, n, a, b):
    lay = Layout(level, n, CH, 2**30)
    k = lay.data_chunks
    off = 7 * lay.row_bytes + (a * 4096) % lay.row_bytes
    size = min(b * 4096, 8 * lay.row_bytes - off)
    pcs = [(j, o, ln) for _, j, o, ln in split_chunks(lay, off, size)]
    ops, method = plan_stripe_write(lay, 7, pcs)
    touched = {j for j, _, _ in pcs}
    p = lay.parity
    r, w = counts(ops)
    assert w == len(touched) + p
    assert r <= len(touched) + p  # never worse than read-modify-write
    lo = min(o for _, o, _ in pcs)
    hi = max(o + ln for _, o, ln in pcs)
    covered = {j for j, o, ln in pcs if o <= lo and o + ln >= hi}
    assert (r == 0) == (len(covered) == k)
    assert method == ("full" if r == 0 else method)
    assert all(o.offset >= 7 * CH and o.end <= 8 * CH for o in ops)  # stays inside the stripe's rows


# ---------------------------------------------------------------- through the device
@pytest.mark.parametrize("level, reads, writes", [("5", 2, 2), ("6", 3, 3), ("10", 0, 2), ("1", 0, 3), ("0", 0, 1)])
def test_device_small_write_member_ios(level, reads, writes):
    sim = new_sim(1)
    n = 3 if level == "1" else 8
    vol = recording_raid(sim, level, n)
    req = submit_one(sim, vol, Op.WRITE, 3 * CH + 4096, 4096)
    log = member_log(vol)
    assert sum(1 for _, op, _ in log if op == Op.READ) == reads
    assert sum(1 for _, op, _ in log if op == Op.WRITE) == writes
    # the writes of a read-modify-write start after its reads completed: latency = 2 services
    assert req.service == pytest.approx((2 if reads else 1) * 1e-3)
    assert sim.now == pytest.approx(req.service)


def test_device_full_stripe_write_issues_no_reads():
    sim = new_sim(1)
    vol = recording_raid(sim, "6", 8)
    submit_one(sim, vol, Op.WRITE, 0, vol.layout.row_bytes)
    log = member_log(vol)
    assert [op for _, op, _ in log] == [Op.WRITE] * 8
    assert vol.methods == {"full": 1}


def test_mirror_reads_go_to_the_less_busy_copy():
    sim = new_sim(2)
    vol = recording_raid(sim, "1", 2, service=1e-3, dist="exponential")
    _, (r,) = run_jobs(AIO, [{"rw": "randread", "iodepth": 8, "number_ios": 20_000, "filename": "v"}], {"v": vol}, sim)
    per = [len(m.log) for m in vol.members]
    assert sum(per) == 20_000
    assert abs(per[0] - per[1]) / sum(per) < 0.02
    # both copies busy: 2 servers -> twice a single drive's rate, less the idle of an unbalanced moment
    x = r.n / r.runtime
    assert x == pytest.approx(2 / 1e-3, rel=0.05)


def test_mirror_reads_favour_a_faster_copy():
    sim = new_sim(2)
    cfg = raid_cfg("1", 2)
    fast = QueueDeviceConfig.model_validate({"capacity": "1GiB", "service": {"dist": "deterministic", "value": 1e-3}})
    slow = QueueDeviceConfig.model_validate({"capacity": "1GiB", "service": {"dist": "deterministic", "value": 3e-3}})
    vol = RaidVolume(cfg, "v", sim.root, make_member=lambda i, nm, par: RecordingQueue(fast if i == 0 else slow, nm, par))
    run_jobs(AIO, [{"rw": "randread", "iodepth": 4, "number_ios": 8000, "filename": "v"}], {"v": vol}, sim)
    per = [len(m.log) for m in vol.members]
    # least outstanding: the fast copy serves about 3x as many (3:1 service rates)
    assert per[0] / per[1] == pytest.approx(3.0, rel=0.15)


@pytest.mark.parametrize("level, failed", [("5", 3), ("6", 3)])
def test_degraded_read_is_rebuilt_from_the_survivors(level, failed):
    sim = new_sim(1)
    n = 8
    vol = recording_raid(sim, level, n, failed=[failed])
    lay = vol.layout
    # find a chunk of stripe 0 on the failed member
    j = next(j for j in range(lay.data_chunks) if stripe_data_member(n, level, 0, j) == failed)
    submit_one(sim, vol, Op.READ, j * CH + 4096, 8192)
    touched = sorted(i for i, _, _ in member_log(vol))
    _p, q = parity_members(n, level, 0)
    expect = [m for m in range(n) if m != failed and (level == "5" or m != q)]
    assert touched == expect  # every surviving data chunk and P (RAID 6: Q only when P is gone)
    assert all(op == Op.READ for _, op, _ in member_log(vol))


def test_degraded_volume_never_touches_the_failed_member_and_completes_everything():
    sim = new_sim(4)
    vol = recording_raid(sim, "5", 6, service=2e-4, dist="exponential", failed=[2])
    _, (r,) = run_jobs(
        AIO, [{"rw": "randrw", "bs": "4k", "iodepth": 16, "number_ios": 6000, "filename": "v"}], {"v": vol}, sim
    )
    assert r.n == 6000
    assert len(vol.members[2].log) == 0
    assert sum(vol.completed) == 6000
    # writes whose chunk is on the failed member need a rebuild-style plan, never RMW of that chunk
    assert set(vol.methods) <= {"rmw", "rcw", "full", "rebuild"}


def test_degraded_write_skips_the_failed_member():
    lay = Layout("5", 6, CH, 2**30)
    for s in range(6):
        p, _ = parity_members(6, "5", s)
        for j in range(5):
            dm = stripe_data_member(6, "5", s, j)
            failed = frozenset({dm})
            ops, m = plan_write(lay, s * lay.row_bytes + j * CH, 4096, failed)
            assert all(o.member != dm for o in ops)
            assert m == ["rcw"]  # the old data is gone: parity from the other chunks
            assert counts(ops) == (4, 1)  # the 4 other data chunks read, only P written
        ops, m = plan_write(lay, s * lay.row_bytes, 4096, frozenset({int(p)}))
        assert counts(ops) == (0, 1)  # parity gone: just the data


def test_every_io_completes_exactly_once_through_nested_devices():
    """RAID 0 over two RAID 5 volumes (behind an HBA path) over queue devices."""
    sim = new_sim(9)
    inner = {"kind": "raid", "params": {"level": 5, "chunk": "64KiB", "members": {"count": 4, "device": qspec(2e-4, "exponential")}}}
    cfg = RaidConfig.model_validate(
        {"level": 0, "chunk": "256KiB", "members": {"count": 2, "device": inner}, "path": {"channels": 2, "lanes": 4}}
    )
    vol = RaidVolume(cfg, "top", sim.root)
    state: dict[int, int] = {}  # id(request) -> 1 while inside the volume (the runner reuses requests)
    counts = [0, 0]
    orig = vol.submit

    def done(e):
        assert state[id(e.value)] == 1  # completes once per submission
        state[id(e.value)] = 0
        counts[1] += 1

    def counting_submit(req):
        assert state.get(id(req), 0) == 0
        state[id(req)] = 1
        counts[0] += 1
        ev = orig(req)
        ev.callbacks.append(done)
        return ev

    vol.submit = counting_submit
    _, (r,) = run_jobs(
        AIO, [{"rw": "randrw", "bs": "16k", "iodepth": 32, "number_ios": 4000, "filename": "v"}], {"v": vol}, sim
    )
    assert r.n == 4000
    assert counts == [4000, 4000] and not any(state.values())
    inner_vols = [m.member for m in vol.members]
    assert sum(sum(v.completed) for v in inner_vols) == sum(vol.member_ios)
    # leaf devices: every member IO the inner volumes issued completed
    leaves = [m for v in inner_vols for m in v.members]
    assert sum(sum(d.completed) for d in leaves) == sum(sum(v.member_ios) for v in inner_vols)
    assert all(d._inside == 0 for d in leaves) and vol._inside == 0


def test_latency_covers_the_slowest_member():
    sim = new_sim(5)
    vol = recording_raid(sim, "5", 6, service=5e-4, dist="exponential")
    reqs, done = [], {}
    for i in range(300):
        rq = Request(Op.WRITE if i % 2 else Op.READ, (i * 7919 * 4096) % (vol.capacity - 3 * CH), 3 * CH)
        reqs.append(rq)
        vol.submit(rq).callbacks.append(lambda e: done.__setitem__(id(e.value), sim.now))
    sim.run()
    children: dict[int, list] = {}
    for i, _, c in member_log(vol):
        children.setdefault(id(c.parent), []).append((i, c))
    assert len(done) == 300
    for rq in reqs:
        lat = done[id(rq)] - rq.t_submit
        kids = children[id(rq)]
        slowest = max(c.service for _, c in kids)
        assert lat >= rq.service >= slowest
        last = max(vol.members[i].done_time[id(c)] for i, c in kids)
        assert done[id(rq)] >= last  # the volume completes after its last member IO


@pytest.mark.parametrize("m", [2, 4])
def test_raid0_throughput_scales_with_members_closed_network(m):
    """RAID 0 of M exponential queues at QD N (IOs within one chunk): each queue's utilisation is
    N / (N + M - 1) (product-form closed network, uniform routing, no think time)."""
    n_cust, s = 64, 1e-3
    sim = new_sim(11)
    vol = RaidVolume(raid_cfg("0", m, qspec(s, "exponential")), "v", sim.root)
    _, (r,) = run_jobs(AIO, [{"rw": "randread", "bs": "4k", "iodepth": n_cust, "number_ios": 60_000, "filename": "v"}], {"v": vol}, sim)
    x = r.n / r.runtime
    theory = m * (n_cust / (n_cust + m - 1)) / s
    assert x == pytest.approx(theory, rel=0.03)
    # Little's law over the volume: N = X R
    assert x * r.lat.mean() == pytest.approx(n_cust, rel=0.01)
    sim1 = new_sim(11)
    single = queue_devices(sim1, [s], dist="exponential", capacity="1GiB")
    _, (r1,) = run_jobs(AIO, [{"rw": "randread", "bs": "4k", "iodepth": n_cust, "number_ios": 30_000, "filename": "d0"}], single, sim1)
    assert x / (r1.n / r1.runtime) == pytest.approx(m * n_cust / (n_cust + m - 1), rel=0.04)


# ---------------------------------------------------------------- controller cache, read-ahead, path
def test_write_back_cache_absorbs_a_burst_and_is_bounded_by_destage():
    sim = new_sim(6)
    size = 64 * 4096
    vol = recording_raid(
        sim, "5", 8, service=1e-3, dist="exponential",
        write_cache={"mode": "write_back", "size": size, "ack_latency": 2e-5, "destage_depth": 8},
    )
    # a burst smaller than the cache: every write acknowledged from the cache
    evs = [vol.submit(Request(Op.WRITE, (i * 104729 * 4096) % vol.capacity, 4096)) for i in range(32)]
    sim.run(until=1e-4)
    assert all(e.processed for e in evs)
    sim.run()
    assert vol.dirty_bytes == 0 and vol.destaging_bytes == 0  # idle: drained
    # sustained random writes: the rate cannot exceed what the members destage (4 member IOs each)
    sim2 = new_sim(6)
    vol2 = recording_raid(
        sim2, "5", 8, service=1e-3, dist="exponential",
        write_cache={"mode": "write_back", "size": size, "destage_depth": 8},
    )
    _, (r,) = run_jobs(AIO, [{"rw": "randwrite", "bs": "4k", "iodepth": 16, "number_ios": 20_000, "filename": "v"}], {"v": vol2}, sim2)
    x = r.n / r.runtime
    assert x <= 8 / 1e-3 / 4 * 1.02
    assert x >= 0.5 * 8 / 1e-3 / 4  # and the cache keeps the members busy


def test_write_back_cache_turns_sequential_small_writes_into_full_stripes():
    sim = new_sim(6)
    vol = recording_raid(sim, "5", 5, service=1e-3, write_cache={"mode": "write_back", "size": "4MiB"})
    run_jobs(AIO, [{"rw": "write", "bs": "4k", "iodepth": 4, "number_ios": 4096, "filename": "v"}], {"v": vol}, sim)
    sim.run()
    assert vol.dirty_bytes == 0
    assert vol.methods.get("full", 0) == 4096 * 4096 // vol.layout.row_bytes
    assert vol.member_ios[Op.READ] == 0


def test_flush_with_and_without_battery_backed_cache():
    sim = new_sim(1)
    wt = recording_raid(sim, "10", 4, name="wt")
    submit_one(sim, wt, Op.FLUSH, 0, 0)
    assert [op for _, op, _ in member_log(wt)] == [Op.FLUSH] * 4
    wb = recording_raid(sim, "10", 4, name="wb", write_cache={"mode": "write_back"})
    submit_one(sim, wb, Op.FLUSH, 0, 0)
    assert member_log(wb) == []


def test_read_ahead_serves_a_sequential_stream():
    sim = new_sim(3)
    vol = recording_raid(sim, "5", 6, service=1e-3, read_ahead={"enabled": True, "trigger": 2, "size": "1MiB"})
    run_jobs(AIO, [{"rw": "read", "bs": "4k", "iodepth": 1, "number_ios": 2048, "filename": "v"}], {"v": vol}, sim)
    assert vol.readahead_hits >= 2040
    assert vol.member_ios[Op.READ] <= 2048 * 4096 // CH + 64  # chunk-sized member reads, not 4 KiB ones
    sim2 = new_sim(3)
    vol2 = recording_raid(sim2, "5", 6, service=1e-3, read_ahead={"enabled": True})
    run_jobs(AIO, [{"rw": "randread", "bs": "4k", "iodepth": 1, "number_ios": 500, "filename": "v"}], {"v": vol2}, sim2)
    assert vol2.readahead_hits == 0 and vol2.member_ios[Op.READ] == 500  # random: no read-ahead


def test_hba_path_bounds_throughput():
    sim = new_sim(1)
    path = {"channels": 2, "lanes": 2, "lane_rate": "12Gb/s", "efficiency": 0.8}
    cfg = raid_cfg("0", 8, qspec(1e-6), path=path)
    vol = RaidVolume(cfg, "v", sim.root)
    _, (r,) = run_jobs(AIO, [{"rw": "read", "bs": "1m", "iodepth": 16, "number_ios": 400, "filename": "v"}], {"v": vol}, sim)
    bw = r.n * 2**20 / r.runtime
    link = 2 * 2 * 12e9 / 8 * 0.8
    assert bw <= link * 1.001
    assert bw == pytest.approx(link, rel=0.05)
    assert vol.hba.transfers[0] == pytest.approx(vol.hba.transfers[1], rel=0.1)  # multipath shares the channels


# ---------------------------------------------------------------- config and profile
@pytest.mark.parametrize(
    "params, word",
    [
        ({"level": 5, "members": {"count": 2, "device": {"kind": "queue"}}}, "at least 3"),
        ({"level": 6, "members": {"count": 6, "device": {"kind": "queue"}}, "failed": [0, 1, 2]}, "two failed"),
        ({"level": 0, "members": {"count": 2, "device": {"kind": "queue"}}, "failed": [1]}, "no redundancy"),
        ({"level": 10, "members": {"count": 5, "device": {"kind": "queue"}}}, "multiple of copies"),
        ({"level": 10, "members": {"count": 4, "device": {"kind": "queue"}}, "failed": [0, 1]}, "mirror set 0"),
        ({"level": 7, "members": {"count": 4, "device": {"kind": "queue"}}}, "level"),
        ({"level": 5, "chunk": "6KiB", "members": {"count": 4, "device": {"kind": "queue"}}}, "chunk"),
    ],
)
def test_bad_config_is_one_clear_error(params, word):
    with pytest.raises(ConfigError) as ei:
        resolve_params({"kind": "raid", "params": params}, source="x.yaml")
    assert word in str(ei.value)


def test_library_profile_builds():
    prof = load_profile("raid/exos15e900_24x_raid10")
    assert prof["kind"] == "raid"
    dk, cfg, _ = resolve_params({"profile": "raid/exos15e900_24x_raid10"})
    assert cfg.level == "10" and cfg.members.count == 24
    sim = new_sim(1)
    vol = dk.build(cfg, "vol", sim.root)
    one = vol.members[0]
    one = getattr(one, "member", one)
    assert vol.capacity == 12 * (one.capacity // cfg.chunk * cfg.chunk)


def test_members_count_toward_the_run_size_limit(tmp_path):
    """A RAID of RAIDs asking for 40,201 devices is refused before anything is built (exit 2)."""
    import subprocess
    import sys

    f = tmp_path / "big.yaml"
    f.write_text(
        "name: big\nsystem:\n  devices:\n  - name: vol\n    kind: raid\n    params:\n      level: 0\n"
        "      members:\n        count: 200\n        device:\n          kind: raid\n"
        "          params: {level: 0, members: {count: 200, device: {kind: queue}}}\n"
        "workload:\n  global: {rw: randread, bs: 4k, runtime: 1s, time_based: 1, filename: vol}\n  jobs: [{name: j}]\n"
    )
    r = subprocess.run([sys.executable, "-m", "simulator.cli", "check", str(f)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "members.count" in r.stderr and "40,201 devices" in r.stderr and "Traceback" not in r.stderr


def test_volumes_carved_from_one_raid_share_its_members_and_cache():
    sim = new_sim(2)
    vol = recording_raid(
        sim, "5", 5, volumes=[{"name": "data", "size": "100MiB"}, {"name": "log", "size": "50MiB"}],
        write_cache={"mode": "write_back", "size": "1MiB", "destage_depth": 2},
    )
    data, log = vol.volumes["data"], vol.volumes["log"]
    assert (data.start, data.capacity, log.start, log.capacity) == (0, 100 * 2**20, 100 * 2**20, 50 * 2**20)
    seen = []
    orig = vol._insert
    vol._insert = lambda off, size: (orig(off, size), seen.append(vol.dirty_bytes + vol.destaging_bytes))
    evs = [d.submit(Request(Op.WRITE, i * 2 * CH, 4096)) for i in range(200) for d in (data, log)]
    sim.run()
    assert all(e.processed for e in evs) and vol.dirty_bytes == 0
    assert max(seen) <= 2**20  # one budget for both volumes
    assert max(seen) > 2**20 - 2 * 4096  # ... which they filled together (400 x 4 KiB > 1 MiB)
    # the log volume's writes landed after the data volume on the members
    offs = sorted({r.offset // vol.layout.chunk for _, _, r in member_log(vol) if r.op == Op.WRITE})
    assert offs[-1] * CH >= 100 * 2**20 // vol.layout.data_chunks
    with pytest.raises(ConfigError, match="does not fit"):
        recording_raid(new_sim(1), "5", 5, name="v2", volumes=[{"name": "big", "size": "10TiB"}])


def test_same_seed_same_result_through_a_raid():
    def once():
        sim = new_sim(21)
        vol = recording_raid(sim, "6", 6, service=5e-4, dist="exponential", write_cache={"mode": "write_back", "size": "256KiB"})
        _, (r,) = run_jobs(AIO, [{"rw": "randrw", "bs": "8k", "iodepth": 8, "number_ios": 1500, "filename": "v"}], {"v": vol}, sim)
        return r.lat, vol.member_ios

    (a, ma), (b, mb) = once(), once()
    assert np.array_equal(a, b) and ma == mb


def test_idle_hba_path_adds_no_latency():
    """Frames cut through: an idle path overlaps the drive's own transfer; only waiting for a lane costs."""
    sim = new_sim(1)
    vol = RaidVolume(raid_cfg("0", 2, qspec(1e-3), path={"channels": 1, "lanes": 1}), "v", sim.root)
    for op in (Op.READ, Op.WRITE):
        t0 = sim.now
        req = submit_one(sim, vol, op, 0, CH)
        assert sim.now - t0 == pytest.approx(1e-3) and req.service == pytest.approx(1e-3)
    # two chunks at once on one lane: the second transfer waits for the first
    t0 = sim.now
    submit_one(sim, vol, Op.READ, 0, 2 * CH)
    lane = CH / (12e9 / 8 * 0.8)
    assert sim.now - t0 == pytest.approx(1e-3 + lane)


@pytest.mark.parametrize("policy", ["least_busy", "round_robin"])
def test_hba_path_books_the_lane_its_policy_names(policy):
    """least_busy: the lane that frees first over all channels (ties: lower channel, then lower lane);
    round_robin: channels in turn, the earliest-free lane of that channel. Checked against the rule
    written out over (channel, lane) pairs."""
    from simulator.devices.raid.config import HbaPathConfig
    from simulator.devices.raid.path import HbaPath

    sim = new_sim(1)
    cfg = HbaPathConfig(channels=2, lanes=3, lane_rate="12Gb/s", efficiency=0.8, policy=policy)
    path = HbaPath(cfg, "p", sim.root)
    free = [[0.0] * 3 for _ in range(2)]
    rr = 0
    rng = np.random.default_rng(3)
    for i in range(300):
        t = i * 2e-7
        size = int(rng.integers(1, 64)) * 4096
        if policy == "round_robin":
            ch, rr = rr, (rr + 1) % 2
        else:
            ch = min(range(2), key=lambda c: min(free[c]))
        ln = free[ch].index(min(free[ch]))
        start = max(t, free[ch][ln])
        end = start + size / (12e9 / 8 * 0.8)
        free[ch][ln] = end
        assert path.reserve(t, size) == (start, end)
    assert sum(path.transfers) == 300


def test_hba_path_completion_without_wait_is_in_the_members_event():
    """An idle path completes a member IO inside the member's completion (no event of its own): at
    the member's completion time, once, with the port's accounting closed."""
    sim = new_sim(1)
    vol = RaidVolume(raid_cfg("0", 2, qspec(1e-3), path={"channels": 1, "lanes": 4}), "v", sim.root)
    done = []
    req = Request(Op.READ, 0, 4096)
    vol.submit(req).callbacks.append(lambda ev: done.append(sim.now))
    sim.run()
    assert done == [pytest.approx(1e-3)]
    port = next(c for c in vol.walk() if type(c).__name__ == "PathPort" and c.completed[Op.READ])
    assert port.completed[Op.READ] == 1 and port._inside == 0
