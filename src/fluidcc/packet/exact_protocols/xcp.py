"""XCP and iXCP for the exact engine: one protocol family (`variant` "xcp" or "ixcp").

XCP is Katabi, Handley and Rohrs, "Congestion control for high bandwidth-delay product
networks", SIGCOMM 2002; its rules are those the iXCP paper summarizes (section 2.1, eqs. (1)
and (2)). iXCP is Zan and Yang's change (iXCP paper, section 3, eq. (3)).

**Header** of every data packet, echoed by its ACK (`HEADER`): the sender's congestion window
`cwnd` (bytes), its RTT estimate `rtt` (s, its smoothed RTT; 0 on a SYN, which routers leave
alone), `feedback` (bytes; the sender puts `UNLIMITED`, a demand no router grants, and every
router may only lower it), and for iXCP `bottleneck` and `next_bottleneck` (link indices; -1 is
the sender's access link, which no router of the network owns).

**Routers**, per link, every control interval d, at their own instants:

- d = sum rtt_i s_i / sum s_i over the data packets the link took in the last interval (s_i =
  the packet's bytes): the mean RTT of its traffic; it starts at the mean RTT of the network's
  flows that cross the link, and stays as it was after an interval with no data.
- Efficiency controller, eq. (1): phi = alpha d (C - y) - beta Q (bytes), C the capacity at the
  update (bytes/s; a schedule changes it), y the input rate over the last interval (the bytes of
  every packet that reached the link, data and ACKs, dropped ones too, per second), Q the
  persistent queue: the smallest queue the arrivals of the interval found (and the queue at the
  update, if smaller), in bytes. The engine tells a router how many packets wait, not their
  sizes: Q counts each at the mean size of the packets that reached the link in the interval
  (data packets' size when none did), which is exact where the queue holds one kind and close
  where ACKs of two-way traffic queue with data.
- Fairness controller, eq. (2): h = max(0, gamma y d - |phi|) (bytes; gamma y d is the input
  traffic of one control interval). iXCP, eq. (3): h = max(0, gamma (y - y0) d - |phi|), y - y0
  the input rate of the data whose bottleneck is this link.
- Scale factors from the last interval's packets: xi_p = (h + max(phi, 0)) / (d sum rtt_i s_i /
  cwnd_i) and xi_n = (h + max(-phi, 0)) / (d sum s_i), the sums taken per control interval (over
  the last interval and times d / its length, in case d changed).

  In iXCP the spare bandwidth (max(phi, 0), max(-phi, 0)) is spread over every packet and the
  shuffled bandwidth h only over the packets whose bottleneck is this link; the scale factors are
  then one pair per part, each over the sums of its own packets. For XCP both parts go to every
  packet and this is the formula above.
- Per data packet the link takes: positive feedback p_i = xi_p rtt_i^2 s_i / cwnd_i, negative
  n_i = xi_n rtt_i s_i, and the header's feedback becomes min(feedback, p_i - n_i). Where the
  link lowers it, it also writes itself as `next_bottleneck` (iXCP section 3: it becomes the
  flow's new bottleneck; XCP carries the field too, for the record). The routers compute this
  when a packet reaches the link (the engine's routers see packets on arrival; XCP's router does
  so when it sends the packet on, one queueing delay later: the same factors unless an update
  falls in between).

**Senders** (handshake, RTT estimator, retransmission timer and loss repair by going back:
`_explicit`). On each ACK: cwnd <- max(cwnd + feedback, one packet) (bytes), and iXCP's
`bottleneck` <- the ACK's `next_bottleneck`. A sender sends while fewer than floor(cwnd / s)
packets are unacknowledged (at least one): the window the routers adjust in bytes, the sender
uses in whole packets. With `window_rounding` (the default, as ns-2's XCP and the iXCP paper's
section 4.1 describe) the header carries cwnd itself, which is larger than the window the sender
actually sends with when the window is not a whole number of packets: the routers hand it
positive feedback as if it sent more, which the iXCP paper holds responsible for its slight
under-utilization with many flows. Without it the header carries the window actually used,
floor(cwnd / s) s. On a loss a sender reacts as TCP does, which XCP's senders keep for the rare
loss: the window halves when it goes back on three duplicate ACKs, and falls to one packet on a
timeout. The retransmission timer's floor is RFC 6298's 1 s (2.4), not the 200 ms of the RCP and
QCP senders here: XCP keeps queues short and steady, so RTTVAR falls close to 0 and SRTT + 4
RTTVAR sits within a few milliseconds of the RTT; with a floor of 200 ms, flows whose RTT is
near 200 ms time out whenever a queue adds a few milliseconds, go back and resend what the
receiver has (measured on the five-hop network at the paper's capacities: two of its 80 flows
kept at a quarter of their rate by repeated spurious timeouts).

Defaults: alpha = 0.4, beta = 0.226, gamma = 0.1 (the iXCP paper's section 4, XCP's values).
XCP's stability condition is 0 < alpha < pi / (4 sqrt 2) and beta = alpha^2 sqrt 2 (XCP paper,
Theorem 1; `fluidcc.models.xcp`): gains that break it are allowed, with a warning naming it.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ...errors import ParameterError
from ..exact import DATA, link_mean_rtt, on_grid
from ..settings import FieldSettings
from ._explicit import (UNLIMITED, WindowSender, mean_arrival_bytes, ratio_or, require_positive, require_window,
                        shared_params)

VARIANTS = ("xcp", "ixcp")
#: The header fields, in order.
HEADER = ("cwnd", "rtt", "feedback", "bottleneck", "next_bottleneck")
CWND, RTT, FEEDBACK, BOTTLENECK, NEXT_BOTTLENECK = range(len(HEADER))
#: The link id of a sender's access link (no router of the network has it).
ACCESS_LINK = -1
#: How far beta may be from alpha^2 sqrt 2 (relative) before the stability warning: the paper's
#: beta = 0.226 is alpha^2 sqrt 2 = 0.2263 for alpha = 0.4, rounded.
BETA_TOLERANCE = 0.01


class XCPParams(NamedTuple):
    alpha: jax.Array
    beta: jax.Array
    gamma: jax.Array
    packet_bytes: jax.Array  # s_i of a data packet
    ack_bytes: jax.Array  # of every other packet on a link
    initial_window: jax.Array  # bytes
    initial_interval: jax.Array  # (L,) s
    schedule_s: jax.Array  # (L, S) the capacity's change times
    capacity_pps: jax.Array  # (L, S)
    min_rto: jax.Array
    initial_rto: jax.Array
    rtt_per_window: jax.Array
    ixcp: jax.Array  # the variant: iXCP's routers shuffle among the flows bottlenecked at the link


def initial_intervals(network) -> np.ndarray:
    """Each link's first control interval, s: the mean RTT of the network's flows that cross it; a
    link no flow's data crosses (one that carries only ACKs, say) takes the mean RTT of all the
    flows, so that its router, which never measures one, does not update at a tiny interval;
    at least 1 ms."""
    crossed = np.array([bool(network.flows_on(l)) for l in range(network.n_links)])
    mean = link_mean_rtt(network)
    overall = float(np.mean(network.rtt_s)) if network.n_flows else 0.0
    return np.maximum(np.where(crossed, mean, overall), 1e-3)


class XCPStabilityWarning(UserWarning):
    """XCP's gains outside its stability condition (the run goes ahead)."""


