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

A link whose protocol has no routers, whose capacity has no schedule and whose departures are
exact in whole steps of the time grid up to the run's end (`fifo_links`: service times away from
half a step, departures before `FIFO_HORIZON_S`) takes a round of its packets in one vectorized
pass (`simulate_events`), with the same results.

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

**Compilation.** A run is one compiled program per protocol (its class and the settings its
program is built from, `ExactProtocol.compiled_settings`), network (`Plan`) and store sizes.
The step, the run's length and its sample spacing are arguments of it, so runs of one network
that differ only in those share the program (`simulate_events`). The links of one kind (a
stretch of `Plan.link_order` with or without the vectorized pass) share one compiled stage, a
loop over them, so a program does not grow with the number of links.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
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
          4: "a receiver had more out-of-order runs than its lane's share of the store holds and discarded data "
             "(raise receiver_runs)",
          5: "more flows were active at once than the run has lanes: flows found no lane and the run stopped "
             "(raise lanes)"}
_BIG = np.iinfo(np.int64).max  # above every tie-break key
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


def _grid_offsets(t):
    """Times t (s, on the grid; inf: none) as whole grid steps after the earliest finite one
    (int64, below 2^52 for times below `LATEST_S`; inf: 2^52, after every finite time): the
    same order as t, ties where t ties."""
    first = jnp.min(t)
    finite = t < jnp.inf
    base = jnp.where(finite, t - jnp.where(first < jnp.inf, first, 0.0), 0.0)
    return jnp.where(finite, jnp.round(base / TIME_GRID_S).astype(jnp.int64), jnp.int64(1) << 52)


def _first_set(mask, size: int, fill: int):
    """The places of the first `size` true entries of the 1-D bool array `mask`, in order, `fill`
    past their number: what jnp.nonzero(mask, size=size, fill_value=fill)[0] gives (int32), from
    words of 64 places. jnp.nonzero counts every place (a cumulative sum over the array, then a
    scatter of every place); here the places are packed into 64-bit words, whose bit counts are
    summed (n / 64 of them), and each of the `size` places found by a search over the words and
    six halvings of its word: on a pool of 16 384 places, some 17 us against 140 us on a CPU."""
    n, width = mask.shape[0], 64
    words = jnp.pad(mask, (0, -n % width)).reshape(-1, width)
    one = jnp.uint64(1)
    bits = jnp.sum(jnp.where(words, one << jnp.arange(width, dtype=jnp.uint64), jnp.uint64(0)), axis=1,
                   dtype=jnp.uint64)
    counts = jax.lax.population_count(bits).astype(jnp.int32)
    ends = jnp.cumsum(counts)  # set places up to each word's end
    j = jnp.arange(size, dtype=jnp.int32)
    w = jnp.minimum(jnp.searchsorted(ends, j, side="right"), ends.shape[0] - 1).astype(jnp.int32)  # j's word
    rank = (j - (ends[w] - counts[w])).astype(jnp.uint64)  # j's rank among its word's set places
    word, place = bits[w], jnp.zeros(size, jnp.uint64)
    for half in (32, 16, 8, 4, 2, 1):  # the last place with at most `rank` set places below it
        below = jax.lax.population_count(word & ((one << (place + jnp.uint64(half))) - one)).astype(jnp.uint64)
        place = jnp.where(below <= rank, place + jnp.uint64(half), place)
    return jnp.where(j < ends[-1], w * width + place.astype(jnp.int32), fill).astype(jnp.int32)


def _latest_fitting(key, first, t1, most: int, how: str):
    """Where more than `most` of the event times `key` (s, >= 0; inf: none; `first` their least)
    are before t1: the latest time that leaves at most `most` of them before it, as a bisection over [first, t1)
    finds it in 64 halvings. how="pool" counts the events before each midpoint; how="earliest"
    (at most 2 * most events before t1) takes the (most+1)-th earliest of them once, since at
    most `most` events are before a time exactly when that one is not: the same halvings, the
    same result, without a pass over `key` per halving."""
    if how == "pool":
        fits = lambda mid: jnp.sum(key < mid) <= most  # noqa: E731
    else:
        near = jnp.take(key, _first_set(key < t1, 2 * most, key.shape[0]), mode="fill",
                        fill_value=jnp.inf)
        bits = jax.lax.sort(jax.lax.bitcast_convert_type(near + 0.0, jnp.int64), is_stable=False)  # times >= 0
        kth = jax.lax.bitcast_convert_type(bits[most], jnp.float64)
        fits = lambda mid: mid <= kth  # noqa: E731

    def halve(_, bounds):
        lo, hi = bounds
        mid = 0.5 * (lo + hi)
        ok = fits(mid)
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid)

    return jax.lax.fori_loop(0, 64, halve, (first, t1))[0]


def _lex_order(keys, n: int):
    """The places 0..n-1 in the lexicographic order of `keys` (int64 arrays of n, nonnegative,
    the least significant first), ties by place, and the most significant key in that order.

    A sort of several arrays by several keys calls a comparison function per comparison on a
    CPU; a sort of one integer array does not, and is several times faster (1 024 places: some 8
    us against 100 to 190 us). So each key is sorted once, packed above the rank the previous
    sorts gave each place (the place itself at first), which keeps their order among the ties:
    the order is that of the sort of all keys at once, stable. Every key must be below
    2^(63 - bits), bits = the bits of n - 1."""
    bits = max(1, (n - 1).bit_length())
    mask = (1 << bits) - 1
    place = jnp.arange(n, dtype=jnp.int64)
    rank, order = place, place
    for k, key in enumerate(keys):
        packed = jax.lax.sort((key.astype(jnp.int64) << bits) | rank, is_stable=False)  # unique: no ties
        order = order[packed & mask]  # the place at each rank
        if k + 1 < len(keys):
            rank = jnp.zeros(n, jnp.int64).at[order].set(place)
    return order.astype(jnp.int32), packed >> bits


def _tie_fits(n_flows: int, chunk: int) -> bool:
    """Whether a link's tie-break key (flow, kind, sequence: below (n_flows + 1) * KINDS * 2^32)
    fits `_lex_order` for chunks of `chunk` events; where it does not (runs of 419 430 flows
    and more, with chunks of 1 024), a chunk is put in order by one sort of several keys: slower,
    the same order."""
    return (n_flows + 1) * KINDS * 2 ** 32 <= 2 ** (63 - max(1, (chunk - 1).bit_length()))


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


#: The links' series over the samples (`EngineState.bins`, last axis): the first `BINS_IN` are
#: counted in the sample a packet arrives in, the others in the sample its service begins in.
BIN_FIELDS = ("arrived", "accepted", "dropped", "wait_in_n", "wait_in_sum", "served_bytes", "wait_out_n",
              "wait_out_sum")
BINS_IN = 5

#: Most events a stage takes in one chunk (a chunk is sorted once; a sort of the whole pool costs
#: more on a CPU than the rest of a step).
CHUNK = 1024
#: The latest instant a run reaches (s): times on the grid (`TIME_GRID_S`) are exact below it, and
#: an offset between two of them is a whole number of grid steps below 2^52 (`_grid_offsets`).
LATEST_S = 2.0 ** 20
#: The largest ring (places) whose waiting packets are counted by a scan rather than a bisection.
RING_SCAN = 1 << 13
#: Lanes the senders' stage moves together (the busy lanes of a round, a block at a time), on a
#: CPU (`CPU_SENDER_BLOCK`) and elsewhere. A block's loop runs until its busiest lane has taken
#: all its events, and a round's events are far from even among the lanes (a TCP flow's window
#: comes back in a burst: on the 50-flow dumbbell a round took 254 iterations for some 790 ACKs,
#: an iteration of 64 lanes moved 3 of them on average). On a CPU an iteration's cost follows its
#: lanes, so one lane at a time costs only the events there are: the 50-flow dumbbell's 10 s in
#: 0.50 s against 1.20 s with 64, short flows at load 0.5 and 0.9 over 25 s in 0.71 s and 1.16 s
#: against 1.81 s and 2.92 s, every output the same (benchmarks/RESULTS.md, "Seventh pass"). A
#: GPU runs an iteration's lanes side by side and keeps wide blocks. The lanes share the pool's
#: free slots: where a run fills its pool (status 1) the width changes when and after what it
#: stops; a default pool is then grown and the run simulated again, to the same outputs.
SENDER_BLOCK = 64
CPU_SENDER_BLOCK = 1


def sender_block(batched: bool = False) -> int:
    """The lanes the senders' stage moves together on the default backend (`SENDER_BLOCK`). A
    vmapped batch keeps wide blocks on a CPU too: its loop over blocks runs while any run has a
    block left, and JAX's batched loop selects the whole state between old and new at each pass."""
    return CPU_SENDER_BLOCK if jax.default_backend() == "cpu" and not batched else SENDER_BLOCK


#: Packets a sender may put on the wire in one iteration of the senders' loop (at one instant, one
#: after another through its interface: a window that opens by two at an ACK, a burst).
SENDS_PER_ITERATION = 2
#: Most iterations of the senders' loop in one round (an iteration takes up to one event and
#: sends up to `SENDS_PER_ITERATION` packets per lane); more stops the run with status 2.
MOST_ACTIONS = 1 << 20


class Hop(NamedTuple):
    """A hop that feeds a stage processed earlier in a step: its delay bounds the step."""

    origin: str
    target: str
    delay_s: float


@dataclass(frozen=True)
class Plan:
    """The static description of a simulation (NumPy arrays).

    Per link (L): propagation_s, buffer (packets), schedule_s (L, S) times from which a capacity
    holds (inf padding), capacity_Bps (L, S) bytes/s, ring (a power of two > the largest buffer + 1).
    Per flow (F): route (F, H) and reverse (F, R) link indices (-1 past the end), route_length,
    reverse_length (0: the ACKs return over a fixed delay, back_s), access_s, interface_Bps.
    link_order: the order links are processed in a step; lookahead_s and the hop that sets it.

    The fields in `NUMBERS` (delays, buffers, capacities) enter a compiled simulation as arguments
    (`numbers`, `with_numbers`); the others -- the structure: routes, link order, ring, packet
    sizes -- are constants of it. Networks of one structure and shape share a program.
    """

    #: The fields that are arguments of a compiled simulation, not constants in it.
    NUMBERS = ("propagation_s", "buffer", "schedule_s", "capacity_Bps", "back_s", "access_s", "interface_Bps")
    #: Fields read only outside a compiled simulation (`check_step`, `pool_size_for`).
    HOST_ONLY = ("lookahead_s", "lookahead_hop")

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

    def numbers(self) -> dict:
        """The `NUMBERS` fields, as float64 arrays: the compiled simulation's `numbers` argument."""
        return {name: np.asarray(getattr(self, name), np.float64) for name in Plan.NUMBERS}

    def with_numbers(self, numbers: dict) -> "Plan":
        """This plan's structure with `numbers` (traced, inside a compiled simulation) for its
        `NUMBERS`; the `HOST_ONLY` fields are left out (None), so that no compiled code reads
        another network's."""
        return dataclasses.replace(self, **numbers, **dict.fromkeys(Plan.HOST_ONLY))

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

    def compiled_settings(self) -> dict:
        """The settings the compiled program is built from (part of its cache key): by default all
        of them (`settings()`). A protocol whose settings all reach its code as `params` (arguments
        of the program) returns fewer, so that runs of other settings share one compilation."""
        return getattr(self, "settings", lambda: {})()

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
    """Per simulated flow: start and stop times (s; stop may be inf), size in packets (inf: no end).

    The engine hands a protocol these arrays over its *lanes*, not over the flows of the run: a
    lane holds one flow at a time and is given to a later flow once nothing of its flow remains
    (`simulate_events`). index: each lane's flow, as its place in the run's flow table (None: lane
    k is flow k); a protocol takes per-flow parameters and random streams by it (`flow_index`)."""

    start: jax.Array
    stop: jax.Array
    size: jax.Array
    index: Any = None


