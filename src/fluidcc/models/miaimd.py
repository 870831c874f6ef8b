"""MIAIMD: the fluid model of VCP on one bottleneck (VCP paper, section 5, eqs. (10)–(14)).

Each flow i has a congestion window w_i (packets) and round-trip time T_i (seconds):

    w_i'(t) = (1/T_i) [ w_i(t) xi(rho_i(t)) + alpha ]                          (10)
    xi(rho)  = kappa (1 - rho) / rho                                             (11)
    rho(t)   = sum_j w_j(t - T) / (gamma C T)         (equal RTTs)               (12)

Summing (10) over N flows with equal RTTs gives the aggregate equation (14) for w = sum_i w_i:

    w'(t) = (1/T) { kappa w(t) [gamma C T / w(t - T) - 1] + N alpha }             (14)

**How each RTT is split** (equilibria do not depend on it; stability does). With equal RTTs the
split does not matter: the link sees the windows of one RTT ago, eq. (12). With heterogeneous RTTs
fluidcc offers two splits of T_i into a delay to the link and a delay back:

* ``delay_split="forward"`` (default): the whole RTT lies between the source and the link, and
  the load factor reaches every source at once. The link measures
  rho(t) = sum_j [w_j(t - T_j) / T_j] / (gamma C), the rate of each flow being w_j / T_j, and every
  flow reacts to that rho(t). This is eq. (12) with each flow's own delay.
* ``delay_split="backward"``: the link sees the rates sent now and flow i hears the load factor
  one RTT later: rho_i(t) = sum_j [w_j(t - T_i) / T_j] / (gamma C).

Equilibria (closed form): Theorem 1, w* = gamma C T + N alpha / kappa and
r_i* = gamma C / N + alpha / (kappa T), and for heterogeneous RTTs (section 5)
r_i* = (gamma C / N)(T_h / T_i) + alpha / (kappa T_i), T_h the harmonic mean RTT, every flow
having the same window w_i* = gamma C T_h / N + alpha / kappa.

The history is each flow's `initial_window` on [-T, 0] (the paper's w_i = 1); any other
(a window per flow, a function of time) is a table given to `fluidcc.dde.WithHistory`.

Windows are positive and are integrated as log w by default: the start-up multiplies the window
by about exp(kappa (gamma C T / N - 1)) in the first RTT, which overflows float64 for a few
percent of a wide sweep.

**gamma as a control variable** (section 5, "Importance of gamma"): the utilization at the
equilibrium is w*/(C T) = gamma + alpha / (kappa P), P = C T / N the per-flow BDP, not gamma.
`gamma_controlled` runs the link's controller of eq. (15), which steps gamma by delta_gamma once
per period T_gamma >> T until the measured utilization reaches a target gamma*:

    gamma(t + T_gamma) = gamma(t) + sgn(gamma* - tilde_gamma*(t)) delta_gamma                   (15)

Units: capacity in packets per second, RTTs in seconds, windows in packets, rates in packets/s.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import jax
import jax.numpy as jnp
import numpy as np

from .. import units
from ..dde import RK4, DDESystem, Status, WithHistory, batch_size, history_table, solve, tabulate_history
from ..errors import ParameterError, ShapeError
from ._params import broadcast_batch, require_interval, require_nonnegative, require_positive, require_whole
from ._spec import ParameterSpec, SingleLinkModel


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class MIAIMDParams:
    """A batch of MIAIMD parameter points (leading batch axis B on every field).

    kappa: MI stability coefficient, > 0 (dimensionless), shape (B,).
    alpha: AI parameter, packets per RTT, >= 0, shape (B,).
    gamma: target utilization, in (0, 1], shape (B,).
    capacity_pps: bottleneck capacity C in packets/s, shape (B,).
    rtt_s: round-trip time of each flow in seconds, shape (B, N).
    initial_window: each flow's window on the history interval, packets, > 0, shape (B,).
    """

    kappa: jax.Array
    alpha: jax.Array
    gamma: jax.Array
    capacity_pps: jax.Array
    rtt_s: jax.Array
    initial_window: jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class MIAIMDAggregateParams:
    """A batch of points of the aggregate equation (14) (N flows with one RTT), all shape (B,).

    kappa, alpha, gamma, capacity_pps as in `MIAIMDParams`; rtt_s: the common RTT T in seconds;
    n_flows: N, a whole number >= 1 (stored as float); initial_window: each flow's window on
    [-T, 0] in packets (the paper uses 1).
    """

    kappa: jax.Array
    alpha: jax.Array
    gamma: jax.Array
    capacity_pps: jax.Array
    rtt_s: jax.Array
    n_flows: jax.Array
    initial_window: jax.Array


def _check_common(kappa, alpha, gamma, capacity_pps, initial_window) -> None:
    require_positive("kappa", kappa)
    require_nonnegative("alpha", alpha, " packets per RTT")
    require_interval("gamma", gamma, 0.0, 1.0)
    require_positive("capacity", capacity_pps, " packets/s")
    require_positive("initial_window", initial_window, " packets")


def aggregate_params(
    *, kappa, capacity_pps, rtt_s, n_flows, alpha=1.0, gamma=0.98, initial_window=1.0
) -> MIAIMDAggregateParams:
    """Build and validate a batch for eq. (14); scalars broadcast to the batch."""
    arrays, _ = broadcast_batch(
        kappa=kappa, alpha=alpha, gamma=gamma, capacity_pps=capacity_pps, rtt_s=rtt_s,
        n_flows=n_flows, initial_window=initial_window,
    )
    _check_common(arrays["kappa"], arrays["alpha"], arrays["gamma"], arrays["capacity_pps"], arrays["initial_window"])
    require_positive("rtt", arrays["rtt_s"], " s")
    require_whole("n_flows", arrays["n_flows"], 1)
    return MIAIMDAggregateParams(**arrays)


def flow_params(
    *, kappa, capacity_pps, rtt_s, alpha=1.0, gamma=0.98, initial_window=1.0, n_flows=None, batch=None
) -> MIAIMDParams:
    """Build and validate a per-flow batch.

    rtt_s may be a scalar (then `n_flows` is required), an array (N,) of per-flow RTTs shared by
    the batch, or (B, N). Scalar parameters broadcast to the batch; `batch` sets B when every
    parameter is a scalar.
    """
    rtt = np.asarray(rtt_s, dtype=np.float64)
    if rtt.ndim == 0:
        if n_flows is None:
            raise ParameterError("n_flows", None, "a whole number >= 1 when rtt is one number")
        require_whole("n_flows", n_flows, 1)
        rtt = np.full((int(n_flows),), float(rtt))
    elif n_flows is not None and rtt.shape[-1] != int(n_flows):
        raise ShapeError("n_flows", n_flows, f"equal to the number of RTTs given ({rtt.shape[-1]})")
    if rtt.ndim > 2 or rtt.shape[-1] == 0:
        raise ShapeError("rtt", f"shape {rtt.shape}", "shape (N,) or (B, N) with N >= 1 flows")
    arrays, size = broadcast_batch(
        kappa=kappa, alpha=alpha, gamma=gamma, capacity_pps=capacity_pps, initial_window=initial_window,
        **({"_batch": np.zeros(batch)} if batch is not None else {}),
        **({"_rtt_batch": np.zeros(rtt.shape[0])} if rtt.ndim == 2 else {}),
    )
    arrays.pop("_batch", None)
    arrays.pop("_rtt_batch", None)
    rtt = np.broadcast_to(rtt, (size, rtt.shape[-1])).copy()
    _check_common(arrays["kappa"], arrays["alpha"], arrays["gamma"], arrays["capacity_pps"], arrays["initial_window"])
    require_positive("rtt", rtt, " s")
    return MIAIMDParams(rtt_s=rtt, **arrays)


@dataclass(frozen=True)
class MIAIMDAggregate(DDESystem):
    """Eq. (14): the total window w of N flows with one RTT T on one bottleneck."""

    name = "miaimd_aggregate"

    def state_size(self, params) -> int:
        return 1

    def state_names(self, params) -> list[str]:
        return ["window"]

    def log_components(self, params) -> tuple[bool, ...]:
        return (True,)

    def delay_terms(self, params) -> list:
        return [params.rtt_s]

    def history(self, t, params):
        return jnp.reshape(params.n_flows * params.initial_window, (1,)) + 0.0 * t

    def field_terms(self, t, x, x_delayed, params, ops) -> list:
        bdp = params.gamma * params.capacity_pps * params.rtt_s
        w, w_delayed = x[0], x_delayed[0][0]
        return [(params.kappa * w * (bdp / w_delayed - 1.0) + params.n_flows * params.alpha) / params.rtt_s]  # (14)

    def linear_form(self, t, x_delayed, params):
        # (14) is linear in w(t) given w(t - T): w' = a w + b
        bdp = params.gamma * params.capacity_pps * params.rtt_s
        a = params.kappa * (bdp / x_delayed[0] - 1.0) / params.rtt_s
        b = params.n_flows * params.alpha / params.rtt_s
        return jnp.reshape(a, (1,)), jnp.reshape(b, (1,))

    def vector_field_log(self, t, z, z_delayed, params, log_mask):
        if not log_mask[0]:
            return self.vector_field(t, z, z_delayed, params)
        bdp = params.gamma * params.capacity_pps * params.rtt_s
        u, u_delayed = z[0], z_delayed[0, 0]
        # d(log w)/dt = [kappa (gamma C T / w(t-T) - 1) + N alpha / w] / T, finite for any finite u.
        du = params.kappa * (bdp * jnp.exp(-u_delayed) - 1.0) + params.n_flows * params.alpha * jnp.exp(-u)
        return jnp.reshape(du / params.rtt_s, (1,))

    def validate(self, params) -> None:
        aggregate_params(**{f: getattr(params, f) for f in MIAIMDAggregateParams.__dataclass_fields__})

    def equilibrium_state(self, params) -> np.ndarray:
        """Theorem 1's total window w* (packets), shape (B, 1)."""
        return self.equilibrium(params)["window"].reshape(-1, 1)

    def equilibrium(self, params) -> dict[str, np.ndarray]:
        """Theorem 1: w* = gamma C T + N alpha / kappa (packets) and the per-flow rate (packets/s)."""
        return equilibrium_homogeneous(
            params.kappa, params.alpha, params.gamma, params.capacity_pps, params.rtt_s, params.n_flows
        )


