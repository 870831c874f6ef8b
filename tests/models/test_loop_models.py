"""XCP, QCP and RCP aggregate models: equilibria, convergence, log space, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from fluidcc.dde import solve
from fluidcc.errors import ParameterError
from fluidcc.models import QCPAggregate, RCPAggregate, XCPAggregate, qcp, rcp, xcp
from fluidcc.protocols import single_link_model

CAPACITY = 18750.0
DELAY = 0.08


def _final(system, params, rtts=300, steps=32):
    times = np.linspace(0.0, rtts * DELAY, 3 * rtts + 1)
    sol = solve(system, params, times[-1], times, steps_per_delay=steps)
    assert np.all(sol.status == 0)
    return sol.ys[:, -1, :]


def test_xcp_defaults_converge_to_full_utilization_and_empty_queue():
    params = xcp.aggregate_params(capacity_pps=CAPACITY, rtt_s=DELAY)
    final = _final(XCPAggregate(), params)
    np.testing.assert_allclose(final, XCPAggregate().equilibrium_state(params), atol=1e-6 * CAPACITY)


def test_rcp_paper_gains_converge_only_with_the_queue_projection():
    params = rcp.aggregate_params(capacity_pps=CAPACITY, rtt_s=DELAY, n_flows=50)
    final = _final(RCPAggregate(), params)
    np.testing.assert_allclose(final[0], RCPAggregate().equilibrium_state(params)[0], rtol=1e-6, atol=1e-6)
    # the smooth form linear analysis looks at is unstable at (0.1, 1.0): it never settles
    times = np.linspace(0.0, 300 * DELAY, 901)
    smooth = solve(RCPAggregate(queue="linear"), params, times[-1], times, steps_per_delay=32)
    rate = smooth.ys[0, -300:, 0]
    assert not np.all(np.abs(rate / (CAPACITY / 50) - 1) < 1e-2)


def test_rcp_log_space_agrees_with_natural_coordinates():
    params = rcp.aggregate_params(capacity_pps=CAPACITY, rtt_s=DELAY, n_flows=20, alpha=0.5, beta=0.3)
    times = np.linspace(0.0, 60 * DELAY, 121)
    log = solve(RCPAggregate(), params, times[-1], times, steps_per_delay=128)
    natural = solve(RCPAggregate(), params, times[-1], times, steps_per_delay=128, log_space=False)
    np.testing.assert_allclose(log.ys[0, :, 0], natural.ys[0, :, 0], rtol=1e-8)
    np.testing.assert_allclose(log.ys[0, :, 1], natural.ys[0, :, 1], atol=1e-8 * CAPACITY * DELAY)


def test_qcp_is_the_projected_efficiency_loop():
    params = qcp.aggregate_params(capacity_pps=CAPACITY, rtt_s=DELAY)
    times = np.linspace(0.0, 20 * DELAY, 81)
    a = solve(QCPAggregate(), params, times[-1], times, steps_per_delay=32)
    b = solve(XCPAggregate(queue="projected"), params, times[-1], times, steps_per_delay=32)
    np.testing.assert_array_equal(a.ys, b.ys)
    assert QCPAggregate().linearizable() == QCPAggregate(queue="linear")


@pytest.mark.parametrize(
    "build, field, value",
    [
        (lambda: xcp.aggregate_params(capacity_pps=CAPACITY, rtt_s=DELAY, alpha=-0.1), "alpha", "-0.1"),
        (lambda: xcp.aggregate_params(capacity_pps=CAPACITY, rtt_s=DELAY, beta=-1.0), "beta", "-1"),
        (lambda: xcp.aggregate_params(capacity_pps=0.0, rtt_s=DELAY), "capacity", "0"),
        (lambda: qcp.aggregate_params(capacity_pps=CAPACITY, rtt_s=-0.01), "rtt", "-0.01"),
        (lambda: qcp.aggregate_params(capacity_pps=CAPACITY, rtt_s=DELAY, initial_queue=-3), "initial_queue", "-3"),
        (lambda: rcp.aggregate_params(capacity_pps=CAPACITY, rtt_s=DELAY, n_flows=2.5), "n_flows", "2.5"),
        (lambda: rcp.aggregate_params(capacity_pps=CAPACITY, rtt_s=DELAY, n_flows=5, initial_load=0.0),
         "initial_load", "0"),
        (lambda: XCPAggregate(queue="clamped"), "queue", "clamped"),
        (lambda: RCPAggregate(queue="none"), "queue", "none"),
    ],
)
def test_bad_input_names_field_and_value(build, field, value):
    with pytest.raises(ParameterError) as info:
        build()
    assert info.value.field == field
    assert value in str(info.value)


@pytest.mark.parametrize("name", ["xcp", "qcp", "rcp", "miaimd"])
def test_registry_equilibrium_is_the_models(name):
    entry = single_link_model(name)
    values = {k: np.array([v, v]) for k, v in entry.defaults().items()}
    system, params = entry.aggregate(values)
    index = entry.observed_index(system, params)
    np.testing.assert_allclose(entry.equilibrium(values), system.equilibrium_state(params)[:, index])