def flow_index(flows: Flows) -> jax.Array:
    """Each lane's flow index in the run (`Flows.index`; lane k is flow k where it is None)."""
    return jnp.arange(flows.start.shape[0]) if flows.index is None else flows.index


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
    sequence number; ACKs: the cumulative ACK), sent (data: send time; ACKs: the echoed timestamp), header (P, K).

    Stored as two arrays, a row per slot: `whole` (..., 5) int32 (place, flow, hop, kind, seq)
    and `real` (..., 2 + K) float64 (time, sent, header), so that a packet's fields are written
    with two operations, not eight; the fields are views of their columns. The same record holds
    one packet (rows of shape (5,) and (2 + K,)) or a chunk of them."""

    whole: jax.Array
    real: jax.Array

    place = property(lambda self: self.whole[..., 0])
    flow = property(lambda self: self.whole[..., 1])
    hop = property(lambda self: self.whole[..., 2])
    kind = property(lambda self: self.whole[..., 3])
    seq = property(lambda self: self.whole[..., 4])
    time = property(lambda self: self.real[..., 0])
    sent = property(lambda self: self.real[..., 1])
    header = property(lambda self: self.real[..., 2:])

    @classmethod
    def of(cls, *, time, place, flow, hop, kind, seq, sent, header) -> "PacketPool":
        """Rows of these fields (arrays of one shape, header with K more columns; scalars broadcast)."""
        fields = [jnp.asarray(x) for x in (place, flow, hop, kind, seq, time, sent)]
        shape = jnp.broadcast_shapes(*(x.shape for x in fields), jnp.shape(header)[:-1])
        ints = [jnp.broadcast_to(x.astype(jnp.int32), shape) for x in fields[:5]]
        reals = [jnp.broadcast_to(x.astype(jnp.float64), shape) for x in fields[5:]]
        return cls(whole=jnp.stack(ints, axis=-1), real=jnp.concatenate([jnp.stack(reals, axis=-1), header], axis=-1))

    def freed(self, slots) -> "PacketPool":
        """The pool with `slots` free (place FREE, time inf; a slot past the pool: nothing)."""
        return PacketPool(whole=self.whole.at[slots, 0].set(FREE, mode="drop"),
                          real=self.real.at[slots, 0].set(jnp.inf, mode="drop"))

    def put(self, slots, rows: "PacketPool") -> "PacketPool":
        """The pool with `rows` written at `slots` (a slot past the pool: nothing written)."""
        return PacketPool(whole=self.whole.at[slots].set(rows.whole, mode="drop"),
                          real=self.real.at[slots].set(rows.real, mode="drop"))


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class FreeSlots(_Record):
    """The free pool slots: a stack (`stack[:top]`)."""

    stack: jax.Array
    top: jax.Array

    def pushed(self, slots, mask) -> "FreeSlots":
        """The stack with `slots` (an array) pushed where `mask`, in their order."""
        rank = jnp.cumsum(mask, dtype=jnp.int32) - mask
        return FreeSlots(stack=self.stack.at[jnp.where(mask, self.top + rank, self.stack.shape[0])].set(slots, mode="drop"),
                         top=self.top + jnp.sum(mask, dtype=jnp.int32))


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class LinkState(_Record):
    """Per link (L): the service start times of its last R admitted packets (`ring`, (L, R): the
    queue at any instant) and, in one array `row` (L, `LINK_FIELDS`) so that a link event writes
    its link's row once, when its server is next free (s), counts of packets that arrived, were
    accepted (data and ACKs), dropped, data accepted, and its busy time (s). `as_dict` gives each
    by name (the counts as integers)."""

    ring: jax.Array
    row: jax.Array

    free_at = property(lambda self: self.row[..., 0])
    accepted = property(lambda self: self.row[..., 1].astype(jnp.int32))

    def as_dict(self) -> dict:
        out = {"ring": self.ring}
        for k, name in enumerate(LINK_FIELDS):
            column = self.row[..., k]
            out[name] = column if name in ("free_at", "busy_s") else column.astype(jnp.int32)
        return out


#: A link's row of `LinkState.row` (counts exact as float64 up to 2**53).
LINK_FIELDS = ("free_at", "accepted", "arrived", "dropped", "data_accepted", "busy_s")


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Receivers(_Record):
    """Per flow (F): the next sequence number expected and the echoed timestamp (RFC 7323's
    TS.Recent). The runs of out-of-order data every receiver holds: a row of places per lane
    (F, Q), place q of lane f holding the run [run_s, run_e) of the flow in that lane (run_e ==
    run_s == 0: a free place); held, the places in use over all lanes, and peak, the most in use
    at once; runs_of, per lane, its places in use, and top_e and top_at the end of its highest
    run and that run's place (kept as runs are written: meaningful where runs_of > 0), and reach,
    one past its highest place in use since it last held none (a run is written at the first free
    place, so a search needs only the places below reach, plus one free place). The `receiver_runs` places of a run are shared
    out among its lanes (Q = receiver_runs / lanes, rounded up): a packet's arrival searches its
    own flow's row only, so its cost follows that row, not the store of the whole run (a search
    over one store shared by every flow cost a third of a dumbbell run), and of that row only the
    prefix the flow has reached, in blocks of `SEARCH_BLOCK` places (`_receive_one`)."""

    rcv_nxt: jax.Array
    ts_recent: jax.Array
    run_s: jax.Array
    run_e: jax.Array
    held: jax.Array
    peak: jax.Array
    runs_of: jax.Array  # per flow (F): the runs it holds in the store
    top_e: jax.Array
    top_at: jax.Array
    reach: jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class FlowCounters(_Record):
    """Per flow (F): what the engine counts (the run's per-flow outputs, `simulate_exact`), when
    its interface is next free (nic_free, s) and its sender's clock (the instant it has reached).
    What the links and receivers count is one array, `tally` (F, `TALLY_FIELDS`), so that a link
    event writes its flow's row once; `as_dict` gives every count by name (`TALLY_COUNTS` as
    integers)."""

    sent: jax.Array
    packets_sent: jax.Array
    acks_received: jax.Array
    first_sent: jax.Array
    nic_free: jax.Array
    clock: jax.Array
    tally: jax.Array

    def as_dict(self) -> dict:
        out = {name: getattr(self, name) for name in ("sent", "packets_sent", "acks_received", "first_sent",
                                                      "nic_free", "clock")}
        for k, name in enumerate(TALLY_FIELDS):
            column = self.tally[..., k]
            out[name] = column.astype(jnp.int32) if name in TALLY_COUNTS else column
        return out


#: The per-flow counts of the links and receivers (`FlowCounters.tally`, last axis): data
#: delivered in order or not, data dropped, duplicates, data the receivers discarded, control
#: packets dropped, handshake ACKs that reached the receiver (they end there); then the instants
#: the flow finished and last had data delivered (NaN: not yet).
TALLY_FIELDS = ("delivered", "dropped", "duplicates", "discarded", "control_dropped", "handshake_acks", "finish",
                "last_delivered")
TALLY_COUNTS = TALLY_FIELDS[:6]


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class EngineState(_Record):
    """The whole state of one run, carried from step to step. bins: the links' series over the
    samples, (sample, link, `BIN_FIELDS`) in one array (a link event adds to it with two writes,
    not one per series); flow_bins: the data packets that reached each flow's receiver per sample,
    (sample, flow of the run), or (sample, 0) when the run keeps no per-flow series; observed: a dict of series (keyed by the output names); proto and router
    belong to the protocol (pytrees of its choosing); status is the run's code (`STATUS`)."""

    pool: PacketPool
    free: FreeSlots
    links: LinkState
    bins: jax.Array
    flow_bins: jax.Array
    receivers: Receivers
    counters: FlowCounters
    proto: Any
    router: Any
    observed: dict
    status: jax.Array
    lanes: "LaneTable"
    outputs: "Outputs"
    work: "Work"


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Work(_Record):
    """What a run's engine did (the profile's units): steps, rounds of the senders' stage (one per
    block of lanes, `sender_block`) and the iterations of their loops (each takes up to one event
    and sends up to `SENDS_PER_ITERATION` packets per lane of the block), rounds of the link
    stages (a round sorts a chunk of a link's events) and their iterations (one event each: a
    packet or a router timer); of the rounds taken in one vectorized pass (`fifo_links`), the
    passes of their admission (one per drop, plus one per `ADMISSION_WINDOW` packets) and the
    packets they took at their receiver one by one."""

    steps: jax.Array
    sender_rounds: jax.Array
    sender_iterations: jax.Array
    link_rounds: jax.Array
    link_iterations: jax.Array
    link_passes: jax.Array
    link_one_by_one: jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class LaneTable(_Record):
    """Which flow each lane holds (flow: its index in the run; the number of flows: none), how many
    flows (in the order of their start times) have had a lane (given), the most flows at once
    that found no lane (short) and the most lanes in use at once (peak)."""

    flow: jax.Array
    given: jax.Array
    short: jax.Array
    peak: jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Outputs(_Record):
    """Per flow of the run: its counters, in-order data received and protocol report, written
    when its lane is freed and, for the flows still in a lane, at the end."""

    counters: FlowCounters
    received: jax.Array
    report: dict


# ------------------------------------------------------------------------------- the engine
class _Arrival(NamedTuple):
    """What a data packet's arrival does to its receiver (scalars): the next sequence number
    expected, up to two places of the lane's row freed (their index, or the row's length: none),
    the place a run is written to and the run [start, end), whether the packet is a duplicate, the
    packets discarded and the change in runs held."""

    rcv_nxt: jax.Array
    free_1: jax.Array
    free_2: jax.Array
    write_at: jax.Array
    start: jax.Array
    end: jax.Array
    duplicate: jax.Array
    discarded: jax.Array
    change: jax.Array


