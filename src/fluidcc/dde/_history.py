"""Any history, and continuing a solve: `WithHistory`, a system whose history is a table.

A model's own history is a formula (MIAIMD's windows are constant on [-T, 0]). `WithHistory(system)`
integrates the same `system` from the history held in a `HistoryTable`: states and their time
derivatives at the nodes of a uniform grid over [-span, 0], one table per point of the batch,
read between nodes by cubic Hermite interpolation. The interpolation is done in the coordinates
the system integrates in: log x for its positive components (`DDESystem.log_components`), so a
positive table gives a positive history, and x for the others. Before -span the history holds the
value at -span (the engine may evaluate it there; it never reads it when span >= the largest delay,
which `validate` requires).

**Continuing a solve exactly.** The RK4 method keeps, as its past, the state and the vector field
at its nodes (step h = tau / M for one delay tau and M steps per delay) and interpolates them by
the same cubic Hermite polynomials. Tabulate a solution's last delay at its nodes, with the vector
field there as the slopes, and solve on with the same steps per delay: the continued run stores the
nodes and derivatives one long run would have stored, so it equals the long run to rounding (a
test pins it at 1e-12). The model may change between the two (a new parameter value takes effect
at the switch; the table's slopes are the old field's, the left derivative). A table on another
grid is a fourth-order accurate approximation of the past it samples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ParameterError, ShapeError
from ._batching import batch_size, host_delays
from ._system import DDESystem


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class HistoryTable:
    """A batch of histories for `WithHistory`, with the wrapped system's parameters.

    params: the wrapped system's parameter batch (leading axis B).
    span_s: how far back the table reaches, seconds, shape (B,); its G + 1 nodes are at
        t_g = -span + g span / G, g = 0 .. G (the last at t = 0).
    values: the state at the nodes, natural units, shape (B, G + 1, n).
    slopes: its time derivative at the nodes (units per second), shape (B, G + 1, n).
    """

    params: Any
    span_s: jax.Array
    values: jax.Array
    slopes: jax.Array


def history_table(params, span_s, values, slopes) -> HistoryTable:
    """A `HistoryTable` from arrays (span_s a scalar or (B,)); shapes are checked here, values
    against the system by `WithHistory.validate`."""
    size = batch_size(params)
    values = np.asarray(values, dtype=np.float64)
    slopes = np.asarray(slopes, dtype=np.float64)
    if values.ndim != 3 or values.shape[0] != size or values.shape[1] < 2:
        raise ShapeError("values", f"shape {values.shape}", f"shape ({size}, G + 1, n), G >= 1 intervals")
    if slopes.shape != values.shape:
        raise ShapeError("slopes", f"shape {slopes.shape}", f"the shape of values, {values.shape}")
    span = np.asarray(span_s, dtype=np.float64)
    span = np.full(size, float(span)) if span.ndim == 0 else span
    if span.shape != (size,):
        raise ShapeError("span", f"shape {span.shape}", f"a scalar or shape ({size},)")
    return HistoryTable(params=params, span_s=span, values=values, slopes=slopes)


def tabulate_history(system: DDESystem, params, span_s, intervals: int) -> HistoryTable:
    """The system's own history sampled on `intervals` + 1 nodes over [-span, 0] (span_s in
    seconds, a scalar or (B,)), its slopes by differentiation: a table to edit, or to start from."""
    if isinstance(intervals, bool) or not isinstance(intervals, (int, np.integer)) or intervals < 1:
        raise ParameterError("intervals", intervals, "a whole number >= 1")
    size = batch_size(params)
    span = np.broadcast_to(np.asarray(span_s, dtype=np.float64), (size,))
    times = span[:, None] * (np.arange(intervals + 1) / intervals - 1.0)

    def one(t, point):
        return jax.jvp(lambda s: system.history(s, point), (t,), (jnp.ones_like(t),))

    values, slopes = jax.vmap(jax.vmap(one, in_axes=(0, None)))(jnp.asarray(times), params)
    return history_table(params, span, values, slopes)


@dataclass(frozen=True)
class WithHistory(DDESystem):
    """`system` started from the history of a `HistoryTable` (module docstring); its parameters
    are the table, which carries the system's own. Everything but the history is the system's."""

    system: DDESystem

    @property
    def name(self) -> str:
        return f"{self.system.name} (tabulated history)"

    def state_size(self, params: HistoryTable) -> int:
        return self.system.state_size(params.params)

    def state_names(self, params: HistoryTable) -> list[str]:
        return self.system.state_names(params.params)

    def log_components(self, params: HistoryTable) -> tuple[bool, ...]:
        return self.system.log_components(params.params)

    def nonnegative_components(self, params: HistoryTable) -> tuple[bool, ...]:
        return self.system.nonnegative_components(params.params)

    def projection_ledger(self, params: HistoryTable) -> tuple[int, ...]:
        return self.system.projection_ledger(params.params)

    def max_step(self, params: HistoryTable):
        return self.system.max_step(params.params)

    def delays(self, params: HistoryTable):
        return self.system.delays(params.params)

    def delay_terms(self, params: HistoryTable) -> list:
        return self.system.delay_terms(params.params)

    def history(self, t, params: HistoryTable):
        log_mask = np.asarray(self.system.log_components(params.params), dtype=bool)
        values, slopes = params.values, params.slopes
        # the interpolated coordinates: log x (slope x'/x) on the positive components
        z = jnp.where(log_mask, jnp.log(jnp.where(log_mask, values, 1.0)), values)
        dz = jnp.where(log_mask, slopes / jnp.where(log_mask, values, 1.0), slopes)
        intervals = values.shape[0] - 1
        step = params.span_s / intervals
        position = (t + params.span_s) / step
        # held outside [0, G] (not jnp.clip: at a tie it passes half the derivative, and t = 0 is one)
        position = jnp.where(position < 0.0, 0.0, jnp.where(position > intervals, float(intervals), position))
        index = jnp.clip(jnp.floor(position), 0, intervals - 1).astype(jnp.int32)
        theta = position - index
        t2, t3 = theta * theta, theta * theta * theta
        # cubic Hermite basis on [t_index, t_index + step]
        mixed = ((2.0 * t3 - 3.0 * t2 + 1.0) * z[index] + (t3 - 2.0 * t2 + theta) * step * dz[index]
                 + (3.0 * t2 - 2.0 * t3) * z[index + 1] + (t3 - t2) * step * dz[index + 1])
        return jnp.where(log_mask, jnp.exp(jnp.where(log_mask, mixed, 0.0)), mixed)

    def vector_field(self, t, x, x_delayed, params: HistoryTable):
        return self.system.vector_field(t, x, x_delayed, params.params)

    def field_terms(self, t, x, x_delayed, params: HistoryTable, ops) -> list:
        return self.system.field_terms(t, x, x_delayed, params.params, ops)

    def linear_form(self, t, x_delayed, params: HistoryTable):
        return self.system.linear_form(t, x_delayed, params.params)

    def vector_field_log(self, t, z, z_delayed, params: HistoryTable, log_mask):
        return self.system.vector_field_log(t, z, z_delayed, params.params, log_mask)

    def validate(self, params: HistoryTable) -> None:
        """The system's checks, then the table's: finite, positive on the positive components,
        reaching back at least the largest delay of its point."""
        self.system.validate(params.params)
        size = batch_size(params.params)
        point = jax.tree_util.tree_map(lambda a: a[0], params.params)
        n = self.system.state_size(point)
        values, slopes = np.asarray(params.values), np.asarray(params.slopes)
        if values.shape[0] != size or values.ndim != 3 or values.shape[1] < 2 or values.shape[2] != n:
            raise ShapeError("values", f"shape {values.shape}", f"shape ({size}, G + 1, {n}), G >= 1 intervals")
        if slopes.shape != values.shape:
            raise ShapeError("slopes", f"shape {slopes.shape}", f"the shape of values, {values.shape}")
        for name, array in (("values", values), ("slopes", slopes)):
            if not np.all(np.isfinite(array)):
                raise ParameterError(name, array[~np.isfinite(array)][0], "finite numbers in the history table")
        positive = np.asarray(self.system.log_components(point), dtype=bool)
        low = values[..., positive]
        if np.any(low <= 0):
            raise ParameterError("values", float(low[low <= 0][0]),
                                 "> 0 on the components the system keeps positive")
        span = np.asarray(params.span_s, dtype=np.float64)
        longest = np.max(host_delays(self.system, params.params), axis=1)
        short = ~(np.isfinite(span) & (span >= longest * (1 - 1e-12)))
        if np.any(short):
            b = int(np.argmax(short))
            raise ParameterError("span", float(span[b]),
                                 f">= the largest delay, {longest[b]:.6g} s (point {b} of the batch)")

    def equilibrium_state(self, params: HistoryTable):
        return self.system.equilibrium_state(params.params)

    def linearizable(self) -> DDESystem:
        return self.system.linearizable()
