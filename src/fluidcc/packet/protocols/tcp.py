"""TCP NewReno sources (RFC 5681 congestion control, RFC 6582 NewReno recovery, RFC 6298 RTO).

Every flow opens with a SYN at its start (the SYN-ACK's round trip gives the first RTT sample),
then sends whole packets of data, window-limited, until the receiver has its size (a long-lived
flow: until its stop time). Choices, each as ns-3's `TcpNewReno` with classic recovery makes them:

* **Windows in packets.** Initial window `initial_window` (2 by default), initial ssthresh
  unlimited, no receiver-window limit.
* **One acknowledgement per packet** (the engine's receivers do not delay ACKs); the engine
  delivers the acknowledgements of a batch together, so a source handles them as one event: its
  duplicate ACKs first, then its new ones.
* **Slow start**: +1 packet per new ACK while cwnd < ssthresh; **congestion avoidance**: +1/cwnd
  per new ACK (the ACKs of a batch past ssthresh count as congestion avoidance).
* **Fast retransmit** on the third duplicate ACK, if the cumulative ACK has passed `recover`
  (RFC 6582's guard against a second reduction for one window); ssthresh = max(flight / 2, 2),
  cwnd = ssthresh + 3, one retransmission of the first unacknowledged packet. **Fast recovery**:
  +1 per further duplicate; a partial ACK retransmits the next hole and deflates cwnd by the data
  it acknowledged, less one; the full ACK (past `recover`) sets cwnd = ssthresh. No limited
  transmit, no SACK.
* **The retransmission timer** restarts on every ACK of new data outside recovery and on the
  full ACK, but within a recovery only on its *first* partial ACK (RFC 6582's "Impatient"
  variant, as ns-3 does): a window with many losses -- a slow-start overshoot drops hundreds --
  then ends in a timeout and go-back-N after one RTO, instead of repairing one hole per RTT for
  tens of seconds while the inflated window sends new data far past the holes.
* **RTO** (RFC 6298): an RTT sample on every acknowledgement batch (timestamps echo the slot the
  data was sent), srtt and rttvar with gains 1/8 and 1/4, RTO = max(min_rto, srtt + 4 rttvar),
  1 s before the first sample, doubled on each timeout up to 60 s. A timeout sets ssthresh =
  max(flight / 2, 2), cwnd = 1, and resends from the first unacknowledged packet (go-back-N).
* A retransmission takes the flow's batch of that slot (new data waits one slot); a source sends
  no more than the engine's per-slot budget (its interface's speed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp

from ...errors import ParameterError
from ..engine import COUNT, Send
from ..settings import FieldSettings
from ._rtt import rtt_update

_NO_LIMIT = 1e12


class TCPParams(NamedTuple):
    initial_window: jax.Array
    min_rto: jax.Array  # slots
    max_rto: jax.Array
    initial_rto: jax.Array


@dataclass(frozen=True)
class TCP(FieldSettings):
    """TCP NewReno. initial_window: packets (>= 1); min_rto_s: seconds (> 0)."""

    initial_window: float = 2.0
    min_rto_s: float = 0.2
    name = "tcp"
    header_size = 0

    def __post_init__(self):
        if not (isinstance(self.initial_window, (int, float)) and math.isfinite(self.initial_window)
                and self.initial_window >= 1):
            raise ParameterError("initial_window", self.initial_window, "a window >= 1 packet")
        if not (isinstance(self.min_rto_s, (int, float)) and math.isfinite(self.min_rto_s) and self.min_rto_s > 0):
            raise ParameterError("min_rto", self.min_rto_s, "a minimum RTO > 0 s")


    def params(self, network, layout, timing, tables) -> TCPParams:
        slot = timing.slot_s
        return TCPParams(initial_window=jnp.asarray(float(self.initial_window)),
                         min_rto=jnp.asarray(self.min_rto_s / slot), max_rto=jnp.asarray(60.0 / slot),
                         initial_rto=jnp.asarray(max(1.0, self.min_rto_s) / slot))

    def init(self, params: TCPParams, flows):
        n = flows.start.shape[0]
        zeros = jnp.zeros(n, COUNT)
        return {
            "phase": jnp.zeros(n, jnp.int32),  # 0 before the SYN, 1 SYN sent, 2 established
            "snd_una": zeros, "snd_nxt": zeros, "recover": zeros,
            "cwnd": jnp.full(n, params.initial_window), "ssthresh": jnp.full(n, _NO_LIMIT),
            "dupacks": jnp.zeros(n, jnp.int32), "recovery": jnp.zeros(n, bool),
            "srtt": jnp.zeros(n), "rttvar": jnp.zeros(n), "rto": jnp.full(n, params.initial_rto),
            "timer": jnp.full(n, -1.0), "retransmit": jnp.zeros(n, bool), "retransmit_seq": zeros,
            "partial_seen": jnp.zeros(n, bool),
            "recoveries": jnp.zeros(n, jnp.int32), "timeouts": jnp.zeros(n, jnp.int32),
        }

    def report(self, state) -> dict:
        """Per flow: fast recoveries entered and retransmission timeouts, over the run."""
        return {"recoveries": state["recoveries"], "timeouts": state["timeouts"]}

    def step(self, s, params: TCPParams, flows, t, acks, budget, key):
        tf = t.astype(jnp.float64)
        phase = s["phase"]
        # the SYN-ACK: first RTT sample
        opened = acks.syn & (phase == 1)
        sample = (t - acks.echo).astype(jnp.float64)
        has_ack = ((acks.n_new + acks.n_dup) > 0) & (phase == 2)
        srtt, rttvar, rto = rtt_update(s["srtt"], s["rttvar"], s["rto"], sample, opened, has_ack, params.min_rto,
                                       params.max_rto)
        phase = jnp.where(opened, 2, phase)
        snd_una, snd_nxt, cwnd, ssthresh = s["snd_una"], s["snd_nxt"], s["cwnd"], s["ssthresh"]
        dupacks, recovery, recover = s["dupacks"], s["recovery"], s["recover"]
        partial_seen = s["partial_seen"]
        retransmit, retransmit_seq, timer = s["retransmit"], s["retransmit_seq"], s["timer"]
        outstanding = snd_nxt > snd_una
        # duplicate ACKs
        dup = has_ack & (acks.n_dup > 0) & outstanding
        cwnd = jnp.where(dup & recovery, cwnd + acks.n_dup, cwnd)
        count = jnp.where(dup & ~recovery, dupacks + acks.n_dup, dupacks)
        enter = dup & ~recovery & (dupacks < 3) & (count >= 3) & (snd_una >= recover)
        flight = (snd_nxt - snd_una).astype(jnp.float64)
        ssthresh = jnp.where(enter, jnp.maximum(flight / 2, 2.0), ssthresh)
        cwnd = jnp.where(enter, ssthresh + count, cwnd)
        recover = jnp.where(enter, snd_nxt, recover)
        recovery = recovery | enter
        partial_seen = partial_seen & ~enter
        retransmit = retransmit | enter
        retransmit_seq = jnp.where(enter, snd_una, retransmit_seq)
        dupacks = count
        # new ACKs
        new = has_ack & (acks.n_new > 0) & (acks.ack_no > snd_una)
        acked = jnp.where(new, acks.ack_no - snd_una, 0).astype(jnp.float64)
        snd_una = jnp.where(new, acks.ack_no, snd_una)
        snd_nxt = jnp.maximum(snd_nxt, snd_una)
        full = new & recovery & (snd_una >= recover)
        partial = new & recovery & ~full
        n_new = acks.n_new.astype(jnp.float64)
        in_ss = jnp.clip(jnp.ceil(ssthresh - cwnd), 0.0, n_new)
        grown = cwnd + in_ss
        grown = grown + (n_new - in_ss) / grown
        cwnd = jnp.where(full, ssthresh, jnp.where(partial, jnp.maximum(cwnd - acked + 1.0, 1.0),
                                                   jnp.where(new & ~recovery, grown, cwnd)))
        retransmit = retransmit | partial
        retransmit_seq = jnp.where(partial, snd_una, retransmit_seq)
        recovery = recovery & ~full
        dupacks = jnp.where(new, 0, dupacks)
        restart = new & ~(partial & partial_seen)  # RFC 6582 "Impatient": only the first partial ACK
        partial_seen = partial_seen | partial
        timer = jnp.where(restart, jnp.where(snd_nxt > snd_una, tf + rto, -1.0), timer)
        # retransmission timeout: go back to the first unacknowledged packet
        expired = (phase == 2) & (timer >= 0) & (tf >= timer) & (snd_nxt > snd_una)
        flight = (snd_nxt - snd_una).astype(jnp.float64)
        ssthresh = jnp.where(expired, jnp.maximum(flight / 2, 2.0), ssthresh)
        cwnd = jnp.where(expired, 1.0, cwnd)
        recover = jnp.where(expired, snd_nxt, recover)
        snd_nxt = jnp.where(expired, snd_una, snd_nxt)
        recovery = recovery & ~expired
        retransmit = retransmit & ~expired
        dupacks = jnp.where(expired, 0, dupacks)
        rto = jnp.where(expired, jnp.minimum(2.0 * rto, params.max_rto), rto)
        timer = jnp.where(expired, tf + rto, timer)
        # what to send: the SYN, a retransmission, or new data within the window
        syn = (phase == 0) & (t >= flows.start) & (t < flows.stop)
        phase = jnp.where(syn, 1, phase)
        sending = (phase == 2) & ~syn
        resend = sending & retransmit
        room = jnp.floor(cwnd + 1e-9) - (snd_nxt - snd_una).astype(jnp.float64)
        left = jnp.where(t < flows.stop, flows.size - snd_nxt.astype(jnp.float64), 0.0)
        allowed = jnp.minimum(jnp.minimum(room, left), budget.astype(jnp.float64))
        fresh_n = jnp.where(sending & ~resend, jnp.clip(allowed, 0.0, None), 0.0).astype(COUNT)
        resend = resend & (budget > 0)
        n = jnp.where(resend, 1, fresh_n)
        seq = jnp.where(resend, retransmit_seq, snd_nxt)
        timer = jnp.where((n > 0) & (timer < 0), tf + rto, timer)
        snd_nxt = snd_nxt + fresh_n
        state = {"phase": phase, "snd_una": snd_una, "snd_nxt": snd_nxt, "recover": recover, "cwnd": cwnd,
                 "ssthresh": ssthresh, "dupacks": dupacks, "recovery": recovery, "srtt": srtt, "rttvar": rttvar,
                 "rto": rto, "timer": timer, "retransmit": retransmit & ~resend, "retransmit_seq": retransmit_seq,
                 "partial_seen": partial_seen,
                 "recoveries": s["recoveries"] + enter, "timeouts": s["timeouts"] + expired}
        return state, Send(n=n, seq=seq, syn=syn, header=jnp.zeros((n.shape[0], 0)))
