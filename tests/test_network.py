"""Network: validation names the link or flow at fault; TOML/JSON files; routing, RTTs, activity."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from fluidcc import scenarios
from fluidcc.errors import NetworkError, ParameterError
from fluidcc.network import Flow, Link, Network, toml_loads
from fluidcc.units import mbps_to_pps

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "networks"


def two_links(**flow_fields) -> Network:
    links = (Link("a", 1000.0, 0.01), Link("b", 500.0, 0.02))
    return Network(links, (Flow("f", ("a", "b"), **flow_fields), Flow("g", ("b",))))


def spec(links=None, flows=None, **top) -> dict:
    """A small file-format mapping; `links` / `flows` replace the defaults."""
    return {
        "links": links if links is not None else [{"name": "a", "capacity": "10Mbps", "delay": "5ms"}],
        "flows": flows if flows is not None else [{"name": "f", "route": ["a"]}],
        **top,
    }


# ------------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "build, field, value",
    [
        (lambda: Network((Link("a", 1.0),), (Flow("f", ("a", "zz")),)), "flow 'f': route", "zz"),
        (lambda: Flow("f", ()), "flow 'f': route", []),
        (lambda: Flow("f", ("a", "b", "a")), "flow 'f': route", ["a", "b", "a"]),
        (lambda: Link("a", 0.0), "link 'a': capacity", 0.0),
        (lambda: Link("a", -5.0), "link 'a': capacity", -5.0),
        (lambda: Link("a", math.inf), "link 'a': capacity", math.inf),
        (lambda: Link("a", 1.0, -0.001), "link 'a': delay", -0.001),
        (lambda: Link("a", 1.0, 0.0, -1.0), "link 'a': buffer", -1.0),
        (lambda: Flow("f", ("a",), access_delay_s=-1.0), "flow 'f': access_delay", -1.0),
        (lambda: Flow("f", ("a",), weight=0.0), "flow 'f': weight", 0.0),
        (lambda: Flow("f", ("a",), weight=-2.0), "flow 'f': weight", -2.0),
        (lambda: Flow("f", ("a",), start_s=5.0, stop_s=3.0), "flow 'f': stop", 3.0),
        (lambda: Flow("f", ("a",), start_s=5.0, stop_s=5.0), "flow 'f': stop", 5.0),
        (lambda: Flow("f", ("a",), start_s=-1.0), "flow 'f': start", -1.0),
        (lambda: Flow("f", ("a",), demand_pps=0.0), "flow 'f': demand", 0.0),
        (lambda: Flow("f", ("a",), interface_pps=0.0), "flow 'f': interface", 0.0),
        (lambda: Flow("f", ("a",), interface_pps=math.inf), "flow 'f': interface", math.inf),
        (lambda: Network((Link("a", 1.0), Link("a", 2.0)), (Flow("f", ("a",)),)), "links.name", "a"),
        (lambda: Network((Link("a", 1.0),), (Flow("f", ("a",)), Flow("f", ("a",)))), "flows.name", "f"),
        (lambda: Network((), (Flow("f", ("a",)),)), "links", []),
        (lambda: Network((Link("a", 1.0),), ()), "flows", []),
    ],
)
def test_invalid_objects_raise_naming_the_link_or_flow(build, field, value):
    with pytest.raises(NetworkError) as caught:
        build()
    assert caught.value.field == field
    assert caught.value.value == value
    assert field in str(caught.value) and "is not allowed" in str(caught.value)


def test_network_error_is_a_parameter_error_and_a_value_error():
    with pytest.raises(ParameterError):
        Link("a", 0.0)
    with pytest.raises(ValueError):
        Link("a", 0.0)


def test_the_unknown_link_error_lists_the_network_links():
    with pytest.raises(NetworkError, match=r"a link of the network \(a, b\)"):
        Network((Link("a", 1.0), Link("b", 1.0)), (Flow("f", ("c",)),))


@pytest.mark.parametrize(
    "data, field, value",
    [
        (spec(links=[{"name": "a", "capacity": "10parsecs"}]), "link 'a': capacity", "10parsecs"),
        (spec(links=[{"name": "a", "capacity": "10Mbps", "delay": "5Mbps"}]), "link 'a': delay", "5Mbps"),
        (spec(links=[{"name": "a", "capacity": "ten"}]), "link 'a': capacity", "ten"),
        (spec(flows=[{"name": "f", "route": ["a"], "start": "3kg"}]), "flow 'f': start", "3kg"),
        (spec(flows=[{"name": "f", "route": ["a"], "demand": "5ms"}]), "flow 'f': demand", "5ms"),
        (spec(flows=[{"name": "f", "route": ["a"], "interface": "-1Gbps"}]), "flow 'f': interface", -125000.0),
        (spec(flows=[{"name": "f", "route": ["a"], "weight": "2Mbps"}]), "flow 'f': weight", "2Mbps"),
        (spec(links=[{"name": "a", "capacity": "10Mbps", "colour": "red"}]), "link 'a': key", "colour"),
        (spec(flows=[{"name": "f", "route": ["a"], "speed": 3}]), "flow 'f': key", "speed"),
        (spec(extra=1), "network", "extra"),
        (spec(links=[{"name": "a"}]), "link 'a': capacity", None),
        (spec(links=[]), "links", []),
        (spec(flows=[{"name": "f", "route": ["a"], "count": 0}]), "flow 'f': count", 0),
        (spec(flows=[{"name": "f", "route": ["a"], "count": 1.5}]), "flow 'f': count", 1.5),
        (spec(flows=[{"name": "f", "route": [1, 2]}]), "flow 'f': route", [1, 2]),
        (spec(flows=[{"name": "f", "route": ["a", "b"]}]), "flow 'f': route", "b"),
        (spec(flows=[{"name": "f", "route": []}]), "flow 'f': route", []),
        (spec(flows=[{"name": "f", "route": ["a", "a"]}]), "flow 'f': route", ["a", "a"]),
        (spec(flows=[{"name": "f", "route": ["a"], "stop": "1s", "start": "2s"}]), "flow 'f': stop", 1.0),
        (spec(flows=[{"name": "f", "route": ["a"]}, {"name": "f", "route": ["a"]}]), "flows.name", "f"),
        (spec(packet_bytes=0), "packet_bytes", 0),
        (spec(packet_bytes=1000.5), "packet_bytes", 1000.5),  # not truncated to 1000
        (spec(packet_bytes="1500"), "packet_bytes", "1500"),
        (spec(packet_bytes=True), "packet_bytes", True),
    ],
)
def test_invalid_files_raise_naming_the_entry(data, field, value):
    with pytest.raises(NetworkError) as caught:
        Network.from_dict(data)
    assert caught.value.field == field
    assert caught.value.value == value


def test_units_in_files_follow_packet_bytes():
    net = Network.from_dict(spec(packet_bytes=1500, flows=[{"name": "f", "route": ["a"], "demand": "3Mbps"}]))
    assert net.links[0].capacity_pps == pytest.approx(10e6 / (8 * 1500))
    assert net.flows[0].demand_pps == pytest.approx(3e6 / (8 * 1500))
    assert net.links[0].delay_s == pytest.approx(0.005)
    plain = Network.from_dict(spec(links=[{"name": "a", "capacity": 1250, "delay": 0.1}]))
    assert plain.links[0].capacity_pps == 1250.0 and plain.links[0].delay_s == 0.1


# ------------------------------------------------------------------------------------ files
TOML_TEXT = """
packet_bytes = 1000

