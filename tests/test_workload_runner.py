"""Job runner semantics against QueueDevices: limits, ramp, fsync/sync, file service, repeatability."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_workload_support import (
    FakeStats,
    fake_merge,
    new_sim,
    queue_devices,
    recording_devices,
    run_jobs,
)

from simulator.devices.base import Op
from simulator.engine import Simulation
from simulator.errors import ConfigError
from simulator.workloads.jobfile import parse_jobfile_text
from simulator.workloads.options import resolve_jobs
from simulator.workloads.runner import Workload

AIO = {"ioengine": "libaio", "sim_slat": 0}


def data_reqs(dev):
    return [(t, r) for t, r in dev.log if r.op != Op.FLUSH]


def test_every_io_completes_exactly_once_and_latency_covers_service():
    sim = new_sim(3)
    devs = recording_devices(sim, [2e-4], dist="exponential")
    _, (r,) = run_jobs(AIO, [{"rw": "randrw", "iodepth": 8, "number_ios": 5000, "filename": "d0"}], devs, sim)
    d = devs["d0"]
    assert len(d.log) == 5000
    assert all(d.done_count[id(q)] == 1 for _, q in d.log)
    lat = np.array([d.done_time[id(q)] - q.t_submit for _, q in d.log])
    svc = np.array([q.service for _, q in d.log])
    assert np.all(lat >= svc - 1e-15)
    assert r.n == 5000
    # the recorded clat are exactly the device's submit->completion times
    assert np.allclose(np.sort(r.clat), np.sort(lat), rtol=0, atol=1e-12)
    assert np.all(r.slat == 0)


def test_number_ios_is_exact_after_ramp():
    sim = new_sim()
    devs = queue_devices(sim, [1e-4], dist="exponential")
    wl, (r,) = run_jobs(
        AIO,
        [{"rw": "randread", "iodepth": 16, "number_ios": 1000, "ramp_time": "50ms", "filename": "d0"}],
        devs,
        sim,
    )
    assert r.n == 1000
    t_rec = wl.threads[0].window[0]
    assert t_rec == pytest.approx(0.05)
    assert r.t_done.min() >= t_rec and r.window[0] == t_rec


def test_size_sequential_covers_region_once():
    sim = new_sim()
    devs = recording_devices(sim, [1e-4])
    _, (r,) = run_jobs(
        AIO,
        [{"rw": "read", "bs": "4k", "size": "1m", "offset": "64k", "iodepth": 4, "filename": "d0"}],
        devs,
        sim,
    )
    offs = [q.offset for _, q in devs["d0"].log]
    assert offs == [65536 + 4096 * i for i in range(256)]
    assert r.nbytes.sum() == 1 << 20


def test_random_run_touches_every_block_once():
    sim = new_sim()
    devs = recording_devices(sim, [1e-4])
    run_jobs(AIO, [{"rw": "randwrite", "bs": "8k", "size": "2m", "iodepth": 4, "filename": "d0"}], devs, sim)
    offs = sorted(q.offset for _, q in devs["d0"].log)
    assert offs == [8192 * i for i in range(256)]


def test_time_based_stops_issuing_at_runtime_and_drains():
    sim = new_sim()
    devs = recording_devices(sim, [3e-3], dist="exponential")
    _, (r,) = run_jobs(
        AIO, [{"rw": "randread", "iodepth": 4, "time_based": 1, "runtime": 1, "filename": "d0"}], devs, sim
    )
    log = devs["d0"].log
    assert max(t for t, _ in log) < 1.0
    assert r.n == len(log)  # the IOs in flight at the stop were waited for and counted
    assert r.window[0] == 0.0 and r.window[1] == pytest.approx(max(devs["d0"].done_time.values()))
    assert r.window[1] > 1.0


def test_ramp_excluded_and_device_window_matches():
    sim = new_sim()
    s = 2.0**-10  # exact in binary: completions fall exactly on k/1024 s
    devs = queue_devices(sim, [s])
    _, (r,) = run_jobs(
        {"ioengine": "psync"},
        [{"rw": "randread", "time_based": 1, "runtime": 2, "ramp_time": 1, "filename": "d0"}],
        devs,
        sim,
    )
    assert r.t_done.min() >= 1.0
    assert r.window == (1.0, 3.0)
    # QD1: completions at k/1024 for k = 1024 (the IO in flight at the ramp's end) .. 3072
    assert r.n == 2049
    st = devs["d0"].stats()
    assert st["window_s"] == pytest.approx(2.0)
    assert st["completed"]["read"] == 2049
    assert st["utilisation"] == pytest.approx(1.0)


def test_a_later_start_without_ramp_keeps_earlier_jobs_device_counts():
    """Two jobs on one device, the second starting 0.5 s later, no ramp: the device's window covers
    both (the second job's start does not restart the counters the first job has accumulated)."""
    sim = new_sim()
    s = 2.0**-10
    devs = queue_devices(sim, [s])
    _, (a, b) = run_jobs(
        {"ioengine": "psync"},
        [
            {"name": "a", "rw": "randread", "number_ios": 300, "filename": "d0"},
            {"name": "b", "rw": "randread", "number_ios": 300, "startdelay": "500ms", "filename": "d0"},
        ],
        devs,
        sim,
    )
    st = devs["d0"].stats()
    assert st["completed"]["read"] == a.n + b.n == 600
    assert st["window_s"] == pytest.approx(sim.env.now)


@pytest.mark.parametrize("n, expected", [(10, 99), (7, 142)])
def test_fsync_every_n_writes(n, expected):
    sim = new_sim()
    devs = recording_devices(sim, [1e-4], flush_time=5e-4)
    _, (r,) = run_jobs(
        {"ioengine": "psync"}, [{"rw": "write", "number_ios": 1000, "fsync": n, "filename": "d0"}], devs, sim
    )
    log = devs["d0"].log
    flushes = [i for i, (_, q) in enumerate(log) if q.op == Op.FLUSH]
    assert len(flushes) == expected == r.sync_lat.size
    # each flush comes right after every n-th write (fio: after n writes issued)
    assert all(sum(1 for _, q in log[:i] if q.op == Op.WRITE) % n == 0 for i in flushes)
    assert np.allclose(r.sync_lat, 5e-4)
    assert r.n == 1000


def test_fsync_holds_its_slot():
    sim = new_sim()
    devs = queue_devices(sim, [1e-3], flush_time=1e-3)
    _, (r,) = run_jobs(
        {"ioengine": "psync"},
        [{"rw": "write", "fsync": 1, "time_based": 1, "runtime": 1, "filename": "d0"}],
        devs,
        sim,
    )
    assert r.n == pytest.approx(500, abs=1)  # write + flush per 2 ms at depth 1


def test_sync_writes_are_fua():
    sim = new_sim()
    devs = recording_devices(sim, [1e-4])
    run_jobs(AIO, [{"rw": "randrw", "sync": 1, "number_ios": 400, "iodepth": 2, "filename": "d0"}], devs, sim)
    reqs = [q for _, q in devs["d0"].log]
    assert {q.fua for q in reqs if q.op == Op.WRITE} == {True}
    assert {q.fua for q in reqs if q.op == Op.READ} == {False}


@pytest.mark.parametrize("engine, blocks", [("libaio", True), ("io_uring", False)])
def test_libaio_flush_blocks_the_thread(engine, blocks):
    sim = new_sim()
    devs = recording_devices(sim, [5e-4], dist="exponential", flush_time=2e-3)
    run_jobs(
        {"ioengine": engine, "sim_slat": 0},
        [{"rw": "randwrite", "iodepth": 8, "fsync": 4, "number_ios": 2000, "filename": "d0"}],
        devs,
        sim,
    )
    d = devs["d0"]
    spans = [(t, d.done_time[id(q)]) for t, q in d.log if q.op == Op.FLUSH]
    inside = sum(1 for t, q in d.log if q.op == Op.WRITE and any(a < t < b for a, b in spans))
    # fio's fsync=4: one flush after every 4th write (whether one follows the job's last write is not
    # what this test is about)
    assert len(spans) in (2000 // 4 - 1, 2000 // 4)
    if blocks:
        assert inside == 0
    else:
        assert inside > len(spans)


def test_shared_iodepth_vs_one_job_per_device():
    """Study 2: one job over 8 files shares one iodepth (the slowest device paces it, queue depths
    self-balance); one job per device gives each its own iodepth (independent rates)."""
    services = [1e-4 * (i + 1) for i in range(8)]
    files = ":".join(f"d{i}" for i in range(8))

    def steady_iops(devs):
        # completions during [ramp end, runtime end]; the drain after it is left out
        return np.array([sum(1 for t in d.done_time.values() if 1.0 <= t < 2.0) for d in devs.values()])

    sim = new_sim()
    devs = recording_devices(sim, services)
    # the ramp lets the queues settle: the surplus queued at the faster devices drains within ~1 s
    run_jobs(
        AIO,
        [
            {
                "rw": "randread",
                "iodepth": 128,
                "time_based": 1,
                "runtime": 1,
                "ramp_time": 1,
                "filename": files,
            }
        ],
        devs,
        sim,
    )
    iops = steady_iops(devs)
    assert iops.max() / iops.min() < 1.01
    assert iops.mean() == pytest.approx(1 / max(services), rel=0.02)  # paced by the slowest
    qd = np.array([d.stats()["mean_queue_depth"] for d in devs.values()])
    assert qd[-1] > 100 and qd[0] < 2  # the whole depth piles up on the slowest device

    sim = new_sim()
    devs = recording_devices(sim, services)
    run_jobs(
        AIO,
        [
            {
                "name": f"dev{i}",
                "rw": "randread",
                "iodepth": 16,
                "time_based": 1,
                "runtime": 1,
                "ramp_time": 1,
                "filename": f"d{i}",
            }
            for i in range(8)
        ],
        devs,
        sim,
    )
    iops = steady_iops(devs)
    assert np.allclose(iops, 1 / np.array(services), rtol=0.01)


def test_file_service_random_and_sequential():
    sim = new_sim()
    devs = recording_devices(sim, [1e-4, 1e-4])
    run_jobs(
        AIO,
        [
            {
                "rw": "read",
                "size": "256k",
                "iodepth": 1,
                "file_service_type": "sequential",
                "filename": "d0:d1",
            }
        ],
        devs,
        sim,
    )
    # size is divided among the files; sequential service finishes d0's share before d1
    assert [q.offset for _, q in devs["d0"].log] == [4096 * i for i in range(32)]
    assert [q.offset for _, q in devs["d1"].log] == [4096 * i for i in range(32)]
    assert max(t for t, _ in devs["d0"].log) < min(t for t, _ in devs["d1"].log)
    sim = new_sim()
    devs = recording_devices(sim, [1e-4, 1e-4])
    run_jobs(
        AIO,
        [{"rw": "randread", "number_ios": 4000, "file_service_type": "random", "filename": "d0:d1"}],
        devs,
        sim,
    )
    n0 = len(devs["d0"].log)
    assert abs(n0 - 2000) < 4 * math.sqrt(1000)


def offsets_of(seed, randrepeat=1, numjobs=1):
    sim = Simulation(seed)
    devs = recording_devices(sim, [1e-4], dist="exponential")
    run_jobs(
        AIO,
        [
            {
                "rw": "randread",
                "iodepth": 4,
                "number_ios": 500,
                "randrepeat": randrepeat,
                "numjobs": numjobs,
                "filename": "d0",
            }
        ],
        devs,
        sim,
    )
    return [q.offset for _, q in devs["d0"].log]


def test_randrepeat_same_offsets_whatever_the_experiment_seed():
    a, b = offsets_of(1), offsets_of(2)
    assert a == b
    c, d = offsets_of(1, randrepeat=0), offsets_of(2, randrepeat=0)
    assert c != d and c != a


def test_numjobs_clones_get_different_streams():
    sim = new_sim()
    devs = queue_devices(sim, [1e-4])
    fj = resolve_jobs(AIO, [{"rw": "randread", "numjobs": 3, "filename": "d0"}])
    wl = Workload(sim, fj, lambda j: [devs["d0"]], stats_factory=FakeStats)
    seqs = [t.files[0].gen.take(200).tolist() for t in wl.threads]
    assert seqs[0] != seqs[1] != seqs[2] != seqs[0]
    assert [t.path for t in wl.threads] == ["workload.job0.0", "workload.job0.1", "workload.job0.2"]
    # the same thread number in another workload (another run) gives the same stream
    sim2 = Simulation(99)
    devs2 = queue_devices(sim2, [1e-4])
    wl2 = Workload(
        sim2,
        resolve_jobs(AIO, [{"rw": "randread", "numjobs": 3, "filename": "d0"}]),
        lambda j: [devs2["d0"]],
        stats_factory=FakeStats,
    )
    assert wl2.threads[1].files[0].gen.take(200).tolist() == seqs[1]


def test_persistent_sweep_replays_offsets_on_the_same_simulation():
    sim = new_sim()
    devs = recording_devices(sim, [1e-4], dist="exponential")
    job = [{"rw": "randread", "iodepth": 4, "number_ios": 300, "filename": "d0"}]
    run_jobs(AIO, job, devs, sim)
    first = [q.offset for _, q in devs["d0"].log]
    t_mid = sim.now
    wl2, (r2,) = run_jobs(AIO, job, devs, sim)
    second = [q.offset for _, q in devs["d0"].log[len(first) :]]
    assert second == first
    assert wl2.path == "workload2" and r2.window[0] == pytest.approx(t_mid)
    assert devs["d0"].stats()["completed"]["read"] == 300  # device window restarted for run 2


def test_group_reporting_merges_clones():
    sim = new_sim()
    devs = queue_devices(sim, [1e-4])
    _, res = run_jobs(
        AIO,
        [{"rw": "randread", "numjobs": 3, "number_ios": 100, "group_reporting": 1, "filename": "d0"}],
        devs,
        sim,
    )
    assert len(res) == 1 and res[0].jobs == 3 and res[0].n == 300
    sim = new_sim()
    devs = queue_devices(sim, [1e-4])
    _, res = run_jobs(AIO, [{"rw": "randread", "numjobs": 3, "number_ios": 100, "filename": "d0"}], devs, sim)
    assert len(res) == 3 and all(r.n == 100 and r.jobs == 1 for r in res)


def test_group_reporting_follows_fio_groups():
    sim = new_sim()
    devs = queue_devices(sim, [1e-4, 1e-4])
    g, jobs = parse_jobfile_text(
        "[global]\nioengine=libaio\nnumber_ios=50\ngroup_reporting\n"
        "[a]\nfilename=d0\n[b]\nfilename=d1\n[c]\nstonewall\nfilename=d0\nnumjobs=2\n"
    )
    fj = resolve_jobs(g, jobs, "g.fio")
    wl = Workload(
        sim, fj, lambda j: [devs[n] for n in j.filenames], stats_factory=FakeStats, merge=fake_merge
    )
    sim.run(until=wl.start())
    res = wl.results()
    # a and b share group 0 (merged, fio merges all jobs of a group), c's clones form group 1
    assert [(r.groupid, r.jobs, r.n) for r in res] == [(0, 2, 100), (1, 2, 100)]
    a, b, c0, _c1 = wl.threads
    assert c0.window[0] >= max(a.window[1], b.window[1])  # stonewall waited


def test_open_loop_linear_rate():
    sim = new_sim()
    devs = queue_devices(sim, [1e-4])
    _, (r,) = run_jobs(
        AIO,
        [{"rw": "randread", "rate_iops": 1000, "iodepth": 8, "number_ios": 1000, "filename": "d0"}],
        devs,
        sim,
    )
    assert r.n == 1000
    assert np.allclose(r.clat, 1e-4)
    assert np.allclose(np.diff(np.sort(r.t_done)), 1e-3)


def test_open_loop_rates_per_direction():
    sim = new_sim()
    devs = queue_devices(sim, [1e-4])
    _, (r,) = run_jobs(
        AIO,
        [
            {
                "rw": "randrw",
                "rate_iops": "100,50",
                "iodepth": 8,
                "time_based": 1,
                "runtime": 10,
                "filename": "d0",
            }
        ],
        devs,
        sim,
    )
    assert (r.ddir == 0).sum() == 1000 and (r.ddir == 1).sum() == 500
    assert r.window[1] == pytest.approx(10.0, abs=1e-3)


def test_open_loop_backlog_waits_for_a_slot():
    sim = new_sim()
    devs = queue_devices(sim, [2e-3])
    # arrivals every 1 ms, service 2 ms, depth 1: the job can only do 500 IOPS; latency stays 2 ms
    _, (r,) = run_jobs(
        AIO,
        [
            {
                "rw": "randread",
                "rate_iops": 1000,
                "iodepth": 1,
                "time_based": 1,
                "runtime": 1,
                "filename": "d0",
            }
        ],
        devs,
        sim,
    )
    assert r.n == pytest.approx(500, abs=1)
    assert np.allclose(r.clat, 2e-3)


def test_slat_is_serial_per_thread():
    sim = new_sim()
    devs = queue_devices(sim, [9e-5])
    _, (r,) = run_jobs(
        {"ioengine": "libaio", "sim_slat": "10us"},
        [{"rw": "randread", "iodepth": 1, "number_ios": 1000, "filename": "d0"}],
        devs,
        sim,
    )
    assert np.allclose(r.slat, 1e-5) and np.allclose(r.lat, 1e-4)
    assert r.n / (r.t_done.max() - 0.0) == pytest.approx(1e4, rel=1e-3)
    sim = new_sim()
    devs = queue_devices(sim, [1e-6], servers=64)
    _, (r,) = run_jobs(
        {"ioengine": "libaio", "sim_slat": "10us"},
        [{"rw": "randread", "iodepth": 32, "time_based": 1, "runtime": "10ms", "filename": "d0"}],
        devs,
        sim,
    )
    assert r.n == pytest.approx(1000, abs=35)  # bounded by 1/slat, not by the device


def test_synchronous_engine_runs_at_depth_one():
    sim = new_sim()
    devs = queue_devices(sim, [1e-4], dist="exponential")
    run_jobs(
        {"ioengine": "psync"},
        [{"rw": "randread", "iodepth": 32, "number_ios": 2000, "filename": "d0"}],
        devs,
        sim,
    )
    assert devs["d0"].stats()["mean_queue_depth"] == pytest.approx(1.0)


def test_rwmix_ratio():
    sim = new_sim()
    devs = queue_devices(sim, [1e-4])
    _, (r,) = run_jobs(
        AIO,
        [{"rw": "randrw", "rwmixread": 70, "iodepth": 4, "number_ios": 50_000, "filename": "d0"}],
        devs,
        sim,
    )
    frac = (r.ddir == 0).mean()
    # fio's rwmix steers towards the ratio; the Bernoulli 4-sigma band is a loose bound
    assert abs(frac - 0.7) < 4 * math.sqrt(0.21 / r.n)


def test_target_errors_name_the_job_option():
    sim = new_sim()
    devs = queue_devices(sim, [1e-4], capacity="1MiB")
    for opts, field, words in (
        ({"bs": "2m"}, "jobs.0.bs", "larger than the region"),
        ({"size": "2k"}, "jobs.0.bs", "larger than the region"),
        ({"offset": "2m"}, "jobs.0.offset", "beyond the end"),
        ({"direct": 1, "bs": 1000}, "jobs.0.bs", "multiples of the 512-byte sectors"),
    ):
        fj = resolve_jobs({}, [{**opts, "filename": "d0"}], "exp.yaml")
        with pytest.raises(ConfigError) as ei:
            Workload(sim, fj, lambda j: [devs["d0"]], stats_factory=FakeStats)
        assert ei.value.source == "exp.yaml" and ei.value.field == field and words in ei.value.message


def test_size_larger_than_device_is_clamped_like_fio():
    sim = new_sim()
    devs = recording_devices(sim, [1e-5], capacity="256KiB")
    run_jobs(AIO, [{"rw": "read", "size": "1g", "offset": "128k", "iodepth": 2, "filename": "d0"}], devs, sim)
    # the region ends at the device's end and the amount is what the region holds
    assert [q.offset for _, q in devs["d0"].log] == [131072 + 4096 * i for i in range(32)]


def test_lifecycle_errors():
    sim = new_sim()
    devs = queue_devices(sim, [1e-4])
    wl = Workload(
        sim,
        resolve_jobs(AIO, [{"number_ios": 10, "filename": "d0"}]),
        lambda j: [devs["d0"]],
        stats_factory=FakeStats,
    )
    with pytest.raises(RuntimeError):
        wl.results()
    ev = wl.start()
    with pytest.raises(RuntimeError):
        wl.start()
    sim.run(until=ev)
    assert len(wl.results()) == 1


def test_with_the_metrics_layer():
    from simulator.metrics import stats  # the project's own module: a failed import is a failure, not a skip
    sim = new_sim()
    devs = queue_devices(sim, [1e-4])
    fj = resolve_jobs(
        AIO,
        [
            {
                "rw": "randread",
                "iodepth": 4,
                "numjobs": 2,
                "group_reporting": 1,
                "time_based": 1,
                "runtime": 1,
                "filename": "d0",
            }
        ],
    )
    wl = Workload(sim, fj, lambda j: [devs["d0"]])
    sim.run(until=wl.start())
    (res,) = wl.results()
    assert isinstance(res, stats.JobResult)
    assert res.jobs == 2
    assert res.read.iops == pytest.approx(1e4, rel=0.01)
    assert res.options["rw"] == "randread"


def test_end_fsync_flushes_each_file_after_the_last_write():
    sim = new_sim()
    devs = recording_devices(sim, [1e-4, 1e-4], flush_time=1e-3)
    _, (r,) = run_jobs(
        AIO,
        [{"rw": "write", "iodepth": 4, "number_ios": 100, "end_fsync": 1, "filename": "d0:d1"}],
        devs,
        sim,
    )
    for d in devs.values():
        assert [q.op for _, q in d.log].count(Op.FLUSH) == 1
        assert d.log[-1][1].op == Op.FLUSH  # after every write of the job
    assert r.sync_lat.size == 2 and r.n == 100
    # one file after the other: the job ends 2 ms after its last write
    assert r.window[1] == pytest.approx(r.t_done.max() + 2e-3)
    sim = new_sim()
    devs = recording_devices(sim, [1e-4])
    run_jobs(AIO, [{"rw": "read", "number_ios": 10, "end_fsync": 1, "filename": "d0"}], devs, sim)
    assert Op.FLUSH not in [q.op for _, q in devs["d0"].log]  # reads only: nothing to sync
