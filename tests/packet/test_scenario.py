"""Scenario files for the packet simulator and `fluidcc packet`: loading every workload and
protocol, small end-to-end runs on the exact engine whose files agree with the dataset (and with a
direct `simulate_exact` call), runs that fail reported as such, and bad scenarios that name the
field at fault."""

from __future__ import annotations

import dataclasses
import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from click.testing import CliRunner

from fluidcc.cli import main
from fluidcc.errors import ParameterError
from fluidcc.packet import metrics, simulate_exact
from fluidcc.packet.exact_protocols import QCP, RCP, TCP, OpenLoop
from fluidcc.packet.scenario import Scenario, run_scenario, toml_text
from fluidcc.packet.workloads import EmpiricalCDF, Exponential, Fixed, Pareto, read_trace

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"

NETWORK_TOML = """
packet_bytes = 1000

[[links]]
name = "a"
capacity = "4Mbps"
delay = "25ms"

[[links]]
name = "b"
capacity = 800
delay = "5ms"

[[flows]]
name = "long"
route = ["a", "b"]

[[flows]]
name = "short"
route = ["b"]
start = "1s"
stop = "3s"
"""

CDF_TEXT = "# bytes percent\n0 0\n1000 50\n10000 90\n100000 100\n"


def _network():
    return {"links": [{"name": "l", "capacity": 500, "delay": "25ms"}], "flows": [{"name": "f", "route": ["l"]}]}


def _poisson(**sizes):
    return {"kind": "poisson", "load": 0.5, "sizes": sizes or {"kind": "pareto", "shape": 1.2, "mean": 10}}


def _data(**changes):
    data = {"duration": "4s", "network": _network(), "workload": _poisson(), "protocol": {"name": "rcp"}}
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


# ------------------------------------------------------------------------------- loading
def test_inline_network_and_top_level_keys():
    scenario = Scenario.from_dict(_data(seeds=[3, 4], step="1ms", sample=0.1, pool_size=512, receiver_runs=100,
                                        lanes=8))
    assert scenario.duration_s == 4.0 and scenario.seeds == (3, 4)
    assert scenario.step_s == pytest.approx(1e-3) and scenario.sample_s == pytest.approx(0.1)
    assert scenario.pool_size == 512 and scenario.receiver_runs == 100 and scenario.lanes == 8
    defaults = Scenario.from_dict(_data())
    assert defaults.step_s is None and defaults.pool_size is None and defaults.receiver_runs is None
    assert defaults.lanes is None
    assert scenario.network.flow_names == ["f"] and scenario.network.capacities_pps.tolist() == [500.0]
    assert scenario.bottleneck_capacity_pps == 500.0 and scenario.rtpd_s == pytest.approx(0.05)
    assert scenario.offered_load == 0.5
    assert Scenario.from_dict(_data()).seeds == (0,)
    assert Scenario.from_dict(_data(seed=7)).seeds == (7,)


def test_network_file_relative_to_the_scenario_and_the_route_bottleneck(tmp_path):
    (tmp_path / "nets").mkdir()
    _write(tmp_path / "nets", "two.toml", NETWORK_TOML)
    path = _write(tmp_path, "s.toml", """
        duration = 5
        [network]
        file = "nets/two.toml"
        [workload]
        kind = "poisson"
        load = 0.8
        sizes = { kind = "fixed", packets = 4 }
        arrivals = "2s"
        route = "long"
        [protocol]
        name = "tcp"
    """)
    scenario = Scenario.load(path)
    assert scenario.network.link_names == ["a", "b"]
    assert scenario.route_name == "long" and scenario.bottleneck_link == "a"
    assert scenario.bottleneck_capacity_pps == pytest.approx(500.0)  # 4 Mb/s < 800 packets/s
    assert scenario.rtpd_s == pytest.approx(0.06)
    assert scenario.text == path.read_text()
    table = scenario.tables()[0]
    assert np.all(table.route == 0) and np.all(table.start_s < 2.0) and np.all(table.size_packets == 4)
    # rho = lambda E[L] / C: about 0.8 x 500 / 4 = 100 flows/s over 2 s
    assert 140 < len(table) < 260


@pytest.mark.parametrize("sizes, kind, mean", [
    ({"kind": "pareto", "shape": 1.2, "mean": 25}, Pareto, 25.0),
    ({"kind": "exponential", "mean": 8}, Exponential, 8.0),
    ({"kind": "fixed", "packets": 3}, Fixed, 3.0),
])
def test_parametric_sizes(sizes, kind, mean):
    scenario = Scenario.from_dict(_data(workload=_poisson(**sizes)))
    assert isinstance(scenario.workload.sizes, kind)
    assert scenario.workload.sizes.mean_packets == pytest.approx(mean)


