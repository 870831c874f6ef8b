"""What the engine needs from a model: the `DDESystem` interface.

The engine integrates x'(t) = f(t, x(t), x(t - tau_1), ..., x(t - tau_K); p) for t in [0, t_final]
with x(t) = phi(t; p) for t <= 0. It knows nothing about protocols: a model says how many state
components it has, which constant delays it uses, its history and its vector field, all as pure
functions of one parameter point (the engine vmaps them over a batch).

Positive components (windows, rates) may be integrated in log coordinates z = log x. A model
chooses which, through `log_components`; it may also supply the vector field directly in those
coordinates (`vector_field_log`), which keeps it finite where x itself would overflow float64.
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

    def delays(self, params: Any) -> jnp.ndarray:
        """The K constant delays of one parameter point, in seconds, shape (K,), all > 0."""
        raise NotImplementedError

    def history(self, t: jnp.ndarray, params: Any) -> jnp.ndarray:
        """The state for t <= 0, shape (n,). Must be differentiable in t (jax.jvp is used)."""
        raise NotImplementedError

    def vector_field(
        self, t: jnp.ndarray, x: jnp.ndarray, x_delayed: jnp.ndarray, params: Any
    ) -> jnp.ndarray:
        """dx/dt at time t (seconds): x has shape (n,), x_delayed shape (K, n), x_delayed[k] = x(t - tau_k)."""
        raise NotImplementedError

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
