"""The packet-level engine: discrete time, FIFO drop-tail links, batches of packets on a calendar.

Time advances in slots of `slot_s` seconds (default: one packet transmission time at the fastest
link; coarser slots are allowed and keep whole-packet accounting). One `lax.scan` step handles one
slot for every flow and link at once, and a batch of independent runs (seeds) is a `vmap` of the
whole scan, so the same code runs on a GPU (`simulate` shards the batch along the JAX devices: the
CPU cores here, the GPUs there). The work of a slot grows with the number of flows and hops, not
with the packets in flight. The links' random numbers (the turn below) are a hash of the run's
key, the slot and the link (`_hashed_uniform`): the same for a seed whatever the run records.

**Batches.** In each slot a source sends at most one *batch*: a run of consecutive sequence
numbers [seq, seq + n) (new data, or a retransmission), or a SYN (no data). Every link is FIFO and
a flow follows one route, so a flow's packets never overtake one another; a batch therefore stays
one run of consecutive sequence numbers from hop to hop. Where it is due next (a hop of its route,
the receiver, or its source for acknowledgements) is a cell of a *calendar* indexed by
(flow, stage, due slot modulo the horizon D); one slot reads one column of the calendar.

**Links.** Link l serves packets first in first out at its capacity C_l (s_l = 1 / (C_l slot)
slots per packet) and keeps the time V_l at which it will have served every packet it accepted.
Batches reaching a link in a slot arrive at its start. The link accepts as many packets as fit:
its buffer (default: one bandwidth-delay product of the mean RTT of its flows) plus what it serves
during the slot, less its backlog (drop-tail; with one packet per slot this is the usual rule:
`buffer` waiting beside the one in service). When the slot's arrivals do not all fit, the room is
shared in proportion to the batches -- each keeps floor(m r / A) of its m packets (r room, A
arrived), the few left over go one each to the batches still short, in turn from a random batch
-- and a batch loses its last packets. In a slot of many packet times a batch stands for packets
its source sent through the slot, interleaved with the other flows' packets, so an overflow
drops some of every batch; handing the room to whole batches in turn would put a slot's drops on
one or two flows. The link serves the accepted batches in that same turn, each batch's packets
together.
A batch leaves when its last accepted packet has been served and reaches its next stage after the
link's propagation delay, at the first slot boundary at or after that instant (so each hop rounds
up to a slot). Two batches of a flow never share a cell: a batch that would reach a stage in the
same slot as the flow's previous one arrives one slot later (this happens only when a queue
drains batches smaller than a slot's service; it delays a batch by at most a slot per hop).
A SYN is not dropped and takes no service: it waits behind the link's backlog (documented choice:
losing SYNs would add TCP's 1-3 s SYN timeout, which the papers' experiments do not model).

**Receivers** keep the next expected sequence number and up to `OOO_RANGES` runs of packets
received out of order (a receiver with more holes discards the highest run: the data counts as
delivered but not received, and the source sends it again). For every packet the receiver returns
one acknowledgement (no delayed ACKs); the acknowledgements of one batch travel together, on an
uncongested reverse path (propagation only: the links' delays plus the access delay), and tell the
source how many of them advanced the cumulative acknowledgement (`n_new`), how many repeated it
(`n_dup`), its value, the slot the data was sent (an echoed timestamp), and the header fields the
routers stamped into the data (RCP's rate, for instance).

**Sources** send through a network interface: each slot a source is given a budget of whole
packets (its interface's packets per slot, fractions carried over, at most one packet saved up
while idle), so a window's burst leaves one interface's worth per slot, as a real NIC would pace
it. The interface is the flow's `interface_pps` (`fluidcc.network.Flow`), by default as fast as
its first link: a route whose first link is the bottleneck then paces its source at the
bottleneck's rate, and batches stay within a slot's service. Senders with faster interfaces
(ns-3's or a testbed's, 10 Gb/s behind a 100 Mb/s bottleneck) burst: set their interface rate.
That stands for a private access link of that speed first on the route (whose queue only ever
holds its own flow's burst) at half the work per slot on a one-link route: the two agree but for
where a burst's last packets arrive, within a slot (the link serializes a burst of most of its
slot's service into the next slot; the interface delivers a slot's batch together; test
`test_an_interface_rate_is_a_private_access_link`). Closed-loop sources keep to the budget; the
open-loop sources ignore it (they stand for the arrivals of many senders). On the TCP dumbbell of
benchmarks/packet_throughput.py, at one packet time per slot, unpaced senders moved the mean
queue from 37 % to 11 % above ns-3's.

**Sources** are protocols (`fluidcc.packet.protocols`); routers are part of the protocol too
(`stamp` and `router_step`). The engine counts, per flow, packets sent, delivered to the receiver,
dropped and in flight, exactly (integers), and the slot the flow's receiver had all its data.

Units: seconds and packets outside; slots inside (`Timing` converts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ParameterError
from ..network import Network

#: Integer type of sequence numbers and packet counters (exact accounting). 32 bits: faster than
#: 64 on a CPU with the same results (benchmarks/RESULTS.md, appendix, "Packet engine: TCP
#: dumbbell against ns-3", 2026-11-23); `check_counts` keeps a run's packets within range.
COUNT = jnp.int32
#: Runs of out-of-order packets a receiver keeps.
OOO_RANGES = 16
_NONE = np.iinfo(np.int32).max // 4  # an empty out-of-order run starts here
#: Most packets a link, a source or a flow may count in one run (sequence numbers stay below _NONE).
MOST_PACKETS = _NONE - 1


@dataclass(frozen=True)
class Timing:
    """Slots and their length: slot_s seconds per slot, n_slots slots simulated."""

    slot_s: float
    n_slots: int

    def slots(self, seconds) -> np.ndarray:
        """Seconds -> slots (float)."""
        return np.asarray(seconds, dtype=np.float64) / self.slot_s


def default_slot(network: Network) -> float:
    """One packet transmission time at the fastest link, seconds."""
    return 1.0 / float(np.max(network.capacities_pps))


def check_slot(slot_s: float, duration_s: float) -> Timing:
    if not (isinstance(slot_s, (int, float)) and math.isfinite(slot_s) and slot_s > 0):
        raise ParameterError("slot", slot_s, "a slot length > 0 s")
    if not (isinstance(duration_s, (int, float)) and math.isfinite(duration_s) and duration_s > 0):
        raise ParameterError("duration", duration_s, "a simulated time > 0 s")
    return Timing(float(slot_s), int(math.ceil(duration_s / slot_s - 1e-9)))


def check_counts(rate_per_slot, timing: Timing, extra: float = 0.0) -> None:
    """Raise, naming the duration, if `rate_per_slot` packets a slot (the fastest link, interface
    or source) for the whole run, plus `extra` (a buffer), could exceed the 32-bit counters."""
    rate = float(np.max(rate_per_slot))
    if rate * timing.n_slots + extra > MOST_PACKETS:
        longest = max(MOST_PACKETS - extra, 0.0) / rate * timing.slot_s
        raise ParameterError("duration", timing.n_slots * timing.slot_s,
                             f"at most {longest:.6g} s here: a run counts at most {MOST_PACKETS} packets per "
                             f"link and flow (32-bit counters; {rate / timing.slot_s:.6g} packets/s at the "
                             "fastest link, interface or source); split the run")


def link_mean_rtt(network: Network) -> np.ndarray:
    """Per link, s: the mean RTT of the network's flows that cross it (no flow: twice its delay)."""
    rtts = network.rtt_s
    return np.array([float(np.mean(rtts[network.flows_on(l)])) if network.flows_on(l)
                     else 2.0 * float(network.link_delays_s[l]) for l in range(network.n_links)])


