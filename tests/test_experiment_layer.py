"""The experiment layer end to end, through the command line (``python -m simulator.cli run``) and the
files it writes (summary.csv, comparison.csv, ratio.csv, runs/pNNN_rRR.json), so these tests do not
depend on how simulator.experiment is organised inside.

The experiments are tiny and live in tests/fixtures/experiment/. Expected figures come from theory
(an ideal queue device: deterministic service S with c servers at depth q <= c gives latency S and
IOPS q/S) or from another run of the same seed (byte-identical results); the reference tables are
made up, so the comparison rows can be checked exactly.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXP = Path(__file__).resolve().parent / "fixtures" / "experiment"


def simrun(*args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    r = subprocess.run([sys.executable, "-m", "simulator.cli", *args], capture_output=True, text=True, env=env,
                       cwd=cwd or ROOT, timeout=600, start_new_session=True)  # its own process group
    if check:
        assert r.returncode == 0, f"simrun {' '.join(args)} -> {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def run_files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out / "runs").glob("p*_r??.json"))}


# ---------------------------------------------------------------------------------------- references
@pytest.fixture(scope="module")
def refs_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("refs") / "out"
    simrun("run", str(EXP / "refs.yaml"), "--out", str(out), "--workers", "1", "-q")
    return out


def test_summary_follows_queueing_theory(refs_run: Path) -> None:
    summary = {(r["qd"], r["svc"]): r for r in rows(refs_run / "summary.csv")}
    assert set(summary) == {("1", "fast"), ("1", "slow"), ("4", "fast"), ("4", "slow")}
    for (qd, svc), r in summary.items():
        s_ms = {"fast": 1.0, "slow": 2.0}[svc]
        assert float(r["read.total_ios"]) == 400
        assert float(r["read.lat_mean_ms"]) == pytest.approx(s_ms, rel=1e-9)  # no queueing: q <= servers
        iops, ci = float(r["read.iops"]), float(r["read.iops_ci"])
        theory = int(qd) / (s_ms / 1000)
        assert 0 < ci < 0.1 * theory
        assert abs(iops - theory) <= ci, (qd, svc, iops, ci)


def test_reference_rows_long_and_unpivoted(refs_run: Path) -> None:
    comp = rows(refs_run / "comparison.csv")
    got = {(r["qd"], r["svc"], r["reference"], r["metric"]): r for r in comp}
    published = {
        # long table: one row per (qd, svc)
        ("1", "fast", "long", "read.iops"): 1250.0,
        ("4", "slow", "long", "read.iops"): 1600.0,
        # wide table, one column per qd, read as long rows; the empty cell (fast, qd 4) gives no row
        ("1", "fast", "wide", "read.lat_mean_ms"): 0.8,
        ("1", "slow", "wide", "read.lat_mean_ms"): 2.5,
        ("4", "slow", "wide", "read.lat_mean_ms"): 4.0,
    }
    predictions = {
        ("1", "slow", "prediction (not published)", "read.iops"),
        ("4", "fast", "prediction (not published)", "read.iops"),
        ("4", "fast", "prediction (not published)", "read.lat_mean_ms"),
    }
    assert set(got) == set(published) | predictions
    summary = {(r["qd"], r["svc"]): r for r in rows(refs_run / "summary.csv")}
    for key, pub in published.items():
        r = got[key]
        assert float(r["published"]) == pub
        sim = float(r["simulated"])
        assert sim == pytest.approx(float(summary[key[:2]][key[3]]), rel=1e-12)  # the point's own figure
        assert float(r["error"]) == pytest.approx(sim / pub - 1, rel=1e-9)
    for key in predictions:
        assert got[key]["published"] == "" and got[key]["error"] == ""
        assert float(got[key]["simulated"]) == pytest.approx(float(summary[key[:2]][key[3]]), rel=1e-12)


def test_ratio_table(refs_run: Path) -> None:
    ratio = {(r["qd"], r["metric"]): r for r in rows(refs_run / "ratio.csv")}
    assert set(ratio) == {(q, m) for q in ("1", "4") for m in ("read.iops", "read.lat_mean_ms")}
    for (_qd, metric), r in ratio.items():
        assert float(r["ratio"]) == pytest.approx(float(r["slow"]) / float(r["fast"]), rel=1e-12)
        # service 2 ms vs 1 ms: latency doubles exactly, IOPS halves (within 1 %: window edges)
        want = 2.0 if metric == "read.lat_mean_ms" else 0.5
        assert float(r["ratio"]) == pytest.approx(want, rel=1e-9 if want == 2.0 else 0.01)


# ------------------------------------------------------------------------------ sweeps, replications
@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sweep") / "out"
    simrun("run", str(EXP / "sweep.yaml"), "--out", str(out), "--workers", "1", "-q")
    return out


def test_exclude_drops_the_named_combination(sweep_run: Path) -> None:
    summary = rows(sweep_run / "summary.csv")
    assert [(r["qd"], r["bs"]) for r in summary] == [("1", "4k"), ("2", "4k"), ("2", "16k")]
    for r in summary:
        bs = {"4k": 4096, "16k": 16384}[r["bs"]]
        assert r["replications"] == "3"
        # each point ran with its own block size and depth
        assert float(r["read.bw_MiBps"]) == pytest.approx(float(r["read.iops"]) * bs / 2**20, rel=1e-9)
        # M/M/2 closed loop at depth <= 2: no queueing, latency = exponential service, mean 1 ms; the
        # mean of 3 x 300 draws has standard error 1 ms / sqrt(900)
        assert abs(float(r["read.lat_mean_ms"]) - 1.0) <= 4 * 1.0 / math.sqrt(900)


def test_zip_mode_advances_axes_together(tmp_path: Path) -> None:
    r = simrun("check", str(EXP / "sweep.yaml"), "--set", "sweep.mode=zip", "--set", "sweep.exclude=[]")
    assert "2 points × 3 replications" in r.stdout
    out = tmp_path / "zip"
    simrun("run", str(EXP / "sweep.yaml"), "--out", str(out), "--workers", "1", "-q", "--set", "sweep.mode=zip",
           "--set", "sweep.exclude=[]", "--set", "replications=1")
    assert [(r["qd"], r["bs"]) for r in rows(out / "summary.csv")] == [("1", "4k"), ("2", "16k")]


def test_replication_seeds_distinct_and_shared_across_points(sweep_run: Path) -> None:
    docs = {n: json.loads(b) for n, b in run_files(sweep_run).items()}
    assert len(docs) == 9
    seeds = {(d["sim"]["point"], d["sim"]["replication"]): d["sim"]["seed"] for d in docs.values()}
    for p in range(3):
        assert seeds[(p, 0)] == 11  # replication 0 runs with the experiment's seed
        assert len({seeds[(p, r)] for r in range(3)}) == 3  # replications are independent
        for r in range(3):
            assert seeds[(p, r)] == seeds[(0, r)]  # common random numbers across points
    # independent streams give different figures
    lat = [docs[f"p000_r{r:02d}.json"]["jobs"][0]["read"]["clat_ns"]["mean"] for r in range(3)]
    assert len(set(lat)) == 3


def test_same_seed_gives_byte_identical_runs(sweep_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "again"
    simrun("run", str(EXP / "sweep.yaml"), "--out", str(out), "--workers", "2", "-q")
    assert run_files(out) == run_files(sweep_run)
    assert (out / "summary.csv").read_bytes() == (sweep_run / "summary.csv").read_bytes()


@pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                    reason="dask.distributed not installed (optional extra: pip install -e '.[dask]')")
def test_dask_scheduler_gives_the_same_results(sweep_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "dask"
    simrun("run", str(EXP / "sweep.yaml"), "--out", str(out), "--workers", "2", "--scheduler", "dask", "-q")
    assert run_files(out) == run_files(sweep_run)
    assert (out / "summary.csv").read_bytes() == (sweep_run / "summary.csv").read_bytes()


def test_resume_reruns_only_a_damaged_or_missing_run(sweep_run: Path, tmp_path: Path) -> None:
    import shutil

    out = tmp_path / "resume"
    shutil.copytree(sweep_run, out)
    original = run_files(out)
    damaged = out / "runs" / "p001_r01.json"
    damaged.write_bytes(original["p001_r01.json"][: len(original["p001_r01.json"]) // 2])  # cut mid-write
    (out / "runs" / "p002_r02.json").unlink()
    untouched = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (out / "runs").glob("p*_r??.json")}
    untouched.pop("p001_r01.json")
    assert len(untouched) == 7
    simrun("run", str(EXP / "sweep.yaml"), "--out", str(out), "--workers", "1", "-q")
    # the seven good runs were reused (not rewritten); the damaged and the missing one were run again
    assert {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (out / "runs").glob("p*_r??.json")
            if p.name in untouched} == untouched
    assert run_files(out) == original
    assert (out / "summary.csv").read_bytes() == (sweep_run / "summary.csv").read_bytes()


# -------------------------------------------------------------------------------- persist_state / _by
def test_persist_state_carries_state_and_persist_by_splits_chains(tmp_path: Path) -> None:
    def lat(out: Path) -> dict[tuple[str, str], float]:
        return {(r["region"], r["pass"]): float(r["read.lat_mean_ms"]) for r in rows(out / "summary.csv")}

    exp = str(EXP / "persist.yaml")
    simrun("run", exp, "--out", str(tmp_path / "persist"), "--workers", "1", "-q")
    simrun("run", exp, "--out", str(tmp_path / "fresh"), "--workers", "1", "-q", "--set", "sweep.persist_state=false")
    simrun("run", exp, "--out", str(tmp_path / "one_chain"), "--workers", "1", "-q", "--set", "sweep.persist_by=[]")
    persist, fresh, one = lat(tmp_path / "persist"), lat(tmp_path / "fresh"), lat(tmp_path / "one_chain")
    for region in ("0", "100g"):
        # without persistence each point starts from a new drive: the second pass repeats the first
        assert fresh[(region, "second")] == fresh[(region, "first")]
        # with it, the second pass over the same 1 MiB finds the data in the drive's cache
        assert persist[(region, "second")] < 0.5 * persist[(region, "first")]
        # the first point of each chain starts from a new drive, exactly as without persistence
        assert persist[(region, "first")] == fresh[(region, "first")]
    # without persist_by the second region runs on the drive the first region left behind
    assert one[("100g", "first")] != fresh[("100g", "first")]


def test_reruns_join_the_end_of_their_sequence_with_a_pass_label(tmp_path: Path) -> None:
    from simulator.experiment.load import load_experiment
    from simulator.experiment.runner import plan_tasks

    exp = load_experiment(EXP / "reruns.yaml")
    chains = {t["points"][0][1]["region"]: [(p[1]["qd"], p[1]["pass"]) for p in t["points"]] for t in plan_tasks(exp)}
    # the grid first (pass 1), then the reruns in the order listed, each in its own region's sequence
    assert chains == {0: [(1, 1), (4, 1), (1, 2), (1, 3)], "100g": [(1, 1), (4, 1), (1, 2)]}

    def by_label(out: Path) -> dict[tuple[str, str, str], dict[str, str]]:
        return {(r["region"], r["qd"], r["pass"]): r for r in rows(out / "summary.csv")}

    exp_path = str(EXP / "reruns.yaml")
    simrun("run", exp_path, "--out", str(tmp_path / "persist"), "--workers", "1", "-q")
    simrun("run", exp_path, "--out", str(tmp_path / "fresh"), "--workers", "1", "-q", "--set", "sweep.persist_state=false")
    persist, fresh = by_label(tmp_path / "persist"), by_label(tmp_path / "fresh")
    assert len(persist) == 7 and all(r["pass"] in ("1", "2", "3") for r in persist.values())
    # its own sets apply to the rerun only
    assert float(persist[("100g", "1", "2")]["read.total_ios"]) == 64
    assert float(persist[("100g", "1", "1")]["read.total_ios"]) == 256
    # a rerun on a new system is the same run as the grid's (replication seeds are shared by the points)
    assert fresh[("0", "1", "2")]["read.lat_mean_ms"] == fresh[("0", "1", "1")]["read.lat_mean_ms"]
    # on the sequence's system it reads the same 1 MiB again: from the drive's cache the grid's runs filled
    assert float(persist[("0", "1", "2")]["read.lat_mean_ms"]) < 0.5 * float(persist[("0", "1", "1")]["read.lat_mean_ms"])


@pytest.mark.parametrize(("rerun", "needle"), [
    ("[{labels: {region: 0, qd: 2}}]", "sweep.reruns.0.labels: region=0, qd=2 is not a point of the sweep"),
    ("[{labels: {region: 0}}]", "does not name the axes ['qd']"),
    ("[{labels: {region: 0, qd: 1, disk: a}}]", "names ['disk'], which are not axes"),
    ("[{labels: {region: 0, qd: 1}, sets: {workload.global.rw: nonsense}}]", "rw"),
])
def test_bad_rerun_is_one_clear_error(tmp_path: Path, rerun: str, needle: str) -> None:
    out = tmp_path / "out"
    r = simrun("run", str(EXP / "reruns.yaml"), "--out", str(out), "-q", "--set", f"sweep.reruns={rerun}", check=False)
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


def test_reruns_refuse_an_axis_named_pass(tmp_path: Path) -> None:
    r = simrun("run", str(EXP / "persist.yaml"), "--out", str(tmp_path / "o"), "-q", "--set",
               "sweep.reruns=[{labels: {region: 0, pass: first}}]", check=False)
    assert r.returncode == 2 and "clashes with the label reruns add" in r.stderr and "Traceback" not in r.stderr


# ------------------------------------------------------------------------------------------- bench
def test_bench_reports_each_case() -> None:
    r = simrun("bench", "--ios", "2000", "--case", "queue-fio-qd16", "--case", "jobstats-add")
    lines = {ln.split("│")[1].strip(): ln.split("│") for ln in r.stdout.splitlines() if ln.count("│") == 5}  # case, description, IO/s, notes
    assert set(lines) == {"queue-fio-qd16", "jobstats-add"}
    for _case, cells in lines.items():
        rate = float(cells[3].strip().replace(",", ""))
        # simulated IOs per wall second: sane, not a speed target (those live in `simrun bench`)
        assert 1e2 < rate < 1e9


def test_bench_unknown_case_is_a_clear_error() -> None:
    r = simrun("bench", "--ios", "100", "--case", "nope", check=False)
    assert r.returncode == 2
    assert "--case" in r.stderr and "nope" in r.stderr and "Traceback" not in r.stderr
