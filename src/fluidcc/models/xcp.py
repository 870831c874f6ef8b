"""XCP's efficiency loop on one bottleneck, in aggregate form (XCP, SIGCOMM 2002, section 4).

The router's efficiency controller asks for an aggregate feedback phi = alpha d (C - y) - beta q
per control interval d (the average RTT); the sources apply it one RTT later, so the aggregate
input rate y (packets/s) and the queue q (packets) obey

    y'(t) = -(alpha / d) (y(t - d) - C) - (beta / d^2) q(t - d)
    q'(t) = y(t) - C                                  (queue="linear", the model XCP analyses)
    q'(t) = y(t) - C if q > 0, max(y(t) - C, 0) if q = 0      (queue="projected")

The equilibrium is y* = C, q* = 0. XCP's theorem: the linear system is stable for
0 < alpha < pi / (4 sqrt 2) and beta = alpha^2 sqrt 2; the paper's defaults are alpha = 0.4,
beta = 0.226. By default the queue is the linear one XCP's analysis uses (it may go negative,
which a real buffer cannot); queue="projected" keeps it >= 0, which changes the dynamics wherever
the queue empties (QCP's eq. (19) is this projected loop, `fluidcc.models.qcp`).

The history is constant: y = initial_load C and q = initial_queue on [-d, 0].

Units: capacity and rates in packets/s, the delay d in seconds, the queue in packets; alpha and
beta are dimensionless.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .. import units

from ..dde import projected_rate
from ._params import broadcast_batch, require_nonnegative, require_positive
from ._queue import QueueModel
from ._spec import ParameterSpec, SingleLinkModel


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class EfficiencyLoopParams:
    """A batch of points of the aggregate efficiency loop (every field shape (B,)).

    alpha, beta: controller gains, >= 0 (dimensionless). capacity_pps: C in packets/s.
    rtt_s: the control interval and feedback delay d, seconds. initial_load: y / C on the history
    interval, >= 0. initial_queue: q on the history interval, packets, >= 0.
    """

    alpha: jax.Array
    beta: jax.Array
    capacity_pps: jax.Array
    rtt_s: jax.Array
    initial_load: jax.Array
    initial_queue: jax.Array


def loop_params(*, alpha, beta, capacity_pps, rtt_s, initial_load=0.5, initial_queue=0.0) -> EfficiencyLoopParams:
    """Build and validate a batch; scalars broadcast to the batch."""
    arrays, _ = broadcast_batch(alpha=alpha, beta=beta, capacity_pps=capacity_pps, rtt_s=rtt_s,
                                initial_load=initial_load, initial_queue=initial_queue)
    check_loop(arrays)
    return EfficiencyLoopParams(**arrays)


def check_loop(values) -> None:
    """Range checks of an efficiency-loop batch given as a mapping of field -> array."""
    require_nonnegative("alpha", values["alpha"])
    require_nonnegative("beta", values["beta"])
    require_positive("capacity", values["capacity_pps"], " packets/s")
    require_positive("rtt", values["rtt_s"], " s")
    require_nonnegative("initial_load", values["initial_load"], " (fraction of capacity)")
    require_nonnegative("initial_queue", values["initial_queue"], " packets")


def aggregate_params(*, capacity_pps, rtt_s, alpha=0.4, beta=0.226, initial_load=0.5, initial_queue=0.0):
    """XCP's efficiency loop with the paper's defaults alpha = 0.4, beta = 0.226."""
    return loop_params(alpha=alpha, beta=beta, capacity_pps=capacity_pps, rtt_s=rtt_s,
                       initial_load=initial_load, initial_queue=initial_queue)


@dataclass(frozen=True)
class EfficiencyLoop(QueueModel):
    """The aggregate loop above; state (queue q [packets], input rate y [packets/s]).

    queue: "linear" (q' = y - C, may go negative) or "projected" (q kept >= 0).
    """

    queue: str = "linear"
    name = "efficiency_loop"

    def state_size(self, params) -> int:
        return 2

    def state_names(self, params) -> list[str]:
        return ["queue", "rate"]

    def nonnegative_components(self, params) -> tuple[bool, ...]:
        return (self.projected, False)

    def delay_terms(self, params) -> list:
        return [params.rtt_s]

    def history(self, t, params):
        return jnp.stack([params.initial_queue + 0.0 * t, params.initial_load * params.capacity_pps + 0.0 * t])

    def field_terms(self, t, x, x_delayed, params, ops) -> list:
        queue, rate = x[0], x[1]
        queue_delayed, rate_delayed = x_delayed[0][0], x_delayed[0][1]
        d, capacity = params.rtt_s, params.capacity_pps
        d_rate = -(params.alpha / d) * (rate_delayed - capacity) - (params.beta / d**2) * queue_delayed
        excess = rate - capacity
        d_queue = projected_rate(queue, excess, ops) if self.projected else excess
        return [d_queue, d_rate]

    def validate(self, params) -> None:
        check_loop({f: np.asarray(getattr(params, f)) for f in EfficiencyLoopParams.__dataclass_fields__})

    def equilibrium_state(self, params) -> np.ndarray:
        """(q*, y*) = (0, C) for every point, shape (B, 2)."""
        capacity = np.asarray(params.capacity_pps, dtype=np.float64).reshape(-1)
        return np.stack([np.zeros_like(capacity), capacity], axis=1)


@dataclass(frozen=True)
class XCPAggregate(EfficiencyLoop):
    """XCP's efficiency loop (linear queue by default, as in XCP's stability analysis)."""

    queue: str = "linear"
    name = "xcp_aggregate"


def theorem_condition(alpha) -> np.ndarray:
    """XCP's sufficient condition: beta = alpha^2 sqrt(2) for 0 < alpha < pi / (4 sqrt 2); NaN outside."""
    alpha = np.asarray(alpha, dtype=np.float64)
    inside = (alpha > 0) & (alpha < np.pi / (4.0 * np.sqrt(2.0)))
    return np.where(inside, alpha**2 * np.sqrt(2.0), np.nan)


