"""Reading fio output: the croit fio 3.12 JSON files (reference data, read in place), hand-written
fio 2.x JSON / json+ fixtures and fio text output, and the errors for things that are not fio output.

The 2.x and text fixtures are written by hand after fio's output code (stat.c of fio 2.2 / 3.12);
their numbers are the croit read-mach2-16 run where possible so the formats can be cross-checked.
"""

from __future__ import annotations

import glob
import json
import os

import pytest

from simulator.errors import ConfigError
from simulator.fio import job_options_of, read_fio
from simulator.fio.reader import plat_idx_to_val
from simulator.metrics.stats import DDIR_NAMES, percentile_key

CROIT = "data/croit-mach2"


def _croit_files(shared_dir):
    files = sorted(glob.glob(os.path.join(shared_dir, CROIT, "*.json")))
    assert len(files) == 20
    return files


def test_read_mach2_16_values(shared_dir):
    run = read_fio(os.path.join(shared_dir, CROIT, "read-mach2-16.json"))
    assert run.fio_version == "fio-3.12"
    assert run.time == "Mon Jan  6 00:14:25 2020"
    assert run.timestamp == 1578269665
    assert len(run.jobs) == 1
    job = run.jobs[0]
    r = job.read
    assert r.iops == 1647.708877
    assert r.total_ios == 1482966
    assert r.io_bytes == 6074228736
    assert r.runtime_s == 900.017
    assert r.bw_bytes == 6749015
    assert r.clat.percentiles["50.000000"] == 5931008
    assert r.clat.percentile_ns(99.99) == 417333248
    assert r.clat.mean_ns == 9698450.680321
    assert r.slat.min_ns == 816 and r.lat.max_ns == 582832720
    assert r.iops_samples.samples == 1800 and r.bw_samples.max == 18736
    assert not job.write.present and not job.trim.present
    assert job.latency_buckets["latency_ms"]["10"] == 21.104260
    assert job.extra["usr_cpu"] == 2.844505
    assert job.job_runtime_s == 900.016
    opts = job_options_of(run)
    assert opts["rw"] == "randread" and opts["iodepth"] == "16" and opts["bs"] == "4k"
    assert opts["ioengine"] == "rbd" and opts["name"] == "test"


def test_every_croit_file_reads_back_its_numbers(shared_dir):
    for path in _croit_files(shared_dir):
        with open(path) as f:
            raw = json.load(f)
        run = read_fio(path)
        job, rj = run.jobs[0], raw["jobs"][0]
        assert job.name == rj["jobname"]
        for ddir, name in enumerate(DDIR_NAMES):
            d, rd = job.dir(ddir), rj[name]
            assert d.total_ios == rd["total_ios"], path
            assert d.present == (rd["total_ios"] > 0)
            if not d.present:
                continue
            assert d.iops == rd["iops"]
            assert d.io_bytes == rd["io_bytes"]
            assert d.bw_bytes == rd["bw_bytes"]
            for k, v in rd["clat_ns"]["percentile"].items():
                assert d.clat.percentiles[percentile_key(float(k))] == v
            for kind in ("slat", "clat", "lat"):
                src = rd[f"{kind}_ns"]
                ls = d.latency(kind)
                assert (ls.min_ns, ls.max_ns, ls.mean_ns, ls.stddev_ns) == (
                    src["min"],
                    src["max"],
                    src["mean"],
                    src["stddev"],
                )
        assert job_options_of(run)["rw"] in ("randread", "randwrite")


