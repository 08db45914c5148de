"""The fan-out table's marks (simulator.ceph.fanout.analyse): where the journal SSD saturates, where it
becomes the bottleneck (per-OSD rate falls while it is saturated), and that a saturated network link
is not blamed on the SSD."""

from __future__ import annotations

from simulator.ceph.fanout import analyse, markdown


def _row(g: str, n: int, per_osd: float, ssd: float, nic: float = 0.1) -> dict:
    return {"group": g, "n": n, "size": 3, "iops": per_osd * n / 3, "mbps": 0.0, "per_osd": per_osd,
            "lat_mean_ms": 1.0, "p50_ms": 1.0, "p99_ms": 2.0, "commit_ms": 1.0, "nic_util": nic,
            "db_util_max": ssd, "db_qd_mean": 1.0, "data_util_mean": 1.0, "throttled_share": 0.0}


def test_saturation_and_bottleneck_marks() -> None:
    rows = [_row("a", 1, 100, 0.3), _row("a", 2, 100, 0.6), _row("a", 3, 98, 0.97), _row("a", 4, 75, 1.0), _row("a", 6, 50, 1.0)]
    res = analyse(rows)["a"]
    assert res["saturated_at"] == 3  # first N with the SSD busy >= 95 % of the time
    assert res["bottleneck_at"] == 4  # first N where the per-OSD rate fell below 85 % of its best
    md = markdown({"a": res})
    assert "**SSD bottleneck**" in md and "SSD saturated" in md


def test_a_saturated_link_is_not_an_ssd_bottleneck() -> None:
    rows = [_row("b", 1, 100, 0.5), _row("b", 2, 100, 0.96, nic=0.5), _row("b", 3, 60, 0.97, nic=0.99), _row("b", 4, 40, 0.99)]
    res = analyse(rows)["b"]
    assert res["saturated_at"] == 2
    assert res["bottleneck_at"] == 4  # N = 3 dropped too, but the network was saturated there
    assert "network saturated" in markdown({"b": res})


def test_never_saturated() -> None:
    res = analyse([_row("c", n, 100, 0.1 * n) for n in (1, 2, 4)])["c"]
    assert res["saturated_at"] is None and res["bottleneck_at"] is None
