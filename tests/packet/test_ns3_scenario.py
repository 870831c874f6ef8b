"""One scenario file drives fluidcc and ns-3: the benchmarks' translation of a scenario of TCP on one
link into the arguments of ns-3's `shortflows` program (`benchmarks/_packet_scenarios.py`), and its
refusal, naming the key, of what that program would run otherwise than the file says. (Running
ns-3 is the benchmarks' part: `benchmarks/packet_speed.py`.)"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from fluidcc.errors import ParameterError
from fluidcc.packet import Scenario
from fluidcc.packet.exact_protocols import TCP
from fluidcc.packet.workloads import read_trace

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "scenarios"


@pytest.fixture(scope="module")
def helper():
    spec = importlib.util.spec_from_file_location("_packet_scenarios", ROOT / "benchmarks" / "_packet_scenarios.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def flags(arguments: list[str]) -> dict[str, str]:
    return dict(a[2:].split("=", 1) for a in arguments)


def test_the_dumbbell_file_becomes_ns3s_link_tcp_and_flows(helper, tmp_path):
    scenario = Scenario.load(EXAMPLES / "tcp_dumbbell.toml")
    trace = tmp_path / "flows.csv"
    given = flags(helper.ns3_scenario_arguments(scenario, 1, trace))
    assert float(given["capacity-pps"]) == 12500.0 and float(given["rtpd"]) == pytest.approx(0.08)
    assert given["buffer"] == "1000" and given["initial-cwnd"] == "2" and float(given["min-rto"]) == 0.2
    assert given["limitedTransmit"] == "0" and given["hosts"] == "50"  # a host per long-lived flow
    assert float(given["duration"]) == 20.0 and float(given["drain"]) == 0.0
    # the flows ns-3 reads are the scenario's own, to the bit
    table, replayed = scenario.tables()[0], read_trace(trace, scenario.network)
    np.testing.assert_array_equal(replayed.start_s, table.start_s)
    assert np.all(np.isinf(replayed.size_packets)) and len(replayed) == 50


def test_short_flows_arrive_then_drain_and_each_seed_has_its_flows(helper, tmp_path):
    scenario = dataclasses.replace(Scenario.load(EXAMPLES / "tcp_shortflows.toml"), seeds=(1, 2), duration_s=3.0,
                                   workload=dataclasses.replace(Scenario.load(EXAMPLES / "tcp_shortflows.toml").workload,
                                                                arrivals_s=2.0))
    one, two = (flags(helper.ns3_scenario_arguments(scenario, s, tmp_path / f"{s}.csv")) for s in (1, 2))
    assert float(one["duration"]) == 2.0 and float(one["drain"]) == 1.0 and one["buffer"] == "1250"
    assert one["initial-cwnd"] == "10" and float(one["min-rto"]) == 1.0 and one["limitedTransmit"] == "1"
    a, b = (read_trace(tmp_path / f"{s}.csv", scenario.network) for s in (1, 2))
    np.testing.assert_array_equal(a.size_packets, scenario.tables()[0].size_packets)
    assert len(a) != len(b) or not np.array_equal(a.start_s, b.start_s)


def _with_flow(scenario, **flow_changes):
    net = scenario.network
    return dataclasses.replace(scenario, network=dataclasses.replace(
        net, flows=(dataclasses.replace(net.flows[0], **flow_changes),) + net.flows[1:]))


def _with_network(scenario, **link_changes):
    net = scenario.network
    return dataclasses.replace(scenario, network=dataclasses.replace(
        net, links=(dataclasses.replace(net.links[0], **link_changes),) + net.links[1:]))


@pytest.mark.parametrize("change, field", [
    (lambda s: dataclasses.replace(s, protocol=dataclasses.replace(s.protocol, mss_bytes=None)), "protocol.mss_bytes"),
    (lambda s: dataclasses.replace(s, protocol=dataclasses.replace(s.protocol, syn_timeout_s=1.0)),
     "protocol.syn_timeout"),
    (lambda s: dataclasses.replace(s, protocol=dataclasses.replace(s.protocol, initial_window=2.5)),
     "protocol.initial_window"),
    (lambda s: dataclasses.replace(s, network=dataclasses.replace(s.network, packet_bytes=1500)),
     "network.packet_bytes"),
    (lambda s: _with_network(s, schedule=((1.0, 6000.0),)), "network: link 'bottleneck': schedule"),
    (lambda s: _with_network(s, buffer_packets=10.5), "network: link 'bottleneck': buffer"),
    (lambda s: _with_network(s, capacity_pps=125_000.0), "network: link 'bottleneck'"),  # 11 000 in flight
    (lambda s: _with_flow(s, interface_pps=None), "network: flow 'f': interface"),  # fluidcc: the link's rate
    (lambda s: _with_flow(s, reverse_route=("bottleneck",)), "network: flow 'f': reverse_route"),
])
def test_what_ns3_would_run_otherwise_is_refused_by_its_key(helper, tmp_path, change, field):
    scenario = change(Scenario.load(EXAMPLES / "tcp_dumbbell.toml"))
    with pytest.raises(ParameterError) as error:
        helper.ns3_scenario_arguments(scenario, 1, tmp_path / "flows.csv")
    assert error.value.field == field
    assert not (tmp_path / "flows.csv").exists()  # nothing half written


def test_other_protocols_and_networks_are_refused(helper, tmp_path):
    rcp = Scenario.load(EXAMPLES / "rcp_fct.toml")
    with pytest.raises(ParameterError, match="protocol.name = 'rcp'"):
        helper.ns3_scenario_arguments(rcp, 1, tmp_path / "flows.csv")
    two = Scenario.from_dict({"duration": "1s", "network": {"packet_bytes": 1000, "links": [
        {"name": "a", "capacity": 1000, "delay": "10ms"}, {"name": "b", "capacity": 1000, "delay": "10ms"}],
        "flows": [{"name": "f", "route": ["a", "b"]}]}, "protocol": {"name": "tcp", "mss_bytes": 948}})
    assert isinstance(two.protocol, TCP)
    with pytest.raises(ParameterError) as error:
        helper.ns3_scenario_arguments(two, 0, tmp_path / "flows.csv")
    assert error.value.field == "network.links" and "exactly one" in str(error.value)


def test_flows_of_other_round_trips_and_stop_times_are_refused(helper, tmp_path):
    """ns-3 gives every flow the one RTPD and never stops a flow: a trace whose routes differ in
    their access delay, or whose flows stop, is refused by the key that says so."""
    trace = tmp_path / "flows.csv"
    data = {"duration": "2s", "network": {"packet_bytes": 1000, "links": [{"name": "b", "capacity": 1000,
                                                                          "delay": "10ms", "buffer": 20}],
            "flows": [{"name": "near", "route": ["b"], "interface": "10Gbps"},
                      {"name": "far", "route": ["b"], "interface": "10Gbps", "access_delay": "5ms"}]},
            "workload": {"kind": "trace", "file": str(trace)}, "protocol": {"name": "tcp", "mss_bytes": 948}}
    trace.write_text("start_s,size_packets,route,stop_s\n0,5,near,inf\n0.1,5,far,inf\n")
    with pytest.raises(ParameterError) as error:
        helper.ns3_scenario_arguments(Scenario.from_dict(data), 0, tmp_path / "out.csv")
    assert error.value.field == "network: flow 'far': access_delay"
    trace.write_text("start_s,size_packets,route,stop_s\n0,5,near,1.5\n")
    with pytest.raises(ParameterError) as error:
        helper.ns3_scenario_arguments(Scenario.from_dict(data), 0, tmp_path / "out.csv")
    assert error.value.field == "workload.file: stop_s" and not (tmp_path / "out.csv").exists()
