"""gamma as a control variable (VCP paper section 5, "Importance of gamma", eq. (15))."""

from __future__ import annotations

import numpy as np
import pytest

from fluidcc.dde import Status, solve
from fluidcc.errors import ParameterError
from fluidcc.models import MIAIMDAggregate, miaimd

# Four links whose offset alpha / (kappa P), P = C T / N, is 0.072, 0.048, 0.0625 and 0.025:
# several steps of delta_gamma = 0.01, and none a whole number of steps (the controller then
# settles between two values of gamma instead of on a tie decided by rounding).
POINTS = dict(kappa=[0.25, 0.5, 0.2, 0.4], alpha=[0.9, 1.0, 0.5, 1.0], capacity_pps=[1000.0, 5000.0, 800.0, 2500.0],
              rtt_s=[0.1, 0.05, 0.2, 0.04], n_flows=[2, 6, 4, 1])
TARGET = np.array([0.9, 0.85, 0.95, 0.97])
STEP = 0.01
PERIOD_RTTS = 40
PERIODS = 24
# The filter averages w(t - T) / (C T) over the second half of a period, from 19 RTTs after the
# step; a step's transient decays at least as exp(-0.2 t / T) here (eq. (14) linearized, kappa
# >= 0.2), so what is left of it is below 0.01 x e^-3.8 = 2e-4. The margin is five times that.
FILTER_MARGIN = 1e-3


def _offset():
    """Theorem 1: the utilization at the equilibrium is w*/(C T) = gamma + alpha / (kappa P)."""
    per_flow_bdp = np.array(POINTS["capacity_pps"]) * np.array(POINTS["rtt_s"]) / np.array(POINTS["n_flows"])
    return np.array(POINTS["alpha"]) / (np.array(POINTS["kappa"]) * per_flow_bdp)


@pytest.fixture(scope="module")
def controlled():
    params = miaimd.aggregate_params(gamma=TARGET, **POINTS)
    return miaimd.gamma_controlled(params, target_utilization=TARGET, period_rtts=PERIOD_RTTS, periods=PERIODS,
                                   gamma_step=STEP, steps_per_delay=16)


def test_without_the_controller_the_utilization_misses_the_target_by_alpha_over_kappa_p(controlled):
    params = miaimd.aggregate_params(gamma=TARGET, **POINTS)
    rtt = np.array(POINTS["rtt_s"])
    sol = solve(MIAIMDAggregate(), params, 600 * rtt, rtt[:, None] * [PERIOD_RTTS, 600], steps_per_delay=16)
    # the controller's first period is this same run (from w_i = 1 on [-T, 0], gamma = gamma*)
    np.testing.assert_allclose(controlled.window[:, 0], sol.ys[:, 0, 0], rtol=1e-12)
    utilization = sol.ys[:, -1, 0] / (np.array(POINTS["capacity_pps"]) * rtt)
    np.testing.assert_allclose(utilization, TARGET + _offset(), rtol=1e-9)
    # so a controller that did nothing would fail the next test
    assert np.all(np.abs(utilization - TARGET) > STEP + FILTER_MARGIN)


def test_the_controlled_utilization_ends_within_one_step_of_the_target(controlled):
    assert np.all(controlled.success)
    last = controlled.utilization[:, -6:]
    assert np.all(np.abs(last - TARGET[:, None]) <= STEP + FILTER_MARGIN), last - TARGET[:, None]
    # gamma ends next to gamma* - alpha / (kappa P), the paper's setting of the control variable
    assert np.all(np.abs(controlled.gamma[:, -1] - (TARGET - _offset())) <= STEP + FILTER_MARGIN)


def test_gamma_moves_in_steps_of_exactly_delta_gamma(controlled):
    steps = np.diff(np.concatenate([controlled.gamma, controlled.next_gamma[:, None]], axis=1), axis=1)
    assert np.all(np.isclose(np.abs(steps), STEP, rtol=0, atol=1e-12) | (steps == 0)), steps
    # it went down by at least the whole number of steps in alpha / (kappa P) ...
    assert np.all(np.sum(steps < 0, axis=1) >= np.floor(_offset() / STEP))
    # ... and it measured each period it was in: gamma + alpha / (kappa P) once settled
    settled = controlled.utilization[:, -6:] - controlled.gamma[:, -6:]
    np.testing.assert_allclose(settled, np.broadcast_to(_offset()[:, None], settled.shape), atol=FILTER_MARGIN)
    np.testing.assert_allclose(controlled.period_end_s[:, 0], PERIOD_RTTS * np.array(POINTS["rtt_s"]))


def test_a_point_that_fails_is_data_and_the_others_go_on():
    """A per-flow BDP of 1e9 packets: the start-up multiplies w by about exp(kappa C T / N), past float64."""
    params = miaimd.aggregate_params(kappa=0.25, capacity_pps=[1000.0, 1e9], rtt_s=[0.1, 1.0], n_flows=[2, 1])
    run = miaimd.gamma_controlled(params, target_utilization=0.9, period_rtts=4, periods=3, steps_per_delay=16)
    assert list(run.status) == [Status.OK, Status.OVERFLOW] and "overflow" in run.messages[1]
    assert np.all(np.isfinite(run.utilization[0])) and np.all(np.isnan(run.utilization[1]))
    assert run.next_gamma[1] == pytest.approx(0.98)  # its gamma was never stepped


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(target_utilization=0.0), "target_utilization"),
        (dict(target_utilization=1.2), "target_utilization"),
        (dict(gamma_step=0.0), "gamma_step"),
        (dict(gamma_step=-0.01), "gamma_step"),
        (dict(gamma_step=0.9), "gamma_step"),
        (dict(period_rtts=0), "period_rtts"),
        (dict(period_rtts=1), "period_rtts"),
        (dict(period_rtts=2.5), "period_rtts"),
        (dict(periods=0), "periods"),
        (dict(steps_per_delay=3), "steps_per_delay"),
    ],
)
def test_bad_controller_settings_name_their_field(kwargs, field):
    arguments = dict(target_utilization=0.9, period_rtts=40, periods=3)
    arguments.update(kwargs)
    params = miaimd.aggregate_params(kappa=0.25, capacity_pps=1000.0, rtt_s=0.1, n_flows=2)
    with pytest.raises(ParameterError) as info:
        miaimd.gamma_controlled(params, **arguments)
    assert info.value.field == field
