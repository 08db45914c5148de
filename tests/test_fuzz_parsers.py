"""Property-based fuzzing of every parser and loader: whatever the input, the only exception that
may leave is the project's own (:class:`simulator.errors.SimError`), and an accepted input yields
finite numbers within the documented limits.

Parsers covered: the unit types (through a ConfigModel), the safe YAML loader, ``--set`` parsing,
fio option values, fio job files, experiment files, profiles (with ``extends``), calibration specs,
the fio JSON reader and the fio text reader.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.config.base import ConfigModel, set_dotted, validate
from simulator.errors import SimError
from simulator.units import (
    MAX_BYTES,
    MAX_BYTES_PER_SECOND,
    MAX_RPM,
    MAX_SECONDS,
    RPM,
    Bytes,
    BytesPerSecond,
    Seconds,
)

FUZZ = settings(max_examples=int(__import__("os").environ.get("SIMRUN_FUZZ_EXAMPLES", "60")), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# ----------------------------------------------------------------------------- value strategies
NUMBERS = st.one_of(
    st.integers(min_value=-(10**320), max_value=10**320),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e300, -1e300, 2**64, 2**64 + 1, 10**310, 0, -1, 1]),
)
NUMERAL_TEXT = st.builds(
    lambda n, u: f"{n}{u}",
    st.one_of(
        st.sampled_from(["1e400", "nan", "inf", "-inf", "1" * 310, "0", "-1", ".5", "1e-400", "1e18", "4", "1.5e3", "9" * 41]),
        st.integers(min_value=-(10**30), max_value=10**30).map(str),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
    ),
    st.sampled_from(["", "k", "KiB", "MB", "TB", "s", "ms", "us", "m", "h", "rpm", "rps", "MB/s", "Gbit/s", "%", "x", " k"]),
)
VALUES = st.one_of(NUMBERS, NUMERAL_TEXT, st.text(max_size=30), st.booleans(), st.none(), st.lists(st.integers(), max_size=3))
SCALARS = st.one_of(NUMBERS, NUMERAL_TEXT, st.text(max_size=12), st.booleans(), st.none())
TREES = st.recursive(
    SCALARS,
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(st.text(min_size=1, max_size=10), kids, max_size=4)),
    max_leaves=20,
)


class Units(ConfigModel):
    size: Bytes = 0
    time: Seconds = 0.0
    rpm: RPM = 0.0
    rate: BytesPerSecond = 0.0


def _only_sim_errors(fn, *a, **kw) -> Any:
    try:
        return fn(*a, **kw)
    except SimError:
        return None


def _finite_tree(x: Any) -> bool:
    if isinstance(x, float):
        return math.isfinite(x)
    if isinstance(x, dict):
        return all(_finite_tree(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return all(_finite_tree(v) for v in x)
    return True


# ----------------------------------------------------------------------------- units
@FUZZ
@given(field=st.sampled_from(["size", "time", "rpm", "rate"]), value=VALUES)
def test_unit_types_accept_only_finite_bounded_values(field, value):
    m = _only_sim_errors(validate, Units, {field: value}, "fuzz")
    if m is not None:
        v = getattr(m, field)
        limit = {"size": MAX_BYTES, "time": MAX_SECONDS, "rpm": MAX_RPM, "rate": MAX_BYTES_PER_SECOND}[field]
        assert math.isfinite(v) and abs(v) <= limit, (value, v)


def test_unit_root_cases():
    from simulator.errors import ConfigError

    for field, value in [("size", "1e400"), ("time", "1e400s"), ("size", int("9" * 310)), ("rate", float("inf")),
                         ("rpm", float("nan")), ("size", 1e300), ("time", "9" * 60 + "s")]:
        with pytest.raises(ConfigError) as e:
            validate(Units, {field: value}, "x.yaml")
        assert e.value.field == field and e.value.source == "x.yaml"


# ----------------------------------------------------------------------------- YAML and --set
@FUZZ
@given(text=st.text(max_size=300))
def test_yaml_loader_raises_only_config_errors(text):
    from simulator.yamlio import load_yaml_text

    _only_sim_errors(load_yaml_text, text, "fuzz.yaml")


@FUZZ
@given(tree=TREES)
def test_yaml_round_trip_of_any_tree(tree):
    from simulator.yamlio import load_yaml_text

    _only_sim_errors(load_yaml_text, yaml.safe_dump(tree), "fuzz.yaml")


def test_yaml_alias_bomb_and_depth_are_refused_with_position():
    from simulator.errors import ConfigError
    from simulator.yamlio import load_yaml_text

    bomb = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
    )
    with pytest.raises(ConfigError) as e:
        load_yaml_text(bomb, "bomb.yaml")
    assert "aliases are expanded" in e.value.message and e.value.field.startswith("line ")
    with pytest.raises(ConfigError) as e:
        load_yaml_text("a: " + "[" * 3000 + "]" * 3000, "deep.yaml")
    assert "nested" in e.value.message
    with pytest.raises(ConfigError) as e:
        load_yaml_text("a: 1\nb: [1,\n", "bad.yaml")
    assert e.value.field == "line 3, column 1"


@FUZZ
@given(key=st.text(max_size=30), value=st.text(max_size=30))
def test_set_parsing_raises_only_config_errors(key, value):
    from simulator.experiment.load import parse_sets

    sets = _only_sim_errors(parse_sets, [f"{key}={value}"])
    if sets:
        base = {"name": "t", "system": {"devices": [{"name": "sda"}]}, "workload": {"jobs": [{"name": "j"}]}}
        for k, v in sets:
            _only_sim_errors(set_dotted, base, k, v)


# ----------------------------------------------------------------------------- fio options and job files
FIO_OPTIONS = [
    "bs", "iodepth", "numjobs", "size", "io_size", "runtime", "ramp_time", "rate_iops", "rwmixread", "rwmixwrite",
    "random_distribution", "rw", "ioengine", "offset", "offset_increment", "loops", "number_ios", "randseed",
    "file_service_type", "fsync", "sync", "direct", "time_based", "startdelay", "sim_slat", "filesize", "bogus_option",
    "bssplit", "bsrange", "blocksize_range", "blockalign", "ba", "thinktime", "thinktime_spin", "thinktime_blocks",
    "thinktime_blocks_type", "thinktime_iotime", "rate", "rate_process", "percentage_random",
    "percentage_sequential", "sim_mix",
]
#: values shaped like bssplit/bsrange/startdelay ranges: size/percent lists, per-direction parts, ranges
SPLIT_TEXT = st.builds(
    lambda parts, commas: ",".join(parts[:commas] if commas else parts),
    st.lists(
        st.builds(
            lambda ents: ":".join(ents),
            st.lists(
                st.builds(
                    lambda a, sep, b: f"{a}{sep}{b}",
                    st.one_of(NUMERAL_TEXT, st.sampled_from(["4k", "0", "1g", "-4k", "", "512"])),
                    st.sampled_from(["/", "-", ":", "", "/ "]),
                    st.one_of(st.sampled_from(["", "0", "50", "100", "101", "33", "-1", "1e3", "x"]), NUMERAL_TEXT),
                ),
                min_size=1,
                max_size=4,
            ),
        ),
        min_size=1,
        max_size=4,
    ),
    st.integers(min_value=0, max_value=3),
)
#: sim_mix values: lists of streams with fuzzed weights and per-stream options
MIX_OPTIONS = ["rw", "rwmixread", "bs", "bssplit", "bsrange", "offset", "size", "random_distribution",
               "percentage_random", "blockalign", "iodepth", "bogus"]
MIX_VALUES = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"weight": st.one_of(NUMBERS, NUMERAL_TEXT)},
            optional={
                "options": st.dictionaries(
                    st.one_of(st.sampled_from(MIX_OPTIONS), st.integers(), st.none()), st.one_of(VALUES, SPLIT_TEXT), max_size=4
                ),
                "name": st.one_of(st.text(max_size=70), st.integers()),
            },
        ),
        SCALARS,
    ),
    max_size=4,
)
DIST_TEXT = st.builds(
    lambda k, a, b: f"{k}:{a}" + (f":{b}" if b is not None else ""),
    st.sampled_from(["zipf", "pareto", "normal", "gauss", "zoned", "zoned_abs", "random", "bogus"]),
    st.one_of(NUMERAL_TEXT, st.text(max_size=8)),
    st.one_of(st.none(), NUMERAL_TEXT),
)


@FUZZ
@given(opts=st.dictionaries(st.sampled_from(FIO_OPTIONS), st.one_of(VALUES, DIST_TEXT, SPLIT_TEXT, MIX_VALUES), max_size=5))
def test_fio_option_values_raise_only_config_errors(opts):
    from simulator.limits import check_run_size
    from simulator.workloads.options import resolve_jobs

    jobs = _only_sim_errors(resolve_jobs, {}, [{"name": "j", **opts}], "fuzz.yaml")
    if jobs:
        j = jobs[0]
        assert all(_finite_tree(getattr(j, f)) for f in type(j).model_fields)
        _only_sim_errors(check_run_size, jobs, devices=1)
        _ = j.distribution  # a stored distribution parses again
        spec = j.bs_spec  # stored bssplit/bsrange parse again into sizes within fio's limits
        for d in range(3):
            assert 0 < j.min_bs[d] <= j.max_bs[d] <= 2**30
            if spec[d][0] == "split":
                assert abs(sum(spec[d][2]) - 1.0) < 1e-9 and min(spec[d][2]) > 0
        assert 0 <= j.startdelay[0] <= j.startdelay[1] and math.isfinite(j.thinktime)
        if j.open_loop_iops is not None:
            assert all(math.isfinite(x) and x >= 0 for x in j.open_loop_iops)
        for m in j.sim_mix or ():
            assert math.isfinite(m.weight) and m.weight > 0 and min(m.job.min_bs) > 0
            _ = m.job.distribution


# ----------------------------------------------------------------------------- Iometer access specifications
BASE_IOMETER = {
    "iometer": {
        "run_time": "1s",
        "outstanding_ios": 4,
        "access_specification": {"name": "a", "lines": [{"size": "4k", "percent_of_spec": 100, "percent_random": 100}]},
    }
}
IOMETER_KEYS = [
    "iometer.run_time", "iometer.ramp_up_time", "iometer.workers", "iometer.outstanding_ios", "iometer.targets",
    "iometer.max_disk_size", "iometer.starting_sector", "iometer.sector_size", "iometer.seed", "iometer.bogus",
    "iometer.access_specification.name", "iometer.access_specification.lines",
    "iometer.access_specification.lines.0.size", "iometer.access_specification.lines.0.percent_of_spec",
    "iometer.access_specification.lines.0.percent_read", "iometer.access_specification.lines.0.percent_random",
    "iometer.access_specification.lines.0.delay", "iometer.access_specification.lines.0.burst",
    "iometer.access_specification.lines.0.align", "iometer",
]


@FUZZ
@given(edits=st.lists(st.tuples(st.sampled_from(IOMETER_KEYS), st.one_of(VALUES, TREES)), max_size=3))
def test_iometer_specs_raise_only_config_errors(edits, tmp_path_factory):
    from simulator.workloads.iometer import iometer_jobs, load_iometer
    from simulator.workloads.options import resolve_jobs

    raw: Any = BASE_IOMETER
    for k, v in edits:
        raw = _only_sim_errors(set_dotted, raw, k, v) or raw
    p = tmp_path_factory.mktemp("iometer") / "s.yaml"
    try:
        p.write_text(yaml.safe_dump(raw), encoding="utf-8")
    except (UnicodeEncodeError, yaml.YAMLError):
        return
    spec = _only_sim_errors(load_iometer, p)
    if spec is not None:
        conv = _only_sim_errors(iometer_jobs, spec, ["sda"])
        if conv is not None:
            jobs = _only_sim_errors(resolve_jobs, conv[0], conv[1], str(p))
            for j in jobs or ():
                assert j.sim_mix and all(m.weight > 0 for m in j.sim_mix)


JOBFILE_LINES = st.one_of(
    st.builds(lambda k, v: f"{k}={v}", st.sampled_from(FIO_OPTIONS), st.one_of(NUMERAL_TEXT, st.text(max_size=10), DIST_TEXT, SPLIT_TEXT)),
    st.sampled_from(["[global]", "[job1]", "[/]", "[red]", "[]", "[a", "; comment", "# c", "time_based", "include x", "bs=$HOME", ""]),
    st.text(max_size=40),
)


@FUZZ
@given(lines=st.lists(JOBFILE_LINES, max_size=12))
def test_fio_job_files_raise_only_config_errors(lines):
    from simulator.workloads.jobfile import parse_jobfile_text
    from simulator.workloads.options import resolve_jobs

    parsed = _only_sim_errors(parse_jobfile_text, "\n".join(lines), "fuzz.fio")
    if parsed:
        g, jobs = parsed
        _only_sim_errors(resolve_jobs, g, jobs, "fuzz.fio")


# ----------------------------------------------------------------------------- experiment, profile, calibration spec
BASE_EXP = {
    "name": "t",
    "system": {"devices": [{"name": "sda", "kind": "queue", "params": {"service": {"dist": "deterministic", "value": "1ms"}}}]},
    "workload": {"global": {"rw": "randread", "runtime": "1s", "time_based": 1, "filename": "sda"}, "jobs": [{"name": "j"}]},
}
EXP_KEYS = [
    "name", "seed", "replications", "system.devices.0.count", "system.devices.0.profile", "system.devices.0.kind",
    "system.devices.0.params.capacity", "system.devices.0.params.servers", "system.devices.0.params.service.value",
    "system.devices.0.params.bandwidth", "workload.global.iodepth", "workload.global.bs", "workload.global.numjobs",
    "workload.global.rate_iops", "workload.jobfile", "sweep.axes.a.key", "sweep.axes.a.values", "reference",
    "report.plots", "system.cluster",
]


@FUZZ
@given(edits=st.lists(st.tuples(st.sampled_from(EXP_KEYS), st.one_of(VALUES, TREES)), max_size=3))
def test_experiment_files_raise_only_config_errors(edits, tmp_path_factory):
    from simulator.experiment.load import load_experiment

    d = tmp_path_factory.mktemp("exp")
    raw: Any = BASE_EXP
    for k, v in edits:
        raw = _only_sim_errors(set_dotted, raw, k, v) or raw
    p = d / "e.yaml"
    try:
        p.write_text(yaml.safe_dump(raw), encoding="utf-8")
    except (UnicodeEncodeError, yaml.YAMLError):
        return
    _only_sim_errors(load_experiment, p)
    assert not (d / "out").exists()


@FUZZ
@given(text=st.text(max_size=200))
def test_experiment_text_raises_only_config_errors(text, tmp_path_factory):
    from simulator.experiment.load import load_experiment

    p = tmp_path_factory.mktemp("exptext") / "e.yaml"
    p.write_bytes(text.encode("utf-8", "replace"))
    _only_sim_errors(load_experiment, p)


PROFILE_KEYS = ["kind", "name", "extends", "params", "sources", "params.capacity", "params.service", "params.servers", "bogus"]


@FUZZ
@given(edits=st.dictionaries(st.sampled_from(PROFILE_KEYS), st.one_of(VALUES, TREES), max_size=3),
       ref=st.sampled_from(["user/p", "user/p.yaml", "p.yaml", "../p", "/etc/passwd", "user/../user/p", "", "hdd/nope"]))
def test_profiles_raise_only_config_errors(edits, ref, tmp_path_factory, monkeypatch):
    from simulator.devices.registry import resolve_params

    d = tmp_path_factory.mktemp("prof")
    (d / "user").mkdir()
    prof: Any = {"kind": "queue", "params": {}}
    for k, v in edits.items():
        prof = _only_sim_errors(set_dotted, prof, k, v) or prof
    try:
        (d / "user" / "p.yaml").write_text(yaml.safe_dump(prof), encoding="utf-8")
    except (UnicodeEncodeError, yaml.YAMLError):
        return
    (d / "e.yaml").write_text("name: x\n", encoding="utf-8")
    monkeypatch.setenv("SIMRUN_USER_MODELS", str(d))
    _only_sim_errors(resolve_params, {"profile": ref}, source=str(d / "e.yaml"), field="system.devices.0")


CAL_KEYS = ["name", "system", "experiment", "free", "free.0.key", "free.0.bounds", "targets", "targets.0.csv", "targets.0.options",
            "output.profile", "output.report", "budget.max_evals", "runtime", "workers", "loss"]


@FUZZ
@given(edits=st.lists(st.tuples(st.sampled_from(CAL_KEYS), st.one_of(VALUES, TREES)), max_size=3))
def test_calibration_specs_raise_only_config_errors(edits, tmp_path_factory):
    from simulator.calibration.spec import load_spec

    d = tmp_path_factory.mktemp("cal")
    raw: Any = {"name": "c", "system": BASE_EXP["system"],
                "free": [{"key": "devices.0.params.service.value", "bounds": ["0.3ms", "3ms"]}],
                "targets": [{"csv": "t.csv", "options": {"rw": "randread"}}]}
    for k, v in edits:
        raw = _only_sim_errors(set_dotted, raw, k, v) or raw
    try:
        (d / "s.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    except (UnicodeEncodeError, yaml.YAMLError):
        return
    (d / "t.csv").write_text("qd,read.iops\n1,100\n")
    spec = _only_sim_errors(load_spec, d / "s.yaml")
    if spec is not None:
        for out in (spec.profile_out(), spec.report_dir()):
            if out is not None and not out.is_relative_to(Path(__file__).resolve().parents[1] / "models"):
                assert out.resolve().is_relative_to(d.resolve()), out


# ----------------------------------------------------------------------------- fio output readers
def _fio_doc() -> dict:
    from simulator.calibration.trace import run_workload
    from simulator.fio.writer import to_fio_json

    system = {"devices": [BASE_EXP["system"]["devices"][0] | {"name": "q"}]}
    job = run_workload(system, {}, [{"filename": "q", "rw": "randread", "runtime": "0.05s", "time_based": 1}], seed=1)
    return to_fio_json([job], {}, time_str="now", sim_meta=None, plus=True)


@pytest.fixture(scope="module")
def fio_doc() -> dict:
    return _fio_doc()


def _paths(x: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(x, dict):
        for k, v in x.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(x, list):
        for i, v in enumerate(x[:3]):
            out += _paths(v, (*prefix, i))
    return out


@FUZZ
@given(data=st.data())
def test_fio_json_reader_raises_only_config_errors(fio_doc, data):
    import copy

    from simulator.fio.reader import read_fio_text

    doc = copy.deepcopy(fio_doc)
    paths = [p for p in _paths(doc) if p]
    for _ in range(data.draw(st.integers(1, 4))):
        path = data.draw(st.sampled_from(paths))
        cur = doc
        try:
            for k in path[:-1]:
                cur = cur[k]
            cur[path[-1]] = data.draw(st.one_of(VALUES, TREES))
        except (KeyError, IndexError, TypeError):
            continue
    text = json.dumps(doc, default=str, allow_nan=True)
    run = _only_sim_errors(read_fio_text, text, "fuzz.json")
    if run is not None:
        for j in run.jobs:
            for dr in j.dirs:
                assert math.isfinite(dr.iops) and math.isfinite(dr.bw_bytes)


@FUZZ
@given(text=st.one_of(st.text(max_size=400), st.lists(st.sampled_from([
    "fio-3.28", "j: (g=0): rw=randread, bs=(R) 4096B-4096B", "j: (groupid=0, jobs=1): err= 0: pid=1: x",
    "  read: IOPS=1e400, BW=nanMiB/s (1MB/s)(1MB/1000msec)", "    clat (usec): min=1, max=inf, avg=nan, stdev=1",
    "     | 99.00th=[99999999999999999999999]", "  lat (usec)   : 10=1e400%", "  cpu          : usr=1%, sys=1%",
    "  issued rwts: total=1,0,0,0 short=0,0,0,0 dropped=0,0,0,0", "{", "{\"jobs\": [", "]}",
]), max_size=12).map("\n".join)))
def test_fio_text_reader_raises_only_config_errors(text):
    from simulator.fio.reader import read_fio_text

    _only_sim_errors(read_fio_text, text, "fuzz.txt")
