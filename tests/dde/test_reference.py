"""The SciPy reference solver and the ddeint backend against exact solutions of tiny DDEs."""

from __future__ import annotations

import numpy as np
import pytest

from fluidcc.dde import Status
from fluidcc.dde._reference import solve_ddeint, solve_reference

from dde_systems import (  # noqa: E402
    Growth, Hutchinson, LinearDelay, Quadratic, SquareRootOfPast, exact_single_delay, exact_two_delays,
)


def test_single_delay_matches_method_of_steps():
    a = np.array([0.5, 1.0, 2.0])
    params = {"a": a, "b": np.zeros(3), "tau2": np.full(3, 1.0)}
    times = np.linspace(0.0, 3.0, 61)
    ys, status, messages = solve_reference(LinearDelay(), params, 3.0, times)
    assert ys.shape == (3, 61, 1)
    assert np.all(status == Status.OK) and all(m == "" for m in messages)
    for b in range(3):
        exact = exact_single_delay(a[b], times)
        scale = np.max(np.abs(exact))
        np.testing.assert_allclose(ys[b, :, 0], exact, rtol=1e-9, atol=1e-9 * scale)


def test_two_delays_match_method_of_steps():
    params = {"a": np.array([0.8]), "b": np.array([0.6]), "tau2": np.array([0.7])}
    times = np.linspace(0.0, 4.0, 81)
    ys, status, _ = solve_reference(LinearDelay(), params, 4.0, times)
    exact = exact_two_delays(0.8, 0.6, times, 4.0)
    assert status[0] == Status.OK
    np.testing.assert_allclose(ys[0, :, 0], exact, rtol=1e-10, atol=1e-10 * np.max(np.abs(exact)))


def test_per_point_end_times_and_save_grids():
    a = np.array([0.5, 2.0])
    params = {"a": a, "b": np.zeros(2), "tau2": np.ones(2)}
    times = np.array([[0.0, 0.5, 1.5, 2.0], [0.25, 1.0, 2.5, 3.0]])
    ys, status, _ = solve_reference(LinearDelay(), params, np.array([2.0, 3.0]), times)
    assert np.all(status == Status.OK)
    for b in range(2):
        np.testing.assert_allclose(ys[b, :, 0], exact_single_delay(a[b], times[b]), rtol=1e-9, atol=1e-10)


def test_log_space_agrees_with_linear_space():
    params = {"r": np.array([0.5, 1.2, 1.8])}
    times = np.linspace(0.0, 20.0, 201)
    log_ys, log_status, _ = solve_reference(Hutchinson(), params, 20.0, times, log_space=True)
    lin_ys, lin_status, _ = solve_reference(Hutchinson(), params, 20.0, times, log_space=False)
    assert np.all(log_status == Status.OK) and np.all(lin_status == Status.OK)
    assert np.all(log_ys > 0)
    np.testing.assert_allclose(log_ys, lin_ys, rtol=1e-8)


@pytest.mark.parametrize("log_space", [True, False])
def test_blow_up_is_a_status_not_an_exception(log_space):
    params = {"c": np.array([0.1, 1.0])}  # point 0 blows up at t = 10 s, after t_final
    times = np.linspace(0.0, 2.0, 21)
    ys, status, messages = solve_reference(Quadratic(), params, 2.0, times, log_space=log_space)
    assert status[0] == Status.OK
    np.testing.assert_allclose(ys[0, :, 0], 1.0 / (1.0 - 0.1 * times), rtol=1e-9)
    # Near t = 1 s the solution is finite but grows faster than any step can follow, so DOP853
    # gives up ("solver failed") before x reaches the float64 range; either way it is data.
    assert status[1] in (Status.OVERFLOW, Status.NONFINITE, Status.SOLVER_FAILED)
    assert "t = 1 s" in messages[1] or "t = 0.99" in messages[1]
    before, after = times < 0.95, times > 1.0
    np.testing.assert_allclose(ys[1, before, 0], 1.0 / (1.0 - times[before]), rtol=1e-8)
    assert np.all(np.isnan(ys[1, after, 0]))


def test_overflow_of_exp_in_log_space_keeps_integrating():
    params = {"g": np.array([1000.0])}
    times = np.linspace(0.0, 1.0, 11)
    ys, status, messages = solve_reference(Growth(), params, 1.0, times)
    assert status[0] == Status.OVERFLOW
    assert "0.70978" in messages[0]  # log(float64 max) / 1000 s
    assert np.all(np.isinf(ys[0, times > 0.71, 0]))
    np.testing.assert_allclose(ys[0, times < 0.7, 0], np.exp(1000.0 * times[times < 0.7]), rtol=1e-9)


def test_nan_in_the_vector_field_is_non_finite():
    params = {"unused": np.array([0.0])}
    times = np.linspace(0.0, 2.0, 21)
    ys, status, messages = solve_reference(SquareRootOfPast(), params, 2.0, times)
    assert status[0] == Status.NONFINITE
    assert "t = 1.5 s" in messages[0]
    np.testing.assert_allclose(ys[0, times <= 1.0, 0], 1.0 - 2.0 * times[times <= 1.0], atol=1e-10)
    assert np.all(np.isnan(ys[0, times > 1.5, 0]))


def test_ddeint_backend_is_roughly_right_on_the_linear_equation():
    a = np.array([0.5, 1.0])
    params = {"a": a, "b": np.zeros(2), "tau2": np.ones(2)}
    times = np.linspace(0.0, 3.0, 31)
    ys, status, messages = solve_ddeint(LinearDelay(), params, 3.0, times)
    assert np.all(status == Status.OK), messages
    for b in range(2):
        np.testing.assert_allclose(ys[b, :, 0], exact_single_delay(a[b], times), atol=1e-2)
