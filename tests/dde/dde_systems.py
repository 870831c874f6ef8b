"""Tiny DDE systems with known solutions, shared by the engine and reference tests."""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np
from numpy.polynomial import Polynomial

from fluidcc.dde import DDESystem


@dataclass(frozen=True)
class LinearDelay(DDESystem):
    """x'(t) = -a x(t - 1) - b x(t - tau2), x = 1 on [-max delay, 0]; params {"a", "b", "tau2"}."""

    name: str = "linear-delay"

    def state_size(self, params):
        return 1

    def delays(self, params):
        return jnp.stack([jnp.asarray(1.0), params["tau2"]])

    def history(self, t, params):
        return jnp.ones(1)

    def vector_field(self, t, x, x_delayed, params):
        return -params["a"] * x_delayed[0] - params["b"] * x_delayed[1]


@dataclass(frozen=True)
class Hutchinson(DDESystem):
    """x'(t) = r x(t) (1 - x(t - 1)), x = 0.5 on [-1, 0]; params {"r"}; x stays positive."""

    name: str = "hutchinson"

    def state_size(self, params):
        return 1

    def log_components(self, params):
        return (True,)

    def delays(self, params):
        return jnp.ones(1)

    def history(self, t, params):
        return jnp.full(1, 0.5)

    def vector_field(self, t, x, x_delayed, params):
        return params["r"] * x * (1.0 - x_delayed[0])

    def linear_form(self, t, x_delayed, params):
        return params["r"] * (1.0 - x_delayed), jnp.zeros(1)


@dataclass(frozen=True)
class Quadratic(DDESystem):
    """x'(t) = c x(t)^2, x = 1 on [-1, 0] (the delay is unused): blows up at t = 1 / c."""

    name: str = "quadratic"

    def state_size(self, params):
        return 1

    def log_components(self, params):
        return (True,)

    def delays(self, params):
        return jnp.ones(1)

    def history(self, t, params):
        return jnp.ones(1)

    def vector_field(self, t, x, x_delayed, params):
        return params["c"] * x**2


@dataclass(frozen=True)
class Growth(DDESystem):
    """x'(t) = g x(t), x = 1 on [-1, 0]: exp(g t) overflows float64 at t = 709.78 / g."""

    name: str = "growth"

    def state_size(self, params):
        return 1

    def log_components(self, params):
        return (True,)

    def delays(self, params):
        return jnp.ones(1)

    def history(self, t, params):
        return jnp.ones(1)

    def vector_field(self, t, x, x_delayed, params):
        return params["g"] * x

    def vector_field_log(self, t, z, z_delayed, params, log_mask):
        # The generic form computes g x / x, which is inf / inf = NaN once x overflows.
        return jnp.where(log_mask, params["g"], params["g"] * z)

    def linear_form(self, t, x_delayed, params):
        return jnp.full(1, params["g"]), jnp.zeros(1)


@dataclass(frozen=True)
class SquareRootOfPast(DDESystem):
    """x'(t) = sqrt(x(t - 1)) - 3, x = 1 on [-1, 0]: x = 1 - 2t on [0, 1], so the square root
    of a negative number (NaN) appears at t = 1.5."""

    name: str = "sqrt-past"

    def state_size(self, params):
        return 1

    def delays(self, params):
        return jnp.ones(1)

    def history(self, t, params):
        return jnp.ones(1)

    def vector_field(self, t, x, x_delayed, params):
        return jnp.sqrt(x_delayed[0]) - 3.0 + 0.0 * params["unused"]

    def linear_form(self, t, x_delayed, params):
        return jnp.zeros(1), jnp.sqrt(x_delayed) - 3.0 + 0.0 * params["unused"]


@dataclass(frozen=True)
class SingleDelay(DDESystem):
    """x'(t) = -a x(t - tau), x = 1 on [-tau, 0]; params {"a", "tau"}. With tau = 1 the solution
    is `exact_single_delay`; in the `linear_form` the delayed state is the forcing."""

    name: str = "single-delay"

    def state_size(self, params):
        return 1

    def delays(self, params):
        return jnp.reshape(params["tau"], (1,))

    def history(self, t, params):
        return jnp.ones(1)

    def vector_field(self, t, x, x_delayed, params):
        return -params["a"] * x_delayed[0]

    def linear_form(self, t, x_delayed, params):
        return jnp.zeros(1), -params["a"] * x_delayed


def exact_single_delay(a: float, t: np.ndarray) -> np.ndarray:
    """x' = -a x(t - 1), x = 1 on [-1, 0], by the method of steps on [0, 3]."""
    x = 1.0 - a * t
    x = x + np.where(t > 1, a**2 * (t - 1) ** 2 / 2, 0.0)
    x = x - np.where(t > 2, a**3 * (t - 2) ** 3 / 6, 0.0)
    return x


def exact_two_delays(a: float, b: float, t: np.ndarray, t_final: float) -> np.ndarray:
    """x' = -a x(t - 1) - b x(t - 0.7), x = 1 before 0: exact polynomials on pieces of 0.1 s."""
    h, lag1, lag2 = 0.1, 10, 7  # the delays in pieces
    pieces = []  # piece k: x(k h + u) = pieces[k](u) for u in [0, h]
    one = Polynomial([1.0])
    for k in range(int(round(t_final / h))):
        past1 = pieces[k - lag1] if k >= lag1 else one
        past2 = pieces[k - lag2] if k >= lag2 else one
        start = pieces[-1](h) if pieces else 1.0
        pieces.append((-a * past1 - b * past2).integ(k=[0.0]) + start)
    index = np.minimum((t / h).astype(int), len(pieces) - 1)
    return np.array([pieces[k](ti - k * h) for k, ti in zip(index, t)])
