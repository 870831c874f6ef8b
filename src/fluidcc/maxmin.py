"""Weighted max-min fairness by progressive filling (water-filling), in packets per second.

Entry points
------------
* `maxmin(network, ...)`: every flow of the network, float64 (NumPy) or exact (`exact=True`,
  `fractions.Fraction`); returns a `MaxMinResult` (rates, bottleneck links, link loads).
* `maxmin_at(network, t)`: the flows active at time t (start <= t < stop) share the links;
  the others get rate 0.
* `maxmin_batch(network, capacities_pps)`: one topology, a batch of capacity vectors (B, L),
  jitted and vmapped with JAX, chunked over the batch; returns rates (B, N).
* `maxmin_sympy(network)`: the same allocation computed another way (a sequence of exact linear
  programs in SymPy rationals); slow, for tests on small networks.

Units: capacities, demands and rates in packets per second (1 packet = 1000 bytes unless a file
says otherwise); weights are dimensionless.

The characterization (Bertsekas & Gallager, *Data Networks*, 2nd ed., section 6.5.2): a feasible
allocation (no link loaded beyond its capacity) is max-min fair if and only if every flow has a
*bottleneck link*: a link that is saturated (load = capacity) and on which no flow has a larger
rate. Weighted max-min fairness compares weighted rates rate_i / weight_i instead of rates, and
with demands a flow sending at its demand needs no bottleneck. The allocation is unique.

Progressive filling computes it: all unfrozen flows grow together in proportion to their weights,
rate_i = weight_i * level, as the common level rises from 0. A link saturates when its load
reaches its capacity; every unfrozen flow crossing it freezes at its current rate. A flow whose
demand is reached first freezes at its demand. The filling stops when every flow is frozen. Each
step jumps straight to the next event: for link l with frozen load F_l and unfrozen weight W_l,
the level at which it saturates is (c_l - F_l) / W_l, and for an unfrozen flow the level at which
its demand is met is demand_i / weight_i; the next level is the smallest of these. Each step
freezes at least one flow, and without demands saturates at least one link, so there are at most
min(L, N) steps (at most N with demands). Flows crossing a saturated link freeze at the link's
level even if their demand is met at the same level (their bottleneck is then reported).

In `maxmin`'s float64 mode two events closer than a relative 1e-12 are taken as simultaneous; in
exact mode ties are exact; `maxmin_batch` takes simultaneous events one after the other at the
same level (same rates, up to rounding).

Time plays no part in `maxmin`, which considers every flow of the network: to share the links
among some flows only, build a sub-network (``network.replace(flows=...)``) or call `maxmin_at`.

Capacity schedules: `maxmin_at(network, t)` uses each link's capacity at time t. The functions
without a time (`maxmin`, `is_maxmin_fair`, `maxmin_sympy`) refuse a network with schedules
unless `capacities_pps` is given (give them ``network.at(t_s)``); `maxmin_batch` always takes its
capacities from the caller.
"""

from __future__ import annotations

import functools
import itertools
import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from . import _jax_setup  # noqa: F401  (float64 in JAX, one CPU device per core)
from .errors import NetworkError, ParameterError, ShapeError, SolverError
from .network import Network
from .units import DEFAULT_PACKET_BYTES

import jax  # noqa: E402  (after _jax_setup has configured it)
import jax.numpy as jnp  # noqa: E402

__all__ = ["MaxMinResult", "allocation_rows", "maxmin", "maxmin_at", "maxmin_batch", "maxmin_sympy", "is_maxmin_fair",
           "write_allocation"]

#: Two saturation (or demand) levels within this relative distance are one event (float modes).
TIE_RTOL = 1e-12
#: A link counts as saturated, and a weighted rate as the largest on a link, within this relative
#: tolerance when bottlenecks are read off a float64 allocation.
BOTTLENECK_RTOL = 1e-9
#: Capacity vectors per call of the jitted batch kernel (chunks alternate between the devices):
#: small enough that the kernel's (chunk, N) arrays stay in the CPU's cache. Chosen among the
#: chunk sizes compared in benchmarks/RESULTS.md, "Max-min fairness (issue: Networks)".
BATCH_CHUNK = 256


