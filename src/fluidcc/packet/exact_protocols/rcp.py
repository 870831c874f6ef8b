"""RCP for the exact engine (RCP paper, section 2.4; parameters of section 3.1).

**Routers.** Every link keeps one rate R_l and updates it at its own instants, every T = min(tau,
d0) seconds, by eq. (2):

    R(t) = R(t - T) [1 + (T / d0) (alpha (C - y(t)) - beta q(t) / d0) / C]

y: the packets that reached the link since the last update (dropped ones too), per second; q: the
packets waiting at the link at the update instant; C: the capacity then (packets/s; a capacity
schedule changes it); d0: the running average of the RTT field of the data packets the link
takes, gain `rtt_gain` per packet, starting at the mean RTT of the network's flows that cross it.
R stays within [C / 10 000, C] and starts at C. A data packet or SYN the link takes leaves with
its rate field lowered to R_l if R_l is smaller.

**Sources** (handshake, RTT, timer and loss repair: `_explicit`). A flow sends at the rate its
ACKs echo, one packet every 1 / rate seconds (paced at its own instants); its data packets carry
its smoothed RTT.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..exact import DATA, SYN, link_mean_rtt, on_grid
from ..settings import FieldSettings
from ._explicit import (MIN_RATE_FRACTION, UNLIMITED, ExplicitRateSender, require_fraction, require_positive,
                        shared_params)


class RCPParams(NamedTuple):
    alpha: jax.Array
    beta: jax.Array
    tau: jax.Array  # s
    rtt_gain: jax.Array
    schedule_s: jax.Array  # (L, S) the capacity's change times
    capacity_pps: jax.Array  # (L, S)
    initial_d0: jax.Array  # (L,) s
    min_rto: jax.Array
    initial_rto: jax.Array
    rtt_per_window: jax.Array


@dataclass(frozen=True)
class RCP(ExplicitRateSender, FieldSettings):
    """RCP with the paper's alpha = 0.1, beta = 1, tau = 10 ms and RTT gain 0.02 by default."""

    alpha: float = 0.1
    beta: float = 1.0
    tau_s: float = 0.010
    rtt_gain: float = 0.02
    min_rto_s: float = 0.2
    name = "rcp"
    header_size = 2  # the rate field (packets/s) and the RTT field (s)

    def __post_init__(self):
        require_positive("alpha", self.alpha, "a gain > 0")
        require_positive("beta", self.beta, "a gain > 0")
        require_positive("tau", self.tau_s, "a control interval > 0 s")
        require_positive("min_rto", self.min_rto_s, "a minimum RTO > 0 s")
        require_fraction("rtt_gain", self.rtt_gain, "a gain in (0, 1]")

    def params(self, network, plan, tables) -> RCPParams:
        return RCPParams(alpha=jnp.asarray(float(self.alpha)), beta=jnp.asarray(float(self.beta)),
                         tau=jnp.asarray(float(self.tau_s)), rtt_gain=jnp.asarray(float(self.rtt_gain)),
                         initial_d0=jnp.asarray(np.maximum(link_mean_rtt(network), 1e-6)),
                         **shared_params(plan, self.min_rto_s))

    # ------------------------------------------------------------------------ routers
    def router_init(self, params: RCPParams, n_links: int):
        return {"rate": params.capacity_pps[:, 0], "d0": params.initial_d0, "count": jnp.zeros(n_links),
                "last": jnp.zeros(n_links), "next": jnp.minimum(params.tau, params.initial_d0)}

    def router_timer(self, router, params: RCPParams, link, now, waiting):
        capacity, elapsed = self.update_inputs(router, params, link, now)
        d0 = router["d0"][link]
        y = router["count"][link] / elapsed
        factor = 1.0 + (elapsed / d0) * (params.alpha * (capacity - y) - params.beta * waiting / d0) / capacity
        rate = jnp.clip(router["rate"][link] * factor, MIN_RATE_FRACTION * capacity, capacity)
        return {**router, "rate": router["rate"].at[link].set(rate), "count": router["count"].at[link].set(0.0),
                "last": router["last"].at[link].set(now),
                "next": router["next"].at[link].set(on_grid(now + jnp.minimum(params.tau, d0)))}

    def router_packet(self, router, params: RCPParams, link, now, kind, header, waiting, accepted):
        data = (kind == DATA) | (kind == SYN)
        count = router["count"].at[link].add(jnp.where(data, 1.0, 0.0))
        sample = accepted & (kind == DATA) & (header[1] > 0)
        d0 = router["d0"][link]
        d0 = jnp.where(sample, d0 + params.rtt_gain * (header[1] - d0), d0)
        stamped = self.lowered(header, router["rate"][link], kind, accepted)
        return {**router, "count": count, "d0": router["d0"].at[link].set(d0)}, stamped

    def observe(self, router, params):
        return {"rcp_rate": router["rate"], "rcp_d0": router["d0"]}

    # ------------------------------------------------------------------------ sources
    def extra_state(self, n: int) -> dict:
        return {"next": jnp.full(n, jnp.inf), "due": jnp.zeros(n, bool)}

    def pace_time(self, s, params):
        return jnp.where(s["due"], jnp.inf, s["next"])

    def on_pace(self, s, params, paced):
        return {**s, "due": s["due"] | paced}

    def after_ack(self, s, params, now, opened, is_ack, ack):
        return {**s, "next": jnp.where(opened, now, s["next"]), "due": s["due"] | opened}

    def may_send(self, s, params, flows, now):
        return s["due"]

    def data_header(self, s, params, syn):
        return jnp.stack([jnp.full(syn.shape, UNLIMITED), jnp.where(syn, 0.0, s["srtt"])], axis=1)

    def after_send(self, s, params, data, now):
        gap = 1.0 / jnp.maximum(s["rate"], 1e-9)
        return {**s, "due": s["due"] & ~data, "next": jnp.where(data, jnp.maximum(on_grid(s["next"] + gap), now), s["next"])}


__all__ = ["RCP", "RCPParams"]
