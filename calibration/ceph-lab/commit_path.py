#!/usr/bin/env python3
"""Host CPU outside the Ceph daemons and fio, per kv commit (docs/ceph-model.md, "What the lab showed: the commit path").

    python3 calibration/ceph-lab/commit_path.py [--data calibration/ceph-lab/data/quiet]

Source: ``DATA/runs.csv`` and ``DATA/manifest.json`` written by ``lab.py derive`` (the quiet campaign of
2026-11-23/24: croit, norepeat, cold and smallcache sequences, 3 fresh clusters each). No new measurement.

Per run, over the window of the run's CPU counters (fio's wall time ``cpu_window_s``; ``lab.py`` reads
/proc/stat, the daemons' /proc/<pid>/stat and the perf counters right before and right after fio):

* ``busy_cpu_s``     = host_busy_share x nproc x cpu_window_s: every non-idle, non-iowait jiffy of the host
  (/proc/stat first line; nproc from manifest.json, 2);
* ``procs_cpu_s``    = (cpu_osd_s_per_s + cpu_mon_mgr_s_per_s + cpu_fio_s_per_s) x runtime_s: utime + stime
  of the 3 OSDs, the mon, the mgr (``lab.py`` divides their CPU seconds by fio's runtime_s) and fio's own
  CPU (its children's rusage);
* ``other_cpu_s``    = busy_cpu_s - procs_cpu_s: kernel work no lab process is charged for (the loop
  devices' workers, ext4's jbd2 journal thread, the virtio disk's interrupts and softirqs, loopback TCP
  softirqs), plus anything else on the VM (the quiet campaign ran nothing else; steal time, if any,
  cannot be told apart here);
* ``other_us_per_kv_commit`` = other_cpu_s / kv_commit_count (the 3 OSDs' BlueStore kv commits in the
  window), ``other_us_per_io`` = other_cpu_s / ios (fio's IOs).

Per (sequence, rw, QD) point: mean and sample sd over the repeats. Derived rows: ``kv_commit_cost`` =
mean of other_us_per_kv_commit over the croit randwrite QD1 runs (the points calibrate_quiet_kernel.yaml fits
on; the value models/clusters/ceph_lab_kernel.yaml books per kv commit, ``bluestore.kv_commit_cost``);
``lsq_writes`` = least squares over all write runs of other_cpu_s = a x kv_commits + b x ios (a in the
per-kv-commit column, b in the per-IO column): whether the other CPU follows the commits or the IOs.

Writes ``DATA/commit_path.csv``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import statistics as st
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from threads import _f, _rows  # the lab scripts' CSV readers, written once

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE / "data" / "quiet"
FIT_POINTS = (("croit", "randwrite", 1),)  # the write points the quiet fits are calibrated on
COLUMNS = ("level", "id", "sequence", "rw", "qd", "n", "busy_cpu_s", "procs_cpu_s", "other_cpu_s", "other_cores",
           "kv_commits", "ios", "kv_commits_per_io", "txc_per_kv_commit", "other_us_per_kv_commit",
           "other_us_per_kv_commit_sd", "other_us_per_io", "other_us_per_io_sd", "meas_kv_commit_mean_ms",
           "loadavg_1m_before")


def nproc(data: Path) -> int:
    """The host's CPU count from manifest.json (every invocation must agree)."""
    man = json.loads((data / "manifest.json").read_text())
    ns = {int(inv["machine"]["nproc"]) for inv in man["invocations"]}
    if len(ns) != 1:
        raise SystemExit(f"{data / 'manifest.json'}: invocations on machines with different nproc {sorted(ns)}")
    return ns.pop()


def per_run(data: Path) -> list[dict[str, object]]:
    cores = nproc(data)
    out = []
    for r in _rows(data / "runs.csv"):
        busy, win, rt = _f(r["host_busy_share"]), _f(r["cpu_window_s"]), _f(r["runtime_s"])
        if busy is None or win is None or rt is None:
            continue
        busy_s = busy * cores * win
        procs_s = (_f(r["cpu_osd_s_per_s"]) + _f(r["cpu_mon_mgr_s_per_s"]) + _f(r["cpu_fio_s_per_s"])) * rt
        other = busy_s - procs_s
        kv = _f(r["kv_commit_count"]) or 0.0
        ios = _f(r["ios"]) or 0.0
        out.append({
            "level": "run", "id": r["id"], "sequence": r["sequence"], "rw": r["rw"], "qd": int(r["qd"]), "n": 1,
            "busy_cpu_s": busy_s, "procs_cpu_s": procs_s, "other_cpu_s": other, "other_cores": other / win,
            "kv_commits": kv, "ios": ios, "kv_commits_per_io": kv / ios if ios else None,
            "txc_per_kv_commit": _f(r["txc_per_kv_commit"]),
            "other_us_per_kv_commit": 1e6 * other / kv if kv else None,
            "other_us_per_io": 1e6 * other / ios if ios else None,
            "meas_kv_commit_mean_ms": _f(r["kv_commit_mean_ms"]),
            "loadavg_1m_before": _f(r["loadavg_1m_before"]),
        })
    return out


