"""The packet-level engine: discrete time, FIFO drop-tail links, packets in a fixed pool, in JAX.

Time advances in slots of `slot_s` seconds (default: one packet transmission time at the fastest
link). Every packet in the network is an entry of a fixed-size pool (arrays over entries: flow,
sequence number, where it is, the slot it is due there); one `lax.scan` step handles one slot,
vectorized over the pool and the flows, and a batch of independent runs (seeds or parameter
points) is a `vmap` of the whole scan, so the same code runs on a GPU.

**Links.** Link l serves packets first-in first-out at its capacity C_l: one packet takes
s_l = 1 / (C_l slot) slots (a whole number of packets per slot when the slot divides evenly,
fractions carried over otherwise: the link keeps the time V_l at which it will have served every
packet it accepted). Packets reach a link at slot boundaries; those reaching it in the same slot
are taken in pool order. A packet that finds `buffer_l` packets waiting (the one in service not
counted) is dropped (drop-tail). An accepted packet leaves at max(t, V_l) + k s_l for the k-th
accepted packet of the slot, and reaches the next hop after the link's propagation delay, at the
first slot boundary at or after that instant (so each hop rounds up to one slot).

**Paths.** A flow's packets wait its access delay, cross the links of its route, and are
delivered; the acknowledgement returns on an uncongested reverse path (propagation only: the
links' delays plus the access delay), so the round trip without queueing is the network's RTT of
the flow (rounded up to slots per hop).

**Sources** are protocols (`fluidcc.packet.protocols`): each slot, a protocol learns how many
acknowledgements each of its flows received and says how many new packets each sends. The
engine counts, per flow, packets sent, delivered, dropped and in flight, exactly (integers); a
pool too small for the packets the sources want to send is reported (`pool_overflow`), never
silently absorbed: the sources are told how many packets they could not send.

Units: seconds and packets outside; slots inside (`Timing` converts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ParameterError
from ..network import Network

#: Where a pool entry is (its `hop` field): >= 0: due at that link of its route; the others:
FREE = -1
AT_RECEIVER = -2
ACK = -3

#: Integer type of packet counts and sequence numbers (exact accounting).
COUNT = jnp.int64


@dataclass(frozen=True)
class Timing:
    """Slots and their length: slot_s seconds per slot, n_slots slots simulated."""

    slot_s: float
    n_slots: int

    def slots(self, seconds) -> np.ndarray:
        """Seconds -> slots (float)."""
        return np.asarray(seconds, dtype=np.float64) / self.slot_s


@dataclass(frozen=True)
class Paths:
    """The static arrays of a network the engine needs (NumPy; become JAX constants).

    route: (R, H) link index of each hop of each route (-1 past its end); route_length (R,);
    service_slots (L,): s_l; propagation_slots (L,); buffer_packets (L,); access_slots (R,);
    return_slots (R,): the acknowledgement's way back (propagation only), whole slots.
    """

    route: np.ndarray
    route_length: np.ndarray
    service_slots: np.ndarray
    propagation_slots: np.ndarray
    buffer_packets: np.ndarray
    access_slots: np.ndarray
    return_slots: np.ndarray

    @classmethod
    def build(cls, network: Network, slot_s: float) -> "Paths":
        capacity = network.capacities_pps
        delays = network.link_delays_s
        buffers = []
        rtts = network.rtt_s
        for l, link in enumerate(network.links):
            if link.buffer_packets is not None:
                buffers.append(float(link.buffer_packets))
                continue
            # default: one bandwidth-delay product of the mean RTT of the link's flows (>= 1 packet)
            crossing = [i for i in network.flows_on(l)]
            rtt = float(np.mean(rtts[crossing])) if crossing else 2.0 * delays[l]
            buffers.append(max(1.0, math.ceil(capacity[l] * rtt)))
        routes = [network.route_indices(i) for i in range(network.n_flows)]
        hops = max(len(r) for r in routes)
        route = np.full((len(routes), hops), -1, dtype=np.int32)
        for i, r in enumerate(routes):
            route[i, : len(r)] = r
        access = np.array([flow.access_delay_s for flow in network.flows])
        back = np.array([access[i] + sum(delays[l] for l in r) for i, r in enumerate(routes)])
        return cls(
            route=route,
            route_length=np.array([len(r) for r in routes], dtype=np.int32),
            service_slots=1.0 / (capacity * slot_s),
            propagation_slots=delays / slot_s,
            buffer_packets=np.asarray(buffers, dtype=np.float64),
            access_slots=np.ceil(access / slot_s - 1e-9),
            return_slots=np.ceil(back / slot_s - 1e-9),
        )


def default_slot(network: Network) -> float:
    """One packet transmission time at the fastest link, seconds."""
    return 1.0 / float(np.max(network.capacities_pps))


def check_slot(slot_s: float, duration_s: float) -> Timing:
    if not (isinstance(slot_s, (int, float)) and math.isfinite(slot_s) and slot_s > 0):
        raise ParameterError("slot", slot_s, "a slot length > 0 s")
    if not (isinstance(duration_s, (int, float)) and math.isfinite(duration_s) and duration_s > 0):
        raise ParameterError("duration", duration_s, "a simulated time > 0 s")
    return Timing(float(slot_s), int(math.ceil(duration_s / slot_s - 1e-9)))


# --------------------------------------------------------------------------------- one slot
def _allocate(free, wanted, next_seq):
    """Place the new packets of this slot in free pool entries, flows in order.

    free (P,) bool; wanted (F,) whole numbers of new packets per flow; next_seq (F,).
    Returns (is_new (P,), flow (P,), seq (P,), sent (F,)): sent <= wanted when the pool is full.
    """
    total = jnp.cumsum(wanted)
    room = jnp.sum(free)
    placed = jnp.minimum(total, room)
    sent = placed - jnp.concatenate([jnp.zeros(1, placed.dtype), placed[:-1]])
    rank = jnp.cumsum(free) - 1  # position of each free entry among the free ones
    is_new = free & (rank < placed[-1])
    flow = jnp.searchsorted(placed, rank, side="right").astype(jnp.int32)
    flow = jnp.minimum(flow, wanted.shape[0] - 1)
    first = placed[flow] - sent[flow]  # rank of the flow's first new packet
    seq = next_seq[flow] + (rank - first)
    return is_new, flow, seq.astype(COUNT), sent.astype(COUNT)


def _link_step(t, hop, due, flow, paths, virtual_finish, n_links):
    """Packets due at a link this slot: drop-tail admission and FIFO departure times.

    Returns (arriving (P,), accepted (P,), next_due (P,) int, new virtual_finish (L,), per-link
    accepted and dropped counts (L,)).
    """
    route = jnp.asarray(paths.route)
    here = (hop >= 0) & (due == t)
    link = jnp.where(here, route[flow, jnp.maximum(hop, 0)], 0)
    onehot = (link[:, None] == jnp.arange(n_links)[None, :]) & here[:, None]  # (P, L)
    rank = jnp.sum(jnp.where(onehot, jnp.cumsum(onehot, axis=0) - 1, 0), axis=1)  # order among the link's arrivals
    service = jnp.asarray(paths.service_slots)
    start = jnp.maximum(virtual_finish, t.astype(virtual_finish.dtype))  # (L,)
    # packets waiting at t, the one in service not counted (-1 for an idle link, which takes one
    # packet straight into service)
    waiting = (start - t) / service - 1.0
    room = jnp.floor(jnp.asarray(paths.buffer_packets) - waiting + 1e-9)
    accepted = here & (rank < room[link])
    counts = jnp.sum(onehot & accepted[:, None], axis=0, dtype=COUNT)
    arrivals = jnp.sum(onehot, axis=0, dtype=COUNT)
    leave = start[link] + (rank + 1) * service[link]
    reach = leave + jnp.asarray(paths.propagation_slots)[link]
    next_due = jnp.ceil(reach - 1e-9).astype(due.dtype)
    virtual_finish = start + counts * service
    return here, accepted, next_due, virtual_finish, counts, arrivals - counts


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Pool:
    """Every packet in the network (arrays of shape (P,))."""

    hop: jax.Array  # FREE, a hop index, AT_RECEIVER or ACK
    due: jax.Array  # slot at which it reaches its next point
    flow: jax.Array
    seq: jax.Array
    sent_slot: jax.Array  # slot it left the source (for RTT samples)


def empty_pool(size: int) -> Pool:
    zeros = jnp.zeros(size, dtype=jnp.int32)
    return Pool(hop=jnp.full(size, FREE, dtype=jnp.int32), due=zeros, flow=zeros, seq=jnp.zeros(size, COUNT),
                sent_slot=zeros)


def simulate_slots(protocol, paths: Paths, flow_route, timing: Timing, pool_size: int, sample_every: int,
                   params: Any, key):
    """Run one simulation (jit and vmap it for batches). Returns a dict of JAX arrays.

    flow_route (F,): each flow's route index into `paths`. params: the protocol's parameters.
    """
    n_flows = flow_route.shape[0]
    n_links = paths.service_slots.shape[0]
    route_length = jnp.asarray(paths.route_length)[flow_route]
    access = jnp.asarray(paths.access_slots, dtype=jnp.int32)[flow_route]
    back = jnp.asarray(paths.return_slots, dtype=jnp.int32)[flow_route]
    n_samples = timing.n_slots // sample_every

    def step(carry, t):
        pool, virtual_finish, counters, proto, overflow = carry
        # 1. acknowledgements reach the sources and free their entries
        acked = (pool.hop == ACK) & (pool.due == t)
        ack_count = jnp.zeros(n_flows, COUNT).at[pool.flow].add(acked.astype(COUNT))
        free = (pool.hop == FREE) | acked
        # 2. the sources decide; the pool takes what fits
        proto, wanted = protocol.step(proto, params, t, ack_count, key)
        wanted = wanted.astype(COUNT)
        is_new, new_flow, new_seq, sent = _allocate(free, wanted, counters["sent"])
        proto = protocol.sent(proto, params, sent, wanted)
        hop = jnp.where(is_new, 0, jnp.where(acked, FREE, pool.hop))
        due = jnp.where(is_new, t + access[new_flow], pool.due)
        flow = jnp.where(is_new, new_flow, pool.flow)
        seq = jnp.where(is_new, new_seq, pool.seq)
        sent_slot = jnp.where(is_new, t, pool.sent_slot)
        # 3. packets reach links: drop-tail admission, FIFO departure times
        here, accepted, next_due, virtual_finish, link_accepted, link_dropped = _link_step(
            t, hop, due, flow, paths, virtual_finish, n_links)
        dropped = here & ~accepted
        drop_count = jnp.zeros(n_flows, COUNT).at[flow].add(dropped.astype(COUNT))
        last_hop = hop + 1 >= route_length[flow]
        due = jnp.where(accepted, next_due, due)
        hop = jnp.where(accepted, jnp.where(last_hop, AT_RECEIVER, hop + 1), jnp.where(dropped, FREE, hop))
        # 4. deliveries: the receiver acknowledges; the acknowledgement travels back
        arriving = (hop == AT_RECEIVER) & (due == t)
        delivered = jnp.zeros(n_flows, COUNT).at[flow].add(arriving.astype(COUNT))
        hop = jnp.where(arriving, ACK, hop)
        due = jnp.where(arriving, t + back[flow], due)
        pool = Pool(hop=hop, due=due, flow=flow, seq=seq, sent_slot=sent_slot)
        overflow = overflow + jnp.sum(wanted - sent)
        counters = {
            "sent": counters["sent"] + sent,
            "delivered": counters["delivered"] + delivered,
            "dropped": counters["dropped"] + drop_count,
            "link_accepted": counters["link_accepted"] + link_accepted,
            "link_dropped": counters["link_dropped"] + link_dropped,
            "first_sent": jnp.where((counters["first_sent"] < 0) & (sent > 0), t, counters["first_sent"]),
            "last_delivered": jnp.where(delivered > 0, t, counters["last_delivered"]),
        }
        # packets not yet served at the end of the slot (time t + 1), the one in service included
        backlog = jnp.maximum(virtual_finish - (t + 1), 0.0) / jnp.asarray(paths.service_slots)
        return (pool, virtual_finish, counters, proto, overflow), backlog

    counters = {
        "sent": jnp.zeros(n_flows, COUNT), "delivered": jnp.zeros(n_flows, COUNT),
        "dropped": jnp.zeros(n_flows, COUNT), "link_accepted": jnp.zeros(n_links, COUNT),
        "link_dropped": jnp.zeros(n_links, COUNT), "first_sent": jnp.full(n_flows, -1, jnp.int32),
        "last_delivered": jnp.full(n_flows, -1, jnp.int32),
    }
    carry = (empty_pool(pool_size), jnp.zeros(n_links), counters, protocol.init(params, n_flows),
             jnp.zeros((), COUNT))
    times = jnp.arange(timing.n_slots, dtype=jnp.int32)
    (pool, _, counters, proto, overflow), backlog = jax.lax.scan(step, carry, times)
    in_flight = jnp.zeros(n_flows, COUNT).at[pool.flow].add(((pool.hop >= 0) | (pool.hop == AT_RECEIVER)).astype(COUNT))
    acks_pending = jnp.zeros(n_flows, COUNT).at[pool.flow].add((pool.hop == ACK).astype(COUNT))
    sampled = backlog[: n_samples * sample_every].reshape(n_samples, sample_every, n_links)
    return {**counters, "in_flight": in_flight, "acks_pending": acks_pending, "pool_overflow": overflow,
            "queue_mean": jnp.mean(backlog, axis=0), "queue_samples": sampled[:, -1, :],
            "queue_sample_means": jnp.mean(sampled, axis=1), "protocol": proto}