def test_cdf_sizes_from_a_file_and_by_name(tmp_path, monkeypatch):
    monkeypatch.delenv("FLUIDCC_WORKLOADS", raising=False)
    (tmp_path / "cdfs").mkdir()
    _write(tmp_path / "cdfs", "mine.cdf", CDF_TEXT)
    _write(tmp_path / "cdfs", "websearch_dctcp.cdf", CDF_TEXT)
    data = _data(network={**_network(), "packet_bytes": 500},
                 workload=_poisson(kind="cdf", file="cdfs/mine.cdf"))
    by_file = Scenario.from_dict(data, tmp_path).workload.sizes
    assert isinstance(by_file, EmpiricalCDF) and by_file.packet_bytes == 500
    assert by_file.sizes_bytes == (0.0, 1000.0, 10000.0, 100000.0)
    by_name = Scenario.from_dict(_data(workload=_poisson(kind="cdf", name="websearch", directory="cdfs")),
                                 tmp_path).workload.sizes
    assert by_name.percents == (0.0, 50.0, 90.0, 100.0) and by_name.packet_bytes == 1000


def test_long_lived_workloads(tmp_path):
    _write(tmp_path, "two.toml", NETWORK_TOML)
    per_flow = Scenario.from_dict(_data(network={"file": "two.toml"}, workload={"kind": "long_lived"}), tmp_path)
    table = per_flow.tables()[0]
    assert table.route.tolist() == [0, 1] and table.start_s.tolist() == [0.0, 1.0]
    assert table.stop_s.tolist() == [math.inf, 3.0] and np.all(np.isinf(table.size_packets))
    # no [workload] table: the same
    assert Scenario.from_dict(_data(network={"file": "two.toml"}, workload=None), tmp_path).workload.count is None
    spread = Scenario.from_dict(_data(network={"file": "two.toml"}, seeds=[1, 2],
                                      workload={"kind": "long_lived", "count": 5, "start_spread": "1s",
                                                "route": "short"}), tmp_path)
    first, second = spread.tables()
    assert np.all(first.route == 1) and len(first) == 5
    assert np.all((first.start_s >= 0) & (first.start_s < 1.0)) and np.all(first.stop_s == math.inf)
    assert not np.array_equal(first.start_s, second.start_s)  # each run's seed draws its own starts
    together = Scenario.from_dict(_data(workload={"kind": "long_lived", "count": 3}))
    assert together.tables()[0].start_s.tolist() == [0.0, 0.0, 0.0]


def test_each_seed_draws_its_own_arrivals_unless_the_workload_has_a_seed():
    own = Scenario.from_dict(_data(seeds=[1, 2])).tables()
    assert len(own[0]) != len(own[1]) or not np.array_equal(own[0].start_s, own[1].start_s)
    fixed = Scenario.from_dict(_data(seeds=[1, 2], workload={**_poisson(), "seed": 9})).tables()
    assert np.array_equal(fixed[0].start_s, fixed[1].start_s)
    again = Scenario.from_dict(_data(seeds=[1, 2])).tables()
    assert np.array_equal(own[1].size_packets, again[1].size_packets)  # reproducible


@pytest.mark.parametrize("protocol, expected", [
    ({"name": "tcp"}, TCP()),
    ({"name": "tcp", "initial_window": 4, "min_rto": "300ms"}, TCP(initial_window=4.0, min_rto_s=0.3)),
    ({"name": "tcp", "syn_timeout": "1s", "receive_window": math.inf, "limited_transmit": False},
     TCP(syn_timeout_s=1.0, receive_window=math.inf, limited_transmit=False)),
    ({"name": "tcp", "receive_window": 64}, TCP(receive_window=64.0)),
    ({"name": "tcp", "mss_bytes": 948, "ack_bytes": 54}, TCP(mss_bytes=948.0, ack_bytes=54.0)),
    ({"name": "rcp"}, RCP()),
    ({"name": "rcp", "alpha": 0.4, "beta": 0.2, "tau": "5ms", "rtt_gain": 0.1, "min_rto": 1},
     RCP(alpha=0.4, beta=0.2, tau_s=0.005, rtt_gain=0.1, min_rto_s=1.0)),
    ({"name": "qcp"}, QCP()),
    ({"name": "qcp", "alpha": 0.5, "beta": 0.25, "interval": "40ms", "variant": "simplified", "gain": 1,
      "min_rto": "1s"}, QCP(alpha=0.5, beta=0.25, interval_s=0.04, variant="simplified", gain=1.0, min_rto_s=1.0)),
    ({"name": "open_loop", "kind": "constant", "rate": "2Mbps"}, OpenLoop(kind="constant", rate_pps=250.0)),
    ({"name": "open_loop", "rate": [100, "50pps"]}, OpenLoop(kind="poisson", rate_pps=(100.0, 50.0))),
])
def test_every_protocol_and_its_settings(protocol, expected):
    got = Scenario.from_dict(_data(protocol=protocol)).protocol
    assert type(got) is type(expected) and got == expected  # the exact engine's class


