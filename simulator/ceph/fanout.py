"""The table of the journal-SSD fan-out study (``experiments/journal_ssd_fanout.yaml``): client
IOPS and latency per number of HDD OSDs sharing one DB/WAL SSD, with the SSD's utilisation, the
kv commit latency, the data drives' utilisation, and where the SSD saturates / becomes the
bottleneck.

``python -m simulator.ceph.fanout out/journal_ssd_fanout`` reads the run documents
(``runs/pNNN_rRR.json``: fio's job figures and ``sim.cluster.summary``) and prints one Markdown
table per series (object store / workload / SSD).

Definitions:

* *per-OSD write rate* = client write IOPS x replicas / N: the deferred writes each HDD applies.
  While the HDDs set the pace it stays constant in N.
* the SSD is *saturated* at the first N where its utilisation (time with at least one request in
  it) reaches ``busy`` (0.95);
* the SSD is the *bottleneck* at the first N where it is saturated, the per-OSD write rate has
  fallen below ``drop`` (0.85) of its best value at smaller N, and no network link (client or
  OSD host NIC, either direction) is saturated (utilisation >= ``busy``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["analyse", "load_rows", "markdown"]


def _p(job: dict[str, Any], pct: str) -> float:
    d = job["write"]["clat_ns"].get("percentile", {})
    for k, v in d.items():
        if abs(float(k) - float(pct)) < 1e-9:
            return v / 1e6
    return float("nan")


def load_rows(out_dir: str | Path, axis_n: str = "osds_per_ssd") -> list[dict[str, Any]]:
    """One row per run document of replication 0; ``group`` names the series (every other axis's
    label: object store, workload, SSD)."""
    rows = []
    for f in sorted(Path(out_dir, "runs").glob("p*_r00.json")):
        doc = json.loads(f.read_text())
        sim = doc["sim"]
        job = doc["jobs"][0]
        cl = sim.get("cluster", {})
        summ = cl.get("summary", {})
        pools = cl.get("pools", {})
        size = next(iter(pools.values()))["size"] if pools else 1
        labels = sim["labels"]
        n = int(labels[axis_n])
        w = job["write"]
        iops = w["iops"]
        nics = [cl.get("client", {}), *cl.get("hosts", {}).values()]
        nic = max((max(h.get("nic_tx_utilisation", 0.0), h.get("nic_rx_utilisation", 0.0)) for h in nics), default=0.0)
        commit = summ.get("journal_write_ms") if "journal_write_ms" in summ else summ.get("kv_commit_ms", float("nan"))
        rows.append({
            "group": " / ".join(str(v) for k, v in labels.items() if k != axis_n),
            "n": n, "size": size, "iops": iops, "mbps": w["bw_bytes"] / 1e6,
            "lat_mean_ms": w["clat_ns"]["mean"] / 1e6, "p50_ms": _p(job, "50.0"), "p99_ms": _p(job, "99.0"),
            "per_osd": iops * size / n, "commit_ms": commit, "nic_util": nic, **summ,
        })
    return rows


def analyse(rows: list[dict[str, Any]], busy: float = 0.95, drop: float = 0.85) -> dict[str, dict[str, Any]]:
    """Per series: the rows sorted by N, the N where the SSD saturates and where it is the bottleneck."""
    out: dict[str, dict[str, Any]] = {}
    for g in dict.fromkeys(r["group"] for r in rows):
        rs = sorted((r for r in rows if r["group"] == g), key=lambda r: r["n"])
        sat = next((r["n"] for r in rs if r.get("db_util_max", 0.0) >= busy), None)
        best = 0.0
        neck = None
        for r in rs:
            if (neck is None and best > 0 and r.get("db_util_max", 0.0) >= busy and r["per_osd"] < drop * best
                    and r.get("nic_util", 0.0) < busy):
                neck = r["n"]
            best = max(best, r["per_osd"])
        out[g] = {"rows": rs, "saturated_at": sat, "bottleneck_at": neck}
    return out


def markdown(res: dict[str, dict[str, Any]]) -> str:
    lines = []
    for g, a in res.items():
        lines.append(f"**{g}**: SSD saturated (util >= 0.95) from N = {a['saturated_at'] or 'not reached'}; "
                     f"SSD the bottleneck from N = {a['bottleneck_at'] or 'not reached'}")
        lines.append("")
        lines.append("| N | size | IOPS | MB/s | per-OSD w/s | mean ms | p50 ms | p99 ms | SSD util | SSD QD | commit ms | HDD util | NIC util | throttled | |")
        lines.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in a["rows"]:
            marks = []
            if r["n"] == a["bottleneck_at"]:
                marks.append("**SSD bottleneck**")
            elif r["n"] == a["saturated_at"]:
                marks.append("SSD saturated")
            if r.get("nic_util", 0.0) >= 0.95:
                marks.append("network saturated")
            mark = "; ".join(marks)
            lines.append(
                f"| {r['n']} | {r['size']} | {r['iops']:.0f} | {r['mbps']:.0f} | {r['per_osd']:.0f} | {r['lat_mean_ms']:.1f} | "
                f"{r['p50_ms']:.1f} | {r['p99_ms']:.0f} | {r.get('db_util_max', float('nan')):.2f} | "
                f"{r.get('db_qd_mean', float('nan')):.1f} | {r['commit_ms']:.2f} | {r.get('data_util_mean', float('nan')):.2f} | "
                f"{r['nic_util']:.2f} | {r.get('throttled_share', float('nan')):.2f} | {mark} |"
            )
        lines.append("")
    lines.append("commit ms: BlueStore kv_sync WAL write + flush; FileStore journal write (O_DSYNC). NIC util: the busiest "
                 "link direction of the client and the OSD host. The SSD counts as the bottleneck only while the network is not saturated.")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    d = sys.argv[1] if len(sys.argv) > 1 else "out/journal_ssd_fanout"
    print(markdown(analyse(load_rows(d))))
