"""Every number a configuration takes has a physically meaningful upper bound (docs/design.md: "every
field documented with unit, default and physically meaningful bounds").

The walk: every pydantic model defined in the ``simulator`` package; for each field, every int/float
the annotation admits (inside Optional/Union arms, lists, tuples, dict values; dict keys are labels,
``bool`` and ``Literal`` are not quantities) must carry ``le``/``lt``, either on the field itself or on
the ``Annotated`` element type. A field where no upper bound is physically right is listed in
ALLOWED with its reason, and says "no upper bound" in its own description.

Then, for every scalar field with a bound, the value at the bound passes and a value just above it is
refused by the field's own validation (units parsed first), and a few such values through the
command line end the way bad input must: exit 2, one ``error:`` line naming the file and the field,
no traceback.
"""

from __future__ import annotations

import collections.abc
import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import annotated_types as at
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

import simulator

ROOT = Path(__file__).resolve().parents[1]

#: fields whose numbers have no upper bound, with the reason (each field's description says "no upper bound")
ALLOWED: dict[str, str] = {
    "simulator.calibration.spec.CalibrationSpec.seed": "a seed is a label, not a quantity (MAX_NUMBER caps it at 2**64)",
    "simulator.calibration.spec.Prior.mean": "in the fitted parameter's own units: that field's bound applies when the fit sets it",
    "simulator.calibration.spec.Prior.sd": "in the fitted parameter's units; a wider prior is only a weaker penalty",
    "simulator.calibration.spec.FreeParam.bounds": "in the fitted parameter's own units: that field's bound refuses a value beyond it",
    "simulator.calibration.spec.FreeParam.start": "within FreeParam.bounds, which the fitted field's own bound limits",
}


def _models() -> list[type[BaseModel]]:
    out: list[type[BaseModel]] = []
    seen: set[type] = set()
    for info in sorted(pkgutil.walk_packages(simulator.__path__, "simulator."), key=lambda m: m.name):
        mod = importlib.import_module(info.name)
        for obj in vars(mod).values():
            if (inspect.isclass(obj) and issubclass(obj, BaseModel) and obj.__module__ == mod.__name__
                    and obj not in seen):
                seen.add(obj)
                out.append(obj)
    return out


def _has_upper(meta: Any) -> bool:
    if isinstance(meta, (at.Le, at.Lt)):
        return True
    if isinstance(meta, at.Interval):
        return meta.le is not None or meta.lt is not None
    if isinstance(meta, FieldInfo):
        return any(_has_upper(m) for m in meta.metadata)
    return False


