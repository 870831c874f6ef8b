"""RCP and QCP per-flow fluid models on networks: equilibria, max-min, accounting, bad input."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluidcc import scenarios
from fluidcc.dde import solve
from fluidcc.errors import NetworkError, ParameterError
from fluidcc.maxmin import maxmin
from fluidcc.models import qcp_network, rcp_network
from fluidcc.models.qcp_network import QCPNetwork
from fluidcc.models.rcp_network import RCPNetwork
from fluidcc.network import Flow, Link, Network
from fluidcc.units import mbps_to_pps

#: Gains of the simulated property tests: the papers' own (RCP paper section 3.1; QCP paper
#: sections 9 and 12: alpha = beta = 1, control interval d_l = the mean RTT of the link's flows).
RCP_GAINS = {"alpha": 0.1, "beta": 1.0}
QCP_GAINS = {"alpha": 1.0, "beta": 1.0}


def _random_network(n_links, n_flows, seed, weighted=False):
    network = scenarios.random_network(n_links, n_flows, seed=seed)
    if not weighted:
        return network
    rng = np.random.default_rng(seed + 1)
    flows = []
    for flow in network.flows:
        demand = float(rng.uniform(0.02, 0.5) * network.capacities_pps.min()) if rng.random() < 0.3 else np.inf
        flows.append(dataclasses.replace(flow, weight=float(rng.choice([0.5, 1.0, 2.0, 3.0])), demand_pps=demand))
    return network.replace(flows=flows)


small_networks = st.builds(_random_network, st.integers(1, 5), st.integers(1, 12), st.integers(0, 2**31 - 1))
weighted_networks = st.builds(_random_network, st.integers(1, 5), st.integers(1, 12), st.integers(0, 2**31 - 1),
                              st.just(True))


def _fair(network, capacity_scale=1.0):
    return np.asarray(maxmin(network, capacities_pps=network.capacities_pps * capacity_scale).rates_pps, float)


def _settle(model, params, network, rtts=200):
    horizon = rtts * float(network.rtt_s.max())
    times = np.linspace(0.0, horizon, 401)
    solution = solve(model, params, horizon, times, steps_per_delay=32)
    assert solution.status[0] == 0, solution.messages[0]
    return model.observe(times, solution.ys[0], params), solution


# ------------------------------------------------------------------------------ equilibria
@given(small_networks)
def test_rcp_equilibrium_is_a_rest_point_of_the_fluid_equations(network):
    eq = RCPNetwork(network).equilibrium(rcp_network.network_params(network))
    np.testing.assert_allclose(eq["flow_rate"], _fair(network), rtol=1e-12)
    assert eq["residual"] < 1e-9
    assert np.all(eq["link_rate"] <= network.capacities_pps * (1 + 1e-12))


@given(weighted_networks, st.floats(0.5, 1.0))
def test_qcp_equilibrium_is_a_rest_point_at_alpha_capacity(network, alpha):
    eq = QCPNetwork(network).equilibrium(qcp_network.network_params(network, alpha=alpha))
    fair = np.asarray(maxmin(network, capacities_pps=alpha * network.capacities_pps).rates_pps, float)
    np.testing.assert_allclose(eq["flow_rate"], fair, rtol=1e-12)
    assert eq["residual"] < 1e-9
    assert np.all(eq["utilization"] <= alpha * (1 + 1e-12))


@pytest.mark.parametrize("protocol", [rcp_network, qcp_network], ids=["rcp", "qcp"])
def test_the_rest_residual_sees_a_state_that_is_not_at_rest(protocol):
    network = scenarios.ixcp_fig1(4)
    model = RCPNetwork(network) if protocol is rcp_network else QCPNetwork(network)
    params = protocol.network_params(network)
    eq = model.equilibrium(params)
    assert eq["residual"] < 1e-12
    wrong = eq["state"].copy()
    wrong[network.link_index("l1")] += 0.01  # link l1 offers 1 % less than at the equilibrium
    assert model.rest_residual(wrong, params, 0, 10.0) > 1e-3


@pytest.mark.parametrize("protocol", [rcp_network, qcp_network], ids=["rcp", "qcp"])
def test_equilibria_of_each_phase_are_rest_points_when_flows_start_and_stop(protocol):
    network = scenarios.ixcp_fig6()  # flows join at 20 s and leave at 40 s
    model = RCPNetwork(network) if protocol is rcp_network else QCPNetwork(network)
    params = protocol.network_params(network)
    for at in (None, 10.0, 30.0, 50.0):
        eq = model.equilibrium(params, at=at)
        assert eq["residual"] < 1e-12, at
        active = network.active(at) if at is not None else ~np.isfinite(network.stop_s)
        assert np.all((eq["flow_rate"] > 0) == active)


def test_one_link_rcp_settles_at_c_over_n_and_its_estimate_counts_the_flows():
    network = Network((Link("l", mbps_to_pps(20), 0.05),), tuple(Flow(f"f{i}", ("l",)) for i in range(10)))
    model = RCPNetwork(network)
    observed, solution = _settle(model, rcp_network.network_params(network), network, rtts=300)
    np.testing.assert_allclose(observed["rate"][-1], 2500.0 / 10, rtol=1e-6)
    np.testing.assert_allclose(observed["flow_estimate"][-1], 10.0, rtol=1e-6)
    assert model.block(solution.ys[0, -1], "queue")[0] < 1e-6
    # d0 settles at the traffic-weighted mean RTT (every flow: 100 ms)
    np.testing.assert_allclose(model.block(solution.ys[0, -1], "rtt_average"), 0.1, rtol=1e-9)


# --------------------------------------------------------------- simulated equilibria = max-min
@pytest.mark.slow
@settings(max_examples=8)
@given(small_networks)
def test_rcp_settles_at_maxmin_on_random_networks(network):
    """RCP with the paper's gains alpha = 0.1, beta = 1 (tau = 10 ms) from R = 0.05 C: within 1 %
    of max-min after 200 of the largest RTTs (measured: 1e-5 or closer)."""
    observed, _ = _settle(RCPNetwork(network), rcp_network.network_params(network, **RCP_GAINS), network)
    np.testing.assert_allclose(observed["rate"][-1], _fair(network), rtol=0.01)


@pytest.mark.slow
@settings(max_examples=8)
@given(weighted_networks)
def test_qcp_settles_at_weighted_maxmin_and_fills_links_shared_with_flows_held_elsewhere(network):
    """QCP with QCP_GAINS (eqs. (4), (12), (16)): within 1 % of the weighted, demand-capped
    max-min allocation; every link that is some flow's bottleneck is full (efficient sharing is
    work-conserving), also when it carries flows held elsewhere."""
    observed, _ = _settle(QCPNetwork(network), qcp_network.network_params(network, **QCP_GAINS), network)
    fair = maxmin(network)
    np.testing.assert_allclose(observed["rate"][-1], np.asarray(fair.rates_pps, float), rtol=0.01)
    load = observed["load"][-1]
    for l in sorted({l for links in fair.bottlenecks for l in links}):
        assert load[l] == pytest.approx(network.capacities_pps[l], rel=0.01)


def test_qcp_gives_local_flows_what_flows_held_elsewhere_leave_where_processor_sharing_does_not():
    network = scenarios.qcp_fig10()
    observed, _ = _settle(QCPNetwork(network), qcp_network.network_params(network), network)
    fair = _fair(network)
    np.testing.assert_allclose(observed["rate"][-1], fair, rtol=1e-3)
    shared = network.link_index("l1")
    assert observed["load"][-1][shared] == pytest.approx(network.capacities_pps[shared], rel=1e-3)
    # processor sharing at l1 would give each of its flows C / N there and leave capacity unused
    flows = network.flows_on("l1")
    equal_share = network.capacities_pps[shared] / len(flows)
    ps_load = sum(min(equal_share, fair[i]) for i in flows)
    assert ps_load < 0.95 * network.capacities_pps[shared]


# ----------------------------------------------------------------- starts, stops, accounting
@pytest.mark.parametrize("model", [RCPNetwork(scenarios.ixcp_fig6(), accounting=True),
                                   QCPNetwork(scenarios.ixcp_fig6(), accounting=True)], ids=["rcp", "qcp"])
def test_fluid_is_conserved_when_flows_start_and_stop(model):
    network = model.network
    params = (rcp_network if isinstance(model, RCPNetwork) else qcp_network).network_params(network)
    horizon = 50.0  # starts at 20 s, stops at 40 s
    solution = solve(model, params, horizon, np.array([horizon]), steps_per_delay=16)
    final = solution.ys[0, -1]
    sent, arrived, departed = (model.block(final, name) for name in ("sent", "arrived", "departed"))
    queue = model.block(final, "queue")
    hops = network.routing_matrix.sum(axis=0)
    assert np.sum(arrived) == pytest.approx(float(sent @ hops), rel=1e-9)
    np.testing.assert_allclose(arrived, departed + queue, rtol=1e-9, atol=0.0)
    assert np.all(departed <= network.capacities_pps * horizon * (1 + 1e-9))
    # the flows that stopped sent about their max-min rate for their lifetime (coarse check)
    assert np.all(sent > 0)


def test_a_new_flow_starts_at_the_path_rate_its_syn_learned():
    network = Network((Link("a", 5000.0, 0.01), Link("b", 3000.0, 0.01)),
                      (Flow("old", ("a",)), Flow("new", ("a", "b"), start_s=2.0)))
    model = RCPNetwork(network)
    params = rcp_network.network_params(network)
    times = np.arange(0.0, 3.0 + 1e-9, 0.001)
    solution = solve(model, params, 3.0, times, steps_per_delay=32)
    observed = model.observe(times, solution.ys[0], params)
    start = int(round(2.0 / 0.001))
    assert observed["rate"][start - 1, 1] == 0.0
    rtt = network.rtt_s[1]
    learned = observed["offered"][int(round((2.0 - rtt) / 0.001))].min()
    assert observed["rate"][start, 1] == pytest.approx(learned, rel=1e-9)


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("field, kwargs", [
    ("alpha", {"alpha": 0.0}), ("alpha", {"alpha": -1.0}), ("beta", {"beta": -0.5}), ("beta", {"beta": 0.0}),
    ("rate_interval", {"rate_interval": 0.0}), ("rate_interval", {"rate_interval": -0.01}),
    ("rtt_gain", {"rtt_gain": 0.0}), ("rtt_gain", {"rtt_gain": 1.5}),
    ("initial_rate_fraction", {"initial_rate_fraction": 0.0}),
])
def test_rcp_bad_parameters_name_the_field(field, kwargs):
    with pytest.raises(ParameterError, match=field):
        rcp_network.network_params(scenarios.ixcp_fig1(2), **kwargs)


@pytest.mark.parametrize("field, kwargs", [
    ("alpha", {"alpha": 0.0}), ("beta", {"beta": -1.0}), ("beta", {"beta": 0.0}),
    ("control_interval", {"control_interval": 0.0}), ("control_interval", {"control_interval": [0.1, -0.1]}),
    ("control_interval", {"control_interval": [0.1, 0.1, 0.1]}),
    ("initial_rate_fraction", {"initial_rate_fraction": 1.5}),
    ("capacity", {"capacity_pps": [1000.0, 0.0]}),
])
def test_qcp_bad_parameters_name_the_field(field, kwargs):
    with pytest.raises(ParameterError, match=field):
        qcp_network.network_params(scenarios.ixcp_fig1(2), **kwargs)


def test_weights_are_refused_by_rcp_and_a_weight_le_0_by_the_network():
    network = Network((Link("l", 1000.0, 0.01),), (Flow("a", ("l",), weight=2.0), Flow("b", ("l",))))
    with pytest.raises(NetworkError, match="'a': weight"):
        rcp_network.network_params(network)
    qcp_network.network_params(network)  # QCP honours weights (eq. (16))
    with pytest.raises(NetworkError, match="weight"):
        Flow("c", ("l",), weight=0.0)
    with pytest.raises(ParameterError, match="variant"):
        QCPNetwork(network, variant="approximate")
