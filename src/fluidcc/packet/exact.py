"""The exact packet engine: every packet, ACK and timer at its own time, in one total order.

**Order.** Every event has an exact time (seconds, float64, on a grid of 2^-32 s: `on_grid`) and
a place in one total order: time, then flow, then kind (data, ACK, SYN, SYN-ACK, handshake ACK),
then sequence number; nothing is random, and no tie is left to the rounding of a float sum.
Time advances in *steps* of at most the *lookahead*; within a step the stages run in pipeline
order -- the senders, then the links in a fixed order (`Plan.link_order`), each stage handling
its events of the step one by one in the total order. A hop that feeds a stage processed earlier
in the step (a link's ACKs back to their senders, a link feeding a link that comes before it)
must take at least the step, so nothing a stage does in a step can reach an earlier stage within
that step: this is the lookahead of conservative parallel discrete-event simulation. Then no
result depends on the step (any step up to the lookahead gives the same packets at the same
times, `tests/packet/test_exact.py`). The default step is the lookahead.

**Links** are FIFO, drop-tail, and serve bytes: a packet of b bytes takes b / C(s) seconds,
where C(s) is the link's capacity (bytes/s) when its service starts at s (a capacity schedule,
`fluidcc.network.Link.schedule`, changes C between packets). A packet arriving at time a is
dropped if the link is busy at a and `buffer` packets already wait (the one in service not
counted); otherwise it starts at s = max(a, the previous packet's departure) and leaves at
s + b / C(s). Its departure is known when it is admitted (FIFO), so it moves on at once to its
next stage, which it reaches after the link's propagation delay.

**Receivers** are handled where a flow's last data link delivers (the receiver holds no queue):
a data packet or SYN that reaches its receiver before the end of the run is received there and
then (in the order the last link delivers, which is the order of the flow's packets), and its
ACK (SYN-ACK) starts back: through the flow's reverse route if it has one (its ACKs then queue
with other traffic), else over a fixed delay (the route's propagation delays and the access
delay). One ACK per data packet, at once; it carries the cumulative ACK, an echoed timestamp
(the send time of the last segment that arrived in order, RFC 7323's TS.Recent) and the data's
header fields, which routers may have written. A handshake ACK (the pure ACK a sender sends on
its SYN-ACK, on the data route) ends at the receiver: nothing answers it.

**Senders** are protocols (`ExactProtocol`): each handles its ACKs and its own timers in time
order and sends at those instants, through its network interface: packets leave the interface
one after another at its rate (`Flow.interface_pps`, by default its first link's capacity) and
reach the first link after the flow's access delay.

Failures are data: a run whose packet pool or iteration budget ran out has a status and a
message (`STATUS`), and its counts up to then.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ParameterError
from ..network import Network

#: Kinds of packet: data, its ACK, a SYN, its SYN-ACK, and the handshake's third packet (the
#: sender's pure ACK of the SYN-ACK: it goes the data's way, and is the size of an ACK).
DATA, ACK, SYN, SYNACK, HANDSHAKE_ACK = 0, 1, 2, 3, 4
KINDS = 5
#: A pool slot not in use is at this place.
FREE = -1
#: Run statuses (a code per run) and their messages.
STATUS = {0: "ok", 1: "the packet pool was full: a packet could not be sent (raise pool_size)",
          2: "a step needed more iterations than allowed: a sender kept sending at one instant",
          3: f"more than {1024} events at one instant at one stage",
          4: "the receivers had more out-of-order runs than their store holds and discarded data (raise receiver_runs)"}
_BIG = np.iinfo(np.int64).max  # above every tie-break key
_NONE = np.iinfo(np.int32).max // 4  # an empty out-of-order run starts here
#: The grid every event time is rounded to (s): 2^-32 s, about 0.23 ns (ns-3 keeps whole ns).
TIME_GRID_S = 2.0 ** -32


def on_grid(t):
    """t (s) rounded to the nearest multiple of `TIME_GRID_S` (inf and NaN unchanged).

    Every time the engine or a protocol sets (a departure, an arrival, a timer) is put on the grid.
    Sums of times on the grid are exact (below 2^21 s), so an instant reached two ways is one
    value, and ties are broken by the total order's rule, never by the last bit of a float64 sum:
    XLA may round an operation differently in a batch of runs than in one run (a vectorized
    division, a power), and without the grid a run's packets could change order with the runs
    batched beside it."""
    return jnp.round(t / TIME_GRID_S) * TIME_GRID_S  # scalings by a power of 2: exact


def up_to_grid(t):
    """t (s) rounded up to a multiple of `TIME_GRID_S` (a time on the grid is unchanged).

    The engine takes a protocol's next event (`next_time`, `router_next`) at this instant, so an
    event a protocol sets off the grid still fires on it, and not before the time it set (a
    protocol that tests `now >= timer` sees its timer due)."""
    return jnp.ceil(t / TIME_GRID_S) * TIME_GRID_S


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


#: Most events a stage takes in one chunk (a chunk is sorted once; a sort of the whole pool costs
#: more on a CPU than the rest of a step).
CHUNK = 1024
#: Most sender actions (an event handled or a packet sent) per flow in one step.
MOST_ACTIONS = 1 << 20


class Hop(NamedTuple):
    """A hop that feeds a stage processed earlier in a step: its delay bounds the step."""

    origin: str
    target: str
    delay_s: float


@dataclass(frozen=True)
class Plan:
    """The static description of a simulation (NumPy arrays; JAX constants inside).

    Per link (L): propagation_s, buffer (packets), schedule_s (L, S) times from which a capacity
    holds (inf padding), capacity_Bps (L, S) bytes/s, ring (a power of two > the largest buffer + 1).
    Per flow (F): route (F, H) and reverse (F, R) link indices (-1 past the end), route_length,
    reverse_length (0: the ACKs return over a fixed delay, back_s), access_s, interface_Bps.
    link_order: the order links are processed in a step; lookahead_s and the hop that sets it.
    """

    propagation_s: np.ndarray
    buffer: np.ndarray
    schedule_s: np.ndarray
    capacity_Bps: np.ndarray
    ring: int
    route: np.ndarray
    route_length: np.ndarray
    reverse: np.ndarray
    reverse_length: np.ndarray
    back_s: np.ndarray
    access_s: np.ndarray
    interface_Bps: np.ndarray
    data_bytes: float
    ack_bytes: float
    link_order: tuple
    lookahead_s: float
    lookahead_hop: Hop

    @property
    def n_links(self) -> int:
        return int(self.propagation_s.shape[0])

    @property
    def n_flows(self) -> int:
        return int(self.route.shape[0])

    @classmethod
    def build(cls, network: Network, flow_route: np.ndarray, ack_bytes: float, buffers=None) -> "Plan":
        L = network.n_links
        delays = network.link_delays_s
        buffer = default_buffers(network) if buffers is None else np.asarray(buffers, dtype=np.float64)
        packet_bytes = float(network.packet_bytes)
        times, caps = [], []
        for l in range(L):
            t, c = _schedule(network, l)
            times.append(t)
            caps.append(c * packet_bytes)
        width = max(len(t) for t in times)
        schedule_s = np.full((L, width), np.inf)
        capacity_Bps = np.full((L, width), np.nan)
        for l in range(L):
            schedule_s[l, : len(times[l])] = times[l]
            capacity_Bps[l, : len(caps[l])] = caps[l]
            capacity_Bps[l, len(caps[l]):] = caps[l][-1]
        routes = [network.route_indices(i) for i in range(network.n_flows)]
        reverses = [_reverse_route(network, i) for i in range(network.n_flows)]
        H = max(len(r) for r in routes)
        R = max([len(r) for r in reverses if r] + [1])
        route = np.full((network.n_flows, H), -1, np.int32)
        reverse = np.full((network.n_flows, R), -1, np.int32)
        for i, (r, b) in enumerate(zip(routes, reverses)):
            route[i, : len(r)] = r
            if b:
                reverse[i, : len(b)] = b
        access = np.array([f.access_delay_s for f in network.flows], dtype=np.float64)
        back = np.array([access[i] + sum(delays[l] for l in r) for i, r in enumerate(routes)])
        first_capacity = np.array([caps[r[0]][0] for r in routes])
        interface = np.array([first_capacity[i] if f.interface_pps is None else f.interface_pps * packet_bytes
                              for i, f in enumerate(network.flows)])
        order, lookahead, hop = _link_order(network, routes, reverses, access, back)
        flow_route = np.asarray(flow_route, dtype=np.int64)
        ring = 1 << int(math.ceil(math.log2(max(float(np.max(buffer, initial=0.0)) + 2.0, 4.0))))
        return cls(propagation_s=np.asarray(delays, dtype=np.float64), buffer=buffer, schedule_s=schedule_s,
                   capacity_Bps=capacity_Bps, ring=ring,
                   route=route[flow_route], route_length=np.array([len(routes[k]) for k in flow_route], np.int32),
                   reverse=reverse[flow_route],
                   reverse_length=np.array([len(reverses[k] or ()) for k in flow_route], np.int32),
                   back_s=back[flow_route], access_s=access[flow_route], interface_Bps=interface[flow_route],
                   data_bytes=packet_bytes, ack_bytes=float(ack_bytes), link_order=tuple(order),
                   lookahead_s=lookahead, lookahead_hop=hop)


def _schedule(network: Network, l: int) -> tuple[np.ndarray, np.ndarray]:
    """(times from which, capacities in packets/s) of link l; a link without a schedule: one entry."""
    t, c = network.capacity_schedule(l)
    return np.asarray(t, dtype=np.float64), np.asarray(c, dtype=np.float64)


def _reverse_route(network: Network, i: int):
    """Link indices of flow i's ACK path, or None for a fixed-delay path."""
    return network.reverse_route_indices(i)