@dataclass(frozen=True, eq=False)
class MaxMinResult:
    """A max-min fair allocation and where it is decided.

    rates_pps: rate of each flow, packets/s, shape (N,) (float64, or an object array of
        `Fraction` in exact mode); 0 for a flow that is not active.
    bottlenecks: for each flow, its bottleneck links (positions in `link_names`), in route order:
        saturated links of its route on which its weighted rate rate / weight is the largest.
        Empty for a flow held at its demand and for an inactive flow.
    limited_by_demand: bool (N,), the flow sends its whole demand.
    link_load_pps: traffic on each link, packets/s, shape (L,).
    utilization: load over capacity per link, shape (L,).
    capacities_pps: the link capacities used, packets/s, shape (L,).
    active: bool (N,), the flows that took part (all, except in `maxmin_at`).
    exact: True when the numbers are `Fraction`s.
    """

    rates_pps: np.ndarray
    bottlenecks: list[list[int]]
    limited_by_demand: np.ndarray
    link_load_pps: np.ndarray
    utilization: np.ndarray
    capacities_pps: np.ndarray
    flow_names: list[str]
    link_names: list[str]
    active: np.ndarray
    exact: bool = False

    def rate(self, flow: str) -> Any:
        """The rate of the flow named `flow`, packets/s."""
        try:
            return self.rates_pps[self.flow_names.index(flow)]
        except ValueError:
            raise ParameterError("flow", flow, f"a flow of the network ({', '.join(self.flow_names)})") from None

    def bottleneck_names(self, flow: int) -> list[str]:
        """Names of the bottleneck links of flow number `flow`."""
        return [self.link_names[l] for l in self.bottlenecks[flow]]

    def table(self, packet_bytes: int = DEFAULT_PACKET_BYTES) -> list[tuple[str, Any, Any, list[str]]]:
        """One row per flow: (name, rate in packets/s, rate in Mb/s, bottleneck link names).

        Exact results keep `Fraction`s in both rate columns; Mb/s uses `packet_bytes` per packet.
        """
        to_mbps = Fraction(8 * packet_bytes, 10**6) if self.exact else 8.0 * packet_bytes / 1e6
        return [(name, rate, rate * to_mbps, self.bottleneck_names(i))
                for i, (name, rate) in enumerate(zip(self.flow_names, self.rates_pps))]

    def link_table(self, packet_bytes: int = DEFAULT_PACKET_BYTES) -> list[tuple[str, Any, Any, Any]]:
        """One row per link: (name, load in packets/s, load in Mb/s, utilization)."""
        to_mbps = Fraction(8 * packet_bytes, 10**6) if self.exact else 8.0 * packet_bytes / 1e6
        return [(name, load, load * to_mbps, util)
                for name, load, util in zip(self.link_names, self.link_load_pps, self.utilization)]


# --------------------------------------------------------------------------------- topology
class _Topology:
    """The arrays of a network that water-filling needs, built once per call.

    routes: link positions of each flow in route order; pair_link / pair_flow: the (link, flow)
    pairs in that order, flow by flow; routing: R of shape (L, N), R[l, i] = 1 when flow i
    crosses link l; link_flows: the flows of each link.
    """

    def __init__(self, network: Network):
        if not isinstance(network, Network):
            raise NetworkError("network", type(network).__name__, "a fluidcc.network.Network")
        self.network = network
        index = {link.name: l for l, link in enumerate(network.links)}
        self.routes = [[index[name] for name in flow.route] for flow in network.flows]
        n_links, n_flows = network.n_links, network.n_flows
        self.route_lengths = np.fromiter(map(len, self.routes), dtype=np.intp, count=n_flows)
        self.pair_link = np.fromiter(itertools.chain.from_iterable(self.routes), dtype=np.intp,
                                     count=int(self.route_lengths.sum()))
        self.pair_flow = np.repeat(np.arange(n_flows), self.route_lengths)
        self.routing = np.zeros((n_links, n_flows))
        self.routing[self.pair_link, self.pair_flow] = 1.0
        order = np.argsort(self.pair_link, kind="stable")
        bounds = np.cumsum(np.bincount(self.pair_link, minlength=n_links))[:-1]
        self.link_flows = np.split(self.pair_flow[order], bounds)

    def link_sums(self, values: np.ndarray) -> np.ndarray:
        """sum over the flows of each link; exact (object arrays) or float64."""
        if values.dtype == object:
            return _object_array([sum(values[idx], Fraction(0)) for idx in self.link_flows])
        return self.routing @ values

    def per_flow(self, is_bottleneck: np.ndarray) -> list[list[int]]:
        """The links l of each flow's route (in route order) where is_bottleneck[l, i]."""
        keep = is_bottleneck[self.pair_link, self.pair_flow]
        kept = iter(self.pair_link[keep].tolist())
        starts = np.cumsum(self.route_lengths) - self.route_lengths
        counts = np.add.reduceat(keep.astype(np.intp), starts).tolist()
        return [[next(kept) for _ in range(count)] for count in counts]


def _object_array(items) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = list(items)
    return out