FIO2_JSON = {
    "fio version": "fio-2.2.10",
    "jobs": [
        {
            "jobname": "randread",
            "groupid": 0,
            "error": 0,
            "eta": 0,
            "elapsed": 11,
            "read": {
                "io_bytes": 1048576,
                "bw": 104857,
                "iops": 26214.4,
                "runtime": 10000,
                "total_ios": 262144,
                "short_ios": 0,
                "drop_ios": 0,
                "slat": {"min": 1, "max": 50, "mean": 2.5, "stddev": 0.8},
                "clat": {
                    "min": 100,
                    "max": 5000,
                    "mean": 1217.71,
                    "stddev": 300.12,
                    "percentile": {
                        "1.000000": 700,
                        "50.000000": 1208,
                        "99.000000": 2192,
                        "99.990000": 4512,
                        "0.00": 0,
                    },
                },
                "lat": {"min": 102, "max": 5002, "mean": 1220.21, "stddev": 300.13},
                "bw_min": 100000,
                "bw_max": 110000,
                "bw_agg": 100.0,
                "bw_mean": 104800.0,
                "bw_dev": 2000.0,
            },
            "write": {
                "io_bytes": 0,
                "bw": 0,
                "iops": 0.0,
                "runtime": 0,
                "slat": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0},
                "clat": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "percentile": {"1.000000": 0}},
                "lat": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0},
            },
            "usr_cpu": 5.0,
            "sys_cpu": 20.0,
            "latency_us": {"250": 0.01, "500": 0.1, "750": 1.0, "1000": 20.0},
            "latency_ms": {"2": 75.0, "4": 3.89, "10": 0.01},
        }
    ],
    "disk_util": [{"name": "vdb", "util": 99.5}],
}


def test_fio2_json_units(tmp_path):
    p = tmp_path / "fio2.json"
    p.write_text(json.dumps(FIO2_JSON, indent=2))
    run = read_fio(p)
    assert run.version_tuple == (2, 2)
    r = run.jobs[0].read
    assert r.io_bytes == 1048576 * 1024  # fio 2.x io_bytes is KiB
    assert r.bw_bytes == 104857 * 1024
    assert r.total_ios == 262144 and r.runtime_s == 10.0
    assert r.clat.mean_ns == pytest.approx(1217710.0)  # usec -> ns
    assert r.clat.percentiles == {
        "1.000000": 700000,
        "50.000000": 1208000,
        "99.000000": 2192000,
        "99.990000": 4512000,
    }  # the "0.00" filler slot is dropped
    assert r.slat.max_ns == 50000
    assert r.bw_samples.max == 110000 and r.bw_samples.samples == 0
    assert not run.jobs[0].write.present
    assert run.disk_util[0]["name"] == "vdb"
    assert run.jobs[0].latency_buckets["latency_ms"]["2"] == 75.0


def test_fio2_json_without_total_ios_derives_it(tmp_path):
    doc = json.loads(json.dumps(FIO2_JSON))
    del doc["jobs"][0]["read"]["total_ios"]
    p = tmp_path / "old.json"
    p.write_text(json.dumps(doc))
    assert read_fio(p).jobs[0].read.total_ios == 262144


def test_fio2_jsonplus_index_bins(tmp_path):
    doc = json.loads(json.dumps(FIO2_JSON))
    bins = {"FIO_IO_U_PLAT_BITS": 6, "FIO_IO_U_PLAT_VAL": 64, "FIO_IO_U_PLAT_NR": 1216}
    # fio 2.x keys bins by histogram index: idx < 128 is the value itself (usec), above that
    # groups of 64 buckets per power of two, value = bucket midpoint
    bins.update({"100": 3, "700": 5, "0": 0})
    doc["jobs"][0]["read"]["clat"]["bins"] = bins
    p = tmp_path / "plus2.json"
    p.write_text(json.dumps(doc))
    h = read_fio(p).jobs[0].read.clat.hist
    assert h.total_count == 8
    assert plat_idx_to_val(100) == 100.0
    v700 = plat_idx_to_val(700)  # group (700>>6)-1 = 9: base 2^15, width 2^9
    assert v700 == 2**15 + (700 % 64 + 0.5) * 2**9
    assert h.value_at_percentile(100) == pytest.approx(v700 * 1000, rel=1e-3)
    assert h.value_at_percentile(30) == pytest.approx(100_000, rel=1e-3)


