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

**Sources.** A flow's SYN carries an unlimited rate field; the SYN-ACK brings the smallest R on
the path, and the flow sends at the rate its ACKs echo from then on, one packet every 1 / rate
seconds (paced at its own instants). Data packets carry the source's smoothed RTT. Losses are
repaired by going back (on the third duplicate ACK, and on a timeout, the RTO doubling up to 60 s):
the flow resends from its first unacknowledged packet; for one smoothed RTT after going back,
duplicate ACKs are not counted (the receiver answers the resent packets it already had with
duplicates). A loss does not change the rate (the routers set it). A SYN without its SYN-ACK is
sent again after the initial RTO (1 s), doubling.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ...errors import ParameterError
from ..engine import link_mean_rtt
from ..exact import ACK, DATA, SYN, SYNACK, ExactProtocol, Packet
from ..protocols._fields import FieldSettings

UNLIMITED = 1e12
MIN_RATE_FRACTION = 1e-4


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


def _positive(name: str, value, allowed: str) -> None:
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ParameterError(name, value, allowed)


@dataclass(frozen=True)
class RCP(ExactProtocol, FieldSettings):
    """RCP with the paper's alpha = 0.1, beta = 1, tau = 10 ms and RTT gain 0.02 by default."""

    alpha: float = 0.1
    beta: float = 1.0
    tau_s: float = 0.010
    rtt_gain: float = 0.02
    min_rto_s: float = 0.2
    name = "rcp"
    header_size = 2  # the rate field (packets/s) and the RTT field (s)

    def __post_init__(self):
        _positive("alpha", self.alpha, "a gain > 0")
        _positive("beta", self.beta, "a gain > 0")
        _positive("tau", self.tau_s, "a control interval > 0 s")
        _positive("min_rto", self.min_rto_s, "a minimum RTO > 0 s")
        if isinstance(self.rtt_gain, bool) or not (isinstance(self.rtt_gain, (int, float)) and 0 < self.rtt_gain <= 1):
            raise ParameterError("rtt_gain", self.rtt_gain, "a gain in (0, 1]")

    def params(self, network, plan, tables) -> RCPParams:
        return RCPParams(alpha=jnp.asarray(float(self.alpha)), beta=jnp.asarray(float(self.beta)),
                         tau=jnp.asarray(float(self.tau_s)), rtt_gain=jnp.asarray(float(self.rtt_gain)),
                         schedule_s=jnp.asarray(plan.schedule_s),
                         capacity_pps=jnp.asarray(plan.capacity_Bps / plan.data_bytes),
                         initial_d0=jnp.asarray(np.maximum(link_mean_rtt(network), 1e-6)),
                         min_rto=jnp.asarray(float(self.min_rto_s)), initial_rto=jnp.asarray(max(1.0, self.min_rto_s)))

    # ------------------------------------------------------------------------ routers
    @staticmethod
    def _capacity(params, link, now):
        which = jnp.searchsorted(params.schedule_s[link], now, side="right") - 1
        return params.capacity_pps[link, which]

    def router_init(self, params: RCPParams, n_links: int):
        return {"rate": params.capacity_pps[:, 0], "d0": params.initial_d0, "count": jnp.zeros(n_links),
                "last": jnp.zeros(n_links), "next": jnp.minimum(params.tau, params.initial_d0)}

    def router_next(self, router, params, link):
        return router["next"][link]

    def router_timer(self, router, params: RCPParams, link, now, waiting):
        capacity = self._capacity(params, link, now)
        elapsed = jnp.maximum(now - router["last"][link], 1e-12)
        d0 = router["d0"][link]
        y = router["count"][link] / elapsed
        factor = 1.0 + (elapsed / d0) * (params.alpha * (capacity - y) - params.beta * waiting / d0) / capacity
        rate = jnp.clip(router["rate"][link] * factor, MIN_RATE_FRACTION * capacity, capacity)
        return {**router, "rate": router["rate"].at[link].set(rate), "count": router["count"].at[link].set(0.0),
                "last": router["last"].at[link].set(now),
                "next": router["next"].at[link].set(now + jnp.minimum(params.tau, d0))}

    def router_packet(self, router, params: RCPParams, link, now, kind, header, waiting, accepted):
        data = (kind == DATA) | (kind == SYN)
        count = router["count"].at[link].add(jnp.where(data, 1.0, 0.0))
        sample = accepted & (kind == DATA) & (header[1] > 0)
        d0 = router["d0"][link]
        d0 = jnp.where(sample, d0 + params.rtt_gain * (header[1] - d0), d0)
        stamped = jnp.where(data & accepted, header.at[0].set(jnp.minimum(header[0], router["rate"][link])), header)
        return {**router, "count": count, "d0": router["d0"].at[link].set(d0)}, stamped

    def observe(self, router, params):
        return {"rcp_rate": router["rate"], "rcp_d0": router["d0"]}

    # ------------------------------------------------------------------------ sources
    def init(self, params: RCPParams, flows, key):
        n = flows.start.shape[0]
        zeros = jnp.zeros(n, jnp.int32)
        return {"phase": zeros, "syn_due": jnp.zeros(n, bool), "syn_at": jnp.full(n, jnp.inf),
                "syn_wait": jnp.full(n, params.initial_rto), "back_at": jnp.full(n, -jnp.inf),
                "rate": jnp.zeros(n), "next": jnp.full(n, jnp.inf),
                "due": jnp.zeros(n, bool), "snd_una": zeros, "snd_nxt": zeros, "high_tx": zeros,
                "recover": zeros, "dupacks": zeros, "srtt": jnp.zeros(n), "rttvar": jnp.zeros(n),
                "rto": jnp.full(n, params.initial_rto), "timer": jnp.full(n, jnp.inf), "timeouts": zeros,
                "goes_back": zeros}

    def report(self, state):
        return {"timeouts": state["timeouts"], "goes_back": state["goes_back"]}

    def next_time(self, s, params, flows):
        starting = jnp.where((s["phase"] == 0) & ~s["syn_due"] & (flows.start < flows.stop), flows.start, jnp.inf)
        starting = jnp.minimum(starting, jnp.where((s["phase"] == 1) & ~s["syn_due"], s["syn_at"], jnp.inf))
        pace = jnp.where((s["phase"] == 2) & ~s["due"], s["next"], jnp.inf)
        rto = jnp.where(s["phase"] == 2, s["timer"], jnp.inf)
        return jnp.minimum(starting, jnp.minimum(pace, rto))

    def on_time(self, s, params, flows, now, mask):
        start = mask & (s["phase"] <= 1) & ~s["syn_due"]
        again = start & (s["phase"] == 1)
        expired = mask & (s["phase"] == 2) & (now >= s["timer"])
        timeout = expired & (s["high_tx"] > s["snd_una"])
        paced = mask & (s["phase"] == 2) & ~expired & (now >= s["next"])
        rto = jnp.where(timeout, jnp.minimum(2.0 * s["rto"], 60.0), s["rto"])
        return {**s, "phase": jnp.where(start, 1, s["phase"]), "syn_due": s["syn_due"] | start,
                "syn_wait": jnp.where(again, 2.0 * s["syn_wait"], s["syn_wait"]),
                "syn_at": jnp.where(start, jnp.inf, s["syn_at"]), "back_at": jnp.where(timeout, now, s["back_at"]),
                "due": s["due"] | paced, "snd_nxt": jnp.where(timeout, s["snd_una"], s["snd_nxt"]),
                "recover": jnp.where(timeout, s["high_tx"], s["recover"]), "rto": rto,
                "timer": jnp.where(expired, jnp.where(timeout, now + rto, jnp.inf), s["timer"]),
                "timeouts": s["timeouts"] + timeout}

    def on_ack(self, s, params: RCPParams, flows, now, mask, ack):
        opened = mask & (ack.kind == SYNACK) & (s["phase"] == 1)
        is_ack = mask & (ack.kind == ACK) & (s["phase"] == 2)
        sample = now - ack.echo
        first = opened
        more = is_ack & (ack.ack_no > s["snd_una"])
        srtt = jnp.where(first, sample, jnp.where(more, s["srtt"] + (sample - s["srtt"]) / 8.0, s["srtt"]))
        rttvar = jnp.where(first, sample / 2.0,
                           jnp.where(more, s["rttvar"] + (jnp.abs(sample - s["srtt"]) - s["rttvar"]) / 4.0, s["rttvar"]))
        rto = jnp.where(first | more, jnp.clip(srtt + jnp.maximum(0.001, 4.0 * rttvar), params.min_rto, 60.0), s["rto"])
        rate = jnp.where(opened | is_ack, ack.header[:, 0], s["rate"])
        new = more
        settled = now >= s["back_at"] + s["srtt"]  # the resent packets' duplicates are back
        dup = is_ack & (ack.ack_no == s["snd_una"]) & (s["high_tx"] > s["snd_una"]) & settled
        dupacks = jnp.where(new, 0, jnp.where(dup, s["dupacks"] + 1, s["dupacks"]))
        back = dup & (dupacks == 3) & (s["snd_una"] >= s["recover"])
        snd_una = jnp.where(new, ack.ack_no, s["snd_una"])
        snd_nxt = jnp.where(back, snd_una, jnp.maximum(s["snd_nxt"], snd_una))
        timer = jnp.where(new | back, jnp.where(s["high_tx"] > snd_una, now + rto, jnp.inf), s["timer"])
        return {**s, "phase": jnp.where(opened, 2, s["phase"]), "syn_at": jnp.where(opened, jnp.inf, s["syn_at"]),
                "back_at": jnp.where(back, now, s["back_at"]), "rate": rate, "srtt": srtt, "rttvar": rttvar,
                "rto": rto, "next": jnp.where(opened, now, s["next"]), "due": s["due"] | opened,
                "snd_una": snd_una, "snd_nxt": snd_nxt, "dupacks": dupacks,
                "recover": jnp.where(back, s["high_tx"], s["recover"]), "timer": timer,
                "goes_back": s["goes_back"] + back}

    def ready(self, s, params, flows, now):
        data = s["due"] & (s["snd_nxt"] < flows.size) & (now < flows.stop)
        return s["syn_due"] | ((s["phase"] == 2) & data)

    def send(self, s, params, flows, now, mask):
        syn = mask & s["syn_due"]
        data = mask & ~syn
        seq = s["snd_nxt"]
        snd_nxt = seq + data
        gap = 1.0 / jnp.maximum(s["rate"], 1e-9)
        header = jnp.stack([jnp.full(mask.shape, UNLIMITED), jnp.where(syn, 0.0, s["srtt"])], axis=1)
        packet = Packet(kind=jnp.where(syn, SYN, DATA).astype(jnp.int32), seq=seq.astype(jnp.int32), header=header)
        return {**s, "syn_due": s["syn_due"] & ~syn, "syn_at": jnp.where(syn, now + s["syn_wait"], s["syn_at"]),
                "snd_nxt": snd_nxt, "high_tx": jnp.maximum(s["high_tx"], snd_nxt),
                "due": s["due"] & ~data, "next": jnp.where(data, jnp.maximum(s["next"] + gap, now), s["next"]),
                "timer": jnp.where(data & jnp.isinf(s["timer"]), now + s["rto"], s["timer"])}, packet


__all__ = ["RCP", "RCPParams"]
