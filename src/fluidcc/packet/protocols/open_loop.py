"""Open-loop sources: packets at a given rate, deaf to acknowledgements.

Each flow sends at `rate_pps` from its start until its stop or until it has sent its size: either
as a Poisson process (the number of new packets in a slot is Poisson with mean rate x slot) or at
a constant rate (a flow keeps the fraction of a packet it could not send yet). They are the
validation sources of the engine: Poisson packets into one link is the M/D/1 queue.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ...errors import ParameterError

KINDS = ("poisson", "constant")


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class OpenLoopParams:
    """Per flow (F,): packets per slot, size in packets (inf: no end), start and stop slots."""

    per_slot: jax.Array
    size: jax.Array
    start_slot: jax.Array
    stop_slot: jax.Array


@dataclass(frozen=True)
class OpenLoop:
    """Open-loop sources ("poisson" or "constant"); build their parameters with `params`."""

    kind: str = "poisson"
    name = "open_loop"

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ParameterError("kind", self.kind, f"one of {', '.join(KINDS)}")

    def params(self, rate_pps, slot_s: float, *, size_packets=np.inf, start_s=0.0, stop_s=np.inf) -> OpenLoopParams:
        """rate_pps, size_packets, start_s, stop_s: scalars or one value per flow."""
        rate = np.atleast_1d(np.asarray(rate_pps, dtype=np.float64))
        n = rate.shape[0]
        size = np.broadcast_to(np.asarray(size_packets, dtype=np.float64), (n,))
        start = np.broadcast_to(np.asarray(start_s, dtype=np.float64), (n,))
        stop = np.broadcast_to(np.asarray(stop_s, dtype=np.float64), (n,))
        for field, values, ok, allowed in (
            ("rate", rate, np.isfinite(rate) & (rate > 0), "a rate > 0 packets/s"),
            ("size", size, (size >= 1) & ~np.isnan(size), "a size >= 1 packet (inf: no end)"),
            ("start", start, np.isfinite(start) & (start >= 0), "a start time >= 0 s"),
            ("stop", stop, ~np.isnan(stop) & (stop > start), "a stop time after the start"),
        ):
            if not np.all(ok):
                raise ParameterError(field, float(values[np.argmin(ok)]), allowed)
        return OpenLoopParams(per_slot=jnp.asarray(rate * slot_s), size=jnp.asarray(size),
                              start_slot=jnp.asarray(np.ceil(start / slot_s - 1e-9)),
                              stop_slot=jnp.asarray(np.where(np.isfinite(stop), np.ceil(stop / slot_s - 1e-9), np.inf)))

    def init(self, params: OpenLoopParams, n_flows: int):
        return {"remaining": params.size, "carry": jnp.zeros(n_flows)}

    def step(self, state, params: OpenLoopParams, t, acks, key):
        active = (t >= params.start_slot) & (t < params.stop_slot) & (state["remaining"] > 0)
        if self.kind == "poisson":
            draws = jax.random.poisson(jax.random.fold_in(key, t), params.per_slot)
            carry = state["carry"]
        else:
            budget = state["carry"] + jnp.where(active, params.per_slot, 0.0)
            draws = jnp.floor(budget + 1e-12)
            carry = budget - draws
        wanted = jnp.where(active, jnp.minimum(draws, state["remaining"]), 0)
        return {"remaining": state["remaining"], "carry": carry}, wanted

    def sent(self, state, params, sent, wanted):
        return {"remaining": state["remaining"] - sent, "carry": state["carry"]}
