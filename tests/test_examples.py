"""The reproduction scripts in examples/ run to the end in their quick mode and write their results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.slow
def test_xcp_vs_ixcp_quick_run_writes_its_results(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(EXAMPLES_DIR / "xcp_vs_ixcp.py"), "--quick", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("fig1_2.png", "fig1_2.csv", "fig6_7.png", "fig6_7_settling.csv", "parking_lot.csv", "results.json"):
        assert (tmp_path / name).is_file(), name
    results = json.loads((tmp_path / "results.json").read_text())
    ixcp_phases = results["fig6_7"]["ixcp"]["phases"]
    assert len(ixcp_phases) == 3 and all(p["settling_s"] is not None and p["settling_s"] <= 10.0 for p in ixcp_phases)
    assert all(p["settling_s"] is None for p in results["fig6_7"]["xcp"]["phases"])  # XCP never within 2 %
    for row in results["fig1_2"]["rows"]:
        assert row["simulated_short_mbps"] == pytest.approx(row["fixed_point_short_mbps"], rel=5e-3), row


@pytest.mark.slow
def test_rcp_vs_qcp_quick_run_writes_its_results(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(EXAMPLES_DIR / "rcp_vs_qcp.py"), "--quick", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("rcp_fig2.png", "n_estimate.png", "n_estimate.csv", "two_bottleneck.png", "two_bottleneck.csv",
                 "results.json"):
        assert (tmp_path / name).is_file(), name
    results = json.loads((tmp_path / "results.json").read_text())
    for phase in results["rcp_fig2"]["phases"]:  # C/R tracks N(t) in every phase
        assert phase["within_5pct_after_s"] is not None and abs(phase["estimate_at_end"] / phase["flows"] - 1) < 1e-3
    rows = {row["run"]: row for row in results["n_estimate"]["rows"]}
    qcp = rows["QCP (1, 1) eq. (4)"]
    assert qcp["stays_within_5pct_from_intervals"] is not None and qcp["stays_within_5pct_from_intervals"] <= 5
    assert rows["RCP (0.1, 1)"]["max_abs_error_last_5s"] < 0.01
    assert rows["RCP (1, 1)"]["stays_within_5pct_from_s"] is None  # keeps oscillating
    for row in results["two_bottleneck"]["rows"]:
        if row["run"] != "QCP (1, 0.5)":
            assert row["settled_within_1pct"] and row["utilization_l1_last_5s_mean"] == pytest.approx(1.0, abs=1e-3)


@pytest.mark.slow
def test_packet_fct_quick_run_writes_its_results(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(EXAMPLES_DIR / "packet_fct.py"), "--quick", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("afct_rho0.9.png", "afct_rho0.9.csv", "afct_rho0.5.png", "afct_rho0.5.csv", "results.json"):
        assert (tmp_path / name).is_file(), name
    results = json.loads((tmp_path / "results.json").read_text())
    for section in ("rho_0.9", "rho_0.5"):
        assert all(results[section][name]["unfinished"] == 0 for name in ("tcp", "rcp", "qcp"))
    shortest = results["rho_0.5"]["bins"][0]
    # at light load the shortest flows take about the idle time: RCP as PS, TCP its slow start
    assert shortest["rcp_over_ps_sample"] == pytest.approx(1.0, abs=0.1)
    assert shortest["tcp_over_slow_start"] == pytest.approx(1.0, abs=0.2)


@pytest.mark.slow
def test_qcp_table3_quick_run_writes_its_results(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(EXAMPLES_DIR / "qcp_table3.py"), "--quick", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("table3.csv", "fig6_7.png", "results.json"):
        assert (tmp_path / name).is_file(), name
    results = json.loads((tmp_path / "results.json").read_text())["table3"]
    assert results["offered_load"] > 4  # the paper's overload (about 5)
    # Table 3's finding: under that load QCP finishes several times as many flows as RCP
    assert results["qcp"]["finished"] > 2 * results["rcp"]["finished"] > 0
    assert results["qcp"]["utilization"] > 0.95