[[links]]
name = "a"
capacity = "155Mbps"
delay = "20ms"
buffer = 500

[[links]]
name = "b"
capacity = 12500
delay = 0.01

[[flows]]
name = "short"
route = ["a"]
access_delay = "5ms"
weight = 2
stop = "40s"

[[flows]]
name = "long"
route = ["a", "b"]
start = "1s"
demand = "10Mbps"
interface = "1Gbps"
count = 3
"""


def check_toml_network(net: Network) -> None:
    assert net.link_names == ["a", "b"]
    assert net.flow_names == ["short", "long[0]", "long[1]", "long[2]"]
    assert net.links[0] == Link("a", mbps_to_pps(155), 0.02, 500.0)
    assert net.links[1] == Link("b", 12500.0, 0.01)
    assert net.flows[0] == Flow("short", ("a",), access_delay_s=0.005, weight=2.0, stop_s=40.0)
    for k in range(3):
        assert net.flows[1 + k] == Flow(f"long[{k}]", ("a", "b"), start_s=1.0, demand_pps=mbps_to_pps(10),
                                        interface_pps=mbps_to_pps(1000))


def test_load_toml(tmp_path):
    path = tmp_path / "net.toml"
    path.write_text(TOML_TEXT)
    check_toml_network(Network.load(path))


def test_load_json(tmp_path):
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    path = tmp_path / "net.json"
    path.write_text(json.dumps(tomllib.loads(TOML_TEXT)))
    check_toml_network(Network.load(path))


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_save_then_load_round_trips(tmp_path, suffix):
    source = tmp_path / "net.toml"
    source.write_text(TOML_TEXT)
    net = Network.load(source)
    copy = Network.load(net.save(tmp_path / f"copy{suffix}"))
    assert copy == net
    assert Network.from_dict(net.to_dict()) == net


def test_scenarios_round_trip_through_files(tmp_path):
    for net in (scenarios.ixcp_fig6(), scenarios.vcp_parking_lot(50.0), scenarios.random_network(6, 20, seed=3)):
        assert Network.load(net.save(tmp_path / "n.toml")) == net
        assert Network.load(net.save(tmp_path / "n.json")) == net


@pytest.mark.parametrize(
    "name, text, field",
    [
        ("missing.toml", None, "network file"),
        ("net.yaml", "links: []", "network file"),
        ("bad.toml", "[[links]\nname = ", "network file"),
        ("bad.json", "{not json", "network file"),
        ("list.json", "[1, 2]", "network"),
    ],
)
def test_bad_files_raise(tmp_path, name, text, field):
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(NetworkError) as caught:
        Network.load(path)
    assert caught.value.field == field


def test_save_needs_a_known_suffix(tmp_path):
    with pytest.raises(NetworkError, match="ending in .toml or .json"):
        two_links().save(tmp_path / "net.txt")


def test_example_files_are_the_scenarios():
    assert Network.load(EXAMPLES / "ixcp_fig1.toml") == scenarios.ixcp_fig1(8)
    assert Network.load(EXAMPLES / "ixcp_fig6.toml") == scenarios.ixcp_fig6()
    assert Network.load(EXAMPLES / "ixcp_fig4.toml") == scenarios.ixcp_fig4()
    assert Network.load(EXAMPLES / "parking_lot.toml") == scenarios.vcp_parking_lot()


# ------------------------------------------------------------------------------- structure
def test_count_expands_to_identical_named_flows():
    net = Network.from_dict(spec(flows=[{"name": "bulk", "route": ["a"], "weight": 3, "count": 4},
                                        {"name": "one", "route": "a", "count": 1}]))
    assert net.flow_names == ["bulk[0]", "bulk[1]", "bulk[2]", "bulk[3]", "one"]
    assert all(flow.weight == 3.0 and flow.route == ("a",) for flow in net.flows[:4])


def test_routing_matrix_and_indices():
    net = Network((Link("a", 1.0), Link("b", 1.0), Link("c", 1.0)),
                  (Flow("f", ("c", "a")), Flow("g", ("b",)), Flow("h", ("a", "b", "c"))))
    np.testing.assert_array_equal(net.routing_matrix, [[1, 0, 1], [0, 1, 1], [1, 0, 1]])
    assert net.routing_matrix.shape == (net.n_links, net.n_flows) == (3, 3)
    assert net.route_indices("f") == [2, 0]  # in the order crossed
    assert net.flows_on("b") == [1, 2] and net.flows_on(0) == [0, 2]
    assert net.link_index("c") == 2 and net.flow_index("h") == 2
    with pytest.raises(NetworkError, match="link = 'z'"):
        net.link_index("z")
    with pytest.raises(NetworkError, match="flow = 'z'"):
        net.flow_index("z")


def test_rtt_is_twice_access_plus_link_delays():
    net = Network((Link("a", 1.0, 0.01), Link("b", 1.0, 0.02)),
                  (Flow("f", ("a", "b"), access_delay_s=0.005), Flow("g", ("b",))))
    np.testing.assert_allclose(net.rtt_s, [2 * (0.005 + 0.01 + 0.02), 2 * 0.02])
    np.testing.assert_allclose(scenarios.ixcp_fig6().rtt_s[:2], [0.12, 0.04])


def test_active_at_time_and_phases():
    net = scenarios.ixcp_fig6()
    np.testing.assert_array_equal(net.active(0.0), [1, 1, 1, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(net.active(20.0), [1, 1, 1, 1, 1, 1, 1, 1])  # start is inclusive
    np.testing.assert_array_equal(net.active(39.999), [1, 1, 1, 1, 1, 1, 1, 1])
    np.testing.assert_array_equal(net.active(40.0), [1, 1, 1, 1, 0, 0, 0, 0])  # stop is exclusive
    assert net.phases() == [(0.0, 20.0), (20.0, 40.0), (40.0, math.inf)]


def test_arrays_follow_flow_and_link_order():
    net = two_links(weight=2.5, demand_pps=300.0, start_s=1.0, stop_s=9.0)
    np.testing.assert_array_equal(net.capacities_pps, [1000.0, 500.0])
    np.testing.assert_array_equal(net.link_delays_s, [0.01, 0.02])
    np.testing.assert_array_equal(net.weights, [2.5, 1.0])
    np.testing.assert_array_equal(net.demands_pps, [300.0, math.inf])
    np.testing.assert_array_equal(net.start_s, [1.0, 0.0])
    np.testing.assert_array_equal(net.stop_s, [9.0, math.inf])
    np.testing.assert_allclose(net.link_load([100.0, 200.0]), [100.0, 300.0])
    np.testing.assert_allclose(net.utilization([100.0, 200.0]), [0.1, 0.6])


def test_bottlenecks_of_an_allocation():
    net = scenarios.ixcp_fig1(3)
    long_rate = mbps_to_pps(100) / 3
    rates = [mbps_to_pps(155) - 3 * long_rate] + [long_rate] * 3
    assert net.bottlenecks(rates) == [[0], [1], [1], [1]]
    # Not saturated anywhere: no bottleneck at all.
    assert net.bottlenecks([1.0, 1.0, 1.0, 1.0]) == [[], [], [], []]
    # l1 saturated but the short flow is not the largest there: only the long flows' l1 counts.
    assert net.bottlenecks([mbps_to_pps(155) - 3 * mbps_to_pps(10)] + [mbps_to_pps(10)] * 3)[1] == []
    # Weighted: the weighted rate rate / weight is compared.
    weighted = Network(net.links, (Flow("x", ("l2",), weight=1.0), Flow("y", ("l2",), weight=3.0)))
    quarter = mbps_to_pps(100) / 4
    assert weighted.bottlenecks([quarter, 3 * quarter]) == [[1], [1]]  # l2 is link 1
    assert weighted.bottlenecks([2 * quarter, 2 * quarter]) == [[1], []]
    with pytest.raises(NetworkError, match="one rate per flow"):
        net.bottlenecks([1.0])


def test_replace_swaps_capacities_flows_or_links():
    net = two_links()
    assert net.replace(capacities_pps=[10.0, 20.0]).capacities_pps.tolist() == [10.0, 20.0]
    assert net.replace(flows=[Flow("only", ("a",))]).flow_names == ["only"]
    with pytest.raises(NetworkError, match="one capacity per link"):
        net.replace(capacities_pps=[1.0])
    with pytest.raises(NetworkError, match="link 'a': capacity"):
        net.replace(capacities_pps=[0.0, 1.0])
    with pytest.raises(NetworkError, match="flow 'f': route = 'b'"):
        net.replace(links=[Link("a", 1.0)])


def test_scenarios_check_their_counts_and_random_networks_follow_the_seed():
    with pytest.raises(ParameterError, match="n_long = 0"):
        scenarios.ixcp_fig1(0)
    with pytest.raises(ParameterError, match="n_cross = -1"):
        scenarios.vcp_parking_lot(n_cross=-1)
    with pytest.raises(ParameterError, match="n_flows = 0"):
        scenarios.random_network(3, 0, seed=0)
    first = scenarios.random_network(10, 50, seed=7)
    assert first == scenarios.random_network(10, 50, seed=7) != scenarios.random_network(10, 50, seed=8)
    assert all(1 <= len(flow.route) <= 6 for flow in first.flows)
    assert all(mbps_to_pps(10) <= c <= mbps_to_pps(1000) for c in first.capacities_pps)
    assert scenarios.vcp_parking_lot(50.0).capacities_pps.tolist() == [mbps_to_pps(100)] * 3 + [
        mbps_to_pps(50)] + [mbps_to_pps(100)] * 3


def test_the_vcp_sweep_is_one_network_of_link_pairs_with_a_flow_table_per_point():
    """Point k: links f<k> and r<k> of its capacity, a quarter of its RTT each, n flows each way whose
    round trip is the RTT, buffers max(BDP, 2 per flow); run k starts only point k's flows before
    `later_s`, and point 1's short flows ride its forward link."""
    from fluidcc.packet.workloads import FlowTable

    short = FlowTable(np.array([0.5, 2.0]), np.array([3.0, 40.0]), route=np.array([9, 9]))
    points = [(1000.0, 0.08, 3), (250.0, 0.2, 40)]
    network, tables, buffers = scenarios.vcp_sweep(points, later_s=99.0, short=[None, short])
    assert [link.name for link in network.links] == ["f0", "r0", "f1", "r1"]
    assert network.capacities_pps.tolist() == [1000.0, 1000.0, 250.0, 250.0]
    assert network.rtt_s.tolist() == pytest.approx([0.08, 0.08, 0.2, 0.2])
    assert buffers.tolist() == [80.0, 80.0, 80.0, 80.0]  # BDP 80 at point 0; 2 x 40 flows at point 1 (BDP 50)
    assert len(tables) == 2 and all(len(t) == 2 * 3 + 2 * 40 + 2 for t in tables)
    for k, table in enumerate(tables):
        mine = np.concatenate([np.full(6, k == 0), np.full(82, k == 1)])
        assert np.all(table.start_s[mine] < 2.5) and np.all(table.start_s[~mine] == 99.0)
        assert table.route.tolist() == [0] * 3 + [1] * 3 + [2] * 40 + [3] * 40 + [2, 2]
        assert np.isinf(table.size_packets[:86]).all() and table.size_packets[86:].tolist() == [3.0, 40.0]
    again = scenarios.vcp_sweep(points, later_s=99.0, short=[None, short])[1]
    assert all(np.array_equal(a.start_s, b.start_s) for a, b in zip(tables, again))  # start times from seed k
    with pytest.raises(ParameterError, match="points"):
        scenarios.vcp_sweep([], later_s=1.0)
    with pytest.raises(ParameterError, match=r"points\[1\]"):
        scenarios.vcp_sweep([(1000.0, 0.08, 3), (1000.0, -0.1, 3)], later_s=1.0)
    with pytest.raises(ParameterError, match=r"points\[0\] flows = 0"):
        scenarios.vcp_sweep([(1000.0, 0.08, 0)], later_s=1.0)
    with pytest.raises(ParameterError, match=r"points\[0\] = \(1000.0, 0.08\)"):
        scenarios.vcp_sweep([(1000.0, 0.08)], later_s=1.0)
    with pytest.raises(ParameterError, match=r"points\[0\]"):
        scenarios.vcp_sweep([("fast", 0.08, 3)], later_s=1.0)
    with pytest.raises(ParameterError, match="later_s = nan"):
        scenarios.vcp_sweep(points, later_s=math.nan)
    with pytest.raises(ParameterError, match="short"):
        scenarios.vcp_sweep(points, later_s=1.0, short=[None])