def _mean(rs: list[dict], k: str) -> float | None:
    v = [r[k] for r in rs if r[k] is not None]
    return st.mean(v) if v else None


def _sd(rs: list[dict], k: str) -> float | None:
    v = [r[k] for r in rs if r[k] is not None]
    return st.stdev(v) if len(v) > 1 else None


def _lsq2(rows: list[dict]) -> tuple[float, float]:
    """other_cpu_s = a kv_commits + b ios, least squares (normal equations of two regressors, no intercept)."""
    sxx = sum(r["kv_commits"] ** 2 for r in rows)
    syy = sum(r["ios"] ** 2 for r in rows)
    sxy = sum(r["kv_commits"] * r["ios"] for r in rows)
    sxz = sum(r["kv_commits"] * r["other_cpu_s"] for r in rows)
    syz = sum(r["ios"] * r["other_cpu_s"] for r in rows)
    det = sxx * syy - sxy * sxy
    return (sxz * syy - syz * sxy) / det, (syz * sxx - sxz * sxy) / det


def analyse(data: Path) -> list[dict[str, object]]:
    runs = per_run(data)
    groups: dict[tuple[str, str, int], list[dict]] = {}
    for r in runs:
        groups.setdefault((r["sequence"], r["rw"], r["qd"]), []).append(r)
    points = []
    for (seq, rw, qd), rs in groups.items():
        p: dict[str, object] = {"level": "point", "id": f"{seq}/{rw}/{qd}", "sequence": seq, "rw": rw, "qd": qd,
                                "n": len(rs)}
        for k in ("busy_cpu_s", "procs_cpu_s", "other_cpu_s", "other_cores", "kv_commits", "ios", "kv_commits_per_io",
                  "txc_per_kv_commit", "other_us_per_kv_commit", "other_us_per_io", "meas_kv_commit_mean_ms",
                  "loadavg_1m_before"):
            p[k] = _mean(rs, k)
        p["other_us_per_kv_commit_sd"] = _sd(rs, "other_us_per_kv_commit")
        p["other_us_per_io_sd"] = _sd(rs, "other_us_per_io")
        points.append(p)
    fit = [r for r in runs if (r["sequence"], r["rw"], r["qd"]) in FIT_POINTS]
    if not fit:
        raise SystemExit(f"{data / 'runs.csv'}: no run of the fit points {FIT_POINTS}")
    derived = [{
        "level": "derived", "id": "kv_commit_cost", "sequence": "+".join(s for s, _, _ in FIT_POINTS),
        "rw": "+".join(w for _, w, _ in FIT_POINTS), "qd": "+".join(str(q) for _, _, q in FIT_POINTS), "n": len(fit),
        "other_us_per_kv_commit": _mean(fit, "other_us_per_kv_commit"),
        "other_us_per_kv_commit_sd": _sd(fit, "other_us_per_kv_commit"),
    }]
    writes = [r for r in runs if r["rw"] == "randwrite" and r["kv_commits"]]
    if len(writes) >= 2:
        a, b = _lsq2(writes)
        derived.append({"level": "derived", "id": "lsq_writes", "sequence": "all", "rw": "randwrite", "qd": "all",
                        "n": len(writes), "other_us_per_kv_commit": 1e6 * a, "other_us_per_io": 1e6 * b})
    return runs + sorted(points, key=lambda p: (p["rw"], p["sequence"], p["qd"])) + derived


def kv_commit_cost_us(data: Path = DEFAULT_DATA) -> float:
    """The measured host CPU per kv commit outside the lab's processes (µs), over the fit points."""
    return next(r["other_us_per_kv_commit"] for r in analyse(data) if r["id"] == "kv_commit_cost")


def _fmt(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return f"{v:.4g}"
    return str(v)


def render(data: Path) -> str:
    buf = io.StringIO()
    buf.write(f"# host CPU outside the Ceph daemons and fio, per kv commit and per IO; source: {data.name}/runs.csv and "
              f"{data.name}/manifest.json (lab.py derive), computed by calibration/ceph-lab/commit_path.py\n")
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in analyse(data):
        w.writerow({k: _fmt(r.get(k)) for k in COLUMNS})
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a derived campaign directory (runs.csv, manifest.json)")
    a = ap.parse_args(argv)
    if not (a.data / "runs.csv").exists() or not (a.data / "manifest.json").exists():
        print(f"error: {a.data} has no runs.csv / manifest.json (lab.py derive writes them)")
        return 2
    txt = render(a.data)
    (a.data / "commit_path.csv").write_text(txt)
    for r in analyse(a.data):
        if r["level"] != "run":
            pk = r.get("other_us_per_kv_commit")
            pi = r.get("other_us_per_io")
            print(f"{r['id']:28s} n={r['n']:<3} other CPU per kv commit {pk if pk is None else round(pk, 1)} us, "
                  f"per IO {pi if pi is None else round(pi, 1)} us")
    print(f"wrote {a.data / 'commit_path.csv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
