"""The comparison logic of simulator.calibration.length (issue 14, item 1): a shortened run agrees with the
full-length one point by point within the runs' own confidence intervals. Hand-built runs, so each verdict is
known in advance; the heavy test (tests/test_flagship_length.py) applies it to the flagship."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.calibration.length import Value, compare, load_summary, load_table, main, render, write_table

K1 = ("random", 1, "mach2", "randread")
K2 = ("random", 4, "normal", "randwrite")


def test_full_rule_uses_only_the_full_runs_half_width():
    full = {(K1, "iops"): Value(100.0, 5.0)}
    assert compare(full, {(K1, "iops"): Value(104.9, 50.0)}, rule="full", metrics=["iops"])[0].ok
    c = compare(full, {(K1, "iops"): Value(105.1, 50.0)}, rule="full", metrics=["iops"])[0]
    assert c.verdict == "outside" and c.bound == 5.0 and c.z == pytest.approx(1.02)
    assert c.rel_diff == pytest.approx(0.051)


def test_difference_rule_adds_the_half_widths_in_quadrature():
    full = {(K1, "iops"): Value(100.0, 3.0)}
    # bound = hypot(3, 4) = 5
    assert compare(full, {(K1, "iops"): Value(95.0, 4.0)}, metrics=["iops"])[0].ok
    c = compare(full, {(K1, "iops"): Value(94.9, 4.0)}, metrics=["iops"])[0]
    assert c.verdict == "outside" and c.bound == pytest.approx(5.0)


def test_zero_width_percentiles_get_the_histogram_resolution_floor():
    full = {(K1, "p50_ms"): Value(2.02445, 0.0)}
    assert compare(full, {(K1, "p50_ms"): Value(2.02445, 0.0)}, metrics=["p50_ms"])[0].ok
    assert compare(full, {(K1, "p50_ms"): Value(2.0263, 0.0)}, metrics=["p50_ms"])[0].ok  # +0.09 % < 0.2 %
    assert not compare(full, {(K1, "p50_ms"): Value(2.04, 0.0)}, metrics=["p50_ms"])[0].ok  # +0.8 %
    assert not compare(full, {(K1, "p50_ms"): Value(2.0263, 0.0)}, metrics=["p50_ms"], rel_floor=0.0)[0].ok


def test_missing_values_or_cis_cannot_agree():
    full = {(K1, "iops"): Value(100.0, 5.0), (K2, "iops"): Value(50.0, None), (K2, "p99_ms"): Value(9.0, 1.0)}
    short = {(K1, "iops"): Value(100.0, None), (K2, "iops"): Value(50.0, 1.0)}
    by = {(c.key, c.metric): c for c in compare(full, short, metrics=["iops", "p99_ms"])}
    assert by[(K1, "iops")].verdict == "no_ci"  # difference rule needs the short run's CI
    assert by[(K2, "iops")].verdict == "no_ci"  # ... and the full run's
    assert by[(K2, "p99_ms")].verdict == "no_ci" and by[(K2, "p99_ms")].short is None  # point missing in short
    # the full rule needs only the full run's CI
    assert {(c.key, c.verdict) for c in compare(full, short, rule="full", metrics=["iops"])} == {(K1, "ok"), (K2, "no_ci")}


def test_points_filter_bad_rule_and_render_counts():
    full = {(K1, "iops"): Value(100.0, 5.0), (K2, "iops"): Value(50.0, 1.0)}
    short = {(K1, "iops"): Value(150.0, 5.0), (K2, "iops"): Value(50.5, 1.0)}
    assert [c.key for c in compare(full, short, metrics=["iops"], points=[K2])] == [K2]
    with pytest.raises(ValueError, match="rule"):
        compare(full, short, rule="both", metrics=["iops"])  # type: ignore[arg-type]
    md = "\n".join(render(compare(full, short, metrics=["iops"]), "t"))
    assert "1 of 2 point-metrics agree; 1 outside; 0 without a CI." in md
    assert "100 ± 5 → 150 (+50%) **✗**" in md


def test_summary_and_table_round_trip(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "summary.csv").write_text(
        "point,mode,qd,pool,rw,read.iops,read.iops_ci,read.p50_ms,read.p50_ms_ci,read.steady,read.warmup_s,"
        "write.iops,write.iops_ci,write.p50_ms,write.p50_ms_ci,write.steady,write.warmup_s\n"
        "0,random,1,mach2,randread,94.5,1.12,7.74,0.05,1.0,0.0,,,,,,\n"
        "1,random,4,normal,randwrite,,,,,,,58.7,0.81,39.3,,0.0,450\n",
        encoding="utf-8",
    )
    run = load_summary(out, metrics=["iops", "p50_ms"])
    assert run[(K1, "iops")] == Value(94.5, 1.12, 1.0, 0.0)
    assert run[(K2, "p50_ms")] == Value(39.3, None, 0.0, 450.0)
    assert (K1, "p50_ms") in run and (("random", 1, "mach2", "randread"), "lat_mean_ms") not in run
    t = tmp_path / "t.csv"
    write_table(run, t, header=["source: test"])
    assert t.read_text(encoding="utf-8").startswith("# source: test\nmode,qd,pool,rw,metric,value,ci,steady,warmup_s\n")
    assert load_table(t) == run
    assert all(c.ok or c.verdict == "no_ci" for c in compare(run, load_table(t), metrics=["iops", "p50_ms"]))
    # the CLI: agreeing runs exit 0 only when every point has its CIs; a missing file is exit 2
    assert main([str(out), str(t), "--rule", "full"]) == 1  # K2 p50 has no CI in the full run
    assert main([str(out), str(tmp_path / "nope.csv")]) == 2
    assert not math.isnan(load_table(t)[(K2, "iops")].value or math.nan)


def test_write_checks_gives_both_verdicts(tmp_path):
    import csv as _csv

    from simulator.calibration.length import write_checks

    full = {(K1, "iops"): Value(100.0, 3.0)}
    short = {(K1, "iops"): Value(95.0, 4.0)}  # outside the full run's CI, inside the difference's (5)
    p = tmp_path / "c.csv"
    write_checks(p, [(90.0, 0.1, short)], full, header=["h"])
    rows = list(_csv.DictReader(line for line in p.read_text(encoding="utf-8").splitlines() if not line.startswith("#")))
    assert rows == [{"runtime_s": "90", "state_scale": "0.1", "mode": "random", "qd": "1", "pool": "mach2", "rw": "randread",
                     "metric": "iops", "full": "100", "full_ci": "3", "short": "95", "short_ci": "4", "rel_diff": "-0.0500",
                     "verdict_full": "outside", "verdict_difference": "ok"}]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400))
def test_command_line_refuses_a_malformed_table_with_exit_2(tmp_path, capsys, data) -> None:
    """Fuzzed long tables: the comparison either reads them or says which file is bad (exit 2), no traceback,
    and never echoes the file's contents."""
    good = tmp_path / "good.csv"
    good.write_text("mode,qd,pool,rw,metric,value,ci,steady,warmup_s\nrandom,1,mach2,randread,iops,100,1,1,0\n")
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"mode,qd,pool,rw,metric,value,ci\n" + data)
    rc = main([str(good), str(bad)])
    err = capsys.readouterr().err
    assert rc in (0, 1, 2)
    if rc == 2:
        assert err.startswith(f"error: {bad}:") and err.count("\n") == 1
        assert "Traceback" not in err
