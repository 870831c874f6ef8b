"""Open-loop sources: packets at a given rate, deaf to acknowledgements.

Each flow sends at `rate_pps` from its start until its stop or until it has sent its size: either
as a Poisson process (the number of new packets in a slot is Poisson with mean rate x slot) or at
a constant rate (a flow keeps the fraction of a packet it could not send yet). No SYN, no
retransmission. They are the validation sources of the engine: Poisson packets into one link is
the M/D/1 queue.

Poisson counts are drawn by inverting the Poisson distribution function, tabulated once per run
on the host: a slot's count is the number of table entries P(X <= k) below one uniform draw. The
table runs until P(X > k) < 1e-16, below the spacing of 64-bit uniforms, so the counts are Poisson
to the precision of the draw. It replaced `jax.random.poisson`, whose rejection loop cost far
more per slot than the rest of the engine's step (benchmarks/RESULTS.md, appendix, "Packet
engine: TCP dumbbell against ns-3", 2026-11-23). Means above `TABLE_MEAN` packets per slot
(tables of thousands of entries per flow) fall back to `jax.random.poisson`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy.stats import poisson

from ...errors import ParameterError
from ..engine import COUNT, Send, check_counts
from ..settings import FieldSettings

KINDS = ("poisson", "constant")
TABLE_MEAN = 1000.0  # the largest mean per slot drawn from a table; above it, jax.random.poisson
_TAIL = 1e-16  # the table ends where P(X > k) falls below this


def poisson_table(mean_per_slot: np.ndarray) -> np.ndarray:
    """P(X <= k) for X ~ Poisson(mean) per flow, k = 0 .. K-1, K where every flow's tail is below
    1e-16; shape (flows, K). A flow of mean 0 has a row of ones (it never sends)."""
    top = float(np.max(mean_per_slot, initial=0.0))
    size = int(poisson.isf(_TAIL, top)) + 2 if top > 0 else 1
    return poisson.cdf(np.arange(size)[None, :], np.asarray(mean_per_slot)[:, None])


@dataclass(frozen=True)
class OpenLoop(FieldSettings):
    """Open-loop sources ("poisson" or "constant") at rate_pps (a scalar or one per flow)."""

    kind: str = "poisson"
    rate_pps: Any = field(default=1.0, metadata={"per_flow": True})  # one rate, or one per flow
    name = "open_loop"
    header_size = 0

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ParameterError("kind", self.kind, f"one of {', '.join(KINDS)}")
        rate = np.atleast_1d(np.asarray(self.rate_pps, dtype=np.float64))
        if rate.ndim != 1 or not np.all(np.isfinite(rate) & (rate > 0)):
            bad = rate.reshape(-1)[np.argmin(np.isfinite(rate) & (rate > 0))] if rate.size else rate
            raise ParameterError("rate", float(bad) if np.size(bad) == 1 else bad, "a rate > 0 packets/s per flow")


    def params(self, network, layout, timing, tables):
        rate = np.atleast_1d(np.asarray(self.rate_pps, dtype=np.float64))
        width = layout.n_flows
        n = max(len(t) for t in tables)
        if rate.size not in (1, n):
            raise ParameterError("rate", rate.tolist(), f"one rate, or one per flow ({n})")
        # `tables` are the whole batch's; a group of its runs (simulate's `groups`) may be narrower
        per_slot = np.broadcast_to(rate, (n,))[:width] * timing.slot_s
        check_counts(per_slot * 1.01, timing)  # Poisson totals stay well within 1 % of the mean here
        tabulated = self.kind == "poisson" and per_slot.max() <= TABLE_MEAN
        table = poisson_table(per_slot) if tabulated else np.zeros((width, 0))
        return {"per_slot": jnp.asarray(per_slot), "cdf": jnp.asarray(table)}

    def init(self, params, flows):
        width = params["per_slot"].shape[0]
        return {"next": jnp.zeros(width, COUNT), "carry": jnp.zeros(width)}

    def step(self, state, params, flows, t, acks, budget, key):
        per_slot = params["per_slot"]
        active = (t >= flows.start) & (t < flows.stop) & (state["next"] < flows.size)
        if self.kind == "poisson":
            if params["cdf"].shape[1]:  # inverse distribution function, one uniform per flow
                u = jax.random.uniform(key, per_slot.shape, dtype=params["cdf"].dtype)
                draws = jnp.sum(params["cdf"] < u[:, None], axis=1).astype(jnp.float64)
            else:
                draws = jax.random.poisson(key, per_slot).astype(jnp.float64)
            carry = state["carry"]
        else:
            budget = state["carry"] + jnp.where(active, per_slot, 0.0)
            draws = jnp.floor(budget + 1e-12)
            carry = budget - draws
        n = jnp.where(active, jnp.minimum(draws, flows.size - state["next"]), 0).astype(COUNT)
        send = Send(n=n, seq=state["next"], syn=jnp.zeros(n.shape, bool), header=jnp.zeros((n.shape[0], 0)))
        return {"next": state["next"] + n, "carry": carry}, send
