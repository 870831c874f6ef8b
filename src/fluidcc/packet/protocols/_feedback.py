"""What the explicit-rate sources (RCP, QCP) share: the handshake, RTT estimation and repair.

A source opens with a SYN at its start; the SYN-ACK brings the path's rate and the first RTT
sample; every acknowledgement batch brings an RTT sample (RFC 6298, `_rtt.rtt_update`) and the
echoed header. Losses are repaired by going back: on the third duplicate ACK (once per window of
data, as NewReno's `recover`) and on a timeout (the RTO doubling each time, up to 60 s), the flow
resends from its first unacknowledged packet; the receiver counts what it already had as
duplicates. (Retransmitting one hole per round trip, as NewReno does, leaves a paced flow that
lost many packets crawling.) A loss does not change the rate: the routers set it.
"""

from __future__ import annotations

from typing import Callable

import jax.numpy as jnp

from ..engine import COUNT
from ._rtt import rtt_update

FIELDS = ("phase", "snd_una", "snd_nxt", "recover", "dupacks", "srtt", "rttvar", "rto", "timer")


def initial(n: int, initial_rto) -> dict:
    """The shared per-flow state of n flows (phase 0: before the SYN, 1: SYN sent, 2: open)."""
    zeros = jnp.zeros(n, COUNT)
    return {"phase": jnp.zeros(n, jnp.int32), "snd_una": zeros, "snd_nxt": zeros, "recover": zeros,
            "dupacks": jnp.zeros(n, jnp.int32), "srtt": jnp.zeros(n), "rttvar": jnp.zeros(n),
            "rto": jnp.full(n, initial_rto), "timer": jnp.full(n, -1.0)}


def step(s: dict, params, flows, t, acks, budget, quota: Callable[[dict, jnp.ndarray], jnp.ndarray]):
    """One slot of a source: handle the acknowledgements, then send.

    quota(state, feedback) -> how many new packets the protocol allows now (float, per flow), given
    the state after the acknowledgements (with "opened" and "has_ack" flags). Returns (state,
    n, seq, syn, opened, has_ack); params needs min_rto and max_rto (slots).
    """
    tf = t.astype(jnp.float64)
    phase = s["phase"]
    opened = acks.syn & (phase == 1)
    has_ack = ((acks.n_new + acks.n_dup) > 0) & (phase == 2)
    sample = (t - acks.echo).astype(jnp.float64)
    srtt, rttvar, rto = rtt_update(s["srtt"], s["rttvar"], s["rto"], sample, opened, has_ack, params.min_rto,
                                   params.max_rto)
    phase = jnp.where(opened, 2, phase)
    snd_una, snd_nxt, recover, dupacks, timer = s["snd_una"], s["snd_nxt"], s["recover"], s["dupacks"], s["timer"]
    dup = has_ack & (acks.n_dup > 0) & (snd_nxt > snd_una)
    count = jnp.where(dup, dupacks + acks.n_dup, dupacks)
    third = dup & (dupacks < 3) & (count >= 3) & (snd_una >= recover)
    new = has_ack & (acks.n_new > 0) & (acks.ack_no > snd_una)
    snd_una = jnp.where(new, acks.ack_no, snd_una)
    snd_nxt = jnp.maximum(snd_nxt, snd_una)
    dupacks = jnp.where(new, 0, count)
    timer = jnp.where(new, jnp.where(snd_nxt > snd_una, tf + rto, -1.0), timer)
    expired = (phase == 2) & (timer >= 0) & (tf >= timer) & (snd_nxt > snd_una)
    back = (third & ~new) | expired
    recover = jnp.where(back, snd_nxt, recover)
    snd_nxt = jnp.where(back, snd_una, snd_nxt)
    dupacks = jnp.where(back, 0, dupacks)
    rto = jnp.where(expired, jnp.minimum(2.0 * rto, params.max_rto), rto)
    timer = jnp.where(back, tf + rto, timer)
    syn = (phase == 0) & (t >= flows.start) & (t < flows.stop)
    phase = jnp.where(syn, 1, phase)
    state = {**s, "phase": phase, "snd_una": snd_una, "snd_nxt": snd_nxt, "recover": recover, "dupacks": dupacks,
             "srtt": srtt, "rttvar": rttvar, "rto": rto, "timer": timer}
    sending = (phase == 2) & ~syn
    allowed = jnp.minimum(quota(state, {"opened": opened, "has_ack": has_ack, "sending": sending}),
                          budget.astype(jnp.float64))
    left = jnp.where(t < flows.stop, flows.size - snd_nxt.astype(jnp.float64), 0.0)
    n = jnp.where(sending, jnp.clip(jnp.minimum(jnp.floor(allowed + 1e-9), left), 0.0, None), 0.0).astype(COUNT)
    state["timer"] = jnp.where((n > 0) & (timer < 0), tf + rto, timer)
    state["snd_nxt"] = snd_nxt + n
    return state, n, snd_nxt, syn, opened, has_ack
