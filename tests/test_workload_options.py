"""fio options and job files: spellings, inheritance, validation, error messages."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulator.errors import ConfigError
from simulator.workloads.jobfile import load_jobfile, parse_jobfile, parse_jobfile_text
from simulator.workloads.options import FIO_RANDSEED, FioJob, parse_random_distribution, resolve_jobs

JOBFILE = """\
; fio job file in the style of the Nutanix post
[global]
ioengine=libaio
direct=1
time_based
runtime=15m          ; fifteen minutes
bs=8k
group_reporting

# one job per working-set size
[ws-1g]
rw=randread
size=1g
iodepth = 1
filename=/dev/sdb

[ws-100g]
stonewall
rw=randread
size=100g
filename=/dev/sdb:/dev/sdc
"""


def test_jobfile_parse_and_inherit(tmp_path):
    p = tmp_path / "ws.fio"
    p.write_text(JOBFILE)
    g, jobs = parse_jobfile(p)
    assert g["ioengine"] == "libaio" and g["time_based"] is None
    assert [j.section for j in jobs] == ["ws-1g", "ws-100g"]
    fj = load_jobfile(p)
    a, b = fj
    assert a.name == "ws-1g" and b.name == "ws-100g"
    assert a.runtime == 900.0 and a.time_based and a.direct and a.group_reporting
    assert a.bs == (8192, 8192, 8192) and a.size == 1024**3
    assert b.size == 100 * 1024**3 and b.filenames == ["/dev/sdb", "/dev/sdc"] and b.stonewall
    assert a.iodepth == 1 and a.effective_iodepth == 1
    # effective options: global + job, as written (fio's "job options"), without the name
    opts = a.fio_options()
    assert opts["bs"] == "8k" and opts["runtime"] == "15m" and opts["time_based"] == "1"
    assert opts["rw"] == "randread" and "name" not in opts
    # they rebuild the same job
    again = resolve_jobs({}, [{**opts, "name": a.name}])[0]
    assert again.model_dump() == a.model_dump()


def test_later_global_applies_to_following_jobs_only():
    g, jobs = parse_jobfile_text("[global]\nbs=4k\n[a]\n[global]\nbs=64k\niodepth=8\n[b]\niodepth=2\n")
    a, b = resolve_jobs(g, jobs, "f.fio")
    assert a.bs[0] == 4096 and a.iodepth == 1
    assert b.bs[0] == 65536 and b.iodepth == 2


def test_bs_comma_forms():
    def bs(v):
        return FioJob(bs=v).bs

    assert bs("4k") == (4096, 4096, 4096)
    assert bs("8k,32k") == (8192, 32768, 32768)
    assert bs("8k,32k,") == (8192, 32768, 4096)
    assert bs(",8k") == (4096, 8192, 8192)
    assert bs(",8k,") == (4096, 8192, 4096)
    assert bs(4096) == (4096, 4096, 4096)


def test_spellings():
    j = resolve_jobs(
        {"readwrite": "randrw", "blocksize": "16k", "timeout": "1h", "rwmixwrite": 30},
        [{"name": "x", "time_based": "true", "sync": "dsync", "number_ios": "1k"}],
    )[0]
    assert j.rw == "randrw" and j.bs[0] == 16384 and j.runtime == 3600.0
    assert j.rwmixread == 70 and j.rwmixwrite == 30 and j.sync and j.number_ios == 1024
    assert j.seed == FIO_RANDSEED and j.repeatable
    assert FioJob(randrepeat=0).repeatable is False
    assert FioJob(randrepeat=0, randseed=5).repeatable is True  # fio: a randseed fixes the seeds


def test_engines():
    assert FioJob(ioengine="psync", iodepth=32).effective_iodepth == 1
    assert FioJob(ioengine="libaio", iodepth=32).effective_iodepth == 32
    assert FioJob().ioengine == "psync"  # fio's default on Linux
    assert FioJob(ioengine="libaio").slat == pytest.approx(2e-6)
    assert FioJob(ioengine="libaio", sim_slat="10us").slat == pytest.approx(1e-5)
    assert FioJob(ioengine="psync").slat == 0.0
    j = FioJob(ioengine="rbd", pool="rbd", rbdname="img")
    assert j.clientname == "admin"


@pytest.mark.parametrize(
    "opts, field, words",
    [
        ({"iodepth": 0}, "jobs.0.iodepth", "greater than or equal to 1"),
        ({"numjobs": "0"}, "jobs.0.numjobs", "greater than or equal to 1"),
        ({"bs": "0"}, "jobs.0.bs", "> 0"),
        ({"rwmixread": 101}, "jobs.0.rwmixread", "less than or equal to 100"),
        ({"rwmixread": 40, "rwmixwrite": 40}, "jobs.0.rwmixread", "add up to 100"),
        ({"iodpeth": 4}, "jobs.0.iodpeth", "did you mean 'iodepth'"),
        ({"bssplit": "4k/60:8k/50"}, "jobs.0.bssplit", "more than 100%"),
        ({"bssplit": "4k/50::8k/50"}, "jobs.0.bssplit", "entry 2 has no block size"),
        ({"bssplit": "4k/5x"}, "jobs.0.bssplit", "integer 0..100"),
        ({"bssplit": "4k/50,8k/110"}, "jobs.0.bssplit", "write part: the percentage of entry 1 is more than 100"),
        ({"bssplit": "4k,8k", "bsrange": "4k-8k", "rw": "randrw"}, "jobs.0.bsrange", "keep one"),
        ({"bsrange": "4k-8k-16k"}, "jobs.0.bsrange", "range lo-hi"),
        ({"bsrange": "0-8k"}, "jobs.0.bsrange", "> 0"),
        ({"rate": "1m", "rate_iops": 100}, "jobs.0.rate", "mutually exclusive"),
        ({"rate": "1m,", "rw": "randrw"}, "jobs.0.rate", "every direction"),
        ({"thinktime": "-5"}, "jobs.0.thinktime", "cannot read"),
        ({"thinktime": "2h"}, "jobs.0.thinktime", "less than or equal to 3600"),
        ({"thinktime_blocks": 0}, "jobs.0.thinktime_blocks", "greater than or equal to 1"),
        ({"thinktime_blocks_type": "issued"}, "jobs.0.thinktime_blocks_type", "complete"),
        ({"startdelay": "5-x"}, "jobs.0.startdelay", "cannot read"),
        ({"startdelay": "1-2-3"}, "jobs.0.startdelay", "range lo-hi"),
        ({"blockalign": "0"}, "jobs.0.blockalign", "> 0"),
        ({"thinkcycles": 10}, "jobs.0.thinkcycles", "not supported"),
        ({"rw": "randomread"}, "jobs.0.rw", "unknown rw"),
        ({"time_based": 1}, "jobs.0.runtime", "needs a runtime"),
        ({"ioengine": "rbd", "pool": "p"}, "jobs.0.rbdname", "pool and rbdname"),
        ({"ioengine": "spdk"}, "jobs.0.ioengine", "unknown ioengine"),
        ({"random_distribution": "zipf:1.0"}, "jobs.0.random_distribution", "different from 1.0"),
        ({"random_distribution": "zoned:50/10:40/20"}, "jobs.0.random_distribution", "add up to 100"),
        ({"random_distribution": "pareto:1.5"}, "jobs.0.random_distribution", "(0, 1)"),
        ({"runtime": "ten"}, "jobs.0.runtime", "cannot read"),
        ({"randseed": None}, "jobs.0.randseed", "needs a value"),
        ({"rate_iops": "100,", "rw": "randrw"}, "jobs.0.rate_iops", "every direction"),
        ({"file_service_type": "zipf:1.2"}, "jobs.0.file_service_type", "not supported"),
        ({"bs": "4k-16k"}, "jobs.0.bs", "belongs in bsrange"),
        ({"bs": "4k/50:8k/50"}, "jobs.0.bs", "belong in bssplit"),
    ],
)
def test_bad_options_name_file_and_field(opts, field, words):
    with pytest.raises(ConfigError) as ei:
        resolve_jobs({}, [opts], "exp.yaml")
    e = ei.value
    assert e.source == "exp.yaml"
    assert e.field == field, str(e)
    assert words in e.message, str(e)


def test_bad_global_option_is_named_in_global():
    with pytest.raises(ConfigError) as ei:
        resolve_jobs({"nosuchoption": 1}, [{}], "exp.yaml", prefix="workload.")
    assert ei.value.field == "workload.global.nosuchoption"


def test_ignored_options_are_accepted_and_reported():
    j = resolve_jobs({"thread": None, "output-format": "json", "gtod_reduce": 1}, [{"invalidate": 1}])[0]
    assert j.fio_options()["output-format"] == "json" and j.fio_options()["thread"] == "1"


def test_jobfile_option_errors_name_section_and_line(tmp_path):
    p = tmp_path / "bad.fio"
    p.write_text("[global]\nioengine=libaio\n\n[seq]\nrw=read\niodepth=0\n")
    with pytest.raises(ConfigError) as ei:
        load_jobfile(p)
    assert ei.value.source == str(p)
    assert ei.value.field == "[seq] iodepth (line 6)"
    p.write_text("[global]\nfrobnicate=3\n[seq]\n")
    with pytest.raises(ConfigError) as ei:
        load_jobfile(p)
    assert ei.value.field == "[global] frobnicate (line 2)" and "unknown fio option" in ei.value.message


@pytest.mark.parametrize(
    "text, line, words",
    [
        ("rw=read\n[a]\n", "line 1", "outside of a [section]"),
        ("[global]\n[a\nrw=read\n", "line 2", "malformed section header"),
        ("[a]\nrw read\n", "line 2", "malformed line"),
        ("[a]\n=4k\n", "line 2", "malformed line"),
        ("[a]\ninclude other.fio\n", "line 2", "include"),
        ("[a]\nfilename=${DEV}\n", "line 2", "environment variable"),
        ("[global]\nbs=4k\n", None, "no job sections"),
        ("[]\n", "line 1", "malformed section header"),
    ],
)
def test_malformed_jobfile(tmp_path, text, line, words):
    p = tmp_path / "m.fio"
    p.write_text(text)
    with pytest.raises(ConfigError) as ei:
        parse_jobfile(p)
    assert ei.value.source == str(p)
    assert ei.value.field == line
    assert words in ei.value.message


def test_missing_jobfile(tmp_path):
    with pytest.raises(ConfigError) as ei:
        parse_jobfile(tmp_path / "nope.fio")
    assert "not found" in ei.value.message


def test_random_distribution_parse():
    assert parse_random_distribution("zipf:1.2") == ("zipf", 1.2, -1.0)
    assert parse_random_distribution("pareto:0.9:0.25") == ("pareto", 0.9, 0.25)
    assert parse_random_distribution("normal:10") == ("normal", 10.0, -1.0)
    assert parse_random_distribution("gauss") == ("normal", 0.0, -1.0)
    assert parse_random_distribution("zoned:60/10:30/20:8/30:2/40") == (
        "zoned",
        ((60, 10), (30, 20), (8, 30), (2, 40)),
    )
    assert parse_random_distribution("zoned_abs:60/1g:40/4g") == (
        "zoned_abs",
        ((60, 1024**3), (40, 4 * 1024**3)),
    )


@given(st.integers(1, 1 << 20), st.integers(1, 1 << 20))
def test_bs_pair_roundtrip(r, w):
    j = FioJob(bs=f"{r},{w}")
    assert j.bs == (r, w, w)
    assert FioJob(bs=j.fio_options()["bs"]).bs == j.bs