def test_the_text_of_a_mapping_is_toml_that_reads_back():
    import tomllib

    data = _data(seeds=[1, 2], sample="10ms")
    scenario = Scenario.from_dict(data)
    assert scenario.text == toml_text(data) and tomllib.loads(scenario.text) == data
    assert tomllib.loads(toml_text({"a": {"b": [{"c": 1.5, "d": float("inf")}], "e": {"f": "g"}}})) == \
        {"a": {"b": [{"c": 1.5, "d": float("inf")}], "e": {"f": "g"}}}


def test_the_examples_load():
    rcp = Scenario.load(EXAMPLES / "rcp_fct.toml")
    assert isinstance(rcp.protocol, RCP) and rcp.duration_s == 30.0 and rcp.offered_load == 0.9
    assert rcp.bottleneck_capacity_pps == pytest.approx(5000.0) and rcp.rtpd_s == pytest.approx(0.1)
    assert isinstance(rcp.workload.sizes, Pareto) and rcp.workload.sizes.mean_packets == 25
    assert rcp.step_s is None  # the exact engine's lookahead
    tcp = Scenario.load(EXAMPLES / "tcp_dumbbell.toml")
    assert tcp.protocol == TCP(initial_window=2.0, min_rto_s=0.2, limited_transmit=False, mss_bytes=948.0)
    assert tcp.duration_s == 20.0 and tcp.step_s is None and tcp.receiver_runs is None  # the default, grown
    assert tcp.bottleneck_capacity_pps == pytest.approx(12500.0) and tcp.rtpd_s == pytest.approx(0.08)
    assert tcp.network.flows[0].interface_pps == pytest.approx(1.25e6)  # 10 Gb/s
    table = tcp.tables()[0]
    assert len(table) == 50 and np.all(table.start_s < 1.0) and np.all(np.isinf(table.size_packets))
    assert tcp.network.links[0].buffer_packets == 1000
    short = Scenario.load(EXAMPLES / "tcp_shortflows.toml")  # ns-3's shortflows.cc, as a scenario file
    assert short.protocol == TCP(initial_window=10.0, min_rto_s=1.0, mss_bytes=948.0)
    assert short.offered_load == 0.5 and short.workload.arrivals_s == 100.0 and short.duration_s == 120.0
    assert short.bottleneck_capacity_pps == pytest.approx(12500.0) and short.rtpd_s == pytest.approx(0.1)
    assert short.network.links[0].buffer_packets == 1250 and short.workload.sizes.mean_packets == 25


TRACE_CSV = "start_s,size_packets,route,stop_s,fct_s\n0.5,4,short,inf,0.1\n0,inf,long,2.5,nan\n0.25,2,short,inf,0.2\n"


def test_trace_workloads(tmp_path):
    _write(tmp_path, "two.toml", NETWORK_TOML)
    (tmp_path / "traces").mkdir()
    _write(tmp_path / "traces", "flows.csv", TRACE_CSV)
    scenario = Scenario.from_dict(_data(network={"file": "two.toml"}, seeds=[1, 2, 3],
                                        workload={"kind": "trace", "file": "traces/flows.csv"}), tmp_path)
    assert scenario.workload.kind == "trace" and scenario.workload.file == tmp_path / "traces" / "flows.csv"
    tables = scenario.tables()
    assert len(tables) == 3 and all(t is tables[0] for t in tables)  # a trace is the same for every seed
    table = tables[0]
    assert table.start_s.tolist() == [0.5, 0.0, 0.25] and table.route.tolist() == [1, 0, 1]  # the file's order
    assert table.size_packets.tolist() == [4.0, math.inf, 2.0] and table.stop_s.tolist() == [math.inf, 2.5, math.inf]
    # the route most flows follow gives the reference numbers
    assert scenario.route_name == "short" and scenario.bottleneck_link == "b"
    assert math.isnan(scenario.offered_load)
    attributes = scenario.attributes()
    assert attributes["workload_kind"] == "trace" and attributes["trace_file"] == str(tmp_path / "traces" / "flows.csv")
    assert math.isnan(attributes["arrival_window_s"])
    # an absolute path, from a scenario anywhere
    absolute = Scenario.from_dict(_data(network={"file": str(tmp_path / "two.toml")},
                                        workload={"kind": "trace", "file": str(tmp_path / "traces" / "flows.csv")}),
                                  tmp_path / "elsewhere")
    np.testing.assert_array_equal(absolute.tables()[0].start_s, table.start_s)


