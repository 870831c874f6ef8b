"""QCP for the exact engine (QCP paper, sections 3-7).

**Routers.** Every control interval d (per link; default the mean RTT of the network's flows that
cross it, as the paper allows 0 < d <= RTT_max), at its own instants, link l sets its per-flow
rate by eq. (4):

    R(t) = (alpha C d - beta q(t)) / sum_j 1 / Rcheck_j

summed over the data packets that reached the link in the interval (dropped ones too: they are
input), each carrying its flow's sending rate R_j as the inter-packet interval sigma_j = 1 / R_j
(s per packet; the 12-byte header of section 7). C is the capacity at the update (a schedule
changes it); q is the smallest number of packets waiting during the interval ("the queue size
from the current interval", read as the persistent queue: the queue falls between arrivals, so
its minimum is the smaller of what the arrivals found and what waits at the update).

- `variant="exact"`: Rcheck_j = max(R_j, R(t - d)) (eq. (12)) for a flow past its first round
  trip, R_j in it (the header bit of section 6.3). R(t - d) is the rate in force during the
  interval, the one the router computed at its last update.
- `variant="simplified"`: Rcheck_j = R(t - d) for every packet: eq. (13) in (4) is eq. (14),
  R(t) = (alpha C d - beta q) / (d y / R(t - d)).

The value of eq. (4), kept within [C / 10 000, C] (a link no data reached in an interval: C), is
the target R*; the router moves its rate towards it geometrically, R <- R^(1 - g) R*^g, with the
gain g (`gain`, default 1/4). g = 1 is the paper's literal update (R jumps to eq. (4)'s value);
it does not settle at packet level. Why: the packets of an interval were sent at the rate the
router set one interval earlier, while eq. (4) counts them at the rate in force (eq. (12)'s max,
and eq. (14) for every packet), so with d = RTT the log-rate error e obeys
e(k+1) = e(k) - g e(k-1), whose roots lie on the unit circle at g = 1 (a sustained oscillation of
period 6 d), inside it for g < 1 and real for g <= 1/4; g = 1/4 gives a double root at 1/2 (the
error halves every interval, without overshoot). The fluid model `fluidcc.models.QCPNetwork`
relaxes log R with time constant d, the continuous counterpart. Measured (benchmarks/RESULTS.md,
"QCP at packet level"): with g = 1 four flows on one link and the two-link network swing between
C and C / 10 000 with drops every few intervals; with g = 1/4 the routers settle (one link: the
offered rate within 3 % of C / 4 in every run; two links, full size: every flow's goodput within
0.5 % of the fluid model's, staggered or simultaneous starts) and drop nothing once settled.

A data packet or SYN the link takes leaves with its bottleneck-rate field lowered to R_l if R_l
is smaller.

**Sources** (handshake, RTT, timer and loss repair: `_explicit`). On every ACK a flow sets its
window to cwnd = R_hat x SRTT packets (section 3: R_hat the rate the ACK echoes), at least one
(else a flow told a tiny rate would never hear of a better one), and sends while fewer than
floor(cwnd) of its packets are unacknowledged. Each packet carries sigma = SRTT / cwnd, the
inverse of the flow's rate R_j = w_j / RTT_j (section 4), and a first-round-trip bit until the
flow's first data ACK.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ...errors import ParameterError
from ..exact import DATA, link_mean_rtt, on_grid
from ..settings import FieldSettings
from ._explicit import (MIN_RATE_FRACTION, UNLIMITED, ExplicitRateSender, ratio_or, require_fraction, require_positive,
                        shared_params)

VARIANTS = ("exact", "simplified")
#: The default gain: the largest with which the count loop does not oscillate (module docstring).
CRITICAL_GAIN = 0.25
SIGMA, RATE, FIRST_RTT = 0, 1, 2  # the header fields


class QCPParams(NamedTuple):
    alpha: jax.Array
    beta: jax.Array
    interval: jax.Array  # (L,) s
    schedule_s: jax.Array  # (L, S) the capacity's change times
    capacity_pps: jax.Array  # (L, S)
    min_rto: jax.Array
    initial_rto: jax.Array
    rtt_per_window: jax.Array
    gain: jax.Array


@dataclass(frozen=True)
class QCP(ExplicitRateSender, FieldSettings):
    """QCP with the paper's alpha = beta = 1 by default; interval_s: the control interval d (None:
    per link, the mean RTT of its flows); variant "exact" (eqs. (4), (12)) or "simplified" (eq. (14));
    gain: how far the rate moves towards eq. (4)'s value per interval (1: all the way, as the paper
    writes it; the default 1/4 settles, see the module docstring)."""

    alpha: float = 1.0
    beta: float = 1.0
    interval_s: float | None = None
    variant: str = "exact"
    min_rto_s: float = 0.2
    gain: float = CRITICAL_GAIN
    name = "qcp"
    header_size = 3  # sigma = 1 / R_j (s per packet), the bottleneck rate (packets/s), the first-RTT bit
    rate_field = RATE

    def __post_init__(self):
        require_positive("alpha", self.alpha, "a gain > 0")
        require_positive("beta", self.beta, "a gain > 0")
        require_positive("min_rto", self.min_rto_s, "a minimum RTO > 0 s")
        if self.interval_s is not None:
            require_positive("interval", self.interval_s, "a control interval > 0 s (or None: the mean RTT)")
        require_fraction("gain", self.gain, "a gain in (0, 1] (1: the rate jumps to eq. (4)'s value)")
        if self.variant not in VARIANTS:
            raise ParameterError("variant", self.variant, f"one of {', '.join(VARIANTS)}")

    def params(self, network, plan, tables) -> QCPParams:
        if self.interval_s is None:
            d = np.maximum(link_mean_rtt(network), 1e-6)
        else:
            d = np.full(network.n_links, float(self.interval_s))
        return QCPParams(alpha=jnp.asarray(float(self.alpha)), beta=jnp.asarray(float(self.beta)),
                         interval=jnp.asarray(d), gain=jnp.asarray(float(self.gain)),
                         **shared_params(plan, self.min_rto_s))

    # ------------------------------------------------------------------------ routers
    def router_init(self, params: QCPParams, n_links: int):
        return {"rate": params.capacity_pps[:, 0], "sum": jnp.zeros(n_links), "queue": jnp.full(n_links, jnp.inf),
                "last": jnp.zeros(n_links), "next": params.interval, "estimate": jnp.zeros(n_links)}

    def router_timer(self, router, params: QCPParams, link, now, waiting):
        capacity, d = self.update_inputs(router, params, link, now)
        total = router["sum"][link]
        queue = jnp.minimum(router["queue"][link], waiting)
        budget = params.alpha * capacity * d - params.beta * queue  # packets, eq. (4)'s numerator
        rate = ratio_or(budget, total, capacity)
        rate = jnp.clip(rate, MIN_RATE_FRACTION * capacity, capacity)
        rate = router["rate"][link] ** (1.0 - params.gain) * rate ** params.gain
        return {"rate": router["rate"].at[link].set(rate), "sum": router["sum"].at[link].set(0.0),
                "queue": router["queue"].at[link].set(jnp.inf), "last": router["last"].at[link].set(now),
                "next": router["next"].at[link].set(on_grid(now + params.interval[link])),
                "estimate": router["estimate"].at[link].set(total / d)}

    def router_packet(self, router, params, link, now, kind, header, waiting, accepted):
        in_force = router["rate"][link]  # R(t - d): the rate of the interval under way
        if self.variant == "exact":  # eq. (12), past the flow's first round trip
            counted = jnp.where(header[FIRST_RTT] > 0, header[SIGMA], jnp.minimum(header[SIGMA], 1.0 / in_force))
        else:  # eq. (13)
            counted = 1.0 / in_force
        stamped = self.lowered(header, in_force, kind, accepted)
        return {**router, "sum": router["sum"].at[link].add(jnp.where(kind == DATA, counted, 0.0)),
                "queue": router["queue"].at[link].min(waiting)}, stamped

    def observe(self, router, params):
        return {"qcp_rate": router["rate"], "qcp_flow_estimate": router["estimate"]}

    # ------------------------------------------------------------------------ sources
    def extra_state(self, n: int) -> dict:
        return {"cwnd": jnp.ones(n), "first_rtt": jnp.ones(n, bool)}

    def after_ack(self, s, params, now, opened, is_ack, ack):
        cwnd = jnp.maximum(s["rate"] * s["srtt"], 1.0)
        return {**s, "cwnd": jnp.where(opened | is_ack, cwnd, s["cwnd"]), "first_rtt": s["first_rtt"] & ~is_ack}

    def may_send(self, s, params, flows, now):
        return (s["snd_nxt"] - s["snd_una"] + 1).astype(jnp.float64) <= s["cwnd"]

    def data_header(self, s, params, syn):
        sigma = jnp.where(syn, 0.0, s["srtt"] / s["cwnd"])
        return jnp.stack([sigma, jnp.full(syn.shape, UNLIMITED), s["first_rtt"].astype(jnp.float64)], axis=1)


__all__ = ["QCP", "QCPParams", "VARIANTS"]
