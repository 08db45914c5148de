"""Does a shortened replay reproduce the full-length one? Point-by-point comparison of two runs of one sweep.

A calibration that simulates croit's sweep with shorter runs (``workload.global.runtime``) and, optionally,
with the state carried between runs scaled alike (``system.cluster.params.state_scale``) is only as good as
the shortened run's agreement with the full-length run it stands for (issue 14, item 1). This module
compares the two, point by point and metric by metric, against the confidence intervals the runs
themselves report (``summary.csv``: batch means within each run, :mod:`simulator.metrics.ci`).

A point agrees when ``|short - full| <= bound``, where ``bound`` is, by ``rule``:

* ``"full"`` — the full-length run's 95 % half-width: the shortened value lies inside the full run's CI;
* ``"difference"`` — the half-width of the difference of two independent estimates,
  ``sqrt(ci_full**2 + ci_short**2)``: the two runs are compatible with one expected value. A shorter run
  has the wider CI, so this is the right test of "same mean" when the shorter run's own noise is not to be
  held against it.

Either bound gets a floor of ``rel_floor`` x |full| (default 0.2 %): the latency histogram's bucket
resolution (HDR, three significant digits) makes point-mass percentiles report a CI of 0 in both runs.
A metric a run does not report (no value, or no CI where a bound needs one) is listed as ``no_ci`` and
counts as a disagreement: the data cannot show agreement there.

No simulation here: :func:`load_summary` reads an experiment's ``summary.csv``; :func:`load_table` and
:func:`write_table` read and write the committed long table (one row per point and metric);
:func:`compare` returns one :class:`PointCheck` per point and metric.

    python -m simulator.calibration.length FULL SHORT [--rule full|difference] [--csv OUT]

FULL and SHORT are experiment output directories (``simrun run ... --out DIR``) or a committed long table.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "METRICS",
    "Key",
    "PointCheck",
    "Value",
    "compare",
    "load",
    "load_summary",
    "load_table",
    "render",
    "write_checks",
    "write_table",
]

#: the metrics compared (a point's own direction: read for randread/read, write for randwrite/write);
#: the calibration's loss uses iops, p50, p90, p99 and p99.9
METRICS: tuple[str, ...] = ("iops", "lat_mean_ms", "p50_ms", "p90_ms", "p99_ms", "p99.9_ms")
#: a point: (mode, qd, pool, rw)
Key = tuple[str, int, str, str]
#: the columns of the committed long table
TABLE_COLUMNS = ("mode", "qd", "pool", "rw", "metric", "value", "ci", "steady", "warmup_s")

Rule = Literal["full", "difference"]


def _direction(rw: str) -> str:
    return "write" if "write" in rw else "read"


def _f(x: str | None) -> float | None:
    if x is None or x == "":
        return None
    v = float(x)
    return None if math.isnan(v) else v


@dataclass(frozen=True)
class Value:
    """One metric of one point: its estimate, its 95 % half-width (None = not reported) and, for the
    run's IOPS, the MSER steady-state verdict and truncation (None when not reported)."""

    value: float | None
    ci: float | None
    steady: float | None = None
    warmup_s: float | None = None


Run = dict[tuple[Key, str], Value]


def load_summary(out: Path, metrics: Sequence[str] = METRICS) -> Run:
    """(point, metric) -> Value from an experiment output directory's ``summary.csv`` (replication-combined
    rows; the point's own direction only). Only the grid's runs: a rerun after the grid (``pass`` > 1,
    the experiment's ``sweep.reruns``) follows every grid run of its sequence, so it changes none of them and
    is not part of the comparison of compressed and full-length grid runs."""
    p = Path(out) / "summary.csv"
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no summary.csv (is it an experiment output directory?)")
    run: Run = {}
    with p.open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if int(float(r.get("pass") or 1)) > 1:
                continue
            key: Key = (r["mode"], int(float(r["qd"])), r["pool"], r["rw"])
            d = _direction(r["rw"])
            st, wu = _f(r.get(f"{d}.steady")), _f(r.get(f"{d}.warmup_s"))
            for m in metrics:
                run[(key, m)] = Value(_f(r.get(f"{d}.{m}")), _f(r.get(f"{d}.{m}_ci")), st, wu)
    return run