def test_every_workload_kind_is_documented():
    from fluidcc.packet import scenario as module
    from fluidcc.packet.scenario import WORKLOAD_KINDS

    assert WORKLOAD_KINDS == ("poisson", "long_lived", "trace")
    for kind in WORKLOAD_KINDS:
        assert f'kind = "{kind}"' in module.__doc__, kind
    result = CliRunner().invoke(main, ["packet", "--help"])
    assert 'kind = "trace"' in " ".join(result.output.split()) and "--trace" in result.output


# ------------------------------------------------------------------------------- end to end
SMALL_POISSON = """
    duration = "4s"
    seeds = [1, 2]
    sample = "20ms"

    [network]
    [[network.links]]
    name = "l"
    capacity = 500
    delay = "25ms"
    [[network.flows]]
    name = "f"
    route = ["l"]

    [workload]
    kind = "poisson"
    load = 0.5
    sizes = { kind = "pareto", shape = 1.5, mean = 8 }
    arrivals = "3s"

    [protocol]
    name = "rcp"
"""


def test_packet_command_writes_files_that_agree_with_the_dataset(tmp_path):
    scenario = _write(tmp_path, "small.toml", SMALL_POISSON)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["packet", str(scenario), "--out", str(out)])
    assert result.exit_code == 0, result.output
    for name in ("run.nc", "flows.csv", "summary.json", "afct.png", "link.png"):
        assert (out / name).is_file(), name
    assert (out / "afct.png").stat().st_size > 10_000 and (out / "link.png").stat().st_size > 10_000
    assert "mean" in result.output and "wrote" in result.output

    run = xr.open_dataset(out / "run.nc", engine="scipy")
    assert run.attrs["scenario_toml"] == scenario.read_text()
    assert run.attrs["command"].startswith("fluidcc") and run.attrs["fluidcc_version"]
    assert run.attrs["offered_load"] == 0.5 and run.attrs["bottleneck_capacity_pps"] == 500.0
    assert run.attrs["rtpd_s"] == pytest.approx(0.05)
    assert run["seed"].values.tolist() == [1, 2]

    flows = pd.read_csv(out / "flows.csv")
    real = run["route_index"].values >= 0
    assert len(flows) == int(real.sum())
    assert set(flows["route"]) == {"f"} and flows["seed"].tolist() == run["seed"].values[np.nonzero(real)[0]].tolist()
    for column, variable in (("start_s", "start"), ("size_packets", "size"), ("fct_s", "fct"), ("sent", "sent"),
                             ("delivered", "delivered"), ("dropped", "dropped"), ("received", "received"),
                             ("duplicates", "duplicates")):
        np.testing.assert_allclose(flows[column].to_numpy(), run[variable].values[real], rtol=1e-12,
                                   equal_nan=True, err_msg=column)
    expected = metrics.slowdown(run["fct"].values[real], run["size"].values[real], 500.0, 0.5, 0.05)
    np.testing.assert_allclose(flows["slowdown"].to_numpy(), expected, rtol=1e-12, equal_nan=True)

    summary = json.loads((out / "summary.json").read_text())
    assert [r["seed"] for r in summary["runs"]] == [1, 2]
    for r, row in enumerate(summary["runs"]):
        mine = flows[flows["run"] == r]
        done = mine["fct_s"].notna()
        assert row["flows"] == len(mine) and row["finished"] == int(done.sum())
        assert row["afct_s"] == pytest.approx(mine["fct_s"][done].mean())
        served = run["served"].values[r, :, 0].sum()
        assert row["utilization"]["l"] == pytest.approx(served / (500.0 * float(run["sample_time"].values[-1])))
        assert row["mean_queue_packets"]["l"] == pytest.approx(float(run["queue_mean"].values[r, 0]))
        bins = row["afct_by_size"]
        assert sum(b["flows"] for b in bins) == row["finished"]
        assert all(b["ps_afct_s"] is not None and b["sample_ps_afct_s"] is not None for b in bins if b["flows"])
    assert summary["mean"]["afct_s"] == pytest.approx(np.mean([r["afct_s"] for r in summary["runs"]]))
    assert sum(b["flows"] for b in summary["mean"]["afct_by_size"]) == sum(r["finished"] for r in summary["runs"])


