"""MIAIMD on a network: each flow reacts to the largest load factor on its path (VCP paper, eq. (16)).

Flow i has a window w_i (packets) and RTT T_i (from the network). Link l measures its load factor
from the rates that reach it, and flow i uses the largest one on its path L_i:

    w_i'(t)  = (1/T_i) [ w_i(t) xi(rho^i(t)) + alpha ]                            (10)
    xi(rho)  = kappa (1/rho - 1),   rho^i(t) = max_{l in L_i} rho_l(t)             (16)
    rho_l(t) = sum_{j in I_l} [w_j(t - T_j) / T_j] / (gamma C_l)

With one RTT T this is the paper's rho_l(t) = sum_j w_j(t - T) / (gamma C_l T). With several RTTs
fluidcc places the whole RTT between the source and the links ("forward" split, as
`fluidcc.models.miaimd.MIAIMD` does on one link): a link sees flow j's rate one RTT T_j late and
the load factor reaches the sources at once. Equilibria do not depend on the split.

Flows start and stop at the times the network gives. A flow starting at s > 0 keeps its initial
window until its first feedback returns (t = s + T_i): before that no link has seen it. A stopped
flow's window is frozen and links stop counting it one RTT later.

Equilibrium (Theorem 2, with each flow's own RTT): r_i* = alpha / (kappa T_i (1 - 1/max_l rho_l*)),
so every flow on the most loaded link of the network has the same value of r_i T_i, and removing
those flows and repeating gives the allocation, which is max-min fair (with equal RTTs) with
respect to the link loads gamma C_l rho_l*. `equilibrium` computes it two ways: by that
progressive construction (one quadratic per step) and by root finding on the fluid equations
(Newton on eq. (10) with the maximizing links as the active set); they must agree.

Units: capacities in packets/s, times in seconds, windows in packets, rates in packets/s.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..dde import DDESystem
from ..network import Network
from ._network import NetworkLayout, active_set_fixed_point, batch_with_arrays, link_capacities
from ._params import require_interval, require_nonnegative, require_positive
from ._spec import NetworkModel


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class MIAIMDNetworkParams:
    """A batch of MIAIMD points on one network.

    kappa (> 0), alpha (>= 0, packets per RTT), gamma (in (0, 1]), initial_window (packets, > 0):
    shape (B,). capacity_pps: link capacities in packets/s, shape (B, L).
    """

    kappa: jax.Array
    alpha: jax.Array
    gamma: jax.Array
    capacity_pps: jax.Array
    initial_window: jax.Array


def network_params(network: Network, *, kappa=0.25, alpha=1.0, gamma=0.98, initial_window=1.0,
                   capacity_pps=None) -> MIAIMDNetworkParams:
    """Build and validate a batch; capacities default to the network's, shape (L,) or (B, L)."""
    NetworkLayout(network).rtts()  # every flow needs an RTT > 0 (raises naming the flow)
    arrays, links = batch_with_arrays(dict(kappa=kappa, alpha=alpha, gamma=gamma, initial_window=initial_window),
                                      {"capacity_pps": link_capacities(network, capacity_pps)})
    params = MIAIMDNetworkParams(**links, **arrays)
    _check(params)
    return params


def _check(params) -> None:
    require_positive("kappa", params.kappa)
    require_nonnegative("alpha", params.alpha, " packets per RTT")
    require_interval("gamma", params.gamma, 0.0, 1.0)
    require_positive("capacity", params.capacity_pps, " packets/s")
    require_positive("initial_window", params.initial_window, " packets")


