"""Components kept >= 0 by projection (a queue at an empty buffer): RK4 and the SciPy reference."""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np
import pytest

from fluidcc.dde import DDESystem, solve
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


@dataclass(frozen=True)
class _CountedQueue(DDESystem):
    """A queue fed by a delayed on/off source, with counters of arrivals and departures.

    State: queue q (kept >= 0), arrivals A, departures D; D' = y - q' (what left the queue).
    `book`: whether the projection at 0 is booked on D (`projection_ledger`).
    """

    book: bool = True

    def state_size(self, params):
        return 3

    def nonnegative_components(self, params):
        return (True, False, False)

    def projection_ledger(self, params):
        return (2, -1, -1) if self.book else (-1, -1, -1)

    def delays(self, params):
        return jnp.stack([params["delay"]])

    def history(self, t, params):
        return jnp.zeros(3) + 0.0 * t

    def vector_field(self, t, x, x_delayed, params):
        arrival = params["peak"] * (1.0 + jnp.sin(2.0 * jnp.pi * t / params["period"]))  # 0 .. 2 peak
        d_queue = jnp.where(x[0] > 0, arrival - params["capacity"], jnp.maximum(arrival - params["capacity"], 0.0))
        return jnp.stack([d_queue, arrival, arrival - d_queue])


def _counted_queue(book: bool):
    params = {"delay": np.array([0.05]), "peak": np.array([800.0]), "capacity": np.array([1000.0]),
              "period": np.array([0.37])}
    sol = solve(_CountedQueue(book), params, 3.0, np.array([3.0]), steps_per_delay=8)
    queue, arrived, departed = sol.ys[0, -1]
    return queue, arrived, departed


def test_projection_booked_on_the_ledger_conserves_fluid_to_rounding():
    queue, arrived, departed = _counted_queue(book=True)
    assert arrived > 1000.0 and queue >= 0.0
    assert abs(arrived - departed - queue) <= 1e-12 * arrived
    # without the ledger the projection creates fluid: the books are off by what it added
    queue, arrived, departed = _counted_queue(book=False)
    assert abs(arrived - departed - queue) > 1e-3


@dataclass(frozen=True)
class _FastRelaxation(DDESystem):
    """x' = -lam (x - cos t) + small delayed term; `limit`: whether max_step returns 1 / lam."""

    limit: bool = True

    def state_size(self, params):
        return 1

    def delays(self, params):
        return jnp.stack([jnp.asarray(1.0)])

    def history(self, t, params):
        return jnp.ones(1) + 0.0 * t

    def vector_field(self, t, x, x_delayed, params):
        return -params["lam"] * (x - jnp.cos(t)) + 0.01 * x_delayed[0]

    def max_step(self, params):
        return 1.0 / params["lam"] if self.limit else None


def test_max_step_raises_the_resolution_where_the_model_needs_it():
    params = {"lam": np.array([500.0])}
    bounded = solve(_FastRelaxation(True), params, 4.0, np.linspace(0, 4, 9), steps_per_delay=8)
    assert bounded.steps_per_delay[0] >= 500  # 1 s delay, step <= 1/500 s
    assert bounded.status[0] == 0
    # the slow manifold x ~ cos t (to O(1/lam)) is followed
    assert np.max(np.abs(bounded.ys[0, 2:, 0] - np.cos(np.linspace(0, 4, 9)[2:]))) < 0.01
    unbounded = solve(_FastRelaxation(False), params, 4.0, np.linspace(0, 4, 9), steps_per_delay=8)
    # lam h = 62: explicit RK4 grows by ~6e5 a step
    assert unbounded.status[0] != 0 or np.max(np.abs(unbounded.ys[0])) > 1e100
