"""RCP on one bottleneck, in aggregate fluid form (RCP paper, eq. (2)).

Eq. (2) updates the rate R every control interval T by R(t) = R(t - T)[1 + (T/d0)(alpha (C - y) -
beta q / d0) / C]; letting T -> 0 gives, with N flows of one RTT d = d0 that all send at the rate
the router gave them one RTT ago:

    R'(t) = R(t) / (C d) [alpha (C - y(t)) - beta q(t) / d],     y(t) = N R(t - d)
    q'(t) = y(t) - C       if q > 0,    max(y(t) - C, 0)   if q = 0     (queue="projected")

Equilibrium (RCP paper, section 2.3): R* = C / N, q* = 0 — on the edge of the projection, which
is why RCP's nonlinear stability region (its Fig. 4) differs from the linear one. The paper's
gains are alpha = 0.1, beta = 1. queue="linear" drops the projection (the model linear analysis
uses). R is positive and integrated as log R.

The history is constant: R = initial_load C / N and q = initial_queue on [-d, 0].

Units: capacity and rates in packets/s, d in seconds, the queue in packets.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..dde import JAX_OPS, projected_rate
from ._params import broadcast_batch, require_nonnegative, require_positive, require_whole
from ._queue import QueueModel
from ._spec import ParameterSpec, SingleLinkModel
from .xcp import loop_parameters


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class RCPParams:
    """A batch of RCP points (every field shape (B,)).

    alpha, beta: gains, >= 0. capacity_pps: C, packets/s. rtt_s: d, seconds. n_flows: N, a whole
    number >= 1 (stored as float). initial_load: N R / C on the history interval, > 0.
    initial_queue: q on the history interval, packets, >= 0.
    """

    alpha: jax.Array
    beta: jax.Array
    capacity_pps: jax.Array
    rtt_s: jax.Array
    n_flows: jax.Array
    initial_load: jax.Array
    initial_queue: jax.Array


def _check(values) -> None:
    require_nonnegative("alpha", values["alpha"])
    require_nonnegative("beta", values["beta"])
    require_positive("capacity", values["capacity_pps"], " packets/s")
    require_positive("rtt", values["rtt_s"], " s")
    require_whole("n_flows", values["n_flows"], 1)
    require_positive("initial_load", values["initial_load"], " (fraction of capacity; the rate is positive)")
    require_nonnegative("initial_queue", values["initial_queue"], " packets")


def aggregate_params(*, capacity_pps, rtt_s, n_flows, alpha=0.1, beta=1.0, initial_load=0.5, initial_queue=0.0):
    """Build and validate a batch (the paper's defaults alpha = 0.1, beta = 1); scalars broadcast."""
    arrays, _ = broadcast_batch(alpha=alpha, beta=beta, capacity_pps=capacity_pps, rtt_s=rtt_s, n_flows=n_flows,
                                initial_load=initial_load, initial_queue=initial_queue)
    _check(arrays)
    return RCPParams(**arrays)


@dataclass(frozen=True)
class RCPAggregate(QueueModel):
    """The fluid form of eq. (2); state (rate R per flow [packets/s], queue q [packets])."""

    queue: str = "projected"
    name = "rcp_aggregate"

    def state_size(self, params) -> int:
        return 2

    def state_names(self, params) -> list[str]:
        return ["rate", "queue"]

    def log_components(self, params) -> tuple[bool, ...]:
        return (True, False)

    def nonnegative_components(self, params) -> tuple[bool, ...]:
        return (False, self.projected)

    def delay_terms(self, params) -> list:
        return [params.rtt_s]

    def history(self, t, params):
        rate = params.initial_load * params.capacity_pps / params.n_flows
        return jnp.stack([rate + 0.0 * t, params.initial_queue + 0.0 * t])

    def field_terms(self, t, x, x_delayed, params, ops) -> list:
        rate, queue = x[0], x[1]
        arrival = params.n_flows * x_delayed[0][0]  # y(t) = N R(t - d)
        d, capacity = params.rtt_s, params.capacity_pps
        d_rate = rate / (capacity * d) * (params.alpha * (capacity - arrival) - params.beta * queue / d)
        excess = arrival - capacity
        d_queue = projected_rate(queue, excess, ops) if self.projected else excess
        return [d_rate, d_queue]

    def vector_field_log(self, t, z, z_delayed, params, log_mask):
        if not log_mask[0]:
            return super().vector_field_log(t, z, z_delayed, params, log_mask)
        # R' is R times a term free of R(t): d(log R)/dt is the field at R(t) = 1, finite for any
        # finite log R (the generic R' / R would be 0/0 where R underflows).
        delayed = [[jnp.exp(z_delayed[0, 0]), z_delayed[0, 1]]]
        d_log_rate, d_queue = self.field_terms(t, [1.0, z[1]], delayed, params, JAX_OPS)
        return jnp.stack([d_log_rate, d_queue])

    def validate(self, params) -> None:
        _check({f: np.asarray(getattr(params, f)) for f in RCPParams.__dataclass_fields__})

    def equilibrium_state(self, params) -> np.ndarray:
        """(R*, q*) = (C / N, 0), shape (B, 2)."""
        rate = np.asarray(params.capacity_pps, dtype=np.float64) / np.asarray(params.n_flows, dtype=np.float64)
        rate = rate.reshape(-1)
        return np.stack([rate, np.zeros_like(rate)], axis=1)


def _single_link_aggregate(values):
    params = aggregate_params(
        alpha=values["alpha"], beta=values["beta"], capacity_pps=values["capacity"], rtt_s=values["rtt"],
        n_flows=values["flows"], initial_load=values["initial_load"], initial_queue=values["initial_queue"],
    )
    return RCPAggregate(), params


SINGLE_LINK = SingleLinkModel(
    name="rcp",
    description="RCP's rate update, RCP paper eq. (2), in fluid form on one bottleneck, queue kept >= 0",
    parameters=loop_parameters(0.1, 1.0)[:4] + (
        ParameterSpec("flows", "count", 50, "number of flows N", "n_flows", range=">= 1"),
        ParameterSpec("initial_load", "number", 0.5, "N R / C on [-d, 0] (start-up), > 0", range="> 0"),
        ParameterSpec("initial_queue", "number", 0.0, "queue on [-d, 0], packets", range=">= 0"),
    ),
    aggregate=_single_link_aggregate,
    observed="rate",
    observed_unit="packets/s",
)