def test_fio3_jsonplus_value_bins_and_leading_warnings(fixtures_dir, tmp_path):
    doc = json.loads((fixtures_dir / "fio" / "sim-randread-qd16.json").read_text())
    iops = doc["jobs"][0]["read"]["iops"]
    assert 100 < iops < 400  # the fixture's own figure (a 7.2K HDD, 4 KiB random reads at QD16), read back below
    doc["jobs"][0]["read"]["clat_ns"]["bins"] = {"473088": 10, "5931008": 30, "417333248": 1}
    p = tmp_path / "plus3.json"
    p.write_text(
        "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1\n"
        + json.dumps(doc, indent=1)
        + "\nfio: some trailing remark\n"
    )
    run = read_fio(p)
    h = run.jobs[0].read.clat.hist
    assert h.total_count == 41
    assert h.value_at_percentile(50) == pytest.approx(5931008, rel=1e-3)
    assert run.jobs[0].read.iops == iops


def test_multiple_jobs_client_stats_and_merge(fixtures_dir, tmp_path):
    a = json.loads((fixtures_dir / "fio" / "sim-randread-qd16.json").read_text())["jobs"][0]
    b = json.loads((fixtures_dir / "fio" / "sim-randwrite-qd16.json").read_text())["jobs"][0]
    assert a["read"]["total_ios"] == b["write"]["total_ios"] == 3000 and a["write"]["total_ios"] == 0
    b["jobname"] = "w"
    doc = {"fio version": "fio-3.12", "client_stats": [a, b, dict(a, jobname="All clients")]}
    p = tmp_path / "clients.json"
    p.write_text(json.dumps(doc))
    run = read_fio(p)
    assert [j.name for j in run.jobs] == ["test", "w"]
    m = run.merged()
    assert m.read.total_ios == a["read"]["total_ios"]
    assert m.write.total_ios == b["write"]["total_ios"]
    assert run.job("w").write.iops == b["write"]["iops"]
    with pytest.raises(ConfigError):
        run.job("nope")


FIO3_TEXT = """\
test: (g=0): rw=randread, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=rbd, iodepth=16
fio-3.12
Starting 1 process

test: (groupid=0, jobs=1): err= 0: pid=4038: Mon Jan  6 00:14:25 2020
  read: IOPS=1647, BW=6590KiB/s (6749kB/s)(5793MiB/900017msec)
    slat (nsec): min=816, max=1345k, avg=8661.00, stdev=4645.94
    clat (usec): min=273, max=582822, avg=9698.45, stdev=16692.13
     lat (usec): min=277, max=582832, avg=9707.11, stdev=16692.23
    clat percentiles (usec):
     |  1.00th=[   474],  5.00th=[   553], 10.00th=[   603], 20.00th=[   676],
     | 30.00th=[   742], 40.00th=[   832], 50.00th=[  5932], 60.00th=[  8586],
     | 70.00th=[ 11076], 80.00th=[ 14746], 90.00th=[ 22676], 95.00th=[ 32900],
     | 99.00th=[ 69731], 99.50th=[ 91751], 99.90th=[177210], 99.95th=[299893],
     | 99.99th=[417334]
   bw (  KiB/s): min= 1304, max=18736, per=100.00%, avg=6590.31, stdev=2821.70, samples=1800
   iops        : min=  326, max= 4684, avg=1647.56, stdev=705.43, samples=1800
  lat (usec)   : 500=1.87%, 750=29.58%, 1000=11.60%
  lat (msec)   : 2=0.39%, 4=1.08%, 10=21.10%, 20=22.01%, 50=10.23%
  lat (msec)   : 100=1.73%, 250=0.32%, 500=0.07%, 750=0.01%
  cpu          : usr=2.84%, sys=1.42%, ctx=1396251, majf=0, minf=9130
  IO depths    : 1=0.1%, 2=0.1%, 4=0.1%, 8=0.1%, 16=100.0%, 32=0.0%, >=64=0.0%
     submit    : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%
     complete  : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.1%, 32=0.0%, 64=0.0%, >=64=0.0%
     issued rwts: total=1482966,0,0,0 short=0,0,0,0 dropped=0,0,0,0
     latency   : target=0, window=0, percentile=100.00%, depth=16

Run status group 0 (all jobs):
   READ: bw=6590KiB/s (6749kB/s), 6590KiB/s-6590KiB/s (6749kB/s-6749kB/s), io=5793MiB (6074MB), run=900017-900017msec
"""


