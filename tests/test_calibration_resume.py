"""``simrun calibrate`` resumes its own runs from the campaign's journal (simulator.calibration.journal).

A cheap campaign (an M/G/c queue fitted to a two-row table, ~0.3-2 s per evaluation): interrupted (kill -9 of
the whole process group, Ctrl-C) and resumed, it writes the byte-identical profile and report of an
uninterrupted run; a journal of another campaign or of changed code is refused; a damaged journal is one
message naming the file, exit 2, nothing written; a torn last entry is dropped and evaluated again; the
journal parser is fuzzed with hypothesis."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from simulator.calibration.journal import read_journal
from simulator.cli import app
from simulator.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()
TABLE = "# a published table\nqd,read.iops,read.lat_mean_ms,read.p99_ms\n1,900,1.1,\n4,1700,2.3,9.0\n8,,,\n"


def _campaign(d: Path, runtime: str = "1s", workers: int = 1, **over) -> Path:
    """A campaign directory: the table and the spec (two free parameters, one discrete; Sobol then Nelder-Mead)."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "t.csv").write_text(TABLE)
    spec = {
        "name": "resume-tiny",
        "system": {"devices": [{"name": "q", "kind": "queue",
                                "params": {"servers": 2, "service": {"dist": "lognormal", "mean": "1ms", "cv": 0.7}}}]},
        "free": [{"key": "devices.0.params.service.mean", "bounds": ["0.3ms", "3ms"], "scale": "log"},
                 {"key": "devices.0.params.servers", "choices": [1, 2, 4]}],
        "targets": [{"csv": "t.csv", "options": {"rw": "randread", "bs": "4k", "iodepth": "{qd}", "ioengine": "libaio"}}],
        "loss": {"metrics": {"iops": 1.0, "lat_mean": 1.0, "p99": 0.5}},
        "optimizer": {"global": {"method": "sobol", "n": 4}, "local": {"method": "nelder-mead"}},
        "budget": {"max_evals": 12},
        "runtime": runtime,
        "workers": workers,
        "output": {"profile": "prof.yaml", "report": "rep"},
    }
    spec.update(over)
    p = d / "spec.yaml"
    p.write_text(yaml.safe_dump(spec, sort_keys=False))
    return p


def _journal(d: Path) -> Path:
    return d / "rep.work" / "journal.jsonl"


def _evals(d: Path) -> int:
    try:
        return sum(1 for ln in _journal(d).read_text().splitlines()[1:] if '"kind":"eval"' in ln)
    except OSError:
        return 0


def _outputs(d: Path) -> dict[str, bytes]:
    """Every file the fit wrote (report and profile) except the wall-clock figures."""
    out = {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted((d / "rep").rglob("*")) if p.is_file() and p.name != "timing.json"}
    out["prof.yaml"] = (d / "prof.yaml").read_bytes()
    return out


def _run(spec: Path, *args: str) -> object:
    cwd = os.getcwd()
    os.chdir(spec.parent)  # paths in messages and outputs relative to the campaign, as a user runs it
    try:
        return runner.invoke(app, ["calibrate", spec.name, *args])
    finally:
        os.chdir(cwd)


def _timing(d: Path) -> dict:
    return json.loads((d / "rep" / "timing.json").read_text())


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """The uninterrupted campaign (its outputs and journal)."""
    d = tmp_path_factory.mktemp("uninterrupted") / "c"
    spec = _campaign(d)
    r = _run(spec, "--quiet")
    assert r.exit_code == 0, r.output
    t = _timing(d)
    assert t["simulated_this_session"] == t["evaluations"] >= 8 and t["reused_from_journal"] == 0
    return d


def test_a_finished_campaign_run_again_is_replayed_from_its_journal(reference, tmp_path):
    d = tmp_path / "c"
    shutil.copytree(reference, d)
    before = _outputs(d)
    r = _run(d / "spec.yaml", "--quiet")
    assert r.exit_code == 0, r.output
    t = _timing(d)
    assert t["simulated_this_session"] == 0 and t["reused_from_journal"] == t["evaluations"]
    assert _outputs(d) == before


