#!/usr/bin/env python3
"""Per-thread wakeup rule: its two parameters from the quiet campaign's counters (docs/ceph-model.md, "Quiet
campaign: per-thread wakeup rule").

    python3 calibration/ceph-lab/thread_wakeups.py --sim DIR [--data calibration/ceph-lab/data/quiet]

DIR as committed (data/quiet/thread_wakeups.csv; ~2 min):

    simrun run calibration/ceph-lab/experiment.yaml --out DIR --set system.cluster.profile=clusters/ceph_lab_quiet_kernel_thread \
        --set workload.global.runtime=5s --set 'sweep.axes.variant.values={croit: {}}' --set 'sweep.axes.qd.values=[1,16]' \
        --set system.cluster.params.hosts.0.cpu.speed=1.54761 --set system.cluster.params.osd.cost_cv=0.725269

Hypothesis (a) of the kernel fit's misses: a daemon thread pays a wakeup (CPU: futex, context switch, cold
caches) and an off-CPU wake delay (scheduler latency) only when it was asleep when its work arrived; work that
reaches a thread still busy runs without either (simulator.ceph.resources.CpuPool.run,
``hosts.N.cpu.thread_wakeup_cost`` / ``thread_wake_delay``).

* **Wake delay** ``thread_wake_delay``: BlueStore's ``op_before_dequeue_op_lat`` at QD1 of the croit randread
  runs (``op_queue_wait_mean_ms`` in ``DATA/runs.csv``): with one read in flight the op worker is asleep when
  the messenger queues the op, so the enqueue-to-dequeue time is the worker's wake latency. Measured, not fitted.
* **Wakeup CPU** ``thread_wakeup_cost``: wakeups.py's method with the per-thread criterion. The CPU per read of
  a thread group falls from QD1 to QD16 (the lab's per-thread /proc counters, croit randread, 3 repeats) by
  W x (wakeups per read at QD1 - wakeups per read at QD16). The lab does not count wakeups, so the wakeups
  per read are the model's under the rule (``--sim``: a ``simrun run`` of the croit sequence on the rule's
  profile at the model of record's CPU speed and cost cv, whose ``cpu_thread_jobs`` / ``cpu_thread_wakes``
  host statistics count them per thread group); pooled over the groups the model books jobs for
  (OSD messenger <-> ``osd.msgr``, op workers <-> ``osd.op_worker``, fio <-> ``client.submit`` +
  ``client.complete``): W = sum of falls / sum of the drops in wakeups per read. The wake counts depend a
  little on W, so the profile's W is a fixed point (the sim run is made with the W it reports, to 1 µs).
  This uses the croit randread QD16 point's CPU counters (not its IOPS or latency): its IOPS and latencies
  remain predictions, but not independent of the CPU counters at that point.

Writes ``DATA/thread_wakeups.csv``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import statistics as st
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE / "data" / "quiet"
#: (lab thread group, runs.csv column, model thread groups)
GROUPS = (
    ("messenger", "cpu_osd_messenger_us_per_io", ("osd.msgr",)),
    ("op_workers", "cpu_osd_op_workers_us_per_io", ("osd.op_worker",)),
    ("fio", "cpu_fio_us_per_io", ("client.submit", "client.complete")),
)
QDS = (1, 4, 16)
COLUMNS = ("level", "group", "qd1_us", "qd4_us", "qd16_us", "fall_us", "fall_se", "sim_wakes_qd1", "sim_wakes_qd4",
           "sim_wakes_qd16", "wake_drop", "us_per_wakeup", "value_us")


def _rows(p: Path) -> list[dict[str, str]]:
    with p.open(newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _f(x: str | None) -> float:
    return float(x) if x not in (None, "") else 0.0


def _g(x: float | None) -> str:
    return "" if x is None else f"{x:.4g}"


def sim_wakes(sim: Path) -> dict[tuple[str, int], dict[str, float]]:
    """(rw, qd) -> model thread group -> wakeups per client IO (croit rows of a ``simrun run`` output)."""
    out = {}
    for row in _rows(sim / "summary.csv"):
        if row.get("variant", "croit") != "croit":
            continue
        rw, qd = row["rw"], int(float(row["qd"]))
        run = json.loads((sim / "runs" / f"p{int(row['point']):03d}_r00.json").read_text())
        hosts = run["sim"]["cluster"]["hosts"]
        wakes: dict[str, float] = {}
        jobs: dict[str, float] = {}
        for h in hosts.values():
            for g, n in (h.get("cpu_thread_wakes") or {}).items():
                wakes[g] = wakes.get(g, 0.0) + n
            for g, n in (h.get("cpu_thread_jobs") or {}).items():
                jobs[g] = jobs.get(g, 0.0) + n
        if not jobs:
            raise SystemExit(f"thread_wakeups.py: {sim}: no cpu_thread_wakes statistics (run the rule's profile)")
        ios = jobs.get("client.submit", 0.0)  # one submission per 4 KiB client IO
        out[(rw, qd)] = {g: wakes.get(g, 0.0) / ios for g in jobs}
    return out


def derive(data: Path, sim: Path) -> list[dict]:
    runs = _rows(data / "runs.csv")
    out: list[dict] = []
    # the wake delay: op queue wait of the croit randread QD1 runs
    v = [1000 * _f(r["op_queue_wait_mean_ms"]) for r in runs
         if r["sequence"] == "croit" and r["rw"] == "randread" and int(r["qd"]) == 1]
    if len(v) < 2:
        raise SystemExit(f"thread_wakeups.py: {data / 'runs.csv'}: fewer than 2 croit randread QD1 runs")
    out.append({"level": "measured", "group": "wake_delay (op_before_dequeue_op_lat, croit randread QD1)",
                "qd1_us": st.mean(v), "fall_se": st.stdev(v) / math.sqrt(len(v)), "value_us": round(st.mean(v))})
    wk = sim_wakes(sim)
    reads = [r for r in runs if r["sequence"] == "croit" and r["rw"] == "randread"]
    tot_fall = tot_drop = 0.0
    tot_se2 = 0.0
    for group, col, mgroups in GROUPS:
        m = {}
        for qd in QDS:
            x = [_f(r.get(col)) for r in reads if int(r["qd"]) == qd]
            m[qd] = (st.mean(x), st.stdev(x), len(x))
        fall = m[1][0] - m[16][0]
        se = math.sqrt(m[1][1] ** 2 / m[1][2] + m[16][1] ** 2 / m[16][2])
        w = {qd: sum(wk[("randread", qd)].get(g, 0.0) for g in mgroups) for qd in QDS if ("randread", qd) in wk}
        drop = w[1] - w[16]
        out.append({"level": "group", "group": group, "qd1_us": m[1][0], "qd4_us": m[4][0], "qd16_us": m[16][0],
                    "fall_us": fall, "fall_se": se, "sim_wakes_qd1": w[1], "sim_wakes_qd4": w.get(4),
                    "sim_wakes_qd16": w[16], "wake_drop": drop, "us_per_wakeup": fall / drop if drop > 0 else None})
        tot_fall += fall
        tot_drop += drop
        tot_se2 += se * se
    out.append({"level": "derived", "group": "pooled thread_wakeup_cost", "fall_us": tot_fall,
                "fall_se": math.sqrt(tot_se2), "wake_drop": tot_drop, "us_per_wakeup": tot_fall / tot_drop,
                "value_us": round(tot_fall / tot_drop)})
    # the model's wakeups per write at QD1 (for the profile's per-op cost split)
    if ("randwrite", 1) in wk:
        for g, n in sorted(wk[("randwrite", 1)].items()):
            out.append({"level": "sim_write_qd1", "group": g, "sim_wakes_qd1": n})
    return out


def render(data: Path, sim: Path) -> str:
    buf = io.StringIO()
    buf.write("# per-thread wakeup rule: wake delay (measured) and wakeup CPU (lab CPU fall per read QD1 -> QD16 over "
              "the model's drop in wakeups per read); source: quiet/runs.csv (lab.py derive), croit; computed by "
              "calibration/ceph-lab/thread_wakeups.py\n")
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in derive(data, sim):
        w.writerow({k: (_g(v) if isinstance(v, float) else v) for k, v in r.items()})
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--sim", type=Path, required=True,
                    help="a simrun run output of experiment.yaml (croit) on the rule's profile")
    a = ap.parse_args(argv)
    if not (a.data / "runs.csv").is_file():
        print(f"thread_wakeups.py: no runs.csv in {a.data}")
        return 2
    if not (a.sim / "summary.csv").is_file():
        print(f"thread_wakeups.py: no summary.csv in {a.sim}")
        return 2
    text = render(a.data, a.sim)
    (a.data / "thread_wakeups.csv").write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