# ------------------------------------------------------------------------------- validation
def _float_vector(values, field: str, names: list[str], kind: str) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(field, values, f"one number per {kind} ({len(names)})") from None
    if array.shape != (len(names),):
        raise ShapeError(field, f"shape {array.shape}", f"one value per {kind}, shape ({len(names)},)")
    return array


def _check_values(values: Sequence, field: str, names: list[str], kind: str, ok, allowed: str) -> None:
    for k, value in enumerate(values):
        if not ok(value):
            raise ParameterError(f"{field}[{k}] ({kind} {names[k]!r})", value, allowed)


def _positive_finite(value) -> bool:
    return value is not None and math.isfinite(value) and value > 0


def _positive_or_inf(value) -> bool:
    return value is None or (not math.isnan(value) and value > 0)


_CAPACITY_ALLOWED = "a finite capacity > 0 packets/s"
_WEIGHT_ALLOWED = "a finite weight > 0"
_DEMAND_ALLOWED = "a demand > 0 packets/s (inf: no cap)"


def _network_capacities(network: Network) -> np.ndarray:
    """The network's own capacities, packets/s (L,); refused when a link has a schedule, whose
    capacity depends on the time."""
    network.require_fixed_capacities("max-min at no particular time (maxmin_at(network, t_s) follows schedules)")
    return network.capacities_pps


def _float_inputs(topo: _Topology, capacities_pps, weights, demands_pps):
    net = topo.network
    caps = _network_capacities(net) if capacities_pps is None else _float_vector(
        capacities_pps, "capacities_pps", net.link_names, "link")
    w = net.weights if weights is None else _float_vector(weights, "weights", net.flow_names, "flow")
    d = net.demands_pps if demands_pps is None else _float_vector(demands_pps, "demands_pps", net.flow_names, "flow")
    if not (np.isfinite(caps) & (caps > 0)).all():
        _check_values(caps, "capacities_pps", net.link_names, "link", _positive_finite, _CAPACITY_ALLOWED)
    if not (np.isfinite(w) & (w > 0)).all():
        _check_values(w, "weights", net.flow_names, "flow", _positive_finite, _WEIGHT_ALLOWED)
    if not (d > 0).all():  # NaN fails too
        _check_values(d, "demands_pps", net.flow_names, "flow", _positive_or_inf, _DEMAND_ALLOWED)
    return caps, w, d


def _to_fraction(value, field: str, allow_inf: bool = False) -> Fraction | None:
    """An exact rational from a Fraction, int, float or string ('3/4', '1.5'); None for inf."""
    if isinstance(value, bool):
        raise ParameterError(field, value, "a number, not a boolean")
    if allow_inf and ((isinstance(value, numbers.Real) and not isinstance(value, numbers.Rational)
                       and math.isinf(value)) or (isinstance(value, str) and value.strip().lower() in ("inf", "+inf"))):
        return None
    try:
        if isinstance(value, numbers.Integral):
            return Fraction(int(value))
        if isinstance(value, numbers.Real) and not isinstance(value, numbers.Rational):
            return Fraction(float(value))
        return Fraction(value)
    except (TypeError, ValueError, OverflowError, ZeroDivisionError):
        raise ParameterError(field, value, "a finite rational number (int, float, Fraction or a string "
                                           "such as '3/4')" + (" or inf" if allow_inf else "")) from None


def _exact_vector(values, field: str, names: list[str], kind: str, allow_inf: bool = False) -> list:
    if isinstance(values, np.ndarray) and values.dtype != object:
        values = values.tolist()
    try:
        items = list(values)
    except TypeError:
        raise ParameterError(field, values, f"one number per {kind} ({len(names)})") from None
    if len(items) != len(names):
        raise ShapeError(field, f"{len(items)} values", f"one value per {kind} ({len(names)})")
    return [_to_fraction(v, f"{field}[{k}] ({kind} {names[k]!r})", allow_inf) for k, v in enumerate(items)]


def _exact_inputs(topo: _Topology, capacities_pps, weights, demands_pps):
    net = topo.network
    caps = _exact_vector(_network_capacities(net) if capacities_pps is None else capacities_pps, "capacities_pps",
                         net.link_names, "link")
    w = _exact_vector(net.weights if weights is None else weights, "weights", net.flow_names, "flow")
    d = _exact_vector(net.demands_pps if demands_pps is None else demands_pps, "demands_pps", net.flow_names,
                      "flow", allow_inf=True)
    _check_values(caps, "capacities_pps", net.link_names, "link", lambda v: v > 0, _CAPACITY_ALLOWED)
    _check_values(w, "weights", net.flow_names, "flow", lambda v: v > 0, _WEIGHT_ALLOWED)
    _check_values(d, "demands_pps", net.flow_names, "flow", lambda v: v is None or v > 0, _DEMAND_ALLOWED)
    capped = np.array([v is not None for v in d], dtype=bool)
    demands = _object_array([Fraction(0) if v is None else v for v in d])
    return _object_array(caps), _object_array(w), demands, capped