def loop_parameters(alpha: float, beta: float) -> tuple[ParameterSpec, ...]:
    """The user-facing parameters of an aggregate loop with gains (alpha, beta) by default."""
    return (
        ParameterSpec("alpha", "number", alpha, "gain on the spare capacity alpha >= 0", range=">= 0"),
        ParameterSpec("beta", "number", beta, "gain on the queue beta >= 0", range=">= 0"),
        ParameterSpec("capacity", "rate", units.mbps_to_pps(150.0), "link capacity C (default 150Mbps)",
                      "capacity_pps", range="> 0"),
        ParameterSpec("rtt", "time", 0.08, "round-trip time = control interval d (default 80ms)", "rtt_s",
                      range="> 0"),
        ParameterSpec("initial_load", "number", 0.5, "aggregate rate / C on [-d, 0] (start-up)", range=">= 0"),
        ParameterSpec("initial_queue", "number", 0.0, "queue on [-d, 0], packets", range=">= 0"),
    )


def loop_model(name: str, description: str, system, builder, alpha: float, beta: float) -> SingleLinkModel:
    """The `SingleLinkModel` of an aggregate loop `system` whose parameters `builder` makes, with
    gains (alpha, beta) by default; sweeps classify its rate."""
    def build(values):
        params = builder(alpha=values["alpha"], beta=values["beta"], capacity_pps=values["capacity"],
                         rtt_s=values["rtt"], initial_load=values["initial_load"],
                         initial_queue=values["initial_queue"])
        return system, params

    return SingleLinkModel(name=name, description=description, parameters=loop_parameters(alpha, beta),
                           aggregate=build, observed="rate", observed_unit="packets/s")


SINGLE_LINK = loop_model("xcp", "XCP's efficiency loop (XCP, SIGCOMM 2002) on one bottleneck, linear queue as in "
                                "its analysis", XCPAggregate(), aggregate_params, 0.4, 0.226)