def test_packet_command_long_lived_tcp(tmp_path):
    # (five flows sampled every 30 ms: the program the trace tests below compile)
    scenario = _write(tmp_path, "tcp.toml", """
        duration = "3s"
        sample = "30ms"
        [network]
        [[network.links]]
        name = "l"
        capacity = 500
        delay = "20ms"
        buffer = 20
        [[network.flows]]
        name = "f"
        route = ["l"]
        [workload]
        kind = "long_lived"
        count = 5
        start_spread = "0.5s"
        [protocol]
        name = "tcp"
    """)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["packet", str(scenario), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "link.png").is_file() and not (out / "afct.png").exists()
    flows = pd.read_csv(out / "flows.csv")
    assert len(flows) == 5 and np.all(np.isinf(flows["size_packets"])) and "slowdown" not in flows
    summary = json.loads((out / "summary.json").read_text())
    row = summary["runs"][0]
    assert row["long_lived"] == 5 and row["flows"] == 0 and 0 < row["jain_fairness"] <= 1
    assert row["utilization"]["l"] > 0.5
    assert summary["offered_load"] is None  # NaN: no load for long-lived flows
    assert row["status"] == 0 and row["message"] == "ok" and summary["failed_runs"] == []


SMALL_TRACE = """
    duration = "2s"
    seeds = [1, 2]
    sample = "20ms"

    [network]
    [[network.links]]
    name = "l"
    capacity = 500
    delay = "20ms"
    [[network.flows]]
    name = "f"
    route = ["l"]

    [workload]
    kind = "trace"
    file = "ns3_flows.csv"

    [protocol]
    name = "tcp"
"""


