"""Sensitivity runs behind ``hdd_qd_misses.md`` (issue 10, helper "hdd10", 2026-11-28).

Not a fit and not used by any profile: each run changes ONE unsourced quantity of a drive whose
validation row misses, to show what size of mechanism the row would need. The numbers say where to look
for evidence; none of them may be copied into a profile without a source.

    PYTHONPATH=. python calibration/reference/hdd_qd_misses.py            # sensitivity table
    PYTHONPATH=. python calibration/reference/hdd_qd_misses.py --section  # also the validation section alone

Writes ``hdd_qd_misses_sensitivity.csv`` beside this file. Each run: the validation section's job
(``simulator.calibration.validation._hdd_qd_run``: 40 simulated s after a ramp, seed 1, Linux block layer
with the kernel's defaults for the StorageReview rows, none for the data-sheet rows).
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

#: (case, profile, rw, queue depth, host, write-cache params, varied field, values, measured IOPS, source of the measurement)
CASES = [
    ("Exos M WCD QD16 (rated 350)", "hdd/seagate_exos_m", "randwrite", 16, None, {"media_cache_wce": False},
     "geometry.write_verify_revolutions", [0, 1], 350.0, "seagate_exos_m_ds"),
    ("Exos M QD32 as shipped (measured 341)", "hdd/seagate_exos_m", "randwrite", 32, {}, {},
     "geometry.write_verify_revolutions", [0, 1], 341.0, "storagereview_exos_m_2025"),
    ("IronWolf Pro 30TB QD32 as shipped (measured 301)", "hdd/seagate_ironwolf_pro_30tb", "randwrite", 32, {}, {},
     "geometry.write_verify_revolutions", [0, 1], 301.0, "storagereview_exos_m_2025"),
    ("Exos X24 QD32 as shipped (measured 749)", "hdd/seagate_exos_x24", "randwrite", 32, {}, {},
     "cache.dirty_segments", [16, 32], 749.0, "storagereview_exos_m_2025"),
    ("Exos X24 WCD QD16 (rated 550)", "hdd/seagate_exos_x24", "randwrite", 16, None, {"media_cache_wce": False},
     "cache.dirty_segments", [16, 32], 550.0, "seagate_exos_x24_ds"),
    ("Exos M QD32 as shipped (measured 341)", "hdd/seagate_exos_m", "randwrite", 32, {}, {},
     "cache.dirty_segments", [16, 32], 341.0, "storagereview_exos_m_2025"),
]
RUNTIME_S = 40.0


def _params(cache: dict, field: str, value: float) -> dict:
    group, name = field.split(".")
    p: dict = {"cache": dict(cache)} if cache else {}
    if group == "cache" and name in ("dirty_segments",):
        p.setdefault("cache", {}).update({"dirty_segments": int(value), "destage_window": int(value)})
    else:
        p.setdefault(group, {})[name] = value
    return p


def main(argv: list[str]) -> int:
    from simulator.calibration.validation import _hdd_qd, _hdd_qd_run

    here = Path(__file__).resolve().parent
    if "--section" in argv:
        t0 = time.perf_counter()
        md, _summary = _hdd_qd(False, None)
        print("\n".join(line for line in md if line.startswith("| ") or line.startswith("**Summary")))
        print(f"(section alone: {time.perf_counter() - t0:.0f} s wall)")
    rows = []
    for case, prof, rw, qd, host, cache, field, values, meas, src in CASES:
        for v in values:
            iops, lat, st = _hdd_qd_run(prof, rw, "4KiB", qd, "whole drive", _params(cache, field, v), host, RUNTIME_S)
            rows.append({"case": case, "profile": prof, "rw": rw, "qd": qd, "varied": field, "value": v,
                         "iops_sim": f"{iops:.1f}", "mean_lat_ms_sim": f"{lat:.2f}", "iops_measured": meas,
                         "err_pct": f"{100 * (iops / meas - 1):+.0f}", "steady": "" if st is None else st.steady,
                         "measured_source": src})
            print(rows[-1], flush=True)
    out = here / "hdd_qd_misses_sensitivity.csv"
    with out.open("w", newline="", encoding="utf-8") as f:
        f.write("# sensitivity runs, NOT fitted values: calibration/reference/hdd_qd_misses.py (see hdd_qd_misses.md)\n")
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
