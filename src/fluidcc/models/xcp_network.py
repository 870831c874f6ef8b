"""XCP and iXCP per-flow fluid models on a network (iXCP paper, eqs. (1)–(3); Low's XCP model).

Flow i sends at rate x_i (packets/s); link l has capacity c_l, queue q_l and control interval
d_l (the mean RTT of the flows that cross it). Every quantity below is in rate units (packets/s
per control interval), the paper's byte counts divided by d:

    phi_l = alpha (c_l - y_l) - beta q_l / d_l                                   (1)
    h_l   = max(0, gamma y_l - |phi_l|)                                  XCP,    (2)
    h_l   = max(0, gamma (y_l - y0_l) - |phi_l|)                         iXCP,   (3)

y_l is the input rate of the link and y_l - y0_l the rate of the flows bottlenecked at l. The
link hands out phi_l^+ + h_l additively (equal shares per flow) and takes back phi_l^- + h_l
multiplicatively (in proportion to each flow's rate). Per second, flow i receives from link l

    XCP:  F_il = [ (phi^+ + h) / N_l - (phi^- + h) x_i / y_l ] / d_l
    iXCP: F_il = [ phi^+ / N_l - phi^- x_i / y_l + m_il h (1 / N_l^b - x_i / y_l^b) ] / d_l

where N_l is the number of the link's flows and, for iXCP, m_il in [0, 1] says whether flow i
is bottlenecked at l (N_l^b = sum_i m_il, y_l^b = sum_i m_il x_i): the spare bandwidth is shared
by every flow, the shuffled bandwidth only by the flows bottlenecked at the link. Each flow obeys
the most restrictive feedback on its path, one RTT late:

    x_i'(t) = min_{l in L_i} F_il(t - T_i),       q_l'(t) = y_l(t) - c_l  (q_l kept >= 0).

The links see the rates sent now and the feedback travels back in one RTT (the whole RTT on the
return path); equilibria do not depend on that split.

**The bottleneckId mechanism in fluid form (iXCP).** A packet's bottleneckId is the link whose
feedback was smallest on its last trip, and the sender learns it one RTT later. fluidcc keeps
m_il as a state relaxing towards that choice with time constant T_i:
m_il' = (target_il - m_il) / T_i, where target_i puts weight on the links whose feedback F_il is
the smallest on the path (within `TIE_TOLERANCE`). Ties are the rule, not the exception: at a
saturated link phi = 0, so a flow that is not a member receives exactly zero there. Among tied
links the target is shared in proportion to m_il + `MEMBERSHIP_SEED` (the protocol replaces the
bottleneckId only on strictly smaller feedback, and its per-packet alternation between tied links
is what lets a flow gain at two saturated links in turn); when the link where a flow is a member
stops binding, the whole target moves to the binding links. Flows start with m = 1 on the first
link of their route (the access link, as the paper initializes bottleneckId).

For the fixed point (`equilibrium`), a flow's link is chosen by W_il, the feedback it would
receive at l as one of l's bottlenecked flows: zero at its max-min bottleneck, positive at a
saturated link whose bottlenecked flows send more than it does. That is the assignment the
protocol settles on (a flow that declares such a link receives positive feedback there and moves
to the link that gives it less).

Equilibrium: every flow obeys a link whose feedback is zero; `equilibrium` solves the fluid
equations for it directly (`fluidcc.models._network.active_set_fixed_point`). XCP's equilibrium
is not max-min fair (iXCP paper section 2.2): a link whose flows are bottlenecked elsewhere
settles at a utilization of at least alpha / (alpha + gamma) (80 % with the defaults); iXCP's is
max-min fair (the paper's Theorem 1).

Defaults alpha = 0.4, beta = 0.226, gamma = 0.1. Every flow's rate is `initial_rate` (default
one packet per RTT) until it reacts: a flow starting at s > 0 keeps it until its first feedback
returns (t = s + T_i); flows starting at 0 were sending on the history interval (the network at
that rate, queues empty) and react from t = 0. A stopped flow's rate is frozen and not counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..dde import JAX_OPS, DDESystem, projected_rate
from ..errors import ParameterError, ShapeError
from ..network import Network
from ._network import NetworkLayout, active_set_fixed_point, batch_with_arrays, link_capacities
from ._params import require_nonnegative, require_positive, require_whole
from ._spec import NetworkModel

VARIANTS = ("xcp", "ixcp")

#: Feedback values within this fraction of a link's per-flow share per control interval
#: (c_l / (d_l N_l), packets/s^2) of a flow's smallest one count as ties of the bottleneckId.
TIE_TOLERANCE = 1e-6
#: Share a tied link gains per unit of current membership elsewhere (see `XCPNetwork._rates_field`).
MEMBERSHIP_SEED = 1e-6


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class XCPNetworkParams:
    """A batch of XCP/iXCP points on one network.

    alpha, beta, gamma: controller gains (alpha > 0, beta >= 0, gamma >= 0), shape (B,).
    capacity_pps: link capacities, packets/s, shape (B, L). initial_rate_pps: each flow's rate
    before its first feedback, packets/s, shape (B, N). multiplicity: how many identical flows
    each flow of the network stands for (a whole number >= 1), shape (B, N); see `merge_identical`.
    """

    alpha: jax.Array
    beta: jax.Array
    gamma: jax.Array
    capacity_pps: jax.Array
    initial_rate_pps: jax.Array
    multiplicity: jax.Array


def network_params(network: Network, *, alpha=0.4, beta=0.226, gamma=0.1, capacity_pps=None,
                   initial_rate_pps=None, multiplicity=None) -> XCPNetworkParams:
    """Build and validate a batch; capacities default to the network's (shape (L,) or (B, L)),
    initial rates to one packet per RTT and multiplicities to 1 (scalar, (N,) or (B, N))."""
    NetworkLayout(network).rtts()  # every flow needs an RTT > 0 (raises naming the flow)
    capacity = link_capacities(network, capacity_pps)
    initial = np.asarray(1.0 / network.rtt_s if initial_rate_pps is None else initial_rate_pps, dtype=np.float64)
    initial = np.broadcast_to(initial, initial.shape[:-1] + (network.n_flows,)) if initial.ndim else \
        np.full(network.n_flows, float(initial))
    counts = np.asarray(1.0 if multiplicity is None else multiplicity, dtype=np.float64)
    counts = np.broadcast_to(counts, counts.shape[:-1] + (network.n_flows,)) if counts.ndim else \
        np.full(network.n_flows, float(counts))
    arrays, per_element = batch_with_arrays(dict(alpha=alpha, beta=beta, gamma=gamma),
                                            {"capacity_pps": capacity, "initial_rate_pps": initial,
                                             "multiplicity": counts})
    params = XCPNetworkParams(**per_element, **arrays)
    _check(params)
    return params


def _check(params) -> None:
    require_positive("alpha", params.alpha)
    require_nonnegative("beta", params.beta)
    require_nonnegative("gamma", params.gamma)
    require_positive("capacity", params.capacity_pps, " packets/s")
    require_positive("initial_rate", params.initial_rate_pps, " packets/s")
    require_whole("multiplicity", params.multiplicity, 1)


def _safe_ratio(numerator, denominator):
    ok = denominator > 0
    return jnp.where(ok, numerator / jnp.where(ok, denominator, 1.0), 0.0)


@dataclass(frozen=True)
class XCPNetwork(DDESystem):
    """XCP (variant="xcp") or iXCP (variant="ixcp") on a `Network`.

    State: log rate per flow (N), queue per link (L, packets, kept >= 0) and, for iXCP, the
    bottleneck membership m of every (flow, link) pair of the routes (flows in order, links in
    route order).
    """

    network: Network
    variant: str = "xcp"

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise ParameterError("variant", self.variant, f"one of {', '.join(VARIANTS)}")
        self.network.require_fixed_capacities(f"the {self.name} fluid model")

    @property
    def name(self) -> str:
        return f"{self.variant}_network"

    @property
    def layout(self) -> NetworkLayout:
        return NetworkLayout(self.network)

    @property
    def n_pairs(self) -> int:
        return int(self.layout.routing.sum()) if self.variant == "ixcp" else 0

    def state_size(self, params) -> int:
        return self.network.n_flows + self.network.n_links + self.n_pairs

    def state_names(self, params) -> list[str]:
        names = [f"rate[{f}]" for f in self.network.flow_names] + [f"queue[{l}]" for l in self.network.link_names]
        if self.variant == "ixcp":
            flows, links = self.layout.pairs()
            names += [f"member[{self.network.flows[i].name},{self.network.links[l].name}]" for i, l in zip(flows, links)]
        return names

    def log_components(self, params) -> tuple[bool, ...]:
        n, L = self.network.n_flows, self.network.n_links
        return (True,) * n + (False,) * (L + self.n_pairs)

    def nonnegative_components(self, params) -> tuple[bool, ...]:
        n, L = self.network.n_flows, self.network.n_links
        return (False,) * n + (True,) * L + (False,) * self.n_pairs

    def delay_terms(self, params) -> list:
        return [jnp.asarray(d) + 0.0 * params.alpha for d in self.layout.delay_values()]

    def control_interval(self, multiplicity) -> jnp.ndarray:
        """d_l: the mean RTT of the flows crossing each link, seconds (L,), every flow counted
        `multiplicity` times (shape (N,))."""
        routing = jnp.asarray(self.layout.routing)
        return (routing @ (multiplicity * self.network.rtt_s)) / jnp.maximum(routing @ multiplicity, 1.0)

    def initial_membership(self) -> np.ndarray:
        """m at t <= 0: 1 on the first link of each route, as (N, L)."""
        member = np.zeros((self.network.n_flows, self.network.n_links))
        for i in range(self.network.n_flows):
            member[i, self.network.route_indices(i)[0]] = 1.0
        return member

    def history(self, t, params):
        parts = [params.initial_rate_pps + 0.0 * t, jnp.zeros(self.network.n_links) + 0.0 * t]
        if self.variant == "ixcp":
            flows, links = self.layout.pairs()
            parts.append(jnp.asarray(self.initial_membership()[flows, links]) + 0.0 * t)
        return jnp.concatenate(parts)

    # ----------------------------------------------------------------------------- feedback
    def _split(self, x):
        n, L = self.network.n_flows, self.network.n_links
        rates, queues = x[..., :n], x[..., n : n + L]
        member = None
        if self.variant == "ixcp":  # a gather from the pair vector (scatters are slow on a CPU)
            pairs = jnp.concatenate([jnp.clip(x[..., n + L :], 0.0, 1.0), jnp.zeros(x.shape[:-1] + (1,))], axis=-1)
            member = pairs[..., self._pair_index()]
        return rates, queues, member

    def _pair_index(self) -> np.ndarray:
        """(N, L) position of each (flow, link) in the pair vector; P (a zero) off the routes."""
        flows, links = self.layout.pairs()
        index = np.full((self.network.n_flows, self.network.n_links), len(flows), dtype=np.int32)
        index[flows, links] = np.arange(len(flows))
        return index

    def feedback(self, t, rates, queues, member, params, active):
        """Per-second feedback F (N, L) of every link to every flow, and for iXCP the what-if
        feedback W (N, L) a flow would receive at a link as one of its bottlenecked flows.

        rates (N,), queues (L,), member (N, L) or None, active (N,) 0/1.
        """
        layout = self.layout
        d = self.control_interval(params.multiplicity)
        k = params.multiplicity[:, None]
        on = jnp.asarray(layout.path_mask) * active[:, None]  # (N, L) active pairs
        x = rates[:, None]
        y = jnp.sum(on * k * x, axis=0)
        count = jnp.sum(on * k, axis=0)
        phi = params.alpha * (params.capacity_pps - y) - params.beta * queues / d  # (1)
        spare_up, spare_down = jnp.maximum(phi, 0.0), jnp.maximum(-phi, 0.0)
        spare = _safe_ratio(spare_up, count) - spare_down * _safe_ratio(x, y)  # (N, L)
        if self.variant == "xcp":
            h = jnp.maximum(0.0, params.gamma * y - jnp.abs(phi))  # (2)
            return (spare + h * (_safe_ratio(1.0, count) - _safe_ratio(x, y))) / d, None
        m = member * on
        count_b = jnp.sum(m * k, axis=0)
        y_b = jnp.sum(m * k * x, axis=0)
        h = jnp.maximum(0.0, params.gamma * y_b - jnp.abs(phi))  # (3)
        shuffle = m * h * (_safe_ratio(1.0, count_b) - _safe_ratio(x, y_b))
        count_if = count_b + (1.0 - m) * k  # the flow (and its copies) join the members
        y_if = y_b + (1.0 - m) * k * x
        h_if = jnp.maximum(0.0, params.gamma * y_if - jnp.abs(phi))
        what_if = spare + h_if * (1.0 / count_if - x / y_if)
        return (spare + shuffle) / d, what_if / d

    def _rates_field(self, t, x, x_delayed, params):
        layout = self.layout
        n = self.network.n_flows
        rtt = jnp.asarray(layout.rtts())
        values = jnp.asarray(layout.delay_values())
        group = jnp.asarray(layout.delay_group())

        d = self.control_interval(params.multiplicity)

        def seen_by(delay, state):  # the network as one RTT group sees it
            rates, queues, member = self._split(state)
            F, W = self.feedback(t - delay, rates, queues, member, params, layout.active(t - delay))
            obeyed = layout.flow_min(F)
            if W is None:
                return obeyed, obeyed
            # The bottleneckId: the link(s) of smallest feedback; ties (a flow receives ~0 from
            # every saturated link) are shared, as a packet's bottleneckId alternates between them.
            scale = params.capacity_pps / (d * jnp.maximum(layout.link_sum(params.multiplicity), 1.0))
            tolerance = TIE_TOLERANCE * layout.flow_max(scale)
            binding = ((F <= (obeyed + tolerance)[:, None]) & layout.path_mask).astype(jnp.float64)
            # Among tied links the flow stays where it is a member (the protocol replaces the
            # bottleneckId only on strictly smaller feedback); MEMBERSHIP_SEED lets a tied link
            # where it is not a member gain membership, and all of it when the old link no
            # longer binds.
            weight = binding * (member + MEMBERSHIP_SEED)
            return obeyed, weight / jnp.maximum(jnp.sum(weight, axis=1, keepdims=True), 1e-300)

        feedback, targets = jax.vmap(seen_by)(values, x_delayed)  # one evaluation for all groups
        obeyed = feedback[group, jnp.arange(n)]
        reacting = (layout.active(t) * layout.active(t - rtt)) > 0
        d_rates = jnp.where(reacting, obeyed, 0.0)
        d_member = None
        if self.variant == "ixcp":
            target = targets[group, jnp.arange(n)]  # (N, L)
            flows, links = layout.pairs()
            current = x[n + self.network.n_links :]
            relax = (target[flows, links] - current) / rtt[flows]
            d_member = jnp.where(reacting[flows], relax, 0.0)
        return d_rates, d_member

    def vector_field(self, t, x, x_delayed, params):
        n = self.network.n_flows
        layout = self.layout
        d_rates, d_member = self._rates_field(t, x, x_delayed, params)
        rates, queues = x[:n], x[n : n + self.network.n_links]
        y = layout.link_sum(layout.active(t) * params.multiplicity * rates)
        d_queue = projected_rate(queues, y - params.capacity_pps, JAX_OPS)
        parts = [d_rates, d_queue] + ([d_member] if d_member is not None else [])
        return jnp.concatenate(parts)

    def vector_field_log(self, t, z, z_delayed, params, log_mask):
        log = np.asarray(log_mask)
        x = jnp.where(log, jnp.exp(jnp.where(log, z, 0.0)), z)
        x_delayed = jnp.where(log, jnp.exp(jnp.where(log, z_delayed, 0.0)), z_delayed)
        f = self.vector_field(t, x, x_delayed, params)
        return jnp.where(log, f / jnp.where(log, x, 1.0), f)

    def observe_run(self, times, states, params) -> tuple[np.ndarray, np.ndarray, dict]:
        """Per-flow rates (S, N) and per-link queues (S, L) over saved states (S, n)."""
        n, links = self.network.n_flows, self.network.n_links
        return states[:, :n], states[:, n : n + links], {}

    def validate(self, params) -> None:
        _check(params)
        self.layout.rtts()
        if np.shape(params.capacity_pps)[-1] != self.network.n_links:
            raise ShapeError("capacity", f"shape {np.shape(params.capacity_pps)}", f"(B, {self.network.n_links})")

    # -------------------------------------------------------------------------- equilibrium
    def equilibrium(self, params, point: int = 0, at: float | None = None, start_rates=None) -> dict:
        """The equilibrium of one point, solved from the fluid equations (no simulation).

        Unknowns: the active flows' log rates (queues are 0: a standing queue makes phi < 0 and
        every flow's feedback negative). Each flow obeys one link whose feedback is zero; for
        iXCP the flow is that link's bottlenecked member. The start is the max-min allocation and
        its bottlenecks; `start_rates` (packets/s, one per flow) replaces the max-min rates as
        the start (tests use it to start away from the answer). at: the time whose active flows
        are used (default: the flows that never stop).

        Returns flow_rate (packets/s per flow, 0 if inactive), link_load (packets/s), utilization,
        bottleneck (the link each flow obeys, -1 if inactive), residual (max |F_ib d_b / x_i|),
        consistent (the assignment is the model's own choice at the solution) and maxmin_rate.
        """
        from ..maxmin import maxmin

        network = self.network
        active = self.layout.equilibrium_flows(at)
        one = jax.tree_util.tree_map(lambda a: jnp.asarray(np.asarray(a)[point]), params)
        capacity = np.asarray(params.capacity_pps, dtype=np.float64)[point]
        index = np.flatnonzero(active)
        copies = np.asarray(params.multiplicity, dtype=np.float64)[point]
        sub = Network(network.links, tuple(network.flows[i] for i in index)).replace(capacities_pps=capacity)
        # k identical flows at rate r load the links like one flow of weight k at rate k r.
        fair = maxmin(sub, weights=copies[index])
        fair_rates = np.asarray(fair.rates_pps, dtype=np.float64) / copies[index]
        routes = [sub.route_indices(k) for k in range(len(index))]
        active_full = jnp.asarray(active.astype(np.float64))
        queues = jnp.zeros(network.n_links)

        def full_rates(u):
            return jnp.zeros(network.n_flows).at[jnp.asarray(index)].set(jnp.exp(u))

        def member_of(assignment):
            member = jnp.zeros((network.n_flows, network.n_links))
            return member.at[jnp.asarray(index), assignment].set(1.0)

        def equations(u, assignment):
            member = member_of(assignment) if self.variant == "ixcp" else None
            F, _ = self.feedback(0.0, full_rates(u), queues, member, one, active_full)
            d = self.control_interval(one.multiplicity)
            return F[jnp.asarray(index), assignment] * d[assignment] / jnp.maximum(jnp.exp(u), 1e-300)

        def choose(u, assignment):
            member = member_of(jnp.asarray(assignment)) if self.variant == "ixcp" else None
            F, W = self.feedback(0.0, full_rates(u), queues, member, one, active_full)
            signal = np.asarray(W if W is not None else F)[index]
            chosen = assignment.copy()
            for k, route in enumerate(routes):
                best = route[int(np.argmin(signal[k, route]))]
                scale = max(abs(signal[k, route]).max(), 1e-300)
                if signal[k, best] < signal[k, assignment[k]] - 1e-9 * scale:
                    chosen[k] = best
            return chosen

        first = np.array([b[0] if b else routes[k][0] for k, b in enumerate(fair.bottlenecks)])
        x0 = np.log(fair_rates)
        if start_rates is not None:
            given = np.asarray(start_rates, dtype=np.float64)
            if given.shape != (network.n_flows,) or not np.all(given[index] > 0):
                raise ParameterError("start_rates", given, f"{network.n_flows} rates > 0 packets/s")
            x0 = np.log(given[index])
        fixed = active_set_fixed_point(equations, choose, x0, first)
        rates = np.asarray(full_rates(jnp.asarray(fixed.x)))
        load = network.routing_matrix @ (copies * rates)
        bottleneck = np.full(network.n_flows, -1)
        bottleneck[index] = fixed.assignment
        return {
            "flow_rate": rates,
            "link_load": load,
            "utilization": load / capacity,
            "bottleneck": bottleneck,
            "residual": fixed.residual,
            "consistent": fixed.consistent,
            "maxmin_rate": np.bincount(index, fair_rates, minlength=network.n_flows),
        }


def two_link_fixed_point(variant: str = "xcp"):
    """XCP's (or iXCP's) fixed point on the iXCP paper's Fig. 1 network, in closed form (SymPy).

    One short flow crosses link a (capacity c_a); n long flows cross a and link b (c_b < c_a).
    The long flows are bottlenecked at b: they share it equally, c_b / n each, and phi_b = 0.
    On link a, y = x + c_b with x the short flow's rate, the queue is empty and phi_a =
    alpha (c_a - y) >= 0 (eq. (1)). The short flow's feedback is zero:

        XCP (eq. (2)): (phi_a + h_a) / (n + 1) - h_a x / y = 0,  h_a = gamma y - phi_a,
        iXCP (eq. (3)): only the short flow is bottlenecked at a, so its shuffle term
                        h_a (1 - x / x) vanishes and phi_a / (n + 1) = 0: y = c_a.

    Returns a dict of SymPy expressions in the symbols n, c_a, c_b, alpha, gamma (positive):
    "short_rate" x(n), "utilization" y(n) / c_a, "limit_utilization" (n -> oo) and "symbols".
    For XCP the limit is alpha / (alpha + gamma) when c_b < alpha c_a / (alpha + gamma).
    """
    import sympy as sp

    if variant not in VARIANTS:
        raise ParameterError("variant", variant, f"one of {', '.join(VARIANTS)}")
    n, c_a, c_b, alpha, gamma, x = sp.symbols("n c_a c_b alpha gamma x", positive=True)
    y = x + c_b
    phi = alpha * (c_a - y)
    if variant == "ixcp":
        short = sp.solve(sp.Eq(phi, 0), x)[0]
    else:
        h = gamma * y - phi
        equation = sp.numer(sp.together((phi + h) / (n + 1) - h * x / y))
        roots = sp.solve(equation, x)
        # The root that is positive: evaluate at a representative point of the parameter space.
        probe = {n: 8, c_a: 155, c_b: 100, alpha: sp.Rational(2, 5), gamma: sp.Rational(1, 10)}
        short = next(r for r in roots if sp.N(r.subs(probe)) > 0)
    utilization = sp.simplify((short + c_b) / c_a)
    return {
        "short_rate": sp.simplify(short),
        "utilization": utilization,
        "limit_utilization": sp.simplify(sp.limit(utilization, n, sp.oo)),
        "symbols": {"n": n, "c_a": c_a, "c_b": c_b, "alpha": alpha, "gamma": gamma},
    }


def _on_network(variant: str, description: str) -> NetworkModel:
    return NetworkModel(name=variant, description=description, system=lambda network: XCPNetwork(network, variant),
                        params=network_params, parameters=("alpha", "beta", "gamma"), settle_s=30.0)


XCP_ON_NETWORK = _on_network("xcp", "XCP, iXCP paper eqs. (1)-(2): efficiency and fairness controllers per link")
IXCP_ON_NETWORK = _on_network("ixcp", "iXCP, iXCP paper eq. (3): shuffling only among the flows bottlenecked "
                                      "at the link")
