"""RCP per-flow fluid model on a network (RCP paper, eqs. (1)–(2), section 2.4).

Every link l offers one rate R_l to all its flows and updates it by eq. (2):

    R(t) = R(t - T) [1 + (T / d0) (alpha (C - y(t)) - beta q(t) / d0) / C],   T = min(tau, d0),

with y the input rate measured over the last control interval, q the queue and d0 the router's
moving average of the RTT field of the packets it forwards (gain 0.02 per packet, section 2.3).
Eq. (2) changes log R by (T / d0)(...)/C every T seconds, so in fluid form (T -> 0 at that
change per second) T cancels from the rate law:

    d(log R_l)/dt = [alpha (C_l - yhat_l) - beta q_l / d0_l] / (d0_l C_l)            (2), fluid

What T still sets is the window y is measured over. fluidcc keeps that measurement as a state:
a first-order filter with the box average's mean lag T/2,

    yhat_l' = (y_l - yhat_l) / (T_l / 2),        T_l = min(tau, d0_l).

The moving average d0 in fluid form: each arriving packet moves d0 by gain x (RTT_p - d0), so per
second

    d0_l' = gain [sum_i x_i T_i - y_l d0_l] = gain y_l (traffic-weighted mean RTT - d0_l),

the RTT average weighted by traffic as the paper intends. Its time constant, 1 / (gain y), is 50
packets' time: far shorter than an RTT on any real link. While a link receives more than twice
its capacity, the average moves at the pace of twice the capacity (`RTT_AVERAGE_LOAD_CAP`): the
average still settles within 25 packets' time of capacity, and the explicit integrator's step,
which `max_step` bounds by 1 / (2 gain C) and T / 2, stays bounded.

Flows send at the smallest R_l on their path, learned one RTT late; a new flow starts at the
path rate, as RCP's SYN does (`fluidcc.models._explicit_rate`). R_l <= C_l: an idle link offers
its capacity. RCP's estimate of the number of flows is N_hat_l = C_l / R_l (eq. (1); the QCP
paper's eq. (2)): `flow_estimate`.

Equilibrium with long-lived flows: q = 0 and the max-min allocation (R* = C / N on one link,
section 2.3); see `ExplicitRateNetwork.equilibrium`. The paper's gains are alpha = 0.1, beta = 1,
tau = 10 ms (section 3.1). RCP offers every flow the same rate, so flow weights other than 1 are
refused (QCP honours them: `fluidcc.models.qcp_network`).

History: every router offers `initial_rate_fraction` x C_l (default 0.05: N_hat = 20), queues are
empty, yhat is the load of the flows sending then and d0 their mean RTT.

Units: capacities and rates in packets/s, times in seconds, queues in packets.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import NetworkError
from ..network import Network
from ._explicit_rate import ExplicitRateNetwork
from ._network import NetworkLayout, batch_with_arrays, link_capacities
from ._params import require_interval, require_positive
from ._spec import NetworkModel

#: Above this multiple of capacity, the RTT average moves no faster than at this load (see above).
RTT_AVERAGE_LOAD_CAP = 2.0


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class RCPNetworkParams:
    """A batch of RCP points on one network.

    alpha (> 0), beta (> 0): gains of eq. (2), shape (B,). rate_interval_s: tau, the longest
    control interval, seconds (> 0), shape (B,). rtt_gain: gain of the RTT moving average per
    packet, in (0, 1], shape (B,). initial_rate_fraction: R_l / C_l on the history interval, in
    (0, 1], shape (B,). capacity_pps: link capacities, packets/s, shape (B, L).
    """

    alpha: jax.Array
    beta: jax.Array
    rate_interval_s: jax.Array
    rtt_gain: jax.Array
    initial_rate_fraction: jax.Array
    capacity_pps: jax.Array


def network_params(network: Network, *, alpha=0.1, beta=1.0, rate_interval=0.01, rtt_gain=0.02,
                   initial_rate_fraction=0.05, capacity_pps=None) -> RCPNetworkParams:
    """Build and validate a batch (the RCP paper's alpha = 0.1, beta = 1, tau = 10 ms, gain 0.02).

    rate_interval: tau in seconds. Capacities default to the network's ((L,) or (B, L)).
    """
    NetworkLayout(network).rtts()  # every flow needs an RTT > 0 (raises naming the flow)
    _require_unit_weights(network)
    capacity = link_capacities(network, capacity_pps)
    scalars, links = batch_with_arrays(dict(alpha=alpha, beta=beta, rate_interval_s=rate_interval, rtt_gain=rtt_gain,
                                            initial_rate_fraction=initial_rate_fraction), {"capacity_pps": capacity})
    params = RCPNetworkParams(**scalars, **links)
    _check(params)
    return params


def _require_unit_weights(network: Network) -> None:
    for flow in network.flows:
        if flow.weight != 1.0:
            raise NetworkError(f"flow {flow.name!r}: weight", flow.weight,
                               "1: RCP offers every flow the same rate (weights are honoured by QCP, eq. (16))")


def _check(params) -> None:
    require_positive("alpha", params.alpha)
    require_positive("beta", params.beta)
    require_positive("rate_interval", params.rate_interval_s, " s (the control interval tau)")
    require_interval("rtt_gain", params.rtt_gain, 0.0, 1.0)
    require_interval("initial_rate_fraction", params.initial_rate_fraction, 0.0, 1.0)
    require_positive("capacity", params.capacity_pps, " packets/s")


@dataclass(frozen=True)
class RCPNetwork(ExplicitRateNetwork):
    """RCP on a `Network`. State per link: u = log(C/R) (R <= C), queue, yhat (packets/s), d0 (seconds);
    then the accounting blocks if `accounting`."""

    link_states = ("measured_load", "rtt_average")
    name = "rcp_network"

    def _link_rtt_means(self) -> np.ndarray:
        """Unweighted mean RTT of each link's flows that send on the history interval (of all its
        flows if none does; 1 s on a link without flows): d0 on the history interval."""
        network = self.network
        routing = network.routing_matrix
        sending = routing * network.active(-1.0)[None, :]
        use = np.where(sending.sum(axis=1, keepdims=True) > 0, sending, routing)
        count = use.sum(axis=1)
        return np.where(count > 0, use @ network.rtt_s / np.maximum(count, 1), 1.0)

    def initial_link_states(self, rates, params) -> list:
        return [self.layout.link_sum(rates), jnp.asarray(self._link_rtt_means())]

    def control_interval(self, rtt_average, params):
        """T_l = min(tau, d0_l), seconds."""
        return jnp.minimum(params.rate_interval_s, rtt_average)

    def link_fields(self, t, x, rates, load, previous, params):
        capacity = params.capacity_pps
        queue = self.block(x, "queue")
        measured = self.block(x, "measured_load")
        d0 = jnp.maximum(self.block(x, "rtt_average"), 1e-12)
        d_log_rate = (params.alpha * (capacity - measured) - params.beta * queue / d0) / (d0 * capacity)
        interval = self.control_interval(d0, params)
        d_measured = (load - measured) / (0.5 * interval)
        _, _, rtt, _ = self._flow_constants
        weighted_rtt = self.layout.link_sum(rates * rtt)  # sum_i x_i T_i over each link's flows
        pace = jnp.minimum(load, RTT_AVERAGE_LOAD_CAP * capacity)
        scale = jnp.where(load > 0, pace / jnp.where(load > 0, load, 1.0), 0.0)
        d_average = params.rtt_gain * scale * (weighted_rtt - load * d0)
        return -d_log_rate, [d_measured, d_average]

    def max_step(self, params):
        """The step keeping the two link filters stable: 1 / (gain x 2C) and T/2 for every link
        (T at its smallest, min(tau, the link's smallest RTT))."""
        network = self.network
        smallest_rtt = np.where(network.routing_matrix > 0, network.rtt_s[None, :], np.inf).min(axis=1)
        interval = jnp.minimum(params.rate_interval_s, jnp.asarray(smallest_rtt))
        averaging = 1.0 / (params.rtt_gain * RTT_AVERAGE_LOAD_CAP * params.capacity_pps)
        return jnp.minimum(jnp.min(0.5 * interval), jnp.min(averaging))

    def validate(self, params) -> None:
        _check(params)
        self.layout.rtts()
        _require_unit_weights(self.network)

    def estimate(self, t, rates, offered, previous, params):
        """RCP's N_hat_l = C_l / R_l (eq. (1))."""
        return params.capacity_pps / offered

    def link_state_scales(self, capacity, longest_rtt) -> list:
        return [capacity, np.full(self.n_links, longest_rtt)]

    def equilibrium_link_states(self, params, point, rates) -> list:
        load = self.network.routing_matrix @ rates
        weighted = self.network.routing_matrix @ (rates * self.network.rtt_s)
        average = np.where(load > 0, weighted / np.where(load > 0, load, 1.0), self._link_rtt_means())
        return [load, average]


ON_NETWORK = NetworkModel(
    name="rcp",
    description="RCP, RCP paper eq. (2): one rate per link, flows take the smallest on their path",
    system=lambda network: RCPNetwork(network, accounting=True),
    params=network_params,
    parameters=("alpha", "beta", "rate_interval", "rtt_gain", "initial_rate_fraction"),
    settle_s=40.0,
    saves_per_rtt=4,  # flow rates are read from the saved offers one RTT back
    notes={"rate_interval": "s (tau)"},
)