def equilibrium_homogeneous(kappa, alpha, gamma, capacity_pps, rtt_s, n_flows) -> dict[str, np.ndarray]:
    """Theorem 1 (VCP paper): equal RTTs T, N flows.

    Returns total window w* = gamma C T + N alpha / kappa (packets), per-flow window
    w_i* = w*/N, per-flow rate r_i* = gamma C / N + alpha / (kappa T) (packets/s) and load factor
    rho* = 1 + N alpha / (kappa gamma C T).
    """
    kappa, alpha, gamma, capacity, rtt, n = (np.asarray(v, dtype=np.float64) for v in
                                             (kappa, alpha, gamma, capacity_pps, rtt_s, n_flows))
    window = gamma * capacity * rtt + n * alpha / kappa
    return {
        "window": window,
        "flow_window": window / n,
        "flow_rate": gamma * capacity / n + alpha / (kappa * rtt),
        "load_factor": 1.0 + n * alpha / (kappa * gamma * capacity * rtt),
    }


def equilibrium_heterogeneous(kappa, alpha, gamma, capacity_pps, rtt_s) -> dict[str, np.ndarray]:
    """Section 5, heterogeneous RTTs: r_i* = (gamma C / N)(T_h / T_i) + alpha / (kappa T_i).

    rtt_s has shape (..., N); T_h = N / sum_i 1/T_i is the harmonic mean RTT. Every flow has the
    same window w_i* = gamma C T_h / N + alpha / kappa; the total is gamma C T_h + N alpha / kappa.
    Returns per-flow windows and rates of shape (..., N) and the load factor.
    """
    rtt = np.asarray(rtt_s, dtype=np.float64)
    kappa, alpha, gamma, capacity = (np.asarray(v, dtype=np.float64)[..., None] for v in
                                     (kappa, alpha, gamma, capacity_pps))
    n = rtt.shape[-1]
    harmonic = n / np.sum(1.0 / rtt, axis=-1, keepdims=True)
    flow_window = gamma * capacity * harmonic / n + alpha / kappa
    flow_window = np.broadcast_to(flow_window, rtt.shape)
    rate = flow_window / rtt
    return {
        "flow_window": flow_window,
        "flow_rate": rate,
        "window": np.sum(flow_window, axis=-1),
        "load_factor": np.sum(rate, axis=-1) / (gamma[..., 0] * capacity[..., 0]),
        "harmonic_rtt": harmonic[..., 0],
    }


