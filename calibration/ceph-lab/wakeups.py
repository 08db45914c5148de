#!/usr/bin/env python3
"""Per-job thread wakeup cost from the quiet campaign's CPU counters (docs/ceph-model.md, "Quiet campaign:
kernel fit with thread wakeups").

    python3 calibration/ceph-lab/wakeups.py [--data calibration/ceph-lab/data/quiet]

Source: ``DATA/runs.csv`` written by ``lab.py derive`` (the quiet campaign of 2026-11-23/24; nothing else
ran on the VM). No new measurement. The method is ceph_lab_batching's (docs/ceph-model.md, "Mechanism 3",
H1), applied to the quiet data and split per thread group: on the read path (no kv commits) the CPU per
read of each thread group falls from QD1 to QD16 because a thread that finds work queued runs it back to
back instead of being woken for it. The model books a wakeup per CPU job that finds a core idle
(``hosts.N.cpu.wakeup_cost``, simulator/ceph/resources.py ``CpuPool``), so the fall of a group divided
by the jobs the model books for that group per read is the cost per job, if at QD16 no job waits for a
wakeup (the host is 89 % busy there, so this is a lower bound).

Jobs the model books per 4 KiB read (simulator/ceph/osd.py, client): the OSD messenger receives the op
and sends the reply (2 jobs: ``msgr_recv_cost``, ``msgr_send_cost``), an op worker reads (1 job:
``read_cost``), fio submits and completes (2 jobs: ``client.submit_cost``, ``complete_cost``). The
aio, kv_sync, kv_finalize, other-BlueStore and other OSD threads get no job of their own in the model
(their CPU is inside ``read_cost``): their fall is listed but has no job to divide by.

Rows: ``level=group``: per thread group (croit sequence, randread, mean and sample sd over the 3
repeats at QD 1 / 4 / 16), fall = QD1 - QD16 with its standard error, jobs per read, fall per job.
``level=derived``: ``pooled`` = summed fall of the groups with jobs / their summed jobs (the value
booked as hosts.0.cpu.wakeup_cost, rounded to the µs in ``wakeup_cost_us``); ``osd_total`` = the
OSDs' whole CPU per read / 3 jobs and ``fio`` = fio / 2 jobs (ceph_lab_batching's two estimates).

Writes ``DATA/wakeups.csv``.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import statistics as st
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE / "data" / "quiet"
SEQUENCE = "croit"
RW = "randread"
QDS = (1, 4, 16)
#: (group, runs.csv column, jobs per read the model books for it)
GROUPS = (
    ("messenger", "cpu_osd_messenger_us_per_io", 2),
    ("op_workers", "cpu_osd_op_workers_us_per_io", 1),
    ("fio", "cpu_fio_us_per_io", 2),
    ("aio", "cpu_osd_aio_us_per_io", 0),
    ("kv_sync", "cpu_osd_kv_sync_us_per_io", 0),
    ("kv_final", "cpu_osd_kv_final_us_per_io", 0),
    ("bstore_other", "cpu_osd_bstore_other_us_per_io", 0),
    ("osd_other", "cpu_osd_other_us_per_io", 0),
    ("osd_total", "cpu_osd_us_per_io", 3),
)
COLUMNS = ("level", "group", "column", "jobs_per_read", "n", "qd1_us", "qd1_sd", "qd4_us", "qd4_sd", "qd16_us",
           "qd16_sd", "fall_us", "fall_se", "us_per_job", "us_per_job_se", "wakeup_cost_us")


def _f(x: str | None) -> float:
    """A counter value; an empty cell is a thread group with no CPU in the window (0)."""
    return float(x) if x not in (None, "") else 0.0


def _rows(p: Path) -> list[dict[str, str]]:
    with p.open(newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _g(x: float | None) -> str:
    return "" if x is None else f"{x:.4g}"


def derive(data: Path) -> list[dict]:
    runs = [r for r in _rows(data / "runs.csv") if r["sequence"] == SEQUENCE and r["rw"] == RW]
    out: list[dict] = []
    falls: dict[str, tuple[float, float, int]] = {}
    for group, col, jobs in GROUPS:
        row: dict = {"level": "group", "group": group, "column": col, "jobs_per_read": jobs}
        means: dict[int, tuple[float, float, int]] = {}
        for qd in QDS:
            v = [_f(r.get(col)) for r in runs if int(r["qd"]) == qd]
            if len(v) < 2:
                raise SystemExit(f"wakeups.py: {data / 'runs.csv'}: fewer than 2 {SEQUENCE} {RW} runs at QD{qd}")
            means[qd] = (st.mean(v), st.stdev(v), len(v))
            row[f"qd{qd}_us"], row[f"qd{qd}_sd"] = means[qd][0], means[qd][1]
        row["n"] = min(m[2] for m in means.values())
        (m1, s1, n1), (m16, s16, n16) = means[1], means[16]
        fall, se = m1 - m16, math.sqrt(s1 * s1 / n1 + s16 * s16 / n16)
        row["fall_us"], row["fall_se"] = fall, se
        if jobs:
            row["us_per_job"], row["us_per_job_se"] = fall / jobs, se / jobs
        falls[group] = (fall, se, jobs)
        out.append(row)
    booked = [g for g, _, j in GROUPS if j and g != "osd_total"]
    fall = sum(falls[g][0] for g in booked)
    se = math.sqrt(sum(falls[g][1] ** 2 for g in booked))
    jobs = sum(falls[g][2] for g in booked)
    out.append({"level": "derived", "group": "pooled", "column": "+".join(booked), "jobs_per_read": jobs,
                "fall_us": fall, "fall_se": se, "us_per_job": fall / jobs, "us_per_job_se": se / jobs,
                "wakeup_cost_us": round(fall / jobs)})
    for g in ("osd_total", "fio"):
        f_, s_, j_ = falls[g]
        out.append({"level": "derived", "group": g, "column": dict((a, b) for a, b, _ in GROUPS)[g],
                    "jobs_per_read": j_, "fall_us": f_, "fall_se": s_, "us_per_job": f_ / j_,
                    "us_per_job_se": s_ / j_})
    return out


def wakeup_cost_us(data: Path = DEFAULT_DATA) -> int:
    """The derived per-job wakeup cost, µs (the pooled row)."""
    return next(r["wakeup_cost_us"] for r in derive(data) if r["group"] == "pooled")


def render(data: Path) -> str:
    buf = io.StringIO()
    buf.write("# per-job thread wakeup cost from the fall of CPU per read, QD1 -> QD16, per thread group; "
              "source: quiet/runs.csv (lab.py derive), croit randread, computed by calibration/ceph-lab/wakeups.py\n")
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in derive(data):
        w.writerow({k: (_g(v) if isinstance(v, float) else v) for k, v in r.items()})
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    a = ap.parse_args(argv)
    if not (a.data / "runs.csv").is_file():
        print(f"wakeups.py: no runs.csv in {a.data}")
        return 2
    text = render(a.data)
    (a.data / "wakeups.csv").write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
