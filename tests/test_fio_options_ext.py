"""fio options beyond one fixed block size and a closed loop: bssplit, bsrange, blockalign,
thinktime (+_blocks, _blocks_type, _spin, _iotime), startdelay ranges, rate/rate_iops with
rate_process=poisson, zoned distributions through the runner, io_size, per-job targets.

Each test compares the run with fio's documented definition (HOWTO.rst of fio) through a
tolerance from theory: binomial confidence intervals for proportions, the interactive response
time law (Little's law for a closed system with think time) with its boundary term, a
Kolmogorov-Smirnov test for exponential inter-arrival times. Fixed seeds throughout.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from test_workload_support import new_sim, queue_devices, recording_devices, run_jobs

from simulator.devices.base import Op
from simulator.workloads.offsets import SequentialOffsets
from simulator.workloads.options import FioJob, resolve_jobs

AIO = {"ioengine": "libaio", "sim_slat": 0}
KB = 1024
#: z of the two-sided binomial bounds (false alarm per bound ~6e-5 if the draw were random)
Z = 4.0


def binomial_ok(count: int, n: int, p: float) -> bool:
    """|count - n p| within Z standard deviations of Binomial(n, p)."""
    return abs(count - n * p) <= Z * math.sqrt(n * p * (1 - p)) + 1e-9


def data_log(dev):
    return [r for _, r in dev.log if r.op != Op.FLUSH]


# ----------------------------------------------------------------------------- parsing (fio's rules)
def test_bssplit_blank_percentages_share_the_rest_evenly():
    # HOWTO: "bssplit=4k/50:1k/:32k/ would have 50% 4k ios, and 25% 1k and 32k ios"
    (j,) = resolve_jobs({}, [{"bssplit": "4k/50:1k/:32k/"}])
    kind, sizes, probs = j.bs_spec[0]
    assert kind == "split"
    assert dict(zip(sizes, probs, strict=True)) == {4 * KB: 0.5, KB: 0.25, 32 * KB: 0.25}
    assert j.min_bs == (KB,) * 3 and j.max_bs == (32 * KB,) * 3


def test_bssplit_per_direction_and_trailing_comma():
    # HOWTO: "bssplit=2k/50:4k/50,4k/90:8k/10" -> reads 2k/4k, writes (and trims) 4k/8k
    (j,) = resolve_jobs({}, [{"bssplit": "2k/50:4k/50,4k/90:8k/10", "rw": "randrw"}])
    r, w, t = j.bs_spec
    assert dict(zip(r[1], r[2], strict=True)) == {2 * KB: 0.5, 4 * KB: 0.5}
    assert dict(zip(w[1], w[2], strict=True)) == {4 * KB: 0.9, 8 * KB: 0.1}
    assert t == w
    # a trailing comma leaves trims at bs; an empty read part leaves reads at bs
    (j,) = resolve_jobs({}, [{"bs": "16k", "bssplit": ",4k/90:8k/10,"}])
    assert j.bs_spec[0] == ("fixed", 16 * KB) and j.bs_spec[2] == ("fixed", 16 * KB)
    assert j.bs_spec[1][0] == "split"


def test_bssplit_remainder_and_rounding_follow_fios_lookup():
    # percentages adding to less than 100: fio's cumulative lookup (entries sorted by percentage)
    # ends on the entry with the largest percentage, which takes the remainder
    (j,) = resolve_jobs({}, [{"bssplit": "8k/20:4k/10"}])
    assert dict(zip(j.bs_spec[0][1], j.bs_spec[0][2], strict=True)) == {4 * KB: 0.1, 8 * KB: 0.9}
    # a 0 percentage is filled in like a blank one (fio's split_parse_ddir)
    (j,) = resolve_jobs({}, [{"bssplit": "4k/0:8k/60"}])
    assert dict(zip(j.bs_spec[0][1], j.bs_spec[0][2], strict=True)) == {4 * KB: 0.4, 8 * KB: 0.6}
    # sizes are rounded down to a multiple of the smallest (no bs_unaligned): 6k -> 4k
    (j,) = resolve_jobs({}, [{"bssplit": "4k/50:6k/50"}])
    assert j.bs_spec[0] == ("fixed", 4 * KB)


def test_bsrange_startdelay_thinktime_units():
    (j,) = resolve_jobs({}, [{"bsrange": "16k:4k,1k-2k", "startdelay": "5s-2s", "thinktime": 250}])
    assert j.bs_spec[0] == ("range", 4 * KB, 16 * KB)  # reversed range swapped, ':' accepted
    assert j.bs_spec[1] == ("range", KB, 2 * KB) and j.bs_spec[2] == j.bs_spec[1]
    assert j.startdelay == (2.0, 5.0) and j.startdelay_max == 5.0
    assert j.thinktime == pytest.approx(250e-6)  # microseconds when the unit is omitted
    (j,) = resolve_jobs({}, [{"thinktime": "2ms", "thinktime_iotime": "9", "startdelay": 3}])
    assert j.thinktime == pytest.approx(2e-3) and j.thinktime_iotime == 9.0 and j.startdelay == (3.0, 3.0)
    # the rebuilt options of a directly built job parse back to the same job
    k = FioJob(thinktime=0.002, startdelay=(1.0, 2.0), bssplit="4k/50:8k/50")
    (k2,) = resolve_jobs({}, [k.fio_options()])
    assert (k2.thinktime, k2.startdelay, k2.bs_spec) == (k.thinktime, k.startdelay, k.bs_spec)


def test_rate_in_bytes_and_open_loop_iops():
    (j,) = resolve_jobs({}, [{"rate": "1m,500k", "rw": "randrw", "bs": "4k"}])
    assert j.rate == (2**20, 500 * KB, 500 * KB)
    assert j.open_loop_iops == pytest.approx((256.0, 125.0, 125.0))
    (j,) = resolve_jobs({}, [{"rate": "1m,", "rw": "randread"}])  # only reads capped
    assert j.rate == (2**20, 0, 0)


# ----------------------------------------------------------------------------- block sizes through the runner
def test_bssplit_proportions_within_binomial_bounds():
    sim = new_sim(2)
    devs = recording_devices(sim, [1e-5])
    n = 20000
    run_jobs(AIO, [{"rw": "randrw", "iodepth": 4, "number_ios": n, "bssplit": "2k/50:4k/50,4k/90:8k/10"}], devs, sim)
    reqs = data_log(devs["d0"])
    assert len(reqs) == n
    reads = [r.size for r in reqs if r.op == Op.READ]
    writes = [r.size for r in reqs if r.op == Op.WRITE]
    assert set(reads) == {2 * KB, 4 * KB} and set(writes) == {4 * KB, 8 * KB}
    assert binomial_ok(reads.count(2 * KB), len(reads), 0.5)
    assert binomial_ok(writes.count(8 * KB), len(writes), 0.1)
    # random offsets are multiples of the smallest block size and every IO fits the device
    offs = np.array([r.offset for r in reqs])
    ends = offs + np.array([r.size for r in reqs])
    assert np.all(offs % (2 * KB) == 0) and ends.max() <= devs["d0"].capacity


def test_bssplit_three_sizes_within_binomial_bounds():
    sim = new_sim(4)
    devs = recording_devices(sim, [1e-5])
    n = 20000
    run_jobs(AIO, [{"rw": "randread", "iodepth": 2, "number_ios": n, "bssplit": "4k/10:64k/50:32k/40"}], devs, sim)
    sizes = [r.size for r in data_log(devs["d0"])]
    for b, p in ((4 * KB, 0.1), (64 * KB, 0.5), (32 * KB, 0.4)):
        assert binomial_ok(sizes.count(b), n, p), (b, sizes.count(b))


def test_bsrange_is_uniform_over_multiples_of_the_minimum():
    sim = new_sim(5)
    devs = recording_devices(sim, [1e-5])
    n = 16000
    run_jobs(AIO, [{"rw": "randwrite", "number_ios": n, "bsrange": "512-4k"}], devs, sim)
    sizes = np.array([r.size for r in data_log(devs["d0"])])
    # fio: 512 + floor(U * 4096) rounded down to a multiple of 512 -> 512..4096, each 1/8
    assert set(sizes.tolist()) == set(range(512, 4097, 512))
    for b in range(512, 4097, 512):
        assert binomial_ok(int((sizes == b).sum()), n, 1 / 8)


def test_sequential_bssplit_is_contiguous():
    sim = new_sim(6)
    devs = recording_devices(sim, [1e-5], capacity="64MiB")
    run_jobs({}, [{"rw": "write", "number_ios": 3000, "bssplit": "4k/50:16k/50"}], devs, sim)
    reqs = data_log(devs["d0"])
    for a, b in itertools.pairwise(reqs):
        assert b.offset == a.offset + a.size or b.offset == 0
    assert {r.size for r in reqs} == {4 * KB, 16 * KB}
    g = SequentialOffsets(0, 10 * KB, (4 * KB,) * 3, (8 * KB,) * 3)
    # 8k at 0, then a 4k IO would pass 10k: wraps to the start
    assert [g.next(1, 8 * KB), g.next(1, 4 * KB), g.next(1, 4 * KB)] == [0, 0, 4 * KB]


def test_blockalign_sets_the_offset_grid():
    sim = new_sim(7)
    devs = recording_devices(sim, [1e-5], capacity="16MiB")
    run_jobs(AIO, [{"rw": "randread", "bs": "4k", "ba": "512", "number_ios": 4000}], devs, sim)
    offs = np.array([r.offset for r in data_log(devs["d0"])])
    assert np.all(offs % 512 == 0)
    assert np.mean(offs % (4 * KB) != 0) > 0.8  # 7 of 8 grid points are not 4k-aligned
    assert (offs + 4 * KB).max() <= 16 * 2**20


def test_direct_io_checks_every_bssplit_size_against_the_sector():
    from simulator.errors import ConfigError

    sim = new_sim()
    devs = queue_devices(sim, [1e-4])
    with pytest.raises(ConfigError) as ei:
        run_jobs({}, [{"rw": "randread", "direct": 1, "bssplit": "4k/50:1000/50", "number_ios": 10}], devs, sim)
    assert ei.value.field == "jobs.0.bssplit"


# ----------------------------------------------------------------------------- thinktime
def test_thinktime_closed_system_obeys_the_response_time_law():
    """N threads at depth 1, think time Z: throughput X = N / (R + Z) (interactive response time
    law). Over a window T the partial cycles at the edges bound the error by N (R_max + Z) / T."""
    sim = new_sim(8)
    devs = queue_devices(sim, [1e-3], dist="exponential")
    nthreads, z, runtime = 4, 2e-3, 20.0
    _, res = run_jobs(
        {},
        [{"rw": "randread", "numjobs": nthreads, "thinktime": "2ms", "time_based": 1, "runtime": runtime}],
        devs,
        sim,
    )
    lat = np.concatenate([r.lat for r in res])
    t = max(r.window[1] for r in res) - min(r.window[0] for r in res)
    x = len(lat) / t
    r_mean = float(lat.mean())
    bound = nthreads * (float(lat.max()) + z) / t
    assert abs(x * (r_mean + z) - nthreads) <= bound, (x, r_mean)
    # the think time is really spent: X R alone (the mean number at the device) falls short of N
    assert nthreads - x * r_mean > 10 * bound


def test_thinktime_deterministic_cycle():
    # one thread, depth 1, service 1 ms, think 4 ms: one IO per 5 ms
    sim = new_sim()
    devs = recording_devices(sim, [1e-3])
    run_jobs({}, [{"rw": "randread", "thinktime": "4ms", "number_ios": 100}], devs, sim)
    t = np.array([ts for ts, r in devs["d0"].log])
    assert np.allclose(np.diff(t), 5e-3, rtol=0, atol=1e-12)


def test_thinktime_spin_is_part_of_the_stall():
    sim = new_sim()
    devs = recording_devices(sim, [1e-3])
    run_jobs({}, [{"rw": "randread", "thinktime": "1ms", "thinktime_spin": "3ms", "number_ios": 20}], devs, sim)
    t = np.array([ts for ts, r in devs["d0"].log])
    assert np.allclose(np.diff(t), 4e-3, rtol=0, atol=1e-12)


def test_thinktime_blocks_issue_type_batches_the_queue():
    # depth 4, a 4-server device with 1 ms service, stall 3 ms after every 4 issued IOs:
    # 4 IOs per (1 + 3) ms
    sim = new_sim()
    devs = recording_devices(sim, [1e-3], servers=4)
    run_jobs(
        AIO,
        [{"rw": "randread", "iodepth": 4, "thinktime": "3ms", "thinktime_blocks": 4,
          "thinktime_blocks_type": "issue", "number_ios": 400}],
        devs,
        sim,
    )
    t = np.array([ts for ts, r in devs["d0"].log])
    assert len(t) == 400
    batches = t.reshape(-1, 4)
    assert np.all(np.ptp(batches, axis=1) == 0)  # a batch is issued at one instant
    assert np.allclose(np.diff(batches[:, 0]), 4e-3, rtol=0, atol=1e-12)


def test_thinktime_blocks_complete_type_refills_until_the_count():
    # fio's default (complete): depth 4, thinktime_blocks=4: completions 1..3 refill the queue, the
    # 4th stalls the thread; the 3 IOs still in flight drain first. Cycle: 4 + 3 = 7 IOs, and with
    # one server at 1 ms each the 7 IOs take 7 ms, then 2 ms of think -> 7 IOs per 9 ms.
    sim = new_sim()
    devs = recording_devices(sim, [1e-3])
    run_jobs(AIO, [{"rw": "randread", "iodepth": 4, "thinktime": "2ms", "thinktime_blocks": 4,
                    "time_based": 1, "runtime": 0.9}], devs, sim)
    t = np.array([ts for ts, r in devs["d0"].log])
    n_cycles = 100
    assert abs(len(t) - 7 * n_cycles) <= 7
    gaps = np.diff(t)
    assert np.sum(np.isclose(gaps, 9e-3 - 3e-3)) >= n_cycles - 2  # each cycle starts 6 ms after its last issue


def test_thinktime_iotime_repeats_an_io_then_stall_cycle():
    # HOWTO: thinktime_iotime=9s, thinktime=1s "repeat 10-second cycle with IOs for 9 seconds and
    # stall for 1 second"; here 10 ms of IO (1 ms each, depth 1), 5 ms stall -> 10 IOs per 15 ms
    sim = new_sim()
    devs = recording_devices(sim, [1e-3])
    run_jobs({}, [{"rw": "randread", "thinktime": "5ms", "thinktime_iotime": "10ms", "number_ios": 100}], devs, sim)
    t = np.array([ts for ts, r in devs["d0"].log])
    assert np.allclose(t[10::10] - t[:-10:10], 15e-3, rtol=0, atol=1e-9)
    assert np.allclose(np.diff(t[:10]), 1e-3, rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------- startdelay
def test_startdelay_shifts_the_first_io():
    sim = new_sim()
    devs = recording_devices(sim, [1e-3, 1e-3])
    run_jobs({}, [{"name": "a", "rw": "randread", "number_ios": 5, "filename": "d0"},
                  {"name": "b", "rw": "randread", "number_ios": 5, "startdelay": "250ms", "filename": "d1"}], devs, sim)
    assert devs["d0"].log[0][0] == 0.0
    assert devs["d1"].log[0][0] == pytest.approx(0.25, abs=1e-12)


def test_startdelay_range_draws_per_thread_and_repeats():
    def firsts(seed):
        sim = new_sim(seed)
        devs = recording_devices(sim, [1e-6])
        wl, _ = run_jobs({}, [{"rw": "randread", "numjobs": 30, "number_ios": 1, "startdelay": "1-5"}], devs, sim)
        return np.array([th.start_delay for th in wl.threads]), np.array(sorted(ts for ts, _ in devs["d0"].log))

    d, t = firsts(1)
    assert np.all((d >= 1.0) & (d <= 5.0)) and len(set(d.tolist())) == 30
    assert np.allclose(np.sort(d), t, atol=1e-12)  # each thread's IO starts at its delay
    assert stats.kstest(d, "uniform", args=(1.0, 4.0)).pvalue > 1e-3
    d2, _ = firsts(99)  # randrepeat=1: the draws come from randseed, not the run seed
    assert np.array_equal(d, d2)


# ----------------------------------------------------------------------------- rate / rate_process
def test_poisson_arrivals_are_exponential():
    sim = new_sim(3)
    devs = recording_devices(sim, [1e-6], servers=64)
    run_jobs(AIO, [{"rw": "randread", "iodepth": 64, "rate_iops": 2000, "rate_process": "poisson",
                    "time_based": 1, "runtime": 5}], devs, sim)
    t = np.array([ts for ts, _ in devs["d0"].log])
    gaps = np.diff(t)
    assert abs(len(t) - 10000) <= Z * math.sqrt(10000)  # Poisson count
    assert stats.kstest(gaps, "expon", args=(0, 1 / 2000)).pvalue > 1e-3
    # and the linear process is not exponential (the test can fail)
    sim = new_sim(3)
    devs = recording_devices(sim, [1e-6], servers=64)
    run_jobs(AIO, [{"rw": "randread", "iodepth": 64, "rate_iops": 2000, "time_based": 1, "runtime": 1}], devs, sim)
    lin = np.diff([ts for ts, _ in devs["d0"].log])
    assert stats.kstest(lin, "expon", args=(0, 1 / 2000)).pvalue < 1e-6


def test_rate_in_bytes_paces_by_the_bytes_issued():
    # fio's usec_for_io: with rate= (bytes/s) the next IO is due when the bytes issued so far are
    sim = new_sim(4)
    devs = recording_devices(sim, [1e-6], servers=16)
    bps = 4 * 2**20
    run_jobs(AIO, [{"rw": "randwrite", "iodepth": 16, "rate": "4m", "bssplit": "4k/50:64k/50",
                    "number_ios": 500}], devs, sim)
    log = devs["d0"].log
    t = np.array([ts for ts, _ in log])
    sizes = np.array([r.size for _, r in log])
    assert np.allclose(np.diff(t), sizes[:-1] / bps, rtol=0, atol=1e-9)
    # poisson with rate=: IOPS = rate / smallest block size (fio)
    (j,) = resolve_jobs({}, [{"rate": "4m", "bssplit": "4k/50:64k/50", "rate_process": "poisson"}])
    assert j.open_loop_iops[0] == pytest.approx(1024.0)


def test_rate_iops_with_bssplit_keeps_fixed_gaps_and_with_bsrange_paces_bytes():
    sim = new_sim(4)
    devs = recording_devices(sim, [1e-6], servers=16)
    run_jobs(AIO, [{"rw": "randread", "iodepth": 16, "rate_iops": 1000, "bssplit": "4k/50:64k/50",
                    "number_ios": 200}], devs, sim)
    t = np.array([ts for ts, _ in devs["d0"].log])
    assert np.allclose(np.diff(t), 1e-3, rtol=0, atol=1e-9)
    sim = new_sim(4)
    devs = recording_devices(sim, [1e-6], servers=16)
    run_jobs(AIO, [{"rw": "randread", "iodepth": 16, "rate_iops": 1000, "bsrange": "4k-16k",
                    "number_ios": 200}], devs, sim)
    log = devs["d0"].log
    t = np.array([ts for ts, _ in log])
    sizes = np.array([r.size for _, r in log])
    assert np.allclose(np.diff(t), sizes[:-1] / (1000 * 4 * KB), rtol=0, atol=1e-9)


# ----------------------------------------------------------------------------- zoned distributions, io_size, targets
@pytest.mark.parametrize(
    "dist, zones",
    [
        ("zoned:60/10:30/20:8/30:2/40", [(0.60, 0.0, 0.1), (0.30, 0.1, 0.3), (0.08, 0.3, 0.6), (0.02, 0.6, 1.0)]),
        ("zoned_abs:60/16m:30/32m:10/16m", [(0.60, 0.0, 0.25), (0.30, 0.25, 0.75), (0.10, 0.75, 1.0)]),
    ],
)
def test_zoned_shares_within_binomial_bounds(dist, zones):
    sim = new_sim(9)
    devs = recording_devices(sim, [1e-5], capacity="64MiB")
    n = 20000
    run_jobs(AIO, [{"rw": "randread", "iodepth": 4, "number_ios": n, "loops": 2, "random_distribution": dist}],
             devs, sim)
    assert len(devs["d0"].log) == n
    frac = np.array([r.offset for r in data_log(devs["d0"])]) / (64 * 2**20)
    for p, lo, hi in zones:
        c = int(((frac >= lo) & (frac < hi)).sum())
        assert binomial_ok(c, n, p), (lo, hi, c)


def test_io_size_transfers_more_than_the_region():
    # HOWTO io_size: size=20GiB, io_size=40GiB -> 40 GiB of IO within 0..20 GiB (here MiB)
    sim = new_sim()
    devs = recording_devices(sim, [1e-5], capacity="1GiB")
    run_jobs(AIO, [{"rw": "randread", "size": "2m", "io_size": "4m"}], devs, sim)
    reqs = data_log(devs["d0"])
    assert len(reqs) == 1024 and max(r.offset for r in reqs) < 2 * 2**20


def test_per_job_targets_each_job_its_own_devices():
    sim = new_sim()
    devs = recording_devices(sim, [1e-4, 2e-4, 3e-4])
    _, res = run_jobs(
        AIO,
        [{"name": "a", "rw": "randread", "number_ios": 300, "filename": "d0"},
         {"name": "b", "rw": "randwrite", "number_ios": 200, "filename": "d1:d2", "bs": "8k"}],
        devs,
        sim,
    )
    assert {r.op for r in data_log(devs["d0"])} == {Op.READ} and len(devs["d0"].log) == 300
    assert len(devs["d1"].log) == len(devs["d2"].log) == 100
    assert {r.size for r in data_log(devs["d1"])} == {8 * KB}
    assert [r.n for r in res] == [300, 200]


def test_zoned_per_direction_tables():
    # HOWTO: "it's possible to specify separate zones for reads, writes, and trims"
    sim = new_sim(10)
    devs = recording_devices(sim, [1e-5], capacity="64MiB")
    n = 20000
    run_jobs(AIO, [{"rw": "randrw", "iodepth": 4, "number_ios": n, "loops": 2,
                    "random_distribution": "zoned:90/10:10/90,10/10:90/90"}], devs, sim)
    log = data_log(devs["d0"])
    for op, p in ((Op.READ, 0.9), (Op.WRITE, 0.1)):
        offs = np.array([r.offset for r in log if r.op == op]) / (64 * 2**20)
        assert binomial_ok(int((offs < 0.1).sum()), len(offs), p), (op, float((offs < 0.1).mean()))
    # an empty part leaves that direction uniformly random
    sim = new_sim(10)
    devs = recording_devices(sim, [1e-5], capacity="64MiB")
    run_jobs(AIO, [{"rw": "randrw", "number_ios": n, "loops": 2, "random_distribution": "zoned:90/10:10/90,"}],
             devs, sim)
    w = np.array([r.offset for r in data_log(devs["d0"]) if r.op == Op.WRITE]) / (64 * 2**20)
    assert binomial_ok(int((w < 0.1).sum()), len(w), 0.1)