def default_buffers(network: Network) -> np.ndarray:
    """Each link's buffer, packets: as given, else one BDP of the mean RTT of its flows (>= 1)."""
    capacity = network.capacities_pps
    rtt = link_mean_rtt(network)
    return np.array([float(link.buffer_packets) if link.buffer_packets is not None
                     else max(1.0, math.ceil(capacity[l] * rtt[l])) for l, link in enumerate(network.links)])


@dataclass(frozen=True)
class Layout:
    """The static arrays of one simulation (NumPy; they become JAX constants).

    Per simulated flow (F): route (F, H) link of each hop (-1 past the end), length (F,), access
    and back (F,) whole slots to the first link and of the acknowledgements' way back (>= 1),
    interface (F,) packets per slot its source may send.
    Per link (L): service (slots per packet), per_slot (packets per slot), propagation (slots,
    fractional), buffer (packets). horizon: the calendar's length D in slots (a power of two).
    For the per-link running sums: order (F H,) sorts the hops by link, first (L,) and last (L,)
    are where each link's hops start and end in that order (first == last: no hop).
    """

    route: np.ndarray
    length: np.ndarray
    access: np.ndarray
    back: np.ndarray
    interface: np.ndarray
    service: np.ndarray
    per_slot: np.ndarray
    propagation: np.ndarray
    buffer: np.ndarray
    horizon: int
    order: np.ndarray
    first: np.ndarray
    last: np.ndarray

    @property
    def n_flows(self) -> int:
        return int(self.route.shape[0])

    @property
    def n_hops(self) -> int:
        return int(self.route.shape[1])

    @property
    def n_links(self) -> int:
        return int(self.service.shape[0])

    @classmethod
    def build(cls, network: Network, flow_route: np.ndarray, slot_s: float,
              buffers: np.ndarray | None = None) -> "Layout":
        capacity = network.capacities_pps
        delays = network.link_delays_s
        buffer = default_buffers(network) if buffers is None else np.asarray(buffers, dtype=np.float64)
        routes = [network.route_indices(i) for i in range(network.n_flows)]
        hops = max(len(r) for r in routes)
        by_route = np.full((len(routes), hops), -1, dtype=np.int32)
        for i, r in enumerate(routes):
            by_route[i, : len(r)] = r
        access_s = np.array([flow.access_delay_s for flow in network.flows])
        interface = np.array([capacity[r[0]] if flow.interface_pps is None else flow.interface_pps
                              for flow, r in zip(network.flows, routes)]) * slot_s
        back_s = np.array([access_s[i] + sum(delays[l] for l in r) for i, r in enumerate(routes)])
        flow_route = np.asarray(flow_route, dtype=np.int64)
        route = by_route[flow_route]
        service = 1.0 / (capacity * slot_s)
        propagation = delays / slot_s
        # longest a batch can be on its way to a stage: a full queue, its service, the propagation,
        # a slot of rounding and one of spacing per hop; the calendar must be longer
        per_hop = (buffer + capacity * slot_s + 2.0) * service + propagation + 2.0
        path = np.array([per_hop[r].sum() for r in routes])
        access = np.ceil(access_s / slot_s - 1e-9).astype(np.int32)
        back = np.maximum(1, np.ceil(back_s / slot_s - 1e-9)).astype(np.int32)
        need = float(np.max(np.maximum(path[flow_route] + access[flow_route], back[flow_route]))) + 2.0
        horizon = 1 << int(math.ceil(math.log2(max(need * 1.25, 8.0))))
        flat = route.reshape(-1)
        key = np.where(flat >= 0, flat, len(capacity))  # hops past the end sort last
        order = np.argsort(key, kind="stable").astype(np.int32)
        sorted_key = key[order]
        first = np.searchsorted(sorted_key, np.arange(len(capacity)), side="left").astype(np.int32)
        last = np.searchsorted(sorted_key, np.arange(len(capacity)), side="right").astype(np.int32)
        return cls(route=route, length=np.array([len(routes[r]) for r in flow_route], dtype=np.int32),
                   access=access[flow_route], back=back[flow_route], interface=interface[flow_route],
                   service=service,
                   per_slot=capacity * slot_s, propagation=propagation, buffer=buffer, horizon=horizon,
                   order=order, first=first, last=last)


