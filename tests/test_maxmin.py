"""Max-min fairness: water-filling against an independent check of the characterization, exact
against float against JAX batches against SymPy linear programs, and the papers' examples."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from fluidcc import scenarios
from fluidcc.errors import NetworkError, ParameterError, ShapeError
from fluidcc.maxmin import (MaxMinResult, allocation_rows, is_maxmin_fair, maxmin, maxmin_at, maxmin_batch,
                            maxmin_sympy)
from fluidcc.network import Flow, Link, Network
from fluidcc.units import mbps_to_pps

#: packets/s in one Mb/s (1000-byte packets), exact.
PPS_PER_MBPS = Fraction(mbps_to_pps(1))


def mbps(value) -> Fraction:
    """An exact rate in packets/s from Mb/s given as an int or a Fraction."""
    return Fraction(value) * PPS_PER_MBPS


# ------------------------------------------------------------------- the independent checker
def check_max_min_fair(net: Network, rates, capacities=None, weights=None, demands=None, rtol=0):
    """Assert the Bertsekas-Gallager characterization, written from scratch with plain loops.

    rtol = 0: exact (Fractions). Otherwise loads, rates and weighted rates compare within rtol.
    Returns the bottleneck links found for each flow (route order).
    """
    to = Fraction if rtol == 0 else float
    caps = [to(c) for c in (net.capacities_pps if capacities is None else capacities)]
    ws = [to(w) for w in (net.weights if weights is None else weights)]
    ds = [None if math.isinf(d) else to(d) for d in (net.demands_pps if demands is None else demands)]
    rates = [to(r) for r in rates]
    names = net.link_names
    on_link = {name: [i for i, f in enumerate(net.flows) if name in f.route] for name in names}
    load = {name: sum((rates[i] for i in on_link[name]), to(0)) for name in names}
    for l, name in enumerate(names):
        assert load[name] <= caps[l] * (1 + rtol), f"link {name} overloaded: {load[name]} > {caps[l]}"
    found = []
    for i, flow in enumerate(net.flows):
        assert rates[i] >= 0
        if ds[i] is not None:
            assert rates[i] <= ds[i] * (1 + rtol), f"flow {flow.name} above its demand"
            if rates[i] >= ds[i] * (1 - rtol):
                found.append(None)  # at its demand: needs no bottleneck
                continue
        mine = []
        for name in flow.route:
            l = names.index(name)
            saturated = load[name] >= caps[l] * (1 - rtol)
            largest = all(rates[i] / ws[i] >= rates[j] / ws[j] * (1 - rtol) for j in on_link[name])
            if saturated and largest:
                mine.append(l)
        assert mine, f"flow {flow.name} (rate {rates[i]}) has no bottleneck link and is below its demand"
        found.append(mine)
    return found


# ---------------------------------------------------------------------------- random networks
@st.composite
def networks(draw, max_links=8, max_flows=30, weighted=None, with_demands=None):
    n_links = draw(st.integers(1, max_links))
    n_flows = draw(st.integers(1, max_flows))
    capacity = st.one_of(st.integers(1, 1000).map(float), st.floats(1.0, 1000.0))
    links = tuple(Link(f"l{l}", draw(capacity)) for l in range(n_links))
    if weighted is None:
        weighted = draw(st.booleans())
    if with_demands is None:
        with_demands = draw(st.booleans())
    weight = st.one_of(st.sampled_from([0.5, 1.0, 2.0, 3.0]), st.floats(0.1, 10.0)) if weighted else st.just(1.0)
    demand = st.one_of(st.just(math.inf), st.floats(0.5, 500.0)) if with_demands else st.just(math.inf)
    flows = []
    for i in range(n_flows):
        route = draw(st.lists(st.integers(0, n_links - 1), min_size=1, max_size=n_links, unique=True))
        flows.append(Flow(f"f{i}", tuple(f"l{l}" for l in route), weight=draw(weight), demand_pps=draw(demand)))
    return Network(links, tuple(flows))


@given(networks())
def test_float_water_filling_is_feasible_and_every_flow_has_a_bottleneck(net):
    result = maxmin(net)
    assert result.rates_pps.dtype == np.float64 and result.rates_pps.shape == (net.n_flows,)
    check_max_min_fair(net, result.rates_pps, rtol=1e-9)
    assert np.all(result.link_load_pps <= net.capacities_pps * (1 + 1e-9))


@given(networks())
def test_exact_water_filling_satisfies_the_characterization_exactly(net):
    result = maxmin(net, exact=True)
    assert all(isinstance(r, Fraction) for r in result.rates_pps)
    found = check_max_min_fair(net, result.rates_pps)
    # maxmin's own bottleneck report agrees with the independent check, and demand-held flows
    # are exactly those the check found at their demand with no bottleneck needed.
    for i, mine in enumerate(found):
        if result.limited_by_demand[i]:
            assert result.bottlenecks[i] == [] and result.rates_pps[i] == Fraction(net.flows[i].demand_pps)
        else:
            assert result.bottlenecks[i]  # a flow frozen by a link has one
            if mine is not None:  # (None: it also happens to sit exactly at its demand)
                assert result.bottlenecks[i] == mine
    assert list(result.link_load_pps) == [sum((result.rates_pps[i] for i in net.flows_on(l)), Fraction(0))
                                          for l in range(net.n_links)]
    assert is_maxmin_fair(net, result.rates_pps, rtol=0)


@given(networks())
def test_exact_and_float_modes_agree(net):
    exact = maxmin(net, exact=True)
    floating = maxmin(net)
    scale = 1e-12 * max(net.capacities_pps)  # rates are differences of capacities: absolute scale
    np.testing.assert_allclose(floating.rates_pps, [float(r) for r in exact.rates_pps], rtol=1e-12, atol=scale)
    np.testing.assert_array_equal(floating.limited_by_demand, exact.limited_by_demand)


@given(networks(), st.integers(1, 4), st.randoms(use_true_random=False))
def test_jax_batch_agrees_with_float_mode(net, batch, rng):
    capacities = np.array([[rng.uniform(1.0, 1000.0) for _ in range(net.n_links)] for _ in range(batch)])
    capacities[0] = net.capacities_pps
    rates = maxmin_batch(net, capacities)
    assert rates.shape == (batch, net.n_flows) and rates.dtype == np.float64
    for b in range(batch):
        expected = maxmin(net, capacities_pps=capacities[b]).rates_pps
        np.testing.assert_allclose(rates[b], expected, rtol=1e-9, atol=1e-9 * capacities[b].max())


@given(networks(max_links=3, max_flows=6))
def test_sympy_linear_programs_equal_water_filling_exactly(net):
    assert maxmin_sympy(net) == list(maxmin(net, exact=True).rates_pps)


@given(networks(max_links=5, max_flows=12), st.floats(0.0, 1.0))
def test_perturbing_a_max_min_allocation_breaks_the_characterization(net, share):
    """The check rejects what it should: lowering one flow leaves it without a bottleneck."""
    rates = list(maxmin(net, exact=True).rates_pps)
    i = int(share * (net.n_flows - 1))
    assume(rates[i] > 0)
    rates[i] = rates[i] / 2
    assert not is_maxmin_fair(net, rates, rtol=0)
    with pytest.raises(AssertionError):
        check_max_min_fair(net, rates)


# ------------------------------------------------------------------ the papers' examples
IXCP_FIG6_PHASES = {
    10.0: {"long": 40, "s1": 110, "s2": 60, "s3": 40, "s4": 40, "s5": 0, "s6": 0, "s7": 0},
    30.0: {"long": 30, "s1": 30, "s5": 30, "s6": 30, "s7": 30, "s2": 70, "s3": 45, "s4": 45},
    50.0: {"long": 50, "s1": 100, "s2": 50, "s3": 70, "s4": 0, "s5": 0, "s6": 0, "s7": 0},
}


@pytest.mark.parametrize("t", sorted(IXCP_FIG6_PHASES))
def test_ixcp_fig6_phases_exactly(t):
    net = scenarios.ixcp_fig6()
    result = maxmin_at(net, t, exact=True)
    for name, rate_mbps in IXCP_FIG6_PHASES[t].items():
        assert result.rate(name) == mbps(rate_mbps), name
    floating = maxmin_at(net, t)
    np.testing.assert_allclose(floating.rates_pps, [float(r) for r in result.rates_pps], rtol=1e-14)
    assert list(result.utilization) == [1, 1, 1]  # every link is some flow's bottleneck
    active = net.active(t)
    assert [bool(b) for b in result.active] == active.tolist()
    assert all(result.bottlenecks[i] == [] for i in range(net.n_flows) if not active[i])


def test_ixcp_fig6_bottlenecks_per_phase():
    net = scenarios.ixcp_fig6()
    assert maxmin_at(net, 10.0).bottleneck_names(0) == ["l3"]
    assert maxmin_at(net, 30.0).bottleneck_names(0) == ["l1"]
    assert maxmin_at(net, 50.0).bottleneck_names(0) == ["l2"]


@pytest.mark.parametrize("n_long", range(2, 11))
def test_ixcp_fig1_short_flow_gets_55_and_long_flows_share_100(n_long):
    result = maxmin(scenarios.ixcp_fig1(n_long), exact=True)
    assert result.rates_pps[0] == mbps(55)
    assert all(r == mbps(Fraction(100, n_long)) for r in result.rates_pps[1:])
    assert result.bottlenecks == [[0]] + [[1]] * n_long


def test_ixcp_fig1_with_one_long_flow_shares_the_first_link():
    result = maxmin(scenarios.ixcp_fig1(1), exact=True)
    assert list(result.rates_pps) == [mbps(Fraction(155, 2))] * 2
    assert result.bottlenecks == [[0], [0]]


def test_ixcp_fig4_every_group_is_bottlenecked_at_its_last_link():
    """The iXCP paper's five-hop network (section 4.2): max-min rates 10, 8, 4, 3 and 2 Mb/s, group k
    bottlenecked at link k, every link saturated."""
    net = scenarios.ixcp_fig4()
    result = maxmin(net, exact=True)
    groups = scenarios.IXCP_FIG4_GROUPS
    expected = [mbps(rate) for rate, count in zip((10, 8, 4, 3, 2), groups) for _ in range(count)]
    assert list(result.rates_pps) == expected
    assert result.bottlenecks == [[k] for k, count in enumerate(groups) for _ in range(count)]
    assert all(u == 1 for u in result.utilization)
    scaled = maxmin(scenarios.ixcp_fig4(scale=0.1), exact=True)
    assert list(scaled.rates_pps) == [r / 10 for r in expected]


def test_ixcp_fig4_is_checked():
    with pytest.raises(ParameterError, match="groups"):
        scenarios.ixcp_fig4((10, 10))
    with pytest.raises(ParameterError, match="scale"):
        scenarios.ixcp_fig4(scale=0.0)


def test_vcp_parking_lot_every_flow_gets_100_over_55():
    net = scenarios.vcp_parking_lot()
    result = maxmin(net, exact=True)
    assert all(r == mbps(Fraction(100, 55)) for r in result.rates_pps)
    assert result.bottlenecks[0] == list(range(7))  # the long flows see every link as a bottleneck
    assert maxmin_sympy(scenarios.vcp_parking_lot(n_long=2, n_cross=1)) == [mbps(Fraction(100, 3))] * 9


def test_vcp_parking_lot_with_a_50_mbps_fourth_link():
    net = scenarios.vcp_parking_lot(50.0)
    rates = dict(zip(net.flow_names, maxmin(net, exact=True).rates_pps))
    for name, rate in rates.items():
        if name.startswith("long") or name.startswith("cross4"):
            assert rate == mbps(Fraction(50, 55)), name
        else:
            assert rate == mbps((100 - Fraction(50 * 50, 55)) / 5), name
    floating = maxmin(net)
    np.testing.assert_allclose(floating.rates_pps, [float(r) for r in rates.values()], rtol=1e-14)
    batch = maxmin_batch(net, [net.capacities_pps, scenarios.vcp_parking_lot().capacities_pps])
    np.testing.assert_allclose(batch[0], floating.rates_pps, rtol=1e-14)
    np.testing.assert_allclose(batch[1], float(mbps(Fraction(100, 55))), rtol=1e-14)


def test_weights_and_demands_by_hand():
    # One 12-unit link; weights 1, 2, 3 share 12 as 2, 4, 6.
    link = (Link("x", 12.0),)
    weighted = Network(link, (Flow("a", ("x",), weight=1.0), Flow("b", ("x",), weight=2.0),
                              Flow("c", ("x",), weight=3.0)))
    assert list(maxmin(weighted, exact=True).rates_pps) == [2, 4, 6]
    # A demand of 1 on flow a: b and c share the remaining 11 as 2:3.
    capped = maxmin(weighted, demands_pps=[1.0, math.inf, math.inf], exact=True)
    assert list(capped.rates_pps) == [1, Fraction(22, 5), Fraction(33, 5)]
    assert capped.limited_by_demand.tolist() == [True, False, False]
    assert capped.bottlenecks == [[], [0], [0]]
    # Demands above the fair share change nothing; all three at their demands leave the link idle.
    assert list(maxmin(weighted, demands_pps=[5, 5, 6], exact=True).rates_pps) == [2, 4, 6]
    idle = maxmin(weighted, demands_pps=[1, 1, 1], exact=True)
    assert list(idle.rates_pps) == [1, 1, 1] and idle.utilization[0] == Fraction(1, 4)
    assert idle.limited_by_demand.all() and idle.bottlenecks == [[], [], []]
    # Exact inputs may be Fractions, ints and strings.
    thirds = maxmin(weighted, capacities_pps=["1/3"], weights=[1, Fraction(1), "1"], exact=True)
    assert list(thirds.rates_pps) == [Fraction(1, 9)] * 3


def test_maxmin_at_equals_maxmin_on_the_active_sub_network():
    net = scenarios.ixcp_fig6()
    for t in (0.0, 25.0, 45.0):
        active = net.active(t)
        sub = net.replace(flows=[f for f, on in zip(net.flows, active) if on])
        full = maxmin_at(net, t, exact=True)
        assert [r for r, on in zip(full.rates_pps, active) if on] == list(maxmin(sub, exact=True).rates_pps)
        assert all(r == 0 for r, on in zip(full.rates_pps, active) if not on)


def test_no_active_flow_gives_zero_rates():
    net = Network((Link("x", 10.0),), (Flow("a", ("x",), start_s=5.0),))
    result = maxmin_at(net, 1.0)
    assert result.rates_pps.tolist() == [0.0] and result.utilization.tolist() == [0.0]
    assert result.bottlenecks == [[]]


def test_table_rows_give_packets_and_megabits():
    result = maxmin(scenarios.ixcp_fig1(2))
    rows = result.table()
    assert rows[0] == ("short", mbps_to_pps(55), pytest.approx(55.0), ["l1"])
    assert rows[1][0] == "long[0]" and rows[1][2] == pytest.approx(50.0) and rows[1][3] == ["l2"]
    exact_rows = maxmin(scenarios.ixcp_fig1(2), exact=True).table(packet_bytes=1500)
    assert exact_rows[0][1] == mbps(55) and exact_rows[0][2] == Fraction(55 * 1500, 1000)
    links = result.link_table()
    assert links[0][0] == "l1" and links[0][2] == pytest.approx(155.0) and links[0][3] == pytest.approx(1.0)
    assert isinstance(result, MaxMinResult) and result.flow_names[0] == "short" and result.link_names == ["l1", "l2"]


def test_large_random_network_float_matches_exact():
    net = scenarios.random_network(50, 1000, seed=0)
    floating = maxmin(net)
    exact = maxmin(net, exact=True)
    np.testing.assert_allclose(floating.rates_pps, [float(r) for r in exact.rates_pps], rtol=1e-12)
    assert floating.bottlenecks == exact.bottlenecks
    check_max_min_fair(net, floating.rates_pps, rtol=1e-9)


# ----------------------------------------------------------------------------- bad input
NET = scenarios.ixcp_fig1(2)  # links l1, l2; flows short, long[0], long[1]


@pytest.mark.parametrize(
    "kwargs, error, field",
    [
        (dict(capacities_pps=[1.0]), ShapeError, "capacities_pps"),
        (dict(capacities_pps=[[1.0, 2.0]]), ShapeError, "capacities_pps"),
        (dict(capacities_pps=[1.0, 0.0]), ParameterError, "capacities_pps[1] (link 'l2')"),
        (dict(capacities_pps=[-1.0, 1.0]), ParameterError, "capacities_pps[0] (link 'l1')"),
        (dict(capacities_pps=[math.nan, 1.0]), ParameterError, "capacities_pps[0] (link 'l1')"),
        (dict(capacities_pps=[math.inf, 1.0]), ParameterError, "capacities_pps[0] (link 'l1')"),
        (dict(weights=[1.0, 1.0]), ShapeError, "weights"),
        (dict(weights=[1.0, 0.0, 1.0]), ParameterError, "weights[1] (flow 'long[0]')"),
        (dict(weights=[1.0, 1.0, -3.0]), ParameterError, "weights[2] (flow 'long[1]')"),
        (dict(demands_pps=[1.0, 0.0, 1.0]), ParameterError, "demands_pps[1] (flow 'long[0]')"),
        (dict(demands_pps=[math.nan, 1.0, 1.0]), ParameterError, "demands_pps[0] (flow 'short')"),
        (dict(demands_pps=[1.0]), ShapeError, "demands_pps"),
    ],
)
@pytest.mark.parametrize("exact", [False, True])
def test_bad_inputs_name_the_field_and_the_link_or_flow(kwargs, error, field, exact):
    with pytest.raises(error) as caught:
        maxmin(NET, exact=exact, **kwargs)
    assert caught.value.field == field
    assert "is not allowed" in str(caught.value)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(capacities_pps=["1/0", 1]), "capacities_pps[0] (link 'l1')"),
        (dict(capacities_pps=["a third", 1]), "capacities_pps[0] (link 'l1')"),
        (dict(capacities_pps=[True, 1]), "capacities_pps[0] (link 'l1')"),
        (dict(weights=[1, "inf", 1]), "weights[1] (flow 'long[0]')"),
        (dict(demands_pps=["-2", "inf", 1]), "demands_pps[0] (flow 'short')"),
    ],
)
def test_bad_exact_inputs(kwargs, field):
    """Exact mode reads each value on its own, so the error names the link or flow."""
    with pytest.raises(ParameterError) as caught:
        maxmin(NET, exact=True, **kwargs)
    assert caught.value.field == field


def test_non_numbers_in_float_mode():
    with pytest.raises(ParameterError) as caught:
        maxmin(NET, capacities_pps=["fast", 1.0])
    assert caught.value.field == "capacities_pps" and "one number per link" in str(caught.value)


def test_bad_batch_inputs():
    with pytest.raises(ShapeError, match=r"shape \(B, 2\)"):
        maxmin_batch(NET, [1.0, 2.0])
    with pytest.raises(ShapeError):
        maxmin_batch(NET, np.ones((0, 2)))
    with pytest.raises(ShapeError):
        maxmin_batch(NET, np.ones((3, 3)))
    with pytest.raises(ParameterError) as caught:
        maxmin_batch(NET, [[1.0, 2.0], [3.0, -1.0]])
    assert caught.value.field == "capacities_pps[1, 1] (link 'l2')"
    with pytest.raises(ParameterError) as caught:
        maxmin_batch(NET, [[1.0, 2.0]], weights=[1.0, 0.0, 1.0])
    assert caught.value.field == "weights[1] (flow 'long[0]')"
    with pytest.raises(ParameterError, match="chunk_size"):
        maxmin_batch(NET, [[1.0, 2.0]], chunk_size=0)


def test_bad_network_or_time():
    with pytest.raises(NetworkError, match="fluidcc.network.Network"):
        maxmin({"links": []})
    with pytest.raises(NetworkError):
        maxmin_at("net.toml", 1.0)
    for t in (math.nan, math.inf, "10s", None):
        with pytest.raises(ParameterError) as caught:
            maxmin_at(NET, t)
        assert caught.value.field == "t"


def test_batch_is_chunked_and_padded():
    net = scenarios.ixcp_fig6()
    rng = np.random.default_rng(0)
    capacities = rng.uniform(1000.0, 20000.0, size=(11, 3))
    rates = maxmin_batch(net, capacities, chunk_size=4)
    for b in range(11):
        np.testing.assert_allclose(rates[b], maxmin(net, capacities_pps=capacities[b]).rates_pps, rtol=1e-12)


def test_batch_with_weights_and_demands():
    net = scenarios.random_network(8, 40, seed=1)
    rng = np.random.default_rng(1)
    weights = rng.uniform(0.2, 5.0, size=40)
    demands = np.where(rng.random(40) < 0.4, rng.uniform(10.0, 3000.0, size=40), math.inf)
    capacities = rng.uniform(1000.0, 100000.0, size=(6, 8))
    rates = maxmin_batch(net, capacities, weights=weights, demands_pps=demands)
    for b in range(6):
        expected = maxmin(net, capacities_pps=capacities[b], weights=weights, demands_pps=demands)
        np.testing.assert_allclose(rates[b], expected.rates_pps, rtol=1e-12)
        check_max_min_fair(net, rates[b], capacities[b], weights, demands, rtol=1e-9)


def test_the_allocation_is_written_by_the_library_as_csv_or_json(tmp_path):
    import json as _json

    from fluidcc.maxmin import write_allocation

    network = Network((Link("a", 1000.0, 0.01), Link("b", 500.0, 0.01)),
                      (Flow("x", ("a", "b")), Flow("y", ("a",))), packet_bytes=1500)
    result = maxmin(network, exact=True)
    data = _json.loads(write_allocation(tmp_path / "r.json", network, result, provenance={"command": "test"}).read_text())
    assert data["packet_bytes"] == 1500 and data["exact"] is True and data["command"] == "test"
    assert [row["rate_pps_exact"] for row in data["flows"]] == ["500", "500"]
    assert data["flows"][0]["rate_mbps"] == pytest.approx(6.0)  # 500 packets/s of 1500 bytes
    lines = write_allocation(tmp_path / "r.csv", network, result).read_text().splitlines()
    assert lines[0].startswith("kind,name,rate_pps") and len(lines) == 5
    with pytest.raises(ParameterError, match="path"):
        write_allocation(tmp_path / "r.txt", network, result)


# --------------------------------------------------------------------------- capacity schedules
def scheduled_network() -> Network:
    """One link whose capacity doubles at 10 s; flow g starts at 5 s."""
    link = Link("l", 1000.0, 0.01, schedule=((10.0, 2000.0),))
    return Network((link, Link("m", 5000.0, 0.01)), (Flow("f", ("l",)), Flow("g", ("l", "m"), start_s=5.0)))


@pytest.mark.parametrize(
    "call",
    [
        lambda net: maxmin(net),
        lambda net: maxmin(net, exact=True),
        lambda net: is_maxmin_fair(net, [500.0, 500.0]),
        lambda net: is_maxmin_fair(net, [500.0, 500.0], rtol=0),
        lambda net: maxmin_sympy(net),
    ],
    ids=["maxmin", "maxmin_exact", "is_maxmin_fair", "is_maxmin_fair_exact", "maxmin_sympy"],
)
def test_max_min_at_no_time_refuses_a_network_with_schedules(call):
    with pytest.raises(NetworkError) as caught:
        call(scheduled_network())
    assert caught.value.field == "link 'l': schedule" and caught.value.value == ((10.0, 2000.0),)
    assert "network.at(t_s)" in str(caught.value)
    call(scheduled_network().at(0.0))  # the network at one time is accepted


def test_max_min_with_given_capacities_ignores_schedules():
    net = scheduled_network()
    assert maxmin(net, capacities_pps=[2000.0, 5000.0]).rates_pps.tolist() == [1000.0, 1000.0]
    assert is_maxmin_fair(net, [1000.0, 1000.0], capacities_pps=[2000.0, 5000.0])
    np.testing.assert_allclose(maxmin_batch(net, [[1000.0, 5000.0], [2000.0, 5000.0]]), [[500, 500], [1000, 1000]])


def test_maxmin_at_uses_the_capacities_at_that_time():
    net = scheduled_network()
    assert maxmin_at(net, 1.0).rates_pps.tolist() == [1000.0, 0.0]
    assert maxmin_at(net, 7.0).rates_pps.tolist() == [500.0, 500.0]
    at_12 = maxmin_at(net, 12.0)
    assert at_12.rates_pps.tolist() == [1000.0, 1000.0] and at_12.capacities_pps.tolist() == [2000.0, 5000.0]
    assert maxmin_at(net, 12.0, exact=True).rates_pps.tolist() == [1000, 1000]
    assert maxmin_at(net, 12.0, capacities_pps=[1000.0, 5000.0]).rates_pps.tolist() == [500.0, 500.0]
    # The table shows the capacities the allocation used.
    _, links = allocation_rows(net, at_12)
    assert [row["capacity_pps"] for row in links] == [2000.0, 5000.0]
    assert [row["utilization"] for row in links] == [1.0, 0.2]