def test_kill_9_then_resume_equals_uninterrupted(reference, tmp_path):
    """The campaign in a real process with two workers, killed with SIGKILL (the whole process group) once a
    few evaluations are journaled, then resumed: same bytes as the uninterrupted run, and the resume reused
    what was journaled and simulated the rest. The reference ran with one worker: the worker count changes
    no result."""
    d = tmp_path / "c"
    spec = _campaign(d, workers=2)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "simulator.cli", "calibrate", spec.name, "--quiet"], cwd=d, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    t0 = time.monotonic()
    try:
        while _evals(d) < 3 and proc.poll() is None and time.monotonic() - t0 < 240:
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the campaign finished before it could be killed: make it slower"
    done = _evals(d)
    assert 3 <= done < 10
    assert not (d / "rep").exists() and not (d / "prof.yaml").exists()
    time.sleep(0.6)  # the orphaned workers notice the main process is gone (0.5 s) and end
    r = _run(spec, "--quiet")
    assert r.exit_code == 0, r.output
    t = _timing(d)
    assert t["reused_from_journal"] >= done - 1 >= 2 and t["simulated_this_session"] >= 1  # a torn last entry may be dropped
    assert t["reused_from_journal"] + t["simulated_this_session"] == t["evaluations"]
    assert _outputs(d) == _outputs(reference)


def test_sigterm_stops_the_workers_and_says_how_to_resume(tmp_path):
    """``kill PID`` (SIGTERM) of the main process: exit 130 with the resume message, and no worker is left."""
    d = tmp_path / "c"
    spec = _campaign(d, workers=2)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "simulator.cli", "calibrate", spec.name, "--quiet"], cwd=d, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    t0 = time.monotonic()
    try:
        while _evals(d) < 2 and proc.poll() is None and time.monotonic() - t0 < 240:
            time.sleep(0.02)
        assert proc.poll() is None, "the campaign finished before it could be stopped"
        proc.send_signal(signal.SIGTERM)
        err = proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert "run the same command again to resume" in " ".join(err.split()).lower() and "Traceback" not in err
    time.sleep(0.3)
    with pytest.raises(ProcessLookupError):  # the workers were terminated with the main process's exit
        os.killpg(proc.pid, 0)
    jf = read_journal(_journal(d))
    assert len(jf.entries) >= 2 and not jf.torn


def _sigterm_is_default() -> bool:
    return signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_a_worker_dies_on_sigterm_even_inside_a_compiled_run():
    """The pool's workers take SIGTERM's default action, not calibrate's SIGTERM-as-Ctrl-C handler inherited
    through fork: a Python handler runs only when a compiled core returns to the interpreter, so a worker
    stopped by stop_pool_now went on with its run for minutes (a 900 s croit chain, 2026-11-28)."""
    from simulator.calibration.calibrate import _sigterm_as_interrupt, open_executor

    with _sigterm_as_interrupt():
        assert not _sigterm_is_default()  # the main process's handler is in place while the workers fork
        with open_executor(2) as ex:
            assert all(ex.submit(_sigterm_is_default).result(timeout=60) for _ in range(4))


def _interrupt_at(monkeypatch, problem, n):
    """Ctrl-C (a KeyboardInterrupt) in the ``n``-th simulated unit of ``problem.run_unit``; returns the
    real ``run_unit`` (to put back for the resume)."""
    real = problem.run_unit
    calls = [0]

    def unit(u):
        calls[0] += 1
        if calls[0] == n:
            raise KeyboardInterrupt
        return real(u)

    monkeypatch.setattr(problem, "run_unit", unit)
    return real