def test_fio3_text_output(tmp_path):
    p = tmp_path / "out.txt"
    p.write_text(FIO3_TEXT)
    run = read_fio(p)
    assert run.source_format == "text" and run.fio_version == "fio-3.12"
    job = run.jobs[0]
    assert job.name == "test" and job.jobs == 1
    assert run.time == "Mon Jan  6 00:14:25 2020"
    r = job.read
    assert r.total_ios == 1482966 and r.runtime_s == 900.017
    assert r.iops == pytest.approx(1647.708877, rel=1e-9)  # from issued total / runtime
    assert r.io_bytes == 1482966 * 4096  # fixed bs from the header line
    assert r.bw_bytes == pytest.approx(6749015, rel=1e-6)
    assert r.slat.max_ns == 1345000 and r.slat.mean_ns == pytest.approx(8661.0)
    assert r.clat.min_ns == 273000 and r.clat.mean_ns == pytest.approx(9698450.0)
    assert r.lat.stddev_ns == pytest.approx(16692230.0)
    assert r.clat.percentiles["50.000000"] == 5932000
    assert r.clat.percentiles["99.990000"] == 417334000
    assert len(r.clat.percentiles) == 17
    assert r.iops_samples.max == 4684 and r.bw_samples.samples == 1800
    assert job.latency_buckets["latency_us"]["750"] == 29.58
    assert job.latency_buckets["latency_ms"]["10"] == 21.10
    assert job.latency_buckets["latency_ms"][">=2000"] == 0.0
    assert job.extra["ctx"] == 1396251 and job.extra["iodepth_level"]["16"] == 100.0
    assert not job.write.present
    opts = job_options_of(run)
    assert opts == {"rw": "randread", "ioengine": "rbd", "iodepth": "16", "bs": "4096"}


FIO2_TEXT = """\
seqwrite: (g=0): rw=write, bs=64K-64K/64K-64K/64K-64K, ioengine=libaio, iodepth=8
fio-2.2.10
Starting 1 process

seqwrite: (groupid=0, jobs=2): err= 0: pid=1234: Tue Jan  5 12:00:00 2016
  write: io=2048.0MB, bw=209715KB/s, iops=3276, runt= 10000msec
    slat (usec): min=3, max=120, avg= 6.10, stdev= 2.00
    clat (msec): min=1, max=40, avg= 2.44, stdev= 1.10
     lat (msec): min=1, max=40, avg= 2.45, stdev= 1.10
    clat percentiles (usec):
     |  1.00th=[ 1400],  5.00th=[ 1600], 10.00th=[ 1704], 20.00th=[ 1896],
     | 50.00th=[ 2256], 99.00th=[ 7008], 99.99th=[38144]
    bw (KB  /s): min=95000, max=115000, per=50.00%, avg=104857.50, stdev=3000.00
    lat (msec) : 2=30.00%, 4=65.00%, 10=4.99%, 50=0.01%
  cpu          : usr=3.00%, sys=9.00%, ctx=40000, majf=0, minf=30
  IO depths    : 1=0.1%, 2=0.1%, 4=0.1%, 8=100.0%, 16=0.0%, 32=0.0%, >=64=0.0%
     issued    : total=r=0/w=32768/d=0, short=r=0/w=0/d=0, drop=r=0/w=0/d=0
     latency   : target=0, window=0, percentile=100.00%, depth=8

Run status group 0 (all jobs):
  WRITE: io=2048.0MB, aggrb=209715KB/s, minb=209715KB/s, maxb=209715KB/s, mint=10000msec, maxt=10000msec
"""


def test_fio2_text_output(tmp_path):
    p = tmp_path / "out2.log"
    p.write_text(FIO2_TEXT)
    run = read_fio(p)
    job = run.jobs[0]
    assert run.version_tuple == (2, 2)
    assert job.jobs == 2
    w = job.write
    assert w.total_ios == 32768 and w.runtime_s == 10.0
    assert w.iops == pytest.approx(3276.8)
    assert w.io_bytes == 32768 * 65536
    assert w.clat.mean_ns == pytest.approx(2.44e6)
    assert w.clat.percentiles["99.000000"] == 7008000
    assert w.bw_samples.max == 115000  # KB/s in fio 2 = KiB/s
    assert job.latency_buckets["latency_ms"]["4"] == 65.0
    assert job_options_of(run)["bs"] == "65536"
    assert not job.read.present


