"""Linearization of a model at its equilibrium, linear stability maps and boundaries.

For a model x'(t) = f(x(t), x(t - tau_1), ..., x(t - tau_K); p) with equilibrium x*
(f(x*, x*, ..., x*) = 0), the linearization is

    u'(t) = A_0 u(t) + sum_k A_k u(t - tau_k),   A_0 = df/dx,  A_k = df/dx(t - tau_k)  at x*,

obtained here by forward-mode automatic differentiation of the model's own `vector_field` (its
`linearizable()` variant: the smooth field without projections), jitted and vmapped over a batch.
`fluidcc.stability.symbolic` derives the same matrices with SymPy; the tests check one against the
other. The models are autonomous; the field is evaluated at t = 0.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..dde import DDESystem, batch_size
from ..errors import ParameterError
from .linear import CharacteristicRoots, characteristic_roots


@dataclass(frozen=True)
class Linearization:
    """The linear DDE of a batch of points.

    equilibrium: (B, n) x*, natural coordinates. a0: (B, n, n) and a_delayed: (B, K, n, n), 1/s.
    delays: (B, K) seconds. residual: (B,) max |f(x*, x*)| / max(|x*|, 1) per point, in 1/s — a check
    that x* is an equilibrium of the field being linearized.
    """

    equilibrium: np.ndarray
    a0: np.ndarray
    a_delayed: np.ndarray
    delays: np.ndarray
    residual: np.ndarray


@functools.lru_cache(maxsize=32)
def _jacobians(system: DDESystem):
    def one(x, params):
        delays = system.delays(params)
        x_delayed = jnp.broadcast_to(x, (delays.shape[0],) + x.shape)

        def field(state, delayed):
            return system.vector_field(jnp.zeros(()), state, delayed, params)

        f = field(x, x_delayed)
        a0 = jax.jacfwd(field, argnums=0)(x, x_delayed)
        ad = jax.jacfwd(field, argnums=1)(x, x_delayed)  # (n, K, n)
        return f, a0, jnp.transpose(ad, (1, 0, 2)), delays

    return jax.jit(jax.vmap(one))


def linearize(system: DDESystem, params: Any, equilibrium: np.ndarray | None = None) -> Linearization:
    """Linearize `system.linearizable()` at its equilibrium for every point of a batch.

    equilibrium: (B, n) natural coordinates; by default `system.equilibrium_state(params)`.
    """
    smooth = system.linearizable()
    size = batch_size(params)
    if size == 0:
        raise ParameterError("params", "an empty batch", "a batch of at least one point")
    if equilibrium is None:
        equilibrium = smooth.equilibrium_state(params)
    x_star = np.asarray(equilibrium, dtype=np.float64)
    n = smooth.state_size(params)
    if x_star.shape != (size, n):
        raise ParameterError("equilibrium", f"shape {x_star.shape}", f"shape ({size}, {n}): one state per point")
    f, a0, ad, delays = (np.asarray(v) for v in _jacobians(smooth)(jnp.asarray(x_star), params))
    residual = np.max(np.abs(f), axis=1) / np.maximum(np.max(np.abs(x_star), axis=1), 1.0)
    return Linearization(equilibrium=x_star, a0=a0, a_delayed=ad, delays=delays, residual=residual)


def linear_roots(system: DDESystem, params: Any, **options) -> tuple[Linearization, CharacteristicRoots]:
    """Linearize every point and compute its rightmost characteristic roots.

    options go to `fluidcc.stability.linear.characteristic_roots` (e.g. guarantee_from=0.0 for
    a stability verdict only).
    """
    lin = linearize(system, params)
    return lin, characteristic_roots(lin.a0, lin.a_delayed, lin.delays, **options)


def linear_boundary(
    build: Callable[[np.ndarray], tuple[DDESystem, Any]],
    low,
    high,
    *,
    xtol: float = 1e-12,
    max_iterations: int = 200,
) -> np.ndarray:
    """The parameter value where the spectral abscissa crosses zero, for a batch of lines.

    build(values) returns (system, params) for a batch of parameter values (B,) along each line
    (every other parameter fixed per line). low and high (B,) bracket one crossing: the abscissa
    must have opposite signs there. Solved by bisection on the sign of the abscissa to a relative
    width `xtol` (the abscissa is continuous in the parameter). Lines without a sign change give
    NaN.
    """
    low = np.array(low, dtype=np.float64, copy=True)
    high = np.array(high, dtype=np.float64, copy=True)
    low, high = np.broadcast_arrays(low, high)
    low, high = low.copy(), high.copy()

    def abscissa(values):
        system, params = build(values)
        _, roots = linear_roots(system, params, guarantee_from=0.0)
        return roots.abscissa

    at_low, at_high = abscissa(low), abscissa(high)
    valid = np.sign(at_low) != np.sign(at_high)
    stable_low = at_low < 0
    for _ in range(max_iterations):
        width = np.abs(high - low)
        if np.all(~valid | (width <= xtol * np.maximum(np.abs(low), np.abs(high)))):
            break
        mid = 0.5 * (low + high)
        stable_mid = abscissa(mid) < 0
        same = stable_mid == stable_low
        low = np.where(valid & same, mid, low)
        high = np.where(valid & ~same, mid, high)
    return np.where(valid, 0.5 * (low + high), np.nan)