@dataclass(frozen=True)
class MIAIMD(DDESystem):
    """Eqs. (10)–(12): a window per flow, heterogeneous RTTs, one bottleneck.

    delay_split: "forward" (default) or "backward"; see the module docstring.
    """

    delay_split: str = "forward"
    name = "miaimd"

    def __post_init__(self):
        if self.delay_split not in ("forward", "backward"):
            raise ParameterError("delay_split", self.delay_split, "'forward' or 'backward'")

    def observe_run(self, times, windows, params) -> dict:
        """What a saved run of the first point shows besides its windows (S, N): the load factor
        at the link over time, eq. (12), as {name: (dims, values, attributes)}."""
        load = load_factor(times, windows, np.asarray(params.rtt_s)[0], float(np.asarray(params.gamma)[0]),
                           float(np.asarray(params.capacity_pps)[0]), float(np.asarray(params.initial_window)[0]))
        return {"load_factor": (("time",), load, {"long_name": "load factor at the link, eq. (12)"})}

    def state_size(self, params) -> int:
        return int(np.shape(params.rtt_s)[-1])

    def state_names(self, params) -> list[str]:
        return [f"window_{i}" for i in range(self.state_size(params))]

    def log_components(self, params) -> tuple[bool, ...]:
        return (True,) * self.state_size(params)

    def delays(self, params):
        return params.rtt_s

    def history(self, t, params):
        return jnp.full(params.rtt_s.shape, params.initial_window) + 0.0 * t

    def _inverse_load(self, w_delayed, params):
        """1/rho per flow from windows at the delays: w_delayed[k, j] = w_j(t - T_k)."""
        rates = w_delayed / params.rtt_s[None, :]
        if self.delay_split == "forward":
            offered = jnp.sum(jnp.diagonal(rates))  # flow j seen at the link after its own RTT
            offered = jnp.full(params.rtt_s.shape, offered)
        else:
            offered = jnp.sum(rates, axis=1)  # flow i hears the load of one RTT T_i ago
        return params.gamma * params.capacity_pps / offered

    def vector_field(self, t, x, x_delayed, params):
        xi = params.kappa * (self._inverse_load(x_delayed, params) - 1.0)  # eq. (11)
        return (x * xi + params.alpha) / params.rtt_s  # eq. (10)

    def vector_field_log(self, t, z, z_delayed, params, log_mask):
        if not np.all(log_mask):
            return super().vector_field_log(t, z, z_delayed, params, log_mask)
        # d(log w_i)/dt = [xi(rho_i) + alpha / w_i] / T_i; an overflowing sum makes 1/rho = 0.
        xi = params.kappa * (self._inverse_load(jnp.exp(z_delayed), params) - 1.0)
        return (xi + params.alpha * jnp.exp(-z)) / params.rtt_s

    def validate(self, params) -> None:
        fields = MIAIMDParams.__dataclass_fields__
        values = {f: np.asarray(getattr(params, f)) for f in fields}
        _check_common(values["kappa"], values["alpha"], values["gamma"], values["capacity_pps"], values["initial_window"])
        require_positive("rtt", values["rtt_s"], " s")

    def equilibrium(self, params) -> dict[str, np.ndarray]:
        """Section 5's heterogeneous-RTT equilibrium (reduces to Theorem 1 for equal RTTs)."""
        return equilibrium_heterogeneous(params.kappa, params.alpha, params.gamma, params.capacity_pps, params.rtt_s)

    def rates(self, windows, params):
        """Per-flow rates w_i / T_i in packets/s from windows of shape (B, S, N)."""
        return np.asarray(windows) / np.asarray(params.rtt_s)[:, None, :]


