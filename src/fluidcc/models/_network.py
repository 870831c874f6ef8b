"""What the fluid models on a `Network` share: the static layout and the fixed-point solver.

`NetworkLayout` turns a `fluidcc.network.Network` into the static arrays a vector field needs:
route pairs (flow, link), the distinct round-trip times (the engine's delays: flows with the same
RTT share one delayed state) and the flows' start and stop times.

`active_set_fixed_point` solves a network model's equilibrium directly from its fluid equations.
At an equilibrium every flow obeys one link (the link whose signal is most restrictive on its
path): its equation there is zero and no other link on its path is more restrictive. Given that
assignment the equations are smooth, so they are solved by Newton's method (the Jacobian from
JAX); then the assignment is checked against the solution and corrected, until
it is consistent. The start is the max-min allocation, whose bottlenecks are usually the right
assignment already.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

from ..errors import NetworkError, ShapeError, SolverError
from ..network import Network


@dataclass(frozen=True)
class NetworkLayout:
    """Static arrays of a network for vector fields (hashable through its network)."""

    network: Network

    @property
    def n_flows(self) -> int:
        return self.network.n_flows

    @property
    def n_links(self) -> int:
        return self.network.n_links

    @functools.cached_property
    def _pairs(self) -> tuple[np.ndarray, np.ndarray]:
        flows, links = [], []
        for i in range(self.n_flows):
            for l in self.network.route_indices(i):
                flows.append(i)
                links.append(l)
        return np.asarray(flows, dtype=np.int32), np.asarray(links, dtype=np.int32)

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(flow index, link index) of every (flow, link on its route) pair, flows in order."""
        return self._pairs

    def rtts(self) -> np.ndarray:
        rtt = self.network.rtt_s
        bad = ~(rtt > 0)
        if np.any(bad):
            i = int(np.argmax(bad))
            raise NetworkError(f"flow {self.network.flows[i].name!r}: rtt", float(rtt[i]),
                               "a round-trip time > 0 s (give its links or its access a delay)")
        return rtt

    def delay_values(self) -> np.ndarray:
        """The distinct RTTs in seconds, sorted: the engine's delays."""
        return np.unique(self.rtts())

    def delay_group(self) -> np.ndarray:
        """For each flow, the index of its RTT among `delay_values`."""
        return np.searchsorted(self.delay_values(), self.rtts()).astype(np.int32)

    def active(self, t):
        """Which flows send at time t (JAX, traceable): start <= t < stop, as 0/1 floats (N,).

        Flows that start at 0 also sent before 0 (the history interval), as in the single-link models.
        """
        start = jnp.asarray(self.network.start_s)
        stop = jnp.asarray(self.network.stop_s)
        return (((t >= start) | (start <= 0.0)) & (t < stop)).astype(jnp.float64)

    def equilibrium_flows(self, at: float | None = None) -> np.ndarray:
        """Which flows an equilibrium is computed for, bool (N,): those active at time `at`
        (seconds), or by default those that never stop."""
        return self.network.active(at) if at is not None else ~np.isfinite(self.network.stop_s)

    @functools.cached_property
    def routing(self) -> np.ndarray:
        """R (L, N): 1 where flow i crosses link l. Dense: faster than scatters on a CPU for the
        network sizes fluid models run on (benchmarks/RESULTS.md, appendix, "Networks: XCP vs
        iXCP, MIAIMD parking lot", 2026-11-22)."""
        return self.network.routing_matrix

    @functools.cached_property
    def path_mask(self) -> np.ndarray:
        """(N, L) bool: True where link l is on flow i's path."""
        return self.routing.T > 0

    def link_sum(self, flow_values):
        """Sum per-flow values over the flows of each link: (N,) -> (L,), or (N, L) pair values -> (L,)."""
        values = jnp.asarray(flow_values)
        if values.ndim == 1:
            return jnp.asarray(self.routing) @ values
        return jnp.sum(jnp.where(self.path_mask, values, 0.0), axis=0)

    def flow_min(self, pair_values):
        """Minimum over each flow's links of (N, L) values -> (N,)."""
        return jnp.min(jnp.where(self.path_mask, pair_values, jnp.inf), axis=1)

    def flow_max(self, pair_values):
        """Maximum over each flow's links of (N, L) values (or link values (L,)) -> (N,)."""
        values = jnp.broadcast_to(pair_values, self.path_mask.shape)
        return jnp.max(jnp.where(self.path_mask, values, -jnp.inf), axis=1)