# --------------------------------------------------------------------------- water-filling
def _water_fill(topo: _Topology, caps, weights, demands, capped, active, tie_rtol):
    """Progressive filling on float64 arrays (tie_rtol > 0) or object arrays of Fraction (tie_rtol = 0).

    Returns (rates, limited_by_demand). Inactive flows are frozen at 0 from the start.
    """
    n = len(weights)
    exact = weights.dtype == object
    zero = Fraction(0) if exact else 0.0
    rates = _object_array([zero] * n) if exact else np.zeros(n)
    by_demand = np.zeros(n, dtype=bool)
    frozen = ~active
    demand_level = _object_array([d / w if c else zero for d, w, c in zip(demands, weights, capped)]) if exact \
        else demands / weights
    level = zero
    for _ in range(n + 1):
        if frozen.all():
            return rates, by_demand
        unfrozen = ~frozen
        if exact:
            growing_weight = topo.link_sums(np.where(unfrozen, weights, zero))
            frozen_load = topo.link_sums(np.where(frozen, rates, zero))
        else:  # both sums in one product (unfrozen flows still have rate 0)
            growing_weight, frozen_load = (topo.routing @ np.stack([np.where(unfrozen, weights, 0.0), rates], axis=1)).T
        growing = growing_weight > 0
        link_levels = (caps[growing] - frozen_load[growing]) / growing_weight[growing]
        waiting = unfrozen & capped
        candidates = [values.min() for values in (link_levels, demand_level[waiting]) if values.size]
        # Rounding can put a candidate a hair below the level already reached.
        level = max(level, min(candidates))
        limit = level * (1 + tie_rtol) if tie_rtol else level
        saturated = np.zeros(len(caps), dtype=bool)
        saturated[growing] = link_levels <= limit
        crosses = (saturated.astype(np.float64) @ topo.routing) > 0
        at_link = unfrozen & crosses
        at_demand = waiting & ~crosses & (demand_level <= limit)
        rates[at_link] = weights[at_link] * level
        rates[at_demand] = demands[at_demand]
        by_demand |= at_demand
        frozen = frozen | at_link | at_demand
    raise SolverError("water-filling did not freeze a flow at every step (please report this network)")


def _bottlenecks(topo: _Topology, rates, weights, load, caps, active, by_demand, rtol) -> list[list[int]]:
    """Saturated links of each flow's route on which its weighted rate is the largest."""
    share = rates / weights
    members = (topo.routing > 0) & active[None, :]
    if rates.dtype == object:  # exact: compare Fractions link by link
        is_bottleneck = np.zeros(members.shape, dtype=bool)
        for l, flows in enumerate(topo.link_flows):
            flows = flows[active[flows]]
            if flows.size and load[l] >= caps[l]:
                shares = share[flows]
                is_bottleneck[l, flows[shares == max(shares)]] = True
    else:
        largest = np.max(np.where(members, share[None, :], -np.inf), axis=1)
        saturated = load >= caps * (1 - rtol)
        is_bottleneck = members & saturated[:, None] & (share[None, :] >= largest[:, None] * (1 - rtol))
    is_bottleneck[:, by_demand | ~active] = False
    return topo.per_flow(is_bottleneck)


def _solve(network: Network, capacities_pps, weights, demands_pps, exact: bool, active) -> MaxMinResult:
    topo = _Topology(network)
    if active is None:
        active = np.ones(network.n_flows, dtype=bool)
    if exact:
        caps, w, d, capped = _exact_inputs(topo, capacities_pps, weights, demands_pps)
        rates, by_demand = _water_fill(topo, caps, w, d, capped, active, 0)
        rtol = 0
    else:
        caps, w, d = _float_inputs(topo, capacities_pps, weights, demands_pps)
        rates, by_demand = _water_fill(topo, caps, w, d, np.isfinite(d), active, TIE_RTOL)
        rtol = BOTTLENECK_RTOL
    load = topo.link_sums(rates)
    return MaxMinResult(
        rates_pps=rates,
        bottlenecks=_bottlenecks(topo, rates, w, load, caps, active, by_demand, rtol),
        limited_by_demand=by_demand,
        link_load_pps=load,
        utilization=load / caps,
        capacities_pps=caps,
        flow_names=network.flow_names,
        link_names=network.link_names,
        active=active.copy(),
        exact=exact,
    )