def test_the_vcp_sweep_statistics_refuse_a_bad_skip_and_points_that_are_not_the_runs():
    runs = xr.Dataset({"served": (("run", "sample"), np.zeros((2, 2)))}, coords={"sample_time": ("sample", [0.1, 0.2])},
                      attrs={"duration_s": 0.2})
    points = [(1000.0, 0.08, 3), (1000.0, 0.04, 2)]
    for bad in (1.0, -0.1, True, "0.2"):
        with pytest.raises(ParameterError, match="skip_fraction"):
            scenarios.vcp_sweep_statistics(runs, points, [10.0] * 4, skip_fraction=bad)
    with pytest.raises(ParameterError, match=r"points = 1 .*one point per run of `runs` \(2\)"):
        scenarios.vcp_sweep_statistics(runs, points[:1], [10.0] * 2)
    with pytest.raises(ParameterError, match="points"):
        scenarios.vcp_sweep_statistics(runs, points, [10.0] * 3)


def test_a_network_keeps_the_packet_size_it_was_written_in(tmp_path):
    path = tmp_path / "net.toml"
    path.write_text('packet_bytes = 1500\n[[links]]\nname = "l"\ncapacity = "12Mbps"\ndelay = "10ms"\n'
                    '[[flows]]\nname = "f"\nroute = ["l"]\n')
    network = Network.load(path)
    assert network.packet_bytes == 1500 and network.capacities_pps[0] == pytest.approx(1000.0)
    again = Network.from_dict(network.to_dict())
    assert again == network and again.packet_bytes == 1500
    assert network.replace(capacities_pps=[2000.0]).packet_bytes == 1500
    assert "packet_bytes" not in Network.from_dict({**network.to_dict(), "packet_bytes": 1000}).to_dict()
    with pytest.raises(NetworkError, match="packet_bytes"):
        Network(network.links, network.flows, packet_bytes=0)


