"""XCP and iXCP per-flow fluid models on networks: fixed points, max-min, simulation, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fluidcc import scenarios
from fluidcc.dde import solve
from fluidcc.errors import NetworkError, ParameterError
from fluidcc.maxmin import maxmin
from fluidcc.models.xcp_network import XCPNetwork, network_params, two_link_fixed_point
from fluidcc.network import Flow, Link, Network
from fluidcc.sweep import settling_times, simulate_network
from fluidcc.units import mbps_to_pps

ALPHA, GAMMA = 0.4, 0.1

random_networks = st.builds(
    lambda links, flows, seed: scenarios.random_network(links, flows, seed=seed),
    st.integers(1, 8), st.integers(1, 30), st.integers(0, 2**31 - 1),
)


def _independent_maxmin_check(network: Network, rates: np.ndarray, rtol: float) -> None:
    """Every flow has a saturated link on which its rate is the largest (max-min characterization)."""
    routing = network.routing_matrix
    load = routing @ rates
    assert np.all(load <= network.capacities_pps * (1 + rtol))
    for i in range(network.n_flows):
        links = np.flatnonzero(routing[:, i])
        ok = [load[l] >= network.capacities_pps[l] * (1 - rtol)
              and rates[i] >= rates[routing[l] > 0].max() * (1 - rtol) for l in links]
        assert any(ok), f"flow {network.flows[i].name} has no bottleneck"


@given(random_networks, st.floats(0.8, 1.25), st.integers(0, 2**31 - 1))
def test_ixcp_equilibrium_is_maxmin_on_random_networks(network, scale, seed):
    rng = np.random.default_rng(seed)
    fair = np.asarray(maxmin(network).rates_pps, dtype=float)
    start = fair * scale * rng.uniform(0.9, 1.1, network.n_flows)  # Newton starts away from max-min
    eq = XCPNetwork(network, "ixcp").equilibrium(network_params(network), start_rates=start)
    assert eq["consistent"]
    assert eq["residual"] < 1e-10
    np.testing.assert_allclose(eq["flow_rate"], fair, rtol=5e-3)  # the acceptance bound: 0.5 %
    _independent_maxmin_check(network, eq["flow_rate"], rtol=5e-3)


@given(random_networks)
def test_xcp_equilibrium_utilizes_every_followed_link_at_least_alpha_over_alpha_plus_gamma(network):
    eq = XCPNetwork(network, "xcp").equilibrium(network_params(network, alpha=ALPHA, gamma=GAMMA))
    assert eq["consistent"]
    assert eq["residual"] < 1e-10
    followed = sorted(set(eq["bottleneck"].tolist()) - {-1})
    assert np.all(eq["utilization"][followed] >= ALPHA / (ALPHA + GAMMA) - 1e-9)
    assert np.all(eq["utilization"] <= 1 + 1e-9)


def test_xcp_two_link_underutilization_matches_the_closed_form_and_its_limit():
    ns = [2, 8, 64, 1024]
    network = scenarios.ixcp_fig1(1)
    params = network_params(network, multiplicity=[[1, n] for n in ns])
    closed = two_link_fixed_point("xcp")
    s = closed["symbols"]
    model = XCPNetwork(network, "xcp")
    utilization = []
    for point, n in enumerate(ns):
        eq = model.equilibrium(params, point=point)
        x = float(closed["short_rate"].subs({s["n"]: n, s["c_a"]: 155, s["c_b"]: 100, s["alpha"]: ALPHA,
                                               s["gamma"]: GAMMA}))
        assert eq["flow_rate"][0] == pytest.approx(mbps_to_pps(x), rel=1e-9)
        assert eq["flow_rate"][1] == pytest.approx(mbps_to_pps(100) / n, rel=1e-9)
        utilization.append(eq["utilization"][0])
    assert np.all(np.diff(utilization) < 0)
    assert utilization[-1] == pytest.approx(0.8, abs=2e-3)  # the n -> oo limit alpha / (alpha + gamma)


@pytest.mark.slow
@pytest.mark.parametrize("variant,horizon_s", [("xcp", 400.0), ("ixcp", 2000.0)])
def test_two_link_fixed_point_and_simulation_agree_for_every_n(variant, horizon_s):
    """Acceptance: within 0.5 % for n = 2 ... 1024 (every sample of the last 100 s)."""
    ns = [2**k for k in range(1, 11)]
    network = scenarios.ixcp_fig1(1)
    params = network_params(network, multiplicity=[[1, n] for n in ns])
    model = XCPNetwork(network, variant)
    solution = solve(model, params, horizon_s, np.linspace(horizon_s - 100, horizon_s, 51), steps_per_delay=16)
    assert np.all(solution.status == 0)
    for point in range(len(ns)):
        eq = model.equilibrium(params, point=point)
        deviation = np.abs(solution.ys[point][:, :2] / eq["flow_rate"][:2] - 1)
        assert deviation.max() <= 5e-3, f"{variant}, n = {ns[point]}: {deviation.max():.2e}"


@pytest.fixture(scope="module")
def fig6_runs():
    network = scenarios.ixcp_fig6()
    return {variant: simulate_network(variant, network, duration_s=60.0, save_step_s=0.1)
            for variant in ("xcp", "ixcp")}


def test_ixcp_reaches_maxmin_within_10_s_of_every_change_and_xcp_does_not(fig6_runs):
    ixcp = settling_times(fig6_runs["ixcp"], tolerance=0.02)
    xcp = settling_times(fig6_runs["xcp"], tolerance=0.02)
    assert [row["start_s"] for row in ixcp] == [0.0, 20.0, 40.0]
    for row in ixcp:
        assert row["settling_s"] <= 10.0, row
        assert row["final_deviation"] < 1e-3
    # XCP settles elsewhere: several percent from max-min at the end of every phase.
    assert all(row["final_deviation"] > 0.05 for row in xcp)


def test_fig6_paper_maxmin_rates_are_the_reference(fig6_runs):
    ds = fig6_runs["ixcp"]
    paper = {10.0: [40, 110, 60, 40, 40, 0, 0, 0], 30.0: [30, 30, 70, 45, 45, 30, 30, 30],
             50.0: [50, 100, 50, 70, 0, 0, 0, 0]}
    for t, rates in paper.items():
        reference = ds["maxmin_rate"].sel(time=t, method="nearest").values
        np.testing.assert_allclose(reference, [mbps_to_pps(r) for r in rates], rtol=1e-12)


@pytest.mark.parametrize("variant", ["xcp", "ixcp"])
def test_simulation_converges_to_the_fixed_point_on_a_random_network(variant):
    network = scenarios.random_network(4, 9, seed=7)
    model = XCPNetwork(network, variant)
    params = network_params(network)
    eq = model.equilibrium(params)
    solution = solve(model, params, 120.0, [100.0, 110.0, 120.0], steps_per_delay=32)
    rates = solution.ys[0][:, : network.n_flows]
    np.testing.assert_allclose(rates, np.broadcast_to(eq["flow_rate"], rates.shape), rtol=5e-3)


def test_five_hop_network_ixcp_is_max_min_and_xcp_leaves_links_1_to_4_idle_in_part():
    """The iXCP paper's Fig. 4/5 network in the fluid models: iXCP's fixed point is the max-min
    allocation (every link full, every group at its rate) and the integration reaches it; XCP's
    leaves links 1-4 below full (each at least alpha / (alpha + gamma) = 80 %) and fills link 5."""
    network = scenarios.ixcp_fig4()
    fair = maxmin(network).rates_pps
    params = network_params(network)
    for variant in ("xcp", "ixcp"):
        model = XCPNetwork(network, variant)
        eq = model.equilibrium(params)
        solution = solve(model, params, 120.0, [110.0, 120.0], steps_per_delay=16)
        np.testing.assert_allclose(solution.ys[0][:, : network.n_flows],
                                   np.broadcast_to(eq["flow_rate"], (2, network.n_flows)), rtol=5e-3)
        if variant == "ixcp":
            np.testing.assert_allclose(eq["flow_rate"], fair, rtol=1e-6)
        else:
            assert np.all(eq["utilization"][:4] < 0.97) and np.all(eq["utilization"][:4] >= 0.8 - 1e-9)
            assert eq["utilization"][4] == pytest.approx(1.0, abs=1e-6)


def test_fluid_is_conserved_in_the_queue():
    """While the queue is busy, q(t) = integral of (y - c): a start-up at twice the capacity."""
    from scipy.integrate import cumulative_trapezoid

    network = Network((Link("a", 1000.0, 0.01),), (Flow("f", ("a",)),))
    model = XCPNetwork(network, "xcp")
    params = network_params(network, initial_rate_pps=2000.0)
    times = np.linspace(0, 0.02, 4001)
    solution = solve(model, params, 0.02, times, steps_per_delay=64)
    rate, queue = solution.ys[0][:, 0], solution.ys[0][:, 1]
    assert np.all(queue[1:] > 0)
    expected = cumulative_trapezoid(rate - 1000.0, times, initial=0.0)
    np.testing.assert_allclose(queue[1:], expected[1:], rtol=1e-6)


@pytest.mark.parametrize(
    "kwargs,field",
    [({"alpha": 0.0}, "alpha"), ({"beta": -0.1}, "beta"), ({"gamma": -1.0}, "gamma"),
     ({"capacity_pps": [1.0, -5.0]}, "capacity"), ({"multiplicity": 0.5}, "multiplicity"),
     ({"initial_rate_pps": 0.0}, "initial_rate")],
)
def test_bad_parameters_name_the_field(kwargs, field):
    network = scenarios.ixcp_fig1(2)
    with pytest.raises(ParameterError) as error:
        network_params(network, **kwargs)
    assert error.value.field == field


def test_bad_variant_and_zero_rtt_flow_are_rejected():
    with pytest.raises(ParameterError, match="variant"):
        XCPNetwork(scenarios.ixcp_fig1(2), "tcp")
    network = Network((Link("a", 1000.0, 0.0),), (Flow("still", ("a",)),))
    with pytest.raises(NetworkError, match="still"):
        solve(XCPNetwork(network), network_params(network), 1.0)
