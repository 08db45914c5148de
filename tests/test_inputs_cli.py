"""Bad inputs through the real command line, one subprocess each.

Every case must end the way the project promises: exit code 2, exactly one ``error:`` message that
names the file (or "command line") and the field, no traceback, nothing written to disk, within a
bounded time, and never a piece of the file's text that is not a field name (each case plants a
canary string where it would show if contents were echoed).

The cases cover every class of issue 9 section 1 that this layer owns: non-finite and absurd
numbers, inputs that would eat the machine, paths that escape their directory, markup in messages,
the dask scheduler without dask, --set, malformed fio output, and malformed YAML.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CANARY = "CANARY7f3a"

QUEUE = {"name": "sda", "kind": "queue", "params": {"service": {"dist": "deterministic", "value": "1ms"}}}
HDD = "hdd/seagate_st91000640ns"


def exp(**over: Any) -> dict:
    """A valid tiny experiment, with top-level keys replaced by ``over``; ``g`` updates workload.global."""
    g = {"rw": "randread", "bs": "4k", "iodepth": 1, "runtime": "1s", "time_based": 1, "filename": "sda"}
    g.update(over.pop("g", {}))
    g = {k: v for k, v in g.items() if v is not None}  # None removes an option
    d: dict[str, Any] = {
        "name": "t",
        "system": {"devices": [dict(QUEUE)]},
        "workload": {"global": g, "jobs": [{"name": "j"}]},
    }
    d.update(over)
    return d


def dev(**params: Any) -> dict:
    return {"system": {"devices": [{**QUEUE, "params": {**QUEUE["params"], **params}}]}}


def y(d: Any) -> str:
    return yaml.safe_dump(d, sort_keys=False)


@dataclass
class Case:
    id: str
    files: dict[str, str]
    argv: list[str]
    expect: list[str]  # substrings of the message (field, reason); the first names the field
    source: str = "e.yaml"  # substring naming the source in the message
    env: dict[str, str] = field(default_factory=dict)


CASES: list[Case] = []


def add(cid: str, files: dict[str, str] | str, expect: list[str], argv: list[str] | None = None, source: str = "e.yaml", env=None):
    if isinstance(files, str):
        files = {"e.yaml": files}
    CASES.append(Case(cid, files, argv or ["check", "{d}/e.yaml"], expect, source, env or {}))


# ---------------------------------------------------------------- numbers: not finite or absurd
add("iodepth-nan", "name: t\nsystem: {devices: [{name: sda, kind: queue}]}\nworkload: {global: {iodepth: .nan}, jobs: [{name: j}]}\n",
    ["workload.global.iodepth", "finite"])
add("bs-1e400", y(exp(g={"bs": "1e400"})), ["bs", "finite"])
add("runtime-1e400s-run", y(exp(g={"runtime": "1e400s"})), ["runtime", "finite"], ["run", "{d}/e.yaml", "--out", "{d}/out", "-q"])
add("zipf-inf", y(exp(g={"random_distribution": "zipf:inf"})), ["random_distribution", "finite"])
add("zipf-nan", y(exp(g={"random_distribution": "zipf:nan"})), ["random_distribution", "finite"])
add("pareto-nan", y(exp(g={"random_distribution": "pareto:nan"})), ["random_distribution", "finite"])
add("zipf-theta-huge", y(exp(g={"random_distribution": "zipf:1000"})), ["random_distribution", "theta"])
add("int-310-digits", y(exp(g={"iodepth": int("9" * 310)})), ["workload.global.iodepth", "310-digit"])
add("capacity-1e300", y(exp(**dev(capacity=1.0e300))), ["system.devices.0.params.capacity"])
add("link-rate-inf", "name: t\nsystem: {devices: [{name: sda, profile: " + HDD + ", params: {interface: {link_rate: .inf}}}]}\n"
    "workload: {global: {filename: sda, runtime: 1s, time_based: 1}, jobs: [{name: j}]}\n", ["link_rate", "finite"])
add("seed-310-digits", y(exp(seed=int("1" * 310))), ["seed"])
add("rate-iops-1e300", y(exp(g={"rate_iops": 1e300})), ["rate_iops"])
add("numjobs-inf", "name: t\nsystem: {devices: [{name: sda, kind: queue}]}\nworkload: {global: {numjobs: .inf}, jobs: [{name: j}]}\n",
    ["numjobs", "finite"])
add("size-1e400", y(exp(g={"size": "1e400"})), ["size", "finite"])
add("service-negative", y(exp(**dev(service={"dist": "deterministic", "value": -1}))), ["system.devices.0.params.service"])
add("ssd-capacity-1e300", "name: t\nsystem: {devices: [{name: sda, kind: ssd, params: {capacity: 1.0e+300}}]}\n"
    "workload: {global: {filename: sda, runtime: 1s, time_based: 1}, jobs: [{name: j}]}\n", ["capacity"])
add("zoned-nan", y(exp(g={"random_distribution": "zoned:50/50:50/nan"})), ["random_distribution", "zone 2"])
add("rwmixread-1e400", y(exp(g={"rw": "randrw", "rwmixread": "1e400"})), ["rwmixread"])
add("bs-zero", y(exp(g={"bs": 0})), ["bs", "> 0"])
add("replications-huge", y(exp(replications=10**10)), ["replications"])
add("rpm-huge", "name: t\nsystem: {devices: [{name: sda, profile: " + HDD + ", params: {rotation: {rpm: 1.0e+9}}}]}\n"
    "workload: {global: {filename: sda, runtime: 1s, time_based: 1}, jobs: [{name: j}]}\n", ["rpm"])
add("sim-slat-inf", "name: t\nsystem: {devices: [{name: sda, kind: queue}]}\nworkload: {global: {sim_slat: .inf}, jobs: [{name: j}]}\n",
    ["sim_slat"])

# ---------------------------------------------------------------- size: would eat the machine
add("count-1e8", y(exp(system={"devices": [{**QUEUE, "count": 100_000_000}]})), ["system.devices.0.count"])
add("numjobs-1e8", y(exp(g={"numjobs": 100_000_000})), ["numjobs"])
add("numjobs-sum", y(exp(workload={"global": {"rw": "randread", "runtime": "1s", "time_based": 1, "numjobs": 4096, "filename": "sda"},
                                   "jobs": [{"name": "a"}, {"name": "b"}]})), ["numjobs", "job threads"])
add("outstanding", y(exp(g={"numjobs": 4096, "iodepth": 65536, "ioengine": "libaio"})), ["IOs in flight"])
add("arrivals", y(exp(g={"rate_iops": 10**8, "runtime": "100000s"})), ["rate_iops", "arrivals"])
# each option is at most 1e7 s on its own (FioJob's bounds); their sum is what the run limit checks
add("sim-seconds", y(exp(g={"runtime": "9000000s", "ramp_time": "2000000s"})), ["runtime", "simulated seconds"])
add("loops-ios", y(exp(g={"time_based": 0, "runtime": None, "size": "1TiB", "bs": "512", "loops": 1_000_000})), ["loops", "IOs"])
add("sweep-points", y(exp(sweep={"axes": {"a": {"key": "workload.global.iodepth", "values": list(range(1, 1001))},
                                          "b": {"key": "workload.global.bs", "values": [512 * k for k in range(1, 1001)]}}})),
    ["sweep.axes.b", "points"])
add("sweep-empty-axis", y(exp(sweep={"axes": {"a": {"values": {}}}})), ["sweep.axes.a", "at least one value"])
add("sweep-all-excluded", y(exp(sweep={"axes": {"a": {"key": "workload.global.iodepth", "values": [1, 2]}}, "exclude": [{"a": [1, 2]}]})),
    ["sweep.exclude", "no point"])
add("alias-bomb", "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n", ["line", "aliases are expanded"])
add("deep-nesting", "a: " + "[" * 5000 + "]" * 5000 + "\n", ["nested"])
add("cluster-drives", y(exp(system={"cluster": {"profile": "clusters/croit_mach2", "params": {"hosts": [
    {"name": "h", "count": 5000, "drives": [{"count": 100, "device": {"profile": HDD}}]}]}}})),
    ["system.cluster.params.hosts.0.count", "devices"])
add("host-count-field", y(exp(system={"cluster": {"profile": "clusters/croit_mach2", "params": {"hosts": [
    {"name": "h", "count": 100_000_000, "drives": [{"count": 1, "device": {"profile": HDD}}]}]}}})), ["hosts.0.count"])
add("ssd-memory", "name: t\nsystem: {devices: [{name: sda, kind: ssd, count: 500, params: {capacity: 4TiB}}]}\n"
    "workload: {global: {filename: sda0, runtime: 1s, time_based: 1}, jobs: [{name: j}]}\n", ["system.devices.0.count", "memory"])

# ---------------------------------------------------------------- paths: confined names, no echo
add("name-dotdot-run", y(exp(name="../../x")), ["name", "simple name"], ["run", "{d}/e.yaml", "-q"])
add("name-absolute", y(exp(name="/tmp/simrun-abs-x")), ["name", "simple name"])
add("name-slash", y(exp(name="a/b")), ["name"])
add("profile-dotdot", y(exp(system={"devices": [{"name": "sda", "profile": "../../../../etc/passwd"}]})),
    ["system.devices.0.profile", "not a profile name"])
add("profile-absolute-yaml", y(exp(system={"devices": [{"name": "sda", "profile": "/etc/simrun-passwd.yaml"}]})),
    ["system.devices.0.profile", "inside"])
add("profile-outside-yaml", {"e.yaml": y(exp(system={"devices": [{"name": "sda", "profile": "../outside.yaml"}]})),
                             "../outside.yaml": y({"kind": "queue", "params": {}})}, ["system.devices.0.profile", "inside"])
add("extends-escape", {"e.yaml": y(exp(system={"devices": [{"name": "sda", "profile": "mine.yaml"}]})),
                       "mine.yaml": y({"kind": "queue", "extends": "../../../etc/passwd", "params": {}})}, ["extends"], source="mine.yaml")
add("cluster-drive-profile-escape", y(exp(system={"cluster": {"profile": "clusters/croit_mach2", "params": {"hosts": [
    {"name": "h", "drives": [{"count": 1, "device": {"profile": "/etc/simrun-evil.yaml"}}]}]}}})),
    ["system.cluster.params.hosts.0.drives.0.device.profile", "inside"])
add("long-key-shortened", y({**exp(), "k" * 5000: 1}), ["unknown key", "k" * 57 + "..."])
add("profile-extends-cycle", {"j.fio": "[j]\nrw=randread\nruntime=1\ntime_based\n",
                              "u/x/a.yaml": "kind: queue\nextends: x/b\nparams: {}\n", "u/x/b.yaml": "extends: x/a\nparams: {}\n"},
    ["extends", "cycle"], ["fio", "{d}/j.fio", "--device", "x/a"], source="a.yaml", env={"SIMRUN_USER_MODELS": "{d}/u"})
add("jobfile-dotdot", y(exp(workload={"jobs": [{"name": "j"}], "jobfile": "../x.fio"})), ["workload.jobfile", "relative"])
add("jobfile-absolute", y(exp(workload={"jobs": [{"name": "j"}], "jobfile": "/etc/passwd"})), ["workload.jobfile", "relative"])
add("reference-absolute", y(exp(reference=[{"table": "/etc/passwd"}])), ["reference.0.table", "relative"])
add("reference-dotdot", y(exp(reference=[{"table": "../../../x.csv"}])), ["reference.0.table", "relative"])
add("device-dotdot", {"j.fio": "[j]\nrw=randread\nruntime=1\ntime_based\n"}, ["--device", "not a profile name"],
    ["fio", "{d}/j.fio", "--device", "../../../etc/passwd"], source="command line")
add("device-absolute-name", {"j.fio": "[j]\nrw=randread\nruntime=1\ntime_based\n"}, ["--device", "not a profile name"],
    ["fio", "{d}/j.fio", "--device", "/etc/hostname"], source="command line")
CAL = {"name": "c", "system": {"devices": [QUEUE]}, "free": [{"key": "devices.0.params.service.value", "bounds": ["0.3ms", "3ms"]}],
       "targets": [{"csv": "t.csv", "options": {"rw": "randread"}}]}
add("calib-profile-dotdot", {"s.yaml": y({**CAL, "output": {"profile": "../../evil.yaml"}}), "t.csv": "qd,read.iops\n1,100\n"},
    ["output.profile", "inside"], ["calibrate", "{d}/s.yaml", "-q"], source="s.yaml")
add("calib-profile-name-escape", {"s.yaml": y({**CAL, "output": {"profile": "../../../tmp/evil"}}), "t.csv": "qd,read.iops\n1,100\n"},
    ["output.profile", "profile name"], ["calibrate", "{d}/s.yaml", "-q"], source="s.yaml")
add("calib-report-absolute", {"s.yaml": y({**CAL, "output": {"report": "/tmp/simrun-evil-report"}}), "t.csv": "qd,read.iops\n1,100\n"},
    ["output.report", "inside"], ["calibrate", "{d}/s.yaml", "-q"], source="s.yaml")
add("calib-csv-absolute", {"s.yaml": y({**CAL, "targets": [{"csv": "/etc/hostname", "options": {"rw": "randread"}}]})},
    ["targets.0.csv", "relative"], ["calibrate", "{d}/s.yaml", "-q"], source="s.yaml")
add("calib-files-dotdot", {"s.yaml": y({**CAL, "targets": [{"files": "../m*.json"}]}), "../m1.json": "{}"},
    ["targets.0.files", "inside"], ["calibrate", "{d}/s.yaml", "-q"], source="s.yaml")
add("jobfile-garbage-no-echo", {"j.fio": f"[j]\nrw=randread\n{CANARY} :: secret line\n"}, ["line 3", "malformed line"],
    ["fio", "{d}/j.fio", "--device", HDD], source="j.fio")
add("jobfile-value-no-echo", {"j.fio": f"[j]\nbs={CANARY}\n"}, ["[j] bs (line 2)", "cannot read"], ["fio", "{d}/j.fio", "--device", HDD],
    source="j.fio")
add("profile-value-no-echo", {"e.yaml": y(exp(system={"devices": [{"name": "sda", "profile": "mine.yaml"}]})),
                              "mine.yaml": y({"kind": "queue", "params": {"capacity": CANARY}})}, ["params.capacity", "size"],
    source="mine.yaml")
add("not-yaml-passwd-like", f"root:x:0:0:{CANARY}:/root:/bin/bash\n", ["mapping"])

# ---------------------------------------------------------------- the error printer: literal text
add("markup-section", {"j.fio": "[/]\nbs=0\n"}, ["[/] bs (line 2)"], ["fio", "{d}/j.fio", "--device", HDD], source="j.fio")
add("markup-red-section", {"j.fio": "[red]\nrw=bogus\n"}, ["[red] rw (line 2)"], ["fio", "{d}/j.fio", "--device", HDD], source="j.fio")
add("markup-key", y({**exp(), "[bold]x[/]": 1}), ["[bold]x[/]", "unknown key"])

# ---------------------------------------------------------------- scheduler, --set
add("dask-missing", y(exp()), ["--scheduler", "dask is not installed"], ["run", "{d}/e.yaml", "--scheduler", "dask", "-q", "--out", "{d}/out"],
    source="command line", env={"SHADOW_DASK": "1"})
add("scheduler-bogus", y(exp()), ["--scheduler"], ["run", "{d}/e.yaml", "--scheduler", "bogus", "-q"], source="command line")
add("set-nan", y(exp()), ["workload.global.iodepth", "finite"], ["check", "{d}/e.yaml", "--set", "workload.global.iodepth=.nan"])
add("set-no-equals", y(exp()), ["--set"], ["check", "{d}/e.yaml", "--set", "noequals"], source="command line")
add("set-bad-index", y(exp()), ["system.devices.5.count", "index"], ["check", "{d}/e.yaml", "--set", "system.devices.5.count=1"],
    source="command line")
add("set-name-escape", y(exp()), ["name", "simple name"], ["check", "{d}/e.yaml", "--set", "name=../x"])
add("set-bs-1e400", y(exp()), ["bs", "finite"], ["check", "{d}/e.yaml", "--set", "workload.global.bs=1e400"])

# ---------------------------------------------------------------- fio output read by compare
add("fio-json-jobs-not-list", {"m.json": json.dumps({"fio version": "fio-3.28", "jobs": "x"})}, ["jobs", "not fio output"],
    ["compare", HDD, "{d}/m.json"], source="m.json")
add("fio-text-garbage", {"m.json": f"hello {CANARY}\nnot fio\n"}, ["not fio output"], ["compare", HDD, "{d}/m.json"], source="m.json")
add("fio-json-deep", {"m.json": "{\"jobs\": " + "[" * 100_000 + "]" * 100_000 + "}"}, ["not fio output"],
    ["compare", HDD, "{d}/m.json"], source="m.json")

# ---------------------------------------------------------------- YAML errors name line and column
add("yaml-syntax", "name: t\nsystem: [unclosed\n", ["line 3, column 1", "not valid YAML"])
add("yaml-duplicate-key", "name: t\nname: u\n", ["line 2, column 1", "duplicate key"])
add("yaml-tab", "name: t\nsystem:\n\t- x\n", ["line 3", "not valid YAML"])
add("yaml-top-level-list", "- a\n- b\n", ["mapping"])
add("yaml-empty", "", ["mapping"])
add("yaml-binary", "\udcff", ["UTF-8"])
_POS = y(exp(replications=0))
_POS_LINE = _POS.splitlines().index("replications: 0") + 1
add("yaml-field-position", _POS, [f"replications (line {_POS_LINE}, column 1)", "greater than or equal to 1"])


def _snapshot(d: Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*")}


def _write(d: Path, name: str, text: str) -> None:
    p = (d / name).resolve()
    p.parent.mkdir(parents=True, exist_ok=True)
    if "\udcff" in text:
        p.write_bytes(b"name: \xff\xfe\n")
    else:
        p.write_text(text, encoding="utf-8")


def test_at_least_sixty_cases():
    assert len(CASES) >= 60, len(CASES)
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_through_the_cli(case: Case, tmp_path: Path):
    top = tmp_path
    work = top / "a" / "b" / "work"  # room for ../ cases inside tmp_path
    work.mkdir(parents=True)
    for name, text in case.files.items():
        _write(work, name, text)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg", "COLUMNS": "200", "SIMRUN_USER_MODELS": str(top / "no-user-models")}
    if case.env.get("SHADOW_DASK"):
        shadow = top / "shadow"
        (shadow / "dask").mkdir(parents=True)
        (shadow / "dask" / "__init__.py").write_text("raise ImportError('dask is shadowed by the test')\n")
        env["PYTHONPATH"] = os.pathsep.join([str(shadow), str(ROOT)])
    env.update({k: v.replace("{d}", str(work)) for k, v in case.env.items() if k != "SHADOW_DASK"})
    before = _snapshot(top)
    argv = [a.replace("{d}", str(work)) for a in case.argv]
    try:
        r = subprocess.run([sys.executable, "-m", "simulator.cli", *argv], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case.id}: no answer within 120 s")
    out = r.stdout + r.stderr
    assert r.returncode == 2, out
    assert "Traceback" not in out, out
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, r.stderr
    msg = r.stderr
    assert case.source in errors[0], (case.source, msg)
    for want in case.expect:
        assert want in msg, (want, msg)
    assert CANARY not in out, out
    assert len(r.stderr) < 2000, r.stderr  # one message, not a dump
    after = _snapshot(top) - before
    assert not after, f"written: {sorted(after)}"
    assert not Path("/tmp/simrun-evil-report").exists()