# -------------------------------------------------------------------- endpoints, reverse routes
def dumbbell(**flow_fields) -> Network:
    """x -a-> y -b-> z with reverse links a_back (y -> x) and b_back (z -> y) of other delays."""
    links = (Link("a", 1000.0, 0.01, source="x", target="y"), Link("b", 500.0, 0.02, source="y", target="z"),
             Link("a_back", 1000.0, 0.03, source="y", target="x"), Link("b_back", 500.0, 0.04, source="z", target="y"))
    return Network(links, (Flow("f", ("a", "b"), **flow_fields), Flow("g", ("b",))))


def test_the_reverse_of_a_link_has_its_endpoints_swapped():
    net = dumbbell()
    assert [net.reverse_link_index(l) for l in range(4)] == [2, 3, 0, 1]
    assert net.reverse_link_index("b_back") == 1
    assert two_links().reverse_link_index("a") is None  # no endpoints
    # Two links from y to x: the reverse of a is not unique, so there is none.
    crowded = Network(dumbbell().links + (Link("a_back2", 1.0, source="y", target="x"),), dumbbell().flows)
    assert crowded.reverse_link_index("a") is None and crowded.reverse_link_index("a_back") == 0


def test_reverse_route_defaults_to_the_reverse_links_in_the_opposite_order():
    net = dumbbell(access_delay_s=0.005)
    assert net.reverse_route_indices("f") == [3, 2] and net.reverse_route_indices(0) == [3, 2]
    assert net.reverse_route_indices("g") == [3]
    # 2 access + forward (a, b) + reverse (b_back, a_back): not 2 (access + forward).
    np.testing.assert_allclose(net.rtt_s, [2 * 0.005 + 0.03 + 0.07, 0.02 + 0.04])


