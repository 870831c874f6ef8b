"""MIAIMD on networks (VCP paper, eq. (16)): Theorem 2 on random networks, simulation, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fluidcc import scenarios
from fluidcc.dde import solve
from fluidcc.errors import ParameterError, ShapeError
from fluidcc.maxmin import maxmin
from fluidcc.models.miaimd_network import MIAIMDNetwork, network_params, theorem2_rates
from fluidcc.network import Flow, Network

KAPPA, ALPHA, GAMMA = 0.25, 1.0, 0.98


def _equal_rtt(network: Network, rtt_s: float = 0.2) -> Network:
    """The same routes with every flow's RTT equal to rtt_s (links without delay, access delays)."""
    links = tuple(type(l)(l.name, l.capacity_pps, 0.0) for l in network.links)
    flows = tuple(Flow(f.name, f.route, access_delay_s=rtt_s / 2) for f in network.flows)
    return Network(links, flows)


random_networks = st.builds(
    lambda links, flows, seed: scenarios.random_network(links, flows, seed=seed),
    st.integers(1, 8), st.integers(1, 30), st.integers(0, 2**31 - 1),
)


@given(random_networks)
def test_equilibrium_satisfies_theorem_2(network):
    """r_i* = alpha / (kappa T_i (1 - 1 / max_{l in L_i} rho_l*)) with rho_l* from the rates
    themselves, the load factors of the followed links exceed 1, and the root finder agrees with
    the proof's construction."""
    model = MIAIMDNetwork(network)
    eq = model.equilibrium(network_params(network, kappa=KAPPA, alpha=ALPHA, gamma=GAMMA))
    assert eq["consistent"] and eq["residual"] < 1e-10
    assert eq["methods_gap"] < 1e-8
    rates = eq["flow_rate"]
    rho = network.routing_matrix @ rates / (GAMMA * network.capacities_pps)
    rho_path = np.array([rho[network.route_indices(i)].max() for i in range(network.n_flows)])
    assert np.all(rho_path > 1)
    np.testing.assert_allclose(rates, ALPHA / (KAPPA * network.rtt_s * (1 - 1 / rho_path)), rtol=1e-9)


@given(random_networks)
def test_with_equal_rtts_the_allocation_is_maxmin_fair_for_the_equilibrium_loads(network):
    """Theorem 2 (equal RTTs): max-min fair, with each link's capacity read as its equilibrium load."""
    network = _equal_rtt(network)
    eq = MIAIMDNetwork(network).equilibrium(network_params(network, kappa=KAPPA, alpha=ALPHA, gamma=GAMMA))
    loads = network.routing_matrix @ eq["flow_rate"]
    capacities = np.where(loads > 0, loads, network.capacities_pps)
    fair = maxmin(network, capacities_pps=capacities)
    np.testing.assert_allclose(eq["flow_rate"], fair.rates_pps, rtol=1e-9)


def test_theorem2_construction_on_a_single_link_is_theorem_1():
    """One link, N flows of one RTT: r* = gamma C / N + alpha / (kappa T) (Theorem 1)."""
    capacity, rtt, n = 1000.0, 0.1, 5
    rates, rho = theorem2_rates(np.ones((1, n)), [capacity], np.full(n, rtt), KAPPA, ALPHA, GAMMA)
    np.testing.assert_allclose(rates, GAMMA * capacity / n + ALPHA / (KAPPA * rtt), rtol=1e-12)
    assert rho[0] == pytest.approx(1 + n * ALPHA / (KAPPA * GAMMA * capacity * rtt), rel=1e-12)


def test_simulation_converges_to_the_fixed_point():
    network = scenarios.random_network(3, 6, seed=3, delay_ms=(10.0, 30.0))
    model = MIAIMDNetwork(network)
    # Fairness converges in about w*/alpha RTTs: a larger alpha (packets per RTT) keeps it short.
    params = network_params(network, alpha=20.0)
    eq = model.equilibrium(params)
    solution = solve(model, params, 150.0, [140.0, 150.0], steps_per_delay=16)
    assert solution.status[0] == 0
    np.testing.assert_allclose(model.rates(solution.ys[0]), np.broadcast_to(eq["flow_rate"], (2, 6)), rtol=1e-4)


def test_flows_that_start_later_join_the_allocation():
    network = Network(
        (scenarios.ixcp_fig1(1).links[0],),
        (Flow("early", ("l1",), access_delay_s=0.02), Flow("late", ("l1",), access_delay_s=0.02, start_s=20.0)),
    )
    model = MIAIMDNetwork(network)
    # Start near the window the link holds: from 1 packet, MI's start-up overshoots by e^190.
    params = network_params(network, initial_window=500.0, alpha=20.0)
    before = model.equilibrium(params, at=10.0)
    after = model.equilibrium(params, at=30.0)
    assert before["flow_rate"][1] == 0.0 and before["bottleneck"][1] == -1
    assert after["flow_rate"][0] == pytest.approx(after["flow_rate"][1], rel=1e-12)
    solution = solve(model, params, 100.0, [19.0, 100.0], steps_per_delay=16)
    rates = model.rates(solution.ys[0])
    assert rates[0, 0] == pytest.approx(before["flow_rate"][0], rel=1e-3)
    assert rates[1, 1] == pytest.approx(after["flow_rate"][1], rel=1e-3)


@pytest.mark.parametrize("kwargs,error,field", [
    ({"kappa": 0.0}, ParameterError, "kappa"), ({"alpha": -1.0}, ParameterError, "alpha"),
    ({"gamma": 1.5}, ParameterError, "gamma"), ({"initial_window": 0.0}, ParameterError, "initial_window"),
    ({"capacity_pps": [1.0, 2.0, 3.0]}, ShapeError, "capacity"),
])
def test_bad_parameters_name_the_field(kwargs, error, field):
    with pytest.raises(error) as raised:
        network_params(scenarios.ixcp_fig1(2), **kwargs)
    assert raised.value.field == field
