"""VCP for the exact engine (VCP paper, "One More Bit Is Enough", sections 3.2-3.4 and 5).

**Routers** (section 3.2), per output link, at their own instants:

- every t_q (10 ms) the queue is sampled, and the persistent queue q~ is its low-pass filter,
  q~ <- (1 - w) q~ + w q with w = t_q / t_rho (the paper names a low-pass filter without its
  gain; this one's time constant is the load factor's interval t_rho). The engine tells a router
  how many packets wait, not their sizes: q counts each at the mean size of the packets that
  reached the link since the last load factor (data packets' size when none did), exact where the
  queue holds one kind and close where ACKs of two-way traffic queue with data.
- every t_rho (200 ms) the load factor of eq. (1), rho = (lambda + kappa_q q~) / (gamma C t_rho):
  lambda the bytes of every packet that reached the link in the interval (data and ACKs, dropped
  ones too), C the capacity at the update (bytes/s; a schedule changes it), gamma the target
  utilization (0.98), kappa_q = 0.5. Its code for the next interval is Fig. 2's: (01) low load
  below `LOW_LOAD` = 80 %, (10) high load below 100 %, (11) overload (codes 1, 2, 3; 0 is
  "not ECN-capable", which no VCP sender sends). Until its first update a link says low load.
- every data packet the link takes leaves with its code raised to the link's, if the link's is
  higher (a router only raises it): a sender learns the largest code along its path, which the
  receiver echoes in the ACK (the two ECN bits of the IP header, `HEADER` = ("load",)).

With `code_bits` = 8 (section 5, Fig. 13) the field carries the load factor itself, quantized
down to multiples of 1/128 below 2 (255 / 128 at most; "finer than 1 % precision"), and the
routers raise it the same way.

**Senders** (handshake, RTT estimator, retransmission timer and loss repair by going back:
`_explicit`). A sender keeps a window cwnd in packets and sends while fewer than floor(cwnd)
packets are unacknowledged (at least one). Each ACK that acknowledges new data (k packets) acts
on the code it echoes, with the flow's smoothed RTT rtt:

- MI, eq. (2), low load: cwnd += xi_s k, with xi = xi(80 %) = kappa (1 - 0.8) / 0.8 = 0.0625
  (eq. (5), kappa = 0.25) scaled by eq. (6), xi_s = (1 + xi)^(rtt / t_rho) - 1: over one RTT the
  window grows by the factor 1 + xi_s.
- AI, eq. (3), high load: cwnd += alpha_i k / cwnd, alpha_i = w_i alpha (rtt / t_rho)^2
  (eqs. (7)-(9); w_i the flow's weight, the network's `weight`): alpha_i packets per RTT.
- MD, eq. (4), overload: cwnd <- max(beta cwnd, 1) at once (beta = 0.875); then the window is
  frozen for t_rho, and for one RTT after that the sender runs AI whatever the code says
  (section 3.4): a flow makes at most one MD per load factor interval, and the codes it hears
  right after the freeze are those of packets sent before the MD took effect.

With `code_bits` = 8 the sender uses the load factor rho it hears (section 5): MI with
xi(rho) = kappa (1 - rho) / rho scaled by eq. (6) below 80 %, AI from 80 % to 100 %, and above
the MD by the factor 1 + xi(rho) (in (1 - kappa, 1]), with the same freeze.

**Bounds on the scaled gains** (sections 4.3 and 4.5 say VCP bounds them for large RTTs without
giving the bounds). They follow from the buffer the increase must fit in, with the paper's buffer
of max(BDP, 2 packets per flow):

- MI happens where the load is below the transition point rho_hat = 80 %; the increase of one
  RTT, by the factor 1 + xi_s, must not carry a link at rho_hat past full, or the whole increase
  beyond full lands in the queue before the code can change: rho_hat (1 + xi_s) <= 1, so
  xi_s <= 1 / rho_hat - 1 = 0.25 (`max_mi_gain`). The scaled xi_s of eq. (6) reaches it at
  rtt = t_rho log(1.25) / log(1.0625) = 3.68 t_rho = 736 ms. (With 8 bits the sender knows rho
  and the same rule reads xi_s <= 1 / rho - 1.)
- AI happens near full load, where the increase of one RTT goes to the queue: when every flow
  adds its alpha_i in the same RTT, the queue grows by their sum, and the part of the buffer every
  flow is sure of at any capacity is the 2 packets per flow of the paper's sizing (at low
  capacities the BDP is below it). So alpha_i <= 2 packets per RTT (`max_ai_packets`): it binds
  for a flow with weight w_i where w_i (rtt / t_rho)^2 > 2, for w_i = 1 from rtt = 283 ms.

Both are settings; neither was tuned to a figure.

**Pacing** (`pacing`; the paper does not say how its senders space their packets): "none" (the
default) sends each packet as soon as the window allows, so a small window crosses as one flight;
"window" spaces every window's packets srtt / window apart; "small" takes the rule of the authors'
public ns-2 sender (`Agent/TCP/Reno/VcpSrc`, read, not copied) for which windows to space and
how far: windows of 2 to 64 packets, srtt / 2^k apart for the smallest 2^k >= the window, only
where that exceeds t_rho / 2 (at an SRTT of 1.5 s windows up to 8 packets, of 0.8 s up to 4; none
at 0.2 s or less; the SRTT holds the queueing delay). Its own comment says it serves the start:
flows begin with a window of one packet, and an ACK clock keeps the spacing its first packets
had. Here a paced sender sends a data packet only when its window is open and a gap has passed
since its last one. That sender's mechanism differs: on each ACK it sends one packet at once and
defers one more by the gap (its timer sends that one and is not armed again until the next
ACK), with the gap rounded down to its 10 ms ticks and its SRTT in whole ticks.

**Loss** (`_explicit.WindowSender`, as XCP's): as TCP, which VCP's senders keep for the rare
loss: the window halves when the sender goes back on three duplicate ACKs and falls to one packet
on a timeout. The retransmission timer's floor is 200 ms (`min_rto`). The senders take one RTT
sample per window by default (`rtt_samples` "window", `_explicit`), as ns-2's TCP agent does
(the authors' public ns-2 sender, `Agent/TCP/Reno/VcpSrc`, is built on it and keeps its
timing). With a sample per ACK ("ack") the timer of a sender whose window crosses as one flight
can fire without a loss when the next flight queues longer than max(1 ms, 4 RTTVAR) more; the
timeouts of a run of the paper's Fig. 4 at 800 ms, with 50 flows each way at a tenth of its
capacity, read as that (RESULTS, "One RTT sample per window").

Units: windows in packets, times in seconds, the capacity in bytes/s inside the routers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ...errors import ParameterError
from ..exact import DATA, flow_index, on_grid
from ..settings import FieldSettings
from ._explicit import (WindowSender, capacity_at, mean_arrival_bytes, require_positive, require_rtt_samples,
                        require_window, shared_params)

#: The header field: the load code (2 bits) or the quantized load factor (8 bits).
HEADER = ("load",)
LOAD = 0
#: The load factor transition point of Fig. 2: low load below, high load from it to 100 %.
LOW_LOAD = 0.8
#: The bounds on the scaled gains a sender uses when none is set (module docstring): the MI gain
#: one round from the transition point may not carry a link past full, 1 / 0.8 - 1; the AI step,
#: the 2 packets per flow of the paper's buffer sizing, in packets per RTT.
MAX_MI_GAIN = 1.0 / LOW_LOAD - 1.0
MAX_AI_PACKETS = 2.0
#: The pacing settings (module docstring): none, every window over the smoothed RTT, or small
#: windows only, as the authors' public ns-2 sender.
PACING = ("none", "window", "small")
#: The largest window the "small" pacing spaces, packets.
PACED_WINDOW_MAX = 64
#: The 2-bit codes of Fig. 2.
LOW, HIGH, OVERLOAD = 1.0, 2.0, 3.0
CODE_BITS = (2, 8)
#: The 8-bit load factor's step (the field holds rho quantized down to a multiple of it).
LOAD_STEP = 1.0 / 128.0
#: The largest 8-bit load factor (code 255).
LOAD_MAX = 255.0 * LOAD_STEP


class VCPParams(NamedTuple):
    kappa: jax.Array
    alpha: jax.Array
    beta: jax.Array
    gamma: jax.Array
    kappa_q: jax.Array
    t_rho: jax.Array
    t_q: jax.Array
    max_mi_gain: jax.Array
    max_ai_packets: jax.Array
    weight: jax.Array  # (F,) per flow of the run
    packet_bytes: jax.Array
    initial_window: jax.Array  # packets
    schedule_s: jax.Array  # (L, S) the capacity's change times
    capacity_pps: jax.Array  # (L, S)
    min_rto: jax.Array
    initial_rto: jax.Array
    rtt_per_window: jax.Array
    pacing: jax.Array  # the index of the setting in PACING


def mi_gain(kappa: float, load: float = LOW_LOAD) -> float:
    """xi(rho) of eq. (5): kappa (1 - rho) / rho; xi(80 %) = 0.0625 for kappa = 0.25."""
    return kappa * (1.0 - load) / load


def scaled_mi_gain(xi, rtt_s, t_rho_s):
    """xi_s of eq. (6): (1 + xi)^(rtt / t_rho) - 1."""
    return (1.0 + xi) ** (rtt_s / t_rho_s) - 1.0


def scaled_ai_gain(alpha, rtt_s, t_rho_s, weight=1.0):
    """alpha_i of eqs. (8)-(9): weight alpha (rtt / t_rho)^2 packets per RTT."""
    return weight * alpha * (rtt_s / t_rho_s) ** 2


def load_code(load, code_bits: int):
    """The code a router writes for load factor `load`: Fig. 2's 1 (low), 2 (high), 3 (overload)
    for 2 bits; the load factor quantized down to a multiple of 1/128, at most 255/128, for 8."""
    if code_bits == 2:
        return jnp.where(load < LOW_LOAD, LOW, jnp.where(load < 1.0, HIGH, OVERLOAD))
    return jnp.clip(jnp.floor(load / LOAD_STEP) * LOAD_STEP, 0.0, LOAD_MAX)


def _flow_weights(network, plan, tables) -> np.ndarray:
    """Each flow of the run's weight: that of the network flow (route) it takes."""
    width = plan.n_flows
    route = np.zeros(width, dtype=np.int64)
    for t in tables:
        r = np.broadcast_to(np.asarray(t.route, dtype=np.int64), (len(t),))
        route[: len(r)] = r
    return network.weights[route]