def _link_order(network: Network, routes, reverses, access, back) -> tuple[list[int], float, Hop]:
    """An order of the links and the lookahead it gives: the largest delay d such that the hops
    between links shorter than d form no cycle (those go forward in the order); every hop of at
    least d may go backward. Hops into the senders always go backward (senders run first)."""
    names = network.link_names
    edges: list[tuple[int, int, float]] = []  # link -> link, delay
    to_sender: list[Hop] = []
    delays = network.link_delays_s
    for i, (route, reverse) in enumerate(zip(routes, reverses)):
        flow = network.flow_names[i]
        path = list(route) + list(reverse or [])
        for a, b in zip(path[:-1], path[1:]):
            edges.append((a, b, float(delays[a])))
        if reverse:
            last = reverse[-1]
            to_sender.append(Hop(f"link {names[last]}", f"sender of flow {flow}",
                                 float(delays[last] + access[i])))
        else:
            last = route[-1]
            to_sender.append(Hop(f"link {names[last]}", f"sender of flow {flow} (ACKs over a fixed delay)",
                                 float(delays[last] + back[i])))
    L = network.n_links
    candidates = sorted({d for _, _, d in edges} | {math.inf})
    best_order = list(range(L))
    for d in candidates:  # the largest d whose shorter hops are acyclic
        order = _topological(L, [(a, b) for a, b, w in edges if w < d])
        if order is None:
            break
        best_order = order
    backward = [Hop(f"link {names[a]}", f"link {names[b]}", w) for a, b, w in edges
                if best_order.index(b) <= best_order.index(a)]
    hops = backward + to_sender
    hop = min(hops, key=lambda h: h.delay_s)
    return best_order, hop.delay_s, hop


def _topological(n: int, edges) -> list[int] | None:
    """A topological order of nodes 0..n-1 (ties by index), None if the edges have a cycle."""
    succ = {k: set() for k in range(n)}
    indegree = [0] * n
    for a, b in set(edges):
        if b not in succ[a]:
            succ[a].add(b)
            indegree[b] += 1
    ready = sorted(k for k in range(n) if indegree[k] == 0)
    order = []
    while ready:
        k = ready.pop(0)
        order.append(k)
        for b in sorted(succ[k]):
            indegree[b] -= 1
            if indegree[b] == 0:
                ready.append(b)
        ready.sort()
    return order if len(order) == n else None