def load_factor(times, windows, rtts, gamma, capacity_pps, initial_window) -> np.ndarray:
    """The load factor at the link over a saved run, eq. (12): rho(t) = sum_j [w_j(t - T_j) / T_j] / (gamma C).

    times: save times (S,), seconds; windows: (S, N) windows, packets; rtts: (N,) seconds; the
    delayed windows are read by interpolating log w on the save grid, `initial_window` before 0.
    """
    total = np.zeros_like(times)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for j, rtt in enumerate(rtts):
            log_w = np.interp(times - rtt, times, np.log(windows[:, j]))
            delayed = np.where(times - rtt < 0, initial_window, np.exp(log_w))
            total = total + delayed / rtt
    return total / (gamma * capacity_pps)


@dataclass(frozen=True)
class GammaControlRun:
    """What `gamma_controlled` returns: one value per control period k = 0 .. K-1 of each of B points.

    period_end_s: (B, K) the end of period k, (k + 1) T_gamma, seconds.
    gamma: (B, K) the gamma of eq. (12) in force during period k (dimensionless).
    utilization: (B, K) tilde_gamma*, the filtered link utilization measured at the end of period
        k: the mean of w(t - T) / (C T) over the period's second half (dimensionless).
    window: (B, K) the total window w at the end of period k, packets.
    next_gamma: (B,) the gamma the controller sets after the last period.
    status, messages: per point, the first failure (`fluidcc.dde.Status`) of any period, as in a
        `fluidcc.dde.Solution`; a failed point's series hold NaN from the period it failed in.
    """

    period_end_s: np.ndarray
    gamma: np.ndarray
    utilization: np.ndarray
    window: np.ndarray
    next_gamma: np.ndarray
    status: np.ndarray
    messages: np.ndarray

    @property
    def success(self) -> np.ndarray:
        """Boolean mask of the points whose every period ran OK, shape (B,)."""
        return self.status == Status.OK