def stability_violation(alpha: float, beta: float) -> str | None:
    """What of XCP's stability condition 0 < alpha < pi / (4 sqrt 2), beta = alpha^2 sqrt 2 (within
    `BETA_TOLERANCE`) the gains break, or None."""
    problems = []
    if not alpha < math.pi / (4 * math.sqrt(2)):
        problems.append(f"alpha = {alpha} is not below pi / (4 sqrt 2) = {math.pi / (4 * math.sqrt(2)):.4f}")
    best = alpha * alpha * math.sqrt(2)
    if abs(beta - best) > BETA_TOLERANCE * best:
        problems.append(f"beta = {beta} is not alpha^2 sqrt 2 = {best:.4f} (within {BETA_TOLERANCE:.0%})")
    return "; ".join(problems) or None


@dataclass(frozen=True)
class XCP(WindowSender, FieldSettings):
    """XCP (variant "xcp") or iXCP (variant "ixcp"): gains alpha, beta, gamma (> 0; defaults 0.4,
    0.226, 0.1), initial_window in packets (>= 1; whole packets, rounded down), window_rounding (the header carries the
    unrounded window while the sender sends whole packets, as ns-2 does; see the module
    docstring), min_rto_s (s > 0; default 1 s, RFC 6298's minimum: see the module docstring)."""

    alpha: float = 0.4
    beta: float = 0.226
    gamma: float = 0.1
    variant: str = "xcp"
    initial_window: float = field(default=1.0, metadata={"unit": "packets"})
    window_rounding: bool = True
    min_rto_s: float = 1.0
    name = "xcp"
    header_size = len(HEADER)
    #: XCP and iXCP run one program (`fluidcc.packet._run_exact.compile_key`): the variant is an
    #: argument. A subclass of either builds its own (its code may differ).
    program_class = property(lambda self: XCP if type(self) in (XCP, IXCP) else type(self))
    rate_field = FEEDBACK  # (the base class's `rate` then holds the last feedback; unused)

    def __post_init__(self):
        require_positive("alpha", self.alpha, "a gain > 0")
        require_positive("beta", self.beta, "a gain > 0")
        require_positive("gamma", self.gamma, "a gain > 0")
        require_positive("min_rto", self.min_rto_s, "a minimum RTO > 0 s")
        if self.variant not in VARIANTS:
            raise ParameterError("variant", self.variant, f"one of {', '.join(VARIANTS)}")
        require_window("initial_window", self.initial_window)
        if not isinstance(self.window_rounding, bool):
            raise ParameterError("window_rounding", self.window_rounding, "true or false")
        problem = stability_violation(float(self.alpha), float(self.beta))
        if problem:
            warnings.warn(f"XCP gains outside XCP's stability condition: {problem}", XCPStabilityWarning,
                          stacklevel=3)

    def params(self, network, plan, tables) -> XCPParams:
        return XCPParams(alpha=jnp.asarray(float(self.alpha)), beta=jnp.asarray(float(self.beta)),
                         gamma=jnp.asarray(float(self.gamma)), packet_bytes=jnp.asarray(float(plan.data_bytes)),
                         ack_bytes=jnp.asarray(float(plan.ack_bytes)),
                         initial_window=jnp.asarray(math.floor(self.initial_window) * float(plan.data_bytes)),
                         initial_interval=jnp.asarray(initial_intervals(network)),
                         **shared_params(plan, self.min_rto_s), ixcp=jnp.asarray(self.variant == "ixcp"))

    def compiled_settings(self) -> dict:
        """Every setting but the variant, which reaches the program as an argument (`params.ixcp`):
        XCP and iXCP on one network share a compilation."""
        return {name: value for name, value in self.settings().items() if name != "variant"}

    # ------------------------------------------------------------------------ routers
    def router_init(self, params: XCPParams, n_links: int):
        zeros = jnp.zeros(n_links)
        return {"next": params.initial_interval, "last": zeros, "d": params.initial_interval,
                "input_bytes": zeros, "input_packets": zeros, "queue": jnp.full(n_links, jnp.inf),
                # over the data the link took in the interval: sum rtt s, sum s, sum rtt s / cwnd
                "rtt_bytes": zeros, "bytes": zeros, "per_window": zeros,
                # the same over the data bottlenecked here (iXCP; for XCP, every packet)
                "own_bytes": zeros, "own_per_window": zeros,
                # the factors in force: spare bandwidth (every packet) and shuffled (own packets)
                "xi_p": zeros, "xi_n": zeros, "xi_p_shuffle": zeros, "xi_n_shuffle": zeros,
                "phi": zeros, "shuffle": zeros}

    def router_timer(self, router, params: XCPParams, link, now, waiting):
        capacity, elapsed = self.update_inputs(router, params, link, now)
        capacity_Bps = capacity * params.packet_bytes
        data_bytes = router["bytes"][link]
        d = ratio_or(router["rtt_bytes"][link], data_bytes, router["d"][link])
        y = router["input_bytes"][link] / elapsed  # bytes/s
        queue = jnp.minimum(router["queue"][link], waiting) * mean_arrival_bytes(router, link, params.packet_bytes)
        phi = params.alpha * d * (capacity_Bps - y) - params.beta * queue  # eq. (1), bytes
        own = jnp.where(params.ixcp, router["own_bytes"][link] / elapsed, y)
        shuffle = jnp.maximum(0.0, params.gamma * own * d - jnp.abs(phi))  # eq. (2) / eq. (3), bytes
        per_interval = d / elapsed  # the sums of the last interval, per control interval

        def share(amount, total):
            return ratio_or(amount, total * per_interval * d, 0.0)

        # (for XCP every data packet is its own: the "own" sums are the sums over all)
        at = {"xi_p": share(jnp.maximum(phi, 0.0), router["per_window"][link]),
              "xi_n": share(jnp.maximum(-phi, 0.0), router["bytes"][link]),
              "xi_p_shuffle": share(shuffle, router["own_per_window"][link]),
              "xi_n_shuffle": share(shuffle, router["own_bytes"][link]),
              "phi": phi, "shuffle": shuffle, "d": d, "last": now, "next": on_grid(now + d),
              "input_bytes": 0.0, "input_packets": 0.0, "queue": jnp.inf, "rtt_bytes": 0.0, "bytes": 0.0, "per_window": 0.0,
              "own_bytes": 0.0, "own_per_window": 0.0}
        return {name: value.at[link].set(at[name]) for name, value in router.items()}

    def router_packet(self, router, params: XCPParams, link, now, kind, header, waiting, accepted):
        size = jnp.where(kind == DATA, params.packet_bytes, params.ack_bytes)
        rtt, cwnd = header[RTT], jnp.maximum(header[CWND], params.packet_bytes)
        counted = accepted & (kind == DATA) & (rtt > 0)
        own = counted & (jnp.logical_not(params.ixcp) | (header[BOTTLENECK] == link))
        s = params.packet_bytes
        added = {"input_bytes": size, "input_packets": 1.0, "rtt_bytes": jnp.where(counted, rtt * s, 0.0),
                 "bytes": jnp.where(counted, s, 0.0), "per_window": jnp.where(counted, rtt * s / cwnd, 0.0),
                 "own_bytes": jnp.where(own, s, 0.0), "own_per_window": jnp.where(own, rtt * s / cwnd, 0.0)}
        own_share = own.astype(jnp.float64)
        positive = (router["xi_p"][link] + own_share * router["xi_p_shuffle"][link]) * rtt * rtt * s / cwnd
        negative = (router["xi_n"][link] + own_share * router["xi_n_shuffle"][link]) * rtt * s
        feedback = positive - negative
        lower = counted & (feedback < header[FEEDBACK])
        header = header.at[FEEDBACK].set(jnp.where(lower, feedback, header[FEEDBACK]))
        header = header.at[NEXT_BOTTLENECK].set(jnp.where(lower, jnp.asarray(link, header.dtype), header[NEXT_BOTTLENECK]))
        router = {**router, "queue": router["queue"].at[link].min(waiting),
                  **{name: router[name].at[link].add(value) for name, value in added.items()}}
        return router, header

    def observe(self, router, params):
        return {"xcp_interval": router["d"], "xcp_phi": router["phi"], "xcp_shuffle": router["shuffle"]}

    # ------------------------------------------------------------------------ sources
    def extra_state(self, n: int) -> dict:
        return {"cwnd": jnp.zeros(n), "bottleneck": jnp.full(n, float(ACCESS_LINK))}

    def init(self, params, flows, key):
        s = super().init(params, flows, key)
        return {**s, "cwnd": jnp.full(flows.start.shape, params.initial_window)}

    def report(self, state):
        """Per flow at the end: the window (bytes) and the link the last ACK named as the flow's
        bottleneck (`next_bottleneck`; -1: none yet)."""
        return {**super().report(state), "cwnd_bytes": state["cwnd"], "bottleneck": state["bottleneck"]}

    def window_packets(self, s, params):
        """The window the sender sends with: whole packets, at least one."""
        return jnp.maximum(jnp.floor(s["cwnd"] / params.packet_bytes), 1.0)

    def window_unit(self, params):
        return params.packet_bytes  # the window is in bytes

    def after_ack(self, s, params, now, opened, is_ack, ack):
        # feedback no router lowered (none on the path computed one) is no change
        feedback = jnp.where(ack.header[:, FEEDBACK] >= UNLIMITED, 0.0, ack.header[:, FEEDBACK])
        cwnd = jnp.maximum(s["cwnd"] + feedback, params.packet_bytes)
        return {**s, "cwnd": jnp.where(is_ack, cwnd, s["cwnd"]),
                "bottleneck": jnp.where(is_ack, ack.header[:, NEXT_BOTTLENECK], s["bottleneck"])}

    def may_send(self, s, params, flows, now):
        return (s["snd_nxt"] - s["snd_una"]).astype(jnp.float64) < self.window_packets(s, params)

    def data_header(self, s, params, syn):
        declared = s["cwnd"] if self.window_rounding else self.window_packets(s, params) * params.packet_bytes
        return jnp.stack([declared, jnp.where(syn, 0.0, s["srtt"]), jnp.full(syn.shape, UNLIMITED),
                          s["bottleneck"], s["bottleneck"]], axis=1)


@dataclass(frozen=True)
class IXCP(XCP):
    """iXCP: XCP whose routers shuffle bandwidth only among the flows bottlenecked at the link
    (iXCP paper, section 3); the same settings as `XCP`, variant "ixcp" by default."""

    variant: str = "ixcp"
    name = "ixcp"


__all__ = ["ACCESS_LINK", "HEADER", "IXCP", "VARIANTS", "XCP", "XCPParams", "XCPStabilityWarning",
           "stability_violation"]