def test_reverse_route_is_none_without_endpoints_or_when_a_link_has_no_reverse():
    assert two_links().reverse_route_indices("f") is None
    one_way = Network(dumbbell().links[:3], (Flow("f", ("a", "b")), Flow("h", ("a",))))  # b has no reverse
    assert one_way.reverse_route_indices("f") is None and one_way.reverse_route_indices("h") == [2]
    np.testing.assert_allclose(one_way.rtt_s, [2 * 0.03, 0.01 + 0.03])
    np.testing.assert_allclose(two_links(access_delay_s=0.005).rtt_s, [2 * (0.005 + 0.03), 2 * 0.02])


def test_an_explicit_reverse_route_wins_and_sets_the_rtt():
    links = (Link("fwd", 1000.0, 0.01), Link("slow", 1000.0, 0.05), Link("fast", 1000.0, 0.001))
    net = Network(links, (Flow("f", ("fwd",), access_delay_s=0.002, reverse_route=("slow", "fast")),
                          Flow("g", ("fwd",), access_delay_s=0.002)))
    assert net.reverse_route_indices("f") == [1, 2] and net.reverse_route_indices("g") is None
    np.testing.assert_allclose(net.rtt_s, [2 * 0.002 + 0.01 + 0.051, 2 * (0.002 + 0.01)])
    # It also overrides the default by endpoints.
    explicit = dumbbell(reverse_route=("a_back",))
    assert explicit.reverse_route_indices("f") == [2] and explicit.reverse_route_indices("g") == [3]
    assert Flow("f", ("a",), reverse_route="b").reverse_route == ("b",)
    assert Flow("f", ("a",), reverse_route=["b", "c"]).reverse_route == ("b", "c")


