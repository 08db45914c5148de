"""Profiles a user keeps outside models/, the one device-kind table, the run-size estimate, the
literal error printer, and byte-identical `simrun fio --output-format json`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from simulator.cli import app
from simulator.devices import registry
from simulator.errors import ConfigError

runner = CliRunner()
QUEUE_PARAMS = {"service": {"dist": "deterministic", "value": "2ms"}}


def _exp(tmp: Path, device: dict, **g) -> Path:
    glob = {"rw": "randread", "bs": "4k", "runtime": "0.2s", "time_based": 1, "filename": "sda", **g}
    p = tmp / "e.yaml"
    p.write_text(yaml.safe_dump({"name": "t", "system": {"devices": [{"name": "sda", **device}]},
                                 "workload": {"global": glob, "jobs": [{"name": "j"}]}}))
    return p


# ----------------------------------------------------------------------------- user profiles
def test_user_profile_directory_is_searched_before_the_library(tmp_path, monkeypatch):
    user = tmp_path / "mine"
    (user / "hdd").mkdir(parents=True)
    # shadows a library name, and a name of its own extending a library profile
    (user / "hdd" / "seagate_st91000640ns.yaml").write_text(yaml.safe_dump({"kind": "queue", "params": QUEUE_PARAMS}))
    (user / "hdd" / "my_disk.yaml").write_text(yaml.safe_dump({"extends": "hdd/toshiba_al13seb900", "params": {}}))
    monkeypatch.setenv("SIMRUN_USER_MODELS", str(user))
    assert registry.profile_roots() == [user, registry.models_dir()]
    assert registry.load_profile("hdd/seagate_st91000640ns")["kind"] == "queue"  # the user's, first
    mine = registry.load_profile("hdd/my_disk")
    assert mine["kind"] == "hdd" and Path(mine["file"]).parent == user / "hdd"
    assert registry.load_profile("hdd/toshiba_al13seb900")["file"].startswith(str(registry.models_dir()))  # library still searched


def test_user_profile_by_relative_path_beside_the_experiment(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMRUN_USER_MODELS", str(tmp_path / "none"))
    (tmp_path / "prof").mkdir()
    (tmp_path / "prof" / "q.yaml").write_text(yaml.safe_dump({"kind": "queue", "params": QUEUE_PARAMS}))
    p = _exp(tmp_path, {"profile": "prof/q.yaml"})
    r = runner.invoke(app, ["check", str(p)])
    assert r.exit_code == 0, r.output
    dk, cfg, origin = registry.resolve_params({"profile": "prof/q.yaml"}, source=str(p), field="system.devices.0")
    assert dk.kind == "queue" and cfg.service.value == pytest.approx(2e-3) and origin == str(tmp_path / "prof" / "q.yaml")


def test_command_line_device_may_be_any_path(tmp_path):
    (tmp_path / "q.yaml").write_text(yaml.safe_dump({"kind": "queue", "params": QUEUE_PARAMS}))
    jf = tmp_path / "j.fio"
    jf.write_text("[j]\nrw=randread\nruntime=0.2\ntime_based\n")
    r = runner.invoke(app, ["fio", str(jf), "--device", str(tmp_path / "q.yaml"), "--output-format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    # deterministic service 2 ms at depth 1: 0.2 s / 2 ms = 100 IOs (the last may straddle the end)
    assert doc["jobs"][0]["read"]["total_ios"] in (100, 101)


def test_nested_profile_file_resolves_beside_the_file_that_names_it(tmp_path, monkeypatch):
    """A RAID profile naming its member drive by a relative file resolves it beside the RAID profile
    (and an experiment's nested reference beside the experiment), whatever the working directory."""
    monkeypatch.setenv("SIMRUN_USER_MODELS", str(tmp_path / "none"))
    prof = tmp_path / "prof"
    prof.mkdir()
    (prof / "q.yaml").write_text(yaml.safe_dump({"kind": "queue", "params": QUEUE_PARAMS}))
    raid = {"kind": "raid", "params": {"level": 0, "members": {"count": 2, "device": {"profile": "q.yaml"}}}}
    (prof / "r.yaml").write_text(yaml.safe_dump(raid))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    _, cfg, _ = registry.resolve_params({"profile": str(prof / "r.yaml")}, trusted=True)
    assert cfg.members.device["profile"] == str((prof / "q.yaml").resolve())
    member, mcfg, origin = registry.resolve_params(cfg.members.device)
    assert member.kind == "queue" and mcfg.service.value == pytest.approx(2e-3) and origin == str((prof / "q.yaml").resolve())
    # written in an experiment: relative to the experiment's directory
    p = _exp(tmp_path, {"kind": "raid", "params": {"level": 0, "members": {"count": 2, "device": {"profile": "prof/q.yaml"}}}})
    r = runner.invoke(app, ["check", str(p)])
    assert r.exit_code == 0, r.output
    _, cfg2, _ = registry.resolve_params({"kind": "raid", "params": raid["params"] | {"members": {"count": 2, "device": {"profile": "prof/q.yaml"}}}},
                                         source=str(p), field="system.devices.0")
    assert cfg2.members.device["profile"] == str((prof / "q.yaml").resolve())


@pytest.mark.parametrize("ref", ["../q.yaml", "/tmp/q.yaml", "sub/../../q.yaml"])
def test_profile_file_in_a_file_stays_in_its_directory(tmp_path, ref):
    (tmp_path / "q.yaml").write_text(yaml.safe_dump({"kind": "queue", "params": {}}))
    d = tmp_path / "exp"
    (d / "sub").mkdir(parents=True)
    p = _exp(d, {"profile": ref})
    with pytest.raises(ConfigError) as e:
        registry.resolve_params({"profile": ref}, source=str(p), field="system.devices.0")
    assert e.value.field == "system.devices.0.profile"


# ----------------------------------------------------------------------------- one explicit kind table
def test_device_kinds_come_from_one_table():
    assert not hasattr(registry, "register_kind")
    kinds = registry.device_kinds()
    assert set(kinds) == set(registry.KIND_TABLE) == {"queue", "hdd", "ssd", "raid", "flash_read_cache", "ceph_cluster"}
    assert kinds["hdd"].config.__name__ == "HDDConfig" and kinds["ceph_cluster"].config.__name__ == "ClusterConfig"
    src = Path(registry.__file__).read_text()
    assert "ModuleNotFoundError" not in Path(registry.__file__).with_name("__init__.py").read_text()
    assert "register_kind(" not in src
    # every kind in the table names a module that exists (no swallowed ModuleNotFoundError)
    for name, kind in kinds.items():
        assert kind.config.__module__.startswith("simulator."), name


# ----------------------------------------------------------------------------- run-size estimate
def test_run_size_counts_threads_outstanding_and_ios():
    from simulator.limits import check_run_size
    from simulator.workloads.options import resolve_jobs

    jobs = resolve_jobs({"ioengine": "libaio", "iodepth": 32, "numjobs": 4}, [
        {"name": "a", "number_ios": 1000},
        {"name": "b", "size": "1MiB", "bs": "4k", "loops": 3, "numjobs": 2, "ioengine": "psync"},
    ])
    rs = check_run_size(jobs, devices=2)
    assert rs.job_threads == 6
    assert rs.outstanding == 4 * 32 + 2 * 1  # psync runs at depth 1
    assert rs.ios == 4 * 1000 + 2 * (256 * 3)


def test_run_size_refuses_with_the_field_that_drives_it():
    from simulator.limits import MAX_ARRIVALS, check_run_size
    from simulator.workloads.options import resolve_jobs

    jobs = resolve_jobs({}, [{"name": "a", "rate_iops": 10**7, "runtime": str(2 * MAX_ARRIVALS // 10**7) + "s", "time_based": 1}],
                        source="x.yaml", prefix="workload.")
    with pytest.raises(ConfigError) as e:
        check_run_size(jobs, devices=1)
    assert e.value.field == "workload.jobs.0.rate_iops" and "arrivals" in e.value.message


# ----------------------------------------------------------------------------- literal error printer
def test_error_printer_prints_markup_literally(tmp_path, capsys):
    import typer

    from simulator.cli import _fail

    with pytest.raises(typer.Exit) as e:
        _fail(ConfigError("value {'[/]': 1} [bold]not bold[/bold]", source="f.fio", field="[red] bs (line 2)"))
    assert e.value.exit_code == 2
    err = capsys.readouterr().err
    assert "f.fio: [red] bs (line 2): value {'[/]': 1} [bold]not bold[/bold]" in err


# ----------------------------------------------------------------------------- fio JSON is byte-identical
def test_fio_json_is_byte_identical_for_the_same_seed(tmp_path):
    jf = tmp_path / "j.fio"
    jf.write_text("[j]\nrw=randread\nioengine=libaio\niodepth=4\nruntime=0.3\ntime_based\n")
    outs = []
    for _ in range(2):
        r = runner.invoke(app, ["fio", str(jf), "--device", "hdd/seagate_st91000640ns", "--output-format", "json", "--seed", "7"])
        assert r.exit_code == 0, r.output
        outs.append(r.stdout)
    assert outs[0] == outs[1]
    doc = json.loads(outs[0])
    assert doc["timestamp"] == 0 and doc["time"] == "Thu Jan  1 00:00:00 1970"
