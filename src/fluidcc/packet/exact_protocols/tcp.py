"""TCP NewReno senders for the exact engine, acknowledgement by acknowledgement, by the rules of
ns-3.37's `TcpNewReno` with classic recovery and SACK off (RFC 5681, RFC 6582, RFC 6298).

Windows are in whole bytes, as ns-3 keeps them; a segment is `mss_bytes` of them (default: the
network's packet size). A packet on the links is always the network's packet size: the MSS only
sets the window's arithmetic, where it shows in the congestion-avoidance increment below (ns-3's
programs of `benchmarks/ns3` carry a 948-byte MSS in a 1000-byte IP packet: from 10 to 60
segments, a 1000-byte MSS grows the window per round trip by −5 % to +5 % of ns-3's, window by
window, enough to change which packets a later overflow drops).

* **Handshake.** A SYN at the flow's start (it queues and may be dropped like data); without its
  SYN-ACK it is sent again after `syn_timeout_s` (3 s), doubling. The SYN-ACK gives the first RTT
  sample. The sender answers it with the handshake's pure ACK (an ACK's size, on the data route;
  never sent again), then data at once, as ns-3 does: where a flow starts into a full queue, that
  ACK takes a place there or is dropped in a data packet's stead (`handshake_ack=False` leaves it
  out).
* **What is in flight** (ns-3 without SACK): the outstanding segments, less one "Reno guess" per
  duplicate ACK (on the third, and on every duplicate in recovery; on the first two as well with
  limited transmit), less a head marked lost and not yet sent again; after a timeout, what was
  sent since going back. A sender sends while cwnd - in flight >= one segment: the lowest lost
  segment first, else new data. A cumulative ACK takes the guesses on the segments it covers; a
  guess left on the new head marks it lost, and it is sent again.
* **Slow start**: cwnd += one segment per ACK of new data while cwnd < ssthresh (initial ssthresh
  unlimited); **congestion avoidance**: cwnd += max(1, floor(MSS^2 / cwnd)) bytes per ACK. An
  ACK that covers several segments and takes cwnd to ssthresh in slow start also adds the
  avoidance increment; the ACK that ends LOSS grows the window only if it covers segments above
  recover (ns-3's `IncreaseWindow` with the segments acknowledged).
* **Fast recovery** on the third duplicate ACK if the cumulative ACK has reached `recover` (or no
  recovery or timeout is pending): the head is lost, ssthresh = max(2 segments, (in flight + 1
  segment) / 2), cwnd = ssthresh, recover = the highest sequence sent, and the head is sent again.
  A partial ACK marks the new head lost and sends it again; the full ACK ends recovery with cwnd =
  ssthresh.
* **RTT** (ns-3.37): samples from the SYN-ACK and from ACKs of new data whose oldest segment was
  sent only once (Karn, even with timestamps; none after a timeout until new data is
  acknowledged); timestamps in whole milliseconds. srtt, rttvar with gains 1/8 and 1/4; RTO =
  max(min_rto, srtt + max(1 ms, 4 rttvar)), recomputed whenever the timer restarts.
* **Retransmission timer**: started when data is sent and it is idle; restarted on every ACK of new
  data, except within a recovery, where only the first partial ACK restarts it. On expiry:
  ssthresh = max(2 segments, in flight / 2) (at every expiry, as ns-3.37 does in effect), cwnd = one
  segment, the guesses cleared, recover = the highest sequence sent, RTO doubled (to 60 s at most;
  until the timer next restarts), and sending goes back to the first unacknowledged segment
  (go-back-N, in slow start: state LOSS, where duplicate ACKs are ignored, until an ACK reaches
  recover).
* **Counts** (`report`): `recoveries` and `timeouts` are entries into fast recovery and into LOSS,
  as ns-3's CongState trace counts them (a timer that expires again in LOSS is not a new timeout);
  `rto_expiries` counts every expiry.

Not modelled: ns-3's abort after six timeouts in a row, and its receive buffer (`receive_window`
sets a limit in segments; none by default).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import NamedTuple

import jax
import jax.numpy as jnp

from ...errors import ParameterError
from ..exact import ACK, DATA, HANDSHAKE_ACK, SYN, SYNACK, ExactProtocol, Packet, on_grid
from ..settings import FieldSettings

OPEN, DISORDER, RECOVERY, LOSS = 0, 1, 2, 3
_UNLIMITED = 1e18


def whole_ms(t):
    """The millisecond clock of TCP's timestamps at time t (s): whole milliseconds, counted from t
    first rounded to the nanosecond, as ns-3 keeps time. A millisecond is not a multiple of the
    engine's time grid (`on_grid`), so an instant that sits on one (a link of 1000 packets/s puts
    many there) can be a hair below it; flooring t * 1000 directly would count it a millisecond
    short."""
    return jnp.floor_divide(jnp.round(t * 1e9).astype(jnp.int64), 1_000_000)


class TCPParams(NamedTuple):
    segment: jax.Array  # bytes
    initial_window: jax.Array  # bytes
    min_rto: jax.Array  # s
    max_rto: jax.Array
    initial_rto: jax.Array
    syn_timeout: jax.Array
    granularity: jax.Array
    receive_window: jax.Array  # segments
    limited_transmit: jax.Array  # bool
    handshake_ack: jax.Array  # bool


def _positive(name, value, allowed, least=0.0):
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and math.isfinite(value) and value > least):
        raise ParameterError(name, value, allowed)


@dataclass(frozen=True)
class TCP(ExactProtocol, FieldSettings):
    """TCP NewReno. initial_window: segments (>= 1); min_rto_s, syn_timeout_s: seconds (> 0);
    receive_window: segments the receiver advertises (inf: no limit); limited_transmit: count a
    Reno guess on the first two duplicate ACKs too, so that each sends a new segment (RFC 3042,
    ns-3's default; False: only from the third); ack_bytes: an ACK's size on the links it crosses
    (bytes > 0; 40: IP and TCP headers; ns-3's are 52 with the timestamp option, 54 on a
    point-to-point wire); mss_bytes: the segment the window counts in, whole bytes >= 1 (None: the
    network's packet size; ns-3 counts payload, 948 bytes in the 1000-byte packets of
    `benchmarks/ns3`); handshake_ack: answer the SYN-ACK with a pure ACK before the first data
    (False: data only, the handshake's third packet left out)."""

    initial_window: float = field(default=2.0, metadata={"unit": "segments"})
    min_rto_s: float = 0.2
    syn_timeout_s: float = 3.0
    receive_window: float = field(default=math.inf, metadata={"unit": "segments"})
    limited_transmit: bool = True
    ack_bytes: float = field(default=40.0, metadata={"unit": "bytes"})
    mss_bytes: float | None = field(default=None, metadata={"unit": "bytes", "none": "the packet size"})
    handshake_ack: bool = True
    name = "tcp"

    def __post_init__(self):
        if isinstance(self.initial_window, bool) or not (isinstance(self.initial_window, (int, float))
                                                         and math.isfinite(self.initial_window)
                                                         and self.initial_window >= 1):
            raise ParameterError("initial_window", self.initial_window, "a window >= 1 segment")
        _positive("min_rto", self.min_rto_s, "a minimum RTO > 0 s")
        _positive("syn_timeout", self.syn_timeout_s, "a SYN timeout > 0 s")
        if isinstance(self.receive_window, bool) or not (isinstance(self.receive_window, (int, float))
                                                         and self.receive_window >= 1):
            raise ParameterError("receive_window", self.receive_window, "a window >= 1 segment, or inf")
        if not isinstance(self.limited_transmit, bool):
            raise ParameterError("limited_transmit", self.limited_transmit, "true or false")
        if not isinstance(self.handshake_ack, bool):
            raise ParameterError("handshake_ack", self.handshake_ack, "true or false")
        _positive("ack_bytes", self.ack_bytes, "an ACK size > 0 bytes")
        if self.mss_bytes is not None and (
                isinstance(self.mss_bytes, bool) or not isinstance(self.mss_bytes, (int, float))
                or not math.isfinite(self.mss_bytes) or self.mss_bytes < 1 or self.mss_bytes != math.floor(self.mss_bytes)):
            raise ParameterError("mss_bytes", self.mss_bytes,
                                 "a segment of whole bytes >= 1, or none for the network's packet size")

    def params(self, network, plan, tables) -> TCPParams:
        segment = float(network.packet_bytes if self.mss_bytes is None else self.mss_bytes)
        return TCPParams(segment=jnp.asarray(segment), initial_window=jnp.asarray(math.floor(self.initial_window) * segment),
                         min_rto=jnp.asarray(float(self.min_rto_s)), max_rto=jnp.asarray(60.0),
                         initial_rto=jnp.asarray(max(1.0, float(self.min_rto_s))),
                         syn_timeout=jnp.asarray(float(self.syn_timeout_s)), granularity=jnp.asarray(0.001),
                         receive_window=jnp.asarray(float(min(self.receive_window, _UNLIMITED))),
                         limited_transmit=jnp.asarray(self.limited_transmit), handshake_ack=jnp.asarray(self.handshake_ack))

    def compiled_settings(self) -> dict:
        """None of TCP's own: each is in `params` (the two true-or-false ones as arrays) or in the
        plan (`ack_bytes`), so TCPs of other settings share a compiled program. (A subclass's own
        settings stay in the key.)"""
        own = {f.name for f in fields(TCP)}
        return {name: value for name, value in self.settings().items() if name not in own}

    def init(self, params: TCPParams, flows, key):
        n = flows.start.shape[0]
        zeros = jnp.zeros(n, jnp.int32)
        return {"phase": zeros, "syn_due": jnp.zeros(n, bool), "ack_due": jnp.zeros(n, bool),
                "syn_at": jnp.full(n, jnp.inf), "syn_wait": jnp.full(n, params.syn_timeout),
                "snd_una": zeros, "snd_nxt": zeros, "high_tx": zeros, "recover": zeros,
                "recover_active": jnp.zeros(n, bool),
                "cwnd": jnp.full(n, params.initial_window), "ssthresh": jnp.full(n, _UNLIMITED),
                "state": zeros, "dupacks": zeros, "sacked": zeros, "head_lost": jnp.zeros(n, bool),
                "rtx": jnp.zeros(n, bool), "rtx_seq": zeros, "first_partial": jnp.ones(n, bool),
                "retx_hi": zeros, "srtt": jnp.zeros(n), "rttvar": jnp.zeros(n),
                "rto": jnp.full(n, params.initial_rto), "timer": jnp.full(n, jnp.inf), "has_sample": jnp.zeros(n, bool),
                "recoveries": zeros, "timeouts": zeros, "rto_expiries": zeros, "retransmits": zeros, "syns": zeros}

    def report(self, state) -> dict:
        return {"recoveries": state["recoveries"], "timeouts": state["timeouts"], "rto_expiries": state["rto_expiries"],
                "retransmits": state["retransmits"], "syns": state["syns"]}

    @staticmethod
    def _pipe(s):
        """Segments in flight as ns-3 counts them without SACK (section "bytes in flight" of the
        module docstring): outstanding, less the duplicates' guesses, less a lost head not yet sent
        again; in LOSS, what was sent since going back."""
        outstanding = (s["high_tx"] - s["snd_una"]).astype(jnp.float64)
        since_back = (s["snd_nxt"] - s["snd_una"]).astype(jnp.float64)
        counted = outstanding - s["sacked"] - (s["head_lost"] & s["rtx"]).astype(jnp.float64)
        return jnp.where(s["state"] == LOSS, since_back, counted)

    def _fresh_rto(self, s, params):
        return jnp.maximum(params.min_rto, s["srtt"] + jnp.maximum(params.granularity, 4.0 * s["rttvar"]))

    # -------------------------------------------------------------- timers
    def next_time(self, s, params, flows):
        starting = jnp.where((s["phase"] == 0) & ~s["syn_due"] & (flows.start < flows.stop), flows.start, jnp.inf)
        syn = jnp.where((s["phase"] == 1) & ~s["syn_due"], s["syn_at"], jnp.inf)
        rto = jnp.where(s["phase"] == 2, s["timer"], jnp.inf)
        return jnp.minimum(starting, jnp.minimum(syn, rto))

    def on_time(self, s, params: TCPParams, flows, now, mask):
        phase = s["phase"]
        open_syn = mask & (phase <= 1) & ~s["syn_due"]
        again = open_syn & (phase == 1)
        syn_wait = jnp.where(again, 2.0 * s["syn_wait"], s["syn_wait"])
        expired = mask & (phase == 2) & (now >= s["timer"])
        outstanding = s["high_tx"] > s["snd_una"]
        timeout = expired & outstanding
        segment = params.segment
        pipe = self._pipe(s) * segment
        # every expiry lowers ssthresh, a repeated one in LOSS too: ns-3.37's ReTxTimeout keeps it
        # only if the head was sent again, but asks after SetSentListLost has cleared that mark
        # (its trace shows ssthresh = 4 segments after a second expiry with 8 in flight)
        rto = jnp.where(timeout, jnp.minimum(2.0 * s["rto"], params.max_rto), s["rto"])
        return {**s, "phase": jnp.where(open_syn, 1, phase), "syn_due": s["syn_due"] | open_syn,
                "syn_wait": syn_wait, "syn_at": jnp.where(open_syn, jnp.inf, s["syn_at"]),
                "ssthresh": jnp.where(timeout, jnp.maximum(2.0 * segment, jnp.floor(pipe / 2.0)), s["ssthresh"]),
                "cwnd": jnp.where(timeout, segment, s["cwnd"]),
                "recover": jnp.where(timeout, s["high_tx"], s["recover"]),
                "recover_active": s["recover_active"] | timeout,
                "state": jnp.where(timeout, LOSS, s["state"]), "dupacks": jnp.where(timeout, 0, s["dupacks"]),
                "sacked": jnp.where(timeout, 0, s["sacked"]), "head_lost": s["head_lost"] & ~timeout,
                "snd_nxt": jnp.where(timeout, s["snd_una"], s["snd_nxt"]),
                "rtx": jnp.where(timeout, False, s["rtx"]),
                # every segment outstanding counts as retransmitted: no RTT sample until new data is acknowledged
                "retx_hi": jnp.where(timeout, s["high_tx"], s["retx_hi"]),
                "rto": rto, "timer": jnp.where(expired, jnp.where(outstanding, on_grid(now + rto), jnp.inf), s["timer"]),
                # ns-3 counts entries into LOSS (its CongState trace fires on a change): a timeout
                # that expires again before the flow leaves LOSS is an expiry, not a new timeout
                "timeouts": s["timeouts"] + (timeout & (s["state"] != LOSS)),
                "rto_expiries": s["rto_expiries"] + timeout}

    # -------------------------------------------------------------- acknowledgements
    def on_ack(self, s, params: TCPParams, flows, now, mask, ack):
        segment = params.segment
        phase = s["phase"]
        opened = mask & (ack.kind == SYNACK) & (phase == 1)
        is_ack = mask & (ack.kind == ACK) & (phase == 2)
        a = ack.ack_no
        snd_una, high_tx, state = s["snd_una"], s["high_tx"], s["state"]
        new = is_ack & (a > snd_una) & (a <= high_tx)
        dup = is_ack & (a == snd_una) & (high_tx > snd_una)
        # RTT (ns-3.37's rule): the SYN-ACK, and an ACK of new data whose oldest segment was sent once
        # (Karn, even with timestamps); timestamps in whole milliseconds
        sample = (whole_ms(now) - whole_ms(ack.echo)).astype(now.dtype) / 1000.0
        sample = jnp.where(sample > 0, sample, 1e-6)
        valid = opened | (new & (snd_una >= s["retx_hi"]))
        first = valid & ~s["has_sample"]
        more = valid & s["has_sample"]
        srtt = jnp.where(first, sample, jnp.where(more, s["srtt"] + (sample - s["srtt"]) / 8.0, s["srtt"]))
        rttvar = jnp.where(first, sample / 2.0,
                           jnp.where(more, s["rttvar"] + (jnp.abs(sample - s["srtt"]) - s["rttvar"]) / 4.0, s["rttvar"]))
        s = {**s, "srtt": srtt, "rttvar": rttvar, "has_sample": s["has_sample"] | valid}
        rto = jnp.where(valid, self._fresh_rto(s, params), s["rto"])
        dupacks, cwnd, ssthresh, recover, sacked = s["dupacks"], s["cwnd"], s["ssthresh"], s["recover"], s["sacked"]
        outstanding = (high_tx - snd_una).astype(jnp.int32)
        # duplicates (ignored in LOSS)
        counted = dup & (state != LOSS)
        dupacks = jnp.where(counted & (state != RECOVERY), dupacks + 1, dupacks)
        state = jnp.where(counted & (state == OPEN), DISORDER, state)
        mark = counted & ((state == RECOVERY) | ((state == DISORDER) & (dupacks < 3) & params.limited_transmit))
        enter = counted & (state == DISORDER) & (dupacks == 3) & ((snd_una >= recover) | ~s["recover_active"])
        sacked = jnp.where(mark | enter, jnp.minimum(sacked + 1, jnp.maximum(outstanding - 1, 0)), sacked)
        # entering recovery: the head is lost; ssthresh from what is in flight then
        pipe_entry = outstanding.astype(jnp.float64) - sacked - 1.0
        ssthresh = jnp.where(enter, jnp.maximum(2.0 * segment, jnp.floor((pipe_entry + 1.0) * segment / 2.0)), ssthresh)
        cwnd = jnp.where(enter, ssthresh, cwnd)
        recover = jnp.where(enter, high_tx, recover)
        recover_active = s["recover_active"] | enter
        was = state
        state = jnp.where(enter, RECOVERY, state)
        head_lost = s["head_lost"] | enter
        rtx = s["rtx"] | enter
        rtx_seq = jnp.where(enter, snd_una, s["rtx_seq"])
        # new data acknowledged: the Reno guesses on acknowledged segments go with them; a guess left
        # on the new head moves up and the head counts as lost
        k = jnp.where(new, a - snd_una, 0)
        sacked = jnp.where(new, jnp.maximum(sacked - (k - 1), 0), sacked)
        head_lost = jnp.where(new, sacked > 0, head_lost)
        partial = new & (was == RECOVERY) & (a < recover)
        loss_partial = new & (was == LOSS) & (a < recover)
        ends = new & ~partial & ~loss_partial
        restart = new & (~partial | s["first_partial"])
        first_partial = jnp.where(partial, False, jnp.where(ends & ((was == RECOVERY) | (was == LOSS)), True,
                                                             s["first_partial"]))
        head_lost = head_lost | partial
        resend_head = partial | (new & (sacked > 0))  # a partial ACK's new head, or one that carried a guess
        rtx = jnp.where(new, resend_head, rtx)
        rtx_seq = jnp.where(resend_head, a, rtx_seq)
        cwnd = jnp.where(ends & (was == RECOVERY), ssthresh, cwnd)
        recover_active = recover_active & ~(new & (a >= recover))
        state = jnp.where(ends, OPEN, state)
        dupacks = jnp.where(new, 0, dupacks)
        # window growth (ns-3's IncreaseWindow with the segments the ACK covers): in LOSS and on every
        # ACK that ends in OPEN; leaving LOSS, only the segments above recover count (often none).
        # Slow start takes one of them (+1 segment); if that reaches ssthresh and some are left,
        # congestion avoidance adds its increment on the same ACK.
        grow = loss_partial | ends
        counted_segments = jnp.where(ends & (was == LOSS), a - s["recover"], k)
        slow = grow & (cwnd < ssthresh) & (counted_segments >= 1)
        cwnd = jnp.where(slow, cwnd + segment, cwnd)
        remaining = jnp.where(slow, counted_segments - 1, counted_segments)
        avoid = grow & (cwnd >= ssthresh) & (remaining >= 1)
        cwnd = jnp.where(avoid, cwnd + jnp.maximum(1.0, jnp.floor(segment * segment / cwnd)), cwnd)
        snd_una = jnp.where(new, a, snd_una)
        snd_nxt = jnp.maximum(s["snd_nxt"], snd_una)
        # a restart of the timer recomputes the RTO (the back-off ends)
        rto = jnp.where(restart, self._fresh_rto(s, params), rto)
        left = high_tx > snd_una
        timer = jnp.where(restart, jnp.where(left, on_grid(now + rto), jnp.inf), s["timer"])
        timer = jnp.where(opened, jnp.inf, timer)
        return {**s, "phase": jnp.where(opened, 2, phase), "syn_at": jnp.where(opened, jnp.inf, s["syn_at"]),
                "ack_due": s["ack_due"] | (opened & params.handshake_ack),
                "snd_una": snd_una, "snd_nxt": snd_nxt, "recover": recover, "recover_active": recover_active,
                "cwnd": cwnd, "ssthresh": ssthresh, "state": state, "dupacks": dupacks, "sacked": sacked,
                "head_lost": head_lost, "rtx": rtx, "rtx_seq": rtx_seq, "first_partial": first_partial,
                "rto": rto, "timer": timer, "recoveries": s["recoveries"] + enter}

    # -------------------------------------------------------------- sending
    def ready(self, s, params, flows, now):
        established = s["phase"] == 2
        room = s["cwnd"] - self._pipe(s) * params.segment >= params.segment
        within = (s["snd_nxt"] - s["snd_una"]).astype(jnp.float64) < params.receive_window
        new_data = (s["snd_nxt"] < flows.size) & (now < flows.stop) & room & within
        return s["syn_due"] | s["ack_due"] | (established & (s["rtx"] | new_data))

    def send(self, s, params, flows, now, mask):
        syn = mask & s["syn_due"]
        hs_ack = mask & ~syn & s["ack_due"]  # the handshake's ACK goes before any data
        rtx = mask & ~syn & ~hs_ack & s["rtx"]
        new = mask & ~syn & ~hs_ack & ~rtx
        seq = jnp.where(rtx, s["rtx_seq"], s["snd_nxt"])
        snd_nxt = s["snd_nxt"] + new
        high_tx = jnp.maximum(s["high_tx"], snd_nxt)
        data = rtx | new
        resent = rtx | (new & (s["snd_nxt"] < s["high_tx"]))
        timer = jnp.where(data & jnp.isinf(s["timer"]), on_grid(now + s["rto"]), s["timer"])
        kind = jnp.where(syn, SYN, jnp.where(hs_ack, HANDSHAKE_ACK, DATA))
        packet = Packet(kind=kind.astype(jnp.int32), seq=seq.astype(jnp.int32),
                        header=jnp.zeros((mask.shape[0], 0)))
        return {**s, "syn_due": s["syn_due"] & ~syn, "ack_due": s["ack_due"] & ~hs_ack,
                "syn_at": jnp.where(syn, on_grid(now + s["syn_wait"]), s["syn_at"]),
                "snd_nxt": snd_nxt, "high_tx": high_tx, "rtx": s["rtx"] & ~rtx, "timer": timer,
                "retx_hi": jnp.where(resent, jnp.maximum(s["retx_hi"], seq + 1), s["retx_hi"]),
                "retransmits": s["retransmits"] + resent, "syns": s["syns"] + syn}, packet


__all__ = ["TCP", "TCPParams"]