class Acks(NamedTuple):
    """What reaches each source in a slot (arrays over flows, F)."""

    n_new: jax.Array  # acknowledgements that advanced the cumulative ACK
    n_dup: jax.Array  # acknowledgements that repeated it
    ack_no: jax.Array  # the cumulative ACK after them (next sequence number expected)
    echo: jax.Array  # slot the acknowledged batch (or SYN) was sent, -1 if none
    syn: jax.Array  # a SYN-ACK arrived (bool)
    header: jax.Array  # (F, K) the header fields of the acknowledged batch


class Send(NamedTuple):
    """What each source sends in a slot (arrays over flows, F): one batch [seq, seq + n), or a SYN."""

    n: jax.Array
    seq: jax.Array
    syn: jax.Array  # bool
    header: jax.Array  # (F, K)


class Flows(NamedTuple):
    """Per simulated flow: start and stop slots (stop may be inf), size in packets (inf: no end)."""

    start: jax.Array
    stop: jax.Array
    size: jax.Array


class Links(NamedTuple):
    """What routers see of their links in a slot (arrays over links, L)."""

    accepted: jax.Array  # packets accepted this slot
    arrived: jax.Array  # packets that reached the link this slot (accepted or dropped)
    waiting: jax.Array  # packets queued at the start of the slot, the one in service not counted
    header_sum: jax.Array  # (L, K) sum over accepted packets of their header fields