def test_text_with_fsync_section(tmp_path):
    text = FIO3_TEXT.replace(
        "  lat (usec)   : 500=1.87%",
        "  fsync/fdatasync/sync_file_range:\n"
        "    sync (usec): min=120, max=9000, avg=800.50, stdev=100.25\n"
        "    sync percentiles (usec):\n"
        "     |  1.00th=[  130],  5.00th=[  140], 50.00th=[  700], 99.00th=[ 5000]\n"
        "  lat (usec)   : 500=1.87%",
    ).replace("total=1482966,0,0,0", "total=1482966,0,0,777")
    p = tmp_path / "sync.txt"
    p.write_text(text)
    job = read_fio(p).jobs[0]
    assert job.sync.n == 777
    assert job.sync.mean_ns == pytest.approx(800500.0)
    assert job.sync.percentiles["99.000000"] == 5000000
    assert job.read.clat.percentiles["50.000000"] == 5932000  # sync did not overwrite clat


@pytest.mark.parametrize(
    "content",
    [
        "hello world\nthis is not fio\n",
        "\x00\x01\x02binary",
        "{not json at all",
        '{"some": "json", "but": ["not", "fio"]}',
        "[1, 2, 3]",
        '{"jobs": "nope"}',
    ],
)
def test_garbage_is_config_error_naming_the_file(tmp_path, content):
    p = tmp_path / "garbage.json"
    p.write_text(content)
    with pytest.raises(ConfigError) as e:
        read_fio(p)
    assert str(p) in str(e.value)
    assert e.value.source == str(p)


def test_missing_empty_and_directory(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        read_fio(tmp_path / "nope.json")
    (tmp_path / "empty.json").write_text("  \n")
    with pytest.raises(ConfigError, match="empty"):
        read_fio(tmp_path / "empty.json")
    with pytest.raises(ConfigError, match="directory"):
        read_fio(tmp_path)


def test_bad_job_entry_names_field(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps({"fio version": "fio-3.12", "jobs": [42]}))
    with pytest.raises(ConfigError) as e:
        read_fio(p)
    assert e.value.field == "jobs.0"


def test_odd_fields_are_tolerated(tmp_path):
    doc = {
        "fio version": "fio-3.30",
        "jobs": [
            {
                "jobname": "x",
                "read": {
                    "iops": "12.5",
                    "runtime": 2000,
                    "total_ios": 25,
                    "io_bytes": None,
                    "clat_ns": {"min": 1, "max": "bad", "mean": 5.0, "percentile": {"abc": 1, "50.0": 7}},
                    "lat_ns": [],
                },
                "write": "garbage",
            }
        ],
    }
    p = tmp_path / "odd.json"
    p.write_text(json.dumps(doc))
    job = read_fio(p).jobs[0]
    assert job.read.iops == 12.5 and job.read.total_ios == 25
    assert job.read.clat.max_ns == 0 and job.read.clat.percentiles == {"50.000000": 7}
    assert job.read.lat.n == 0 and not job.write.present


def test_unified_rw_reporting_mixed_section(fixtures_dir, tmp_path):
    doc = json.loads((fixtures_dir / "fio" / "sim-randread-qd16.json").read_text())
    job = doc["jobs"][0]
    iops = job["read"]["iops"]
    job["mixed"] = job.pop("read")
    del job["write"], job["trim"]
    p = tmp_path / "mixed.json"
    p.write_text(json.dumps(doc))
    j = read_fio(p).jobs[0]
    assert j.read.iops == iops and j.extra["unified_rw_reporting"] is True
    assert "mixed" not in j.extra
    text = FIO3_TEXT.replace("  read: IOPS=", "  mixed: IOPS=")
    (tmp_path / "mixed.txt").write_text(text)
    assert read_fio(tmp_path / "mixed.txt").jobs[0].read.total_ios == 1482966