def test_packet_command_replays_a_trace_and_writes_it_back(tmp_path):
    scenario = _write(tmp_path, "trace.toml", SMALL_TRACE)
    # ns-3's flow monitor style: an id and an fct column beside the trace's
    # (the flows of test_packet_command_runs_the_exact_engine: the two share a compiled program)
    _write(tmp_path, "ns3_flows.csv", "flow_id,start_s,size_packets,fct_s\n"
                                      "0,0.3,20,0.4\n1,0.0,5,0.1\n2,0.0101,1,0.05\n3,0.5,8,0.2\n4,0.0,40,0.5\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["packet", str(scenario), "--out", str(out), "--trace"])
    assert result.exit_code == 0, result.output
    assert "trace workload on route 'f'" in result.output and "finished/flows" in result.output
    assert (out / "afct.png").is_file()
    flows = pd.read_csv(out / "flows.csv")
    assert len(flows) == 10 and flows["seed"].tolist() == [1] * 5 + [2] * 5
    for seed in (1, 2):  # every seed replays the same flows, each at its exact start
        mine = flows[flows["seed"] == seed]
        assert mine["start_s"].tolist() == [0.3, 0.0, 0.0101, 0.5, 0.0]
        assert mine["size_packets"].tolist() == [20, 5, 1, 8, 40] and mine["fct_s"].notna().all()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["workload_kind"] == "trace" and summary["offered_load"] is None
    assert [row["finished"] for row in summary["runs"]] == [5, 5]
    # --trace: each seed's flows, as given (not rounded to slots), read back as the same table
    network = Scenario.load(scenario).network
    original = read_trace(tmp_path / "ns3_flows.csv", network)
    for seed in (1, 2):
        written = read_trace(out / f"trace_seed{seed}.csv", network)
        for name in ("start_s", "size_packets", "stop_s", "route"):
            np.testing.assert_array_equal(getattr(written, name), getattr(original, name))
    assert "trace_seed2.csv" in " ".join(result.output.split())
    run = xr.open_dataset(out / "run.nc", engine="scipy")
    assert run.attrs["trace_file"] == str(tmp_path / "ns3_flows.csv")


def test_packet_command_runs_the_exact_engine(tmp_path):
    """`fluidcc packet` on a trace gives, flow for flow, what `simulate_exact` gives on the same
    network and flows."""
    scenario = _write(tmp_path, "trace.toml", SMALL_TRACE)
    _write(tmp_path, "ns3_flows.csv", "start_s,size_packets\n0.3,20\n0.0,5\n0.0101,1\n0.5,8\n0.0,40\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["packet", str(scenario), "--out", str(out)])
    assert result.exit_code == 0, result.output
    run = xr.open_dataset(out / "run.nc", engine="scipy")
    network = Scenario.load(scenario).network
    assert run.attrs["lookahead_s"] == pytest.approx(0.04) and run.attrs["step_s"] == run.attrs["lookahead_s"]
    direct = simulate_exact(network, TCP(), read_trace(tmp_path / "ns3_flows.csv", network), duration_s=2.0,
                            seeds=[1, 2], sample_s=0.02)
    for name in ("start", "size", "sent", "delivered", "received", "dropped", "packets_sent", "acks_received",
                 "first_sent", "finish", "fct", "link_accepted", "queue_mean", "status"):
        np.testing.assert_array_equal(run[name].values, direct[name].values, err_msg=name)
    assert run["received"].values.sum() == 2 * (20 + 5 + 1 + 8 + 40)  # every flow finished, in both runs
    flows = pd.read_csv(out / "flows.csv")
    np.testing.assert_array_equal(flows["fct_s"].to_numpy(), direct["fct"].values.reshape(-1))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["lookahead_s"] == pytest.approx(0.04) and summary["failed_runs"] == []
    assert [row["status"] for row in summary["runs"]] == [0, 0]


def test_a_run_that_fails_is_reported_and_the_command_exits_1(tmp_path):
    """A packet pool too small for the flows: each run's status and message are in the summary and
    on the terminal, the files are written and the exit status is 1."""
    text = SMALL_TRACE.replace('sample = "20ms"', 'sample = "20ms"\n    pool_size = 4')
    scenario = _write(tmp_path, "small_pool.toml", text)
    _write(tmp_path, "ns3_flows.csv", "start_s,size_packets\n0.0,30\n0.0,30\n0.0,30\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["packet", str(scenario), "--out", str(out)])
    assert result.exit_code == 1, result.output
    assert "run 0 (seed 1) failed: status 1, the packet pool was full" in result.output and "pool_size" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert [row["status"] for row in summary["runs"]] == [1, 1]
    assert summary["failed_runs"] == [{"run": r, "seed": r + 1, "status": 1, "message": summary["runs"][r]["message"]}
                                      for r in (0, 1)]
    assert "packet pool was full" in summary["runs"][0]["message"] and "status" not in summary["mean"]
    for name in ("run.nc", "flows.csv", "afct.png", "link.png"):
        assert (out / name).is_file(), name


def test_a_scenario_s_flows_replay_as_a_trace_to_the_same_run(tmp_path):
    drawn = Scenario.from_dict(_data(duration="2s", seed=5,
                                     workload={**_poisson(kind="fixed", packets=3), "arrivals": "1s"}))
    (path,) = drawn.write_traces(tmp_path / "traces")
    assert path.name == "trace_seed5.csv"
    replay = Scenario.from_dict(_data(duration="2s", seed=5,
                                      workload={"kind": "trace", "file": "traces/trace_seed5.csv"}), tmp_path)
    first, second = run_scenario(drawn), run_scenario(replay)
    assert first.sizes["flow"] == second.sizes["flow"] > 0
    for name in ("start", "size", "route_index", "sent", "received", "dropped", "fct"):
        np.testing.assert_array_equal(first[name].values, second[name].values, err_msg=name)
    assert first.attrs["workload_kind"] == "poisson" and second.attrs["workload_kind"] == "trace"


# ------------------------------------------------------------------------------- bad scenarios
BAD = {
    "missing duration": ("""
        [network]
        file = "net.toml"
        [protocol]
        name = "tcp"
    """, ["duration", "missing", "required"]),
    "the old slot engine's slot": ("""
        duration = "1s"
        slot = "2ms"
        [network]
        file = "net.toml"
        [protocol]
        name = "tcp"
    """, ["slot = '2ms'", "exact engine", "step", "do not depend on"]),
    "step beyond the lookahead": ("""
        duration = "1s"
        step = "50ms"
        [network]
        file = "net.toml"
        [protocol]
        name = "tcp"
    """, ["step = '50ms'", "lookahead, 0.02 s", "link l to sender of flow f"]),
    "pool of one packet": ("""
        duration = "1s"
        pool_size = 1
        [network]
        file = "net.toml"
        [protocol]
        name = "tcp"
    """, ["pool_size = 1", ">= 2"]),
    "a switch that is not true or false": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [protocol]
        name = "tcp"
        limited_transmit = 1
    """, ["protocol.limited_transmit = 1", "true or false"]),
    "a number that is not a number": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [protocol]
        name = "qcp"
        gain = "fast"
    """, ["protocol.gain = 'fast'", "a number"]),
    "a gain out of its range": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [protocol]
        name = "qcp"
        gain = 1.5
    """, ["protocol.gain = 1.5", "(0, 1]"]),
    "unknown top-level key": ("""
        duration = "1s"
        durration = "2s"
        [network]
        file = "net.toml"
        [protocol]
        name = "tcp"
    """, ["durration", "allowed", "duration"]),
    "unknown workload key": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [workload]
        kind = "poisson"
        lod = 0.5
        [protocol]
        name = "tcp"
    """, ["workload.lod", "load", "sizes"]),
    "unknown protocol key": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [protocol]
        name = "rcp"
        gamma = 0.5
    """, ["protocol.gamma", "alpha", "beta", "tau"]),
    "unknown sizes key": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [workload]
        kind = "poisson"
        load = 0.5
        sizes = { kind = "pareto", shape = 1.2, mean = 25, scale = 3 }
        [protocol]
        name = "tcp"
    """, ["workload.sizes.scale", "shape", "mean"]),
    "load at 1": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [workload]
        kind = "poisson"
        load = 1.0
        sizes = { kind = "fixed", packets = 1 }
        [protocol]
        name = "rcp"
    """, ["workload.load", "1.0", "(0, 1)", "processor sharing"]),
    "route names a missing link": ("""
        duration = "1s"
        [network]
        [[network.links]]
        name = "l"
        capacity = 100
        [[network.flows]]
        name = "f"
        route = ["l", "nowhere"]
        [protocol]
        name = "tcp"
    """, ["network", "flow 'f': route", "nowhere", "a link of the network"]),
    "workload route names a missing flow": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [workload]
        kind = "poisson"
        load = 0.5
        sizes = { kind = "fixed", packets = 1 }
        route = "g"
        [protocol]
        name = "tcp"
    """, ["workload.route", "'g'", "f"]),
    "CDF that decreases": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [workload]
        kind = "poisson"
        load = 0.5
        sizes = { kind = "cdf", file = "decreasing.cdf" }
        [protocol]
        name = "tcp"
    """, ["workload.sizes", "decreasing.cdf, line 3", "do not decrease"]),
    "CDF that does not end at 100": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [workload]
        kind = "poisson"
        load = 0.5
        sizes = { kind = "cdf", file = "short.cdf" }
        [protocol]
        name = "tcp"
    """, ["workload.sizes", "short.cdf, line 2", "100"]),
    "missing CDF file": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [workload]
        kind = "poisson"
        load = 0.5
        sizes = { kind = "cdf", file = "nowhere.cdf" }
        [protocol]
        name = "tcp"
    """, ["workload.sizes.file", "nowhere.cdf", "existing"]),
    "unknown protocol": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [protocol]
        name = "cubic"
    """, ["protocol.name", "cubic", "tcp", "rcp", "open_loop"]),
    "bad protocol setting": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [protocol]
        name = "rcp"
        tau = "-5ms"
    """, ["protocol.tau", "-5ms", "> 0"]),
    "bad time unit": ("""
        duration = "3 parsecs"
        [network]
        file = "net.toml"
        [protocol]
        name = "tcp"
    """, ["duration", "parsecs"]),
    "missing network file": ("""
        duration = "1s"
        [network]
        file = "missing.toml"
        [protocol]
        name = "tcp"
    """, ["network.file", "missing.toml", "existing"]),
    "bad pareto shape": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [workload]
        kind = "poisson"
        load = 0.5
        sizes = { kind = "pareto", shape = 0.9, mean = 25 }
        [protocol]
        name = "tcp"
    """, ["workload.sizes.shape", "0.9", "> 1"]),
    "trace without a file": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [workload]
        kind = "trace"
        [protocol]
        name = "tcp"
    """, ["workload.file", "missing", "required", "CSV"]),
    "missing trace file": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [workload]
        kind = "trace"
        file = "nowhere.csv"
        [protocol]
        name = "tcp"
    """, ["workload.file", "nowhere.csv", "existing"]),
    "trace with a seed": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [workload]
        kind = "trace"
        file = "flows.csv"
        seed = 3
        [protocol]
        name = "tcp"
    """, ["workload.seed", "allowed: kind, file"]),
    "trace row with a size 0": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [workload]
        kind = "trace"
        file = "zero.csv"
        [protocol]
        name = "tcp"
    """, ["workload", "zero.csv, line 3, size_packets", "'0'", ">= 1"]),
    "trace with an unknown route": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [workload]
        kind = "trace"
        file = "unrouted.csv"
        [protocol]
        name = "tcp"
    """, ["workload", "unrouted.csv, line 2, route", "'g'", "f"]),
    "unknown workload kind": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [workload]
        kind = "replay"
        [protocol]
        name = "tcp"
    """, ["workload.kind", "replay", '"poisson"', '"long_lived"', '"trace"']),
    "arrivals beyond the duration": ("""
        duration = "1s"
        [network]
        file = "net.toml"
        [workload]
        kind = "poisson"
        load = 0.5
        sizes = { kind = "fixed", packets = 1 }
        arrivals = "2s"
        [protocol]
        name = "tcp"
    """, ["workload.arrivals", "2s", "duration"]),
}