@dataclass(frozen=True)
class VCP(WindowSender, FieldSettings):
    """VCP with Table 1's parameters by default: t_rho = 200 ms, t_q = 10 ms, gamma = 0.98,
    kappa_q = 0.5, kappa = 0.25, alpha = 1.0, beta = 0.875; code_bits 2 (Fig. 2) or 8 (the load
    factor itself, Fig. 13); max_mi_gain and max_ai_packets bound the scaled gains (module
    docstring; None: the bounds derived there, 1 / 0.8 - 1 and 2 packets); initial_window in
    packets (>= 1); min_rto_s (> 0); rtt_samples "window" (one RTT sample per window, ns-2's) or
    "ack" (one per ACK that acknowledges new data); pacing "none", "window" or "small" (module
    docstring). Flow weights (eq. (9)) are the network's."""

    t_rho_s: float = 0.2
    t_q_s: float = 0.01
    gamma: float = 0.98
    kappa_q: float = 0.5
    kappa: float = 0.25
    alpha: float = 1.0
    beta: float = 0.875
    code_bits: int = field(default=2, metadata={"unit": "bits"})
    max_mi_gain: float | None = field(default=None, metadata={"none": "1 / 0.8 - 1 = 0.25"})
    max_ai_packets: float | None = field(default=None, metadata={"unit": "packets", "none": "2 packets"})
    initial_window: float = field(default=1.0, metadata={"unit": "packets"})
    min_rto_s: float = 0.2
    rtt_samples: str = "window"
    pacing: str = "none"
    name = "vcp"
    header_size = len(HEADER)
    rate_field = LOAD  # (the base class's `rate` then holds the last code; unused)

    def __post_init__(self):
        require_positive("t_rho", self.t_rho_s, "a load factor interval > 0 s")
        require_positive("t_q", self.t_q_s, "a queue sampling interval > 0 s")
        if self.t_q_s > self.t_rho_s:
            raise ParameterError("t_q", self.t_q_s, f"a queue sampling interval <= t_rho ({self.t_rho_s} s)")
        require_positive("gamma", self.gamma, "a target utilization > 0")
        require_positive("kappa_q", self.kappa_q, "a queue gain > 0")
        require_positive("kappa", self.kappa, "an MI coefficient > 0")
        require_positive("alpha", self.alpha, "an AI step > 0 packets")
        if isinstance(self.beta, bool) or not (isinstance(self.beta, (int, float)) and 0 < self.beta < 1):
            raise ParameterError("beta", self.beta, "an MD factor in (0, 1)")
        if isinstance(self.code_bits, bool) or self.code_bits not in CODE_BITS:
            raise ParameterError("code_bits", self.code_bits, "a code width of 2 or 8 bits")
        if self.max_mi_gain is not None:
            require_positive("max_mi_gain", self.max_mi_gain, "a bound > 0 on the scaled MI gain, or none")
        if self.max_ai_packets is not None:
            require_positive("max_ai_packets", self.max_ai_packets, "a bound > 0 packets per RTT, or none")
        require_positive("min_rto", self.min_rto_s, "a minimum RTO > 0 s")
        require_window("initial_window", self.initial_window)
        require_rtt_samples(self.rtt_samples)
        if self.pacing not in PACING:
            raise ParameterError("pacing", self.pacing, f"one of {', '.join(map(repr, PACING))} (module docstring)")

    def params(self, network, plan, tables) -> VCPParams:
        scalar = lambda v: jnp.asarray(float(v))  # noqa: E731
        return VCPParams(kappa=scalar(self.kappa), alpha=scalar(self.alpha), beta=scalar(self.beta),
                         gamma=scalar(self.gamma), kappa_q=scalar(self.kappa_q), t_rho=scalar(self.t_rho_s),
                         t_q=scalar(self.t_q_s),
                         max_mi_gain=scalar(MAX_MI_GAIN if self.max_mi_gain is None else self.max_mi_gain),
                         max_ai_packets=scalar(MAX_AI_PACKETS if self.max_ai_packets is None else self.max_ai_packets),
                         weight=jnp.asarray(_flow_weights(network, plan, tables)),
                         packet_bytes=scalar(plan.data_bytes), initial_window=scalar(math.floor(self.initial_window)),
                         pacing=jnp.asarray(PACING.index(self.pacing), jnp.int32),
                         **shared_params(plan, self.min_rto_s, self.rtt_samples))

    def compiled_settings(self) -> dict:
        """Only the code width builds the program; every other setting reaches it as an argument
        (`params`), so that runs of other gains, intervals or bounds share one compilation."""
        return {"code_bits": self.code_bits}

    # ------------------------------------------------------------------------ routers
    def router_init(self, params: VCPParams, n_links: int):
        zeros = jnp.zeros(n_links)
        return {"next_sample": jnp.full(n_links, params.t_q), "next": jnp.full(n_links, params.t_rho),
                "input_bytes": zeros, "input_packets": zeros, "queue": zeros,
                "load": zeros, "code": load_code(zeros, self.code_bits)}

    def router_next(self, router, params, link):
        return jnp.minimum(router["next_sample"][link], router["next"][link])

    def router_timer(self, router, params: VCPParams, link, now, waiting):
        mean_size = mean_arrival_bytes(router, link, params.packet_bytes)
        sample = now >= router["next_sample"][link]
        weight = params.t_q / params.t_rho
        queue = jnp.where(sample, (1.0 - weight) * router["queue"][link] + weight * waiting * mean_size,
                          router["queue"][link])
        update = now >= router["next"][link]
        capacity = capacity_at(params.schedule_s, params.capacity_pps, link, now)
        load = ((router["input_bytes"][link] + params.kappa_q * queue)
                / (params.gamma * capacity * params.packet_bytes * params.t_rho))  # eq. (1)
        at = {"next_sample": jnp.where(sample, on_grid(router["next_sample"][link] + params.t_q),
                                       router["next_sample"][link]),
              "queue": queue,
              "next": jnp.where(update, on_grid(router["next"][link] + params.t_rho), router["next"][link]),
              "input_bytes": jnp.where(update, 0.0, router["input_bytes"][link]),
              "input_packets": jnp.where(update, 0.0, router["input_packets"][link]),
              "load": jnp.where(update, load, router["load"][link]),
              "code": jnp.where(update, load_code(load, self.code_bits), router["code"][link])}
        return {name: value.at[link].set(at[name]) for name, value in router.items()}

    def router_packet(self, router, params: VCPParams, link, now, kind, header, waiting, accepted):
        size = jnp.where(kind == DATA, params.packet_bytes, self.ack_bytes)
        router = {**router, "input_bytes": router["input_bytes"].at[link].add(size),
                  "input_packets": router["input_packets"].at[link].add(1.0)}
        mark = accepted & (kind == DATA)
        header = header.at[LOAD].set(jnp.where(mark, jnp.maximum(header[LOAD], router["code"][link]), header[LOAD]))
        return router, header

    def observe(self, router, params):
        """Per link: the last load factor (eq. (1)), the code in force, the persistent queue (bytes)."""
        return {"vcp_load": router["load"], "vcp_code": router["code"], "vcp_queue_bytes": router["queue"]}

    # ------------------------------------------------------------------------ sources
    def extra_state(self, n: int) -> dict:
        return {"cwnd": jnp.zeros(n), "freeze_until": jnp.full(n, -jnp.inf), "ai_until": jnp.full(n, -jnp.inf),
                "mi_acks": jnp.zeros(n, jnp.int32), "ai_acks": jnp.zeros(n, jnp.int32),
                "decreases": jnp.zeros(n, jnp.int32), "last_decrease": jnp.full(n, -jnp.inf),
                "pace_next": jnp.full(n, jnp.inf), "pace_due": jnp.ones(n, bool)}

    def init(self, params, flows, key):
        s = super().init(params, flows, key)
        shape = flows.start.shape
        return {**s, "cwnd": jnp.full(shape, params.initial_window)}

    def report(self, state):
        """Per flow at the end: the window (packets), the MDs made (`decreases`) and when the last
        one was (s; -inf: none), and the ACKs that applied MI and AI."""
        return {**super().report(state), "cwnd": state["cwnd"], "decreases": state["decreases"],
                "last_decrease": state["last_decrease"], "mi_acks": state["mi_acks"], "ai_acks": state["ai_acks"]}

    def window_unit(self, params):
        return 1.0  # the window is in packets

    def after_loss_ack(self, s, params: VCPParams, flows, now, ack, una, back):
        # (a go-back has halved the window already; it applies no code)
        acked = (s["snd_una"] - una).astype(jnp.float64)
        new = acked > 0
        load = ack.header[:, LOAD]
        rtt = s["srtt"]
        weight = params.weight[flow_index(flows)]
        if self.code_bits == 2:
            low, over = load == LOW, load == OVERLOAD
            xi = mi_gain(params.kappa)
            mi_cap = params.max_mi_gain
            md_factor = params.beta
        else:
            low, over = load < LOW_LOAD, load >= 1.0
            safe = jnp.maximum(load, LOAD_STEP)
            xi = params.kappa * (1.0 - safe) / safe  # eq. (11); negative above 1
            mi_cap = 1.0 / safe - 1.0
            md_factor = 1.0 + xi
        frozen = now < s["freeze_until"]
        forced_ai = ~frozen & (now < s["ai_until"])
        free = new & ~frozen & ~forced_ai & ~back
        mi = free & low
        md = free & over
        ai = new & ~back & ((forced_ai) | (free & ~low & ~over))
        xi_s = jnp.minimum(scaled_mi_gain(jnp.maximum(xi, 0.0), rtt, params.t_rho), mi_cap)
        alpha_i = jnp.minimum(scaled_ai_gain(params.alpha, rtt, params.t_rho, weight), params.max_ai_packets)
        cwnd = s["cwnd"]
        cwnd = jnp.where(mi, cwnd + xi_s * acked, cwnd)
        cwnd = jnp.where(ai, cwnd + alpha_i * acked / jnp.maximum(cwnd, 1.0), cwnd)
        cwnd = jnp.where(md, jnp.maximum(md_factor * cwnd, 1.0), cwnd)
        freeze = on_grid(now + params.t_rho)
        return self.unpaced_hold_a_token({**s, "cwnd": cwnd,
                "freeze_until": jnp.where(md, freeze, s["freeze_until"]),
                "ai_until": jnp.where(md, on_grid(freeze + rtt), s["ai_until"]),
                "mi_acks": s["mi_acks"] + mi, "ai_acks": s["ai_acks"] + ai,
                "decreases": s["decreases"] + md, "last_decrease": jnp.where(md, now, s["last_decrease"])}, params)

    def window_packets(self, s):
        """The window the sender sends with: whole packets, at least one."""
        return jnp.maximum(jnp.floor(s["cwnd"]), 1.0)

    def may_send(self, s, params, flows, now):
        open_ = (s["snd_nxt"] - s["snd_una"]).astype(jnp.float64) < self.window_packets(s)
        return open_ & ((self.pace_gap(s, params) <= 0.0) | s["pace_due"])

    # Pacing (module docstring): a sender whose gap is > 0 spends a token (`pace_due`) on each data
    # packet, and the next token comes a gap after it. A sender whose gap is 0 holds the token
    # (after each of its packets, ACKs and timers), so the pace instant is never behind `now` while
    # no token is held, when the gap becomes > 0 again, and none is pending while one is.
    def pace_gap(self, s, params):
        """The spacing of a sender's packets, s (0: not paced): srtt / window ("window"), or for
        windows of 2 to 64 packets srtt / the next power of 2 when that exceeds t_rho / 2 ("small")."""
        window = self.window_packets(s)
        power = 2.0  # the smallest power of 2 >= the window, exactly (a where-chain of literals)
        for bound in (2.0, 4.0, 8.0, 16.0, 32.0):
            power = jnp.where(window > bound, 2.0 * bound, power)
        small = s["srtt"] / power
        small = jnp.where((window >= 2.0) & (window <= PACED_WINDOW_MAX) & (small > params.t_rho / 2.0), small, 0.0)
        return jnp.where(params.pacing == 1, s["srtt"] / window, jnp.where(params.pacing == 2, small, 0.0))

    def unpaced_hold_a_token(self, s, params):
        return {**s, "pace_due": s["pace_due"] | (self.pace_gap(s, params) <= 0.0)}

    def on_time(self, s, params, flows, now, mask):
        return self.unpaced_hold_a_token(super().on_time(s, params, flows, now, mask), params)

    def pace_time(self, s, params):
        return jnp.where((self.pace_gap(s, params) > 0.0) & ~s["pace_due"], s["pace_next"], jnp.inf)

    def on_pace(self, s, params, paced):
        return {**s, "pace_due": s["pace_due"] | paced}

    def after_send(self, s, params, data, now):
        gap = self.pace_gap(s, params)
        return {**s, "pace_due": jnp.where(data, gap <= 0.0, s["pace_due"]),
                "pace_next": jnp.where(data, on_grid(now + gap), s["pace_next"])}

    def data_header(self, s, params, syn):
        first = LOW if self.code_bits == 2 else 0.0
        return jnp.full((syn.shape[0], 1), first)


__all__ = ["CODE_BITS", "HEADER", "LOAD_STEP", "LOW_LOAD", "MAX_AI_PACKETS", "MAX_MI_GAIN", "PACED_WINDOW_MAX", "PACING", "VCP", "VCPParams", "load_code", "mi_gain",
           "scaled_ai_gain", "scaled_mi_gain"]
