"""Components kept >= 0 by projection (a queue at an empty buffer): RK4 and the SciPy reference."""

from __future__ import annotations

import numpy as np
import pytest

from fluidcc.dde import solve
from fluidcc.models import QCPAggregate, XCPAggregate, qcp, xcp

CAPACITY = 18750.0  # packets/s (150 Mb/s)
DELAY = 0.08  # s


@pytest.fixture(scope="module")
def qcp_reference():
    """QCP's eq. (19) at alpha = beta = 1: the queue empties and refills again and again."""
    params = qcp.aggregate_params(capacity_pps=CAPACITY, rtt_s=DELAY)
    times = np.linspace(0.0, 30 * DELAY, 301)
    reference = solve(QCPAggregate(), params, times[-1], times, method="scipy")
    assert reference.status[0] == 0
    return params, times, reference


def test_reference_keeps_queue_nonnegative_and_rests_at_zero(qcp_reference):
    _, _, reference = qcp_reference
    queue = reference.ys[0, :, 0]
    assert np.all(queue >= 0.0)
    # the run has both regimes: a queue that builds up, and stretches resting at exactly 0
    assert queue.max() > 100.0
    assert np.sum(queue == 0.0) > 20


def test_rk4_converges_to_the_reference_with_projection(qcp_reference):
    params, times, reference = qcp_reference
    errors = []
    for steps in (32, 512, 2048):
        sol = solve(QCPAggregate(), params, times[-1], times, steps_per_delay=steps)
        assert np.all(sol.ys[0, :, 0] >= 0.0), "the projected step must never leave a negative queue"
        errors.append(np.max(np.abs(sol.ys[0] - reference.ys[0])) / CAPACITY)
    # about second order across the switches (measured 41x from 32 to 512 steps per delay and 15x
    # from 512 to 2048, not monotone in between: it depends on where the switches fall in a step)
    assert errors[1] < errors[0] / 16 and errors[2] < errors[1] / 8
    assert errors[2] < 1e-7


def test_without_projection_the_queue_goes_negative_and_rk4_is_fourth_order():
    params = xcp.aggregate_params(capacity_pps=CAPACITY, rtt_s=DELAY)
    times = np.linspace(0.0, 30 * DELAY, 301)
    reference = solve(XCPAggregate(), params, times[-1], times, method="scipy")
    assert reference.ys[0, :, 0].min() < -100.0  # the linear model XCP analyses: q' = y - C unconstrained
    errors = [np.max(np.abs(solve(XCPAggregate(), params, times[-1], times, steps_per_delay=m).ys[0] - reference.ys[0]))
              / CAPACITY for m in (16, 32)]
    assert errors[1] < errors[0] / 12  # order 4: 16x per halving of the step


def test_projection_changes_the_trajectory_only_once_the_queue_empties():
    params = xcp.aggregate_params(capacity_pps=CAPACITY, rtt_s=DELAY, alpha=1.0, beta=1.0)
    times = np.linspace(0.0, 20 * DELAY, 201)
    linear = solve(XCPAggregate(), params, times[-1], times, steps_per_delay=64)
    projected = solve(XCPAggregate(queue="projected"), params, times[-1], times, steps_per_delay=64)
    first_negative = int(np.argmax(linear.ys[0, :, 0] < 0))
    assert first_negative > 0
    np.testing.assert_allclose(projected.ys[0, :first_negative], linear.ys[0, :first_negative], rtol=1e-12, atol=1e-9)
    assert np.max(np.abs(projected.ys[0, first_negative + 5:] - linear.ys[0, first_negative + 5:])) > 1.0
