"""Open-loop sources: packets at a given rate, deaf to acknowledgements.

A flow sends from its start until its stop or until it has sent its size: at a constant rate
(packet k leaves at start + k / rate) or as a Poisson process (exponential gaps of mean
1 / rate; gap k of flow i is drawn from the run's key folded with i and k, so the packet times do
not depend on anything but the seed, the flow and the packet). No SYN, no retransmission: into
one link, Poisson packets make the M/D/1 queue, the engine's validation case.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ...errors import ParameterError
from ..exact import DATA, ExactProtocol, Packet, flow_index, on_grid
from ..settings import FieldSettings

KINDS = ("poisson", "constant")


@dataclass(frozen=True)
class OpenLoop(ExactProtocol, FieldSettings):
    """Open-loop sources ("poisson" or "constant") at rate_pps (a scalar or one per flow)."""

    kind: str = "poisson"
    rate_pps: Any = field(default=1.0, metadata={"per_flow": True})
    name = "open_loop"
    paced = False  # they stand for the arrivals of many senders

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ParameterError("kind", self.kind, f"one of {', '.join(KINDS)}")
        rate = np.atleast_1d(np.asarray(self.rate_pps, dtype=np.float64))
        if rate.ndim != 1 or rate.size == 0 or not np.all(np.isfinite(rate) & (rate > 0)):
            raise ParameterError("rate", self.rate_pps, "a rate > 0 packets/s, or one per flow")

    def params(self, network, plan, tables):
        rate = np.atleast_1d(np.asarray(self.rate_pps, dtype=np.float64))
        n = max(len(t) for t in tables)
        if rate.size not in (1, n):
            raise ParameterError("rate", rate.tolist(), f"one rate, or one per flow ({n})")
        return {"rate": jnp.asarray(np.broadcast_to(rate, (n,))[: plan.n_flows])}

    @staticmethod
    def _rate(params, flows):
        """Each lane's rate (packets/s): its flow's."""
        return params["rate"][flow_index(flows)]

    def _gap(self, state, params, flows):
        if self.kind == "constant":
            return 1.0 / self._rate(params, flows)
        keys = jax.vmap(lambda k, n: jax.random.fold_in(k, n))(state["keys"], state["count"])
        return jax.vmap(jax.random.exponential)(keys) / self._rate(params, flows)

    def init(self, params, flows, key):
        n = flows.start.shape[0]
        state = {"count": jnp.zeros(n, jnp.int32), "due": jnp.zeros(n, bool),
                 "keys": jax.vmap(lambda i: jax.random.fold_in(key, i))(flow_index(flows))}
        first = on_grid(flows.start + self._gap(state, params, flows)) if self.kind == "poisson" else flows.start
        return {**state, "next": first, "count": jnp.zeros(n, jnp.int32)}

    def next_time(self, state, params, flows):
        more = (state["count"] < flows.size) & (state["next"] < flows.stop) & ~state["due"]
        return jnp.where(more, state["next"], jnp.inf)

    def on_time(self, state, params, flows, now, mask):
        return {**state, "due": state["due"] | mask}

    def on_ack(self, state, params, flows, now, mask, ack):
        return state

    def ready(self, state, params, flows, now):
        return state["due"]

    def send(self, state, params, flows, now, mask):
        count = state["count"] + mask
        if self.kind == "constant":
            following = on_grid(flows.start + count / self._rate(params, flows))
        else:
            following = on_grid(state["next"] + self._gap({**state, "count": count}, params, flows))
        packet = Packet(kind=jnp.full(mask.shape, DATA, jnp.int32), seq=state["count"],
                        header=jnp.zeros((mask.shape[0], 0)))
        return {**state, "count": count, "due": state["due"] & ~mask,
                "next": jnp.where(mask, following, state["next"])}, packet
