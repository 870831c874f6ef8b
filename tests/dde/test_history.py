"""`WithHistory`: a system started from a tabulated history; continuing a solve exactly."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from fluidcc.dde import Status, WithHistory, history_table, solve, tabulate_history
from fluidcc.errors import ParameterError, ShapeError

from dde_systems import Hutchinson, SingleDelay  # noqa: E402

STEPS = 32


def test_a_solve_continued_from_its_last_delay_equals_one_long_run():
    """Tabulating the last delay at the RK4 nodes, with the field as slopes, continues exactly."""
    system, params = Hutchinson(), {"r": np.array([0.9, 1.4])}
    first_end = 7.0
    nodes = np.arange(2 * int(first_end) * STEPS + 1) / STEPS
    long = solve(system, params, 2 * first_end, nodes, steps_per_delay=STEPS)
    tail = nodes[(int(first_end) - 2) * STEPS: int(first_end) * STEPS + 1]  # the last two delays
    first = solve(system, params, first_end, tail, steps_per_delay=STEPS)
    now, before = first.ys[:, STEPS:], first.ys[:, :STEPS + 1]  # x(t) and x(t - 1) on the last delay
    field = jax.vmap(jax.vmap(lambda x, xd, p: system.vector_field(0.0, x, xd[None], p), in_axes=(0, 0, None)))
    table = history_table(params, 1.0, now, np.asarray(field(now, before, params)))
    continued = solve(WithHistory(system), table, first_end, nodes[: int(first_end) * STEPS + 1],
                      steps_per_delay=STEPS)
    assert np.all(continued.success)
    np.testing.assert_allclose(continued.ys, long.ys[:, int(first_end) * STEPS:], rtol=1e-12)


def test_the_tabulated_own_history_gives_the_same_solution():
    system, params = Hutchinson(), {"r": np.array([0.5, 1.2, 1.5])}
    times = np.linspace(0, 20, 81)
    plain = solve(system, params, 20.0, times, steps_per_delay=STEPS)
    tabulated = solve(WithHistory(system), tabulate_history(system, params, 1.0, 8), 20.0, times,
                      steps_per_delay=STEPS)
    np.testing.assert_array_equal(tabulated.ys, plain.ys)


def _cubic(t):
    return 2.0 + t - t**3, 1.0 - 3.0 * t**2


@pytest.mark.parametrize("method", ["rk4", "scipy"])
def test_a_cubic_history_gives_the_method_of_steps_solution(method):
    """x' = -a x(t - 1) from h(t) = 2 + t - t^3 on [-1, 0]: the Hermite table reproduces a cubic,
    and on [0, 1] x(t) = h(0) - a * integral_0^t h(s - 1) ds: RK4's step is Simpson's rule for
    this forcing, exact for a cubic, so its nodes (the save times) are exact to rounding."""
    a = np.array([0.3, 0.8])
    params = {"a": a, "tau": np.ones(2)}
    grid = np.linspace(-1.0, 0.0, 5)
    values, slopes = _cubic(grid)
    table = history_table(params, 1.0, np.broadcast_to(values[None, :, None], (2, 5, 1)),
                          np.broadcast_to(slopes[None, :, None], (2, 5, 1)))
    times = np.arange(9) / 8
    kwargs = {"steps_per_delay": 8} if method == "rk4" else {}
    sol = solve(WithHistory(SingleDelay()), table, 1.0, times, method=method, **kwargs)
    u = times - 1.0  # integral of h(s - 1) from 0 to t is H(t - 1) - H(-1), H(u) = 2u + u^2/2 - u^4/4
    antiderivative = lambda u: 2.0 * u + u**2 / 2.0 - u**4 / 4.0
    exact = 2.0 - a[:, None] * (antiderivative(u) - antiderivative(-1.0))
    assert np.all(sol.status == Status.OK)
    np.testing.assert_allclose(sol.ys[..., 0], exact, rtol=1e-12 if method == "rk4" else 1e-9)


def test_a_positive_component_is_interpolated_in_log_and_stays_positive():
    """Windows falling a thousandfold within one interval: x-Hermite would go negative, log x does not."""
    system, params = Hutchinson(), {"r": np.array([1.0])}
    values = np.array([[[1.0], [1e-3]]])
    slopes = np.array([[[-20.0], [-1e-3]]])
    history = WithHistory(system).history
    table = history_table(params, 1.0, values, slopes)
    point = jax.tree_util.tree_map(lambda leaf: leaf[0], table)
    sampled = np.asarray(jax.jit(jax.vmap(history, in_axes=(0, None)))(np.linspace(-1.0, 0.0, 41), point))[:, 0]
    assert np.all(sampled > 0)
    np.testing.assert_allclose(sampled[[0, -1]], [1.0, 1e-3], rtol=1e-12)
    assert jax.jit(history)(-3.0, point)[0] == pytest.approx(1.0)  # held before -span


@pytest.mark.parametrize(
    "change, field, error",
    [
        (dict(span_s=0.5), "span", ParameterError),
        (dict(values=np.array([[[1.0], [0.0], [1.0]]])), "values", ParameterError),
        (dict(slopes=np.array([[[0.0], [np.nan], [0.0]]])), "slopes", ParameterError),
        (dict(values=np.ones((1, 3, 2)), slopes=np.ones((1, 3, 2))), "values", ShapeError),
    ],
)
def test_a_bad_table_names_its_field(change, field, error):
    arguments = dict(span_s=1.0, values=np.ones((1, 3, 1)), slopes=np.zeros((1, 3, 1)))
    arguments.update(change)
    table = history_table({"r": np.array([1.0])}, **arguments)
    with pytest.raises(error) as info:
        solve(WithHistory(Hutchinson()), table, 1.0)
    assert info.value.field == field


def test_table_shapes_are_checked_when_built():
    with pytest.raises(ShapeError) as info:
        history_table({"r": np.array([1.0])}, 1.0, np.ones((1, 3, 1)), np.ones((1, 4, 1)))
    assert info.value.field == "slopes"
    with pytest.raises(ShapeError) as info:
        history_table({"r": np.array([1.0])}, 1.0, np.ones((2, 3, 1)), np.ones((2, 3, 1)))
    assert info.value.field == "values"
