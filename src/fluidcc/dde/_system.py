"""What the engine needs from a model: the `DDESystem` interface.

The engine integrates x'(t) = f(t, x(t), x(t - tau_1), ..., x(t - tau_K); p) for t in [0, t_final]
with x(t) = phi(t; p) for t <= 0. It knows nothing about protocols: a model says how many state
components it has, which constant delays it uses, its history and its vector field, all as pure
functions of one parameter point (the engine vmaps them over a batch).

Positive components (windows, rates) may be integrated in log coordinates z = log x. A model
chooses which, through `log_components`; it may also supply the vector field directly in those
coordinates (`vector_field_log`), which keeps it finite where x itself would overflow float64.

Components that must stay >= 0 (a queue) are marked by `nonnegative_components`: the model's
field already stops them from decreasing at 0 (q' = max(y - C, 0) when q = 0), and the engine
projects them onto [0, inf) after every step, so a step that crosses 0 cannot leave a negative
value behind. This is the projected form of the method: exact away from the times the constraint
becomes active, and of lower order across them (about 2, measured on QCP's eq. (19)).

A model may write its field once for every backend through `field_terms(t, x, x_delayed, params,
ops)`, with `ops` supplying exp, maximum, where, ...: `vector_field` evaluates it with JAX, and
`fluidcc.stability.symbolic` with SymPy, so the symbolic analysis derives from the same code the
engine integrates.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp


class DDESystem:
    """Base class of every model the engine integrates.

    Subclasses are small immutable objects (hashable: they are static arguments of jitted code).
    A parameter point is a pytree whose leaves are arrays; a batch is the same pytree with a leading
    axis on every leaf.
    """

    #: Short name used in messages and file names.
    name: str = "dde"

    def state_size(self, params: Any) -> int:
        """Number of state components n (a Python int, read from the parameter shapes)."""
        raise NotImplementedError

    def state_names(self, params: Any) -> list[str]:
        """A name for each state component, for datasets and figures."""
        return [f"x{i}" for i in range(self.state_size(params))]

    def log_components(self, params: Any) -> tuple[bool, ...]:
        """For each component, whether it is positive and may be integrated as log x."""
        return (False,) * self.state_size(params)

    def nonnegative_components(self, params: Any) -> tuple[bool, ...]:
        """For each component, whether it is kept >= 0 by projection (a queue at an empty buffer)."""
        return (False,) * self.state_size(params)

    def projection_ledger(self, params: Any) -> tuple[int, ...]:
        """For each component, the component that books what the projection at 0 adds to it (-1: none).

        A step that carries a queue below 0 served fluid that was not there; projecting the queue
        back to 0 adds that amount. A model that counts departures in a state names it here, and
        the engine subtracts the same amount from it, so arrivals = departures + queue holds to
        rounding (`fluidcc.models.rcp_network` uses it for its conservation accounting).
        """
        return (-1,) * self.state_size(params)

    def max_step(self, params: Any):
        """The largest RK4 step (seconds) the model's fastest relaxation allows, or None.

        A model with a state that relaxes at a known rate lambda (a moving average) returns about
        1 / lambda; `fluidcc.dde.solve` then takes at least tau_min / max_step steps per smallest
        delay, so the explicit method stays stable (lambda h <= 1, inside RK4's region). Evaluated
        per point (JAX, traceable); None (the default) sets no limit.
        """
        return None

    def delays(self, params: Any) -> jnp.ndarray:
        """The K constant delays of one parameter point, in seconds, shape (K,), all > 0."""
        return jnp.stack([jnp.asarray(d) for d in self.delay_terms(params)])

    def delay_terms(self, params: Any) -> list:
        """The delays as a list of scalar expressions (JAX arrays, or SymPy expressions for symbols)."""
        raise NotImplementedError

    def history(self, t: jnp.ndarray, params: Any) -> jnp.ndarray:
        """The state for t <= 0, shape (n,). Must be differentiable in t (jax.jvp is used)."""
        raise NotImplementedError

    def vector_field(
        self, t: jnp.ndarray, x: jnp.ndarray, x_delayed: jnp.ndarray, params: Any
    ) -> jnp.ndarray:
        """dx/dt at time t (seconds): x has shape (n,), x_delayed shape (K, n), x_delayed[k] = x(t - tau_k)."""
        return jnp.stack([jnp.asarray(term) for term in self.field_terms(t, x, x_delayed, params, JAX_OPS)])

    def field_terms(self, t, x, x_delayed, params: Any, ops) -> list:
        """dx/dt as a list of n scalar expressions, written with `ops` (JAX_OPS or SymPy's).

        x[i] and x_delayed[k][i] are scalars of the backend; params' fields too. Models that
        implement this get `vector_field` and the symbolic analysis from one piece of code.
        """
        raise NotImplementedError(f"{self.name} does not provide field_terms")

    def linear_form(self, t: jnp.ndarray, x_delayed: jnp.ndarray, params: Any):
        """(a, b) with dx/dt = a * x + b, for a model whose field is linear in the current state.

        t is a time in seconds, x_delayed the state one delay ago, shape (n,) (such a model has one
        delay); a and b have shape (n,), component by component. Models that provide it can be
        integrated with ``method="chebyshev"`` (`fluidcc.dde.solve`); the default says they cannot.
        """
        raise NotImplementedError(f"{self.name} does not provide linear_form")

    def vector_field_log(
        self,
        t: jnp.ndarray,
        z: jnp.ndarray,
        z_delayed: jnp.ndarray,
        params: Any,
        log_mask: jnp.ndarray,
    ) -> jnp.ndarray:
        """dz/dt in mixed coordinates z (log x where `log_mask`, x elsewhere).

        `log_mask` is a static numpy bool array of shape (n,), so a model may branch on it.

        The default converts back to x and divides by x; a model overrides it when the generic
        form would compute inf/inf where x overflows.
        """
        x = to_natural(z, log_mask)
        x_delayed = to_natural(z_delayed, log_mask)
        f = self.vector_field(t, x, x_delayed, params)
        return jnp.where(log_mask, f / jnp.where(log_mask, x, 1.0), f)

    def validate(self, params: Any) -> None:
        """Raise a `fluidcc.errors.ParameterError` for a batch with a bad value (host side)."""

    def equilibrium_state(self, params: Any):
        """The equilibrium x* of every point of a batch, natural coordinates, shape (B, n).

        Models that have one (in closed form or by root finding) override this; linear stability
        analysis linearizes `linearizable().vector_field` there.
        """
        raise NotImplementedError(f"{self.name} does not provide an equilibrium")

    def linearizable(self) -> "DDESystem":
        """The smooth form of the model that linear analysis differentiates.

        A model with non-smooth terms (a queue projected at 0, a max of rates) returns the variant
        without them, which agrees with it near an equilibrium in the interior; the default is the
        model itself.
        """
        return self


def to_natural(z: jnp.ndarray, log_mask: jnp.ndarray) -> jnp.ndarray:
    """Map mixed coordinates back to x: exp on the log components, identity elsewhere."""
    return jnp.where(log_mask, jnp.exp(jnp.where(log_mask, z, 0.0)), z)


def to_mixed(x: jnp.ndarray, log_mask: jnp.ndarray) -> jnp.ndarray:
    """Map x to mixed coordinates: log on the log components, identity elsewhere."""
    return jnp.where(log_mask, jnp.log(jnp.where(log_mask, x, 1.0)), x)


class JaxOps:
    """The operations `field_terms` may use, evaluated with JAX (SymPy's twin lives in
    `fluidcc.stability.symbolic`)."""

    exp = staticmethod(jnp.exp)
    log = staticmethod(jnp.log)
    maximum = staticmethod(jnp.maximum)
    minimum = staticmethod(jnp.minimum)

    @staticmethod
    def where(condition, if_true, if_false):
        return jnp.where(condition, if_true, if_false)

    @staticmethod
    def positive(value):
        return value > 0


JAX_OPS = JaxOps()


def projected_rate(level, net_inflow, ops):
    """d(level)/dt of a quantity kept >= 0 (a queue): net_inflow while level > 0, max(net_inflow, 0) at 0."""
    return ops.where(ops.positive(level), net_inflow, ops.maximum(net_inflow, 0.0))
