"""What the RCP and QCP per-flow network models share: one explicit rate per link.

Both protocols give every flow one rate per router: link l offers R_l(t) (packets/s) and flow i
sends at the smallest offer on its path, learned one RTT late,

    x_i(t) = min(demand_i, w_i min_{l in L_i} R_l(t - T_i))        while the flow is active,

(w_i = 1 for RCP; QCP's weighted form, eq. (16), scales the offer by the flow's weight). The
links see the rates sent now and the rate field travels back in one RTT (the whole RTT on the
return path), as in the XCP network model; equilibria do not depend on that split. A flow that
starts at s > 0 sends from s at the path rate its SYN learned one RTT earlier (RCP paper
section 2.4); flows that start at 0 also sent on the history interval, at the routers' initial
rate. A stopped flow sends nothing.

State per link: u_l = log(Rmax_l / R_l) >= 0, so 0 < R_l <= Rmax_l = C_l / (the smallest weight
of the link's flows): a router never offers more than would let any one of its flows fill it (C_l
with unit weights), and an idle or under-used link offers that. Then the queue q_l >= 0 (packets), then the
protocol's own link states, then optionally the fluid accounting (`accounting=True`): packets
sent per flow, and arrivals and departures per link. Departures are booked as arrivals minus the
queue's change (the engine books its projection at 0 there too), so that

    sum over links of arrivals = sum over flows of sent x hops,   arrivals = departures + queue change

hold to rounding, with flows starting and stopping mid-run (tests/models/test_explicit_rate.py).

Units: capacities, rates and demands in packets/s; times in seconds; queues in packets.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar

import jax.numpy as jnp
import numpy as np

from ..dde import DDESystem
from ..dde import JAX_OPS, projected_rate
from ..network import Network
from ._network import NetworkLayout


@dataclass(frozen=True)
class ExplicitRateNetwork(DDESystem):
    """Base of `RCPNetwork` and `QCPNetwork` (see the module docstring for the state layout)."""

    network: Network
    accounting: bool = False

    #: Names of the protocol's own per-link states, after u and q.
    link_states: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self):
        self.network.require_fixed_capacities(f"the {self.name} fluid model")

    @property
    def layout(self) -> NetworkLayout:
        return NetworkLayout(self.network)

    # ------------------------------------------------------------------------------ layout
    @property
    def n_links(self) -> int:
        return self.network.n_links

    @property
    def n_flows(self) -> int:
        return self.network.n_flows

    def _offsets(self) -> dict[str, int]:
        """Start of each block of the state vector."""
        L, N = self.n_links, self.n_flows
        blocks = [("u", L), ("queue", L)] + [(name, L) for name in self.link_states]
        if self.accounting:
            blocks += [("sent", N), ("arrived", L), ("departed", L)]
        offsets, position = {}, 0
        for name, size in blocks:
            offsets[name] = position
            position += size
        offsets["end"] = position
        return offsets

    def block(self, x, name: str):
        """One block of a state (..., n) -> (..., L) or (..., N)."""
        offsets = self._offsets()
        size = self.n_flows if name == "sent" else self.n_links
        return x[..., offsets[name] : offsets[name] + size]

    def state_size(self, params) -> int:
        return self._offsets()["end"]

    def state_names(self, params) -> list[str]:
        links, flows = self.network.link_names, self.network.flow_names
        names = [f"log_ceiling_over_rate[{l}]" for l in links] + [f"queue[{l}]" for l in links]
        for block in self.link_states:
            names += [f"{block}[{l}]" for l in links]
        if self.accounting:
            names += [f"sent[{f}]" for f in flows] + [f"arrived[{l}]" for l in links]
            names += [f"departed[{l}]" for l in links]
        return names

    def nonnegative_components(self, params) -> tuple[bool, ...]:
        mask = np.zeros(self.state_size(params), dtype=bool)
        offsets = self._offsets()
        mask[offsets["u"] : offsets["queue"] + self.n_links] = True  # u >= 0 (R <= C) and q >= 0
        return tuple(bool(b) for b in mask)

    def projection_ledger(self, params) -> tuple[int, ...]:
        ledger = np.full(self.state_size(params), -1)
        if self.accounting:
            offsets = self._offsets()
            ledger[offsets["queue"] : offsets["queue"] + self.n_links] = offsets["departed"] + np.arange(self.n_links)
        return tuple(int(i) for i in ledger)

    def delay_terms(self, params) -> list:
        """The flows' distinct RTTs, then (if the protocol reads its own past rate) each link's
        control interval."""
        terms = [jnp.asarray(d) + 0.0 * params.alpha for d in self.layout.delay_values()]
        intervals = self.link_delays(params)
        if intervals is not None:
            terms += [intervals[l] for l in range(self.n_links)]
        return terms

    def link_delays(self, params):
        """Per-link delays at which the router reads its own offer, R_l(t - d_l) (L,), or None."""
        return None

    # ------------------------------------------------------------------------ flow rates
    @functools.cached_property
    def _flow_constants(self):
        network = self.network
        # NumPy constants (a cached JAX array made inside a trace would leak the tracer).
        return network.weights, network.demands_pps, self.layout.rtts(), self.layout.delay_group()

    @functools.cached_property
    def _ceiling_scale(self) -> np.ndarray:
        """Rmax_l / C_l = 1 / (smallest weight of the link's flows), (L,); 1 on a link without flows."""
        weights = np.where(self.network.routing_matrix > 0, self.network.weights[None, :], np.inf).min(axis=1)
        return np.where(np.isfinite(weights), 1.0 / weights, 1.0)

    def rate_ceiling(self, capacity_pps):
        """Rmax_l, packets/s per unit weight."""
        return capacity_pps * self._ceiling_scale

    def offered_rates(self, u, capacity_pps):
        """R_l = Rmax_l exp(-u_l), packets/s per unit weight."""
        return self.rate_ceiling(capacity_pps) * jnp.exp(-u)

    def flow_rates(self, t, x_delayed, params):
        """x_i(t) (N,), packets/s: the path's smallest offer, sent one RTT earlier; 0 if inactive."""
        weights, demands, _, group = self._flow_constants
        offsets = self._offsets()
        u_seen = x_delayed[:, offsets["u"] : offsets["u"] + self.n_links]  # (K, L): u at t - tau_k
        offered = self.offered_rates(u_seen, params.capacity_pps)[:, None, :]  # (K, 1, L)
        path_rate = jnp.min(jnp.where(self.layout.path_mask, offered, jnp.inf), axis=-1)  # (K, N)
        seen = path_rate[group, jnp.arange(self.n_flows)]
        return self.layout.active(t) * jnp.minimum(demands, weights * seen)

    # ----------------------------------------------------------------------- vector field
    def link_fields(self, t, x, rates, load, previous, params) -> tuple[jnp.ndarray, list]:
        """The protocol's d u / dt (before projection) and the derivatives of its link states.

        previous: R_l(t - d_l) (L,) when `link_delays` gives the d_l, else None."""
        raise NotImplementedError

    def previous_offers(self, x_delayed, params):
        """R_l(t - d_l) from the delayed states (L,), or None without `link_delays`."""
        if self.link_delays(params) is None:
            return None
        first = len(self.layout.delay_values())
        offset = self._offsets()["u"]
        links = jnp.arange(self.n_links)
        u_back = x_delayed[first + links, offset + links]
        return self.offered_rates(u_back, params.capacity_pps)

    def vector_field(self, t, x, x_delayed, params):
        rates = self.flow_rates(t, x_delayed, params)
        load = self.layout.link_sum(rates)  # y_l, packets/s
        u, queue = self.block(x, "u"), self.block(x, "queue")
        previous = self.previous_offers(x_delayed, params)
        d_u, d_states = self.link_fields(t, x, rates, load, previous, params)
        d_queue = projected_rate(queue, load - params.capacity_pps, JAX_OPS)
        parts = [projected_rate(u, d_u, JAX_OPS), d_queue, *d_states]
        if self.accounting:
            parts += [rates, load, load - d_queue]
        return jnp.concatenate(parts)

    def vector_field_log(self, t, z, z_delayed, params, log_mask):
        return self.vector_field(t, z, z_delayed, params)  # no component is integrated in log form

    # ---------------------------------------------------------------------------- history
    def initial_rates(self, params) -> tuple[jnp.ndarray, jnp.ndarray]:
        """(u, flow rates) on the history interval: every router offers initial_rate_fraction x C_l."""
        u = jnp.log(jnp.asarray(self._ceiling_scale) / params.initial_rate_fraction)
        weights, demands, _, _ = self._flow_constants
        offered = self.offered_rates(u, params.capacity_pps)
        path = self.layout.flow_min(offered[None, :])
        return u, self.layout.active(-1.0) * jnp.minimum(demands, weights * path)

    def history(self, t, params):
        u, rates = self.initial_rates(params)
        parts = [u, jnp.zeros(self.n_links), *self.initial_link_states(rates, params)]
        if self.accounting:
            parts += [jnp.zeros(self.n_flows), jnp.zeros(self.n_links), jnp.zeros(self.n_links)]
        return jnp.concatenate(parts) + 0.0 * t

    def initial_link_states(self, rates, params) -> list:
        return []

    def estimate(self, t, rates, offered, previous, params):
        """The protocol's estimate of the number of flows per link (L,)."""
        raise NotImplementedError

    def observe(self, times, states, params, point: int = 0) -> dict:
        """What the routers and flows see over saved states of one point.

        times (S,) seconds and states (S, n) from a `Solution` (a fine save grid: the flows'
        rates are read from the offers one RTT earlier, interpolated linearly in log rate).
        Returns rate (S, N) packets/s, load (S, L) packets/s, offered R_l (S, L) packets/s and
        flow_estimate (S, L): the protocol's estimate of the number of flows at each link.
        """
        import jax

        one = _point(params, point)
        times = np.asarray(times, dtype=np.float64)
        u = np.asarray(self.block(np.asarray(states), "u"), dtype=np.float64)
        u_history = np.asarray(self.initial_rates(one)[0], dtype=np.float64)
        rtt = self.layout.rtts()
        capacity = np.asarray(one.capacity_pps, dtype=np.float64)

        def u_at(back, l):  # u_l at times `back` (the history before the first save)
            return np.where(back < times[0], u_history[l], np.interp(back, times, u[:, l]))

        seen = np.empty((len(times), self.n_flows, self.n_links))
        for i in range(self.n_flows):
            for l in range(self.n_links):
                seen[:, i, l] = u_at(times - rtt[i], l)
        ceiling = capacity * self._ceiling_scale
        path = np.where(self.layout.path_mask[None], ceiling * np.exp(-seen), np.inf).min(axis=2)
        start, stop = self.network.start_s, self.network.stop_s  # (times >= 0: as layout.active)
        active = ((start[None, :] <= times[:, None]) & (times[:, None] < stop[None, :])).astype(np.float64)
        rates = active * np.minimum(self.network.demands_pps, self.network.weights * path)
        offered = ceiling * np.exp(-u)
        intervals = self.link_delays(one)
        previous = offered if intervals is None else ceiling * np.exp(-np.stack(
            [u_at(times - float(intervals[l]), l) for l in range(self.n_links)], axis=1))
        estimate = jax.vmap(lambda t, r, o, p: self.estimate(t, r, o, p, one))(
            jnp.asarray(times), jnp.asarray(rates), jnp.asarray(offered), jnp.asarray(previous))
        return {"rate": rates, "load": rates @ self.network.routing_matrix.T, "offered": offered,
                "flow_estimate": np.asarray(estimate)}

    def observe_run(self, times, states, params) -> tuple[np.ndarray, np.ndarray, dict]:
        """Per-flow rates (S, N), per-link queues (S, L) and what the routers hold over a saved run
        of one point: the offered rate R_l, the estimate of the number of flows and the fluid
        accounting (as (dims, values, attributes) of the run's dataset)."""
        observed = self.observe(times, states, params)
        extra = {
            "offered_rate": (("time", "link"), observed["offered"],
                             {"units": "packets/s", "long_name": "rate the router offers, R_l"}),
            "flow_estimate": (("time", "link"), observed["flow_estimate"],
                              {"long_name": "the router's estimate of its number of flows"}),
        }
        if self.accounting:
            extra.update({
                "sent": (("flow",), self.block(states[-1], "sent"), {"units": "packets", "long_name": "sent over the run"}),
                "arrived": (("link",), self.block(states[-1], "arrived"), {"units": "packets"}),
                "departed": (("link",), self.block(states[-1], "departed"), {"units": "packets"}),
            })
        return observed["rate"], self.block(states, "queue"), extra

    # ------------------------------------------------------------------------ equilibrium
    def equilibrium_capacities(self, params, point: int) -> np.ndarray:
        """The link loads the protocol fills at an equilibrium (packets/s)."""
        return np.asarray(params.capacity_pps, dtype=np.float64)[point]

    def equilibrium(self, params, point: int = 0, at: float | None = None) -> dict:
        """The equilibrium of one point, with the residual of the fluid equations there.

        At an equilibrium of long-lived flows the queues are empty, every flow sends at the
        smallest offer on its path, and every link either is full (its rate equation at rest) or
        offers its capacity (u = 0, R_l = C_l). That is the (weighted, demand-capped) max-min
        allocation of `equilibrium_capacities`, with R_l the fair level (rate / weight) of the
        flows bottlenecked at l, and Rmax_l on the other links. It is built by water-filling (`fluidcc.maxmin`) and then checked on the model's own
        vector field: `residual` is the largest |dx/dt| there, relative to the state's scale
        (rates per RTT). at: the time whose active flows are used (default: flows that never stop).

        Returns flow_rate, maxmin_rate (packets/s per flow; 0 if inactive), link_rate R_l (per
        unit weight),
        link_load, utilization, bottleneck (a link each flow is held by, -1: none or its demand),
        state (the equilibrium state vector) and residual.
        """
        from ..maxmin import maxmin

        network = self.network
        active = self.layout.equilibrium_flows(at)
        capacity = np.asarray(params.capacity_pps, dtype=np.float64)[point]
        index = np.flatnonzero(active)
        sub = Network(network.links, tuple(network.flows[i] for i in index), network.packet_bytes)
        fair = maxmin(sub, capacities_pps=self.equilibrium_capacities(params, point))
        rates = np.zeros(network.n_flows)
        rates[index] = np.asarray(fair.rates_pps, dtype=np.float64)
        weights = network.weights
        link_rate = capacity * self._ceiling_scale
        bottleneck = np.full(network.n_flows, -1)
        for k, links in enumerate(fair.bottlenecks):
            for l in links:
                link_rate[l] = min(link_rate[l], rates[index[k]] / weights[index[k]])
            if links:
                bottleneck[index[k]] = links[0]
        state = self.equilibrium_state_vector(params, point, link_rate, rates)
        events = np.concatenate([network.start_s, network.stop_s])
        after_all = float(np.max(events[np.isfinite(events)])) + float(np.max(network.rtt_s))
        time = float(at) if at is not None else after_all  # the active flows are those of the equilibrium
        residual = self.rest_residual(state, params, point, time)
        load = network.routing_matrix @ rates
        return {
            "flow_rate": rates,
            "maxmin_rate": rates.copy(),
            "link_rate": link_rate,
            "link_load": load,
            "utilization": load / capacity,
            "bottleneck": bottleneck,
            "state": state,
            "residual": residual,
        }

    def rest_residual(self, state, params, point: int, time: float) -> float:
        """How far a constant state is from rest: max over the protocol's states of
        |dx/dt| x T_max / scale (T_max the largest RTT; scales: 1 for u, C T_max for the queue,
        the protocol's own for its link states). The accounting blocks are not checked."""
        one = _point(params, point)
        state = jnp.asarray(state)
        stack = jnp.broadcast_to(state, (len(self.delay_terms(one)), state.size))
        field = np.asarray(self.vector_field(jnp.asarray(time), state, stack, one))
        capacity = np.asarray(one.capacity_pps, dtype=np.float64)
        longest = float(np.max(self.network.rtt_s))
        scale = np.concatenate([np.ones(self.n_links), capacity * longest, *self.link_state_scales(capacity, longest)])
        return float(np.max(np.abs(field[: scale.size]) * longest / scale))

    def link_state_scales(self, capacity, longest_rtt) -> list:
        """Scale of each of the protocol's own link states, for `rest_residual`."""
        return []

    def equilibrium_state_vector(self, params, point, link_rate, rates) -> np.ndarray:
        capacity = np.asarray(params.capacity_pps, dtype=np.float64)[point]
        parts = [np.log(capacity * self._ceiling_scale / link_rate), np.zeros(self.n_links)]
        parts += self.equilibrium_link_states(params, point, rates)
        if self.accounting:
            parts += [np.zeros(self.n_flows), np.zeros(self.n_links), np.zeros(self.n_links)]
        return np.concatenate(parts)

    def equilibrium_link_states(self, params, point, rates) -> list:
        return []


def _point(params, point: int):
    import jax

    return jax.tree_util.tree_map(lambda a: jnp.asarray(np.asarray(a)[point]), params)
