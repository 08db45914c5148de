"""What the planner writes and prints: the answer table, the rejections, candidates.csv, plan.json
and the Pareto plot (cost vs sustainable IOPS at the SLO)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from simulator.plan.candidates import Candidate

__all__ = ["pareto_front", "render", "write_outputs"]


def _fmt(x: float | None, pattern: str = "{:,.0f}") -> str:
    return "-" if x is None else pattern.format(x)


def _config(c: Candidate) -> str:
    s = c.shape
    db = f" + {s.db_per_host}x{s.db.name} DB/WAL (1:{min(s.db_fanout, s.osds_per_host)})" if s.db else ""
    return f"{s.osds_per_host}x{s.drive.name}{db}, {s.protection.label}, {s.nic.name}, {s.release}"


def _bn(name: str, util: dict[str, float]) -> str:
    """Bottleneck with its utilisation: 'drive 0.98', 'latency floor (drive 0.26)'."""
    for k, v in util.items():
        if name == k:
            return f"{k} {v:.2f}"
        if name == f"latency floor ({k})":
            return f"latency floor ({k} {v:.2f})"
    return name


def pareto_front(cands: list[Candidate]) -> list[Candidate]:
    """Simulated candidates no other beats on both cost (lower) and sustainable IOPS (higher)."""
    pts = [c for c in cands if c.sustainable[1] is not None]
    front = []
    for c in pts:
        dominated = any(
            (o.cost <= c.cost and (o.sustainable[1] or 0) >= (c.sustainable[1] or 0))
            and (o.cost < c.cost or (o.sustainable[1] or 0) > (c.sustainable[1] or 0))
            for o in pts
        )
        if not dominated:
            front.append(c)
    return sorted(front, key=lambda c: c.cost)


def _rejection_groups(cands: list[Candidate]) -> list[dict[str, Any]]:
    """Consecutive host counts of one shape with the same status and kind of reason, as one row."""
    rows: list[dict[str, Any]] = []
    for c in sorted(cands, key=lambda c: (c.shape.key, c.hosts)):
        if c.status == "meets":
            continue
        kind = c.reason.split(":")[0] if c.status == "pruned" else c.status
        last = rows[-1] if rows else None
        if last and last["shape"] == c.shape.key and last["kind"] == kind and last["status"] == c.status and last["h1"] + 1 == c.hosts:
            last["h1"] = c.hosts
            last["last"] = c
            continue
        rows.append({"shape": c.shape.key, "kind": kind, "status": c.status, "h0": c.hosts, "h1": c.hosts, "first": c, "last": c})
    return rows


def render(result: Any, console: Any) -> None:
    from rich.table import Table

    spec = result.spec
    r = spec.requirement
    slo = r.slo
    console.print(
        f"[bold]{spec.name}[/]: {float(r.usable_capacity) / 1e12:,.0f} TB usable, {r.target_iops:,.0f} IOPS "
        f"({', '.join(f'{g.clients} x {g.rw} {g.bssplit or int(g.bs)}' for g in r.workload)}) at "
        f"p{slo.percentile:g} <= {float(slo.latency) * 1e3:g} ms, survive {r.failure.survive}"
        + (f" ({r.failure.osds} OSDs)" if r.failure.survive == "osds" else "")
        + (", SLO during recovery" if r.failure.slo_during_recovery else ""),
        highlight=False,
    )
    best = result.meeting()
    t = Table(title=f"cheapest configurations meeting the SLO (of {len(result.candidates)} candidates)", title_justify="left")
    for col in ("#", "family", "hosts", "OSDs", "configuration", "cost USD", "usable TB",
                "IOPS at SLO [CI]", f"p{slo.percentile:g} ms at target" + (" (recovering)" if r.failure.slo_during_recovery else ""),
                "bottleneck (util)"):
        t.add_column(col, overflow="fold")
    for i, c in enumerate(best[: spec.report_top], 1):
        lo, est, hi = c.sustainable
        util = c.detail.get("util") or {}
        bn = _bn(c.bottleneck, util)
        p = c.detail.get("p_ms")
        pci = c.detail.get("p_ms_ci")
        t.add_row(str(i), c.shape.family, str(c.hosts), str(c.hosts * c.shape.osds_per_host), _config(c), _fmt(c.cost),
                  _fmt(c.shape.usable(c.hosts, r.failure, r.max_fill) / 1e12),
                  f"{_fmt(est)} [{_fmt(lo)}, {_fmt(hi) if hi is not None else '>'}]"
                  + (" *" if c.detail.get("undecided") else ""),
                  "-" if p is None else (f"{p:.1f}" + (f" ±{(pci[1] - pci[0]) / 2:.1f}" if pci else "")), bn)
    console.print(t)
    if len(best) >= 2 and best[1].cost <= best[0].cost * 1.05 and best[1].shape.key != best[0].shape.key:
        console.print(f"note: the two cheapest configurations are within {100 * (best[1].cost / best[0].cost - 1):.1f} % of "
                      "each other: closer than the prices (illustrative) are good; compare them on their other merits "
                      "(latency margin, bottleneck, headroom on pareto.png)", highlight=False)
    if any(c.detail.get("undecided") for c in best[: spec.report_top]):
        console.print("* meets by the point estimate; the CI at the target load straddles the bound (more probes or "
                      "simulation.refine would decide it)", highlight=False)
    if not best:
        console.print("[bold red]no candidate meets the SLO[/] (see the rejections below)")
    rej = Table(title="rejected and unsimulated candidates (host counts grouped per configuration)", title_justify="left")
    for col in ("family", "configuration", "hosts", "status", "reason", "bottleneck"):
        rej.add_column(col, overflow="fold")
    for g in _rejection_groups(result.candidates):
        c = g["last"]
        hosts = str(g["h0"]) if g["h0"] == g["h1"] else f"{g['h0']}-{g['h1']}"
        util = c.detail.get("util") or {}
        bn = _bn(c.bottleneck, util)
        rej.add_row(c.shape.family, _config(c), hosts, c.status, c.reason, bn)
    console.print(rej)
    for n in result.notes:
        console.print(f"note: {n}", highlight=False)
    lays = [u["layout"] for u in result.units.values() if u.get("layout")]
    if lays:
        sim = spec.simulation
        scales = [lay.get("data_scale", 1.0) for lay in lays]
        console.print(
            f"note: scaled simulation: each configuration as a slice of {min(lay['hosts'] for lay in lays)}-"
            f"{max(lay['hosts'] for lay in lays)} hosts carrying its share of the load; {float(sim.ramp):g} s warm-up + "
            f"{float(sim.runtime_min):g}-{float(sim.runtime_max):g} s measured per probe; data per simulated OSD scaled by "
            f"{min(scales):.3g}-{max(scales):.3g} (caches and HDD stroke scaled with it); see docs/user-guide.md",
            highlight=False,
        )
    if any(c.shape.illustrative_prices() for c in result.candidates):
        console.print("note: some prices are illustrative (models/catalog marks them): compare configurations, do not quote them",
                      highlight=False)


CSV_COLUMNS = (
    "family", "key", "hosts", "osds", "cost_usd", "raw_TB", "usable_TB", "status", "reason", "bottleneck", "bound_iops",
    "sustainable_iops_lower", "sustainable_iops", "sustainable_iops_upper", "p_ms", "slice_hosts", "search_status",
)


def write_outputs(result: Any) -> list[Path]:
    from simulator.experiment.runner import atomic_write_text

    out: Path = result.out_dir
    spec = result.spec
    rows = [c.to_dict(spec) for c in result.candidates]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()})
    written = [out / "candidates.csv", out / "plan.json"]
    atomic_write_text(written[0], buf.getvalue())
    doc = {
        "name": spec.name, "target_iops": spec.requirement.target_iops, "wall_s": result.wall_s,
        "cheapest": [c.to_dict(spec) for c in result.meeting()[: spec.report_top]],
        "candidates": rows, "searches": result.units, "notes": result.notes,
    }
    atomic_write_text(written[1], json.dumps(doc, indent=1, default=float))
    png = plot_pareto(result, out / "pareto.png")
    if png is not None:
        written.append(png)
    return written


def plot_pareto(result: Any, path: Path) -> Path | None:
    """Cost vs sustainable IOPS at the SLO: one line per configuration over its host counts, the
    Pareto front, the target; CI brackets as horizontal error bars."""
    from simulator.metrics.plots import new_figure, save_figure

    cands = [c for c in result.candidates if c.sustainable[1] is not None]
    if not cands:
        return None
    fig, ax = new_figure(8.0, 5.0)
    families = sorted({c.shape.family for c in cands})
    colours = {f: f"C{i % 10}" for i, f in enumerate(families)}
    by_shape: dict[str, list[Candidate]] = {}
    for c in cands:
        by_shape.setdefault(c.shape.key, []).append(c)
    labelled: set[str] = set()
    for _key, cs in sorted(by_shape.items()):
        cs.sort(key=lambda c: c.hosts)
        fam = cs[0].shape.family
        x = [c.sustainable[1] for c in cs]
        y = [c.cost / 1e3 for c in cs]
        xerr = [[max(0.0, c.sustainable[1] - (c.sustainable[0] if c.sustainable[0] is not None else c.sustainable[1])) for c in cs],
                [max(0.0, (c.sustainable[2] if c.sustainable[2] is not None else c.sustainable[1]) - c.sustainable[1]) for c in cs]]
        ax.errorbar(x, y, xerr=xerr, color=colours[fam], alpha=0.45, lw=0.8, marker=".", ms=3,
                    label=None if fam in labelled else fam)
        labelled.add(fam)
        open_ = [c for c in cs if c.sustainable[2] is None]  # the search never failed: "at least"
        if open_:
            ax.plot([c.sustainable[1] for c in open_], [c.cost / 1e3 for c in open_], ">", color=colours[fam], ms=4,
                    mfc="none", alpha=0.7, label=None if "atleast" in labelled else "at least (no probe failed)")
            labelled.add("atleast")
    front = pareto_front(cands)
    ax.plot([c.sustainable[1] for c in front], [c.cost / 1e3 for c in front], "k--", lw=1, label="Pareto front")
    best = result.meeting()
    if best:
        b = best[0]
        ax.plot([b.sustainable[1]], [b.cost / 1e3], "r*", ms=12, label=f"cheapest meeting SLO ({b.hosts} hosts)")
    ax.axvline(result.spec.requirement.target_iops, color="grey", lw=1, ls=":", label="target IOPS")
    ax.set_xlabel(f"sustainable client IOPS at p{result.spec.requirement.slo.percentile:g} <= "
                  f"{float(result.spec.requirement.slo.latency) * 1e3:g} ms")
    ax.set_ylabel("cost, thousand USD")
    ax.set_xscale("log")
    ax.set_title(f"{result.spec.name}: cost vs sustainable IOPS")
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    return save_figure(fig, path)