def test_ctrl_c_stops_cleanly_and_resumes(reference, tmp_path, monkeypatch):
    """Ctrl-C (a KeyboardInterrupt in the 9th simulated unit): exit 130, a message saying how to resume, every
    journal line intact; the resume ends with the uninterrupted run's bytes."""
    import simulator.calibration.problem as problem

    d = tmp_path / "c"
    spec = _campaign(d)
    real = _interrupt_at(monkeypatch, problem, 9)
    r = _run(spec, "--quiet")
    assert r.exit_code == 130, r.output
    assert "interrupted" in r.output and "run the same command again to resume" in r.output.replace("\n", " ").lower()
    assert "Traceback" not in r.output
    jf = read_journal(_journal(d))
    assert not jf.torn and len(jf.entries) == 4  # 2 units per evaluation: evaluations 1-4 finished
    assert not (d / "rep").exists()
    monkeypatch.setattr(problem, "run_unit", real)
    r = _run(spec, "--quiet")
    assert r.exit_code == 0, r.output
    assert _timing(d)["reused_from_journal"] == 4
    assert _outputs(d) == _outputs(reference)


def test_another_campaigns_journal_is_refused(reference, tmp_path, monkeypatch):
    d = tmp_path / "c"
    _campaign(d, optimizer={"global": {"method": "sobol", "n": 5}, "local": {"method": "nelder-mead"}})  # another campaign
    (d / "rep.work").mkdir()
    shutil.copy(_journal(reference), _journal(d))
    before = _journal(d).read_bytes()
    r = _run(d / "spec.yaml", "--quiet")
    assert r.exit_code == 2, r.output
    out = " ".join(r.output.split())
    assert "rep.work/journal.jsonl" in out and "the spec differ" in out and "--fresh" in out and "Traceback" not in out
    assert _journal(d).read_bytes() == before and not (d / "rep").exists() and not (d / "prof.yaml").exists()
    # the same spec with other simulator sources: refused too, naming the sources
    d2 = tmp_path / "c2"
    shutil.copytree(reference, d2)
    import simulator.calibration.journal as journal

    monkeypatch.setattr(journal, "code_digest", lambda: "0" * 16)
    r = _run(d2 / "spec.yaml", "--quiet")
    assert r.exit_code == 2 and "the simulator's sources differ" in " ".join(r.output.split())
    monkeypatch.undo()
    # --fresh moves the foreign journal aside and starts over
    r = _run(d / "spec.yaml", "--quiet", "--fresh")
    assert r.exit_code == 0, r.output
    aside = list((d / "rep.work").glob("journal.*.old.jsonl"))
    assert len(aside) == 1 and aside[0].read_bytes() == before
    assert _timing(d)["reused_from_journal"] == 0


@pytest.mark.parametrize("damage", ["loss", "json", "header"])
def test_a_damaged_journal_is_one_message_exit_2_nothing_written(reference, tmp_path, damage):
    d = tmp_path / "c"
    shutil.copytree(reference, d)
    shutil.rmtree(d / "rep")
    (d / "prof.yaml").unlink()
    lines = _journal(d).read_text().splitlines(keepends=True)
    if damage == "loss":  # a changed figure in a middle entry: the checksum catches it
        e = json.loads(lines[3])
        lines[3] = lines[3].replace(f'"loss":{json.dumps(e["loss"])}', f'"loss":{json.dumps(e["loss"] * 0.5)}')
        assert lines[3] != _journal(reference).read_text().splitlines(keepends=True)[3]
    elif damage == "json":
        lines[2] = lines[2][: len(lines[2]) // 2] + "\n"
    else:
        lines[0] = '{"journal": "something else"}\n'
    _journal(d).write_text("".join(lines))
    before = sorted(p.relative_to(d) for p in d.rglob("*"))
    data = _journal(d).read_bytes()
    r = _run(d / "spec.yaml")
    assert r.exit_code == 2, r.output
    out = " ".join(r.output.split())
    assert "rep.work/journal.jsonl" in out and "damaged" in out and "Traceback" not in out
    assert out.count("error:") == 1
    assert sorted(p.relative_to(d) for p in d.rglob("*")) == before and _journal(d).read_bytes() == data


def test_a_torn_last_entry_is_dropped_and_evaluated_again(reference, tmp_path):
    d = tmp_path / "c"
    shutil.copytree(reference, d)
    shutil.rmtree(d / "rep")
    lines = _journal(d).read_text().splitlines(keepends=True)
    evals = [ln for ln in lines[1:] if '"kind":"eval"' in ln]
    n = 6
    torn = evals[n][: len(evals[n]) // 3]  # the 7th entry cut off mid-write, no newline
    _journal(d).write_text(lines[0] + "".join(evals[:n]) + torn)
    r = _run(d / "spec.yaml")
    assert r.exit_code == 0, r.output
    assert "cut off" in r.output and "dropped" in r.output
    t = _timing(d)
    assert t["reused_from_journal"] == n and t["simulated_this_session"] == t["evaluations"] - n
    assert _outputs(d) == _outputs(reference)
    jf = read_journal(_journal(d))
    assert not jf.torn and len(jf.entries) == t["evaluations"]


def test_status_reports_and_writes_nothing(reference, tmp_path):
    d = tmp_path / "c"
    shutil.copytree(reference, d)
    before = {p: p.read_bytes() for p in d.rglob("*") if p.is_file()}
    r = _run(d / "spec.yaml", "--status")
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    jf = read_journal(_journal(d))
    best = min(e.loss for e in jf.entries)
    assert f"evaluations: {len(jf.entries)} of budget 12" in out and f"best loss so far: {best:.4g}" in out
    assert "inputs unchanged" in out
    assert {p: p.read_bytes() for p in d.rglob("*") if p.is_file()} == before
    e = tmp_path / "empty"
    _campaign(e)
    r = _run(e / "spec.yaml", "--status")
    assert r.exit_code == 0 and "no journal yet" in r.output and not (e / "rep.work").exists()


# ------------------------------------------------------------------------------------ the parser, fuzzed
@pytest.fixture(scope="module")
def journal_bytes(reference) -> bytes:
    return _journal(reference).read_bytes()


def _parse(tmp: Path, data: bytes):
    p = tmp / "journal.jsonl"
    p.write_bytes(data)
    try:
        return read_journal(p)
    except ConfigError as e:
        assert str(p) in str(e)
        return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=10**6))