def test_an_unknown_reverse_link_names_the_flow_the_field_and_the_known_links():
    with pytest.raises(NetworkError) as caught:
        Network((Link("a", 1.0), Link("b", 1.0)), (Flow("f", ("a",), reverse_route=("b", "zz")),))
    assert caught.value.field == "flow 'f': reverse_route" and caught.value.value == "zz"
    assert "a link of the network (a, b)" in str(caught.value)


@pytest.mark.parametrize(
    "build, field, value",
    [
        (lambda: Link("a", 1.0, source="x"), "link 'a': to", None),
        (lambda: Link("a", 1.0, target="y"), "link 'a': from", None),
        (lambda: Link("a", 1.0, source="x", target="x"), "link 'a': to", "x"),
        (lambda: Link("a", 1.0, source="", target="y"), "link 'a': from", ""),
        (lambda: Link("a", 1.0, source="x", target=7), "link 'a': to", 7),
        (lambda: Flow("f", ("a",), reverse_route=()), "flow 'f': reverse_route", []),
        (lambda: Flow("f", ("a",), reverse_route=("b", "c", "b")), "flow 'f': reverse_route", ["b", "c", "b"]),
        (lambda: Flow("f", ("a",), reverse_route=("b", 3)), "flow 'f': reverse_route", ["b", 3]),
        (lambda: Link("a", 1.0, schedule=((-1.0, 5.0),)), "link 'a': schedule[0].at", -1.0),
        (lambda: Link("a", 1.0, schedule=((math.inf, 5.0),)), "link 'a': schedule[0].at", math.inf),
        (lambda: Link("a", 1.0, schedule=((1.0, 5.0), (1.0, 6.0))), "link 'a': schedule[1].at", 1.0),
        (lambda: Link("a", 1.0, schedule=((1.0, 5.0), (2.0, 6.0), (1.5, 7.0))), "link 'a': schedule[2].at", 1.5),
        (lambda: Link("a", 1.0, schedule=((1.0, 0.0),)), "link 'a': schedule[0].capacity", 0.0),
        (lambda: Link("a", 1.0, schedule=((1.0, 5.0), (2.0, -3.0))), "link 'a': schedule[1].capacity", -3.0),
        (lambda: Link("a", 1.0, schedule=((1.0, math.inf),)), "link 'a': schedule[0].capacity", math.inf),
        (lambda: Link("a", 1.0, schedule=((1.0,),)), "link 'a': schedule[0]", (1.0,)),
        (lambda: Link("a", 1.0, schedule=((1.0, 2.0, 3.0),)), "link 'a': schedule[0]", (1.0, 2.0, 3.0)),
        (lambda: Link("a", 1.0, schedule=((True, 2.0),)), "link 'a': schedule[0]", (True, 2.0)),
        (lambda: Link("a", 1.0, schedule=(("1s", 2.0),)), "link 'a': schedule[0]", ("1s", 2.0)),
        (lambda: Link("a", 1.0, schedule=({"at": 1.0, "capacity": 2.0},)), "link 'a': schedule[0]",
         {"at": 1.0, "capacity": 2.0}),
        (lambda: Link("a", 1.0, schedule="10s"), "link 'a': schedule", "10s"),
        (lambda: Link("a", 1.0, schedule=5.0), "link 'a': schedule", 5.0),
    ],
)
def test_invalid_endpoints_reverse_routes_and_schedules_name_the_field(build, field, value):
    with pytest.raises(NetworkError) as caught:
        build()
    assert caught.value.field == field
    assert caught.value.value == value
    assert field in str(caught.value) and "is not allowed" in str(caught.value)


def test_a_schedule_time_that_is_not_a_number_is_refused():
    with pytest.raises(NetworkError, match=r"link 'a': schedule\[0\]\.at = nan"):
        Link("a", 1.0, schedule=((math.nan, 2.0),))
    with pytest.raises(NetworkError, match=r"link 'a': schedule\[0\]\.capacity = nan"):
        Link("a", 1.0, schedule=((1.0, math.nan),))


def scheduled_link(**fields) -> dict:
    return {"name": "a", "capacity": "10Mbps", "delay": "5ms", **fields}


