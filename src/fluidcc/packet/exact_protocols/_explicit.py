"""What the explicit senders of the exact engine share (RCP, QCP, XCP, VCP): the handshake, the RTT
estimator, the retransmission timer and loss repair by going back; each protocol says when a
data packet may leave and what header it carries. (What follows of rates is RCP's and QCP's:
XCP's and VCP's senders keep a window from their ACKs' feedback and halve it on a loss,
`WindowSender`.)

**Handshake.** A flow's SYN carries an unlimited rate field; its SYN-ACK brings the smallest
rate of the routers on the path, and from then on the flow follows the rate its ACKs echo (field
`rate_field` of the header). A SYN without its SYN-ACK is sent again after the initial RTO (1 s),
doubling.

**RTT and timer.** RFC 6298's estimator on the echoed send times (the first sample from the
SYN-ACK); RTO = SRTT + max(1 ms, 4 RTTVAR) within [min_rto, 60 s], doubled on a timeout; the
timer restarts on every ACK that acknowledges new data. The samples come from every such ACK
(`rtt_samples` "ack"), or one per window ("window"), as ns-2's TCP agent takes them without its
timestamp option (it times one packet at a time, the next sent after the last sample): here the
ACK of a packet sent at or after the last sample. The estimator's gains (1/8, 1/4) are RFC
6298's per sample, so with a sample per ACK its memory is 8 / W round trips at a window of W
packets: once the samples are steady, RTTVAR shrinks to the spread of one window's ACKs, and
when a window crosses as one flight, the timer expires without a loss if the next flight's
first ACK comes later than the RTO after the last flight's last one (RTO - SRTT is max(1 ms, 4
RTTVAR) above the floor). With one sample per window the memory is in round trips whatever the
window, and RTTVAR holds how the RTT moves from one round trip to the next (RESULTS, VCP's Fig.
4). Unlike ns-2's agent, which drops the timing on a timeout and times only new data (Karn's
rule: its ACKs carry no send time), a sample here may come from a resent packet or from a late
ACK after a timeout: the echoed send time makes either exact.

**Loss repair** by going back: on the third duplicate ACK, and on a timeout, the flow resends
from its first unacknowledged packet, at most once per window (not again before the packets sent
up to then are acknowledged). The receiver answers the resent packets it already had with
duplicate ACKs, which are not a loss: when the repair's ACK jumps from `una` to `A`, the copies
sent after the repair and below `A` (`min(snd_nxt, A) - una - 1` of them, behind it on the same
FIFO path) are counted, and as many duplicate ACKs are ignored. A loss does not change the rate:
the routers set it.
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from ...errors import ParameterError
from ..exact import ACK, DATA, SYN, SYNACK, ExactProtocol, Packet, on_grid

UNLIMITED = 1e12
MAX_RTO_S = 60.0
#: The RTT sampling settings: a sample from every ACK that acknowledges new data, or one per window.
RTT_SAMPLES = ("ack", "window")
#: The smallest rate a router offers, as a fraction of its capacity.
MIN_RATE_FRACTION = 1e-4


def require_positive(name: str, value, allowed: str) -> None:
    """A setting that must be a finite number > 0 (else an error naming it)."""
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ParameterError(name, value, allowed)


def require_fraction(name: str, value, allowed: str) -> None:
    """A setting that must be a number in (0, 1] (else an error naming it)."""
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and 0 < value <= 1):
        raise ParameterError(name, value, allowed)


def require_window(name: str, value) -> None:
    """A window setting: a finite number of packets >= 1 (else an error naming it)."""
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 1):
        raise ParameterError(name, value, "a window >= 1 packet")


def shared_params(plan, min_rto_s: float, rtt_samples: str = "ack") -> dict:
    """The parameters every explicit-rate protocol's params carry: the links' capacity schedules
    (schedule_s (L, S), capacity_pps (L, S)), the sources' minimum and initial RTO (s) and whether
    they take one RTT sample per window (`rtt_samples` "window") or one per ACK ("ack")."""
    return {"schedule_s": jnp.asarray(plan.schedule_s), "capacity_pps": jnp.asarray(plan.capacity_Bps / plan.data_bytes),
            "min_rto": jnp.asarray(float(min_rto_s)), "initial_rto": jnp.asarray(max(1.0, min_rto_s)),
            "rtt_per_window": jnp.asarray(rtt_samples == "window")}


def require_rtt_samples(value) -> None:
    """The RTT sampling setting: "ack" or "window" (else an error naming it)."""
    if value not in RTT_SAMPLES:
        raise ParameterError("rtt_samples", value, "'ack' (a sample per ACK) or 'window' (one per window)")


def capacity_at(schedule_s, capacity_pps, link, now):
    """Link `link`'s capacity (packets/s) at `now`, from its schedule rows (L, S)."""
    which = jnp.searchsorted(schedule_s[link], now, side="right") - 1
    return capacity_pps[link, which]