# ------------------------------------------------------------------------------- helpers
def _put(array, index, valid, value):
    """array.at[index].set(value) where valid (index a tuple of (B,) arrays; the last is replaced
    by an out-of-range value, and dropped, where not valid)."""
    *lead, last = index
    last = jnp.where(valid, last, array.shape[len(lead)])
    return array.at[(*lead, last)].set(value, mode="drop")


def _segment_totals(values_sorted, first, last):
    """Per link: the sum of its entries (values in link order) and, per entry, the sum before it."""
    cum = jnp.concatenate([jnp.zeros(1, values_sorted.dtype), jnp.cumsum(values_sorted)])
    totals = cum[last] - cum[first]
    return cum, totals


def _mix(x):
    """A bijective 32-bit integer mixer (the finalizer of MurmurHash3; constants of the algorithm)."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


def _hashed_uniform(bits, t, n):
    """n uniform numbers in [0, 1) for slot t, a hash of the run's key bits, the slot and the index:
    the same for a given seed and slot whatever else the run does or records, and element-wise, so
    cheap in every slot (a `jax.random` call per slot is a small loop of its own, a large share of
    a slot's work on a CPU: benchmarks/RESULTS.md, appendix, "Packet engine: TCP dumbbell against
    ns-3", 2026-11-23)."""
    lane = jnp.arange(n, dtype=jnp.uint32)
    x = _mix(bits[0] ^ (t.astype(jnp.uint32) * jnp.uint32(0x9E3779B9)))
    x = _mix(x ^ bits[1] ^ (lane * jnp.uint32(0x632BE5AB)))
    x = _mix(x + lane)
    return (x >> 8).astype(jnp.float64) * (1.0 / (1 << 24))


def _rotated(cum, first, turn, link_of, order, inverse, total):
    """Per entry (flat order): the sum of the entries of its link that come before it in a turn
    that starts at sorted index `turn` of the link (cum: the link-sorted cumulative sums)."""
    before = (cum[:-1] - cum[first[link_of[order]]])[inverse]
    start = (cum[turn] - cum[first])[link_of]
    return (before - start) % jnp.maximum(total[link_of], 1)


def _receive(rcv_nxt, ooo_s, ooo_e, valid, s, n):
    """One batch [s, s + n) (n >= 1 where valid) reaches each receiver.

    Returns (rcv_nxt, ooo_s, ooo_e, n_new, n_dup, duplicates, discarded) per flow.
    """
    e = s + n
    old = rcv_nxt
    overlap = jnp.maximum(0, jnp.minimum(e[:, None], ooo_e) - jnp.maximum(s[:, None], ooo_s))
    duplicates = jnp.maximum(0, jnp.minimum(e, old) - s) + jnp.sum(overlap, axis=1, dtype=COUNT)
    in_order = valid & (s <= old)
    reach = jnp.where(in_order, jnp.maximum(old, e), old)
    absorbed = in_order[:, None] & (ooo_s <= reach[:, None])
    new_nxt = jnp.maximum(reach, jnp.max(jnp.where(absorbed, ooo_e, 0), axis=1))
    ooo_s = jnp.where(absorbed, _NONE, ooo_s)
    ooo_e = jnp.where(absorbed, _NONE, ooo_e)
    n_new = jnp.where(in_order, jnp.maximum(0, e - old), 0)
    n_dup = jnp.where(valid, n - n_new, 0)
    # out of order: merge [s, e) with the runs it overlaps or touches, keep it in a free place
    ahead = valid & (s > old)
    touch = ahead[:, None] & (ooo_s <= e[:, None]) & (ooo_e >= s[:, None])
    ms = jnp.minimum(s, jnp.min(jnp.where(touch, ooo_s, _NONE), axis=1))
    me = jnp.maximum(e, jnp.max(jnp.where(touch, ooo_e, 0), axis=1))
    ooo_s = jnp.where(touch, _NONE, ooo_s)
    ooo_e = jnp.where(touch, _NONE, ooo_e)
    # the place: a free one, else the highest run (discarded) if it starts above the new one
    highest = jnp.argmax(ooo_s, axis=1)
    free = jnp.argmax(ooo_s == _NONE, axis=1)
    has_free = jnp.any(ooo_s == _NONE, axis=1)
    top_s = jnp.take_along_axis(ooo_s, highest[:, None], axis=1)[:, 0]
    top_e = jnp.take_along_axis(ooo_e, highest[:, None], axis=1)[:, 0]
    replace = ahead & ~has_free & (top_s > ms)
    place = jnp.where(has_free, free, highest)
    write = ahead & (has_free | replace)
    discarded = jnp.where(ahead & ~write, me - ms, 0) + jnp.where(replace, top_e - top_s, 0)
    rows = jnp.arange(ooo_s.shape[0])
    ooo_s = ooo_s.at[rows, place].set(jnp.where(write, ms, ooo_s[rows, place]))
    ooo_e = ooo_e.at[rows, place].set(jnp.where(write, me, ooo_e[rows, place]))
    return new_nxt, ooo_s, ooo_e, n_new, n_dup, duplicates, discarded


# ----------------------------------------------------------------------------- the scan
def simulate_slots(protocol, layout: Layout, flows: Flows, timing: Timing, sample_every: int, params: Any, key):
    """Run one simulation (jit and vmap it for batches). Returns a dict of JAX arrays."""
    F, H, L, D = layout.n_flows, layout.n_hops, layout.n_links, layout.horizon
    S = H + 1  # stages: the hops, then the receiver
    K = int(getattr(protocol, "header_size", 0))
    route = jnp.asarray(layout.route)
    length = jnp.asarray(layout.length)
    access = jnp.asarray(layout.access)
    back = jnp.asarray(layout.back)
    service = jnp.asarray(layout.service)
    per_slot = jnp.asarray(layout.per_slot)
    propagation = jnp.asarray(layout.propagation)
    buffer = jnp.asarray(layout.buffer)
    order = jnp.asarray(layout.order)
    first, last = jnp.asarray(layout.first), jnp.asarray(layout.last)
    flat_flow = jnp.repeat(jnp.arange(F, dtype=jnp.int32), H)
    flat_hop = jnp.tile(jnp.arange(H, dtype=jnp.int32), F)
    flat_link = route.reshape(-1)
    on_route = flat_link >= 0
    link_of = jnp.maximum(flat_link, 0)
    inverse = jnp.argsort(order)
    rows = jnp.arange(F)
    has_router = hasattr(protocol, "router_step")
    source_key, link_key = jax.random.fold_in(key, 0), jax.random.fold_in(key, 1)

    data_fields = ("n", "seq", "sent", "syn", "header")
    # A calendar cell packs its integer fields into one int64 row (one scatter per write, not one
    # per field: scatters were the largest share of a slot's work), the header fields beside it.
    data_ints = ("n", "seq", "sent", "syn")
    ack_ints = ("n_new", "n_dup", "ack_no", "echo", "syn")
    kinds = {"n": jnp.int32, "seq": COUNT, "sent": jnp.int32, "syn": bool,
             "n_new": jnp.int32, "n_dup": jnp.int32, "ack_no": COUNT, "echo": jnp.int32}

    def write(calendar, index, valid, values, names):
        """Put `values` (a dict over `names` and "header") into the cells at `index` where valid."""
        ints = jnp.stack([values[k].astype(COUNT) for k in names], axis=-1)
        return {"ints": _put(calendar["ints"], index, valid, ints),
                "header": _put(calendar["header"], index, valid, values["header"])}

    def read(calendar, row, names):
        """The cells of calendar row `row`, as a dict over `names` and "header"."""
        ints = calendar["ints"][row]
        return {**{k: ints[..., i].astype(kinds[k]) for i, k in enumerate(names)}, "header": calendar["header"][row]}
    zero_flows = jnp.zeros(F, jnp.int32)
    nic = jnp.asarray(layout.interface)  # a source sends at most its interface's packets per slot
    direct = access == 0  # a source whose first link is at the source: its batch is due at once

    link_bits = jax.random.key_data(link_key).reshape(-1)[:2].astype(jnp.uint32)

    def slot(carry, t):
        # The calendars are time-major (D, ...): row d holds what is due at slots = d (mod D). A
        # slot first clears its row (read at the end of the previous slot into `now`), then only
        # writes, and reads the next row last: reads after writes keep XLA's updates in place.
        cal, acal, now, now_ack, rx, links, counters, proto, router = carry
        col = t % D
        cal = {**cal, "ints": cal["ints"].at[col].set(0)}
        acal = {**acal, "ints": acal["ints"].at[col].set(0)}
        # 1. acknowledgements reach the sources
        acks = Acks(**now_ack)
        # 2. the sources send: one batch (or SYN) each, due at the first link after the access delay
        credit = jnp.minimum(links["credit"] + nic, nic + 1.0)  # at most one packet saved up
        budget = jnp.floor(credit + 1e-9).astype(COUNT)
        proto, send = protocol.step(proto, params, flows, t, acks, budget, jax.random.fold_in(source_key, t))
        n_send = jnp.maximum(send.n, 0).astype(jnp.int32)
        credit = jnp.maximum(credit - n_send, 0.0)
        going = (n_send > 0) | send.syn
        batch = {"n": n_send, "seq": send.seq.astype(COUNT), "sent": jnp.full(F, t, jnp.int32), "syn": send.syn,
                 "header": send.header.reshape(F, K)}
        later = going & ~direct
        due0 = (t + access) % D
        cal = write(cal, (due0, rows, zero_flows), later, batch, data_ints)
        now = {k: now[k].at[:, 0].set(jnp.where(going & direct, batch[k], now[k][:, 0]) if k != "header" else
                                      jnp.where((going & direct)[:, None], batch[k], now[k][:, 0]))
               for k in data_fields}
        n, seq, sent, syn, header = (now[k] for k in data_fields)
        # 3. the links: hops 0..H-1 of every flow, flattened (F H)
        hn = n[:, :H].reshape(-1)
        hsyn = syn[:, :H].reshape(-1) & on_route
        here = (hn > 0) & on_route
        m = jnp.where(here, hn, 0).astype(COUNT)
        _, arrived = _segment_totals(m[order], first, last)
        v = links["virtual_finish"]
        begin = jnp.maximum(v, t.astype(v.dtype))
        backlog = (begin - t) * per_slot
        room = jnp.maximum(jnp.floor(buffer + per_slot - backlog + 1e-9), 0).astype(COUNT)
        take = jnp.minimum(arrived, room)
        A, r = arrived[link_of], take[link_of]
        # admission in proportion to the batches (each keeps floor(m r / A) of its m packets), the
        # packets left over one each to the batches still short, in turn from a random batch; the
        # same turn is the order of service (a batch's packets consecutive)
        share = jnp.where(A > 0, (m * r) // jnp.maximum(A, 1), 0)
        short = here & (share < m)
        cum_short, n_short = _segment_totals(short.astype(COUNT)[order], first, last)
        entries = last - first
        draw = _hashed_uniform(link_bits, t, L)
        turn = first + jnp.floor(draw * entries).astype(jnp.int32)  # the batch (sorted index) served first
        turn = jnp.minimum(turn, jnp.maximum(last - 1, first))
        short_before = _rotated(cum_short, first, turn, link_of, order, inverse, n_short)
        share_total = jax.ops.segment_sum(share, link_of, num_segments=L)
        extra = short & (short_before < (take - share_total)[link_of])
        accepted = jnp.where(here, share + extra, 0)
        cum_acc, _ = _segment_totals(accepted[order], first, last)
        # the batch's last accepted packet, + 1
        last_pos = _rotated(cum_acc, first, turn, link_of, order, inverse, take) + accepted
        begin_h, service_h = begin[link_of], service[link_of]
        leave = begin_h + jnp.where(accepted > 0, last_pos, r).astype(begin_h.dtype) * service_h
        reach = jnp.ceil(leave + propagation[link_of] - 1e-9)
        moving = (accepted > 0) | hsyn
        next_stage = flat_hop + 1
        due = jnp.maximum(reach.astype(jnp.int32), t + 1)
        due = jnp.maximum(due, links["last_due"][flat_flow, next_stage] + 1)
        late = jnp.sum(moving & (due - t >= D), dtype=COUNT)
        due = jnp.minimum(due, t + D - 1)
        links = {
            "credit": credit,
            "virtual_finish": jnp.where(take > 0, begin + take * service, v),
            "last_due": _put(links["last_due"], (flat_flow, next_stage), moving, due),
        }
        hheader = header[:, :H].reshape(F * H, K)
        if has_router:
            hheader = protocol.stamp(router, params, link_of, hheader)
            weight = accepted.astype(hheader.dtype)[:, None] * hheader
            header_sum = jax.ops.segment_sum(jnp.where(here[:, None], weight, 0), link_of, num_segments=L)
            router = protocol.router_step(router, params, t, Links(
                accepted=take, arrived=arrived, waiting=jnp.maximum(backlog - 1.0, 0.0), header_sum=header_sum))
        hop_batch = {"n": accepted.astype(jnp.int32), "seq": seq[:, :H].reshape(-1), "sent": sent[:, :H].reshape(-1),
                     "syn": hsyn, "header": hheader}
        where = (due % D, flat_flow, next_stage)
        cal = write(cal, where, moving, hop_batch, data_ints)
        dropped_f = jnp.sum((m - accepted).reshape(F, H), axis=1, dtype=COUNT)
        # 4. the receivers
        rn = n[rows, length].astype(COUNT)
        rsyn = syn[rows, length]
        got = rn > 0
        rcv, ooo_s, ooo_e, n_new, n_dup, dups, discarded = _receive(
            rx["rcv_nxt"], rx["ooo_s"], rx["ooo_e"], got, seq[rows, length], rn)
        answer = got | rsyn
        ack = {"n_new": n_new.astype(jnp.int32), "n_dup": n_dup.astype(jnp.int32), "ack_no": rcv,
               "echo": sent[rows, length], "syn": rsyn, "header": header[rows, length]}
        acal = write(acal, ((t + back) % D, rows), answer, ack, ack_ints)
        done = (counters["finished"] < 0) & (rcv >= flows.size)
        rx = {"rcv_nxt": rcv, "ooo_s": ooo_s, "ooo_e": ooo_e}
        counters = {
            "sent": counters["sent"] + n_send,
            "delivered": counters["delivered"] + rn,
            "duplicates": counters["duplicates"] + dups,
            "discarded": counters["discarded"] + discarded,
            "dropped": counters["dropped"] + dropped_f,
            "link_accepted": counters["link_accepted"] + take,
            "link_dropped": counters["link_dropped"] + arrived - take,
            "first_sent": jnp.where((counters["first_sent"] < 0) & going, t, counters["first_sent"]),
            "last_delivered": jnp.where(got, t, counters["last_delivered"]),
            "finished": jnp.where(done, t, counters["finished"]),
            "late": counters["late"] + late,
        }
        # 5. what is due next slot (read last; cells without a batch read as n = 0, syn = False)
        following = (t + 1) % D
        now = read(cal, following, data_ints)
        now_ack = read(acal, following, ack_ints)
        now_ack["echo"] = jnp.where((now_ack["n_new"] + now_ack["n_dup"] > 0) | now_ack["syn"], now_ack["echo"], -1)
        # packets not yet served at the end of the slot (time t + 1), the one in service included
        after = jnp.maximum(links["virtual_finish"] - (t + 1), 0.0) * per_slot
        return (cal, acal, now, now_ack, rx, links, counters, proto, router), after

    def block(carry, times):
        carry, backlog = jax.lax.scan(slot, carry, times)
        observed = protocol.observe(carry[-1], params) if has_router and hasattr(protocol, "observe") else {}
        return carry, {"queue_mean": jnp.mean(backlog, axis=0), "queue_end": backlog[-1],
                       "link_accepted": carry[6]["link_accepted"], "active": _active(carry, flows, times[-1]),
                       **observed}

    cal = {"ints": jnp.zeros((D, F, S, len(data_ints)), COUNT), "header": jnp.zeros((D, F, S, K))}
    acal = {"ints": jnp.zeros((D, F, len(ack_ints)), COUNT), "header": jnp.zeros((D, F, K))}
    now = read(cal, 0, data_ints)
    now_ack = read(acal, 0, ack_ints)
    now_ack["echo"] = jnp.full(F, -1, jnp.int32)
    rx = {"rcv_nxt": jnp.zeros(F, COUNT), "ooo_s": jnp.full((F, OOO_RANGES), _NONE, COUNT),
          "ooo_e": jnp.full((F, OOO_RANGES), _NONE, COUNT)}
    links = {"credit": jnp.zeros(F), "virtual_finish": jnp.zeros(L), "last_due": jnp.full((F, S), -1, jnp.int32)}
    counters = {name: jnp.zeros(F, COUNT) for name in ("sent", "delivered", "duplicates", "discarded", "dropped")}
    counters.update({"link_accepted": jnp.zeros(L, COUNT), "link_dropped": jnp.zeros(L, COUNT),
                     "first_sent": jnp.full(F, -1, jnp.int32), "last_delivered": jnp.full(F, -1, jnp.int32),
                     "finished": jnp.full(F, -1, jnp.int32), "late": jnp.zeros((), COUNT)})
    router = protocol.router_init(params, L) if has_router else ()
    carry = (cal, acal, now, now_ack, rx, links, counters, protocol.init(params, flows), router)
    n_blocks = timing.n_slots // sample_every
    times = jnp.arange(n_blocks * sample_every, dtype=jnp.int32).reshape(n_blocks, sample_every)
    carry, samples = jax.lax.scan(block, carry, times)
    rest = timing.n_slots - n_blocks * sample_every
    if rest:
        carry, _ = jax.lax.scan(slot, carry, jnp.arange(n_blocks * sample_every, timing.n_slots, dtype=jnp.int32))
    cal, acal, now, now_ack, rx, links, counters, proto, router = carry
    in_flight = jnp.sum(cal["ints"][..., 0], axis=(0, 2), dtype=COUNT)
    stored = jnp.sum(jnp.where(rx["ooo_s"] < _NONE, rx["ooo_e"] - rx["ooo_s"], 0), axis=1, dtype=COUNT)
    return {**counters, "in_flight": in_flight, "received": rx["rcv_nxt"], "stored": stored,
            "samples": samples, "protocol": proto, "router": router}


def _active(carry, flows: Flows, t):
    """Flows that have started and whose receiver does not have all their data yet, at the end of slot t."""
    finished = carry[6]["finished"]
    return jnp.sum((flows.start <= t) & (finished < 0), dtype=jnp.int32)