def load_table(path: Path) -> Run:
    """(point, metric) -> Value from a committed long table (:data:`TABLE_COLUMNS`; ``#`` lines are comments)."""
    run: Run = {}
    with Path(path).open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            key: Key = (r["mode"], int(r["qd"]), r["pool"], r["rw"])
            run[(key, r["metric"])] = Value(_f(r["value"]), _f(r["ci"]), _f(r.get("steady")), _f(r.get("warmup_s")))
    return run


def load(src: Path, metrics: Sequence[str] = METRICS) -> Run:
    """A run from an output directory (its summary.csv) or a committed long table (a .csv file)."""
    src = Path(src)
    return load_summary(src, metrics) if src.is_dir() else load_table(src)


def write_table(run: Run, path: Path, header: Iterable[str] = ()) -> None:
    """Write ``run`` as the long table (``header`` lines first, as ``# `` comments), in point order."""
    with Path(path).open("w", newline="", encoding="utf-8") as f:
        for h in header:
            f.write(f"# {h}\n")
        w = csv.writer(f, lineterminator="\n")
        w.writerow(TABLE_COLUMNS)
        for (key, m), v in sorted(run.items(), key=lambda kv: (kv[0][0], METRICS.index(kv[0][1]) if kv[0][1] in METRICS else 99)):

            def g(x: float | None) -> str:
                return "" if x is None else f"{x:.6g}"

            w.writerow([*key, m, g(v.value), g(v.ci), g(v.steady), g(v.warmup_s)])


@dataclass(frozen=True)
class PointCheck:
    """One point and metric: both runs' values and half-widths, the bound used and the verdict."""

    key: Key
    metric: str
    full: float | None
    full_ci: float | None
    short: float | None
    short_ci: float | None
    bound: float | None
    #: "ok", "outside" or "no_ci" (a value or a needed CI missing)
    verdict: str

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"

    @property
    def rel_diff(self) -> float | None:
        """(short - full) / full, None without both values or when full is 0."""
        if self.full is None or self.short is None or self.full == 0:
            return None
        return self.short / self.full - 1.0

    @property
    def z(self) -> float | None:
        """|short - full| / bound (> 1 = outside), None without a bound."""
        if self.full is None or self.short is None or not self.bound:
            return None
        return abs(self.short - self.full) / self.bound


def _bound(full_ci: float | None, short_ci: float | None, full: float, rule: Rule, rel_floor: float) -> float | None:
    floor = rel_floor * abs(full)
    if rule == "full":
        return None if full_ci is None else max(full_ci, floor)
    if rule == "difference":
        if full_ci is None or short_ci is None:
            return None
        return max(math.hypot(full_ci, short_ci), floor)
    raise ValueError(f"rule must be 'full' or 'difference', not {rule!r}")


def compare(
    full: Mapping[tuple[Key, str], Value],
    short: Mapping[tuple[Key, str], Value],
    *,
    rule: Rule = "difference",
    metrics: Sequence[str] = METRICS,
    points: Iterable[Key] | None = None,
    rel_floor: float = 0.002,
) -> list[PointCheck]:
    """One :class:`PointCheck` per point of ``full`` (or ``points``) and metric, in point order. A point the
    short run lacks is a ``no_ci`` disagreement."""
    if rel_floor < 0:
        raise ValueError("rel_floor must be >= 0")
    keys = sorted(set(points) if points is not None else {k for k, _ in full})
    out: list[PointCheck] = []
    for key in keys:
        for m in metrics:
            fv, sv = full.get((key, m)), short.get((key, m))
            if fv is None or fv.value is None:
                continue  # the full run has no such metric here (e.g. a direction it did not run)
            s_val = sv.value if sv is not None else None
            s_ci = sv.ci if sv is not None else None
            if s_val is None:
                out.append(PointCheck(key, m, fv.value, fv.ci, None, s_ci, None, "no_ci"))
                continue
            b = _bound(fv.ci, s_ci, fv.value, rule, rel_floor)
            if b is None:
                verdict = "no_ci"
            else:
                verdict = "ok" if abs(s_val - fv.value) <= b else "outside"
            out.append(PointCheck(key, m, fv.value, fv.ci, s_val, s_ci, b, verdict))
    return out