def check_step(plan: Plan, step_s) -> float:
    """The step, s: `step_s` if 0 < step <= lookahead, the lookahead if None; else an error
    naming the hop that sets the lookahead and its delay."""
    if step_s is None:
        step_s = plan.lookahead_s
    if not (isinstance(step_s, (int, float)) and math.isfinite(step_s) and step_s > 0):
        raise ParameterError("step", step_s, "a step > 0 s, at most the lookahead")
    if step_s > plan.lookahead_s * (1 + 1e-12):
        h = plan.lookahead_hop
        raise ParameterError("step", step_s, f"at most the lookahead, {plan.lookahead_s:.6g} s: the hop from "
                             f"{h.origin} to {h.target} takes {h.delay_s:.6g} s and feeds a stage processed "
                             "earlier in a step")
    return float(step_s)


# ------------------------------------------------------------------------------- protocols
class Ack(NamedTuple):
    """An acknowledgement as a sender sees it (arrays over flows)."""

    kind: jax.Array  # ACK or SYNACK
    ack_no: jax.Array  # the next sequence number the receiver expects
    echo: jax.Array  # send time of the data (or SYN) it acknowledges, s
    header: jax.Array  # (F, K) the header fields of that data, as routers left them


class Packet(NamedTuple):
    """What a sender puts on the wire (arrays over flows)."""

    kind: jax.Array  # DATA, SYN or HANDSHAKE_ACK
    seq: jax.Array
    header: jax.Array  # (F, K)


class ExactProtocol:
    """The contract of a protocol in the exact engine. Every method is pure JAX over flows (F) or,
    for routers, over one link; `state` and `router` are pytrees of arrays.

    Senders: `init`, `next_time` (its own next event: start, timers, pacing; inf: none),
    `on_time` (handle that event where `mask`), `on_ack`, `ready` (has a packet to send now) and
    `send` (the packet). Routers (optional; the default has none): `router_init`, `router_next`
    (the next timer of link l), `router_timer` and `router_packet` (a packet reaching link l, with
    whether the link took it; the header it returns is the one the packet leaves with:
    read and write its header), `observe` (per-link arrays (L,) of the router state to report:
    at the end of the run, and after each timer as a series over the samples; `params` is None
    at the end, so take what it needs from the router state).

    Times: the engine takes the instants `next_time` and `router_next` report on its time grid,
    rounded up (`up_to_grid`), so an event never comes before the time a protocol set and always
    sits on the grid. Put the times a protocol keeps on the grid itself (`on_grid`), so that sums
    of them stay exact.
    """

    name = "protocol"
    header_size = 0
    ack_bytes = 40.0
    #: False for sources that stand for the arrivals of many senders (no interface pacing)
    paced = True

    def params(self, network: Network, plan: Plan, tables) -> Any:
        return ()

    def init(self, params, flows, key) -> Any:
        raise NotImplementedError

    def next_time(self, state, params, flows) -> jax.Array:
        raise NotImplementedError

    def on_time(self, state, params, flows, now, mask):
        raise NotImplementedError

    def on_ack(self, state, params, flows, now, mask, ack: Ack):
        raise NotImplementedError

    def ready(self, state, params, flows, now) -> jax.Array:
        raise NotImplementedError

    def send(self, state, params, flows, now, mask) -> tuple[Any, Packet]:
        raise NotImplementedError

    def report(self, state) -> dict:
        return {}

    # routers: none by default
    def router_init(self, params, n_links: int):
        return ()

    def router_next(self, router, params, link) -> jax.Array:
        return jnp.inf

    def router_timer(self, router, params, link, now, waiting):
        return router

    def router_packet(self, router, params, link, now, kind, header, waiting, accepted):
        return router, header

    def observe(self, router, params) -> dict:
        return {}


class Flows(NamedTuple):
    """Per simulated flow: start and stop times (s; stop may be inf), size in packets (inf: no end)."""

    start: jax.Array
    stop: jax.Array
    size: jax.Array


# ------------------------------------------------------------------------------- engine state
class _Record:
    """A frozen record of arrays (a JAX pytree): `replace` returns a copy with some fields changed."""

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict:
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class PacketPool(_Record):
    """Every data packet, SYN and ACK of a run, one slot each (P slots).

    time: when it reaches its next place (s; inf: not before the end). place: a link index, L (the
    sender, for ACKs), L + 1 (at the receiver, parked after the end) or FREE. flow, hop (index on
    its route or reverse route), kind (DATA, ACK, SYN, SYNACK, HANDSHAKE_ACK), seq (data: its
    sequence number; ACKs: the cumulative ACK), sent (data: send time; ACKs: the echoed timestamp), header (P, K)."""

    time: jax.Array
    place: jax.Array
    flow: jax.Array
    hop: jax.Array
    kind: jax.Array
    seq: jax.Array
    sent: jax.Array
    header: jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class FreeSlots(_Record):
    """The free pool slots: a stack (`stack[:top]`)."""

    stack: jax.Array
    top: jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class LinkState(_Record):
    """Per link (L): when its server is next free (s), the service start times of its last R
    admitted packets (a ring: the queue at any instant), counts of packets that arrived, were
    accepted (data and ACKs), dropped, data accepted, and its busy time (s)."""

    free_at: jax.Array
    ring: jax.Array
    accepted: jax.Array
    arrived: jax.Array
    dropped: jax.Array
    data_accepted: jax.Array
    busy_s: jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Receivers(_Record):
    """Per flow (F): the next sequence number expected and the echoed timestamp (RFC 7323's
    TS.Recent). The runs of out-of-order data every receiver holds, in one store shared by the
    flows (`receiver_runs` places, M): run_flow (M; F marks a free place) and [run_s, run_e); held,
    the places in use, and peak, the most in use at once. (One store for all the flows, not a row
    per flow: its size follows the holes the network can leave, not the flows of the run.)"""

    rcv_nxt: jax.Array
    ts_recent: jax.Array
    run_flow: jax.Array
    run_s: jax.Array
    run_e: jax.Array
    held: jax.Array
    peak: jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class FlowCounters(_Record):
    """Per flow (F): what the engine counts (the run's per-flow outputs, `simulate_exact`), when
    its interface is next free (nic_free, s) and its sender's clock (the instant it has reached)."""

    sent: jax.Array
    delivered: jax.Array
    dropped: jax.Array
    duplicates: jax.Array
    discarded: jax.Array
    control_dropped: jax.Array
    packets_sent: jax.Array
    acks_received: jax.Array
    handshake_acks: jax.Array  # handshake ACKs that reached the receiver (they end there)
    first_sent: jax.Array
    finish: jax.Array
    last_delivered: jax.Array
    nic_free: jax.Array
    clock: jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class EngineState(_Record):
    """The whole state of one run, carried from step to step. bins and observed are dicts of
    series over the samples (keyed by the output names); proto and router belong to the protocol
    (pytrees of its choosing); status is the run's code (`STATUS`)."""

    pool: PacketPool
    free: FreeSlots
    links: LinkState
    bins: dict
    receivers: Receivers
    counters: FlowCounters
    proto: Any
    router: Any
    observed: dict
    status: jax.Array