def test_fuzz_truncation_keeps_the_complete_prefix(journal_bytes, tmp_path, cut):
    data = journal_bytes[: cut % (len(journal_bytes) + 1)]
    ref = read_journal_bytes(tmp_path, journal_bytes)
    header_end = journal_bytes.index(b"\n") + 1
    jf = _parse(tmp_path, data)
    if len(data) < header_end:
        assert jf is None  # no complete header: refused, never guessed
        return
    assert jf is not None
    complete = data.count(b"\n") - 1  # complete entry lines (eval or end)
    n = sum(1 for ln in data.split(b"\n")[1 : complete + 1] if b'"kind":"eval"' in ln)
    assert [e.values for e in jf.entries] == [e.values for e in ref.entries[:n]]
    assert [e.loss for e in jf.entries] == [e.loss for e in ref.entries[:n]]
    assert jf.torn == (not data.endswith(b"\n"))


def read_journal_bytes(tmp: Path, data: bytes):
    p = tmp / "ref.jsonl"
    p.write_bytes(data)
    return read_journal(p)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pos=st.integers(min_value=0, max_value=10**6), byte=st.integers(min_value=0, max_value=255))
def test_fuzz_a_changed_byte_is_refused_or_harmless(journal_bytes, tmp_path, pos, byte):
    """One byte changed anywhere: the parser raises a ConfigError naming the file, or drops a torn last line,
    or reads entries equal to the original's; it never accepts an altered entry nor raises anything else."""
    i = pos % len(journal_bytes)
    data = journal_bytes[:i] + bytes([byte]) + journal_bytes[i + 1 :]
    ref = read_journal_bytes(tmp_path, journal_bytes)
    jf = _parse(tmp_path, data)
    if jf is None:
        return
    k = len(jf.entries)
    assert k >= len(ref.entries) - 1
    for a, b in zip(jf.entries, ref.entries[:k], strict=True):
        assert (a.values, a.rows, a.loss, a.rms, a.failed, a.wall_s) == (b.values, b.rows, b.loss, b.rms, b.failed, b.wall_s)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(junk=st.binary(min_size=0, max_size=300), newline=st.booleans())
