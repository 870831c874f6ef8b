"""The `fluidcc` command: simulate and sweep write their files; bad input gives clear errors."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from click.testing import CliRunner

from fluidcc.cli import main


@pytest.fixture()
def runner():
    return CliRunner()


def test_simulate_writes_netcdf_and_figure(runner, tmp_path):
    result = runner.invoke(main, [
        "simulate", "miaimd", "--set", "kappa=0.25", "--set", "capacity=10Mbps", "--set", "rtt=80ms",
        "--set", "flows=5", "--duration", "10s", "--out", str(tmp_path),
    ])
    assert result.exit_code == 0, result.output
    data = xr.open_dataset(tmp_path / "timeseries.nc", engine="scipy")
    assert data["window"].shape[1] == 5
    assert (tmp_path / "timeseries.png").stat().st_size > 10_000
    assert data.attrs["fluidcc_version"] and "command" in data.attrs and data.attrs["created"]
    # 5 flows on 10 Mb/s at 80 ms: w_i* = gamma C T / N + alpha / kappa (Theorem 1).
    np.testing.assert_allclose(data["window"].values[-1], 0.98 * 1250 * 0.08 / 5 + 4, rtol=1e-6)


def test_simulate_heterogeneous_rtts_to_csv(runner, tmp_path):
    result = runner.invoke(main, ["simulate", "--rtts", "40ms,80ms", "--set", "capacity=10Mbps",
                                  "--duration", "2s", "--format", "csv", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    header = (tmp_path / "timeseries.csv").read_text().splitlines()[0]
    assert "window_0" in header and "rate_1" in header and "load_factor" in header


def test_sweep_writes_dataset_with_provenance_and_figure(runner, tmp_path):
    result = runner.invoke(main, ["sweep", "miaimd", "--grid", "kappa=0.1:1.9:3", "--grid", "rtt=20ms,80ms",
                                  "--horizon-rtts", "120", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    data = xr.open_dataset(tmp_path / "sweep.nc", engine="scipy")
    assert data["behaviour"].shape == (3, 2)
    assert data.attrs["fluidcc_version"] and data.attrs["created"] and "classify_converged_rtol" in data.attrs
    np.testing.assert_allclose(data["rtt"].values, [0.02, 0.08])
    assert data["behaviour"].values[0, 0] == 0  # kappa = 0.1, T = 20 ms converges
    assert (tmp_path / "sweep.png").exists()
    assert not list(tmp_path.glob("partial-*"))  # partial results are removed once complete


@pytest.mark.parametrize(
    "args, expected",
    [
        (["sweep", "--grid", "kappa=0.1:2"], "NAME=START:STOP:COUNT"),
        (["sweep", "--grid", "kappa"], "NAME=START:STOP:COUNT"),
        (["sweep", "--grid", "kappa=0.1:2:x"], "count = 'x'"),
        (["sweep", "--grid", "beta=0:1:3"], "parameter = 'beta'"),
        (["sweep", "--grid", "rtt=10parsecs:1s:3"], "rtt start = '10parsecs'"),
        (["sweep", "--grid", "rtt=0:1s:3:log"], "start and stop > 0"),
        (["sweep", "--grid", "kappa=-1:1:3"], "kappa = -1"),
        (["sweep", "--grid", "kappa=0.1:1:3", "--set", "kappa=0.2"], "not also swept"),
        (["simulate", "--set", "capacity=0Mbps"], "capacity = 0"),
        (["simulate", "--set", "gamma=1.5"], "gamma = 1.5"),
        (["simulate", "--set", "rtt=-80ms"], "rtt = -0.08"),
        (["simulate", "--set", "kappa"], "NAME=VALUE"),
        (["simulate", "tcp"], "model = 'tcp'"),
        (["sweep", "rcp", "--solver", "chebyshev", "--grid", "alpha=0.1:0.4:2"], "--solver = 'chebyshev'"),
        (["simulate", "--duration", "-2s"], "--duration = "),
    ],
)
def test_bad_input_is_a_usage_error_naming_the_field(runner, tmp_path, args, expected):
    result = runner.invoke(main, args + ["--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert expected in result.output, result.output


def test_help_states_units(runner):
    result = runner.invoke(main, ["sweep", "--help"])
    assert "Mbps" in result.output and "ms" in result.output
    assert "miaimd" in runner.invoke(main, ["models"]).output


def test_models_lists_the_network_forms_with_their_defaults(runner):
    output = runner.invoke(main, ["models"]).output
    for line in ("ixcp --network", "xcp --network", "miaimd --network", "rcp --network", "qcp --network"):
        assert line in output
    ixcp = output.split("ixcp --network")[1].split("miaimd --network")[0]
    assert re.search(r"gamma +default 0.1\b", ixcp)
    rcp = output.split("rcp --network")[1].split("qcp --network")[0]
    assert re.search(r"rtt_gain +default 0.02\b", rcp) and re.search(r"rate_interval +default 0.01\b", rcp)
    qcp = output.split("qcp --network")[1]
    assert re.search(r"control_interval +default \(per link\)", qcp)


def test_models_lists_the_exact_engine_s_packet_settings_with_their_units(runner):
    output = runner.invoke(main, ["models"]).output
    packet = output.split("packet-level senders and routers on the exact engine")[1]
    tcp = packet.split("tcp [protocol]")[1].split("open_loop [protocol]")[0]
    for pattern in (r"initial_window +default 2.0 +\[segments\]", r"min_rto +default 0.2 +\[s\]",
                    r"syn_timeout +default 3.0 +\[s\]", r"receive_window +default inf +\[segments\]",
                    r"limited_transmit +default true\n"):
        assert re.search(pattern, tcp), pattern
    qcp = packet.split("qcp [protocol]")[1].split("tcp [protocol]")[0]
    assert re.search(r"gain +default 0.25\n", qcp) and re.search(r"interval +default \(per link\) +\[s\]", qcp)
    assert re.search(r"rate +default 1.0 +\[packets/s, or one per flow\]", packet.split("open_loop [protocol]")[1])


def test_stability_both_methods_write_dataset_and_figure(runner, tmp_path):
    result = runner.invoke(main, ["stability", "miaimd", "--grid", "kappa=0.2:2.6:7", "--grid", "rtt=20ms,100ms",
                                  "--horizon-rtts", "150", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    data = xr.open_dataset(tmp_path / "stability.nc", engine="scipy")
    assert data["linear_stable"].shape == (7, 2) and data["behaviour"].shape == (7, 2)
    assert data.attrs["method"] == "both" and data.attrs["fluidcc_version"]
    linear = data["linear_stable"].values
    assert linear[0].tolist() == [1, 1] and linear[-1].tolist() == [0, 0]
    assert "agreement" in result.output and (tmp_path / "stability.png").stat().st_size > 10_000


@pytest.mark.parametrize(
    "args, expected",
    [
        (["stability", "miaimd", "--grid", "gain=0:1:3", "--method", "linear"], "parameter = 'gain'"),
        (["stability", "miaimd", "--grid", "kappa=0.1:2:3", "--set", "rtt=-5ms", "--method", "linear"], "rtt"),
        (["stability", "miaimd", "--grid", "kappa=0.1:2:0", "--method", "linear"], "count"),
        (["stability", "miaimd", "--method", "fast"], "fast"),
        (["stability", "xcp", "--grid", "kappa=0:1:3", "--method", "linear"], "parameter = 'kappa'"),
        (["stability", "rcp", "--grid", "alpha=0:1:3", "--set", "rtt=-10ms", "--method", "linear"], "rtt = -0.01"),
        (["stability", "qcp", "--grid", "beta=-1:1:3", "--method", "linear"], "beta = -1"),
        (["stability", "qcp", "--grid", "alpha=", "--method", "linear"], "--grid"),
        (["simulate", "xcp", "--rtts", "10ms,20ms"], "--rtts"),
    ],
)
def test_stability_bad_input(runner, tmp_path, args, expected):
    result = runner.invoke(main, args + ["--out", str(tmp_path)])
    assert result.exit_code != 0
    assert expected in result.output


def test_stability_of_a_projected_model_marks_where_the_projection_decides(runner, tmp_path):
    # (at one resolution, --rtol 0: each rung of the refinement is a kernel to compile, for both the
    # projected model and the smooth one, over both horizons; the test above maps with refinement)
    result = runner.invoke(main, ["stability", "rcp", "--grid", "alpha=0.1:1.5:6", "--grid", "beta=0.05:1.2:6",
                                  "--horizon-rtts", "150", "--rtol", "0", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    data = xr.open_dataset(tmp_path / "stability.nc", engine="scipy")
    assert {"behaviour", "behaviour_smooth", "projection_changes", "linear_stable"} <= set(data.data_vars)
    # RCP's gains (0.1, 1.0) sit where linear analysis says unstable but the projected model settles
    point = data.sel(alpha=0.1, beta=1.2, method="nearest")
    assert int(point["linear_stable"]) == 0 and int(point["behaviour"]) in (0, 1)
    assert int(point["projection_changes"]) == 1
    assert data.attrs["agreement_smooth_away_from_boundary"] >= 0.99
    assert "projection of the queue" in result.output and (tmp_path / "stability.png").stat().st_size > 10_000


def test_simulate_aggregate_model(runner, tmp_path):
    result = runner.invoke(main, ["simulate", "xcp", "--duration", "16s", "--format", "csv", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(tmp_path / "timeseries.csv")
    assert list(frame.columns) == ["time", "queue", "rate"]
    assert abs(frame["rate"].iloc[-1] / 18750.0 - 1) < 1e-3
    assert "equilibrium 18750" in result.output


import json  # noqa: E402  (the maxmin tests below were appended)
from pathlib import Path  # noqa: E402

EXAMPLE_NETWORKS = Path(__file__).resolve().parents[1] / "examples" / "networks"


def test_maxmin_prints_rates_bottlenecks_and_utilization_and_writes_json(runner, tmp_path):
    out = tmp_path / "rates.json"
    result = runner.invoke(main, ["maxmin", str(EXAMPLE_NETWORKS / "ixcp_fig6.toml"), "--at", "30s", "--exact",
                                  "--out", str(out)])
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line.split() for line in result.output.splitlines() if line.strip()}
    assert lines["long"][1:] == ["30", "3750", "3750", "l1"]  # Mb/s, packets/s, exact packets/s, bottleneck
    assert lines["s2"][1:] == ["70", "8750", "8750", "l2"]
    assert lines["s3"][1:] == ["45", "5625", "5625", "l3"]
    assert lines["l2"][1:] == ["100", "100", "100.00", "%"]  # capacity, load (Mb/s), utilization
    data = json.loads(out.read_text())
    assert data["at_s"] == 30.0 and data["exact"] is True and data["fluidcc_version"] and data["created"]
    rates = {flow["name"]: flow["rate_mbps"] for flow in data["flows"]}
    assert rates == {"long": 30, "s1": 30, "s2": 70, "s3": 45, "s4": 45, "s5": 30, "s6": 30, "s7": 30}
    assert [link["utilization"] for link in data["links"]] == [1.0, 1.0, 1.0]


def test_maxmin_csv_has_flow_and_link_rows(runner, tmp_path):
    out = tmp_path / "rates.csv"
    result = runner.invoke(main, ["maxmin", str(EXAMPLE_NETWORKS / "ixcp_fig1.toml"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(out)
    flows = frame[frame["kind"] == "flow"].set_index("name")
    assert len(flows) == 9 and flows.loc["short", "rate_mbps"] == pytest.approx(55.0)
    assert flows.loc["long[7]", "rate_pps"] == pytest.approx(1562.5) and flows.loc["long[7]", "bottlenecks"] == "l2"
    links = frame[frame["kind"] == "link"].set_index("name")
    np.testing.assert_allclose(links["utilization"], [1.0, 1.0])


def test_maxmin_at_a_time_marks_inactive_flows(runner):
    result = runner.invoke(main, ["maxmin", str(EXAMPLE_NETWORKS / "ixcp_fig6.toml"), "--at", "50"])
    assert result.exit_code == 0, result.output
    assert "(inactive)" in result.output and "t = 50 s" in result.output


@pytest.mark.parametrize(
    "content, args, expected",
    [
        (None, [], "network file"),
        ('[[links]]\nname = "a"\ncapacity = "10Mbps"\n[[flows]]\nname = "f"\nroute = ["b"]\n', [],
         "flow 'f': route = 'b'"),
        ('[[links]]\nname = "a"\ncapacity = "-1Mbps"\n[[flows]]\nname = "f"\nroute = ["a"]\n', [],
         "link 'a': capacity"),
        ('[[links]]\nname = "a"\ncapacity = "10Mbps"\n[[flows]]\nname = "f"\nroute = ["a"]\n', ["--at", "soon"],
         "--at = 'soon'"),
        ('[[links]]\nname = "a"\ncapacity = "10Mbps"\n[[flows]]\nname = "f"\nroute = ["a"]\n', ["--out", "x.txt"],
         "--out = 'x.txt'"),
    ],
)
def test_maxmin_bad_input_is_a_usage_error(runner, tmp_path, content, args, expected):
    path = tmp_path / "net.toml"
    if content is not None:
        path.write_text(content)
    result = runner.invoke(main, ["maxmin", str(path), *args])
    assert result.exit_code == 2, result.output
    assert expected in result.output, result.output


def test_simulate_on_a_network_writes_dataset_figure_and_table(runner, tmp_path):
    result = runner.invoke(main, ["simulate", "ixcp", "--network", str(EXAMPLE_NETWORKS / "ixcp_fig6.toml"),
                                  "--duration", "4s", "--set", "gamma=0.1", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    data = xr.open_dataset(tmp_path / "timeseries.nc", engine="scipy")
    assert data.attrs["model"] == "ixcp" and data.attrs["fluidcc_version"] and data.attrs["created"]
    assert "command" in data.attrs and data.attrs["packet_bytes"] == 1000
    assert list(data["flow"].values) == ["long", "s1", "s2", "s3", "s4", "s5", "s6", "s7"]
    assert data["rate"].dims == ("time", "flow") and data["utilization"].dims == ("time", "link")
    assert float(data["time"].values[-1]) == pytest.approx(4.0)
    np.testing.assert_allclose(data["maxmin_rate"].values[-1, :5], [5000, 13750, 7500, 5000, 5000])  # packets/s
    assert (tmp_path / "timeseries.png").stat().st_size > 10_000
    rows = {line.split()[0]: line.split() for line in result.output.splitlines() if line.strip()}
    # flow, final rate (Mb/s), max-min rate (Mb/s), ratio: iXCP is within 2 % of max-min after 4 s
    assert rows["s1"][2] == "110" and abs(float(rows["s1"][3]) - 1) < 0.02
    assert rows["s5"][1:] == ["0", "0", "(not", "sending)"]
    assert "settling" in result.output and "[0, 4] s" in result.output


def test_simulate_on_a_network_to_csv(runner, tmp_path):
    result = runner.invoke(main, ["simulate", "xcp", "--network", str(EXAMPLE_NETWORKS / "ixcp_fig6.toml"),
                                  "--duration", "2s", "--format", "csv", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(tmp_path / "timeseries.csv")
    assert {"time", "rate_long", "maxmin_rate_s7", "rate_over_maxmin_s1", "utilization_l3", "queue_l2"} <= set(frame)
    assert frame["time"].iloc[-1] == pytest.approx(2.0)
    assert (tmp_path / "timeseries.png").exists()


@pytest.mark.parametrize(
    "args, expected",
    [
        (["simulate", "ixcp"], "--network"),
        (["simulate", "tcp", "--network", "{fig6}"], "model = 'tcp'"),
        (["simulate", "rcp", "--network", "{fig6}", "--set", "rate_interval=0"], "rate_interval = 0"),
        (["simulate", "qcp", "--network", "{fig6}", "--set", "control_interval=-0.1"], "control_interval = -0.1"),
        (["simulate", "xcp", "--network", "{fig6}", "--set", "kappa=0.2"], "parameter = 'kappa'"),
        (["simulate", "xcp", "--network", "{fig6}", "--set", "alpha=fast"], "--set alpha = 'fast'"),
        (["simulate", "xcp", "--network", "{fig6}", "--set", "alpha=-1"], "alpha = -1"),
        (["simulate", "miaimd", "--network", "{fig6}", "--set", "gamma=1.5"], "gamma = 1.5"),
        (["simulate", "xcp", "--network", "{fig6}", "--set", "alpha"], "NAME=VALUE"),
        (["simulate", "xcp", "--network", "{fig6}", "--rtts", "10ms"], "--rtts"),
        (["simulate", "xcp", "--network", "{fig6}", "--rtol", "1e-3"], "--rtol"),
        (["simulate", "xcp", "--network", "{fig6}", "--duration", "-1s"], "duration"),
        (["simulate", "xcp", "--network", "missing.toml"], "network file"),
    ],
)
def test_simulate_on_a_network_bad_input_is_a_usage_error(runner, tmp_path, args, expected):
    args = [a.replace("{fig6}", str(EXAMPLE_NETWORKS / "ixcp_fig6.toml")) for a in args]
    result = runner.invoke(main, args + ["--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert expected in result.output, result.output
    assert not (tmp_path / "timeseries.nc").exists()


def test_network_model_names_in_the_help_are_the_catalogues(runner):
    from fluidcc.protocols import names

    help_text = " ".join(runner.invoke(main, ["simulate", "--help"]).output.split())
    assert "MODEL is then one of " + ", ".join(names("network")) + "." in help_text


SCHEDULED_NETWORK = ('[[links]]\nname = "l"\ncapacity = "8Mbps"\ndelay = "10ms"\n'
                     'schedule = [{at = "10s", capacity = "16Mbps"}]\n'
                     '[[flows]]\nname = "f"\nroute = ["l"]\ncount = 2\n')


def test_maxmin_on_a_network_with_schedules_needs_a_time_and_uses_the_capacities_then(runner, tmp_path):
    path = tmp_path / "net.toml"
    path.write_text(SCHEDULED_NETWORK)
    refused = runner.invoke(main, ["maxmin", str(path)])
    assert refused.exit_code == 2, refused.output
    assert "--at = None" in refused.output and "link 'l' has a capacity" in refused.output
    for at, mbps_each, capacity in [("5s", "4", "8"), ("10s", "8", "16")]:
        result = runner.invoke(main, ["maxmin", str(path), "--at", at])
        assert result.exit_code == 0, result.output
        rows = {line.split()[0]: line.split() for line in result.output.splitlines() if line.strip()}
        assert rows["f[0]"][1] == mbps_each and rows["l"][1:3] == [capacity, capacity]


def test_simulate_on_a_network_with_schedules_is_refused(runner, tmp_path):
    path = tmp_path / "net.toml"
    path.write_text(SCHEDULED_NETWORK)
    result = runner.invoke(main, ["simulate", "xcp", "--network", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "--network" in result.output and "link 'l' has one" in result.output