@dataclass(frozen=True)
class MIAIMDNetwork(DDESystem):
    """Eqs. (10) and (16) on a `Network`; state: one log window per flow."""

    network: Network
    name = "miaimd_network"

    def __post_init__(self):
        self.network.require_fixed_capacities(f"the {self.name} fluid model")

    @property
    def layout(self) -> NetworkLayout:
        return NetworkLayout(self.network)

    def state_size(self, params) -> int:
        return self.network.n_flows

    def state_names(self, params) -> list[str]:
        return [f"window[{name}]" for name in self.network.flow_names]

    def log_components(self, params) -> tuple[bool, ...]:
        return (True,) * self.network.n_flows

    def delay_terms(self, params) -> list:
        return [jnp.asarray(d) + 0.0 * params.kappa for d in self.layout.delay_values()]

    def history(self, t, params):
        return jnp.full((self.network.n_flows,), params.initial_window) + 0.0 * t

    def _load_factors(self, t, windows_seen, params):
        """rho_l from the windows each link sees (flow j's at t - T_j), shape (L,)."""
        layout = self.layout
        rtt = jnp.asarray(layout.rtts())
        sent = layout.active(t - rtt) * windows_seen / rtt
        return layout.link_sum(sent) / (params.gamma * params.capacity_pps)

    def _xi_plus_ai(self, t, z, z_delayed, params):
        layout = self.layout
        rtt = jnp.asarray(layout.rtts())
        group = jnp.asarray(layout.delay_group())
        seen = jnp.exp(z_delayed[group, jnp.arange(layout.n_flows)])  # w_j(t - T_j)
        rho = self._load_factors(t, seen, params)
        rho_path = layout.flow_max(rho)  # (16): the largest load factor on the path
        inverse = jnp.where(rho_path > 0, 1.0 / jnp.where(rho_path > 0, rho_path, 1.0), jnp.inf)
        reacting = (layout.active(t) * layout.active(t - rtt)) > 0  # feedback has returned
        rate = (params.kappa * (inverse - 1.0) + params.alpha * jnp.exp(-z)) / rtt
        return jnp.where(reacting, rate, 0.0)

    def vector_field_log(self, t, z, z_delayed, params, log_mask):
        if not np.all(log_mask):
            return super().vector_field_log(t, z, z_delayed, params, log_mask)
        return self._xi_plus_ai(t, z, z_delayed, params)

    def vector_field(self, t, x, x_delayed, params):
        return x * self._xi_plus_ai(t, jnp.log(x), jnp.log(x_delayed), params)

    def validate(self, params) -> None:
        _check(params)
        self.layout.rtts()

    def rates(self, windows) -> np.ndarray:
        """Per-flow rates w_i / T_i (packets/s) from windows of shape (..., N)."""
        return np.asarray(windows) / self.network.rtt_s

    def observe_run(self, times, states, params) -> tuple[np.ndarray, None, dict]:
        """Per-flow rates (S, N) packets/s over saved states (S, N); MIAIMD has no queue state."""
        return self.rates(states), None, {}

    def equilibrium(self, params, point: int = 0, at: float | None = None) -> dict:
        """The equilibrium of one point of the batch, by Theorem 2's construction and by root finding.

        at: the time whose active flows are used (default: the flows that never stop, once all
        have started). Returns flow_window, flow_rate (packets/s; 0 for inactive flows),
        load_factor per link, the link each flow follows (`bottleneck`, -1 if inactive), the
        root finder's `residual` and the largest relative difference between the two methods.
        """
        network = self.network
        active = self.layout.equilibrium_flows(at)
        kappa, alpha, gamma = (float(np.asarray(getattr(params, f))[point]) for f in ("kappa", "alpha", "gamma"))
        capacity = np.asarray(params.capacity_pps, dtype=np.float64)[point]
        rtt = network.rtt_s
        matrix = network.routing_matrix * active[None, :]
        progressive_rates, progressive_rho = theorem2_rates(matrix, capacity, rtt, kappa, alpha, gamma)

        index = np.flatnonzero(active)
        sub = matrix[:, index]
        routes = [np.flatnonzero(sub[:, k]) for k in range(len(index))]
        rtt_a = rtt[index]

        def load(u):
            return (sub @ (jnp.exp(u) / rtt_a)) / (gamma * capacity)

        def equations(u, assignment):
            rho = load(u)
            return kappa * (1.0 / rho[assignment] - 1.0) + alpha * jnp.exp(-u)  # (10) x T_i / w_i

        def choose(u, assignment):
            rho = np.asarray(load(u))
            chosen = assignment.copy()
            for k, route in enumerate(routes):
                best = route[np.argmax(rho[route])]
                if rho[best] > rho[assignment[k]] * (1 + 1e-9):
                    chosen[k] = best
            return chosen

        start = np.log(np.maximum(progressive_rates[index] * rtt_a, 1e-300))
        first = np.array([route[np.argmax(progressive_rho[route])] for route in routes])
        fixed = active_set_fixed_point(equations, choose, start * (1 + 1e-3), first)
        windows = np.zeros(network.n_flows)
        windows[index] = np.exp(fixed.x)
        rates = windows / rtt
        bottleneck = np.full(network.n_flows, -1)
        bottleneck[index] = fixed.assignment
        rho = (matrix @ rates) / (gamma * capacity)
        with np.errstate(invalid="ignore", divide="ignore"):
            gap = np.max(np.abs(rates[index] - progressive_rates[index]) / progressive_rates[index])
        return {
            "flow_window": windows,
            "flow_rate": rates,
            "load_factor": rho,
            "bottleneck": bottleneck,
            "residual": fixed.residual,
            "consistent": fixed.consistent,
            "methods_gap": float(gap),
        }


def theorem2_rates(routing, capacity_pps, rtt_s, kappa, alpha, gamma) -> tuple[np.ndarray, np.ndarray]:
    """Equilibrium rates of eqs. (10) and (16) by the construction of Theorem 2's proof.

    routing: (L, N) 0/1 (columns of inactive flows zero); capacity_pps (L,); rtt_s (N,).
    Each step takes the links with unfrozen flows, finds the load factor each would have if its
    unfrozen flows followed it: with a_i = alpha / (kappa T_i) and F the rate of its frozen flows,
    gamma C rho = F + (sum a_i) rho / (rho - 1), the larger root of a quadratic; the most loaded
    link's flows are frozen at r_i = a_i rho / (rho - 1). Returns (rates (N,), rho (L,)).
    """
    routing = np.asarray(routing, dtype=np.float64)
    n_links, n_flows = routing.shape
    a = alpha / (kappa * np.asarray(rtt_s, dtype=np.float64))
    target = gamma * np.asarray(capacity_pps, dtype=np.float64)
    rates = np.zeros(n_flows)
    free = routing.any(axis=0)
    while free.any():
        on_link = routing[:, free]
        has_free = on_link.any(axis=1)
        frozen_load = routing @ np.where(free, 0.0, rates)
        free_weight = routing @ np.where(free, a, 0.0)
        b = target + frozen_load + free_weight
        rho = (b + np.sqrt(np.maximum(b * b - 4.0 * target * frozen_load, 0.0))) / (2.0 * target)
        rho = np.where(has_free, rho, -np.inf)
        top = int(np.argmax(rho))
        members = free & (routing[top] > 0)
        rates[members] = a[members] * rho[top] / (rho[top] - 1.0)
        free &= ~members
    return rates, (routing @ rates) / target


ON_NETWORK = NetworkModel(
    name="miaimd",
    description="MIAIMD, VCP paper eq. (16): each flow follows the largest load factor on its path",
    system=MIAIMDNetwork,
    params=network_params,
    parameters=("kappa", "alpha", "gamma", "initial_window"),
    settle_s=150.0,  # MIAIMD's fairness converges slowly
    notes={"initial_window": "packets"},
)