def render(checks: Sequence[PointCheck], title: str = "") -> list[str]:
    """Markdown: one row per point with each metric as ``short (±rel %) ✓/✗``, then the counts."""
    by_key: dict[Key, dict[str, PointCheck]] = {}
    for c in checks:
        by_key.setdefault(c.key, {})[c.metric] = c
    metrics = [m for m in METRICS if any(m in d for d in by_key.values())]
    lines = [f"**{title}**", ""] if title else []
    lines.append("| mode | pool | rw | QD | " + " | ".join(f"{m} full ± CI → short" for m in metrics) + " |")
    lines.append("|---|---|---|---|" + "---|" * len(metrics))
    for key, d in by_key.items():
        cells = []
        for m in metrics:
            c = d.get(m)
            if c is None:
                cells.append("")
                continue
            fci = "?" if c.full_ci is None else f"{c.full_ci:.3g}"
            s = "—" if c.short is None else f"{c.short:.4g}"
            rd = "" if c.rel_diff is None else f" ({100 * c.rel_diff:+.0f}%)"
            mark = {"ok": "", "outside": " **✗**", "no_ci": " (no CI)"}[c.verdict]
            cells.append(f"{c.full:.4g} ± {fci} → {s}{rd}{mark}")
        mode, qd, pool, rw = key
        lines.append(f"| {mode} | {pool} | {rw} | {qd} | " + " | ".join(cells) + " |")
    n_ok = sum(c.ok for c in checks)
    n_no = sum(c.verdict == "no_ci" for c in checks)
    lines += ["", f"{n_ok} of {len(checks)} point-metrics agree; {len(checks) - n_ok - n_no} outside; {n_no} without a CI."]
    return lines


#: the columns of the committed comparison table (:func:`write_checks`)
CHECK_COLUMNS = ("runtime_s", "state_scale", "mode", "qd", "pool", "rw", "metric", "full", "full_ci", "short", "short_ci",
                 "rel_diff", "verdict_full", "verdict_difference")


def write_checks(path: Path, settings: Sequence[tuple[float, float, Run]], full: Run, header: Iterable[str] = (),
                 points: Iterable[Key] | None = None) -> None:
    """One row per setting (seconds per point, state scale, its run), point and metric: both runs' values and
    half-widths and the verdict under each rule (``header`` lines first, as ``# `` comments)."""
    pts = list(points) if points is not None else None
    with Path(path).open("w", newline="", encoding="utf-8") as f:
        for h in header:
            f.write(f"# {h}\n")
        w = csv.writer(f, lineterminator="\n")
        w.writerow(CHECK_COLUMNS)

        def g(x: float | None) -> str:
            return "" if x is None else f"{x:.6g}"

        for runtime_s, scale, short in settings:
            by_full = compare(full, short, rule="full", points=pts)
            by_diff = {(c.key, c.metric): c for c in compare(full, short, rule="difference", points=pts)}
            for c in by_full:
                d = by_diff[(c.key, c.metric)]
                w.writerow([f"{runtime_s:g}", f"{scale:g}", *c.key, c.metric, g(c.full), g(c.full_ci), g(c.short),
                            g(c.short_ci), "" if c.rel_diff is None else f"{c.rel_diff:.4f}", c.verdict, d.verdict])


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("full", type=Path, help="the full-length run: output directory or committed long table")
    ap.add_argument("short", type=Path, help="the shortened run: output directory or long table")
    ap.add_argument("--rule", choices=["full", "difference"], default="difference")
    ap.add_argument("--measured-only", action="store_true", help="only croit's measured random QDs (1, 4, 16, 64, 256)")
    ap.add_argument("--csv", type=Path, help="write the short run's long table here")
    a = ap.parse_args(argv)
    for p in (a.full, a.short):
        if not p.exists():
            print(f"error: {p}: no such file or directory", file=sys.stderr)
            return 2
    runs = []
    for p in (a.full, a.short):
        try:
            runs.append(load(p))
        except (KeyError, ValueError, TypeError, csv.Error, UnicodeDecodeError, OSError) as e:
            what = f"missing column {e}" if isinstance(e, KeyError) else type(e).__name__
            print(f"error: {p}: not a summary.csv directory or a long table ({what})", file=sys.stderr)
            return 2
    full, short = runs
    pts = None
    if a.measured_only:
        pts = [k for k, _ in full if k[0] == "random" and k[1] in (1, 4, 16, 64, 256)]
    checks = compare(full, short, rule=a.rule, points=pts)
    print("\n".join(render(checks, f"{a.short} vs {a.full} (rule {a.rule})")))
    if a.csv:
        write_table(short, a.csv)
    return 0 if all(c.ok for c in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
