"""QCP per-flow fluid model on a network (QCP paper, eqs. (4), (12), (14), (16), sections 3–8).

Every control interval d_l, link l computes its rate from the rates the packets carry:

    R_l = (alpha C_l d - beta q_l) / sum_j w_j / Rcheck_j                         (4), (16)

summed over the packets j that arrived in the interval, each carrying its flow's sending rate
R_j (the inter-byte field) and weight w_j. Flow i sends x_i d packets in the interval, each
carrying R_j = x_i, so in fluid form the sum is d times the flows' *count*

    N_a,l = sum_i w_i x_i / Rcheck_il,   Rcheck_il = max(x_i, w_i R_l)   past the flow's first RTT   (12)
                                         Rcheck_il = x_i                  in its first RTT

and R_l = (alpha C_l - beta q_l / d_l) / N_a,l. R_l in eq. (12) is R_l(t - d_l), "the rate
allocation of flows at the link for the current interval": the rate the router computed one
interval ago. A flow that follows this link one RTT late (T_i = d_l) therefore counts as one
whole flow while the rate changes; only a flow held below the allocation elsewhere counts as a
fraction. A flow bottlenecked elsewhere (x_i < w_i R_l)
counts as the fraction x_i / (w_i R_l) of a flow: efficient sharing (Definition 1, eq. (8)), so
a link whose other flows are held elsewhere gives its local flows what is left and stays full.
`variant="simplified"` uses eq. (14) instead: N_a = y / R(t - d), with y the link's input rate.

The update happens once per interval; in fluid form R_l moves geometrically towards the value
eq. (4) gives, closing the gap in one interval:

    d(log R_l)/dt = [log R_target,l - log R_l] / d_l,

with R_target kept in [MIN_RATE_FRACTION C_l, Rmax_l] (Rmax_l = C_l / the smallest weight on the
link; eq. (4) is <= 0 when the queue exceeds
alpha C d / beta, and is unbounded when no packet arrived; a link with no active flow keeps its
rate). The queue is the current one.
The default control interval of a link is the mean RTT of its flows (the paper allows any
0 < d <= RTT_max); alpha = beta = 1 (section 9).

Sources set cwnd = w_i R_hat RTT (sections 3 and 8), so a flow sends at w_i times the smallest
R_l on its path, learned one RTT late, capped by its demand (`fluidcc.models._explicit_rate`).
Queueing delay does not lengthen the RTT in this fluid form. A flow's first RTT is
[start_i, start_i + T_i); flows starting at 0 sent on the history interval at the routers'
initial rate (`initial_rate_fraction` x C_l, default 0.05).

Equilibrium with long-lived flows: q = 0 and the (weighted, demand-capped) max-min allocation of
the capacities alpha C_l: at a full link sum_i min(x_i, w_i R_l) = alpha C_l (eq. (4) at rest);
see `ExplicitRateNetwork.equilibrium`.

Units: capacities and rates in packets/s, times in seconds, queues in packets.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ParameterError
from ..network import Network
from ._explicit_rate import ExplicitRateNetwork
from ._network import NetworkLayout, batch_with_arrays, link_capacities
from ._params import require_interval, require_positive
from ._spec import NetworkModel

VARIANTS = ("exact", "simplified")

#: The smallest rate a QCP router offers, as a fraction of its capacity (eq. (4) would give <= 0
#: under a queue larger than alpha C d / beta).
MIN_RATE_FRACTION = 1e-4


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class QCPNetworkParams:
    """A batch of QCP points on one network.

    alpha (> 0), beta (> 0): gains of eq. (4), shape (B,). initial_rate_fraction: R_l / C_l on
    the history interval, in (0, 1], shape (B,). capacity_pps: packets/s and control_interval_s:
    d_l in seconds (> 0), both shape (B, L).
    """

    alpha: jax.Array
    beta: jax.Array
    initial_rate_fraction: jax.Array
    capacity_pps: jax.Array
    control_interval_s: jax.Array


def mean_link_rtts(network: Network) -> np.ndarray:
    """The default control interval: the mean RTT of each link's flows, seconds (L,)
    (the largest RTT of the network on a link without flows)."""
    routing = network.routing_matrix
    count = routing.sum(axis=1)
    rtt = NetworkLayout(network).rtts()
    return np.where(count > 0, routing @ rtt / np.maximum(count, 1), float(np.max(rtt)))


def network_params(network: Network, *, alpha=1.0, beta=1.0, control_interval=None, initial_rate_fraction=0.05,
                   capacity_pps=None) -> QCPNetworkParams:
    """Build and validate a batch (the QCP paper's alpha = beta = 1).

    control_interval: d in seconds, scalar, (L,) or (B, L); default: each link's mean RTT.
    Capacities default to the network's ((L,) or (B, L)).
    """
    capacity = link_capacities(network, capacity_pps)
    interval = np.asarray(mean_link_rtts(network) if control_interval is None else control_interval,
                          dtype=np.float64)
    if interval.ndim == 0:
        interval = np.full(network.n_links, float(interval))
    if interval.shape[-1] != network.n_links or interval.ndim > 2:
        raise ParameterError("control_interval", f"shape {interval.shape}",
                             f"a scalar, shape (L,) or (B, L) with L = {network.n_links}")
    scalars, links = batch_with_arrays(dict(alpha=alpha, beta=beta, initial_rate_fraction=initial_rate_fraction),
                                       {"capacity_pps": capacity, "control_interval_s": interval})
    params = QCPNetworkParams(**scalars, **links)
    _check(params)
    return params


def _check(params) -> None:
    require_positive("alpha", params.alpha)
    require_positive("beta", params.beta)
    require_interval("initial_rate_fraction", params.initial_rate_fraction, 0.0, 1.0)
    require_positive("capacity", params.capacity_pps, " packets/s")
    require_positive("control_interval", params.control_interval_s, " s (the control interval d)")


@dataclass(frozen=True)
class QCPNetwork(ExplicitRateNetwork):
    """QCP on a `Network` (variant "exact": eqs. (4) and (12); "simplified": eq. (14)).

    State per link: u = log(Rmax/R) (Rmax = C / the smallest weight on the link) and the queue; then the accounting blocks if `accounting`.
    """

    variant: str = "exact"
    name = "qcp_network"

    def __post_init__(self):
        super().__post_init__()
        if self.variant not in VARIANTS:
            raise ParameterError("variant", self.variant, f"one of {', '.join(VARIANTS)}")

    def link_delays(self, params):
        return params.control_interval_s

    def flow_count(self, t, rates, previous, params):
        """N_a per link (L,): eq. (4)'s denominator over d, with eq. (12) (or eq. (14)); previous
        is R_l(t - d_l), the allocation of the last interval."""
        layout = self.layout
        if self.variant == "simplified":
            return layout.link_sum(rates) / previous  # (14): y / R(t - d)
        weights, _, rtt, _ = self._flow_constants
        start = jnp.asarray(self.network.start_s)
        past_first_rtt = (t >= start + rtt)[:, None]
        allowed = weights[:, None] * previous[None, :]  # (N, L): w_i R_l(t - d_l)
        carried = rates[:, None]
        denominator = jnp.where(past_first_rtt, jnp.maximum(carried, allowed), carried)
        sending = carried > 0
        share = jnp.where(sending, weights[:, None] * carried / jnp.where(sending, denominator, 1.0), 0.0)
        return layout.link_sum(share)

    def link_fields(self, t, x, rates, load, previous, params):
        capacity = params.capacity_pps
        interval = params.control_interval_s
        u, queue = self.block(x, "u"), self.block(x, "queue")
        offered = self.offered_rates(u, capacity)
        count = self.flow_count(t, rates, previous, params)
        budget = params.alpha * capacity - params.beta * queue / interval  # (4): per second
        counted = count > 0
        target = jnp.where(counted, budget / jnp.where(counted, count, 1.0), offered)
        target = jnp.clip(target, MIN_RATE_FRACTION * capacity, self.rate_ceiling(capacity))
        # u_target - u over d: log R moves towards log R_target in one interval.
        d_u = (jnp.log(offered) - jnp.log(target)) / interval
        return d_u, []

    def max_step(self, params):
        """The relaxation of log R has rate 1/d: the step stays below the smallest d."""
        return jnp.min(params.control_interval_s)

    def validate(self, params) -> None:
        _check(params)
        self.layout.rtts()

    def equilibrium_capacities(self, params, point: int) -> np.ndarray:
        alpha = float(np.asarray(params.alpha)[point])
        return alpha * np.asarray(params.capacity_pps, dtype=np.float64)[point]

    def estimate(self, t, rates, offered, previous, params):
        """QCP's count of the flows, N_a per link (eq. (4)'s denominator over d)."""
        return self.flow_count(t, rates, previous, params)


ON_NETWORK = NetworkModel(
    name="qcp",
    description="QCP, QCP paper eqs. (4), (12): one rate per link from the count of the flows' rates",
    system=lambda network: QCPNetwork(network, accounting=True),
    params=network_params,
    parameters=("alpha", "beta", "control_interval", "initial_rate_fraction"),
    settle_s=20.0,
    saves_per_rtt=4,  # flow rates are read from the saved offers one RTT back
    notes={"control_interval": "s; default: each link's mean RTT"},
)
