"""One network description for every layer: links, flows, routes, RTTs, weights.

A `Network` is built in Python or loaded from a TOML or JSON file, and the same object goes to
`fluidcc.maxmin`, to the network fluid models (MIAIMD, XCP, iXCP) and to the packet simulator,
so their answers can be compared flow by flow.

File format (TOML shown; JSON has the same keys)::

    packet_bytes = 1000            # optional, for unit strings such as "155Mbps"

    [[links]]
    name = "a"
    capacity = "155Mbps"           # or a number in packets/s
    delay = "20ms"                 # one-way propagation delay (number: seconds), default 0
    buffer = 500                   # packets, optional (default: none given)
    from = "x"                     # optional: the nodes the link joins, both or neither
    to = "y"
    schedule = [{at = "10s", capacity = "20Mbps"}, {at = "30s", capacity = 2500}]
                                   # optional: from `at` on (number: seconds) the capacity is
                                   # `capacity` (number: packets/s); before the first entry it is
                                   # `capacity` above. Times >= 0, strictly increasing.

    [[flows]]
    name = "short"
    route = ["a"]                  # ordered list of link names
    access_delay = "0ms"           # one-way delay outside the listed links, default 0
    interface = "10Gbps"           # packet simulator: the sender's interface rate (default: as
                                   # fast as its first link)
    weight = 1                     # weighted max-min weight, default 1
    start = "0s"                   # default 0
    stop = "40s"                   # default: never
    demand = "10Mbps"              # optional cap on the flow's rate (max-min with demands)
    reverse_route = ["b"]          # optional: the links its ACKs cross, in order (default below)
    count = 1                      # optional: this many identical flows (names "short[0]", ...)

Units inside are SI: capacities and demands in packets per second, delays and times in seconds.

Reverse routes. The reverse of a link is the one link whose `from` and `to` are the link's `to`
and `from` (none if no link or several links fit, or the link has no endpoints). A flow's ACKs
cross its `reverse_route` if it gives one; else, when every link of its route has a reverse, the
reverses of its route's links in the opposite order; else (`Network.reverse_route_indices` is
None) they return over an uncongested path with the route's delays. A flow's round-trip
propagation delay is 2 access delay + its route's one-way delays + its reverse path's.

Capacity schedules. `Network.capacity_schedule(link)` gives a link's capacity over time and
`Network.at(t_s)` the network with the capacities at time t_s and no schedules. The packet
simulator follows schedules; max-min and the fluid models take one capacity per link and refuse
a network with schedules (`Network.require_fixed_capacities`): give them `network.at(t_s)`.

Validation raises `fluidcc.errors.NetworkError` (a `ParameterError`) naming the offending link or
flow and the field: unknown link in a route or reverse route, empty route, repeated link in a
route or reverse route, capacity <= 0, negative delay or buffer, only one of from and to, a link
from a node to itself, schedule times not finite, negative or not increasing, schedule
capacities <= 0, weight <= 0, stop before start, duplicate names.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .errors import NetworkError, UnitError
from .units import DEFAULT_PACKET_BYTES, parse_number, parse_rate, parse_time


@dataclass(frozen=True)
class Link:
    """A unidirectional link.

    name: unique name; capacity_pps: capacity in packets/s, > 0 (with a schedule: the capacity
    before its first entry); delay_s: one-way propagation delay in seconds, >= 0;
    buffer_packets: buffer size in packets (None: not given, the packet simulator then uses one
    bandwidth-delay product); source / target: the names of the nodes the link goes from and to
    (file keys `from` and `to`; both or neither; they define reverse links, see the module
    docstring); schedule: pairs (time_s, capacity_pps): from time_s on the capacity is
    capacity_pps; times finite, >= 0 and strictly increasing, capacities finite and > 0.
    """

    name: str
    capacity_pps: float
    delay_s: float = 0.0
    buffer_packets: float | None = None
    source: str | None = None
    target: str | None = None
    schedule: tuple[tuple[float, float], ...] = ()

    def __post_init__(self):
        where = f"link {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise NetworkError("links.name", self.name, "a non-empty string")
        _require(math.isfinite(self.capacity_pps) and self.capacity_pps > 0, where, "capacity",
                 self.capacity_pps, "a finite capacity > 0 packets/s")
        _require(math.isfinite(self.delay_s) and self.delay_s >= 0, where, "delay", self.delay_s,
                 "a finite one-way delay >= 0 s")
        if self.buffer_packets is not None:
            _require(math.isfinite(self.buffer_packets) and self.buffer_packets >= 0, where, "buffer",
                     self.buffer_packets, "a finite buffer >= 0 packets")
        for key, node in (("from", self.source), ("to", self.target)):
            _require(node is None or (isinstance(node, str) and node != ""), where, key, node,
                     "a node name (a non-empty string)")
        if (self.source is None) != (self.target is None):
            missing, given, node = ("to", "from", self.source) if self.target is None else ("from", "to", self.target)
            _require(False, where, missing, None,
                     f"a node name: give both from and to, or neither ({given} = {node!r} is given)")
        _require(self.source is None or self.source != self.target, where, "to", self.target,
                 f"a node other than from ({self.source!r}): a link joins two different nodes")
        object.__setattr__(self, "schedule", _checked_schedule(self.schedule, where))

    def capacity_at(self, t_s: float) -> float:
        """The capacity in packets/s at time t_s (seconds): the last schedule entry at or before
        t_s, else `capacity_pps`."""
        t = _finite_time("t_s", t_s)
        capacity = self.capacity_pps
        for time_s, scheduled_pps in self.schedule:
            if time_s > t:
                break
            capacity = scheduled_pps
        return capacity


@dataclass(frozen=True)
class Flow:
    """A flow along an ordered route of links.

    name: unique name; route: link names in the order the packets cross them (non-empty, no
    link twice); access_delay_s: one-way delay outside the listed links, seconds, >= 0;
    weight: weight in weighted max-min fairness, > 0; start_s / stop_s: when the flow sends,
    seconds (stop_s = inf: until the end), stop after start; demand_pps: the most the flow
    wants to send, packets/s (inf: no cap); interface_pps: the rate of the sender's network
    interface, packets/s, finite and > 0, used by the packet simulator only (a source sends no
    faster; None: as fast as its first link, which then paces it); reverse_route: the links its
    ACKs cross, in order (non-empty, no link twice; None: the default of
    `Network.reverse_route_indices`).
    """

    name: str
    route: tuple[str, ...]
    access_delay_s: float = 0.0
    weight: float = 1.0
    start_s: float = 0.0
    stop_s: float = math.inf
    demand_pps: float = math.inf
    interface_pps: float | None = None
    reverse_route: tuple[str, ...] | None = None

    def __post_init__(self):
        where = f"flow {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise NetworkError("flows.name", self.name, "a non-empty string")
        if isinstance(self.route, str):
            object.__setattr__(self, "route", (self.route,))
        object.__setattr__(self, "route", tuple(self.route))
        _require(len(self.route) > 0, where, "route", list(self.route), "a non-empty list of link names")
        seen = set()
        for link in self.route:
            _require(link not in seen, where, "route", list(self.route),
                     f"each link at most once (link {link!r} is repeated)")
            seen.add(link)
        _require(math.isfinite(self.access_delay_s) and self.access_delay_s >= 0, where, "access_delay",
                 self.access_delay_s, "a finite one-way delay >= 0 s")
        _require(math.isfinite(self.weight) and self.weight > 0, where, "weight", self.weight,
                 "a finite weight > 0")
        _require(math.isfinite(self.start_s) and self.start_s >= 0, where, "start", self.start_s,
                 "a finite start time >= 0 s")
        _require(not math.isnan(self.stop_s) and self.stop_s > self.start_s, where, "stop", self.stop_s,
                 f"a stop time after the start ({self.start_s} s)")
        _require(not math.isnan(self.demand_pps) and self.demand_pps > 0, where, "demand", self.demand_pps,
                 "a demand > 0 packets/s (inf: no cap)")
        if self.interface_pps is not None:
            _require(math.isfinite(self.interface_pps) and self.interface_pps > 0, where, "interface",
                     self.interface_pps, "a finite interface rate > 0 packets/s (or none: its first link's)")
        if self.reverse_route is not None:
            if isinstance(self.reverse_route, str):
                object.__setattr__(self, "reverse_route", (self.reverse_route,))
            object.__setattr__(self, "reverse_route", tuple(self.reverse_route))
            _require(len(self.reverse_route) > 0, where, "reverse_route", [],
                     "a non-empty list of link names (or none: the default reverse path)")
            seen = set()
            for link in self.reverse_route:
                _require(isinstance(link, str), where, "reverse_route", list(self.reverse_route),
                         "a list of link names")
                _require(link not in seen, where, "reverse_route", list(self.reverse_route),
                         f"each link at most once (link {link!r} is repeated)")
                seen.add(link)


@dataclass(frozen=True)
class Network:
    """Links and the flows routed over them. Immutable and hashable (models keep it as static data).

    Build it from `Link` and `Flow` objects, from a mapping (`Network.from_dict`) or from a file
    (`Network.load`). Flows and links keep the order they are given in; arrays over flows or links
    use that order. packet_bytes: the packet size the description was written in (what Mb/s
    figures of its rates use); every quantity inside is in packets already.
    """

    links: tuple[Link, ...]
    flows: tuple[Flow, ...]
    packet_bytes: int = DEFAULT_PACKET_BYTES
    _link_index: Mapping[str, int] = field(init=False, repr=False, compare=False, hash=False)
    _reverse_links: tuple[int | None, ...] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self):
        object.__setattr__(self, "links", tuple(self.links))
        object.__setattr__(self, "flows", tuple(self.flows))
        if not self.links:
            raise NetworkError("links", [], "at least one link")
        if not self.flows:
            raise NetworkError("flows", [], "at least one flow")
        if isinstance(self.packet_bytes, bool) or not isinstance(self.packet_bytes, int) or self.packet_bytes <= 0:
            raise NetworkError("packet_bytes", self.packet_bytes, "a whole number of bytes > 0")
        index: dict[str, int] = {}
        for i, link in enumerate(self.links):
            if not isinstance(link, Link):
                raise NetworkError(f"links[{i}]", link, "a fluidcc.network.Link")
            if link.name in index:
                raise NetworkError("links.name", link.name, "unique link names (this one is repeated)")
            index[link.name] = i
        names = set()
        for i, flow in enumerate(self.flows):
            if not isinstance(flow, Flow):
                raise NetworkError(f"flows[{i}]", flow, "a fluidcc.network.Flow")
            if flow.name in names:
                raise NetworkError("flows.name", flow.name, "unique flow names (this one is repeated)")
            names.add(flow.name)
            for key, route in (("route", flow.route), ("reverse_route", flow.reverse_route or ())):
                for link in route:
                    if link not in index:
                        raise NetworkError(f"flow {flow.name!r}: {key}", link,
                                           f"a link of the network ({', '.join(sorted(index))})")
        object.__setattr__(self, "_link_index", index)
        by_endpoints: dict[tuple[str, str], list[int]] = {}
        for l, link in enumerate(self.links):
            if link.source is not None:
                by_endpoints.setdefault((link.source, link.target), []).append(l)
        reverse_links = []
        for link in self.links:
            candidates = by_endpoints.get((link.target, link.source), []) if link.source is not None else []
            reverse_links.append(candidates[0] if len(candidates) == 1 else None)
        object.__setattr__(self, "_reverse_links", tuple(reverse_links))

    # ----------------------------------------------------------------------------------- sizes
    @property
    def n_links(self) -> int:
        return len(self.links)

    @property
    def n_flows(self) -> int:
        return len(self.flows)

    @property
    def link_names(self) -> list[str]:
        return [link.name for link in self.links]

    @property
    def flow_names(self) -> list[str]:
        return [flow.name for flow in self.flows]

    def link_index(self, name: str) -> int:
        """Position of link `name` in `links`."""
        try:
            return self._link_index[name]
        except KeyError:
            raise NetworkError("link", name, f"a link of the network ({', '.join(self.link_names)})") from None

    def flow_index(self, name: str) -> int:
        """Position of flow `name` in `flows`."""
        for i, flow in enumerate(self.flows):
            if flow.name == name:
                return i
        raise NetworkError("flow", name, f"a flow of the network ({', '.join(self.flow_names)})")

    # ---------------------------------------------------------------------------------- arrays
    @property
    def routing_matrix(self) -> np.ndarray:
        """R of shape (L, N): R[l, i] = 1 when flow i crosses link l (float64)."""
        matrix = np.zeros((self.n_links, self.n_flows))
        for i, flow in enumerate(self.flows):
            for name in flow.route:
                matrix[self._link_index[name], i] = 1.0
        return matrix

    @property
    def capacities_pps(self) -> np.ndarray:
        """Link capacities in packets/s, shape (L,); of a link with a schedule, the capacity before
        its first entry (`capacity_schedule` gives the rest, `at(t_s)` the capacities at t_s)."""
        return np.array([link.capacity_pps for link in self.links])

    @property
    def has_schedules(self) -> bool:
        """Whether some link's capacity changes over time (has a schedule)."""
        return any(link.schedule for link in self.links)

    def capacity_schedule(self, link: int | str) -> tuple[np.ndarray, np.ndarray]:
        """(times_s, capacities_pps) of a link, float64 arrays of one length: from times_s[k] on
        (seconds) the capacity is capacities_pps[k] (packets/s). times_s[0] == 0.0 and times_s
        increase strictly; a link without a schedule has one entry, its capacity."""
        entry = self.links[self.link_index(link) if isinstance(link, str) else link]
        pairs = [(0.0, entry.capacity_pps), *entry.schedule]
        if len(pairs) > 1 and pairs[1][0] == 0.0:  # an entry at 0 replaces the base capacity
            pairs.pop(0)
        times, capacities = zip(*pairs)
        return np.array(times, dtype=np.float64), np.array(capacities, dtype=np.float64)

    def at(self, t_s: float) -> "Network":
        """The network at time t_s (seconds): each link's capacity then (`Link.capacity_at`), no
        schedules; all else unchanged. For max-min and the fluid models, which take one capacity
        per link."""
        t = _finite_time("t_s", t_s)
        links = tuple(dataclasses.replace(link, capacity_pps=link.capacity_at(t), schedule=()) for link in self.links)
        return Network(links, self.flows, self.packet_bytes)

    def require_fixed_capacities(self, user: str) -> None:
        """Raise `NetworkError` naming the first link with a schedule, for `user` (what takes one
        capacity per link, e.g. "max-min"), which would otherwise use the capacities before the
        schedules start without saying so."""
        for link in self.links:
            if link.schedule:
                raise NetworkError(f"link {link.name!r}: schedule", link.schedule,
                                   f"no capacity schedule: {user} takes one capacity per link; give it "
                                   "network.at(t_s), the network with the capacities at time t_s")

    @property
    def link_delays_s(self) -> np.ndarray:
        """One-way propagation delays of the links in seconds, shape (L,)."""
        return np.array([link.delay_s for link in self.links])

    @property
    def weights(self) -> np.ndarray:
        """Max-min weights of the flows, shape (N,)."""
        return np.array([flow.weight for flow in self.flows])

    @property
    def demands_pps(self) -> np.ndarray:
        """Demand caps of the flows in packets/s (inf: no cap), shape (N,)."""
        return np.array([flow.demand_pps for flow in self.flows])

    @property
    def start_s(self) -> np.ndarray:
        return np.array([flow.start_s for flow in self.flows])

    @property
    def stop_s(self) -> np.ndarray:
        return np.array([flow.stop_s for flow in self.flows])

    @property
    def rtt_s(self) -> np.ndarray:
        """Round-trip propagation delay of each flow in seconds, shape (N,): 2 access delay + the
        one-way delays of its route's links + those of its reverse path (`reverse_route_indices`;
        the route's again when that is None)."""
        delays = self.link_delays_s
        rtts = []
        for i, flow in enumerate(self.flows):
            forward = sum(delays[l] for l in self.route_indices(i))
            reverse = self.reverse_route_indices(i)
            if reverse is None:
                rtts.append(2.0 * (flow.access_delay_s + forward))
            else:
                rtts.append(2.0 * flow.access_delay_s + forward + sum(delays[l] for l in reverse))
        return np.array(rtts, dtype=np.float64)

    def route_indices(self, flow: int | str) -> list[int]:
        """Link positions on a flow's route, in the order crossed."""
        i = self.flow_index(flow) if isinstance(flow, str) else flow
        return [self._link_index[name] for name in self.flows[i].route]

    def reverse_link_index(self, link: int | str) -> int | None:
        """Position of a link's reverse: the one link from its `to` node to its `from` node (None
        when the link has no endpoints, or no link or several links fit)."""
        return self._reverse_links[self.link_index(link) if isinstance(link, str) else link]

    def reverse_route_indices(self, flow: int | str) -> list[int] | None:
        """Link positions of the path a flow's ACKs cross, in order: its `reverse_route` if given;
        else the reverses of its route's links in the opposite order, when every one has a reverse
        (`reverse_link_index`); else None: the ACKs return over an uncongested path of fixed
        delay (the route's delays)."""
        i = self.flow_index(flow) if isinstance(flow, str) else flow
        explicit = self.flows[i].reverse_route
        if explicit is not None:
            return [self._link_index[name] for name in explicit]
        reverses = [self._reverse_links[l] for l in reversed(self.route_indices(i))]
        return None if any(l is None for l in reverses) else reverses

    def flows_on(self, link: int | str) -> list[int]:
        """Positions of the flows that cross a link."""
        l = self.link_index(link) if isinstance(link, str) else link
        name = self.links[l].name
        return [i for i, flow in enumerate(self.flows) if name in flow.route]

    def active(self, t: float) -> np.ndarray:
        """Which flows send at time t (seconds): start <= t < stop, bool shape (N,)."""
        return (self.start_s <= t) & (t < self.stop_s)

    def phases(self) -> list[tuple[float, float]]:
        """The intervals [t_k, t_{k+1}) between consecutive start and stop times (last one open)."""
        times = sorted({0.0, *self.start_s.tolist(), *(s for s in self.stop_s.tolist() if math.isfinite(s))})
        return list(zip(times, times[1:] + [math.inf]))

    def link_load(self, rates_pps) -> np.ndarray:
        """Traffic offered to each link, packets/s: R @ rates (rates shape (..., N) -> (..., L))."""
        return np.asarray(rates_pps, dtype=np.float64) @ self.routing_matrix.T

    def utilization(self, rates_pps) -> np.ndarray:
        """Offered traffic over capacity per link, shape (..., L) (no schedules: see `at`)."""
        self.require_fixed_capacities("Network.utilization")
        return self.link_load(rates_pps) / self.capacities_pps

    def bottlenecks(self, rates_pps, rtol: float = 1e-9) -> list[list[int]]:
        """Each flow's bottleneck links under an allocation (the max-min characterization).

        Link l is a bottleneck of flow i when it is saturated (load >= capacity (1 - rtol)) and
        no flow on it has a larger weighted rate rate_j / weight_j than flow i (within rtol).
        A flow held at its demand has none. Returns a list of link positions per flow. No
        schedules: see `at`.
        """
        self.require_fixed_capacities("Network.bottlenecks")
        rates = np.asarray(rates_pps, dtype=np.float64)
        if rates.shape != (self.n_flows,):
            raise NetworkError("rates", f"shape {rates.shape}", f"one rate per flow, shape ({self.n_flows},)")
        load = self.link_load(rates)
        saturated = load >= self.capacities_pps * (1.0 - rtol)
        share = rates / self.weights
        result = []
        for i in range(self.n_flows):
            found = []
            for l in self.route_indices(i):
                others = self.flows_on(l)
                if saturated[l] and share[i] >= max(share[others]) * (1.0 - rtol):
                    found.append(l)
            result.append(found)
        return result

    def replace(self, *, capacities_pps: Sequence[float] | None = None, flows: Iterable[Flow] | None = None,
                links: Iterable[Link] | None = None) -> "Network":
        """A copy with new link capacities (in link order; a link's schedule, endpoints and
        other fields are kept), new flows or new links."""
        new_links = tuple(links) if links is not None else self.links
        if capacities_pps is not None:
            caps = list(capacities_pps)
            if len(caps) != len(new_links):
                raise NetworkError("capacities", f"{len(caps)} values", f"one capacity per link ({len(new_links)})")
            new_links = tuple(dataclasses.replace(l, capacity_pps=float(c)) for l, c in zip(new_links, caps))
        return Network(new_links, tuple(flows) if flows is not None else self.flows, self.packet_bytes)

    # ------------------------------------------------------------------------------- files
    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Network":
        """Build from a mapping with the keys of the file format (module docstring)."""
        if not isinstance(data, Mapping):
            raise NetworkError("network", type(data).__name__, "a table with 'links' and 'flows'")
        unknown = set(data) - {"links", "flows", "packet_bytes", "name", "description"}
        if unknown:
            raise NetworkError("network", sorted(unknown)[0], "keys among links, flows, packet_bytes, name, description")
        packet_bytes = data.get("packet_bytes", DEFAULT_PACKET_BYTES)
        if (isinstance(packet_bytes, bool) or not isinstance(packet_bytes, (int, float))
                or not math.isfinite(packet_bytes) or packet_bytes != int(packet_bytes) or packet_bytes <= 0):
            raise NetworkError("packet_bytes", packet_bytes, "a whole number of bytes > 0")
        packet_bytes = int(packet_bytes)
        links = [_link_from(entry, i, packet_bytes) for i, entry in enumerate(_list(data, "links"))]
        flows: list[Flow] = []
        for i, entry in enumerate(_list(data, "flows")):
            flows.extend(_flows_from(entry, i, packet_bytes))
        return cls(tuple(links), tuple(flows), packet_bytes)

    @classmethod
    def load(cls, path: str | Path) -> "Network":
        """Read a network from a .toml or .json file."""
        path = Path(path)
        if not path.is_file():
            raise NetworkError("network file", str(path), "an existing .toml or .json file")
        suffix = path.suffix.lower()
        try:
            if suffix == ".toml":
                data = toml_loads(path.read_text())
            elif suffix == ".json":
                data = json.loads(path.read_text())
            else:
                raise NetworkError("network file", str(path), "a file ending in .toml or .json")
        except (ValueError, TypeError) as error:
            if isinstance(error, NetworkError):
                raise
            raise NetworkError("network file", str(path), f"valid {suffix[1:].upper()} ({error})") from None
        return cls.from_dict(data)

    def to_dict(self) -> dict[str, Any]:
        """The file format's mapping in SI numbers (packets/s, seconds); inverse of `from_dict`."""
        links = []
        for link in self.links:
            entry: dict[str, Any] = {"name": link.name, "capacity": link.capacity_pps, "delay": link.delay_s}
            if link.buffer_packets is not None:
                entry["buffer"] = link.buffer_packets
            if link.source is not None:
                entry["from"], entry["to"] = link.source, link.target
            if link.schedule:
                entry["schedule"] = [{"at": time_s, "capacity": capacity_pps} for time_s, capacity_pps in link.schedule]
            links.append(entry)
        flows = []
        for flow in self.flows:
            entry = {"name": flow.name, "route": list(flow.route), "access_delay": flow.access_delay_s,
                     "weight": flow.weight, "start": flow.start_s}
            if math.isfinite(flow.stop_s):
                entry["stop"] = flow.stop_s
            if math.isfinite(flow.demand_pps):
                entry["demand"] = flow.demand_pps
            if flow.interface_pps is not None:
                entry["interface"] = flow.interface_pps
            if flow.reverse_route is not None:
                entry["reverse_route"] = list(flow.reverse_route)
            flows.append(entry)
        data: dict[str, Any] = {"links": links, "flows": flows}
        if self.packet_bytes != DEFAULT_PACKET_BYTES:
            data["packet_bytes"] = self.packet_bytes
        return data

    def save(self, path: str | Path) -> Path:
        """Write the network as JSON (.json) or TOML (.toml)."""
        path = Path(path)
        data = self.to_dict()
        if path.suffix.lower() == ".json":
            path.write_text(json.dumps(data, indent=2) + "\n")
        elif path.suffix.lower() == ".toml":
            path.write_text(_toml_dumps(data))
        else:
            raise NetworkError("path", str(path), "a file name ending in .toml or .json")
        return path