def gamma_controlled(params: MIAIMDAggregateParams, *, target_utilization, period_rtts: int, periods: int,
                     gamma_step=0.01, steps_per_delay: int = 32) -> GammaControlRun:
    """Eq. (14) with gamma set by the controller of eq. (15), for a batch of points.

    The link steps gamma once per period T_gamma = `period_rtts` x T:

        gamma(t + T_gamma) = gamma(t) + sgn(gamma* - tilde_gamma*(t)) delta_gamma              (15)

    with gamma* = `target_utilization` and delta_gamma = `gamma_step`, starting from
    `params.gamma`. Between steps gamma is constant and eq. (14) is integrated with the RK4 method
    (`steps_per_delay`); each period continues from the last RTT of the one before
    (`fluidcc.dde.WithHistory`), which is exact: the periods together are one solve of eq. (14)
    with a piecewise-constant gamma, to rounding. The new gamma takes effect in eq. (14) at the
    period boundary (the aggregate model has no backward delay).

    The filter (tilde_gamma*, the paper leaves it open): the link utilization is the rate the
    link receives over its capacity, w(t - T) / (C T) with eq. (12)'s forward delay, and
    tilde_gamma* is its mean over the second half of the period just ended (the trapezoidal rule
    on the RK4 nodes), a moving-average low-pass filter over T_gamma / 2. With T_gamma >> T the
    transient after a step (it decays about as exp(-0.36 t / T) for kappa = 1/4, eq. (14)
    linearized) is over before the average starts, and the controller then settles on the two
    values of gamma whose equilibrium utilizations gamma + alpha / (kappa P) (Theorem 1) bracket
    gamma*: the utilization ends within delta_gamma of the target. It stops where sgn(...) = 0.

    Parameters
    ----------
    params: an `aggregate_params` batch (B points); its gamma is the starting gamma.
    target_utilization: gamma*, in (0, 1], a scalar or (B,).
    period_rtts: T_gamma in RTTs of each point, a whole number >= 2 (the paper asks T_gamma >> T;
        2 is the least for which the average over the second half reads the link's view of the
        same period; some tens of RTTs let the transient of a step decay first).
    periods: the number of periods K, a whole number >= 1.
    gamma_step: delta_gamma, > 0 and < target_utilization (the paper: 0.01), a scalar or (B,).
    steps_per_delay: RK4 steps per RTT (an even whole number >= 2).

    A step that would take gamma out of (0, 1], the range of eq. (12), is not taken (gamma then
    stays; this happens only when gamma* cannot be reached, gamma* <= alpha / (kappa P), or in
    a start-up transient near gamma = 1). Bad input raises a `fluidcc.errors.ParameterError`
    naming the field.
    """
    system = MIAIMDAggregate()
    system.validate(params)
    size = batch_size(params)
    method = RK4(steps_per_delay=steps_per_delay)
    target, step = (np.broadcast_to(np.asarray(v, dtype=np.float64), (size,)).copy()
                    for v in (target_utilization, gamma_step))
    require_interval("target_utilization", target, 0.0, 1.0)
    bad = ~(np.isfinite(step) & (step > 0) & (step < target))
    if np.any(bad):
        b = int(np.argmax(bad))
        raise ParameterError("gamma_step", float(step[b]), f"a step > 0 and < target_utilization ({target[b]:g}), "
                             "0 < delta_gamma << gamma* (eq. (15))")
    if isinstance(period_rtts, bool) or not isinstance(period_rtts, (int, np.integer)) or period_rtts < 2:
        raise ParameterError("period_rtts", period_rtts, "a whole number of RTTs >= 2: T_gamma >> T (eq. (15)), "
                             "and the filter averages the last half of a period")
    if isinstance(periods, bool) or not isinstance(periods, (int, np.integer)) or periods < 1:
        raise ParameterError("periods", periods, "a whole number of control periods >= 1")

    steps = method.steps_per_delay
    rtt = np.asarray(params.rtt_s, dtype=np.float64)
    bdp = np.asarray(params.capacity_pps, dtype=np.float64) * rtt  # C T, packets
    gamma0 = np.asarray(params.gamma, dtype=np.float64).copy()
    # saved RK4 nodes, in steps: the link's view w(t - T) of the period's second half, then the
    # last two RTTs (the continuation's table and, one RTT back, the windows its slopes read)
    half = period_rtts * steps // 2
    nodes = np.arange(half - steps, period_rtts * steps + 1)
    save_times = rtt[:, None] * nodes / steps
    seen = slice(0, half + 1)  # nodes half - M .. period - M: w(t - T) for t in the second half

    def slopes_of(point_params, now, before):  # eq. (14)'s field at the table's nodes, (B, M + 1, 1)
        one = lambda x, x_delayed, p: system.vector_field(0.0, x, x_delayed[None], p)
        return np.asarray(jax.vmap(jax.vmap(one, in_axes=(0, 0, None)))(now, before, point_params))

    count = np.zeros(size)  # gamma = gamma0 + count delta_gamma: every change exactly one step
    current = replace(params, gamma=gamma0.copy())
    table = tabulate_history(system, current, rtt, steps)
    out = {name: np.full((size, periods), np.nan) for name in ("gamma", "utilization", "window")}
    status = np.full(size, Status.OK, dtype=np.int8)
    messages = np.full(size, "", dtype=object)
    for k in range(periods):
        sol = solve(WithHistory(system), table, period_rtts * rtt, save_times, method=method)
        alive = status == Status.OK
        failed = alive & ~sol.success
        status[failed], messages[failed] = sol.status[failed], sol.messages[failed]
        alive &= sol.success
        w = sol.ys[..., 0]
        link = w[:, seen]
        with np.errstate(invalid="ignore", over="ignore"):  # a failed point's inf or NaN: its status says
            mean = (link.sum(axis=1) - 0.5 * (link[:, 0] + link[:, -1])) / (link.shape[1] - 1)  # trapezoidal
        out["gamma"][alive, k] = current.gamma[alive]
        out["utilization"][alive, k] = mean[alive] / bdp[alive]
        out["window"][alive, k] = w[alive, -1]

        direction = np.where(alive, np.sign(target - out["utilization"][:, k]), 0.0)  # sgn of eq. (15)
        candidate = gamma0 + (count + direction) * step
        count = np.where((candidate > 0) & (candidate <= 1), count + direction, count)
        following = replace(current, gamma=gamma0 + count * step)
        values = sol.ys[:, -(steps + 1):]
        slopes = slopes_of(current, values, sol.ys[:, -(2 * steps + 1):-steps])  # the old gamma's field
        # a failed point carries no usable state: it keeps its last table, and its outputs stay NaN
        values = np.where(alive[:, None, None], values, table.values)
        slopes = np.where(alive[:, None, None], slopes, table.slopes)
        current = following
        table = history_table(current, rtt, values, slopes)
    return GammaControlRun(
        period_end_s=rtt[:, None] * period_rtts * np.arange(1, periods + 1), gamma=out["gamma"],
        utilization=out["utilization"], window=out["window"], next_gamma=np.asarray(current.gamma),
        status=status, messages=messages,
    )