def test_fuzz_appended_junk_is_a_torn_line_or_refused(journal_bytes, tmp_path, junk, newline):
    data = journal_bytes + junk + (b"\n" if newline else b"")
    ref = read_journal_bytes(tmp_path, journal_bytes)
    jf = _parse(tmp_path, data)
    if jf is not None:
        assert [e.loss for e in jf.entries] == [e.loss for e in ref.entries]


def test_a_batch_cut_by_the_budget_says_evaluations(tmp_path):
    """--max-evals smaller than the Sobol screen (the smoke test of a long campaign): the fit reports that the
    evaluation budget stopped it, not convergence."""
    from simulator.calibration.optimize import Optimizer
    from simulator.calibration.problem import Problem, make_runner
    from simulator.calibration.spec import load_spec

    prob = Problem(load_spec(_campaign(tmp_path / "c", runtime="0.3s", budget={"max_evals": 3},
                                       optimizer={"global": {"method": "sobol", "n": 8}, "local": {"method": "nelder-mead"}})))
    fit = Optimizer(prob, make_runner(None)).run()
    assert fit.evals == 3 and fit.stopped_by == "evaluations"
    assert [h["stage"] for h in fit.history] == ["start", "sobol", "sobol"]


def test_the_profiles_digest_follows_profile_files_and_names(tmp_path):
    """A profile named by file beside the spec (and a library profile by name, with its nested profiles) is
    resolved into the inputs' digest: a changed parameter in the file changes it, a changed source text does not."""
    from simulator.calibration.journal import _digest, _profile_params

    def digest() -> str:
        out: dict = {}
        _profile_params({"devices": [{"profile": "q.yaml"}], "cluster": {"profile": "clusters/croit_mach2"}}, out, tmp_path)
        assert out["q.yaml"] is not None and out["clusters/croit_mach2"] is not None
        assert "hdd/seagate_exos_2x14" in out  # nested in the cluster profile
        return _digest(out)

    q = {"kind": "queue", "params": {"servers": 2, "service": {"dist": "exponential", "mean": "1ms"}}, "sources": {"servers": "a"}}
    (tmp_path / "q.yaml").write_text(yaml.safe_dump(q))
    a = digest()
    q["sources"]["servers"] = "another reason"
    (tmp_path / "q.yaml").write_text(yaml.safe_dump(q))
    assert digest() == a
    q["params"]["servers"] = 3
    (tmp_path / "q.yaml").write_text(yaml.safe_dump(q))
    assert digest() != a


@pytest.mark.parametrize(("glob", "local", "per_choice"), [("de", "powell", False), ("lhs", "nelder-mead", True)])
def test_other_optimizers_replay_identically(tmp_path, monkeypatch, glob, local, per_choice):
    """Differential evolution + Powell, and an LHS screen + Nelder-Mead per discrete choice (which picks its start
    points from the memo): interrupted by Ctrl-C in the 7th unit and resumed, the same bytes as uninterrupted."""
    import simulator.calibration.problem as problem

    opt = {"global": {"method": glob, "n": 3, "maxiter": 1}, "local": {"method": local, "per_choice": per_choice}}
    a, b = tmp_path / "a", tmp_path / "b"
    r = _run(_campaign(a, runtime="0.3s", optimizer=opt, budget={"max_evals": 14}), "--quiet")
    assert r.exit_code == 0, r.output
    real = _interrupt_at(monkeypatch, problem, 7)
    spec = _campaign(b, runtime="0.3s", optimizer=opt, budget={"max_evals": 14})
    assert _run(spec, "--quiet").exit_code == 130
    monkeypatch.setattr(problem, "run_unit", real)
    r = _run(spec, "--quiet")
    assert r.exit_code == 0, r.output
    assert _timing(b)["reused_from_journal"] == 3 and _timing(b)["simulated_this_session"] >= 1
    assert _outputs(b) == _outputs(a)