def _numbers(tp: Any, bounded: bool, where: str) -> collections.abc.Iterator[tuple[str, bool]]:
    """(where, bounded) for every int/float the annotation ``tp`` admits."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is Annotated:
        yield from _numbers(args[0], bounded or any(_has_upper(m) for m in tp.__metadata__), where)
    elif origin in (Union, types.UnionType):
        for a in args:
            if a is not type(None):
                yield from _numbers(a, bounded, where)
    elif origin is Literal:
        return
    elif origin in (list, tuple, set, frozenset, collections.abc.Sequence):
        for a in args:
            if a is not Ellipsis:
                yield from _numbers(a, bounded, f"{where}[]")
    elif origin in (dict, collections.abc.Mapping):
        yield from _numbers(args[1], bounded, f"{where}{{}}")  # keys are labels
    elif tp is bool:
        return
    elif isinstance(tp, type) and issubclass(tp, (int, float)):
        yield where, bounded


def _fields() -> dict[str, tuple[type[BaseModel], str, FieldInfo]]:
    return {f"{cls.__module__}.{cls.__qualname__}.{name}": (cls, name, fi)
            for cls in _models() for name, fi in cls.model_fields.items()}


FIELDS = _fields()


def _unbounded() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, (_cls, _name, fi) in FIELDS.items():
        top = any(_has_upper(m) for m in fi.metadata)
        bad = [w for w, b in _numbers(fi.annotation, top, key) if not b]
        if bad:
            out[key] = bad
    return out


def test_the_walk_sees_the_config_models() -> None:
    names = {k.rsplit(".", 1)[0] for k in FIELDS}
    for cls in ("simulator.ceph.config.BlueStoreConfig", "simulator.devices.hdd.config.SeekConfig",
                "simulator.workloads.options.FioJob", "simulator.calibration.spec.CalibrationSpec"):
        assert cls in names
    assert len(FIELDS) > 500, len(FIELDS)


def test_every_number_has_an_upper_bound() -> None:
    missing = sorted(set(_unbounded()) - set(ALLOWED))
    assert not missing, "numeric fields without an upper bound (give le=/lt= or an ALLOWED reason):\n" + "\n".join(missing)


def test_allowed_is_current() -> None:
    unb = _unbounded()
    stale = sorted(k for k in ALLOWED if k not in unb)
    assert not stale, f"listed but bounded (or gone): {stale}"
    for key in ALLOWED:
        desc = FIELDS[key][2].description or ""
        assert "no upper bound" in desc, f"{key}: its description should say why it has no upper bound"


# ------------------------------------------------------------------ the bounds bite, units parsed first
def _scalar_bounds() -> list[tuple[str, float | int, bool]]:
    """(field, bound, inclusive) of every field whose bound sits on the field itself."""
    out = []
    for key, (_cls, _name, fi) in FIELDS.items():
        for m in fi.metadata:
            if isinstance(m, at.Le):
                out.append((key, m.le, True))
            elif isinstance(m, at.Lt):
                out.append((key, m.lt, False))
    return out


BOUNDS = _scalar_bounds()


def _adapter(key: str) -> TypeAdapter:
    _cls, _name, fi = FIELDS[key]
    return TypeAdapter(Annotated[fi.annotation, fi])


def _si(ta: TypeAdapter, value: float | int, integer: bool) -> Any:
    """``value`` (SI) as input: a number, or seconds with their unit where a bare number means another unit
    (fio's thinktime: microseconds)."""
    if integer:
        return int(value)
    try:
        one = ta.validate_python(1)
    except ValidationError:
        return value
    return value if one == 1 else f"{value!r}s"


def _above(bound: float | int, integer: bool, excess: float = 1e-6) -> float | int:
    """A value beyond the bound by a relative ``excess`` (and at least one unit of an integer)."""
    if integer:
        return int(bound) + max(1, int(abs(bound) * excess))
    return bound * (1 + excess) + excess


def _is_int(key: str) -> bool:
    return all(a is int or a is type(None) or typing.get_origin(a) is Literal for a in _flat(FIELDS[key][2].annotation))


def _flat(tp: Any) -> list[Any]:
    origin = typing.get_origin(tp)
    if origin is Annotated:
        return _flat(typing.get_args(tp)[0])
    if origin in (Union, types.UnionType):
        return [x for a in typing.get_args(tp) for x in _flat(a)]
    return [tp]


@pytest.mark.parametrize("key,bound,inclusive", BOUNDS, ids=[b[0].removeprefix("simulator.") for b in BOUNDS])
def test_value_above_the_bound_is_refused(key: str, bound: float | int, inclusive: bool) -> None:
    ta = _adapter(key)
    integer = _is_int(key)
    if inclusive and (not integer or bound == int(bound)):
        ta.validate_python(_si(ta, bound, integer))  # the bound itself is a legal value
    with pytest.raises(ValidationError) as e:
        ta.validate_python(_si(ta, _above(bound, integer), integer))
    assert len(e.value.errors()) >= 1


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(BOUNDS), st.floats(min_value=1e-6, max_value=1e3))
def test_anything_beyond_a_bound_is_refused(case: tuple[str, float, bool], excess: float) -> None:
    key, bound, _inclusive = case
    integer = _is_int(key)
    value = _above(bound, integer, excess)
    if abs(value) > 2**64:
        return  # the root check (MAX_NUMBER) refuses it already
    ta = _adapter(key)
    with pytest.raises(ValidationError):
        ta.validate_python(_si(ta, value, integer))


def _upper(meta: Any) -> tuple[float | int, bool] | None:
    """(bound, inclusive) of an le/lt in ``meta`` (annotated_types or a FieldInfo)."""
    if isinstance(meta, at.Le):
        return meta.le, True
    if isinstance(meta, at.Lt):
        return meta.lt, False
    if isinstance(meta, FieldInfo):
        for m in meta.metadata:
            b = _upper(m)
            if b is not None:
                return b
    return None