def _receive_one(rx: Receivers, f, n_flows: int, valid, seq, branch: bool = True):
    """Data packet `seq` of the flow in lane f reaches its receiver where `valid` (else nothing
    changes). Returns (receivers, duplicates, discarded): the packet is in order (it and the run it
    reaches are acknowledged), a duplicate, or held out of order, merged with the runs it touches;
    where the lane's row has no free place it is discarded (counted; the run's status says so).
    What the arrival does is worked out first (`_arrival_any`, a search of the lane's row; with
    `branch`, a packet below the next expected, or in order for a flow that holds no run, skips the
    search, `_arrival_in_order`, and the search covers only the prefix of the row the flow has
    reached, plus one free place, block by block), then written (scalars out of the branch: the
    store is written in place, never copied). n_flows: the lanes (a lane index at or past it
    changes nothing)."""
    f = jnp.asarray(f, jnp.int32)
    q = rx.run_s.shape[1]
    if branch:
        need = jnp.minimum(rx.reach[jnp.minimum(f, rx.reach.shape[0] - 1)] + 1, q)
        easy = ~valid | (seq < rx.rcv_nxt[f]) | ((rx.runs_of[f] == 0) & (seq == rx.rcv_nxt[f]))
        arrival = jax.lax.cond(easy, _arrival_in_order, functools.partial(_arrival_any, need=need),
                               rx, f, n_flows, valid, seq)
    else:
        arrival = _arrival_any(rx, f, n_flows, valid, seq)
    lane = jnp.where(valid, f, n_flows)
    zero = jnp.asarray(0, jnp.int32)
    run_s, run_e = rx.run_s, rx.run_e
    for place in (arrival.free_1, arrival.free_2):
        run_s = run_s.at[lane, place].set(zero, mode="drop")
        run_e = run_e.at[lane, place].set(zero, mode="drop")
    at = jnp.where(arrival.write_at < q, arrival.write_at, q)
    held = rx.held + arrival.change
    # the highest run: a run written at or above it is the new highest (a run freed is never the
    # highest of a flow that keeps others: an in-order packet takes in the lowest run)
    written = at < q
    higher = written & ((rx.runs_of[f] == 0) | (arrival.end >= rx.top_e[f]))
    top_lane = jnp.where(higher, lane, n_flows)
    runs_after = rx.runs_of[f] + arrival.change
    reach = jnp.where(runs_after == 0, 0, jnp.maximum(rx.reach[f], jnp.where(written, at + 1, 0)))
    rx = rx.replace(top_e=rx.top_e.at[top_lane].set(arrival.end, mode="drop"),
                    top_at=rx.top_at.at[top_lane].set(at, mode="drop"),
                    reach=rx.reach.at[lane].set(reach, mode="drop"))
    rx = rx.replace(rcv_nxt=rx.rcv_nxt.at[lane].set(arrival.rcv_nxt, mode="drop"),
                    run_s=run_s.at[lane, at].set(arrival.start, mode="drop"),
                    run_e=run_e.at[lane, at].set(arrival.end, mode="drop"), held=held, peak=jnp.maximum(rx.peak, held),
                    runs_of=rx.runs_of.at[lane].add(arrival.change, mode="drop"))
    return rx, arrival.duplicate.astype(jnp.int32), arrival.discarded


def _arrival_in_order(rx: Receivers, f, n_flows: int, valid, seq) -> _Arrival:
    """`_arrival_any` for a packet below the next expected (a duplicate, whatever runs the flow
    holds: they lie above it) or in order for a flow that holds no run."""
    old = rx.rcv_nxt[f]
    none = jnp.asarray(rx.run_s.shape[1], jnp.int32)
    zero = jnp.asarray(0, jnp.int32)
    return _Arrival(rcv_nxt=jnp.where(valid & (seq == old), seq + 1, old), free_1=none, free_2=none, write_at=none,
                    start=zero, end=zero, duplicate=valid & (seq < old), discarded=zero, change=zero)


#: Packets a pass of a vectorized link round's admission takes at most (`_link_round_fifo`): a
#: pass ends at the first drop or after this many, so its work follows the packets it decides,
#: not the round's chunk.
ADMISSION_WINDOW = 64
#: Places of a lane's row a search takes at a time (`_arrival_any`): a search covers the
#: blocks up to the place its flow has reached, so its work follows the runs the flow holds.
SEARCH_BLOCK = 64


class _Found(NamedTuple):
    """What a search of places of a lane's row found for a data packet [s, e): whether the packet
    is held already (dup); the first run that starts at e (above: its place a, its end); the first
    that ends at s (below: its place b, its start); the first free place."""

    dup: jax.Array
    has_above: jax.Array
    a: jax.Array
    end_above: jax.Array
    has_below: jax.Array
    b: jax.Array
    start_below: jax.Array
    has_free: jax.Array
    free: jax.Array


def _search(rx: Receivers, lane, valid, s, e, first, width: int) -> _Found:
    """`_Found` among places first ... first + width - 1 of the lane's row."""
    row_s = jax.lax.dynamic_slice(rx.run_s, (lane, first), (1, width))[0]
    row_e = jax.lax.dynamic_slice(rx.run_e, (lane, first), (1, width))[0]
    used = row_e > row_s
    mine = valid & used
    above, below, free = mine & (row_s == e), mine & (row_e == s), ~used
    a, b, ff = (jnp.argmax(x).astype(jnp.int32) for x in (above, below, free))
    return _Found(dup=jnp.any(mine & (row_s <= s) & (s < row_e)), has_above=above[a], a=first + a, end_above=row_e[a],
                  has_below=below[b], b=first + b, start_below=row_s[b], has_free=free[ff], free=first + ff)


def _first_of(earlier: _Found, later: _Found) -> _Found:
    """What a search finds over two stretches of a row, `earlier` before `later`: the first of each."""
    above = ~earlier.has_above & later.has_above
    below = ~earlier.has_below & later.has_below
    free = ~earlier.has_free & later.has_free
    pick = lambda take, x, y: jnp.where(take, y, x)  # noqa: E731
    return _Found(dup=earlier.dup | later.dup, has_above=earlier.has_above | later.has_above,
                  a=pick(above, earlier.a, later.a), end_above=pick(above, earlier.end_above, later.end_above),
                  has_below=earlier.has_below | later.has_below, b=pick(below, earlier.b, later.b),
                  start_below=pick(below, earlier.start_below, later.start_below),
                  has_free=earlier.has_free | later.has_free, free=pick(free, earlier.free, later.free))


def _arrival_any(rx: Receivers, f, n_flows: int, valid, seq, need=None) -> _Arrival:
    """What data packet [s, s + 1) does at its receiver, in every case. The runs a flow holds are
    disjoint, do not touch and lie above its next expected packet, so a packet that is not a
    duplicate touches at most the run that ends at s and the run that starts at s + 1: in order, it
    takes the one above with it; ahead, it merges with both into one run, written where the one
    above was (else the one below, else the first free place of the lane's row). need: the places
    searched, a prefix of the row that holds all the flow's runs and a free place, in blocks of
    `SEARCH_BLOCK` (the last block ends at the row's end; None: the whole row at once)."""
    q = rx.run_s.shape[1]
    none = jnp.asarray(q, jnp.int32)
    lane = jnp.minimum(f, rx.run_s.shape[0] - 1).astype(jnp.int32)
    old = rx.rcv_nxt[f]
    s, e = seq, seq + 1
    if need is None or q <= SEARCH_BLOCK:
        found = _search(rx, lane, valid, s, e, jnp.int32(0), q)
    else:
        width = SEARCH_BLOCK

        def block(loop):
            k, found = loop
            first = jnp.minimum(k * width, q - width).astype(jnp.int32)  # the last block ends at the row's end
            return k + 1, _first_of(found, _search(rx, lane, valid, s, e, first, width))

        no, zero = jnp.asarray(False), jnp.asarray(0, jnp.int32)
        nothing = _Found(dup=no, has_above=no, a=zero, end_above=zero, has_below=no, b=zero, start_below=zero,
                         has_free=no, free=zero)
        _, found = jax.lax.while_loop(lambda loop: loop[0] * width < need, block, (zero, nothing))
    duplicate = valid & ((s < old) | found.dup)
    in_order = valid & (s == old)
    ahead = valid & (s > old) & ~duplicate
    a, b = found.a, found.b
    has_a, has_b = (in_order | ahead) & found.has_above, ahead & found.has_below
    write = ahead & (has_a | has_b | found.has_free)
    start = jnp.where(has_b, found.start_below, s)
    end = jnp.where(has_a, found.end_above, e)
    touched = has_a.astype(jnp.int32) + has_b.astype(jnp.int32)  # runs taken in, or merged and written again
    return _Arrival(rcv_nxt=jnp.where(in_order, end, old),
                    free_1=jnp.where(in_order & has_a, a, none),
                    free_2=jnp.where(ahead & has_a & has_b, b, none),
                    write_at=jnp.where(write, jnp.where(has_a, a, jnp.where(has_b, b, found.free)), none),
                    start=start, end=end, duplicate=duplicate,
                    discarded=jnp.where(ahead & ~write, end - start, 0).astype(jnp.int32),
                    change=write.astype(jnp.int32) - touched)


def receiver_runs_for(plan: Plan, lanes: int = 1) -> int:
    """Places for runs of out-of-order data, shared out among the lanes of a run (`Receivers`):
    per lane, four for every packet the links that carry data can hold at once (buffer plus what
    the capacity puts on the wire in the propagation delay; links only on reverse routes carry
    ACKs and make no hole), rounded up to a power of two, at least 64: what one store shared by
    every flow held before the store was a row per lane, so no flow finds less room than it did
    then. A lane's search covers only the places its flow has reached, so on a CPU a large share
    costs memory (8 bytes a place), not time; a vmapped batch searches whole rows. A flow's runs
    are at most every other packet of what it has in flight, but holes outlive the packets that
    made them (NewReno repairs one per round trip), so this is a start, not a bound: a lane that
    needs more than its share says so in its status (4), and `simulate_exact` then grows the
    store (50 TCP flows on a 1 500-packet dumbbell held 3 414 runs at once, a single flow more
    than 164; one flow of a short-flow run at load 0.5 over 200 s more than 2 048)."""
    capacity_pps = np.nanmax(plan.capacity_Bps, axis=1) / plan.data_bytes
    data = np.zeros(plan.n_links, bool)
    data[plan.route[plan.route >= 0]] = True
    held = float(np.sum((plan.buffer + capacity_pps * plan.propagation_s)[data]))
    return int(lanes) * max(64, 1 << int(math.ceil(math.log2(max(4.0 * held, 1.0)))))