def ratio_or(numerator, denominator, otherwise):
    """numerator / denominator where the denominator is > 0, else `otherwise` (no division by 0
    is evaluated, so neither value nor gradient is NaN)."""
    some = denominator > 0
    return jnp.where(some, numerator / jnp.where(some, denominator, 1.0), otherwise)


def mean_arrival_bytes(router, link, default_bytes):
    """The mean size (bytes) of the packets that reached link `link` since its router last
    cleared router["input_bytes"] and router["input_packets"]; `default_bytes` when none did.
    (The engine tells a router how many packets wait, not their sizes: a window router counts a
    queue in bytes at this size.)"""
    return ratio_or(router["input_bytes"][link], router["input_packets"][link], default_bytes)


class ExplicitRateSender(ExactProtocol):
    """The sender side of an explicit-rate protocol. Subclasses give `rate_field` (the header field
    the routers lower to their rate), `pace_time` (the next instant a paced sender sends; inf for
    none), `may_send` (a data packet may leave now), `data_header` (the header fields of a packet)
    and `after_send` (their state after sending where `data`); `after_ack` may update their state
    on an ACK."""

    rate_field = 0

    # ------------------------------------------------------------------------ routers
    # Explicit-rate routers keep their next update instant in router["next"] and the last one in
    # router["last"], per link; their params carry the capacity schedule.
    def router_next(self, router, params, link):
        return router["next"][link]

    @staticmethod
    def update_inputs(router, params, link, now):
        """(the capacity at `now`, packets/s; the time since the last update, s) of link `link`."""
        capacity = capacity_at(params.schedule_s, params.capacity_pps, link, now)
        return capacity, jnp.maximum(now - router["last"][link], 1e-12)

    def lowered(self, header, rate, kind, accepted):
        """The header a data packet or SYN the link took leaves with: its rate field lowered to
        `rate` if that is smaller (other packets: unchanged)."""
        stamp = accepted & ((kind == DATA) | (kind == SYN))
        field = self.rate_field
        return jnp.where(stamp, header.at[field].set(jnp.minimum(header[field], rate)), header)

    # ------------------------------------------------------------------------ hooks
    def extra_state(self, n: int) -> dict:
        return {}

    def pace_time(self, s, params):
        return jnp.full(s["phase"].shape, jnp.inf)

    def may_send(self, s, params, flows, now):
        raise NotImplementedError

    def on_pace(self, s, params, paced):
        return s

    def after_ack(self, s, params, now, opened, is_ack, ack):
        return s

    def data_header(self, s, params, syn):
        raise NotImplementedError

    def after_send(self, s, params, data, now):
        return s

    # ------------------------------------------------------------------------ the contract
    def init(self, params, flows, key):
        n = flows.start.shape[0]
        zeros = jnp.zeros(n, jnp.int32)
        return {"phase": zeros, "syn_due": jnp.zeros(n, bool), "syn_at": jnp.full(n, jnp.inf),
                "syn_wait": jnp.full(n, params.initial_rto),
                "rate": jnp.zeros(n), "snd_una": zeros, "snd_nxt": zeros, "high_tx": zeros,
                "recover": zeros, "dupacks": zeros, "copies": zeros, "srtt": jnp.zeros(n), "rttvar": jnp.zeros(n),
                "rtt_from": jnp.zeros(n),
                "rto": jnp.full(n, params.initial_rto), "timer": jnp.full(n, jnp.inf), "timeouts": zeros,
                "goes_back": zeros, **self.extra_state(n)}

    def report(self, state):
        return {"timeouts": state["timeouts"], "goes_back": state["goes_back"]}

    def next_time(self, s, params, flows):
        starting = jnp.where((s["phase"] == 0) & ~s["syn_due"] & (flows.start < flows.stop), flows.start, jnp.inf)
        starting = jnp.minimum(starting, jnp.where((s["phase"] == 1) & ~s["syn_due"], s["syn_at"], jnp.inf))
        pace = jnp.where(s["phase"] == 2, self.pace_time(s, params), jnp.inf)
        rto = jnp.where(s["phase"] == 2, s["timer"], jnp.inf)
        return jnp.minimum(starting, jnp.minimum(pace, rto))

    def on_time(self, s, params, flows, now, mask):
        start = mask & (s["phase"] <= 1) & ~s["syn_due"]
        again = start & (s["phase"] == 1)
        expired = mask & (s["phase"] == 2) & (now >= s["timer"])
        timeout = expired & (s["high_tx"] > s["snd_una"])
        paced = mask & (s["phase"] == 2) & ~expired & (now >= self.pace_time(s, params))
        rto = jnp.where(timeout, jnp.minimum(2.0 * s["rto"], MAX_RTO_S), s["rto"])
        s = {**s, "phase": jnp.where(start, 1, s["phase"]), "syn_due": s["syn_due"] | start,
             "syn_wait": jnp.where(again, 2.0 * s["syn_wait"], s["syn_wait"]),
             "syn_at": jnp.where(start, jnp.inf, s["syn_at"]),
             "snd_nxt": jnp.where(timeout, s["snd_una"], s["snd_nxt"]),
             "recover": jnp.where(timeout, s["high_tx"], s["recover"]), "rto": rto,
             "timer": jnp.where(expired, jnp.where(timeout, on_grid(now + rto), jnp.inf), s["timer"]),
             "timeouts": s["timeouts"] + timeout}
        return self.on_pace(s, params, paced)

    def on_ack(self, s, params, flows, now, mask, ack):
        opened = mask & (ack.kind == SYNACK) & (s["phase"] == 1)
        is_ack = mask & (ack.kind == ACK) & (s["phase"] == 2)
        sample = now - ack.echo
        more = is_ack & (ack.ack_no > s["snd_una"])
        # per window: only the ACK of a packet sent after the last sample gives one (module docstring)
        timed = more & (~params.rtt_per_window | (ack.echo >= s["rtt_from"]))
        srtt = jnp.where(opened, sample, jnp.where(timed, s["srtt"] + (sample - s["srtt"]) / 8.0, s["srtt"]))
        rttvar = jnp.where(opened, sample / 2.0,
                           jnp.where(timed, s["rttvar"] + (jnp.abs(sample - s["srtt"]) - s["rttvar"]) / 4.0,
                                     s["rttvar"]))
        rto = jnp.where(opened | timed, jnp.clip(srtt + jnp.maximum(0.001, 4.0 * rttvar), params.min_rto, MAX_RTO_S),
                        s["rto"])
        rate = jnp.where(opened | is_ack, ack.header[:, self.rate_field], s["rate"])
        # a repair's ACK: the copies sent behind it that the receiver already has will come back
        # as duplicates (see the module's docstring)
        repaired = more & (s["snd_una"] < s["recover"])
        copies = jnp.maximum(jnp.minimum(s["snd_nxt"], ack.ack_no) - s["snd_una"] - 1, 0)
        same = is_ack & (ack.ack_no == s["snd_una"])
        echoed = same & (s["copies"] > 0)  # a copy's duplicate
        dup = same & ~echoed & (s["high_tx"] > s["snd_una"])
        copies = jnp.where(repaired, copies, jnp.where(more, 0, s["copies"] - echoed))
        dupacks = jnp.where(more, 0, jnp.where(dup, s["dupacks"] + 1, s["dupacks"]))
        back = dup & (dupacks == 3) & (s["snd_una"] >= s["recover"])
        snd_una = jnp.where(more, ack.ack_no, s["snd_una"])
        snd_nxt = jnp.where(back, snd_una, jnp.maximum(s["snd_nxt"], snd_una))
        timer = jnp.where(more | back, jnp.where(s["high_tx"] > snd_una, on_grid(now + rto), jnp.inf), s["timer"])
        s = {**s, "phase": jnp.where(opened, 2, s["phase"]), "syn_at": jnp.where(opened, jnp.inf, s["syn_at"]),
             "rate": rate, "srtt": srtt, "rttvar": rttvar, "rtt_from": jnp.where(opened | timed, now, s["rtt_from"]),
             "rto": rto, "snd_una": snd_una, "snd_nxt": snd_nxt, "dupacks": dupacks, "copies": copies,
             "recover": jnp.where(back, s["high_tx"], s["recover"]), "timer": timer,
             "goes_back": s["goes_back"] + back}
        return self.after_ack(s, params, now, opened, is_ack, ack)

    def ready(self, s, params, flows, now):
        data = (s["phase"] == 2) & (s["snd_nxt"] < flows.size) & (now < flows.stop)
        return s["syn_due"] | (data & self.may_send(s, params, flows, now))

    def send(self, s, params, flows, now, mask):
        syn = mask & s["syn_due"]
        data = mask & ~syn
        seq = s["snd_nxt"]
        snd_nxt = seq + data
        header = self.data_header(s, params, syn)
        packet = Packet(kind=jnp.where(syn, SYN, DATA).astype(jnp.int32), seq=seq.astype(jnp.int32), header=header)
        s = {**s, "syn_due": s["syn_due"] & ~syn, "syn_at": jnp.where(syn, on_grid(now + s["syn_wait"]), s["syn_at"]),
             "snd_nxt": snd_nxt, "high_tx": jnp.maximum(s["high_tx"], snd_nxt),
             "timer": jnp.where(data & jnp.isinf(s["timer"]), on_grid(now + s["rto"]), s["timer"])}
        return self.after_send(s, params, data, now), packet