def _element_types(tp: Any) -> collections.abc.Iterator[tuple[Any, float | int, bool]]:
    """(Annotated element type, bound, inclusive) for every bound inside an annotation."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is Annotated:
        for m in tp.__metadata__:
            b = _upper(m)
            if b is not None:
                yield tp, b[0], b[1]
                break
        yield from _element_types(args[0])
    elif origin is not Literal:
        for a in args:
            if a is not Ellipsis and a is not type(None):
                yield from _element_types(a)


ELEMENTS = [(key, tp, b, inc) for key, (_c, _n, fi) in FIELDS.items() for tp, b, inc in _element_types(fi.annotation)]


def test_there_are_element_bounds() -> None:
    keys = {e[0] for e in ELEMENTS}
    assert {"simulator.workloads.options.FioJob.bs", "simulator.devices.ssd.config.FlashConfig.program_latency",
            "simulator.devices.hdd.config.SeekConfig.table"} <= keys


@pytest.mark.parametrize("key,tp,bound,inclusive", ELEMENTS, ids=[f"{e[0].removeprefix('simulator.')}-{i}" for i, e in enumerate(ELEMENTS)])
def test_element_above_its_bound_is_refused(key: str, tp: Any, bound: float | int, inclusive: bool) -> None:
    ta = TypeAdapter(tp)
    integer = all(a is int for a in _flat(tp))
    if inclusive:
        ta.validate_python(_si(ta, bound, integer))
    with pytest.raises(ValidationError):
        ta.validate_python(_si(ta, _above(bound, integer), integer))


#: whole fields whose elements are bounded: a value with one element beyond the bound is refused
ELEMENT_CASES = [
    ("simulator.workloads.options.FioJob.bs", "4k,2g"),
    ("simulator.workloads.options.FioJob.percentage_random", "50,101"),
    ("simulator.workloads.options.FioJob.startdelay", "1-200d"),
    ("simulator.workloads.options.FioJob.rate_iops", "100,200000000"),
    ("simulator.devices.ssd.config.FlashConfig.program_latency", ["500us", "0.2s"]),
    ("simulator.devices.hdd.config.SeekConfig.table", [[0.5, "5ms"], [1.0, "2s"]]),
    ("simulator.devices.raid.config.RaidConfig.failed", [300]),
    ("simulator.plan.spec.Protection.ec", [17, 2]),
    ("simulator.experiment.appstudy.IometerSpec.mixes", {"a": 101}),
    ("simulator.calibration.spec.LossSpec.metrics", {"iops": 2e6}),
]


@pytest.mark.parametrize("key,value", ELEMENT_CASES, ids=[c[0].rsplit(".", 1)[1] for c in ELEMENT_CASES])
def test_field_with_an_element_beyond_its_bound_is_refused(key: str, value: Any) -> None:
    with pytest.raises(ValidationError):
        _adapter(key).validate_python(value)


def test_units_are_parsed_before_the_bound() -> None:
    """fio's thinktime is microseconds when bare: 3600000000 is the bound (1 h) itself, one more is refused."""
    from simulator.workloads.options import FioJob

    assert FioJob(name="j", thinktime=3_600_000_000).thinktime == 3600.0
    assert FioJob(name="j", thinktime="3600000000").thinktime == 3600.0
    assert FioJob(name="j", thinktime=100).thinktime == 100 / 1e6
    with pytest.raises(ValidationError, match="thinktime"):
        FioJob(name="j", thinktime=3_600_000_001)


# ------------------------------------------------------------------ through the command line
QUEUE = {"name": "d", "kind": "queue", "params": {"capacity": "1GiB", "service": {"dist": "exponential", "mean": "1ms"}}}


def _exp(system: dict, glob: dict | None = None) -> dict:
    g = {"rw": "randread", "bs": "4k", "iodepth": 1, "number_ios": 100, "filename": "d", **(glob or {})}
    return {"name": "t", "system": system, "workload": {"global": g, "jobs": [{"name": "j"}]}}


CLI_CASES = {
    "queue-flush-time": (_exp({"devices": [{**QUEUE, "params": {**QUEUE["params"], "flush_time": 7200}}]}), "params.flush_time"),
    "hdd-head-switch": (_exp({"devices": [{"name": "d", "profile": "hdd/seagate_st91000640ns",
                                           "params": {"seek": {"head_switch": "2s"}}}]}), "params.seek.head_switch"),
    "hdd-seek-average": (_exp({"devices": [{"name": "d", "profile": "hdd/seagate_st91000640ns",
                                            "params": {"seek": {"average": "2s"}}}]}), "params.seek.average"),
    "fio-runtime": (_exp({"devices": [QUEUE]}, {"runtime": "200d"}), "workload.global.runtime"),
    "fio-size": (_exp({"devices": [QUEUE]}, {"size": 2**61}), "workload.global.size"),
    "fio-thinktime": (_exp({"devices": [QUEUE]}, {"thinktime": "2h"}), "workload.global.thinktime"),
    "ceph-osd-read-cost": (_exp({"cluster": {"profile": "clusters/croit_mach2", "params": {"osd": {"read_cost": "2s"}}}},
                                {"ioengine": "rbd", "pool": "test-mach2", "rbdname": "test", "filename": None}), "params.osd.read_cost"),
    "ceph-client-write-cost": (_exp({"cluster": {"profile": "clusters/croit_mach2", "params": {"client": {"write_cost": "20ms"}}}},
                                    {"ioengine": "rbd", "pool": "test-mach2", "rbdname": "test", "filename": None}), "params.client.write_cost"),
}


@pytest.mark.parametrize("doc,field", CLI_CASES.values(), ids=list(CLI_CASES))
def test_beyond_a_bound_through_the_cli(tmp_path: Path, doc: dict, field: str) -> None:
    doc["workload"]["global"] = {k: v for k, v in doc["workload"]["global"].items() if v is not None}
    p = tmp_path / "e.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SIMRUN_USER_MODELS": str(tmp_path / "none")}
    r = subprocess.run([sys.executable, "-m", "simulator.cli", "check", str(p)], capture_output=True, text=True,
                       cwd=tmp_path, env=env, timeout=300)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr  # one message, no "also" lines
    assert "e.yaml" in errors[0] and f"{field}" in errors[0], r.stderr
    assert "less than or equal to" in errors[0] or "at most" in errors[0], r.stderr