def runs_per_lane(receiver_runs: int, lanes: int) -> int:
    """A lane's share of the receivers' store (`Receivers`): `receiver_runs` places over `lanes`
    lanes, rounded up (so the store holds at least `receiver_runs`)."""
    return max(1, -(-int(receiver_runs) // int(lanes)))


def pool_size_for(plan: Plan, flows_width: int) -> int:
    """A pool large enough for the packets and ACKs a run can have in flight: per link its buffer
    and what its capacity puts on the wire in its propagation delay, doubled for the ACKs, plus a
    window per flow, rounded up to a power of two."""
    capacity_pps = np.nanmax(plan.capacity_Bps, axis=1) / plan.data_bytes
    per_link = plan.buffer + capacity_pps * (plan.propagation_s + 4 * plan.lookahead_s) + 2
    need = 2.0 * float(np.sum(per_link)) + 4.0 * flows_width + 64
    return 1 << int(math.ceil(math.log2(need)))


#: The links' vectorized pass (`fifo_links`) computes departures in whole steps of the time grid:
#: a service time s added to a time t on the grid and rounded to it gives t + round(s) in steps as
#: long as t + s stays below `FIFO_HORIZON_S` (its float64 rounding is then at most 2^-12 of a step)
#: and s's fraction of a step is more than `FIFO_MARGIN` away from one half.
FIFO_HORIZON_S = 2.0 ** 10
FIFO_MARGIN = 2.0 ** -8


def fifo_links(protocol: "ExactProtocol", plan: Plan, end_s: float) -> tuple[bool, ...]:
    """Per link: whether a round of its events may be taken as one vectorized pass, which gives
    the packets, counts and times the event-by-event pass gives: the protocol has no routers
    (nothing at the link depends on a packet's header or changes it), the link's capacity has no
    schedule, and its departures are exact in whole steps of the time grid (`FIFO_HORIZON_S`,
    `FIFO_MARGIN`: checked here for the data and ACK sizes on the link)."""
    routers = ("router_init", "router_next", "router_timer", "router_packet", "observe")
    if any(getattr(type(protocol), name) is not getattr(ExactProtocol, name) for name in routers):
        return (False,) * plan.n_links
    out = []
    for l in range(plan.n_links):
        constant = int(np.sum(np.isfinite(plan.schedule_s[l]))) <= 1
        services = [np.float64(size) / np.float64(plan.capacity_Bps[l, 0]) for size in (plan.data_bytes, plan.ack_bytes)]
        steps = [s / TIME_GRID_S for s in services]
        clear = all(abs(u - math.floor(u) - 0.5) > FIFO_MARGIN for u in steps)
        latest = end_s + (float(plan.buffer[l]) + 2.0) * max(services)  # the latest departure of a packet that arrives
        out.append(bool(constant and clear and latest < FIFO_HORIZON_S))
    return tuple(out)


class LaneView(NamedTuple):
    """What the stages of a step read of each lane's flow (arrays over lanes): its `Flows` (with
    its index in the run, `flows.index`), route and reverse route (link indices, -1 past the end) and their
    lengths, the fixed delay of its ACKs (back), its access delay and its interface's rate (bytes/s)."""

    flows: Flows
    route: jax.Array
    reverse: jax.Array
    route_length: jax.Array
    reverse_length: jax.Array
    back: jax.Array
    access: jax.Array
    interface: jax.Array


def _fresh_counters(n: int) -> FlowCounters:
    zeros = jnp.zeros(n, jnp.int32)
    tally = jnp.zeros((n, len(TALLY_FIELDS))).at[:, len(TALLY_COUNTS):].set(jnp.nan)
    return FlowCounters(sent=zeros, packets_sent=zeros, acks_received=zeros, first_sent=jnp.full(n, jnp.nan),
                        nic_free=jnp.zeros(n), clock=jnp.full(n, -jnp.inf), tally=tally)


class _Packing:
    """The leaves of a pytree of per-lane arrays (leading axis: the lanes) as one array per dtype,
    (lanes, columns): a loop that carries them packed writes each dtype's state with one
    operation per iteration, not one per leaf (nor copies the old value of each leaf that other
    operations still read: XLA on a CPU runs every operation as a call of its own)."""

    def __init__(self, tree):
        leaves, self.treedef = jax.tree_util.tree_flatten(tree)
        self.shapes = [leaf.shape for leaf in leaves]
        self.place, width = [], {}
        for leaf in leaves:
            key, w = jnp.dtype(leaf.dtype).name, int(np.prod(leaf.shape[1:], dtype=int))
            self.place.append((key, width.get(key, 0), w))
            width[key] = width.get(key, 0) + w

    def pack(self, tree) -> dict:
        leaves = jax.tree_util.tree_leaves(tree)
        parts: dict = {}
        for leaf, (key, _, _) in zip(leaves, self.place):
            parts.setdefault(key, []).append(leaf.reshape(leaf.shape[0], -1))
        return {key: jnp.concatenate(columns, axis=1) for key, columns in parts.items()}

    def unpack(self, packed: dict):
        leaves = [packed[key][:, at:at + w].reshape(shape) for (key, at, w), shape in zip(self.place, self.shapes)]
        return jax.tree_util.tree_unflatten(self.treedef, leaves)


def _named(fields: tuple, **values) -> jax.Array:
    """A float64 vector over `fields` (a row's names, as `LINK_FIELDS`): the values given by name,
    0 for the others (what an event adds to a row)."""
    return jnp.stack([jnp.asarray(values.get(name, 0.0), jnp.float64) for name in fields])


def _scoped(name: str, body):
    """`body` under the JAX name scope `name`: XLA's program then tells its operations apart by
    loop (`benchmarks/packet_profile.py --ops` counts those of each iteration)."""
    def scoped(*args):
        with jax.named_scope(name):
            return body(*args)
    return scoped


def _where_lanes(mask, new, old):
    """Pytree `new` where `mask` (over lanes, the leading axis of every leaf), else `old`."""
    def pick(a, b):
        if a.ndim == 0 or a.shape[0] != mask.shape[0]:
            raise ValueError("a protocol's state must be arrays over the lanes (leading axis); found a leaf of "
                             f"shape {a.shape} for {mask.shape[0]} lanes")
        return jnp.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b)
    return jax.tree_util.tree_map(pick, new, old)


def lanes_for(starts: np.ndarray, rtt_s: float, n_flows: int, end_s: float = math.inf) -> int:
    """The default number of lanes of a run of `end_s` seconds whose flows start at `starts` (s, one
    row per run; inf, or at or after the end: padding, flows that never start and take no lane):
    the most flows that start within any window of 6 round trips (the largest), doubled and
    rounded up to a power of two (at least 64), and at most the flows of the widest run. A flow
    holds its lane from its start until nothing of it is left (its last ACK, its last timer), so
    this is a guess at how many overlap, not a bound; a run that needs more has status 5 and
    `simulate_exact` runs it again with twice the lanes. (A short flow lives a handshake, its
    slow start's rounds and its last ACK: some 4-6 round trips. The guess errs on the large side:
    a lane without work costs the senders' stage nothing, a run again costs the run.)"""
    window = 6.0 * float(rtt_s)
    most = 1
    for row in np.atleast_2d(starts):
        t = np.sort(row[np.isfinite(row) & (row < end_s)])
        if t.size:
            most = max(most, int(np.max(np.searchsorted(t, t + window, side="left") - np.arange(t.size))))
    return int(min(n_flows, max(64, 1 << int(math.ceil(math.log2(2 * most))))))


def sample_count(end_s: float, sample_s: float) -> int:
    """The samples of a run of `end_s` seconds at spacing `sample_s` (the last one may be shorter)."""
    return int(math.ceil(end_s / sample_s - 1e-12))


def sample_places(samples: int) -> int:
    """The places a compiled run keeps for `samples` samples: `samples` rounded up to three
    significant bits (at most 25 % more), so that runs of other lengths share one program."""
    grain = 1 << max(0, samples.bit_length() - 3)
    return -(-samples // grain) * grain


def simulate_events(protocol: ExactProtocol, plan: Plan, flows: Flows, params, key, step_s, *, end_s,
                    sample_s, pool_size: int, receiver_runs: int | None = None, lanes: int | None = None,
                    batch_axis: str | None = None, flow_series: bool = False, samples=None,
                    sample_room: int | None = None, fifo: tuple[bool, ...] | None = None):
    """One run (jit and vmap it for batches). Returns a dict of JAX arrays.
    receiver_runs: places for out-of-order runs, shared out among the lanes (`runs_per_lane` each;
    default: `receiver_runs_for`).

    **What may be traced.** `step_s`, `end_s`, `sample_s` and `samples` (the run's samples,
    `sample_count`) may be traced, so that one compilation serves runs of any step, length and
    sample spacing; the program then needs what they would otherwise give: `sample_room` (a
    whole number >= samples: the places of the time series, whose places past `samples` stay
    empty) and `fifo` (`fifo_links` at the run's end). Left None, both (and `samples`) follow from
    `end_s` and `sample_s`, which must then be numbers.

    **Lanes.** The senders, receivers and counters work over `lanes` lanes (default: one per flow),
    not over the flows of the run, so that a step costs what its active flows and packets cost,
    not what every flow of the run would. At the start of each step the engine frees every lane
    whose flow is over -- no own event to come (`next_time` inf), nothing ready to send, no packet
    or ACK of it in the network, no out-of-order data held for it -- and writes that flow's
    counters and protocol report to the run's per-flow outputs; then it gives the flows that start
    in the step, in the order of their start times, a free lane each, with a fresh protocol state
    (`init`). Nothing else of a flow depends on its lane (the total order breaks ties by the
    flow's index in the run), so no result depends on the number of lanes. A flow that finds no
    free lane stops the run with status 5, `flows_without_lane` counting the flows that found none.

    flow_series: keep, per flow of the run, the data packets that reached its receiver in each
    sample (output "flow_delivered", (sample, flow); an array of samples x flows, so off by default).

    batch_axis: the name of the vmap axis when the function is vmapped over runs (None: one run).
    The loops that take one event at a time then run until every run of the batch is done, each
    run masked by its own condition (`event_loop`).
    """
    N = plan.n_flows
    F = N if lanes is None else int(lanes)
    receiver_runs = receiver_runs_for(plan, F) if receiver_runs is None else receiver_runs
    Q = runs_per_lane(receiver_runs, F)
    L, K, P, R = plan.n_links, protocol.header_size, pool_size, plan.ring
    S = min(P, CHUNK)
    # a chunk's sorts pack each key above its places' ranks (`_lex_order`): grid offsets (below
    # 2^52, `_grid_offsets`) above 10 bits, and a link's tie-break key where it fits
    assert S <= 1 << 10, "CHUNK: at most 1024 events, so that a chunk's time offsets fit its sort keys"
    tie_fits = _tie_fits(N, S)
    if samples is None:
        samples = sample_count(end_s, sample_s)
    n_bins = samples if sample_room is None else int(sample_room)
    fifo = fifo_links(protocol, plan, end_s) if fifo is None else tuple(fifo)

    def padded(a, fill):
        """Per-flow plan array `a` with one more row (index N: no flow) filled with `fill`."""
        a = jnp.asarray(a)
        return jnp.concatenate([a, jnp.full((1,) + a.shape[1:], fill, a.dtype)])

    # per flow of the run, and a row N for a lane without a flow (it never starts, has nothing to send)
    start_x, stop_x = padded(flows.start, jnp.inf), padded(flows.stop, jnp.inf)
    size_x = padded(flows.size, 0.0)
    route_x, reverse_x = padded(plan.route, -1), padded(plan.reverse, -1)
    route_length_x, reverse_length_x = padded(plan.route_length, 0), padded(plan.reverse_length, 0)
    back_x, access_x = padded(plan.back_s, 0.0), padded(plan.access_s, 0.0)
    interface_x = padded(plan.interface_Bps, 1.0)
    order = jnp.argsort(flows.start, stable=True).astype(jnp.int32)  # flows in the order they start
    sorted_start = flows.start[order]
    propagation = jnp.asarray(plan.propagation_s)
    buffer = jnp.asarray(plan.buffer)
    schedule_s, capacity_Bps = jnp.asarray(plan.schedule_s), jnp.asarray(plan.capacity_Bps)
    size_of = jnp.asarray([plan.data_bytes] + [plan.ack_bytes] * (KINDS - 1))  # by kind
    rows = jnp.arange(F)

    def view_of(lane_flow) -> LaneView:
        """The lanes' flows (lane_flow: index in the run, N: none) as the stages read them."""
        return LaneView(flows=Flows(start=start_x[lane_flow], stop=stop_x[lane_flow], size=size_x[lane_flow],
                                    index=lane_flow),
                        route=route_x[lane_flow], reverse=reverse_x[lane_flow],
                        route_length=route_length_x[lane_flow], reverse_length=reverse_length_x[lane_flow],
                        back=back_x[lane_flow], access=access_x[lane_flow], interface=interface_x[lane_flow])

    def event_loop(cond, body, init):
        """`while cond: body` for the loops that take one event at a time; body(carry, active) must
        change nothing where `active` is false. Over a batch (vmapped with axis name `batch_axis`)
        the loop runs while any run has work, and each run's body is masked by its own condition:
        JAX's batched while loop would instead select the whole state (the packet pool, the
        receivers' store) between old and new at every iteration, at a cost that grows with them."""
        if batch_axis is None:
            return jax.lax.while_loop(cond, lambda carry: body(carry, True), init)
        return jax.lax.while_loop(lambda carry: jax.lax.psum(cond(carry).astype(jnp.int32), batch_axis) > 0,
                                  lambda carry: body(carry, cond(carry)), init)

    def bin_of(t):
        """The sample an instant falls in; at or after the end: an overflow bin (dropped)."""
        return jnp.where(t < end_s, jnp.clip(jnp.floor(t / sample_s).astype(jnp.int32), 0, samples - 1), n_bins)

    # ------------------------------------------------------------------ state
    pool = PacketPool.of(time=jnp.full(P, jnp.inf), place=FREE, flow=0, hop=0, kind=0, seq=0, sent=0.0,
                         header=jnp.zeros((P, K)))
    free = FreeSlots(stack=jnp.arange(P, dtype=jnp.int32)[::-1], top=jnp.asarray(P, jnp.int32))
    links = LinkState(ring=jnp.zeros((L, R)), row=jnp.zeros((L, len(LINK_FIELDS))))
    bins = jnp.zeros((n_bins + 1, L, len(BIN_FIELDS)))
    flow_bins = jnp.zeros((n_bins + 1, N if flow_series else 0))
    receivers = Receivers(rcv_nxt=jnp.zeros(F, jnp.int32), ts_recent=jnp.zeros(F),
                          run_s=jnp.zeros((F, Q), jnp.int32), run_e=jnp.zeros((F, Q), jnp.int32),
                          held=jnp.asarray(0, jnp.int32), peak=jnp.asarray(0, jnp.int32),
                          runs_of=jnp.zeros(F, jnp.int32), top_e=jnp.zeros(F, jnp.int32),
                          top_at=jnp.zeros(F, jnp.int32), reach=jnp.zeros(F, jnp.int32))
    router0 = protocol.router_init(params, L)
    # what the routers show (`observe`), as each sample's last update leaves it (NaN: none in it)
    observed = {name: jnp.full((n_bins + 1, L), jnp.nan) for name in protocol.observe(router0, params)}
    no_flow = jnp.full(F, N, jnp.int32)
    # the run's per-flow outputs: what a flow's lane held when it was freed (or at the end)
    every = Flows(start=flows.start, stop=flows.stop, size=flows.size, index=jnp.arange(N, dtype=jnp.int32))
    outputs = Outputs(counters=_fresh_counters(N), received=jnp.zeros(N, jnp.int32),
                      report=protocol.report(protocol.init(params, every, key)))
    carry = EngineState(pool=pool, free=free, links=links, bins=bins, flow_bins=flow_bins, receivers=receivers,
                        counters=_fresh_counters(F), proto=protocol.init(params, view_of(no_flow).flows, key),
                        router=router0, observed=observed, status=jnp.asarray(0, jnp.int32),
                        lanes=LaneTable(flow=no_flow, given=jnp.asarray(0, jnp.int32),
                                        short=jnp.asarray(0, jnp.int32), peak=jnp.asarray(0, jnp.int32)),
                        outputs=outputs, work=Work(*(jnp.asarray(0, jnp.int32) for _ in dataclasses.fields(Work))))

    # ------------------------------------------------------------------ lanes
    def write_out(c, mask):
        """The flows of the lanes in `mask`: their counters, in-order data and report to the outputs."""
        target = jnp.where(mask, c.lanes.flow, N)
        put = lambda out, lane: out.at[target].set(lane, mode="drop")
        o = c.outputs
        return c.replace(outputs=Outputs(counters=jax.tree_util.tree_map(put, o.counters, c.counters),
                                         received=put(o.received, c.receivers.rcv_nxt),
                                         report=jax.tree_util.tree_map(put, o.report, protocol.report(c.proto))))

    def lanes_update(c, t1):
        """Free the lanes whose flows are over, then give the flows that start before t1 a lane each."""
        lanes, v = c.lanes, view_of(c.lanes.flow)
        in_pool = jax.ops.segment_sum((c.pool.place != FREE).astype(jnp.int32), c.pool.flow, num_segments=F)
        clock = c.counters.clock
        over = ((lanes.flow < N) & (own_next(c.proto, v) == jnp.inf)
                & ~protocol.ready(c.proto, params, v.flows, clock) & (in_pool == 0) & (c.receivers.runs_of == 0))
        c = write_out(c, over)
        flow = jnp.where(over, N, lanes.flow)
        due = jnp.searchsorted(sorted_start, t1, side="left").astype(jnp.int32)  # flows that start before t1
        want = due - lanes.given
        vacant = flow == N
        n_vacant = jnp.sum(vacant, dtype=jnp.int32)
        give = jnp.minimum(want, n_vacant)
        rank = jnp.cumsum(vacant, dtype=jnp.int32) - vacant
        new = vacant & (rank < give)
        flow = jnp.where(new, order[jnp.clip(lanes.given + rank, 0, N - 1)], flow)
        short = jnp.maximum(want - n_vacant, 0)
        fresh = over | new
        v = view_of(flow)
        proto = _where_lanes(fresh, protocol.init(params, v.flows, key), c.proto)
        counters = _where_lanes(fresh, _fresh_counters(F), c.counters)
        rx = c.receivers.replace(rcv_nxt=jnp.where(fresh, 0, c.receivers.rcv_nxt),
                                 ts_recent=jnp.where(fresh, 0.0, c.receivers.ts_recent))
        lanes = LaneTable(flow=flow, given=lanes.given + give, short=jnp.maximum(lanes.short, short),
                          peak=jnp.maximum(lanes.peak, jnp.sum(flow < N, dtype=jnp.int32)))
        return c.replace(proto=proto, counters=counters, receivers=rx, lanes=lanes,
                         status=jnp.where((short > 0) & (c.status == 0), 5, c.status)), v

    # ------------------------------------------------------------------ stage 1: senders
    def chunk(key, t1):
        """The events of a stage to take next: those before theta, at most S of them (S = `chunk`),
        theta = t1 if they fit, else as late as they allow (bisection over time). Returns (theta,
        their pool slots (S; P past their number), their number, stuck: more than S events share
        one instant). Taking a step's events in chunks keeps the sorts small."""
        total = jnp.sum(key < t1)
        first = jnp.min(key)
        if batch_axis is None:  # one run: the bisection only where the events do not fit
            lo = jax.lax.cond(total <= S, lambda: t1,
                              lambda: jax.lax.cond(total <= 2 * S, lambda: _latest_fitting(key, first, t1, S, "earliest"),
                                                   lambda: _latest_fitting(key, first, t1, S, "pool")))
        else:  # a batch would compute every side of a branch
            lo = _latest_fitting(key, first, t1, S, "pool")
        theta = jnp.where(total <= S, t1, lo)
        stuck = (total > S) & (theta <= first)
        taken = key < theta
        return theta, _first_set(taken, S, P), jnp.sum(taken, dtype=jnp.int32), stuck

    def take(field, idx, fill=0):
        """Pool field `field` at slots `idx` (`fill` past the pool: a chunk's unused places)."""
        return jnp.take(field, idx, axis=0, mode="fill", fill_value=fill)

    def own_next(proto, v):
        """Each flow's next own event (start, timer, pacing), on the time grid."""
        return up_to_grid(protocol.next_time(proto, params, v.flows))

    def router_next(router, l):
        """Link l's next router timer, on the time grid."""
        return up_to_grid(protocol.router_next(router, params, l))

    def senders(c, t1, v):
        """Each flow takes its ACKs and its own events in time order (ACKs by (time, kind, seq)) and
        sends at those instants; chunk by chunk of the step's ACKs."""
        def more_work(c):
            pool = c.pool
            acks = jnp.any((pool.place == L) & (pool.time < t1))
            own = jnp.any(own_next(c.proto, v) < t1)
            ready = jnp.any(protocol.ready(c.proto, params, v.flows, c.counters.clock)
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
            # the chunk by (flow, time, kind, seq); each flow then walks its own run
            order, flow_s = _lex_order((tie, _grid_offsets(key0), flow_c), S)
            key_s, idx_s = key0[order], idx[order]
            begin = jnp.searchsorted(flow_s, rows, side="left").astype(jnp.int32)
            count = jnp.searchsorted(flow_s, rows, side="right").astype(jnp.int32) - begin
            # the chunk's ACKs, read once here: the loop then only writes the pool (in place)
            acks = Ack(kind=take(pool.kind, idx_s), ack_no=take(pool.seq, idx_s), echo=take(pool.sent, idx_s),
                       header=take(pool.header, idx_s))
            return _sender_blocks(c, theta, key_s, idx_s, begin, count, v, acks)

        return jax.lax.while_loop(more_work, round_, c)

    def _sender_blocks(c, t1, key_s, idx_s, begin, count, v, acks):
        """The senders' round over the lanes that have something to do before t1 (an ACK of the
        chunk, an own event, a packet ready), `sender_block()` lanes at a time: each lane's actions
        depend on nothing of the others', so a round costs the busy lanes, not every lane."""
        B = sender_block(batched=batch_axis is not None)
        if F <= B:
            return _sender_round(c, t1, key_s, idx_s, begin, count, v, acks, rows, jnp.ones(F, bool))
        clock = c.counters.clock
        busy = (count > 0) | (own_next(c.proto, v) < t1) | (protocol.ready(c.proto, params, v.flows, clock)
                                                            & (clock < t1))
        busy_lanes = _first_set(busy, F + B, F)  # then F: none
        n_busy = jnp.sum(busy, dtype=jnp.int32)

        def block(loop):
            c, k = loop
            lanes = jax.lax.dynamic_slice(busy_lanes, (k * B,), (B,))
            ok = lanes < F
            at = jnp.minimum(lanes, F - 1)
            part = lambda tree: jax.tree_util.tree_map(lambda a: a[at], tree)  # noqa: E731
            done = _sender_round(c.replace(proto=part(c.proto), counters=part(c.counters)), t1, key_s, idx_s,
                                 begin[at], jnp.where(ok, count[at], 0), part(v), acks, lanes, ok)
            put = lambda full, block_: jax.tree_util.tree_map(  # noqa: E731
                lambda a, b: a.at[jnp.where(ok, lanes, F)].set(b, mode="drop"), full, block_)
            return done.replace(proto=put(c.proto, done.proto), counters=put(c.counters, done.counters)), k + 1

        c, _ = jax.lax.while_loop(lambda loop: loop[1] * B < n_busy, block, (c, jnp.asarray(0, jnp.int32)))
        return c

    def _sender_round(c, t1, key_s, idx_s, begin, count, v, acks, lanes, ok):
        """The round of the lanes `lanes` (their states in c.proto and c.counters, their view v;
        those not `ok` do nothing)."""
        n = begin.shape[0]
        packing = _Packing((c.proto, c.counters))

        def packed(c):
            """c with its lanes' protocol state and counters packed (`_Packing`) for the loop's carry."""
            return c.replace(proto=packing.pack((c.proto, c.counters)), counters=None)

        def unpacked(c):
            proto, counters = packing.unpack(c.proto)
            return c.replace(proto=proto, counters=counters)

        def action_time(c, pointer):
            at = jnp.minimum(begin + pointer, S - 1)
            ack_t = jnp.where(pointer < count, key_s[at], jnp.inf)
            own_t = own_next(c.proto, v)
            return at, idx_s[at], ack_t, own_t

        def cond(loop):
            c, pointer, now, iterations = loop
            c = unpacked(c)
            _, _, ack_t, own_t = action_time(c, pointer)
            ready = protocol.ready(c.proto, params, v.flows, now) & (now < t1)
            more = (ready | (jnp.minimum(ack_t, own_t) < t1)) & ok
            return jnp.any(more) & (c.status == 0)

        def body(loop, active):
            c, pointer, now, iterations = loop
            c = unpacked(c)
            at, idx, ack_t, own_t = action_time(c, pointer)
            proto = c.proto
            ready = protocol.ready(proto, params, v.flows, now) & (now < t1) & active & ok
            # a flow sends what it may at the current instant before it moves on to its next event;
            # one that is not ready takes its next event and sends, if that made it ready, at its
            # instant in the same iteration (what the next iteration would do first)
            event_t = jnp.minimum(ack_t, own_t)
            act = ~ready & (event_t < t1) & active & ok
            take_ack = act & (ack_t <= own_t)
            take_own = act & ~take_ack
            now = jnp.where(act, event_t, now)
            pool = c.pool
            ack = jax.tree_util.tree_map(lambda field: field[at], acks)
            # (`optimization_barrier`: the values of each stage of the iteration are computed once
            # and kept; without it XLA computes them again inside each operation that reads them, and
            # an iteration costs twice as much)
            take_ack, take_own, now, ack, idx = jax.lax.optimization_barrier((take_ack, take_own, now, ack, idx))
            proto = protocol.on_ack(proto, params, v.flows, now, take_ack, ack)
            proto = jax.lax.optimization_barrier(protocol.on_time(proto, params, v.flows, now, take_own))
            # the ACKs taken leave the pool
            free = c.free.pushed(idx, take_ack)
            free_stack, top = free.stack, free.top
            pool = pool.freed(jnp.where(take_ack, idx, P))
            pointer = pointer + take_ack
            counters = c.counters
            counters = counters.replace(acks_received=counters.acks_received + take_ack)
            status = c.status

            def put_on_wire(proto, pool, top, counters, status):
                """The senders that are ready put a packet on the wire at `now`."""
                want = protocol.ready(proto, params, v.flows, now) & (now < t1) & active & ok
                enough = top >= jnp.sum(want)
                go = want & enough
                want, go = jax.lax.optimization_barrier((want, go))
                proto, packet = jax.lax.optimization_barrier(protocol.send(proto, params, v.flows, now, go))
                rank = jnp.cumsum(go) - go
                slot = free_stack[jnp.clip(top - 1 - rank, 0, P - 1)]
                top = top - jnp.sum(go, dtype=jnp.int32)
                nbytes = size_of[packet.kind]
                start = jnp.maximum(now, counters.nic_free)
                leave = on_grid(start + (nbytes / v.interface if protocol.paced else 0.0))
                arrive = on_grid(leave + v.access)
                pool = pool.put(jnp.where(go, slot, P), PacketPool.of(
                    time=arrive, place=v.route[:, 0], flow=lanes, hop=0, kind=packet.kind, seq=packet.seq, sent=now,
                    header=packet.header.reshape(n, K)))
                data = go & (packet.kind == DATA)
                counters = counters.replace(nic_free=jnp.where(go, leave, counters.nic_free),
                                            sent=counters.sent + data, packets_sent=counters.packets_sent + go,
                                            first_sent=jnp.where(go & jnp.isnan(counters.first_sent), now,
                                                                 counters.first_sent))
                return proto, pool, top, counters, jnp.where(jnp.any(want) & ~enough, 1, status)

            # the senders that are ready put packets on the wire (those ready before, whose state
            # and instant the event left alone, and those the event made ready), up to
            # SENDS_PER_ITERATION each at this instant (what the next iterations would do first)
            proto, pool, top, counters, status = jax.lax.fori_loop(
                0, SENDS_PER_ITERATION, lambda _, sends: put_on_wire(*sends), (proto, pool, top, counters, status))
            status = jnp.where(active & (iterations >= MOST_ACTIONS), 2, status)
            c = c.replace(pool=pool, free=FreeSlots(stack=free_stack, top=top), proto=proto, counters=counters,
                          status=status)
            return packed(c), pointer, now, iterations + active

        c, _, now, iterations = event_loop(cond, _scoped("sender_iteration", body),
                                           (packed(c), jnp.zeros(n, jnp.int32), c.counters.clock,
                                            jnp.asarray(0, jnp.int32)))
        c = unpacked(c)
        work = c.work.replace(sender_rounds=c.work.sender_rounds + 1,
                              sender_iterations=c.work.sender_iterations + iterations)
        return c.replace(counters=c.counters.replace(clock=now), work=work)

    # ------------------------------------------------------------------ stage 2: one link
    def release(free, p, mask):
        """Pool slot p back on the free stack where `mask` (a packet dropped, or ended at its receiver)."""
        return FreeSlots(stack=free.stack.at[jnp.where(mask, free.top, P)].set(p, mode="drop"),
                         top=free.top + mask.astype(jnp.int32))

    def waiting_at(links, l, t):
        """Packets waiting at link l at time t (admitted, service not started). The ring holds the
        service starts of the last R admitted packets (R > buffer + 1; unwritten places hold 0),
        nondecreasing in the order of admission (FIFO), so those that start after t are the last of
        them and all in the ring: a count over the ring up to `RING_SCAN` places (one fused
        reduction), a bisection beyond (a loop of log2 R iterations)."""
        if R <= RING_SCAN:
            return jnp.sum(links.ring[l] > t, dtype=jnp.int32)
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

    def receive(c, f, row, slot, now, valid, v):
        """Data, a SYN or a handshake ACK (`slot`: the packet's fields, flow f, whose tally is `row`)
        reaches its receiver at `now` where `valid`. Returns (c with the receiver updated, the row
        updated, the fields its slot takes as the ACK or SYN-ACK that goes back: place, time,
        kind, seq, sent; ends: a handshake ACK, which ends there and frees its slot). (Masked
        writes, not a branch: a branch would copy the state.)"""
        rx = c.receivers
        kind, seq = slot.kind, slot.seq
        is_data = valid & (kind == DATA)
        ends = valid & (kind == HANDSHAKE_ACK)
        rx_after, dups, discarded = _receive_one(rx, f, F, is_data, seq, branch=batch_axis is None)
        # the echoed timestamp (RFC 7323's TS.Recent): the send time of the last segment that arrived
        # in order (a duplicate ACK echoes it, an ACK of a hole's repair echoes the repair's)
        in_order = is_data & (seq == rx.rcv_nxt[f])
        ts_recent = rx.ts_recent.at[jnp.where(in_order, f, F)].set(slot.sent, mode="drop")
        echo = jnp.where(kind == DATA, ts_recent[f], slot.sent)
        rx = rx_after.replace(ts_recent=ts_recent)
        received = rx.rcv_nxt[f]
        finish = TALLY_FIELDS.index("finish")
        done = is_data & jnp.isnan(row[finish]) & (received >= v.flows.size[f])
        counted = _named(TALLY_COUNTS, delivered=is_data, duplicates=jnp.where(is_data, dups, 0),
                         discarded=jnp.where(is_data, discarded, 0), handshake_acks=ends)
        row = jnp.concatenate([row[:finish] + counted,
                               jnp.stack([jnp.where(done, now, row[finish]), jnp.where(is_data, now, row[finish + 1])])])
        return c.replace(receivers=rx), row, answer_of(kind, f, now, v, received, echo), ends

    def answer_of(kind, f, now, v, seq, sent):
        """The fields the slot of data (a SYN) of lanes f received at `now` takes as its ACK
        (SYN-ACK) going back, cumulative ACK `seq` and echo `sent`: through the flow's reverse
        route if it has one, else over its fixed delay to the sender."""
        through = v.reverse_length[f] > 0
        return {"place": jnp.where(through, v.reverse[f, 0], L),
                "time": jnp.where(through, now, on_grid(now + v.back[f])),
                "kind": jnp.where(kind == DATA, ACK, SYNACK), "seq": seq, "sent": sent}

    def after_link(packets, accept, gone, answer, back, place, time, hop, header):
        """The rows the slots of `packets` (as the link read them) take when the link is done with
        them: a dropped packet and a handshake ACK at its receiver (`gone`) leave the pool; data
        or a SYN at its receiver (`answer`) turns into its ACK (`back`, `answer_of`); any other
        packet the link took moves on to `place` at `time`, as hop `hop`, with `header`."""
        return PacketPool.of(place=jnp.where(gone, FREE, jnp.where(answer, back["place"], place)),
                             time=jnp.where(gone, jnp.inf, jnp.where(answer, back["time"], time)),
                             flow=packets.flow, hop=jnp.where(accept, jnp.where(answer, 0, hop), packets.hop),
                             header=jnp.where(jnp.expand_dims(accept, -1), header, packets.header),
                             kind=jnp.where(answer, back["kind"], packets.kind),
                             seq=jnp.where(answer, back["seq"], packets.seq),
                             sent=jnp.where(answer, back["sent"], packets.sent))

    def onward(l, kind, f, hop, leave, accept, v):
        """Where packets of `kind` of lanes f that leave link l at `leave` go next (scalars or
        arrays of one shape): (their hop on the path they take then, the instant they reach the
        end of the link, in_time: data or a SYN accepted at its last link that reaches its receiver
        before the end, their next place and the instant they reach it). Data at its last link that
        reaches the receiver at or after the end stays in flight (parked, never processed)."""
        is_ack = (kind == ACK) | (kind == SYNACK)
        hop = hop + 1
        more = hop < jnp.where(is_ack, v.reverse_length[f], v.route_length[f])
        following = jnp.where(is_ack, v.reverse[f, jnp.minimum(hop, v.reverse.shape[1] - 1)],
                              v.route[f, jnp.minimum(hop, v.route.shape[1] - 1)])
        reach = on_grid(leave + propagation[l])
        arrives = accept & ~is_ack & ~more
        in_time = arrives & (reach < end_s)
        parked = arrives & ~in_time
        place = jnp.where(more, following, jnp.where(is_ack, L, L + 1))
        time = jnp.where(more, reach, jnp.where(is_ack, on_grid(reach + v.access[f]), jnp.where(parked, jnp.inf, reach)))
        return hop, reach, in_time, place, time

    def link_stage(c, l, t1, v, is_fifo):
        """Link l takes its arrivals of the step in the order (time, flow, kind, seq), and fires its
        router's timers at their instants; chunk by chunk (`chunk`), a chunk one event at a time
        (`_link_round`) or, on a link of `fifo_links` (is_fifo, static), in one vectorized pass
        (`_link_round_fifo`). l may be traced: one compiled stage serves every link."""
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
            tie = ((v.flows.index[jnp.take(pool.flow, idx, mode="fill", fill_value=0)].astype(jnp.int64) * KINDS
                    + jnp.take(pool.kind, idx, mode="fill", fill_value=0)) * (1 << 32)
                   + jnp.take(pool.seq, idx, mode="fill", fill_value=0))
            if tie_fits:  # the chunk in the total order
                idx_s = idx[_lex_order((tie, _grid_offsets(key0)), S)[0]]
            else:
                _, _, idx_s = jax.lax.sort((key0, tie, idx), num_keys=2)
            # the chunk's packets, read once here: the loop then only writes the pool (in place).
            # A packet is taken once in a round and nothing else writes its slot before its turn.
            # (past their number: rows of zeros, never used: the loop takes its first n)
            packets = PacketPool(whole=take(pool.whole, idx_s), real=take(pool.real, idx_s))
            if is_fifo:
                return _scoped("link_round", _link_round_fifo)(c, l, idx_s, n, v, packets)
            return _link_round(c, l, theta, idx_s, n, v, packets)

        return jax.lax.while_loop(more_work, round_, c)

    def _link_round(c, l, t1, idx_s, n, v, packets):
        def cond(loop):
            c, i, _ = loop
            timer = router_next(c.router, l)
            return (i < n) | (timer < t1)

        def body(loop, active):
            c, i, iterations = loop
            p = idx_s[jnp.minimum(i, S - 1)]
            pool, links, bins = c.pool, c.links, c.bins
            # the packet's fields (read with its chunk); its slot is written once, a row, at the end
            slot = jax.tree_util.tree_map(lambda field: field[jnp.minimum(i, S - 1)], packets)
            arrival = jnp.where(i < n, slot.time, jnp.inf)
            timer = router_next(c.router, l)
            fire = (timer <= arrival) & active  # a router timer at the instant of an arrival fires first
            on_packet = (timer > arrival) & active
            router_timed = protocol.router_timer(c.router, params, l, timer, waiting_at(links, l, timer))
            f, kind = slot.flow, slot.kind
            nbytes = size_of[kind]
            waiting = waiting_at(links, l, arrival)
            busy = links.free_at[l] > arrival
            drop = on_packet & busy & (waiting >= buffer[l])
            accept = on_packet & ~drop
            begin = jnp.maximum(arrival, links.free_at[l])
            which = jnp.searchsorted(schedule_s[l], begin, side="right") - 1
            leave = on_grid(begin + nbytes / capacity_Bps[l, which])
            la = jnp.where(accept, l, L)  # writes for an accepted packet
            acc = links.accepted[l]
            # the link's row (LINK_FIELDS), written once
            # (its counts and busy time grow; free_at is set where the packet was taken)
            row = links.row[l]
            row = jnp.where(jnp.asarray([name == "free_at" for name in LINK_FIELDS]), jnp.where(accept, leave, row),
                            row + _named(LINK_FIELDS, accepted=accept, arrived=on_packet, dropped=drop,
                                         data_accepted=accept & (kind == DATA),
                                         busy_s=jnp.where(accept, jnp.maximum(jnp.minimum(leave, end_s) - begin, 0.0),
                                                          0.0)))
            links = LinkState(ring=links.ring.at[la, acc % R].set(begin, mode="drop"), row=links.row.at[l].set(row))
            b_in, b_out = bin_of(arrival), bin_of(begin)
            waits = accept & (begin > arrival)
            # BIN_FIELDS: what the packet adds in the sample it arrives in, and in the one it begins
            # service in (0 where it does not count: the sums are those of adding only where it does)
            added_in = jnp.where(jnp.stack([on_packet, accept, drop, waits, waits]),
                                 jnp.stack([1.0, 1.0, 1.0, 1.0, arrival]), 0.0)
            added_out = jnp.where(jnp.stack([accept, waits, waits]), jnp.stack([nbytes, 1.0, begin]), 0.0)
            bins = bins.at[b_in, l, :BINS_IN].add(added_in, mode="drop")
            bins = bins.at[b_out, l, BINS_IN:].add(added_out, mode="drop")
            router_passed, header = protocol.router_packet(c.router, params, l, arrival, kind, slot.header,
                                                           waiting, accept)
            router = jax.tree_util.tree_map(lambda timed, passed, old: jnp.where(fire, timed, jnp.where(on_packet, passed, old)),
                                            router_timed, router_passed, c.router)
            b_timer = jnp.where(fire & (timer < end_s), bin_of(timer), n_bins + 1)
            observed = {name: c.observed[name].at[b_timer, l].set(value[l], mode="drop")
                        for name, value in protocol.observe(router_timed, params).items()}
            hop, reach, in_time, place, time = onward(l, kind, f, slot.hop, leave, accept, v)
            flow_bins = c.flow_bins
            if flow_series:
                flow_bins = flow_bins.at[jnp.where(in_time & (kind == DATA), bin_of(reach), n_bins + 1),
                                         v.flows.index[f]].add(1.0, mode="drop")
            # the flow's tally (TALLY_FIELDS), read once and written once
            row = c.counters.tally[f] + _named(TALLY_FIELDS, dropped=drop & (kind == DATA),
                                               control_dropped=drop & (kind != DATA))
            c = c.replace(links=links, bins=bins, flow_bins=flow_bins, router=router, observed=observed)
            c, row, back, ends = receive(c, f, row, slot, reach, in_time, v)
            c = c.replace(counters=c.counters.replace(tally=c.counters.tally.at[f].set(row)))
            # the slot, written as one row
            gone = drop | ends
            pool = pool.put(jnp.where(on_packet, p, P),
                            after_link(slot, accept, gone, in_time & ~ends, back, place, time, hop, header))
            c = c.replace(pool=pool, free=release(c.free, p, gone))
            return c, i + on_packet.astype(jnp.int32), iterations + active

        c, _, iterations = event_loop(cond, _scoped("link_event", body), (c, jnp.asarray(0, jnp.int32), jnp.asarray(0, jnp.int32)))
        return c.replace(work=c.work.replace(link_rounds=c.work.link_rounds + 1,
                                             link_iterations=c.work.link_iterations + iterations))

    def _link_round_fifo(c, l, idx_s, n, v, packets):
        """`_link_round` for a link of `fifo_links`: the round's n packets (in the total order) in
        one vectorized pass, with the packets, counts and times the event-by-event pass gives.

        Admission: FIFO departures are a max-plus scan, in whole steps of the time grid (int64,
        exact): leave_i = D_i + max(free, max over j <= i of a_j - D_{j-1}), D the running sum of
        the service times. A packet is dropped where the link is busy at its arrival and `buffer`
        packets wait (those of the ring, admitted before the round, and the round's admitted
        before it). A pass takes the next `ADMISSION_WINDOW` packets as admitted, finds the first that
        is not, keeps what comes before it and goes on after it: a pass per drop, plus one per
        window of packets without one.

        Receivers: a flow's data of the round that each come next -- the next expected where the
        flow holds no out-of-order data, else the end of the highest run it holds (data above a
        hole) -- update its receiver and counts at once, up to its first packet that does not; from
        there its packets go through `receive` one by one, in the total order, so that the store of
        out-of-order runs sees the same writes in the same order (the pass itself only lengthens a
        run in place). The links' series take the round's packets with one scatter-add, its
        updates in the total order: XLA on a CPU applies them in that order, as the event-by-event
        pass adds them. (Elsewhere the order is not promised: the sums of times on the grid, the
        series' waiting times, are exact in any order only while below 2^21 s, and beyond that
        may differ in their last bits.)"""
        g = TIME_GRID_S
        i = jnp.arange(S)
        valid = i < n
        kind, f, hop0 = packets.kind, packets.flow, packets.hop
        a = jnp.where(valid, packets.time, 0.0)
        arrival = jnp.round(a / g).astype(jnp.int64)
        nbytes = size_of[kind]
        service = jnp.where(valid, jnp.round(nbytes / capacity_Bps[l, 0] / g).astype(jnp.int64), 0)
        links = c.links
        acc0 = links.accepted[l]
        # the ring in the order its packets were admitted (unwritten places, 0, first): nondecreasing
        line_before = links.ring[l, (acc0 + jnp.arange(R)) % R]
        waiting_before = R - jnp.searchsorted(line_before, a, side="right").astype(jnp.int32)
        low = jnp.iinfo(jnp.int64).min // 4
        high = jnp.iinfo(jnp.int64).max // 4
        W = ADMISSION_WINDOW
        pad = lambda x, fill: jnp.concatenate([x, jnp.full(W, fill, x.dtype)])  # noqa: E731
        arrival_p, service_p, waiting_p = pad(arrival, 0), pad(service, 0), pad(waiting_before, 0)
        k = jnp.arange(W)

        def window(x, i0):
            return jax.lax.dynamic_slice(x, (i0,), (W,))

        def admit(state):
            """One pass over the window of W packets from i0: each taken as admitted up to the first
            that finds the link busy and `buffer` packets waiting (dropped); the next pass starts
            after it (or after the window). A packet's waiting count takes the ring's packets still
            waiting at its arrival and the round's admitted before it whose service begins after
            its arrival: those from `later` on, `later` the first whose service begins after it
            (service begins in admission order, so `line`, their running maximum, is sorted)."""
            i0, free_t, accept, drop, begin, leave, line, before, passes = state
            line_last = jnp.where(i0 > 0, line[jnp.maximum(i0 - 1, 0)], low)  # the line up to the window
            idx = i0 + k
            m = idx < n
            arr, d = window(arrival_p, i0), jnp.where(m, window(service_p, i0), 0)
            total = jnp.cumsum(d)
            leave_m = total + jnp.maximum(free_t, jax.lax.cummax(jnp.where(m, arr - (total - d), low)))
            begin_m = leave_m - d
            line_w = jax.lax.cummax(jnp.maximum(line_last, jnp.where(m, begin_m, low)))
            # the first admitted whose service begins after the arrival: among those before the
            # window (`line` past i0 is `high`), else in the window
            earlier = jnp.searchsorted(line, arr, side="right").astype(i0.dtype)
            later = jnp.where(earlier < i0, earlier, i0 + jnp.searchsorted(line_w, arr, side="right"))
            before_at = jnp.where(later < i0, before[jnp.minimum(later, i0)], before[i0] + (jnp.minimum(later, idx) - i0))
            waiting = window(waiting_p, i0) + (before[i0] + k) - before_at
            dropped = m & (begin_m > arr) & (waiting >= buffer[l])
            found = jnp.any(dropped)
            first = jnp.where(found, jnp.argmax(dropped), W)
            keep = m & (k < first)
            free_t = jnp.where(jnp.any(keep), jnp.max(jnp.where(keep, leave_m, low)), free_t)
            # what the next pass reads: the admitted's line up to the dropped one (which carries the
            # line on), `high` past it; the admitted before each index
            line_k = jax.lax.cummax(jnp.maximum(line_last, jnp.where(keep, begin_m, low)))
            line = jax.lax.dynamic_update_slice(line, jnp.where(k <= first, line_k, high), (i0,))
            kept = jnp.sum(keep, dtype=jnp.int32)
            before = jax.lax.dynamic_update_slice(before, before[i0] + jnp.minimum(k + 1, kept).astype(jnp.int32),
                                                  (i0 + 1,))
            upd = lambda full, part: jax.lax.dynamic_update_slice(  # noqa: E731
                full, jnp.where(keep, part, window(full, i0)), (i0,))
            accept = upd(accept, jnp.ones(W, bool))
            begin, leave = upd(begin, begin_m), upd(leave, leave_m)
            drop = drop.at[jnp.where(found, i0 + first, S + W)].set(True, mode="drop")
            nxt = jnp.where(found, i0 + first + 1, i0 + W)
            return (nxt, free_t, accept, drop, begin, leave, line, before, passes + 1)

        none = jnp.zeros(S + W, bool)
        ticks = jnp.zeros(S + W, jnp.int64)
        state = (jnp.asarray(0, i.dtype), jnp.round(links.free_at[l] / g).astype(jnp.int64), none, none, ticks,
                 ticks, jnp.full(S + W, high), jnp.zeros(S + W + 1, jnp.int32), jnp.asarray(0, jnp.int32))
        _, free_t, accept, drop, begin, leave, _, _, passes = jax.lax.while_loop(
            lambda state: state[0] < n, _scoped("link_admission", admit), state)
        accept, drop, begin, leave = accept[:S], drop[:S], begin[:S], leave[:S]
        begin, leave = begin.astype(jnp.float64) * g, leave.astype(jnp.float64) * g
        n_accepted = jnp.sum(accept, dtype=jnp.int32)
        # the link's row: counts, busy time (terms on the grid, summed exactly, then the one packet
        # in service at the end), the instant it is next free
        whole = jnp.sum(jnp.where(accept & (leave <= end_s), leave - begin, 0.0))
        crossing = jnp.sum(jnp.where(accept & (begin < end_s) & (leave > end_s), end_s - begin, 0.0))
        row = links.row[l] + _named(LINK_FIELDS, accepted=n_accepted, arrived=n, dropped=jnp.sum(drop),
                                    data_accepted=jnp.sum(accept & (kind == DATA)), busy_s=whole)
        row = row + _named(LINK_FIELDS, busy_s=crossing)
        row = row.at[LINK_FIELDS.index("free_at")].set(free_t.astype(jnp.float64) * g)  # the last admitted's departure
        rank = jnp.cumsum(accept, dtype=jnp.int32) - accept
        kept = accept & (rank >= n_accepted - R)  # the last R admitted: the ring's places, once each
        ring = links.ring.at[l, jnp.where(kept, (acc0 + rank) % R, R)].set(begin, mode="drop")
        c = c.replace(links=LinkState(ring=ring, row=links.row.at[l].set(row)))
        # the links' series, added in the total order
        waits = accept & (begin > a)
        ones = jnp.ones(S)
        added_in = jnp.where(jnp.stack([valid, accept, drop, waits, waits], axis=1),
                             jnp.stack([ones, ones, ones, ones, a], axis=1), 0.0)
        added_out = jnp.where(jnp.stack([accept, waits, waits], axis=1), jnp.stack([nbytes, ones, begin], axis=1), 0.0)
        bins = c.bins.at[jnp.where(valid, bin_of(a), n_bins + 1), l, :BINS_IN].add(added_in, mode="drop")
        bins = bins.at[jnp.where(accept, bin_of(begin), n_bins + 1), l, BINS_IN:].add(added_out, mode="drop")
        hop, reach, in_time, place, time = onward(l, kind, f, hop0, leave, accept, v)
        # the receivers: each packet's count of its flow's data of the round up to it
        rx = c.receivers
        is_data = in_time & (kind == DATA)
        ends = in_time & (kind == HANDSHAKE_ACK)
        flow_bins = c.flow_bins
        if flow_series:
            flow_bins = flow_bins.at[jnp.where(is_data, bin_of(reach), n_bins + 1), v.flows.index[f]].add(1.0, mode="drop")
        lane = jnp.where(valid, f, F)
        # data below the next expected at the round's start are duplicates whatever comes before
        # them; the others advance the receiver (in order) or extend a run (above a hole)
        below = is_data & (packets.seq < rx.rcv_nxt[f])
        advancing = is_data & ~below
        # per packet, in its flow's packets of the round (sorted by flow, then in the total order):
        # the advancing data up to it, and the last advancing data up to it (-1: none)
        by_lane, lane_s = _lex_order((lane,), S)
        x = advancing[by_lane].astype(jnp.int32)
        upto = jnp.cumsum(x)
        head = jax.lax.cummax(jnp.where(jnp.concatenate([jnp.ones(1, bool), lane_s[1:] != lane_s[:-1]]), i, 0))
        counted = jnp.zeros(S, jnp.int32).at[by_lane].set(upto - upto[head] + x[head])
        stride = S + 1
        latest_key = jax.lax.cummax(lane_s * stride + jnp.where(x > 0, by_lane + 1, 0))
        last_advancing = jnp.zeros(S, jnp.int32).at[by_lane].set((latest_key - lane_s * stride - 1).astype(jnp.int32))
        # a flow's data extend the next expected (no data held out of order) or the highest run it
        # holds (data above a hole), or are duplicates below the next expected; up to its first
        # packet that is none of these, they are taken here at once, the rest of its packets one
        # by one (`receive`)
        top, top_at = rx.top_e, rx.top_at  # each lane's highest run (where it holds one)
        extending = rx.runs_of > 0
        base = jnp.where(extending, top, rx.rcv_nxt)
        astray = advancing & (packets.seq != base[f] + counted - 1)
        first_astray = jax.ops.segment_min(jnp.where(astray, i, S), lane, num_segments=F + 1)[:F]
        hard = in_time & (i >= first_astray[f])
        easy = in_time & ~hard
        easy_data = easy & (kind == DATA)
        ahead = extending[f]
        # the ACK of each: the next expected after it, and the echoed timestamp (TS.Recent, which
        # only data in order set: a duplicate echoes the last of them before it, data above a hole
        # the flow's at the start of the round)
        received = jnp.where(ahead, rx.rcv_nxt[f], rx.rcv_nxt[f] + counted)
        recent = jnp.where(~ahead & (last_advancing >= 0), packets.sent[jnp.clip(last_advancing, 0, S - 1)],
                           rx.ts_recent[f])
        echo = jnp.where((kind == DATA) & (ahead | below), recent, packets.sent)
        per_lane = jax.ops.segment_sum(jnp.stack([easy_data, easy & ends, drop & (kind == DATA), drop & (kind != DATA),
                                                  easy & advancing, easy & below], axis=1).astype(jnp.int32),
                                       lane, num_segments=F + 1)[:F]
        moved = per_lane[:, 4]  # advancing data taken at once: the next expected, or the highest run's end
        last = jax.ops.segment_max(jnp.where(easy_data, i, -1), lane, num_segments=F + 1)[:F]
        last_moved = jax.ops.segment_max(jnp.where(easy & advancing, i, -1), lane, num_segments=F + 1)[:F]
        finishing = easy_data & (received >= v.flows.size[f])
        first = jax.ops.segment_min(jnp.where(finishing, i, S), lane, num_segments=F + 1)[:F]
        tally = c.counters.tally
        finish, latest = TALLY_FIELDS.index("finish"), TALLY_FIELDS.index("last_delivered")
        added = {"delivered": per_lane[:, 0], "handshake_acks": per_lane[:, 1], "dropped": per_lane[:, 2],
                 "control_dropped": per_lane[:, 3], "duplicates": per_lane[:, 5]}
        counts = jnp.stack([added.get(name, jnp.zeros(F, jnp.int32)) for name in TALLY_COUNTS], axis=1)
        tally = jnp.concatenate([
            tally[:, :finish] + counts,
            jnp.where(jnp.isnan(tally[:, finish]) & (first < S), reach[jnp.clip(first, 0, S - 1)], tally[:, finish])[:, None],
            jnp.where(last >= 0, reach[jnp.clip(last, 0, S - 1)], tally[:, latest])[:, None]], axis=1)
        grown = extending & (moved > 0)
        rx = rx.replace(rcv_nxt=jnp.where(extending, rx.rcv_nxt, rx.rcv_nxt + moved),
                        ts_recent=jnp.where((last_moved >= 0) & ~extending,
                                            packets.sent[jnp.clip(last_moved, 0, S - 1)], rx.ts_recent),
                        run_e=rx.run_e.at[jnp.where(grown, rows, F), top_at].set(top + moved, mode="drop"),
                        top_e=jnp.where(grown, top + moved, top))
        c = c.replace(bins=bins, flow_bins=flow_bins, receivers=rx, counters=c.counters.replace(tally=tally))
        # the rest of each flow's packets, from its first that comes neither next in order nor at
        # the end of its highest run: one by one, in the total order
        hard_at = _first_set(hard, S, S)
        n_hard = jnp.sum(hard, dtype=jnp.int32)

        def one(loop, active):
            c, j, received, echo = loop
            k = hard_at[jnp.minimum(j, S - 1)]
            slot = jax.tree_util.tree_map(lambda field: field[jnp.minimum(k, S - 1)], packets)
            fk = slot.flow
            valid_k = active & (j < n_hard)
            c, row, back, _ = receive(c, fk, c.counters.tally[fk], slot, reach[jnp.minimum(k, S - 1)], valid_k, v)
            c = c.replace(counters=c.counters.replace(tally=c.counters.tally.at[fk].set(row)))
            at = jnp.where(valid_k, k, S)
            return (c, j + 1, received.at[at].set(back["seq"], mode="drop"), echo.at[at].set(back["sent"], mode="drop"))

        c, _, received, echo = event_loop(lambda loop: loop[1] < n_hard, _scoped("link_receiver", one),
                                          (c, jnp.asarray(0, jnp.int32), received, echo))
        # the slots, written as rows (as in `_link_round`); those that leave the pool back on the
        # free stack in the total order
        gone = drop | ends
        pool = c.pool.put(jnp.where(valid, idx_s, P),
                          after_link(packets, accept, gone, in_time & ~ends, answer_of(kind, f, reach, v, received, echo),
                                     place, time, hop, packets.header))
        free = c.free.pushed(idx_s, gone)
        work = c.work
        return c.replace(pool=pool, free=free,
                         work=work.replace(link_rounds=work.link_rounds + 1, link_iterations=work.link_iterations + n,
                                           link_passes=work.link_passes + passes,
                                           link_one_by_one=work.link_one_by_one + n_hard))

    # the links in `plan.link_order`, each stretch of links of one kind (`fifo_links`) in a loop
    # over its links: one compiled stage per kind, not per link, so that a program's size (and the
    # time to compile it) does not grow with the network
    stretches = [(tuple(group), is_fifo) for is_fifo, group in itertools.groupby(plan.link_order, lambda l: fifo[l])]

    def step(loop):
        c, k = loop
        t1 = jnp.minimum((k + 1).astype(jnp.float64) * step_s, end_s)
        c, v = lanes_update(c, t1)
        c = senders(c, t1, v)
        for links_, is_fifo in stretches:
            if len(links_) == 1:
                c = link_stage(c, links_[0], t1, v, is_fifo)
            else:
                at = jnp.asarray(links_, jnp.int32)
                c = jax.lax.fori_loop(0, len(links_), lambda j, c: link_stage(c, at[j], t1, v, is_fifo), c)
        return c.replace(work=c.work.replace(steps=c.work.steps + 1)), k + 1

    # the step is an argument, not a shape: one compilation serves every step; a run whose status
    # is set stops (its counts are those up to then)
    carry, _ = jax.lax.while_loop(lambda loop: (loop[1].astype(jnp.float64) * step_s < end_s) & (loop[0].status == 0),
                                  step, (carry, jnp.asarray(0, jnp.int32)))
    lane_flow = carry.lanes.flow
    carry = write_out(carry, lane_flow < N)
    pool = carry.pool

    def per_flow(per_lane):
        """Per-lane values at the end as per-flow values (0 for the flows no longer in a lane)."""
        return jnp.zeros(N, per_lane.dtype).at[lane_flow].set(per_lane, mode="drop")

    data_in_flight = (pool.place != FREE) & ((pool.kind == DATA))
    in_flight = per_flow(jax.ops.segment_sum(data_in_flight.astype(jnp.int32), pool.flow, num_segments=F))
    held = per_flow(jax.ops.segment_sum((pool.place != FREE).astype(jnp.int32), pool.flow, num_segments=F))
    rx = carry.receivers
    stored = per_flow(jnp.sum(rx.run_e - rx.run_s, axis=1))  # free places: 0
    out = carry.outputs
    # a run that went to its end but whose receivers threw data away has its own status
    counters = {k: v for k, v in out.counters.as_dict().items() if k not in ("nic_free", "clock")}
    status = jnp.where((carry.status == 0) & (jnp.sum(counters["discarded"]) > 0), 4, carry.status)
    return {**counters, "in_flight": in_flight, "held": held, "received": out.received,
            "stored": stored, "receiver_runs_peak": rx.peak, "links": carry.links.as_dict(),
            "bins": {name: carry.bins[..., k] for k, name in enumerate(BIN_FIELDS)}, "flow_delivered": carry.flow_bins,
            "protocol": out.report, "router": carry.router, "observed": carry.observed, "status": status,
            "lanes_peak": carry.lanes.peak, "flows_without_lane": carry.lanes.short, "work": carry.work.as_dict()}