def maxmin(network: Network, *, capacities_pps=None, weights=None, demands_pps=None,
           exact: bool = False) -> MaxMinResult:
    """Weighted max-min fair rates of every flow of `network` by progressive filling.

    capacities_pps: link capacities in packets/s, shape (L,), each finite and > 0
        (default: the network's).
    weights: flow weights, shape (N,), each finite and > 0 (default: the network's).
    demands_pps: most each flow wants, packets/s, shape (N,), each > 0, inf for no cap
        (default: the network's).
    exact: compute in rationals (`fractions.Fraction`); inputs may then be ints, floats (taken
        exactly: Fraction(0.1) is the binary value of 0.1), Fractions or strings like '3/4'.

    Start and stop times are ignored: every flow takes part (see `maxmin_at`). Float mode does
    O(L N) array work per filling step and at most min(L, N) steps without demands.
    Raises `fluidcc.errors.ParameterError` (or its `ShapeError`/`NetworkError`) naming the field,
    the link or flow, and what is allowed.
    """
    return _solve(network, capacities_pps, weights, demands_pps, exact, None)


def maxmin_at(network: Network, t: float, *, capacities_pps=None, weights=None, demands_pps=None,
              exact: bool = False) -> MaxMinResult:
    """Max-min fair rates among the flows active at time t (seconds): start <= t < stop, on the
    links' capacities at time t (`Network.at`; capacity schedules are followed).

    Inactive flows get rate 0, no bottleneck, and add no load. Other arguments as `maxmin`.
    Equivalent to `maxmin` on ``network.at(t).replace(flows=[active flows])``, with rates of 0
    filled in.
    """
    if isinstance(t, bool) or not isinstance(t, numbers.Real) or not math.isfinite(t):
        raise ParameterError("t", t, "a finite time in seconds")
    if isinstance(network, Network):
        active = network.active(float(t))
    else:
        raise NetworkError("network", type(network).__name__, "a fluidcc.network.Network")
    if capacities_pps is None and network.has_schedules:
        network = network.at(float(t))
    return _solve(network, capacities_pps, weights, demands_pps, exact, active)


# ------------------------------------------------------------------------------ the check
def is_maxmin_fair(network: Network, rates_pps, *, capacities_pps=None, weights=None, demands_pps=None,
                   rtol: float = BOTTLENECK_RTOL) -> bool:
    """Whether `rates_pps` (packets/s, shape (N,)) is feasible and every flow has a bottleneck
    link or sends its demand (the characterization in the module docstring), within `rtol`.

    Works on floats and, with rtol = 0, exactly on Fractions.
    """
    topo = _Topology(network)
    exact = rtol == 0
    if exact:
        caps, w, d, capped = _exact_inputs(topo, capacities_pps, weights, demands_pps)
        rates = _object_array([Fraction(r) for r in rates_pps])
    else:
        caps, w, d = _float_inputs(topo, capacities_pps, weights, demands_pps)
        capped = np.isfinite(d)
        rates = np.asarray(rates_pps, dtype=np.float64)
    if len(rates) != network.n_flows or any(r < 0 for r in rates):
        return False
    load = topo.link_sums(rates)
    slack = 1 + rtol
    if any(load[l] > caps[l] * slack for l in range(len(caps))):
        return False
    if any(capped[i] and rates[i] > d[i] * slack for i in range(len(rates))):
        return False
    at_demand = np.array([bool(capped[i] and rates[i] >= d[i] * (1 - rtol)) for i in range(len(rates))], dtype=bool)
    everyone = np.ones(len(rates), dtype=bool)
    found = _bottlenecks(topo, rates, w, load, caps, everyone, at_demand, rtol)
    return all(at_demand[i] or found[i] for i in range(len(rates)))