def _single_link_aggregate(values):
    params = aggregate_params(
        kappa=values["kappa"], alpha=values["alpha"], gamma=values["gamma"],
        capacity_pps=values["capacity"], rtt_s=values["rtt"], n_flows=values["flows"],
        initial_window=values["initial_window"],
    )
    return MIAIMDAggregate(), params


def _single_link_flow(values, rtts):
    params = flow_params(
        kappa=values["kappa"], alpha=values["alpha"], gamma=values["gamma"],
        capacity_pps=values["capacity"], rtt_s=np.asarray(rtts)[None, :],
        initial_window=values["initial_window"],
    )
    return MIAIMD(), params


#: MIAIMD as the front ends see it: the aggregate (14) for sweeps, a window per flow for runs.
SINGLE_LINK = SingleLinkModel(
    name="miaimd",
    description="MIAIMD, the fluid model of VCP (VCP paper eqs. (10)-(14)) on one bottleneck",
    parameters=(
        ParameterSpec("kappa", "number", 0.25, "MI stability coefficient kappa > 0", range="> 0"),
        ParameterSpec("alpha", "number", 1.0, "AI parameter alpha >= 0, packets per RTT", range=">= 0"),
        ParameterSpec("gamma", "number", 0.98, "target utilization gamma in (0, 1]", range="(0, 1]"),
        ParameterSpec("capacity", "rate", units.mbps_to_pps(150.0), "bottleneck capacity C (default 150Mbps)",
                      "capacity_pps", range="> 0"),
        ParameterSpec("rtt", "time", 0.08, "round-trip time T (default 80ms)", "rtt_s", range="> 0"),
        ParameterSpec("flows", "count", 50, "number of flows N", "n_flows", range=">= 1"),
        ParameterSpec("initial_window", "number", 1.0, "each flow's window on [-T, 0], packets", range="> 0"),
    ),
    aggregate=_single_link_aggregate,
    observed="window",
    observed_unit="packets",
    flow=_single_link_flow,
)