def test_revalidate_moves_a_journal_onto_code_that_gives_the_same_results(reference, tmp_path, monkeypatch):
    """--revalidate: a journal whose only difference is the simulator's code digest (a speed change) is
    resumed once its last evaluation, simulated again, comes out identical; the header records the rebase."""
    import simulator.calibration.journal as journal

    d = tmp_path / "c"
    shutil.copytree(reference, d)
    before = _outputs(d)
    old = read_journal(_journal(d))
    monkeypatch.setattr(journal, "code_digest", lambda: "0" * 16)
    r = _run(d / "spec.yaml", "--quiet")  # without the flag: refused, and the message offers it
    assert r.exit_code == 2 and "--revalidate" in " ".join(r.output.split())
    r = _run(d / "spec.yaml", "--quiet", "--revalidate")
    assert r.exit_code == 0, r.output
    new = read_journal(_journal(d))
    assert new.header["inputs"]["code"] == "0" * 16
    assert {k: v for k, v in new.header["inputs"].items() if k != "code"} == \
        {k: v for k, v in old.header["inputs"].items() if k != "code"}
    (rb,) = new.header["rebased"]
    assert rb["from_code"] == old.header["inputs"]["code"] and rb["to_code"] == "0" * 16
    assert rb["checked_evaluation"] == max(e.n for e in old.entries if not e.failed)
    assert [(e.values, e.rows, e.loss) for e in new.entries] == [(e.values, e.rows, e.loss) for e in old.entries]
    t = _timing(d)
    assert t["simulated_this_session"] == 0 and t["reused_from_journal"] == t["evaluations"]
    assert _outputs(d) == before
    # and now a plain resume on that code needs no flag
    r = _run(d / "spec.yaml", "--quiet")
    assert r.exit_code == 0, r.output


def test_revalidate_refuses_code_that_changes_a_result(reference, tmp_path, monkeypatch):
    import simulator.calibration.journal as journal
    import simulator.calibration.problem as problem

    d = tmp_path / "c"
    shutil.copytree(reference, d)
    before = _journal(d).read_bytes()
    monkeypatch.setattr(journal, "code_digest", lambda: "0" * 16)
    real = problem.run_unit

    def changed(unit):  # "new code": one figure one part in 10^9 off
        out = real(unit)
        out["row"] = {**out["row"], "read.iops": out["row"]["read.iops"] * (1 + 1e-9)}
        return out

    monkeypatch.setattr(problem, "run_unit", changed)
    r = _run(d / "spec.yaml", "--quiet", "--revalidate")
    assert r.exit_code == 2, r.output
    out = " ".join(r.output.split())
    assert "differs from the journal" in out and "read.iops" in out and "Traceback" not in out
    assert _journal(d).read_bytes() == before and not list((d / "rep.work").glob("*.old.jsonl"))


def test_revalidate_does_not_cover_other_inputs(reference, tmp_path):
    d = tmp_path / "c"
    shutil.copytree(reference, d)
    before = _journal(d).read_bytes()
    _campaign(d, loss={"metrics": {"iops": 1.0, "lat_mean": 0.5, "p99": 0.5}})  # the spec changed, not the code
    r = _run(d / "spec.yaml", "--quiet", "--revalidate")
    assert r.exit_code == 2 and "the spec differ" in " ".join(r.output.split())
    assert _journal(d).read_bytes() == before


def test_the_problem_digest_ignores_the_experiments_description_only():
    """Editing an experiment's description (documentation) keeps a campaign's journal resumable; any other change of
    the experiment (here one fio option) moves the problem digest. (The croit refit's journal was orphaned on
    2026-11-29 by a description edit of experiments/mach2_vs_single.yaml.)"""
    import copy

    from simulator.calibration.journal import campaign_inputs
    from simulator.calibration.problem import Problem
    from simulator.calibration.spec import load_spec

    root = Path(__file__).resolve().parents[1]
    prob = Problem(load_spec(root / "calibration" / "croit-mach2" / "calibrate_local.yaml"))
    a = campaign_inputs(prob)["problem"]
    raw = prob._exp_raw
    prob._exp_raw = {**copy.deepcopy(raw), "description": "another text"}
    assert campaign_inputs(prob)["problem"] == a
    changed = copy.deepcopy(raw)
    changed["workload"]["global"]["bs"] = "8k"
    prob._exp_raw = changed
    assert campaign_inputs(prob)["problem"] != a