@pytest.mark.parametrize(
    "data, field, value",
    [
        (spec(links=[scheduled_link(**{"from": "x"})]), "link 'a': to", None),
        (spec(links=[scheduled_link(to="y")]), "link 'a': from", None),
        (spec(links=[scheduled_link(**{"from": 5, "to": "y"})]), "link 'a': from", 5),
        (spec(links=[scheduled_link(schedule={"at": "1s", "capacity": 5})]), "link 'a': schedule",
         {"at": "1s", "capacity": 5}),
        (spec(links=[scheduled_link(schedule=[[1, 5]])]), "link 'a': schedule[0]", [1, 5]),
        (spec(links=[scheduled_link(schedule=[{"at": "1s"}])]), "link 'a': schedule[0].capacity", None),
        (spec(links=[scheduled_link(schedule=[{"capacity": 5}])]), "link 'a': schedule[0].at", None),
        (spec(links=[scheduled_link(schedule=[{"at": "1s", "capacity": 5, "rate": 3}])]),
         "link 'a': schedule[0]: key", "rate"),
        (spec(links=[scheduled_link(schedule=[{"at": "1Mbps", "capacity": 5}])]), "link 'a': schedule[0].at",
         "1Mbps"),
        (spec(links=[scheduled_link(schedule=[{"at": "1s", "capacity": "5ms"}])]),
         "link 'a': schedule[0].capacity", "5ms"),
        (spec(links=[scheduled_link(schedule=[{"at": "-1s", "capacity": 5}])]), "link 'a': schedule[0].at", -1.0),
        (spec(links=[scheduled_link(schedule=[{"at": "2s", "capacity": 5}, {"at": "1500ms", "capacity": 6}])]),
         "link 'a': schedule[1].at", 1.5),
        (spec(links=[scheduled_link(schedule=[{"at": 1, "capacity": "0Mbps"}])]), "link 'a': schedule[0].capacity",
         0.0),
        (spec(flows=[{"name": "f", "route": ["a"], "reverse_route": [1]}]), "flow 'f': reverse_route", [1]),
        (spec(flows=[{"name": "f", "route": ["a"], "reverse_route": ["zz"]}]), "flow 'f': reverse_route", "zz"),
        (spec(flows=[{"name": "f", "route": ["a"], "reverse_route": ["a", "a"]}]), "flow 'f': reverse_route",
         ["a", "a"]),
        (spec(flows=[{"name": "f", "route": ["a"], "reverse_route": []}]), "flow 'f': reverse_route", []),
    ],
)
def test_invalid_endpoints_schedules_and_reverse_routes_in_files_name_the_entry(data, field, value):
    with pytest.raises(NetworkError) as caught:
        Network.from_dict(data)
    assert caught.value.field == field
    assert caught.value.value == value


# --------------------------------------------------------------------------- capacity schedules
def scheduled() -> Network:
    links = (Link("a", 1000.0, 0.01, schedule=((10.0, 2000.0), (30.0, 500.0))), Link("b", 800.0, 0.02))
    return Network(links, (Flow("f", ("a", "b")), Flow("g", ("a",))))


def test_capacity_schedule_starts_at_zero_with_the_base_capacity():
    net = scheduled()
    times, capacities = net.capacity_schedule("a")
    np.testing.assert_array_equal(times, [0.0, 10.0, 30.0])
    np.testing.assert_array_equal(capacities, [1000.0, 2000.0, 500.0])
    assert times.dtype == capacities.dtype == np.float64
    times, capacities = net.capacity_schedule(1)
    assert times.tolist() == [0.0] and capacities.tolist() == [800.0]
    # An entry at 0 replaces the base capacity from the start.
    from_zero = Network((Link("a", 1.0, schedule=[(0, 5.0), (2, 6.0)]),), (Flow("f", ("a",)),))
    times, capacities = from_zero.capacity_schedule("a")
    assert times.tolist() == [0.0, 2.0] and capacities.tolist() == [5.0, 6.0]
    assert from_zero.links[0].schedule == ((0.0, 5.0), (2.0, 6.0))  # normalized to float pairs
    assert scheduled().capacities_pps.tolist() == [1000.0, 800.0]  # the base capacities


def test_at_gives_the_capacities_at_a_time_and_no_schedules():
    net = scheduled()
    assert net.has_schedules and not two_links().has_schedules
    for t, capacity_a in [(-1.0, 1000.0), (0.0, 1000.0), (9.999, 1000.0), (10.0, 2000.0), (29.0, 2000.0),
                          (30.0, 500.0), (1e6, 500.0)]:
        now = net.at(t)
        assert now.capacities_pps.tolist() == [capacity_a, 800.0], t
        assert net.links[0].capacity_at(t) == capacity_a
        assert not now.has_schedules
        assert now.flows == net.flows and now.link_delays_s.tolist() == [0.01, 0.02]
    assert two_links().at(5.0) == two_links()
    ends = dumbbell().at(1.0)
    assert ends.links[0].source == "x" and ends.reverse_route_indices("f") == [3, 2]
    for bad in (math.nan, math.inf, "10s", None, True):
        with pytest.raises(NetworkError, match="t_s"):
            net.at(bad)