# ----------------------------------------------------------------------------------- helpers
def _require(ok: bool, where: str, field_name: str, value, allowed: str) -> None:
    if not ok:
        raise NetworkError(f"{where}: {field_name}", value, allowed)


def _finite_time(field_name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise NetworkError(field_name, value, "a finite time in seconds")
    return float(value)


def _checked_schedule(schedule, where: str) -> tuple[tuple[float, float], ...]:
    """The schedule as a tuple of (time_s, capacity_pps) float pairs, checked."""
    if isinstance(schedule, (str, bytes, Mapping)) or not isinstance(schedule, Iterable):
        raise NetworkError(f"{where}: schedule", schedule, "a sequence of (time_s, capacity_pps) pairs")
    checked: list[tuple[float, float]] = []
    for k, entry in enumerate(schedule):
        pair = tuple(entry) if isinstance(entry, (tuple, list, np.ndarray)) else None
        if pair is None or len(pair) != 2 or not all(
                isinstance(v, numbers.Real) and not isinstance(v, bool) for v in pair):
            raise NetworkError(f"{where}: schedule[{k}]", entry, "a pair (time_s, capacity_pps) of numbers")
        time_s, capacity_pps = float(pair[0]), float(pair[1])
        _require(math.isfinite(time_s) and time_s >= 0, where, f"schedule[{k}].at", time_s, "a finite time >= 0 s")
        if checked:
            _require(time_s > checked[-1][0], where, f"schedule[{k}].at", time_s,
                     f"a time after the previous entry's ({checked[-1][0]} s): times strictly increasing")
        _require(math.isfinite(capacity_pps) and capacity_pps > 0, where, f"schedule[{k}].capacity", capacity_pps,
                 "a finite capacity > 0 packets/s")
        checked.append((time_s, capacity_pps))
    return tuple(checked)


def _list(data: Mapping[str, Any], key: str) -> list:
    value = data.get(key)
    if not isinstance(value, list) or not value:
        raise NetworkError(key, value, f"a non-empty list of {key} tables")
    return value


def _check_keys(entry: Mapping[str, Any], where: str, allowed: set[str]) -> None:
    if not isinstance(entry, Mapping):
        raise NetworkError(where, entry, "a table of keys")
    unknown = set(entry) - allowed
    if unknown:
        raise NetworkError(f"{where}: key", sorted(unknown)[0], f"keys among {', '.join(sorted(allowed))}")


def _quantity(parse, where: str, key: str, value, *args) -> float:
    try:
        return parse(f"{where}: {key}", value, *args)
    except UnitError as error:
        raise NetworkError(error.field, error.value, error.allowed) from None
    except (TypeError, ValueError):
        raise NetworkError(f"{where}: {key}", value, "a number or a string with a unit") from None


def _link_from(entry, i: int, packet_bytes: int) -> Link:
    where = f"link {entry.get('name', i)!r}" if isinstance(entry, Mapping) else f"links[{i}]"
    _check_keys(entry, where, {"name", "capacity", "delay", "buffer", "from", "to", "schedule"})
    if "capacity" not in entry:
        raise NetworkError(f"{where}: capacity", None, "a capacity (e.g. 100Mbps, or packets/s)")
    buffer = entry.get("buffer")
    return Link(
        name=str(entry.get("name", f"link{i}")),
        capacity_pps=_quantity(parse_rate, where, "capacity", entry["capacity"], packet_bytes),
        delay_s=_quantity(parse_time, where, "delay", entry.get("delay", 0.0)),
        buffer_packets=None if buffer is None else _quantity(parse_number, where, "buffer", buffer),
        source=entry.get("from"),
        target=entry.get("to"),
        schedule=_schedule_from(entry.get("schedule", []), where, packet_bytes),
    )


def _schedule_from(value, where: str, packet_bytes: int) -> tuple[tuple[float, float], ...]:
    """A file's schedule, a list of tables {at = TIME, capacity = RATE}, as (time_s, capacity_pps) pairs."""
    if not isinstance(value, list):
        raise NetworkError(f"{where}: schedule", value, "a list of tables {at = TIME, capacity = RATE}")
    pairs = []
    for k, item in enumerate(value):
        key = f"schedule[{k}]"
        _check_keys(item, f"{where}: {key}", {"at", "capacity"})
        for name, allowed in (("at", "a time (e.g. 10s, or seconds)"),
                              ("capacity", "a capacity (e.g. 20Mbps, or packets/s)")):
            if name not in item:
                raise NetworkError(f"{where}: {key}.{name}", None, allowed)
        pairs.append((_quantity(parse_time, where, f"{key}.at", item["at"]),
                      _quantity(parse_rate, where, f"{key}.capacity", item["capacity"], packet_bytes)))
    return tuple(pairs)


def _flows_from(entry, i: int, packet_bytes: int) -> list[Flow]:
    where = f"flow {entry.get('name', i)!r}" if isinstance(entry, Mapping) else f"flows[{i}]"
    _check_keys(entry, where, {"name", "route", "access_delay", "weight", "start", "stop", "demand", "interface",
                               "reverse_route", "count"})
    route = _names(entry.get("route"), where, "route")
    reverse_route = entry.get("reverse_route")
    stop = entry.get("stop")
    demand = entry.get("demand")
    interface = entry.get("interface")
    common = dict(
        route=tuple(route),
        access_delay_s=_quantity(parse_time, where, "access_delay", entry.get("access_delay", 0.0)),
        weight=_quantity(parse_number, where, "weight", entry.get("weight", 1.0)),
        start_s=_quantity(parse_time, where, "start", entry.get("start", 0.0)),
        stop_s=math.inf if stop is None else _quantity(parse_time, where, "stop", stop),
        demand_pps=math.inf if demand is None else _quantity(parse_rate, where, "demand", demand, packet_bytes),
        interface_pps=None if interface is None else _quantity(parse_rate, where, "interface", interface, packet_bytes),
        reverse_route=None if reverse_route is None else tuple(_names(reverse_route, where, "reverse_route")),
    )
    name = str(entry.get("name", f"flow{i}"))
    count = entry.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise NetworkError(f"{where}: count", count, "a whole number >= 1")
    if count == 1:
        return [Flow(name=name, **common)]
    return [Flow(name=f"{name}[{k}]", **common) for k in range(count)]


def _names(value, where: str, key: str) -> list[str]:
    """A file's list of link names (one name alone is a list of one)."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise NetworkError(f"{where}: {key}", value, "a list of link names")
    return value


def toml_loads(text: str) -> Any:
    """Parse TOML text (tomllib, or tomli before Python 3.11); a syntax error is a ValueError."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(str(error)) from None


def _toml_value(value) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):  # an inline table (keys are bare words)
        return "{" + ", ".join(f"{key} = {_toml_value(v)}" for key, v in value.items()) + "}"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def _toml_dumps(data: Mapping[str, Any]) -> str:
    lines = [f"{key} = {_toml_value(value)}" for key, value in data.items() if key not in ("links", "flows")]
    if lines:
        lines.append("")
    for table in ("links", "flows"):
        for entry in data[table]:
            lines.append(f"[[{table}]]")
            lines.extend(f"{key} = {_toml_value(value)}" for key, value in entry.items())
            lines.append("")
    return "\n".join(lines)
