"""RCP sources and routers (RCP paper, section 2.4; parameters of section 3.1).

**Routers.** Every link keeps one rate R_l and updates it once per control interval
T = min(tau, d0) by eq. (2):

    R(t) = R(t - T) [1 + (T / d0) (alpha (C - y(t)) - beta q(t) / d0) / C]

y: the packets that reached the link during the interval, per unit time; q: the packets queued
at the link at the update (the one being sent not counted); d0: the running average of the RTT
field of the packets the link accepted, gain `rtt_gain` per packet (a slot's m packets of mean
RTT r move d0 to r + (1 - g)^m (d0 - r)). R stays within [C / 10 000, C]; an idle link starts at
R = C, and d0 at the mean RTT of the network's flows that cross it. A packet that passes a link
leaves with its rate field lowered to R_l if R_l is smaller (stamped as it reaches the link).

**Sources.** A flow's SYN carries an unlimited rate field; the SYN-ACK returns the smallest R on
the path, and the flow sends at that rate from then on, taking each acknowledgement's echoed rate
as its new rate, paced by a credit of rate x slot packets per slot (at most one packet saved up).
Data packets carry the source's smoothed RTT in their RTT field. Handshake, RTT estimation and
loss repair (going back to the first unacknowledged packet; the rate is not changed by a loss) are
shared with QCP (`_feedback`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ...errors import ParameterError
from ..engine import Send, link_mean_rtt
from . import _feedback as feedback
from ..settings import FieldSettings

UNLIMITED = 1e12
MIN_RATE_FRACTION = 1e-4


class RCPParams(NamedTuple):
    alpha: jax.Array
    beta: jax.Array
    tau: jax.Array  # slots
    rtt_gain: jax.Array
    capacity: jax.Array  # (L,) packets per slot
    initial_d0: jax.Array  # (L,) slots
    min_rto: jax.Array
    max_rto: jax.Array
    initial_rto: jax.Array
    slot_s: jax.Array


def _positive(name: str, value, allowed: str) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ParameterError(name, value, allowed)


@dataclass(frozen=True)
class RCP(FieldSettings):
    """RCP with the paper's alpha = 0.1, beta = 1, tau = 10 ms and RTT gain 0.02 by default."""

    alpha: float = 0.1
    beta: float = 1.0
    tau_s: float = 0.010
    rtt_gain: float = 0.02
    min_rto_s: float = 0.2
    name = "rcp"
    header_size = 2  # the rate field (packets per slot) and the RTT field (slots)

    def __post_init__(self):
        _positive("alpha", self.alpha, "a gain > 0")
        _positive("beta", self.beta, "a gain > 0")
        _positive("tau", self.tau_s, "a control interval > 0 s")
        _positive("min_rto", self.min_rto_s, "a minimum RTO > 0 s")
        if not (isinstance(self.rtt_gain, (int, float)) and 0 < self.rtt_gain <= 1):
            raise ParameterError("rtt_gain", self.rtt_gain, "a gain in (0, 1]")


    def params(self, network, layout, timing, tables) -> RCPParams:
        slot = timing.slot_s
        d0 = link_mean_rtt(network)
        return RCPParams(alpha=jnp.asarray(float(self.alpha)), beta=jnp.asarray(float(self.beta)),
                         tau=jnp.asarray(self.tau_s / slot), rtt_gain=jnp.asarray(float(self.rtt_gain)),
                         capacity=jnp.asarray(layout.per_slot), initial_d0=jnp.asarray(np.maximum(d0 / slot, 1.0)),
                         min_rto=jnp.asarray(self.min_rto_s / slot), max_rto=jnp.asarray(60.0 / slot),
                         initial_rto=jnp.asarray(max(1.0, self.min_rto_s) / slot), slot_s=jnp.asarray(slot))

    # ------------------------------------------------------------------------ routers
    def router_init(self, params: RCPParams, n_links: int):
        return {"rate": params.capacity, "d0": params.initial_d0, "count": jnp.zeros(n_links),
                "elapsed": jnp.zeros(n_links)}

    def stamp(self, router, params, link, header):
        return header.at[:, 0].set(jnp.minimum(header[:, 0], router["rate"][link]))

    def router_step(self, router, params: RCPParams, t, links):
        accepted = links.accepted.astype(jnp.float64)
        mean_rtt = links.header_sum[:, 1] / jnp.maximum(accepted, 1.0)
        seen = (accepted > 0) & (mean_rtt > 0)
        decay = (1.0 - params.rtt_gain) ** accepted
        d0 = jnp.where(seen, mean_rtt + decay * (router["d0"] - mean_rtt), router["d0"])
        count = router["count"] + links.arrived
        elapsed = router["elapsed"] + 1.0
        due = elapsed >= jnp.minimum(params.tau, d0)
        capacity = params.capacity
        y = count / elapsed
        factor = 1.0 + (elapsed / d0) * (params.alpha * (capacity - y) - params.beta * links.waiting / d0) / capacity
        rate = jnp.where(due, jnp.clip(router["rate"] * factor, MIN_RATE_FRACTION * capacity, capacity), router["rate"])
        return {"rate": rate, "d0": d0, "count": jnp.where(due, 0.0, count), "elapsed": jnp.where(due, 0.0, elapsed)}

    def observe(self, router, params: RCPParams):
        return {"rcp_rate": router["rate"] / params.slot_s, "rcp_d0": router["d0"] * params.slot_s}

    # ------------------------------------------------------------------------ sources
    def init(self, params: RCPParams, flows):
        n = flows.start.shape[0]
        return {**feedback.initial(n, params.initial_rto), "rate": jnp.zeros(n), "credit": jnp.zeros(n)}

    def step(self, s, params: RCPParams, flows, t, acks, budget, key):
        def quota(state, seen):
            rate = jnp.where(seen["opened"] | seen["has_ack"], acks.header[:, 0], s["rate"])
            state["rate"] = rate
            state["credit"] = jnp.where(seen["sending"], jnp.minimum(s["credit"] + rate, rate + 1.0), 0.0)
            return state["credit"]

        state, n, seq, syn, _, _ = feedback.step(s, params, flows, t, acks, budget, quota)
        state["credit"] = state["credit"] - n
        header = jnp.stack([jnp.full(n.shape, UNLIMITED), jnp.where(syn, 0.0, state["srtt"])], axis=1)
        return state, Send(n=n, seq=seq, syn=syn, header=header)