# ------------------------------------------------------------------------------- the engine
def _receive_one(rx: Receivers, f, n_flows: int, valid, seq):
    """Data packet `seq` of flow f reaches its receiver where `valid` (else nothing changes).
    Returns (receivers, duplicates, discarded): the packet is in order (it and the runs it reaches
    are acknowledged), a duplicate, or held out of order, merged with the runs it touches; where
    no place is free it is discarded (counted; the run's status says so)."""
    mine = valid & (rx.run_flow == f)
    old = rx.rcv_nxt[f]
    s, e = seq, seq + 1
    duplicate = (s < old) | jnp.any(mine & (rx.run_s <= s) & (s < rx.run_e))
    in_order = valid & (s == old)
    absorbed = in_order & mine & (rx.run_s <= e)  # runs never touch: at most the one starting at e
    new_nxt = jnp.where(in_order, jnp.maximum(e, jnp.max(jnp.where(absorbed, rx.run_e, 0))), old)
    ahead = valid & (s > old) & ~duplicate
    touch = ahead & mine & (rx.run_s <= e) & (rx.run_e >= s)
    ms = jnp.minimum(s, jnp.min(jnp.where(touch, rx.run_s, _NONE)))
    me = jnp.maximum(e, jnp.max(jnp.where(touch, rx.run_e, 0)))
    freed = absorbed | touch
    run_flow = jnp.where(freed, n_flows, rx.run_flow)
    free = run_flow == n_flows
    place = jnp.argmax(free)
    write = ahead & free[place]
    at = jnp.where(write, place, run_flow.shape[0])
    held = rx.held - jnp.sum(freed, dtype=jnp.int32) + write.astype(jnp.int32)
    rx = rx.replace(rcv_nxt=rx.rcv_nxt.at[jnp.where(valid, f, n_flows)].set(new_nxt, mode="drop"),
                    run_flow=run_flow.at[at].set(f, mode="drop"), run_s=rx.run_s.at[at].set(ms, mode="drop"),
                    run_e=rx.run_e.at[at].set(me, mode="drop"), held=held, peak=jnp.maximum(rx.peak, held))
    return rx, (valid & duplicate).astype(jnp.int32), jnp.where(ahead & ~write, me - ms, 0)


def receiver_runs_for(plan: Plan) -> int:
    """Places for runs of out-of-order data, shared by all the receivers of a run: four for every
    packet the links that carry data can hold at once (buffer plus what the capacity puts on the
    wire in the propagation delay; links only on reverse routes carry ACKs and make no hole),
    rounded up to a power of two (at least 64). A run needs a packet that
    came through above a hole, but holes outlive the packets that made them (NewReno repairs one
    per round trip), so the links' content is not a bound: 50 TCP flows on a 1 500-packet dumbbell
    held 3 414 runs at once. A run that needs more says so in its status (4); `simulate_exact`
    then grows the store."""
    capacity_pps = np.nanmax(plan.capacity_Bps, axis=1) / plan.data_bytes
    data = np.zeros(plan.n_links, bool)
    data[plan.route[plan.route >= 0]] = True
    held = float(np.sum((plan.buffer + capacity_pps * plan.propagation_s)[data]))
    return max(64, 1 << int(math.ceil(math.log2(max(4.0 * held, 1.0)))))


def pool_size_for(plan: Plan, flows_width: int) -> int:
    """A pool large enough for the packets and ACKs a run can have in flight: per link its buffer
    and what its capacity puts on the wire in its propagation delay, doubled for the ACKs, plus a
    window per flow, rounded up to a power of two."""
    capacity_pps = np.nanmax(plan.capacity_Bps, axis=1) / plan.data_bytes
    per_link = plan.buffer + capacity_pps * (plan.propagation_s + 4 * plan.lookahead_s) + 2
    need = 2.0 * float(np.sum(per_link)) + 4.0 * flows_width + 64
    return 1 << int(math.ceil(math.log2(need)))