def test_schedules_in_files_use_the_unit_helpers_and_packet_bytes():
    net = Network.from_dict(spec(packet_bytes=1500, links=[scheduled_link(
        schedule=[{"at": "500ms", "capacity": "12Mbps"}, {"at": 2, "capacity": 400}])]))
    assert net.links[0].schedule == ((0.5, pytest.approx(1000.0)), (2.0, 400.0))
    assert net.at(1.0).capacities_pps[0] == pytest.approx(1000.0)
    assert Network.from_dict(spec(links=[scheduled_link(schedule=[])])).links[0].schedule == ()


def test_utilization_and_bottlenecks_refuse_a_network_with_schedules():
    for use in (lambda net: net.utilization([1.0, 1.0]), lambda net: net.bottlenecks([1.0, 1.0])):
        with pytest.raises(NetworkError) as caught:
            use(scheduled())
        assert caught.value.field == "link 'a': schedule" and caught.value.value == ((10.0, 2000.0), (30.0, 500.0))
        assert "network.at(t_s)" in str(caught.value)
        use(scheduled().at(12.0))  # the network at one time is fine
    np.testing.assert_allclose(scheduled().at(12.0).utilization([100.0, 100.0]), [0.1, 0.125])


# ------------------------------------------------------------------------------- files, replace
NEW_FIELDS_TOML = """
packet_bytes = 1500

[[links]]
name = "a"
capacity = "12Mbps"
delay = "10ms"
from = "x"
to = "y"
schedule = [{at = "10s", capacity = "24Mbps"}, {at = 30, capacity = 500}]

[[links]]
name = "a_back"
capacity = 1000
delay = "30ms"
from = "y"
to = "x"

[[links]]
name = "slow"
capacity = 1000
delay = "50ms"

[[flows]]
name = "f"
route = ["a"]

[[flows]]
name = "g"
route = ["a"]
reverse_route = ["slow"]
count = 2
"""


def check_new_fields(net: Network) -> None:
    assert net.packet_bytes == 1500
    assert net.links[0] == Link("a", 1000.0, 0.01, source="x", target="y", schedule=((10.0, 2000.0), (30.0, 500.0)))
    assert net.links[1] == Link("a_back", 1000.0, 0.03, source="y", target="x")
    assert net.links[2] == Link("slow", 1000.0, 0.05)
    assert net.flows[0] == Flow("f", ("a",))
    assert net.flows[1] == Flow("g[0]", ("a",), reverse_route=("slow",))
    assert net.flows[2].reverse_route == ("slow",)
    assert net.reverse_route_indices("f") == [1] and net.reverse_route_indices("g[1]") == [2]
    np.testing.assert_allclose(net.rtt_s, [0.04, 0.06, 0.06])


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_endpoints_schedules_and_reverse_routes_round_trip_through_files(tmp_path, suffix):
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    source = tmp_path / "net.toml"
    source.write_text(NEW_FIELDS_TOML)
    net = Network.load(source)
    check_new_fields(net)
    as_json = tmp_path / "source.json"
    as_json.write_text(json.dumps(tomllib.loads(NEW_FIELDS_TOML)))
    assert Network.load(as_json) == net
    copy = Network.load(net.save(tmp_path / f"copy{suffix}"))
    check_new_fields(copy)
    assert copy == net and Network.from_dict(net.to_dict()) == net
    data = net.to_dict()
    assert data["links"][0]["from"] == "x" and data["links"][0]["to"] == "y"
    assert data["links"][0]["schedule"] == [{"at": 10.0, "capacity": 2000.0}, {"at": 30.0, "capacity": 500.0}]
    assert data["flows"][1]["reverse_route"] == ["slow"]
    # Absent fields stay absent.
    assert not {"from", "to", "schedule"} & set(data["links"][2]) and "reverse_route" not in data["flows"][0]


def test_toml_save_keeps_the_packet_size(tmp_path):
    net = Network.from_dict(spec(packet_bytes=1500))
    assert Network.load(net.save(tmp_path / "net.toml")).packet_bytes == 1500


def test_replace_keeps_endpoints_schedules_and_reverse_routes():
    net = Network.from_dict(toml_loads(NEW_FIELDS_TOML))
    doubled = net.replace(capacities_pps=2 * net.capacities_pps)
    assert doubled.capacities_pps.tolist() == [2000.0, 2000.0, 2000.0]
    assert doubled.links[0].schedule == net.links[0].schedule  # the base capacity changes, the schedule stays
    assert [(link.source, link.target) for link in doubled.links] == [("x", "y"), ("y", "x"), (None, None)]
    assert doubled.flows == net.flows and doubled.packet_bytes == 1500
    assert doubled.reverse_route_indices("f") == [1] and doubled.reverse_route_indices("g[0]") == [2]
    assert net.replace(links=net.links).links == net.links
