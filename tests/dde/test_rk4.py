"""The JAX RK4 engine: order of accuracy, delays, log space, statuses, batching, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fluidcc.dde import Status, solve
from fluidcc.errors import ParameterError, ShapeError

from dde_systems import Growth, Hutchinson, LinearDelay, Quadratic, SquareRootOfPast, exact_single_delay, exact_two_delays

T3 = np.linspace(0.0, 3.0, 31)


def _linear(a, b=0.0, tau2=1.0):
    a = np.atleast_1d(np.asarray(a, dtype=float))
    return {"a": a, "b": np.full_like(a, b), "tau2": np.full_like(a, tau2)}


def test_cubic_solution_is_integrated_exactly():
    # On [0, 3] the solution of x' = -a x(t - 1) is a cubic by pieces with breakpoints on the
    # grid, which RK4 with Hermite interpolation reproduces to rounding.
    sol = solve(LinearDelay(), _linear(1.5), 3.0, T3, steps_per_delay=4)
    np.testing.assert_allclose(sol.ys[0, :, 0], exact_single_delay(1.5, T3), rtol=0, atol=1e-13)


def test_fourth_order_convergence_on_a_nonlinear_equation():
    times = np.linspace(0, 20, 41)
    ref = solve(Hutchinson(), {"r": np.array([1.2])}, 20.0, times, method="scipy").ys[0, :, 0]
    errors = []
    for steps in (8, 16, 32, 64):
        sol = solve(Hutchinson(), {"r": np.array([1.2])}, 20.0, times, steps_per_delay=steps)
        errors.append(np.max(np.abs(sol.ys[0, :, 0] / ref - 1)))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((ratios > 12) & (ratios < 20)), (errors, ratios)  # 2^4 = 16 per halving of h


def test_two_incommensurate_delays_converge_to_the_exact_solution():
    # The breakpoint at t = 1 s (delay 1 s) is off the grid of h = 0.7 s / M: the step across it
    # loses accuracy locally, as the engine documents: errors fall about 6x per halving, not 16x.
    times = np.linspace(0, 4, 41)
    exact = exact_two_delays(0.8, 0.6, times, 4.0)
    errors = []
    for steps in (64, 128):
        sol = solve(LinearDelay(), _linear(0.8, b=0.6, tau2=0.7), 4.0, times, steps_per_delay=steps)
        errors.append(np.max(np.abs(sol.ys[0, :, 0] - exact)))
    assert errors[1] < 1e-6 and errors[0] / errors[1] > 4, errors


def test_each_point_of_a_batch_gets_its_own_step_and_delay():
    a = np.array([0.5, 1.0, 2.0])
    params = {"a": a, "b": np.zeros(3), "tau2": np.array([1.0, 1.0, 1.0])}
    sol = solve(LinearDelay(), params, 3.0, T3, steps_per_delay=64)
    for i, ai in enumerate(a):
        np.testing.assert_allclose(sol.ys[i, :, 0], exact_single_delay(ai, T3), atol=1e-10)


def test_save_grid_per_point_and_final_state_only():
    times = np.stack([np.linspace(0, 2, 5), np.linspace(0, 3, 5)])
    sol = solve(LinearDelay(), _linear([1.0, 1.0]), np.array([2.0, 3.0]), times, steps_per_delay=64)
    np.testing.assert_allclose(sol.ys[0, :, 0], exact_single_delay(1.0, times[0]), atol=1e-10)
    np.testing.assert_allclose(sol.ys[1, :, 0], exact_single_delay(1.0, times[1]), atol=1e-10)
    final = solve(LinearDelay(), _linear([1.0, 1.0]), np.array([2.0, 3.0]), steps_per_delay=64)
    assert final.ys.shape == (2, 1, 1)
    np.testing.assert_allclose(final.ys[:, 0, 0], exact_single_delay(1.0, np.array([2.0, 3.0])), atol=1e-10)


def test_results_do_not_depend_on_how_the_batch_is_cut():
    r = np.linspace(0.3, 1.9, 11)
    times = np.linspace(0, 30, 61)
    whole = solve(Hutchinson(), {"r": r}, 30.0, times, steps_per_delay=32, batch_chunk=1024)
    cut = solve(Hutchinson(), {"r": r}, 30.0, times, steps_per_delay=32, batch_chunk=4)
    np.testing.assert_array_equal(whole.ys, cut.ys)


@given(st.lists(st.floats(0.2, 1.5), min_size=1, max_size=6))
def test_log_space_agrees_with_linear_space_where_both_are_finite(rates):
    # always 6 points, the last rate repeated: each batch width is a kernel to compile, and the
    # results do not depend on the batch (test_results_do_not_depend_on_how_the_batch_is_cut)
    r = np.array(rates + rates[-1:] * (6 - len(rates)))
    times = np.linspace(0, 40, 81)
    log = solve(Hutchinson(), {"r": r}, 40.0, times, steps_per_delay=32, rtol=1e-9, log_space=True)
    lin = solve(Hutchinson(), {"r": r}, 40.0, times, steps_per_delay=32, rtol=1e-9, log_space=False)
    assert np.all(log.success) and np.all(lin.success)
    np.testing.assert_allclose(log.ys, lin.ys, rtol=1e-7)


def test_rtol_refines_points_until_their_error_is_small():
    r = np.array([0.5, 1.2, 1.55])
    times = np.linspace(0, 60, 121)
    sol = solve(Hutchinson(), {"r": r}, 60.0, times, steps_per_delay=8, rtol=1e-8, max_steps_per_delay=1024)
    ref = solve(Hutchinson(), {"r": r}, 60.0, times, method="scipy")
    assert np.all(sol.success)
    assert np.all(sol.error_estimate <= 1e-8)
    assert sol.steps_per_delay.max() > 8  # the coarse start was not good enough everywhere
    np.testing.assert_allclose(sol.ys, ref.ys, rtol=2e-8)


def test_tolerance_not_reached_is_a_status():
    sol = solve(Hutchinson(), {"r": np.array([1.2])}, 60.0, np.linspace(0, 60, 61),
                steps_per_delay=4, rtol=1e-14, max_steps_per_delay=8)
    assert sol.status[0] == Status.TOLERANCE_NOT_REACHED
    assert "tolerance" in sol.messages[0]


def test_overflow_and_nan_are_statuses_and_leave_other_points_alone():
    growth = solve(Growth(), {"g": np.array([1.0, 5000.0])}, 1.0, np.linspace(0, 1, 11), log_space=False)
    assert growth.status.tolist() == [Status.OK, Status.OVERFLOW]
    assert "overflow" in growth.messages[1]
    np.testing.assert_allclose(growth.ys[0, :, 0], np.exp(np.linspace(0, 1, 11)), rtol=1e-9)
    # In log space the log stays finite: the window itself overflows, reported as such.
    log = solve(Growth(), {"g": np.array([2000.0])}, 1.0, np.linspace(0, 1, 11), log_space=True)
    assert log.status[0] == Status.OVERFLOW and np.isinf(log.ys[0, -1, 0])
    nan = solve(SquareRootOfPast(), {"unused": np.zeros(2)}, 2.0, np.linspace(0, 2, 21))
    assert np.all(nan.status == Status.NONFINITE)
    assert "1.5" in nan.messages[0] or "1.50" in nan.messages[0]
    blow = solve(Quadratic(), {"c": np.array([0.25, 2.0])}, 2.0, np.linspace(0, 2, 21), log_space=False)
    assert blow.status[0] == Status.OK and blow.status[1] in (Status.OVERFLOW, Status.NONFINITE)
    np.testing.assert_allclose(blow.ys[0, :, 0], 1 / (1 - 0.25 * np.linspace(0, 2, 21)), rtol=1e-6)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(params={"a": np.array([]), "b": np.array([]), "tau2": np.array([])}), "params"),
        (dict(params={"a": np.ones(2), "b": np.ones(3), "tau2": np.ones(2)}), "params"),
        (dict(t_final=-1.0), "t_final"),
        (dict(t_final=np.ones(3)), "t_final"),
        (dict(save_times=[0.0, 2.0, 1.0]), "save_times"),
        (dict(save_times=[0.0, 5.0]), "save_times"),
        (dict(method="euler"), "method"),
        (dict(steps_per_delay=7), "steps_per_delay"),
        (dict(rtol=-1.0), "rtol"),
        (dict(params={"a": np.ones(1), "b": np.zeros(1), "tau2": np.array([-0.5])}), "delay"),
    ],
)
def test_bad_input_names_the_field(kwargs, field):
    arguments = dict(params=_linear(1.0), t_final=3.0, save_times=None)
    arguments.update(kwargs)
    params, t_final, save_times = arguments.pop("params"), arguments.pop("t_final"), arguments.pop("save_times")
    with pytest.raises(ParameterError) as info:
        solve(LinearDelay(), params, t_final, save_times, **arguments)
    assert field in str(info.value)
    assert "allowed" in str(info.value)


def test_shape_errors_are_parameter_errors():
    assert issubclass(ShapeError, ParameterError) and issubclass(ParameterError, ValueError)
