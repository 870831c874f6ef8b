"""Open-loop sources: packets at a given rate, deaf to acknowledgements.

Each flow sends at `rate_pps` from its start until its stop or until it has sent its size: either
as a Poisson process (the number of new packets in a slot is Poisson with mean rate x slot) or at
a constant rate (a flow keeps the fraction of a packet it could not send yet). No SYN, no
retransmission. They are the validation sources of the engine: Poisson packets into one link is
the M/D/1 queue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ...errors import ParameterError
from ..engine import COUNT, Send, check_counts

KINDS = ("poisson", "constant")


@dataclass(frozen=True)
class OpenLoop:
    """Open-loop sources ("poisson" or "constant") at rate_pps (a scalar or one per flow)."""

    kind: str = "poisson"
    rate_pps: Any = 1.0
    name = "open_loop"
    header_size = 0

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ParameterError("kind", self.kind, f"one of {', '.join(KINDS)}")
        rate = np.atleast_1d(np.asarray(self.rate_pps, dtype=np.float64))
        if rate.ndim != 1 or not np.all(np.isfinite(rate) & (rate > 0)):
            bad = rate.reshape(-1)[np.argmin(np.isfinite(rate) & (rate > 0))] if rate.size else rate
            raise ParameterError("rate", float(bad) if np.size(bad) == 1 else bad, "a rate > 0 packets/s per flow")

    def settings(self) -> dict:
        return {"kind": self.kind, "rate_pps": np.atleast_1d(self.rate_pps).tolist()}

    def params(self, network, layout, timing, tables):
        rate = np.atleast_1d(np.asarray(self.rate_pps, dtype=np.float64))
        width = layout.n_flows
        n = max(len(t) for t in tables)
        if rate.size not in (1, n):
            raise ParameterError("rate", rate.tolist(), f"one rate, or one per flow ({n})")
        per_slot = np.zeros(width)
        per_slot[:n] = np.broadcast_to(rate, (n,)) * timing.slot_s
        check_counts(per_slot * 1.01, timing)  # Poisson totals stay well within 1 % of the mean here
        return jnp.asarray(per_slot)

    def init(self, per_slot, flows):
        return {"next": jnp.zeros(per_slot.shape[0], COUNT), "carry": jnp.zeros(per_slot.shape[0])}

    def step(self, state, per_slot, flows, t, acks, budget, key):
        active = (t >= flows.start) & (t < flows.stop) & (state["next"] < flows.size)
        if self.kind == "poisson":
            draws = jax.random.poisson(key, per_slot).astype(jnp.float64)
            carry = state["carry"]
        else:
            budget = state["carry"] + jnp.where(active, per_slot, 0.0)
            draws = jnp.floor(budget + 1e-12)
            carry = budget - draws
        n = jnp.where(active, jnp.minimum(draws, flows.size - state["next"]), 0).astype(COUNT)
        send = Send(n=n, seq=state["next"], syn=jnp.zeros(n.shape, bool), header=jnp.zeros((n.shape[0], 0)))
        return {"next": state["next"] + n, "carry": carry}, send