def simulate_events(protocol: ExactProtocol, plan: Plan, flows: Flows, params, key, step_s, *, end_s: float,
                    sample_s: float, pool_size: int, receiver_runs: int | None = None):
    """One run (jit and vmap it for batches; `step_s` may be traced). Returns a dict of JAX arrays.
    receiver_runs: places for out-of-order runs, shared by the receivers (default: `receiver_runs_for`)."""
    receiver_runs = receiver_runs_for(plan) if receiver_runs is None else receiver_runs
    F, L, K, P, R = plan.n_flows, plan.n_links, protocol.header_size, pool_size, plan.ring
    S = min(P, CHUNK)
    n_bins = int(math.ceil(end_s / sample_s - 1e-12))
    route, reverse = jnp.asarray(plan.route), jnp.asarray(plan.reverse)
    route_length, reverse_length = jnp.asarray(plan.route_length), jnp.asarray(plan.reverse_length)
    back, access = jnp.asarray(plan.back_s), jnp.asarray(plan.access_s)
    interface = jnp.asarray(plan.interface_Bps)
    propagation = jnp.asarray(plan.propagation_s)
    buffer = jnp.asarray(plan.buffer)
    schedule_s, capacity_Bps = jnp.asarray(plan.schedule_s), jnp.asarray(plan.capacity_Bps)
    size_of = jnp.asarray([plan.data_bytes] + [plan.ack_bytes] * (KINDS - 1))  # by kind
    rows = jnp.arange(F)

    def bin_of(t):
        """The sample an instant falls in; at or after the end: an overflow bin (dropped)."""
        return jnp.where(t < end_s, jnp.clip(jnp.floor(t / sample_s).astype(jnp.int32), 0, n_bins - 1), n_bins)

    # ------------------------------------------------------------------ state
    pool = PacketPool(time=jnp.full(P, jnp.inf), place=jnp.full(P, FREE, jnp.int32), flow=jnp.zeros(P, jnp.int32),
                      hop=jnp.zeros(P, jnp.int32), kind=jnp.zeros(P, jnp.int32), seq=jnp.zeros(P, jnp.int32),
                      sent=jnp.zeros(P), header=jnp.zeros((P, K)))
    free = FreeSlots(stack=jnp.arange(P, dtype=jnp.int32)[::-1], top=jnp.asarray(P, jnp.int32))
    links = LinkState(free_at=jnp.zeros(L), ring=jnp.zeros((L, R)), accepted=jnp.zeros(L, jnp.int32),
                      arrived=jnp.zeros(L, jnp.int32), dropped=jnp.zeros(L, jnp.int32),
                      data_accepted=jnp.zeros(L, jnp.int32), busy_s=jnp.zeros(L))
    bins = {name: jnp.zeros((n_bins + 1, L)) for name in
            ("arrived", "accepted", "dropped", "served_bytes", "wait_in_n", "wait_in_sum", "wait_out_n",
             "wait_out_sum")}
    receivers = Receivers(rcv_nxt=jnp.zeros(F, jnp.int32), ts_recent=jnp.zeros(F),
                          run_flow=jnp.full(receiver_runs, F, jnp.int32),
                          run_s=jnp.zeros(receiver_runs, jnp.int32), run_e=jnp.zeros(receiver_runs, jnp.int32),
                          held=jnp.asarray(0, jnp.int32), peak=jnp.asarray(0, jnp.int32))
    zeros = jnp.zeros(F, jnp.int32)
    counters = FlowCounters(sent=zeros, delivered=zeros, dropped=zeros, duplicates=zeros, discarded=zeros,
                            control_dropped=zeros, packets_sent=zeros, acks_received=zeros,
                            handshake_acks=zeros,
                            first_sent=jnp.full(F, jnp.nan), finish=jnp.full(F, jnp.nan),
                            last_delivered=jnp.full(F, jnp.nan), nic_free=jnp.zeros(F), clock=jnp.full(F, -jnp.inf))
    router0 = protocol.router_init(params, L)
    # what the routers show (`observe`), as each sample's last update leaves it (NaN: none in it)
    observed = {name: jnp.full((n_bins + 1, L), jnp.nan) for name in protocol.observe(router0, params)}
    carry = EngineState(pool=pool, free=free, links=links, bins=bins, receivers=receivers, counters=counters,
                        proto=protocol.init(params, flows, key), router=router0, observed=observed,
                        status=jnp.asarray(0, jnp.int32))

    # ------------------------------------------------------------------ stage 1: senders
    def chunk(key, t1):
        """The events of a stage to take next: those before theta, at most S of them (S = `chunk`),
        theta = t1 if they fit, else as late as they allow (bisection over time). Returns (theta,
        their pool slots (S; P past their number), their number, stuck: more than S events share
        one instant). Taking a step's events in chunks keeps the sorts small."""
        total = jnp.sum(key < t1)

        def bisect(_, bounds):
            lo, hi = bounds
            mid = 0.5 * (lo + hi)
            fits = jnp.sum(key < mid) <= S
            return jnp.where(fits, mid, lo), jnp.where(fits, hi, mid)

        first = jnp.min(key)
        lo, _ = jax.lax.fori_loop(0, 64, bisect, (first, t1))
        theta = jnp.where(total <= S, t1, lo)
        stuck = (total > S) & (theta <= first)
        taken = key < theta
        return theta, jnp.nonzero(taken, size=S, fill_value=P)[0].astype(jnp.int32), jnp.sum(taken, dtype=jnp.int32), stuck

    def own_next(proto):
        """Each flow's next own event (start, timer, pacing), on the time grid."""
        return up_to_grid(protocol.next_time(proto, params, flows))

    def router_next(router, l):
        """Link l's next router timer, on the time grid."""
        return up_to_grid(protocol.router_next(router, params, l))

    def senders(c, t1):
        """Each flow takes its ACKs and its own events in time order (ACKs by (time, kind, seq)) and
        sends at those instants; chunk by chunk of the step's ACKs."""
        def more_work(c):
            pool = c.pool
            acks = jnp.any((pool.place == L) & (pool.time < t1))
            own = jnp.any(own_next(c.proto) < t1)
            ready = jnp.any(protocol.ready(c.proto, params, flows, c.counters.clock)
                            & (c.counters.clock < t1))
            return (acks | own | ready) & (c.status == 0)

        def round_(c):
            pool = c.pool
            key_all = jnp.where((pool.place == L) & (pool.time < t1), pool.time, jnp.inf)
            theta, idx, _, stuck = chunk(key_all, t1)
            c = c.replace(status=jnp.where(stuck, 3, c.status))
            key0 = jnp.take(key_all, idx, mode="fill", fill_value=jnp.inf)
            flow_c = jnp.take(pool.flow, idx, mode="fill", fill_value=F)
            tie = (jnp.take(pool.kind, idx, mode="fill", fill_value=0).astype(jnp.int64) * (1 << 32)
                   + jnp.take(pool.seq, idx, mode="fill", fill_value=0))
            # one sort of the chunk by (flow, time, kind, seq); each flow then walks its own run
            flow_s, key_s, _, idx_s = jax.lax.sort((flow_c, key0, tie, idx), num_keys=3)
            begin = jnp.searchsorted(flow_s, rows, side="left").astype(jnp.int32)
            count = jnp.searchsorted(flow_s, rows, side="right").astype(jnp.int32) - begin
            return _sender_round(c, theta, key_s, idx_s, begin, count)

        return jax.lax.while_loop(more_work, round_, c)

    def _sender_round(c, t1, key_s, idx_s, begin, count):
        def action_time(c, pointer):
            at = jnp.minimum(begin + pointer, S - 1)
            ack_t = jnp.where(pointer < count, key_s[at], jnp.inf)
            own_t = own_next(c.proto)
            return pointer, idx_s[at], ack_t, own_t

        def cond(loop):
            c, pointer, now, iterations = loop
            _, _, ack_t, own_t = action_time(c, pointer)
            ready = protocol.ready(c.proto, params, flows, now) & (now < t1)
            more = ready | (jnp.minimum(ack_t, own_t) < t1)
            return jnp.any(more) & (c.status == 0)

        def body(loop):
            c, pointer, now, iterations = loop
            _, idx, ack_t, own_t = action_time(c, pointer)
            proto = c.proto
            ready = protocol.ready(proto, params, flows, now) & (now < t1)
            # a flow sends what it may at the current instant before it moves on to its next event
            event_t = jnp.minimum(ack_t, own_t)
            act = ~ready & (event_t < t1)
            take_ack = act & (ack_t <= own_t)
            take_own = act & ~take_ack
            now = jnp.where(act, event_t, now)
            pool = c.pool
            ack = Ack(kind=pool.kind[idx], ack_no=pool.seq[idx], echo=pool.sent[idx],
                      header=pool.header[idx])
            proto = protocol.on_ack(proto, params, flows, now, take_ack, ack)
            proto = protocol.on_time(proto, params, flows, now, take_own)
            # the ACKs taken leave the pool
            free_stack, top = c.free.stack, c.free.top
            rank = jnp.cumsum(take_ack) - take_ack
            free_stack = free_stack.at[jnp.where(take_ack, top + rank, P)].set(idx, mode="drop")
            top = top + jnp.sum(take_ack, dtype=jnp.int32)
            pool = pool.replace(place=pool.place.at[jnp.where(take_ack, idx, P)].set(FREE, mode="drop"),
                                time=pool.time.at[jnp.where(take_ack, idx, P)].set(jnp.inf, mode="drop"))
            pointer = pointer + take_ack
            # the senders that are ready put a packet on the wire
            go = ready & (now < t1)
            enough = top >= jnp.sum(go)
            go = go & enough
            proto, packet = protocol.send(proto, params, flows, now, go)
            rank = jnp.cumsum(go) - go
            slot = free_stack[jnp.clip(top - 1 - rank, 0, P - 1)]
            top = top - jnp.sum(go, dtype=jnp.int32)
            counters = c.counters
            nbytes = size_of[packet.kind]
            start = jnp.maximum(now, counters.nic_free)
            leave = on_grid(start + (nbytes / interface if protocol.paced else 0.0))
            arrive = on_grid(leave + access)
            target = jnp.where(go, slot, P)
            pool = PacketPool(time=pool.time.at[target].set(arrive, mode="drop"),
                              place=pool.place.at[target].set(route[:, 0], mode="drop"),
                              flow=pool.flow.at[target].set(rows.astype(jnp.int32), mode="drop"),
                              hop=pool.hop.at[target].set(0, mode="drop"),
                              kind=pool.kind.at[target].set(packet.kind, mode="drop"),
                              seq=pool.seq.at[target].set(packet.seq, mode="drop"),
                              sent=pool.sent.at[target].set(now, mode="drop"),
                              header=pool.header.at[target].set(packet.header.reshape(F, K), mode="drop"))
            data = go & (packet.kind == DATA)
            counters = counters.replace(nic_free=jnp.where(go, leave, counters.nic_free),
                                        sent=counters.sent + data, packets_sent=counters.packets_sent + go,
                                        acks_received=counters.acks_received + take_ack,
                                        first_sent=jnp.where(go & jnp.isnan(counters.first_sent), now,
                                                             counters.first_sent))
            status = jnp.where(jnp.any(ready & (now < t1) & ~enough), 1, c.status)
            status = jnp.where(iterations >= MOST_ACTIONS, 2, status)
            c = c.replace(pool=pool, free=FreeSlots(stack=free_stack, top=top), proto=proto, counters=counters,
                          status=status)
            return c, pointer, now, iterations + 1

        c, _, now, _ = jax.lax.while_loop(cond, body, (c, jnp.zeros(F, jnp.int32), c.counters.clock,
                                                       jnp.asarray(0)))
        return c.replace(counters=c.counters.replace(clock=now))

    # ------------------------------------------------------------------ stage 2: one link
    def release(free, p, mask):
        """Pool slot p back on the free stack where `mask` (a packet dropped, or ended at its receiver)."""
        return FreeSlots(stack=free.stack.at[jnp.where(mask, free.top, P)].set(p, mode="drop"),
                         top=free.top + mask.astype(jnp.int32))

    def waiting_at(links, l, t):
        """Packets waiting at link l at time t (admitted, service not started; FIFO starts)."""
        acc = links.accepted[l]
        m = jnp.minimum(acc, R)

        def search(_, bounds):
            lo, hi = bounds
            mid = (lo + hi) // 2
            value = links.ring[l, (acc - m + mid) % R]
            below = (value <= t) & (lo < hi)
            return jnp.where(below, mid + 1, lo), jnp.where(below | (lo >= hi), hi, mid)

        lo, _ = jax.lax.fori_loop(0, int(math.log2(R)) + 2, search, (jnp.asarray(0), m))
        return m - lo

    def receive(c, p, f, now, valid):
        """Data or a SYN (pool slot p, flow f) reaches its receiver at `now` where `valid`: the ACK
        goes back; a handshake ACK ends there (its slot is freed). (Masked writes, not a branch: a
        branch would copy the state.)"""
        pool, rx, counters = c.pool, c.receivers, c.counters
        kind, seq = pool.kind[p], pool.seq[p]
        is_data = valid & (kind == DATA)
        ends = valid & (kind == HANDSHAKE_ACK)
        fd = jnp.where(is_data, f, F)  # writes of the receiver: dropped unless data arrived
        pv = jnp.where(valid & ~ends, p, P)
        pe = jnp.where(ends, p, P)
        rx_after, dups, discarded = _receive_one(rx, f, F, is_data, seq)
        # the echoed timestamp (RFC 7323's TS.Recent): the send time of the last segment that arrived
        # in order (a duplicate ACK echoes it, an ACK of a hole's repair echoes the repair's)
        in_order = is_data & (seq == rx.rcv_nxt[f])
        ts_recent = rx.ts_recent.at[jnp.where(in_order, f, F)].set(pool.sent[p], mode="drop")
        echo = jnp.where(kind == DATA, ts_recent[f], pool.sent[p])
        rx = rx_after.replace(ts_recent=ts_recent)
        received = rx.rcv_nxt[f]
        done = is_data & jnp.isnan(counters.finish[f]) & (received >= flows.size[f])
        counters = counters.replace(delivered=counters.delivered.at[fd].add(1, mode="drop"),
                                    duplicates=counters.duplicates.at[fd].add(dups, mode="drop"),
                                    discarded=counters.discarded.at[fd].add(discarded, mode="drop"),
                                    last_delivered=counters.last_delivered.at[fd].set(now, mode="drop"),
                                    handshake_acks=counters.handshake_acks.at[jnp.where(ends, f, F)].add(
                                        1, mode="drop"),
                                    finish=counters.finish.at[jnp.where(done, f, F)].set(now, mode="drop"))
        through = reverse_length[f] > 0
        pool = pool.replace(kind=pool.kind.at[pv].set(jnp.where(kind == DATA, ACK, SYNACK), mode="drop"),
                            seq=pool.seq.at[pv].set(received, mode="drop"), hop=pool.hop.at[pv].set(0, mode="drop"),
                            sent=pool.sent.at[pv].set(echo, mode="drop"),
                            place=pool.place.at[pv].set(jnp.where(through, reverse[f, 0], L), mode="drop"),
                            time=pool.time.at[pv].set(jnp.where(through, now, on_grid(now + back[f])), mode="drop"))
        pool = pool.replace(place=pool.place.at[pe].set(FREE, mode="drop"),
                            time=pool.time.at[pe].set(jnp.inf, mode="drop"))
        return c.replace(pool=pool, receivers=rx, counters=counters, free=release(c.free, p, ends))

    def link_stage(c, l, t1):
        """Link l takes its arrivals of the step one by one in the order (time, flow, kind, seq), and
        fires its router's timers at their instants; chunk by chunk (`chunk`)."""
        def more_work(c):
            pool = c.pool
            return (jnp.any((pool.place == l) & (pool.time < t1))
                    | (router_next(c.router, l) < t1)) & (c.status == 0)

        def round_(c):
            pool = c.pool
            key_all = jnp.where((pool.place == l) & (pool.time < t1), pool.time, jnp.inf)
            theta, idx, n, stuck = chunk(key_all, t1)
            c = c.replace(status=jnp.where(stuck, 3, c.status))
            key0 = jnp.take(key_all, idx, mode="fill", fill_value=jnp.inf)
            tie = ((jnp.take(pool.flow, idx, mode="fill", fill_value=0).astype(jnp.int64) * KINDS
                    + jnp.take(pool.kind, idx, mode="fill", fill_value=0)) * (1 << 32)
                   + jnp.take(pool.seq, idx, mode="fill", fill_value=0))
            _, _, idx_s = jax.lax.sort((key0, tie, idx), num_keys=2)  # the chunk in the total order
            return _link_round(c, l, theta, idx_s, n)

        return jax.lax.while_loop(more_work, round_, c)

    def _link_round(c, l, t1, idx_s, n):
        def cond(loop):
            c, i, key = loop
            timer = router_next(c.router, l)
            return (i < n) | (timer < t1)

        def body(loop):
            c, i, key = loop
            p = idx_s[jnp.minimum(i, S - 1)]
            pool, links, bins = c.pool, c.links, c.bins
            arrival = jnp.where(i < n, pool.time[p], jnp.inf)
            timer = router_next(c.router, l)
            fire = timer <= arrival  # a router timer at the instant of an arrival fires first
            on_packet = ~fire
            router_timed = protocol.router_timer(c.router, params, l, timer, waiting_at(links, l, timer))
            f, kind = pool.flow[p], pool.kind[p]
            nbytes = size_of[kind]
            waiting = waiting_at(links, l, arrival)
            busy = links.free_at[l] > arrival
            drop = on_packet & busy & (waiting >= buffer[l])
            accept = on_packet & ~drop
            begin = jnp.maximum(arrival, links.free_at[l])
            which = jnp.searchsorted(schedule_s[l], begin, side="right") - 1
            leave = on_grid(begin + nbytes / capacity_Bps[l, which])
            la = jnp.where(accept, l, L)  # writes for an accepted packet
            lp = jnp.where(on_packet, l, L)  # writes for any packet
            acc = links.accepted[l]
            links = LinkState(free_at=links.free_at.at[la].set(leave, mode="drop"),
                              ring=links.ring.at[la, acc % R].set(begin, mode="drop"),
                              accepted=links.accepted.at[la].add(1, mode="drop"),
                              arrived=links.arrived.at[lp].add(1, mode="drop"),
                              dropped=links.dropped.at[jnp.where(drop, l, L)].add(1, mode="drop"),
                              data_accepted=links.data_accepted.at[jnp.where(accept & (kind == DATA), l, L)].add(
                                  1, mode="drop"),
                              busy_s=links.busy_s.at[la].add(
                                  jnp.maximum(jnp.minimum(leave, end_s) - begin, 0.0), mode="drop"))
            b_in, b_out = bin_of(arrival), bin_of(begin)
            waits = accept & (begin > arrival)
            lw = jnp.where(waits, l, L)
            bins = {"arrived": bins["arrived"].at[b_in, lp].add(1.0, mode="drop"),
                    "accepted": bins["accepted"].at[b_in, la].add(1.0, mode="drop"),
                    "dropped": bins["dropped"].at[b_in, jnp.where(drop, l, L)].add(1.0, mode="drop"),
                    "served_bytes": bins["served_bytes"].at[b_out, la].add(nbytes, mode="drop"),
                    "wait_in_n": bins["wait_in_n"].at[b_in, lw].add(1.0, mode="drop"),
                    "wait_in_sum": bins["wait_in_sum"].at[b_in, lw].add(arrival, mode="drop"),
                    "wait_out_n": bins["wait_out_n"].at[b_out, lw].add(1.0, mode="drop"),
                    "wait_out_sum": bins["wait_out_sum"].at[b_out, lw].add(begin, mode="drop")}
            router_passed, header = protocol.router_packet(c.router, params, l, arrival, kind, pool.header[p],
                                                           waiting, accept)
            router = jax.tree_util.tree_map(lambda timed, passed: jnp.where(fire, timed, passed),
                                            router_timed, router_passed)
            b_timer = jnp.where(fire & (timer < end_s), bin_of(timer), n_bins + 1)
            observed = {name: c.observed[name].at[b_timer, l].set(value[l], mode="drop")
                        for name, value in protocol.observe(router_timed, params).items()}
            # where it goes next
            is_ack = (kind == ACK) | (kind == SYNACK)
            path_length = jnp.where(is_ack, reverse_length[f], route_length[f])
            hop = pool.hop[p] + 1
            more = hop < path_length
            following = jnp.where(is_ack, reverse[f, jnp.minimum(hop, reverse.shape[1] - 1)],
                                  route[f, jnp.minimum(hop, route.shape[1] - 1)])
            reach = on_grid(leave + propagation[l])
            # data at its last link reaches the receiver then if that is before the end; later, it
            # stays in flight (parked, never processed)
            arrives = accept & ~is_ack & ~more
            in_time = arrives & (reach < end_s)
            parked = arrives & ~in_time
            place = jnp.where(more, following, jnp.where(is_ack, L, L + 1))
            time = jnp.where(more, reach, jnp.where(is_ack, on_grid(reach + access[f]), jnp.where(parked, jnp.inf, reach)))
            pa, pp = jnp.where(accept, p, P), jnp.where(on_packet, p, P)
            pool = pool.replace(place=pool.place.at[pp].set(jnp.where(accept, place, FREE), mode="drop"),
                                time=pool.time.at[pp].set(jnp.where(accept, time, jnp.inf), mode="drop"),
                                hop=pool.hop.at[pa].set(hop, mode="drop"),
                                header=pool.header.at[pa].set(header, mode="drop"))
            counters = c.counters
            counters = counters.replace(
                dropped=counters.dropped.at[jnp.where(drop & (kind == DATA), f, F)].add(1, mode="drop"),
                control_dropped=counters.control_dropped.at[jnp.where(drop & (kind != DATA), f, F)].add(1, mode="drop"))
            c = c.replace(pool=pool, links=links, bins=bins, router=router, observed=observed, counters=counters,
                          free=release(c.free, p, drop))
            c = receive(c, p, f, reach, in_time)
            return c, i + on_packet.astype(jnp.int32), key

        c, _, _ = jax.lax.while_loop(cond, body, (c, jnp.asarray(0, jnp.int32), jnp.asarray(0)))
        return c

    def step(loop):
        c, k = loop
        t1 = jnp.minimum((k + 1).astype(jnp.float64) * step_s, end_s)
        c = senders(c, t1)
        for l in plan.link_order:
            c = link_stage(c, l, t1)
        return c, k + 1

    # the step is an argument, not a shape: one compilation serves every step
    carry, _ = jax.lax.while_loop(lambda loop: loop[1].astype(jnp.float64) * step_s < end_s, step,
                                  (carry, jnp.asarray(0, jnp.int32)))
    pool = carry.pool
    data_in_flight = (pool.place != FREE) & ((pool.kind == DATA))
    in_flight = jax.ops.segment_sum(data_in_flight.astype(jnp.int32), pool.flow, num_segments=F)
    held = jax.ops.segment_sum((pool.place != FREE).astype(jnp.int32), pool.flow, num_segments=F)
    rx = carry.receivers
    stored = jax.ops.segment_sum(rx.run_e - rx.run_s, rx.run_flow, num_segments=F)  # free places: dropped
    # a run that went to its end but whose receivers threw data away has its own status
    status = jnp.where((carry.status == 0) & (jnp.sum(carry.counters.discarded) > 0), 4, carry.status)
    return {**carry.counters.as_dict(), "in_flight": in_flight, "held": held, "received": rx.rcv_nxt,
            "stored": stored, "receiver_runs_peak": rx.peak, "links": carry.links.as_dict(), "bins": carry.bins, "protocol": carry.proto,
            "router": carry.router, "observed": carry.observed, "status": status}