@pytest.fixture()
def bad_folder(tmp_path):
    _write(tmp_path, "net.toml", '[[links]]\nname = "l"\ncapacity = 100\ndelay = "10ms"\n[[flows]]\nname = "f"\n'
                                 'route = ["l"]\n')
    _write(tmp_path, "decreasing.cdf", "0 0\n1000 60\n2000 50\n3000 100\n")
    _write(tmp_path, "short.cdf", "0 0\n1000 90\n")
    _write(tmp_path, "flows.csv", "start_s,size_packets\n0,1\n")
    _write(tmp_path, "zero.csv", "start_s,size_packets\n0,1\n0.5,0\n")
    _write(tmp_path, "unrouted.csv", "start_s,size_packets,route\n0,1,g\n")
    return tmp_path


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_scenarios_name_the_field(case, bad_folder):
    text, words = BAD[case]
    path = _write(bad_folder, "bad.toml", text)
    with pytest.raises(ParameterError) as raised:
        Scenario.load(path)
    message = str(raised.value)
    for word in words:
        assert word in message, (word, message)
    assert not any(f"{part}.{part}" in message for part in ("network", "workload", "sizes", "protocol"))
    result = CliRunner().invoke(main, ["packet", str(path), "--out", str(bad_folder / "out")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert str(raised.value).splitlines()[0][:40] in " ".join(result.output.split())
    assert not (bad_folder / "out" / "run.nc").exists()


def test_errors_of_the_scenario_file_itself(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["packet", str(tmp_path / "none.toml")])
    assert result.exit_code == 2 and "scenario file" in result.output
    broken = _write(tmp_path, "broken.toml", "duration = \n")
    result = runner.invoke(main, ["packet", str(broken)])
    assert result.exit_code == 2 and "valid TOML" in result.output
    with pytest.raises(ParameterError, match="seeds"):
        Scenario.from_dict(_data(seed=1, seeds=[1, 2]))
    with pytest.raises(ParameterError, match=r"seeds\[1\]"):
        Scenario.from_dict(_data(seeds=[1, -2]))
    with pytest.raises(ParameterError, match="workload.start_spread"):
        Scenario.from_dict(_data(workload={"kind": "long_lived", "start_spread": "1s"}))
    with pytest.raises(ParameterError, match="network.links"):
        Scenario.from_dict(_data(network={"file": "x.toml", "links": []}))


def test_errors_of_the_engine_name_the_scenario_key(tmp_path):
    """What `simulate_exact` refuses reaches the user under the scenario's key: a step set on the
    `Scenario` past the lookahead (the file's is refused on loading), open-loop rates that do not
    fit the flows."""
    scenario = Scenario.from_dict(_data())
    with pytest.raises(ParameterError) as raised:
        run_scenario(dataclasses.replace(scenario, step_s=0.2))
    assert raised.value.field == "step" and "lookahead, 0.05 s" in raised.value.allowed
    _write(tmp_path, "two.csv", "start_s,size_packets\n0,10\n0,10\n")
    rates = Scenario.from_dict(_data(workload={"kind": "trace", "file": "two.csv"},
                                     protocol={"name": "open_loop", "rate": [100, 50, 20]}), tmp_path)
    with pytest.raises(ParameterError) as raised:
        run_scenario(rates)
    assert raised.value.field == "protocol.rate" and "one per flow (2)" in raised.value.allowed
