"""Solver methods as objects: names and objects give the same solutions, options are checked, an
option a method does not take is an error, and "auto" asks each method whether it can run."""

from __future__ import annotations

import numpy as np
import pytest

from fluidcc.dde import METHODS, RK4, Chebyshev, DDEint, Reference, resolve_method, solve
from fluidcc.errors import ParameterError

from dde_systems import Hutchinson, LinearDelay, Quadratic, SingleDelay

TIMES = np.linspace(0.0, 3.0, 13)
SINGLE = {"a": np.array([0.5, 1.5]), "tau": np.array([1.0, 0.7])}
LINEAR = {"a": np.ones(2), "b": np.array([0.5, 1.0]), "tau2": np.array([1.5, 2.0])}


@pytest.mark.parametrize("by_name, by_object", [
    (dict(method="rk4", steps_per_delay=16, rtol=1e-6, max_steps_per_delay=256),
     dict(method=RK4(steps_per_delay=16, max_steps_per_delay=256), rtol=1e-6)),
    (dict(method="chebyshev", nodes=8, pieces_per_delay=2), dict(method=Chebyshev(nodes=8, pieces_per_delay=2))),
    (dict(method="chebyshev", rtol=1e-9), dict(method=Chebyshev(), rtol=1e-9)),
])
def test_a_method_object_gives_the_named_methods_solution_bit_for_bit(by_name, by_object):
    named = solve(SingleDelay(), SINGLE, 3.0, TIMES, **by_name)
    held = solve(SingleDelay(), SINGLE, 3.0, TIMES, **by_object)
    np.testing.assert_array_equal(named.ys, held.ys)
    assert named.method == held.method and named.status.tolist() == held.status.tolist()


def test_the_reference_runs_as_an_object_too():
    named = solve(Hutchinson(), {"r": np.array([1.2])}, 3.0, TIMES, method="scipy")
    held = solve(Hutchinson(), {"r": np.array([1.2])}, 3.0, TIMES, method=Reference())
    np.testing.assert_array_equal(named.ys, held.ys)
    assert set(METHODS) == {"rk4", "chebyshev", "scipy", "ddeint"} and METHODS["ddeint"] is DDEint


@pytest.mark.parametrize("kwargs, field, allowed", [
    (dict(method="chebyshev", steps_per_delay=32), "steps_per_delay", "nodes, pieces_per_delay, max_pieces_per_delay"),
    (dict(method="rk4", nodes=8), "nodes", "steps_per_delay, max_steps_per_delay, log_space"),
    (dict(method="scipy", steps_per_delay=8), "steps_per_delay", "log_space"),
    (dict(method=RK4(), steps_per_delay=8), "steps_per_delay", "on the method object"),
    (dict(method=RK4(), nodes=8), "nodes", "RK4, which takes: steps_per_delay, max_steps_per_delay, log_space"),
    (dict(method="scipy", rtol=1e-6), "rtol", "fixed accuracy"),
    (dict(method="euler"), "method", "rk4, chebyshev, scipy, ddeint, auto"),
    (dict(method="rk4", batch_chunk=0), "batch_chunk", ">= 1"),
])
def test_an_option_the_method_does_not_take_is_an_error_naming_it(kwargs, field, allowed):
    with pytest.raises(ParameterError) as error:
        solve(SingleDelay(), SINGLE, 3.0, TIMES, **kwargs)
    assert error.value.field == field and allowed in error.value.allowed


@pytest.mark.parametrize("make, field", [
    (lambda: RK4(steps_per_delay=7), "steps_per_delay"),
    (lambda: RK4(max_steps_per_delay=0), "max_steps_per_delay"),
    (lambda: Chebyshev(nodes=3), "nodes"),
    (lambda: Chebyshev(pieces_per_delay=0), "pieces_per_delay"),
    (lambda: Chebyshev(max_pieces_per_delay=1.5), "max_pieces_per_delay"),
])
def test_bad_options_are_refused_when_the_method_is_made(make, field):
    with pytest.raises(ParameterError) as error:
        make()
    assert error.value.field == field


def test_auto_asks_each_method_whether_it_supports_the_system():
    assert isinstance(resolve_method("auto", SingleDelay(), SINGLE), Chebyshev)  # linear_form, one delay
    assert isinstance(resolve_method("auto", LinearDelay(), LINEAR), RK4)  # two delays
    assert isinstance(resolve_method("auto", Quadratic(), {"c": np.ones(1)}), RK4)  # no linear_form
    assert Chebyshev().supports(SingleDelay(), SINGLE) and not Chebyshev().supports(LinearDelay(), LINEAR)
    auto = solve(SingleDelay(), SINGLE, 3.0, TIMES, method="auto")
    assert auto.method == "chebyshev"
    np.testing.assert_array_equal(auto.ys, solve(SingleDelay(), SINGLE, 3.0, TIMES, method=Chebyshev()).ys)
    with pytest.raises(ParameterError, match="one delay") as error:
        solve(LinearDelay(), LINEAR, 3.0, TIMES, method=Chebyshev())
    assert error.value.field == "method"