def link_capacities(network: Network, capacity_pps) -> np.ndarray:
    """Capacities as (L,) or (B, L) packets/s: the network's by default. A network with capacity
    schedules is refused (a fluid model takes one capacity per link: give it `network.at(t_s)`)."""
    network.require_fixed_capacities("a fluid model on a network")
    capacity = np.asarray(network.capacities_pps if capacity_pps is None else capacity_pps, dtype=np.float64)
    if capacity.ndim not in (1, 2) or capacity.shape[-1] != network.n_links:
        raise ShapeError("capacity", f"shape {capacity.shape}", f"shape (L,) or (B, L) with L = {network.n_links}")
    return capacity


def batch_with_arrays(scalars: dict[str, object], arrays: dict[str, np.ndarray]):
    """Broadcast scalars ((B,) or scalar) and per-link or per-flow arrays ((K,) or (B, K)) to one
    batch size B. Returns (scalars as (B,) arrays, the arrays as (B, K))."""
    from ._params import broadcast_batch

    extra = {f"_{name}": np.zeros(a.shape[0]) for name, a in arrays.items() if a.ndim == 2}
    batched, size = broadcast_batch(**scalars, **extra)
    for name in extra:
        batched.pop(name)
    return batched, {name: np.broadcast_to(a, (size, a.shape[-1])).copy() for name, a in arrays.items()}


@dataclass(frozen=True)
class FixedPoint:
    """An equilibrium found by `active_set_fixed_point`.

    x: the unknowns at the solution; assignment: the link (position) each flow obeys;
    residual: max |equation| at the solution (the model's own units); rounds: how many
    assignments were tried; consistent: whether the final assignment is the most restrictive
    link of every flow at the solution.
    """

    x: np.ndarray
    assignment: np.ndarray
    residual: float
    rounds: int
    consistent: bool


def active_set_fixed_point(
    equations: Callable[[jnp.ndarray, jnp.ndarray], jnp.ndarray],
    choose: Callable[[np.ndarray, np.ndarray], np.ndarray],
    x0: np.ndarray,
    assignment0: np.ndarray,
    *,
    max_rounds: int = 30,
    tol: float = 1e-11,
) -> FixedPoint:
    """Solve equations(x, assignment) = 0 for x with a self-consistent assignment.

    equations: JAX function of the unknowns and the (integer) assignment, returning as many
    equations as unknowns, scaled to be dimensionless. choose(x, assignment): the assignment the
    model's rule picks at x (given the current one, for ties). Newton's method (Jacobian by JAX,
    backtracking line search, SciPy's hybrid method as a fallback) solves each round; rounds
    stop when the rule keeps the assignment.
    """
    x = np.asarray(x0, dtype=np.float64)
    assignment = np.asarray(assignment0)
    seen = set()
    residual = np.inf
    fun = jax.jit(equations)  # compiled once: the assignment is an argument
    jac = jax.jit(jax.jacfwd(equations))
    for round_ in range(1, max_rounds + 1):
        a = jnp.asarray(assignment)
        x, residual = _newton(lambda v: fun(v, a), lambda v: jac(v, a), x, tol)
        chosen = np.asarray(choose(x, assignment))
        if np.array_equal(chosen, assignment):
            return FixedPoint(x, assignment, residual, round_, residual <= tol * max(1.0, np.max(np.abs(x))))
        key = chosen.tobytes()
        if key in seen:  # the rule cycles between assignments: report the last one
            break
        seen.add(key)
        assignment = chosen
    if not np.isfinite(residual):
        raise SolverError("the fixed-point iteration did not produce a finite solution")
    return FixedPoint(x, assignment, residual, max_rounds, False)


def _newton(fun, jac, x, tol: float, max_iterations: int = 100):
    """Newton's method with a backtracking line search on |f|^2; then SciPy's hybrid method if
    that stalls. Returns (x, max |f|)."""
    value = np.asarray(fun(x))
    norm = float(np.max(np.abs(value)))
    for _ in range(max_iterations):
        if norm <= tol:
            return x, norm
        try:
            step = np.linalg.solve(np.asarray(jac(x)), -value)
        except np.linalg.LinAlgError:
            break
        scale = 1.0
        while scale > 1e-6:
            candidate = x + scale * step
            new_value = np.asarray(fun(candidate))
            new_norm = float(np.max(np.abs(new_value)))
            if np.isfinite(new_norm) and new_norm < norm * (1 - 1e-4 * scale) or new_norm <= tol:
                break
            scale *= 0.5
        else:
            break
        x, value, norm = candidate, new_value, new_norm
    result = scipy.optimize.root(lambda v: np.asarray(fun(v)), x, jac=lambda v: np.asarray(jac(v)),
                                 method="hybr", options={"xtol": 1e-14})
    candidate_norm = float(np.max(np.abs(np.asarray(fun(result.x)))))
    return (result.x, candidate_norm) if candidate_norm < norm else (x, norm)
