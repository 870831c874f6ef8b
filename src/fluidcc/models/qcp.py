"""QCP on one bottleneck, in aggregate form (QCP paper, section 9.1, eq. (19)).

The QCP router's rate allocation changes the sources' windows so that the aggregate arrival rate
Lambda (packets/s) and the queue q (packets) obey eq. (19):

    Lambda'(t) = (alpha / d) (C - Lambda(t - d)) - (beta / d^2) q(t - d)
    q'(t)      = Lambda(t) - C       if q(t) > 0
               = max(Lambda(t) - C, 0)   if q(t) = 0

with d the control interval (the RTT here). This is XCP's efficiency loop with the queue kept
>= 0 (`fluidcc.models.xcp.EfficiencyLoop`), and the paper's choice alpha = beta = 1. Equilibrium:
Lambda* = C, q* = 0, on the edge of the projection, so linear analysis (which drops the
projection) and the nonlinear model can disagree: see `fluidcc.stability`.

Units: capacity and rates in packets/s, d in seconds, the queue in packets.
"""

from __future__ import annotations

from dataclasses import dataclass

from .xcp import EfficiencyLoop, loop_model, loop_params


def aggregate_params(*, capacity_pps, rtt_s, alpha=1.0, beta=1.0, initial_load=0.5, initial_queue=0.0):
    """Eq. (19) with the paper's defaults alpha = beta = 1."""
    return loop_params(alpha=alpha, beta=beta, capacity_pps=capacity_pps, rtt_s=rtt_s,
                       initial_load=initial_load, initial_queue=initial_queue)


@dataclass(frozen=True)
class QCPAggregate(EfficiencyLoop):
    """Eq. (19): the efficiency loop with the queue projected at 0 (queue="linear" drops it)."""

    queue: str = "projected"
    name = "qcp_aggregate"


SINGLE_LINK = loop_model("qcp", "QCP's aggregate loop, QCP paper eq. (19), queue kept >= 0", QCPAggregate(),
                         aggregate_params, 1.0, 1.0)