# ------------------------------------------------------------------------------ JAX batches
def maxmin_batch(network: Network, capacities_pps, *, weights=None, demands_pps=None,
                 chunk_size: int = BATCH_CHUNK) -> np.ndarray:
    """Max-min fair rates for a batch of capacity vectors on one topology, packets/s.

    capacities_pps: shape (B, L), packets/s, each finite and > 0 (one point: shape (1, L)).
    weights, demands_pps: shape (N,), shared by the batch (default: the network's).
    chunk_size: capacity vectors per call of the jitted kernel; the last chunk is padded, so
        memory stays bounded by a few (chunk_size, N) arrays. Chunks alternate between the JAX
        devices (one per CPU core, see `fluidcc._jax_setup`).

    Returns float64 rates of shape (B, N), equal to `maxmin` point by point up to rounding.
    Water-filling in `jax.numpy`, vmapped over the chunk, in a `lax.while_loop` that ends when
    every flow is frozen. Each step takes the one event of smallest level, a link saturating or
    (with demands) a flow meeting its demand, and freezes the flows it holds: at most
    min(N, L + number of capped flows) steps. Links saturating at the same level are taken in
    successive steps at that level (`maxmin` takes them in one step). When the weights are whole
    numbers (the default: all 1) the sums of weights run in float32, exact for them and faster.
    """
    topo = _Topology(network)
    caps = _batch_capacities(capacities_pps, network)
    _, w, d = _float_inputs(topo, caps[0], weights, demands_pps)  # the capacities are the caller's
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, numbers.Integral) or chunk_size < 1:
        raise ParameterError("chunk_size", chunk_size, "a whole number >= 1")
    size = caps.shape[0]
    n_links, n_flows = network.n_links, network.n_flows
    capped = np.isfinite(d)
    whole_weights = bool(np.all(w == np.round(w)) and w.sum() < 2**24)
    sum_dtype = np.float32 if whole_weights else np.float64
    routes = np.full((n_flows, int(topo.route_lengths.max())), n_links, dtype=np.int32)  # padded: a link of level inf
    hop = np.arange(len(topo.pair_flow)) - np.repeat(np.cumsum(topo.route_lengths) - topo.route_lengths,
                                                     topo.route_lengths)
    routes[topo.pair_flow, hop] = topo.pair_link
    max_steps = np.int32(min(n_flows, n_links + int(capped.sum())))
    weighted_routing_t = (w[:, None] * topo.routing.T).astype(sum_dtype)
    arrays = (topo.routing.astype(np.float32), weighted_routing_t, topo.routing.T.copy(), routes, w, d, max_steps)
    chunk = min(int(chunk_size), 1 << (size - 1).bit_length())
    devices = jax.local_devices()
    constants = [jax.device_put(arrays, device) for device in devices]
    kernel = _batch_kernel(bool(capped.any()))
    out = np.empty((size, n_flows))
    pending = []
    for k, start in enumerate(range(0, size, chunk)):
        block = caps[start : start + chunk]
        if len(block) < chunk:
            block = np.concatenate([block, np.repeat(block[-1:], chunk - len(block), axis=0)])
        device = k % len(devices)
        # Dispatch is asynchronous: a few chunks in flight keep every device busy.
        pending.append((start, kernel(*constants[device], jax.device_put(block, devices[device]))))
        while len(pending) > len(devices):
            _collect(pending.pop(0), out)
    for item in pending:
        _collect(item, out)
    return out


def _collect(item, out: np.ndarray) -> None:
    start, rates = item
    rates = np.asarray(rates)
    n = min(len(rates), len(out) - start)
    out[start : start + n] = rates[:n]