class WindowSender(ExplicitRateSender):
    """An explicit sender that keeps a window `cwnd` (state field) from its ACKs' feedback (XCP,
    VCP) and reacts to a loss as TCP does, which these protocols keep for the rare loss: the
    window halves when the sender goes back on three duplicate ACKs and falls to one packet on a
    timeout. `window_unit(params)` is one packet in the window's unit (bytes or packets);
    `after_loss_ack` gets the state after the halving and whether this ACK made the sender go back."""

    def window_unit(self, params):
        raise NotImplementedError

    def on_time(self, s, params, flows, now, mask):
        before = s["timeouts"]
        s = super().on_time(s, params, flows, now, mask)
        timeout = s["timeouts"] > before
        return {**s, "cwnd": jnp.where(timeout, self.window_unit(params), s["cwnd"])}

    def on_ack(self, s, params, flows, now, mask, ack):
        una, before = s["snd_una"], s["goes_back"]
        s = super().on_ack(s, params, flows, now, mask, ack)
        back = s["goes_back"] > before
        s = {**s, "cwnd": jnp.where(back, jnp.maximum(s["cwnd"] / 2.0, self.window_unit(params)), s["cwnd"])}
        return self.after_loss_ack(s, params, flows, now, ack, una, back)

    def after_loss_ack(self, s, params, flows, now, ack, una, back):
        """The state after an ACK, given the acknowledged point before it (`una`) and whether the
        sender went back on it (`back`)."""
        return s


__all__ = ["ACK", "DATA", "MIN_RATE_FRACTION", "RTT_SAMPLES", "SYN", "SYNACK", "UNLIMITED", "ExplicitRateSender",
           "WindowSender", "capacity_at", "mean_arrival_bytes", "ratio_or", "require_fraction", "require_positive",
           "require_rtt_samples", "require_window", "shared_params"]