def _batch_capacities(capacities_pps, network: Network) -> np.ndarray:
    try:
        caps = np.asarray(capacities_pps, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError("capacities_pps", capacities_pps, "an array of capacities in packets/s") from None
    if caps.ndim != 2 or caps.shape[1] != network.n_links or caps.shape[0] < 1:
        raise ShapeError("capacities_pps", f"shape {caps.shape}",
                         f"shape (B, {network.n_links}): B >= 1 capacity vectors of one value per link "
                         "(one point: capacities[None, :])")
    bad = ~(np.isfinite(caps) & (caps > 0))
    if bad.any():
        b, l = map(int, np.argwhere(bad)[0])
        raise ParameterError(f"capacities_pps[{b}, {l}] (link {network.link_names[l]!r})", float(caps[b, l]),
                             _CAPACITY_ALLOWED)
    return caps


@functools.lru_cache(maxsize=None)
def _batch_kernel(has_demands: bool):
    point = functools.partial(_fill_point, has_demands=has_demands)
    return jax.jit(jax.vmap(point, in_axes=(None,) * 7 + (0,)))


def _fill_point(routing, weighted_routing_t, routing_t, routes, weights, demands, max_steps, caps, *, has_demands):
    """Water-filling of one capacity vector (the kernel that `maxmin_batch` vmaps).

    routing: (L, N) float32 R, R[l, i] = 1 when flow i crosses link l (a float32 row gathers
    faster than a bool one); weighted_routing_t: (N, L), weight_i R[l, i], in
    the dtype of the weight sums; routing_t: (N, L) float64 R^T; routes: (N, K) link positions
    padded with L; caps: (L,). State per step: each link's unfrozen weight W (recomputed from
    the unfrozen flows) and frozen load F (it grows by level * (drop of W), plus demand -
    weight * level for a flow frozen at its demand), the level at which each link saturated,
    and the unfrozen flows.
    """
    n_links, n_flows = routing.shape
    demand_level = demands / weights
    flow_ids = jnp.arange(n_flows)

    def weight_sums(unfrozen):
        return (unfrozen.astype(weighted_routing_t.dtype) @ weighted_routing_t).astype(jnp.float64)

    def cond(state):
        step, _, _, growing_weight, _, _, _ = state
        # Every step freezes a flow and ends a link or a demand: max_steps is a guard only.
        return (step <= max_steps) & jnp.any(growing_weight > 0)

    def body(state):
        step, level, link_level, growing_weight, frozen_load, unfrozen, held = state
        growing = growing_weight > 0
        link_levels = jnp.where(growing, (caps - frozen_load) / jnp.where(growing, growing_weight, 1.0), jnp.inf)
        link = jnp.argmin(link_levels)
        if has_demands:
            flow_levels = jnp.where(unfrozen, demand_level, jnp.inf)
            flow = jnp.argmin(flow_levels)
            by_link = link_levels[link] <= flow_levels[flow]  # a tie goes to the link, as in `maxmin`
            level = jnp.maximum(level, jnp.minimum(link_levels[link], flow_levels[flow]))
            link_level = link_level.at[link].set(jnp.where(by_link, level, link_level[link]))
            at_demand = ~by_link & (flow_ids == flow)
            still = unfrozen & jnp.where(by_link, routing[link] == 0, ~at_demand)
            new_weight = weight_sums(still)
            extra = jnp.where(by_link, 0.0, demands[flow] - weights[flow] * level) * routing_t[flow]
            frozen_load = frozen_load + level * (growing_weight - new_weight) + extra
            held = held | at_demand
        else:
            # Rounding can put a level a hair below the one already reached.
            level = jnp.maximum(level, link_levels[link])
            link_level = link_level.at[link].set(level)
            still = unfrozen & (routing[link] == 0)
            new_weight = weight_sums(still)
            frozen_load = frozen_load + level * (growing_weight - new_weight)
        return step + 1, level, link_level, new_weight, frozen_load, still, held

    everyone = jnp.ones(n_flows, dtype=bool)
    # `held` (frozen at the demand) is only updated with demands; without, it stays a scalar.
    start = (jnp.int32(0), jnp.float64(0.0), jnp.full(n_links, jnp.inf), weight_sums(everyone), jnp.zeros(n_links),
             everyone, jnp.zeros(n_flows if has_demands else (), dtype=bool))
    _, _, link_level, _, _, _, held = jax.lax.while_loop(cond, body, start)
    # A flow frozen by a link froze at the level of the first link of its route to saturate.
    freeze_level = jnp.min(jnp.concatenate([link_level, jnp.array([jnp.inf])])[routes], axis=1)
    rates = weights * freeze_level
    return jnp.where(held, demands, rates) if has_demands else rates


# ------------------------------------------------------------------------------- SymPy route
def maxmin_sympy(network: Network, *, capacities_pps=None, weights=None, demands_pps=None) -> list[Fraction]:
    """The weighted max-min fair rates in exact rationals, by linear programming (not water-filling).

    The max-min fair allocation is the lexicographically largest vector of weighted rates. It is
    found level by level with SymPy's exact simplex method (`sympy.solvers.simplex.linprog`):

    1. LP: maximize t subject to R r <= c, r <= demand, r_i = (fixed value) for fixed flows and
       r_i >= weight_i t for the others; its optimum is the next level t*.
    2. For each unfixed flow j, LP: maximize r_j under the same constraints with t = t*. If
       r_j cannot exceed weight_j t*, flow j is blocked: fix it at weight_j t*. (At least one flow
       is blocked, or averaging their individual solutions would raise t.)
    3. Repeat until every flow is fixed.

    This solves 1 + (unfixed flows) linear programs per level, so it is meant for small networks
    (tests). Returns one `Fraction` per flow, packets/s. Inputs as `maxmin(..., exact=True)`.
    """
    import sympy
    from sympy.solvers.simplex import linprog

    topo = _Topology(network)
    caps, w, d, capped = _exact_inputs(topo, capacities_pps, weights, demands_pps)
    n_links, n_flows = topo.routing.shape
    rational = lambda value: sympy.Rational(value.numerator, value.denominator)  # noqa: E731
    base_rows, base_rhs = [], []
    for l in range(n_links):
        base_rows.append([int(x) for x in topo.routing[l]] + [0])
        base_rhs.append(rational(caps[l]))
    for i in range(n_flows):
        if capped[i]:
            base_rows.append([1 if k == i else 0 for k in range(n_flows)] + [0])
            base_rhs.append(rational(d[i]))

    fixed: dict[int, Fraction] = {}

    def solve(objective, unfixed, level=None):
        rows, rhs = list(base_rows), list(base_rhs)
        for i in unfixed:  # weight_i t - r_i <= 0
            rows.append([-1 if k == i else 0 for k in range(n_flows)] + [rational(w[i])])
            rhs.append(0)
        eq_rows, eq_rhs = [], []
        for i, value in fixed.items():
            eq_rows.append([1 if k == i else 0 for k in range(n_flows)] + [0])
            eq_rhs.append(rational(value))
        if level is not None:
            eq_rows.append([0] * n_flows + [1])
            eq_rhs.append(level)
        optimum, _ = linprog(sympy.Matrix([objective]), sympy.Matrix(rows), sympy.Matrix(rhs),
                             sympy.Matrix(eq_rows) if eq_rows else None,
                             sympy.Matrix(eq_rhs) if eq_rows else None)
        return -optimum  # linprog minimizes

    while len(fixed) < n_flows:
        unfixed = [i for i in range(n_flows) if i not in fixed]
        level = solve([0] * n_flows + [-1], unfixed)
        blocked = []
        for j in unfixed:
            best = solve([-1 if k == j else 0 for k in range(n_flows)] + [0], unfixed, level)
            if best == rational(w[j]) * level:
                blocked.append(j)
        if not blocked:
            raise SolverError("no flow is blocked at the max-min level (please report this network)")
        for j in blocked:
            value = rational(w[j]) * level
            fixed[j] = Fraction(int(value.p), int(value.q))
    return [fixed[i] for i in range(n_flows)]


# ------------------------------------------------------------------------------- output
def allocation_rows(network: Network, result: "MaxMinResult") -> tuple[list[dict], list[dict]]:
    """The allocation as rows: per flow its rate (packets/s and Mb/s in the network's packet
    size; as a fraction in exact mode), bottleneck links, whether its demand or inactivity limits
    it, and a short text of what limits it; per link the capacity the allocation used, its load and
    utilization."""
    from .units import pps_to_mbps

    packet_bytes = network.packet_bytes
    flows = []
    for i, name in enumerate(result.flow_names):
        rate = result.rates_pps[i]
        if not result.active[i]:
            text = "(inactive)"
        elif result.limited_by_demand[i]:
            text = "(its demand)"
        else:
            text = ", ".join(result.bottleneck_names(i)) or "-"
        row = {"name": name, "rate_pps": float(rate), "rate_mbps": pps_to_mbps(float(rate), packet_bytes),
               "bottlenecks": result.bottleneck_names(i), "limited_by_demand": bool(result.limited_by_demand[i]),
               "active": bool(result.active[i]), "bottleneck_text": text}
        if result.exact:
            row["rate_pps_exact"] = str(rate)
        flows.append(row)
    links = []
    for l, link in enumerate(network.links):
        load = float(result.link_load_pps[l])
        capacity = float(result.capacities_pps[l])
        links.append({"name": link.name, "capacity_pps": capacity,
                      "capacity_mbps": pps_to_mbps(capacity, packet_bytes), "load_pps": load,
                      "load_mbps": pps_to_mbps(load, packet_bytes), "utilization": float(result.utilization[l])})
    return flows, links


#: File types `write_allocation` writes.
ALLOCATION_SUFFIXES = (".csv", ".json")


def write_allocation(path, network: Network, result: "MaxMinResult", *, at_s: float | None = None,
                     provenance: dict | None = None):
    """Write the allocation to `path`: .csv (one row per flow, then one per link) or .json (flows,
    links, the time `at_s` it was computed at, and provenance: version, date and `provenance`'s
    entries, e.g. the command and the network file). Returns the path."""
    import csv
    import json
    from pathlib import Path

    from ._version import stamp

    path = Path(path)
    if path.suffix.lower() not in ALLOCATION_SUFFIXES:
        raise ParameterError("path", str(path), "a file name ending in " + " or ".join(ALLOCATION_SUFFIXES))
    path.parent.mkdir(parents=True, exist_ok=True)
    flows, links = allocation_rows(network, result)
    if path.suffix.lower() == ".json":
        data = {**stamp(jax_version=False), **(provenance or {}), "at_s": at_s, "exact": result.exact, "packet_bytes": network.packet_bytes,
                "flows": [{k: v for k, v in row.items() if k != "bottleneck_text"} for row in flows], "links": links}
        path.write_text(json.dumps(data, indent=2) + "\n")
        return path
    columns = ["kind", "name", "rate_pps", "rate_mbps"] + (["rate_pps_exact"] if result.exact else []) + [
        "bottlenecks", "limited_by_demand", "active", "capacity_pps", "capacity_mbps", "load_pps", "load_mbps",
        "utilization"]
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        for row in flows:
            writer.writerow({**row, "kind": "flow", "bottlenecks": " ".join(row["bottlenecks"])})
        for row in links:
            writer.writerow({**row, "kind": "link"})
    return path
